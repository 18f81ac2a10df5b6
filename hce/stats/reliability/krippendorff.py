"""Krippendorff's alpha from per-unit value counts, with a vectorised unit bootstrap.

The bootstrap resamples units through their sufficient statistics: alpha depends on a unit
only through its value counts (interval level: its count, sum and sum of squares), so
units with the same counts are one row with a multiplicity, and a replicate is a vector of
multinomial counts over those distinct rows (:func:`~hce.stats._resample.multinomial_counts`).
500,000 units of 20 ratings on a 1-5 scale are a few thousand distinct rows at most.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence
from hce.errors import DataError
from hce.stats._resample import (
    as_generator,
    distinct_rows,
    multinomial_counts,
    percentile_interval,
)
from hce.stats._frames import EngineFrame
from hce.stats._validate import ratings_statistic
from hce.stats.reliability._common import (
    COUNT_COLUMNS,
    counts,
    long_ratings,
    sorted_codes,
)
from hce.stats.reliability._engine import count_matrix, rated, unit_counts
from hce.stats.reliability.agreement import category_order

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Most cells (units x distinct values) the count matrix may hold before we refuse.
MAX_CELLS = 50_000_000
#: Distinct interval-level values up to which alpha reads per-unit value counts (judge
#: scores), past which per-unit moments (continuous ratings).
FEW_VALUES = 64
#: Cells of a resample-weight block (resamples x distinct units) held in memory at once.
BLOCK_CELLS = 4_000_000

COLUMNS = [
    "metric", "level", "estimate", "ci_low", "ci_high", "se", "minimum", "p_below",
    "method", "ci_method", *COUNT_COLUMNS,
]  # fmt: skip


class _Alpha:
    """Alpha as a function of unit weights: ``alphas(w)`` for a (resamples x units) matrix.

    Weight 1 on every unit gives the estimate; multinomial counts give bootstrap
    replicates. Each level keeps only per-unit summaries, never units x values x values;
    ``key`` holds the summaries that determine everything else about a unit.
    """

    _PER_UNIT = ("m", "inv", "d", "c", "f")

    def __init__(self, m: np.ndarray, level: Level | Distance, *, counts: np.ndarray | None = None,
                 values: np.ndarray | None = None, moments: tuple[np.ndarray, np.ndarray] | None = None):  # fmt: skip
        """Alpha of units with ``m`` pairable values each, from their ``counts`` of the
        distinct ``values`` (units x values), or at the interval level from ``moments``:
        per unit, the sum and the sum of squares of the values minus their overall mean."""
        self.m = np.asarray(m, dtype=float)
        self.inv = 1.0 / (self.m - 1.0)
        self.level = level
        if level == "interval" and moments is None:
            # the counts of few distinct values give the moments, exactly alike in every engine
            v = np.asarray(values, dtype=float)
            x = v - (counts.sum(axis=0) @ v) / counts.sum()
            moments = (counts @ x, counts @ (x * x))
        if moments is not None:
            # (c - k)^2 expands into per-unit moments: sum_{i != j} (x_i - x_j)^2 = 2 m S2 - 2 S1^2
            s1, s2 = moments
            self.d = self.inv * (2 * self.m * s2 - 2 * s1**2)
            self.f = self.key = np.column_stack([self.m, s1, s2])
            return
        self.c = self.key = np.asarray(counts, dtype=float)
        n_values = self.c.shape[1]
        if level == "nominal":
            self.d = self.inv * (self.m**2 - (self.c**2).sum(axis=1))
        elif level == "ordinal":
            self.d = None  # the ordinal metric depends on the margins: see _ordinal
        else:
            v = np.asarray(values, dtype=float)
            if level == "ratio":
                with np.errstate(divide="ignore", invalid="ignore"):
                    delta = ((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2
                delta[~np.isfinite(delta)] = 0.0  # 0/0 at c = k = 0
            else:
                delta = np.asarray(level(v[:, None], v[None, :]), dtype=float)
                if delta.shape != (n_values, n_values):
                    raise DataError(
                        "a distance callable must broadcast: distance(a[:, None], b[None, :]) "
                        f"should have shape {(n_values, n_values)}, got {delta.shape}"
                    )
            self.delta = delta
            self.d = self.inv * ((self.c @ delta) * self.c).sum(axis=1)

    @classmethod
    def of_values(cls, unit: np.ndarray, value: np.ndarray, level: Level | Distance) -> _Alpha:
        """Alpha of the values ``value`` of units ``unit`` (codes 0..U-1, each unit 2+ values)."""
        m = np.bincount(unit).astype(float)
        code, distinct = sorted_codes(value)
        if level == "interval" and len(distinct) > FEW_VALUES:
            x = value - value.mean()
            return cls(m, level, moments=(np.bincount(unit, weights=x), np.bincount(unit, weights=x * x)))
        check_cells(len(m), len(distinct), level)
        c = np.bincount(unit * len(distinct) + code, minlength=len(m) * len(distinct))
        return cls(m, level, counts=c.reshape(len(m), len(distinct)), values=np.asarray(distinct))

    def distinct(self) -> tuple[_Alpha, np.ndarray]:
        """The same alpha over distinct units, and how many units each one stands for."""
        first, multiplicity = distinct_rows(self.key)
        out = copy.copy(self)
        for name in self._PER_UNIT:
            value = getattr(self, name, None)
            if value is not None:
                setattr(out, name, value[first])
        out.key = out.f if self.level == "interval" else out.c
        return out, multiplicity

    def alphas(self, w: np.ndarray) -> np.ndarray:
        """Alpha for each row of unit weights ``w``."""
        if self.level == "ordinal":
            return self._ordinal(w)
        if self.level == "interval":
            n, s1, s2 = (w @ self.f).T
            expected = 2 * n * s2 - 2 * s1**2
        else:
            margins = w @ self.c
            n = margins.sum(axis=1)
            if self.level == "nominal":
                expected = n**2 - (margins**2).sum(axis=1)
            else:
                expected = ((margins @ self.delta) * margins).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - (n - 1) * (w @ self.d) / expected

    def _ordinal(self, w: np.ndarray) -> np.ndarray:
        # delta_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 = (r_k - r_c)^2 with mid-ranks
        # r_c = sum_{g<c} n_g + n_c/2: the interval metric on mid-ranks, resample by resample
        margins = w @ self.c
        n = margins.sum(axis=1)
        ranks = np.cumsum(margins, axis=1) - margins / 2
        ranks -= ((margins * ranks).sum(axis=1) / n)[:, None]  # centre: less cancellation
        s1 = self.c @ ranks.T
        s2 = self.c @ (ranks**2).T
        observed = (w * (self.inv[:, None] * (2 * self.m[:, None] * s2 - 2 * s1**2)).T).sum(1)
        expected = 2 * n * (margins * ranks**2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - (n - 1) * observed / expected


def alpha_core(
    unit: np.ndarray,
    value: np.ndarray,
    level: Level | Distance = "interval",
    *,
    n_boot: int = 0,
    random_state: int | np.random.Generator | None = None,
) -> tuple[float, np.ndarray]:
    """Krippendorff's alpha of pairable values and its bootstrap replicates.

    ``unit`` holds integer unit codes ``0..U-1``, every unit with at least two values;
    ``value`` the values (numeric, or any hashable for ``"nominal"``). Returns the estimate
    and ``n_boot`` replicates from resampling units with replacement.
    """
    return _estimate(_Alpha.of_values(unit, value, level), n_boot, random_state)


def _estimate(model: _Alpha, n_boot: int, random_state) -> tuple[float, np.ndarray]:
    """The estimate and ``n_boot`` bootstrap replicates of alpha over resampled units."""
    estimate = float(model.alphas(np.ones((1, len(model.m))))[0])
    if not n_boot:
        return estimate, np.empty(0)
    # Resampling units with replacement = multinomial counts over the distinct units.
    distinct, multiplicity = model.distinct()
    rng = as_generator(random_state)
    block = max(1, BLOCK_CELLS // len(multiplicity))
    reps = [
        distinct.alphas(multinomial_counts(multiplicity, min(block, n_boot - start), rng).astype(float))
        for start in range(0, n_boot, block)
    ]
    return estimate, np.concatenate(reps)


def _alpha_in_engine(frame: EngineFrame, *, item: str, rater: str, score: str, level: Level | Distance,
                     categories: Sequence | None, confidence: float, n_boot: int, minimum: float | Sequence[float],
                     random_state) -> pd.DataFrame:  # fmt: skip
    """:func:`krippendorff_alpha` of a frame of another engine, from per-unit summaries.

    The engine keeps the units with two or more ratings (a join with its per-unit counts)
    and returns, per unit, how many times each distinct rating occurs, or at the interval
    level with more than :data:`FEW_VALUES` distinct ratings, each unit's count, mean and
    sum of squared deviations: units x values numbers, never the ratings.
    """
    import narwhals as nw

    _check_options(level, confidence, n_boot)
    ratings = rated(frame, item, rater, score, numeric=level != "nominal" and categories is None)
    sizes = ratings.frame.counts([item])
    keep = sizes["n"] >= 2
    if not keep.any():
        raise DataError("no unit has two or more ratings; alpha is undefined")
    if keep.all():  # every unit pairable: no join, which re-reads the ratings (4 s a report at 20M rows)
        pairable = ratings.frame
    else:
        units = ratings.frame.frame.group_by(item).agg(nw.len().alias("_m")).filter(nw.col("_m") >= 2).select(item)
        pairable = EngineFrame(ratings.frame.frame.join(units, on=item))
    if level == "interval" and pairable.count_distinct(score) > FEW_VALUES:
        cells = pairable.cell_moments([item], score)
        n, mean = cells["n"].to_numpy(float), cells["mean"].to_numpy(float)
        shift = mean - (n @ mean) / n.sum()
        model = _Alpha(n, level, moments=(n * shift, cells["ss"].to_numpy(float) + n * shift**2))
    else:
        unit, value, n = unit_counts(pairable, item, score)
        value = value if categories is None else _positions(value, categories)
        distinct = np.sort(pd.unique(value)) if level != "nominal" else _sorted(pd.unique(value))
        check_cells(int(keep.sum()), len(distinct), level)
        c = count_matrix(unit, value, n, list(distinct))
        model = _Alpha(c.sum(axis=1), level, counts=c, values=np.asarray(distinct))
    n_used = int(sizes.loc[keep, "n"].sum())
    n_count = counts(int(keep.sum()), ratings.n_raters, n_used, ratings.n_missing + int(sizes.loc[~keep, "n"].sum()))
    return _alpha_table(model, level, n_count, confidence, n_boot, minimum, random_state)


def _positions(values: np.ndarray, categories: Sequence) -> np.ndarray:
    """Each rating's position among ``categories`` (lowest first): labels on an ordered scale as ranks."""
    order = category_order(pd.unique(values), categories)
    return pd.Index(order).get_indexer(values).astype(float)


def _sorted(values: np.ndarray) -> np.ndarray:
    """Distinct labels in :func:`sorted_codes`' order (first appearance where they do not sort)."""
    return np.asarray(sorted_codes(values)[1])


@ratings_statistic(labels=("score",), varying=("score",), engine=_alpha_in_engine)
def krippendorff_alpha(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    level: Level | Distance = "interval",
    categories: Sequence | None = None,
    confidence: float = 0.95,
    n_boot: int = 1000,
    minimum: float | Sequence[float] = 0.667,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Krippendorff's alpha for any level of measurement, with missing values and a bootstrap CI.

    Parameters
    ----------
    data : DataFrame
        Long format: one row per rating. Missing ratings (NaN) are allowed.
    item, rater, score : str
        Columns naming the unit (target), the rater (coder, model, attempt) and the value.
    level : {"nominal", "ordinal", "interval", "ratio"} or callable, default "interval"
        Level of measurement, or a distance ``delta(a, b)`` that broadcasts over arrays
        of distinct values (``delta(v[:, None], v[None, :])`` must give a square matrix,
        zero on the diagonal). Non-numeric ratings are allowed for ``"nominal"``, and for
        every level when ``categories`` orders them.
    categories : sequence, optional
        All categories from lowest to highest, as in :func:`gwet_ac` and
        :func:`cohen_kappa`: text labels ("poor" < "fair" < "good") are then read as their
        positions 0, 1, 2, ... (the ordinal level needs only their order). Default ``None``:
        the ratings are numbers (or nominal labels). A rating not among them is refused.
    %(confidence)s
        Here: the bootstrap interval.
    %(n_boot)s
        0 gives no interval (NaN).
    minimum : float or sequence of float, default 0.667
        Smallest acceptable alpha; ``p_below`` estimates P(alpha < minimum). A sequence
        gives one row per minimum (same estimate and resamples).
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per minimum: ``metric`` ("Krippendorff's alpha"), ``level``,
        ``estimate``, ``ci_low``, ``ci_high`` (percentile bootstrap), ``se`` (SD of the
        replicates), ``minimum``, ``p_below`` (share of replicates below ``minimum``),
        ``method``, ``ci_method``, ``n_items`` (pairable units, those with 2+ values),
        ``n_raters``, ``n_scores`` (pairable values) and ``n_dropped`` (missing ratings plus
        lone values of units with a single value).

    Notes
    -----
    With n_uc the number of values c in unit u, m_u the values in u and only units with
    m_u >= 2 kept, the coincidences are o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1),
    margins n_c = sum_k o_ck, n = sum_c n_c, and

        alpha = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck

    with delta nominal [c != k], interval (c - k)^2, ratio ((c - k) / (c + k))^2 and ordinal
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 (Krippendorff 2011). Everything is computed from
    per-unit value counts (units x distinct values) or, for the interval level, per-unit
    sums and sums of squares, never from units x values x values arrays.

    Bootstrap: units are resampled with replacement (multinomial weights) and alpha is
    recomputed in full for each resample, observed and expected disagreement alike (for
    the ordinal level the metric is rebuilt from each resample's margins); the interval is
    the percentile interval. Units with the same value counts are drawn as one category
    with its multiplicity, the same resampling at a cost set by the number of distinct
    units (500,000 units x 20 ratings on 1-5 with 1,000 replicates: seconds). This is not the Hayes & Krippendorff (2007) KALPHA algorithm,
    which resamples pairs of values with the expected disagreement held fixed; we resample
    units because units are the independent draws in a reliability study. ``p_below`` is
    the bootstrap estimate of the probability q that alpha falls below a required minimum,
    the quantity Hayes & Krippendorff (2007) report.

    References
    ----------
    .. [1] Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.
       Annenberg School for Communication, University of Pennsylvania.
    .. [2] Hayes, A. F., & Krippendorff, K. (2007). Answering the call for a standard
       reliability measure for coding data. Communication Methods and Measures, 1(1), 77-89.

    Examples
    --------
    Krippendorff's (2011) worked example, 4 observers x 12 units with missing values:

    >>> import numpy as np, pandas as pd
    >>> from hce.stats import krippendorff_alpha
    >>> nan = np.nan
    >>> wide = pd.DataFrame(
    ...     [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...      [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...      [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...      [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]], index=list("ABCD"))
    >>> long = wide.stack().rename("value").rename_axis(["coder", "unit"]).reset_index()
    >>> for level in ["nominal", "ordinal", "interval", "ratio"]:
    ...     out = krippendorff_alpha(long, item="unit", rater="coder", score="value", level=level, n_boot=0)
    ...     print(level, round(out.estimate[0], 3))
    nominal 0.743
    ordinal 0.815
    interval 0.849
    ratio 0.797
    """
    _check_options(level, confidence, n_boot)
    r = long_ratings(data, item, rater, score, numeric=level != "nominal" and categories is None)
    values = r.value if categories is None else _positions(r.value, categories)
    per_unit = np.bincount(r.target, minlength=r.n_targets)
    pairable = per_unit[r.target] >= 2
    if not pairable.any():
        raise DataError("no unit has two or more ratings; alpha is undefined")
    if pairable.all():  # the common case: the codes are 0..U-1 already, no copy needed
        unit, value = r.target, values
    else:
        unit, value = (np.cumsum(per_unit >= 2) - 1)[r.target[pairable]], values[pairable]  # pairable units as 0..U-1
    model = _Alpha.of_values(unit, value, level)
    n_count = counts((per_unit >= 2).sum(), r.n_raters, pairable.sum(), r.n_missing + (~pairable).sum())
    return _alpha_table(model, level, n_count, confidence, n_boot, minimum, random_state)


def _check_options(level, confidence: float, n_boot: int) -> None:
    check_confidence(confidence)
    if not callable(level):
        check_choice("level", level, ["nominal", "ordinal", "interval", "ratio"])
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise DataError(f"n_boot={n_boot!r} must be a whole number >= 0")


def check_cells(n_units: int, n_values: int, level) -> None:
    """Refuse a units x values count matrix too large to hold."""
    if n_units * n_values > MAX_CELLS:
        raise DataError(
            f"{n_values} distinct ratings in {n_units} units is too many for level "
            f"{level!r}; round the ratings or use level='interval'"
        )


def _alpha_table(model: _Alpha, level, n_count: dict, confidence: float, n_boot: int, minimum,
                 random_state) -> pd.DataFrame:  # fmt: skip
    """krippendorff_alpha's table: the estimate, its bootstrap interval, one row per minimum."""
    estimate, reps = _estimate(model, int(n_boot), random_state)
    if not np.isfinite(estimate):
        raise DataError("all pairable ratings are equal, so alpha is undefined (0/0)")
    if n_boot:
        ci_low, ci_high = (float(x) for x in percentile_interval(reps, confidence))
        se = float(np.nanstd(reps, ddof=1))
        ci_method = f"percentile bootstrap over units (B={n_boot})"
    else:
        ci_low = ci_high = se = np.nan
        ci_method = "none (n_boot=0)"
    minima = [minimum] if np.ndim(minimum) == 0 else list(minimum)
    rows = [
        dict(
            metric="Krippendorff's alpha",
            level=level if isinstance(level, str) else getattr(level, "__name__", "custom"),
            estimate=estimate, ci_low=float(ci_low), ci_high=float(ci_high), se=se,
            minimum=float(low),
            p_below=float(np.mean(reps < low)) if n_boot else np.nan,
            method="coincidence matrix from per-unit value counts (Krippendorff 2011)",
            ci_method=ci_method, **n_count,
        )  # fmt: skip
        for low in minima
    ]
    return pd.DataFrame(rows, columns=COLUMNS)
