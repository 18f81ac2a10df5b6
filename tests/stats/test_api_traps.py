"""API traps a pingouin or statsmodels user fell into (issue 49, item 4): each test failed before the fix."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pingouin as pg
import pytest

import hce.stats as hs
from hce.errors import DataError, HceWarning


def _spread() -> pd.DataFrame:
    log = hs.simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6, "C": 0.4}, random_state=3)
    return hs.item_spread(log)


def test_rm_anova_transforms_nothing_by_default():
    # pingouin.rm_anova analyses the scores as given; so does hce's default (it took square roots: F 1.527 vs 1.488).
    spread = _spread()
    out = hs.rm_anova(spread).iloc[0]
    ref = pg.rm_anova(spread, dv="sd", within="condition_id", subject="item_id").iloc[0]
    assert out["statistic"] == pytest.approx(ref["F"], rel=1e-10)
    assert out["transform"] == "none" and "sqrt" not in out["method"]
    assert hs.rm_anova(spread, transform=None)["statistic"].iloc[0] == out["statistic"]
    root = hs.rm_anova(spread, transform="sqrt").iloc[0]
    assert root["statistic"] != pytest.approx(out["statistic"]) and "sqrt(sd)" in root["method"]


def test_mann_whitney_takes_item_and_counts_each_item_once():
    log = hs.simulated_log(n_items=10, n_attempts=3, noise={"A": 0.2, "B": 0.6}, random_state=1)
    log = log[~(log["item_id"].isin(["T0000", "T0001"]) & (log["condition_id"] == "A"))]
    log = log[~(log["item_id"].isin(["T0002", "T0003", "T0004"]) & (log["condition_id"] == "B"))]
    log = log[~log["item_id"].isin([f"T000{i}" for i in range(5, 10)]) | (log["condition_id"] == "A")]
    out = hs.mann_whitney(log, item="item_id", score="total", a="A", b="B").iloc[0]
    means = log.groupby(["condition_id", "item_id"])["total"].mean()
    assert (out["n_a"], out["n_b"]) == (len(means["A"]), len(means["B"])) == (8, 2)
    ref = hs.mann_whitney(means.reset_index(), score="total", a="A", b="B").iloc[0]
    assert out["statistic"] == ref["statistic"] and out["p_value"] == ref["p_value"]


def test_mann_whitney_warns_when_items_are_paired():
    log = hs.simulated_log(n_items=6, n_attempts=3, noise={"A": 0.2, "B": 0.6}, random_state=1)
    with pytest.warns(HceWarning, match="the design is paired, which wilcoxon_paired uses"):
        hs.mann_whitney(log, item="item_id", score="total")


def test_krippendorff_alpha_orders_text_labels_with_categories():
    # gwet_ac and cohen_kappa take categories= for ordinal text labels; so does alpha now.
    labels = ["poor", "fair", "good", "excellent"]
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 30)
    codes = np.clip(truth[:, None] + rng.integers(-1, 2, (30, 3)), 0, 3)
    numbers = pd.DataFrame(codes).stack().rename("v").rename_axis(["unit", "coder"]).reset_index()
    text = numbers.assign(v=[labels[c] for c in numbers["v"]])
    for level in ("ordinal", "interval", "nominal"):
        got = hs.krippendorff_alpha(text, item="unit", rater="coder", score="v", level=level, categories=labels,
                                    n_boot=0)["estimate"].iloc[0]  # fmt: skip
        want = hs.krippendorff_alpha(numbers, item="unit", rater="coder", score="v", level=level,
                                     n_boot=0)["estimate"].iloc[0]  # fmt: skip
        assert got == pytest.approx(want, abs=1e-12), level
    with pytest.raises(DataError, match=r"ratings \['excellent'\] are not among categories"):
        hs.krippendorff_alpha(text, item="unit", rater="coder", score="v", level="ordinal", categories=labels[:3])


@pytest.mark.parametrize("statistic", [hs.item_spread, hs.vote_stability, hs.mae_vs_target])
def test_absent_default_error_column_flags_nothing(statistic):
    # The shared docstring says so; these refused a log without error_flag.
    log = hs.simulated_log(n_items=4, n_attempts=3, random_state=1)
    kwargs = {"score": "verdict"} if statistic is hs.vote_stability else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        full = statistic(log, **kwargs)
        bare = statistic(log.drop(columns=["error_flag"]), **kwargs)
    pd.testing.assert_frame_equal(full, bare)
    with pytest.raises(DataError, match=r"no column\(s\) \['flags'\]"):
        statistic(log.drop(columns=["error_flag"]), error="flags", **kwargs)


def test_paired_test_warning_names_the_test_not_friedman():
    spread = _spread()
    spread = spread[~((spread["item_id"] == "T0000") & (spread["condition_id"] == "B"))]
    with pytest.warns(HceWarning) as caught:
        hs.wilcoxon_paired(spread, score="sd", a="A", b="B")
    message = str(caught[0].message)
    assert "friedman" not in message.lower() and "1 'item_id' block(s)" in message and "A, B" in message


def test_internal_consistency_reads_wide_tables_as_pingouin():
    # Issue 49: cronbach_alpha and mcdonald_omega wanted long data while ordinal_alpha, efa and
    # item_statistics want wide; pingouin's cronbach_alpha takes the wide respondents x items table.
    rng = np.random.default_rng(4)
    trait = rng.normal(size=40)
    wide = pd.DataFrame({f"q{j}": np.round(trait + rng.normal(scale=0.8, size=40)) for j in range(5)})
    wide.iloc[3, 2] = np.nan
    ref, ci = pg.cronbach_alpha(data=wide)
    out = hs.cronbach_alpha(wide).iloc[0]
    assert out["estimate"] == pytest.approx(ref, abs=1e-12)
    assert [out["ci_low"], out["ci_high"]] == pytest.approx(list(ci), abs=5e-3)  # pingouin rounds its CI to 3 decimals
    long = wide.rename_axis("resp").reset_index().melt(id_vars="resp", var_name="q", value_name="v")
    assert hs.cronbach_alpha(long, item="resp", rater="q", score="v")["estimate"].iloc[0] == out["estimate"]
    assert hs.cronbach_alpha(wide.assign(id=range(40)), columns=list(wide.columns))["estimate"].iloc[0] == out["estimate"]
    omega_wide = hs.mcdonald_omega(wide, n_boot=0)["estimate"].iloc[0]
    assert omega_wide == hs.mcdonald_omega(long, item="resp", rater="q", score="v", n_boot=0)["estimate"].iloc[0]
    with pytest.raises(DataError, match=r"reads long data \(item=, rater= and score=: all three\) or wide data"):
        hs.cronbach_alpha(long, item="resp", score="v")
