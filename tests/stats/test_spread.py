import math
import statistics
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from hce.errors import DataError, HceWarning
from hce.stats._intervals import proportion_ci
from hce.stats.spread import item_spread, share_below, spread_summary, success_metric_2, vote_stability
from hce.stats.tests import friedman


def _log(rows):
    return pd.DataFrame(rows, columns=["item_id", "condition_id", "total", "error_flag"])


def test_sd_is_sample_sd_and_errored_attempts_are_counted_not_scored():
    # An errored attempt carrying a (bogus) score of 99 must not enter any statistic.
    log = _log([("a", "P", s, False) for s in (1, 2, 3, 4)] + [("a", "P", 99, True)])
    out = item_spread(log).iloc[0]
    # R: sd(c(1, 2, 3, 4)) = 1.290994; stdlib statistics.stdev is an independent sample SD
    assert out["sd"] == pytest.approx(statistics.stdev([1, 2, 3, 4]), rel=1e-12)
    assert out["sd"] == pytest.approx(1.290994, rel=1e-6)
    assert (out["n"], out["n_errors"], out["n_missing"], out["ddof"]) == (4, 1, 0, 1)
    assert out["max"] == 4 and out["range"] == 3


def test_equal_sds_tie_exactly():
    # the same scores in another order: pandas gives 0.44721359549995787 and 0.4472135954999578
    a = [12.1, 11.3, 11.1, 11.5, 12.2, 11.0, 11.8, 11.8]
    b = [11.1, 12.2, 11.8, 11.8, 11.5, 11.3, 11.0, 12.1]
    assert pd.Series(a).std() != pd.Series(b).std()
    log = _log([("a", "P", s, False) for s in a] + [("b", "P", s, False) for s in b])
    sd = item_spread(log)["sd"]
    assert sd.iloc[0] == sd.iloc[1]


def test_quantiles_follow_r_type_7():
    # R: quantile(c(1, 2, 3, 4, 10), c(.25, .75)) -> 2, 4
    log = _log([("a", "P", s, False) for s in (1, 2, 3, 4, 10)])
    out = item_spread(log).iloc[0]
    assert (out["q1"], out["q3"], out["iqr"]) == (2.0, 4.0, 2.0)


def test_item_with_fewer_than_two_valid_scores_has_nan_sd_and_is_reported():
    log = _log([("a", "P", 3, False), ("a", "P", None, True), ("b", "P", 1, False), ("b", "P", 2, False),
                ("c", "P", None, True)])
    with pytest.warns(HceWarning, match=r"2 item x condition x criterion cell\(s\).*\(items a, c\)"):
        out = item_spread(log).set_index("item_id")
    assert np.isnan(out.loc["a", "sd"]) and out.loc["a", "n"] == 1
    assert out.loc["c", "n"] == 0 and out.loc["c", "n_errors"] == 1 and np.isnan(out.loc["c", "mean"])
    assert out.loc["b", "sd"] == pytest.approx(math.sqrt(0.5), rel=1e-12)


def test_several_criteria_give_one_row_each_and_missing_scores_are_counted():
    log = pd.DataFrame({"item_id": ["a"] * 3, "condition_id": "P", "c1": [1, 2, None], "total": [5, 6, 7],
                        "error_flag": False})
    out = item_spread(log, score=["c1", "total"]).set_index("criterion")
    assert out.loc["c1", "n"] == 2 and out.loc["c1", "n_missing"] == 1
    assert out.loc["total", "sd"] == pytest.approx(1.0)


def test_long_data_with_criterion_gives_the_wide_table():
    from hce.log import to_long
    from hce.stats._simulate import simulated_log

    log = simulated_log(n_items=12, n_attempts=4, error_rate=0, random_state=3)
    criteria = ["clarity_of_language", "lexical_diversity", "conciseness_and_completeness",
                "engagement_with_health_information", "health_literacy_indicator"]
    log.loc[[1, 7], "error_flag"] = True           # errored attempts: counted, not scored
    log.loc[[2, 9], "lexical_diversity"] = np.nan  # missing scores: counted in n_missing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide = item_spread(log, score=[*criteria, "total"])
        long = item_spread(to_long(log, criteria), score="score", criterion="criterion")
    pd.testing.assert_frame_equal(long, wide, check_like=True)
    assert long["n_errors"].sum() == 2 * 6 and long["n_missing"].sum() == 2
    # a condition column named "criterion" is long data passed the wrong way: a clear error
    with pytest.raises(DataError, match="pass long data's criterion column as criterion="):
        item_spread(to_long(log, criteria), condition=["condition_id", "criterion"], score="score")
    with pytest.raises(DataError, match="score must name one column"):
        item_spread(log, score=["total", "clarity_of_language"], criterion="experiment_id")


def test_missing_column_and_bad_error_flag_are_named():
    log = _log([("a", "P", 1, False)])
    with pytest.raises(DataError, match="no column"):
        item_spread(log, score="nope")
    with pytest.raises(DataError, match="error flag"):
        item_spread(log.assign(error_flag="no"))


def test_summary_counts_undefined_items():
    spread = pd.DataFrame({"item_id": list("abcde"), "condition_id": "P", "criterion": "total",
                           "sd": [0.0, 0.5, 1.0, 2.0, np.nan]})
    out = spread_summary(spread).iloc[0]
    # numpy/R type-7 quantiles of (0, .5, 1, 2): q1 = .375, q3 = 1.25
    assert (out["n_items"], out["n_undefined"]) == (4, 1)
    assert out["median"] == 0.75 and out["q1"] == 0.375 and out["q3"] == 1.25
    assert out["mean"] == pytest.approx(0.875)


def test_threshold_equality_survives_round_off():
    # sd(c(5, 8, 8, 8, 8, 8, 8, 8, 8)) is exactly 1 (SS = 8, n - 1 = 8) but computes as 0.9999999999999999
    assert pd.Series([5, 8, 8, 8, 8, 8, 8, 8, 8]).std() != 1.0
    log = _log([("a", "P", s, False) for s in (5, 8, 8, 8, 8, 8, 8, 8, 8)]
               + [("b", "P", s, False) for s in (5, 6, 9)])
    assert item_spread(log)["sd"].iloc[0] == 1.0
    spread = pd.DataFrame({"item_id": ["a", "b"], "criterion": "total", "sd": [0.9999999999999999, 2.0]})
    at_most = share_below(spread, threshold=1.0).iloc[0]
    below = share_below(spread, threshold=1.0, strict=True).iloc[0]
    assert at_most["n_below"] == 1 and below["n_below"] == 0


def test_share_ci_matches_statsmodels_and_r_binom_test():
    spread = pd.DataFrame({"item_id": range(925), "criterion": "total",
                           "sd": [0.5] * 682 + [2.0] * 243})
    cp = share_below(spread, threshold=1.0, ci_method="clopper-pearson").iloc[0]
    # R: binom.test(c(682, 243), p = 3/4) -> 95 percent CI 0.7076683 0.7654066
    assert (cp["ci_low"], cp["ci_high"]) == pytest.approx((0.7076683, 0.7654066), abs=5e-8)
    wilson = share_below(spread, threshold=1.0).iloc[0]
    expected = proportion_confint(682, 925, alpha=0.05, method="wilson")
    assert (wilson["ci_low"], wilson["ci_high"]) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (3, 7), (1, 1)])
def test_proportion_ci_edges_match_statsmodels(k, n):
    for ours, theirs in (("wilson", "wilson"), ("clopper-pearson", "beta")):
        low, high = proportion_ci(np.array([k]), np.array([n]), 0.9, ours)
        expected = proportion_confint(k, n, alpha=0.1, method=theirs)
        np.testing.assert_allclose([low[0], high[0]], expected, rtol=1e-9, atol=1e-12)


def test_threshold_mapping_and_undefined_policy():
    spread = pd.DataFrame({"item_id": list("abcd") * 2, "criterion": ["total"] * 4 + ["c1"] * 4,
                           "sd": [0.5, 1.5, np.nan, 1.0, 0.2, 0.3, 0.6, np.nan]})
    out = share_below(spread, threshold={"c1": [0.3, 0.5]}).set_index("threshold")
    assert list(out["criterion"]) == ["c1", "c1"]
    assert out.loc[0.3, "n_below"] == 2 and out.loc[0.3, "n_items"] == 3 and out.loc[0.3, "n_undefined"] == 1
    fail = share_below(spread, threshold={"total": 1.0}, undefined="fail").iloc[0]
    assert (fail["n_below"], fail["n_items"]) == (2, 4)
    with pytest.raises(DataError, match="absent from the spread table"):
        share_below(spread, threshold={"nope": 1.0})


def test_success_metric_2_mean_and_each_rules():
    # item x: category SDs .2 and .5 (mean .35 passes, "each" fails), total .9 passes
    # item y: categories .1 and .1, total 1.2 fails; item z: all pass
    rows = {"x": (0.2, 0.5, 0.9), "y": (0.1, 0.1, 1.2), "z": (0.0, 0.4, 1.0)}
    spread = pd.DataFrame([(i, c, v) for i, vals in rows.items() for c, v in zip(["c1", "c2", "total"], vals)],
                          columns=["item_id", "criterion", "sd"])
    out = success_metric_2(spread, categories=["c1", "c2"], target_share=0.6).set_index("metric")
    assert out.loc["category_sd", "n_below"] == 3
    assert out.loc["total_sd", "n_below"] == 2
    assert out.loc["both", "n_below"] == 2 and out.loc["both", "estimate"] == pytest.approx(2 / 3)
    assert bool(out.loc["both", "meets"]) and not bool(out.loc["both", "meets_with_confidence"])
    each = success_metric_2(spread, categories=["c1", "c2"], category_rule="each").set_index("metric")
    assert each.loc["category_sd", "n_below"] == 2


def _p_majority(m, p):
    """P(Bin(m, p) > m/2) from the binomial sum (independent of scipy)."""
    return sum(math.comb(m, j) * p**j * (1 - p) ** (m - j) for j in range(m // 2 + 1, m + 1))


def test_vote_stability_by_hand():
    verdicts = [True, True, True, False] + [True, False] + [None, True, True]
    log = pd.DataFrame({"item_id": list("aaaa") + list("bb") + list("ccc"), "condition_id": "j",
                        "verdict": pd.array(verdicts, dtype="boolean"),
                        "error_flag": [False] * 8 + [True]})
    with pytest.warns(HceWarning, match=r"1 item\(s\) tie .*majority and attempts_needed are NA"):
        out = vote_stability(log).set_index("item_id")
    a = out.loc["a"]
    assert (a["n"], a["n_true"], a["flip_rate"]) == (4, 3, 0.25)
    # H = -(3/4 log2 3/4 + 1/4 log2 1/4) = 0.8112781 bits
    assert a["entropy_bits"] == pytest.approx(0.8112781244591328, rel=1e-12)
    expected = next(m for m in range(1, 200, 2) if _p_majority(m, 0.75) >= 0.95)
    assert a["attempts_needed"] == expected == 9
    b = out.loc["b"]
    assert pd.isna(b["majority"]) and b["entropy_bits"] == 1.0 and np.isnan(b["attempts_needed"])
    c = out.loc["c"]
    assert (c["n"], c["n_missing"], c["n_errors"], c["attempts_needed"]) == (1, 1, 1, 1)
    assert bool(a["borderline"]) and bool(b["borderline"])


def test_vote_stability_rejects_non_boolean():
    log = pd.DataFrame({"item_id": ["a"], "condition_id": "j", "verdict": [3], "error_flag": False})
    with pytest.raises(DataError, match="must be boolean"):
        vote_stability(log)


def test_real_repeated_judge_log_topicalchat():
    # Chiang & Lee (2023), gpt-3.5-turbo at temperature 1, 20 samples per item and prompt variant
    # (d223302/A-Closer-Look-To-LLM-Evaluation @9008442); unparseable replies are NaN scores.
    path = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "topicalchat_gpt35_repeated"
    if not (path / "judge_scores_long.csv").exists():
        pytest.skip("shared/data/topicalchat_gpt35_repeated is absent")
    raw = pd.read_csv(path / "judge_scores_long.csv")
    log = raw[raw["attribute"] == "coherence"].assign(error_flag=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # some cells have < 2 parseable replies
        spread = item_spread(log, condition="prompt_variant", score="score")
    # independent: numpy sample SD per cell over the non-missing scores
    for (item, variant), cell in list(log.groupby(["item_id", "prompt_variant"]))[:50]:
        scores = cell["score"].dropna().to_numpy()
        row = spread[(spread["item_id"] == item) & (spread["prompt_variant"] == variant)].iloc[0]
        assert row["n"] == scores.size and row["n_missing"] == cell["score"].isna().sum()
        if scores.size >= 2:
            assert row["sd"] == pytest.approx(np.std(scores, ddof=1), rel=1e-10, abs=1e-12)
    assert spread["n"].sum() + spread["n_missing"].sum() == len(log)
    # Friedman across the 7 prompt variants on the per-item SDs, as scipy on the complete blocks
    wide = spread.pivot(index="item_id", columns="prompt_variant", values="sd").dropna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # incomplete blocks are dropped with a notice
        out = friedman(spread, condition="prompt_variant", random_state=0).iloc[0]
    assert out["n"] == len(wide) and out["k"] == 7
    assert out["statistic"] == pytest.approx(stats.friedmanchisquare(*wide.to_numpy().T).statistic, rel=1e-10)
    # all four attributes of the long file at once (criterion=) give each attribute's own table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        every = item_spread(raw.assign(error_flag=False), condition="prompt_variant", score="score",
                            criterion="attribute")
    coherence = every[every["criterion"] == "coherence"].reset_index(drop=True)
    pd.testing.assert_frame_equal(coherence.drop(columns="criterion"), spread.drop(columns="criterion"))
    assert sorted(every["criterion"].unique()) == sorted(raw["attribute"].unique())
