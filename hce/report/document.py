"""A report as data (sections of text, tables and figures) and its writers.

One :class:`Report` renders to Markdown, one self-contained HTML file (figures embedded
as base64 PNG), a CSV and a LaTeX file per table, and a PNG and an SVG per figure. Tables
are written byte-identically for the same inputs; figures carry no timestamps.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402

from hce.report.tables import Table  # noqa: E402

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

    def png(self) -> bytes:
        if self._png is None:  # rendered once for both the HTML page and the PNG file
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png", dpi=150, bbox_inches="tight", metadata=_NO_DATE["png"])
            self._png = buffer.getvalue()
        return self._png

    def svg(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="svg", bbox_inches="tight", metadata=_NO_DATE["svg"])
        return buffer.getvalue()


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

    def section(self, title: str) -> Section:
        section = Section(title)
        self.sections.append(section)
        return section

    def tables(self) -> list[Table]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Table)]

    def figures(self) -> list[Figure]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Figure)]

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

    def write(self, out: str | Path) -> Path:
        """Write ``report.md``, ``report.html``, ``tables/*.csv|tex`` and ``figures/*.png|svg``."""
        out = Path(out)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        (out / "figures").mkdir(parents=True, exist_ok=True)
        for table in self.tables():
            (out / "tables" / f"{table.name}.csv").write_text(table.to_csv(), encoding="utf-8")
            (out / "tables" / f"{table.name}.tex").write_text(table.to_latex() + "\n", encoding="utf-8")
        for figure in self.figures():
            (out / "figures" / f"{figure.name}.png").write_bytes(figure.png())
            (out / "figures" / f"{figure.name}.svg").write_bytes(figure.svg())
        (out / "report.md").write_text(self.to_markdown(), encoding="utf-8")
        (out / "report.html").write_text(self.to_html(), encoding="utf-8")
        for figure in self.figures():
            plt.close(figure.figure)
        return out


_CSS = """
body{font-family:Georgia,'Times New Roman',serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #999;margin-top:2rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}caption{text-align:left;font-weight:bold;padding:.3rem 0}
th,td{padding:.25rem .6rem;border-top:1px solid #bbb;text-align:right}th{border-bottom:1px solid #333}
td.t,th.t{text-align:left}td.n{white-space:nowrap}p.note{font-size:.8rem;font-style:italic;margin:.2rem 0}
figure{margin:1rem 0}img{max-width:100%}figcaption{font-size:.9rem;font-style:italic}
""".strip()
