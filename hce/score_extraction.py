"""Reading a score out of a judge's reply: one stated rule, used by every parser.

The rule (importers and the collection layer's reply parsers follow it):

1. **Numbers** are ASCII numerals with an optional sign, decimals and exponent: ``3``,
   ``-1``, ``2.5``, ``1e3`` (which is 1000, not 1). A numeral glued to letters or other
   digits (``3rd``, ``P2.3``, Unicode digits such as ``٣``) is not a number, nor is a
   percentage (``80%``).
2. **Scale statements are not scores**: ranges (``1-5``, ``1 to 5``, ``between 1 and 5``),
   denominators (``/5``, ``out of 5``) and ``5-point`` are set aside. So is a hedged
   answer such as ``2-3``: a range is never read as one of its ends.
3. **A labelled score wins**: when the reply has a score label (``Score:``, ``Rating:``,
   ``Total Score (5-20):``, ``Final score is``, or a label the caller names, such as a
   criterion), the score is the last in-range number written right after such a label;
   another in-range number on that label's line (``Score: 2 or 3``) makes it conflicting.
4. **Otherwise the only in-range number**: the reply's numbers within ``[low, high]``
   must all be the same value (``"3. The answer is 3"`` is 3).
5. **Else the reply is flagged, never read**: no number in range, conflicting in-range
   numbers, or (with ``levels``) a value that is not a level of the scale.

Examples
--------
>>> from hce.score_extraction import extract_score
>>> extract_score("On a scale of 1-5, I would give it a 4.", low=1, high=5)
Extracted(value=4.0, problem=None)
>>> extract_score("1e3", low=1, high=5).problem
'score 1000 outside 1-5'
>>> extract_score("Either 2 or 3.", low=1, high=5).problem
'conflicting scores in the reply: 2, 3'
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any


#: An ASCII numeral (sign, decimals, exponent) not glued to letters, digits or a decimal point.
NUMERAL = r"(?<![\w.])[-+\u2212]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![\w%]|\.[0-9]|\s*%)"
_NUMBER = re.compile(NUMERAL)
_RANGE = re.compile(
    rf"(?i)(?:\bbetween\s+{NUMERAL}\s+and\s+{NUMERAL})|(?:{NUMERAL}\s*(?:-|–|—|\bto\b)\s*{NUMERAL})"
)
_DENOMINATOR = re.compile(rf"(?i)(?:/|\bout\s+of\b)\s*{NUMERAL}|{NUMERAL}(?:-|\s+)point\s+scale|{NUMERAL}-point\b")
#: Labels a score follows in free-text replies (case-insensitive).
DEFAULT_LABELS = ("score", "rating", "grade", "total")
_AFTER_LABEL = r"[^\S\n]*(?:\([^)\n]*\))?[^\S\n]*[*_]*[^\S\n]*(?:[:=]|\bis\b|\bof\b)?[*_\s]*"
_NOT_A_RANGE = r"(?!\s*(?:-|–|—|\bto\b)\s*[0-9])"


@dataclass(frozen=True)
class Extracted:
    """A reply's score (``value``) or why none was read (``problem``); never both."""

    value: float | None
    problem: str | None


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def _fmt(value: float) -> str:
    return f"{value:g}"


def _label_pattern(labels: Sequence[str]) -> re.Pattern[str]:
    words = "|".join(r"\s+".join(re.escape(w) for w in label.split()) for label in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?i)(?<![\w])(?:{words})(?![\w]){_AFTER_LABEL}({NUMERAL}){_NOT_A_RANGE}")


def _is_numpy_bool(value: Any) -> bool:
    # a NumPy bool exists only once NumPy is loaded, and the collector sends its first request without it
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


def extract_score(
    reply: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    labels: Sequence[str] = DEFAULT_LABELS,
    levels: Collection[float] | None = None,
    what: str = "score",
) -> Extracted:
    """The score of one reply by the rule of this module, or the problem that stops it.

    Parameters
    ----------
    reply : str or number
        The judge's reply. A number (JSON replies) is its own score; booleans are not scores.
    low, high : float, optional
        The valid range; numbers outside it are not candidates.
    labels : sequence of str
        Score labels (rule 3); the default covers ``Score``, ``Rating``, ``Grade``, ``Total``.
    levels : collection of float, optional
        The scale's levels when it has gaps (e.g. ``{1, 2, 4, 5}``): another value is flagged.
    what : str
        How messages name the value (``"total"``, a criterion name).

    Returns
    -------
    Extracted
        ``value`` set and ``problem`` None, or ``value`` None and ``problem`` saying why.

    Examples
    --------
    >>> extract_score("Rating: 2\\nRationale: mentions the 1995 playoff win.", low=1, high=3)
    Extracted(value=2.0, problem=None)
    >>> extract_score("Coherence: 3", low=1, high=3)
    Extracted(value=3.0, problem=None)
    >>> extract_score("Born January 26, 1982.", low=1, high=3).problem
    'no score within 1-3 in the reply (numbers found: 26, 1982)'
    """
    if reply is None or isinstance(reply, bool) or _is_numpy_bool(reply):
        return Extracted(None, f"reply {reply!r} is not a {what}")
    if isinstance(reply, numbers.Real):
        value = float(reply)
        if not math.isfinite(value):
            return Extracted(None, f"{what} {value} is not a finite number")
        return _checked(value, low, high, levels, what)
    if not isinstance(reply, str):
        return Extracted(None, f"reply of type {type(reply).__name__} is not text or a number")
    labelled = list(_label_pattern(labels).finditer(reply)) if labels else []
    if labelled:
        inside = [m for m in labelled if _in_range(_number(m.group(1)), low, high)]
        chosen = (inside or labelled)[-1]
        value = _number(chosen.group(1))
        # "Score: 2 or 3": another in-range number on the label's line makes the answer unclear.
        rest = reply[chosen.end():].split("\n", 1)[0]
        others = sorted({v for v in _numbers(rest) if _in_range(v, low, high)} - {value})
        if others and inside:
            return Extracted(None, f"conflicting {what}s in the reply: {', '.join(map(_fmt, sorted([value, *others])))}")
        return _checked(value, low, high, levels, what)
    ranges = [m.group() for m in _RANGE.finditer(reply)]
    found = _numbers(reply)
    inside = sorted({v for v in found if _in_range(v, low, high)})
    if len(inside) == 1:
        return _checked(inside[0], low, high, levels, what)
    if len(inside) > 1:
        return Extracted(None, f"conflicting {what}s in the reply: {', '.join(map(_fmt, inside))}")
    outside = list(dict.fromkeys(found))
    if len(outside) == 1:
        return _checked(outside[0], low, high, levels, what)
    if not outside:
        aside = f" (ranges such as {ranges[0]!r} are scale statements, not {what}s)" if ranges else ""
        return Extracted(None, f"no {what} in the reply{aside}")
    shown = ", ".join(map(_fmt, outside[:5])) + (", ..." if len(outside) > 5 else "")
    return Extracted(None, f"no {what} within {_fmt(low)}-{_fmt(high)} in the reply (numbers found: {shown})")


def _numbers(text: str) -> list[float]:
    """The numbers of a text that are not part of a scale statement, in order."""
    text = _DENOMINATOR.sub(" ", _RANGE.sub(" ", text))
    return [_number(m.group()) for m in _NUMBER.finditer(text)]


def _in_range(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _checked(value: float, low: float | None, high: float | None, levels: Collection[float] | None, what: str) -> Extracted:
    if not _in_range(value, low, high):
        bounds = f"{_fmt(low)}-{_fmt(high)}" if low is not None and high is not None else (
            f">= {_fmt(low)}" if low is not None else f"<= {_fmt(high)}"
        )
        return Extracted(None, f"{what} {_fmt(value)} outside {bounds}")
    if levels is not None and value not in levels:
        return Extracted(None, f"{what} {_fmt(value)} is not a level of the scale [{', '.join(_fmt(v) for v in sorted(levels))}]")
    return Extracted(value, None)
