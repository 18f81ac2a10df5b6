"""The penalised least squares engine (hce.stats.pls) and its optimiser (hce.stats.theta_search).

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

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels
from scipy import optimize

from hce.stats import lmer, variance_components

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


@pytest.mark.slow
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
        g = variance_components(part, "score", ["item_id", "prompt_variant"])
    assert m.converged and m.messages == []
    assert g.fit.converged
    # at lme4's optimum or lower (lme4's bobyqa stops ~1e-6 above it on coherence)
    assert -2 * m.loglik <= criterion + 1e-6
    np.testing.assert_allclose(-2 * m.loglik, criterion, rtol=1e-10)
