"""The attempt log: one row per judge call, its schema, validation and file formats.

The log is the hinge of hce: the collection layer appends to it, every statistic reads it.
Files are JSONL (append-safe, one attempt per line, flushed), CSV or Parquet; all three
round-trip every schema column with its dtype. Columns outside the schema (criterion
scores, item metadata) are kept as they are. A bad file is never silently repaired:
errors name the file, the line or row, the column and what was expected. The one
exception is the signature of a crash mid-write, a truncated *last* JSONL line, which is
reported with a :class:`TruncatedLogWarning` while the complete lines are returned.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from hce._checks import is_missing_text, plain, read_flag
from hce._paths import cause, input_file, output_file
from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.errors import HceWarning, LogFormatError, PathError
from hce.log_writer import (  # noqa: F401 (LogWriter: re-exported)
    LogWriter,
    TruncatedLogWarning,
    is_missing,
    jsonl_line,
    records_of,
    wal_path,
    wal_records,
)

Format = Literal["jsonl", "csv", "parquet"]


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    description: str
    required: bool = False


# Order follows seed 000 section 8 (in snake_case); "json" columns hold JSON text.
SCHEMA: tuple[Column, ...] = (
    Column("attempt_id", "str", "Deterministic hash of experiment, item, condition and attempt number", True),
    Column("experiment_id", "str", "Experiment, e.g. EXP2_PromptOptimization"),
    Column("item_id", "str", "The judged item (TranscriptID / SyntheticTranscriptID)", True),
    Column("condition_id", "str", "Condition: prompt x model x settings"),
    Column("prompt_id", "str", "Prompt template, e.g. P2.3"),
    Column("model", "str", "Model requested"),
    Column("model_version", "str", "Model version as returned by the API"),
    Column("attempt", "int", "Attempt number within item x condition, from 1", True),
    Column("request_id", "str", "The request that answered this attempt, shared by the attempts of one request with n > 1 (samples_per_request); empty for one attempt a request"),
    Column("timestamp", "datetime", "UTC time the call finished (ISO 8601)"),
    Column("temperature", "float", "Sampling temperature"),
    Column("max_tokens", "int", "Maximum output tokens"),
    Column("top_p", "float", "Nucleus sampling parameter (empty: API default)"),
    Column("seed", "int", "Sampling seed sent to the API, if any"),
    Column("endpoint", "str", "Name of the design's endpoint the call went to (its address is in the design)"),
    Column("settings_hash", "str", "Fingerprint of the condition's settings (model, prompt, sampling, endpoint)"),
    Column("request", "json_repeated", "The messages sent (JSON text; dictionary-encoded, as each prompt repeats per attempt)"),
    Column("cleaned_chars", "int", "Characters of the transcript removed or rewritten before it was sent (BOM, NUL, ANSI escapes, control and zero-width characters, NFC: hce.collect.transcripts.clean_text)"),
    Column("response_text", "str", "The full reply text"),
    Column("finish_reason", "str", "Why generation stopped (stop, length, ...)"),
    Column("logprobs", "json", "Token logprobs with top_logprobs, when asked (JSON text)"),
    Column("input_tokens", "int", "Prompt tokens billed"),
    Column("output_tokens", "int", "Completion tokens billed"),
    Column("cached_tokens", "int", "Prompt tokens served from cache"),
    Column("cache_write_tokens", "int", "Prompt tokens written to the provider's cache, where its usage reports them (prompt_tokens_details.cache_write_tokens; billed at the model's cache-write rate)"),
    Column("cost_usd", "float", "Cost from the dated price table (empty when the model is unpriced)"),
    Column("latency_s", "float", "Wall time of the successful try, seconds"),
    Column("retries", "int", "Tries beyond the first (transient errors retried)"),
    Column("total", "float", "Parsed total score"),
    Column("verdict", "bool", "Parsed boolean verdict (boolean judges)"),
    Column("reasoning", "str", "Parsed reasoning text (chain-of-thought prompts)"),
    Column("confidence", "float", "Numeric confidence in the score, 0-1, when a method gives one (PRD: LLM_Output_Confidence_Score)"),
    Column("confidence_level", "str", "Verbalised confidence as the judge gave it (high/medium/low; boolean judges)"),
    Column("error_flag", "bool!", "True when the call failed or the reply could not be parsed", True),
    Column("error_message", "str", "Why error_flag is set"),
)
COLUMNS: dict[str, Column] = {c.name: c for c in SCHEMA}
# Where a retry keeps the rows of failed calls it sends again (hce.collect.failed): the
# same attempts as the new rows in the log, so the two files are never read together.
RETRIED_SUFFIX = ".retried.jsonl"
ID_COLUMNS = ("attempt_id", "experiment_id", "item_id", "condition_id", "prompt_id", "model", "attempt")

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


class WaitingRepliesWarning(HceWarning):
    """Replies a stopped run received wait in the log's write-ahead record (``<log>.wal``), not yet in the log."""


class MissingValueWarning(HceWarning):
    """Cells of a CSV log written ``NA``, ``NaN`` or ``null`` (by R, pandas, a spreadsheet) were read as missing."""


class LogValueWarning(HceWarning):
    """A column no statistic reads (``timestamp``) holds values of the wrong type; kept as text."""


# Columns no statistic reads: a bad value there is reported and the column kept as text,
# so an Excel-reformatted timestamp never blocks an analysis.
_DESCRIPTIVE = frozenset({"timestamp"})


def schema_table() -> pd.DataFrame:
    """The attempt-log schema as a table (column, dtype, required, description).

    Examples
    --------
    >>> import hce.log
    >>> hce.log.schema_table().head(3)[["column", "dtype", "required"]]
              column dtype  required
    0     attempt_id   str      True
    1  experiment_id   str     False
    2        item_id   str      True
    """
    return pd.DataFrame(
        {
            "column": [c.name for c in SCHEMA],
            "dtype": [c.dtype for c in SCHEMA],
            "required": [c.required for c in SCHEMA],
            "description": [c.description for c in SCHEMA],
        }
    )


def make_attempt_id(experiment_id: str, item_id: str, condition_id: str, attempt: int) -> str:
    """Deterministic attempt id, so a resumed run recognises what it already did.

    Examples
    --------
    >>> make_attempt_id("EXP2_PromptOptimization", "T001", "P2.1|gpt-4o-mini|t0.1", 1)
    '9669804c9e12d6832f1d8ffb'
    """
    key = "\x1f".join([str(experiment_id), str(item_id), str(condition_id), str(int(attempt))])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


# --- validation --------------------------------------------------------------------------


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
    pair = _first_repeat(ids) if unique else None
    if pair is not None:
        first, second, n_repeated = pair
        raise LogFormatError(
            f"{source}: attempt_id {ids.iloc[first]!r} appears twice ({where(first)} and {where(second)}"
            f"{_more(n_repeated)}); each attempt must be logged once{_sidecar_hint(source)}"
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


def _first_repeat(ids: pd.Series) -> tuple[int, int, int] | None:
    """Positions of the first two rows sharing an id, and how many ids repeat; None if all unique.

    Missing ids (rows of a frame without the column) are not compared.
    """
    repeated = (ids.duplicated(keep=False) & ids.notna()).to_numpy()
    if not repeated.any():
        return None
    first = int(np.flatnonzero(repeated)[0])
    second = int(np.flatnonzero(repeated & (ids == ids.iloc[first]).to_numpy())[1])
    return first, second, int(ids[repeated].nunique())


def _more(n_repeated: int) -> str:
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


# --- files -------------------------------------------------------------------------------


def _format_of(path: Path, fmt: Format | None) -> Format:
    if fmt is not None:
        if fmt not in ("jsonl", "csv", "parquet"):
            raise LogFormatError(f"format={fmt!r} is not valid; choose one of ['jsonl', 'csv', 'parquet']")
        return fmt
    suffix = path.suffix.lower()
    mapping = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
    if suffix not in mapping:
        raise LogFormatError(
            f"{path}: cannot tell the log format from the suffix {suffix!r}; use .jsonl, .csv or .parquet, or pass format="
        )
    return mapping[suffix]


@keywords_checked
def read_log(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    format: Format | None = None,
    columns: Sequence[str] | None = None,
    engine: str = "pandas",
) -> pd.DataFrame:
    """Read an attempt log (JSONL, CSV or Parquet), or several as one, into a validated DataFrame.

    Parameters
    ----------
    path : path or list of paths
        The log file(s); the format comes from each suffix unless ``format`` is given.
        Several files are read as one log, in the order given; an attempt (``attempt_id``)
        in two of them is an error naming both files and lines, as is a log passed with
        the ``<log>.retried.jsonl`` a retry set its failed calls aside in. Combine logs
        that overlap on purpose with ``merge_logs`` (``hce log merge``).
    format : {"jsonl", "csv", "parquet"}, optional
    columns : list of str, optional
        Read only these columns (Parquet reads nothing else from disk; a fast way to
        analyse very large logs). Required columns are always read.
    engine : {"pandas", "duckdb", "polars", "spark", "auto"}, default "pandas"
        Other than pandas: a lazy log over a Parquet or JSONL file or directory (logs
        larger than memory; ``hce.engines.scan_log``), checked in that engine;
        ``"auto"`` picks DuckDB past 256 MB on disk.

    Returns
    -------
    DataFrame
        One row per attempt, schema columns in schema dtypes, other columns kept (with
        another ``engine``: its lazy frame of the log).

    Raises
    ------
    LogFormatError
        Naming the file, the line (JSONL) or row (CSV/Parquet), the column and what was expected.

    Warns
    -----
    TruncatedLogWarning
        When the last JSONL line is incomplete (a crash mid-write); the complete lines are returned.

    Examples
    --------
    >>> import pandas as pd, hce, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
    >>> hce.write_log(pd.DataFrame({"attempt_id": ["a1"], "item_id": ["T1"], "attempt": [1], "total": [14.0]}), path)
    >>> hce.read_log(path)[["item_id", "total", "error_flag"]]
      item_id  total  error_flag
    0      T1   14.0       False
    """
    if engine != "pandas" or (isinstance(path, (str, os.PathLike)) and Path(path).is_dir()):
        from hce.engines import scan_log  # the lazy log of larger-than-memory files

        return scan_log(path, engine=engine)
    if isinstance(path, (str, os.PathLike)):
        return _read_one(Path(path), format, columns)[0]
    paths = [Path(p) for p in path]
    if not paths:
        raise LogFormatError("no log file given")
    read = [_read_one(p, format, columns) for p in paths]
    labels = [[f"{p} {label}" for label in (rows or (f"row {i + 1}" for i in range(len(frame))))]
              for p, (frame, rows) in zip(paths, read)]  # fmt: skip
    _refuse_sidecar(paths, [frame for frame, _ in read])
    return combine_logs([frame for frame, _ in read], row_labels=[label for rows in labels for label in rows])


def _read_one(
    path: Path, format: Format | None, columns: Sequence[str] | None, *, unique: bool = True
) -> tuple[pd.DataFrame, list[str] | None]:
    """One validated log file and how errors name its rows (None: ``row <n>`` from 1)."""
    if not path.exists():
        raise LogFormatError(f"{path}: no such log file")
    input_file(path, "log")  # a device (/dev/zero) would be read until memory runs out
    fmt = _format_of(path, format)
    wanted = None if columns is None else list(dict.fromkeys([*(c.name for c in SCHEMA if c.required), *columns]))
    if fmt == "jsonl":
        records, labels = _read_jsonl_records(path)
        frame = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=[c.name for c in SCHEMA if c.required])
    elif fmt == "csv":
        frame, labels = _read_csv(path)
    else:
        frame, labels = _read_parquet(path, wanted)
    if wanted is not None and fmt != "parquet":
        frame = frame[[c for c in wanted if c in frame.columns]]
    _say_waiting_replies(path, frame)
    return validate_log(frame, source=str(path), row_labels=labels, unique=unique), labels


def _say_waiting_replies(path: Path, frame: pd.DataFrame) -> None:
    """Warn when replies a stopped run received wait in the log's write-ahead record, not in the log."""
    recorded = {str(row["attempt_id"]) for row in wal_records(path)}
    if recorded and "attempt_id" in frame:
        waiting = recorded - set(frame["attempt_id"].astype(str))
        if waiting:
            warn(f"{path}: {len(waiting):,} replies received by a run that stopped wait in {wal_path(path)}, not in "
                 "this log: run the same hce collect command again to log them (nothing is sent for them)",
                 WaitingRepliesWarning)


def _refuse_sidecar(paths: Sequence[Path], frames: Sequence[pd.DataFrame]) -> None:
    """A log read with the failed calls a retry set aside from it: the same attempts twice."""
    by_name = {p.resolve(): i for i, p in enumerate(paths)}
    for i, sidecar in enumerate(paths):
        if not sidecar.name.endswith(RETRIED_SUFFIX):
            continue
        j = by_name.get(sidecar.with_name(sidecar.name[: -len(RETRIED_SUFFIX)]).resolve())
        if j is None:
            continue
        shared = int(frames[i]["attempt_id"].isin(frames[j]["attempt_id"]).sum())
        if shared:
            log = paths[j]
            raise LogFormatError(
                f"{sidecar} holds the failed calls a retry took out of {log} and sent again: {shared:,} of its rows "
                f"are attempts {log} logs anew, so reading both counts them twice. Pass {log} alone; to keep "
                f"the failed rows of attempts that were not sent again, `hce log merge {log} {sidecar} -o MERGED.jsonl` "
                "keeps one row per attempt (the successful one)"
            )


def combine_logs(logs: Sequence[pd.DataFrame], *, row_labels: Sequence[str] | None = None) -> pd.DataFrame:
    """Several attempt logs as one, refusing an attempt that appears more than once.

    Parameters
    ----------
    logs : list of DataFrame
        Attempt logs; a frame without ``attempt_id`` (a simulated log) is not checked.
    row_labels : list of str, optional
        How errors name each row of the combined log; default ``log <k> row <n>``.

    Raises
    ------
    LogFormatError
        An ``attempt_id`` in two rows, naming both (counting an attempt twice shrinks
        every spread and inflates every count); ``merge_logs`` combines overlapping
        logs on purpose.

    Examples
    --------
    >>> import pandas as pd, hce.log
    >>> a = pd.DataFrame({"attempt_id": ["a1"], "item_id": ["T1"], "attempt": [1]})
    >>> hce.log.combine_logs([a, a])
    Traceback (most recent call last):
    ...
    hce.errors.LogFormatError: attempt_id 'a1' appears twice (log 1 row 1 and log 2 row 1); ...
    """
    frames = list(logs)
    if not frames:
        raise LogFormatError("no log given")
    combined = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if row_labels is None:
        row_labels = [f"log {k + 1} row {i + 1}" for k, frame in enumerate(frames) for i in range(len(frame))]
    pair = _first_repeat(combined["attempt_id"]) if "attempt_id" in combined.columns else None
    if pair is not None:
        first, second, n_repeated = pair
        raise LogFormatError(
            f"attempt_id {combined['attempt_id'].iloc[first]!r} appears twice ({row_labels[first]} and "
            f"{row_labels[second]}{_more(n_repeated)}); each attempt must be counted once: pass each log once, "
            "or combine overlapping logs with `hce log merge A B -o C` (hce.log.merge_logs), which keeps one "
            "row per attempt"
        )
    return combined


def merge_logs(logs: Sequence[pd.DataFrame | str | os.PathLike]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Combine logs that overlap on purpose: one row per ``attempt_id``.

    The rule, for each attempt id found in more than one row (in one log or across logs):
    a row with ``error_flag`` false (a usable reply) wins over a flagged one; between rows
    of the same kind the first wins, in the order the logs are given and then their rows.
    So a log merged with the ``.retried.jsonl`` of its failed calls keeps the answers of
    the calls sent again, and the failed rows only of attempts never answered.

    Parameters
    ----------
    logs : list of DataFrame or paths
        Attempt logs, or files read with :func:`read_log` (repeated ids allowed here).

    Returns
    -------
    (DataFrame, DataFrame)
        The merged log, its rows in the order given, and the rows left out, with columns
        ``log`` (1-based position of the log each came from) and ``row`` (1-based row
        within it) added.

    Examples
    --------
    >>> import pandas as pd, hce.log
    >>> first = pd.DataFrame({"attempt_id": ["a1", "a2"], "item_id": "T1", "attempt": [1, 2],
    ...                       "error_flag": [True, False]})
    >>> again = pd.DataFrame({"attempt_id": ["a1"], "item_id": "T1", "attempt": [1], "error_flag": [False]})
    >>> merged, dropped = hce.log.merge_logs([first, again])
    >>> merged[["attempt_id", "error_flag"]]
      attempt_id  error_flag
    0         a2       False
    1         a1       False
    >>> dropped[["attempt_id", "error_flag", "log", "row"]]
      attempt_id  error_flag  log  row
    0         a1        True    1    1
    """
    frames = [
        _read_one(Path(log), None, None, unique=False)[0] if isinstance(log, (str, os.PathLike))
        else validate_log(log, source=f"log {k + 1}", unique=False)
        for k, log in enumerate(logs)
    ]  # fmt: skip
    if not frames:
        raise LogFormatError("no log to merge")
    combined = pd.concat(frames, ignore_index=True)
    origin = pd.DataFrame({
        "log": np.repeat(np.arange(1, len(frames) + 1), [len(f) for f in frames]),
        "row": np.concatenate([np.arange(1, len(f) + 1) for f in frames]),
    })  # fmt: skip
    # A stable sort on the flag puts usable rows first and keeps the order given among equals.
    order = np.argsort(combined["error_flag"].to_numpy(dtype=bool), kind="stable")
    keep = np.zeros(len(combined), dtype=bool)
    keep[order[~combined["attempt_id"].iloc[order].duplicated().to_numpy()]] = True
    dropped = pd.concat([combined[~keep], origin[~keep]], axis=1).reset_index(drop=True)
    return combined[keep].reset_index(drop=True), dropped


class _NonFinite:
    """Placeholder for a JSON ``NaN``/``Infinity`` or an overflowing number such as ``1e400``."""

    seen = 0  # how many were made: a line is searched for them only when this moved

    def __init__(self, text: str):
        self.text = text
        _NonFinite.seen += 1


def _checked_float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _non_finite(value: Any) -> _NonFinite | None:
    if isinstance(value, _NonFinite):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return next((found for v in value if (found := _non_finite(v)) is not None), None)
    return None


def _read_jsonl_records(path: Path) -> tuple[list[dict], list[str]]:
    records: list[dict] = []
    labels: list[str] = []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    last_index = len(lines) - 1
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        before = _NonFinite.seen
        try:
            # Python's json reads NaN, Infinity and 1e400 (as inf); a log holds finite numbers or null.
            record = json.loads(raw, parse_constant=_NonFinite, parse_float=_checked_float)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if number - 1 == last_index and not ends_clean:
                warn(
                    f"{path}: line {number} is incomplete ({len(raw)} bytes, no newline): a run stopped "
                    f"mid-write; the {len(records)} complete line(s) were read. Resuming the run redoes that attempt.",
                    TruncatedLogWarning)
                break
            raise LogFormatError(f"{path}: line {number} is not valid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise LogFormatError(f"{path}: line {number}: expected a JSON object, got {type(record).__name__}")
        for key, value in record.items() if _NonFinite.seen != before else ():
            if (found := _non_finite(value)) is not None:
                raise LogFormatError(
                    f"{path}: line {number}, column {key!r}: expected a finite number, got {found.text}; "
                    "write null for a missing value"
                )
        records.append(record)
        labels.append(f"line {number}")
    return records, labels


def _read_csv(path: Path) -> tuple[pd.DataFrame, list[str]]:
    expected = "expected a UTF-8 CSV file with a header line of column names"
    try:
        with open(path, "rb") as f:
            header_line = f.readline().decode("utf-8-sig")
        sep = ";" if header_line.count(";") > header_line.count(",") else ","
        header = pd.read_csv(path, nrows=0, sep=sep, encoding="utf-8-sig").columns
        text_columns = {name: "str" for name in header if name in COLUMNS}
        frame = pd.read_csv(
            path,
            sep=sep,
            # European spreadsheets write "3,5" when they separate fields with ";".
            decimal="," if sep == ";" else ".",
            encoding="utf-8-sig",
            dtype=text_columns,
            keep_default_na=False,
            na_values={name: [""] for name in header},
        )
    except pd.errors.EmptyDataError:
        raise LogFormatError(f"{path}: the file is empty; {expected}") from None
    except UnicodeDecodeError as exc:
        raise LogFormatError(
            f"{path}: byte offset {exc.start} ({exc.object[exc.start:exc.end]!r}) is not UTF-8 text; {expected} "
            "(is it a binary file, or saved in another encoding? re-save it as UTF-8)"
        ) from None
    except pd.errors.ParserError as exc:
        hint = "" if sep == ";" else (
            "; values holding ',' must be quoted, and a file whose fields are separated by ';' "
            "(with decimal commas) is read as such when its header line uses ';'"
        )
        raise LogFormatError(f"{path}: not a readable CSV file ({' '.join(str(exc).split())}){hint}") from None
    if sep == ";":
        for name in text_columns:
            if COLUMNS[name].dtype == "float":
                frame[name] = frame[name].str.replace(r"^(-?\d+),(\d+)$", r"\1.\2", regex=True)
    _missing_words(frame, path)
    # Data row r sits on file line r + 2 (line 1 is the header).
    return frame, [f"row {i + 1} (line {i + 2})" for i in range(len(frame))]


def _missing_words(frame: pd.DataFrame, path: Path) -> None:
    """Read ``NA``, ``NaN`` and ``null`` cells (R's write.csv, pandas, JSON habits) as missing, and say how many.

    Not in text columns (a reply may be the word "NA"); in the others (numbers, flags,
    criterion scores) no value is spelt so.
    """
    read: dict[str, int] = {}
    for name in frame.columns:
        if name in COLUMNS and COLUMNS[name].dtype in ("str", "json", "json_repeated") or \
                pd.api.types.is_numeric_dtype(frame[name]) or pd.api.types.is_bool_dtype(frame[name]):
            continue
        words = frame[name].map(is_missing_text).to_numpy(dtype=bool) & frame[name].notna().to_numpy()
        if not words.any():
            continue
        read[name] = int(words.sum())
        frame[name] = frame[name].mask(words)
        if name not in COLUMNS:  # a criterion score column: numbers once the words are out
            numbers = pd.to_numeric(frame[name], errors="coerce")
            if numbers.notna().sum() == frame[name].notna().sum():
                frame[name] = numbers
    if read:
        said = ", ".join(f"{count:,} in {name!r}" for name, count in read.items())
        warn(f"{path}: read {sum(read.values()):,} cells written NA, NaN or null as missing ({said})", MissingValueWarning)


def _read_parquet(path: Path, columns: Sequence[str] | None) -> tuple[pd.DataFrame, list[str] | None]:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        repeated = [c.name for c in SCHEMA if c.dtype == "json_repeated" and c.name in names]
        table = pq.read_table(
            path, columns=None if columns is None else [c for c in columns if c in names], read_dictionary=repeated
        )
    except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
        raise LogFormatError(f"{path}: not a readable Parquet file ({exc}); expected a Parquet attempt log") from None
    return table.to_pandas(), None


@keywords_checked
def write_log(data: pd.DataFrame, path: str | os.PathLike, *, format: Format | None = None) -> None:
    """Validate a log and write it whole as JSONL, CSV or Parquet (replacing the file).

    For appending attempts one at a time while a run is going, use ``LogWriter``.

    Parameters
    ----------
    data : DataFrame
        The attempt log.
    path : str or PathLike
        The file written.
    format : {"jsonl", "csv", "parquet"}, optional
        Default: from the file's extension.

    Examples
    --------
    >>> import pandas as pd, hce, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "log.parquet")
    >>> hce.write_log(pd.DataFrame({"attempt_id": ["a1"], "item_id": ["T1"], "attempt": [1]}), path)
    >>> len(hce.read_log(path))
    1
    """
    path = output_file(path, "log")
    fmt = _format_of(path, format)
    frame = validate_log(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        elif fmt == "csv":
            frame.to_csv(path, index=False, date_format="%Y-%m-%dT%H:%M:%S.%fZ")
        else:
            with open(path, "w", encoding="utf-8") as f:
                for record in records_of(frame):
                    f.write(jsonl_line(record))
    except OSError as error:  # a full disk, a quota, a file-size limit: found only while writing
        raise PathError(f"cannot write {path}: {cause(error)}") from None


def logged_attempt_ids(path: str | os.PathLike) -> set[str]:
    """Attempt ids already in a JSONL log (complete lines only), for resuming a run."""
    path = Path(path)
    if not path.exists():
        return set()
    input_file(path, "log")
    with warnings.catch_warnings():
        # The truncated last line is dealt with (and reported) by LogWriter.
        warnings.simplefilter("ignore", TruncatedLogWarning)
        records, _ = _read_jsonl_records(path)
    return {str(r["attempt_id"]) for r in records if r.get("attempt_id") is not None}


# --- the long view -----------------------------------------------------------------------


@keywords_checked
def to_long(
    log: pd.DataFrame,
    criteria: Sequence[str] | None = None,
    *,
    rubric: Any = None,
    include_total: bool = True,
) -> pd.DataFrame:
    """One row per attempt x criterion: the shape the statistics work on.

    Parameters
    ----------
    log : DataFrame
        An attempt log.
    criteria : list of str, optional
        Score columns to stack (``[]``: only ``total``). Default: the criteria of
        ``rubric``; without one, the Rubric v5.0 criteria when the log has all five, or
        ``total`` alone when the log has no numeric column outside the schema. Any other
        log is refused rather than guessed at: name its criteria.
    rubric : Rubric or str or path, optional
        The rubric the log was judged with (a ``hce.rubric.Rubric``, a packaged
        name or a YAML file); its criteria must all be columns of the log.
    include_total : bool
        Also stack ``total`` (as criterion ``"total"``) when present.

    Returns
    -------
    DataFrame
        The id columns present (``attempt_id, experiment_id, item_id, condition_id,
        prompt_id, model, attempt``), ``error_flag``, ``criterion`` and ``score`` (float).

    Raises
    ------
    LogFormatError
        A named criterion is not a column, or the criteria cannot be told from the log.

    Examples
    --------
    >>> import pandas as pd, hce.log
    >>> log = pd.DataFrame({"attempt_id": ["a"], "item_id": ["T1"], "attempt": [1],
    ...                     "accuracy": [3], "tone": [2], "total": [5]})
    >>> hce.log.to_long(log, ["accuracy", "tone"])[["criterion", "score"]]
      criterion  score
    0  accuracy    3.0
    1      tone    2.0
    2     total    5.0
    """
    if criteria is None:
        criteria = _criteria_of(log, rubric)
    missing = [c for c in criteria if c not in log.columns]
    if missing:
        raise LogFormatError(f"log has no criterion column(s) {missing}; columns present: {list(log.columns)}")
    stacked = list(criteria) + (["total"] if include_total and "total" in log.columns else [])
    if not stacked:
        raise LogFormatError("log has no score columns to stack: pass criteria=[...] naming them")
    ids = [c for c in (*ID_COLUMNS, "error_flag") if c in log.columns]
    n = len(log)
    parts = {c: np.tile(log[c].to_numpy(), len(stacked)) for c in ids}
    out = pd.DataFrame(parts)
    for c in ids:
        out[c] = out[c].astype(log[c].dtype)
    out["criterion"] = pd.Series(np.repeat(np.array(stacked, dtype=object), n), dtype="str")
    out["score"] = np.concatenate([pd.to_numeric(log[c]).to_numpy(dtype=float, na_value=np.nan) for c in stacked])
    order = np.argsort(np.tile(np.arange(n), len(stacked)), kind="stable")
    return out.iloc[order].reset_index(drop=True)


def _criteria_of(log: pd.DataFrame, rubric: Any) -> list[str]:
    """The log's criterion columns, from its rubric or its columns; never a guess."""
    from hce.rubric import Rubric, load_rubric

    if rubric is not None:
        return list((rubric if isinstance(rubric, Rubric) else load_rubric(rubric)).criteria)
    v5 = load_rubric("v5").criteria
    if all(c in log.columns for c in v5):
        return list(v5)
    numeric = [
        c for c in log.columns
        if c not in COLUMNS and pd.api.types.is_numeric_dtype(log[c]) and not pd.api.types.is_bool_dtype(log[c])
    ]
    if numeric:
        raise LogFormatError(
            f"cannot tell which columns of the log are criterion scores: numeric columns outside the schema {numeric}; "
            "pass criteria=[...] naming them (criteria=[] stacks only 'total'), or rubric= the log was judged with"
        )
    return []
