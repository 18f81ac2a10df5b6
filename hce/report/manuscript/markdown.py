"""A manuscript as Markdown (CommonMark): each number followed by its source in an HTML comment.

The comment is invisible when the Markdown is rendered and stays in the file for a reviewer:
``ICC was 0.91<!-- src: tables/exp1_reliability.csv#row=icc2_1;col=estimate -->.``
Placeholders read ``[[AUTHOR: ...]]``; tables are the report's Markdown tables
(:meth:`hce.report.tables.Table.to_markdown`); figures link to copies in ``figures/``. The
title is the one ``#`` heading, so a heading of level n gets n + 1 ``#``.

Example
-------
>>> import tempfile, pathlib
>>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph, Number, Placeholder
>>> doc = Manuscript("A *simulated* study", [Heading(1, "Results"),
...     Paragraph(["ICC was ", Number("0.91", "t.csv#row=a;col=b"), ". ", Placeholder("interpret")])])
>>> print(to_markdown(doc))
# A \\*simulated\\* study
<BLANKLINE>
## Results
<BLANKLINE>
ICC was 0.91<!-- src: t.csv#row=a;col=b -->. [[AUTHOR: interpret]]
<BLANKLINE>
"""

from __future__ import annotations

import re
from pathlib import Path

from hce._docstrings import fill_doc
from hce.errors import HceError
from hce.report.manuscript import model
from hce.report.manuscript.files import (
    check_number,
    labelled,
    labelled_table,
    write_text,
)

# Characters that would start emphasis, code, math or strike-through (GitHub, pandoc) or an HTML
# tag, and a "]" that would close a link.
_SPECIAL = re.compile(r"[\\`*_$~^]|<(?=[A-Za-z/!?])|\](?=[(\[])")
# What at the start of a line would make it a heading, quote, list item or rule.
# (a backslash goes where the match ends: "\# 1", "1\. item")
_LINE_START = re.compile(r"^\s*(?:\d+(?=[.)])|(?=[#>+=-]))")
#: Markdown has no page break; this one is kept by HTML (print) and invisible otherwise.
PAGE_BREAK = '<div style="page-break-after: always;"></div>'


def escape(text: str) -> str:
    r"""Text as literal Markdown: ``* _ $ ~ ^``, backticks, tags and link brackets escaped.

    >>> print(escape("a_b *c* <b> p < .001 [x](y) $5 ~2"))
    a\_b \*c\* \<b> p < .001 [x\](y) \$5 \~2
    """
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), text.replace("\n", " "))


def inline(parts: list[model.Inline]) -> str:
    """Inline parts as one Markdown line."""
    out = []
    for i, part in enumerate(parts):
        if isinstance(part, model.Number):
            check_number(part)
            out.append(f"{escape(part.text)}<!-- src: {part.source} -->")
        elif isinstance(part, model.Placeholder):
            out.append(f"[[AUTHOR: {escape(part.prompt)}]]")
        else:
            text = escape(part)
            if i and isinstance(parts[i - 1], model.Placeholder) and text[:1] in "([":
                text = "\\" + text  # "[[AUTHOR: x]](" would read as a link
            out.append(text)
    return _LINE_START.sub(lambda m: m.group(0) + "\\", "".join(out), count=1)


def to_markdown(doc: model.Manuscript, figure_links: dict[Path, str] | None = None) -> str:
    """The manuscript as Markdown text.

    ``figure_links`` maps a figure's resolved path to the link written (what
    :func:`~hce.report.manuscript.files.copy_figures` returns); by default the figure's own path.
    """
    links = figure_links or {}
    lines = [f"# {escape(doc.title)}", ""]
    if doc.authors:
        lines += [", ".join(inline([a]) for a in doc.authors), ""]
    for block in doc.blocks:
        if isinstance(block, model.Heading):
            lines.append(f"{'#' * min(block.level + 1, 6)} {escape(block.text)}")
        elif isinstance(block, model.Paragraph):
            lines.append(inline(block.parts))
        elif isinstance(block, model.Bullets):
            lines += [f"- {inline(item)}" for item in block.items]
        elif isinstance(block, model.TableBlock):
            lines.append(labelled_table(block).to_markdown())
        elif isinstance(block, model.FigureBlock):
            caption = escape(labelled(block.label, block.caption))
            link = links.get(Path(block.path).resolve(), Path(block.path).as_posix())
            lines += [f"![{caption}]({link})", "", f"*{caption}*"]
        elif isinstance(block, model.PageBreak):
            lines.append(PAGE_BREAK)
        else:
            raise HceError(f"not a manuscript block: {type(block).__name__}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@fill_doc
def write_markdown(doc: model.Manuscript, path: str | Path) -> Path:
    """Write the manuscript as Markdown to ``path``, its figures copied into ``figures/`` beside it.

    Every ``hce.report.manuscript.model.Number`` is followed by
    ``<!-- src: <source> -->``; placeholders read ``[[AUTHOR: ...]]``.

    %(writer_parameters)s
        The ``.md`` file; its folder is made if missing.

    %(returns_path)s

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from hce.report.manuscript.model import Manuscript, Paragraph, Number
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "manuscript.md"
    >>> doc = Manuscript("Title", [Paragraph(["N = ", Number("120", "tables/t1.csv#row=all;col=n"), "."])])
    >>> write_markdown(doc, out).read_text().splitlines()[-1]
    'N = 120<!-- src: tables/t1.csv#row=all;col=n -->.'
    """
    return write_text(doc, path, to_markdown)
