"""Numbers as a journal prints them (JAMA): one decimals rule per statistic type, for every output.

The report's tables (Markdown, HTML, LaTeX, Word) and the manuscript's sentences format every
number here, so a statistic reads alike wherever it appears:

* P values: 2 decimals, 3 below .01 (or where 2 would round to .05), ``< .001`` and ``> .99``
  at the ends, no leading zero (:func:`format_p`);
* coefficients (correlations, kappa, ICC, Kendall's W, alpha, G and Phi): 2 decimals; effect
  sizes (rank-biserial r, epsilon squared, Cramér V, d): 2; calibration errors (ECE, MCE,
  Brier and its parts): 3 (:data:`DECIMALS`, told apart by :func:`statistic_kind`). A value
  under 1 in size that 2 decimals would show as a whole 1.00 keeps the decimals it needs not to
  (0.9994, :func:`kind_decimals`). These statistics
  are bounded: never scientific notation, and float noise (``1.4e-16``) reads 0.00;
* other numbers: the decimals they need (:func:`decimals_needed`), scientific notation only
  past :data:`MAX_DECIMALS`, and a value within :data:`NOISE` of a whole number is that number;
* intervals: ``0.76 (95% CI, 0.60-0.88)`` in a sentence, ``0.76 (0.60-0.88)`` in a table
  cell under a header naming the level, ``-0.98 to -0.30`` when a limit is negative, and an
  interval that cannot be computed in words, ``not estimable (reason)``, never ``[—, —]``
  (:func:`format_ci`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce._pvalues import LARGE, fixed, format_p  # one P-value formatter for every layer (re-exported here)

#: Most decimals shown; a smaller number is shown in scientific notation.
MAX_DECIMALS = 6
#: A number this close to 0 is the float noise of a zero (a covariance of 1.4e-16): shown as 0.
NOISE = 1e-12
#: Decimals of each bounded statistic type (JAMA); :func:`statistic_kind` names the type.
DECIMALS = {"coefficient": 2, "effect": 2, "calibration": 3}
#: Words naming each type, in a column name, a row's label (``metric``) or a method. The
#: calibration words come first: a calibration table's "reliability" row is its Brier part.
KIND_WORDS = {
    "calibration": r"ece|mce|brier|log[ _]loss|reliability|resolution|uncertainty|within[ _]bin[ _]\w+|calibration error",
    "coefficient": (r"icc(?:\(\w+(?:, ?\w+)?\))?|kappa|κ|kendall(?:'s)?(?: w)?|alpha|α|omega|ω|g|phi|pearson|spearman|rho|ρ"
                    r"|tau|τ|correlation|r|krippendorff|fleiss|gwet|ac1|pabak|ccc|concordance|percent_agreement|expected_kappa"),
    "effect": r"effect[ _]size|epsilon|ε²|eta2?\w*|η²|rank-biserial|cramér|cramer|cohen's d|hedges|cliff",
}  # fmt: skip
_KINDS = {kind: re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.IGNORECASE) for kind, words in KIND_WORDS.items()}
#: The reason a method states for an interval it could not compute (``CI not estimable: every pair ...``).
_STATED = re.compile(r"CI not estimable: ([^;(]+)")


def statistic_kind(*names: object) -> str | None:
    """The statistic type the first naming text names (:data:`KIND_WORDS`), or None.

    Texts are tried in order (a column name, the row's label, its method, the table's
    caption); within one text calibration words win over coefficient words.

    Examples
    --------
    >>> statistic_kind("ece"), statistic_kind("ICC(1)"), statistic_kind("effect_size"), statistic_kind("mean_sd")
    ('calibration', 'coefficient', 'effect', None)
    >>> statistic_kind(None, "Pearson r, Fisher z CI"), statistic_kind("Cohen's kappa (specificity)")
    ('coefficient', 'coefficient')
    """
    for name in names:
        if name is None or (isinstance(name, float) and math.isnan(name)):
            continue
        for kind, pattern in _KINDS.items():
            if pattern.search(str(name)):
                return kind
    return None


def kind_decimals(values: Sequence[float], kind: str) -> int:
    """The decimals of a bounded statistic type (:data:`DECIMALS`) for these values.

    More (up to :data:`MAX_DECIMALS`) only where a value under 1 in size would show as a whole
    1 (a correlation of 0.996 is not "1.00", an ICC of 0.99937 not "1.000"); never scientific notation.

    Examples
    --------
    >>> kind_decimals([0.761, 0.60, 0.88], "coefficient"), kind_decimals([0.981, 0.932, 0.996], "coefficient")
    (2, 3)
    >>> kind_decimals([0.99937, 0.99901, 0.99962], "coefficient"), kind_decimals([0.24, 0.9999999999999993], "effect")
    (4, 2)
    >>> kind_decimals([0.0057, 0.00063, 0.0132], "calibration")
    3
    """
    places = DECIMALS[kind]
    while places < MAX_DECIMALS and any(math.isfinite(v) and abs(v) < 1 - NOISE and round(abs(v), places) == 1 for v in values):
        places += 1
    return places


def decimals_needed(values: Sequence[float], digits: int = 2, *, width: float | None = None) -> int | None:
    """Decimals that show every finite value (and an interval ``width``) faithfully.

    At least ``digits``; more where a nonzero value would show fewer than two significant
    digits, or one under 1 in size as a whole number, and where ``width`` (an interval's)
    would show fewer than two significant digits. Values within :data:`NOISE` of a whole
    number, and widths within it of 0, count as that number. None when that takes more than :data:`MAX_DECIMALS` (scientific notation instead).

    Examples
    --------
    >>> decimals_needed([0.12]), decimals_needed([0.00123]), decimals_needed([0.99937]), decimals_needed([1.4e-16, 1 - 2e-16])
    (2, 4, 3, 2)
    """
    needed = digits
    for value in values:
        if not math.isfinite(value) or abs(value - round(value)) < NOISE:
            continue  # a whole number, or float noise away from one (a kappa of 0.9999999999999998)
        needed = max(needed, 1 - math.floor(math.log10(abs(value))))
        # a correlation or share of 0.9996 is not 1.00 (a score of 19.9996 may well be 20.00)
        while abs(value) < 1 and needed < MAX_DECIMALS and round(value, needed) == round(value):
            needed += 1
    if width is not None and math.isfinite(width) and width > NOISE:
        needed = max(needed, 1 - math.floor(math.log10(width)))
    return needed if needed <= MAX_DECIMALS else None


def format_number(x: object, digits: int = 2, *, kind: str | None = None) -> str:
    """A number rounded for display: integers as integers, floats to the decimals they need.

    A float of a bounded statistic type ``kind`` (:data:`DECIMALS`) gets that type's decimals;
    others get ``digits`` decimals, or more (up to :data:`MAX_DECIMALS`) where ``digits``
    would leave fewer than two significant digits or round a number under 1 in size to a
    whole one; numbers beyond that, and finite ones of :data:`LARGE` or more, in scientific notation.

    Examples
    --------
    >>> [format_number(v) for v in (3, 1234567, 0.12345, -2.0, 0.99937, 0.00123, float("nan"), "text")]
    ['3', '1,234,567', '0.12', '-2.00', '0.999', '0.0012', '—', 'text']
    >>> [format_number(v) for v in (float("inf"), 2.5e88, 3e-9, -1.4e-16)]
    ['∞', '2.5e+88', '3.0e-09', '0.00']
    >>> format_number(0.0057, kind="calibration"), format_number(2.2e-06, kind="effect")
    ('0.006', '0.00')
    """
    if x is None or x is pd.NA:
        return "—"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        value = float(x)
        if not math.isfinite(value):
            return fixed(value, 0)
        return fixed(value, kind_decimals([value], kind) if kind in DECIMALS else decimals_needed([value], digits))
    return str(x)


def interval_decimals(estimate: float | None, low: float, high: float, digits: int = 2, *, kind: str | None = None) -> int | None:
    """The decimals one estimate and its interval share: the type's (:func:`kind_decimals`), else
    what the values and the interval's width need (:func:`decimals_needed`)."""
    values = [float(v) for v in (estimate, low, high) if v is not None and not pd.isna(v)]
    if kind in DECIMALS:
        return kind_decimals(values, kind)
    width = float(high) - float(low) if not (pd.isna(low) or pd.isna(high)) else None
    return decimals_needed(values, digits, width=width)


def joiner(low: str, high: str) -> str:
    """What joins two shown limits: ``-`` (``0.60-0.88``), or `` to `` when a limit is negative or
    infinite, where a hyphen would read as a minus (``-0.98 to -0.30``, ``0.12 to ∞``).

    Examples
    --------
    >>> joiner("0.60", "0.88"), joiner("-0.98", "-0.30"), joiner("0.12", "∞")
    ('-', ' to ', ' to ')
    """
    return " to " if any(s.startswith(("-", "−")) or "∞" in s for s in (low, high)) else "-"


def not_estimable_reason(estimate: float | None, *, kind: str | None = None, method: object = None) -> str:
    """Why an interval could not be computed, in words: the reason its method states
    (``CI not estimable: every pair is ordered one way``), else what the estimate shows.

    Examples
    --------
    >>> not_estimable_reason(-1.0, method="Wilcoxon; CI not estimable: every pair is ordered one way (|r| = 1)")
    'every pair is ordered one way'
    >>> not_estimable_reason(1.0, kind="coefficient"), not_estimable_reason(float("nan"))
    ('the estimate is at its bound', 'no estimate from these data')
    """
    stated = _STATED.search(str(method)) if method is not None else None
    if stated:
        return stated[1].strip().rstrip(",")
    if estimate is None or pd.isna(estimate):
        return "no estimate from these data"
    if kind in ("coefficient", "effect") and abs(float(estimate)) == 1:
        return "the estimate is at its bound"
    return "undefined for these data"


def format_ci(low: float, high: float, digits: int = 2, *, estimate: float | None = None, decimals: int | None = None,
              kind: str | None = None, level: float | None = None, method: object = None) -> str:  # fmt: skip
    """An interval as JAMA prints it: ``0.60-0.88``, ``0.76 (0.60-0.88)`` or ``0.76 (95% CI, 0.60-0.88)``.

    Estimate and limits share one number of decimals (:func:`interval_decimals`; ``decimals``
    fixes them instead, a table column shown alike). ``level`` (0.95) names the interval inside
    the parentheses, as a sentence needs; a table cell leaves it to the header. A limit that
    is negative or infinite is joined by "to". An interval with a missing limit is "not
    estimable" with its reason (:func:`not_estimable_reason`, from ``method``'s text when it states one).

    Examples
    --------
    >>> format_ci(0.1234, 0.5)
    '0.12-0.50'
    >>> format_ci(0.60, 0.88, estimate=0.761, level=0.95)
    '0.76 (95% CI, 0.60-0.88)'
    >>> format_ci(-0.98, -0.30, estimate=-0.87, kind="coefficient")
    '-0.87 (-0.98 to -0.30)'
    >>> format_ci(0.0, float("inf"), estimate=0.02)
    '0.020 (0.000 to ∞)'
    >>> format_ci(float("nan"), float("nan"), estimate=-1.0, kind="effect")
    '-1.00 (CI not estimable: the estimate is at its bound)'
    >>> format_ci(-1.4e-16, 1.4e-16, estimate=0.0, kind="calibration")
    '0.000 (0.000-0.000)'
    """
    if decimals is None:
        decimals = interval_decimals(estimate, low, high, digits, kind=kind)
    named = f"{level * 100:g}% CI" if level is not None else "CI"
    if pd.isna(low) or pd.isna(high):
        reason = not_estimable_reason(estimate, kind=kind, method=method)
        if estimate is None or pd.isna(estimate):
            return f"not estimable ({reason})"
        return f"{fixed(float(estimate), decimals)} ({named} not estimable: {reason})"
    a, b = fixed(float(low), decimals), fixed(float(high), decimals)
    interval = f"{a}{joiner(a, b)}{b}"
    if estimate is None:
        return interval
    if pd.isna(estimate):
        return f"not estimable ({not_estimable_reason(estimate, kind=kind, method=method)}; {named}, {interval})"
    return f"{fixed(float(estimate), decimals)} ({named + ', ' if level is not None else ''}{interval})"
