"""A manuscript in every format at once, with the list of its numbers' sources.

Example
-------
>>> import tempfile, pathlib
>>> from hce.report.manuscript.model import Manuscript, Paragraph
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> result = write_manuscript(Manuscript("T", [Paragraph(["Two words."])]), out)
>>> result["main_words"], [p.relative_to(out).as_posix() for p in result["files"]]
(2, ['manuscript.md', 'manuscript.docx', 'manuscript.tex', 'supplement/number_sources.csv'])
"""

from __future__ import annotations

from pathlib import Path

from hce.report.manuscript.counts import word_counts
from hce.report.manuscript.latex import write_latex
from hce.report.manuscript.markdown import write_markdown
from hce.report.manuscript.model import Manuscript, number_sources
from hce.report.manuscript.word import write_docx

#: File stem of the three formats.
STEM = "manuscript"
#: Where the sources of the numbers go, relative to the output folder.
SOURCES_CSV = Path("supplement") / "number_sources.csv"


def write_manuscript(doc: Manuscript, out_dir: str | Path, *, sources_csv: bool = True) -> dict:
    """Write ``manuscript.md``, ``.docx`` and ``.tex`` and the sources of their numbers.

    Parameters
    ----------
    doc : Manuscript
    out_dir : str or Path
        Folder to write into (made if missing). Files of the same names are overwritten, other
        files are left alone (the study may write more of ``supplement/`` there). Figures are
        copied into ``figures/`` for the Markdown and LaTeX files and embedded in the Word file.
    sources_csv : bool
        Also write ``supplement/number_sources.csv``: ``section, text, source``, one row per
        number in reading order (``hce.report.manuscript.model.number_sources``).

    Returns
    -------
    dict
        ``abstract_words`` and ``main_words`` (``hce.report.manuscript.counts.word_counts``:
        the abstract is the text of role ``"abstract"``; the main text, as JAMA counts it, the
        text of role ``"body"``, so not the title, headings, Key Points and other notes, tables,
        figure captions or references; placeholders not counted), and ``files``, the paths
        written (figure copies not listed).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph, Number
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> doc = Manuscript("T", [Heading(1, "Abstract"),
    ...     Paragraph(["N = ", Number("120", "tables/t1.csv#row=all;col=n")], role="abstract")])
    >>> write_manuscript(doc, out)["abstract_words"]
    2
    >>> print((out / "supplement" / "number_sources.csv").read_text())
    section,text,source
    Abstract,120,tables/t1.csv#row=all;col=n
    <BLANKLINE>
    """
    out = Path(out_dir)
    counts = word_counts(doc)  # first: it checks the blocks' roles before anything is written
    files = [
        write_markdown(doc, out / f"{STEM}.md"),
        write_docx(doc, out / f"{STEM}.docx"),
        write_latex(doc, out / f"{STEM}.tex"),
    ]
    if sources_csv:
        path = out / SOURCES_CSV
        path.parent.mkdir(parents=True, exist_ok=True)
        number_sources(doc).to_csv(path, index=False, lineterminator="\n")
        files.append(path)
    return {**counts, "files": files}
