r"""A manuscript as a standalone LaTeX file (article class, booktabs tables, graphicx figures).

Each number is written ``\hcenum{0.91}{tables/x.csv\#row=icc2\_1;col=estimate}``: the macro,
defined in the preamble, prints its first argument only, so the source stays beside the number
in the file without breaking the line as a ``%`` comment inside a paragraph would.
Placeholders are ``\hceauthor{...}`` (bold red ``[[AUTHOR: ...]]``). The file compiles with
pdflatex; figures are read from ``figures/`` beside it.

Example
-------
>>> from hce.report.manuscript.model import Manuscript, Paragraph, Number
>>> doc = Manuscript("T", [Paragraph(["ICC = ", Number("0.91", "t.csv#row=icc2_1;col=estimate"), " (50%)."])])
>>> print(to_latex(doc).split(r"\maketitle")[1].strip().splitlines()[0])
ICC = \hcenum{0.91}{t.csv\#row=icc2\_1;col=estimate} (50\%).
"""

from __future__ import annotations

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
from hce.report.tables import escape_tex

PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[utf8]{inputenc}
\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage[margin=1in]{geometry}
\usepackage{booktabs}
\usepackage{graphicx}
\usepackage{xcolor}
% captions carry their own label ("Table 1. ..."), as the Markdown and Word files do
\usepackage[labelformat=empty,labelsep=none,font=small]{caption}
% a number as printed (#1) and the table cell it was taken from (#2, not printed)
\newcommand{\hcenum}[2]{#1}
% text the authors must write
\newcommand{\hceauthor}[1]{\textcolor{red}{\textbf{[[AUTHOR: #1]]}}}
"""

#: Sectioning commands by heading level (unnumbered: journals number nothing but tables and figures).
SECTIONS = ("section", "subsection", "subsubsection", "paragraph", "subparagraph")


def inline(parts: list[model.Inline]) -> str:
    """Inline parts as LaTeX text."""
    out = []
    for part in parts:
        if isinstance(part, model.Number):
            check_number(part)
            out.append(rf"\hcenum{{{escape_tex(part.text)}}}{{{escape_tex(part.source)}}}")
        elif isinstance(part, model.Placeholder):
            out.append(rf"\hceauthor{{{escape_tex(part.prompt)}}}")
        else:
            out.append(escape_tex(part.replace("\n", " ")))
    return "".join(out)


def to_latex(doc: model.Manuscript, figure_links: dict[Path, str] | None = None) -> str:
    """The manuscript as the text of a standalone ``.tex`` file.

    ``figure_links`` maps a figure's resolved path to the path written in ``\\includegraphics``
    (what :func:`~hce.report.manuscript.files.copy_figures` returns); by default its own path.
    """
    links = figure_links or {}
    authors = r", ".join(inline([a]) for a in doc.authors)
    lines = [PREAMBLE, rf"\title{{{escape_tex(doc.title)}}}", rf"\author{{{authors}}}", r"\date{}", "",
             r"\begin{document}", r"\maketitle", ""]  # fmt: skip
    for block in doc.blocks:
        if isinstance(block, model.Heading):
            lines.append(rf"\{SECTIONS[min(max(block.level, 1), len(SECTIONS)) - 1]}*{{{escape_tex(block.text)}}}")
        elif isinstance(block, model.Paragraph):
            lines.append(inline(block.parts))
        elif isinstance(block, model.Bullets):
            # "{}" after \item: an item starting with "[" would be read as \item's optional label
            lines += [r"\begin{itemize}", *(rf"\item{{}} {inline(item)}" for item in block.items), r"\end{itemize}"]
        elif isinstance(block, model.TableBlock):
            lines.append(labelled_table(block).to_latex(booktabs=True))
        elif isinstance(block, model.FigureBlock):
            link = links.get(Path(block.path).resolve(), Path(block.path).as_posix())
            lines += [r"\begin{figure}[htbp]", r"\centering",
                      rf"\includegraphics[width=\linewidth,height=0.75\textheight,keepaspectratio]{{{link}}}",
                      rf"\caption{{{escape_tex(labelled(block.label, block.caption))}}}", r"\end{figure}"]  # fmt: skip
        elif isinstance(block, model.PageBreak):
            lines.append(r"\clearpage")
        else:
            raise HceError(f"not a manuscript block: {type(block).__name__}")
        lines.append("")
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"


@fill_doc
def write_latex(doc: model.Manuscript, path: str | Path) -> Path:
    r"""Write the manuscript as a standalone LaTeX file, its figures copied into ``figures/`` beside it.

    %(writer_parameters)s
        The ``.tex`` file; its folder is made if missing.

    %(returns_path)s

    Notes
    -----
    Text is escaped for pdflatex (``& % $ # _ { } ~ ^ \``, ``<``, ``>``, and symbols the utf8
    input lacks such as ``≥`` and Greek letters: ``hce.report.tables.escape_tex``). Each
    number is ``\hcenum{<as printed>}{<source>}``; headings are unnumbered sections; tables are
    ``hce.report.tables.Table.to_latex`` with booktabs rules; figures are set at text width.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from hce.report.manuscript.model import Manuscript, Heading
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "manuscript.tex"
    >>> text = write_latex(Manuscript("Costs & 5% #1", [Heading(1, "Methods")]), out).read_text()
    >>> r"\title{Costs \& 5\% \#1}" in text, r"\section*{Methods}" in text
    (True, True)
    """
    return write_text(doc, path, to_latex)
