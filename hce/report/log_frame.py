"""The log a report reads, in whichever engine holds it: pandas is one engine among the others.

:func:`hce.report.generic.report` reads every log through the one interface here, a
narwhals view (:class:`hce.stats._frames.EngineFrame`) of a pandas frame, a DuckDB relation,
a Polars, PySpark or Dask frame. The report's own tabulations (attempts and errors per
condition, error messages, not-applicable answers, the cells of a two-level criterion) are
grouped passes in the log's engine that return small pandas tables; a statistic gets the
log's own frame (:func:`native`), and :mod:`hce.stats` reduces it in its engine. The few
parts that read every attempt (a criterion's vote stability, cost and latency, calibration
from token logprobs) take only the columns they need (:func:`rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from hce.errors import DataError
from hce.stats._frames import EngineFrame, engine_frame

CONDITION, ITEM, ERROR = "condition_id", "item_id", "error_flag"


def log_frame(log: object) -> EngineFrame:
    """``log`` (a pandas frame or any frame narwhals wraps) as the report reads it.

    Examples
    --------
    >>> frame = log_frame(pd.DataFrame({"condition_id": ["a", "b", "a"], "score": [1.0, None, 3.0]}))
    >>> frame.engine, frame.count_blank("score")
    ('pandas', 1)
    """
    if isinstance(log, pd.DataFrame):
        import narwhals as nw

        return EngineFrame(nw.from_native(log).lazy(), native=log)
    found = engine_frame(log)
    if found is None:
        raise DataError(f"a log is a pandas frame or a frame of DuckDB, Polars, PySpark or Dask, got {type(log).__name__}")
    return found


def native(frame: EngineFrame) -> object:
    """The log's own frame for a statistic of :mod:`hce.stats` (pandas stays pandas)."""
    import narwhals as nw

    return nw.to_native(frame.frame)


def rows(frame: EngineFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The ``columns`` of every row, in memory: for the parts no grouped pass can give."""
    import narwhals as nw

    kept = [c for c in dict.fromkeys(columns) if c in frame.columns]
    if frame.engine == "pandas":
        return native(frame)[kept]
    return frame.frame.select(*[nw.col(c) for c in kept]).collect().to_pandas()


def replaced(frame: EngineFrame, column: str, expression: object) -> EngineFrame:
    """The frame with ``column`` computed by a narwhals expression (still lazy)."""
    return EngineFrame(frame.frame.with_columns(expression.alias(column)))


def has_values(frame: EngineFrame, column: str) -> bool:
    """Whether ``column`` exists and holds a value that is not blank."""
    return column in frame.columns and frame.count_blank(column) < frame.count_rows()


def flagged(frame: EngineFrame) -> object:
    """The attempts flagged failed, as a narwhals expression (no flag column: none)."""
    import narwhals as nw

    return frame.flag(ERROR) if ERROR in frame.columns else nw.lit(False)


def valid(frame: EngineFrame, column: str) -> EngineFrame:
    """The attempts not flagged and with a value in ``column``."""
    ruled_out = [f"blank:{column}", *([f"flagged:{ERROR}"] if ERROR in frame.columns else [])]
    return frame.where(~flagged(frame) & ~frame.blank(column), clean=ruled_out)


def is_score(frame: EngineFrame, column: str) -> bool:
    """Whether ``column`` holds numbers that are not booleans (a candidate criterion)."""
    import narwhals as nw

    return frame.is_numeric(column) and frame.schema[column] != nw.Boolean


def distinct(frame: EngineFrame, column: str, most: int = 3) -> pd.Series:
    """Up to ``most`` distinct values of ``column`` that are not blank (enough to tell two levels from more)."""
    import narwhals as nw

    # a grouped count, not unique(): narwhals' DuckDB unique took 2.5 times as long (0.53 s at 20M rows)
    found = frame.frame.filter(~frame.blank(column)).group_by(column).agg(nw.len().alias("_n")).head(most).collect().to_pandas()
    return found[column]


def extremes(frame: EngineFrame, columns: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Each column's smallest and largest value, in one pass."""
    import narwhals as nw

    if not columns:
        return {}
    found = frame.frame.select(*[nw.col(c).min().alias(f"min:{c}") for c in columns],
                               *[nw.col(c).max().alias(f"max:{c}") for c in columns]).collect().to_pandas().iloc[0]  # fmt: skip
    return {c: (float(found[f"min:{c}"]), float(found[f"max:{c}"])) for c in columns}


def any_starts_with(frame: EngineFrame, column: str, prefix: str) -> bool:
    """Whether a value of ``column``, read as text, starts with ``prefix``."""
    import narwhals as nw

    if column not in frame.columns:
        return False
    hits = frame.frame.filter(~frame.blank(column) & nw.col(column).cast(nw.String).str.starts_with(prefix))
    return EngineFrame(hits).count_rows() > 0


def cells(frame: EngineFrame, keys: Sequence[str], value: str | None = None) -> pd.DataFrame:
    """Rows per ``keys`` (``n``, as int64), with ``value``'s distinct values as one more key when named."""
    table = frame.value_counts(list(keys), value) if value is not None else frame.counts(list(keys))
    return table.astype({"n": "int64"})


def per_condition(frame: EngineFrame) -> pd.DataFrame:
    """Per ``condition_id``: ``n_items``, ``n_attempts``, ``attempts_per_item`` (median), ``n_errors``."""
    import narwhals as nw

    flags = frame.frame.with_columns(flagged(frame).cast(nw.Int64).alias("_error"))
    per_item = EngineFrame(flags).counts([CONDITION, ITEM], sums=["_error"])
    grouped = per_item.groupby(CONDITION, sort=True)
    return pd.DataFrame({"n_items": grouped.size(), "n_attempts": grouped["n"].sum().astype("int64"),
                         "attempts_per_item": grouped["n"].median().astype(float),
                         "n_errors": grouped["_error"].sum().astype("int64")})  # fmt: skip


def conditions(frame: EngineFrame) -> list:
    """The distinct ``condition_id`` values, sorted."""
    return sorted(cells(frame, [CONDITION])[CONDITION].tolist())


def of_condition(frame: EngineFrame, condition: object) -> EngineFrame:
    """The rows of one condition."""
    import narwhals as nw

    return frame.where(nw.col(CONDITION) == condition, fixed=[CONDITION])
