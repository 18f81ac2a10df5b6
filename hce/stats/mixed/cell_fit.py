"""Random-intercept models fitted from their cell table: exact REML without the rows.

When every random term of ``y ~ 1 + (1 | a) + (1 | b) + (1 | a:b) + ...`` is constant within
a cell (a combination of the grouping factors), the data enter the REML likelihood only
through, per cell, the number of observations ``n_c`` and their mean, and through the
within-cell sum of squares ``W = sum_c sum_i (y_ci - ybar_c)^2``: with ``N`` the rows and
cell-level designs, the cross products of lme4's penalised least squares are weighted sums
over cells, ``Z'Z = Z_c' D Z_c``, ``Z'y = Z_c' D ybar``, ``y'y = ybar' D ybar + W`` (``D =
diag(n_c)``), and the degrees of freedom stay ``N - p``. So a table of a few million cells,
computed in whatever engine holds billions of rows, gives the very estimates ``lmer`` gives
on the rows (Searle, Casella & McCulloch 1992, sec. 6.2; Bates et al. 2015, eqs. 34-42):
balanced cells through :func:`~hce.stats.mixed.balanced.balanced_reml_cells`, two crossed
factors (items x conditions) through :class:`~hce.stats.mixed.crossed_cells.CrossedCells` (the
same deviance in O(cells)), others through :class:`~hce.stats.mixed.pls.PlsProblem` with cell
weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hce.errors import DataError
from hce.stats._blas import one_blas_thread
from hce.stats.mixed.balanced import StrataFit, balanced_reml_cells, fixed_effects_parts
from hce.stats.mixed.crossed_cells import CrossedCells
from hce.stats.mixed.formula import MixedFormula, check_identifiable, parse_formula
from hce.stats.mixed.lmer_fit import _varcorr_intercepts, announce
from hce.stats.mixed.pls import _DENSE_UP_TO, PlsProblem, RandomBlock, moment_start, pls_fit
from hce.stats.mixed.theta_search import minimise_theta


@dataclass
class CellFit:
    """A random-intercept model fitted from its cell table (see the module docstring).

    Attributes
    ----------
    formula : MixedFormula
        The model.
    n : int
        Observations (the sum of the cell counts).
    engine : str
        How the estimates were found.
    sigma2 : float
        Residual variance.
    converged, singular : bool
        As :class:`~hce.stats.mixed.lmer_result.LmerResult`'s.
    messages : list of str
        Warnings raised by the fit.
    loglik : float
        REML log-likelihood at the estimates, the rows' (``-2 * loglik`` is lme4's criterion).
    """

    formula: MixedFormula
    n: int
    engine: str
    sigma2: float
    converged: bool
    singular: bool
    messages: list[str]
    loglik: float
    _varcorr: pd.DataFrame
    _strata: StrataFit | None = None
    _problem: PlsProblem | CrossedCells | None = None  # its deviance(variances) and deviance_gradient

    def varcorr(self) -> pd.DataFrame:
        """Random-effect variances, as :meth:`LmerResult.varcorr` (``group``, ``var1``,
        ``var2``, ``vcov``, ``sdcor``)."""
        return self._varcorr.copy()


def fit_cells(cells: pd.DataFrame, formula: str) -> CellFit:
    """REML fit of a random-intercept model from its cell table.

    Parameters
    ----------
    cells : pandas.DataFrame
        One row per cell: the grouping columns of ``formula``, ``n`` (observations),
        ``mean`` (their mean) and ``ss`` (their sum of squared deviations from it).
    formula : str
        ``response ~ 1 + (1 | g) + (1 | g:h) + ...``: an intercept and random intercepts on
        the grouping columns (or their crossings) only.

    Returns
    -------
    CellFit

    Examples
    --------
    >>> cells = pd.DataFrame({"batch": list("ABCDEF"), "n": 5,
    ...                       "mean": [1505.0, 1528, 1564, 1498, 1600, 1470],
    ...                       "ss": [15900.0, 4430, 5770, 18880, 10000, 3850]})
    >>> fit = fit_cells(cells, "yield_ ~ 1 + (1 | batch)")
    >>> fit.varcorr()[["group", "vcov"]].round(2)    # lme4 on Dyestuff: 1764.0, 2451.3
          group     vcov
    0     batch  1764.05
    1  Residual  2451.25
    """
    parsed = parse_formula(formula)
    if parsed.fixed_formula.split("~")[1].strip() != "1" or not all(t.intercept_only for t in parsed.random):
        raise DataError(f"a cell table fits random intercepts and an intercept only; got {formula!r}")
    factors = list(parsed.grouping_factors)
    codes, shape = [], []
    for factor in factors:
        c, levels = pd.factorize(cells[factor], sort=True)
        codes.append(c)
        shape.append(len(levels))
    # one order whatever order the engine returned the cells in: every sum below then adds the
    # same numbers in the same order, so two engines' tables equal to rounding give fits equal
    # to rounding (shuffled, the rounding of sums of 400,000 cells differed by 1e-7 of a
    # 4-level variance's standard error)
    order = np.lexsort(codes[::-1])
    codes = [c[order] for c in codes]
    n_obs = cells["n"].to_numpy(dtype=float)[order]
    mean = cells["mean"].to_numpy(dtype=float)[order]
    within = float(np.sort(cells["ss"].to_numpy(dtype=float)).sum())
    term_codes = [_term_codes(codes, shape, [factors.index(g) for g in t.groups]) for t in parsed.random]
    check_identifiable(
        [(t.written or str(t), t.group, c, int(c.max()) + 1, 1) for t, c in zip(parsed.random, term_codes)],
        int(n_obs.sum()),
    )
    balanced = len(cells) == int(np.prod(shape)) and n_obs.min() == n_obs.max()
    if balanced:
        fit = _balanced(parsed, codes, shape, factors, mean, within, int(n_obs[0]))
        if fit is not None:
            return fit
    # large tables only: there Newton's path from the one-way start cost thousands of evaluations, and
    # penalised least squares 0.1 s an evaluation; a small (dense) one keeps the start and the deviance
    # the rows' lmer takes, so both stop at one point of a flat boundary optimum (tests/stats/test_engines.py)
    large = sum(int(c.max()) + 1 for c in term_codes) > _DENSE_UP_TO
    start = henderson_start(n_obs, mean, within, term_codes) if large else None
    roles = _crossed_roles(parsed, factors, shape) if large else None
    if roles is not None and CrossedCells.applies(codes[factors.index(roles[0])], codes[factors.index(roles[1])]):
        return _fit_crossed(parsed, roles, codes, factors, n_obs, mean, within, term_codes, start)
    blocks = [RandomBlock(c, np.ones((len(cells), 1))) for c in term_codes]
    fit = pls_fit(mean, np.ones((len(cells), 1)), blocks, weights=n_obs, within=within, start=start)
    variances = [float(cov[0, 0]) for cov in fit.covariances]
    messages = [] if fit.converged else [f"the profiled REML deviance did not converge: {fit.message}"]
    return _finish(parsed, int(n_obs.sum()), "penalised least squares from the cell table (lme4's profiled deviance)",
                   variances, fit.sigma2, messages, fit.loglik, problem=fit.problem)  # fmt: skip


def _crossed_roles(parsed: MixedFormula, factors: list[str], shape: list[int]) -> tuple[str, str] | None:
    """``(a, b)``, the factor of more levels and the other, when the terms are ``(1 | a) + (1 | b)``
    and perhaps ``(1 | a:b)``; None for any other model."""
    groups = [tuple(t.groups) for t in parsed.random]
    if len(factors) != 2 or len(set(groups)) != len(groups) or not all((f,) in groups for f in factors):
        return None
    if len(groups) == 3 and not any(len(g) == 2 for g in groups) or len(groups) > 3:
        return None
    return tuple(sorted(factors, key=lambda f: -shape[factors.index(f)]))  # type: ignore[return-value]


def _fit_crossed(parsed, roles, codes, factors, n_obs, mean, within, term_codes, start) -> CellFit:
    """The fit of two crossed factors by :class:`CrossedCells` (the search of :func:`pls_fit`)."""
    order = ["ab" if len(t.groups) == 2 else "a" if t.groups[0] == roles[0] else "b" for t in parsed.random]
    problem = CrossedCells(codes[factors.index(roles[0])], codes[factors.index(roles[1])], n_obs, mean, within, order)
    if start is None:
        start = moment_start(mean, np.ones((len(mean), 1)), term_codes, n_obs, within)
    with one_blas_thread():
        search = minimise_theta(problem.profiled_deviance, start, problem.lower, problem.scalar, problem.gradient)
    sigma2 = problem.sigma2(search.theta)
    messages = [] if search.converged else [f"the profiled REML deviance did not converge: {search.message}"]
    return _finish(parsed, int(n_obs.sum()), f"{problem.label} (REML)", list(search.theta**2 * sigma2),
                   sigma2, messages, -0.5 * search.deviance, problem=problem)  # fmt: skip


def henderson_start(n_obs: np.ndarray, mean: np.ndarray, within: float, term_codes: list[np.ndarray]) -> np.ndarray | None:
    """Relative SDs ``sqrt(v_k / sigma^2)`` from Henderson's Method I on the cell table, or None.

    For a random model with an intercept, the uncorrected sums of squares of the level
    totals of each term, ``T_j = sum_l Y_l^2 / n_l``, and ``T_y = y'y`` have expectations
    linear in the variances, ``E[T_j] = N mu^2 + sum_k v_k sum_l sum_m n_lm^2 / n_l + L_j
    sigma^2`` (``n_lm`` the observations in level ``l`` of term ``j`` and ``m`` of term ``k``,
    ``L_j`` the levels), ``E[T_0] = N mu^2 + sum_k v_k sum_m n_m^2 / N + sigma^2`` for the
    grand total; equating ``T_j - T_0`` and ``T_y - T_0`` to their expectations gives
    unbiased moment estimates (Henderson 1953; Searle, Casella & McCulloch 1992, sec. 5.3),
    the ANOVA ones in a balanced design. Every ``n_lm`` is a sum of cell counts, so the cell
    table suffices. Unlike the one-way start of :func:`~hce.stats.mixed.pls.moment_start`,
    each term's estimate accounts for the others (a 4-level condition variance is not
    inflated by the item:condition one), so Newton starts near the optimum of a 20M-row log.
    A negative estimate starts at 1% of the residual variance, inside the bound.
    """
    total = float(n_obs.sum())
    sums = n_obs * mean
    t0 = sums.sum() ** 2 / total
    margins = [np.bincount(c, weights=n_obs) for c in term_codes]
    rows, lhs = [], []
    for j, cj in enumerate(term_codes):
        coefficients = []
        for k, ck in enumerate(term_codes):
            if j == k:
                coefficients.append(total)
                continue
            joint, pair = np.unique(cj.astype(np.int64) * (int(ck.max()) + 1) + ck, return_inverse=True)
            counts = np.bincount(pair, weights=n_obs)
            coefficients.append(float(np.sum(counts**2 / margins[j][joint // (int(ck.max()) + 1)])))
        used = margins[j] > 0
        rows.append(coefficients + [float(used.sum())])
        lhs.append(float(np.sum(np.bincount(cj, weights=sums)[used] ** 2 / margins[j][used])))
    rows.append([total] * len(term_codes) + [total])
    lhs.append(float(np.sum(sums * mean)) + within)
    grand = [float(np.sum(m**2)) / total for m in margins] + [1.0]
    system = np.array(rows) - np.array(grand)
    try:
        estimates = np.linalg.solve(system, np.array(lhs) - t0)
    except np.linalg.LinAlgError:
        return None
    sigma2 = estimates[-1]
    if not (np.isfinite(estimates).all() and sigma2 > 0):
        return None
    return np.sqrt(np.maximum(estimates[:-1] / sigma2, 0.01))


def _term_codes(codes: list[np.ndarray], shape: list[int], axes: list[int]) -> np.ndarray:
    """Level code of each cell for a term over factors ``axes`` (a crossing: dense codes)."""
    if len(axes) == 1:
        return codes[axes[0]]
    joint = np.ravel_multi_index([codes[a] for a in axes], [shape[a] for a in axes])
    return pd.factorize(joint, sort=True)[0]


def _balanced(parsed, codes, shape, factors, mean, within, n_rep) -> CellFit | None:
    grid = np.empty(shape)
    grid[tuple(codes)] = mean
    random = [frozenset(factors.index(g) for g in t.groups) for t in parsed.random]
    strata = balanced_reml_cells(grid, within, n_rep, [frozenset()], random)
    if strata is None:
        return None
    if strata.closed_form:
        engine = "closed form from ANOVA mean squares (cell table)"
    else:
        engine = f"balanced-design REML likelihood, {'boundary' if strata.boundary else 'numerical'} (cell table)"
    messages = [] if strata.converged else ["optimiser for the boundary REML fit did not converge"]
    n = grid.size * n_rep
    # the intercept's information X'V^-1 X, as lmer's balanced path computes it (lmer_fit)
    _, parts = fixed_effects_parts(strata, np.ones((*shape, 1)), [frozenset()], len(shape))
    logdet = np.linalg.slogdet(sum(part / lam for part, lam in zip(parts, strata.lam)))[1]
    loglik = -0.5 * ((n - 1) * np.log(2 * np.pi) + strata.deviance_core + logdet)
    return _finish(parsed, n, engine, list(strata.theta[:-1]), float(strata.theta[-1]),
                   messages, float(loglik), strata=strata)  # fmt: skip


def _finish(parsed, n, engine, variances, sigma2, messages, loglik, *, strata=None, problem=None) -> CellFit:
    varcorr = _varcorr_intercepts(parsed.random, variances, sigma2)
    messages, singular, converged = announce(varcorr, sigma2, messages)
    return CellFit(parsed, n, engine, float(sigma2), converged, singular, messages, float(loglik), varcorr, strata, problem)
