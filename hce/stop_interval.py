"""The interval of an item's mean under repeats that stop when the score is known.

One formula for the two layers that need it: the collection decides with it when a cell is
settled (``hce.collect.running.stopping``) and the statistics report it for each item's mean
(:func:`hce.stats.stopped_item_means`), so the interval a run stopped at is the one reported.

For true/false values, the Wilson interval of the share. For scores, the t interval with
Chow and Robbins' (1965) variance ``s^2 + 1/n`` (score points squared): a cell whose first
scores happen to agree (``s = 0``) has a t interval of width 0 and would stop at once; the
``1/n`` keeps it open, and with it the sequential rule keeps its coverage (against the
simulator, 95-99% of item means covered at a target of 0.5, where the plain t interval of
the stopped cells covers 73-76%: tests/collect/test_stopping.py).

Chow, Y. S. & Robbins, H. (1965). On the asymptotic theory of fixed-width sequential
confidence intervals for the mean. Ann. Math. Statist. 36(2), 457-462.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def is_true_false(values: Sequence[Any]) -> bool:
    """Whether every value is a bool: the Wilson interval applies."""
    import numpy as np

    return len(values) > 0 and all(isinstance(v, (bool, np.bool_)) for v in values)


def half_width(values: Sequence[Any], confidence: float = 0.95) -> float:
    """Half-width of the interval of the mean of ``values`` (see the module notes); inf below 2 values.

    Examples
    --------
    >>> round(half_width([12, 12, 13]), 3), round(half_width([True, True, False, True]), 3)
    (2.028, 0.327)
    """
    import numpy as np

    n = len(values)
    if n < 2:
        return math.inf
    from scipy import stats  # only a stopping rule or its report pays for SciPy

    if is_true_false(values):
        z = stats.norm.ppf(0.5 + confidence / 2)
        p = sum(bool(v) for v in values) / n
        return float(z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n))
    variance = float(np.var(np.asarray(values, dtype=float), ddof=1)) + 1 / n
    return float(stats.t.ppf(0.5 + confidence / 2, n - 1) * math.sqrt(variance / n))


def centre(values: Sequence[Any], confidence: float = 0.95) -> float:
    """The interval's centre: the mean, or for true/false values Wilson's shifted share.

    Examples
    --------
    >>> centre([12, 13]), round(centre([True, True, True]), 3)
    (12.5, 0.719)
    """
    import numpy as np

    n = len(values)
    if not is_true_false(values):
        return float(np.mean(np.asarray(values, dtype=float)))
    from scipy import stats

    z = stats.norm.ppf(0.5 + confidence / 2)
    p = sum(bool(v) for v in values) / n
    return float((p + z**2 / (2 * n)) / (1 + z**2 / n))
