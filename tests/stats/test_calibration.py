"""Tests for hce.stats.calibration: confidences, ECE/MCE, Brier + decomposition, log loss."""

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from seeds import fast_and_other_seeds
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

from hce.errors import DataError, HceWarning
from hce.report.figures import reliability_diagram
from hce.stats.calibration import (
    agrees_with_mode,
    brier_score,
    calibration_metrics,
    confidence_spread,
    confidence_table,
    expected_calibration_error,
    logprob_confidence,
    reliability_table,
    verbal_confidence,
    vote_confidence,
)


def _metric(table, name):
    return float(table.set_index("metric").loc[name, "estimate"])


def _binary(seed):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, 500)
    y = (rng.random(500) < p**1.3).astype(int)
    return pd.DataFrame({"prob": p, "outcome": y, "item_id": np.repeat(np.arange(100), 5)})


@pytest.fixture
def binary():
    return _binary(1)


# ------------------------------------------------------------------ against scikit-learn
def test_brier_and_log_loss_binary_match_sklearn(binary):
    out = calibration_metrics(binary, n_boot=0)
    # sklearn 1.7: brier_score_loss = mean (p - y)^2 for binary; log_loss clips at float eps.
    assert _metric(out, "brier") == pytest.approx(brier_score_loss(binary.outcome, binary.prob), rel=1e-12)
    assert _metric(out, "log_loss") == pytest.approx(log_loss(binary.outcome, binary.prob), rel=1e-12)


def test_brier_and_log_loss_multiclass_match_sklearn():
    rng = np.random.default_rng(2)
    P = rng.dirichlet([2, 1, 1, 3], 300)
    y = np.array([rng.choice([1, 2, 3, 4], p=row) for row in P])
    df = pd.DataFrame(P, columns=["prob_1", "prob_2", "prob_3", "prob_4"]).assign(human=y)
    out = calibration_metrics(df, prob=["prob_1", "prob_2", "prob_3", "prob_4"], truth="human", n_boot=0)
    # Multi-class Brier (Brier 1950): sum over classes, as sklearn with scale_by_half=False.
    expected = brier_score_loss(y, P, labels=[1, 2, 3, 4], scale_by_half=False)
    assert _metric(out, "brier") == pytest.approx(expected, rel=1e-12)
    assert _metric(out, "log_loss") == pytest.approx(log_loss(y, P, labels=[1, 2, 3, 4]), rel=1e-12)
    # Top-label ECE equals the binary ECE of (max prob, argmax correct).
    top = pd.DataFrame({"prob": P.max(1), "outcome": (P.argmax(1) + 1 == y).astype(int)})
    assert _metric(out, "ece") == pytest.approx(_metric(calibration_metrics(top, n_boot=0), "ece"), rel=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_table_matches_sklearn_calibration_curve(binary, strategy):
    table = reliability_table(binary, n_bins=8, strategy=strategy)
    prob_true, prob_pred = calibration_curve(binary.outcome, binary.prob, n_bins=8, strategy=strategy)
    np.testing.assert_allclose(table["estimate"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(table["mean_prob"], prob_pred, rtol=1e-12)
    # ECE is the count-weighted mean absolute gap of this table.
    ece = np.sum(table["n"] * table["gap"].abs()) / table["n"].sum()
    got = calibration_metrics(binary, n_bins=8, strategy=strategy, n_boot=0)
    assert _metric(got, "ece") == pytest.approx(ece, rel=1e-12)
    assert _metric(got, "mce") == pytest.approx(table["gap"].abs().max(), rel=1e-12)


# ------------------------------------------------------------------ hand-worked bins
def test_ece_hand_worked_equal_width():
    # 10 equal-width bins, right-closed (k/10, (k+1)/10]; 0.1 sits in the first bin.
    # bin 0: p = 0.05, 0.10 -> mean 0.075, observed 0/2 -> gap 0.075, weight 2/8
    # bin 2: p = 0.25, 0.28 -> mean 0.265, observed 1/2 -> gap 0.235, weight 2/8
    # bin 9: p = .92, .95, .95, .98 -> mean 0.95, observed 3/4 -> gap 0.20, weight 4/8
    # ECE = (2*0.075 + 2*0.235 + 4*0.2)/8 = 1.42/8 = 0.1775; MCE = 0.235
    df = pd.DataFrame({"prob": [0.05, 0.10, 0.25, 0.28, 0.92, 0.95, 0.95, 0.98], "outcome": [0, 0, 1, 0, 1, 1, 1, 0]})
    out = expected_calibration_error(df, n_boot=0)
    assert _metric(out, "ece") == pytest.approx(0.1775, rel=1e-12)
    assert _metric(out, "mce") == pytest.approx(0.235, rel=1e-12)
    assert out["n_bins"].iloc[0] == 3 and out["strategy"].iloc[0] == "uniform"
    table = reliability_table(df)
    assert table["bin"].tolist() == [0, 2, 9]
    np.testing.assert_allclose(table["bin_low"], [0.0, 0.2, 0.9])
    assert table["n"].tolist() == [2, 2, 4]


def test_ece_hand_worked_equal_mass():
    # 2 equal-mass bins: edges at the 0, 50, 100th percentiles = 0.1, 0.45, 0.9;
    # bin 0 = {0.1, 0.2, 0.3, 0.4} (mean 0.25, observed 1/4: gap 0), bin 1 = {0.5, .6, .7, .9}
    # (mean 0.675, observed 3/4: gap 0.075). ECE = (4*0 + 4*0.075)/8 = 0.0375.
    df = pd.DataFrame({"prob": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9], "outcome": [0, 0, 1, 0, 1, 0, 1, 1]})
    out = expected_calibration_error(df, n_bins=2, strategy="quantile", n_boot=0)
    assert _metric(out, "ece") == pytest.approx(0.0375, rel=1e-12)
    assert _metric(out, "mce") == pytest.approx(0.075, rel=1e-12)


def test_murphy_decomposition_hand_worked():
    # Forecasts 0.9 (x2, both happen) and 0.6 (x2, one happens); o = 0.75.
    # REL = [2(0.9-1)^2 + 2(0.6-0.5)^2]/4 = 0.01; RES = [2(0.25)^2 + 2(0.25)^2]/4 = 0.0625;
    # UNC = 0.75*0.25 = 0.1875; Brier = 0.01 - 0.0625 + 0.1875 = 0.135 = mean of
    # (0.01, 0.01, 0.16, 0.36).
    df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    out = brier_score(df, strategy="unique", n_boot=0).set_index("metric")["estimate"]
    np.testing.assert_allclose(out[["brier", "reliability", "resolution", "uncertainty"]], [0.135, 0.01, 0.0625, 0.1875], rtol=1e-12)
    assert out["within_bin_variance"] == pytest.approx(0, abs=1e-15)


@pytest.mark.parametrize("strategy", ["uniform", "quantile", "unique"])
def test_decomposition_sums_to_brier(binary, strategy):
    out = brier_score(binary, strategy=strategy, n_bins=7, n_boot=0).set_index("metric")["estimate"]
    total = out["reliability"] - out["resolution"] + out["uncertainty"] + out["within_bin_variance"] - out["within_bin_covariance"]
    assert total == pytest.approx(out["brier"], rel=1e-12)


def test_multiclass_decomposition_sums_to_brier():
    rng = np.random.default_rng(3)
    P = rng.dirichlet([1, 1, 1], 200)
    y = np.array([rng.choice(3, p=row) for row in P])
    df = pd.DataFrame(P, columns=["a", "b", "c"]).assign(y=np.array(["a", "b", "c"])[y])
    out = brier_score(df, prob=["a", "b", "c"], truth="y", labels=["a", "b", "c"], n_boot=0).set_index("metric")["estimate"]
    total = out["reliability"] - out["resolution"] + out["uncertainty"] + out["within_bin_variance"] - out["within_bin_covariance"]
    assert total == pytest.approx(out["brier"], rel=1e-12)


# ------------------------------------------------------------------ bootstrap
def test_bootstrap_is_reproducible_and_brackets_estimate(binary):
    a = calibration_metrics(binary, n_boot=300, random_state=4, item="item_id")
    b = calibration_metrics(binary, n_boot=300, random_state=4, item="item_id")
    pd.testing.assert_frame_equal(a, b)
    brier = a.set_index("metric").loc["brier"]
    assert brier.ci_low < brier.estimate < brier.ci_high
    assert (a["method"] == "percentile bootstrap").all()


@pytest.mark.parametrize("seed", fast_and_other_seeds(1))
def test_bootstrap_brier_interval_close_to_normal_theory(seed):
    # The Brier score is a mean of per-row losses: its bootstrap interval should be close to
    # mean +/- 1.96 SD/sqrt(n) (Monte Carlo error of 2000 replicates: tolerance 10%).
    # Margin: width / normal width is 0.95-1.05 over data and bootstrap seeds 0-20.
    binary = _binary(seed)
    loss = (binary.prob - binary.outcome) ** 2
    se = loss.std(ddof=0) / np.sqrt(len(loss))
    row = calibration_metrics(binary, n_boot=2000, random_state=seed + 4).set_index("metric").loc["brier"]
    assert row.ci_high - row.ci_low == pytest.approx(2 * 1.959964 * se, rel=0.1)


# ------------------------------------------------------------------ confidence sources
def _entry(token, logprob, top):
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}


def test_logprob_confidence_hand_worked():
    # Score tokens "3" (p=.6), " 3" (p=.1, same score), "4" (p=.2), "x" ignored.
    # coverage = .9; prob_3 = .7/.9, prob_4 = .2/.9; expected = 3*.7/.9 + 4*.2/.9
    lp = np.log
    reply = [_entry("Score", -0.01, []), _entry(":", -0.01, []),
             _entry("3", lp(0.6), [("3", lp(0.6)), ("4", lp(0.2)), (" 3", lp(0.1)), ("x", lp(0.05))])]
    out = logprob_confidence(pd.DataFrame({"item_id": [7], "logprobs": [reply]}), scores=range(1, 5))
    row = out.iloc[0]
    assert row["prob_3"] == pytest.approx(0.7 / 0.9) and row["prob_4"] == pytest.approx(0.2 / 0.9)
    assert row["prob_1"] == 0 and row["chosen_score"] == 3 and row["prob"] == pytest.approx(0.7 / 0.9)
    assert row["expected_score"] == pytest.approx((2.1 + 0.8) / 0.9)
    assert row["coverage"] == pytest.approx(0.9)
    p = np.array([0.7, 0.2]) / 0.9
    assert row["entropy"] == pytest.approx(-(p * np.log(p)).sum())
    assert row["item_id"] == 7 and not row["error_flag"]


def test_logprob_confidence_at_the_temperature_used_hand_worked():
    # Raw r = (.2, .8) over scores 1, 2. At T = 0.5 the sampling distribution is r^2
    # renormalised: (.04, .64) / .68; at T = 0 greedy: (0, 1); sampled logprobs are left as they are.
    lp = np.log
    reply = [_entry("1", lp(0.2), [("2", lp(0.8)), ("1", lp(0.2))])]
    log = pd.DataFrame({"logprobs": [reply] * 4, "temperature": [0.5, 0.0, None, 2.0]})
    out = logprob_confidence(log, scores=[1, 2], temperature="temperature", logprobs_are="raw")
    assert out["prob"].tolist() == pytest.approx([0.04 / 0.68, 0.0, 0.2, np.sqrt(0.2) / (np.sqrt(0.2) + np.sqrt(0.8))])
    assert out["raw_prob"].tolist() == pytest.approx([0.2] * 4)  # a missing temperature is the default, 1
    assert out["prob_2"].tolist()[:2] == pytest.approx([0.64 / 0.68, 1.0])
    assert out.attrs["logprobs_are"] == "raw" and (out["logprobs_are"] == "raw").all()
    sampled = logprob_confidence(log, scores=[1, 2], temperature="temperature", logprobs_are="sampled")
    assert sampled["prob"].tolist() == pytest.approx([0.2] * 4)
    at_zero = logprob_confidence(log, scores=[1, 2], temperature="temperature", logprobs_are="raw_at_zero")
    assert at_zero["prob"].tolist() == pytest.approx([0.2, 0.0, 0.2, 0.2])
    plain = logprob_confidence(log, scores=[1, 2])  # no temperature: read as they are, and said so
    assert plain["prob"].tolist() == pytest.approx([0.2] * 4) and plain["logprobs_are"].isna().all()
    assert logprob_confidence(log, scores=[1, 2], temperature=0.5)["logprobs_are"].iloc[0] == "raw"  # OpenAI's
    table = confidence_table(log.assign(item_id=[1, 1, 2, 2]), scores=[1, 2], temperature="temperature",
                             logprobs_are="raw", level="item")  # fmt: skip
    assert table["raw_prob"].tolist() == pytest.approx([0.2, 0.2]) and (table["logprobs_are"] == "raw").all()
    for bad, message in (({"temperature": -0.1}, "temperature is -0.1"),
                         ({"temperature": "temperature", "data": log.assign(temperature=-1.0)}, "row 0 holds -1.0"),
                         ({"logprobs_are": "raw"}, "needs temperature="),
                         ({"temperature": 0.5, "logprobs_are": "scaled"}, "logprobs_are"),
                         ({"temperature": [0.5]}, "must be a column name or a number")):  # fmt: skip
        with pytest.raises(DataError, match=message):
            logprob_confidence(bad.pop("data", log), scores=[1, 2], **bad)


def test_logprob_confidence_occurrence_objects_and_missing():
    lp = np.log
    two = {"content": [_entry("2", lp(0.5), [("2", lp(0.5)), ("1", lp(0.5))]),
                       _entry("4", lp(0.8), [("4", lp(0.8)), ("3", lp(0.2))])]}
    as_objects = [SimpleNamespace(token="4", logprob=lp(0.8),
                                  top_logprobs=[SimpleNamespace(token="4", logprob=lp(0.8))])]
    import json

    df = pd.DataFrame({"logprobs": [two, as_objects, None, [_entry("no", -1, [])], json.dumps(two), "not json", "7",
                                    [{"token": "3"}], SimpleNamespace(content=as_objects)]})
    first = logprob_confidence(df, scores=range(1, 5), occurrence=0)
    assert first.loc[0, "chosen_score"] == 2 and first.loc[0, "prob"] == pytest.approx(0.5)
    last = logprob_confidence(df, scores=range(1, 5))
    assert last.loc[0, "chosen_score"] == 4 and last.loc[0, "prob"] == pytest.approx(0.8)
    assert last.loc[1, "prob"] == pytest.approx(1.0)
    assert last["error_flag"].tolist() == [False, False, True, True, False, True, True, True, False]
    assert last.loc[4, "prob"] == pytest.approx(0.8)  # JSON text, as the attempt log stores it
    boolean = logprob_confidence(pd.DataFrame({"logprobs": [[_entry(" true", lp(0.75), [(" true", lp(0.75)), (" false", lp(0.25))])]]}),
                                 scores={"true": 1, "false": 0})
    assert boolean.loc[0, "prob_1"] == pytest.approx(0.75)


def test_logprob_confidence_takes_the_scale_from_a_rubric_never_1_to_4():
    # A 0-6 rubric: "0", "5" and "6" are scores, so the 1-4 scale would miss most of the mass.
    # prob_5 = .5/.9 and prob_0 = .1/.9 after renormalising over the score tokens found.
    from hce.rubric import Category, Level, Rubric

    scale = tuple(Level(score, str(score), "") for score in range(7))
    rubric = Rubric("wide", (Category("a", "A", scale), Category("b", "B", scale)))
    lp = np.log
    reply = [_entry("5", lp(0.5), [("5", lp(0.5)), ("6", lp(0.3)), ("0", lp(0.1)), ("x", lp(0.1))])]
    data = pd.DataFrame({"logprobs": [reply]})
    out = logprob_confidence(data, scores=rubric)
    assert [c for c in out if c.startswith("prob_")] == [f"prob_{s}" for s in range(7)]
    assert out.loc[0, "chosen_score"] == 5 and out.loc[0, "prob"] == pytest.approx(0.5 / 0.9)
    assert out.loc[0, "prob_0"] == pytest.approx(0.1 / 0.9) and out.loc[0, "coverage"] == pytest.approx(0.9)
    pd.testing.assert_frame_equal(out, logprob_confidence(data, scores=range(7)))
    with pytest.raises(TypeError, match="scores"):
        logprob_confidence(data)  # no default scale: the caller always says which tokens are scores
    with pytest.raises(DataError, match="scores"):
        logprob_confidence(data, scores=[])
    with pytest.raises(DataError, match="scores="):
        confidence_table(data.assign(item_id=1, total=5), source="logprobs")
    table = confidence_table(data.assign(item_id=1, total=5), scores=rubric)
    assert table.loc[0, "source"] == "logprobs" and table.loc[0, "prediction"] == 5


def test_reliability_diagram_moved_to_the_report_layer():
    import hce.stats
    import hce.stats.calibration
    from hce.report import figures

    for module in (hce.stats, hce.stats.calibration):
        with pytest.warns(DeprecationWarning, match=r"use hce\.report\.figures\.reliability_diagram"):
            assert module.reliability_diagram is figures.reliability_diagram
    with pytest.raises(AttributeError):
        hce.stats.no_such_name  # noqa: B018


def test_vote_confidence_hand_worked():
    log = pd.DataFrame({"item_id": [1] * 4 + [2] * 4, "total": [12, 12, 13, 12, 10, 11, 10, 11]})
    out = vote_confidence(log).set_index("item_id")
    assert out.loc[1, "modal_score"] == 12 and out.loc[1, "prob"] == 0.75 and out.loc[1, "n_modes"] == 1
    assert out.loc[2, "modal_score"] == 10 and out.loc[2, "n_modes"] == 2 and out.loc[2, "prob"] == 0.5
    assert out.loc[1, "sd"] == pytest.approx(np.std([12, 12, 13, 12], ddof=1))
    assert out.loc[1, "prob_13"] == 0.25 and out.loc[2, "prob_12"] == 0


def test_vote_confidence_levels_give_every_score_a_column():
    # two runs of the same 1-4 scale that used different scores compare column for column
    run_a = pd.DataFrame({"item_id": [1, 1, 1, 2, 2], "total": [2, 2, 3, 1, np.nan]})
    run_b = pd.DataFrame({"item_id": [1, 1, 1, 2, 2], "total": [4, 4, 4, 4, 3]})
    with pytest.warns(HceWarning, match=r"vote_confidence: 1 item\(s\) have fewer than 2 scores"):
        a = vote_confidence(run_a, levels=[4, 1, 2, 3]).set_index("item_id")
    b = vote_confidence(run_b, levels=range(1, 5)).set_index("item_id")
    shares = ["prob_1", "prob_2", "prob_3", "prob_4"]
    assert list(a.filter(like="prob_")) == shares == list(b.filter(like="prob_"))
    # hand-worked: item 1 of run a chose 2, 2, 3; item 2 chose 1 (the NaN is ignored)
    assert a.loc[1, shares].tolist() == [0, 2 / 3, 1 / 3, 0] and a.loc[2, shares].tolist() == [1, 0, 0, 0]
    assert b.loc[2, shares].tolist() == [0, 0, 0.5, 0.5] and b.loc[2, "modal_score"] == 3  # smallest tied mode
    # the unused levels change nothing else
    with pytest.warns(HceWarning, match="fewer than 2 scores"):
        plain = vote_confidence(run_a).set_index("item_id")
    pd.testing.assert_frame_equal(a.drop(columns=["prob_4"]), plain)
    with pytest.raises(DataError, match=r"column 'total' row 3 holds 5, not one of levels \['1', '2', '3', '4'\]"):
        vote_confidence(run_a.assign(total=[2, 2, 3, 5, 1]), levels=range(1, 5))
    with pytest.raises(DataError, match="row 3 holds 5"):  # confidence_table passes levels through
        confidence_table(run_a.assign(total=[2, 2, 3, 5, 1]), source="votes", levels=range(1, 5))
    assert confidence_table(run_a, source="votes", levels=range(1, 5))["prob"].tolist()[:3] == [2 / 3, 2 / 3, 1 / 3]


def test_verbal_confidence_and_errors():
    out = verbal_confidence(pd.DataFrame({"confidence_level": [" HIGH", "medium", None]}), mapping={"high": 0.8, "medium": 0.6})
    assert out["prob"].tolist()[:2] == [0.8, 0.6] and np.isnan(out["prob"].iloc[2])
    with pytest.raises(DataError, match="row 1"):
        verbal_confidence(pd.DataFrame({"confidence_level": ["high", "sure"]}))


def test_confidence_table_auto_sources():
    log = pd.DataFrame({"item_id": [1, 1, 2, 2], "total": [3, 3, 2, 4], "confidence_level": ["high", "low", "low", "low"]})
    verbal = confidence_table(log)
    assert (verbal["source"] == "verbal").all() and verbal["prob"].tolist() == [0.9, 0.5, 0.5, 0.5]
    numeric = confidence_table(log.assign(confidence=[0.8, 0.6, None, 0.4]))
    assert (numeric["source"] == "numeric").all() and numeric["prob"].tolist()[:2] == [0.8, 0.6]
    votes = confidence_table(log.drop(columns="confidence_level"))
    assert votes["prob"].tolist() == [1.0, 1.0, 0.5, 0.5]
    per_item = confidence_table(log, level="item")
    assert per_item["prob"].tolist() == [0.7, 0.5]


def test_agrees_with_mode():
    log = pd.DataFrame({"item_id": [1, 1, 1, 2], "total": [3, 3, 4, None]})
    assert agrees_with_mode(log).tolist() == [True, True, False, pd.NA]


def test_confidence_spread_against_scipy_and_bonett_wright():
    rng = np.random.default_rng(6)
    items = np.repeat(np.arange(30), 5)
    prob = np.repeat(rng.uniform(0.4, 1, 30), 5)
    score = rng.normal(10, 3 * (1.2 - prob))
    log = pd.DataFrame({"item_id": items, "total": score, "prob": prob})
    out = confidence_spread(log).iloc[0]
    per_item = log.groupby("item_id").agg(sd=("total", "std"), p=("prob", "mean"))
    rho = stats.spearmanr(per_item.p, per_item.sd).statistic
    assert out.estimate == pytest.approx(rho, rel=1e-12) and out.n == 30
    # Bonett & Wright (2000): SE of atanh(rho) = sqrt((1 + rho^2/2)/(n - 3)).
    se = np.sqrt((1 + rho**2 / 2) / 27)
    assert out.ci_low == pytest.approx(np.tanh(np.arctanh(rho) - 1.959963984540054 * se), rel=1e-9)
    assert out.ci_high == pytest.approx(np.tanh(np.arctanh(rho) + 1.959963984540054 * se), rel=1e-9)
    # Kendall's tau-b: 30 items, no ties -> exact p (R cor.test: n < 50), as scipy's exact
    tau = confidence_spread(log, method="kendall").iloc[0]
    ref = stats.kendalltau(per_item.p, per_item.sd, method="exact")
    assert tau.estimate == pytest.approx(ref.statistic, rel=1e-12)
    assert tau.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_reliability_diagram_draws(binary):
    import matplotlib.pyplot as plt

    ax = reliability_diagram(reliability_table(binary), label="judge")
    assert ax.get_xlabel() == "Mean confidence"
    plt.close("all")


def test_input_errors_name_the_problem():
    with pytest.raises(DataError, match="probabilities"):
        calibration_metrics(pd.DataFrame({"prob": [1.2], "outcome": [1]}))
    with pytest.raises(DataError, match="0/1"):
        calibration_metrics(pd.DataFrame({"prob": [0.2], "outcome": [2]}))
    with pytest.raises(DataError, match="strategy"):
        calibration_metrics(pd.DataFrame({"prob": [0.2], "outcome": [1]}), strategy="equal")
    with pytest.raises(DataError, match="sum to 1"):
        calibration_metrics(pd.DataFrame({"a": [0.5], "b": [0.4], "y": ["a"]}), prob=["a", "b"], truth="y", labels=["a", "b"])


# ------------------------------------------------------------------ properties
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), a=st.floats(0.3, 5), b=st.floats(0.3, 5))
def test_calibrated_confidences_have_ece_near_zero(seed, a, b):
    # y ~ Bernoulli(p): perfectly calibrated. E|o_b - f_b| <= sqrt(2/pi) * 0.5 / sqrt(n_b), so
    # E[ECE] <= 0.4 sqrt(B/n) = 0.0057 at n = 50,000 and B = 10; 0.015 leaves room for the tail.
    rng = np.random.default_rng(seed)
    p = rng.beta(a, b, 50_000)
    y = (rng.random(p.size) < p).astype(float)
    df = pd.DataFrame({"prob": p, "outcome": y})
    for strategy in ("uniform", "quantile"):
        assert _metric(calibration_metrics(df, strategy=strategy, n_boot=0), "ece") < 0.015


def test_ece_of_calibrated_forecasts_decreases_with_n():
    rng = np.random.default_rng(8)
    means = []
    for n in (500, 50_000):
        eces = []
        for _ in range(20):
            p = rng.uniform(size=n)
            eces.append(_metric(calibration_metrics(pd.DataFrame({"prob": p, "outcome": rng.random(n) < p}), n_boot=0), "ece"))
        means.append(np.mean(eces))
    assert means[1] < means[0] / 5  # 1/sqrt(n) scaling predicts a factor of 10


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), strategy=st.sampled_from(["uniform", "quantile", "unique"]))
def test_permuting_rows_leaves_metrics_unchanged(seed, strategy):
    rng = np.random.default_rng(seed)
    n = 60
    df = pd.DataFrame({"prob": rng.choice(np.linspace(0, 1, 11), n), "outcome": rng.integers(0, 2, n)})
    shuffled = df.sample(frac=1, random_state=seed % 1000)
    a = calibration_metrics(df, strategy=strategy, n_bins=5, n_boot=0)
    b = calibration_metrics(shuffled, strategy=strategy, n_bins=5, n_boot=0)
    np.testing.assert_allclose(a["estimate"], b["estimate"], rtol=1e-10, atol=1e-15)
    pd.testing.assert_frame_equal(reliability_table(df, strategy=strategy), reliability_table(shuffled, strategy=strategy))


@pytest.mark.parametrize("seed", fast_and_other_seeds(9))
def test_bootstrap_of_repeated_forecasts_matches_normal_theory(seed):
    # Verbal confidences take 3 values: the bootstrap resamples (prob, outcome) types with
    # multinomial counts. Its Brier interval must still match mean +/- 1.96 SD/sqrt(n).
    # Margin: width / normal width is 0.97-1.03 over data and bootstrap seeds 0-20 (10% allowed).
    rng = np.random.default_rng(seed)
    p = rng.choice([0.5, 0.7, 0.9], 3000)
    df = pd.DataFrame({"prob": p, "outcome": (rng.random(3000) < p - 0.05).astype(int)})
    loss = (df.prob - df.outcome) ** 2
    se = loss.std(ddof=0) / np.sqrt(len(loss))
    row = calibration_metrics(df, strategy="unique", n_boot=2000, random_state=seed + 1).set_index("metric").loc["brier"]
    assert row.ci_high - row.ci_low == pytest.approx(2 * 1.959964 * se, rel=0.1)
    assert row.ci_low < loss.mean() < row.ci_high


def test_logprob_json_text_fast_path_equals_full_parse():
    # A reasoning reply: 50 word tokens (whose alternatives include score-like " 2"), a
    # score block with two scores, then a newline. Decoding only the tail must give what
    # parsing everything gives, for the last and the first score, and for key orders the
    # fast path does not expect (it falls back to a full parse).
    import json

    lp = np.log
    words = [_entry(f" w{i}", -0.1, [(f" w{i}", -0.1), (" 2", -3.0)]) for i in range(50)]
    scores = [_entry("3", lp(0.7), [("3", lp(0.7)), ("4", lp(0.2))]), _entry(" 4", lp(0.6), [(" 4", lp(0.6)), (" 1", lp(0.4))])]
    reply = words + scores + [_entry("\n", -0.01, [])]
    reordered = [{"top_logprobs": e["top_logprobs"], "logprob": e["logprob"], "token": e["token"]} for e in reply]
    df = pd.DataFrame({"logprobs": [reply, json.dumps(reply), json.dumps(reordered), json.dumps(reply, separators=(",", ":"))]})
    for occurrence, expected in ((-1, 0.6), (0, 0.7 / 0.9), (-2, 0.7 / 0.9)):
        out = logprob_confidence(df, scores=range(1, 5), occurrence=occurrence)
        np.testing.assert_allclose(out["prob"], expected, rtol=1e-12)


def test_grouped_normal_bootstrap_matches_the_row_bootstrap(monkeypatch):
    # Above _EXACT_ROWS rows the row bootstrap of continuous forecasts draws bin x outcome
    # counts exactly and the within-group sums from their normal limit (small groups row by
    # row). Its percentile limits must agree with the row-by-row bootstrap up to Monte Carlo
    # error: here within 15% of the interval's width, for every metric.
    from hce.stats import _resample

    rng = np.random.default_rng(21)
    p = rng.beta(5, 2, 20_000)
    df = pd.DataFrame({"prob": p, "outcome": (rng.random(20_000) < p**1.2).astype(int)})
    exact = calibration_metrics(df, n_boot=2000, random_state=1).set_index("metric")
    monkeypatch.setattr(_resample, "_EXACT_ROWS", 1000)
    grouped = calibration_metrics(df, n_boot=2000, random_state=1).set_index("metric")
    assert (grouped["estimate"] == exact["estimate"]).all()
    width = exact["ci_high"] - exact["ci_low"]
    for limit in ("ci_low", "ci_high"):
        assert ((grouped[limit] - exact[limit]).abs() <= 0.15 * width + 1e-12).all(), (limit, grouped[limit] - exact[limit], width)


def test_within_bin_variance_is_never_negative():
    # Issue 33: every forecast of a bin equal (0.3 x 200, 0.7 x 200 in ten uniform bins) gives a
    # within-bin variance of exactly 0; computed as sum p^2 - n fbar^2 it came out 4.2e-15 with a
    # bootstrap interval of [-4.0e-16, -2.5e-16], below 0 and not holding its own estimate.
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"prob": np.repeat([0.3, 0.7], 200), "outcome": rng.random(400) < np.repeat([0.3, 0.7], 200),
                       "item_id": np.arange(400) // 4})  # fmt: skip
    out = brier_score(df, strategy="uniform", item="item_id", n_boot=200, random_state=0).set_index("metric")
    row = out.loc["within_bin_variance"]
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == (0.0, 0.0, 0.0)


def test_reliability_diagram_hides_small_bins_and_shows_bin_sizes():
    # Issue 33: a line through bins of n = 2 and n = 398 looked like perfect calibration.
    import matplotlib.pyplot as plt

    table = pd.DataFrame({"mean_prob": [0.35, 0.95], "estimate": [0.5, 0.96], "n": [2, 398],
                          "ci_low": [0.09, 0.94], "ci_high": [0.91, 0.98]})  # fmt: skip
    ax = reliability_diagram(table, min_count=10)
    texts = [t.get_text() for t in ax.texts]
    assert "n=398" in texts and "n=2" not in texts
    assert "1 bin with < 10 forecasts not shown (2 in all)" in ax.get_xlabel()  # under the axis, off the points
    points = [line.get_xdata() for line in ax.get_lines() if line.get_linestyle() != "--"]
    assert all(0.35 not in np.asarray(x) for x in points)
    plt.close("all")
