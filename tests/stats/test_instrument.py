"""Item statistics against published psych::alpha output; the instrument report end to end."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats import (
    cfa,
    cronbach_alpha,
    efa,
    icc,
    krippendorff_alpha,
    omega_hierarchical,
    ordinal_alpha,
)
from hce.stats.instrument import instrument_report, item_statistics

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
BFI = DATA / "factor_analysis" / "psych_bfi.csv"
ITEMS = [f"{t}{i}" for t in "ACENO" for i in range(1, 6)]
REVERSED = ["A1", "C4", "C5", "E1", "E2", "N1", "N2", "N3", "N4", "N5", "O2", "O4", "O5"]

# psych::alpha(bfi[, 1:25], check.keys = TRUE), knitted R notebook output (psych reverses
# the 13 keyed items as 7 - x): "Item statistics" r.drop (3 decimals) and raw.r (2), and
# "Reliability if an item is dropped" raw_alpha (2 decimals)
R_DROP = [0.193, 0.377, 0.425, 0.332, 0.480, 0.285, 0.274, 0.270, 0.448, 0.461, 0.328, 0.535,
          0.432, 0.473, 0.440, 0.407, 0.398, 0.391, 0.495, 0.334, 0.284, 0.202, 0.347, 0.043,
          0.201]
RAW_R = [0.28, 0.44, 0.49, 0.42, 0.54, 0.36, 0.35, 0.35, 0.52, 0.54, 0.42, 0.61, 0.50, 0.54,
         0.51, 0.49, 0.48, 0.48, 0.57, 0.43, 0.35, 0.30, 0.42, 0.12, 0.28]
ALPHA_DROPPED = [0.82, 0.81, 0.81, 0.82, 0.81, 0.82, 0.82, 0.82, 0.81, 0.81, 0.82, 0.81, 0.81,
                 0.81, 0.81, 0.81, 0.81, 0.81, 0.81, 0.82, 0.82, 0.82, 0.81, 0.83, 0.82]


def test_item_statistics_match_psych_alpha_on_bfi():
    if not BFI.is_file():
        pytest.skip(f"reference data {BFI} not found")
    bfi = pd.read_csv(BFI)
    res = item_statistics(bfi, columns=ITEMS, reverse=REVERSED)
    np.testing.assert_allclose(res["r_drop"], R_DROP, atol=0.0005 + 1e-6)
    np.testing.assert_allclose(res["r_total"], RAW_R, atol=0.005 + 1e-6)
    np.testing.assert_allclose(res["alpha_if_dropped"], ALPHA_DROPPED, atol=0.005 + 1e-6)
    assert res.loc[0, "n"] == 2784 and res.loc[21, "n"] == 2800  # psych's n column


def test_alpha_if_dropped_is_the_reliability_module_alpha_of_the_rest():
    rng = np.random.default_rng(3)
    wide = pd.DataFrame(rng.normal(size=(50, 1)) + rng.normal(size=(50, 4)), columns=list("abcd"))
    res = item_statistics(wide)
    rest = wide.drop(columns="b").rename_axis("t").reset_index().melt("t", var_name="i")
    ref = cronbach_alpha(rest, item="t", rater="i", score="value")
    assert res.loc[1, "alpha_if_dropped"] == pytest.approx(ref["estimate"].iloc[0], rel=1e-12)
    assert res.loc[1, "ci_low"] == pytest.approx(ref["ci_low"].iloc[0], rel=1e-12)
    with pytest.raises(DataError, match="reverse items"):
        item_statistics(wide, reverse=["z"])


def _ratings(seed=0, n_texts=40, n_raters=3):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_texts):
        quality, words = rng.normal(), int(rng.integers(1000, 4000))
        for r in range(n_raters):
            for a in ["accurate", "thorough", "useful", "organized", "succinct"]:
                s = np.clip(np.rint(3 + quality + rng.normal(0, 0.7)), 1, 5)
                rows.append((t, f"r{r}", a, s, "high" if quality > 0 else "low", words,
                             "senior" if r == 0 else "junior"))
    return pd.DataFrame(rows, columns=["text", "rater", "attribute", "score", "quality",
                                       "words", "level"])


def test_instrument_report_uses_the_owning_modules():
    d = _ratings()
    rep = instrument_report(d, item="text", rater="rater", attribute="attribute",
                            score="score", n_factors=1, quality="quality", high="high",
                            low="low", predictor="words", condition="level", n_boot=100,
                            structure={"content": ["accurate", "thorough", "useful"],
                                       "form": ["organized", "succinct"]},
                            random_state=2)
    one = d[d["attribute"] == "useful"]
    ref = icc(one, item="text", rater="rater", score="score").set_index("metric")
    got = rep.reliability.query("attribute == 'useful' and metric == 'ICC3k'").iloc[0]
    assert got["estimate"] == pytest.approx(ref.loc["ICC3k", "estimate"], rel=1e-12)
    assert got["ci_low"] == pytest.approx(ref.loc["ICC3k", "ci_low"], rel=1e-12)
    ka = krippendorff_alpha(one, item="text", rater="rater", score="score", n_boot=100,
                            random_state=2)
    got = rep.reliability.query("attribute == 'useful' and metric != 'ICC3k'").iloc[0]
    assert got["estimate"] == pytest.approx(ka["estimate"].iloc[0], rel=1e-12)
    wide = d.pivot_table(index=["text", "rater"], columns="attribute", values="score")
    assert rep.factors.loadings.to_numpy() == pytest.approx(
        efa(wide, n_factors=1, columns=list(wide.columns), rotation="varimax").loadings.to_numpy())
    assert set(rep.validity) == {"discriminant", "substantive", "rater_expertise"}
    assert rep.confirmatory.fit_value("chi_square") == pytest.approx(
        cfa(wide, model={"content": ["accurate", "thorough", "useful"],
                   "form": ["organized", "succinct"]}).fit_value("chi_square"), rel=1e-9)
    assert rep.validity["discriminant"]["p_value"].max() < 1e-6
    assert list(rep.descriptives["attribute"]) == sorted(d["attribute"].unique())
    assert rep.distributions.groupby("attribute")["proportion"].sum().round(12).eq(1).all()
    text = rep.summary()
    assert "Inter-rater reliability" in text and "Validity: rater expertise" in text


def test_instrument_report_picks_factors_by_parallel_analysis_and_skips_with_two_items():
    d = _ratings(seed=1, n_texts=30)
    rep = instrument_report(d, item="text", rater="rater", attribute="attribute",
                            score="score", n_boot=50, random_state=4)
    assert rep.parallel is not None and rep.factors.loadings.shape[1] == rep.parallel.n_factors
    two = d[d["attribute"].isin(["useful", "accurate"])]
    rep2 = instrument_report(two, item="text", rater="rater", attribute="attribute",
                             score="score", n_boot=50, random_state=4)
    assert rep2.factors is None and "factor analysis skipped" in rep2.notes[0]
    assert rep2.item_statistics.empty
    with pytest.raises(DataError, match="needs both high= and low="):
        instrument_report(d, item="text", rater="rater", attribute="attribute",
                          score="score", quality="quality", high="high")


def _two_factor_ratings():
    rng = np.random.default_rng(5)
    rows = []
    attributes = ["accurate", "thorough", "cited", "useful", "organized", "succinct"]
    for t in range(50):
        quality = rng.normal(size=2)
        for r in range(3):
            for j, a in enumerate(attributes):
                s = np.clip(np.rint(3 + quality[j // 3] + rng.normal(0, 0.7)), 1, 5)
                rows.append((t, f"r{r}", a, s))
    return pd.DataFrame(rows, columns=["text", "rater", "attribute", "score"])


def test_factor_boot_adds_intervals_from_the_owning_functions():
    """factor_boot= gives the EFA's bootstrap intervals and ordinal alpha / omega rows equal to
    calling the owning functions (hce.stats.factor, hce.stats.reliability) in turn on one
    generator made from the same seed; without it nothing changes.

    n_boot=0 switches the report's other bootstraps (omega, Krippendorff's alpha) off, so
    the factor_boot intervals are the first draws of the generator."""
    d = _two_factor_ratings()
    kwargs = dict(item="text", rater="rater", attribute="attribute", score="score",
                  n_factors=2, rotation="oblimin", n_boot=0, random_state=3)
    rep = instrument_report(d, factor_boot=15, **kwargs)
    plain = instrument_report(d, **kwargs)
    assert plain.factors.intervals is None and len(plain.internal_consistency) == 2
    wide = d.pivot_table(index=["text", "rater"], columns="attribute", values="score")
    items = list(wide.columns)
    stream = np.random.default_rng(3)
    ref = efa(wide, n_factors=2, columns=items, rotation="oblimin", n_boot=15, random_state=stream)
    alpha = ordinal_alpha(wide, columns=items, n_boot=15, random_state=stream).iloc[0]
    omega = omega_hierarchical(wide, columns=items, n_factors=2, n_boot=15,
                               random_state=stream).estimates.set_index("metric")
    pd.testing.assert_frame_equal(rep.factors.intervals, ref.intervals)
    assert rep.factors.fit_value("rmsea") == ref.fit_value("rmsea")
    assert rep.factors.fit.set_index("index").loc["rmsea", "confidence"] == 0.90
    got = rep.internal_consistency.set_index("metric")
    assert got.loc["ordinal alpha", "estimate"] == pytest.approx(alpha["estimate"], rel=1e-12)
    assert got.loc["ordinal alpha", "ci_low"] == pytest.approx(alpha["ci_low"], rel=1e-12)
    assert got.loc["omega hierarchical", "ci_high"] == pytest.approx(
        omega.loc["omega_hierarchical", "ci_high"], rel=1e-12)
    assert got.loc["omega total (Schmid-Leiman)", "estimate"] == pytest.approx(
        omega.loc["omega_total", "estimate"], rel=1e-12)
    bounded = got.drop(index="McDonald's omega")  # n_boot=0: no interval of its own
    assert (bounded["ci_low"] <= bounded["estimate"]).all()
    assert (bounded["estimate"] <= bounded["ci_high"]).all()
    text = rep.summary()
    assert "Coefficients and bootstrapped 95 % confidence intervals (15 resamples" in text
    assert "omega hierarchical" in text
    with pytest.raises(DataError, match="factor_boot=-2 must be a non-negative integer"):
        instrument_report(d, factor_boot=-2, **kwargs)


def test_bootstraps_of_the_report_draw_one_stream_not_one_seed_each():
    """A seed and the generator made from it give the same report: the seed becomes one
    generator that every bootstrap and the parallel analysis draw from in turn. (Passing the
    plain seed on restarted each of them from it, so a seed and its generator disagreed, and
    the EFA, ordinal alpha and omega resampled the very same rows.)"""
    d = _two_factor_ratings()
    kwargs = dict(item="text", rater="rater", attribute="attribute", score="score",
                  rotation="oblimin", n_boot=30, factor_boot=6)
    seeded = instrument_report(d, random_state=11, **kwargs)
    generated = instrument_report(d, random_state=np.random.default_rng(11), **kwargs)
    assert seeded.parallel is not None  # the parallel analysis drew from the stream too
    pd.testing.assert_frame_equal(seeded.internal_consistency, generated.internal_consistency)
    pd.testing.assert_frame_equal(seeded.reliability, generated.reliability)
    pd.testing.assert_frame_equal(seeded.parallel.table, generated.parallel.table)
    pd.testing.assert_frame_equal(seeded.factors.intervals, generated.factors.intervals)
