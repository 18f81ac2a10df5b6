"""Ratings in a frame of another engine: the door of :func:`long_ratings`, run in the engine.

The agreement coefficients and Krippendorff's alpha depend on the ratings only through
tables that one grouped pass computes where the data lives: per target, how many ratings
fell in each category (Fleiss, Gwet, percent agreement, alpha), or the two raters' cross
table (Cohen). :func:`rated` checks the ratings as :func:`~hce.stats.reliability._common.long_ratings`
does (one rating per target and rater; a blank rating is dropped and counted) and returns
the rows holding a rating, still in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hce._checks import _label, plain
from hce.engine_checks import distinct_by_hash, known_unique, remember_unique
from hce.errors import DataError
from hce.stats._frames import EngineFrame


@dataclass(frozen=True)
class Rated:
    """The rows holding a rating (``frame``, in the engine), how many raters gave them and
    how many rows had no rating (``n_missing``)."""

    frame: EngineFrame
    n_raters: int
    n_missing: int


def rated(frame: EngineFrame, item: str, rater: str, score: str, *, numeric: bool) -> Rated:
    """Check long ratings in the engine and keep the rows holding one.

    Two ratings of one target by one rater are refused, naming the pair, as in pandas; once
    per frame (a report runs ICC and alpha on each condition's attempts).
    """
    if numeric and not frame.is_numeric(score):
        raise DataError(f"column {score!r} must be numeric, got {frame.schema[score]} in the {frame.engine} "
                        "frame; cast it to a number in the engine first")  # fmt: skip
    n_missing = frame.count_blank(score)  # no pass where the frame is known to hold none (a report's)
    kept = frame.where(~frame.blank(score), clean=[f"blank:{score}"]) if n_missing else frame
    if not known_unique(frame.native, (item, rater)):
        _refuse_repeated_ratings(kept, item, rater)
        if frame.native is not None and not n_missing:  # every row was checked: no other score of this frame checks again
            remember_unique(frame.native, (item, rater))
    return Rated(kept, kept.count_distinct(rater), n_missing)


def _refuse_repeated_ratings(kept: EngineFrame, item: str, rater: str) -> None:
    """Two ratings of one target by one rater: refused, naming the first pair (a full grouped
    pass, run only when the keys' hashes cannot prove every pair distinct)."""
    import narwhals as nw

    if distinct_by_hash(kept.known_as, [item, rater]):
        return
    repeats = (
        kept.frame.group_by([item, rater]).agg(nw.len().alias("_n")).filter(nw.col("_n") > 1)
        .sort([item, rater]).head(1).collect().to_pandas()
    )  # fmt: skip
    if len(repeats):
        t, r, n = repeats.iloc[0][[item, rater, "_n"]]
        raise DataError(f"target {_label(t)} has {plain(n)} ratings by rater {_label(r)}; give each (target, rater) pair one rating, "
                        "or aggregate repeats first")  # fmt: skip


def unit_counts(frame: EngineFrame, item: str, score: str) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per target x distinct rating, how many ratings (one grouped pass): the target
    labels, the ratings and the counts, sorted by target then rating."""
    table = frame.value_counts([item], score)
    return table[item], table[score], table["n"]


def count_matrix(units: pd.Series, values: pd.Series, n: pd.Series, cats: list) -> np.ndarray:
    """Targets (sorted, as :func:`~hce.stats.reliability._common.sorted_codes` orders them) x
    ``cats`` matrix of counts, from the long table of :func:`unit_counts`."""
    row, _ = pd.factorize(units, sort=True)
    column = pd.Index(cats).get_indexer(values)
    q = len(cats)
    return np.bincount(row * q + column, weights=n.to_numpy(float), minlength=(row.max() + 1) * q).reshape(-1, q)
