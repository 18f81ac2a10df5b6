"""A two-level criterion (0/1, pass/fail, any two scores) analysed as the binary outcome it is.

An SD, an ICC or an interval-level alpha of 0/1 scores describes nothing a reader can use
("ICC 1.0e+00 [1.0e+00, 1.0e+00]"). For two levels the report of any log gives instead, per
condition: the share of items whose repeated attempts mostly give the higher level (Wilson
interval over items, which are independent, unlike the attempts nested in them), the flip
rate of repeated attempts, and their agreement on the nominal level (Fleiss' kappa, each
attempt a rater). Conditions are compared on the per-item share of the higher level (the
paired or unpaired rank test :func:`hce.report.generic.comparison_plan` picks), which keeps
the item as the unit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.errors import DataError, HceWarning
from hce.stats._intervals import proportion_ci

ITEM, CONDITION = "item_id", "condition_id"


def binary_levels(values: pd.Series, scale: tuple | None) -> tuple | None:
    """The two levels of a criterion (low, high), from its scale or its values; None when it has more.

    Examples
    --------
    >>> binary_levels(pd.Series([0, 1, 1, None]), None)
    (0.0, 1.0)
    >>> binary_levels(pd.Series([1, 2, 3]), (1, 2, 3, 4)) is None
    True
    """
    if scale is not None:
        return tuple(scale) if len(scale) == 2 else None
    seen = tuple(sorted(pd.to_numeric(values, errors="coerce").dropna().unique().tolist()))
    return seen if len(seen) == 2 else None


def as_high(log: pd.DataFrame, column: str, levels: tuple) -> pd.DataFrame:
    """The log with ``column`` as 1.0 (the higher level), 0.0 (the lower) or NaN."""
    values = pd.to_numeric(log[column], errors="coerce")
    return log.assign(**{column: np.where(values.isna(), np.nan, (values == levels[1]).astype(float))})


def binary_summary(log: pd.DataFrame, column: str, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per condition: the share of items at the higher level with its Wilson interval, and flips.

    ``log[column]`` holds 1/0/NaN (:func:`as_high`). Returns one row per condition:
    ``n_items``, ``n_attempts``, ``share_attempts`` (attempts at the higher level,
    descriptive), ``estimate`` / ``ci_low`` / ``ci_high`` (share of items whose majority is the
    higher level, Wilson interval over items; tied items are left out and counted in
    ``n_ties``), ``mean_flip_rate`` (mean share of an item's attempts disagreeing with its
    majority) and ``share_items_flipping`` (items whose attempts do not all agree).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # ties are counted in n_ties below
        votes = hs.vote_stability(log, item=ITEM, condition=CONDITION, score=column, error="error_flag", confidence=confidence)
    votes = votes[votes["n"] > 0]
    rows = []
    for condition, part in votes.groupby(CONDITION, sort=True):
        decided = part["majority"].dropna().astype(bool)
        k, n = int(decided.sum()), len(decided)
        low, high = proportion_ci(np.array([k]), np.array([n]), confidence, "wilson")
        rows.append({CONDITION: condition, "n_items": len(part), "n_attempts": int(part["n"].sum()),
                     "share_attempts": float(part["n_true"].sum() / part["n"].sum()),
                     "estimate": k / n if n else np.nan, "ci_low": float(low[0]), "ci_high": float(high[0]),
                     "n_ties": len(part) - n, "mean_flip_rate": float(part["flip_rate"].mean()),
                     "share_items_flipping": float((part["flip_rate"] > 0).mean()),
                     "ci_method": "Wilson, over items (majority of each item's attempts)"})  # fmt: skip
    return pd.DataFrame(rows)


def nominal_agreement(log: pd.DataFrame, column: str, *, confidence: float = 0.95) -> tuple[pd.DataFrame, list[str]]:
    """Fleiss' kappa of repeated attempts per condition (each attempt a rater), on the nominal level.

    Returns the table and the reasons a condition has none (one level only, too few items).
    """
    rows, skipped = [], []
    for condition, part in log.groupby(CONDITION, sort=True):
        valid = part[~part["error_flag"].astype(bool) & part[column].notna()]
        try:
            out = hs.fleiss_kappa(valid, item=ITEM, rater="attempt", score=column, confidence=confidence)
        except DataError as exc:
            skipped.append(f"agreement of condition {condition} is not reported: {exc}")
            continue
        rows.append(out.assign(**{CONDITION: condition}))
    if not rows:
        return pd.DataFrame(), skipped
    table = pd.concat(rows, ignore_index=True)
    return table[[CONDITION, *[c for c in table.columns if c != CONDITION]]], skipped
