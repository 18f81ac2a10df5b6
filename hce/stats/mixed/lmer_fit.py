"""Linear mixed models with lme4 syntax: ``lmer``, variance decomposition, models of spread.

``lmer`` reads an lme4 formula (:mod:`hce.stats.mixed.formula`) and fits it by REML or ML. Two
engines give the same estimates:

* balanced crossed designs with categorical fixed effects and random intercepts (the usual
  judge study: items x prompts x models x attempts) are solved from the ANOVA
  decomposition (:mod:`hce.stats.mixed.balanced`): in closed form from the mean squares when the
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

import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
import patsy
from scipy import stats
from statsmodels.stats.multitest import multipletests

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce._warnings import warn
from hce.errors import DataError, FormulaError
from hce.stats._validate import reads_frame
from hce.stats.mixed.balanced import (
    StrataFit,
    balanced_reml,
    fixed_effects_parts,
    profile_interval,
    strata_deviance,
)
from hce.stats.mixed.component_intervals import (
    pivot_draws,
    profile_limits,
    ratio_interval,
    reml_covariance,
    satterthwaite_fails,
    satterthwaite_interval,
)
from hce.stats.mixed.formula import Design, MixedFormula, build_design, parse_formula
from hce.stats.mixed.pls import PlsProblem, RandomBlock, pls_fit

Method = Literal["auto", "anova", "pls"]
_SINGULAR_TOL = 1e-4  # lme4's isSingular(): a relative standard deviation below 1e-4


class SingularFitWarning(UserWarning):
    """A variance is (near) zero or a correlation is +-1: the fit is on the boundary."""


class ConvergenceWarning(UserWarning):
    """The optimiser did not report convergence; estimates may be unreliable."""


@dataclass
class LmerResult:
    """A fitted linear mixed model; build with :func:`lmer`.

    Attributes
    ----------
    formula : MixedFormula
    reml : bool
        True for REML, False for maximum likelihood.
    engine : str
        Which computation made the estimates.
    n : int
        Observations used.
    ngroups : dict
        Number of levels of each grouping factor.
    sigma2 : float
        Residual variance.
    loglik : float
        REML or ML log-likelihood at the estimates (``-2 * loglik`` is lme4's criterion).
    converged : bool
    singular : bool
        Boundary fit (lme4's ``isSingular``): a relative SD below 1e-4 or a correlation
        of +-1.
    messages : list of str
        Convergence and boundary messages raised during the fit, also emitted as warnings.
    residuals : ndarray
        Conditional residuals ``y - X beta - Z b`` in row order of the data used.

    """

    formula: MixedFormula
    reml: bool
    engine: str
    n: int
    ngroups: dict[str, int]
    sigma2: float
    loglik: float
    converged: bool
    singular: bool
    messages: list[str]
    residuals: np.ndarray
    design: Design = field(repr=False)
    _beta: np.ndarray = field(repr=False)
    _cov_beta: np.ndarray = field(repr=False)
    _varcorr: pd.DataFrame = field(repr=False)
    _ranef: pd.DataFrame = field(repr=False)
    _var_parts: list[tuple[np.ndarray, float, float]] | None = field(repr=False, default=None)
    _strata: StrataFit | None = field(repr=False, default=None)
    _pls: PlsProblem | None = field(repr=False, default=None)

    # ---- accessors -------------------------------------------------------------------
    def fixef(self, confidence: float = 0.95) -> pd.DataFrame:
        """Fixed-effect estimates.

        Returns
        -------
        pandas.DataFrame
            One row per coefficient: ``term``, ``estimate``, ``std_error``, ``statistic``
            (t value), ``df`` (Satterthwaite, exact for balanced designs; ``inf`` from the
            penalised least squares engine, i.e. a Wald z), ``p_value``, ``ci_low``, ``ci_high``, ``method``.

        """
        check_confidence(confidence)
        rows = [
            self._linear(np.eye(len(self._beta))[i], confidence) for i in range(len(self._beta))
        ]
        out = pd.DataFrame(rows)
        out.insert(0, "term", self.design.x_names)
        return out

    def varcorr(self) -> pd.DataFrame:
        """Random-effect variances and correlations, as lme4's ``as.data.frame(VarCorr(m))``.

        Returns
        -------
        pandas.DataFrame
            ``group`` (grouping factor or ``Residual``), ``var1``, ``var2`` (``var2`` set:
            a covariance/correlation row), ``vcov`` (variance or covariance), ``sdcor``
            (standard deviation or correlation).

        """
        return self._varcorr.copy()

    def ranef(self) -> pd.DataFrame:
        """Conditional modes (BLUPs) of the random effects.

        Returns
        -------
        pandas.DataFrame
            ``group``, ``level``, ``term`` (``(Intercept)`` or the slope), ``estimate``.

        """
        return self._ranef.copy()

    def icc(self) -> pd.DataFrame:
        """Adjusted and conditional intraclass correlations (Nakagawa et al. 2017).

        Returns
        -------
        pandas.DataFrame
            ``type`` (``adjusted``, ``conditional``) and ``estimate``.

        Notes
        -----
        adjusted = s2_random / (s2_random + s2_e) and conditional = s2_random /
        (s2_fixed + s2_random + s2_e), with s2_fixed the variance (n - 1 denominator) of
        the fixed-effect predictions and s2_random the sum of the random intercept
        variances; a random-slope term contributes ``mean_i(z_i' Sigma z_i)`` (Johnson
        2014), as R's ``performance::icc`` does.

        References
        ----------
        Nakagawa, S., Johnson, P. C. D., & Schielzeth, H. (2017). The coefficient of
        determination R2 and intra-class correlation coefficient from generalized linear
        mixed-effects models revisited and expanded. J R Soc Interface, 14, 20170213.

        """
        s2_random = 0.0
        for group, grouping in self.design.groupings.items():
            cov = self._cov_matrix(group, grouping.z_names)
            s2_random += float(np.mean(np.einsum("ij,jk,ik->i", grouping.Z, cov, grouping.Z)))
        s2_fixed = float(np.var(self.design.X @ self._beta, ddof=1)) if len(self._beta) > 1 else 0.0
        return pd.DataFrame(
            {
                "type": ["adjusted", "conditional"],
                "estimate": [
                    s2_random / (s2_random + self.sigma2),
                    s2_random / (s2_fixed + s2_random + self.sigma2),
                ],
            }
        )

    def anova(self, other: LmerResult) -> pd.DataFrame:
        """Likelihood-ratio test against another model of the same data, both refit by ML.

        Returns
        -------
        pandas.DataFrame
            One row per model, fewer parameters first: ``model``, ``npar``, ``aic``,
            ``bic``, ``loglik``, ``deviance``, ``statistic`` (chi-square), ``df``,
            ``p_value`` (NaN on the first row), as R's ``anova(m1, m2)``.

        """
        if self.n != other.n or not self.design.data.index.equals(other.design.data.index):
            raise DataError(
                f"anova needs both models fitted to the same rows ({self.n} vs {other.n}); "
                "drop missing values first"
            )
        fits = sorted(
            (
                m if not m.reml else lmer(m.formula.formula, m.design.data, REML=False)
                for m in (self, other)
            ),
            key=lambda m: m.npar,
        )
        rows = []
        for m in fits:
            dev = -2 * m.loglik
            rows.append(
                {
                    "model": str(m.formula),
                    "npar": m.npar,
                    "aic": dev + 2 * m.npar,
                    "bic": dev + np.log(m.n) * m.npar,
                    "loglik": m.loglik,
                    "deviance": dev,
                }
            )
        out = pd.DataFrame(rows)
        stat = max(out["deviance"].iloc[0] - out["deviance"].iloc[1], 0.0)
        ddf = out["npar"].iloc[1] - out["npar"].iloc[0]
        out["statistic"] = [np.nan, stat]
        out["df"] = [np.nan, ddf]
        out["p_value"] = [np.nan, stats.chi2.sf(stat, ddf) if ddf > 0 else np.nan]
        return out

    def contrasts(self, factor: str, confidence: float = 0.95) -> pd.DataFrame:
        """Pairwise differences of estimated marginal means of ``factor``, Holm-adjusted.

        Marginal means average the model's predictions over a grid of all levels of the
        other categorical fixed factors, with equal weights (numeric covariates at their
        mean), as R's ``emmeans(m, pairwise ~ factor, adjust = "holm")``.

        Returns
        -------
        pandas.DataFrame
            One row per pair: ``a``, ``b``, ``estimate`` (mean a - mean b), ``std_error``,
            ``ci_low``, ``ci_high`` (unadjusted), ``statistic``, ``df``, ``p_value``,
            ``p_adjusted`` (Holm), ``method``.

        """
        check_confidence(confidence)
        grid, levels = self._reference_grid(factor)
        x_grid = np.asarray(patsy.build_design_matrices([self.design.design_info], grid)[0])
        means = np.array([x_grid[(grid[factor] == lev).to_numpy()].mean(axis=0) for lev in levels])
        rows = []
        for i, j in combinations(range(len(levels)), 2):
            row = self._linear(means[i] - means[j], confidence)
            rows.append({"a": levels[i], "b": levels[j], **row})
        out = pd.DataFrame(rows)
        out["p_adjusted"] = multipletests(out["p_value"], method="holm")[1] if len(out) else []
        cols = [
            "a",
            "b",
            "estimate",
            "std_error",
            "ci_low",
            "ci_high",
            "statistic",
            "df",
            "p_value",
            "p_adjusted",
            "method",
        ]
        return out[cols]

    @property
    def npar(self) -> int:
        """Number of estimated parameters (fixed, variance-covariance and residual)."""
        return len(self._beta) + len(self._varcorr)

    # ---- display ---------------------------------------------------------------------
    def summary(self) -> str:
        """The fit as lme4's ``summary()`` prints it."""
        crit = "REML criterion at convergence" if self.reml else "deviance"
        q = np.quantile(self.residuals / np.sqrt(self.sigma2), [0, 0.25, 0.5, 0.75, 1])
        lines = [
            f"Linear mixed model fit by {'REML' if self.reml else 'maximum likelihood'} [hce: {self.engine}]",
            f"Formula: {self.formula.formula}",
            "",
        ]
        if not self.reml:
            aic = -2 * self.loglik + 2 * self.npar
            bic = -2 * self.loglik + np.log(self.n) * self.npar
            lines += [
                "     AIC      BIC   logLik deviance",
                f"{aic:8.1f} {bic:8.1f} {self.loglik:8.1f} {-2 * self.loglik:8.1f}",
                "",
            ]
        else:
            lines += [f"{crit}: {-2 * self.loglik:.1f}", ""]
        lines += [
            "Scaled residuals: ",
            _table([["Min", "1Q", "Median", "3Q", "Max"], [f"{v:.4f}" for v in q]]),
            "",
        ]
        lines += ["Random effects:", self._random_table()]
        groups = ", ".join(f"{g}, {k}" for g, k in self.ngroups.items())
        lines += [f"Number of obs: {self.n}, groups:  {groups}", "", "Fixed effects:"]
        fe = self.fixef()
        body = [["", "Estimate", "Std. Error", "t value"]] + [
            [r.term, r.estimate, r.std_error, r.statistic] for r in fe.itertuples()
        ]
        for col in (1, 2, 3):
            _format_column(body, col)
        lines.append(_table(body, left_cols=1))
        if self.singular:
            lines += ["", "boundary (singular) fit: see help('isSingular') in lme4"]
        warned = [m for m in self.messages if not m.startswith("boundary")]
        if warned:
            lines += [""] + [f"Warning: {m}" for m in warned]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return self.summary()

    # ---- internals -------------------------------------------------------------------
    def _linear(self, contrast: np.ndarray, confidence: float) -> dict:
        """Estimate, SE, t, df, p and interval of ``contrast @ beta``."""
        est = float(contrast @ self._beta)
        var = float(contrast @ self._cov_beta @ contrast)
        se = np.sqrt(var)
        if self._var_parts is None:
            df, method = np.inf, "Wald z (asymptotic)"
        else:
            terms = np.array(
                [float(contrast @ b @ contrast) * lam for b, lam, _ in self._var_parts]
            )
            dfs = np.array([d for _, _, d in self._var_parts])
            used = terms > 1e-12 * max(var, 1e-300)
            df = (
                float(var**2 / np.sum(terms[used] ** 2 / dfs[used]))
                if np.all(np.isfinite(dfs[used]))
                else np.nan
            )
            method = "t, Satterthwaite df"
        stat = est / se if se > 0 else np.nan
        dist = stats.norm if np.isinf(df) else stats.t(df)
        crit = dist.ppf(0.5 + confidence / 2)
        return {
            "estimate": est,
            "std_error": se,
            "statistic": stat,
            "df": df,
            "p_value": float(2 * dist.sf(abs(stat))),
            "ci_low": est - crit * se,
            "ci_high": est + crit * se,
            "method": method,
        }

    def _cov_matrix(self, group: str, names: list[str]) -> np.ndarray:
        vc = self._varcorr[self._varcorr["group"] == group]
        cov = np.zeros((len(names), len(names)))
        for r in vc.itertuples():
            i = names.index(r.var1)
            j = i if pd.isna(r.var2) else names.index(r.var2)
            cov[i, j] = cov[j, i] = (
                r.vcov if pd.isna(r.var2) else r.sdcor * np.sqrt(cov[i, i] * cov[j, j])
            )
        return cov

    def _random_table(self) -> str:
        body = [["Groups", "Name", "Variance", "Std.Dev.", "Corr"]]
        vc = self._varcorr
        for r in vc[vc["var2"].isna()].itertuples():
            corr = vc[(vc["group"] == r.group) & (vc["var2"] == r.var1)]["sdcor"]
            body.append(
                [
                    r.group,
                    r.var1 if isinstance(r.var1, str) else "",
                    r.vcov,
                    r.sdcor,
                    " ".join(f"{c:.2f}" for c in corr),
                ]
            )
        for col in (2, 3):
            _format_column(body, col)
        if all(not row[4] for row in body[1:]):
            body = [row[:4] for row in body]
        return _table(body, left_cols=2)

    def _reference_grid(self, factor: str) -> tuple[pd.DataFrame, list]:
        data = self.design.data
        cats, numeric = {}, {}
        for f, info in self.design.design_info.factor_infos.items():
            column = _factor_column(f.code, data)
            if column is None:
                raise FormulaError(
                    f"contrasts: fixed-effect expression {f.code!r} is not a plain column or C(column)"
                )
            if info.type == "categorical":
                cats[column] = list(info.categories)
            else:
                numeric[column] = float(data[column].mean())
        if factor not in cats:
            raise DataError(
                f"contrasts: {factor!r} is not a categorical fixed effect; choose one of {list(cats)}"
            )
        grid = pd.MultiIndex.from_product(list(cats.values()), names=list(cats)).to_frame(
            index=False
        )
        for column, value in numeric.items():
            grid[column] = value
        return grid, cats[factor]


def _table(rows: list[list[str]], left_cols: int = 0) -> str:
    """Fixed-width text table: first ``left_cols`` columns left-aligned, the rest right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        " "
        + " ".join(
            c.ljust(w) if i < left_cols else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))
        ).rstrip()
        for r in rows
    )


def _format_column(rows: list[list], col: int, digits: int = 4) -> None:
    """Format a numeric column in place with shared decimals: ``digits`` significant
    digits for its smallest non-zero magnitude (at most 6 decimals), as R aligns tables.
    """
    values = np.array([r[col] for r in rows[1:]], dtype=float)
    nonzero = np.abs(values[np.isfinite(values) & (values != 0)])
    decimals = (
        int(np.clip(digits - 1 - np.floor(np.log10(nonzero.min())), 0, 6)) if nonzero.size else 0
    )
    for r, v in zip(rows[1:], values):
        r[col] = f"{v:.{decimals}f}"


def _factor_column(code: str, data: pd.DataFrame) -> str | None:
    """The data column behind a patsy factor ``x`` or ``C(x)``, else None."""
    match = re.fullmatch(r"C\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", code)
    column = match.group(1) if match else code
    return column if column in data.columns else None


# ---- fitting -----------------------------------------------------------------------------
@reads_frame(formula="formula")
def lmer(
    formula: str,
    data: pd.DataFrame,
    REML: bool = True,  # noqa: N803 - lme4's argument name
    *,
    method: Method = "auto",
) -> LmerResult:
    """Fit a linear mixed model written in lme4 syntax.

    Parameters
    ----------
    formula : str
        lme4 formula, e.g. ``"total ~ prompt + model + (1 | item_id) + (1 | item_id:prompt)"``;
        supported terms are listed in :mod:`hce.stats.mixed.formula`; random intercepts and
        slopes, crossed or nested, any number of levels.
    data : pandas.DataFrame
        Long format, one row per observation. Rows missing a formula value are dropped with
        a warning.
    REML : bool, default True
        Restricted maximum likelihood (lme4's default); False for maximum likelihood.
    method : {"auto", "anova", "pls"}, default "auto"
        ``"anova"``: the balanced-design computation (raises :class:`DataError` when the
        design does not qualify); ``"pls"``: lme4's penalised least squares (any design);
        ``"auto"``: the first that applies.

    Returns
    -------
    LmerResult
        ``.summary()``, ``.fixef()``, ``.varcorr()``, ``.ranef()``, ``.icc()``,
        ``.anova(other)``, ``.contrasts(factor)``; attributes ``converged``, ``singular``,
        ``messages``.

    Warns
    -----
    ConvergenceWarning, SingularFitWarning
        Also recorded in ``messages`` and printed by ``summary()``.

    Notes
    -----
    The balanced-design path applies when every combination of the factors in the model
    occurs equally often, the fixed part has only categorical factors in a hierarchical
    formula, and every random term is an intercept. Its estimates maximise the exact REML
    (or ML) likelihood (see :mod:`hce.stats.mixed.balanced`): with non-negative ANOVA estimates
    these are the ANOVA estimates, in closed form; otherwise a small bounded optimisation
    over the variances alone finds the boundary maximum. Fixed-effect tests use Satterthwaite
    degrees of freedom there (exact F/t reference distributions in balanced designs); from
    penalised least squares they are Wald z tests.

    Convergence is judged as lme4 judges it: at the optimum the Hessian of the profiled
    deviance (by finite differences) is positive definite on the parameters not at a
    bound and the scaled gradient ``max|H^-1 g|`` is below 0.002; otherwise
    ``converged`` is False and the warning says what failed and what to try.

    References
    ----------
    Bates et al. (2015), J Stat Softw 67(1). Satterthwaite, F. E. (1946). Biometrics
    Bulletin, 2(6), 110-114.

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
    parsed = parse_formula(formula)
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
    return _fit_pls(design, REML)


def _fit_pls(design: Design, reml: bool) -> LmerResult:
    # one engine block per formula term, named as lme4's VarCorr names it (g, then g.1 for a
    # second term on g): terms may share a grouping factor, each with its own covariance
    names = design.formula.term_names
    groupings = [design.groupings[name] for name in names]
    blocks = [RandomBlock(g.codes, g.Z) for g in groupings]
    fit = pls_fit(design.y, design.X, blocks, reml=reml)
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
        None,
        pls=fit.problem if all(block.q == 1 for block in blocks) else None,
    )


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
    xtx_inv = np.linalg.inv(xtx)
    stratum_df = np.where(fit.resid_df > 0, fit.resid_df, np.nan)
    var_parts = [
        (xtx_inv @ part @ xtx_inv, lam, d)
        for part, lam, d in zip(parts, fit.lam, stratum_df)
        if np.any(part)
    ]
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
        var_parts,
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
    var_parts,
    strata=None,
    pls=None,
):
    """Assemble the result; flag a boundary fit and emit every message as a warning."""
    singular = _is_singular(varcorr, sigma2)
    if singular:
        messages = [
            *messages,
            "boundary (singular) fit: a random-effect variance is (near) zero or a correlation is +-1",
        ]
    for m in messages:
        category = SingularFitWarning if m.startswith("boundary") else ConvergenceWarning
        warn(m, category)
    return LmerResult(
        formula=design.formula,
        reml=reml,
        engine=engine,
        n=len(design.y),
        ngroups={g: len(gr.levels) for g, gr in design.groupings.items()},
        sigma2=float(sigma2),
        loglik=float(loglik),
        converged=not any(not m.startswith("boundary") for m in messages),
        singular=singular,
        messages=messages,
        residuals=residuals,
        design=design,
        _beta=beta,
        _cov_beta=cov_beta,
        _varcorr=varcorr,
        _ranef=ranef,
        _var_parts=var_parts,
        _strata=strata,
        _pls=pls,
    )


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


# ---- generalizability theory ---------------------------------------------------------------
@dataclass
class VarianceComponents:
    """A G study: variance of each facet and interaction; build with :func:`variance_components`.

    Attributes
    ----------
    components : pandas.DataFrame
        ``component`` (facet, ``a:b`` interaction or ``residual``), ``estimate`` (variance),
        ``share`` (of the total), ``std_error`` (asymptotic), ``ci_low``, ``ci_high``,
        ``df`` (Satterthwaite), ``method``.
    coefficients : pandas.DataFrame
        G and Phi for the ``n_attempts`` asked for (see :meth:`d_study`).
    object : str
        The object of measurement (the first facet).
    covariance : pandas.DataFrame
        Asymptotic covariance of the estimates (component by component); rows and columns
        of components at zero are 0 (held there); all NaN when the engine gives none.
    fit : LmerResult
        The underlying random-effects model.

    """

    components: pd.DataFrame
    coefficients: pd.DataFrame
    object: str
    facets: list[str]
    levels: dict[str, int]
    replicated: bool
    covariance: pd.DataFrame
    fit: LmerResult = field(repr=False)
    _covariance_source: str = field(repr=False, default="")

    def d_study(
        self,
        n_attempts: int = 1,
        n_levels: dict[str, int] | None = None,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = 0,
    ) -> pd.DataFrame:
        """G (relative) and Phi (absolute) coefficients for a chosen measurement design.

        Parameters
        ----------
        n_attempts : int, default 1
            Attempts averaged per condition.
        n_levels : dict, optional
            Levels averaged for each non-object facet; defaults to the numbers observed.
            ``{"prompt": 1, "model": 1}``: a score from one prompt and one model drawn at
            random (the facets are random, so item x prompt and item x model effects count
            as error).
        confidence : float, default 0.95
            Interval level.
        random_state : int, Generator or None, default 0
            Seed of the draws behind the intervals (fixed by default, so a table is
            reproducible).

        Returns
        -------
        pandas.DataFrame
            ``coefficient`` (``G``, ``Phi``), ``estimate``, ``ci_low``, ``ci_high``,
            ``error_variance`` (relative delta or absolute Delta), ``n_attempts``,
            ``method``.

        Notes
        -----
        With object ``p`` and component ``c`` divided by the product of ``n'_f`` over its
        facets other than ``p`` (the residual also by ``n_attempts``): relative error
        sigma2(delta) sums the components that contain ``p`` and another facet, absolute
        error sigma2(Delta) sums every component but ``p``; G = s2_p / (s2_p +
        sigma2(delta)), Phi = s2_p / (s2_p + sigma2(Delta)) (Brennan 2001, ch. 4).
        Intervals: percentiles of G and Phi over 20,000 joint draws of the components,
        each drawn from its Satterthwaite pivot ``v df / chi2_df`` (so its quantiles are its
        own interval's bounds), tied by a Gaussian copula with the correlation of
        :attr:`covariance` (see :mod:`hce.stats.mixed.component_intervals`); components at 0 stay
        at 0, and those with Satterthwaite df below 1 are clamped into their profile-likelihood
        interval. NaN with the reason in ``method`` when G or Phi is fixed at 0 or 1 or no
        covariance exists.

        """
        if not isinstance(n_attempts, int) or n_attempts < 1:
            raise DataError(f"n_attempts={n_attempts!r} must be a positive integer")
        if n_attempts != 1 and not self.replicated:
            raise DataError(
                "n_attempts: the data hold one score per facet combination, so attempts are "
                "not a facet of this study; leave n_attempts=1"
            )
        check_confidence(confidence)
        n_levels = {**self.levels, **(n_levels or {})}
        unknown = set(n_levels) - set(self.levels)
        if unknown:
            raise DataError(f"n_levels names {sorted(unknown)}; facets are {list(self.levels)}")
        names = self.components["component"].tolist()
        variances = np.maximum(self.components["estimate"].to_numpy(), 0.0)
        relative, absolute = np.zeros(len(names)), np.zeros(len(names))
        for c, comp in enumerate(names):
            facets = [f for f in comp.split(":") if f != self.object]
            if comp == "residual":
                relative[c] = absolute[c] = 1 / (np.prod(list(n_levels.values())) * n_attempts)
            elif facets:
                absolute[c] = 1 / np.prod([n_levels[f] for f in facets])
                relative[c] = absolute[c] if self.object in comp.split(":") else 0.0
        obj = names.index(self.object)
        universe = variances[obj]
        cov = self.covariance.to_numpy()
        if not np.isnan(cov).any():
            rng = np.random.default_rng(random_state)
            limits = self.components[["ci_low", "ci_high"]].to_numpy()
            draws = pivot_draws(variances, cov, _N_DRAWS, rng, limits)
        rows = []
        for name, weights in (("G", relative), ("Phi", absolute)):
            error = float(weights @ variances)
            if np.isnan(cov).any():
                low, high, why = np.nan, np.nan, self._covariance_source
            else:
                low, high, why = ratio_interval(draws, obj, weights, confidence)
            method = f"no interval: {why}" if why else f"{_RATIO_METHOD}; {self._covariance_source}"
            rows.append(
                {
                    "coefficient": name,
                    "estimate": universe / (universe + error) if universe + error > 0 else np.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "error_variance": error,
                    "n_attempts": n_attempts,
                    "method": method,
                }
            )
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        """Components and coefficients as text."""
        return (
            f"G study of {self.fit.formula.response!r}: object {self.object!r}, facets {self.facets[1:]}\n"
            f"{self.components.to_string(index=False)}\n\n{self.coefficients.to_string(index=False)}"
        )


@reads_frame(keys=("facets",), numbers=("score",))
def variance_components(
    data: pd.DataFrame,
    score: str,
    facets: list[str],
    *,
    n_attempts: int = 1,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> VarianceComponents:
    """Variance decomposition of a judge study (generalizability theory G study).

    Every facet and every interaction of facets is a random effect; the residual is the
    attempt-to-attempt noise within a cell (with one score per cell it also holds the
    highest interaction).

    Parameters
    ----------
    data : pandas.DataFrame
        Long format, one row per attempt.
    score : str
        Score column.
    facets : list of str
        Facet columns, the object of measurement first, e.g. ``["item_id", "prompt_id",
        "model"]``.
    n_attempts : int, default 1
        Attempts averaged per condition for the G and Phi coefficients.
    confidence : float, default 0.95
        Interval level.
    random_state : int, Generator or None, default 0
        Seed of the draws behind the G and Phi intervals.

    Returns
    -------
    VarianceComponents
        ``.components`` (``component, estimate, share, std_error, ci_low, ci_high, df,
        method``), ``.coefficients`` (``coefficient, estimate, ci_low, ci_high,
        error_variance, n_attempts, method``), ``.covariance``, ``.d_study(...)`` for other
        designs.

    Notes
    -----
    Estimates are REML (:func:`lmer`). Intervals, as ``method`` says row by row:

    * balanced design, non-negative ANOVA estimates (closed form): Satterthwaite's, with
      estimate v = sum_k a_k MS_k, df = v^2 / sum_k (a_k MS_k)^2 / df_k and [df v /
      chi2_(1-alpha/2), df v / chi2_(alpha/2)] (Brennan 2001, sec. 6.1.2; exact chi-square
      for the residual); std_error = sqrt(2 sum_k (a_k MS_k)^2 / df_k);
    * balanced design with a component at zero: profile-likelihood intervals (lme4's
      ``confint``), which reach down to 0;
    * unbalanced design (lme4's penalised least squares): standard errors from the
      observed information, the inverse Hessian of the REML deviance in the variances,
      and Satterthwaite intervals with df = 2 (v / SE)^2 (SAS PROC MIXED ``COVTEST CL``),
      which equal the ANOVA ones when the same formula meets balanced data. A component at
      the boundary (relative SD below 1e-4, lme4's ``isSingular``) has no standard error (the
      normal theory fails at 0): it is held at 0 for the others, and its interval runs from
      0 to where the profiled REML deviance rises by chi2_1(confidence) (lme4's profile).

    G and Phi intervals are percentiles over joint draws of the components from their
    Satterthwaite pivots (see :meth:`VarianceComponents.d_study`).

    References
    ----------
    Brennan, R. L. (2001). Generalizability Theory. Springer.
    Satterthwaite, F. E. (1946). Biometrics Bulletin, 2(6), 110-114.
    Searle, S. R., Casella, G., & McCulloch, C. E. (1992). Variance Components. Wiley, ch. 6.
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations. Psychol Bull, 86, 420-428.

    Examples
    --------
    >>> sf = pd.DataFrame({"target": [t for t in range(1, 7) for _ in range(4)],
    ...                    "judge": list("ABCD") * 6,
    ...                    "rating": [9, 2, 5, 8, 6, 1, 3, 2, 8, 4, 6, 8,
    ...                               7, 1, 2, 6, 10, 5, 6, 9, 6, 2, 4, 7]})
    >>> g = variance_components(sf, "rating", ["target", "judge"])
    >>> g.coefficients[["coefficient", "estimate"]].round(4)  # Shrout-Fleiss ICC(3,4), ICC(2,4)
      coefficient  estimate
    0           G    0.9093
    1         Phi    0.6201

    """
    if not facets:
        raise DataError("facets must name at least one column (the object of measurement first)")
    require_columns(data, [score, *facets])
    check_confidence(confidence)
    numeric_column(data, score)
    counts = data.groupby(list(facets), observed=True).size()
    replicated = bool(counts.max() > 1)
    subsets = [c for k in range(1, len(facets) + 1) for c in combinations(facets, k)]
    if not replicated and len(facets) > 1:
        subsets = subsets[:-1]  # the top interaction is the residual
    # (one facet and one score per level: the term stays, for lmer to refuse it by name)
    formula = f"{score} ~ 1 + " + " + ".join(f"(1 | {':'.join(s)})" for s in subsets)
    fit = lmer(formula, data)
    estimates = fit.varcorr()["vcov"].to_numpy()
    names = [":".join(s) for s in subsets] + ["residual"]
    inference = _component_inference(fit, confidence)
    positive = np.maximum(estimates, 0)
    components = pd.DataFrame(
        {
            "component": names,
            "estimate": estimates,
            "share": positive / positive.sum(),
            "std_error": inference.std_error,
            "ci_low": inference.low,
            "ci_high": inference.high,
            "df": inference.df,
            "method": inference.method,
        }
    )
    levels = {f: int(data.loc[fit.design.data.index, f].nunique()) for f in facets[1:]}
    result = VarianceComponents(
        components,
        pd.DataFrame(),
        facets[0],
        list(facets),
        levels,
        replicated,
        pd.DataFrame(inference.cov, index=names, columns=names),
        fit,
        inference.cov_source,
    )
    result.coefficients = result.d_study(
        n_attempts, confidence=confidence, random_state=random_state
    )
    return result


@dataclass
class _Inference:
    std_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    df: np.ndarray
    method: list[str]
    cov: np.ndarray
    cov_source: str  # where ``cov`` comes from, or why it is NaN


def _component_inference(fit: LmerResult, confidence: float) -> _Inference:
    """Standard errors, intervals and covariance of the components, by engine (see
    :func:`variance_components`, Notes)."""
    k = len(fit.formula.random) + 1
    nan, no_cov = np.full(k, np.nan), np.full((k, k), np.nan)
    strata = fit._strata
    if strata is not None and strata.closed_form:
        weights = np.linalg.inv(strata.design[strata.informative]) * strata.ms  # a_jk * MS_k
        est = weights.sum(axis=1)
        cov = 2 * (weights / strata.df) @ weights.T  # Var MS_k = 2 MS_k^2 / df_k
        df = est**2 / np.sum(weights**2 / strata.df, axis=1)
        low, high = satterthwaite_interval(est, df, confidence)
        method = ["REML = ANOVA (closed form); Satterthwaite interval"] * k
        for j in np.flatnonzero(satterthwaite_fails(df, low, high)):
            low[j], high[j] = profile_interval(strata, j, confidence)
            method[j] = f"REML = ANOVA (closed form); {_SMALL_DF.format(df=df[j])}"
        source = "component covariance from the mean squares"
        method = _state_no_upper(method, high)
        return _Inference(np.sqrt(np.diag(cov)), low, high, df, method, cov, source)
    if strata is not None:
        cov = reml_covariance(lambda t: strata_deviance(strata, t), strata.theta, strata.theta > 0)
        low, high = np.array([profile_interval(strata, j, confidence) for j in range(k)]).T
        method = _state_no_upper(["REML (boundary); profile-likelihood interval"] * k, high)
        if cov is None:
            return _Inference(nan, low, high, nan, method, no_cov, _NOT_MAX)
        se = np.where(strata.theta > 0, np.sqrt(np.diag(cov)), np.nan)
        return _Inference(se, low, high, nan, method, cov, _OBSERVED)
    est = fit.varcorr()["vcov"].to_numpy()
    free = np.sqrt(est / est[-1]) >= _SINGULAR_TOL
    cov = reml_covariance(fit._pls.deviance, est, free)
    engine = "REML (penalised least squares)"
    if cov is None:
        method = [f"{engine}; no interval: {_NOT_MAX}"] * k
        return _Inference(nan, nan, nan, nan, method, no_cov, _NOT_MAX)
    se = np.where(free, np.sqrt(np.diag(cov)), np.nan)
    df = 2 * (est / se) ** 2
    low, high = satterthwaite_interval(est, df, confidence)
    method = [
        f"{engine}; Satterthwaite interval, df = 2 (estimate / std_error)^2 from the observed "
        "REML information"
    ] * k
    for j in np.flatnonzero(~free):
        low[j], high[j] = profile_limits(fit._pls.deviance, est, j, confidence)
        method[j] = (
            f"{engine}; at the boundary (relative SD < {_SINGULAR_TOL:g}): no standard error; "
            "profile-likelihood interval from 0"
        )
    # The residual always has many df; profile_limits profiles the components only.
    for j in np.flatnonzero(free[:-1] & satterthwaite_fails(df, low, high)[:-1]):
        low[j], high[j] = profile_limits(fit._pls.deviance, est, j, confidence)
        method[j] = f"{engine}; {_SMALL_DF.format(df=df[j])}"
    return _Inference(se, low, high, df, _state_no_upper(method, high), cov, _OBSERVED)


def _state_no_upper(method: list[str], high: np.ndarray) -> list[str]:
    """Say so where a profile interval has no upper limit (``inf``, :func:`profile_search`)."""
    return [m + _NO_UPPER if np.isposinf(h) else m for m, h in zip(method, high)]


_N_DRAWS = 20_000
_RATIO_METHOD = (
    f"percentiles over {_N_DRAWS:,} joint draws of the components from their Satterthwaite "
    "pivots (Gaussian copula)"
)
_OBSERVED = "component covariance from the observed REML information, zero components held at 0"
_NOT_MAX = "the observed REML information is not positive definite (not at a maximum)"
# Why not inf: below 1 df the Satterthwaite limits are not merely wide but meaningless (1e120
# times the estimate at df 0.03; near df 0 the lower one above the estimate, the upper one
# past the largest float), while the profile likelihood bounds the variance (lme4's answer).
_SMALL_DF = "Satterthwaite df = {df:.2g} < 1, too few for a chi-square interval: profile-likelihood interval"
_NO_UPPER = (
    "; no upper limit (inf): the profile deviance stays within the chi-square cutoff however "
    "large the variance, the data cannot tell it from infinity"
)


# ---- models of spread -------------------------------------------------------------------------
@reads_frame(formula="formula", numbers=("score",))
def spread_model(
    formula: str,
    data: pd.DataFrame,
    *,
    score: str = "total",
    zero_sd: Literal["half_min", "drop"] = "half_min",
    method: Method = "auto",
) -> LmerResult:
    """Mixed model of the spread of repeated scores: which conditions make the judge consistent.

    The repeated attempts of each cell (every combination of the columns the formula
    names, e.g. item x prompt x model) are reduced to their standard deviation, which is
    then modelled with :func:`lmer`.

    Parameters
    ----------
    formula : str
        lme4 formula whose response is ``log_sd`` (natural log of the SD) or ``sd``, e.g.
        ``"log_sd ~ prompt_id * model + (1 | item_id)"``.
    data : pandas.DataFrame
        The attempt log, one row per attempt.
    score : str, default "total"
        Score column whose spread is modelled.
    zero_sd : {"half_min", "drop"}, default "half_min"
        For ``log_sd``, cells whose attempts all agree (SD = 0, log undefined):
        ``"half_min"`` replaces their SD by half the smallest positive SD in the data (a
        common convention for logs of zeros; it keeps perfectly consistent cells as the
        most consistent); ``"drop"`` removes them. Either way a warning says how many.
    method : {"auto", "anova", "pls"}
        As in :func:`lmer`.

    Returns
    -------
    LmerResult
        Its ``design.data`` holds the per-cell table: the cell columns, ``n`` (attempts),
        ``sd`` (ddof = 1) and ``log_sd``.

    Warns
    -----
    UserWarning
        Cells with fewer than two attempts (no SD) are dropped; zero-SD cells handled.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> log = pd.DataFrame([(i, p, a) for i in range(200) for p in ("p1", "p2") for a in range(5)],
    ...                    columns=["item_id", "prompt_id", "attempt"])
    >>> log["total"] = rng.normal(10, np.where(log["prompt_id"] == "p1", 1.0, 2.0))
    >>> m = spread_model("log_sd ~ prompt_id + (1 | item_id)", log)
    >>> fe = m.fixef().set_index("term")["estimate"]
    >>> round(float(fe["prompt_id[T.p2]"]), 2)  # truth: log 2 = 0.69
    0.66

    """
    check_choice("zero_sd", zero_sd, ["half_min", "drop"])
    parsed = parse_formula(formula)
    check_choice("response of a spread model", parsed.response, ["log_sd", "sd"])
    require_columns(data, [score])
    columns = list(parsed.grouping_factors)
    for term in patsy.ModelDesc.from_formula(parsed.fixed).rhs_termlist:
        for factor in term.factors:
            column = _factor_column(factor.code, data)
            if column is None:
                raise FormulaError(
                    f"spread_model: fixed term {factor.code!r} must be a column or C(column)"
                )
            columns.append(column)
    columns = list(dict.fromkeys(columns))
    require_columns(data, columns)
    scores = pd.Series(numeric_column(data, score), index=data.index)
    cells = (
        scores.groupby([data[c] for c in columns], observed=True)
        .agg(n="count", sd="std")
        .reset_index()
    )
    few = cells["n"] < 2
    if few.any():
        warn(f"spread_model: dropped {int(few.sum())} cells with fewer than 2 attempts")
        cells = cells[~few]
    if parsed.response == "log_sd":
        zero = cells["sd"] == 0
        if zero.all():
            raise DataError(
                "spread_model: every cell has SD 0; log_sd is undefined (model 'sd' instead)"
            )
        if zero.any():
            if zero_sd == "drop":
                cells = cells[~zero]
                what = "dropped"
            else:
                cells = cells.assign(sd=cells["sd"].where(~zero, cells.loc[~zero, "sd"].min() / 2))
                what = "set to half the smallest positive SD"
            warn(f"spread_model: {int(zero.sum())} cells with SD 0 {what}")
        cells = cells.assign(log_sd=np.log(cells["sd"]))
    return lmer(formula, cells.reset_index(drop=True), method=method)
