"""Frames of other engines at the stats door: the grouped pass runs where the data lives.

A statistic that reads a frame accepts, beside pandas, any frame narwhals wraps: Polars
(eager or lazy), PyArrow tables, DuckDB relations, PySpark and Dask DataFrames. Such a frame
is never loaded whole: the door (:func:`hce.stats._validate.reads_frame`) checks it in its
engine (columns present, id columns filled, numeric columns numeric and finite, each
``attempt_id`` once) and hands the statistic an :class:`EngineFrame`, whose methods run one
grouped pass in the engine and return a small pandas table (per cell: counts, sums, sums of
squares, value counts). A statistic declares how it reads another engine's frame with
``reads_frame(engine=...)``:

* a callable ``engine(frame: EngineFrame, **arguments)``: the statistic's summaries are
  computed in the engine and only they come back (``item_spread``, ``variance_components``,
  ``icc`` and ``icc_groups``, ``krippendorff_alpha``, the kappas and agreement, strict
  agreement, the calibration metrics and the reliability table);
* nothing: the statistic needs the whole frame (models with slopes, bootstraps over rows,
  Bayesian fits) and refuses it, naming the alternatives.

pandas input never comes here: it keeps its own path and numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce._warnings import warn
from hce.engine_checks import (inherit_known, known_clean, known_unique, known_varied, remember_clean, remember_unique,
                               remember_varied, repeated_attempts)  # fmt: skip
from hce.errors import DataError, HceWarning

_INF = float("inf")
ATTEMPT_ID = "attempt_id"
#: The long view's criterion column (``hce.log.to_long``): one attempt per criterion there.
LONG_CRITERION = "criterion"
#: The columns that make an attempt what it is (:func:`hce.log.make_attempt_id` hashes them).
ATTEMPT_KEY = ("experiment_id", "item_id", "condition_id", LONG_CRITERION, "attempt")
#: The column a log collected under a stopping rule marks its first ``min`` attempts of each cell with.
WITHIN_MIN = "within_min"


def first_min_message(name: str, n_later: int) -> str:
    """The warning of a spread statistic that left out the attempts after a stopping rule's ``min``."""
    return (f"{name}: the log was collected under a stopping rule, so only the first min attempts of each item are "
            f"read (the spread of later attempts is biased by the stopping); left out {n_later:,} later attempt(s)")


def engine_frame(data: object) -> EngineFrame | None:
    """``data`` as an :class:`EngineFrame` when narwhals wraps it; ``None`` otherwise.

    pandas frames give ``None`` too: they keep the pandas path.
    """
    if isinstance(data, pd.DataFrame) or data is None:
        return None
    try:
        import narwhals as nw
    except ImportError:  # pragma: no cover - narwhals is a dependency; a broken install says so
        return None
    if isinstance(data, (nw.DataFrame, nw.LazyFrame)):
        frame = data
    else:
        try:
            frame = nw.from_native(data)
        except TypeError:
            return None
    return EngineFrame(_nan_as_null(_categories_as_values(frame.lazy() if isinstance(frame, nw.DataFrame) else frame)),
                       native=data)  # fmt: skip


def _categories_as_values(frame):
    """``frame`` with its categorical columns read as their values, as pandas' door reads them.

    A pandas Categorical stays a dictionary in PyArrow and a categorical in Dask, which have
    no min or max of unordered categories (the door's check takes both) and no numbers (a
    score of integer categories); Polars and DuckDB reduce their text categories as they are.
    Cast in the plan: no pass over the data.
    """
    import narwhals as nw

    engine = frame.implementation
    if not (engine.is_pyarrow() or engine.is_dask()):
        return frame
    categorical = [name for name, dtype in frame.collect_schema().items() if dtype in (nw.Categorical, nw.Enum)]
    return frame.with_columns(*[nw.col(c).cast(_values_dtype(frame, c)) for c in categorical]) if categorical else frame


def _values_dtype(frame, column: str):
    """The narwhals dtype of categorical ``column``'s values: a PyArrow dictionary's value type,
    Dask's categories' dtype (integers as floats: a NumPy integer holds no blank)."""
    import narwhals as nw

    native = frame.to_native()
    if frame.implementation.is_pyarrow():
        import pyarrow as pa

        empty = pa.table({column: pa.array([], native.schema.field(column).type.value_type)})
        return nw.from_native(empty).schema[column]
    empty = pd.DataFrame({column: pd.Series([], dtype=native.dtypes[column].categories.dtype)})
    dtype = nw.from_native(empty).schema[column]
    return nw.Float64 if dtype.is_integer() else dtype


def _nan_as_null(frame):
    """``frame`` with NaN in its float columns read as null: the one missing value.

    pandas reads NaN and null alike as missing; Polars, Spark, DuckDB and NumPy-written
    Parquet keep NaN as a number, which a mean turns to NaN and a variance of an all-NaN
    cell to 0. Replaced in the plan (no pass over the data), every reduction after it
    (counts, moments, value counts, checks) counts NaN as pandas does: in ``n_missing``.
    """
    import narwhals as nw

    floats = [name for name, dtype in frame.collect_schema().items() if dtype in (nw.Float64, nw.Float32)]
    if not floats:
        return frame
    # NaN as "not finite and not infinite", not is_nan: DuckDB (2.0) answers isnan() from a Parquet
    # file's min/max statistics, which leave NaN out, so it finds no NaN in a file full of them
    nan = [~nw.col(c).is_finite() & (nw.col(c).abs() != float("inf")) for c in floats]
    return frame.with_columns(*[nw.when(~is_nan).then(nw.col(c)).alias(c) for c, is_nan in zip(floats, nan)])


class EngineFrame:
    """A frame of another engine, read by grouped passes that return small pandas tables.

    Parameters
    ----------
    frame : narwhals.LazyFrame
        The data, never collected whole.
    native : object, optional
        The caller's frame it wraps (for the memo of logs already checked).
    """

    def __init__(self, frame, native: object = None):
        self.frame = frame
        self.native = native
        self.schema = dict(frame.collect_schema())
        self.columns = list(self.schema)
        self.engine = str(frame.implementation).rsplit(".", 1)[-1].lower()

    @property
    def known_as(self) -> object:
        """The lazy frame what is found of this one is remembered for (:mod:`hce.engines`' memo):
        the caller's, else the one read."""
        return self.native if self.native is not None else self.frame.to_native()

    def where(self, keep: object, fixed: Sequence[str] = (), clean: Sequence[str] = ()) -> EngineFrame:
        """The rows where a narwhals boolean expression holds (still lazy); ``fixed``: the
        columns that ``keep`` holds at one value; ``clean``: the probes ``keep`` rules out
        (``"blank:<column>"``, ``"flagged:<column>"``; see :func:`hce.engine_checks.known_clean`).

        Keys found unique in this frame stay unique in any subset of its rows, so the subset
        inherits the memo (:func:`hce.engine_checks.inherit_known`, without the ``fixed`` columns):
        a report's per-condition and per-criterion frames are not checked again (62 s of a
        20M-row DuckDB report, issue 43).
        """
        kept = self.frame.filter(keep)
        child = kept.to_native()
        for parent in (self.native, self.frame.to_native()):  # the caller's frame and the one read (NaN as null)
            inherit_known(parent, child, fixed)
        for probe in clean:
            remember_clean(child, probe)
        return EngineFrame(kept, native=child)

    def valid(self, error: str | None) -> EngineFrame:
        """The attempts not flagged in column ``error`` (a missing flag is no error)."""
        if error is None or error not in self.columns:
            return self
        return self.where(~self.flag(error), clean=[f"flagged:{error}"])

    def flag(self, column: str, blank: bool = False):
        """A flag column (booleans, or the numbers 0 and 1) as a boolean narwhals expression, a
        blank read as ``blank`` (an error flag's: not flagged, as :func:`hce._checks.read_flag`).

        The blank is filled before the cast: Dask casts a nullable boolean's NA to bool by raising,
        and a float's NaN to True.
        """
        import narwhals as nw

        return nw.col(column).fill_null(nw.lit(blank, self.schema[column])).cast(nw.Boolean)

    def first_min_attempts(self, name: str) -> EngineFrame:
        """The rows a spread statistic may read, as pandas' door gives them
        (:func:`hce.stats._validate.first_min_attempts`): of a log with a stopping rule's
        ``within_min`` column, the attempts within its ``min`` (a blank counts as within)."""
        if WITHIN_MIN not in self.columns:
            return self
        later = ~self.flag(WITHIN_MIN, blank=True)
        n_later = self.where(later).count_rows()
        if not n_later:
            return self
        warn(first_min_message(name, n_later), HceWarning)
        return self.where(~later)

    def blank(self, column: str):
        """Whether ``column`` is blank, as a narwhals expression (null: the door made NaN null)."""
        import narwhals as nw

        return nw.col(column).is_null()

    def is_numeric(self, column: str) -> bool:
        """Whether ``column`` holds numbers (booleans count, as pandas' door counts them)."""
        dtype = self.schema[column]
        return bool(dtype.is_numeric() or dtype == _boolean())

    def number(self, column: str):
        """``column`` as a narwhals expression of numbers: booleans as 0/1, as pandas reads them
        (PyArrow and DuckDB have no mean, variance, min or max of booleans)."""
        import narwhals as nw

        return nw.col(column).cast(nw.Int64) if self.schema[column] == _boolean() else nw.col(column)

    def count_rows(self) -> int:
        """How many rows (one pass, nothing else comes back)."""
        import narwhals as nw

        return int(self.frame.select(nw.len().alias("n")).collect().to_pandas()["n"].iloc[0])

    def count_distinct(self, column: str) -> int:
        """Distinct non-blank values of ``column``."""
        import narwhals as nw

        found = self.frame.filter(~nw.col(column).is_null()).select(nw.col(column).n_unique().alias("n"))
        n = found.collect().to_pandas()["n"].iloc[0]
        return int(n) if pd.notna(n) else 0  # DuckDB counts no rows as null

    def count_blank(self, column: str) -> int:
        """Rows whose ``column`` is blank (none where the frame is known to hold none)."""
        import narwhals as nw

        return self._count_known(f"blank:{column}", nw.col(column).is_null())

    def count_flagged(self, error: str) -> int:
        """Rows flagged in column ``error`` (none where the frame is known to hold none)."""
        return self._count_known(f"flagged:{error}", self.flag(error))

    def _count_known(self, probe: str, hit: object) -> int:
        """Rows where ``hit`` holds; a zero is remembered as ``probe`` clean for the frame and
        its subsets (a report's statistics asked it of each frame again: issue 43)."""
        native = self.known_as
        if known_clean(native, probe):
            return 0
        n = EngineFrame(self.frame.filter(hit)).count_rows()
        if not n:
            remember_clean(native, probe)
        return n

    def value_counts(self, keys: Sequence[str], value: str) -> pd.DataFrame:
        """Rows per ``keys`` x distinct ``value`` (``n``; a blank value is its own row), sorted.

        Everything about the spread of a discrete score within a cell (counts, mean, SD,
        quartiles) follows from this table, which holds cells x distinct scores rows.
        """
        import narwhals as nw

        table = self.frame.group_by([*keys, value]).agg(nw.len().alias("n")).collect().to_pandas()
        return table.sort_values([*keys, value], kind="stable", na_position="last").reset_index(drop=True)

    @property
    def exact_quantiles(self) -> bool:
        """Whether the engine computes exact grouped quantiles (linear interpolation, R's
        type 7) that narwhals reaches: DuckDB's ``quantile_cont``, Polars' ``quantile`` and
        Spark's ``percentile`` (not ``percentile_approx``). Dask's are approximate, and
        PyArrow groups none."""
        return self.engine in ("duckdb", "polars", "pyspark")

    def cell_moments(self, keys: Sequence[str], value: str, *, quartiles: bool = False) -> pd.DataFrame:
        """Per ``keys`` cell: ``n`` (non-blank values), ``mean``, ``ss`` (sum of squared
        deviations from the cell mean), ``min``, ``max`` (and ``q1``, ``q3`` with
        ``quartiles``, where :attr:`exact_quantiles`); cells with no value are left out.

        The sum of squares is the engine's sample variance times ``n - 1``. DuckDB, Polars,
        Spark and PyArrow compute it from deviations (Welford's update or two passes); Dask's is
        the cancelling ``sum(x^2) - n mean^2``, so there the values are first taken less their
        overall mean (one more pass): scores of 1e6 +- 1 left its variance components 1e-4 off
        pandas', 1e8 +- 1 2e-2 off.
        """
        import narwhals as nw

        column = nw.col(value)
        # cast first: PyArrow and Dask aggregate only columns (a boolean score is read as 0/1)
        frame, spread = self.frame.with_columns(self.number(value).alias(value)), column
        if self.engine == "dask":
            shift = frame.select(column.mean().alias("m")).collect().to_pandas()["m"].iloc[0]
            frame = frame.with_columns((column - (float(shift) if shift == shift else 0.0)).alias("_spread"))
            spread = nw.col("_spread")  # a grouped Dask aggregate takes a column, not an expression
        extra = [column.quantile(q, interpolation="linear").alias(name) for name, q in (("q1", 0.25), ("q3", 0.75))]
        table = (
            frame.filter(~column.is_null())
            .group_by(list(keys))
            .agg(
                nw.len().alias("n"),
                column.mean().alias("mean"),
                spread.var(ddof=1).alias("var"),
                column.min().alias("min"),
                column.max().alias("max"),
                *(extra if quartiles else []),
            )
            .collect()
            .to_pandas()
        )
        n = table["n"].to_numpy(dtype=float)
        var = table.pop("var").to_numpy(dtype=float, na_value=np.nan)
        table["ss"] = np.where(n > 1, np.nan_to_num(var) * (n - 1), 0.0)
        return table.sort_values(list(keys), kind="stable").reset_index(drop=True)

    def counts(self, keys: Sequence[str], sums: Sequence[str] = ()) -> pd.DataFrame:
        """Rows per ``keys`` cell (``n``) and the sum of each column in ``sums`` (booleans as
        0/1, blanks as 0), sorted by ``keys``."""
        import narwhals as nw

        frame = self.frame
        if sums:
            frame = frame.with_columns(*[nw.col(c).cast(nw.Float64).fill_null(0.0).alias(f"_sum_{c}") for c in sums])
        table = (
            frame.group_by(list(keys))
            .agg(nw.len().alias("n"), *[nw.col(f"_sum_{c}").sum().alias(c) for c in sums])
            .collect()
            .to_pandas()
        )
        return table.sort_values(list(keys), kind="stable").reset_index(drop=True)

    def select(self, columns: dict[str, str]) -> EngineFrame:
        """Only the columns named as values of ``columns``, renamed to its keys."""
        import narwhals as nw

        return EngineFrame(self.frame.select(*[nw.col(old).alias(new) for new, old in columns.items()]))

    def unpivot(self, keys: Sequence[str], values: Sequence[str], *, variable: str, value: str) -> EngineFrame:
        """The wide columns ``values`` stacked into ``variable`` (their name) and ``value``."""
        import narwhals as nw

        # a union of one select per column, not narwhals' unpivot: DuckDB's runs on the default
        # connection, which cannot read a relation of another (scan_log's, with its memory limit)
        parts = [
            self.frame.select(*[nw.col(k) for k in keys], nw.lit(c).alias(variable), nw.col(c).cast(nw.Float64).alias(value))
            for c in values
        ]
        return EngineFrame(nw.concat(parts) if len(parts) > 1 else parts[0])

    def check(self, name: str, *, keys: Sequence[str], blank_keys: Sequence[str], numbers: Sequence[str],
              labels: Sequence[str] = (), scores: dict[str, bool] | None = None) -> dict[str, tuple[int, int, object]]:
        """The door's checks, in one pass: numbers (and numeric labels) numeric and finite, ids
        filled; and for each column of ``scores`` (to whether one value in every row is allowed)
        not yet known to pass, its rows, its scores and the one value they all hold (``None`` when
        they differ), for the caller's refusal of scores that cannot be analysed
        (:func:`hce.stats._validate.refuse_unvaried`).

        Typed engines cannot mix ``1`` and ``"1"`` in a column, so what pandas' door reads
        anew (numbers stored as text) is refused here, naming the column and its type. A
        column found clean is remembered for the frame and its subsets
        (:func:`hce.engine_checks.known_clean`): a report's statistics do not scan it again (60
        passes, 6.5 s of a 20M-row DuckDB report, issue 43).
        """
        import narwhals as nw

        for column in dict.fromkeys(numbers):
            if not self.is_numeric(column):
                raise DataError(
                    f"{name}: column {column!r} must be numeric, got {self.schema[column]} in the {self.engine} frame; "
                    f"cast it to a number in the engine first"
                )
        finite = [*numbers, *(c for c in labels if self.schema[c] in (nw.Float64, nw.Float32))]
        probes = {f"inf:{c}": (nw.col(c).abs() == _INF) for c in dict.fromkeys(finite) if self.schema[c] != _boolean()}
        probes |= {f"blank:{c}": nw.col(c).is_null() for c in keys if c not in blank_keys}
        native = self.known_as
        probes = {label: hit for label, hit in probes.items() if not known_clean(native, label)}
        scores = [c for c, constant_ok in (scores or {}).items() if not known_varied(native, c, constant_ok=constant_ok)]
        if not probes and not scores:
            return {}
        extremes = []
        for i, c in enumerate(scores):
            value = self.number(c)
            extremes += [value.count().alias(f"n{i}"), value.min().alias(f"lo{i}"), value.max().alias(f"hi{i}")]
        found = self.frame.select(nw.len().alias("rows"), *extremes,
                                  *[hit.cast(nw.Int64).sum().alias(label) for label, hit in probes.items()]
                                  ).collect().to_pandas().iloc[0]  # fmt: skip
        rows = int(found["rows"])
        spreads = {c: (rows, int(found[f"n{i}"]), found[f"lo{i}"] if found[f"lo{i}"] == found[f"hi{i}"] else None)
                   for i, c in enumerate(scores)}  # fmt: skip
        for column, (_, n_present, only) in spreads.items():  # facts of this frame, not of its subsets
            if n_present:
                remember_varied(native, column, constant_ok=only is not None)
        for label, count in found[list(probes)].items():
            if not count or count != count:  # none found (a sum over no rows: null)
                remember_clean(native, str(label))
                continue
            kind, column = str(label).split(":", 1)
            if kind == "inf":
                raise DataError(f"{name}: column {column!r} holds {int(count)} non-finite value(s) (inf or -inf); "
                                "scores must be finite numbers")  # fmt: skip
            raise DataError(f"{name}: id column {column!r} is blank in {int(count)} row(s); label every row or drop those rows")
        return spreads

    def refuse_repeated_attempts(self, named: Sequence[str], name: str) -> None:
        """An ``attempt_id`` twice (within the other keys the call names) is refused, as in
        pandas' door (:func:`hce.stats._validate.refuse_repeated_attempts`), by a grouped
        count in the engine (:func:`hce.engine_checks.repeated_attempts`), once per frame."""
        if ATTEMPT_ID in named:
            return
        if ATTEMPT_ID in self.columns:
            self._refuse_repeated_ids(named, name)
        self._refuse_repeated_pairs(named, name)

    def _refuse_repeated_pairs(self, named: Sequence[str], name: str) -> None:
        """One attempt (experiment, item, condition, attempt number; criterion in the long view)
        under two ``attempt_id`` values is refused, as pandas' door refuses it
        (:func:`hce.stats._validate.refuse_repeated_pairs`): the engines counted it twice, silently
        (an independent check); one pass over hashes where the report has not settled it."""
        if not {"item_id", "condition_id", "attempt"} <= set(self.columns):
            return
        extra = [c for c in dict.fromkeys(named) if c in self.columns and c not in ATTEMPT_KEY and c != ATTEMPT_ID]
        keys = tuple([c for c in ATTEMPT_KEY if c in self.columns] + extra)
        native = self.known_as
        if known_unique(native, keys):
            return
        n, first = repeated_attempts(native, list(keys))
        if not n:
            remember_unique(native, keys)
            return
        raise DataError(f"{name}: {n:,} attempt(s) ({', '.join(keys)}) are logged more than once under different "
                        f"attempt ids (the first with {keys[0]}={first!r}), which would count one score twice: keep "
                        "one row per attempt (hce.log.merge_logs picks one)")  # fmt: skip

    def _refuse_repeated_ids(self, named: Sequence[str], name: str) -> None:
        keys = (ATTEMPT_ID, *(c for c in dict.fromkeys([*named, LONG_CRITERION]) if c in self.columns))
        native = self.known_as
        if known_unique(native, keys):
            return
        # attempt_id unique alone first: then it is unique within any keys, and no statistic on this
        # frame checks again (once per frame, whatever keys each names); else within these keys
        for tried in dict.fromkeys([(ATTEMPT_ID,), keys]):
            n_ids, first = repeated_attempts(native, list(tried))
            if not n_ids:
                remember_unique(native, tried)
                return
        raise DataError(
            f"{name}: attempt_id {first!r} appears more than once; {n_ids:,} attempt id(s) "
            "appear more than once, which would count those attempts twice (a log concatenated with itself, "
            "or with an overlapping log?); drop the repeats, or combine overlapping logs with "
            "hce.log.merge_logs (`hce log merge`)"
        )


def _boolean():
    import narwhals as nw

    return nw.Boolean


#: The public statistics that run in a frame's own engine, named as the alternatives when one
#: cannot; tests/stats/test_engines.py checks the list against every statistic's frame spec.
ENGINE_STATISTICS = (
    "item_spread", "variance_components", "icc", "icc_groups", "krippendorff_alpha", "cohen_kappa",
    "fleiss_kappa", "gwet_ac", "percent_agreement", "strict_agreement", "calibration_metrics",
    "expected_calibration_error", "brier_score", "reliability_table",
)  # fmt: skip


def refuse_rows(name: str, engine: str) -> DataError:
    """The error of a statistic that needs every row of the frame, naming the alternatives."""
    return DataError(
        f"{name} needs the row-level data, which stays in the {engine} engine (models with slopes, bootstraps "
        "over rows and Bayesian fits do not reduce to per-cell summaries); collect the columns it needs, or a "
        "sample of items, to pandas first (in narwhals: nw.from_native(frame).lazy().select(columns).collect()"
        f".to_pandas()), or use a statistic that runs in the engine ({', '.join(ENGINE_STATISTICS)})"
    )
