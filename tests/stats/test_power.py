"""Sample-size functions: Bonett's published example, simulation against closed forms."""

import numpy as np
import pandas as pd
import pytest
from seeds import fast_and_other_seeds

from hce.errors import DataError
from hce.stats.power import (
    attempts_needed,
    bonett_icc_items,
    sd_difference_power,
    sd_difference_power_analytic,
)


def test_bonett_worked_example():
    # Bonett (2002) Stat Med 21:1331, worked example: rho = .85, k = 4, w = .2 -> n = 19.2
    res = bonett_icc_items(0.85, 4, 0.2).iloc[0]
    assert res["n_exact"] == pytest.approx(19.2, abs=0.05)
    assert res["n"] == 20
    # k = 2 and rho >= .7: Bonett's + 5 rho adjustment (as R presize::prec_icc)
    base = 8 * 1.959963984540054**2 * 0.2**2 * 1.8**2 / (2 * 0.1**2) + 1
    assert bonett_icc_items(0.8, 2, 0.1)["n_exact"].iloc[0] == pytest.approx(base + 4.0)


@pytest.mark.parametrize("seed", fast_and_other_seeds(11))
def test_sd_power_simulation_agrees_with_the_closed_form(seed):
    sim = sd_difference_power([20, 40], [5, 10], sd_a=0.6, sd_b=0.45, test="t_log",
                              n_sim=1500, random_state=seed)
    exact = sd_difference_power_analytic([20, 40], [5, 10], sd_a=0.6, sd_b=0.45)
    se = np.sqrt(exact["estimate"] * (1 - exact["estimate"]) / 1500)
    # margin: the largest |sim - exact| / (3.5 SE + 0.01) of the four designs is 0.53 at
    # seed 11 and at most 0.53 over seeds 0-20
    assert np.all(np.abs(sim["estimate"] - exact["estimate"]) <= 3.5 * se + 0.01)
    assert np.all((sim["ci_low"] <= sim["estimate"]) & (sim["estimate"] <= sim["ci_high"]))


@pytest.mark.parametrize("seed", fast_and_other_seeds(2))
def test_sd_power_has_nominal_size_under_the_null_and_is_reproducible(seed):
    a = sd_difference_power(25, 4, sd_a=0.5, sd_b=0.5, scale=(1, 5), n_sim=1000,
                            random_state=seed)
    b = sd_difference_power(25, 4, sd_a=0.5, sd_b=0.5, scale=(1, 5), n_sim=1000,
                            random_state=seed)
    pd.testing.assert_frame_equal(a, b)
    # margin: the Monte Carlo SE of a 0.05 rate over 1000 runs is 0.007; over seeds 0-20 the
    # rejection rate is 0.036-0.056 (0.055 at seed 2) and its ci_low 0.025-0.043
    assert a["ci_low"].iloc[0] <= 0.05 + 0.02 and a["estimate"].iloc[0] < 0.08


@pytest.mark.parametrize("seed", fast_and_other_seeds(5))
def test_sd_power_grows_with_items_and_attempts(seed):
    res = sd_difference_power([10, 40], [3, 8], sd_a=0.7, sd_b=0.4, scale=(1, 5), n_sim=300,
                              random_state=seed).set_index(["n_items", "n_attempts"])["estimate"]
    # margin, seeds 0-20: power 0.12-0.18 at (10, 3), 0.69-0.81 at (40, 3), 0.69-0.77 at
    # (10, 8) and 1.0 at (40, 8)
    assert res[(10, 3)] < res[(40, 3)] and res[(10, 3)] < res[(10, 8)]
    assert res[(40, 8)] > 0.95


def test_sd_power_input_errors():
    with pytest.raises(DataError, match="needs continuous scores"):
        sd_difference_power(10, 3, sd_a=1, sd_b=2, scale=(1, 5), test="t_log")
    with pytest.raises(DataError, match="n_attempts must hold integers >= 2"):
        sd_difference_power(10, 1, sd_a=1, sd_b=2)
    with pytest.raises(DataError, match="sd_b=0 must be a positive number"):
        sd_difference_power_analytic(10, 3, sd_a=1, sd_b=0)


@pytest.mark.slow
def test_sd_power_simulation_agrees_with_the_closed_form_precisely():
    sim = sd_difference_power([15, 30, 60], [4, 6, 12], sd_a=0.55, sd_b=0.45, test="t_log",
                              n_sim=10_000, random_state=3)
    exact = sd_difference_power_analytic([15, 30, 60], [4, 6, 12], sd_a=0.55, sd_b=0.45)
    se = np.sqrt(exact["estimate"] * (1 - exact["estimate"]) / 10_000)
    assert np.all(np.abs(sim["estimate"] - exact["estimate"]) <= 3.5 * se + 0.01)


@pytest.mark.parametrize("seed", fast_and_other_seeds(7))
def test_reliability_items_simulation_agrees_with_bonett(seed):
    from hce.stats.power import reliability_items

    res = reliability_items("icc", reliability=0.7, n_raters=3, width=0.2, n_sim=60,
                            random_state=seed).iloc[0]
    # margin: Bonett gives 68 items; the simulation gives 64-71 over seeds 0-18 (68 at
    # seed 7), |n - n_bonett| at most 0.45 of the 8.8 allowed
    assert abs(res["n"] - res["n_bonett"]) <= 0.1 * res["n_bonett"] + 2
    assert res["expected_width"] <= 0.2  # by construction: the search stops at width <= 0.2
    again = reliability_items("icc", reliability=0.7, n_raters=3, width=0.2, n_sim=60,
                              random_state=seed).iloc[0]
    assert again["n"] == res["n"]
    with pytest.raises(DataError, match="form='ICC4' is not valid"):
        reliability_items("icc", reliability=0.7, n_raters=3, width=0.2, form="ICC4")


@pytest.mark.slow
@pytest.mark.parametrize(("rho", "k", "width"), [(0.7, 3, 0.2), (0.6, 2, 0.25), (0.5, 5, 0.2),
                                                 (0.8, 2, 0.15), (0.85, 4, 0.2)])
def test_reliability_items_matches_bonett_within_simulation_error(rho, k, width):
    from hce.stats.power import reliability_items

    res = reliability_items("icc", reliability=rho, n_raters=k, width=width, n_sim=500,
                            random_state=11).iloc[0]
    # Bonett's formula is a large-sample approximation: agreement within 10% (+1 item)
    assert abs(res["n"] - res["n_bonett"]) <= 0.10 * res["n_bonett"] + 1


@pytest.mark.slow
def test_krippendorff_items_close_to_the_icc_plan_for_continuous_scores():
    from hce.stats.power import reliability_items

    # for continuous scores without rater effects Krippendorff's interval alpha estimates
    # the one-way ICC, so the bootstrap interval needs about as many items as Bonett says
    res = reliability_items("krippendorff", reliability=0.7, n_raters=3, width=0.2,
                            n_sim=100, n_boot=300, random_state=5).iloc[0]
    assert abs(res["n"] - 68) <= 0.2 * 68


def test_attempts_needed_stops_at_the_first_design_with_enough_power():
    res = attempts_needed(30, sd_a=0.6, sd_b=0.4, scale=(1, 5), n_sim=300, random_state=2)
    assert list(res["n_attempts"]) == list(range(2, len(res) + 2))
    assert res["reached"].iloc[-1] and not res["reached"].iloc[:-1].any()
    assert res["estimate"].iloc[-1] >= 0.8
    with pytest.warns(UserWarning, match="not reached with 3 attempts"):
        attempts_needed(5, sd_a=0.5, sd_b=0.45, max_attempts=3, n_sim=50, random_state=1)


def test_simulated_interval_width_is_the_one_krippendorff_alpha_reports():
    # Rounded ratings: resamples that miss the two varied targets have all ratings equal, so
    # alpha is 0/0 there. krippendorff_alpha leaves those replicates out of its percentile
    # interval; the width reliability_items plans with must be that interval's (it was NaN).
    from hce.stats import krippendorff_alpha, power
    from hce.stats._resample import as_generator

    y = np.full((8, 3), 3.0)
    y[0], y[1] = [1, 2, 3], [2, 2, 3]
    width = power._interval_width(y, "krippendorff", None, "interval", 0.95, 200, as_generator(1))
    long = pd.DataFrame({"t": np.repeat(np.arange(8), 3), "r": np.tile(np.arange(3), 8), "v": y.ravel()})
    row = krippendorff_alpha(long, item="t", rater="r", score="v", n_boot=200, random_state=1).iloc[0]
    assert np.isfinite(width) and width == pytest.approx(row.ci_high - row.ci_low, rel=1e-12)
