"""Item means of a log collected under repeats that stop when the score is known.

A cell (item x condition) of such a log stopped once its mean's interval was narrow enough
(``hce.collect.running.stopping``), so the plain t interval of its attempts undercovers: a
cell stops early exactly when its first scores happen to agree. The interval the rule
stopped on, Chow and Robbins' t with variance ``s^2 + 1/n`` (Wilson for true/false scores,
:mod:`hce.stop_interval`), keeps its coverage; the mean uses every attempt.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hce.stats._validate import statistic
from hce.stop_interval import centre, half_width, is_true_false

METHOD = "Chow-Robbins t, variance s^2 + 1/n (sequential stopping)"
METHOD_SHARE = "Wilson (sequential stopping)"


@statistic(keys=("item", "condition"), numbers=("score",))
def stopped_item_means(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str | None = "condition_id",
    score: str = "total",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Each item's mean score per condition, with the interval a stopping rule stopped on.

    Parameters
    ----------
    data : DataFrame
        Attempt log, one row per attempt; every attempt counts (not only the first ``min``).
    item : str, default "item_id"
        Column identifying the item.
    condition : str or None, default "condition_id"
        Column identifying the condition; ``None`` for one configuration.
    score : str, default "total"
        The score column (true/false values get the Wilson interval of the share).
    %(confidence)s

    Returns
    -------
    DataFrame
        One row per item x condition: the item and condition columns, ``n`` (valid scores),
        ``estimate`` (the mean), ``ci_low``, ``ci_high`` (NaN below 2 scores), ``method``.

    References
    ----------
    .. [1] Chow, Y. S., & Robbins, H. (1965). On the asymptotic theory of fixed-width sequential
       confidence intervals for the mean. The Annals of Mathematical Statistics, 36(2), 457-462.
    .. [2] Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
       inference. Journal of the American Statistical Association, 22(158), 209-212.

    Examples
    --------
    >>> log = pd.DataFrame({"item_id": ["a"] * 3 + ["b"] * 2, "condition_id": "P1", "total": [12, 12, 13, 9, 11]})
    >>> stopped_item_means(log).round(3)[["item_id", "n", "estimate", "ci_low", "ci_high"]]
      item_id  n  estimate  ci_low  ci_high
    0       a  3    12.333  10.305   14.362
    1       b  2    10.000  -4.206   24.206
    """
    keys = [item] + ([condition] if condition is not None else [])
    rows = []
    for key, part in data.dropna(subset=[score]).groupby(keys, sort=True):
        values = part[score].tolist()
        width = half_width(values, confidence)
        mid = centre(values, confidence)
        share = is_true_false(values)
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "n": len(values),
                     "estimate": float(np.mean(np.asarray(values, dtype=float))),
                     "ci_low": mid - width if np.isfinite(width) else np.nan,
                     "ci_high": mid + width if np.isfinite(width) else np.nan,
                     "method": METHOD_SHARE if share else METHOD})  # fmt: skip
    return pd.DataFrame(rows, columns=[*keys, "n", "estimate", "ci_low", "ci_high", "method"])
