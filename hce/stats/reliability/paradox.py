"""The kappa paradoxes: a high observed agreement with a low kappa, because one category is
rare (prevalence) or the raters' margins differ (bias). Byrt, Bishop & Carlin (1993) report
three numbers beside every kappa so a reader can tell the cases apart.
"""

from __future__ import annotations

import numpy as np

PARADOX_COLUMNS = ["prevalence_index", "bias_index", "pabak"]
NO_PARADOX = dict.fromkeys(PARADOX_COLUMNS, np.nan)


def pabak(observed: float, q: int) -> float:
    """Prevalence- and bias-adjusted kappa: ``(q p_o - 1) / (q - 1)``, the kappa of chance
    agreement 1/q (``2 p_o - 1`` for two categories; Byrt et al. 1993)."""
    return float((q * observed - 1) / (q - 1)) if q > 1 else np.nan


def paradox_of_table(cross: np.ndarray) -> dict[str, float]:
    """``prevalence_index``, ``bias_index`` and ``pabak`` of a two raters' q x q count table.

    For two categories with cells a (both yes), b, c (the raters disagree), d (both no) of n:
    ``PI = |a - d| / n``, ``BI = |b - c| / n`` (Byrt et al. 1993, as absolute values, Sim &
    Wright 2005); both are NaN for more categories, where PABAK still applies.

    Examples
    --------
    >>> paradox_of_table(np.array([[80, 10], [5, 5]]))
    {'prevalence_index': 0.75, 'bias_index': 0.05, 'pabak': 0.7}
    """
    n, q = cross.sum(), len(cross)
    observed = float(np.trace(cross) / n)
    if q != 2:
        return {"prevalence_index": np.nan, "bias_index": np.nan, "pabak": pabak(observed, q)}
    (a, b), (c, d) = cross
    return {"prevalence_index": float(abs(a - d) / n), "bias_index": float(abs(b - c) / n), "pabak": pabak(observed, q)}
