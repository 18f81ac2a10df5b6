"""The fitted model of :func:`~hce.stats.mixed.lmer_fit.lmer`: fixed effects, variance
components, random effects, ICCs, likelihood-ratio tests, contrasts and the lme4-style summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_confidence
from hce._docstrings import fill_doc
from hce.errors import DataError, HceWarning
from hce.stats.mixed.balanced import StrataFit
from hce.stats.mixed.convergence import NOT_CONVERGED, Unconverged, mark_inference, shows_inference
from hce.stats.mixed.ddf import VarparModel
from hce.stats.mixed.emmeans import Adjust, emmeans_table, marginal_means
from hce.stats.mixed.formula import Design, MixedFormula
from hce.stats.mixed.lmer_tests import T_METHOD, Ddf, FixedEffectTests, lrt_table, type3_table
from hce.stats.mixed.pls import PlsProblem
from hce.stats.mixed.type3 import type3_hypotheses
from hce.stats.tests import p_adjust  # not statsmodels': its import loads polars, 0.1 s of every report

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
    _varpar: VarparModel = field(repr=False)
    _refit: Callable[..., LmerResult] = field(repr=False)
    _strata: StrataFit | None = field(repr=False, default=None)
    _problem: PlsProblem | None = field(repr=False, default=None)

    # ---- accessors -------------------------------------------------------------------
    @fill_doc
    def fixef(
        self, confidence: float = 0.95, ddf: Ddf = "satterthwaite", unconverged: Unconverged = "hide"
    ) -> pd.DataFrame:
        """Fixed-effect estimates with t tests, as lmerTest's ``summary(m)``.

        Parameters
        ----------
        %(confidence)s
        ddf : {"satterthwaite", "kenward-roger", "wald"}, default "satterthwaite"
            Denominator degrees of freedom: lmerTest's Satterthwaite approximation,
            pbkrtest's Kenward-Roger (adjusted standard errors too; REML fits only), or none
            (a Wald z test, as lme4 leaves it).
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            One row per coefficient: ``term``, ``estimate``, ``std_error``, ``statistic``
            (t value; z for ``"wald"``), ``df``, ``p_value``, ``ci_low``, ``ci_high``,
            ``method``.

        Notes
        -----
        Satterthwaite: ``df = 2 v^2 / (g' A g)`` with ``v`` the contrast's variance, ``g``
        its gradient in the variance parameters and ``A`` their asymptotic covariance from
        the Hessian of the deviance (``hce.stats.mixed.ddf``); the same computation
        whichever engine fitted the model, computed once per fit (0.4 s on 43,680 rows with
        2,503 random effects). Kenward-Roger works with q x q matrices, q the number of random
        effects: 28 s there under heavy load, one q x q Cholesky inverse (pbkrtest works with
        n x n matrices, which would not fit in memory).

        References
        ----------
        Kuznetsova, A., Brockhoff, P. B., & Christensen, R. H. B. (2017). lmerTest package.
        J Stat Softw, 82(13). Kenward, M. G., & Roger, J. H. (1997). Biometrics, 53(3),
        983-997.

        %(lmer_example)s
        >>> m = lmer("y ~ x + (1 | g)", d)
        >>> m.fixef()[["term", "df"]].round(2)   # lmerTest 3.1-3: df 3.24765 and 3
                  term    df
        0  (Intercept)  3.25
        1            x  3.00

        """
        check_confidence(confidence)
        eye = np.eye(len(self._beta))
        if not shows_inference(self.converged, unconverged):
            ddf = "wald"  # nothing of the df is shown: skip its computation
        rows = [self._tests.linear(eye[i], confidence, ddf) for i in range(len(self._beta))]
        out = pd.DataFrame(rows)
        out.insert(0, "term", self.design.x_names)
        return mark_inference(out, self.converged, unconverged)

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

    @fill_doc
    def anova(
        self,
        other: LmerResult | None = None,
        ddf: Ddf = "satterthwaite",
        unconverged: Unconverged = "hide",
    ) -> pd.DataFrame:
        """Type III F tests of the fixed terms (lmerTest's ``anova(m)``), or a
        likelihood-ratio test against ``other`` (R's ``anova(m1, m2)``).

        Parameters
        ----------
        other : LmerResult, optional
            A second model of the same rows: both are refitted by ML if needed and
            compared by a likelihood-ratio test.
        ddf : {"satterthwaite", "kenward-roger", "wald"}, default "satterthwaite"
            Denominator df of the F tests (see :meth:`fixef`); ignored with ``other``.
        %(unconverged)s
            With ``other``: the test is hidden when either fit did not converge.

        Returns
        -------
        pandas.DataFrame
            Without ``other``: one row per fixed term (the intercept has none), ``term``,
            ``statistic`` (F), ``num_df`` (numerator df), ``den_df`` (denominator df), ``p_value``,
            ``method``. With ``other``: one row per model, fewer parameters first:
            ``model``, ``npar``, ``aic``, ``bic``, ``loglik``, ``deviance``, ``statistic``
            (chi-square), ``df``, ``p_value`` (NaN on the first row).

        Notes
        -----
        The Type III hypothesis of a term tests it averaged over the levels of the other
        factors with equal weights, built as lmerTest builds it from the treatment-coded
        design (``hce.stats.mixed.type3``). Its F statistic is ``(L beta)' (L C L')^-1
        (L beta) / q``; Satterthwaite's denominator df combines the df of the q rotated t
        tests, ``2 E / (E - q)`` with ``E = sum nu_m / (nu_m - 2)``; Kenward-Roger's uses the
        adjusted covariance and scales F (pbkrtest's ``KRmodcomp``).

        References
        ----------
        Kuznetsova et al. (2017), J Stat Softw 82(13). Halekoh, U., & Hojsgaard, S. (2014).
        J Stat Softw, 59(9).

        %(lmer_example)s
        >>> lmer("y ~ x + (1 | g)", d).anova()[["term", "num_df", "den_df"]].round(2)
          term  num_df  den_df
        0    x       1     3.0

        """
        if other is None:
            design = self.design
            hypotheses = type3_hypotheses(
                design.X, design.design_info, design.data, design.formula.fixed_formula
            )
            table = type3_table(self._tests, hypotheses, ddf)
            return mark_inference(table, self.converged, unconverged)
        if self.n != other.n or not self.design.data.index.equals(other.design.data.index):
            raise DataError(
                f"anova needs both models fitted to the same rows ({self.n} vs {other.n}); "
                "drop missing values first"
            )
        fits = [m if not m.reml else m._refit(REML=False) for m in (self, other)]
        return mark_inference(lrt_table(fits), all(m.converged for m in fits), unconverged)

    @fill_doc
    def contrasts(
        self,
        factor: str,
        confidence: float = 0.95,
        ddf: Ddf = "satterthwaite",
        unconverged: Unconverged = "hide",
    ) -> pd.DataFrame:
        """Pairwise differences of estimated marginal means of ``factor``, Holm-adjusted.

        Marginal means average the model's predictions over a grid of all levels of the
        other categorical fixed factors, with equal weights (numeric covariates at their
        mean), as R's ``emmeans(m, pairwise ~ factor, adjust = "holm", lmer.df = ddf)``; each
        difference is tested as lmerTest's ``contest1D`` tests it.

        Parameters
        ----------
        factor : str
            A categorical fixed effect.
        %(confidence)s
            Here: the (unadjusted) intervals.
        ddf : {"satterthwaite", "kenward-roger", "wald"}, default "satterthwaite"
            Denominator df of each t test (see :meth:`fixef`).
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            One row per pair: ``a``, ``b``, ``estimate``, ``std_error``, ``ci_low``,
            ``ci_high``, ``statistic``, ``df``, ``p_value``, ``p_adjusted``, ``method``.
            One row per pair: ``a``, ``b``, ``estimate`` (mean a - mean b), ``std_error``,
            ``ci_low``, ``ci_high`` (unadjusted), ``statistic``, ``df``, ``p_value``,
            ``p_adjusted`` (Holm), ``method``.

        """
        out = self.emmeans(factor, pairwise=True, adjust="none", confidence=confidence, ddf=ddf,
                           unconverged=unconverged)  # fmt: skip
        pairs = list(combinations(marginal_means(self.design, factor)[0], 2))
        out.insert(0, "a", [a for a, _ in pairs])
        out.insert(1, "b", [b for _, b in pairs])
        shown = shows_inference(self.converged, unconverged)
        out["p_adjusted"] = p_adjust(out["p_value"].to_numpy(), "holm") if len(out) and shown else np.nan
        cols = ["a", "b", "estimate", "std_error", "ci_low", "ci_high", "statistic", "df", "p_value", "p_adjusted"]
        return out[[*cols, "method"]]

    @fill_doc
    def emmeans(
        self,
        factor: str,
        pairwise: bool = False,
        adjust: Adjust = "tukey",
        confidence: float = 0.95,
        ddf: Ddf = "satterthwaite",
        unconverged: Unconverged = "hide",
    ) -> pd.DataFrame:
        """Estimated marginal means of ``factor``, or their pairwise differences, as R's emmeans.

        %(emmeans_grid)s
        R: ``emmeans(m, ~ factor, lmer.df = ddf)``.

        Parameters
        ----------
        %(emmeans_factor)s
        %(confidence)s
        ddf : {"satterthwaite", "kenward-roger", "wald"}, default "satterthwaite"
            Denominator df (see :meth:`fixef`); emmeans' ``lmer.df`` (``"asymptotic"`` is
            ``"wald"``).
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            Means: one row per level, the column ``factor`` (the level), ``estimate``,
            ``std_error``, ``df``, ``ci_low``, ``ci_high``, ``method``. Contrasts:
            ``contrast`` (``"c1 - c2"``, named as emmeans names it), ``estimate``,
            ``std_error``, ``df``, ``statistic`` (t), ``p_value`` and ``ci_low``,
            ``ci_high`` (both adjusted), ``method``.

        Examples
        --------
        >>> import pandas as pd
        >>> from hce.stats import lmer
        >>> d = pd.DataFrame({"g": list("aabbccdd") * 2, "x": list("uv") * 8,
        ...                   "y": [1.0, 2.1, 2.0, 2.9, 0.5, 1.8, 1.4, 2.2,
        ...                         1.2, 1.9, 2.2, 3.1, 0.4, 2.0, 1.1, 2.5]})
        >>> m = lmer("y ~ x + (1 | g)", d)
        >>> m.emmeans("x")[["x", "estimate", "std_error", "df"]].round(4)  # R: 1.2250 0.294219 3.16
           x  estimate  std_error     df
        0  u    1.2250     0.2942  3.162
        1  v    2.3125     0.2942  3.162
        >>> m.emmeans("x", pairwise=True)[["contrast", "estimate", "df", "statistic"]].round(3)
          contrast  estimate    df  statistic
        0    u - v    -1.088  11.0    -11.451
        """
        levels, rows = marginal_means(self.design, factor)

        def se_df(gradient: np.ndarray) -> tuple[float, float]:
            row = self._tests.linear(gradient, confidence, ddf)
            return row["std_error"], row["df"]

        method = T_METHOD[ddf]
        table = emmeans_table(factor, levels, rows @ self._beta, rows, se_df, pairwise=pairwise,
                              adjust=adjust, confidence=confidence, method=method)  # fmt: skip
        return mark_inference(table, self.converged, unconverged)

    @property
    def npar(self) -> int:
        """Number of estimated parameters (fixed, variance-covariance and residual)."""
        return len(self._beta) + len(self._varcorr)

    # ---- display ---------------------------------------------------------------------
    @fill_doc
    def summary(self, unconverged: Unconverged = "hide") -> str:
        """The fit as lme4's ``summary()`` prints it.

        Parameters
        ----------
        %(unconverged)s

        Returns
        -------
        str
        """
        # lme4 prints "at convergence" whatever happened and warns at the end; a fit that
        # stopped short says so where its criterion is printed, not only in the warnings
        stopped = "where the optimiser stopped: the fit did not converge"
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
                *([] if self.converged else [f"(taken {stopped})"]),
                "",
            ]
        else:
            reached = "at convergence" if self.converged else stopped
            lines += [f"REML criterion {reached}: {-2 * self.loglik:.1f}", ""]
        lines += [
            "Scaled residuals: ",
            _table([["Min", "1Q", "Median", "3Q", "Max"], [f"{v:.4f}" for v in q]]),
            "",
        ]
        lines += ["Random effects:", self._random_table()]
        groups = ", ".join(f"{g}, {k}" for g, k in self.ngroups.items())
        lines += [f"Number of obs: {self.n}, groups:  {groups}", "", "Fixed effects:"]
        fixed = self.fixef(ddf="wald", unconverged="show")  # the t values lme4 prints need no df
        if shows_inference(self.converged, unconverged):
            lines.append(coefficient_table(fixed, "t value"))
        else:
            lines += [estimates_only_table(fixed), "", UNCONVERGED_NOTE]
        if self.singular:
            lines += ["", "boundary (singular) fit: see help('isSingular') in lme4"]
        warned = [m for m in self.messages if not m.startswith("boundary")]
        if not self.converged:
            # as lme4's .prt.warn: the optimiser's code, then the convergence messages
            lines += ["", "optimizer (hce: PLS) convergence code: -1 (the fit did not converge)"]
        if warned:
            lines += [""] + [f"Warning: {m}" for m in warned]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return self.summary()

    # ---- internals -------------------------------------------------------------------
    @cached_property
    def _tests(self) -> FixedEffectTests:
        return FixedEffectTests(self._beta, self._cov_beta, self._varpar, self._kr_inputs, self.reml)

    def _kr_inputs(self) -> tuple:
        terms = [
            (g.codes, g.Z, self._cov_matrix(name, g.z_names))
            for name, g in self.design.groupings.items()
        ]
        return self.design.X, terms, self.sigma2

    def _cov_matrix(self, group: str, names: list[str]) -> np.ndarray:
        vc = self._varcorr[self._varcorr["group"] == group]
        cov = np.zeros((len(names), len(names)))
        for r in vc.itertuples():
            i = names.index(r.var1)
            j = i if pd.isna(r.var2) else names.index(r.var2)
            cov[i, j] = cov[j, i] = r.vcov  # a covariance row holds the covariance (its
            # correlation is NaN where a variance is 0)
        return cov

    def _random_table(self) -> str:
        return random_effects_table(self._varcorr)


def random_effects_table(vc: pd.DataFrame) -> str:
    """The ``Random effects:`` table of lme4's summary from ``varcorr()`` rows."""
    body = [["Groups", "Name", "Variance", "Std.Dev.", "Corr"]]
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


def coefficient_table(
    table: pd.DataFrame,
    statistic: str,
    *,
    p_text: Callable[[float], str] | None = None,
    stars: Callable[[float], str] | None = None,
    statistic_decimals: int | None = None,
) -> str:
    """A coefficient table from ``fixef()`` rows, as R's summaries lay it out (``printCoefmat``).

    Columns: the term, ``Estimate``, ``Std. Error`` and ``statistic`` (``"t value"``, ``"z value"``);
    ``Pr(>|t|)`` or ``Pr(>|z|)`` as ``p_text`` writes each p-value, when given; a last column of
    ``stars``, when given. The numbers share decimals per column (:func:`_format_column`), the
    statistic's fixed at ``statistic_decimals`` when given (ordinal prints three).
    """
    head = ["", "Estimate", "Std. Error", statistic]
    head += [f"Pr(>|{statistic[0]}|)"] if p_text is not None else []
    head += [""] if stars is not None else []
    body = [head]
    for r in table.itertuples():
        row = [r.term, r.estimate, r.std_error, r.statistic]
        row += [p_text(r.p_value)] if p_text is not None else []
        row += [stars(r.p_value)] if stars is not None else []
        body.append(row)
    for col in (1, 2) if statistic_decimals is not None else (1, 2, 3):
        _format_column(body, col)
    if statistic_decimals is not None:
        for row in body[1:]:
            row[3] = f"{row[3]:.{statistic_decimals}f}"
    return _table(body, left_cols=1)


def estimates_only_table(table: pd.DataFrame) -> str:
    """The coefficient table of a fit that did not converge: each estimate, and "did not
    converge" where R prints the standard error, the statistic and the p value."""
    body = [["", "Estimate", ""]] + [[r.term, r.estimate, NOT_CONVERGED] for r in table.itertuples()]
    _format_column(body, 1)
    return _table(body, left_cols=1)


UNCONVERGED_NOTE = (
    "Standard errors, tests and intervals are not shown: the fit did not converge (see the "
    "warnings); unconverged='show' prints them at the point reached."
)


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

