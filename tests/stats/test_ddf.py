"""The df machinery of :mod:`hce.stats.mixed.ddf` on its own: derivatives against closed
forms, Kenward-Roger's random-effect-space algebra against pbkrtest's n x n formulas, the F
df rule of lmerTest, and Type III hypotheses against their textbook form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hce.stats import lmer
from hce.stats.mixed.ddf import KenwardRoger, f_denominator_df, hessian, jacobian
from hce.stats.mixed.type3 import doolittle, type3_hypotheses


def test_richardson_derivatives_reach_closed_forms():
    # f(x) = exp(x0) sin(x1) + x0^2 x1^3: gradient and Hessian by hand
    def f(x):
        return np.exp(x[0]) * np.sin(x[1]) + x[0] ** 2 * x[1] ** 3

    x = np.array([0.7, 1.3])
    e, s, c = np.exp(x[0]), np.sin(x[1]), np.cos(x[1])
    grad = [e * s + 2 * x[0] * x[1] ** 3, e * c + 3 * x[0] ** 2 * x[1] ** 2]
    hess = [[e * s + 2 * x[1] ** 3, e * c + 6 * x[0] * x[1] ** 2],
            [e * c + 6 * x[0] * x[1] ** 2, -e * s + 6 * x[0] ** 2 * x[1]]]  # fmt: skip
    np.testing.assert_allclose(jacobian(lambda v: np.array(f(v)), x), grad, rtol=1e-9)
    np.testing.assert_allclose(hessian(f, x), hess, rtol=1e-7)
    # at 0 the step is absolute (numDeriv's eps): still exact for a quadratic
    np.testing.assert_allclose(hessian(lambda v: 3 * v[0] ** 2 + v[0] * v[1], np.zeros(2)), [[6, 1], [1, 0]], atol=1e-7)


def test_f_denominator_df_is_lmertests_rule():
    # lmerTest's get_Fstat_ddf: one t -> its df; equal -> the common value; any <= 2 -> 2;
    # else 2E / (E - q), E = sum nu / (nu - 2)
    assert f_denominator_df(np.array([7.5])) == 7.5
    assert f_denominator_df(np.array([12.0, 12.0])) == 12.0
    assert f_denominator_df(np.array([1.5, 30.0])) == 2.0
    e = 10 / 8 + 20 / 18
    assert f_denominator_df(np.array([10.0, 20.0])) == pytest.approx(2 * e / (e - 2))


def _dense_pbkrtest(x, zs, gammas, sigma2):
    """pbkrtest's vcovAdj as written (R/vcovAdj.R): V = sum gamma_r G_r, n x n."""
    n = len(x)
    g = [z @ z.T for z in zs] + [np.eye(n)]
    v = sum(gam * gr for gam, gr in zip([*gammas, sigma2], g))
    vi = np.linalg.inv(v)
    phi = np.linalg.inv(x.T @ vi @ x)
    k = len(g)
    p = [-x.T @ vi @ gr @ vi @ x for gr in g]
    q = {(r, s): x.T @ vi @ g[r] @ vi @ g[s] @ vi @ x for r in range(k) for s in range(k)}
    info = np.array([[np.trace(g[r] @ vi @ g[s] @ vi) - 2 * np.sum(phi * q[r, s])
                      + np.sum((phi @ p[r]) * (p[s] @ phi)) for s in range(k)] for r in range(k)])  # fmt: skip
    w = 2 * np.linalg.inv(info)
    u = sum(w[r, s] * (q[r, s] - p[r] @ phi @ p[s]) for r in range(k) for s in range(k))
    return phi + 2 * phi @ u @ phi, w


def test_kenward_roger_in_the_random_effect_space_equals_pbkrtests_formulas():
    rng = np.random.default_rng(3)
    n, items, conds = 90, 12, 3
    item, cond = rng.integers(items, size=n), rng.integers(conds, size=n)
    x = np.column_stack([np.ones(n), cond == 1, cond == 2, rng.normal(size=n)]).astype(float)
    cell = item * conds + cond
    terms = [(item, np.ones((n, 1)), np.array([[0.8]])), (cell, np.ones((n, 1)), np.array([[0.3]]))]
    kr = KenwardRoger.of(x, terms, 1.1)
    zs = [np.eye(items)[item], np.eye(items * conds)[cell]]
    phi_a, w = _dense_pbkrtest(x, zs, [0.8, 0.3], 1.1)
    np.testing.assert_allclose(kr.phi_a, phi_a, rtol=1e-9)
    np.testing.assert_allclose(kr.w, w, rtol=1e-9)


def test_doolittle_factors_without_pivoting():
    a = np.array([[4.0, 2, 2], [2, 5, 3], [2, 3, 6]])
    lower = doolittle(a)
    upper = np.linalg.solve(lower, a)
    np.testing.assert_allclose(np.tril(lower), lower)
    np.testing.assert_allclose(np.diag(lower), 1)
    np.testing.assert_allclose(np.triu(upper), upper, atol=1e-12)


def test_type3_hypothesis_of_a_main_effect_averages_over_the_other_factor():
    """With treatment coding of a x b (2 x 2), Type III for a tests the difference of a's
    levels averaged over b: a[T.a2] + a[T.a2]:b[T.b2] / 2 (SAS/lmerTest)."""
    rng = np.random.default_rng(0)
    d = pd.DataFrame({
        "g": np.repeat([f"g{i}" for i in range(10)], 8),
        "a": np.tile(["a1", "a2"], 40), "b": np.tile(["b1", "b1", "b2", "b2"], 20),
    })  # fmt: skip
    d = d.iloc[rng.permutation(80)[:70]].reset_index(drop=True)  # unbalanced
    d["y"] = d["g"].str[1:].astype(int) * 0.5 + rng.normal(size=len(d))
    m = lmer("y ~ a * b + (1 | g)", d)
    hyp = type3_hypotheses(m.design.X, m.design.design_info, m.design.data, "y ~ a * b")
    np.testing.assert_allclose(hyp["a"] / hyp["a"][0, 1], [[0, 1, 0, 0.5]])
    np.testing.assert_allclose(hyp["b"] / hyp["b"][0, 2], [[0, 0, 1, 0.5]])
    np.testing.assert_allclose(hyp["a:b"] / hyp["a:b"][0, 3], [[0, 0, 0, 1]])
