"""A statistical reviewer's checklist run on the generic report of a researcher's own logs (issue 33).

A custom rubric with a 0/1 criterion beside a 1-5 one, two logs sharing a condition id with
different settings, a torn log with planned attempts missing: each rule is asserted over every
table and sentence of the report, so a new table is checked without a new test.
"""

from __future__ import annotations

import itertools
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.log import TruncatedLogWarning
from hce.report import report
from hce.rubric import Category, Level, Rubric


def _levels(*scores):
    return tuple(Level(s, str(s), f"level {s}") for s in scores)


RUBRIC = Rubric("Mine", (Category("accurate", "Accurate", _levels(1, 2, 3, 4, 5)),
                         Category("stigma", "Stigma", _levels(0, 1))))  # fmt: skip
CONDITIONS = ("a", "b", "c")


def own_log(*, high=lambda i, c: (7 * i + 3 * c + i * c) % 5, n_items=12, attempts=4, experiment="MINE", **settings):
    """Items T0..T11 x conditions a, b, c x 4 attempts; ``high(i, c)`` of an item's attempts score stigma 1.

    The default is the design of tests/report/r/binary_glmm_reference.R. Attempt ids are made as
    hce collect makes them (experiment, item, condition id, attempt: not the settings).
    """
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_items):
        for c, condition in enumerate(CONDITIONS):
            k = high(i, c)
            for a in range(1, attempts + 1):
                rows.append({"attempt_id": f"{experiment}-{i}-{condition}-{a}", "experiment_id": experiment,
                             "item_id": f"T{i}", "condition_id": condition, "model": "m", "prompt_id": "P",
                             "attempt": a, "temperature": 0.1, "max_tokens": 1000, "endpoint": "default",
                             "accurate": int(np.clip(1 + i % 5 + rng.integers(-1, 2), 1, 5)), "stigma": int(a <= k),
                             "error_flag": False, **settings})  # fmt: skip
    return pd.DataFrame(rows)


def tables(document):
    return {t.name: t for t in document.tables()}


def section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def document():
    return report(own_log(), rubric=RUBRIC, random_state=0)


# --- 1. a two-level criterion is analysed as binary -----------------------------------------------
def test_the_binary_criterion_gets_no_scale_statistics(document):
    names = [name for name in tables(document) if name.startswith("stigma_")]
    assert sorted(names) == ["stigma_agreement", "stigma_binary", "stigma_condition_effects", "stigma_condition_test"]
    text = section(document.to_markdown(), "Criterion: Stigma")
    for word in ("Median SD", "Friedman", "ICC(", "alpha (interval)", "Wilcoxon", "Kruskal", "Mann-Whitney", "variance components"):
        assert word not in text, word
    assert "analysed as a binary outcome" in text


def test_binary_shares_have_counts_and_wilson_intervals_in_range(document):
    shares = tables(document)["stigma_binary"].data
    for _, row in shares.iterrows():
        assert row["estimate"] == row["n_items_high"] / row["n_items_decided"]
        assert row["n_items_decided"] + row["n_ties"] == row["n_items"] == 12
        assert row["share_attempts"] == row["n_attempts_high"] / row["n_attempts"]
        assert 0 <= row["ci_low"] <= row["estimate"] <= row["ci_high"] <= 1
    markdown = tables(document)["stigma_binary"].to_markdown()
    assert "Items at higher level" in markdown and "Items with a majority" in markdown


def test_conditions_are_compared_by_a_binomial_glmm_as_lme4():
    # tests/report/r/binary_glmm_reference.R: glmer(y ~ condition + (1 | item), family = binomial) on the
    # Bernoulli attempts, converged tightly (R 4.2.2, lme4 1.1.31); the report fits the aggregated cbind(high, low), same likelihood.
    doc = report(own_log(), rubric=RUBRIC, random_state=0)
    effects = tables(doc)["stigma_condition_effects"].data.set_index("condition_id")
    expected = {"b": (1.231071, 0.503196, 3.011817, 0.455420, 0.648807),
                "c": (0.899631, 0.365125, 2.216601, -0.229895, 0.818174)}
    for condition, values in expected.items():
        row = effects.loc[condition]
        np.testing.assert_allclose(row[["estimate", "ci_low", "ci_high", "statistic", "p_value"]].astype(float), values,
                                   rtol=2e-4)  # fmt: skip
        assert row["effect"] == "odds ratio" and row["reference"] == "a" and row["n_attempts"] == 48
    test = tables(doc)["stigma_condition_test"].data.iloc[0]
    np.testing.assert_allclose([test["statistic"], test["p_value"]], [0.487274, 0.783772], rtol=2e-4)
    assert test["df"] == 2 and test["n_items"] == 12 and test["n_attempts"] == 144
    assert "binomial generalised linear mixed model" in section(doc.to_markdown(), "Criterion: Stigma")


def test_separation_falls_back_to_a_cluster_analysis_and_says_why():
    log = own_log(high=lambda i, c: 0 if c == 2 else (7 * i + 3 * c) % 5)  # condition c never scores 1
    doc = report(log, rubric=RUBRIC, random_state=0)
    text = section(doc.to_markdown(), "Criterion: Stigma")
    assert "The binomial GLMM (glmer, random intercept per item) is not used: a condition has every attempt at one level" in text
    test = tables(doc)["stigma_condition_test"].data.iloc[0]
    assert test["method"].startswith("permutation test") and 0 < test["p_value"] < 0.01
    effects = tables(doc)["stigma_condition_effects"].data.set_index("condition_id")
    shares = log.groupby("condition_id")["stigma"].mean()
    assert effects.loc["c", "estimate"] == pytest.approx(shares["c"] - shares["a"], abs=1e-12)
    assert (effects["ci_low"] <= effects["estimate"]).all() and (effects["estimate"] <= effects["ci_high"]).all()
    assert (effects["ci_low"] >= -1).all() and (effects["ci_high"] <= 1).all()


def test_every_interval_of_the_report_holds_its_estimate(document):
    for name, table in tables(document).items():
        frame = table.data
        if {"estimate", "ci_low", "ci_high"} <= set(frame.columns):
            finite = frame.dropna(subset=["estimate", "ci_low", "ci_high"])
            assert (finite["ci_low"] <= finite["estimate"] + 1e-12).all(), name
            assert (finite["estimate"] <= finite["ci_high"] + 1e-12).all(), name


# --- 2. a condition is its id and its settings ---------------------------------------------------
def _write(tmp_path, name, frame):
    hce.write_log(frame, tmp_path / name)
    return str(tmp_path / name)


def test_two_logs_sharing_a_condition_id_with_other_settings_are_kept_apart(tmp_path):
    a = _write(tmp_path, "a.jsonl", own_log())
    b = _write(tmp_path, "b.jsonl", own_log(max_tokens=500))  # hce collect's ids: the same as a's
    out = tmp_path / "out"
    doc = report([a, b], rubric=RUBRIC, out=out, random_state=0)
    conditions = tables(doc)["conditions"].data
    assert sorted(conditions["condition_id"]) == sorted(f"{c} [max_tokens {m}]" for c in CONDITIONS for m in (1000, 500))
    assert (conditions["n_attempts"] == 48).all()  # each kept whole, never pooled into 96
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "Condition 'a' was run with 2 different settings (max_tokens 1000 / 500)" in text
    shares = tables(doc)["stigma_binary"].data
    assert (shares["n_attempts"] == 48).all() and len(shares) == 6


def test_the_cli_keeps_them_apart_too(tmp_path):
    a = _write(tmp_path, "a.jsonl", own_log())
    b = _write(tmp_path, "b.jsonl", own_log(max_tokens=500))
    result = CliRunner().invoke(app, ["report", a, b, "--out", str(tmp_path / "out")])
    assert result.exit_code in (0, 1), result.output
    spread = pd.read_csv(tmp_path / "out" / "tables" / "conditions.csv")
    assert "plain" not in set(spread["condition_id"]) and len(spread) == 6


def test_same_settings_twice_is_refused_and_another_server_is_named(tmp_path):
    a = _write(tmp_path, "a.jsonl", own_log())
    same = _write(tmp_path, "same.jsonl", own_log())
    with pytest.raises(hce.errors.LogFormatError, match="appears twice"):
        report([a, same], rubric=RUBRIC)
    a2 = _write(tmp_path, "a2.jsonl", own_log(system_fingerprint="fp_1"))
    other = _write(tmp_path, "other.jsonl", own_log(system_fingerprint="fp_2"))
    with pytest.raises(hce.errors.DataError, match=r"condition 'a' .* different servers \(system_fingerprint fp_1 / fp_2\)"):
        report([a2, other], rubric=RUBRIC)


def test_logs_with_the_same_settings_and_other_attempts_combine(tmp_path):
    a = _write(tmp_path, "a.jsonl", own_log())
    # a second run numbered on from the first (attempts 5-8) pools with it; one that repeats its attempt
    # numbers is another run of the plan, kept apart (tests/report/test_provenance.py)
    b = _write(tmp_path, "b.jsonl", own_log(experiment="MINE2").eval("attempt = attempt + 4"))
    doc = report([a, b], rubric=RUBRIC, random_state=0)
    conditions = tables(doc)["conditions"].data
    assert sorted(conditions["condition_id"]) == list(CONDITIONS) and (conditions["n_attempts"] == 96).all()
    assert not [r for r in doc.not_reported if "logged" in str(r)]


# --- 3. a half-finished log says so in the report -------------------------------------------------
def test_a_torn_log_with_missing_planned_attempts_is_reported_as_such(tmp_path):
    log = own_log()
    log = log[~((log["condition_id"] == "b") & (log["item_id"] == "T3") & (log["attempt"] > 2))]  # 2 missing
    log = log[~((log["condition_id"] == "c") & (log["item_id"] == "T11"))]  # an item never judged under c: 4 missing
    path = tmp_path / "log.jsonl"
    hce.write_log(log, path)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"attempt_id": "MINE-11-c-1", "item_id": "T11", "condi')  # a run stopped mid-write
    # The plan hce collect keeps beside the log: T12 was planned and never judged at all.
    items = {f"T{i}": "sha256 0" for i in range(13)}
    (tmp_path / "log.jsonl.settings.json").write_text(json.dumps({"fingerprints": {}, "items": {"MINE": items}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)
        report(path, rubric=RUBRIC, out=tmp_path / "out", random_state=0)
    for text in ((tmp_path / "out" / "report.md").read_text(encoding="utf-8"), (tmp_path / "out" / "report.html").read_text(encoding="utf-8")):
        assert "Incomplete log: " in text and "is incomplete" in text
        assert "condition a has 48 of 52 planned attempts (13 items x 4 attempts); 4 missing (T12: 4)." in text
        assert "condition b has 46 of 52 planned attempts (13 items x 4 attempts); 6 missing (T12: 4, T3: 2)." in text
        assert "condition c has 44 of 52 planned attempts (13 items x 4 attempts); 8 missing (T11: 4, T12: 4)." in text


def test_a_complete_log_has_no_incomplete_note(document):
    assert "Incomplete log" not in document.to_markdown()


# --- 5. presentation ----------------------------------------------------------------------------------
LIBRARY_TEXT = re.compile(r"Warning\b|invalid value encountered|divide by zero|More than 20 figures|boundary \(singular\) fit"
                          r"|isSingular|Traceback|FutureWarning|DeprecationWarning")  # fmt: skip


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The report of two logs sharing ids with other settings (six long condition labels), written out."""
    folder = tmp_path_factory.mktemp("generic")
    logs = [_write(folder, name, own_log(max_tokens=m)) for name, m in (("a.jsonl", 1000), ("b.jsonl", 500))]
    report(logs, rubric=RUBRIC, out=folder / "out", random_state=0)
    return folder / "out"


def test_no_library_warning_text_in_any_output(written):
    for path in [written / "report.md", written / "report.html", *sorted((written / "tables").glob("*.csv"))]:
        found = LIBRARY_TEXT.search(path.read_text(encoding="utf-8"))
        assert found is None, (path.name, found and found.group(0))


def _markdown_tables(markdown: str):
    """(header cells, rows of cells) of every Markdown table."""
    blocks = re.findall(r"((?:^\|.*\|\n)+)", markdown + "\n", flags=re.MULTILINE)
    for block in blocks:
        lines = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in block.strip().splitlines()]
        yield lines[0], lines[2:]


COUNT_HEADERS = {"Items", "Attempts", "N", "Scores", "Raters", "Errors", "Ties", "Items at higher level",
                 "Items with a majority", "Items flipping", "Attempts at higher level", "Pairs", "Zero", "df"}
P_CELL = re.compile(r"^(< \.001|> \.99|\.\d\d|\.00\d|\.0[45]\d|—)$")  # JAMA: .04, .004, .049 (next to .05), < .001, > .99


def test_decimals_follow_one_rule_per_statistic_type(written):
    markdown = (written / "report.md").read_text(encoding="utf-8")
    checked = 0
    for head, rows in _markdown_tables(markdown):
        methods = [row[head.index("Method")] for row in rows] if "Method" in head else [""] * len(rows)
        for column, name in enumerate(head):
            cells = [row[column] for row in rows]
            if name in COUNT_HEADERS:
                assert all(re.fullmatch(r"[\d,]+|—", c) for c in cells), (name, cells)
            elif "P value" in name:
                assert all(P_CELL.match(c) for c in cells), (name, cells)
            elif name == "Statistic":
                for cell, method in zip(cells, methods):
                    if re.search("Wilcoxon|Mann-Whitney", method):  # a rank sum: a whole or half number
                        assert re.fullmatch(r"-?[\d,]+(\.5)?", cell), (cell, method)
                    else:
                        assert re.fullmatch(r"-?[\d,]+\.\d\d|—", cell), (cell, method)
                checked += 1
    assert checked >= 3


def test_halves_are_rounded_by_one_rule():
    from hce.report.tables import format_ci, format_number

    assert [format_number(v) for v in (0.125, 0.375, 2.675, -0.125)] == ["0.13", "0.38", "2.68", "-0.13"]
    assert format_ci(0.125, 0.875, estimate=0.5) == "0.50 (0.13-0.88)"  # JAMA's interval (issue 45)


def test_tables_with_an_estimate_give_their_counts(written):
    for path in sorted((written / "tables").glob("*.csv")):
        frame = pd.read_csv(path)
        if "estimate" in frame and "component" not in frame and "metric" not in frame or path.stem.endswith("_binary"):
            assert any(c == "n" or c.startswith("n_") for c in frame.columns), path.stem


def test_condition_ticks_never_overlap():
    import matplotlib.pyplot as plt

    from hce.report.figures import sd_by_condition

    plt.close("all")  # figures other tests left open would make matplotlib warn on the 21st
    for names in (["plain [max_tokens 1000]", "plain [max_tokens 500]"],
                  [f"a_condition_with_a_long_name_{k} [max_tokens 1000]" for k in range(4)],
                  [f"cond_{k}" for k in range(12)]):  # fmt: skip
        spread = pd.DataFrame({"condition_id": np.repeat(names, 5), "sd": np.tile(np.linspace(0, 1, 5), len(names))})
        fig = sd_by_condition(spread, condition="condition_id")
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        boxes = [label.get_window_extent(renderer) for label in fig.axes[0].get_xticklabels()]
        assert all(not a.overlaps(b) for a, b in itertools.pairwise(boxes)), names
        labels = [label.get_text() for label in fig.axes[0].get_xticklabels()]
        if labels[0] == "C1":  # codes: the key is printed with the figure, every name in it
            key = " ".join(t.get_text() for t in fig.texts).replace("\u00a0", " ").replace("\n", " ")
            assert all(name in key for name in names)
        assert all(fig.bbox.contains(b.x0, b.y0) and fig.bbox.contains(b.x1, b.y1) for b in boxes)
        plt.close(fig)


# --- 4. the total only where it is a score -------------------------------------------------------------
def test_a_meaningless_total_is_never_analysed_even_without_a_rubric():
    log = own_log().assign(total=lambda d: d["accurate"] + d["stigma"])
    for rubric in (RUBRIC, None):  # the rubric says so; with none, the 0/1 beside the 1-5 column says so
        doc = report(log, rubric=rubric, random_state=0)
        assert not any(s.title.startswith("Criterion: Total") for s in doc.sections)
        assert "The total is not analysed" in doc.to_markdown()
    same = log.assign(stigma=lambda d: 6 - d["accurate"], total=lambda d: d["accurate"] + d["stigma"])  # two 1-5 scales
    assert any(s.title.startswith("Criterion: Total") for s in report(same, random_state=0).sections)


def test_the_readme_analysis_asks_the_rubric_before_taking_the_total():
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    analysis = readme.split("<!-- analysis-start -->", 1)[1].split("<!-- analysis-end -->", 1)[0]
    assert 'score = "total" if rubric.total_is_meaningful else' in analysis


def test_calibration_plot_shows_bin_sizes_and_hides_small_bins():
    # Figure 5 of the issue: a line through two bins (n = 2 and 398) looked like perfect calibration.
    from hce.report.figures import reliability_diagram

    bins = pd.DataFrame({"mean_prob": [0.15, 0.55, 0.9], "estimate": [0.0, 0.5, 0.95], "n": [2, 40, 398],
                         "ci_low": [0.0, 0.35, 0.92], "ci_high": [0.66, 0.65, 0.97]})  # fmt: skip
    ax = reliability_diagram(bins, min_count=10)
    drawn = np.vstack([c.get_offsets() for c in ax.collections if len(c.get_offsets()) and hasattr(c, "get_sizes")])
    assert 0.15 not in drawn[:, 0] and {0.55, 0.9} <= set(np.round(drawn[:, 0], 9))
    assert sorted(t.get_text() for t in ax.texts) == ["n=398", "n=40"]
    assert "1 bin with < 10 forecasts not shown (2 in all)" in ax.get_xlabel()


def test_every_column_keeps_its_own_header():
    # "n_a" and "a" were both headed "A": the pairwise table showed the counts where the conditions belong.
    log = own_log()
    log = log[~((log["condition_id"] == "c") & (log["item_id"] == "T0"))]  # items differ: Kruskal-Wallis, Mann-Whitney pairs
    doc = report(log, rubric=RUBRIC, random_state=0)
    for name, table in tables(doc).items():
        shown = table.display_frame()
        assert shown.columns.is_unique, (name, list(shown.columns))
    pairs = tables(doc)["accurate_sd_pairs"].display_frame()
    assert set(pairs["A"]) | set(pairs["B"]) == set(CONDITIONS) and {"N a", "N b"} <= set(pairs.columns)


def test_a_fingerprint_only_difference_is_named_from_the_recorded_parts(tmp_path):
    # Same model, prompt id and sampling; the prompt template changed (hce collect's settings_hash and its
    # <log>.settings.json say so): the note names the part, not "settings_hash only".
    a = _write(tmp_path, "a.jsonl", own_log(settings_hash="1111"))
    b = _write(tmp_path, "b.jsonl", own_log(settings_hash="2222"))
    for name, digest, template in (("a", "1111", "sha256 aaaa"), ("b", "2222", "sha256 bbbb")):
        kept = {"fingerprints": {digest: {"prompt template": template, "logprobs": False}}, "items": {}}
        (tmp_path / f"{name}.jsonl.settings.json").write_text(json.dumps(kept))
    doc = report([a, b], rubric=RUBRIC, random_state=0)
    assert "Condition 'a' was run with 2 different settings (prompt template sha256 aaaa / sha256 bbbb)" in doc.to_markdown()
    assert len(tables(doc)["conditions"].data) == 6


def test_every_test_and_interval_names_its_method(document):
    # A reader must be able to say which test gave each P value and how each interval was made.
    for name, table in tables(document).items():
        frame = table.data
        if "p_value" in frame or "ci_low" in frame or "effect_ci_low" in frame:
            methods = [c for c in frame.columns if c in ("method", "ci_method")]
            assert methods and frame[methods[0]].astype(str).str.len().gt(0).all(), name


def test_the_design_plan_kept_by_collect_names_attempts_and_conditions_never_logged(tmp_path):
    # A run stopped after the first attempt of every item under one prompt: nothing in the log itself
    # shows it (each item has as many attempts as the others), only the plan hce collect keeps beside it.
    from hce.collect import run
    from hce.sim import SimJudge, SimServer
    from tests.helpers.collect_helpers import design, fast_client

    log = tmp_path / "log.jsonl"
    with SimServer(SimJudge(seed=0)).start() as server:
        run(design(attempts=3), log, client=fast_client(server))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    first, second = sorted({r["condition_id"] for r in rows})
    assert json.loads((tmp_path / "log.jsonl.settings.json").read_text())["plan"] == {"TEST": {first: 3, second: 3}}
    log.write_text("".join(json.dumps(r) + "\n" for r in rows if r["condition_id"] == first and r["attempt"] == 1))
    report(log, out=tmp_path / "out", random_state=0)
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert f"condition {first} has 3 of 9 planned attempts (3 items x 3 attempts); 6 missing (T1: 2, T2: 2, T3: 2)." in text
    assert f"condition {second} has 0 of 9 planned attempts (3 items x 3 attempts); no attempt of it is in the log." in text
