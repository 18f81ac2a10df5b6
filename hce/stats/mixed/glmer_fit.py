"""``glmer``: generalised linear mixed models with lme4 syntax (0/1 verdicts, proportions, counts).

The fit follows lme4's ``glmer`` (``R/lmer.R``, ``optimizeGlmer``): a first stage minimises
the nAGQ = 0 deviance over ``theta`` alone, the fixed effects inside PIRLS; a second stage
minimises the Laplace (nAGQ = 1) or adaptive Gauss-Hermite deviance over ``theta`` and
``beta`` together, PIRLS finding the conditional modes at each point
(:mod:`hce.stats.mixed.pirls`). Both searches are the projected Newton method of
:mod:`hce.stats.mixed.theta_search`, on exact (PIRLS converged to rounding) deviances, so
they reach the optimum lme4's derivative-free optimisers approach. Convergence and the
covariance of the fixed effects then come from lme4's own finite-difference derivatives
(``deriv12``, step 1e-4) at the optimum, as ``checkConv`` and ``vcov.merMod`` use them.

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48.
"""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import optimize

from hce._checks import check_choice
from hce._warnings import warn
from hce.errors import DataError
from hce.stats._validate import statistic
from hce.stats.mixed.convergence import check_max_iter
from hce.stats.mixed.formula import Design, build_design, parse_formula, require_random
from hce.stats.mixed.glmer_result import GlmerResult
from hce.stats.mixed.lmer_result import _SINGULAR_TOL, ConvergenceWarning, SingularFitWarning
from hce.stats.mixed.pirls import LINKS, Family, Glmm, PirlsFailure, gauss_hermite
from hce.stats.mixed.pls import RandomBlock
from hce.stats._blas import one_blas_thread
from hce.stats.mixed.theta_search import GRAD_TOL, minimise_theta

_CBIND = re.compile(r"^\s*cbind\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")
_DELTA = 1e-4  # lme4's deriv12 step
_HESS_TOL = 1e-6  # lme4's check.conv.hess tolerance
_DERIVS_NOBS_MAX, _DERIVS_NPAR_MAX = 1e5, 20  # lme4's check.conv.nobsmax / nparmax


@statistic(formula="formula", varying=("formula",))
def glmer(
    formula: str,
    data: pd.DataFrame,
    *,
    family: str = "binomial",
    link: str | None = None,
    nAGQ: int = 1,  # noqa: N803 - lme4's argument name
    weights: str | None = None,
    max_iter: int | None = None,
) -> GlmerResult:
    """Fit a generalised linear mixed model written in lme4 syntax, as R's ``lme4::glmer``.

    Parameters
    ----------
    formula : str
        lme4 formula, e.g. ``"verdict ~ condition + (1 | item_id)"``; random terms as for
        :func:`lmer`. For a binomial count, ``"cbind(successes, failures) ~ ..."``.
    data : pandas.DataFrame
        Long format, one row per observation; rows missing a formula value are dropped with
        a warning.
    family : {"binomial", "poisson"}, default "binomial"
        Binomial: a 0/1 or boolean response (or two text levels: the first in sorted
        order is 0, as R codes a factor), a proportion with ``weights`` trials, or
        ``cbind``; Poisson: non-negative integer counts.
    link : str, optional
        ``"logit"`` (default), ``"probit"`` or ``"cloglog"`` for the binomial; ``"log"`` for
        the Poisson.
    nAGQ : int, default 1
        1: the Laplace approximation; 2-25: adaptive Gauss-Hermite quadrature with that
        many points per level (one scalar random term only, as lme4); 0: lme4's faster fit
        that keeps the fixed effects inside PIRLS.
    weights : str, optional
        Column of prior weights (binomial trials when the response is a proportion).
    max_iter : int, optional
        Cap on the iterations of each of the two searches (as lme4's ``maxfun``); a fit
        stopped by it is not converged and shows estimates only. Default None: the
        searches' own limits.

    Returns
    -------
    GlmerResult
        ``.fixef()`` (Wald z), ``.varcorr()``, ``.ranef()``, ``.vcov()``, ``.summary()``;
        ``loglik``, ``deviance``, ``aic``, ``bic``, ``converged``, ``singular``, ``messages``.

    Raises
    ------
    DataError
        A response that is not 0/1 (binomial) or a count (Poisson), naming the row and
        value; complete or quasi-complete separation (some combination of fixed effects
        predicts the response perfectly, so its estimate is infinite), naming the terms;
        ``nAGQ > 1`` with more than one random term or a random slope.

    Warns
    -----
    ConvergenceWarning
        lme4's ``checkConv`` failed at the optimum (the message names the check).
    SingularFitWarning
        A random-effect SD below 1e-4 of the linear predictor's scale. Both are kept in
        ``messages`` and printed by ``summary()``.

    Notes
    -----
    With ``u ~ N(0, I)``, ``b = Lambda(theta) u`` and ``eta = X beta + Z b``, PIRLS finds the
    mode ``u~`` of ``sum d_i + |u|^2`` (``d_i`` the deviance residuals) and the Laplace
    approximation of ``-2 log L(theta, beta)`` is ``log|L|^2 + |u~|^2 - 2 sum log p(y_i |
    u~)``, ``L L' = Lambda' Z' W Z Lambda + I`` at the mode's IRLS weights ``W``. With one
    scalar term the integral over each level's ``u_j`` is instead computed by adaptive
    Gauss-Hermite quadrature (Pinheiro & Bates 1995): nodes ``u~_j + z_k / L_jj`` around
    the mode, scaled by its curvature; nAGQ = 1 is the Laplace value. Fixed-effect
    standard errors are those of lme4's ``vcov``: twice the inverse of the
    finite-difference Hessian of the deviance in ``(theta, beta)`` (its ``beta`` block),
    falling back to the PIRLS cross products ``(X'WX - X'WZ Lambda A^-1 Lambda' Z'WX)^-1``
    when that Hessian is not positive definite or, as lme4, from 100,000 rows. Tests are
    Wald z tests, as lme4's summary. ``converged`` follows lme4's ``checkConv``.

    References
    ----------
    Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear
    mixed-effects models using lme4. Journal of Statistical Software, 67(1), 1-48.
    Pinheiro, J. C., & Bates, D. M. (1995). Approximations to the log-likelihood function
    in the nonlinear mixed-effects model. Journal of Computational and Graphical
    Statistics, 4(1), 12-35.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> d = pd.DataFrame({"item": np.repeat(np.arange(40), 6), "condition": np.tile(["a", "b"], 120)})
    >>> eta = -0.2 + 0.8 * (d["condition"] == "b") + rng.normal(0, 1, 40)[d["item"]]
    >>> d["verdict"] = (rng.random(240) < 1 / (1 + np.exp(-eta))).astype(int)
    >>> m = glmer("verdict ~ condition + (1 | item)", d)
    >>> m.fixef()[["term", "estimate", "std_error"]].round(3)   # lme4: -0.477 (0.283), 1.049 (0.306)
                 term  estimate  std_error
    0     (Intercept)    -0.478      0.285
    1  condition[T.b]     1.051      0.310
    >>> round(m.loglik, 3), m.converged
    (-151.982, True)
    """
    check_choice("family", family, list(LINKS))
    max_iter = check_max_iter(max_iter)
    link = LINKS[family][0] if link is None else link
    check_choice("link", link, list(LINKS[family]))
    if not isinstance(nAGQ, (int, np.integer)) or not 0 <= nAGQ <= 25:
        raise DataError(f"nAGQ must be an integer from 0 to 25 (lme4's range here), got {nAGQ!r}")
    formula, data, weights = _cbind(formula, data, weights)
    parsed = parse_formula(formula)
    require_random(parsed)
    if parsed.response in data.columns:
        data = data.assign(**{parsed.response: _binary_codes(data[parsed.response], family)})
    if weights is not None and weights not in data.columns:
        raise DataError(f"weights column {weights!r} not in data; columns: {list(data.columns)}")
    design = build_design(parsed, data, residual=False)
    wt = (
        np.ones(len(design.y))
        if weights is None
        else design.data[weights].to_numpy(dtype=float)
    )
    fam = Family(family, link)
    y = _check_response(design, fam, wt, weights)
    if nAGQ > 1 and (len(design.groupings) != 1 or design.formula.random[0].slopes):
        raise DataError(
            f"nAGQ = {nAGQ} needs a single scalar random term such as (1 | item); the formula "
            f"has {[str(t) for t in design.formula.random]} (lme4 refuses it too); use nAGQ=1"
        )
    if family == "binomial":
        _check_separation(design, y)
    groupings = list(design.groupings.values())
    terms = [RandomBlock(g.codes, g.Z) for g in groupings]
    model = Glmm(y, design.X, terms, fam, wt, np.zeros(len(y)))
    with one_blas_thread():
        return _fit(model, design, nAGQ, fam, max_iter)


def _fit(model: Glmm, design: Design, nAGQ: int, fam: Family, max_iter: int | None) -> GlmerResult:  # noqa: N803
    k = model.n_theta
    lower, scalar = model.system.lower, model.system.scalar
    theta0 = np.where(lower == 0, 1.0, 0.0)  # lme4's start
    stage1 = minimise_theta(_guarded(model.laplace_joint), theta0, lower, scalar, max_iter=max_iter)
    stopped = [stage1.message] if stage1.stopped else []
    mode = model.mode(stage1.theta)
    par, deviance = np.concatenate([stage1.theta, mode.beta]), stage1.deviance
    if nAGQ > 0:
        if nAGQ == 1:
            objective = model.laplace
        else:
            nodes, weights = gauss_hermite(nAGQ)
            def objective(p):
                return model.agq(p, nodes, weights)
        stage2 = minimise_theta(
            _guarded(objective),
            par,
            np.concatenate([lower, np.full(len(par) - k, -np.inf)]),
            np.concatenate([scalar, np.zeros(len(par) - k, dtype=bool)]),
            max_iter=max_iter,
        )
        par, deviance = stage2.theta, stage2.deviance
        stopped += [stage2.message] if stage2.stopped else []
    theta, beta = par[:k], par[k:]
    singular = bool(np.any(theta[lower == 0] < _SINGULAR_TOL))
    messages = list(stopped)
    cov_beta, how = None, "RX"
    if singular:
        messages.append("boundary (singular) fit: see help('isSingular')")
    derivs_due = (
        nAGQ > 0 and model.x.shape[0] < _DERIVS_NOBS_MAX and len(par) < _DERIVS_NPAR_MAX
    )
    if derivs_due:
        grad, hess = _deriv12(_guarded(objective), par)
        if not singular:
            messages += _check_conv(grad, hess, k)
        cov_beta = _hessian_cov(hess, k)
        if cov_beta is not None:
            how = "Hessian"
    if cov_beta is None:
        cov_beta = model.unscaled_cov(theta, beta)
    mode = model.mode(theta, beta)
    for m in messages:
        warn(m, SingularFitWarning if m.startswith("boundary") else ConvergenceWarning)
    varcorr, ranef = _random_parts(design, model, theta, mode.u)
    pearson = (model.y - mode.mu) / np.sqrt(fam.variance(mode.mu) / model.wt)
    return GlmerResult(
        formula=design.formula,
        family=fam.family,
        link=fam.link,
        nAGQ=nAGQ,
        n=len(model.y),
        ngroups={name: len(g.levels) for name, g in design.groupings.items()},
        loglik=-0.5 * deviance,
        theta=theta,
        converged=not [m for m in messages if not m.startswith("boundary")],
        singular=singular,
        messages=messages,
        fitted=mode.mu,
        vcov_method=how,
        design=design,
        _beta=beta,
        _cov_beta=cov_beta,
        _varcorr=varcorr,
        _ranef=ranef,
        _pearson=pearson,
    )


def _guarded(deviance):
    """The deviance, infinite where PIRLS finds no mode (the search steps back)."""

    def value(par: np.ndarray) -> float:
        try:
            return deviance(np.asarray(par, dtype=float))
        except PirlsFailure:
            return np.inf

    return value


def _deriv12(fun, x: np.ndarray):
    """lme4's ``deriv12`` as ``optwrap`` calls it (lme4 1.1-31): central differences of step
    1e-4, with no bounds, so a variance at 0 is stepped to ``theta = -1e-4``. The deviance is
    even in a scalar term's ``theta``, so the Hessian there is the curvature at the boundary
    and ``vcov`` keeps the Hessian's SEs (a one-sided step of 0 at the bound would divide by
    0 and fall back to ``RX``, ignoring the other variances' uncertainty)."""
    nx, fx = len(x), fun(x)
    g, hess = np.empty(nx), np.empty((nx, nx))

    def at(*moves):
        point = x.copy()
        for i, sign in moves:
            point[i] += sign * _DELTA
        return fun(point)

    for j in range(nx):
        fadd, fsub = at((j, 1)), at((j, -1))
        hess[j, j] = (fadd - 2 * fx + fsub) / _DELTA**2
        g[j] = (fadd - fsub) / (2 * _DELTA)
        for i in range(j):
            hess[i, j] = hess[j, i] = (
                at((i, 1), (j, 1)) - at((i, 1), (j, -1)) - at((i, -1), (j, 1)) + at((i, -1), (j, -1))
            ) / (4 * _DELTA**2)
    return g, hess


def _check_conv(grad: np.ndarray, hess: np.ndarray, n_theta: int) -> list[str]:
    """lme4's ``checkConv`` on a non-singular fit: scaled gradient, then the Hessians."""
    advice = "; try centring and scaling covariates or a simpler random-effects structure"
    if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
        return ["the gradient or Hessian of the deviance is not finite at the optimum" + advice]
    try:
        upper = np.linalg.cholesky(hess).T  # R's chol(): H = R'R
        scaled = np.linalg.solve(upper, grad)
    except np.linalg.LinAlgError:
        return ["unable to evaluate the scaled gradient (the Hessian is not positive definite)" + advice]
    worst = np.minimum(np.abs(scaled), np.abs(grad))
    out = []
    if worst.max() > GRAD_TOL:
        out.append(
            f"Model failed to converge with max|grad| = {worst.max():.6g} (tol = {GRAD_TOL}, "
            f"component {int(worst.argmax()) + 1})" + advice
        )
    for block, kind in ((hess[n_theta:, n_theta:], "fixed-effect "), (hess, "")):
        values = np.linalg.eigvalsh((block + block.T) / 2)
        if np.sum(values < -_HESS_TOL):
            out.append(
                f"Model failed to converge: degenerate {kind}Hessian with "
                f"{int(np.sum(values < -_HESS_TOL))} negative eigenvalues" + advice
            )
        elif np.any(np.abs(values) < _HESS_TOL):
            out.append(f"{kind}Hessian is numerically singular: parameters are not uniquely determined")
        elif values.max() * _HESS_TOL > 1:
            out.append("Model is nearly unidentifiable: very large eigenvalue; rescale variables?")
        elif values.min() / values.max() < _HESS_TOL:
            out.append("Model is nearly unidentifiable: large eigenvalue ratio; rescale variables?")
    return out


def _hessian_cov(hess: np.ndarray, n_theta: int) -> np.ndarray | None:
    """``vcov.merMod``'s Hessian-based covariance: the ``beta`` block of ``2 H^-1``, or None
    when it is not finite or not positive definite (lme4 then uses ``RX``)."""
    if not np.all(np.isfinite(hess)):
        return None  # a theta at its bound: lme4's one-sided step there is 0
    try:
        inv = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        return None
    v = inv[n_theta:, n_theta:]
    v = v + v.T
    if not np.all(np.isfinite(v)) or np.linalg.eigvalsh(v).min() <= 0:
        return None
    return v


def _random_parts(design: Design, model: Glmm, theta: np.ndarray, u: np.ndarray):
    """``VarCorr`` rows (no residual) and conditional modes, named as lme4 names them."""
    b = model.system.b(u)
    rows, ranef, start, offset = [], [], 0, 0
    for (group, g), term in zip(design.groupings.items(), model.terms):
        pattern = term.theta_pattern()
        factor = np.zeros((term.q, term.q))
        for k, (i, j) in enumerate(pattern):
            factor[i, j] = theta[start + k]
        start += len(pattern)
        cov = factor @ factor.T
        levels = len(g.levels)
        modes = b[offset : offset + levels * term.q].reshape(levels, term.q)
        offset += levels * term.q
        for k, name in enumerate(g.z_names):
            rows.append((group, name, None, cov[k, k], np.sqrt(cov[k, k])))
            ranef.append(pd.DataFrame({"group": group, "level": g.levels, "term": name, "estimate": modes[:, k]}))
        for i, j in combinations(range(term.q), 2):
            denom = np.sqrt(cov[i, i] * cov[j, j])
            rows.append((group, g.z_names[i], g.z_names[j], cov[i, j], cov[i, j] / denom if denom > 0 else np.nan))
    varcorr = pd.DataFrame(rows, columns=["group", "var1", "var2", "vcov", "sdcor"])
    ranef = pd.concat(ranef, ignore_index=True)
    ranef["level"] = ranef["level"].astype(object)
    return varcorr, ranef


def _cbind(formula: str, data: pd.DataFrame, weights: str | None):
    """``cbind(successes, failures) ~ ...`` as R's binomial reads it: the proportion of
    successes, weighted by the trials."""
    lhs, _, rhs = formula.partition("~")
    match = _CBIND.match(lhs)
    if match is None:
        return formula, data, weights
    if weights is not None:
        raise DataError("give either cbind(successes, failures) or weights, not both")
    succ, fail = match.groups()
    missing = [c for c in (succ, fail) if c not in data.columns]
    if missing:
        raise DataError(f"cbind columns {missing} not in data; columns: {list(data.columns)}")
    trials = data[succ] + data[fail]
    prop = (data[succ] / trials.where(trials > 0)).fillna(0.0)
    name, trials_name = f"{succ}_proportion", f"{succ}_trials"
    data = data.assign(**{name: prop, trials_name: trials})
    return f"{name} ~{rhs}", data, trials_name


def _binary_codes(column: pd.Series, family: str) -> pd.Series:
    """A boolean or two-level text response as 0/1, as R codes a factor response: its first
    level (sorted, or a categorical's own order) is the failure, the other the success."""
    if pd.api.types.is_bool_dtype(column):
        return column.astype(float)
    if family != "binomial" or pd.api.types.is_numeric_dtype(column):
        return column
    levels = (
        list(column.cat.categories)
        if isinstance(column.dtype, pd.CategoricalDtype)
        else sorted(column.dropna().unique(), key=str)
    )
    if len(levels) != 2:
        raise DataError(
            f"response {column.name!r} must be 0/1, True/False or two levels for "
            f"family='binomial'; it has {len(levels)}: {levels[:6]}"
        )
    return column.map({levels[0]: 0.0, levels[1]: 1.0})


def _check_response(design: Design, fam: Family, wt: np.ndarray, weights: str | None) -> np.ndarray:
    """The response as a float array, or a DataError naming the first bad row and value."""
    y = design.y.astype(float)
    name = design.formula.response
    if np.any(wt < 0) or not np.all(np.isfinite(wt)):
        row = design.data.index[int(np.argmax((wt < 0) | ~np.isfinite(wt)))]
        raise DataError(f"weights column {weights!r} must be finite and non-negative (row {row!r})")
    if fam.family == "binomial":
        bad = (y < 0) | (y > 1) if weights is not None else (y != 0) & (y != 1)
        valid = "proportions in [0, 1] with weights" if weights is not None else "0/1 or True/False"
    else:
        bad = (y < 0) | (y != np.round(y))
        valid = "non-negative integer counts"
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(
            f"response {name!r} must be {valid} for family={fam.family!r}; row "
            f"{design.data.index[i]!r} has {float(design.y[i])!r} ({int(bad.sum())} such rows)"
            + ("; for a score, dichotomise it first or use lmer" if fam.family == "binomial" else "")
        )
    if np.all(y == y[0]) and (fam.family == "poisson" or y[0] in (0.0, 1.0)):
        raise DataError(f"response {name!r} is constant ({float(y[0])!r} in every row): nothing to model")
    return y


def _check_separation(design: Design, y: np.ndarray) -> None:
    """Refuse complete or quasi-complete separation (Konis 2007's linear program).

    A direction ``b`` with ``x_i'b >= 0`` on every success and ``<= 0`` on every failure,
    strict somewhere, makes the likelihood grow without bound along ``b``: the maximum
    likelihood estimate is infinite (lme4 reports a huge estimate and SE instead).
    """
    signs = np.concatenate([design.X[y > 0], -design.X[y < 1]])
    a = np.unique(signs, axis=0)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-300)
    a = a / scale
    res = optimize.linprog(
        -a.sum(axis=0), A_ub=-a, b_ub=np.zeros(len(a)), bounds=[(-1, 1)] * a.shape[1],
        method="highs",
    )  # fmt: skip
    if res.status != 0 or -res.fun <= 1e-7 * len(a):
        return
    direction = res.x
    terms = [n for n, v in zip(design.x_names, direction) if abs(v) > 1e-6]
    raise DataError(
        f"complete separation: {' and '.join(terms)} predict {design.formula.response!r} "
        "perfectly (some combination of these fixed effects is 1 only on one outcome), so "
        "their maximum likelihood estimates are infinite; merge or drop the level, or use a "
        "penalised or Bayesian model (hce.stats.bayes_binary)"
    )
