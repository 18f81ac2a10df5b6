"""Appending to an attempt log while a run goes: one JSONL line per attempt, written whole or torn at the end only.

Split from :mod:`hce.log` (the schema, validation and reading), which re-exports these
names: ``hce.log.LogWriter`` and ``hce.log.TruncatedLogWarning`` are what users import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hce._paths import output_file
from hce._warnings import warn
from hce.errors import HceWarning

if TYPE_CHECKING:  # loaded where used: a dry run never needs them (issue 44)
    import pandas as pd


class TruncatedLogWarning(HceWarning):
    """The last JSONL line is incomplete: a run crashed mid-write; complete lines were read."""


def records_of(frame: pd.DataFrame) -> Iterable[dict]:
    """A frame's rows as plain JSON-ready dicts (missing cells None, NumPy scalars as Python ones)."""
    columns = list(frame.columns)
    converted = {c: _json_ready(frame[c]) for c in columns}
    for i in range(len(frame)):
        yield {c: converted[c][i] for c in columns}


def _json_ready(series: pd.Series) -> list:
    import numpy as np
    import pandas as pd

    if isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(series):
        return [None if pd.isna(v) else v.strftime("%Y-%m-%dT%H:%M:%S.%fZ") for v in series]
    return [None if is_missing(v) else (v.item() if isinstance(v, np.generic) else v) for v in series.to_numpy(dtype=object)]


def is_missing(value: Any) -> bool:
    """Whether a cell is missing in any of pandas' and NumPy's spellings (None, NA, NaN, NaT)."""
    import numpy as np
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT


def jsonl_line(record: Mapping[str, Any]) -> str:
    """One log row as a JSONL line (finite numbers only; NumPy scalars and timestamps as plain JSON)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    import numpy as np
    import pandas as pd

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to a JSONL log")


class LogWriter:
    """Append attempts to a JSONL log, one line each, flushed as soon as written.

    A process killed between two lines leaves a valid log; one killed mid-line leaves a
    truncated last line, which opening the writer moves to ``<log>.partial`` (nothing is
    thrown away) before appending, so the log stays readable.

    Examples
    --------
    >>> import hce.log, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with hce.log.LogWriter(path) as log:
    ...     log.append({"attempt_id": "a1", "item_id": "T1", "attempt": 1, "error_flag": False})
    >>> sorted(hce.log.logged_attempt_ids(path))
    ['a1']
    """

    def __init__(self, path: str | os.PathLike, *, fsync: bool = False):
        self.path = output_file(path, "log")
        self.fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _set_aside_partial_line(self.path)
        # Unbuffered: a failed write (a full disk) leaves nothing behind in a buffer to fail again at close.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one attempt (a mapping of column -> value) to the OS."""
        self.append_many([record])

    def append_many(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Write several attempts in one write (the rows of one request land together).

        Raises
        ------
        OSError
            When the file cannot take them (a full disk, a quota, a file-size limit);
            the lines written before are whole, the last may be torn.
        """
        self.write_lines("".join(jsonl_line(record) for record in records).encode("utf-8"))

    def write_lines(self, data: bytes) -> None:
        """Write JSONL lines already encoded (:func:`jsonl_line`, UTF-8): all of them, or raise ``OSError``."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        if self.fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _set_aside_partial_line(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
        # Walk back to the last newline; everything after it is the torn line.
        position = size
        chunk = 65536
        while position > 0:
            start = max(0, position - chunk)
            f.seek(start)
            block = f.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                cut = start + newline + 1
                break
            position = start
        else:
            cut = 0
        f.seek(cut)
        torn = f.read()
        with open(path.with_name(path.name + ".partial"), "ab") as aside:
            aside.write(torn + b"\n")
        f.truncate(cut)
    warn(
        f"{path}: its last line was incomplete ({len(torn)} bytes, a run stopped mid-write); "
        f"moved to {path.name}.partial and that attempt will be redone",
        TruncatedLogWarning)


WAL_SUFFIX = ".wal"


def wal_path(log: str | os.PathLike) -> Path:
    """The write-ahead record of a log (:mod:`hce.collect.running.journal`): ``<log>.wal`` next to it."""
    log = Path(log)
    return log.with_name(log.name + WAL_SUFFIX)


def wal_records(log: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows a log's write-ahead record holds, logged or not (none without a record).

    The record ends at its first NUL byte; a line cut short by the failure it was
    written through ends it too (what follows is stale).
    """
    path = wal_path(log)
    if not path.is_file():
        return []
    data = path.read_bytes().split(b"\0", 1)[0]
    rows: list[dict[str, Any]] = []
    for line in data.split(b"\n")[:-1]:  # the part after the last newline is unfinished
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            break
        if isinstance(row, dict) and row.get("attempt_id") is not None:
            rows.append(row)
    return rows
