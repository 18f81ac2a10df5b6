"""Two crossed factors from their cell table in O(cells) (hce.stats.mixed.crossed_cells, issue 43).

The deviance of the marginal cell means (Sherman-Morrison per item, Woodbury over the
conditions) must be lme4's REML criterion on the rows, which penalised least squares
computes (:class:`~hce.stats.mixed.pls.PlsProblem`, itself checked against lme4 in
test_lme4_reference.py): deviances, profiled deviances and both gradients equal to 1e-10 on
unbalanced tables with absent cells, with and without the interaction, in any term order;
and a G study through either path gives the same components and intervals to 1e-8.
Before: every evaluation was a sparse elimination of half a million random effects at
400,000 cells (0.12 s; 31 s a criterion of a 20M-row report, 7 s now).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hce.stats.mixed import crossed_cells
from hce.stats.mixed.cell_fit import fit_cells
from hce.stats.mixed.crossed_cells import CrossedCells
from hce.stats.mixed.g_study import _from_cells, _pandas_cells
from hce.stats.mixed.pls import PlsProblem, RandomBlock


def table(n_items: int, n_conditions: int, seed: int, keep: float = 0.8, replicated: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 8, (n_items, n_conditions)) if replicated else np.ones((n_items, n_conditions), int)
    mean = (3 + rng.normal(0, 1, n_items)[:, None] + rng.normal(0, 0.4, n_conditions)[None, :]
            + rng.normal(0, 0.5, n.shape) * replicated + rng.normal(0, 1, n.shape) / np.sqrt(n))  # fmt: skip
    cells = pd.DataFrame({"item": np.repeat(np.arange(n_items), n_conditions), "condition": np.tile(np.arange(n_conditions), n_items),
                          "n": n.ravel(), "mean": mean.ravel(), "ss": rng.chisquare(np.maximum(n - 1, 1)).ravel() * (n > 1).ravel()})  # fmt: skip
    cells = cells[rng.random(len(cells)) < keep].reset_index(drop=True)
    cells["min"], cells["max"] = cells["mean"] - 1, cells["mean"] + 1
    return cells


def both_problems(cells: pd.DataFrame, order: list[str]) -> tuple[PlsProblem, CrossedCells]:
    a, b = (pd.factorize(cells[c], sort=True)[0] for c in ("item", "condition"))
    codes = {"a": a, "b": b, "ab": pd.factorize(a * 1000 + b, sort=True)[0]}
    one = np.ones((len(cells), 1))
    n, mean, within = cells["n"].to_numpy(float), cells["mean"].to_numpy(), float(cells["ss"].sum())
    pls = PlsProblem(mean, one, [RandomBlock(codes[t], one) for t in order], weights=n, within=within)
    return pls, CrossedCells(a, b, n, mean, within, order)


@pytest.mark.parametrize(("order", "replicated", "seed"), [(["a", "b", "ab"], True, 1), (["b", "ab", "a"], True, 2),
                                                           (["a", "b"], False, 3), (["a", "b"], True, 4)])  # fmt: skip
def test_the_deviances_and_gradients_are_those_of_penalised_least_squares(order, replicated, seed):
    pls, fast = both_problems(table(60, 5, seed, replicated=replicated), order)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        variances = np.r_[rng.uniform(0.05, 2.0, len(order)), rng.uniform(0.5, 1.5)]
        np.testing.assert_allclose(fast.deviance(variances), pls.deviance(variances), rtol=1e-12)
        np.testing.assert_allclose(fast.deviance_gradient(variances), pls.deviance_gradient(variances), rtol=1e-10, atol=1e-9)
        theta = np.sqrt(variances[:-1] / variances[-1])
        np.testing.assert_allclose(fast.profiled_deviance(theta), pls.profiled_deviance(theta), rtol=1e-12)
        np.testing.assert_allclose(fast.gradient(theta), pls.gradient(theta), rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(fast.sigma2(theta), pls.solve(theta).r2 / pls.dof, rtol=1e-12)


def test_the_gradient_at_a_zero_variance_is_the_one_sided_derivative():
    # penalised least squares divides by the variance there (NaN); the marginal form has the
    # derivative itself, which the profile intervals' bounded search can use
    _, fast = both_problems(table(60, 5, 5), ["a", "b", "ab"])
    at = np.array([1.0, 0.0, 0.3, 1.0])
    h = 1e-6
    forward = (fast.deviance(at + h * np.eye(4)[1]) - fast.deviance(at)) / h
    np.testing.assert_allclose(fast.deviance_gradient(at)[1], forward, rtol=1e-4)


@pytest.mark.parametrize(("n_items", "n_conditions", "seed"), [(150, 2, 5), (80, 6, 6), (4, 90, 7)])
def test_a_g_study_gives_the_components_and_intervals_of_penalised_least_squares(n_items, n_conditions, seed, monkeypatch):
    # (4, 90): the factor with more levels is the condition; the blocks are then its levels
    cells = table(n_items, n_conditions, seed, keep=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = _from_cells(cells, "total", ["item", "condition"], 1, 0.95, 0)
        monkeypatch.setattr(crossed_cells.CrossedCells, "applies", staticmethod(lambda a, b: False))
        slow = _from_cells(cells, "total", ["item", "condition"], 1, 0.95, 0)
    assert fast.fit.engine.startswith("two crossed factors") and slow.fit.engine.startswith("penalised least squares")
    columns = ["estimate", "std_error", "ci_low", "ci_high"]
    np.testing.assert_allclose(fast.components[columns].to_numpy(float), slow.components[columns].to_numpy(float), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(fast.coefficients[["estimate", "ci_low", "ci_high"]].to_numpy(float),
                               slow.coefficients[["estimate", "ci_low", "ci_high"]].to_numpy(float), rtol=1e-8)  # fmt: skip
    np.testing.assert_allclose(fast.fit.loglik, slow.fit.loglik, rtol=1e-12)


def test_a_sparse_table_or_another_model_keeps_penalised_least_squares():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sparse = fit_cells(table(60, 5, 8, keep=0.3), "total ~ 1 + (1 | item) + (1 | condition) + (1 | item:condition)")
        nested = fit_cells(table(60, 5, 8), "total ~ 1 + (1 | item) + (1 | item:condition)")
        # a small table keeps the deviance lmer on the rows takes: on a flat boundary optimum the
        # two searches stopped 9e-9 apart (tests/stats/test_engines.py's property test, seed 957)
        small = fit_cells(table(20, 3, 9), "total ~ 1 + (1 | item) + (1 | condition) + (1 | item:condition)")
    assert all(f.engine.startswith("penalised least squares") for f in (sparse, nested, small))


def test_a_boundary_fit_from_two_tables_equal_to_rounding_agrees_to_1e_8():
    # item x condition planted at 1e-4, estimated 0, beside a 4-level condition: the search located
    # that optimum on differences of the deviance (the gradient was withheld below theta 1e-2), so
    # the tables of pandas and of an engine (sums in another order) gave condition components 2e-8
    # and upper limits 1.1e-7 apart (an independent check); the gradient in theta^2 is finite at 0
    rng = np.random.default_rng(11)
    items, conditions, attempts = 2000, 4, 5
    i, c = np.repeat(np.arange(items), conditions * attempts), np.tile(np.repeat(np.arange(conditions), attempts), items)
    total = 10 + rng.normal(0, 2, items)[i] + rng.normal(0, 1, conditions)[c] + rng.normal(0, 0.01, (items, conditions))[i, c]
    rows = pd.DataFrame({"item": i, "condition": c, "total": total + rng.normal(0, 1.4, i.size)})
    rows = rows[rng.random(len(rows)) > 0.2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [_from_cells(_pandas_cells(r, "total", ["item", "condition"]), "total", ["item", "condition"], 1, 0.95, 0)
                for r in (rows, rows.sample(frac=1, random_state=1))]  # fmt: skip
    one, other = (f.components.set_index("component") for f in fits)
    assert one.loc["item:condition", "estimate"] == 0 and fits[0].fit.engine.startswith("two crossed factors")
    numbers = ["estimate", "std_error", "ci_low", "ci_high"]
    # now 8e-12 on the estimates and 2e-9 on a limit (the profile of a 4-level variance); 1e-8 is the promise
    np.testing.assert_allclose(other[numbers].to_numpy(float), one[numbers].to_numpy(float), rtol=1e-8, atol=1e-12)
