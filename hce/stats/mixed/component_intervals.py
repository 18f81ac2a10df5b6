"""Standard errors and intervals for variance components, and for ratios of them (G, Phi).

NumPy core for :func:`hce.stats.variance_components`, whatever engine fitted the model:

* **Standard errors** from the observed information: the inverse Hessian of the REML
  deviance ``-2 l`` in the variances themselves (not profiled, not on a log scale),
  ``cov = 2 H^{-1}``, as SAS PROC MIXED's ``ASYCOV`` (Searle, Casella & McCulloch 1992,
  sec. 6.3). The Hessian is taken by central differences of the deviance's analytic gradient
  where the model has one (steps of 2%, 4% and 8% of each variance, Richardson-extrapolated to
  error O(h^6): two engines' tables give standard errors 1e-9 apart), else of the deviance
  itself (steps of 1% and 2%, extrapolated to O(h^4)): smaller steps drown in the rounding of
  a deviance of 1e5 over 50,000 rows, larger ones in curvature.
* **Satterthwaite intervals** for a variance ``v`` with ``df`` degrees of freedom:
  ``[df v / chi2_(1-alpha/2, df), df v / chi2_(alpha/2, df)]``; from a standard error,
  ``df = 2 (v / SE)^2`` (SAS PROC MIXED ``COVTEST CL``). In a balanced design with interior
  estimates the observed information is exactly that of the mean squares
  (``Var MS_k = 2 MS_k^2 / df_k``), so this is the ANOVA Satterthwaite interval.
* **Components at 0** have no standard error; their interval is ``[0, upper]`` with
  ``upper`` where the deviance, minimised over the other variances, exceeds its minimum by
  ``chi2_1(confidence)`` (:func:`profile_limits`): lme4's ``confint(profile)`` on the REML
  deviance (lme4 itself profiles the ML deviance even for a REML fit, lme4 issues #325 and
  #838). A limit the profile never reaches is 0 below, ``inf`` above (:func:`profile_search`).
* **Components with Satterthwaite df below 1** (a facet level seen once or twice, a
  component far smaller than its standard error) get the profile-likelihood interval too:
  there the scaled chi-square is no approximation to the sampling distribution (near df 0
  its limits overflow to inf and miss the estimate; :func:`satterthwaite_fails`). For G and
  Phi their pivot draws are clamped into that interval (:func:`pivot_draws`).
* **G and Phi** ``= s_p / (s_p + e)`` with ``e`` a weighted sum of components: percentiles
  over joint draws of the components from their Satterthwaite pivots (``v df / chi2_df``,
  whose quantiles are the components' own interval bounds), tied by a Gaussian copula with
  the asymptotic correlation: a generalized pivotal quantity in the spirit of Weerahandi
  (1993). A delta-method interval (normal on the logit scale) covered Phi in only 85% of
  150 simulated unbalanced item x 4-condition logs at a nominal 95%, because the variance
  of a facet with few levels is far from log-normal; these draws cover it at the nominal
  rate (the slow coverage test in ``tests/stats/test_component_intervals.py``).

References
----------
Satterthwaite, F. E. (1946). Biometrics Bulletin, 2(6), 110-114.
Searle, S. R., Casella, G., & McCulloch, C. E. (1992). Variance Components. Wiley.
Weerahandi, S. (1993). Generalized confidence intervals. JASA, 88(423), 899-905.
SAS Institute. SAS/STAT User's Guide, The MIXED Procedure: COVTEST, CL and ASYCOV options.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import interpolate, optimize, special, stats

from hce.stats._blas import one_blas_thread
from hce.stats._numdiff import central_differences

_STEP = 1e-2  # relative step of the numerical Hessian (see the module notes)
_GRADIENT_STEP = 2e-2  # the same from the analytic gradient (_hessian_from_gradient), with
_GRADIENT_LEVELS = 3  # steps 2%, 4% and 8% extrapolated
# past this many times its scale a variance's profile is in its asymptote (profile_search)
_FLAT_SPAN = 1e6
# the residual variance moves at most e^20 = 5e8-fold from its estimate in a profile: wider
# than any data allow, narrow enough that the deviance stays computable
_LOG_SPAN = 20.0


def reml_covariance(
    deviance: Callable[[np.ndarray], float],
    estimates: np.ndarray,
    free: np.ndarray,
    gradient: Callable[[np.ndarray], np.ndarray | None] | None = None,
) -> np.ndarray | None:
    """Asymptotic covariance ``2 H^{-1}`` of the variances flagged ``free`` (others held fixed).

    ``deviance`` is ``-2 l`` as a function of all variances; ``gradient``, if given, its
    analytic gradient (None where it has none). Rows and columns of fixed variances are 0.
    Returns None when the Hessian is not positive definite (not a maximum).
    """
    estimates = np.asarray(estimates, dtype=float)
    k = len(estimates)
    cov = np.zeros((k, k))
    if not free.any():
        return cov
    x = estimates[free]

    def sub(values: np.ndarray) -> float:
        full = estimates.copy()
        full[free] = values
        return deviance(full)

    hess = None if gradient is None else _hessian_from_gradient(gradient, estimates, free)
    if hess is None:
        fx = sub(x)
        _, near = central_differences(sub, x, _STEP * x, fx)
        _, far = central_differences(sub, x, 2 * _STEP * x, fx)
        hess = (4 * near - far) / 3
    try:
        chol = np.linalg.cholesky(hess)
    except np.linalg.LinAlgError:
        return None
    inv = np.linalg.inv(chol)
    cov[np.ix_(free, free)] = 2 * inv.T @ inv
    return cov


def _hessian_from_gradient(gradient, estimates: np.ndarray, free: np.ndarray) -> np.ndarray | None:
    """The Hessian of the deviance in the ``free`` variances from central differences of its
    analytic gradient, steps 2%, 4% and 8%, Richardson-extrapolated (error O(h^6)); None where
    the gradient is missing at a step.

    Why not second differences of the deviance: they divide its rounding by ``h^2``, and at a
    20M-row cell table (a deviance of 4e7) that noise reached the standard errors' 8th digit,
    which the chi-square quantile of an upper limit at df near 1 amplifies: two engines' tables
    equal to 1e-15 gave upper limits 5e-8 apart (issue 43). The gradient's rounding is divided
    by ``h`` once. Its rounding still differs between two engines' tables (another cell order,
    one BLAS thread or several): with steps of 0.1% and 0.2% their standard errors were 1.2e-7
    apart at 100,000 x 4 cells, with 2% to 8% and a third Richardson level 1e-9, the
    extrapolation's error below 1e-9 of the Hessian.
    """
    columns = np.flatnonzero(free)
    estimates = np.asarray(estimates, dtype=float)

    def differences(step: float) -> np.ndarray | None:
        out = np.empty((len(columns), len(columns)))
        for i, j in enumerate(columns):
            h = step * estimates[j]
            sides = []
            for sign in (1, -1):
                at = estimates.copy()
                at[j] += sign * h
                g = gradient(at)
                if g is None:
                    return None
                sides.append(g[columns])
            out[:, i] = (sides[0] - sides[1]) / (2 * h)
        return out

    table = []
    for k in range(_GRADIENT_LEVELS):  # steps h, 2h, 4h: Richardson's table to error O(h^6)
        table.append(differences(_GRADIENT_STEP * 2**k))
        if table[-1] is None or not np.all(np.isfinite(table[-1])):
            return None
    for order in range(1, _GRADIENT_LEVELS):
        factor = 4**order
        table = [(factor * fine - coarse) / (factor - 1) for fine, coarse in zip(table[:-1], table[1:])]
    hess = table[0]
    return (hess + hess.T) / 2


def satterthwaite_interval(
    estimate: np.ndarray, df: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled chi-square interval ``df v / chi2_(1 - alpha/2, df) .. df v / chi2_(alpha/2, df)``."""
    alpha = 1 - confidence
    with np.errstate(invalid="ignore", divide="ignore"):
        low = df * estimate / stats.chi2.ppf(1 - alpha / 2, df)
        high = df * estimate / stats.chi2.ppf(alpha / 2, df)
    return low, high


def satterthwaite_fails(df: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Where a Satterthwaite interval is not used: df below 1 (or NaN), or a limit not finite.

    Satterthwaite's scaled chi-square matches two moments of a variance estimate; below 1 df
    its density is infinite at 0 and the interval is set by a tail the estimate does not
    have: at 95% the upper limit is over 1,000 times the estimate (1e120 times at df 0.03),
    below df 0.01 the lower limit exceeds the estimate and the upper one overflows to inf.
    Such a component (a facet level seen once or twice, an estimate far below its standard
    error) gets the profile-likelihood interval instead, as lme4's ``confint`` gives it.
    """
    return ~(np.asarray(df) >= 1) | ~np.isfinite(low) | ~np.isfinite(high)


def pivot_draws(
    estimates: np.ndarray,
    cov: np.ndarray,
    n_draws: int,
    rng: np.random.Generator,
    limits: np.ndarray | None = None,
) -> np.ndarray:
    """Joint draws of the log variances from their Satterthwaite pivots.

    Variance ``j`` is drawn as ``v_j df_j / W_j`` with ``W_j ~ chi2(df_j)``, ``df_j = 2 (v_j /
    SE_j)^2``: its quantiles are the bounds of its Satterthwaite interval. The ``W_j`` are
    joined by a Gaussian copula with the correlation of ``cov``: ``W_j = F_j^-1(Phi(Z_j))``
    with ``Z`` correlated normal scores (standard normals times the Cholesky factor), so each
    draw moves smoothly with the estimates (two engines' cell tables give the same limits to
    rounding). Variances with zero
    variance in ``cov`` (held at a boundary) stay at their estimate. Where ``df_j < 1`` the
    pivot reaches far past anything the data allow (1e120 times the estimate at df 0.03), so
    with ``limits`` (``(k, 2)``: each variance's reported interval, for those the
    profile-likelihood one, :func:`satterthwaite_fails`) such draws are clamped into it: the
    pivot keeps its shape near the estimate, the profile likelihood bounds its range, and a
    ratio's percentile reaches the value the ratio takes at the component's bound. Logs,
    shape ``(n_draws, k)``, because with ``df_j`` small the lower quantiles of ``W_j``
    underflow: ``W_j`` is kept at or above the smallest positive double.
    """
    estimates = np.asarray(estimates, dtype=float)
    free = np.diag(cov) > 0
    with np.errstate(divide="ignore"):
        draws = np.tile(np.log(estimates), (n_draws, 1))
    if free.any():
        se = np.sqrt(np.diag(cov)[free])
        df = 2 * (estimates[free] / se) ** 2
        corr = cov[np.ix_(free, free)] / np.outer(se, se)
        # Correlated normal scores from one factor of corr that moves continuously with it (the
        # Cholesky factor; eigenvectors may flip sign), and each chi-square variate the quantile
        # of its score's probability: every draw is a smooth function of the components, so two
        # engines' tables give G and Phi limits as close as their components, not one spacing of
        # the 20,000 order statistics apart (where the copula by ranks and rng.chisquare jumped:
        # 5.6e-6 on two engines' tables of 100,000 x 4 cells, issue 43).
        z = rng.standard_normal((n_draws, int(free.sum()))) @ _normal_factor(corr).T
        log_w = np.column_stack([_log_chi2_quantile(z[:, j], df[j]) for j in range(len(df))])
        draws[:, free] = np.log(estimates[free] * df) - log_w
        if limits is not None:
            clamp = np.flatnonzero(free)[df < 1]
            with np.errstate(divide="ignore"):
                bounds = np.log(np.asarray(limits, dtype=float)[clamp])
            draws[:, clamp] = np.clip(draws[:, clamp], bounds[:, 0], bounds[:, 1])
    return draws


#: Normal scores at which the chi-square quantiles are computed for :func:`pivot_draws`; a draw's
#: log quantile is the cubic spline through them (measured within 1e-10 of ``chi2.ppf`` at df
#: 1, 3e-10 at df 0.3; 1/10 of the time of ``chi2.ppf`` at each draw); a score beyond +-9
#: (probability 1e-19) takes the end value.
_SCORES = np.linspace(-9.0, 9.0, 1201)


def _normal_factor(corr: np.ndarray) -> np.ndarray:
    """``L`` with ``L L' = corr``: the Cholesky factor, or for a singular ``corr`` the
    symmetric square root (a matrix function of ``corr``, continuous in it)."""
    try:
        return np.linalg.cholesky(corr)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(corr)
        return (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T


def _log_chi2_quantile(z: np.ndarray, df: float) -> np.ndarray:
    """``log chi2.ppf(norm.cdf(z), df)``, at or above the log of the smallest positive double,
    a cubic spline through its values at :data:`_SCORES` (the upper half from the survival
    functions, which keep their digits there)."""
    lower = _SCORES <= 0
    with np.errstate(divide="ignore"):
        quantile = np.concatenate([stats.chi2.ppf(stats.norm.cdf(_SCORES[lower]), df),
                                   stats.chi2.isf(stats.norm.sf(_SCORES[~lower]), df)])  # fmt: skip
        table = np.log(np.maximum(quantile, np.finfo(float).tiny))
    return interpolate.CubicSpline(_SCORES, table)(np.clip(z, _SCORES[0], _SCORES[-1]))


def ratio_interval(
    log_draws: np.ndarray,
    object_index: int,
    error_weights: np.ndarray,
    confidence: float,
) -> tuple[float, float, str | None]:
    """Percentile interval of ``v_p / (v_p + error_weights @ v)`` over draws of ``log v``.

    Returns ``(low, high, why)``; ``why`` says why the bounds are NaN (the object's or the
    error variance held at 0, so the ratio is fixed at 0 or 1), else None.
    """
    log_universe = log_draws[:, object_index]
    with np.errstate(divide="ignore"):
        log_error = special.logsumexp(log_draws + np.log(error_weights), axis=1)
    if np.all(np.isneginf(log_universe)):
        return np.nan, np.nan, "the object's variance is 0"
    if np.all(np.isneginf(log_error)):
        return np.nan, np.nan, "the error variance is 0"
    alpha = 1 - confidence
    ratio = special.expit(log_universe - log_error)
    low, high = np.quantile(ratio, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high), None


def profile_search(
    excess: Callable[[float], float],
    est: float,
    scale: float,
    floor: float = 0.0,
    bound: Callable[[float], float] | None = None,
) -> tuple[float, float]:
    """Where a profile's ``excess`` over its cutoff crosses 0 below and above ``est``.

    ``excess(value)`` is the deviance minimised over the other variances with this one at
    ``value``, less the cutoff: negative at the estimate. The lower limit is ``floor`` when
    the profile there is still within the cutoff (0 for a component estimated at 0). The
    upper search widens by 4 from the component's ``scale``; past ``_FLAT_SPAN`` times it the
    deviance grows like ``c log v`` with ``c`` a whole number (the rank the component
    adds to the fixed effects and the other components), so a slope below 1/2 per log unit
    means ``c = 0``: the likelihood cannot tell this variance from infinity (a facet whose
    levels the fixed effects absorb) and the upper limit is ``inf``, not a search forever.

    ``bound``, if given, is a cheap function never below ``excess`` (the deviance with the
    other variances held where they are, not minimised): its crossings lie inside the
    profile's, so the search for each limit starts from the bound's crossing and steps
    outwards (the other variances of a large study barely move along the profile, so the
    crossings are close), and brentq polishes in a narrow bracket. Same limits, a fraction
    of the minimisations.
    """
    # to 1e-10, not the 1e-6 an interval needs to be read: two evaluations of one likelihood (a log's
    # rows in pandas, its cell table in an engine) must give the same limits to 1e-8 (issue 43);
    # brentq converges superlinearly, so this costs two or three more evaluations per limit
    tol = {"xtol": 1e-12 * scale, "rtol": 1e-10}
    excess = _remembered(excess)
    if bound is not None:
        inner = profile_search(bound, est, scale, floor)
        if np.isfinite(inner[1]):
            return _outward(excess, est, inner[0], floor, -1, tol), _outward(excess, est, inner[1], np.inf, 1, tol)
    high = max(2 * est, scale)
    while (above := excess(high)) <= 0:
        if high > _FLAT_SPAN * scale and (excess(4 * high) - above) / np.log(4) < 0.5:
            high = np.inf
            break
        high *= 4
    else:
        high = optimize.brentq(excess, est, high, **tol)
    low = floor if est <= floor or excess(floor) <= 0 else optimize.brentq(excess, floor, est, **tol)
    return float(low), float(high)


def _remembered(excess: Callable[[float], float]) -> Callable[[float], float]:
    """``excess`` evaluated once per value. A profile is minimised from the nearest point profiled
    so far, so a second evaluation at one value may differ in its last digits: where the other
    variances sit at 0 the profile equals the bound, and its crossing (excess ~1e-14) changed
    sign between the search and brentq's own evaluation of the bracket, which brentq refused
    ("f(a) and f(b) must have different signs") and the report lost the component's intervals."""
    values: dict[float, float] = {}

    def once(value: float) -> float:
        if value not in values:
            values[value] = excess(value)
        return values[value]

    return once


def _outward(excess: Callable[[float], float], est: float, start: float, end: float, sign: int, tol: dict) -> float:
    """The crossing of ``excess`` at or beyond ``start`` (away from ``est``, towards ``end``),
    where ``excess(start) <= 0``: steps of twice the last, from 1% of ``start - est``."""
    if start == end or excess(start) > 0:  # at the floor, or rounding put the bound past the profile
        return start if start == end else float(optimize.brentq(excess, min(est, start), max(est, start), **tol))
    inside, step = start, max(abs(start - est), abs(start)) * 0.01
    while True:
        outside = inside + sign * step
        if sign < 0 and outside <= end:
            return end if excess(end) <= 0 else float(optimize.brentq(excess, end, inside, **tol))
        if excess(outside) > 0:
            return float(optimize.brentq(excess, *sorted((inside, outside)), **tol))
        inside, step = outside, 2 * step
        if sign > 0 and step > _FLAT_SPAN * abs(start):  # the profile flattened out: no upper limit
            return np.inf


def profile_limits(
    deviance: Callable[[np.ndarray], float],
    estimates: np.ndarray,
    j: int,
    confidence: float,
    gradient: Callable[[np.ndarray], np.ndarray | None] | None = None,
) -> tuple[float, float]:
    """Profile-likelihood interval of variance ``j`` (any but the residual, the last).

    The bounds are where ``deviance``, minimised over the other variances, exceeds its
    minimum by the ``confidence`` quantile of chi-square(1), as lme4's ``confint(profile)``
    (which profiles the ML deviance; ``deviance`` may be either). :func:`profile_search`
    finds them: the lower limit is 0 when the profile at 0 stays below the cutoff, the
    upper one ``inf`` when the profile flattens out below it.

    The inner minimisation runs on the data's scale: the other components' variances over
    the residual estimate, bounded below by 0 (on the SD scale 0 is a stationary point, so
    a search started there stays there), and the log of the residual variance over its
    estimate, bounded to ``+-_LOG_SPAN``; a point where the deviance cannot be computed
    counts as infinitely bad. L-BFGS-B does the work, each search starting where the
    previous one ended; where it does not report convergence, Nelder-Mead finishes from its
    best point (6 of 899 searches over 80 random designs of
    ``tests/stats/test_mixed_agreement.py``). Forward-difference gradients (``2-point``)
    reach the same limits as central ones (to 5e-11 relative over 6 random item x rater
    designs) with 45% fewer deviance evaluations. Near the optimum a deviance of a few tens to
    1e5 has rounding noise that swamps finite-difference gradients: unbounded, on the SD
    scale, L-BFGS-B fed that noise as curvature stepped the residual SD to exp(-956) (a
    near-flat 7-item x 3-rater facet). Nelder-Mead alone needs no gradient but took three
    times as long on a 26,000-row G study. With ``gradient`` (the deviance's analytic
    gradient in the variances, None where it has none) L-BFGS-B takes it instead of forward
    differences and is run to the gradient's precision: two engines' cell tables then give
    limits equal to 1e-10, where the differences left each inner minimum 1e-5 of the
    deviance above the true one (a 20M-row log: issue 43). A profile point is never worse
    than the other variances held at their estimates (that point is evaluated too), so the
    profile stays below the held bound :func:`profile_search` starts from.
    """
    estimates = np.asarray(estimates, dtype=float)
    others = np.flatnonzero(np.arange(len(estimates)) != j)
    cutoff = deviance(estimates) + stats.chi2.ppf(confidence, 1)
    scale = estimates[-1]  # the residual variance: the scale of every component
    state = {"x": np.r_[estimates[others[:-1]] / scale, 0.0]}
    n_free = len(others) - 1
    bounds = optimize.Bounds(
        np.r_[np.zeros(n_free), -_LOG_SPAN], np.r_[np.full(n_free, np.inf), _LOG_SPAN]
    )
    tol = {"xatol": 1e-7, "fatol": 1e-10 * max(1.0, abs(cutoff))}

    def objective(x: np.ndarray, value: float) -> float:
        full = np.empty_like(estimates)
        full[others] = np.r_[x[:-1], np.exp(x[-1])] * scale
        full[j] = value
        try:
            dev = deviance(full)
        except np.linalg.LinAlgError:  # not positive definite in floating point
            return np.inf
        return dev if np.isfinite(dev) else np.inf

    def jac(x: np.ndarray, value: float) -> np.ndarray:
        full = np.empty_like(estimates)
        full[others] = np.r_[x[:-1], np.exp(x[-1])] * scale
        full[j] = value
        try:
            g = gradient(full)
        except np.linalg.LinAlgError:
            g = None
        if g is None or not np.all(np.isfinite(g[others])):
            return optimize.approx_fprime(x, objective, 1e-8 * np.maximum(np.abs(x), 1.0), value)
        return g[others] * np.r_[np.full(n_free, scale), full[-1]]

    held = np.r_[estimates[others[:-1]] / scale, 0.0]
    search = (
        {"jac": "2-point", "options": {"ftol": 1e-10, "gtol": 1e-7, "maxiter": 2000}}
        if gradient is None
        else {"jac": jac, "options": {"ftol": 1e-15, "gtol": 1e-9, "maxiter": 2000}}
    )

    def excess(value: float) -> float:
        with np.errstate(invalid="ignore", over="ignore"):  # differences next to an inf
            best = optimize.minimize(objective, state["x"], args=(value,), method="L-BFGS-B", bounds=bounds, **search)
        # ftol is relative: 1e-10 of a deviance of 1e5 (50,000 rows) is 1e-5, a hundredth of
        # the 1e-3 to which a limit's excess is checked; 1e-12 cost 25% more evaluations
        if not (best.success and np.isfinite(best.fun)):
            start = best.x if np.isfinite(best.fun) else state["x"]
            best = optimize.minimize(
                objective, start, args=(value,), method="Nelder-Mead", bounds=bounds,
                options={**tol, "maxfev": 4000, "adaptive": True},
            )  # fmt: skip
        state["x"] = best.x
        return min(best.fun, objective(held, value)) - cutoff

    def bound(value: float) -> float:  # the others held at their estimates: never below excess
        return objective(held, value) - cutoff

    with one_blas_thread():  # a thousand small factorisations (see one_blas_thread)
        return profile_search(excess, max(float(estimates[j]), 0.0), scale, bound=bound)
