"""The penalised least squares engine (hce.stats.mixed.pls) and its optimiser (hce.stats.mixed.theta_search).

References:
- statsmodels' test data ``lme03.csv`` / ``lme05.csv`` (installed with statsmodels under
  ``statsmodels/regression/tests/results``) and the lme4 results stored beside them in
  ``lme_r_results.py`` (``*_drf_3``, ``*_drf_5``), made by ``lme_results.R`` there with
  ``lmer(endog ~ 0 + exog_fe_... + (0 + exog_re_0 | groups))``; ``exog_re_0`` is 1, so the
  random part is ``(1 | groups)``. R prints 7 significant digits, hence ``rtol=2e-6``.
- A dense REML criterion written here from its textbook form (Searle, Casella & McCulloch
  1992, eq. 6.70): an independent check of the sparse profiled deviance.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels
from scipy import optimize

from hce.stats import lmer, variance_components
from hce.stats.mixed import pls
from hce.stats.mixed.pls import PlsProblem, RandomBlock, pls_fit

def _sparse_remainder_always(monkeypatch) -> None:
    """Send every remainder through SuperLU: the thresholds patched in the globals the elimination pls
    uses reads. Under --import-mode=importlib the hce/ doctests can import sparse_chol a second time,
    so the module sys.modules names may not be the one pls imported from."""
    engine = next(f.__globals__ for f in vars(pls.BlockElimination).values() if inspect.isfunction(f))
    monkeypatch.setitem(engine, "_SPARSE_REMAINDER", 0)
    monkeypatch.setitem(engine, "_SPARSE_DENSITY", 2.0)


RESULTS = Path(statsmodels.__file__).parent / "regression" / "tests" / "results"


def _r_results(index: int, method: str) -> dict:
    namespace: dict = {"np": np}
    exec((RESULTS / "lme_r_results.py").read_text(), namespace)  # noqa: S102 - statsmodels' own file
    suffix = f"_{method}_drf_{index}"
    return {k: namespace[k + suffix] for k in ("coef", "cov_re", "scale", "loglike")}


@pytest.mark.parametrize("index", [3, 5])
@pytest.mark.parametrize("reml", [True, False])
def test_unbalanced_statsmodels_data_reproduce_lme4(index, reml):
    # these put theta exactly on 0 in the old optimiser (stationary point of an even function)
    data = pd.read_csv(RESULTS / f"lme{index:02d}.csv")
    fixed = " + ".join(c for c in data.columns if c.startswith("exog_fe"))
    m = lmer(f"endog ~ 0 + {fixed} + (1 | groups)", data, REML=reml)
    ref = _r_results(index, "reml" if reml else "ml")
    vc = m.varcorr().set_index("group")["vcov"]
    np.testing.assert_allclose(vc["groups"], ref["cov_re"][0, 0], rtol=2e-6)
    np.testing.assert_allclose(m.sigma2, ref["scale"][0], rtol=2e-6)
    np.testing.assert_allclose(m.fixef()["estimate"], ref["coef"], rtol=2e-6)
    np.testing.assert_allclose(m.loglik, ref["loglike"][0], rtol=2e-6)
    assert m.converged and not m.singular


def dense_reml(y, x, zs, variances) -> float:
    """-2 REML log-likelihood from V itself: log|V| + log|X'V^-1 X| + r'V^-1 r + (n-p) log 2 pi."""
    n, p = x.shape
    v = variances[-1] * np.eye(n) + sum(s * z @ z.T for s, z in zip(variances[:-1], zs))
    vinv = np.linalg.inv(v)
    xtvx = x.T @ vinv @ x
    beta = np.linalg.solve(xtvx, x.T @ vinv @ y)
    r = y - x @ beta
    return float(
        np.linalg.slogdet(v)[1]
        + np.linalg.slogdet(xtvx)[1]
        + r @ vinv @ r
        + (n - p) * np.log(2 * np.pi)
    )


def dense_minimum(y, x, zs):
    """Global REML minimum by brute force: every subset of components held at 0, the others
    searched on the log scale from several starts."""
    k = len(zs)
    best = (np.inf, None)
    for zero in itertools.product([False, True], repeat=k):
        free = np.flatnonzero(~np.array(zero))

        def crit(logv, free=free):
            v = np.zeros(k + 1)
            v[free] = np.exp(logv[:-1])
            v[-1] = np.exp(logv[-1])
            return dense_reml(y, x, zs, v)

        for start in (-1.5, 0.5):
            res = optimize.minimize(
                crit, np.full(len(free) + 1, start), method="Nelder-Mead",
                options={"xatol": 1e-8, "fatol": 1e-11, "maxfev": 5000},
            )
            if res.fun < best[0]:
                v = np.zeros(k + 1)
                v[free] = np.exp(res.x[:-1])
                v[-1] = np.exp(res.x[-1])
                best = (res.fun, v)
    return best


def judge_design(seed: int, crossed: bool) -> pd.DataFrame:
    """A small unbalanced judge log: items x conditions x attempts, ~15% attempts missing."""
    rng = np.random.default_rng(seed)
    items, conditions = rng.integers(8, 14), rng.integers(2, 4)
    rows = [
        (i, c, a)
        for i in range(items)
        for c in range(conditions)
        for a in range(rng.integers(2, 5))
        if rng.random() > 0.15
    ]
    log = pd.DataFrame(rows, columns=["item", "condition", "attempt"])
    sd_item, sd_cell = rng.choice([0.0, 0.3, 1.0]), rng.choice([0.0, 0.5]) if crossed else 0.0
    item = rng.normal(0, sd_item, items)
    cell = rng.normal(0, sd_cell, (items, conditions))
    log["total"] = (
        0.4 * log["condition"] + item[log["item"]] + cell[log["item"], log["condition"]]
        + rng.normal(0, 1.0, len(log))
    )
    log["condition"] = "c" + log["condition"].astype(str)
    return log


@pytest.mark.slow
@pytest.mark.parametrize("crossed", [False, True])
def test_reml_optimum_is_the_dense_global_minimum(crossed):
    formula = "total ~ condition + (1|item)" + (" + (1|item:condition)" if crossed else "")
    zeros = positives = 0
    for seed in range(6):
        log = judge_design(seed, crossed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # singular fits are expected here
            m = lmer(formula, log, method="pls")
        d = m.design
        zs = [np.eye(len(g.levels))[g.codes] for g in d.groupings.values()]
        crit, v = dense_minimum(d.y, d.X, zs)
        # hce's criterion is no worse than the brute-force minimum (Nelder-Mead stops
        # ~1e-9 short of it), and at the same point
        assert -2 * m.loglik <= crit + 1e-7, seed
        np.testing.assert_allclose(-2 * m.loglik, dense_reml(d.y, d.X, zs, m.varcorr()["vcov"].to_numpy()), rtol=1e-10)
        np.testing.assert_allclose(m.varcorr()["vcov"], v, atol=2e-4 * v.max())
        assert m.converged, (seed, m.messages)
        zeros += int(np.any(v[:-1] < 1e-6 * v[-1]))
        positives += int(np.all(v[:-1] > 0.05))
    # the designs exercise both a component at 0 and all components inside
    assert zeros >= 1 and positives >= 1


@pytest.fixture
def topical_chat(shared_dir):
    path = shared_dir / "data" / "topicalchat_gpt35_repeated" / "judge_scores_long.csv"
    if not path.exists():
        pytest.skip(f"{path} absent")
    return pd.read_csv(path)


@pytest.mark.parametrize(
    "attribute, criterion",
    # lme4 1.1-31 (R 4.2.2) on the same rows (scores 1-3): REMLcrit(m) to 10 decimals, and
    # no convergence message (m@optinfo$conv$lme4$messages is NULL)
    [("coherence", 65106.8030684589), ("naturalness", 76432.7550172084)],
)
def test_topical_chat_fits_converge_at_lme4s_optimum(topical_chat, attribute, criterion):
    part = topical_chat[(topical_chat["attribute"] == attribute) & topical_chat["score"].between(1, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no false "did not converge" warning
        m = lmer("score ~ 1 + (1|item_id) + (1|prompt_variant) + (1|item_id:prompt_variant)", part)
        g = variance_components(part, score="score", facets=["item_id", "prompt_variant"])
    assert m.converged and m.messages == []
    assert g.fit.converged
    # at lme4's optimum or lower (lme4's bobyqa stops ~1e-6 above it on coherence)
    assert -2 * m.loglik <= criterion + 1e-6
    np.testing.assert_allclose(-2 * m.loglik, criterion, rtol=1e-10)


def dense_profiled(y, x, terms, theta, reml=True) -> tuple[float, np.ndarray]:
    """lme4's profiled deviance at ``theta`` from ``V0 = I + Z Lambda Lambda' Z'`` (n x n), and
    the conditional modes ``b = Lambda Lambda' Z' V0^-1 (y - X beta)``: log|A| = log|V0|
    (Sylvester) and ``log|R_X|^2 = log|X' V0^-1 X|`` (Bates et al. 2015, eqs. 34-42)."""
    n, p = x.shape
    zs, lams, start = [], [], 0
    for t in terms:
        pattern = t.theta_pattern()
        factor = np.zeros((t.q, t.q))
        for k, (i, j) in enumerate(pattern):
            factor[i, j] = theta[start + k]
        start += len(pattern)
        indicator = np.eye(t.levels)[t.codes]
        zs.append(np.hstack([indicator * t.z[:, [c]] for c in range(t.q)]))  # column-major
        lams.append(np.kron(factor, np.eye(t.levels)))
    z = np.hstack(zs)
    lam = np.zeros((z.shape[1],) * 2)
    offset = 0
    for block in lams:
        lam[offset : offset + len(block), offset : offset + len(block)] = block
        offset += len(block)
    v0 = np.eye(n) + z @ lam @ lam.T @ z.T
    vinv = np.linalg.inv(v0)
    xtvx = x.T @ vinv @ x
    beta = np.linalg.solve(xtvx, x.T @ vinv @ y)
    r = y - x @ beta
    r2 = r @ vinv @ r
    dof = n - p if reml else n
    dev = np.linalg.slogdet(v0)[1] + dof * (1 + np.log(2 * np.pi * r2 / dof))
    dev += np.linalg.slogdet(xtvx)[1] if reml else 0.0
    b = lam @ lam.T @ z.T @ vinv @ r
    # back to the engine's order: per term, level-major (level l, column c)
    out, offset = [], 0
    for t in terms:
        size = t.levels * t.q
        out.append(b[offset : offset + size].reshape(t.q, t.levels).T.ravel())
        offset += size
    return float(dev), np.concatenate(out)


def random_terms(rng, n, kind):
    """Engine terms of a random design: crossed, nested, slopes, or two terms on one factor."""
    item = rng.integers(0, 12, n)
    rater = rng.integers(0, 5, n)
    x = rng.normal(size=n)
    one = np.ones((n, 1))
    cell = np.unique(item * 5 + rater, return_inverse=True)[1]
    if kind == "crossed":
        return [RandomBlock(item, one), RandomBlock(rater, one), RandomBlock(cell, one)]
    if kind == "slopes":
        return [RandomBlock(item, np.column_stack([one, x])), RandomBlock(rater, one)]
    if kind == "three":
        return [RandomBlock(item, np.column_stack([one, x, x**2]))]
    # (1|item) + (0 + x|item): two uncorrelated terms on one grouping factor
    return [RandomBlock(item, one), RandomBlock(item, x[:, None]), RandomBlock(rater, one)]


@pytest.mark.parametrize("kind", ["crossed", "slopes", "three", "shared"])
@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("superlu", [False, True])
def test_engine_deviance_equals_dense_criterion(kind, reml, superlu, monkeypatch):
    if superlu:  # send every remainder through SuperLU with its fixed ordering
        _sparse_remainder_always(monkeypatch)
    rng = np.random.default_rng([len(kind), int(reml), int(superlu)])
    for _ in range(3):
        n = int(rng.integers(40, 90))
        terms = random_terms(rng, n, kind)
        x = np.column_stack([np.ones(n), rng.normal(size=n)])
        y = x @ [3.0, 0.5] + rng.normal(size=n) * 2
        problem = PlsProblem(y, x, terms, reml=reml)
        assert problem.system.sparse_remainder == (superlu and problem.system.remainder > 0)
        theta = np.where(problem.lower == 0, rng.uniform(0.0, 1.5, problem.n_theta), rng.normal(0, 0.5, problem.n_theta))
        want, _ = dense_profiled(y, x, terms, theta, reml)
        np.testing.assert_allclose(problem.profiled_deviance(theta), want, rtol=1e-10)
        # and the fit's conditional modes are the dense ones at its theta
        fit = pls_fit(y, x, terms, reml=reml)
        crit, b = dense_profiled(y, x, terms, fit.theta, reml)
        np.testing.assert_allclose(-2 * fit.loglik, crit, rtol=1e-10)
        np.testing.assert_allclose(fit.b, b, rtol=1e-7, atol=1e-9)


def scalar_terms(rng, n, kind):
    """Engine terms of a random design whose terms each have one column."""
    if kind != "nested":
        return random_terms(rng, n, kind)
    item = rng.integers(0, 15, n)
    cell = np.unique(item * 3 + rng.integers(0, 3, n), return_inverse=True)[1]
    return [RandomBlock(item, np.ones((n, 1))), RandomBlock(cell, np.ones((n, 1)))]


@pytest.mark.parametrize("kind", ["crossed", "nested", "shared"])
@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("superlu", [False, True])
def test_dense_and_sparse_paths_give_the_same_deviance(kind, reml, superlu, monkeypatch):
    # the same formulas in another order of operations: equal to rounding (1e-10 relative)
    if superlu:
        _sparse_remainder_always(monkeypatch)
    rng = np.random.default_rng([len(kind), int(reml), 7])
    for _ in range(3):
        n = int(rng.integers(60, 200))
        terms = scalar_terms(rng, n, kind)
        x = np.column_stack([np.ones(n), rng.normal(size=n)])
        y = x @ [3.0, 0.5] + rng.normal(size=n) * 2
        theta = rng.uniform(0.0, 2.0, len(terms))
        variances = np.r_[rng.uniform(0.0, 3.0, len(terms)), rng.uniform(0.5, 2.0)]
        results = {}
        for up_to in (0, 10**6):
            monkeypatch.setattr(pls, "_DENSE_UP_TO", up_to)
            problem = PlsProblem(y, x, terms, reml=reml)
            assert problem.dense == bool(up_to)
            # scalar terms on the sparse path take the fixed-pattern elimination (ScalarElimination)
            assert (problem._scalar is not None) == (not up_to and not problem.system.sparse_remainder)
            fit = pls_fit(y, x, terms, reml=reml)
            results[up_to] = (
                problem.profiled_deviance(theta), problem.deviance(variances), fit.loglik, fit.b
            )  # fmt: skip
        sparse_result, dense_result = results[0], results[10**6]
        np.testing.assert_allclose(dense_result[:3], sparse_result[:3], rtol=1e-10)
        np.testing.assert_allclose(dense_result[3], sparse_result[3], rtol=1e-7, atol=1e-9)


def test_nested_terms_are_eliminated_in_turn():
    # item:prompt nested in item: both diagonal eliminations, only prompt is left dense
    rng = np.random.default_rng(3)
    item, prompt = np.repeat(np.arange(50), 6), np.tile(np.repeat([0, 1], 3), 50)
    cell = item * 2 + prompt
    one = np.ones((300, 1))
    problem = PlsProblem(rng.normal(size=300), one, [RandomBlock(t, one) for t in (item, prompt, cell)])
    assert [s.size for s in problem.system.stages] == [100, 50] and problem.system.remainder == 2


def test_search_keeps_a_true_zero_and_leaves_a_false_one():
    from hce.stats.mixed.theta_search import minimise_theta

    # even in theta, minimum at 0: the boundary is accepted (the deviance rises inside)
    at_zero = minimise_theta(lambda t: (t[0] ** 2 + 1) ** 2, np.array([0.5]), np.array([0.0]), np.array([True]))
    assert at_zero.theta[0] == 0.0 and at_zero.converged
    # even in theta, 0 a stationary maximum: started next to it, the search leaves it
    inside = minimise_theta(lambda t: (t[0] ** 2 - 2) ** 2, np.array([1e-3]), np.array([0.0]), np.array([True]))
    np.testing.assert_allclose(inside.theta[0], np.sqrt(2), rtol=1e-6)


def test_a_flat_optimum_is_not_called_converged_and_the_message_says_what_to_try():
    from hce.stats.mixed.theta_search import minimise_theta

    # a ring of minima: the Hessian is singular along it (an unidentifiable direction)
    ring = minimise_theta(
        lambda t: (t[0] ** 2 + t[1] ** 2 - 1) ** 2,
        np.array([0.6, 0.3]),
        np.array([0.0, -np.inf]),
        np.array([False, False]),
    )
    assert not ring.converged
    assert "not positive definite" in ring.message and "try" in ring.message
