"""Reading an attempt log's file, JSONL, CSV or Parquet, into a frame (not yet validated).

Each reader also says how errors name its rows (``line 7``, ``row 3 (line 4)``).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hce._checks import is_missing_text
from hce._paths import input_file
from hce._warnings import warn
from hce.errors import HceWarning, LogFormatError
from hce.log_schema import COLUMNS, SCHEMA
from hce.log_writer import TruncatedLogWarning

if TYPE_CHECKING:  # loaded where used: a dry run never needs them (issue 44)
    import pandas as pd


class MissingValueWarning(HceWarning):
    """Cells of a CSV log written ``NA``, ``NaN`` or ``null`` (by R, pandas, a spreadsheet) were read as missing."""


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


def read_jsonl(path: Path) -> tuple[list[dict], list[str]]:
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


def read_csv(path: Path) -> tuple[pd.DataFrame, list[str]]:
    import pandas as pd

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
    import pandas as pd

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


def read_parquet(path: Path, columns: Sequence[str] | None) -> tuple[pd.DataFrame, list[str] | None]:
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


def logged_attempt_ids(path: str | os.PathLike) -> set[str]:
    """Attempt ids already in a JSONL log (complete lines only), for resuming a run."""
    path = Path(path)
    if not path.exists():
        return set()
    input_file(path, "log")
    with warnings.catch_warnings():
        # The truncated last line is dealt with (and reported) by LogWriter.
        warnings.simplefilter("ignore", TruncatedLogWarning)
        records, _ = read_jsonl(path)
    return {str(r["attempt_id"]) for r in records if r.get("attempt_id") is not None}
