"""The manuscript writers (Markdown, Word, LaTeX) on a small hand-built manuscript of every block type."""

import html
import re
import shutil
import subprocess
import zipfile
from importlib import metadata
from pathlib import Path

import docx
import matplotlib
import pandas as pd
import pytest
from docx.enum.text import WD_COLOR_INDEX

from hce.errors import HceError
from hce.report.manuscript import (
    environment_table,
    write_docx,
    write_latex,
    write_manuscript,
    write_markdown,
)
from hce.report.manuscript.counts import word_counts
from hce.report.manuscript.markdown import to_markdown
from hce.report.manuscript.model import (
    Bullets,
    FigureBlock,
    Heading,
    Manuscript,
    Number,
    PageBreak,
    Paragraph,
    Placeholder,
    TableBlock,
    number_sources,
)  # fmt: skip
from hce.report.tables import Table

matplotlib.use("Agg")
import matplotlib.pyplot as plt

TITLE = "Judge Consistency of a Simulated LLM"
SPECIAL = r"Costs & 5% of $10 #1 a_b {x} ~y ^z \w"
SPECIAL_TEX = r"Costs \& 5\% of \$10 \#1 a\_b \{x\} \textasciitilde{}y \^{}z \textbackslash{}w"
ICC = Number("0.91", "tables/exp1_reliability.csv#row=icc2_1;col=estimate")
P = Number("< .001", "tables/exp2_friedman.csv#row=total;col=p_value")
N = Number("1,200", "tables/table1.csv#row=all;col=n_attempts")


def figure_png(folder: Path) -> Path:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["P2.1", "P2.2", "P2.3"], [0.4, 0.3, 0.5])
    ax.set_ylabel("SD of total")
    path = folder / "fig1 sd by prompt.png"  # a space, which LaTeX file names must not hold
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def manuscript(folder: Path) -> Manuscript:
    table = Table(pd.DataFrame({"condition_id": ["P2.1", "P2.2"], "estimate": [0.41234, 0.2],
                                "ci_low": [0.2, 0.1], "ci_high": [0.6, 0.3], "p_value": [0.0004, 0.2]}),
                  caption="Prompt comparison", name="exp2_pairs", notes=["Holm-adjusted."])  # fmt: skip
    return Manuscript(
        title=TITLE,
        authors=["A. Author", Placeholder("co-authors")],
        blocks=[
            Heading(1, "Abstract"),
            Paragraph(["Importance: judges vary. Results: ICC was ", ICC, " over ", N, " attempts."], role="abstract"),
            Heading(1, "Key Points"),
            Paragraph(["Question: is the judge consistent?"], role="note"),
            Heading(1, "Introduction"),
            Paragraph([Placeholder("why consistency matters"), " See the PRD."]),
            Heading(1, "Methods"),
            Heading(2, "2.1 Data"),
            Paragraph([SPECIAL + "."]),
            Bullets([["first item with ", N, " attempts"], ["[0.2, 0.6] starts with a bracket"]]),
            Heading(1, "Results"),
            Paragraph(["Prompts differed (P ", P, "); see Table 1 and Figure 1."]),
            TableBlock(table, "Table 1"),
            FigureBlock(figure_png(folder), "Figure 1", "SD of total by prompt"),
            PageBreak(),
            Heading(1, "References"),
            Paragraph(["1. Smith J. A paper. JAMA. 2024."]),
        ],
    )


@pytest.fixture
def doc(tmp_path):
    return manuscript(tmp_path)


def test_markdown_numbers_carry_their_source_and_figures_are_copied(doc, tmp_path):
    out = write_markdown(doc, tmp_path / "out" / "manuscript.md")
    text = out.read_text(encoding="utf-8")
    sources = number_sources(doc)
    assert len(sources) == 4
    for number, source in zip(sources["text"], sources["source"]):
        assert f"{number}<!-- src: {source} -->" in text
    assert "Results: ICC was 0.91<!-- src: tables/exp1_reliability.csv#row=icc2_1;col=estimate --> over" in text
    assert "[[AUTHOR: why consistency matters]] See the PRD." in text
    assert text.startswith(f"# {TITLE}\n\nA. Author, [[AUTHOR: co-authors]]\n\n## Abstract\n")
    assert "### 2.1 Data" in text
    # the report's Markdown table, under reader-facing headers, with the label in the caption
    assert "**Table 1. Prompt comparison**" in text
    assert "| Condition | Estimate (95% CI) | P value |" in text
    assert "| P2.1 | 0.41 (0.20-0.60) | < .001 |" in text
    assert "*Holm-adjusted.*" in text
    # Markdown specials in prose are literal; a line starting "1." is not a list item
    assert r"Costs & 5% of \$10 #1 a\_b {x} \~y \^z \\w." in text and "\n1\\. Smith J." in text
    assert "![Figure 1. SD of total by prompt](figures/fig1-sd-by-prompt.png)" in text
    copied = tmp_path / "out" / "figures" / "fig1-sd-by-prompt.png"
    assert copied.read_bytes() == (tmp_path / "fig1 sd by prompt.png").read_bytes()
    assert '<div style="page-break-after: always;"></div>' in text


def test_markdown_renders_the_text_literally():
    # CommonMark (markdown-it-py, installed with rich): the escapes give back the text as typed,
    # the source comments are kept as HTML comments, and a bracket after a placeholder is no link
    from markdown_it import MarkdownIt

    doc = Manuscript("T *t*", [Paragraph([SPECIAL, " <b>", ICC, " ", Placeholder("x"), "(y) *z*"]),
                               Paragraph(["1. not a list; # not a heading"])])  # fmt: skip
    rendered = MarkdownIt("commonmark").render(to_markdown(doc))
    assert "<!-- src: tables/exp1_reliability.csv#row=icc2_1;col=estimate -->" in rendered
    visible = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert visible.splitlines() == ["T *t*", f"{SPECIAL} <b>0.91 [[AUTHOR: x]](y) *z*", "1. not a list; # not a heading"]


def test_docx_has_headings_table_cells_picture_comments_and_highlights(doc, tmp_path):
    word = docx.Document(write_docx(doc, tmp_path / "manuscript.docx"))
    styled = [(p.style.name, p.text) for p in word.paragraphs if p.style.name.startswith(("Title", "Heading"))]
    assert styled == [("Title", TITLE), ("Heading 1", "Abstract"), ("Heading 1", "Key Points"),
                      ("Heading 1", "Introduction"), ("Heading 1", "Methods"), ("Heading 2", "2.1 Data"),
                      ("Heading 1", "Results"), ("Heading 1", "References")]  # fmt: skip
    texts = [p.text for p in word.paragraphs]
    assert f"{SPECIAL}." in texts and "Table 1. Prompt comparison" in texts and "Holm-adjusted." in texts
    assert [p.text for p in word.paragraphs if p.style.name == "List Bullet"] == [
        "first item with 1,200 attempts", "[0.2, 0.6] starts with a bracket"]  # fmt: skip
    assert "Figure 1. SD of total by prompt" in [p.text for p in word.paragraphs if p.style.name == "Caption"]
    (table,) = word.tables
    assert [[c.text for c in row.cells] for row in table.rows] == [
        ["Condition", "Estimate (95% CI)", "P value"],
        ["P2.1", "0.41 (0.20-0.60)", "< .001"],
        ["P2.2", "0.20 (0.10-0.30)", ".20"],
    ]
    # the picture is embedded, byte for byte
    assert len(word.inline_shapes) == 1
    images = [p.blob for p in word.part.package.parts if p.content_type == "image/png"]
    assert images == [(tmp_path / "fig1 sd by prompt.png").read_bytes()]
    # each number's source is a Word comment on it, in reading order
    assert [c.text for c in word.comments] == [f"src: {s}" for s in number_sources(doc)["source"]]
    highlighted = [r.text for p in word.paragraphs for r in p.runs if r.font.highlight_color == WD_COLOR_INDEX.YELLOW]
    assert highlighted == ["[[AUTHOR: co-authors]]", "[[AUTHOR: why consistency matters]]"]
    assert word.element.body.xml.count('w:type="page"') == 1
    # no dates inside (zip entries, comments): the same manuscript gives the same file
    with zipfile.ZipFile(tmp_path / "manuscript.docx") as package:
        assert {entry.date_time for entry in package.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert b"w:date" not in package.read("word/comments.xml")
    assert write_docx(doc, tmp_path / "again.docx").read_bytes() == (tmp_path / "manuscript.docx").read_bytes()


def test_latex_escapes_special_characters_and_marks_numbers(doc, tmp_path):
    text = write_latex(doc, tmp_path / "out" / "manuscript.tex").read_text(encoding="utf-8")
    assert f"\n{SPECIAL_TEX}.\n" in text
    assert r"\title{Judge Consistency of a Simulated LLM}" in text
    assert r"\author{A. Author, \hceauthor{co-authors}}" in text
    assert r"ICC was \hcenum{0.91}{tables/exp1\_reliability.csv\#row=icc2\_1;col=estimate} over" in text
    assert r"(P \hcenum{$<$ .001}{tables/exp2\_friedman.csv\#row=total;col=p\_value});" in text
    assert r"\subsection*{2.1 Data}" in text and r"\item{} [0.2, 0.6] starts" in text
    assert r"\caption{Table 1. Prompt comparison}" in text and r"\toprule" in text and r"\bottomrule" in text
    assert r"P2.1 & 0.41 (0.20-0.60) & $<$ .001 \\" in text
    assert r"{figures/fig1-sd-by-prompt.png}" in text and (tmp_path / "out" / "figures" / "fig1-sd-by-prompt.png").is_file()
    assert r"\clearpage" in text and text.rstrip().endswith(r"\end{document}")
    # braces balance once escaped ones are taken out
    bare = re.sub(r"\\[{}]", "", text)
    assert bare.count("{") == bare.count("}")


def test_word_counts_follow_the_stated_rule(doc):
    # abstract: "Importance: judges vary. Results: ICC was 0.91 over 1,200 attempts." -> 10 words
    # body: Introduction " See the PRD." (3, placeholder not counted); SPECIAL + "." ->
    # Costs, 5%, of, $10, #1, a_b, {x}, ~y, ^z, \w. (10; the lone "&" has no letter or digit);
    # bullets "first item with 1,200 attempts" (5) and "[0.2, 0.6] starts with a bracket" (6);
    # Results "Prompts differed (P < .001); see Table 1 and Figure 1." (10; the lone "<" is not a word).
    # Not counted: the Key Points note, headings, the table, the caption, the References.
    assert word_counts(doc) == {"abstract_words": 10, "main_words": 3 + 10 + 5 + 6 + 10}


def test_word_counts_refuse_an_unknown_role():
    doc = Manuscript("T", [Paragraph(["x"]), Paragraph(["y"], role="abstracts")])
    with pytest.raises(HceError, match=r"block 1 \(Paragraph\): role 'abstracts' is not one of body, abstract, note"):
        word_counts(doc)


def test_write_manuscript_writes_every_format_and_the_sources(doc, tmp_path):
    out = tmp_path / "manuscript"
    result = write_manuscript(doc, out)
    assert result["abstract_words"] == 10 and result["main_words"] == 34
    assert result["files"] == [out / "manuscript.md", out / "manuscript.docx", out / "manuscript.tex",
                               out / "supplement" / "number_sources.csv"]  # fmt: skip
    sources = pd.read_csv(out / "supplement" / "number_sources.csv", dtype=str)
    pd.testing.assert_frame_equal(sources, number_sources(doc))
    assert sources["section"].tolist() == ["Abstract", "Abstract", "2.1 Data", "Results"]
    assert not (tmp_path / "other").exists()
    result = write_manuscript(doc, tmp_path / "other", sources_csv=False)
    assert not (tmp_path / "other" / "supplement").exists() and len(result["files"]) == 3


def test_a_missing_or_svg_figure_is_an_error_naming_it(tmp_path):
    (tmp_path / "fig.svg").write_text("<svg/>")
    for path, problem in (("nope.png", "does not exist"), ("fig.svg", "is not .png or .jpg or .jpeg")):
        doc = Manuscript("T", [FigureBlock(tmp_path / path, "Figure 3", "Gone")])
        for write, name in ((write_markdown, "m.md"), (write_docx, "m.docx"), (write_latex, "m.tex")):
            with pytest.raises(HceError, match=f"Figure 3: figure file .*{path} {problem}"):
                write(doc, tmp_path / name)


@pytest.mark.parametrize("number, problem", [
    (Number("0.91", ""), "a number needs both its text and its source"),
    (Number(" ", "t.csv#row=a;col=b"), "a number needs both its text and its source"),
    (Number("0.91", "t--x.csv#row=a;col=b"), "holds '--', which an HTML comment cannot"),
])  # fmt: skip
def test_a_number_without_a_usable_source_is_an_error(tmp_path, number, problem):
    doc = Manuscript("T", [Paragraph(["ICC ", number])])
    for write, name in ((write_markdown, "m.md"), (write_docx, "m.docx"), (write_latex, "m.tex")):
        with pytest.raises(HceError, match=re.escape(problem)):
            write(doc, tmp_path / name)


def test_environment_table_lists_versions_once():
    table = environment_table()
    assert table.columns.tolist() == ["package", "version"]
    assert table["package"].tolist()[:9] == ["python", "hce", "numpy", "scipy", "pandas", "statsmodels", "pymc", "arviz", "openai"]
    assert table["package"].is_unique
    versions = table.set_index("package")["version"]
    assert versions["pandas"] == metadata.version("pandas") and versions["python-docx"] == metadata.version("python-docx")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not on PATH")
    return path


def test_docx_converts_to_pdf_with_libreoffice(doc, tmp_path):
    soffice = _tool("soffice")
    pdftotext = _tool("pdftotext")
    source = write_docx(doc, tmp_path / "manuscript.docx")
    # a profile of its own, so a LibreOffice already running (or another test) does not block it
    profile = (tmp_path / "lo-profile").as_uri()
    subprocess.run([soffice, f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf",
                    "--outdir", str(tmp_path), str(source)], check=True, capture_output=True, timeout=180)  # fmt: skip
    pdf = tmp_path / "manuscript.pdf"
    text = subprocess.run([pdftotext, "-layout", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    assert text.count("\f") >= 1  # pdftotext ends each page with a form feed
    text = " ".join(text.split())  # the title's large type wraps it
    assert TITLE in text and "Prompt comparison" in text and "[[AUTHOR: why consistency matters]]" in text
    assert "src: tables" not in text  # comments are not printed


def test_latex_compiles_with_pdflatex(doc, tmp_path):
    pdflatex = _tool("pdflatex")
    source = write_latex(doc, tmp_path / "manuscript.tex")
    run = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", source.name],
                         check=False, cwd=tmp_path, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "manuscript.pdf").stat().st_size > 0
