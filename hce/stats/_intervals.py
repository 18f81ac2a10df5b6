"""Confidence intervals shared by the statistics modules: proportions, Fisher z, noncentrality."""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import optimize, stats

from hce._checks import check_choice

ProportionMethod = Literal["wilson", "clopper-pearson"]


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


def proportion_ci(
    successes: np.ndarray, n: np.ndarray, confidence: float, method: ProportionMethod
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided interval for a binomial share, vectorised over ``successes``/``n``.

    ``wilson`` is the score interval without continuity correction (R ``prop.test(correct=FALSE)``);
    ``clopper-pearson`` is the exact beta interval (R ``binom.test``). ``n == 0`` gives NaN.
    """
    check_choice("method", method, ["wilson", "clopper-pearson"])
    k = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "wilson":
            z = _z(confidence)
            p = k / n
            centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
            low, high = centre - half, centre + half
        else:
            alpha = 1 - confidence
            low = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
            high = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    empty = n <= 0
    low = np.where(empty, np.nan, np.clip(low, 0.0, 1.0))
    high = np.where(empty, np.nan, np.clip(high, 0.0, 1.0))
    return low, high


def fisher_z_ci(r: float, se: float, confidence: float) -> tuple[float, float]:
    """``tanh(atanh(r) -/+ z * se)``: the interval for a correlation-like index in [-1, 1]."""
    if not np.isfinite(r) or not np.isfinite(se):
        return np.nan, np.nan
    r = float(np.clip(r, -1.0, 1.0))
    with np.errstate(divide="ignore"):
        centre = np.arctanh(r)
    half = _z(confidence) * se
    return float(np.tanh(centre - half)), float(np.tanh(centre + half))


def noncentrality_ci(
    statistic: float,
    cdf,
    confidence: float,
    upper_start: float,
) -> tuple[float, float]:
    """Invert a noncentral distribution: bounds ``ncp`` with ``cdf(statistic, ncp)`` at the tails.

    ``cdf(x, ncp)`` must decrease in ``ncp`` (noncentral t, F, chi-squared all do). The lower
    bound is 0 when even ``ncp = 0`` puts ``statistic`` below the upper tail (Steiger, 2004).
    """
    alpha = 1 - confidence
    if not np.isfinite(statistic):
        return np.nan, np.nan

    def bound(tail: float) -> float:
        f = lambda ncp: cdf(statistic, ncp) - tail
        if f(0.0) <= 0:
            return 0.0
        hi = max(upper_start, 1.0)
        while f(hi) > 0:
            hi *= 2
        return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-12))

    return bound(1 - alpha / 2), bound(alpha / 2)


def noncentral_t_ci(t: float, df: float, confidence: float) -> tuple[float, float]:
    """Bounds on the noncentrality of a t statistic (may be negative), by root finding."""
    alpha = 1 - confidence
    if not np.isfinite(t):
        return np.nan, np.nan

    def bound(tail: float) -> float:
        f = lambda ncp: stats.nct.cdf(t, df, ncp) - tail
        width = max(abs(t), 1.0)
        lo, hi = t - width, t + width
        while f(lo) < 0:
            lo -= width
        while f(hi) > 0:
            hi += width
        try:  # brentq refuses a NaN anywhere on its path
            return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))
        except ValueError:
            return normal_bound(tail)

    def normal_bound(tail: float) -> float:
        # scipy's nct.cdf is NaN far out (t of 40+ on thousands of df, a paired d over 10,000
        # items); there t is normal with mean ncp and variance 1 + ncp^2 / (2 df) (Hedges &
        # Olkin 1985, ch. 5, eq. 14), accurate to 1e-3 in ncp once df > 1,000.
        return float(t + stats.norm.ppf(1 - tail) * np.sqrt(1 + t**2 / (2 * df)))

    return bound(1 - alpha / 2), bound(alpha / 2)
