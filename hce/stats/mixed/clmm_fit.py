"""``clmm``: cumulative link mixed models for ordinal scores, as R's ``ordinal::clmm``.

The response is read as ordered levels (:func:`response_levels`), the fixed and random parts
are built by the lme4 formula layer (:mod:`hce.stats.mixed.formula`), and the Laplace (or
adaptive Gauss-Hermite) likelihood of :mod:`hce.stats.mixed.clmm_laplace` is maximised over
the thresholds, the fixed effects and the standard deviations of the random intercepts.
The fit is returned as a :class:`~hce.stats.mixed.clmm_result.ClmmResult`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from scipy import linalg, optimize

from hce._checks import check_choice
from hce._warnings import warn
from hce.errors import DataError, FormulaError
from hce.stats._numdiff import central_differences
from hce.stats._validate import statistic
from hce.stats.mixed.clmm_laplace import LINKS, Laplace, Rows
from hce.stats.mixed.clmm_result import ClmmResult
from hce.stats.mixed.formula import build_design, parse_formula, require_random
from hce.stats.mixed.convergence import check_max_iter
from hce.stats.mixed.lmer_result import ConvergenceWarning, SingularFitWarning
from hce.stats._blas import one_blas_thread

LinkName = Literal["logit", "probit", "cloglog"]
_BOUNDARY = 1e-3  # ordinal's paratBoundary2: a standard deviation below this is on the boundary
_HESS_STEP = 1e-4  # ordinal's deriv12 step
_GRAD_STEP = 1e-6
_VARIANCE_FLOOR = 1e-12  # where the slope of a variance at 0 is taken
_MAX_GRAD = 1e-3  # max |gradient| above which the fit is reported as not converged
_MAX_AGQ = 25


@statistic(formula="formula", varying=("formula",))
def clmm(
    formula: str,
    data: pd.DataFrame,
    *,
    link: LinkName = "logit",
    nAGQ: int = 1,  # noqa: N803 - ordinal's argument name
    max_iter: int | None = None,
) -> ClmmResult:
    r"""Fit a cumulative link mixed model (ordinal regression with random intercepts).

    Parameters
    ----------
    formula : str
        lme4-style formula with random intercepts, e.g. ``"score ~ condition + (1 | item)"``
        or ``"score ~ condition + (1 | item) + (1 | rater)"``. The response is a plain column.
    data : pandas.DataFrame
        Long format, one row per score. The response holds integer (or other numeric)
        scores, whose distinct values are the ordered levels, or an ordered pandas
        ``Categorical``. Levels with no rows are dropped, as R's ``model.frame`` drops
        them (a 1-5 scale with no 3 has thresholds ``1|2``, ``2|4``, ``4|5``). Rows missing
        a formula value are dropped with a warning.
    link : {"logit", "probit", "cloglog"}, default "logit"
        The cumulative link ``F``.
    nAGQ : int, default 1
        1: the Laplace approximation (ordinal's default); 2 to 25: adaptive Gauss-Hermite
        quadrature with that many nodes, for a model with one random term.
    max_iter : int, optional
        Cap on the optimiser's iterations, all its runs together (as lme4's ``maxfun``); a
        fit stopped by it is reported as not converged. Default None: up to 2,000 per run.

    Returns
    -------
    ClmmResult
        ``.summary()`` (ordinal's), ``.fixef()``, ``.thresholds()``, ``.varcorr()``,
        ``.ranef()``; attributes ``loglik``, ``aic``, ``n``, ``ngroups``, ``converged``,
        ``max_grad``, ``cond_hessian``, ``messages``.

    Raises
    ------
    DataError
        The response has fewer than two observed levels, is not ordinal (text, booleans or
        an unordered categorical), the fixed effects are collinear, or a random term cannot
        be identified.
    FormulaError
        A random slope, a response that is not a column, or a fixed part without the
        intercept (the thresholds take its place).

    Warns
    -----
    ConvergenceWarning
        The optimiser stopped with a gradient above 1e-3 (after restarts), a Hessian that is
        not positive definite, or at ``max_iter``; the result then shows estimates only
        (``unconverged="show"`` on its methods gives the tests). Also in ``messages``.
    SingularFitWarning
        A standard deviation below 1e-3 (ordinal's boundary): lme4's "boundary (singular)
        fit"; the standard errors are conditional on that variance being 0.

    Notes
    -----
    For an observation ``i`` with response level ``j`` of ``J``, fixed-effect row
    ``x_i`` and random intercepts ``b`` (one per level of each grouping factor,
    ``b ~ N(0, tau_k^2)``)

    .. math:: P(Y_i \le j \mid b) = F(\theta_j - x_i'\beta - z_i'b),
              \quad j = 1, \dots, J - 1,

    with ``F`` the logistic, normal or complementary log-log distribution, so a positive
    ``beta`` moves scores up. Thresholds are named ``"1|2"``, ``"2|3"``, ... after the
    levels they separate. The marginal likelihood integrates ``b`` out; with ``b =
    Lambda u``, ``u ~ N(0, I)``, the Laplace approximation of minus its logarithm is

    .. math:: g(\hat u) + \tfrac12 \log |I + \Lambda Z' W Z \Lambda|,
              \quad g(u) = -\sum_i \log P(y_i \mid u) + \tfrac12 u'u,

    at the mode ``u_hat`` of ``g`` (Newton's method, per group for one term and by sparse
    block elimination for crossed terms), ``W`` the second derivatives of ``-log P`` in the
    linear predictor. It is maximised over ``theta``, ``beta`` and ``tau^2 >= 0`` with
    L-BFGS-B (ordinal uses ``nlminb``). Standard errors come from the inverse of the
    Hessian of the approximate deviance by central differences with step 1e-4 (as ordinal's
    ``deriv12``; of the exact gradient, derived through the modes, for one term) in ordinal's
    parameters: ``log tau`` for a single term, ``tau`` for several,
    a ``tau`` below 1e-3 being left out as on the boundary. Tests and intervals are Wald z.
    ``nAGQ > 1`` replaces the Laplace step by adaptive Gauss-Hermite quadrature centred at
    each group's mode (Pinheiro & Bates 1995).

    Differences from ordinal: a grouping factor needs 2 levels (ordinal stops below 3),
    collinear fixed effects are refused (ordinal drops them), random slopes are not
    supported, and terms are kept in formula order (ordinal sorts them by their number of
    levels).

    References
    ----------
    Christensen, R. H. B. (2019). ordinal: Regression Models for Ordinal Data. R package
    version 2019.12-10 (here checked against 2022.11-16), functions ``clmm``, ``getNLA``,
    ``update.u``. https://CRAN.R-project.org/package=ordinal

    Agresti, A. (2010). Analysis of Ordinal Categorical Data (2nd ed.), ch. 10. Wiley.

    Pinheiro, J. C., & Bates, D. M. (1995). Approximations to the log-likelihood function
    in the nonlinear mixed-effects model. J. Comput. Graph. Stat., 4(1), 12-35.

    Examples
    --------
    >>> import hce.stats as hs
    >>> rng = np.random.default_rng(1)
    >>> d = pd.DataFrame({"item": np.repeat(np.arange(30), 6), "condition": np.tile(["a", "b"], 90)})
    >>> latent = rng.normal(0, 1, 30)[d["item"]] + 0.8 * (d["condition"] == "b") + rng.logistic(size=180)
    >>> d["score"] = np.digitize(latent, [-1.5, -0.5, 0.5, 1.5]) + 1
    >>> m = hs.clmm("score ~ condition + (1 | item)", d)
    >>> m.thresholds()["term"].tolist()
    ['1|2', '2|3', '3|4', '4|5']
    >>> m.fixef()[["term", "estimate", "std_error"]].round(3)
                 term  estimate  std_error
    0  condition[T.b]     1.168      0.282
    >>> round(m.loglik, 2)
    -271.94

    In R, ``ordinal::clmm(factor(score) ~ condition + (1 | item), data = d)`` on these data
    (R 4.2.2, ordinal 2022.11-16) prints ``conditionb 1.1684 0.2822`` and
    ``logLik -271.94``.

    """
    check_choice("link", link, list(LINKS))
    if not isinstance(nAGQ, (int, np.integer)) or not 1 <= nAGQ <= _MAX_AGQ:
        raise DataError(f"nAGQ={nAGQ!r} must be an integer from 1 (Laplace) to {_MAX_AGQ}")
    parsed = parse_formula(formula)
    if parsed.response not in data.columns:
        raise FormulaError(
            f"response {parsed.response!r} must be a column of data (one of {list(data.columns)})"
        )
    require_random(parsed)
    slopes = [t.written or str(t) for t in parsed.random if not t.intercept_only]
    if slopes:
        raise FormulaError(
            f"term {slopes[0]!r}: clmm supports random intercepts (1 | g) only; write each "
            "grouping factor as its own (1 | g) term"
        )
    if nAGQ > 1 and len(parsed.random) > 1:
        raise DataError(
            f"nAGQ={nAGQ}: quadrature needs a single random term, the formula has "
            f"{len(parsed.random)}; use nAGQ=1 (Laplace), as ordinal requires"
        )
    levels, codes = response_levels(data[parsed.response], parsed.response)
    design = build_design(parsed, data.assign(**{parsed.response: codes}), residual=False)
    y = design.y.astype(np.int64)
    present = np.unique(y)
    if len(present) < 2:
        raise DataError(
            f"response {parsed.response!r} has one observed level ({levels[present[0]]!r}) in "
            f"the {len(y)} rows used; an ordinal model needs at least two"
        )
    y_levels = [levels[k] for k in present]
    y = np.searchsorted(present, y)
    X, x_names = _fixed_without_intercept(design.X, design.x_names)
    rows = Rows(y, len(present), X, [g.codes for g in design.groupings.values()],
                [len(g.levels) for g in design.groupings.values()], LINKS[link])  # fmt: skip
    fit = _optimise(rows, nAGQ, check_max_iter(max_iter))
    n_fixed = rows.n_par - len(rows.codes)
    at_zero = [g for g, tau in zip(design.groupings, fit["par"][n_fixed:]) if tau < _BOUNDARY]
    if at_zero:  # as lme4 names it; ordinal itself says nothing and prints NaN SEs
        fit["messages"].append(
            f"boundary (singular) fit: the standard deviation of {', '.join(at_zero)} is "
            f"estimated at 0 (below {_BOUNDARY:g}); the standard errors are conditional on it "
            "(the term is held at 0, as ordinal's Hessian leaves it out)"
        )
    for message in fit["messages"]:
        warn(message, SingularFitWarning if message.startswith("boundary") else ConvergenceWarning)
    return ClmmResult._from_fit(
        formula=parsed, design=design, rows=rows, y_levels=y_levels, x_names=x_names,
        n_agq=nAGQ, **fit,
    )  # fmt: skip


def response_levels(values: pd.Series, name: str) -> tuple[list[str], pd.Series]:
    """The ordered levels of an ordinal response and each row's level index (NaN: missing).

    Numeric scores: their sorted distinct values, labelled as R labels ``factor(x)``
    (``"1"``, ``"2.5"``). An ordered categorical: its categories. Anything else is refused.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        if not values.cat.ordered:
            raise DataError(
                f"response {name!r} is an unordered categorical; make the order explicit with "
                f"data[{name!r}].cat.as_ordered() or pd.Categorical(..., categories=[...], "
                "ordered=True), or use numeric scores"
            )
        cats = values.cat.categories
        return [str(c) for c in cats], values.cat.codes.where(values.notna()).astype(float)
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        raise DataError(
            f"response {name!r} holds {values.dtype} values; clmm needs ordinal scores: numbers "
            "(their order is the scale's) or an ordered pandas Categorical"
        )
    finite = values.dropna()
    distinct = np.unique(finite.to_numpy(dtype=float))
    labels = [f"{v:g}" if v != int(v) else str(int(v)) for v in distinct]
    codes = pd.Series(np.searchsorted(distinct, values.to_numpy(dtype=float)), index=values.index)
    return labels, codes.where(values.notna()).astype(float)


def _fixed_without_intercept(X: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Drop the intercept column (the thresholds carry it) and refuse collinear columns."""
    if "(Intercept)" not in names:
        raise FormulaError(
            "clmm's thresholds play the part of the intercept: remove '0 +' or '- 1' from the "
            "fixed part"
        )
    rank = np.linalg.matrix_rank(X) if X.shape[1] else 0
    if rank < X.shape[1]:
        raise DataError(
            f"fixed effects {names} are collinear (rank {rank} of {X.shape[1]} columns), so "
            "their effects are not identified; drop or merge the aliased terms"
        )
    keep = [i for i, n in enumerate(names) if n != "(Intercept)"]
    return X[:, keep], [names[i] for i in keep]


def _start(rows: Rows) -> np.ndarray:
    """Thresholds at the link's quantiles of the cumulative proportions, no effects, tau 1."""
    cumulative = np.cumsum(np.bincount(rows.y, minlength=rows.n_levels))[:-1] / len(rows.y)
    return np.concatenate(
        [rows.link.ppf(cumulative), np.zeros(rows.X.shape[1]), np.ones(len(rows.codes))]
    )


def _ordered(free: np.ndarray, n_theta: int, n_tau: int, floor: float = 0.0) -> np.ndarray:
    """Model parameters from the optimiser's: the first threshold, the logarithms of the
    gaps (so no step crosses two thresholds), the fixed effects and the variances ``tau^2``.

    Variances, not standard deviations: the likelihood is even in ``tau``, so ``tau = 0`` is
    always a stationary point, where a bounded search that reaches it stops even when the
    likelihood rises away from it; in ``tau^2`` the slope at 0 is half the curvature in
    ``tau`` and says which way to go. ``floor`` bounds the variance below where a derivative
    in it is taken (the slope at 0 is a limit).
    """
    theta = np.cumsum(np.r_[free[:1], np.exp(free[1:n_theta])])
    tau = np.sqrt(np.maximum(free[len(free) - n_tau :], floor))
    return np.r_[theta, free[n_theta : len(free) - n_tau], tau]


def _free(par: np.ndarray, n_theta: int, n_tau: int) -> np.ndarray:
    tau = par[len(par) - n_tau :]
    return np.r_[par[:1], np.log(np.diff(par[:n_theta])), par[n_theta : len(par) - n_tau], tau**2]


_LINK_VARIANCE = {"logit": np.pi**2 / 3, "probit": 1.0, "cloglog": np.pi**2 / 6}
_RESTART_VARIANCES = (1.0, 4.0, 9.0, 16.0)


class _NonFinite(Exception):
    """A gradient with NaN or inf: L-BFGS-B would step to NaN, so the run stops instead."""


class _Budget:
    """L-BFGS-B runs sharing one cap on iterations (``max_iter``, as lme4's ``maxfun``).

    Each run returns the lowest finite point it evaluated when its own end is worse or not
    finite (a gradient that overflows sends L-BFGS-B to NaN), so a restart always starts
    from, and compares with, a real point.
    """

    def __init__(self, max_iter: int | None):
        self.max_iter, self.left, self.evaluations = max_iter, max_iter or 0, 0
        self.spent = False

    def minimize(self, fun, x0, jac, bounds) -> optimize.OptimizeResult:
        cap = 2000 if self.max_iter is None else max(self.left, 1)
        best = {"fun": np.inf, "x": np.asarray(x0, dtype=float).copy(), "calls": 0}

        def tracked(x):
            value = fun(x)
            best["calls"] += 1
            if np.isfinite(value) and value < best["fun"]:
                best.update(fun=float(value), x=np.array(x, dtype=float))
            return value

        def checked(x):
            g = jac(x)
            if not np.all(np.isfinite(g)):
                raise _NonFinite
            return g

        try:
            result = optimize.minimize(
                tracked, x0, jac=checked, method="L-BFGS-B", bounds=bounds,
                options={"maxiter": cap, "ftol": 1e-15, "gtol": 1e-9},
            )  # fmt: skip
        except _NonFinite:
            result = optimize.OptimizeResult(
                x=best["x"], fun=best["fun"], nit=best["calls"], nfev=best["calls"],
                success=False, message="a non-finite gradient stopped the line search",
            )  # fmt: skip
        if not (np.all(np.isfinite(result.x)) and np.isfinite(result.fun)) or best["fun"] < result.fun:
            result.x, result.fun, result.success = best["x"], best["fun"], False
        self.evaluations += result.nfev
        if self.max_iter is not None:
            self.left -= result.nit
            self.spent = self.spent or (result.nit >= cap and not result.success) or self.left <= 0
        return result


def _restarts(reached: np.ndarray, fixed: np.ndarray, n_theta: int, n_tau: int, link: str):
    """Starts after a failed gradient check: the point reached, then the fixed-only fit
    scaled for a random-intercept variance ``tau^2``: a marginal (fixed-only) coefficient is
    about the conditional one over ``sqrt(1 + tau^2 / var(F))`` (Zeger, Liang & Albert 1988),
    ``var(F)`` the link distribution's variance."""
    yield reached
    natural = _ordered(np.r_[fixed, np.zeros(n_tau)], n_theta, n_tau)
    for tau2 in _RESTART_VARIANCES:
        scaled = natural.copy()
        scaled[: len(fixed)] *= np.sqrt(1 + tau2 / _LINK_VARIANCE[link])
        scaled[len(fixed) :] = np.sqrt(tau2)
        yield _free(scaled, n_theta, n_tau)


def _stationary(result: optimize.OptimizeResult, grad: np.ndarray, n_fixed: int) -> bool:
    """The gradient check in the optimiser's parameters: small, except a variance at 0
    whose likelihood falls into the interior (the KKT condition at the bound)."""
    at_zero = np.zeros(len(grad), bool)
    at_zero[n_fixed:] = result.x[n_fixed:] <= 0
    free = np.where(at_zero, np.minimum(grad, 0.0), grad)
    return bool(np.all(np.isfinite(grad)) and np.max(np.abs(free)) <= _MAX_GRAD)


def _optimise(rows: Rows, n_agq: int, max_iter: int | None = None) -> dict:
    """Maximise the approximate likelihood; Hessian, gradient and modes at the optimum."""
    objective = Laplace(rows, n_agq)
    n_tau = len(rows.codes)
    n_fixed = rows.n_par - n_tau
    n_theta = rows.n_levels - 1

    def in_free(free: np.ndarray) -> float:
        return objective(_ordered(free, n_theta, n_tau))

    def gradient(free: np.ndarray) -> np.ndarray:
        if n_tau == 1 and n_agq == 1:  # exact, through the modes
            natural_par = _ordered(free, n_theta, n_tau, floor=_VARIANCE_FLOOR)
            natural = objective.gradient(natural_par)
            theta_part = np.cumsum(natural[:n_theta][::-1])[::-1]  # d/d theta_1 and each gap
            theta_part[1:] *= np.exp(free[1:n_theta])
            natural[-1] /= 2 * natural_par[-1]  # d/d tau^2
            return np.r_[theta_part, natural[n_theta:]]
        out = np.empty_like(free)
        base = None
        for i in range(len(free)):
            h = _GRAD_STEP * max(1.0, abs(free[i]))
            up, down = free.copy(), free.copy()
            up[i] += h
            if i >= n_fixed and free[i] < h:  # a variance near 0: one-sided
                base = in_free(free) if base is None else base
                out[i] = (in_free(up) - base) / h
                continue
            down[i] -= h
            out[i] = (in_free(up) - in_free(down)) / (2 * h)
        return out

    # gaps between thresholds from e^-30 to e^6 (400 on the latent scale) keep every step
    # finite; an optimum outside would give a level no chance or all of it
    bounds = [(None, None)] + [(-30.0, 6.0)] * (n_theta - 1) + [(None, None)] * rows.X.shape[1]
    full_bounds = bounds + [(0.0, None)] * n_tau
    budget = _Budget(max_iter)
    free = _free(_start(rows), n_theta, n_tau)
    with one_blas_thread():  # L-BFGS-B's BLAS calls on tiny vectors: threads only contend
        # ordinal's start: the model without random effects (clm), then the standard deviations
        fixed_only = budget.minimize(
            lambda f: in_free(np.r_[f, np.zeros(n_tau)]), free[:n_fixed],
            lambda f: gradient(np.r_[f, np.zeros(n_tau)])[:n_fixed], bounds,
        )  # fmt: skip
        result = budget.minimize(in_free, np.r_[fixed_only.x, np.ones(n_tau)], gradient, full_bounds)
        # a final check of the gradient; where it fails (a line search lost in a region of
        # huge curvature, as with item variances ~7 on the logit scale), restart: from the
        # point reached with a fresh quasi-Newton memory, then from the fixed-only fit scaled
        # up for larger variances, keeping the lowest objective
        for start in _restarts(result.x, fixed_only.x, n_theta, n_tau, rows.link.name):
            if _stationary(result, gradient(result.x), n_fixed) or budget.spent:
                break
            trial = budget.minimize(in_free, start, gradient, full_bounds)
            if trial.fun < result.fun:
                result = trial
    par = _ordered(result.x, n_theta, n_tau)
    # ordinal's parameters for the Hessian: log tau (one term) or tau, boundary ones left out
    interior = par[n_fixed:] >= _BOUNDARY
    keep = np.r_[np.ones(n_fixed, bool), interior]
    log_tau = n_tau == 1

    def in_r_scale(sub: np.ndarray) -> float:
        full = par.copy()
        full[keep] = sub
        if log_tau and interior[0]:
            full[-1] = np.exp(sub[-1])
        return objective(full)

    at = par[keep].copy()
    if log_tau and interior[0]:
        at[-1] = np.log(at[-1])
    if n_tau == 1 and n_agq == 1:  # differences of the exact gradient: 2k evaluations, not 2k^2
        def gradient_r(sub: np.ndarray) -> np.ndarray:
            full = par.copy()
            full[keep] = sub
            if interior[0]:
                full[-1] = np.exp(sub[-1])
            natural = objective.gradient(full)[keep]
            if interior[0]:
                natural[-1] *= full[-1]  # d/d log tau
            return natural

        grad = gradient_r(at)
        steps = np.eye(len(at)) * _HESS_STEP
        hess = np.array([gradient_r(at + h) - gradient_r(at - h) for h in steps]) / (2 * _HESS_STEP)
        hess = (hess + hess.T) / 2
    else:
        grad, hess = central_differences(in_r_scale, at, np.full(len(at), _HESS_STEP))
    value = objective(par)  # leaves the modes at the optimum
    return {
        "par": par, "value": value, "gradient": grad, "hessian": hess,
        "u": objective.u.copy(), "cond_var": objective.conditional_variances(par[n_fixed:]),
        "n_eval": budget.evaluations, "messages": _converged(result, grad, hess, budget),
    }  # fmt: skip


def _converged(
    result: optimize.OptimizeResult, grad: np.ndarray, hess: np.ndarray, budget: _Budget
) -> list[str]:
    """ordinal's judgement of a fit: messages when the gradient is large or the Hessian is
    not positive definite (empty list: converged), or when ``max_iter`` stopped the search."""
    messages = []
    if budget.spent:
        messages.append(
            f"the optimiser stopped at max_iter={budget.max_iter} iterations before converging"
        )
    if np.max(np.abs(grad)) > _MAX_GRAD:
        messages.append(
            f"max|gradient| = {np.max(np.abs(grad)):.2g} > {_MAX_GRAD:g} at the optimum "
            f"(optimiser: {result.message}); estimates may be unreliable"
        )
    try:
        linalg.cholesky(hess)
    except (linalg.LinAlgError, ValueError):  # ValueError: a Hessian that is not finite
        messages.append(
            "the Hessian is not positive definite: the model is not identifiable at the "
            "optimum; standard errors are not defined"
        )
    return messages
