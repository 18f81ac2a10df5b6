"""The cell fit reaches the optimum in few evaluations at any size (issue 43, item 2).

Pieces, each against an independent computation:
* the diagonal of ``A^-1`` by selected inversion through two elimination stages (item:condition,
  then item, then the condition remainder) equals the dense inverse's;
* the analytic gradients of the profiled deviance and of the deviance in the variances equal
  central differences of the deviances themselves (step 1e-6: truncation ~1e-12);
* Henderson's Method I start equals the ANOVA estimates on a balanced table (Searle, Casella &
  McCulloch 1992, sec. 5.3: Method I is the ANOVA method when the data are balanced);
* the fit of an unbalanced table equals lmer's on its rows (lmer itself is checked against lme4 in
  test_lme4_reference.py), in few deviance evaluations;
* two engines' tables of one log (rows in another order, means and sums of squares 1 ulp apart)
  give the same components, standard errors and intervals to 1e-8, the upper limit of a
  2-level facet at df near 1 included (5e-8 apart before: second differences of the deviance).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hce.stats.mixed import lmer
from hce.stats.mixed.cell_fit import fit_cells, henderson_start
from hce.stats.mixed.crossed_cells import CrossedCells
from hce.stats.mixed.g_study import _from_cells
from hce.stats.mixed.pls import PlsProblem, RandomBlock

FORMULA = "total ~ 1 + (1 | item_id) + (1 | condition_id) + (1 | item_id:condition_id)"


def cells(n_items: int, n_conditions: int, seed: int = 4, keep: float = 1.0, variances=(0.5, 0.1, 0.3, 1.0)) -> pd.DataFrame:
    """A cell table drawn from the model itself (25-50 attempts a cell), a share ``keep`` of cells kept."""
    rng = np.random.default_rng(seed)
    item, condition, both, sigma2 = variances
    n = rng.integers(25, 51, (n_items, n_conditions))
    mean = (3 + rng.normal(0, item**0.5, n_items)[:, None] + rng.normal(0, condition**0.5, n_conditions)[None, :]
            + rng.normal(0, both**0.5, n.shape) + rng.normal(0, 1, n.shape) * np.sqrt(sigma2 / n))  # fmt: skip
    table = pd.DataFrame({"item_id": np.repeat(np.arange(n_items), n_conditions), "condition_id": np.tile(np.arange(n_conditions), n_items),
                          "n": n.ravel(), "mean": mean.ravel(), "ss": (sigma2 * rng.chisquare(n - 1)).ravel()})  # fmt: skip
    return table[rng.random(len(table)) < keep].reset_index(drop=True)


def problem(table: pd.DataFrame) -> PlsProblem:
    codes = [pd.factorize(table[c], sort=True)[0] for c in ("item_id", "condition_id")]
    both = pd.factorize(codes[0] * 10 + codes[1], sort=True)[0]
    one = np.ones((len(table), 1))
    return PlsProblem(table["mean"].to_numpy(), one, [RandomBlock(c, one) for c in (*codes, both)],
                      weights=table["n"].to_numpy(float), within=float(table["ss"].sum()))  # fmt: skip


def test_selected_inversion_through_two_stages_is_the_dense_inverse_diagonal():
    p = problem(cells(120, 4, keep=0.8))
    assert not p.dense and len(p._scalar._steps) == 2  # item:condition, then item; condition left dense
    theta = np.array([0.7, 0.3, 0.5])
    p.solve(theta)
    scale = theta[p._column_param]
    a = p.ztz.toarray() * np.outer(scale, scale) + np.eye(len(scale))
    np.testing.assert_allclose(p._scalar.inverse_diagonal(), np.diag(np.linalg.inv(a)), rtol=1e-12)


def test_the_gradients_equal_central_differences_of_the_deviances():
    p = problem(cells(120, 4, keep=0.8))
    assert p.has_gradient
    # the profiled deviance's gradient is in theta^2, the search's coordinates
    profiled = lambda phi: p.profiled_deviance(np.sqrt(phi))  # noqa: E731
    phi, variances = np.array([0.7, 0.3, 0.5]) ** 2, np.array([0.5, 0.1, 0.3, 1.2])
    for f, g, x in ((profiled, lambda phi: p.gradient(np.sqrt(phi)), phi), (p.deviance, p.deviance_gradient, variances)):
        h = 1e-6 * x
        central = [(f(x + h[j] * e) - f(x - h[j] * e)) / (2 * h[j]) for j, e in enumerate(np.eye(len(x)))]
        exact = g(x)  # the differences carry the deviance's rounding over the step: ~1e-7 of the largest
        np.testing.assert_allclose(exact, central, rtol=1e-6, atol=1e-6 * np.abs(exact).max())


def test_henderson_start_is_the_anova_estimate_on_a_balanced_table():
    rng = np.random.default_rng(3)
    a, b, n = 30, 4, 5
    y = (2 + rng.normal(0, 1, a)[:, None, None] + rng.normal(0, 0.5, b)[None, :, None] + rng.normal(0, 0.7, (a, b))[:, :, None]
         + rng.normal(0, 1, (a, b, n)))  # fmt: skip
    m = y.mean(2)
    within = float(((y - m[:, :, None]) ** 2).sum())
    item, condition = np.repeat(np.arange(a), b), np.tile(np.arange(b), a)
    theta = henderson_start(np.full(a * b, float(n)), m.ravel(), within, [item, condition, item * b + condition])
    mse, grand = within / (a * b * (n - 1)), m.mean()
    ms_item = b * n * ((m.mean(1) - grand) ** 2).sum() / (a - 1)
    ms_condition = a * n * ((m.mean(0) - grand) ** 2).sum() / (b - 1)
    ms_both = n * ((m - m.mean(1)[:, None] - m.mean(0)[None, :] + grand) ** 2).sum() / ((a - 1) * (b - 1))
    anova = [(ms_item - ms_both) / (b * n), (ms_condition - ms_both) / (a * n), (ms_both - mse) / n]
    np.testing.assert_allclose(theta**2 * mse, anova, rtol=1e-12)


def test_an_unbalanced_cell_fit_equals_lmer_on_the_rows_in_few_evaluations(monkeypatch):
    rng = np.random.default_rng(8)
    table = cells(40, 3, seed=8, keep=0.85)
    table["n"] = rng.integers(2, 5, len(table))
    rows = table.loc[table.index.repeat(table["n"])].reset_index(drop=True)
    rows["total"] = rows["mean"] + rng.normal(0, 1, len(rows))
    grouped = rows.groupby(["item_id", "condition_id"])["total"]
    table = grouped.agg(n="size", mean="mean").reset_index().assign(ss=grouped.var(ddof=1).fillna(0).to_numpy() * (grouped.size().to_numpy() - 1))
    calls = []
    real = CrossedCells.profiled_deviance  # two crossed factors: the cell fit's own deviance
    monkeypatch.setattr(CrossedCells, "profiled_deviance", lambda self, t: calls.append(1) or real(self, t))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fit_cells(table, FORMULA)
    assert got.converged and len(calls) <= 30  # Henderson start, analytic gradient: was 131 at 20,000 x 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = lmer(FORMULA, rows.astype({"item_id": str, "condition_id": str})).varcorr()["vcov"].to_numpy()
    np.testing.assert_allclose(got.varcorr()["vcov"], expected, rtol=1e-8)


@pytest.mark.parametrize(("n_items", "n_conditions", "seed"), [(150, 2, 5), (120, 4, 4)])
def test_two_engines_tables_of_one_log_give_the_same_intervals(n_items, n_conditions, seed):
    a = cells(n_items, n_conditions, seed=seed).rename(columns={"item_id": "item", "condition_id": "condition"})
    a["min"], a["max"] = a["mean"] - 1, a["mean"] + 1
    rng = np.random.default_rng(0)
    b = a.sample(frac=1, random_state=1).reset_index(drop=True)  # another engine: another order, other roundings
    for column in ("mean", "ss"):
        b[column] = b[column] * (1 + rng.choice([-1, 0, 1], len(b)) * np.finfo(float).eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, other = (_from_cells(t, "total", ["item", "condition"], 1, 0.95, 0) for t in (a, b))
    columns = ["estimate", "std_error", "ci_low", "ci_high"]
    np.testing.assert_allclose(other.components[columns].to_numpy(float), one.components[columns].to_numpy(float), rtol=1e-8)
    bounds = ["estimate", "ci_low", "ci_high"]
    np.testing.assert_allclose(other.coefficients[bounds].to_numpy(float), one.coefficients[bounds].to_numpy(float), rtol=1e-8)
    if n_conditions == 2:  # the condition facet at df 0.98: its profile-likelihood upper limit, 29 times the estimate
        assert 0.9 < one.components["df"].iloc[1] < 1.1
