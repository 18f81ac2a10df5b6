"""``icc`` on incomplete designs against R: psych 2.2.9's ``ICC(x, lmer=TRUE)`` and lme4.

``tests/stats/r/psych_icc_reference.R`` draws 12 targets x raters designs with 10-25% of the
cells missing (``tests/stats/data/psych_icc_designs.csv``) and stores, per design, psych's
six forms with F, df, p and bounds (the ``k="raters"`` convention) and the lme4 variance
components behind hce's default ``k="harmonic"`` convention
(``tests/stats/data/psych_icc_reference.json``, with the R, psych and lme4 versions).

Tolerances: psych takes its components from lme4's default fit, whose variances are converged
to about 1e-5 relative (design d212: 1.4e-5 off lme4's own optimum at tolerance 1e-12, which hce
matches to 2e-8), so against psych ICCs and bounds are compared at 1e-4 absolute (psych prints
2 decimals), F at 1e-4 relative, degrees of freedom exactly, p-values at 1e-3 relative plus
1e-10 absolute (a tail probability amplifies a change in F). The lme4 fits behind the harmonic
convention were made at tolerance 1e-12: compared at 1e-6.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import icc

DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE = json.loads((DATA / "psych_icc_reference.json").read_text())
DESIGNS = pd.read_csv(DATA / "psych_icc_designs.csv")
NAMES = sorted(REFERENCE["designs"])
PSYCH_TOL = 1e-4


def _ratings(name: str) -> pd.DataFrame:
    return DESIGNS[DESIGNS["design"] == name]


@pytest.mark.parametrize("name", NAMES)
def test_k_raters_reproduces_psych_icc_lmer(name):
    ref = REFERENCE["designs"][name]["psych"]
    out = icc(_ratings(name), item="target", rater="rater", score="rating", method="reml", k="raters")
    assert out["metric"].tolist() == ref["type"]
    np.testing.assert_allclose(out["estimate"], ref["ICC"], atol=PSYCH_TOL)
    np.testing.assert_allclose(out["statistic"], ref["F"], rtol=PSYCH_TOL)
    np.testing.assert_array_equal(out["df1"], ref["df1"])
    np.testing.assert_array_equal(out["df2"], ref["df2"])
    np.testing.assert_allclose(out["p_value"], ref["p"], rtol=1e-3, atol=1e-10)
    np.testing.assert_allclose(out["ci_low"], ref["lower"], atol=PSYCH_TOL)
    np.testing.assert_allclose(out["ci_high"], ref["upper"], atol=PSYCH_TOL)
    n_raters = REFERENCE["designs"][name]["n_raters"]
    np.testing.assert_array_equal(out["k"], [1, 1, 1, n_raters, n_raters, n_raters])


@pytest.mark.parametrize("name", NAMES)
def test_k_harmonic_reproduces_lme4_components(name):
    ref = REFERENCE["designs"][name]["harmonic"]
    out = icc(_ratings(name), item="target", rater="rater", score="rating")  # incomplete: REML, harmonic k
    assert out["metric"].tolist() == ref["type"]
    np.testing.assert_allclose(out["estimate"], ref["ICC"], atol=1e-6)
    np.testing.assert_allclose(out["k"].iloc[3:], ref["k"], rtol=1e-12)


def test_conventions_agree_where_psych_and_hce_agree():
    # ICC2 and ICC3 are the same crossed-model ratios in both conventions; the point
    # is that ICC1 and every mean form differ (e.g. ICC3k 0.805 vs 0.861 on one design)
    for name in NAMES:
        data = _ratings(name)
        a = icc(data, item="target", rater="rater", score="rating", k="harmonic")
        b = icc(data, item="target", rater="rater", score="rating", k="raters")
        np.testing.assert_allclose(a["estimate"].iloc[1:3], b["estimate"].iloc[1:3], atol=1e-12)
    design = REFERENCE["designs"][NAMES[1]]
    assert abs(design["psych"]["ICC"][5] - design["harmonic"]["ICC"][5]) > 0.02


def test_k_rules_equal_in_a_complete_design():
    rng = np.random.default_rng(3)
    wide = rng.normal(size=(12, 1)) + rng.normal(size=(1, 4)) + rng.normal(size=(12, 4))
    long = pd.DataFrame(wide).rename_axis("t").reset_index().melt("t", var_name="r")
    a = icc(long, item="t", rater="r", score="value", method="reml", k="harmonic")
    b = icc(long, item="t", rater="r", score="value", method="reml", k="raters")
    cols = ["estimate", "ci_low", "ci_high", "statistic", "df2", "k"]
    np.testing.assert_allclose(a[cols], b[cols], rtol=1e-6)


def test_unknown_k_rule_is_named():
    with pytest.raises(ValueError, match="k"):
        icc(_ratings(NAMES[0]), item="target", rater="rater", score="rating", k="mean")


def test_reference_records_versions():
    assert REFERENCE["psych_version"] == "2.2.9"
    shares = [d["share_missing"] for d in REFERENCE["designs"].values()]
    assert min(shares) >= 0.10 and max(shares) <= 0.25
