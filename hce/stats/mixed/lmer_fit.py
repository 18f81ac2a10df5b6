"""``lmer``: linear mixed models with lme4 syntax, fitted by one of two engines.

``lmer`` reads an lme4 formula (``hce.stats.mixed.formula``) and fits it by REML or ML. Two
engines give the same estimates:

* balanced crossed designs with categorical fixed effects and random intercepts (the usual
  judge study: items x prompts x models x attempts) are solved from the ANOVA
  decomposition (``hce.stats.mixed.balanced``): in closed form from the mean squares when the
  estimates are non-negative, else by maximising the same exact REML (or ML) likelihood
  over non-negative variances;
* everything else (unbalanced data, numeric covariates, random slopes, any number of
  crossed or nested levels) is fitted by lme4's penalised least squares on the profiled
  deviance with a sparse factorisation (:mod:`hce.stats.mixed.pls`), searched from moment
  estimates so that no variance is left at a spurious 0 (:mod:`hce.stats.mixed.theta_search`).

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48.

"""

from __future__ import annotations

from functools import partial
from itertools import combinations

import numpy as np
import pandas as pd

from hce._checks import check_choice
from hce._warnings import warn
from hce.errors import DataError
from hce.stats._validate import statistic
from hce.stats.mixed.balanced import StrataFit, balanced_reml, fixed_effects_parts, strata_deviance
from hce.stats.mixed.convergence import check_max_iter
from hce.stats.mixed.ddf import VarparModel
from hce.stats.mixed.emmeans import _factor_column
from hce.stats.mixed.formula import Design, build_design, parse_formula, require_random
from hce.stats.mixed.lmer_result import (
    _SINGULAR_TOL,
    ConvergenceWarning,
    LmerResult,
    Method,
    SingularFitWarning,
)
from hce.stats.mixed.pls import PlsProblem, RandomBlock, pls_fit


@statistic(formula="formula", varying=("formula",))
def lmer(
    formula: str,
    data: pd.DataFrame,
    *,
    REML: bool = True,  # noqa: N803 - lme4's argument name
    method: Method = "auto",
    max_iter: int | None = None,
) -> LmerResult:
    """Fit a linear mixed model written in lme4 syntax.

    Parameters
    ----------
    formula : str
        lme4 formula, e.g. ``"total ~ prompt + model + (1 | item_id) + (1 | item_id:prompt)"``;
        supported terms are listed in ``hce.stats.mixed.formula``; random intercepts and
        slopes, crossed or nested, any number of levels.
    data : pandas.DataFrame
        Long format, one row per observation. Rows missing a formula value are dropped with
        a warning.
    REML : bool, default True
        Restricted maximum likelihood (lme4's default); False for maximum likelihood.
    method : {"auto", "anova", "pls"}, default "auto"
        ``"anova"``: the balanced-design computation (raises :class:`~hce.DataError` when the
        design does not qualify); ``"pls"``: lme4's penalised least squares (any design);
        ``"auto"``: the first that applies.
    max_iter : int, optional
        Cap on the iterations of the penalised least squares search (as lme4's
        ``maxfun``); a fit stopped by it is not converged and shows estimates only. The
        ANOVA engine's closed form does not iterate: use ``method="pls"`` to cap a
        balanced design's fit. Default None: the search's own limits.

    Returns
    -------
    LmerResult
        ``.summary()``, ``.fixef()``, ``.varcorr()``, ``.ranef()``, ``.icc()``,
        ``.anova()`` (Type III) or ``.anova(other)`` (LRT), ``.contrasts(factor)``;
        attributes ``converged``, ``singular``, ``messages``.

    Warns
    -----
    ConvergenceWarning, SingularFitWarning
        Also recorded in ``messages`` and printed by ``summary()``.

    Notes
    -----
    The balanced-design path applies when every combination of the factors in the model
    occurs equally often, the fixed part has only categorical factors in a hierarchical
    formula, and every random term is an intercept. Its estimates maximise the exact REML
    (or ML) likelihood (see ``hce.stats.mixed.balanced``): with non-negative ANOVA estimates
    these are the ANOVA estimates, in closed form; otherwise a small bounded optimisation
    over the variances alone finds the boundary maximum. Fixed-effect tests from either
    engine use lmerTest's Satterthwaite degrees of freedom by default, or pbkrtest's
    Kenward-Roger adjustment (``hce.stats.mixed.ddf``), so the two engines give the same
    tests on the same data.

    Convergence is judged as lme4 judges it: at the optimum the Hessian of the profiled
    deviance (by finite differences) is positive definite on the parameters not at a
    bound and the scaled gradient ``max|H^-1 g|`` is below 0.002; otherwise
    ``converged`` is False and the warning says what failed and what to try.

    References
    ----------
    Bates et al. (2015), J Stat Softw 67(1). Kuznetsova, A., Brockhoff, P. B., &
    Christensen, R. H. B. (2017). lmerTest package. J Stat Softw, 82(13).

    Examples
    --------
    >>> import pandas as pd
    >>> yields = [1545, 1440, 1440, 1520, 1580, 1540, 1555, 1490, 1560, 1495,
    ...           1595, 1550, 1605, 1510, 1560, 1445, 1440, 1595, 1465, 1545,
    ...           1595, 1630, 1515, 1635, 1625, 1520, 1455, 1450, 1480, 1445]
    >>> dyestuff = pd.DataFrame({"batch": [b for b in "ABCDEF" for _ in range(5)], "yield_": yields})
    >>> m = lmer("yield_ ~ 1 + (1 | batch)", dyestuff)
    >>> m.varcorr()[["group", "vcov"]].round(2)    # lme4: Batch 1764.0, Residual 2451.3
          group     vcov
    0     batch  1764.05
    1  Residual  2451.25

    """
    check_choice("method", method, ["auto", "anova", "pls"])
    max_iter = check_max_iter(max_iter)
    parsed = parse_formula(formula)
    require_random(parsed)
    design = build_design(parsed, data)
    if method in ("auto", "anova"):
        fit = _fit_balanced(design, REML)
        if fit is not None:
            return fit
        if method == "anova":
            raise DataError(
                "method='anova' needs a balanced crossed design with categorical fixed "
                "effects and random intercepts only; use method='auto'"
            )
    return _fit_pls(design, REML, max_iter)


def _fit_pls(design: Design, reml: bool, max_iter: int | None = None) -> LmerResult:
    # one engine block per formula term, named as lme4's VarCorr names it (g, then g.1 for a
    # second term on g): terms may share a grouping factor, each with its own covariance
    names = design.formula.term_names
    groupings = [design.groupings[name] for name in names]
    blocks = [RandomBlock(g.codes, g.Z) for g in groupings]
    fit = pls_fit(design.y, design.X, blocks, reml=reml, max_iter=max_iter)
    ranef, rows, start = [], [], 0
    for group, g, block, cov in zip(names, groupings, blocks, fit.covariances):
        size = len(g.levels) * block.q
        b = fit.b[start : start + size].reshape(len(g.levels), block.q)
        start += size
        for k, name in enumerate(g.z_names):
            ranef.append(
                pd.DataFrame({"group": group, "level": g.levels, "term": name, "estimate": b[:, k]})
            )
            rows.append((group, name, None, cov[k, k], np.sqrt(cov[k, k])))
        for i, j in combinations(range(block.q), 2):
            denom = np.sqrt(cov[i, i] * cov[j, j])
            corr = cov[i, j] / denom if denom > 0 else np.nan
            rows.append((group, g.z_names[i], g.z_names[j], cov[i, j], corr))
    rows.append(("Residual", None, None, fit.sigma2, np.sqrt(fit.sigma2)))
    varcorr = pd.DataFrame(rows, columns=["group", "var1", "var2", "vcov", "sdcor"])
    ranef = pd.concat(ranef, ignore_index=True)
    ranef["level"] = ranef["level"].astype(object)
    criterion = "REML" if reml else "ML"
    messages = (
        []
        if fit.converged
        else [f"the profiled {criterion} deviance did not converge: {fit.message}"]
    )
    return _finish(
        design,
        reml,
        "penalised least squares (lme4's profiled deviance, sparse)",
        fit.sigma2,
        fit.loglik,
        messages,
        design.y - design.X @ fit.beta - _zb(design, ranef),
        fit.beta,
        fit.cov_beta,
        varcorr,
        ranef,
        _pls_varpar(fit.problem, fit.theta, fit.sigma2),
        pls=fit.problem if all(block.q == 1 for block in blocks) else None,
    )


def _pls_varpar(problem: PlsProblem, theta: np.ndarray, sigma2: float) -> VarparModel:
    """lmerTest's variance parameters ``(theta, sigma)`` on the penalised least squares
    engine."""
    return VarparModel(
        np.r_[theta, np.sqrt(sigma2)],
        lambda vp: problem.deviance_at(vp[:-1], vp[-1] ** 2),
        lambda vp: problem.cov_beta_at(vp[:-1], vp[-1] ** 2),
    )


def _balanced_varpar(fit: StrataFit, parts: list[np.ndarray]) -> VarparModel:
    """The same parameters on the balanced engine: variances ``theta_j^2 sigma^2`` and
    ``sigma^2``, the REML (ML) deviance and ``cov(beta) = (sum_k X'Q_k X / lambda_k)^-1`` from
    the strata."""

    def variances(vp: np.ndarray) -> np.ndarray:
        return np.r_[vp[:-1] ** 2, 1.0] * vp[-1] ** 2

    def cov_beta(vp: np.ndarray) -> np.ndarray:
        lam = fit.design @ variances(vp)
        return np.linalg.inv(sum(part / lam_k for part, lam_k in zip(parts, lam)))

    varpar = np.sqrt(np.r_[fit.theta[:-1] / fit.theta[-1], fit.theta[-1]])
    return VarparModel(varpar, lambda vp: strata_deviance(fit, variances(vp)), cov_beta)


def _fit_balanced(design: Design, reml: bool) -> LmerResult | None:
    layout = _balanced_layout(design)
    if layout is None:
        return None
    factors, shape, order, fixed, random = layout
    n_rep = len(order) // int(np.prod(shape))
    y = design.y[order].reshape(*shape, n_rep)
    fit = balanced_reml(y, fixed, random, reml=reml)
    if fit is None:
        return None
    x_cells = design.X[order].reshape(*shape, n_rep, -1)[..., 0, :]
    xtx, parts = fixed_effects_parts(fit, x_cells, fixed, len(shape))
    if not np.allclose(xtx, design.X.T @ design.X, rtol=1e-8, atol=1e-8 * np.abs(xtx).max()):
        return None  # the coding does not split into effect spaces: use the general fitter
    beta = np.linalg.solve(xtx, design.X.T @ design.y)
    info = sum(part / lam for part, lam in zip(parts, fit.lam))
    cov_beta = np.linalg.inv(info)
    n, p = design.X.shape
    _, logdet = np.linalg.slogdet(info)
    if reml:
        loglik = -0.5 * ((n - p) * np.log(2 * np.pi) + fit.deviance_core + logdet)
    else:
        loglik = -0.5 * (n * np.log(2 * np.pi) + fit.deviance_core)
    terms = [t for t in design.formula.random]
    blups, fitted = [], x_cells @ beta
    for j, (term, r) in enumerate(zip(terms, random)):
        b = (
            sum(
                (
                    fit.effects[s] / fit.lam[fit.key_of[s]]
                    for s in fit.key_of
                    if s <= r and s not in fixed
                ),
                np.zeros([1] * len(shape)),
            )
            * fit.theta[j]
            * (design.y.size / np.prod([shape[a] for a in r]))
        )
        fitted = fitted + b
        axes = sorted(r)  # b's own axes, in factor order; report them in the term's order
        b_term = b.reshape([shape[a] for a in axes]).transpose(
            [axes.index(factors.index(g)) for g in term.groups]
        )
        labels = _cell_labels(design.data, list(term.groups))
        blups.append(
            pd.DataFrame(
                {
                    "group": term.group,
                    "level": labels,
                    "term": "(Intercept)",
                    "estimate": b_term.ravel(),
                }
            )
        )
    resid_sorted = (y - fitted[..., None]).reshape(-1)
    residuals = np.empty_like(resid_sorted)
    residuals[order] = resid_sorted
    criterion = "REML" if reml else "ML"
    if fit.closed_form:
        engine = "closed form from ANOVA mean squares" + ("" if reml else " (ML)")
    else:
        where = "boundary" if fit.boundary else "numerical"
        engine = f"balanced-design {criterion} likelihood, {where}"
    messages = (
        [] if fit.converged else [f"optimiser for the boundary {criterion} fit did not converge"]
    )
    return _finish(
        design,
        reml,
        engine,
        fit.theta[-1],
        loglik,
        messages,
        residuals,
        beta,
        cov_beta,
        _varcorr_intercepts(terms, fit.theta[:-1], fit.theta[-1]),
        pd.concat(blups, ignore_index=True),
        _balanced_varpar(fit, parts),
        strata=fit,
    )


def _balanced_layout(design: Design):
    """Factors, cell shape, row order and factor-index sets, or None if not balanced crossed."""
    if not all(t.intercept_only for t in design.formula.random):
        return None
    fixed_cols = []
    for term in design.design_info.terms:
        cols = []
        for f in term.factors:
            column = _factor_column(f.code, design.data)
            if column is None or design.design_info.factor_infos[f].type != "categorical":
                return None
            cols.append(column)
        fixed_cols.append(frozenset(cols))
    factors = list(
        dict.fromkeys([c for s in fixed_cols for c in s] + list(design.formula.grouping_factors))
    )
    fixed_names = set(fixed_cols)
    if any(
        frozenset(sub) not in fixed_names
        for s in fixed_cols
        for k in range(len(s))
        for sub in combinations(s, k)
    ):
        return None  # not hierarchical: effect spaces do not match the columns
    codes, shape = [], []
    for f in factors:
        c, levels = pd.factorize(design.data[f], sort=True)
        codes.append(c)
        shape.append(len(levels))
    n = len(design.y)
    if not factors or np.prod(shape, dtype=float) > n:
        return None
    cell = np.ravel_multi_index(codes, shape)
    counts = np.bincount(cell, minlength=int(np.prod(shape)))
    if counts.min() == 0 or counts.min() != counts.max():
        return None
    index = {f: i for i, f in enumerate(factors)}
    fixed = [frozenset(index[c] for c in s) for s in fixed_cols]
    random = [frozenset(index[g] for g in t.groups) for t in design.formula.random]
    return factors, tuple(shape), np.argsort(cell, kind="stable"), fixed, random


def _cell_labels(data: pd.DataFrame, columns: list[str]) -> list:
    """Sorted level labels of one factor, or ``"a:b"`` labels of a crossing, in C order."""
    levels = [pd.factorize(data[c], sort=True)[1] for c in columns]
    if len(columns) == 1:
        return list(levels[0])
    grid = pd.MultiIndex.from_product(levels)
    return [":".join(str(v) for v in combo) for combo in grid]


def _varcorr_intercepts(terms, variances, sigma2) -> pd.DataFrame:
    rows = [(t.group, "(Intercept)", None, v, np.sqrt(v)) for t, v in zip(terms, variances)]
    rows.append(("Residual", None, None, sigma2, np.sqrt(sigma2)))
    return pd.DataFrame(rows, columns=["group", "var1", "var2", "vcov", "sdcor"])


def _finish(
    design,
    reml,
    engine,
    sigma2,
    loglik,
    messages,
    residuals,
    beta,
    cov_beta,
    varcorr,
    ranef,
    varpar,
    strata=None,
    pls=None,
):
    """Assemble the result; flag a boundary fit and emit every message as a warning."""
    messages, singular, converged = announce(varcorr, sigma2, messages)
    return LmerResult(
        formula=design.formula,
        reml=reml,
        engine=engine,
        n=len(design.y),
        ngroups={g: len(gr.levels) for g, gr in design.groupings.items()},
        sigma2=float(sigma2),
        loglik=float(loglik),
        converged=converged,
        singular=singular,
        messages=messages,
        residuals=residuals,
        design=design,
        _beta=beta,
        _cov_beta=cov_beta,
        _varcorr=varcorr,
        _ranef=ranef,
        _varpar=varpar,
        _refit=partial(lmer, design.formula.formula, design.data),
        _strata=strata,
        _problem=pls,
    )


def announce(varcorr: pd.DataFrame, sigma2: float, messages: list[str]) -> tuple[list[str], bool, bool]:
    """Add the boundary message to a fit's ``messages`` when it is singular and emit each as a
    warning; returns the messages, whether the fit is singular and whether it converged."""
    singular = _is_singular(varcorr, sigma2)
    if singular:
        messages = [
            *messages,
            "boundary (singular) fit: a random-effect variance is (near) zero or a correlation is +-1",
        ]
    for m in messages:
        category = SingularFitWarning if m.startswith("boundary") else ConvergenceWarning
        warn(m, category)
    return messages, singular, not any(not m.startswith("boundary") for m in messages)


def _is_singular(varcorr: pd.DataFrame, sigma2: float) -> bool:
    var_rows = varcorr[varcorr["var2"].isna() & (varcorr["group"] != "Residual")]
    corr_rows = varcorr[varcorr["var2"].notna()]
    return bool(
        np.any(np.sqrt(np.maximum(var_rows["vcov"], 0) / sigma2) < _SINGULAR_TOL)
        or np.any(np.abs(corr_rows["sdcor"]) > 1 - 1e-6)
    )


def _zb(design: Design, ranef: pd.DataFrame) -> np.ndarray:
    """Random-effect contribution Z b for each row."""
    total = np.zeros(len(design.y))
    for group, grouping in design.groupings.items():
        sub = ranef[ranef["group"] == group]
        for k, name in enumerate(grouping.z_names):
            vals = sub[sub["term"] == name].set_index("level")["estimate"]
            b = vals.reindex(list(grouping.levels)).fillna(0.0).to_numpy()
            total += grouping.Z[:, k] * b[grouping.codes]
    return total
