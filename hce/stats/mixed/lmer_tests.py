"""Tests of fixed effects of a fitted :class:`~hce.stats.mixed.lmer_result.LmerResult`:
t tests of contrasts, F tests of hypotheses (the Type III table), likelihood-ratio tests.

The df computations are :mod:`hce.stats.mixed.ddf`; the Type III hypotheses
:mod:`hce.stats.mixed.type3`. This module turns them into rows.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice
from hce.errors import DataError
from hce.stats.mixed.ddf import KenwardRoger, Satterthwaite, VarparModel

Ddf = Literal["satterthwaite", "kenward-roger", "wald"]
DDF_CHOICES = ["satterthwaite", "kenward-roger", "wald"]
T_METHOD = {
    "satterthwaite": "t, Satterthwaite df",
    "kenward-roger": "t, Kenward-Roger df and adjusted SE (pbkrtest)",
    "wald": "Wald z (asymptotic)",
}
F_METHOD = {
    "satterthwaite": "F, Satterthwaite df (lmerTest Type III)",
    "kenward-roger": "F, Kenward-Roger df and scaling (pbkrtest Type III)",
    "wald": "Wald chi-square / df1 (asymptotic Type III)",
}


class FixedEffectTests:
    """t and F tests on ``beta`` with the df method asked for; the Satterthwaite and
    Kenward-Roger pieces are computed once, on first use.

    Parameters
    ----------
    beta, cov_beta : ndarray
        Estimates and their covariance.
    varpar : VarparModel
        The engine's deviance and ``cov(beta)`` as functions of lmerTest's parameters.
    kr_inputs : callable
        Returns ``(X, terms, sigma2)`` for :meth:`KenwardRoger.of`.
    reml : bool
        Kenward-Roger is defined for REML fits only (as in pbkrtest and lmerTest).
    """

    def __init__(
        self,
        beta: np.ndarray,
        cov_beta: np.ndarray,
        varpar: VarparModel,
        kr_inputs: Callable[[], tuple],
        reml: bool,
    ):
        self.beta, self.cov_beta = beta, cov_beta
        self._varpar, self._kr_inputs, self._reml = varpar, kr_inputs, reml

    @cached_property
    def satterthwaite(self) -> Satterthwaite:
        return Satterthwaite.of(self._varpar)

    @cached_property
    def kenward_roger(self) -> KenwardRoger:
        if not self._reml:
            raise DataError(
                "ddf='kenward-roger' is defined for REML fits only (as in pbkrtest); refit with "
                "REML=True or use ddf='satterthwaite'"
            )
        return KenwardRoger.of(*self._kr_inputs())

    def linear(self, contrast: np.ndarray, confidence: float, ddf: Ddf) -> dict:
        """Estimate, SE, t (or z), df, p and interval of ``contrast @ beta``."""
        check_choice("ddf", ddf, DDF_CHOICES)
        est = float(contrast @ self.beta)
        if ddf == "kenward-roger":
            kr = self.kenward_roger
            se = float(np.sqrt(contrast @ kr.phi_a @ contrast))
            df = kr.df_and_scale(contrast[None, :])[0]
        else:
            se = float(np.sqrt(contrast @ self.cov_beta @ contrast))
            df = self.satterthwaite.df(contrast, self.cov_beta) if ddf == "satterthwaite" else np.inf
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
            "method": T_METHOD[ddf],
        }

    def f_test(self, hypothesis: np.ndarray, ddf: Ddf) -> dict:
        """F statistic, numerator and denominator df and p of ``hypothesis @ beta = 0`` (lmerTest's ``contestMD``)."""
        if ddf == "kenward-roger":
            f, q, df2 = self.kenward_roger.f_test(hypothesis, self.beta)
        elif ddf == "satterthwaite":
            f, q, df2 = self.satterthwaite.f_test(hypothesis, self.beta, self.cov_beta)
        else:
            f, q, df2 = self._wald_f(hypothesis)
        p = stats.chi2.sf(f * q, q) if np.isinf(df2) else stats.f.sf(f, q, df2)
        return {"statistic": f, "num_df": q, "den_df": df2, "p_value": float(p), "method": F_METHOD[ddf]}

    def _wald_f(self, hypothesis: np.ndarray) -> tuple[float, int, float]:
        """The Wald chi-square over its rank, on ``cov_beta``; df2 infinite."""
        lb = hypothesis @ self.beta
        rank = int(np.linalg.matrix_rank(hypothesis @ self.cov_beta @ hypothesis.T))
        wald = float(lb @ np.linalg.pinv(hypothesis @ self.cov_beta @ hypothesis.T) @ lb)
        return wald / rank, rank, np.inf


def type3_table(tests: FixedEffectTests, hypotheses: dict[str, np.ndarray], ddf: Ddf) -> pd.DataFrame:
    """One F test per term: ``term, statistic, num_df, den_df, p_value, method``."""
    check_choice("ddf", ddf, DDF_CHOICES)
    rows = [{"term": term, **tests.f_test(hyp, ddf)} for term, hyp in hypotheses.items() if len(hyp)]
    table = pd.DataFrame(rows, columns=["term", "statistic", "num_df", "den_df", "p_value", "method"])
    return table.astype({"statistic": float, "num_df": int, "den_df": float, "p_value": float})


def lrt_table(fits: list) -> pd.DataFrame:
    """R's ``anova(m1, m2)`` on two ML fits: fewer parameters first."""
    fits = sorted(fits, key=lambda m: m.npar)
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
