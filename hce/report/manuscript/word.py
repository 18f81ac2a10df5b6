"""A manuscript as a Word file (python-docx): what journals and co-authors edit.

Headings in Word's heading styles, bullet lists in "List Bullet", tables as real Word tables
(header row bold and repeated on each page, numbers right-aligned; JAMA's rules: a horizontal
rule above and below the header row and at the bottom, no vertical rules, no shading), figures embedded at text
width with their captions, page breaks. Each number carries its source cell as a Word comment
(python-docx >= 1.2), shown in the margin while editing and not printed;
placeholders are highlighted yellow.

Example
-------
>>> import tempfile, pathlib, docx
>>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph, Number
>>> out = pathlib.Path(tempfile.mkdtemp()) / "m.docx"
>>> doc = Manuscript("Title", [Heading(1, "Results"), Paragraph(["ICC ", Number("0.91", "t.csv#row=a;col=b")])])
>>> word = docx.Document(write_docx(doc, out))
>>> [p.text for p in word.paragraphs], [c.text for c in word.comments]
(['Title', 'Results', 'ICC 0.91'], ['src: t.csv#row=a;col=b'])
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
from docx.enum.section import WD_ORIENT, WD_SECTION
from docx.enum.table import WD_TABLE_ALIGNMENT
from docx.enum.text import WD_ALIGN_PARAGRAPH, WD_COLOR_INDEX
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt

from hce._docstrings import fill_doc
from hce.errors import HceError
from hce.report.manuscript import model
from hce.report.manuscript.files import (
    check_figure,
    check_number,
    labelled,
    labelled_table,
)

#: The author Word shows on the source comments.
COMMENT_AUTHOR = "hce"


@fill_doc
def write_docx(doc: model.Manuscript, path: str | Path) -> Path:
    """Write the manuscript as a Word ``.docx`` file.

    %(writer_parameters)s
        The ``.docx`` file; its folder is made if missing. Figures are embedded.

    %(returns_path)s

    Notes
    -----
    Every ``hce.report.manuscript.model.Number`` is a run of its own with a Word comment
    ``src: <source>`` (author ``hce``) anchored to it; placeholders read ``[[AUTHOR: ...]]``
    highlighted yellow. Word's own word count includes tables and captions; the journal counts
    are ``hce.report.manuscript.counts.word_counts``.

    Examples
    --------
    >>> import tempfile, pathlib, docx
    >>> from hce.report.manuscript.model import Manuscript, Paragraph, Placeholder
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "m.docx"
    >>> run = docx.Document(write_docx(Manuscript("T", [Paragraph([Placeholder("aims")])]), out)).paragraphs[1].runs[0]
    >>> run.text, run.font.highlight_color.name
    ('[[AUTHOR: aims]]', 'YELLOW')
    """
    path = Path(path)
    word = docx.Document()
    word.core_properties.title = doc.title
    word.core_properties.author = ""
    word.core_properties.comments = "Draft written by hce; each number's source cell is a comment on it."
    word.add_heading(doc.title, level=0)
    if doc.authors:
        paragraph = word.add_paragraph()
        for i, author in enumerate(doc.authors):
            _add_runs(word, paragraph, ([", "] if i else []) + [author])
    for block in doc.blocks:
        if isinstance(block, model.Heading):
            word.add_heading(block.text, level=min(max(block.level, 1), 9))
        elif isinstance(block, model.Paragraph):
            _add_runs(word, word.add_paragraph(), block.parts)
        elif isinstance(block, model.Bullets):
            for item in block.items:
                _add_runs(word, word.add_paragraph(style="List Bullet"), item)
        elif isinstance(block, model.TableBlock):
            _add_table(word, block)
        elif isinstance(block, model.FigureBlock):
            _add_figure(word, block)
        elif isinstance(block, model.PageBreak):
            word.add_page_break()
        else:
            raise HceError(f"not a manuscript block: {type(block).__name__}")
    path.parent.mkdir(parents=True, exist_ok=True)
    _save(word, path)
    return path


def _save(word: docx.document.Document, path: Path) -> None:
    """Save with every zip entry dated 1980-01-01, so the same manuscript gives the same bytes."""
    buffer = io.BytesIO()
    word.save(buffer)
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            target.writestr(zipfile.ZipInfo(entry.filename, date_time=(1980, 1, 1, 0, 0, 0)), source.read(entry),
                            compress_type=zipfile.ZIP_DEFLATED)  # fmt: skip


def _add_runs(word: docx.document.Document, paragraph, parts: list[model.Inline]) -> None:
    for part in parts:
        if isinstance(part, model.Number):
            run = paragraph.add_run(check_number(part).text)
            comment = word.add_comment(run, text=f"src: {part.source}", author=COMMENT_AUTHOR, initials=COMMENT_AUTHOR)
            comment._comment_elm.attrib.pop(qn("w:date"), None)  # optional; without it the file is reproducible
        elif isinstance(part, model.Placeholder):
            run = paragraph.add_run(f"[[AUTHOR: {part.prompt}]]")
            run.font.highlight_color = WD_COLOR_INDEX.YELLOW
        else:
            paragraph.add_run(part)


def _add_table(word: docx.document.Document, block: model.TableBlock) -> None:
    """The table at column widths fitted to its cells, on a landscape page when portrait is too narrow.

    No word is cut: a column is at least as wide as its longest word (hyphens do not break, so a
    model name or a negative interval stays on one line), numbers and intervals never wrap,
    and the page's spare width goes to the text columns that would otherwise wrap.
    """
    table = labelled_table(block)
    columns = table.display_columns()
    texts = [[name, *cells] for name, cells, _ in columns]
    numeric = [not text for _, _, text in columns]
    pt = TABLE_PT
    widths = column_widths(texts, numeric, _text_width(word.sections[-1]), pt=pt)
    wide = widths is None
    if wide:  # a landscape section of its own, then portrait again for what follows
        _new_section(word, WD_ORIENT.LANDSCAPE)
        landscape = _text_width(word.sections[-1])
        # a smaller type before any word is cut: only a table too wide even at the smallest size is squeezed
        for pt in TABLE_PT_WIDE:
            widths = column_widths(texts, numeric, landscape, pt=pt)
            if widths is not None:
                break
        else:
            widths = column_widths(texts, numeric, landscape, pt=pt, fit=True)
    caption = word.add_paragraph()
    caption.add_run(table.caption).bold = True
    caption.paragraph_format.keep_with_next = True
    grid = word.add_table(rows=len(table.data) + 1, cols=len(columns))  # the default style: no rules, no shading
    grid.alignment = WD_TABLE_ALIGNMENT.CENTER
    grid.autofit = False
    _journal_rules(grid)
    _repeat_as_header(grid.rows[0])
    for j, (column, width) in enumerate(zip(texts, widths)):
        grid.columns[j].width = Pt(width)
        align = WD_ALIGN_PARAGRAPH.LEFT if columns[j][2] else WD_ALIGN_PARAGRAPH.RIGHT
        for i, value in enumerate(column):
            cell = grid.cell(i, j)
            cell.width = Pt(width)
            paragraph = cell.paragraphs[0]
            run = _unbroken_run(paragraph, str(value))
            run.bold = i == 0
            run.font.size, run.font.name = Pt(pt), TABLE_FONT
            paragraph.alignment = align
    for note in table.notes:
        run = word.add_paragraph().add_run(note)
        run.italic, run.font.size = True, Pt(8)
    if wide:
        _new_section(word, WD_ORIENT.PORTRAIT)


#: Tables are set in Arial (Liberation Sans where Arial is missing has the same widths), so the
#: widths :func:`column_widths` estimates hold in Word and LibreOffice alike.
TABLE_FONT, TABLE_PT = "Arial", 9
#: Sizes (points) tried in turn for a table too wide for a portrait page, on a landscape one.
TABLE_PT_WIDE = (9, 8, 7.5, 7)
#: Arial's advance widths in em: narrow, wide and capital letters; every other character 0.556.
_NARROW, _WIDE = set("iljtfI.,;:'!|()[] "), set("mwMW%")
#: A cell's left and right margins (Word's default 0.08 inch each), in points, and a little slack.
CELL_MARGINS = 11.52
_PADDING = CELL_MARGINS + 2.5


def text_width(text: str, *, bold: bool = False, pt: float = TABLE_PT) -> float:
    """The width of ``text`` in points at the table font (:data:`TABLE_FONT`) and size ``pt``, estimated.

    Examples
    --------
    >>> round(text_width("0.76 (0.60-0.88)"), 1), text_width("a", bold=True) > text_width("a")
    (65.1, True)
    """
    em = sum(0.278 if c in _NARROW else 0.833 if c in _WIDE else 0.667 if c.isupper() else 0.556 for c in text)
    return em * pt * (1.07 if bold else 1.0)


def column_widths(columns: list[list[str]], numeric: list[bool], available: float, *, fit: bool = False,
                  pt: float = TABLE_PT) -> list[float] | None:
    """Widths (points) of table columns whose cells (header first, set at ``pt``) fit ``available`` without cutting a word.

    A column is at least as wide as its longest word (a number column as its longest cell:
    an interval never wraps); the spare width goes to the columns that would wrap, in
    proportion to what they lack. None when even the narrowest layout is wider than
    ``available``, unless ``fit``: then every column shrinks in proportion (the widest tables
    on a landscape page).

    Examples
    --------
    >>> column_widths([["Model", "gpt-4o-2024-08-06"], ["P value", ".04"]], [False, True], 432.0)
    [96.6, 47.2]
    >>> column_widths([["x" * 200], ["y"]], [False, False], 432.0) is None
    True
    """
    least, most = [], []
    for cells, number in zip(columns, numeric):
        words = [max((text_width(w, bold=i == 0, pt=pt) for w in c.split()), default=0.0) for i, c in enumerate(cells)]
        whole = [text_width(c, bold=i == 0, pt=pt) for i, c in enumerate(cells)]
        least.append(max(whole[1:] + words[:1] if number else words, default=0.0) + _PADDING)
        most.append(max(whole, default=0.0) + _PADDING)
    if sum(least) > available:
        return [round(w * available / sum(least), 1) for w in least] if fit else None
    spare, lacking = available - sum(least), [m - w for w, m in zip(least, most)]
    share = min(1.0, spare / sum(lacking)) if sum(lacking) > 0 else 0.0
    return [round(w + share * lack, 1) for w, lack in zip(least, lacking)]


def _text_width(section) -> float:
    return (section.page_width - section.left_margin - section.right_margin) / 12700  # EMU per point


def _new_section(word: docx.document.Document, orientation) -> None:
    """Start a section on a new page in ``orientation``, the page's sides swapped as needed."""
    section = word.add_section(WD_SECTION.NEW_PAGE)
    short, long = sorted((section.page_width, section.page_height))
    section.orientation = orientation
    section.page_width, section.page_height = (long, short) if orientation == WD_ORIENT.LANDSCAPE else (short, long)


def _unbroken_run(paragraph, text: str):
    """A run of ``text`` whose hyphens are Word's non-breaking hyphens (``w:noBreakHyphen``): a line
    never breaks inside ``gpt-4o-2024-08-06`` or ``-0.98 to -0.30``; the text reads back unchanged."""
    run = paragraph.add_run()
    for i, piece in enumerate(text.split("-")):
        if i:
            run._r.append(OxmlElement("w:noBreakHyphen"))
        if piece:
            run._r.add_t(piece)
    return run


#: The rules of a journal table (JAMA): one above and one below the header row, one at the bottom.
RULE = {"val": "single", "sz": "4", "space": "0", "color": "000000"}


#: The elements that follow a border element in its parent (OOXML's sequence; Word refuses another order).
_AFTER = {"w:tblBorders": ("w:shd", "w:tblLayout", "w:tblCellMar", "w:tblLook", "w:tblCaption", "w:tblDescription"),
          "w:tcBorders": ("w:shd", "w:noWrap", "w:tcMar", "w:textDirection", "w:tcFitText", "w:vAlign", "w:hideMark")}


def _borders(parent, tag: str, rules: dict[str, bool]) -> None:
    """Give ``parent`` (a table's or a cell's properties) a ``tag`` border element: a rule or none per side."""
    borders = OxmlElement(tag)
    for side, ruled in rules.items():
        edge = OxmlElement(f"w:{side}")
        for key, value in (RULE if ruled else {"val": "nil"}).items():
            edge.set(qn(f"w:{key}"), value)
        borders.append(edge)
    parent.insert_element_before(borders, *_AFTER[tag])


def _journal_rules(grid) -> None:
    """Horizontal rules above and below the header and at the bottom; no vertical or inner rules."""
    _borders(grid._tbl.tblPr, "w:tblBorders", {"top": True, "left": False, "bottom": True, "right": False,
                                               "insideH": False, "insideV": False})  # fmt: skip
    for cell in grid.rows[0].cells:
        _borders(cell._tc.get_or_add_tcPr(), "w:tcBorders", {"bottom": True})


def _repeat_as_header(row) -> None:
    """Mark a table row as the header Word repeats at the top of each page."""
    properties = row._tr.get_or_add_trPr()
    header = OxmlElement("w:tblHeader")
    header.set(qn("w:val"), "true")
    properties.append(header)


def _add_figure(word: docx.document.Document, block: model.FigureBlock) -> None:
    section = word.sections[-1]
    width = section.page_width - section.left_margin - section.right_margin
    word.add_picture(str(check_figure(block)), width=width)
    word.paragraphs[-1].paragraph_format.keep_with_next = True
    word.add_paragraph(labelled(block.label, block.caption), style="Caption")
