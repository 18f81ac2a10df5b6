"""JAMA presentation in every output of `hce demo` + `hce manuscript` (issue 45, items 6 and 7).

Each pattern the reviewer found is searched for in every output a reader sees: the report
(Markdown and HTML), the LaTeX tables, the manuscript (Markdown, LaTeX, Word) and, when
LibreOffice is installed, the pages of the Word file rendered to PDF.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

#: What no output may print, each with the reviewer's example (issue 45).
FORBIDDEN = {
    "an undefined interval as dashes ([—, —])": r"\[\s*(?:—|---)\s*,\s*(?:—|---)\s*\]",
    "scientific notation (1.0e+00, 1.4e-16)": r"\d\.\de[+-]\d\d",
    "NaN in words (their SD is NaN)": r"\bNaN\b",
    "a bracketed interval (0.41 [0.20, 0.60])": r"(?:\d|%|CI) \[-?\d[\d.,]*%?, -?\d[\d.,]*%?\]",
    "a hyphen range with a negative limit (-0.98--0.30)": r"(?<![\w.])-\d[\d.]*%?-(?:-|\d)|\d-−",
}


def docx_text(path: Path) -> str:
    docx = pytest.importorskip("docx")
    word = docx.Document(path)
    cells = [cell.text for table in word.tables for row in table.rows for cell in row.cells]
    return "\n".join([p.text for p in word.paragraphs] + cells)


@pytest.fixture(scope="module")
def outputs(demo_outputs) -> dict[str, str]:
    """Every output's text, by file name (number-source comments removed)."""
    files = {name: demo_outputs / name for name in ("report.md", "report.html", "manuscript/manuscript.md",
                                                    "manuscript/manuscript.tex")}  # fmt: skip
    texts = {name: re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.S) for name, path in files.items()}
    texts.update({f"tables/{p.name}": p.read_text(encoding="utf-8") for p in sorted((demo_outputs / "tables").glob("*.tex"))})
    texts["manuscript/manuscript.docx"] = docx_text(demo_outputs / "manuscript" / "manuscript.docx")
    return texts


@pytest.mark.parametrize("what", FORBIDDEN)
def test_no_output_prints_what_a_journal_would_not(outputs, what):
    found = [(name, m.group(0), text[max(0, m.start() - 60):m.end() + 20].replace("\n", " "))
             for name, text in outputs.items() for m in re.finditer(FORBIDDEN[what], text)]  # fmt: skip
    assert not found, f"{what}: {len(found)} place(s), e.g. {found[:3]}"


def markdown_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Each Markdown table under its bold caption: rows as {header: cell}."""
    out = {}
    for caption, body in re.findall(r"\*\*([^*\n]+)\*\*\n\n((?:\|.*\|\n)+)", text):
        lines = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])] for line in body.strip().splitlines()]
        out[caption] = [dict(zip(lines[0], row)) for row in lines[2:]]
    return out


def decimals(cell: str) -> set[int]:
    """The decimals of every number in a cell (``0.76 (0.60-0.88)`` -> {2})."""
    return {len(d) for d in re.findall(r"\d\.(\d+)", cell)}


def test_each_statistic_type_has_its_journal_decimals(outputs):
    report = markdown_tables(outputs["report.md"])
    calibration = [r for caption, rows in report.items() if "calibration of category-score confidence" in caption for r in rows]
    assert calibration and all(decimals(r["Estimate (95% CI)"]) == {3} for r in calibration)  # ECE was "0.00570"
    strata = [r for caption, rows in report.items() if "Kruskal" in caption or "strat" in caption.lower() for r in rows
              if "Effect size (95% CI)" in r and r["Effect size (95% CI)"][:1].isdigit()]  # fmt: skip
    assert all(decimals(r["Effect size (95% CI)"]) == {2} for r in strata)  # epsilon squared was printed to 6
    # Kendall's W: one number of decimals in every table and sentence (was 3 in Table 2, 2 in the text)
    w_cells = [r["Effect size (95% CI)"] for rows in report.values() for r in rows
               if "Kendall's W" in r.get("Method", "") and r.get("Effect size (95% CI)", "")[:1].isdigit()]  # fmt: skip
    manuscript = outputs["manuscript/manuscript.md"]
    w_text = re.findall(r"Kendall W = (\d\.\d+) \(95% CI, (\d\.\d+)-(\d\.\d+)\)", manuscript)
    assert w_cells and w_text
    assert {len(d) for cell in w_cells for d in re.findall(r"\d\.(\d+)", cell)} | {len(v.split(".")[1]) for t in w_text for v in t} == {2}
    # raw and temperature-adjusted ECE side by side (issue 45 item 4), each to 3 decimals
    eces = re.findall(r"ECE (\d\.\d+) \(95% CI, (\d\.\d+)-(\d\.\d+)\)", manuscript)
    assert eces and {len(v.split(".")[1]) for ece in eces for v in ece} == {3}
    cramer = re.findall(r"Cramér V = (\d\.\d+) \(95% CI, (\d\.\d+)-(\d\.\d+)\)", manuscript)
    assert cramer and {len(v.split(".")[1]) for t in cramer for v in t} == {2}


def test_intervals_are_written_the_jama_way(outputs):
    manuscript = outputs["manuscript/manuscript.md"]
    named = re.findall(r"\(95% CI(?!\))(.{0,14})", manuscript)
    assert named and all(after.startswith((", ", " not estimable")) for after in named), named  # never "(95% CI [0.60, 0.88])"
    assert "(95% CI, -0.98 to -0.30)" in manuscript or re.search(r"\(95% CI, -\d\.\d+ to -?\d\.\d+\)", manuscript)
    assert "CI not estimable: every pair is ordered one way" in manuscript  # in words, with its reason
    table2 = markdown_tables(outputs["report.md"])
    cells = [r["Effect size (95% CI)"] for caption, rows in table2.items() if caption.startswith("Table 2") for r in rows]
    assert cells and all(re.fullmatch(r"-?\d\.\d+ \((?:-?\d\.\d+(?:-| to )-?\d\.\d+|CI not estimable: [a-z ]+)\)", c) for c in cells), cells


def test_table_3_shows_codes_in_words(outputs):
    for name in ("report.md", "manuscript/manuscript.md"):
        (rows,) = [rows for caption, rows in markdown_tables(outputs[name]).items() if caption.startswith("Table 3")]
        assert rows and not [r for r in rows if "_" in r["Dimension"] + r["Code"]], name  # "evidence type", not evidence_type


#: Codes a manuscript may print as they are: files and folders a reader opens, and the study file's keys the authors set.
_NAMED_AS_CODE = r"(?:[\w/.-]*\.(?:csv|json|png|md|sh|yaml)\b|hce\.[\w.]+|manuscript\.\w+)"


def snake_case_in(text: str) -> list[str]:
    """Each snake_case word (``age_band``, ``max_tokens``, also escaped ``age\\_band``) outside a file name or study-file key."""
    text = re.sub(r"\\hcenum\{([^}]*)\}\{[^}]*\}|\\label\{[^}]*\}", r"\1", text.replace("\\_", "_"))  # LaTeX's sources
    text = re.sub(_NAMED_AS_CODE, " ", text)
    return [m.group(0) for m in re.finditer(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", text)]


def test_the_manuscript_writes_names_as_words_not_codes(outputs):
    """Issue 45: strata (age_band), settings (max_tokens, model_version) and the partition's n_a were printed as codes."""
    for name in ("manuscript/manuscript.md", "manuscript/manuscript.tex", "manuscript/manuscript.docx"):
        found = snake_case_in(outputs[name])
        assert not found, f"{name}: {sorted(set(found))}"
    manuscript = outputs["manuscript/manuscript.md"]
    assert "age band (mean total)" in manuscript and "maximum output tokens" in manuscript


def test_the_report_shows_strata_in_words(outputs):
    report = markdown_tables(outputs["report.md"])
    strata = [r["Stratum"] for rows in report.values() for r in rows if "Stratum" in r]
    assert "age band" in strata and not [s for s in strata if "_" in s]  # the CSVs keep the codes the sources name
    (sm6,) = [r for rows in report.values() for r in rows if r.get("ID") == "SM6"]
    assert "age band 18-29" in " ".join(sm6.values()) and "age_band" not in " ".join(sm6.values())


def _sections(word) -> list[tuple[object, float]]:
    """Each table of the document with its section's text width (points)."""
    from docx.oxml.ns import qn
    from docx.section import Section

    out, pending = [], []
    for element in word.element.body.iterchildren():
        if element.tag == qn("w:tbl"):
            pending.append(element)
        properties = element.find(f"{qn('w:pPr')}/{qn('w:sectPr')}") if element.tag == qn("w:p") else (
            element if element.tag == qn("w:sectPr") else None)  # fmt: skip
        if properties is not None:
            section = Section(properties, word.part)
            width = (section.page_width - section.left_margin - section.right_margin) / 12700
            out += [(table, width) for table in pending]
            pending = []
    return out


def test_word_tables_fit_their_page_and_never_break_a_word(demo_outputs):
    docx = pytest.importorskip("docx")
    from docx.oxml.ns import qn

    from hce.report.manuscript.word import CELL_MARGINS, text_width

    word = docx.Document(demo_outputs / "manuscript" / "manuscript.docx")
    placed = _sections(word)
    assert len(placed) == len(word.tables) >= 3
    landscape = 0
    for k, (table, width) in enumerate(placed):
        columns = [int(c.get(qn("w:w"))) / 20 for c in table.find(qn("w:tblGrid")).findall(qn("w:gridCol"))]  # twips
        assert sum(columns) <= width + 1, (k, sum(columns), width)  # was: narrow equal columns, Table 2 on three pages
        landscape += width > 500
        rows = table.findall(qn("w:tr"))
        for j, column in enumerate(columns):
            cells = ["".join(t.text or "-" for t in row.findall(f"{qn('w:tc')}")[j].iter(qn("w:t"), qn("w:noBreakHyphen")))
                     for row in rows]  # fmt: skip
            pt = next(r.font.size.pt for r in docx.table.Table(table, word.part).rows[0].cells[j].paragraphs[0].runs)
            longest = max(text_width(w, bold=i == 0, pt=pt) for i, c in enumerate(cells) for w in c.split())
            # no word is cut ("Experi/ment"): the column holds its longest word inside the cell's own margins
            assert column >= longest + CELL_MARGINS, (k, j, column, longest)
        # a model name or a negative interval never breaks at its hyphens: every hyphen is a non-breaking one
        assert not [t.text for t in table.iter(qn("w:t")) if "-" in (t.text or "")], k
    assert landscape >= 1  # the demo's Table 2 and Table 3 are too wide for portrait


def pdf_text(pdf: Path) -> str | None:
    """The PDF's text laid out as on the page: Ghostscript's txtwrite, else pdftotext; None when neither is installed."""
    if shutil.which("gs"):
        out = subprocess.run(["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=txtwrite", "-sOutputFile=-", str(pdf)],
                             check=True, capture_output=True, timeout=120).stdout.decode("utf-8", "replace")  # fmt: skip
    elif shutil.which("pdftotext"):
        out = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, timeout=120).stdout.decode()
    else:
        return None
    # Ghostscript writes a ligature (fi, ff) as its two letters' UTF-16 code units byte-swapped (U+6600 U+6900).
    return "".join(chr(ord(c) >> 8) if ord(c) & 0xFF == 0 and 0x2000 <= ord(c) < 0x8000 else c for c in out)


def ink_right_edges(pdf: Path) -> list[float]:
    """The right edge (points) of everything drawn on each page (Ghostscript's bbox device)."""
    found = subprocess.run(["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=bbox", str(pdf)], capture_output=True,
                           timeout=120, check=True)  # fmt: skip
    return [float(m) for m in re.findall(r"%%HiResBoundingBox: \S+ \S+ (\S+) \S+", found.stderr.decode())]


@pytest.mark.slow
def test_the_word_manuscript_renders_to_pdf_pages_without_broken_words_or_wide_tables(demo_outputs, tmp_path):
    """Item 7: LibreOffice lays the Word file out as a reader's PDF (skips without it; ~10 s)."""
    docx = pytest.importorskip("docx")
    office = shutil.which("soffice") or shutil.which("libreoffice")
    if office is None:
        pytest.skip("LibreOffice not installed (apt-get install -y libreoffice-writer-nogui)")
    source = demo_outputs / "manuscript" / "manuscript.docx"
    subprocess.run([office, "--headless", f"-env:UserInstallation=file://{tmp_path / 'profile'}", "--convert-to", "pdf",
                    "--outdir", str(tmp_path), str(source)], check=True, capture_output=True, timeout=300)  # fmt: skip
    pdf = tmp_path / "manuscript.pdf"
    text = pdf_text(pdf)
    if text is None:
        pytest.skip("no PDF text extractor (Ghostscript or poppler-utils' pdftotext)")
    lines = [re.sub(r"\s+", " ", line) for line in text.splitlines()]
    word = docx.Document(source)
    cut = sorted({w for table in word.tables for row in table.rows for cell in row.cells for w in cell.text.split()
                  if len(w) > 3 and not any(w in line for line in lines)})  # fmt: skip
    assert not cut, f"table words broken across lines on the page: {cut[:10]}"
    objects = re.split(rb"endobj", pdf.read_bytes())
    pages = [re.search(rb"/MediaBox\s*\[([^\]]*)\]", o).group(1).split() for o in objects if re.search(rb"/Type\s*/Page(?![s\w])", o)]
    edges = ink_right_edges(pdf) if shutil.which("gs") else []
    assert not edges or len(edges) == len(pages) > 5
    for k, (edge, box) in enumerate(zip(edges, pages)):
        page_width = float(box[2])
        assert edge <= page_width - 54, (k + 1, edge, page_width)  # inside the 1.25 inch margin, with 1/2 inch to spare
