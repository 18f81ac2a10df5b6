"""The fitted model of :func:`~hce.stats.mixed.glmer_fit.glmer`: Wald tests of the fixed
effects, variance components, conditional modes and the lme4-style summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence
from hce._docstrings import fill_doc
from hce.stats.mixed.emmeans import Adjust, emmeans_table, marginal_means, wald_se_df
from hce.stats.mixed.formula import Design, MixedFormula
from hce.stats.mixed.convergence import Unconverged, mark_inference, shows_inference
from hce.stats.mixed.lmer_result import (
    UNCONVERGED_NOTE,
    _table,
    coefficient_table,
    estimates_only_table,
    random_effects_table,
)
from hce.stats.mixed.pirls import Family


@dataclass
class GlmerResult:
    """A fitted generalised linear mixed model; build with :func:`glmer`.

    Attributes
    ----------
    formula : MixedFormula
    family, link : str
        ``"binomial"`` or ``"poisson"``; ``"logit"``, ``"probit"``, ``"cloglog"`` or ``"log"``.
    nAGQ : int
        0 (lme4's fast PIRLS-only fit), 1 (Laplace) or the quadrature points per level.
    n : int
        Observations used.
    ngroups : dict
        Number of levels of each grouping factor.
    loglik : float
        Log-likelihood at the estimates, as lme4's ``logLik`` (Laplace or quadrature).
    deviance : float
        ``-2 * loglik``, the ``deviance`` lme4's summary prints.
    theta : ndarray
        lme4's ``theta``: the relative Cholesky factors of the random-effect covariances.
    converged : bool
        lme4's convergence checks passed (``checkConv``: scaled gradient below 0.002 and
        a positive definite Hessian), or the fit is singular, where lme4 checks no more.
    singular : bool
        Boundary fit (lme4's ``isSingular``): a ``theta`` on the diagonal below 1e-4.
    messages : list of str
        Convergence and boundary messages, also emitted as warnings.
    fitted : ndarray
        Conditional means ``mu`` at the estimates and modes, row order of the data used.
    vcov_method : str
        ``"Hessian"`` (lme4's default: the finite-difference Hessian of the deviance in
        ``theta`` and ``beta``) or ``"RX"`` (the PIRLS cross products, lme4's fallback).
    design : Design
        The model matrices and the data used (``design.data``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from hce.stats import glmer
    >>> rng = np.random.default_rng(3)
    >>> d = pd.DataFrame({"item": np.repeat(np.arange(40), 6), "condition": np.tile(["a", "b"], 120)})
    >>> eta = -0.2 + 0.8 * (d["condition"] == "b") + rng.normal(0, 1, 40)[d["item"]]
    >>> d["verdict"] = (rng.random(240) < 1 / (1 + np.exp(-eta))).astype(int)
    >>> m = glmer("verdict ~ condition + (1 | item)", d)
    >>> m.fixef()["term"].tolist(), m.singular
    (['(Intercept)', 'condition[T.b]'], False)
    """

    formula: MixedFormula
    family: str
    link: str
    nAGQ: int  # noqa: N815 - lme4's name
    n: int
    ngroups: dict[str, int]
    loglik: float
    theta: np.ndarray
    converged: bool
    singular: bool
    messages: list[str]
    fitted: np.ndarray
    vcov_method: str
    design: Design = field(repr=False)
    _beta: np.ndarray = field(repr=False)
    _cov_beta: np.ndarray = field(repr=False)
    _varcorr: pd.DataFrame = field(repr=False)
    _ranef: pd.DataFrame = field(repr=False)
    _pearson: np.ndarray = field(repr=False)

    @property
    def deviance(self) -> float:
        """``-2 * loglik``."""
        return -2.0 * self.loglik

    @property
    def npar(self) -> int:
        """Estimated parameters: fixed effects and ``theta``."""
        return len(self._beta) + len(self.theta)

    @property
    def aic(self) -> float:
        """Akaike's criterion, ``deviance + 2 npar``."""
        return self.deviance + 2 * self.npar

    @property
    def bic(self) -> float:
        """Schwarz's criterion, ``deviance + log(n) npar``."""
        return self.deviance + np.log(self.n) * self.npar

    @fill_doc
    def fixef(self, confidence: float = 0.95, unconverged: Unconverged = "hide") -> pd.DataFrame:
        """Fixed-effect estimates with Wald z tests and intervals, as lme4's summary.

        Parameters
        ----------
        %(confidence)s
            Here: the Wald intervals (R's ``confint(m, method = "Wald")``).
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            One row per coefficient: ``term``, ``estimate``, ``std_error``, ``statistic``
            (z value), ``df`` (``inf``: a normal reference), ``p_value`` (``Pr(>|z|)``),
            ``ci_low``, ``ci_high``, ``method``.

        """
        check_confidence(confidence)
        se = np.sqrt(np.diag(self._cov_beta))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self._beta / se
        crit = stats.norm.ppf(0.5 + confidence / 2)
        return pd.DataFrame(
            {
                "term": self.design.x_names,
                "estimate": self._beta,
                "std_error": se,
                "statistic": z,
                "df": np.inf,
                "p_value": 2 * stats.norm.sf(np.abs(z)),
                "ci_low": self._beta - crit * se,
                "ci_high": self._beta + crit * se,
                "method": f"Wald z ({self.vcov_method})",
            }
        ).pipe(mark_inference, self.converged, unconverged)

    @fill_doc
    def emmeans(
        self,
        factor: str,
        pairwise: bool = False,
        adjust: Adjust = "tukey",
        confidence: float = 0.95,
        scale: Literal["link", "response"] = "link",
        unconverged: Unconverged = "hide",
    ) -> pd.DataFrame:
        """Estimated marginal means of ``factor``, or their pairwise differences, as R's emmeans.

        %(emmeans_grid)s
        Tests are Wald z (df = inf), as emmeans tests a glmer.

        Parameters
        ----------
        %(emmeans_factor)s
        %(confidence)s
        scale : {"link", "response"}, default "link"
            ``"link"``: log-odds (log rates) and their differences (R: ``emmeans(m, ~ f)``).
            ``"response"``: probabilities (rates), SE by the delta method, intervals
            back-transformed (``type = "response"``); contrasts are differences of
            probabilities (``pairs(regrid(emmeans(m, ~ f)))``).
        %(unconverged)s

        Returns
        -------
        %(emmeans_z_returns)s

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from hce.stats import glmer
        >>> rng = np.random.default_rng(7)
        >>> d = pd.DataFrame({"item": np.repeat(np.arange(30), 9), "prompt": np.tile(["p1", "p2", "p3"], 90)})
        >>> eta = 0.3 * (d["prompt"] == "p2") - 0.6 * (d["prompt"] == "p3") + rng.normal(0, 0.8, 30)[d["item"]]
        >>> d["passed"] = (rng.random(len(d)) < 1 / (1 + np.exp(-eta))).astype(int)
        >>> m = glmer("passed ~ prompt + (1 | item)", d)
        >>> m.emmeans("prompt", scale="response")[["prompt", "estimate", "std_error"]].round(3)
          prompt  estimate  std_error
        0     p1     0.526      0.070
        1     p2     0.422      0.069
        2     p3     0.224      0.054
        >>> m.emmeans("prompt", pairwise=True, scale="response")[["contrast", "estimate", "p_value"]].round(3)
          contrast  estimate  p_value
        0  p1 - p2     0.104    0.396
        1  p1 - p3     0.302    0.000
        2  p2 - p3     0.198    0.019

        R (lme4 1.1-31, emmeans 1.8.4-1): probabilities 0.52613, 0.42180, 0.22399 (SE 0.0694,
        0.0683, 0.0537); ``pairs(regrid(...))`` 0.104, 0.302, 0.198 with Tukey p 0.393, 0.0001,
        0.0181.
        """
        check_choice("scale", scale, ["link", "response"])
        levels, rows = marginal_means(self.design, factor)
        family = Family(self.family, self.link)
        inverse = (family.mean, lambda eta: family.mu_eta(eta, family.mean(eta)))
        return emmeans_table(
            factor, levels, rows @ self._beta, rows, wald_se_df(self._cov_beta), pairwise=pairwise,
            adjust=adjust, confidence=confidence, method=f"Wald z ({self.vcov_method})",
            inverse_link=inverse if scale == "response" else None,
        ).pipe(mark_inference, self.converged, unconverged)  # fmt: skip

    def vcov(self) -> pd.DataFrame:
        """Covariance matrix of the fixed effects (lme4's ``vcov``), labelled by term.

        Returns
        -------
        pandas.DataFrame
            Square, index and columns the fixed-effect terms.

        """
        names = self.design.x_names
        return pd.DataFrame(self._cov_beta, index=names, columns=names)

    def varcorr(self) -> pd.DataFrame:
        """Random-effect variances and correlations, as lme4's ``as.data.frame(VarCorr(m))``.

        Returns
        -------
        pandas.DataFrame
            ``group``, ``var1``, ``var2`` (set on a covariance row), ``vcov`` (variance or
            covariance, on the linear-predictor scale), ``sdcor`` (SD or correlation). No
            residual row: the family fixes the variance of the response.

        """
        return self._varcorr.copy()

    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects (lme4's ``ranef``).

        Returns
        -------
        pandas.DataFrame
            ``group``, ``level``, ``term``, ``estimate`` (on the linear-predictor scale).

        """
        return self._ranef.copy()

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
        how = (
            "Laplace Approximation"
            if self.nAGQ == 1
            else "Adaptive Gauss-Hermite Quadrature, nAGQ = 0"
            if self.nAGQ == 0
            else f"Adaptive Gauss-Hermite Quadrature, nAGQ = {self.nAGQ}"
        )
        q = np.quantile(self._pearson, [0, 0.25, 0.5, 0.75, 1])
        df_resid = self.n - self.npar
        lines = [
            f"Generalized linear mixed model fit by maximum likelihood ({how}) [hce: glmer]",
            f" Family: {self.family}  ( {self.link} )",
            f"Formula: {self.formula.formula}",
            "",
            _table(
                [
                    ["AIC", "BIC", "logLik", "deviance", "df.resid"],
                    [f"{self.aic:.1f}", f"{self.bic:.1f}", f"{self.loglik:.1f}",
                     f"{self.deviance:.1f}", f"{df_resid}"],
                ]  # fmt: skip
            ),
            "",
            "Scaled residuals: ",
            _table([["Min", "1Q", "Median", "3Q", "Max"], [f"{v:.4f}" for v in q]]),
            "",
            "Random effects:",
            random_effects_table(self._varcorr),
        ]
        groups = ", ".join(f"{g}, {k}" for g, k in self.ngroups.items())
        lines += [f"Number of obs: {self.n}, groups:  {groups}", "", "Fixed effects:"]
        if shows_inference(self.converged, unconverged):
            lines.append(coefficient_table(self.fixef(unconverged="show"), "z value", p_text=_p_text))
        else:
            lines += [estimates_only_table(self.fixef(unconverged="show")), "", UNCONVERGED_NOTE]
        # as lme4's .prt.warn: the optimiser's code, then each of checkConv's messages
        status = "0 (OK)" if self.converged else "-1 (see the messages below)"
        lines += ["", f"optimizer (hce: projected Newton) convergence code: {status}", *self.messages]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def _p_text(p: float) -> str:
    """A p-value as R's ``format.pval`` prints it in a coefficient table."""
    return "< 2e-16" if p < 2e-16 else f"{p:.3g}"
