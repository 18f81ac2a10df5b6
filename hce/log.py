"""The attempt log: one row per judge call, its schema, validation and file formats.

The log is the hinge of hce: the collection layer appends to it, every statistic reads it.
Files are JSONL (append-safe, one attempt per line, flushed), CSV or Parquet; all three
round-trip every schema column with its dtype. Columns outside the schema (criterion
scores, item metadata) are kept as they are. A bad file is never silently repaired:
errors name the file, the line or row, the column and what was expected. The one
exception is the signature of a crash mid-write, a truncated *last* JSONL line, which is
reported with a :class:`TruncatedLogWarning` while the complete lines are returned.

The schema lives in :mod:`hce.log_schema`, the checks and dtype conversion in
:mod:`hce.log_validate`, the file readers in :mod:`hce.log_files` and the appending side in
:mod:`hce.log_writer`; their public names are importable from here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hce._paths import cause, input_file, output_file
from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.errors import HceWarning, LogFormatError, PathError
from hce.log_drift import reconcile
from hce.log_files import MissingValueWarning, logged_attempt_ids, read_csv, read_jsonl, read_parquet  # noqa: F401 (re-exported)
from hce.log_partitions import partition_values, with_partitions
from hce.log_schema import (  # noqa: F401 (Column, schema_table, make_attempt_id: re-exported)
    COLUMNS,
    ID_COLUMNS,
    RETRIED_SUFFIX,
    SCHEMA,
    SUFFIX_FORMATS,
    Column,
    Format,
    make_attempt_id,
    schema_table,
)
from hce.log_validate import (  # noqa: F401 (LogValueWarning, text_among_numbers: re-exported)
    LogValueWarning,
    first_repeat,
    repeats_note,
    text_among_numbers,
    validate_log,
)
from hce.log_writer import (  # noqa: F401 (LogWriter: re-exported)
    LogWriter,
    TruncatedLogWarning,
    is_missing,
    jsonl_line,
    records_of,
    wal_path,
    wal_records,
)


class WaitingRepliesWarning(HceWarning):
    """Replies a stopped run received wait in the log's write-ahead record (``<log>.wal``), not yet in the log."""


def _format_of(path: Path, fmt: Format | None) -> Format:
    if fmt is not None:
        if fmt not in ("jsonl", "csv", "parquet"):
            raise LogFormatError(f"format={fmt!r} is not valid; choose one of ['jsonl', 'csv', 'parquet']")
        return fmt
    suffix = path.suffix.lower()
    if suffix not in SUFFIX_FORMATS:
        raise LogFormatError(
            f"{path}: cannot tell the log format from the suffix {suffix!r}; rename it to end in .jsonl, .csv or .parquet, or pass format="
        )
    return SUFFIX_FORMATS[suffix]


@keywords_checked
def read_log(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    format: Format | None = None,
    columns: Sequence[str] | None = None,
    engine: str = "pandas",
    schema: str = "strict",
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
    engine : {"pandas", "duckdb", "polars", "spark", "dask", "auto"}, default "pandas"
        Other than pandas: a lazy log over a Parquet or JSONL file or directory (logs
        larger than memory; ``hce.engines.scan_log``), checked in that engine;
        ``"auto"`` picks DuckDB past 256 MB on disk.
    schema : {"strict", "union"}, default "strict"
        Several files (a list, or a folder) whose columns differ: refused, naming the file
        and the column, or (``"union"``) read with a missing column as null there, with a
        warning saying so; the same in every engine (``hce.log_drift``).

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
    if engine != "pandas" or (isinstance(path, (str, os.PathLike)) and (Path(path).is_dir() or "://" in str(path))):
        from hce.engines import choose_engine, log_files, scan_log  # the lazy log of larger-than-memory files

        if not isinstance(path, (str, os.PathLike)) or choose_engine(path, engine) != "pandas":
            return scan_log(path, engine=engine, schema=schema)
        root = Path(path)
        files = log_files(root, csv=True)[0]  # a directory (or "auto" below the size limit) read in pandas
        partitions = {p: partition_values(root, p) for p in files}  # Hive folders: column=value
        path = files[0] if len(files) == 1 and root.is_file() else files
    else:
        partitions = {}
    if isinstance(path, (str, os.PathLike)):
        return _read_one(Path(path), format, columns)[0]
    paths = [Path(p) for p in path]
    if not paths:
        raise LogFormatError("no log file given")
    for p in paths:
        if not p.exists():
            raise LogFormatError(f"{p}: no such log file")
    reconcile(paths, [_format_of(p, format) for p in paths], schema, sorted({k for v in partitions.values() for k in v}))
    read = [_read_one(p, format, columns, partitions=partitions.get(p)) for p in paths]
    labels = [[f"{p} {label}" for label in (rows or (f"row {i + 1}" for i in range(len(frame))))]
              for p, (frame, rows) in zip(paths, read)]  # fmt: skip
    _refuse_sidecar(paths, [frame for frame, _ in read])
    return combine_logs([frame for frame, _ in read], row_labels=[label for rows in labels for label in rows])


def _read_one(
    path: Path, format: Format | None, columns: Sequence[str] | None, *, unique: bool = True,
    partitions: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, list[str] | None]:
    """One validated log file and how errors name its rows (None: ``row <n>`` from 1), with
    the columns of its Hive folders (``partitions``, see :mod:`hce.log_partitions`)."""
    if not path.exists():
        raise LogFormatError(f"{path}: no such log file")
    input_file(path, "log")  # a device (/dev/zero) would be read until memory runs out
    fmt = _format_of(path, format)
    wanted = None if columns is None else list(dict.fromkeys([*(c.name for c in SCHEMA if c.required), *columns]))
    if fmt == "jsonl":
        records, labels = read_jsonl(path)
        frame = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=[c.name for c in SCHEMA if c.required])
    elif fmt == "csv":
        frame, labels = read_csv(path)
    else:
        frame, labels = read_parquet(path, wanted)
    if wanted is not None and fmt != "parquet":
        frame = frame[[c for c in wanted if c in frame.columns]]
    if partitions:
        frame = with_partitions(frame, partitions, path)
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
    pair = first_repeat(combined["attempt_id"]) if "attempt_id" in combined.columns else None
    if pair is not None:
        first, second, n_repeated = pair
        raise LogFormatError(
            f"attempt_id {combined['attempt_id'].iloc[first]!r} appears twice ({row_labels[first]} and "
            f"{row_labels[second]}{repeats_note(n_repeated)}); each attempt must be counted once: pass each log once, "
            "or combine overlapping logs with `hce log merge A B -o C` (hce.log.merge_logs), which keeps one "
            "row per attempt"
        )
    return combined


# Columns that record how a call went, not what the judge answered: two rows of one attempt that differ
# only here hold the same answer (the reply received twice, or logged again by a recovery).
_CALL_RECORD = ("timestamp", "latency_s", "latency_last_s", "retries", "retry_errors", "request_id", "system_fingerprint",
                "cost_usd", "input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "logprobs",
                "model_version", "settings_hash", "request")
PREFER = ("first", "last", "usable")


def merge_logs(logs: Sequence[pd.DataFrame | str | os.PathLike], *, prefer: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Combine logs that overlap on purpose: one row per ``attempt_id``.

    The rule, for each attempt id found in more than one row (in one log or across logs):
    a reply wins over a failed call (a flagged row with no ``response_text``: no reply came
    back); rows that hold the same answer (they differ at most in how the call went:
    timing, tokens, cost) are one, the first given kept. Two rows holding different answers
    (scores 3 and 5, a usable and a flagged reply) conflict: which to keep is a choice, so
    without ``prefer`` the merge is refused, naming them. So a log merged with the
    ``.retried.jsonl`` of its failed calls keeps the answers of the calls sent again, and
    the failed rows only of attempts never answered.

    Parameters
    ----------
    logs : list of DataFrame or paths
        Attempt logs, or files read with :func:`read_log` (repeated ids allowed here).
    prefer : {"first", "last", "usable"}, optional
        How conflicting answers are settled: the row of the log given first, or last, or a
        usable reply (``error_flag`` false) over a flagged one and then the first. Default
        None: conflicts are refused.

    Returns
    -------
    (DataFrame, DataFrame)
        The merged log, its rows in the order given, and the rows left out, with columns
        ``log`` (1-based position of the log each came from) and ``row`` (1-based row
        within it) added.

    Raises
    ------
    LogFormatError
        When two rows of one attempt hold different answers and ``prefer`` is None: naming
        the attempts, where their rows are, and the columns that differ.

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
    if prefer is not None and prefer not in PREFER:
        raise LogFormatError(f"prefer={prefer!r} is not valid; choose one of {list(PREFER)} (or None: refuse conflicts)")
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
    flagged = combined["error_flag"].to_numpy(dtype=bool)
    no_reply = flagged & (combined["response_text"].isna().to_numpy() if "response_text" in combined else True)
    # Rank each row: replies before failed calls; then as `prefer` says; the order given breaks ties (stable sorts).
    rank = no_reply.astype(int) * 4
    if prefer == "usable":
        rank = rank + flagged.astype(int) * 2
    position = origin["log"].to_numpy()
    order = np.lexsort((np.arange(len(combined)), -position if prefer == "last" else np.zeros(len(combined)), rank))
    keep = np.zeros(len(combined), dtype=bool)
    keep[order[~combined["attempt_id"].iloc[order].duplicated().to_numpy()]] = True
    if prefer is None:
        _refuse_conflicts(combined, origin, no_reply)
    dropped = pd.concat([combined[~keep], origin[~keep]], axis=1).reset_index(drop=True)
    return combined[keep].reset_index(drop=True), dropped


def _refuse_conflicts(combined: pd.DataFrame, origin: pd.DataFrame, no_reply: np.ndarray) -> None:
    """Raise when two replies of one attempt hold different answers, naming up to five such attempts."""
    replies = combined[~no_reply]
    repeated = replies["attempt_id"].duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    answer = [c for c in replies.columns if c not in _CALL_RECORD]
    rows = replies[repeated]
    conflicts = []
    for attempt_id, group in rows.groupby("attempt_id", sort=False):
        values = group[answer].astype(object).where(group[answer].notna(), None)
        differ = [c for c in answer if values[c].map(repr).nunique() > 1]
        if differ:
            where = " and ".join(f"log {origin['log'][i]} row {origin['row'][i]}" for i in group.index)
            shown = "; ".join(f"{c}: {' vs '.join(values[c].map(_short).tolist())}" for c in differ[:3])
            conflicts.append(f"attempt {attempt_id} ({where}) differs in {shown}")
    if conflicts:
        raise LogFormatError(
            f"{len(conflicts):,} attempt(s) have two different answers, and keeping either would be a silent choice: "
            + " | ".join(conflicts[:5]) + (" | ..." if len(conflicts) > 5 else "")
            + ". Choose with --prefer first|last|usable (prefer= in Python), or fix the logs"
        )


def _short(value: Any) -> str:
    text = "empty" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


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
