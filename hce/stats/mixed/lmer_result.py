"""The fitted model of :func:`~hce.stats.mixed.lmer_fit.lmer`: fixed effects, variance
components, random effects, ICCs, likelihood-ratio tests, contrasts and the lme4-style summary.
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

from hce._checks import check_confidence
from hce.errors import DataError, FormulaError, HceWarning
from hce.stats.mixed.balanced import StrataFit
from hce.stats.mixed.formula import Design, MixedFormula
from hce.stats.mixed.pls import PlsProblem

Method = Literal["auto", "anova", "pls"]
_SINGULAR_TOL = 1e-4  # lme4's isSingular(): a relative standard deviation below 1e-4


class SingularFitWarning(HceWarning):
    """A variance is (near) zero or a correlation is +-1: the fit is on the boundary."""


class ConvergenceWarning(HceWarning):
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
    design : Design
        The model matrices and the data used (``design.data``).

    Examples
    --------
    >>> from hce.stats import lmer, simulated_log
    >>> log = simulated_log(n_items=10, n_attempts=3, noise={"A": 0.3, "B": 0.6}, random_state=1)
    >>> m = lmer("total ~ condition_id + (1 | item_id)", log)
    >>> m.n, m.ngroups
    (60, {'item_id': 10})
    >>> m.fixef()[["term", "estimate"]].round(3)
                    term  estimate
    0        (Intercept)    12.800
    1  condition_id[T.B]    -0.433
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

        Parameters
        ----------
        confidence : float, default 0.95
            Level of the Wald intervals.

        Returns
        -------
        pandas.DataFrame
            One row per coefficient: ``term``, ``estimate``, ``std_error``, ``statistic``
            (t), ``df``, ``p_value``, ``ci_low``, ``ci_high``, ``method``.
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
            ``group``, ``var1``, ``var2``, ``vcov``, ``sdcor``.
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
            ``group``, ``level``, ``term``, ``estimate``.
            ``group``, ``level``, ``term`` (``(Intercept)`` or the slope), ``estimate``.

        """
        return self._ranef.copy()

    def icc(self) -> pd.DataFrame:
        """Adjusted and conditional intraclass correlations (Nakagawa et al. 2017).

        Returns
        -------
        pandas.DataFrame
            ``type`` (adjusted, conditional) and ``estimate``.
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

        Parameters
        ----------
        other : LmerResult
            The other model, fitted to the same rows.

        Returns
        -------
        pandas.DataFrame
            One row per model: ``model``, ``npar``, ``aic``, ``bic``, ``loglik``, ``deviance``,
            and on the second row ``statistic`` (chi-squared), ``df``, ``p_value``.
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
                m if not m.reml else _refit_ml(m)
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

        Parameters
        ----------
        factor : str
            A categorical fixed factor of the model.
        confidence : float, default 0.95
            Level of the (unadjusted) intervals.

        Returns
        -------
        pandas.DataFrame
            One row per pair: ``a``, ``b``, ``estimate``, ``std_error``, ``ci_low``,
            ``ci_high``, ``statistic``, ``df``, ``p_value``, ``p_adjusted``, ``method``.
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
        """The fit as lme4's ``summary()`` prints it.

        Returns
        -------
        str
        """
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


def _refit_ml(fit: LmerResult) -> LmerResult:
    """The same model refitted by ML (likelihood-ratio tests compare ML fits)."""
    from hce.stats.mixed.lmer_fit import lmer  # lmer_fit imports this module

    return lmer(fit.formula.formula, fit.design.data, REML=False)
