"""P values as JAMA prints them, for every layer: one formatter shared by the statistics' own text, the report and the study.

The base layer, so that :mod:`hce.stats` (which may not import :mod:`hce.report`) writes the
same ``P = .004`` in a sentence of its own (the RM-ANOVA's assumption checks) as every table
and manuscript does; :mod:`hce.report.numbers` re-exports :func:`fixed` and :func:`format_p`.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

#: A finite number this large is shown in scientific notation (an interval limit of 1e88
#: from a degenerate chi-square is no figure to print in full).
LARGE = 1e9


def fixed(x: float, decimals: int | None) -> str:
    """``x`` to ``decimals`` places, halves rounded away from zero on the decimal digits shown.

    Binary floats make ``f"{0.125:.2f}"`` "0.12" but ``f"{0.375:.2f}"`` "0.38"; rounding the
    shortest decimal form of ``x`` gives one rule for every half (0.13, 0.38). A zero never
    carries a sign (``-0.00`` is float noise). ``decimals=None`` is scientific notation.

    Examples
    --------
    >>> fixed(0.125, 2), fixed(-1.4e-16, 2), fixed(1234.5, 1), fixed(3e-9, None)
    ('0.13', '0.00', '1,234.5', '3.0e-09')
    """
    x = float(x)  # repr of a NumPy float is "np.float64(...)"
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if decimals is None or abs(x) >= LARGE:
        return f"{x:.1e}"
    rounded = Decimal(repr(x)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    text = f"{rounded:,.{decimals}f}"
    return text.lstrip("-") if rounded == 0 else text


def format_p(p: float) -> str:
    """A P value as JAMA prints it: 2 decimals, 3 below .01, ``< .001`` and ``> .99`` at the ends.

    No leading zero. A P value that 2 decimals would round to .05 from either side keeps 3
    (``.049``, ``.052``), so rounding never moves it across the usual threshold; halves round
    away from zero, as every number of a report.

    Examples
    --------
    >>> [format_p(p) for p in (0.0004, 0.0043, 0.0123, 0.0449, 0.0492, 0.05, 0.125, 0.9951, float("nan"))]
    ['< .001', '.004', '.01', '.04', '.049', '.05', '.13', '> .99', '—']
    """
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    if p < 0.001:
        return "< .001"
    if p > 0.99:
        return "> .99"
    decimals = 3 if p < 0.01 or (fixed(float(p), 2) == "0.05" and p != 0.05) else 2
    return fixed(float(p), decimals).lstrip("0")


def p_text(p: float) -> str:
    """``P = .004`` or ``P < .001``, as JAMA writes a P value in a sentence.

    Examples
    --------
    >>> p_text(0.0041), p_text(0.00002), p_text(1.0)
    ('P = .004', 'P < .001', 'P > .99')
    """
    shown = format_p(p)
    return f"P {shown}" if shown[0] in "<>" else f"P = {shown}"
