"""Spread of repeated judge scores: per-item SDs, their summaries, shares under thresholds.

Every function excludes errored attempts and counts them; an item with fewer than two
valid attempts gets ``sd = NaN``, is kept in the output and is announced with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, flag_values, numeric_column, require_columns
from hce.errors import DataError, HceWarning
from hce.stats._intervals import ProportionMethod, proportion_ci
from hce.stats._frames import EngineFrame
from hce.stats._validate import ERROR_DEFAULT, statistic

#: Relative slack when comparing an SD with a threshold: an SD computed as
#: 1.0000000000000002 from integer scores is "exactly 1.0" and must count as <= 1.0.
THRESHOLD_RTOL = 1e-9

#: Decimals kept in SDs. Equal SDs computed from differently ordered scores can differ in
#: the last bit; rank tests (Friedman, Mann-Whitney) must see them as ties.
SD_DECIMALS = 12

_SPREAD_STATS = [
    "criterion", "n", "n_errors", "n_missing", "mean", "sd", "ddof",
    "min", "max", "range", "q1", "q3", "iqr",
]  # fmt: skip


def as_list(columns: str | Sequence[str] | None) -> list[str]:
    """``None`` -> [], ``"a"`` -> ["a"], a sequence -> a list."""
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def present_error(columns, error: str | None) -> str | None:
    """``error`` as a call uses it: the default column absent from the data flags nothing; a named one must exist."""
    return None if error == ERROR_DEFAULT and error not in columns else error


def valid_mask(data: pd.DataFrame, error: str | None, name: str = "item_spread") -> np.ndarray:
    """True for attempts that did not error (a missing flag counts as not errored; :func:`~hce._checks.flag_values`)."""
    if error is None:
        return np.ones(len(data), dtype=bool)
    return ~flag_values(data[error], error, name)


def _finish_spread(out: pd.DataFrame, keys: list[str], item: str) -> pd.DataFrame:
    """Ranges, column order and sort of a spread table; warn about undefined SDs."""
    out["range"] = out["max"] - out["min"]
    out["iqr"] = out["q3"] - out["q1"]
    out = out[keys + _SPREAD_STATS].sort_values(keys + ["criterion"], kind="stable")
    out = out.reset_index(drop=True)
    _warn_undefined(out, item)
    return out


def _spread_keys(
    item: str, condition: str | Sequence[str] | None, score: str | Sequence[str], criterion: str | None
) -> tuple[list[str], list[str]]:
    """The key and score columns of :func:`item_spread`, refusing contradictory arguments."""
    keys = [item, *as_list(condition)]
    scores = as_list(score)
    if not scores:
        raise DataError("score must name at least one column")
    if "criterion" in keys or (criterion is not None and criterion in keys):
        raise DataError(f"the criterion column must not be an item or condition key {keys}; "
                        "pass long data's criterion column as criterion=")  # fmt: skip
    if criterion is not None and len(scores) != 1:
        raise DataError(f"with criterion={criterion!r} (long data), score must name one column, got {scores}")
    return keys, scores


def _item_spread_in_engine(
    frame: EngineFrame,
    *,
    item: str,
    condition: str | Sequence[str] | None,
    score: str | Sequence[str],
    error: str | None,
    criterion: str | None,
) -> pd.DataFrame:
    """:func:`item_spread` on a frame of another engine: from value counts per cell.

    The engine returns, per item x condition x criterion cell, how many attempts and errors
    the cell holds and how many valid attempts gave each distinct score, from which mean, SD,
    extremes and quartiles follow exactly (cells x distinct scores rows, few for judge
    scores). Scores of more than ``_FEW_VALUES`` distinct values (continuous ones) are
    summarised in the engine instead where it computes exact grouped quartiles (DuckDB,
    Polars, Spark): count, mean, variance, extremes and quartiles per cell.
    """
    keys, scores = _spread_keys(item, condition, score, criterion)
    error = present_error(frame.columns, error)
    flags = as_list(error)
    if error is not None and error in frame.columns and not frame.is_numeric(error):
        raise DataError(f"column {error!r} (error flag) must be boolean, got {frame.schema[error]}")
    flags = [c for c in flags if c in frame.columns]
    cells = [*keys, "criterion"]
    if criterion is None:
        # attempts and errors per cell are the same for every score column (and an unpivot
        # may drop blank scores: DuckDB's does)
        long = frame.unpivot([*keys, *flags], scores, variable="criterion", value=_VALUE)
        sizes = frame.counts(keys, sums=flags).merge(pd.DataFrame({"criterion": scores}), how="cross")
    else:
        long = frame.select({**{k: k for k in keys + flags}, "criterion": criterion, _VALUE: scores[0]})
        sizes = long.counts(cells, sums=flags)
    sizes = sizes.rename(columns={"n": "_size"})
    sizes["n_errors"] = sizes.pop(error).astype(int) if flags else 0
    valid = long.valid(error)
    # judge scores take few values: a table of cells x values is small, and its grouped count
    # streams (a grouped quantile holds every score of a cell in memory, 100M at once)
    if valid.exact_quantiles and valid.count_distinct(_VALUE) > _FEW_VALUES:
        stats = valid.cell_moments(cells, _VALUE, quartiles=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats["sd"] = np.sqrt(stats.pop("ss") / (stats["n"] - 1)).where(stats["n"] > 1).round(SD_DECIMALS)
    else:
        counts = valid.value_counts(cells, _VALUE)
        stats = _spread_from_counts(counts[counts[_VALUE].notna()], cells)
    table = sizes.merge(stats, on=cells, how="left")
    table["n"] = table["n"].fillna(0).astype(int)
    table["n_missing"] = table.pop("_size") - table["n_errors"] - table["n"]
    table["ddof"] = 1
    return _finish_spread(table, keys, item)


_VALUE = "_score"
#: Up to this many distinct scores, quartiles come from value counts per cell (see above).
_FEW_VALUES = 64


def _spread_from_counts(counts: pd.DataFrame, cells: list[str]) -> pd.DataFrame:
    """Per cell: ``n``, ``mean``, ``sd``, ``min``, ``max``, ``q1``, ``q3`` from value counts.

    ``counts`` holds one row per cell x distinct value (``_score``, ``n``), sorted by cell
    and value. The quartiles are R's type 7 (pandas' linear interpolation): at position
    ``h = (n - 1) p`` of the sorted scores, ``x_(floor h) + (h - floor h)(x_(floor h + 1) -
    x_(floor h))``, the order statistics read off the cumulative counts.
    """
    if counts.empty:  # no cell has a score (a column of blanks): every cell's n is 0
        return counts[cells].assign(**{c: pd.Series(dtype=float) for c in ("n", "mean", "sd", "min", "max", "q1", "q3")})
    w = counts["n"].to_numpy(dtype=float)
    v = counts[_VALUE].to_numpy(dtype=float)
    cell = counts.groupby(cells, sort=False, observed=True).ngroup().to_numpy()
    first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    n = np.add.reduceat(w, first)
    mean = np.add.reduceat(w * v, first) / n
    ss = np.add.reduceat(w * (v - np.repeat(mean, np.diff(np.r_[first, len(v)]))) ** 2, first)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(n > 1, np.sqrt(ss / (n - 1)), np.nan).round(SD_DECIMALS)
    cum = np.cumsum(w)
    before = cum[first] - w[first]

    def order_statistic(j: np.ndarray) -> np.ndarray:  # the j-th (0-based) sorted score of each cell
        return v[np.searchsorted(cum, before + j, side="right")]

    quartiles = {}
    for name, p in (("q1", 0.25), ("q3", 0.75)):
        h = (n - 1) * p
        low = np.floor(h)
        lo, hi = order_statistic(low), order_statistic(np.minimum(low + 1, n - 1))
        quartiles[name] = lo + (h - low) * (hi - lo)
    table = counts.iloc[first][cells].reset_index(drop=True)
    return table.assign(n=n.astype(int), mean=mean, sd=sd, min=v[first],
                        max=v[np.r_[first[1:], len(v)] - 1], **quartiles)  # fmt: skip


@statistic(keys=("item", "condition", "criterion"), numbers=("score",), engine=_item_spread_in_engine, spread=True)
def item_spread(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str | Sequence[str] | None = "condition_id",
    score: str | Sequence[str] = "total",
    error: str | None = "error_flag",
    criterion: str | None = None,
) -> pd.DataFrame:
    r"""Spread of the repeated scores of each item x condition (x criterion).

    Parameters
    ----------
    data : DataFrame
        Attempt log, one row per attempt (wide: one column per criterion), or its long
        view, one row per attempt x criterion (:func:`~hce.to_long`; pass ``criterion``).
        A Polars, PyArrow, DuckDB, PySpark or Dask frame is summarised in its engine (per
        cell counts, moments and quartiles; see the guide "Logs larger than memory").
    item : str, default "item_id"
        Column identifying the item (transcript).
    condition : str, sequence of str or None, default "condition_id"
        Column(s) identifying the condition (prompt, model, ...); ``None`` when the log
        holds a single configuration.
    score : str or sequence of str, default "total"
        Score column(s); several give one row per criterion. With ``criterion``, the one
        score column of the long table (``"score"`` for :func:`~hce.to_long`).
    %(error)s
    criterion : str or None
        Long data: the column naming each row's criterion (``"criterion"`` for
        :func:`~hce.to_long`). The result is the same table the wide log gives.
        Default None: wide data.

    Returns
    -------
    DataFrame
        One row per item x condition x criterion: the item and condition columns, then
        ``criterion`` (score column name, or the value of the ``criterion`` column),
        ``n`` (valid scores), ``n_errors`` (errored attempts), ``n_missing`` (non-errored
        attempts without a score), ``mean``, ``sd`` (sample SD, ``ddof = 1``), ``ddof``
        (always 1), ``min``, ``max``, ``range`` (max - min), ``q1``, ``q3`` and ``iqr``
        (q3 - q1; linear interpolation, R type 7).
        ``sd`` is NaN when ``n < 2``; ``mean`` and the quantiles are NaN when ``n == 0``.

    Warns
    -----
    HceWarning
        When some item has fewer than two valid scores (its SD is NaN).

    Notes
    -----
    The SD is the sample standard deviation
    :math:`s = \sqrt{\sum_i (x_i - \bar x)^2 / (n - 1)}`, as the PRD's STDEV and R's ``sd()``,
    rounded to ``SD_DECIMALS`` (12) decimals so that mathematically equal SDs, common with
    integer scores, tie exactly in the rank tests applied to them.

    Examples
    --------
    >>> log = pd.DataFrame({"item_id": ["a"] * 3 + ["b"] * 3, "condition_id": "P1",
    ...                     "total": [10, 12, 14, 9, 9, np.nan],
    ...                     "error_flag": [False, False, False, False, False, True]})
    >>> item_spread(log)[["item_id", "n", "n_errors", "sd"]]
      item_id  n  n_errors   sd
    0       a  3         0  2.0
    1       b  2         1  0.0
    >>> long = log.rename(columns={"total": "score"}).assign(criterion="total")
    >>> item_spread(long, score="score", criterion="criterion")[["criterion", "n", "sd"]]
      criterion  n   sd
    0     total  3  2.0
    1     total  2  0.0
    """
    keys, scores = _spread_keys(item, condition, score, criterion)
    error = present_error(data.columns, error)
    require_columns(data, keys + scores + as_list(error) + as_list(criterion))
    valid = valid_mask(data, error)
    frame = data[keys].copy()
    frame["_error"] = ~valid
    for column in scores:
        frame[column] = np.where(valid, numeric_column(data, column), np.nan)
    if criterion is None:
        groups = frame.groupby(keys, sort=True, dropna=False, observed=True)
        tables = [_spread_stats(groups, column).assign(criterion=column) for column in scores]
        out = pd.concat(tables).reset_index()
    else:
        frame["criterion"] = data[criterion].to_numpy()
        groups = frame.groupby([*keys, "criterion"], sort=True, dropna=False, observed=True)
        out = _spread_stats(groups, scores[0]).reset_index()
    return _finish_spread(out, keys, item)


def _spread_stats(groups, column: str) -> pd.DataFrame:
    """Per-group counts, mean, SD and quartiles of one score column (errored rows are NaN)."""
    g = groups[column]
    n_errors = groups["_error"].sum().astype(int)
    table = pd.DataFrame(
        {
            "n": g.count().astype(int),
            "n_errors": n_errors,
            "mean": g.mean(),
            "sd": g.std(ddof=1).round(SD_DECIMALS),
            "ddof": 1,
            "min": g.min(),
            "max": g.max(),
            "q1": g.quantile(0.25),
            "q3": g.quantile(0.75),
        }
    )
    table["n_missing"] = groups.size() - n_errors - table["n"]
    return table


def _warn_undefined(spread: pd.DataFrame, item: str) -> None:
    short = spread.loc[spread["n"] < 2]
    if len(short):
        names = list(dict.fromkeys(short[item].tolist()))
        warnings.warn(
            f"{len(short)} item x condition x criterion cell(s) have fewer than 2 valid "
            f"scores, so their SD is not estimable (items {', '.join(map(str, names[:5]))}{', ...' if len(names) > 5 else ''})",
            HceWarning,
            stacklevel=3,
        )


def _group_columns(spread: pd.DataFrame, item: str, by: str | Sequence[str] | None) -> list[str]:
    """Columns that define a summary group: ``by``, or every key column but the item."""
    if by is not None:
        return as_list(by)
    require_columns(spread, [item, "criterion", "sd"], what="spread table")
    known = set(_SPREAD_STATS) | {item}
    return [c for c in spread.columns if c not in known] + ["criterion"]


@statistic(
    frame="data", keys=("item", "by"), numbers=("score",), log=False, retired={"spread": "data", "value": "score"}
)
def spread_summary(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "sd",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Summarise per-item spreads across items: mean, median, IQR and extremes.

    Parameters
    ----------
    data : DataFrame
        Output of :func:`item_spread` (or any table with one row per item and a ``score``).
    item : str, default "item_id"
        Item column of ``data``.
    score : str
        Column to summarise (``"sd"`` by default; ``"range"`` or ``"iqr"`` also make sense).
    by : str, sequence of str or None
        Grouping columns; by default every condition column plus ``criterion``.

    Returns
    -------
    DataFrame
        One row per group: the group columns, ``n_items`` (items with a defined value),
        ``n_undefined`` (items whose value is NaN, e.g. fewer than two valid attempts),
        ``mean``, ``sd`` (ddof = 1, across items), ``median``, ``q1``, ``q3``, ``iqr``,
        ``min`` and ``max``.

    Examples
    --------
    >>> spread = pd.DataFrame({"item_id": list("abcd"), "criterion": "total",
    ...                        "sd": [0.0, 0.5, 1.0, np.nan]})
    >>> spread_summary(spread)[["n_items", "n_undefined", "median", "iqr"]]
       n_items  n_undefined  median  iqr
    0        3            1     0.5  0.5
    """
    keys = _group_columns(data, item, by)
    require_columns(data, keys + [score], what="spread table")
    values = data[keys].copy()
    values["_v"] = numeric_column(data, score, what="spread table")
    g = values.groupby(keys, sort=True, dropna=False, observed=True)["_v"]
    out = pd.DataFrame(
        {
            "n_items": g.count().astype(int),
            "n_undefined": g.size() - g.count(),
            "mean": g.mean(),
            "sd": g.std(ddof=1),
            "median": g.median(),
            "q1": g.quantile(0.25),
            "q3": g.quantile(0.75),
            "min": g.min(),
            "max": g.max(),
        }
    )
    out["iqr"] = out["q3"] - out["q1"]
    cols = ["n_items", "n_undefined", "mean", "sd", "median", "q1", "q3", "iqr", "min", "max"]
    return out[cols].reset_index()


def _at_or_below(values: np.ndarray, threshold: float, strict: bool) -> np.ndarray:
    slack = THRESHOLD_RTOL * max(abs(threshold), 1.0)
    if strict:
        return values < threshold - slack
    return values <= threshold + slack


@statistic(
    frame="data", keys=("item", "by"), numbers=("score",), log=False,
    retired={"spread": "data", "value": "score", "method": "ci_method"},
)
def share_below(
    data: pd.DataFrame,
    *,
    threshold: float | Sequence[float] | Mapping[str, float | Sequence[float]],
    item: str = "item_id",
    score: str = "sd",
    by: str | Sequence[str] | None = None,
    strict: bool = False,
    undefined: Literal["exclude", "fail"] = "exclude",
    confidence: float = 0.95,
    ci_method: ProportionMethod = "wilson",
) -> pd.DataFrame:
    """Share of items whose spread is at or below (or strictly below) a threshold, with a CI.

    Parameters
    ----------
    data : DataFrame
        Output of :func:`item_spread`.
    threshold : float, sequence of float, or mapping criterion -> float(s)
        Thresholds applied to every criterion, or per criterion (e.g.
        ``{"total": 1.0, "clarity_of_language": [0.3, 0.5]}``; criteria not in the mapping
        are skipped).
    item, score, by
        As in :func:`spread_summary`.
        Defaults: ``item="item_id"``, ``score="sd"``.
    strict : bool
        ``False`` counts ``sd <= threshold`` (Success Metric 2), ``True`` counts
        ``sd < threshold`` (Experiment 5, step 3). Round-off is absorbed with a relative
        tolerance of ``THRESHOLD_RTOL`` so an SD equal to the threshold is treated as equal.
    undefined : {"exclude", "fail"}
        Items with NaN spread are left out of the denominator (``"exclude"``, the default)
        or counted as not meeting the threshold (``"fail"``, conservative). Either way they
        are counted in ``n_undefined``.
    %(confidence)s
        Here: the interval for the share.
    ci_method : {"wilson", "clopper-pearson"}
        Wilson score interval (default) or the exact Clopper-Pearson interval.

    Returns
    -------
    DataFrame
        One row per group x criterion x threshold: group columns, ``criterion``,
        ``threshold``, ``comparison`` (``"<="`` or ``"<"``), ``n_items`` (denominator),
        ``n_undefined``, ``n_below``, ``estimate`` (n_below / n_items), ``ci_low``,
        ``ci_high`` and ``ci_method``.

    %(proportion_references)s

    Examples
    --------
    >>> spread = pd.DataFrame({"item_id": list("abcd"), "criterion": "total",
    ...                        "sd": [0.0, 0.5, 1.0, 1.5]})
    >>> share_below(spread, threshold=1.0)[["n_below", "n_items", "estimate"]]
       n_below  n_items  estimate
    0        3        4      0.75
    """
    check_confidence(confidence)
    check_choice("undefined", undefined, ["exclude", "fail"])
    check_choice("ci_method", ci_method, ["wilson", "clopper-pearson"])
    keys = _group_columns(data, item, by)
    require_columns(data, keys + [score, "criterion"], what="spread table")
    values = numeric_column(data, score, what="spread table")
    criteria = data["criterion"].to_numpy()
    rows = []
    for criterion, limit in _threshold_pairs(threshold, pd.unique(criteria)):
        rows_of = criteria == criterion
        frame = data.loc[rows_of, keys].copy()
        v = values[rows_of]
        frame["_defined"] = ~np.isnan(v)
        frame["_below"] = _at_or_below(np.nan_to_num(v, nan=np.inf), limit, strict)
        g = frame.groupby(keys, sort=True, dropna=False, observed=True)
        counts = pd.DataFrame(
            {
                "threshold": float(limit),
                "comparison": "<" if strict else "<=",
                "n_items": g["_defined"].size() if undefined == "fail" else g["_defined"].sum(),
                "n_undefined": g["_defined"].size() - g["_defined"].sum(),
                "n_below": g["_below"].sum(),
            }
        )
        rows.append(counts.reset_index())
    if not rows:
        raise DataError(f"no threshold applies to the criteria {list(pd.unique(criteria))}")
    out = pd.concat(rows, ignore_index=True)
    out = out.astype({"n_items": int, "n_undefined": int, "n_below": int})
    return _add_share(out, "n_below", confidence, ci_method)


def _add_share(table: pd.DataFrame, count: str, confidence: float, ci_method: str) -> pd.DataFrame:
    n = table["n_items"].to_numpy(dtype=float)
    k = table[count].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["estimate"] = np.where(n > 0, k / n, np.nan)
    table["ci_low"], table["ci_high"] = proportion_ci(k, n, confidence, ci_method)
    table["ci_method"] = ci_method
    return table


def _threshold_pairs(threshold, criteria) -> list[tuple[str, float]]:
    if isinstance(threshold, Mapping):
        unknown = [c for c in threshold if c not in set(criteria)]
        if unknown:
            raise DataError(
                f"threshold names criteria {unknown} absent from the spread table; "
                f"criteria present: {list(criteria)}"
            )
        return [(c, float(t)) for c, ts in threshold.items() for t in np.atleast_1d(ts)]
    return [(c, float(t)) for c in criteria for t in np.atleast_1d(threshold)]


@statistic(
    frame="data", keys=("item", "by"), fixed=("sd",), log=False, retired={"spread": "data", "method": "ci_method"}
)
def success_metric_2(
    data: pd.DataFrame,
    *,
    categories: Sequence[str],
    total: str = "total",
    item: str = "item_id",
    by: str | Sequence[str] | None = None,
    category_max: float = 0.40,
    total_max: float = 1.0,
    category_rule: Literal["mean", "each"] = "mean",
    target_share: float = 0.95,
    undefined: Literal["exclude", "fail"] = "exclude",
    confidence: float = 0.95,
    ci_method: ProportionMethod = "wilson",
) -> pd.DataFrame:
    """Success Metric 2: category SD <= 0.40 and total SD <= 1.0 for >= 95% of transcripts.

    Three shares of items, as :func:`share_below` gives them (category SDs, total SD,
    both), each set against ``target_share`` as an observed share and with its interval.

    Parameters
    ----------
    data : DataFrame
        Output of :func:`item_spread` with ``score=[*categories, total]``.
    categories : sequence of str
        The rubric's category (criterion) names.
    total : str
        The total-score criterion.
    item, by
        As in :func:`spread_summary`.
        Default: ``item="item_id"``.
    category_max, total_max : float
        SD thresholds (PRD: 0.40 and 1.0), compared with ``<=``.
    category_rule : {"mean", "each"}
        ``"mean"`` (the PRD's wording, "mean per-category score STDEV <= 0.40"): an item
        passes when the mean of its category SDs is at most ``category_max``;
        ``"each"``: every category SD must be.
    target_share : float
        Share of items that must pass (PRD: 0.95).
    undefined, confidence, ci_method
        As in :func:`share_below`.
        Defaults: ``undefined="exclude"``, ``confidence=0.95``, ``ci_method="wilson"``.

    Returns
    -------
    DataFrame
        Three rows per group, ``metric`` = ``"category_sd"``, ``"total_sd"`` and ``"both"``
        (an item passes both): group columns, ``metric``, ``threshold`` (NaN for ``both``),
        ``n_items``, ``n_undefined``, ``n_below`` (items passing), ``estimate``, ``ci_low``,
        ``ci_high``, ``ci_method``, ``target_share``, ``meets`` (``estimate >= target_share``)
        and ``meets_with_confidence`` (``ci_low >= target_share``: the data exclude a
        share below target at the stated confidence).

    Notes
    -----
    Success Metric 2 of the PRD (section 1) does not say whether the 95 % is an observed
    share or a population claim; both readings are reported so the paper can state which.

    %(proportion_references)s

    Examples
    --------
    >>> from hce.stats import item_spread, simulated_log, success_metric_2
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> spread = item_spread(log, score=["clarity_of_language", "lexical_diversity", "total"])
    >>> sm2 = success_metric_2(spread, categories=["clarity_of_language", "lexical_diversity"])
    >>> sm2[["condition_id", "metric", "n_items", "estimate", "meets"]]
      condition_id       metric  n_items  estimate  meets
    0            A  category_sd        8     0.625  False
    1            B  category_sd        8     0.625  False
    2            A     total_sd        8     0.875  False
    3            B     total_sd        8     0.750  False
    4            A         both        8     0.625  False
    5            B         both        8     0.500  False
    """
    check_choice("category_rule", category_rule, ["mean", "each"])
    check_choice("undefined", undefined, ["exclude", "fail"])
    check_confidence(confidence)
    categories = as_list(categories)
    keys = _group_columns(data, item, by)
    keys = [k for k in keys if k != "criterion"]
    wide = data.pivot_table(
        index=[item, *keys], columns="criterion", values="sd", dropna=False, aggfunc="first"
    )
    missing = [c for c in [*categories, total] if c not in wide.columns]
    if missing:
        raise DataError(f"spread table has no criterion {missing}; present: {list(wide.columns)}")
    cat_sd = wide[categories].to_numpy(dtype=float)
    if category_rule == "mean":
        cat_value = cat_sd.mean(axis=1)
        cat_pass = _at_or_below(np.nan_to_num(cat_value, nan=np.inf), category_max, False)
    else:
        cat_value = np.where(np.isnan(cat_sd).any(axis=1), np.nan, cat_sd.max(axis=1))
        cat_pass = _at_or_below(np.nan_to_num(cat_value, nan=np.inf), category_max, False)
    tot_value = wide[total].to_numpy(dtype=float)
    tot_pass = _at_or_below(np.nan_to_num(tot_value, nan=np.inf), total_max, False)
    both_value = np.where(np.isnan(cat_value) | np.isnan(tot_value), np.nan, 0.0)
    frame = wide.index.to_frame(index=False)
    tables = []
    for metric, limit, value, passed in [
        ("category_sd", category_max, cat_value, cat_pass),
        ("total_sd", total_max, tot_value, tot_pass),
        ("both", np.nan, both_value, cat_pass & tot_pass),
    ]:
        f = frame.assign(_defined=~np.isnan(value), _pass=passed)
        g = f.groupby(keys, sort=True, dropna=False, observed=True) if keys else None
        if g is None:
            agg = pd.DataFrame(
                {"_n": [len(f)], "_defined": [f["_defined"].sum()], "n_below": [f["_pass"].sum()]}
            )
        else:
            agg = pd.DataFrame(
                {"_n": g.size(), "_defined": g["_defined"].sum(), "n_below": g["_pass"].sum()}
            ).reset_index()
        agg.insert(len(keys), "metric", metric)
        agg.insert(len(keys) + 1, "threshold", limit)
        agg["n_items"] = agg["_n"] if undefined == "fail" else agg["_defined"]
        agg["n_undefined"] = agg["_n"] - agg["_defined"]
        tables.append(agg.drop(columns=["_n", "_defined"]))
    out = pd.concat(tables, ignore_index=True)
    out = out.astype({"n_items": int, "n_undefined": int, "n_below": int})
    out = out[[*keys, "metric", "threshold", "n_items", "n_undefined", "n_below"]]
    out = _add_share(out, "n_below", confidence, ci_method)
    out["target_share"] = target_share
    out["meets"] = out["estimate"] >= target_share
    out["meets_with_confidence"] = out["ci_low"] >= target_share
    return out


@statistic(keys=("item", "condition"), labels=("score",), spread=True, retired={"verdict": "score"})
def vote_stability(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str | Sequence[str] | None = "condition_id",
    score: str = "verdict",
    error: str | None = "error_flag",
    agreement: float = 0.95,
    max_attempts: int = 101,
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""Stability of repeated boolean verdicts per item: flips, entropy, borderline items.

    Parameters
    ----------
    data : DataFrame
        Attempt log with a boolean (nullable) ``score`` column.
    item, condition
        As in :func:`item_spread`.
        Defaults: ``item="item_id"``, ``condition="condition_id"``.
    score : str, default "verdict"
        Boolean column (True/False, missing allowed) or 0/1 numbers.
    %(error)s
    agreement : float
        Probability with which the majority of ``n`` attempts must agree with the
        majority of all attempts for ``n`` to count as enough (default 0.95).
    max_attempts : int, default 101
        Largest number of attempts searched; items needing more get NaN.
    %(confidence)s
        Here: the Wilson interval for the share of True verdicts.

    Returns
    -------
    DataFrame
        One row per item x condition: keys, ``n`` (valid verdicts), ``n_errors``,
        ``n_missing``, ``n_true``, ``estimate`` (the share of True), ``ci_low``/``ci_high``
        (its Wilson interval), ``majority`` (True/False, NA on a tie), ``flip_rate`` (share of
        attempts disagreeing with the majority, ``min(k, n-k)/n``), ``entropy_bits``
        (Shannon entropy of the verdict distribution, 0 = unanimous, 1 = evenly split),
        ``borderline`` (the interval contains 0.5: the data cannot tell which way the item
        goes) and ``attempts_needed`` (smallest odd ``m`` with
        :math:`P(\text{majority of } m \text{ agrees}) \ge` ``agreement``).

    Notes
    -----
    ``attempts_needed`` plugs in :math:`\hat p = \max(k, n-k)/n` and uses
    :math:`P(\mathrm{Bin}(m, \hat p) > m/2)`, i.e. fresh attempts drawn like the observed
    ones; odd ``m`` avoids ties. It is NaN for a tie (no majority to agree with) and when
    more than ``max_attempts`` would be needed. Unanimous items need 1.

    Examples
    --------
    >>> log = pd.DataFrame({"item_id": ["a"] * 4, "condition_id": "j",
    ...                     "verdict": [True, True, True, False], "error_flag": False})
    >>> vote_stability(log)[["n_true", "flip_rate", "entropy_bits", "borderline"]]
       n_true  flip_rate  entropy_bits  borderline
    0       3       0.25      0.811278        True
    """
    check_confidence(confidence)
    if not 0.5 < agreement < 1:
        raise DataError(f"agreement={agreement!r} must lie strictly between 0.5 and 1")
    keys = [item, *as_list(condition)]
    error = present_error(data.columns, error)
    require_columns(data, keys + [score] + as_list(error))
    valid = valid_mask(data, error)
    v = numeric_column(data, score)
    bad = ~np.isnan(v) & (v != 0) & (v != 1)
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {score!r} must be boolean; row {row!r} holds {data[score][row]!r}")
    frame = data[keys].copy()
    frame["_error"] = ~valid
    frame["_v"] = np.where(valid, v, np.nan)
    g = frame.groupby(keys, sort=True, dropna=False, observed=True)
    out = pd.DataFrame(
        {"n": g["_v"].count(), "n_errors": g["_error"].sum(), "size": g.size(), "n_true": g["_v"].sum()}
    ).reset_index()
    out["n_missing"] = out["size"] - out["n_errors"] - out["n"]
    out = out.drop(columns="size").astype({"n": int, "n_errors": int, "n_missing": int, "n_true": int})
    n = out["n"].to_numpy(dtype=float)
    k = out["n_true"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = k / n
        minority = np.minimum(k, n - k) / n
        entropy = stats.entropy(np.vstack([share, 1 - share]), base=2, axis=0)
    out["estimate"] = share
    out["ci_low"], out["ci_high"] = proportion_ci(k, n, confidence, "wilson")
    out["majority"] = pd.array(np.where(k * 2 == n, None, k * 2 > n), dtype="boolean")
    out.loc[n == 0, "majority"] = pd.NA
    out["flip_rate"] = minority
    out["entropy_bits"] = np.where(n > 0, entropy, np.nan)
    out["borderline"] = (out["ci_low"] <= 0.5) & (out["ci_high"] >= 0.5)
    out["attempts_needed"] = _attempts_needed(1 - minority, agreement, max_attempts)
    if (n == 0).any():
        warnings.warn(f"{int((n == 0).sum())} item(s) have no valid verdict", HceWarning, stacklevel=2)
    tied = (n > 0) & (k * 2 == n)
    if tied.any():
        warnings.warn(f"{int(tied.sum())} item(s) tie (as many true as false verdicts): their "
                      "majority and attempts_needed are NA", HceWarning, stacklevel=2)  # fmt: skip
    return out


def _attempts_needed(p_major: np.ndarray, agreement: float, max_attempts: int) -> np.ndarray:
    """Smallest odd m with P(Bin(m, p) > m/2) >= agreement, for each p (NaN if none)."""
    m = np.arange(1, max_attempts + 1, 2)
    result = np.full(p_major.shape, np.nan)
    for p in np.unique(p_major[np.isfinite(p_major) & (p_major > 0.5)]):
        ok = stats.binom.sf(m // 2, m, p) >= agreement
        if ok.any():
            result[p_major == p] = m[np.argmax(ok)]
    return result
