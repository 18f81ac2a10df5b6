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
    problem = fit._pls
    theta = np.sqrt(fit.varcorr()["vcov"].to_numpy()[:3] / fit.sigma2)
    at = problem.profiled_deviance(theta)
    for k in range(3):
        h = 1e-3 * theta[k]
        up, down = (problem.profiled_deviance(theta + s * h * np.eye(3)[k]) for s in (1, -1))
        # the parabola through the three points puts the minimum at this fraction of theta_k away
        offset = h / 2 * (up - down) / (up + down - 2 * at) / theta[k]
        assert abs(offset) < 1e-4, (k, offset)
