"""A report as data (sections of text, tables and figures) and its writers.

One :class:`Report` renders to Markdown, one self-contained HTML file (figures embedded
as base64 PNG), a CSV and a LaTeX file per table, and a PNG and an SVG per figure. Tables
are written byte-identically for the same inputs; figures carry no timestamps.

A report is written to a fresh folder beside the target and moved into place, so a folder
holds exactly one report's files (nothing left from an earlier run). Such a folder carries a
small manifest (:data:`MANIFEST`); a folder without one that holds anything is never replaced.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.transforms import Bbox

from hce.errors import HceError
from hce.report._beside import beside
from hce.report.tables import Table

#: A figure number a builder wrote at the start of a caption ("Figure 4: ", "Figure 4. ").
_FIGURE_LABEL = re.compile(r"^Figure \d+[.:]\s*")

#: The file that marks a folder as written by :meth:`Report.write` (and so safe to replace).
MANIFEST = ".hce-report"

# Deterministic SVG output: fixed element ids, no creation date.
matplotlib.rcParams["svg.hashsalt"] = "hce"
_NO_DATE = {"svg": {"Date": None}, "png": {"Software": None}}


@dataclass
class Figure:
    """A matplotlib figure with its file stem and caption."""

    figure: MplFigure
    name: str
    caption: str
    _png: bytes | None = field(default=None, init=False, repr=False)
    _bbox: Bbox | None = field(default=None, init=False, repr=False)

    def png(self) -> bytes:
        if self._png is None:  # rendered once for both the HTML page and the PNG file
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png", dpi=150, bbox_inches=self._tight(), metadata=_NO_DATE["png"])
            self._png = buffer.getvalue()
        return self._png

    def svg(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="svg", bbox_inches=self._tight(), metadata=_NO_DATE["svg"])
        return buffer.getvalue()

    def _tight(self) -> Bbox:
        """``bbox_inches="tight"``'s box, measured once for both files: measuring lays out every
        text again, a third of a save's time (issue 35)."""
        if self._bbox is None:
            if not isinstance(self.figure.canvas, FigureCanvasAgg):  # one unpickled from a worker has a bare canvas
                FigureCanvasAgg(self.figure)
            renderer = self.figure.canvas.get_renderer()  # the one tight_layout measured with: its text sizes are cached
            self._bbox = self.figure.get_tightbbox(renderer).padded(matplotlib.rcParams["savefig.pad_inches"])
        return self._bbox


@dataclass
class Section:
    """A titled part of a report: paragraphs (str), tables and figures, in order."""

    title: str
    blocks: list[str | Table | Figure] = field(default_factory=list)

    def add(self, *blocks: str | Table | Figure) -> Section:
        self.blocks.extend(blocks)
        return self


@dataclass
class Report:
    """Sections under a title; :meth:`write` puts every format in one folder."""

    title: str
    sections: list[Section] = field(default_factory=list)
    #: What the log could support but the report could not compute: ``section``, ``reason``, ``fix``.
    not_reported: list[dict[str, str]] = field(default_factory=list)

    def section(self, title: str) -> Section:
        section = Section(title)
        self.sections.append(section)
        return section

    def tables(self) -> list[Table]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Table)]

    def figures(self) -> list[Figure]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Figure)]

    def number_figures(self) -> Report:
        """Number every figure 1, 2, ... in the order the report shows it (JAMA: order of first mention).

        Each figure sits after the text that first refers to it, so the order shown is the order
        of first mention. A number a builder already wrote (``Figure 4: ...``) is replaced, so
        sections put together from several builders still count up from 1 without a gap.

        Examples
        --------
        >>> from matplotlib.figure import Figure as MplFigure
        >>> doc = Report("Demo")
        >>> _ = doc.section("A").add(Figure(MplFigure(), "a", "Figure 4: Spread"), Figure(MplFigure(), "b", "Bias"))
        >>> [f.caption for f in doc.number_figures().figures()]
        ['Figure 1. Spread', 'Figure 2. Bias']
        """
        for number, figure in enumerate(self.figures(), start=1):
            figure.caption = f"Figure {number}. {_FIGURE_LABEL.sub('', figure.caption)}"
        return self

    def to_markdown(self) -> str:
        lines = [f"# {self.title}", ""]
        for section in self.sections:
            lines += [f"## {section.title}", ""]
            for block in section.blocks:
                if isinstance(block, Table):
                    lines += [block.to_markdown(), ""] if block.inline else []
                elif isinstance(block, Figure):
                    lines += [f"![{block.caption}](figures/{block.name}.png)", "", f"*{block.caption}*", ""]
                else:
                    lines += [block, ""]
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(self.title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{html.escape(self.title)}</h1>",
        ]
        for section in self.sections:
            parts.append(f"<section><h2>{html.escape(section.title)}</h2>")
            for block in section.blocks:
                if isinstance(block, Table):
                    parts.append(block.to_html() if block.inline else "")
                elif isinstance(block, Figure):
                    data = base64.b64encode(block.png()).decode("ascii")
                    parts.append(
                        f'<figure><img alt="{html.escape(block.caption)}" src="data:image/png;base64,{data}">'
                        f"<figcaption>{html.escape(block.caption)}</figcaption></figure>"
                    )
                else:
                    parts.append(f"<p>{html.escape(block)}</p>")
            parts.append("</section>")
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"

    def write(
        self, out: str | os.PathLike, *, keep: tuple[str, ...] = (), progress: Callable[[str], None] | None = None
    ) -> Path:
        """Write ``report.md``, ``report.html``, ``tables/*.csv|tex`` and ``figures/*.png|svg``.

        Every table goes to CSV; the tables shown in the report (not the per-item ones kept
        out of it, ``Table(inline=False)``) also to LaTeX.

        The files go to a fresh temporary folder beside ``out`` that then replaces ``out``, so
        ``out`` holds this report's files only. An existing ``out`` is replaced only when it
        is empty or was written by hce (it holds :data:`MANIFEST`); otherwise
        :class:`~hce.errors.HceError` and nothing is touched. Entries of ``out`` named in
        ``keep`` (e.g. the demo's ``study`` logs) are not report files: they are moved into
        the new folder, and alone they do not make ``out`` foreign. ``progress`` is called with
        a short text before each kind of file.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp()) / "r"
        >>> doc = Report("Demo"); _ = doc.section("Intro").add("Hello.")
        >>> sorted(p.name for p in doc.write(folder).iterdir())
        ['.hce-report', 'figures', 'report.html', 'report.md', 'tables']
        """
        out = Path(out)
        _check_replaceable(out, keep)
        out.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        try:
            self._write_files(fresh, progress or (lambda _text: None))
            _swap(fresh, out, keep)
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)
            raise
        finally:
            # The report's own figures never enter pyplot (figures.new_figure); one a user drew with
            # pyplot and added is let go once written, as pyplot would otherwise keep it.
            pyplot = sys.modules.get("matplotlib.pyplot")
            for figure in self.figures() if pyplot else ():
                pyplot.close(figure.figure)
        return out

    def _write_files(self, out: Path, progress: Callable[[str], None]) -> None:
        tables = [t for t in self.tables() if t.inline]  # the others go to CSV only, unformatted
        for table in tables:  # formatted once for LaTeX, Markdown and HTML, not three times (issue 35)
            table._shown = table.display_columns()
        try:
            self._write_formats(out, progress)
        finally:
            for table in tables:
                table._shown = None

    def _write_formats(self, out: Path, progress: Callable[[str], None]) -> None:
        """The files; on an idle second core a forked child writes the tables and half of the
        figures meanwhile, and hands back those figures' PNGs for the HTML (:mod:`hce.report._beside`)."""
        (out / "tables").mkdir()
        (out / "figures").mkdir()
        figures = self.figures()
        progress(f"writing {len(self.tables())} tables and {len(figures)} figures")
        import matplotlib.backends.backend_svg  # noqa: F401  (imported before a fork, not in each process)

        half = (len(figures) + 1) // 2  # the tables go with the other half

        def tables_and_later_figures() -> list[bytes]:
            self._write_tables(out)
            return _write_figures(figures[half:], out)

        with beside(tables_and_later_figures) as other:
            _write_figures(figures[:half], out)
            progress("writing report.md and report.html")
            (out / "report.md").write_text(self.to_markdown(), encoding="utf-8")
        for figure, png in zip(figures[half:], other.result()):
            figure._png = png  # rendered once, for the file and the page
        (out / "report.html").write_text(self.to_html(), encoding="utf-8")
        (out / MANIFEST).write_text("written by hce report; the folder is replaced as a whole on the next run\n", encoding="utf-8")

    def _write_tables(self, out: Path) -> None:
        for table in self.tables():
            (out / "tables" / f"{table.name}.csv").write_text(table.to_csv(), encoding="utf-8")
            if table.inline:  # a per-item table (10,000 rows) is data for a reader's own analysis: CSV only
                (out / "tables" / f"{table.name}.tex").write_text(table.to_latex() + "\n", encoding="utf-8")


def _write_figures(figures: list[Figure], out: Path) -> list[bytes]:
    """Each figure's PNG and SVG file; returns the PNGs."""
    for figure in figures:
        (out / "figures" / f"{figure.name}.png").write_bytes(figure.png())
        (out / "figures" / f"{figure.name}.svg").write_bytes(figure.svg())
    return [figure.png() for figure in figures]


def _check_replaceable(out: Path, keep: tuple[str, ...]) -> None:
    """Refuse a target hce did not write: a file, or a folder with content and no manifest."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise HceError(f"{out} exists and is not a folder; choose another report folder")
    entries = {p.name for p in out.iterdir()} - set(keep) if out.is_dir() else set()
    # A report folder of an hce from before the manifest holds exactly these.
    earlier_report = entries == {"report.md", "report.html", "tables", "figures"}
    if entries and not (out / MANIFEST).is_file() and not earlier_report:
        raise HceError(f"{out} exists, holds files and was not written by hce report (no {MANIFEST} in it); "
                       "it is left untouched: choose another report folder or empty it")  # fmt: skip


def _swap(fresh: Path, out: Path, keep: tuple[str, ...]) -> None:
    """Put ``fresh`` at ``out``; the old report (if any) is moved aside first, then deleted."""
    for name in keep:
        if (out / name).exists():
            (out / name).rename(fresh / name)
    if not out.exists():
        fresh.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    old.rmdir()
    out.rename(old)
    try:
        fresh.rename(out)
    except BaseException:
        old.rename(out)  # put the previous report back
        for name in keep:
            if (fresh / name).exists():
                (fresh / name).rename(out / name)
        raise
    shutil.rmtree(old)

_CSS = """
body{font-family:Georgia,'Times New Roman',serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #999;margin-top:2rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}caption{text-align:left;font-weight:bold;padding:.3rem 0}
th,td{padding:.25rem .6rem;border-top:1px solid #bbb;text-align:right}th{border-bottom:1px solid #333}
td.t,th.t{text-align:left}td.n{white-space:nowrap}p.note{font-size:.8rem;font-style:italic;margin:.2rem 0}
figure{margin:1rem 0}img{max-width:100%}figcaption{font-size:.9rem;font-style:italic}
""".strip()
