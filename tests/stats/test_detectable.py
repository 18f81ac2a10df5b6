"""Minimum detectable difference and power of a two-condition comparison (issue 48, item 1).

References: the noncentral-t power of the one-sample (paired) and two-sample t tests is
statsmodels' ``TTestPower`` / ``TTestIndPower`` (both tails, as R's ``power.t.test(strict =
TRUE)``), with effect size delta / SD of an item's difference (paired) or of an item mean
(unpaired); in a balanced design the paired SE equals lmer's SE of the condition coefficient
and its Satterthwaite df is n - 1 (Brennan 2001, ch. 4; lmerTest).
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestIndPower, TTestPower

from hce.errors import DataError, HceWarning
from hce.stats import lmer, mde, power_difference

COMPONENTS = {"item": 0.9, "item:condition": 0.15, "residual": 0.6}


def pilot_log(components, n_items, n_attempts, seed, binary=False):
    """A balanced two-condition pilot from the planning model (condition B 0.2 higher)."""
    rng = np.random.default_rng(seed)
    item = rng.normal(0, np.sqrt(components["item"]), n_items)
    inter = rng.normal(0, np.sqrt(components["item:condition"]), (n_items, 2))
    eta = 2.0 + item[:, None, None] + inter[:, :, None] + np.array([0.0, 0.2])[None, :, None]
    if binary:
        y = rng.random((n_items, 2, n_attempts)) < 1 / (1 + np.exp(-(eta - 2.0)))
    else:
        y = eta + rng.normal(0, np.sqrt(components["residual"]), (n_items, 2, n_attempts))
    i, c, k = np.meshgrid(np.arange(n_items), [0, 1], np.arange(n_attempts), indexing="ij")
    return pd.DataFrame({"item_id": [f"T{v:03d}" for v in i.ravel()], "condition_id": np.array(["A", "B"])[c.ravel()],
                         "attempt": k.ravel() + 1, "total": y.ravel().astype(float), "error_flag": False})  # fmt: skip


def test_mde_is_statsmodels_noncentral_t_paired_and_unpaired():
    res = mde(components=COMPONENTS, n_items=[12, 40], n_attempts=[1, 3, 10])
    for row in res.itertuples():
        sd_paired = np.sqrt(2 * (COMPONENTS["item:condition"] + COMPONENTS["residual"] / row.n_attempts))
        es = TTestPower().solve_power(nobs=row.n_items, alpha=0.05, power=0.8, alternative="two-sided")
        np.testing.assert_allclose(row.estimate, es * sd_paired, rtol=1e-6)
        assert row.df == row.n_items - 1 and row.calls == 2 * row.n_items * row.n_attempts
    res = mde(components=COMPONENTS, n_items=25, n_attempts=4, paired=False, power=0.9, alpha=0.01)
    sd_mean = np.sqrt(COMPONENTS["item"] + COMPONENTS["item:condition"] + COMPONENTS["residual"] / 4)
    es = TTestIndPower().solve_power(nobs1=25, ratio=1, alpha=0.01, power=0.9, alternative="two-sided")
    np.testing.assert_allclose(res["estimate"].iloc[0], es * sd_mean, rtol=1e-6)
    assert res["df"].iloc[0] == 48


def test_power_at_the_mde_is_the_asked_power():
    grid = mde(components=COMPONENTS, n_items=[5, 30], n_attempts=[2, 8], power=0.9)
    for row in grid.itertuples():
        back = power_difference(components=COMPONENTS, delta=row.estimate, n_items=row.n_items,
                                n_attempts=row.n_attempts)  # fmt: skip
        np.testing.assert_allclose(back["estimate"].iloc[0], 0.9, atol=1e-9)


def test_pilot_components_give_lmers_own_standard_error_and_df():
    log = pilot_log(COMPONENTS, 30, 4, seed=5)
    fit = lmer("total ~ condition_id + (1 | item_id) + (1 | item_id:condition_id)", log)
    vc = fit.varcorr().set_index("group")["vcov"]
    coef = fit.fixef().iloc[1]
    res = mde(log, n_items=30, n_attempts=4).iloc[0]
    np.testing.assert_allclose(res["se"], coef["std_error"], rtol=1e-6)
    np.testing.assert_allclose(res["df"], coef["df"], rtol=1e-6)
    # the closed form from the pilot's own components
    se = np.sqrt(2 * (vc["item_id:condition_id"] + vc["Residual"] / 4) / 30)
    crit = stats.t.ppf(0.975, 29)
    power = stats.nct.sf(crit, 29, res["estimate"] / se) + stats.nct.cdf(-crit, 29, res["estimate"] / se)
    np.testing.assert_allclose(power, 0.8, atol=1e-9)
    # rows flagged failed are left out
    flagged = pd.concat([log, log.iloc[:3].assign(attempt=[9, 10, 11], total=99.0, error_flag=True)])
    with pytest.warns(HceWarning, match="flagged"):
        again = mde(flagged, n_items=30, n_attempts=4)
    np.testing.assert_allclose(again["estimate"].iloc[0], res["estimate"])


def test_grid_cheapest_first_and_first_reaching_row():
    grid = power_difference(components=COMPONENTS, delta=0.5, n_items=[10, 20, 40, 80], n_attempts=[1, 2, 5, 10],
                            cost_per_attempt=0.01)  # fmt: skip
    reached = grid[grid["reached"]]
    assert grid["reached"].iloc[0] and grid["cost_usd"].iloc[0] == reached["cost_usd"].min()
    assert list(grid["reached"]) == sorted(grid["reached"], reverse=True)
    np.testing.assert_allclose(grid["cost_usd"], grid["calls"] * 0.01)
    m = mde(components=COMPONENTS, n_items=[40, 10], n_attempts=[5, 1])
    assert m["calls"].is_monotonic_increasing


def test_verdicts_on_the_latent_scale():
    log = pilot_log({"item": 1.0, "item:condition": 0.2, "residual": 0}, 40, 5, seed=2, binary=True)
    log["verdict"] = log["total"].astype(int)
    res = mde(log, score="verdict", n_items=40, n_attempts=5).iloc[0]
    assert "log-odds" in res["method"] and 0 < res["p_reference"] < res["p_detectable"] < 1
    from scipy.special import expit, logit

    np.testing.assert_allclose(res["p_detectable"], expit(logit(res["p_reference"]) + res["estimate"]))
    given = mde(components={"item": 1.0, "item:condition": 0.2}, binary=True, n_items=40, n_attempts=5,
                baseline=0.3).iloc[0]  # fmt: skip
    se = np.sqrt(2 * (0.2 + np.pi**2 / 3 / 5) / 40)
    np.testing.assert_allclose(given["se"], se)
    assert given["p_reference"] == 0.3


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(DataError, match="not both"):
        mde(n_items=10, n_attempts=2)
    with pytest.raises(DataError, match="missing"):
        mde(components={"item": 1.0}, n_items=10, n_attempts=2)
    with pytest.raises(DataError, match="one attempt per"):
        mde(pilot_log(COMPONENTS, 10, 1, seed=1), n_items=10, n_attempts=2)
    with pytest.raises(DataError, match="n_items"):
        mde(components=COMPONENTS, n_items=1, n_attempts=2)
    with pytest.raises(DataError, match="power"):
        mde(components=COMPONENTS, n_items=10, n_attempts=2, power=1.2)
    with pytest.warns(UserWarning, match="no design"):
        power_difference(components=COMPONENTS, delta=0.01, n_items=5, n_attempts=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("paired", [True, False])
def test_simulated_power_at_the_mde_is_080(seed, paired):
    # 4,000 studies of n items x m attempts at the MDE, analysed by the t test on item means (lmer's
    # test in a balanced design). The issue asks for 0.80 +- 0.06 from 400 studies, where the Monte
    # Carlo SE (0.02) put two seeds within 0.01 of that edge; with 4,000 the SE is
    # sqrt(0.8 * 0.2 / 4000) = 0.0063, and the margin is 4 SE (0.025), well inside the 0.06
    n, m = 20, 3
    delta = mde(components=COMPONENTS, n_items=n, n_attempts=m, paired=paired)["estimate"].iloc[0]
    rng = np.random.default_rng(seed)
    sims = 4000
    items = rng.normal(0, np.sqrt(COMPONENTS["item"]), (sims, n, 1 if paired else 2))
    inter = rng.normal(0, np.sqrt(COMPONENTS["item:condition"]), (sims, n, 2))
    noise = rng.normal(0, np.sqrt(COMPONENTS["residual"]), (sims, n, 2, m)).mean(axis=3)
    means = items + inter + noise + np.array([0.0, delta])
    if paired:
        p = stats.ttest_rel(means[:, :, 1], means[:, :, 0], axis=1).pvalue
    else:
        p = stats.ttest_ind(means[:, :, 1], means[:, :, 0], axis=1).pvalue
    power, se = np.mean(p < 0.05), np.sqrt(0.8 * 0.2 / sims)
    assert abs(power - 0.8) <= 4 * se, power
