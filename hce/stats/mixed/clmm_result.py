"""The fitted model of :func:`~hce.stats.mixed.clmm_fit.clmm`: thresholds, fixed effects, random
intercepts and ordinal's summary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import linalg, stats

from hce._checks import check_confidence
from hce._docstrings import fill_doc
from hce.stats.mixed.clmm_laplace import Rows
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


@dataclass
class ClmmResult:
    """A fitted cumulative link mixed model; build with :func:`~hce.stats.clmm`.

    Attributes
    ----------
    formula : MixedFormula
    link : str
        ``logit``, ``probit`` or ``cloglog``.
    n_agq : int
        1 for the Laplace approximation, else the adaptive Gauss-Hermite nodes.
    n : int
        Observations used.
    ngroups : dict
        Levels of each grouping factor.
    levels : list of str
        Observed response levels, in order.
    loglik : float
        Approximate log-likelihood at the estimates (ordinal's ``logLik``).
    aic : float
        ``-2 loglik + 2 npar``.
    npar : int
        Thresholds, fixed effects and standard deviations.
    max_grad : float
        Largest absolute gradient of ``-loglik`` at the estimates (ordinal's ``max.grad``).
    cond_hessian : float
        Condition number of the Hessian (ordinal's ``cond.H``); above about 1e8 the model
        is close to unidentifiable.
    converged : bool
        No convergence message (small gradient, positive definite Hessian, not stopped by
        ``max_iter``); when False, the tables show estimates only unless asked.
    singular : bool
        A random-intercept standard deviation on the boundary (below 1e-3), as lme4's
        ``isSingular``; the standard errors are conditional on it being 0.
    messages : list of str
        Convergence messages, also emitted as warnings.
    n_eval : int
        Evaluations of the likelihood by the optimiser.
    design : Design
        The model matrices and the data used (``design.data``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from hce.stats import clmm
    >>> d = pd.DataFrame({"item": np.repeat(np.arange(20), 4), "condition": np.tile(["a", "b"], 40)})
    >>> d["score"] = (np.arange(80) * 7 % 5) // 2 + 1 + (d["condition"] == "b") + (d["item"] % 3 == 0)
    >>> clmm("score ~ condition + (1 | item)", d).thresholds()["term"].tolist()
    ['1|2', '2|3', '3|4', '4|5']
    """

    formula: MixedFormula
    link: str
    n_agq: int
    n: int
    ngroups: dict[str, int]
    levels: list[str]
    loglik: float
    aic: float
    npar: int
    max_grad: float
    cond_hessian: float
    converged: bool
    messages: list[str]
    n_eval: int
    design: Design = field(repr=False)
    _names: list[str] = field(repr=False)
    _n_thresholds: int = field(repr=False)
    _estimates: np.ndarray = field(repr=False)
    _std_errors: np.ndarray = field(repr=False)
    _varcorr: pd.DataFrame = field(repr=False)
    _ranef: pd.DataFrame = field(repr=False)
    # covariance of the thresholds and fixed effects (NaN where the Hessian is not invertible)
    _cov: np.ndarray | None = field(repr=False, default=None)
    singular: bool = False

    @classmethod
    def _from_fit(cls, *, formula: MixedFormula, design: Design, rows: Rows, y_levels: list[str],
                 x_names: list[str], n_agq: int, par: np.ndarray, value: float,
                 gradient: np.ndarray, hessian: np.ndarray, u: np.ndarray, cond_var: np.ndarray,
                 n_eval: int, messages: list[str]) -> ClmmResult:  # fmt: skip
        """Assemble the result from the optimiser's output (see ``clmm_fit._optimise``)."""
        n_theta = rows.n_levels - 1
        n_fixed = n_theta + rows.X.shape[1]
        names = [f"{a}|{b}" for a, b in zip(y_levels[:-1], y_levels[1:])] + x_names
        try:
            chol = linalg.cho_factor(hessian)
            cov = linalg.cho_solve(chol, np.eye(len(hessian)))[:n_fixed, :n_fixed]
            se = np.sqrt(np.diag(cov))
        except (linalg.LinAlgError, ValueError):
            cov = np.full((n_fixed, n_fixed), np.nan)
            se = np.full(n_fixed, np.nan)
        eig = np.linalg.eigvalsh(hessian)
        tau = par[n_fixed:]
        groups = list(design.groupings)
        varcorr = pd.DataFrame(
            {"group": groups, "var1": "(Intercept)", "var2": None, "vcov": tau**2, "sdcor": tau}
        )
        offsets = np.cumsum([0, *rows.n_groups])
        ranef = pd.concat(
            [
                pd.DataFrame(
                    {
                        "group": g,
                        "level": grouping.levels,
                        "term": "(Intercept)",
                        "estimate": tau[k] * u[offsets[k] : offsets[k + 1]],
                        "std_error": np.sqrt(cond_var[offsets[k] : offsets[k + 1]]),
                    }
                )
                for k, (g, grouping) in enumerate(design.groupings.items())
            ],
            ignore_index=True,
        )
        return cls(
            formula=formula, link=rows.link.name, n_agq=n_agq, n=len(rows.y),
            ngroups={g: len(grouping.levels) for g, grouping in design.groupings.items()},
            levels=list(y_levels), loglik=-value, aic=2 * value + 2 * len(par), npar=len(par),
            max_grad=float(np.max(np.abs(gradient))),
            cond_hessian=float(abs(eig.max() / eig.min())) if eig.min() != 0 else np.inf,
            converged=not [m for m in messages if not m.startswith("boundary")],
            singular=any(m.startswith("boundary") for m in messages), messages=list(messages), n_eval=n_eval, design=design,
            _names=names, _n_thresholds=n_theta, _estimates=par[:n_fixed], _std_errors=se,
            _varcorr=varcorr, _ranef=ranef, _cov=cov,
        )  # fmt: skip

    # ---- accessors -------------------------------------------------------------------
    @fill_doc
    def fixef(self, confidence: float = 0.95, unconverged: Unconverged = "hide") -> pd.DataFrame:
        """Fixed effects (``beta``), with Wald z tests and intervals.

        Parameters
        ----------
        %(confidence)s
            Here: the Wald intervals.
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            One row per coefficient: ``term``, ``estimate`` (a positive value moves scores
            up), ``std_error``, ``statistic`` (z), ``df`` (``inf``: a Wald z), ``p_value``,
            ``ci_low``, ``ci_high``, ``method``.

        """
        return self._table(slice(self._n_thresholds, None), confidence, unconverged)

    @fill_doc
    def thresholds(self, confidence: float = 0.95, unconverged: Unconverged = "hide") -> pd.DataFrame:
        """Thresholds ``theta_j`` (cut points on the latent scale), named ``"1|2"``, ...

        Parameters
        ----------
        %(confidence)s
            Here: the intervals, Wald as in :meth:`fixef`.
        %(unconverged)s

        Returns
        -------
        pandas.DataFrame
            One row per threshold, with the columns of :meth:`fixef`: ``term``, ``estimate``, ``std_error``, ``statistic``,
            ``df``, ``p_value``, ``ci_low``, ``ci_high``, ``method``.

        """
        return self._table(slice(0, self._n_thresholds), confidence, unconverged)

    @fill_doc
    def emmeans(
        self, factor: str, pairwise: bool = False, adjust: Adjust = "tukey", confidence: float = 0.95,
        unconverged: Unconverged = "hide",
    ) -> pd.DataFrame:
        """Estimated marginal means of ``factor`` on the latent scale, or their pairwise
        differences, as R's emmeans (its default ``mode = "latent"``).

        %(emmeans_grid)s
        On the latent scale the linear predictor is ``x' beta`` minus the mean threshold; a
        difference of two means is the difference of their ``x' beta`` (positive: the first
        level scores higher). Tests are Wald z (df = inf), as emmeans tests a clmm.

        Parameters
        ----------
        %(emmeans_factor)s
        %(confidence)s
        %(unconverged)s

        Returns
        -------
        %(emmeans_z_returns)s

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from hce.stats import clmm
        >>> rng = np.random.default_rng(11)
        >>> d = pd.DataFrame({"rater": np.repeat(np.arange(25), 6), "style": np.tile(["plain", "short", "warm"], 50)})
        >>> shift = np.select([d["style"] == "short", d["style"] == "warm"], [-0.5, 0.7], 0.0)
        >>> latent = shift + rng.normal(0, 1, 25)[d["rater"]] + rng.logistic(size=len(d))
        >>> d["score"] = np.digitize(latent, [-1.5, 0, 1.5]) + 1
        >>> m = clmm("score ~ style + (1 | rater)", d)
        >>> m.emmeans("style")[["style", "estimate", "std_error"]].round(3)
           style  estimate  std_error
        0  plain    -0.202      0.284
        1  short    -0.822      0.300
        2   warm     0.317      0.291
        >>> m.emmeans("style", pairwise=True)[["contrast", "estimate", "p_value"]].round(3)
                contrast  estimate  p_value
        0  plain - short     0.619    0.215
        1   plain - warm    -0.519    0.332
        2   short - warm    -1.139    0.008

        R (ordinal 2022.11-16, emmeans 1.8.4-1): latent means -0.202, -0.822, 0.317 (SE 0.284,
        0.300, 0.291); contrasts 0.619, -0.519, -1.139 with Tukey p 0.2153, 0.3318, 0.0080.
        """
        levels, rows = marginal_means(self.design, factor)
        keep = [i for i, name in enumerate(self.design.x_names) if name != "(Intercept)"]
        # emmeans' latent basis: the thresholds' mean subtracted, the intercept column dropped
        rows = np.hstack([np.full((len(rows), self._n_thresholds), -1.0 / self._n_thresholds), rows[:, keep]])
        return emmeans_table(factor, levels, rows @ self._estimates, rows, wald_se_df(self._cov),
                             pairwise=pairwise, adjust=adjust, confidence=confidence,
                             method=_wald_method(self.n_agq)).pipe(mark_inference, self.converged, unconverged)  # fmt: skip

    def varcorr(self) -> pd.DataFrame:
        """Variances of the random intercepts, as lme4's ``as.data.frame(VarCorr(m))``.

        Returns
        -------
        pandas.DataFrame
            ``group`` (grouping factor), ``var1`` (``(Intercept)``), ``var2`` (None),
            ``vcov`` (variance ``tau^2``), ``sdcor`` (standard deviation ``tau``).

        """
        return self._varcorr.copy()

    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random intercepts (ordinal's ``ranef`` and ``condVar``).

        Returns
        -------
        pandas.DataFrame
            ``group``, ``level``, ``term`` (``(Intercept)``), ``estimate`` (the mode of
            ``b``, on the latent scale: positive moves the group's scores up),
            ``std_error`` (square root of the conditional variance).

        """
        return self._ranef.copy()

    # ---- display ---------------------------------------------------------------------
    @fill_doc
    def summary(self, unconverged: Unconverged = "hide") -> str:
        """The fit as ordinal's ``summary(clmm(...))`` prints it.

        Parameters
        ----------
        %(unconverged)s

        Returns
        -------
        str
        """
        shown = shows_inference(self.converged, unconverged)
        method = (
            "the Laplace approximation"
            if self.n_agq == 1
            else f"the adaptive Gauss-Hermite quadrature approximation with {self.n_agq} quadrature points"
        )
        info = [
            ["link", "threshold", "nobs", "logLik", "AIC", "niter", "max.grad", "cond.H"],
            [self.link, "flexible", str(self.n), f"{self.loglik:.2f}", f"{self.aic:.2f}",
             str(self.n_eval), f"{self.max_grad:.2e}", f"{self.cond_hessian:.1e}"],
        ]  # fmt: skip
        groups = ",  ".join(f"{g} {k}" for g, k in self.ngroups.items())
        lines = [
            f"Cumulative Link Mixed Model fitted with {method}",
            "",
            f"formula: {self.formula.formula}",
            "",
            _table(info, left_cols=len(info[0])),
            "",
            "Random effects:",
            random_effects_table(self._varcorr),  # intercepts only: no Corr column
            f"Number of groups:  {groups}",
            "",
        ]
        fe = self.fixef(unconverged="show")
        if not len(fe):
            lines += ["No Coefficients", ""]
        elif shown:
            coefficients = coefficient_table(fe, "z value", p_text=_p_text, stars=_stars, statistic_decimals=3)
            lines += ["Coefficients:", coefficients, "---",
                      "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1", ""]  # fmt: skip
        else:
            lines += ["Coefficients:", estimates_only_table(fe), ""]
        thresholds = self.thresholds(unconverged="show")
        lines += ["Threshold coefficients:",
                  coefficient_table(thresholds, "z value", statistic_decimals=3) if shown
                  else estimates_only_table(thresholds)]  # fmt: skip
        if not shown:
            lines += ["", UNCONVERGED_NOTE]
        if self.messages:
            lines += [""] + [f"Warning: {m}" for m in self.messages]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return self.summary()

    # ---- internals -------------------------------------------------------------------
    def _table(self, rows: slice, confidence: float, unconverged: Unconverged) -> pd.DataFrame:
        check_confidence(confidence)
        est, se = self._estimates[rows], self._std_errors[rows]
        z = est / se
        crit = stats.norm.ppf(0.5 + confidence / 2)
        method = _wald_method(self.n_agq)
        return pd.DataFrame(
            {
                "term": self._names[rows],
                "estimate": est,
                "std_error": se,
                "statistic": z,
                "df": np.inf,
                "p_value": 2 * stats.norm.sf(np.abs(z)),
                "ci_low": est - crit * se,
                "ci_high": est + crit * se,
                "method": method,
            }
        ).pipe(mark_inference, self.converged, unconverged)


def _wald_method(n_agq: int) -> str:
    return "Wald z, " + ("Laplace approximation" if n_agq == 1 else f"adaptive Gauss-Hermite ({n_agq} nodes)")


def _p_text(p: float) -> str:
    """A p-value as ordinal's ``summary`` prints it (``printCoefmat``'s ``<2e-16``)."""
    return "<2e-16" if p < 2e-16 else f"{p:.3g}"


def _stars(p: float) -> str:
    for cut, mark in ((0.001, "***"), (0.01, "**"), (0.05, "*"), (0.1, ".")):
        if p < cut:
            return mark
    return ""
