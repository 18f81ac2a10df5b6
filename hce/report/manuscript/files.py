"""What the writers share: figures copied beside a manuscript, captions with labels, checks.

Example
-------
>>> import tempfile, pathlib
>>> from hce.report.manuscript.model import Manuscript, FigureBlock
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "fig1.png").write_bytes(b"png")
>>> doc = Manuscript("T", [FigureBlock(folder / "fig1.png", "Figure 1", "Scores")])
>>> copy_figures(doc, folder / "out")
{PosixPath('...fig1.png'): 'figures/fig1.png'}
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hce.errors import HceError
from hce.report.manuscript.model import (
    Bullets,
    FigureBlock,
    Inline,
    Manuscript,
    Number,
    Paragraph,
    TableBlock,
)
from hce.report.tables import Table

#: The folder, beside a manuscript, its figures are copied into.
FIGURES = "figures"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def copy_figures(doc: Manuscript, out_dir: str | Path) -> dict[Path, str]:
    """Copy every figure's file into ``out_dir/figures``; map its path to the relative link.

    A name keeps letters, digits, ``.``, ``_`` and ``-`` (others become ``-``: a space or ``#``
    in a file name breaks LaTeX's ``\\includegraphics``); two different files of the same name
    get distinct names (``fig.png``, ``fig-2.png``).

    Raises
    ------
    HceError
        A figure's file does not exist or is not PNG or JPEG (:func:`check_figure`).
    """
    out = Path(out_dir) / FIGURES
    links: dict[Path, str] = {}
    for block in doc.blocks:
        if not isinstance(block, FigureBlock):
            continue
        source = check_figure(block)
        if source in links:
            continue
        stem, suffix = _SAFE.sub("-", source.stem), _SAFE.sub("-", source.suffix)
        name, n = stem + suffix, 1
        while name in {Path(link).name for link in links.values()}:
            n += 1
            name = f"{stem}-{n}{suffix}"
        out.mkdir(parents=True, exist_ok=True)
        target = out / name
        if not (target.exists() and target.samefile(source)):
            shutil.copyfile(source, target)
        links[source] = f"{FIGURES}/{name}"
    return links


def check_figure(block: FigureBlock) -> Path:
    """The figure's resolved path, once it is known to be a PNG or JPEG file that exists.

    Those are the images all three formats embed (pdflatex takes no SVG, Word no SVG either).
    """
    path = Path(block.path)
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise HceError(f"{block.label}: figure file {path} is not {' or '.join(IMAGE_SUFFIXES)}")
    if not path.is_file():
        raise HceError(f"{block.label}: figure file {path} does not exist")
    return path.resolve()


def check_number(number: Number) -> Number:
    """The number, once it has text and a source an HTML comment can hold (no ``--``)."""
    if not number.text.strip() or not number.source.strip():
        raise HceError(f"number {number.text!r} with source {number.source!r}: a number needs both its text and its source")
    if "--" in number.source:
        raise HceError(f"number {number.text!r}: source {number.source!r} holds '--', which an HTML comment cannot")
    return number


def lines(block: Paragraph | Bullets) -> list[list[Inline]]:
    """A paragraph's one line of inline parts, or a bullet list's items."""
    return block.items if isinstance(block, Bullets) else [block.parts]


def labelled(label: str, caption: str) -> str:
    """``"Table 1. Caption"``; a caption that already starts with its label is kept as it is.

    >>> labelled("Table 1", "Items by set"), labelled("Figure 2", "Figure 2. SDs")
    ('Table 1. Items by set', 'Figure 2. SDs')
    """
    return caption if caption.startswith(label) else f"{label}. {caption}"


def labelled_table(block: TableBlock) -> Table:
    """The block's table with its label in front of the caption (data shared, not copied)."""
    return replace(block.table, caption=labelled(block.label, block.table.caption))


def write_text(doc: Manuscript, path: str | Path, render: Callable[[Manuscript, dict[Path, str]], str]) -> Path:
    """Copy the figures beside ``path`` and write ``render(doc, links)`` there (UTF-8)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(doc, copy_figures(doc, path.parent)), encoding="utf-8")
    return path
