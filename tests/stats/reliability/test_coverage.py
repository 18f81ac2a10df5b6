"""Simulation (slow): ICC and alpha intervals cover the true value at about their nominal rate."""

import numpy as np
import pytest
from irr_tables import long_from_wide

from hce.stats import icc, krippendorff_alpha

VT, VE = 1.0, 1.0  # target and error variances
REPS = 400
# binomial SE of a 95% coverage over 400 runs is 0.011; allow 3 SE
TOLERANCE = 0.033


def _simulate(rng, n, k, var_rater, missing):
    y = (
        rng.normal(scale=np.sqrt(VT), size=(n, 1))
        + rng.normal(scale=np.sqrt(var_rater), size=(1, k))
        + rng.normal(scale=np.sqrt(VE), size=(n, k))
    )
    y[rng.random(y.shape) < missing] = np.nan
    return long_from_wide(y)


@pytest.mark.slow
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("var_rater", [0.0, 0.25])
def test_icc_interval_coverage(var_rater, missing):
    # complete: exact F intervals (ANOVA); 15% missing: F approximation at REML components.
    # ICC1 assumes the one-way model, so it is checked only without rater effects.
    truth = {"ICC2": VT / (VT + var_rater + VE), "ICC3": VT / (VT + VE)}
    if var_rater == 0:
        truth["ICC1"] = VT / (VT + VE)
    rng = np.random.default_rng(2026)
    hits = dict.fromkeys(truth, 0)
    for _ in range(REPS):
        out = icc(_simulate(rng, 30, 4, var_rater, missing), item="target", rater="rater", score="rating")
        out = out.set_index("metric")
        for form, value in truth.items():
            hits[form] += out.loc[form, "ci_low"] <= value <= out.loc[form, "ci_high"]
    coverage = {form: h / REPS for form, h in hits.items()}
    assert all(abs(c - 0.95) < TOLERANCE for c in coverage.values()), coverage


@pytest.mark.slow
def test_krippendorff_alpha_bootstrap_coverage():
    # exchangeable raters (no rater effect), interval data: alpha's population value is
    # VT / (VT + VE); 60 units x 5 raters, 10% missing, percentile bootstrap B = 500
    rng = np.random.default_rng(7)
    truth = VT / (VT + VE)
    hits = 0
    for _ in range(REPS):
        y = rng.normal(size=(60, 1)) * np.sqrt(VT) + rng.normal(size=(60, 5)) * np.sqrt(VE)
        y[rng.random(y.shape) < 0.1] = np.nan
        out = krippendorff_alpha(long_from_wide(y), item="target", rater="rater", score="rating",
                                 n_boot=500, random_state=rng)  # fmt: skip
        hits += out.ci_low[0] <= truth <= out.ci_high[0]
    assert abs(hits / REPS - 0.95) < TOLERANCE, hits / REPS
