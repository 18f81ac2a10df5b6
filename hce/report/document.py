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
import contextlib
import html
import io
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from hce.errors import HceError  # noqa: E402
from hce.report.tables import Table  # noqa: E402

#: A figure number a builder wrote at the start of a caption ("Figure 4: ", "Figure 4. ").
_FIGURE_LABEL = re.compile(r"^Figure \d+[.:]\s*")

#: The file that marks a folder as written by :meth:`Report.write` (and so safe to replace).
MANIFEST = ".hce-report"

# Deterministic SVG output: fixed element ids, no creation date.
matplotlib.rcParams["svg.hashsalt"] = "hce"
_NO_DATE = {"svg": {"Date": None}, "png": {"Software": None}}
#: Figures per process (this one and each forked worker) below which a report renders its
#: figures alone: a figure's PNG and SVG take ~150 ms of CPU, a forked worker ~30 ms to start.
FIGURES_PER_WORKER = 6
_RENDERING: list[Figure] = []  # the figures forked workers render: inherited by the fork, never pickled
_TAKEN: Any = None  # per figure, 1 once a process took it to render (shared memory)


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
        >>> import matplotlib.pyplot as plt
        >>> doc = Report("Demo")
        >>> _ = doc.section("A").add(Figure(plt.figure(), "a", "Figure 4: Spread"), Figure(plt.figure(), "b", "Bias"))
        >>> [f.caption for f in doc.number_figures().figures()]
        ['Figure 1. Spread', 'Figure 2. Bias']
        >>> plt.close("all")
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
            for figure in self.figures():
                plt.close(figure.figure)
        return out

    def _write_files(self, out: Path, progress: Callable[[str], None]) -> None:
        (out / "tables").mkdir()
        (out / "figures").mkdir()
        figures = self.figures()
        with _rendered(figures) as rendered:  # workers render the figures while the tables are written
            progress(f"writing {len(self.tables())} tables")
            for table in self.tables():
                (out / "tables" / f"{table.name}.csv").write_text(table.to_csv(), encoding="utf-8")
                if table.inline:  # a per-item table (10,000 rows) is data for a reader's own analysis: CSV only
                    (out / "tables" / f"{table.name}.tex").write_text(table.to_latex() + "\n", encoding="utf-8")
            progress("writing report.md")
            (out / "report.md").write_text(self.to_markdown(), encoding="utf-8")
            progress(f"writing {len(figures)} figures")
            for figure, (png, svg) in zip(figures, rendered):
                figure._png = png  # the HTML page embeds the same bytes
                (out / "figures" / f"{figure.name}.png").write_bytes(png)
                (out / "figures" / f"{figure.name}.svg").write_bytes(svg)
        progress("writing report.html")
        (out / "report.html").write_text(self.to_html(), encoding="utf-8")
        (out / MANIFEST).write_text("written by hce report; the folder is replaced as a whole on the next run\n", encoding="utf-8")


def _claim(index: int) -> bool:
    """Take figure ``index`` to render (False: another process took it); shared by the forks."""
    with _TAKEN.get_lock():
        free = not _TAKEN[index]
        _TAKEN[index] = 1
    return free


def _render(index: int) -> tuple[bytes, bytes] | None:
    return (_RENDERING[index].png(), _RENDERING[index].svg()) if _claim(index) else None


@contextlib.contextmanager
def _rendered(figures: list[Figure]) -> Iterator[Iterator[tuple[bytes, bytes]]]:
    """Each figure's PNG and SVG, in order, rendered by this process and forked workers together.

    With enough figures to pay for a fork (:data:`FIGURES_PER_WORKER` each) and a core to
    spare, workers (one per core beyond this one) render the figures from the last one back
    while the caller writes the tables; this process then renders from the first one on
    every figure no worker has begun, and takes the others' bytes where they meet. The bytes
    are the same either way: a fork renders the very figure, laid out as here. Without
    ``fork`` (Windows, macOS), with one core, or when a worker dies, here.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    workers = min(cores - 1, len(figures) // FIGURES_PER_WORKER - 1)
    if workers < 1 or not sys.platform.startswith("linux"):
        yield ((figure.png(), figure.svg()) for figure in figures)
        return
    global _TAKEN
    _RENDERING[:] = figures
    _TAKEN = multiprocessing.get_context("fork").Array("b", len(figures))  # shared memory, inherited by the forks
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about forking a process with threads: here BLAS's idle pools,
            # which re-initialise in a fork, and the child only renders its figures.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            futures = [pool.submit(_render, k) for k in reversed(range(len(figures)))][::-1]
    except OSError:  # no fork now (no memory to map a copy of a large process, a process limit): here
        futures = []
    try:
        yield _meet(figures, futures)
    finally:
        for k in range(len(futures)):  # an error writing the tables: the figures not begun are dropped
            _claim(k)
        pool.shutdown()
        _RENDERING.clear()


def _meet(figures: list[Figure], futures: list[Future]) -> Iterator[tuple[bytes, bytes]]:
    """Figure by figure from the first: rendered here unless a worker took it (then its bytes)."""
    for k, figure in enumerate(figures):
        if k < len(futures) and not _claim(k):
            try:
                rendered = futures[k].result()
            except BrokenProcessPool:  # a worker died (killed, out of memory): the rest here
                futures, rendered = [], None
            if rendered is not None:
                yield rendered
                continue
        yield figure.png(), figure.svg()


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
