"""REML for balanced crossed designs from the ANOVA decomposition (NumPy core, no pandas).

In a balanced design whose factors are all crossed (every combination of levels observed
equally often), with categorical fixed effects that respect marginality and random
intercepts only, the covariance matrix of the data is diagonal in the basis of the classical
ANOVA effect spaces. Each effect space ``S`` (a set of factors) has the eigenvalue

    lambda_S = sigma_e^2 + sum_{R random, R contains S} c_R sigma_R^2,

with ``c_R`` the number of observations per level of ``R``. Effect spaces sharing the same
random terms form a *stratum*. Fixed effects lie inside strata, so generalised least squares
equals ordinary least squares, and the REML log-likelihood is, up to a constant,

    l(theta) = -1/2 sum_k [ df_k log lambda_k + SS_k / lambda_k ],

with ``SS_k``/``df_k`` the residual sums of squares and degrees of freedom of stratum ``k``
(Patterson & Thompson 1971; Searle, Casella & McCulloch 1992, ch. 4 and 6). When there is
one stratum per variance parameter this is maximised at ``lambda_k = MS_k``: the REML
estimates are the ANOVA (expected-mean-squares) estimates whenever those are non-negative.
Otherwise the same likelihood is maximised over ``theta >= 0`` numerically (a few
parameters), which gives the boundary REML estimate.

References
----------
Patterson, H. D., & Thompson, R. (1971). Recovery of inter-block information when block
sizes are unequal. Biometrika, 58(3), 545-554.
Searle, S. R., Casella, G., & McCulloch, C. E. (1992). Variance Components. Wiley.

"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import optimize, stats

from hce.stats.mixed.component_intervals import profile_search
from hce.stats._blas import one_blas_thread

Subset = frozenset[int]


def effect(cells: np.ndarray, subset: Subset, n_factors: int) -> np.ndarray:
    """Projection of cell means onto the ANOVA effect space of ``subset``.

    ``cells`` has one axis per factor (then optional trailing axes carried along). The
    result keeps an axis of length 1 for each factor outside ``subset``, so it broadcasts
    back onto the cells.
    """
    outside = tuple(a for a in range(n_factors) if a not in subset)
    out = cells.mean(axis=outside, keepdims=True) if outside else cells
    for axis in sorted(subset):
        out = out - out.mean(axis=axis, keepdims=True)
    return out


@dataclass
class StrataFit:
    """REML or ML fit of a balanced design; variances in ``theta`` (random terms, then residual).

    ``lam`` holds each stratum's eigenvalue, ``key_of`` maps every effect subset to its
    stratum, ``design`` is the matrix with ``lam = design @ theta``. ``ms``/``df`` are the
    mean squares and weights of the informative strata: residual degrees of freedom for
    REML, all dimensions (fixed effects included) for ML. ``resid_df`` has every stratum's
    residual degrees of freedom.
    """

    theta: np.ndarray
    closed_form: bool
    boundary: bool
    keys: list[Subset]
    lam: np.ndarray
    key_of: dict[Subset, int]
    design: np.ndarray
    ms: np.ndarray
    df: np.ndarray
    informative: np.ndarray
    resid_df: np.ndarray
    effects: dict[Subset, np.ndarray]
    weights: dict[Subset, float]
    deviance_core: float
    converged: bool = True


def balanced_reml(
    y: np.ndarray, fixed: list[Subset], random: list[Subset], reml: bool = True
) -> StrataFit | None:
    """REML (or ML) variance components of a balanced crossed design.

    Parameters
    ----------
    y : ndarray
        Shape ``(L_1, ..., L_F, n_rep)``: the response by factor levels and replicate.
    fixed : list of frozenset of int
        Factor sets of the fixed-effect terms (``frozenset()`` is the intercept); must be
        closed under subsets.
    random : list of frozenset of int
        Factor sets of the random intercept terms.
    reml : bool, default True
        False for maximum likelihood: the strata are then weighted by their full
        dimension, ``-2 l = sum_k dim_k log lambda_k + SS_k / lambda_k`` (+ constant).

    Returns
    -------
    StrataFit or None
        None when the variance parameters are not identified by the strata (the caller then
        falls back to a general fitter).

    """
    cells = y.mean(axis=-1)
    within = float(np.sum((y - cells[..., None]) ** 2))
    return balanced_reml_cells(cells, within, y.shape[-1], fixed, random, reml=reml)


def balanced_reml_cells(
    cells: np.ndarray, within: float, n_rep: int, fixed: list[Subset], random: list[Subset], reml: bool = True
) -> StrataFit | None:
    """:func:`balanced_reml` from the cell means, the within-cell sum of squares and the
    replicates per cell: all the REML likelihood of a balanced design reads of the data.

    Parameters
    ----------
    cells : ndarray
        Shape ``(L_1, ..., L_F)``: the mean response of each cell.
    within : float
        Sum of squared deviations of the responses from their cell means.
    n_rep : int
        Responses per cell.
    fixed, random, reml
        As for :func:`balanced_reml`.

    Returns
    -------
    StrataFit or None
        As :func:`balanced_reml`.
    """
    n_factors = cells.ndim
    levels = cells.shape
    n = cells.size * n_rep
    fixed_set = set(fixed)
    keys: list[Subset] = []
    key_of: dict[Subset, int] = {}
    ss, df, dim, effects, weights = [], [], [], {}, {}

    def stratum(key: Subset) -> int:
        if key not in keys:
            keys.append(key)
            ss.append(0.0)
            df.append(0)
            dim.append(0)
        return keys.index(key)

    for size in range(n_factors + 1):
        for subset in map(frozenset, combinations(range(n_factors), size)):
            k = stratum(frozenset(j for j, r in enumerate(random) if subset <= r))
            key_of[subset] = k
            e = effect(cells, subset, n_factors)
            effects[subset] = e
            weights[subset] = n / e.size
            d = int(np.prod([levels[a] - 1 for a in subset]))
            dim[k] += d
            if subset not in fixed_set:
                ss[k] += weights[subset] * float(np.sum(e**2))
                df[k] += d
    k = stratum(frozenset())
    ss[k] += within
    df[k] += n - cells.size
    dim[k] += n - cells.size

    c = np.array([n / np.prod([levels[a] for a in r]) for r in random])
    design = np.array(
        [[c[j] if j in key else 0.0 for j in range(len(random))] + [1.0] for key in keys]
    )
    ss_a, df_a, dim_a = np.array(ss), np.array(df, dtype=float), np.array(dim, dtype=float)
    weight = df_a if reml else dim_a
    informative = weight > 0
    a_inf = design[informative]
    if np.linalg.matrix_rank(a_inf) < design.shape[1]:
        return None
    ms = ss_a[informative] / weight[informative]
    closed = a_inf.shape[0] == a_inf.shape[1]
    theta = np.linalg.solve(a_inf, ms) if closed else np.full(design.shape[1], -1.0)
    converged = True
    if not closed or np.any(theta < 0):
        closed = False
        theta, converged = _maximise(a_inf, ss_a[informative], weight[informative], ms)
    lam = design @ theta
    core = float(np.sum(dim_a * np.log(lam)) + np.sum(ss_a / lam))
    return StrataFit(
        theta=theta,
        closed_form=closed,
        boundary=bool(np.any(theta[:-1] <= 0)),
        keys=keys,
        lam=lam,
        key_of=key_of,
        design=design,
        ms=ms,
        df=weight[informative],
        informative=informative,
        resid_df=df_a,
        effects=effects,
        weights=weights,
        deviance_core=core,
        converged=converged,
    )


def _maximise(
    a: np.ndarray,
    ss: np.ndarray,
    df: np.ndarray,
    ms: np.ndarray,
    start: np.ndarray | None = None,
    fix: tuple[int, float] | None = None,
) -> tuple[np.ndarray, bool]:
    """Maximise the strata REML likelihood over theta >= 0 (residual variance > 0),
    optionally holding ``theta[fix[0]] = fix[1]`` (for profiling).
    """
    scale = float(np.max(ms))

    def objective(t: np.ndarray) -> tuple[float, np.ndarray]:
        lam = a @ t
        value = float(np.sum(df * np.log(lam) + ss / scale / lam))
        return value, a.T @ (df / lam - ss / scale / lam**2)

    if start is None:
        start = np.clip(np.linalg.lstsq(a, ms / scale, rcond=None)[0], 1e-3, None)
    else:
        start = np.maximum(start / scale, 1e-8)
    bounds = [(0.0, None)] * (a.shape[1] - 1) + [(1e-10, None)]
    if fix is not None:
        start[fix[0]] = fix[1] / scale
        bounds[fix[0]] = (fix[1] / scale, fix[1] / scale)
    # one BLAS thread: L-BFGS-B's LAPACK calls on a few variances cost 1 ms of CPU on one
    # thread and 50-80 ms with OpenBLAS's threads on a busy 2-core machine (issue 35)
    with one_blas_thread():
        res = optimize.minimize(
            objective,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000},
        )
    low = np.array([b[0] for b in bounds])
    fixed = np.zeros(len(low), dtype=bool)
    if fix is not None:
        fixed[fix[0]] = True
    return _newton_polish(objective, a, ss / scale, df, res.x, low, fixed) * scale, bool(res.success)


def _newton_polish(objective, a: np.ndarray, ss: np.ndarray, df: np.ndarray, t: np.ndarray, low: np.ndarray,
                   fixed: np.ndarray) -> np.ndarray:  # fmt: skip
    """Newton steps with the analytic Hessian from L-BFGS-B's optimum.

    L-BFGS-B stops on the objective's relative change (``ftol``), which along a variance
    with few levels leaves the optimum known to ~1e-8: two fits of one likelihood whose
    strata sums differ in the last bits (rows summed in another order) then differ there.
    Newton steps on the free variances reach the gradient's zero to rounding.
    """
    value, grad = objective(t)
    for _ in range(5):
        lam = a @ t
        hess = a.T @ ((-df / lam**2 + 2 * ss / lam**3)[:, None] * a)
        free = ~fixed & ~((t <= low) & (grad > 0))
        if not free.any():
            break
        step = np.zeros_like(t)
        try:
            step[free] = -np.linalg.solve(hess[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            break
        trial = np.maximum(t + step, low)
        new_value, new_grad = objective(trial)
        if not np.isfinite(new_value) or new_value > value + 1e-14 * abs(value):
            break
        if np.linalg.norm(new_grad[free]) >= np.linalg.norm(grad[free]):
            break
        t, value, grad = trial, new_value, new_grad
    return t


def strata_deviance(fit: StrataFit, theta: np.ndarray) -> float:
    """``sum_k df_k log lambda_k + SS_k / lambda_k`` over informative strata: -2 x REML
    log-likelihood up to a constant.
    """
    lam = fit.design[fit.informative] @ theta
    return float(np.sum(fit.df * np.log(lam) + fit.ms * fit.df / lam))


def profile_interval(fit: StrataFit, j: int, confidence: float) -> tuple[float, float]:
    """Profile-likelihood interval of variance ``theta[j]`` (as lme4's ``confint(profile)``).

    The bounds are where the REML deviance, minimised over the other variances, exceeds
    its minimum by the ``confidence`` quantile of chi-square(1); a variance whose profile
    stays below that at zero has lower bound 0, one whose profile flattens out below it has
    upper bound inf (:func:`~hce.stats.mixed.component_intervals.profile_search`).
    """
    a = fit.design[fit.informative]
    cutoff = strata_deviance(fit, fit.theta) + stats.chi2.ppf(confidence, 1)

    seen = [(float(fit.theta[j]), fit.theta)]  # (value, optimum) profiled so far

    def excess(value: float) -> float:
        # started from the optimum at the nearest value profiled so far, not the estimate:
        # the search steps outward and brentq closes in, so that start is a step away (issue 35)
        start = min(seen, key=lambda known: abs(known[0] - value))[1].copy()
        theta, _ = _maximise(a, fit.ms * fit.df, fit.df, fit.ms, start=start, fix=(j, value))
        seen.append((value, theta))
        return strata_deviance(fit, theta) - cutoff

    def bound(value: float) -> float:  # the others held: never below ``excess``, and cheap
        theta = fit.theta.copy()
        theta[j] = value
        return strata_deviance(fit, theta) - cutoff

    est = float(fit.theta[j])
    floor = 0.0 if j < len(fit.theta) - 1 else est * 1e-8
    # the component's own scale: the largest mean square over its coefficient
    scale = float(np.max(fit.ms)) / float(np.max(fit.design[:, j]))
    return profile_search(excess, est, scale, floor, bound)


def fixed_effects_parts(
    fit: StrataFit, x_cells: np.ndarray, fixed: list[Subset], n_factors: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """X'X and the per-stratum pieces ``X' Q_k X`` of the fixed-effects design.

    ``x_cells`` has the factor axes then one axis of columns. Returns ``(xtx, parts)`` with
    ``parts[k]`` the stratum-``k`` piece, so that ``X' V^-1 X = sum_k parts[k] / lam[k]``.
    """
    p = x_cells.shape[-1]
    parts = [np.zeros((p, p)) for _ in fit.keys]
    for subset in fixed:
        e = effect(x_cells, subset, n_factors).reshape(-1, p)
        parts[fit.key_of[subset]] += fit.weights[subset] * e.T @ e
    return sum(parts), parts
