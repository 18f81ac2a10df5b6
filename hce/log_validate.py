"""An attempt log checked against its schema and converted to the schema's dtypes.

Nothing is repaired silently: a value a column cannot hold raises a
:class:`~hce.errors.LogFormatError` naming the source, the row and the column.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from hce._checks import plain, read_flag
from hce._warnings import warn
from hce.errors import HceWarning, LogFormatError
from hce.log_schema import COLUMNS, RETRIED_SUFFIX, SCHEMA, Column
from hce.log_writer import is_missing

# "bool!" is a plain (non-missing) bool; everything else is nullable.
_PANDAS_DTYPES = {
    "str": "str",
    "json": "str",
    "json_repeated": "category",
    "int": "Int64",
    "float": "float64",
    "bool": "boolean",
    "bool!": "bool",
    "datetime": "datetime64[us, UTC]",
}
_EXPECTED = {
    "str": "text",
    "json": "JSON (an object, a list, or JSON text)",
    "json_repeated": "JSON (an object, a list, or JSON text)",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false (or empty)",
    "bool!": "true or false",
    "datetime": "an ISO 8601 timestamp",
}


class LogValueWarning(HceWarning):
    """A column no statistic reads (``timestamp``) holds values of the wrong type; kept as text."""


# Columns no statistic reads: a bad value there is reported and the column kept as text,
# so an Excel-reformatted timestamp never blocks an analysis.
_DESCRIPTIVE = frozenset({"timestamp"})


def validate_log(
    data: pd.DataFrame, *, source: str = "log", row_labels: Sequence[Any] | None = None, unique: bool = True
) -> pd.DataFrame:
    """Check a frame against the schema and return it with schema dtypes.

    Schema columns are converted to their dtypes only when every value is representable;
    otherwise a :class:`~hce.errors.LogFormatError` names the first offending row and
    column. ``error_flag`` may be absent (taken as all False); other required columns
    must be present. Unknown columns are kept untouched. ``attempt_id`` must be unique
    (unless ``unique=False``, for ``merge_logs``, which picks one row per attempt).

    Parameters
    ----------
    data : DataFrame
        One row per attempt.
    source : str
        How errors name the data (a file path, say).
    row_labels : sequence, optional
        How errors name each row (e.g. ``"line 7"``); default ``"row <index>"``.
    unique : bool, default True
        Refuse an ``attempt_id`` in two rows.

    Examples
    --------
    >>> import pandas as pd, hce.log
    >>> df = pd.DataFrame({"attempt_id": ["a"], "item_id": ["T1"], "attempt": [1]})
    >>> hce.log.validate_log(df).dtypes["attempt"]
    Int64Dtype()
    """
    if not isinstance(data, pd.DataFrame):
        raise LogFormatError(f"{source}: expected a pandas DataFrame, got {type(data).__name__}")
    out = data.copy()
    if "error_flag" not in out.columns:
        out["error_flag"] = False
    missing = [c.name for c in SCHEMA if c.required and c.name not in out.columns]
    if missing:
        raise LogFormatError(f"{source}: missing required column(s) {missing}; columns present: {list(data.columns)}")

    def where(position: int) -> str:
        return str(row_labels[position]) if row_labels is not None else f"row {out.index[position]!r}"

    for name in out.columns:
        column = COLUMNS.get(name)
        if column is not None:
            out[name] = _convert(out[name], column, lambda pos, value, c=column: _bad(source, where(pos), c, value))
        else:
            _check_finite(out[name], lambda pos, value, n=name: _bad(source, where(pos), Column(n, "float", ""), value))
    low = (out["attempt"] < 1).fillna(False).to_numpy(dtype=bool)
    if low.any():
        position = int(np.flatnonzero(low)[0])
        raise LogFormatError(
            f"{source}: {where(position)}, column 'attempt': expected a whole number >= 1 (attempts count from 1), "
            f"got {plain(out['attempt'].iloc[position])!r}"
        )
    ids = out["attempt_id"]
    if ids.isna().any():
        raise LogFormatError(f"{source}: {where(int(np.flatnonzero(ids.isna())[0]))}, column 'attempt_id': missing")
    if out["item_id"].isna().any():
        raise LogFormatError(f"{source}: {where(int(np.flatnonzero(out['item_id'].isna())[0]))}, column 'item_id': missing")
    pair = first_repeat(ids) if unique else None
    if pair is not None:
        first, second, n_repeated = pair
        raise LogFormatError(
            f"{source}: attempt_id {ids.iloc[first]!r} appears twice ({where(first)} and {where(second)}"
            f"{repeats_note(n_repeated)}); each attempt must be logged once{_sidecar_hint(source)}"
        )
    return out


def text_among_numbers(log: pd.DataFrame) -> dict[str, int]:
    """Columns outside the schema that hold mostly numbers but some text: each with its first text row.

    Such a column is a score column with a typo (``"three"`` for 3): it reads fine, but no
    statistic can use it, so :command:`hce log validate` flags it and the report names it.
    A column of text labels (fewer than half its values numbers) is not flagged.

    Examples
    --------
    >>> import pandas as pd
    >>> text_among_numbers(pd.DataFrame({"accuracy": [1, 2, "three"], "note": ["a", "b", "4"]}))
    {'accuracy': 2}
    """
    found = {}
    for column in [c for c in log.columns if c not in COLUMNS and log[c].dtype == object]:
        values = log[column].dropna()
        numbers = pd.to_numeric(values, errors="coerce")
        if len(values) and numbers.notna().mean() >= 0.5 and numbers.isna().any():
            found[column] = int(log.index.get_loc(numbers.index[numbers.isna()][0]))
    return found


def first_repeat(ids: pd.Series) -> tuple[int, int, int] | None:
    """Positions of the first two rows sharing an id, and how many ids repeat; None if all unique.

    Missing ids (rows of a frame without the column) are not compared.
    """
    repeated = (ids.duplicated(keep=False) & ids.notna()).to_numpy()
    if not repeated.any():
        return None
    first = int(np.flatnonzero(repeated)[0])
    second = int(np.flatnonzero(repeated & (ids == ids.iloc[first]).to_numpy())[1])
    return first, second, int(ids[repeated].nunique())


def repeats_note(n_repeated: int) -> str:
    """The clause an error adds when more than one attempt id repeats."""
    return f"; {n_repeated:,} attempt ids appear more than once" if n_repeated > 1 else ""


def _sidecar_hint(source: str) -> str:
    if not str(source).endswith(RETRIED_SUFFIX):
        return ""
    return (
        f". {source} is not an attempt log but the rows of failed calls a retry set aside (an attempt retried "
        f"several times is there once per failed try); read {str(source)[: -len(RETRIED_SUFFIX)]} instead"
    )


def _bad(source: str, where: str, column: Column, value: Any) -> LogFormatError:
    shown = repr(plain(value))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    expected = _EXPECTED[column.dtype]
    if column.dtype in ("int", "float") and _reads_as_non_finite(value):
        expected = "a finite number (leave the cell empty, or null, for a missing value)"
    return LogFormatError(f"{source}: {where}, column {column.name!r}: expected {expected}, got {shown}")


def _reads_as_non_finite(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _check_finite(series: pd.Series, bad) -> None:
    """Columns outside the schema (criterion scores) may hold anything but infinity."""
    if pd.api.types.is_float_dtype(series):
        infinite = np.isinf(series.to_numpy(dtype=float, na_value=np.nan))
        if infinite.any():
            raise _first_bad(infinite, series, bad)


def _convert(series: pd.Series, column: Column, bad) -> pd.Series:
    target = _PANDAS_DTYPES[column.dtype]
    if str(series.dtype) == target:
        if column.dtype == "float":
            _check_finite(series, bad)
        return series  # fast path: Parquet and already-validated frames
    missing = series.isna().to_numpy()
    if column.dtype == "json_repeated":
        # Each prompt recurs once per attempt: storing it once per distinct text keeps
        # million-attempt logs small in memory and fast to read.
        if isinstance(series.dtype, pd.CategoricalDtype) and series.cat.categories.dtype == "str":
            return series
        return _to_text(series.astype(object), column, missing, bad).astype("category")
    if column.dtype in ("str", "json"):
        return _to_text(series, column, missing, bad)
    if column.dtype == "datetime":
        return _to_datetime(series, column, missing, bad)
    if column.dtype in ("bool", "bool!"):
        return _to_bool(series, column, missing, bad)
    return _to_number(series, column, missing, bad)


def _first_bad(mask: np.ndarray, series: pd.Series, bad):
    position = int(np.flatnonzero(mask)[0])
    return bad(position, series.iloc[position])


def _to_text(series: pd.Series, column: Column, missing: np.ndarray, bad) -> pd.Series:
    values = series.to_numpy(dtype=object)
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        if missing[i]:
            out[i] = None
        elif isinstance(value, str):
            out[i] = value
        elif column.dtype.startswith("json") and isinstance(value, (list, dict)):
            out[i] = json.dumps(value, ensure_ascii=False)
        elif column.dtype == "str" and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            out[i] = str(value)  # integer ids (item 12) are common in user files
        else:
            raise bad(i, value)
    return pd.Series(out, index=series.index, dtype="str")


def _to_datetime(series: pd.Series, column: Column, missing: np.ndarray, bad) -> pd.Series:
    if pd.api.types.is_numeric_dtype(series.dtype):
        # Spreadsheet serial days or epoch numbers: no unit to read them by.
        parsed = pd.Series(pd.NaT, index=series.index, dtype="datetime64[us, UTC]")
    else:
        parsed = pd.to_datetime(series, utc=True, errors="coerce", format="ISO8601")
    failed = parsed.isna().to_numpy() & ~missing
    if failed.any():
        error = _first_bad(failed, series, bad)
        if column.name not in _DESCRIPTIVE:
            raise error
        warn(
            f"{error}; {int(failed.sum()):,} value(s) of {column.name!r} are not ISO 8601 timestamps, so the column "
            "is kept as text (no statistic reads it)",
            LogValueWarning)
        return _to_text(series.astype(object).map(lambda v: v if isinstance(v, str) or is_missing(v) else str(v)),
                        Column(column.name, "str", ""), missing, bad)
    return parsed.astype("datetime64[us, UTC]")


def _to_bool(series: pd.Series, column: Column, missing: np.ndarray, bad) -> pd.Series:
    values = series.to_numpy(dtype=object)
    out = pd.array([None] * len(values), dtype="boolean")
    for i, value in enumerate(values):
        if missing[i]:
            if column.dtype == "bool!":
                out[i] = False  # a blank error flag is not a flag (hce._checks.flag_values, the one rule)
            continue
        flag = read_flag(value)  # the one rule of every reader: booleans, 0/1, true/false text in any case
        if flag is None:
            raise bad(i, value)
        out[i] = flag
    result = pd.Series(out, index=series.index)
    return result.astype("bool") if column.dtype == "bool!" else result


def _to_number(series: pd.Series, column: Column, missing: np.ndarray, bad) -> pd.Series:
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        is_bool = np.zeros(len(series), dtype=bool)  # a numeric column holds no booleans: no per-value look
    else:
        is_bool = series.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy()
    numbers = pd.to_numeric(series.where(~is_bool), errors="coerce")
    failed = (numbers.isna().to_numpy() & ~missing) | is_bool
    if failed.any():
        raise _first_bad(failed, series, bad)
    values = numbers.to_numpy(dtype=float, na_value=np.nan)
    infinite = np.isinf(values)
    if infinite.any():
        raise _first_bad(infinite, series, bad)
    if column.dtype == "int":
        fractional = ~np.isnan(values) & (values != np.round(values))
        if fractional.any():
            raise _first_bad(fractional, series, bad)
        return pd.Series(numbers, index=series.index).astype("Int64")
    return pd.Series(values, index=series.index, dtype="float64")
