"""Sample-size planning by simulation: reliability studies and the spread of repeated scores.

Two questions a judge study has to answer before it spends money:

* How many items (texts) must be rated so that the reliability coefficient is estimated
  precisely enough? PDSQI-9 planned 84 evaluations per rater for a precision of 0.1
  (seeds/002, section 3.4). :func:`bonett_icc_items` gives Bonett's (2002) closed form,
  :func:`reliability_items` finds the number by simulation for ICC or Krippendorff's alpha.
* How many items and how many attempts per item are needed to detect that one prompt
  strategy spreads its repeated scores less than another (Experiment 2 of seeds/000)?
  :func:`sd_difference_power` simulates it; :func:`sd_difference_power_analytic` is the
  closed form for the log-SD t-test that the simulation is checked against.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import product
from typing import Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from hce._checks import check_choice, check_confidence
from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked, renamed
from hce.errors import DataError
from hce.stats._resample import as_generator, percentile_interval
from hce.stats.reliability.icc import icc_core, mean_squares
from hce.stats.reliability.krippendorff import alpha_core

__all__ = [
    "attempts_needed",
    "bonett_icc_items",
    "reliability_items",
    "sd_difference_power",
    "sd_difference_power_analytic",
]


def _positive_ints(name: str, values: int | Sequence[int], minimum: int) -> list[int]:
    seq = [values] if np.isscalar(values) else list(values)
    for v in seq:
        if not (isinstance(v, (int, np.integer)) and v >= minimum):
            raise DataError(f"{name} must hold integers >= {minimum}; got {v!r}")
    return [int(v) for v in seq]


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and value > 0 and np.isfinite(value)):
        raise DataError(f"{name}={value!r} must be a positive number")


def _check_plan(name: str, value: float, n_raters: int, width: float) -> None:
    """Planning inputs of a reliability study: a coefficient in (0, 1), k >= 2, a width."""
    if not 0 < value < 1:
        raise DataError(f"{name}={value!r} must be strictly between 0 and 1")
    if not (isinstance(n_raters, (int, np.integer)) and n_raters >= 2):
        raise DataError(f"n_raters={n_raters!r} must be an integer >= 2")
    if not 0 < width < 2:
        raise DataError(f"width={width!r} must be between 0 and 2")


def _proportion_interval(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """Clopper-Pearson interval of a simulated proportion (the Monte Carlo error)."""
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence,
                                                      method="exact")
    return float(ci.low), float(ci.high)


# ----------------------------------------------------------------------------- SD difference


def _simulate_item_sds(rng, n_sims, n_items, n_attempts, sd, means, scale):
    """Per-item SD of n_attempts scores: true item score + N(0, sd), optionally on a scale."""
    scores = means[:, :, None] + rng.normal(0.0, sd, (n_sims, n_items, n_attempts))
    if scale is not None:
        scores = np.clip(np.rint(scores), scale[0], scale[1])
    return scores.std(axis=2, ddof=1)


def _paired_p_values(sd_a: np.ndarray, sd_b: np.ndarray, test: str) -> np.ndarray:
    """Two-sided p of the paired test across items, one per simulated study (rows)."""
    if test == "t_log":
        return stats.ttest_rel(np.log(sd_a), np.log(sd_b), axis=1).pvalue
    diff = sd_a - sd_b
    p = np.ones(diff.shape[0])  # no non-zero difference: nothing to reject
    informative = np.any(diff != 0, axis=1)
    if informative.any():
        d = diff[informative]
        ordered = np.sort(np.abs(d), axis=1)
        tied = np.any(d == 0) or np.any(ordered[:, 1:] == ordered[:, :-1])
        # as R wilcox.test: exact only without ties or zeros, else normal with continuity
        # correction (SciPy's "auto" would run a slow permutation test on tied data)
        p[informative] = stats.wilcoxon(d, axis=1, zero_method="wilcox",
                                        method="approx" if tied else "auto",
                                        correction=tied).pvalue
    return p


@renamed(n_sims="n_sim")
@fill_doc
def sd_difference_power(
    n_items: int | Sequence[int],
    n_attempts: int | Sequence[int],
    *,
    sd_a: float,
    sd_b: float,
    scale: tuple[int, int] | None = None,
    item_mean: float | None = None,
    item_sd: float = 1.0,
    test: Literal["wilcoxon", "t_log"] = "wilcoxon",
    alpha: float = 0.05,
    n_sim: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Power to detect a difference in per-item score spread between two prompt strategies.

    The Experiment 2 design: the same items are scored ``n_attempts`` times under strategy A
    and under strategy B; each item's standard deviation over its attempts measures the
    judge's inconsistency; a paired test across items compares the two strategies. "How
    many attempts per transcript do I need?" is answered by the smallest ``n_attempts`` whose
    power reaches the target.

    Parameters
    ----------
    n_items : int or list of int
        Items (transcripts) scored under both strategies; a list gives one row per value.
    n_attempts : int or list of int
        Repeated attempts per item and strategy (at least 2); a list gives one row per value.
    sd_a, sd_b : float
        Attempt-to-attempt standard deviation of the latent score under each strategy.
    scale : (int, int), optional
        Likert range, e.g. ``(1, 5)``: simulated scores are rounded and clipped to it, as a
        judge's integer scores are. Default: continuous scores.
    item_mean : float, optional
        Mean of the items' true scores; default the middle of ``scale`` (0 if continuous).
    item_sd : float, default 1.0
        Spread of the items' true scores (matters only with ``scale``, through clipping).
    test : {"wilcoxon", "t_log"}, default "wilcoxon"
        Paired Wilcoxon signed-rank test on the SD differences, or paired t-test on log SDs
        (continuous scores only: a rounded score can have SD 0).
    alpha : float, default 0.05
        Two-sided significance level.
    n_sim : int, default 1000
        Simulated studies per row.
    %(confidence)s
        Here: the Monte Carlo interval of the power.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per (n_items, n_attempts): ``n_items, n_attempts, sd_a, sd_b, estimate``
        (power), ``ci_low, ci_high`` (Clopper-Pearson over the simulations), ``n_sim,
        method``.

    Notes
    -----
    Model: true item score mu_i ~ N(item_mean, item_sd^2); attempt score under strategy s
    is mu_i + e, e ~ N(0, sd_s^2), rounded and clipped when ``scale`` is given. The per-item
    SD uses divisor n_attempts - 1. Power is the share of simulated studies with p < alpha.

    See Also
    --------
    sd_difference_power_analytic : closed form for ``test="t_log"`` without ``scale``.

    %(simulated_power_reference)s

    Examples
    --------
    >>> res = sd_difference_power([20, 40], 5, sd_a=0.6, sd_b=0.4, scale=(1, 5),
    ...                           n_sim=200, random_state=1)
    >>> res[["n_items", "n_attempts", "estimate"]].round(2)
       n_items  n_attempts  estimate
    0       20           5      0.56
    1       40           5      0.84
    """
    items = _positive_ints("n_items", n_items, 2)
    attempts = _positive_ints("n_attempts", n_attempts, 2)
    _positive("sd_a", sd_a)
    _positive("sd_b", sd_b)
    _positive("item_sd", item_sd)
    check_choice("test", test, ("wilcoxon", "t_log"))
    check_confidence(confidence)
    if not 0 < alpha < 1:
        raise DataError(f"alpha={alpha!r} must be strictly between 0 and 1")
    if not (isinstance(n_sim, (int, np.integer)) and n_sim >= 10):
        raise DataError(f"n_sim={n_sim!r} must be an integer >= 10")
    if scale is not None:
        if len(scale) != 2 or not scale[0] < scale[1]:
            raise DataError(f"scale={scale!r} must be (lowest, highest) with lowest < highest")
        if test == "t_log":
            raise DataError("test='t_log' needs continuous scores (a rounded score can have "
                            "SD 0); use test='wilcoxon' with scale")
    centre = item_mean if item_mean is not None else (
        (scale[0] + scale[1]) / 2 if scale is not None else 0.0)
    rng = as_generator(random_state)
    rows = []
    for n, m in product(items, attempts):
        means = rng.normal(centre, item_sd, (n_sim, n))
        sd_of_a = _simulate_item_sds(rng, n_sim, n, m, sd_a, means, scale)
        sd_of_b = _simulate_item_sds(rng, n_sim, n, m, sd_b, means, scale)
        hits = int(np.sum(_paired_p_values(sd_of_a, sd_of_b, test) < alpha))
        low, high = _proportion_interval(hits, n_sim, confidence)
        rows.append({"n_items": n, "n_attempts": m, "sd_a": sd_a, "sd_b": sd_b,
                     "estimate": hits / n_sim, "ci_low": low, "ci_high": high,
                     "n_sim": n_sim,
                     "method": ("paired Wilcoxon on per-item SDs" if test == "wilcoxon"
                                else "paired t on log per-item SDs")
                     + (f", scores rounded to {scale[0]}-{scale[1]}" if scale else "")})
    return pd.DataFrame(rows)


@renamed(n_sims="n_sim")
@fill_doc
def attempts_needed(
    n_items: int,
    *,
    sd_a: float,
    sd_b: float,
    target_power: float = 0.80,
    max_attempts: int = 30,
    scale: tuple[int, int] | None = None,
    test: Literal["wilcoxon", "t_log"] = "wilcoxon",
    alpha: float = 0.05,
    n_sim: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """How many attempts per transcript are needed to detect a difference in spread?

    Runs :func:`sd_difference_power` for 2, 3, ... attempts per item until the simulated
    power reaches ``target_power``.

    Parameters
    ----------
    n_items : int
        Items (transcripts) scored under both strategies.
    sd_a, sd_b : float
        Attempt-to-attempt standard deviations under the two strategies.
    target_power : float, default 0.80
        Power to reach.
    max_attempts : int, default 30
        Largest number of attempts tried.
    scale, test, alpha, n_sim, random_state
        As in :func:`sd_difference_power`.
        Defaults: ``test="wilcoxon"``, ``alpha=0.05``, ``n_sim=1000``.

    Returns
    -------
    DataFrame
        The rows of :func:`sd_difference_power` for every number of attempts tried, with a
        boolean column ``reached`` (power estimate >= target); the last row is the answer,
        or the design at ``max_attempts`` when the target is out of reach (a warning says
        so).

    %(simulated_power_reference)s

    Examples
    --------
    >>> res = attempts_needed(30, sd_a=0.6, sd_b=0.4, scale=(1, 5), n_sim=200,
    ...                       random_state=1)
    >>> int(res["n_attempts"].iloc[-1]), bool(res["reached"].iloc[-1])
    (5, True)
    """
    if not 0 < target_power < 1:
        raise DataError(f"target_power={target_power!r} must be strictly between 0 and 1")
    _positive_ints("max_attempts", max_attempts, 2)
    rng = as_generator(random_state)
    rows = []
    for m in range(2, max_attempts + 1):
        row = sd_difference_power(n_items, m, sd_a=sd_a, sd_b=sd_b, scale=scale, test=test,
                                  alpha=alpha, n_sim=n_sim, random_state=rng)
        rows.append(row.assign(reached=row["estimate"] >= target_power))
        if bool(rows[-1]["reached"].iloc[0]):
            break
    else:
        warnings.warn(f"power {target_power} not reached with {max_attempts} attempts and "
                      f"{n_items} items; add items", stacklevel=2)
    return pd.concat(rows, ignore_index=True)


@keywords_checked
def sd_difference_power_analytic(
    n_items: int | Sequence[int],
    n_attempts: int | Sequence[int],
    *,
    sd_a: float,
    sd_b: float,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Closed-form power of the paired t-test on log per-item SDs (continuous scores).

    Parameters
    ----------
    n_items, n_attempts : int or list of int
        As in :func:`sd_difference_power`.
    sd_a, sd_b : float
        Attempt-to-attempt standard deviations under the two strategies.
    alpha : float, default 0.05
        Two-sided significance level.

    Returns
    -------
    DataFrame
        ``n_items, n_attempts, sd_a, sd_b, estimate`` (power), ``method``.

    Notes
    -----
    With m attempts, (m - 1) s^2 / sigma^2 ~ chi2_{m-1}, so var(ln s) = psi'((m - 1)/2) / 4
    exactly (psi' the trigamma function) and E ln s_A - E ln s_B = ln(sd_a / sd_b). The
    paired difference of log SDs therefore has mean delta = ln(sd_a/sd_b) and variance
    v = psi'((m - 1)/2) / 2; with n items the t statistic is non-central t on n - 1 df with
    non-centrality delta sqrt(n / v), and power = ``P(|T| > t_{1 - alpha/2, n - 1})``. The only
    approximation is treating ln s as normal; it is close from 4-5 attempts on, while with
    2-3 attempts (ln s strongly skewed) simulated power can differ by a few points.

    References
    ----------
    .. [1] Bartlett, M. S., & Kendall, D. G. (1946). The statistical analysis of variance-
       heterogeneity and the logarithmic transformation. JRSS Supplement 8, 128-138.
    .. [2] Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences (2nd ed.).
       Erlbaum.

    Examples
    --------
    >>> res = sd_difference_power_analytic(30, [3, 5, 10], sd_a=0.6, sd_b=0.4)
    >>> res["estimate"].round(3).tolist()
    [0.658, 0.965, 1.0]
    """
    items = _positive_ints("n_items", n_items, 2)
    attempts = _positive_ints("n_attempts", n_attempts, 2)
    _positive("sd_a", sd_a)
    _positive("sd_b", sd_b)
    if not 0 < alpha < 1:
        raise DataError(f"alpha={alpha!r} must be strictly between 0 and 1")
    rows = []
    for n, m in product(items, attempts):
        v = special.polygamma(1, (m - 1) / 2) / 2
        ncp = np.log(sd_a / sd_b) * np.sqrt(n / v)
        crit = stats.t.ppf(1 - alpha / 2, n - 1)
        power = stats.nct.sf(crit, n - 1, ncp) + stats.nct.cdf(-crit, n - 1, ncp)
        rows.append({"n_items": n, "n_attempts": m, "sd_a": sd_a, "sd_b": sd_b,
                     "estimate": float(power),
                     "method": "non-central t on log SDs (trigamma variance)"})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- ICC, Bonett


@keywords_checked
@fill_doc
def bonett_icc_items(
    icc: float, n_raters: int, width: float, *, confidence: float = 0.95
) -> pd.DataFrame:
    """Items needed for a confidence interval of given width around a single-rater ICC.

    Parameters
    ----------
    icc : float
        Planning value of the single-rater intraclass correlation (0 < icc < 1).
    n_raters : int
        Raters per item (k >= 2).
    width : float
        Desired full width of the interval (upper minus lower bound).
    %(confidence)s

    Returns
    -------
    DataFrame
        One row: ``icc, n_raters, width, n`` (items, rounded up), ``n_exact`` (before
        rounding), ``confidence, method``.

    Notes
    -----
    Bonett (2002): n = 8 z^2 (1 - rho)^2 (1 + (k - 1) rho)^2 / (k (k - 1) w^2) + 1, z the
    1 - (1 - confidence)/2 normal quantile, plus 5 rho when k = 2 and rho >= 0.7 (his
    small-sample adjustment, as R ``presize::prec_icc`` applies it). It is a large-sample
    approximation for the single-rater ICC, one-way or two-way. Bonett's worked example:
    rho = 0.85, k = 4, w = 0.2 gives n = 19.2.

    %(bonett_reference)s

    Examples
    --------
    >>> bonett_icc_items(0.7, 3, 0.2)[["n", "n_exact"]].round(2).to_string(index=False)
    ' n  n_exact\\n68    67.38'
    """
    _check_plan("icc", icc, n_raters, width)
    check_confidence(confidence)
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = n_raters
    n = 8 * z**2 * (1 - icc) ** 2 * (1 + (k - 1) * icc) ** 2 / (k * (k - 1) * width**2) + 1
    if k == 2 and icc >= 0.7:
        n += 5 * icc
    return pd.DataFrame({"icc": [icc], "n_raters": [k], "width": [width],
                         "n": [int(np.ceil(n - 1e-9))], "n_exact": [n],
                         "confidence": [confidence], "method": ["Bonett (2002) eq. 6"]})


# ----------------------------------------------------------------------------- simulation

_ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def _simulated_ratings(rng, n, k, rho, scale):
    """n targets x k raters: target effect N(0, rho) + error N(0, 1 - rho), optionally Likert."""
    y = rng.normal(0, np.sqrt(rho), (n, 1)) + rng.normal(0, np.sqrt(1 - rho), (n, k))
    if scale is not None:
        lo, hi = scale
        # spread the latent scores over the scale: mean at its centre, 1 SD = a quarter range
        y = np.clip(np.rint((lo + hi) / 2 + y * (hi - lo) / 4), lo, hi)
    return y


def _interval_width(y, coefficient, form, level, confidence, n_boot, rng):
    """Width of the interval the reliability module reports for one simulated study."""
    n, k = y.shape
    if coefficient == "icc":
        row = icc_core(mean_squares(y), n, k, confidence)[_ICC_FORMS.index(form)]
        return row["ci_high"] - row["ci_low"]
    unit = np.repeat(np.arange(n), k)
    _, reps = alpha_core(unit, y.ravel(), level, n_boot=n_boot, random_state=rng)
    # the interval krippendorff_alpha reports: replicates where alpha is 0/0 are left out
    low, high = percentile_interval(reps, confidence)
    return float(high - low)


@renamed(n_sims="n_sim")
@fill_doc
def reliability_items(
    coefficient: Literal["icc", "krippendorff"],
    *,
    reliability: float,
    n_raters: int,
    width: float,
    form: str = "ICC3",
    level: str = "interval",
    scale: tuple[int, int] | None = None,
    confidence: float = 0.95,
    n_sim: int = 200,
    n_boot: int = 200,
    n_max: int = 5000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Items needed so that the reliability interval has the desired width, by simulation.

    Parameters
    ----------
    coefficient : {"icc", "krippendorff"}
        The coefficient whose interval is planned: an ICC with the F-based interval of
        :func:`hce.stats.icc`, or Krippendorff's alpha with the unit-bootstrap interval of
        :func:`hce.stats.krippendorff_alpha`.
    reliability : float
        Planning value: the share of score variance due to the items (texts), i.e. the
        population single-rater ICC (0 < reliability < 1).
    n_raters : int
        Raters (or judge attempts) per item, k >= 2.
    width : float
        Desired mean full width of the interval.
    form : str, default "ICC3"
        ICC form whose interval is planned (``ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k``).
    level : str, default "interval"
        Krippendorff's level of measurement.
    scale : (int, int), optional
        Simulate Likert scores on this range (rounded latent scores) instead of continuous.
    %(confidence)s
    n_sim : int, default 200
        Simulated studies per candidate number of items.
    %(n_boot)s
        Here: resamples per simulated study (Krippendorff only).
    n_max : int, default 5000
        Largest number of items searched.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``coefficient, form, reliability, n_raters, width, n`` (items needed),
        ``expected_width`` (mean simulated width at n), ``ci_low, ci_high`` (Monte Carlo
        interval of that mean), ``n_bonett`` (Bonett's closed form, single-rater ICC forms
        only), ``n_sim, method``.

    Notes
    -----
    Each simulated study has n items x k raters with scores t_i + e_ij, t ~ N(0, rho),
    e ~ N(0, 1 - rho) (rounded to ``scale`` when given); its interval is computed exactly as
    the reliability module computes it. The mean width falls with n, and n is the smallest
    number of items (bracketed from Bonett's value, then found by bisection) whose mean
    width is at most ``width``; ``ci_low, ci_high`` give the Monte Carlo interval of the
    mean width at that n. Bonett's
    (2002) formula plans the same quantity for the single-rater ICC and is reported beside
    it as a check.

    %(bonett_reference)s

    Examples
    --------
    >>> res = reliability_items("icc", reliability=0.7, n_raters=3, width=0.2, n_sim=100,
    ...                         random_state=1)
    >>> res[["n", "n_bonett"]].to_string(index=False)
    ' n  n_bonett\\n70        68'
    """
    check_choice("coefficient", coefficient, ("icc", "krippendorff"))
    check_choice("form", form, _ICC_FORMS)
    check_confidence(confidence)
    _check_plan("reliability", reliability, n_raters, width)
    for name, value in (("n_sim", n_sim), ("n_boot", n_boot), ("n_max", n_max)):
        if not (isinstance(value, (int, np.integer)) and value >= 10):
            raise DataError(f"{name}={value!r} must be an integer >= 10")
    # common random numbers: every candidate n is simulated from the same seed, so the
    # mean width is a smooth, reproducible function of n for the bisection
    seed = as_generator(random_state).integers(2**63)
    cache: dict[int, np.ndarray] = {}

    def widths(n: int) -> np.ndarray:
        if n not in cache:
            rng = as_generator(seed)
            cache[n] = np.array([
                _interval_width(_simulated_ratings(rng, n, n_raters, reliability, scale),
                                coefficient, form, level, confidence, n_boot, rng)
                for _ in range(n_sim)])
        return cache[n]

    # bracket the answer: start from Bonett's closed form, double until wide enough
    guess = bonett_icc_items(reliability, n_raters, width, confidence=confidence)["n"].iloc[0]
    low, high = 3, int(min(max(2 * guess, 10), n_max))
    while widths(high).mean() > width:
        if high >= n_max:
            raise DataError(f"even {n_max} items give a mean width above {width}; "
                            "raise n_max")
        low, high = high, min(2 * high, n_max)
    while high - low > 1:  # invariant: mean width at `high` is small enough, at `low` not
        mid = (low + high) // 2
        if widths(mid).mean() <= width:
            high = mid
        else:
            low = mid
    final = widths(high)
    se = final.std(ddof=1) / np.sqrt(n_sim)
    z = stats.norm.ppf(0.5 + confidence / 2)
    single = form in ("ICC1", "ICC2", "ICC3") and coefficient == "icc"
    n_bonett = (int(bonett_icc_items(reliability, n_raters, width, confidence=confidence)
                    ["n"].iloc[0]) if single else np.nan)
    name = form if coefficient == "icc" else f"Krippendorff's alpha ({level})"
    return pd.DataFrame([{
        "coefficient": coefficient, "form": name, "reliability": reliability,
        "n_raters": n_raters, "width": width, "n": high, "expected_width": final.mean(),
        "ci_low": final.mean() - z * se, "ci_high": final.mean() + z * se,
        "n_bonett": n_bonett, "n_sim": n_sim,
        "method": "simulation with the reliability module's intervals, bisection on n"
        + (f", scores rounded to {scale[0]}-{scale[1]}" if scale else "")}])
