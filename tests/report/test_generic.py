"""The report of any attempt log (hce.report.report): sections from what the log holds."""

import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from hce.report import report
from hce.report.sections import comparison_plan
from hce.rubric import Category, Level, Rubric


def _levels(*scores):
    return tuple(Level(s, str(s), f"level {s}") for s in scores)


MIXED = Rubric("Mixed", (Category("accurate", "Accurate", _levels(1, 2, 3, 4, 5)),
                         Category("stigma", "Stigma", _levels(0, 1))))


def _log(seed=0, n_items=12, attempts=5, conditions=None):
    """Three conditions; 'a' and 'b' share prompt P2.1 (different models and temperatures)."""
    rng = np.random.default_rng(seed)
    conditions = conditions or {"a": ("P2.1", "m1", 0.1, 0.3), "b": ("P2.1", "m2", 1.0, 1.2), "c": ("P2.3", "m1", 0.1, 0.7)}
    rows = []
    for i in range(n_items):
        level = rng.integers(1, 6)
        for cond, (prompt, model, temperature, noise) in conditions.items():
            for a in range(1, attempts + 1):
                accurate = int(np.clip(np.rint(level + rng.normal(0, noise)), 1, 5))
                stigma = int(rng.random() < 0.2)
                rows.append({"attempt_id": f"{i}-{cond}-{a}", "experiment_id": "PDSQI_pilot", "item_id": f"T{i:02d}",
                             "condition_id": cond, "prompt_id": prompt, "model": model, "temperature": temperature,
                             "attempt": a, "accurate": accurate, "stigma": stigma, "total": accurate + stigma,
                             "error_flag": False})
    return pd.DataFrame(rows)


def _table(document, name):
    found = [t for t in document.tables() if t.name == name]
    assert found, f"no table {name!r}; tables: {[t.name for t in document.tables()]}"
    return found[0].data


def test_friedman_is_over_condition_id_never_pooled_by_prompt():
    # Issue #21: with conditions a and b sharing prompt_id P2.1, the report must compare the three
    # condition_ids (k = 3), as scipy's Friedman test on the item x condition SD matrix does.
    log = _log()
    document = report(log, rubric=MIXED)
    test = _table(document, "accurate_sd_test").iloc[0]
    sd = log.groupby(["item_id", "condition_id"])["accurate"].std(ddof=1).round(12).unstack()
    expected = scipy.stats.friedmanchisquare(*(sd[c].to_numpy() for c in ["a", "b", "c"]))
    assert test["k"] == 3
    assert test["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
    assert test["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert len(_table(document, "accurate_sd_pairs")) == 3  # a-b, a-c, b-c
    spread = _table(document, "accurate_spread")
    assert spread["condition_id"].tolist() == ["a", "b", "c"]
    conditions = _table(document, "conditions")
    assert conditions[["condition_id", "prompt_id", "model"]].values.tolist() == [["a", "P2.1", "m1"], ["b", "P2.1", "m2"], ["c", "P2.3", "m1"]]


def test_every_criterion_gets_its_section_and_a_mixed_total_none():
    document = report(_log(), rubric=MIXED)
    titles = [s.title for s in document.sections]
    assert "Criterion: Accurate" in titles and "Criterion: Stigma" in titles
    assert not any("Total" in t for t in titles)  # 1-5 plus 0-1: the sum is not a score
    for name in ("spread", "sd_test", "mean_test", "variance_components", "g_coefficients", "reliability"):
        _table(document, f"accurate_{name}")
    components = _table(document, "accurate_variance_components")["component"].tolist()
    assert len(components) == 4  # item, condition, item x condition, residual
    # The 0/1 criterion is analysed as binary (issue 33): shares, flips, nominal agreement, a binomial GLMM of the
    # conditions; no SD, rank test of means, ICC or G study.
    names = {t.name for t in document.tables()}
    assert {"stigma_binary", "stigma_condition_test", "stigma_condition_effects", "stigma_agreement"} <= names
    assert not {"stigma_spread", "stigma_sd_test", "stigma_mean_test", "stigma_variance_components", "stigma_reliability"} & names
    reliability = _table(document, "accurate_reliability")
    assert sorted(reliability["condition_id"].unique()) == ["a", "b", "c"]
    # No logprobs in this log: calibration is listed as not reported, with its reason.
    skipped = _table(document, "not_reported")
    assert "logprobs" in skipped.loc[skipped["section"] == "Calibration", "reason"].iloc[0]


def test_total_is_analysed_when_the_rubric_says_so():
    rubric = Rubric("Same scale", MIXED.categories, total_meaningful=True)
    titles = [s.title for s in report(_log(), rubric=rubric).sections]
    assert "Criterion: Total" in titles


def test_tests_follow_the_design():
    two = {"a": ("P", "m1", 0.1, 0.3), "b": ("P", "m2", 0.1, 1.0)}
    document = report(_log(conditions=two), rubric=MIXED)
    assert "Wilcoxon" in _table(document, "accurate_sd_test")["method"].iloc[0]
    # Items differ between conditions: Kruskal-Wallis, then Holm-adjusted Mann-Whitney pairs.
    log = _log()
    log = log[~((log["condition_id"] == "c") & (log["item_id"] == "T00"))]
    spread = pd.DataFrame({"item_id": log["item_id"], "condition_id": log["condition_id"], "sd": 1.0}).drop_duplicates()
    assert comparison_plan(spread, "sd")[0] == "kruskal"
    document = report(log, rubric=MIXED)
    assert "Kruskal" in _table(document, "accurate_sd_test")["method"].iloc[0]
    assert "p_adjusted" in _table(document, "accurate_sd_pairs")


def test_a_section_that_cannot_be_computed_is_listed_not_fatal(tmp_path):
    log = _log(attempts=1)  # one attempt per item: no spread to test, no reliability
    document = report(log, rubric=MIXED, out=tmp_path)
    skipped = _table(document, "not_reported")
    assert any("reliability" in s for s in skipped["section"])
    assert any("variance decomposition" in s for s in skipped["section"])
    assert (tmp_path / "report.html").is_file() and (tmp_path / "tables" / "not_reported.csv").is_file()
    assert "## Not reported" in (tmp_path / "report.md").read_text()


def test_the_rubric_kept_beside_the_log_is_read(tmp_path):
    import hce
    from hce.rubric import log_rubric_path, rubric_yaml

    path = tmp_path / "log.jsonl"
    hce.write_log(_log(n_items=6, attempts=3), path)
    log_rubric_path(path).write_text(rubric_yaml(MIXED))
    titles = [s.title for s in report(path).sections]
    assert "Criterion: Stigma" in titles and not any("Total" in t for t in titles)


def test_cost_section_per_condition_or_not_reported():
    # Issue #24 item 4: the cost section is hce.report.cost.cost_summary's table per condition_id.
    from hce.report.cost import cost_summary

    log = _log(n_items=6, attempts=3)
    log = log.assign(input_tokens=1500, cached_tokens=np.where(log["attempt"] > 1, 1280, 0), output_tokens=30,
                     cost_usd=np.where(log["model"] == "m1", 0.002, np.nan), latency_s=0.8)
    table = _table(report(log, rubric=MIXED), "cost")
    pd.testing.assert_frame_equal(table, cost_summary(log, by="condition_id"))
    assert table.set_index("condition_id").loc["b", "priced"] == 0  # model m2 unpriced: no cost, not zero
    assert table.set_index("condition_id").loc["(all)", "cached_share"] == pytest.approx(2 * 1280 / (3 * 1500))
    skipped = _table(report(_log(n_items=6, attempts=3), rubric=MIXED), "not_reported").set_index("section")
    assert "records no cost or token counts" in skipped.loc["Cost and tokens by condition", "reason"]


def test_one_condition_with_equal_scores_leaves_the_others_reported(tmp_path):
    # Issue #22: one condition whose scores are all equal made the report exit 2 ("all pairable
    # ratings are equal...") without naming it; now its reliability is named and the others kept.
    log = _log(n_items=6, attempts=3)
    log.loc[log["condition_id"] == "b", "accurate"] = 3
    document = report(log, rubric=MIXED, out=tmp_path)
    agreement = _table(document, "accurate_reliability")
    assert set(agreement["condition_id"]) == {"a", "c"}
    skipped = _table(document, "not_reported")
    row = skipped[skipped["section"] == "Criterion: Accurate: reliability of b"]
    assert len(row) == 1 and "equal" in row["reason"].iloc[0] and row["fix"].iloc[0]
    assert "Criterion: Accurate: reliability of b" in [s["section"] for s in document.not_reported]
    assert "Reliability of condition b is not reported" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("bad", [np.inf, "three"])
def test_a_condition_with_a_bad_score_is_named_and_the_others_reported(bad):
    # Issue #22: an inf total or a text "three" in a criterion column dropped the section unnamed.
    log = _log(n_items=6, attempts=3).astype({"accurate": object})
    log.loc[(log["condition_id"] == "c").to_numpy().nonzero()[0][4], "accurate"] = bad
    document = report(log, rubric=MIXED)
    spread = _table(document, "accurate_spread")
    assert set(spread["condition_id"]) == {"a", "b"}
    entry = [s for s in document.not_reported if s["section"].endswith("condition c")]
    assert len(entry) == 1 and repr(bad) in entry[0]["reason"] and "1 attempt(s)" in entry[0]["reason"]
    assert "Wilcoxon" in _table(document, "accurate_sd_test")["method"].iloc[0]  # a vs b, paired
    assert set(_table(document, "stigma_binary")["condition_id"]) == {"a", "b", "c"}  # other criteria keep c


def test_a_binary_criterion_gets_shares_with_wilson_intervals_flips_and_kappa():
    # Counted by hand from the log: per condition, each item's majority of its 5 attempts, then the
    # Wilson interval of the share of items at 1 over the items (statsmodels' proportion_confint).
    from statsmodels.stats.proportion import proportion_confint

    from hce.stats import fleiss_kappa

    log = _log()
    document = report(log, rubric=MIXED)
    shares = _table(document, "stigma_binary").set_index("condition_id")
    for condition, part in log.groupby("condition_id"):
        per_item = part.groupby("item_id")["stigma"].agg(["sum", "count"])
        high = int((2 * per_item["sum"] > per_item["count"]).sum())
        row = shares.loc[condition]
        assert (row["n_items"], row["n_ties"]) == (12, 0) and row["estimate"] == high / 12
        np.testing.assert_allclose([row["ci_low"], row["ci_high"]], proportion_confint(high, 12, method="wilson"), atol=1e-12)
        flips = (np.minimum(per_item["sum"], per_item["count"] - per_item["sum"]) / per_item["count"]).mean()
        assert row["mean_flip_rate"] == pytest.approx(flips, rel=1e-12)
        kappa = fleiss_kappa(part, item="item_id", rater="attempt", score="stigma")
        agreement = _table(document, "stigma_agreement").set_index("condition_id").loc[condition]
        assert agreement["estimate"] == pytest.approx(kappa["estimate"].iloc[0], rel=1e-12)
    markdown = document.to_markdown()
    assert "Stigma has two levels (0, 1), so it is analysed as a binary outcome" in markdown
    stigma = markdown.split("## Criterion: Stigma", 1)[1].split("\n## ", 1)[0]
    assert "ICC(" not in stigma and "Median SD" not in stigma


def test_criteria_computed_in_a_forked_child_give_the_report_computed_alone(tmp_path, monkeypatch):
    # Issue 35: on an idle second core the later criteria go to a forked child; each criterion
    # draws from its own spawned stream, so the files are the same bytes either way.
    from hce.report import _beside

    log = _log().assign(clarity=lambda d: d["accurate"].where(d["item_id"] != "T01", 3), brief=lambda d: 6 - d["accurate"])
    monkeypatch.setattr(_beside, "can_fork", lambda: sys.platform.startswith("linux"))  # as if idle
    forked = report(log, out=tmp_path / "two", random_state=3)
    monkeypatch.setattr(_beside, "can_fork", lambda: False)
    alone = report(log, out=tmp_path / "one", random_state=3)
    assert [s.title for s in forked.sections] == [s.title for s in alone.sections]
    assert forked.not_reported == alone.not_reported
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert len(files) > 20
    assert all((tmp_path / "two" / f).read_bytes() == (tmp_path / "one" / f).read_bytes() for f in files)


def test_when_nothing_scores_the_report_says_why_and_calibration_does_not_crash():
    # Issue 44: every reply cut at max_tokens: each criterion was "not reported ... judged with this rubric (--rubric)"
    # and the calibration section showed "ArrowInvalid: Must pass at least one array".
    log = _log(n_items=4, attempts=2).assign(
        accurate=np.nan, stigma=np.nan, total=np.nan, error_flag=True,
        error_message="cut at max_tokens=60 before the score block (no score line for Accurate)",
        logprobs='[{"token": "A", "logprob": -0.1, "top_logprobs": []}]')
    skipped = _table(report(log, rubric=MIXED), "not_reported").set_index("section")
    reason = skipped.loc["Criterion: Accurate", "reason"]
    assert "every attempt was flagged (24 of 24)" in reason and "cut at max_tokens=60" in reason
    assert "--rubric" not in skipped.loc["Criterion: Accurate", "fix"]
    assert not skipped["reason"].str.contains("ArrowInvalid|Must pass at least one array").any()
    assert "no unflagged attempt has both its scores and token logprobs" in skipped.filter(like="alibration", axis=0)["reason"].iloc[0]


def test_declared_not_applicable_answers_are_counted_per_criterion_and_condition():
    # Issue 44: collect counted them, but the report showed them as missing data.
    log = _log(n_items=4, attempts=2)
    log.loc[log["condition_id"] == "a", "stigma"] = np.nan
    log["not_applicable"] = np.where(log["condition_id"] == "a", "stigma", None)
    table = _table(report(log, rubric=MIXED), "not_applicable")
    assert table.to_dict("records") == [{"condition_id": "a", "criterion": "stigma", "n_not_applicable": 8,
                                         "n_answered": 8, "share": 1.0}]
