"""Long-format ratings -> integer codes, and the columns every reliability table shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hce._checks import _label, numeric_column, require_columns
from hce.errors import DataError

#: Columns every reliability table ends with, in this order.
COUNT_COLUMNS = ["n_items", "n_raters", "n_scores", "n_dropped"]


@dataclass(frozen=True)
class Ratings:
    """Ratings in long form as integer codes; rows with a missing rating already removed.

    ``target`` and ``rater`` index ``target_labels`` and ``rater_labels``; ``value`` holds the
    ratings (float, or the original objects when ``numeric=False``); ``n_missing`` counts the
    rows dropped because their rating was missing.
    """

    target: np.ndarray
    rater: np.ndarray
    value: np.ndarray
    target_labels: pd.Index
    rater_labels: pd.Index
    n_missing: int

    @property
    def n_targets(self) -> int:
        return len(self.target_labels)

    @property
    def n_raters(self) -> int:
        return len(self.rater_labels)

    def wide(self) -> np.ndarray:
        """Targets x raters float matrix with NaN for absent ratings."""
        out = np.full((self.n_targets, self.n_raters), np.nan)
        out[self.target, self.rater] = self.value
        return out


def sorted_codes(values: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """Integer codes of ``values`` in sorted order of the distinct values.

    Whole numbers in a short range (item ids, attempt numbers, scores on a 1-5 or 5-20
    scale, as ints or floats) are coded by direct lookup; anything else is hash-factorised
    and only the distinct values sorted: both several times faster than sorting every row
    when there are millions of ratings. Labels that cannot be ordered (mixed types) keep
    their order of first appearance.
    """
    values = np.asarray(values)
    if values.dtype.kind in "iuf" and len(values):
        low, high = values.min(), values.max()
        short = np.isfinite(low) and np.isfinite(high) and high - low <= 4 * len(values)
        if short:
            # ints: values - low is a new int64 array already; floats: whole iff it survives the cast
            shifted = values - low
            offset = shifted.astype(np.int64, copy=False)
        if short and (values.dtype.kind != "f" or np.array_equal(offset, shifted)):
            present = np.zeros(int(high - low) + 1, dtype=bool)
            present[offset] = True
            labels = (np.flatnonzero(present) + low).astype(values.dtype)
            if len(labels) == len(present):  # no gap in the range (ids 0..n-1): offsets are the codes
                return offset, pd.Index(labels)
            rank = np.cumsum(present) - 1
            return rank[offset], pd.Index(labels)
    codes, uniques = pd.factorize(values)
    try:
        order = np.argsort(np.asarray(uniques), kind="stable")
    except TypeError:
        return codes.astype(np.int64), pd.Index(uniques)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], pd.Index(np.asarray(uniques)[order])


def long_ratings(
    data: pd.DataFrame, targets: str, raters: str, ratings: str, *, numeric: bool = True
) -> Ratings:
    """Validate and encode long-format ratings.

    A row whose rating is missing is dropped and counted. A missing target or rater label
    and two ratings of one target by one rater are errors; the message names the row or pair.
    """
    require_columns(data, [targets, raters, ratings])
    if numeric:
        value = numeric_column(data, ratings)
        keep = ~np.isnan(value)
    else:
        value = data[ratings].to_numpy()
        keep = data[ratings].notna().to_numpy()
    for column in (targets, raters):
        missing = data[column].isna().to_numpy()
        if missing.any():
            raise DataError(
                f"column {column!r} is missing in row {_label(data.index[missing][0])}; "
                "label every rating"
            )
    every = keep.all()  # then no row needs dropping: skip three copies of every column
    target, target_labels = sorted_codes(data[targets].to_numpy() if every else data[targets].to_numpy()[keep])
    rater, rater_labels = sorted_codes(data[raters].to_numpy() if every else data[raters].to_numpy()[keep])
    n_targets, n_raters = len(target_labels), len(rater_labels)
    repeats = np.bincount(target * n_raters + rater, minlength=n_targets * n_raters)
    if repeats.max(initial=0) > 1:
        t, r = divmod(int(np.argmax(repeats)), n_raters)
        raise DataError(
            f"target {_label(target_labels[t])} has {repeats.max()} ratings by rater "
            f"{_label(rater_labels[r])}; give each (target, rater) pair one rating, "
            "or aggregate repeats first"
        )
    return Ratings(target, rater, value if every else value[keep], target_labels, rater_labels, int((~keep).sum()))


def counts(n_targets: int, n_raters: int, n_ratings: int, n_dropped: int) -> dict[str, int]:
    """The four count columns of every reliability table."""
    return dict(
        n_items=int(n_targets),
        n_raters=int(n_raters),
        n_scores=int(n_ratings),
        n_dropped=int(n_dropped),
    )


#: The stacked columns of a wide scale table (:func:`scale_layout`).
WIDE_KEYS = ("observation", "scale_item", "score")


def scale_layout(
    data: pd.DataFrame, item: str | None, rater: str | None, score: str | None, columns: Sequence[str] | None,
    name: str,
) -> tuple[pd.DataFrame, str, str, str]:
    """A scale statistic's data in long layout, whichever layout it came in.

    Long: ``item`` (what is measured: a respondent, a rated response), ``rater`` (the scale's
    items: rubric criteria, questions) and ``score``, all three. Wide, as pingouin and psych
    take it: one row per respondent, one column per scale item (``columns``, or every column
    but the default error flag when none of the four keywords is given).
    """
    long_keys = (item, rater, score)
    if all(k is None for k in long_keys):
        wide = data[list(columns)] if columns is not None else data.drop(columns=["error_flag"], errors="ignore")
        stacked = (wide.reset_index(drop=True).rename_axis(WIDE_KEYS[0]).reset_index()
                   .melt(id_vars=WIDE_KEYS[0], var_name=WIDE_KEYS[1], value_name=WIDE_KEYS[2]))  # fmt: skip
        return (stacked, *WIDE_KEYS)
    if columns is not None or any(k is None for k in long_keys):
        raise DataError(
            f"{name} reads long data (item=, rater= and score=: all three) or wide data (one row per "
            "respondent, one column per scale item: columns=, or none of the four); got "
            + ", ".join(f"{k}={v!r}" for k, v in zip(("item", "rater", "score", "columns"), (*long_keys, columns)))
        )
    return data, item, rater, score  # type: ignore[return-value]
