"""The cell-table REML fit reaches the optimum at the size of a 20M-row log (issue 43, item 2).

A planted-component cell table of 100,000 items x 4 conditions (unbalanced: 25-50 attempts a
cell, 15M attempts) is fitted from its cells (hce.stats.mixed.cell_fit) and the optimum checked
by brute force on the profiled REML deviance itself (Bates et al. 2015, eq. 41): along each
parameter the deviance one step either side must say the minimum lies where the fit stopped.
Before the fix the search stopped on a decrease below 1e-11 of the deviance (~4e7 here, so 4e-4,
while a whole Newton step along the 4-level condition variance decreased it by 3e-4): the
condition variance sat 2% off its optimum and the fit said "did not converge" (slow: a minute).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hce.stats.mixed.cell_fit import fit_cells

pytestmark = pytest.mark.slow
FORMULA = "total ~ 1 + (1 | item_id) + (1 | condition_id) + (1 | item_id:condition_id)"


def planted_cells(n_items: int, n_conditions: int = 4, seed: int = 1, variances=(0.5, 0.1, 0.3, 1.0)) -> pd.DataFrame:
    """Cell counts, means and within sums of squares drawn from the random model itself."""
    rng = np.random.default_rng(seed)
    item, condition, both, sigma2 = variances
    n = rng.integers(25, 51, (n_items, n_conditions))
    mean = (3 + rng.normal(0, item**0.5, n_items)[:, None] + rng.normal(0, condition**0.5, n_conditions)[None, :]
            + rng.normal(0, both**0.5, n.shape) + rng.normal(0, 1, n.shape) * np.sqrt(sigma2 / n))  # fmt: skip
    return pd.DataFrame({"item_id": np.repeat(np.arange(n_items), n_conditions), "condition_id": np.tile(np.arange(n_conditions), n_items),
                         "n": n.ravel(), "mean": mean.ravel(), "ss": (sigma2 * rng.chisquare(n - 1)).ravel()})  # fmt: skip


def test_the_cell_fit_of_100000_by_4_cells_stops_at_the_deviances_minimum():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "did not converge", no "nearly unidentifiable"
        fit = fit_cells(planted_cells(100_000), FORMULA)
    assert fit.converged and not fit.messages
    problem = fit._problem
    theta = np.sqrt(fit.varcorr()["vcov"].to_numpy()[:3] / fit.sigma2)
    at = problem.profiled_deviance(theta)
    for k in range(3):
        h = 1e-3 * theta[k]
        up, down = (problem.profiled_deviance(theta + s * h * np.eye(3)[k]) for s in (1, -1))
        # the parabola through the three points puts the minimum at this fraction of theta_k away
        offset = h / 2 * (up - down) / (up + down - 2 * at) / theta[k]
        assert abs(offset) < 1e-4, (k, offset)


def test_the_fit_takes_few_evaluations_and_two_engines_tables_agree_to_1e_8_in_g_and_phi_too(monkeypatch):
    # issue 43: 303 s of CPU and 2,665 deviance evaluations before the Henderson start and the
    # analytic gradient (selected inversion through both elimination stages); now 6 and 9 gradients
    from hce.stats.mixed.g_study import _from_cells
    from hce.stats.mixed.crossed_cells import CrossedCells

    calls = []
    real = CrossedCells.profiled_deviance  # two crossed factors: the cell fit's own deviance
    monkeypatch.setattr(CrossedCells, "profiled_deviance", lambda self, t: calls.append(1) or real(self, t))
    table = planted_cells(100_000).rename(columns={"item_id": "item", "condition_id": "condition"})
    table["min"], table["max"] = table["mean"] - 1, table["mean"] + 1
    fit = fit_cells(table, FORMULA.replace("item_id", "item").replace("condition_id", "condition"))
    assert fit.converged and len(calls) <= 20
    rng = np.random.default_rng(0)
    other = table.sample(frac=1, random_state=1).reset_index(drop=True)  # another engine's order and roundings
    for column in ("mean", "ss"):
        other[column] = other[column] * (1 + rng.choice([-1, 0, 1], len(other)) * np.finfo(float).eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = (_from_cells(t, "total", ["item", "condition"], 1, 0.95, 0) for t in (table, other))
    columns = ["estimate", "std_error", "ci_low", "ci_high"]
    np.testing.assert_allclose(two.components[columns].to_numpy(float), one.components[columns].to_numpy(float), rtol=1e-8)
    np.testing.assert_allclose(two.coefficients["estimate"], one.coefficients["estimate"], rtol=1e-8)
    # G and Phi's limits are percentiles of 20,000 joint draws, each a smooth function of the
    # components (Cholesky scores, chi-square quantiles): as close as the components (1.8e-10
    # measured). The copula by ranks and rng.chisquare swapped neighbouring draws: 5.6e-6 apart.
    bounds = ["ci_low", "ci_high"]
    np.testing.assert_allclose(two.coefficients[bounds].to_numpy(float), one.coefficients[bounds].to_numpy(float), rtol=1e-8)
