"""Tests for hce.stats.bland_altman, concordance and mcnemar against published and peer values.

References: Bland & Altman (1986), Lancet i:307-310 (peak flow data of Table 1: mean difference
-2.1, SD 38.8, limits -79.7 and 75.5 at 2 SD, 95% CI of the bias -22.0 to 17.8, SE of the limits
16.3, CIs -114.3 to -45.1 and 40.9 to 110.1, from values rounded to 1 decimal);
tests/stats/data/agreement_humans_reference.json from epiR 2.0.94 ``epi.ccc`` (script
tests/stats/r/agreement_humans_reference.R); statsmodels 0.15 ``mcnemar`` in
tests/stats/data/ppi_reference.json (script tests/stats/py/ppi_reference.py).
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats import bland_altman, concordance, mcnemar

DATA = Path(__file__).parent / "data"
EPIR = json.loads((DATA / "agreement_humans_reference.json").read_text())["cases"]
MCNEMAR = json.loads((DATA / "ppi_reference.json").read_text())["mcnemar"]


def frame(case):
    return pd.DataFrame({"item_id": range(len(case["a"])), "a": case["a"], "b": case["b"]})


def test_bland_altman_1986_published_values():
    out = bland_altman(frame(EPIR[0]), a="a", b="b", agreement=2).set_index("quantity")
    # The paper rounds the mean and SD before each step (its upper limit 75.5 is 75.41 unrounded):
    # agreement to its last digit, 0.2 where the rounding compounds.
    assert out.loc["bias", "estimate"] == pytest.approx(-2.1, abs=0.05)
    assert out.loc["lower_limit", "estimate"] == pytest.approx(-79.7, abs=0.1)
    assert out.loc["upper_limit", "estimate"] == pytest.approx(75.5, abs=0.1)
    assert (out.loc["bias", "ci_low"], out.loc["bias", "ci_high"]) == pytest.approx((-22.0, 17.8), abs=0.1)
    assert out.loc["lower_limit", "se"] == pytest.approx(16.3, abs=0.05)
    assert (out.loc["lower_limit", "ci_low"], out.loc["lower_limit", "ci_high"]) == pytest.approx((-114.3, -45.1), abs=0.2)
    assert (out.loc["upper_limit", "ci_low"], out.loc["upper_limit", "ci_high"]) == pytest.approx((40.9, 110.1), abs=0.2)


@pytest.mark.parametrize("case", EPIR, ids=lambda c: c["name"])
def test_concordance_and_limits_equal_epir(case):
    got = concordance(frame(case), a="a", b="b").iloc[0]
    assert got.estimate == pytest.approx(case["ccc"], rel=1e-12)
    assert (got.ci_low, got.ci_high) == pytest.approx((case["z_low"], case["z_high"]), rel=1e-10)
    assert (got.asymptotic_low, got.asymptotic_high) == pytest.approx((case["asymptotic_low"], case["asymptotic_high"]), rel=1e-10)
    assert got.bias_correction == pytest.approx(case["bias_correction"], rel=1e-12)
    assert got.location_shift == pytest.approx(case["location_shift"], rel=1e-10, abs=1e-14)
    assert got.scale_shift == pytest.approx(case["scale_shift"], rel=1e-12)
    # epi.ccc's Bland-Altman limits: bias -/+ qnorm(0.975) SD.
    ba = bland_altman(frame(case), a="a", b="b", agreement=1.959963984540054).set_index("quantity")["estimate"]
    assert (ba["bias"], ba["lower_limit"], ba["upper_limit"]) == pytest.approx(
        (case["ba_bias"], case["ba_lower"], case["ba_upper"]), rel=1e-12)


def test_proportional_bias_is_the_least_squares_slope():
    case = EPIR[3]
    a, b = np.array(case["a"]), np.array(case["b"])
    slope, intercept = np.polyfit((a + b) / 2, a - b, 1)
    row = bland_altman(frame(case), a="a", b="b").set_index("quantity").loc["proportional_bias"]
    assert row.estimate == pytest.approx(slope, rel=1e-10)
    residual = (a - b) - (intercept + slope * (a + b) / 2)
    m = (a + b) / 2
    se = np.sqrt(residual @ residual / (len(a) - 2) / ((m - m.mean()) @ (m - m.mean())))
    assert row.se == pytest.approx(se, rel=1e-10)


def long_from_table(table):
    (n11, n10), (n01, n00) = table
    pairs = [(1, 1)] * n11 + [(1, 0)] * n10 + [(0, 1)] * n01 + [(0, 0)] * n00
    return pd.DataFrame([{"item_id": i, "rater": r, "verdict": v}
                         for i, (x, y) in enumerate(pairs) for r, v in (("a_judge", x), ("b_human", y))])  # fmt: skip


@pytest.mark.parametrize("case", MCNEMAR, ids=lambda c: str(c["table"]))
def test_mcnemar_equals_statsmodels(case):
    # statsmodels' table[0][1] and [1][0] are the discordant cells; ours b, c with rows = rater a passes.
    out = mcnemar(long_from_table([row[::-1] for row in case["table"]][::-1]), rater="rater", score="verdict")
    out = out.set_index("method")
    assert out.loc["exact", "p_value"] == pytest.approx(case["exact_p"], rel=1e-12)
    assert out.loc["exact", "statistic"] == case["exact_statistic"]
    if np.isfinite(case["chi2_cc"]):
        assert out.loc["chi-square, continuity corrected", "statistic"] == pytest.approx(case["chi2_cc"], rel=1e-12)
        assert out.loc["chi-square, continuity corrected", "p_value"] == pytest.approx(case["chi2_cc_p"], rel=1e-12)


def test_bad_input_is_named():
    df = frame(EPIR[0])
    with pytest.raises(DataError, match="is in rows"):
        bland_altman(pd.concat([df, df.iloc[[0]]]), a="a", b="b")
    with pytest.raises(DataError, match="exactly 2 raters"):
        mcnemar(long_from_table([[3, 1], [2, 4]]).assign(rater="x"), rater="rater", score="verdict")
    with pytest.raises(DataError, match="two verdicts"):
        d = long_from_table([[3, 1], [2, 4]])
        mcnemar(pd.concat([d, d.iloc[[0]]]), rater="rater", score="verdict")
