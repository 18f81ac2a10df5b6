import hashlib
import io
import re
import sys

import numpy as np
import pandas as pd

from hce.report import _beside, figures
from hce.report.document import Figure, Report
from hce.report.tables import Table, describe, format_p


def test_p_value_format_follows_apa():
    # APA 7 (section 6.36): no leading zero, exact to three decimals, "< .001" below.
    # JAMA: 2 decimals, 3 below .01 (issue 33)
    assert [format_p(p) for p in (0.00099, 0.001, 0.0449, 0.5)] == ["< .001", ".001", ".04", ".50"]


def test_table_keeps_raw_values_and_formats_for_display():
    raw = pd.DataFrame({"method": ["Mann-Whitney U"], "statistic": [1234.5], "p_value": [0.00012],
                        "estimate": [0.41234], "ci_low": [0.2], "ci_high": [0.6], "n": [50.0]})
    table = Table(raw, caption="H1a", name="h1a", notes=["two-sided"])
    shown = table.display_frame()
    assert shown.columns.tolist() == ["Method", "Statistic", "P value", "Estimate (95% CI)", "N"]
    # U is a rank sum: the half number it is, not "1,234.50" (issue 33)
    assert shown.iloc[0].tolist() == ["Mann-Whitney U", "1,234.5", "< .001", "0.41 (0.20-0.60)", "50"]
    # floats in their shortest form that reads back exactly
    assert table.to_csv().splitlines()[1] == "Mann-Whitney U,1234.5,0.00012,0.41234,0.2,0.6,50"
    quoted = Table(raw.assign(method="U, exact"), caption="H1a", name="h1a").to_csv()
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(quoted)), raw.assign(method="U, exact"), check_dtype=False)
    assert "| Mann-Whitney U | 1,234.5 | < .001 | 0.41 (0.20-0.60) | 50 |" in table.to_markdown()
    assert r"$<$ .001" in table.to_latex() and r"\label{tab:h1a}" in table.to_latex()
    assert "<caption>H1a</caption>" in table.to_html()


def test_describe_median_iqr():
    assert describe([1, 2, 3, np.nan]) == "median 2.00 (IQR 1.50-2.50), n = 3"


def report_with_everything():
    rng = np.random.default_rng(1)
    spread = pd.DataFrame({"condition_id": np.repeat(["P2.1", "P2.2", "P2.3"], 20), "sd": rng.gamma(2, 0.3, 60)})
    report = Report("Demo (simulated judge)")
    report.section("Experiment 2").add(
        "Friedman test on per-item SDs.",
        Table(spread.groupby("condition_id", as_index=False)["sd"].median(), caption="Median SD", name="exp2_sd"),
        Figure(figures.sd_by_condition(spread, condition="condition_id"), name="fig1", caption="Figure 1"),
        Figure(figures.sd_histogram(spread, thresholds=[1.0]), name="fig3", caption="Figure 3"),
        Figure(figures.score_histograms({"G1": rng.integers(5, 21, 50), "target": rng.integers(5, 21, 50)}), name="fig4", caption="Figure 4"),
    )
    return report


def digest(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_report_writes_every_format_deterministically(tmp_path):
    first = report_with_everything().write(tmp_path / "a")
    second = report_with_everything().write(tmp_path / "b")
    names = set(digest(first))
    assert {"report.md", "report.html", "tables/exp2_sd.csv", "tables/exp2_sd.tex", "figures/fig1.png", "figures/fig1.svg"} <= names
    assert digest(first) == digest(second)
    page = (first / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "<h1>Demo (simulated judge)</h1>" in page
    assert "![Figure 1](figures/fig1.png)" in (first / "report.md").read_text()


# Issue 22, item 5: tables that speak to readers.
def test_headers_are_words_in_markdown_html_and_latex_and_snake_case_in_csv():
    raw = pd.DataFrame({"comparison": ["H2"], "n_items": [40], "n_attempts": [480], "p_value": [0.02],
                        "effect_size": [0.31], "effect_ci_low": [0.1], "effect_ci_high": [0.5], "condition_id": ["P2.1"]})
    table = Table(raw, caption="Key results", name="key")
    words = ["Comparison", "Items", "Attempts", "P value", "Effect size (95% CI)", "Condition"]
    assert table.display_frame().columns.tolist() == words
    assert "| Comparison | Items | Attempts | P value | Effect size (95% CI) | Condition |" in table.to_markdown()
    page = table.to_html()
    assert all(f">{w}</th>" in page for w in words) and "_" not in "".join(re.findall(r"<th[^>]*>([^<]*)</th>", page))
    latex = table.to_latex()
    assert r"Comparison & Items & Attempts & P value & Effect size (95\% CI) & Condition \\" in latex
    assert table.to_csv().splitlines()[0] == "comparison,n_items,n_attempts,p_value,effect_size,effect_ci_low,effect_ci_high,condition_id"


def test_an_interval_does_not_break_across_lines_in_html():
    # Before: "[-1.00," and "-1.00]" sat on two lines of the HTML report. JAMA: "to" between negative limits (issue 45).
    table = Table(pd.DataFrame({"estimate": [-1.0], "ci_low": [-1.0], "ci_high": [-0.5]}), caption="c", name="c")
    cell = re.search(r"<td[^>]*>([^<]*)</td>", table.to_html())
    assert cell.group(1) == "-1.00&nbsp;(-1.00&nbsp;to&nbsp;-0.50)" and 'class="n"' in cell.group(0)
    assert "td.n{white-space:nowrap}" in Report("r").to_html()
    # an interval inside text (the scorecard's "55.0% (95% CI, 34.2%-74.2%) of 20") stays whole too
    text = Table(pd.DataFrame({"value": ["55.0% (95% CI, 34.2%-74.2%) of 20"]}), caption="c", name="c").to_html()
    assert "55.0% (95%&nbsp;CI,&nbsp;34.2%-74.2%) of 20" in text


def test_numbers_get_the_digits_they_need():
    # an ICC of 0.99937 was "1.00 [1.00, 1.00]"
    icc = Table(pd.DataFrame({"metric": ["ICC(A,1)"], "estimate": [0.99937], "ci_low": [0.99901],
                              "ci_high": [0.99962]}), caption="ICC", name="icc")  # fmt: skip
    assert icc.display_frame().iloc[0, 1] == "0.9994 (0.9990-0.9996)"  # a coefficient: 2 decimals unless they show 1.00
    small = Table(pd.DataFrame({"share": [0.0004, 0.25], "mean": [12.34567, 3e-9]}), caption="s", name="s")
    # one number of decimals per column (issue 33: a column reads alike), each cell its own past scientific notation
    assert small.display_frame().to_numpy().tolist() == [["0.00040", "12.35"], ["0.25000", "3.0e-09"]]


def test_an_unbounded_interval_is_shown_as_such():
    # A 2-level facet's variance: an upper limit at infinity, or a finite 1e88 from a
    # degenerate chi-square, was printed as an 88-digit number.
    raw = pd.DataFrame({"component": ["prompt_id", "prompt_id"], "estimate": [0.02, 0.02],
                        "ci_low": [0.0, 0.0], "ci_high": [np.inf, 2.5e88]})  # fmt: skip
    cells = Table(raw, caption="v", name="v").display_frame()["Estimate (95% CI)"].tolist()
    assert cells == ["0.020 (0.000 to ∞)", "0.020 (0.000-2.5e+88)"]
    assert r"$\infty$)" in Table(raw, caption="v", name="v").to_latex()


def small_report(name):
    report = Report("Demo")
    report.section("Results").add(Table(pd.DataFrame({"n": [1]}), caption=name, name=name))
    return report


def test_a_rewritten_report_folder_holds_only_the_new_reports_files(tmp_path):
    # Issue #22: stale tables/exp5_*.csv from an earlier run stayed beside the new report.
    small_report("exp5_sd").write(tmp_path / "r")
    folder = small_report("exp2_sd").write(tmp_path / "r")
    assert not (folder / "tables" / "exp5_sd.csv").exists() and (folder / "tables" / "exp2_sd.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary folder left beside it


def test_a_folder_hce_did_not_write_is_never_replaced(tmp_path):
    import pytest

    from hce.errors import HceError

    theirs = tmp_path / "mine"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("keep me")
    with pytest.raises(HceError, match="not written by hce report"):
        small_report("t").write(theirs)
    assert [p.name for p in theirs.iterdir()] == ["thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    small_report("t").write(tmp_path / "empty")  # an empty or new folder is fine


def test_sd_figure_of_many_items_is_aggregated():
    # Issue #22: 10,000 items a condition are a box plot, not a 10,000-point strip.
    spread = pd.DataFrame({"condition_id": np.repeat(["a", "b"], 10_000), "sd": np.random.default_rng(0).gamma(2, 0.3, 20_000)})
    figure = figures.sd_by_condition(spread, condition="condition_id")
    assert figure.axes[0].collections == [] or all(len(c.get_offsets()) == 0 for c in figure.axes[0].collections)
    few = figures.sd_by_condition(spread.iloc[::100], condition="condition_id")
    assert sum(len(c.get_offsets()) for c in few.axes[0].collections) == 200


def test_the_figures_style_is_seaborns_whitegrid_without_importing_seaborn():
    # Issue 35: seaborn (0.2 s to import) is loaded only by a figure seaborn draws.
    import seaborn as sns

    assert figures.WHITEGRID == {k: v for k, v in sns.axes_style("whitegrid").items() if k != "image.cmap"}


def test_tables_written_once_formatted_read_as_each_format_alone(tmp_path):
    # Issue 35: a report formats each table once for LaTeX, Markdown and HTML; the files are what each writer gives alone.
    report = report_with_everything()
    table = report.tables()[0]
    folder = report.write(tmp_path / "r")
    assert table._shown is None  # nothing held after writing
    assert (folder / "tables" / "exp2_sd.tex").read_text() == table.to_latex() + "\n"
    assert table.to_markdown() in (folder / "report.md").read_text()
    assert table.to_html() in (folder / "report.html").read_text()
    shown = table.display_frame()  # the rows of the Markdown table are the displayed frame's
    assert table.to_markdown().splitlines()[2:] == ["| " + " | ".join(shown.columns) + " |", "| --- | --- |",
                                                    *("| " + " | ".join(row) + " |" for row in shown.itertuples(index=False))]


def test_a_report_written_with_a_second_core_is_the_one_written_on_one(tmp_path, monkeypatch):
    # Issue 35: tables and SVGs are written by a forked child where there is a second core.
    monkeypatch.setattr(_beside, "can_fork", lambda: sys.platform.startswith("linux"))  # as if idle
    forked = report_with_everything().write(tmp_path / "two")
    monkeypatch.setattr(_beside, "can_fork", lambda: False)
    alone = report_with_everything().write(tmp_path / "one")
    assert digest(forked) == digest(alone)


def test_a_report_of_many_figures_never_enters_pyplot(tmp_path):
    """CI of session 6: a worker that had drawn 20 figures failed the demo with pyplot's
    "More than 20 figures have been opened" warning (an error under the test settings); a study
    report draws dozens. hce's figures are made outside pyplot, so none is kept or warned of."""
    import warnings

    import matplotlib.pyplot as plt

    import hce.stats as hs
    from hce.report.figures import sd_by_condition

    spread = hs.item_spread(hs.simulated_log(n_items=6, n_attempts=3, noise={"A": 0.2, "B": 0.6}))
    doc = Report("many")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(25):
            doc.section(f"s{k}").add(Figure(sd_by_condition(spread, condition="condition_id"), f"f{k}", "SD"))
        assert plt.get_fignums() == []
        doc.write(tmp_path / "out")
    assert len(list((tmp_path / "out").rglob("*.png"))) == 25
