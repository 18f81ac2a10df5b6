"""The blocks a manuscript is made of, independent of its output format.

Every number printed in the text is a :class:`Number` that carries the key of the table cell it
came from, so each writer can attach the key (an HTML comment in Markdown, a comment in LaTeX)
and :func:`number_sources` lists them all for the supplement.

Example
-------
>>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph, Number
>>> icc = Number("0.91", source="tables/exp1_reliability.csv#row=icc2_1;col=estimate")
>>> doc = Manuscript(title="A study", blocks=[Heading(1, "Results"), Paragraph(["ICC was ", icc, "."])])
>>> number_sources(doc)[["text", "source"]].values.tolist()
[['0.91', 'tables/exp1_reliability.csv#row=icc2_1;col=estimate']]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import pandas as pd

from hce.report.tables import Table


@dataclass(frozen=True)
class Number:
    """A number as printed (journal style) and the table cell it was taken from.

    ``source`` is ``"<file relative to the study folder>#row=<row key>;col=<column>"``.
    """

    text: str
    source: str


@dataclass(frozen=True)
class Placeholder:
    """Text the authors must write; rendered visibly (``[[AUTHOR: ...]]``), never as prose."""

    prompt: str


Inline = Union[str, Number, Placeholder]


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    parts: list[Inline]
    #: "body", "abstract" (counts toward the abstract's words) or "note" (excluded from counts)
    role: str = "body"


@dataclass
class Bullets:
    items: list[list[Inline]]
    role: str = "body"


@dataclass
class TableBlock:
    table: Table
    label: str  # "Table 1"


@dataclass
class FigureBlock:
    path: Path  # a PNG written by the study report
    label: str  # "Figure 1"
    caption: str


@dataclass
class PageBreak:
    pass


Block = Union[Heading, Paragraph, Bullets, TableBlock, FigureBlock, PageBreak]


@dataclass
class Manuscript:
    title: str
    blocks: list[Block] = field(default_factory=list)
    authors: list[Inline] = field(default_factory=list)


def inline_text(parts: list[Inline]) -> str:
    """Plain text of inline parts (placeholders shown as ``[[AUTHOR: ...]]``)."""
    out = []
    for part in parts:
        if isinstance(part, Number):
            out.append(part.text)
        elif isinstance(part, Placeholder):
            out.append(f"[[AUTHOR: {part.prompt}]]")
        else:
            out.append(part)
    return "".join(out)


def number_sources(doc: Manuscript) -> pd.DataFrame:
    """Every :class:`Number` in reading order: ``section, text, source``."""
    rows, section = [], ""
    for block in doc.blocks:
        if isinstance(block, Heading):
            section = block.text
            continue
        lines = block.items if isinstance(block, Bullets) else [block.parts] if isinstance(block, Paragraph) else []
        for parts in lines:
            rows.extend({"section": section, "text": p.text, "source": p.source} for p in parts if isinstance(p, Number))
    return pd.DataFrame(rows, columns=["section", "text", "source"])
