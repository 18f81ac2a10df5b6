"""Rows of calls that failed, and taking them out of a log so a run sends them again.

A *failed call* is an attempt that got no usable reply: a transport error (timeout,
dropped connection), an HTTP 4xx or 5xx after the client's retries, or a request that
failed inside a batch. Its log row has ``error_flag`` set and an ``error_message`` that
begins with one of :data:`CALL_FAILED` (the client and the batch ingester write them so).
A reply that came back but is unusable (malformed, unparsable, cut off at ``max_tokens``,
unreadable JSON) is *not* a failed call: the model answered, and asking again would bias
the sample towards well-formed answers.

:func:`set_aside_failed` moves the rows of failed calls from a JSONL log to
``<log>.retried.jsonl`` next to it, so the next run finds those attempts pending and
sends them again, as ``run(..., retry_failed=True)`` and ``run_batch(...,
resubmit_failed=True)`` do. Nothing is lost and the log is never torn: the rows are
appended to the sidecar and flushed to disk first, the kept rows are written to a
temporary file, and that file atomically replaces the log. A process killed before the
replace leaves the old log (its failed rows then also sit in the sidecar, and the next
retry copies them there again); killed after it, the new one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from hce.log_schema import RETRIED_SUFFIX

BATCH_FAILED = "batch request failed"  # how error rows from a batch's error file begin
# How error_message begins when no reply came back (hce.collect.call.client writes the first three).
CALL_FAILED = ("HTTP ", "timeout: ", "connection error: ", BATCH_FAILED)
_MARKERS = tuple(b'"' + prefix.encode("ascii") for prefix in CALL_FAILED)  # a cheap test before parsing a line


def call_failed(row: Mapping[str, Any]) -> bool:
    """Whether a log row records a call that got no usable reply (see the module notes).

    Examples
    --------
    >>> call_failed({"error_flag": True, "error_message": "HTTP 500: server error (after 4 tries)"})
    True
    >>> call_failed({"error_flag": True, "error_message": "no score block in the reply"})
    False
    """
    message = row.get("error_message")
    return bool(row.get("error_flag")) and isinstance(message, str) and message.startswith(CALL_FAILED)


def retried_path(log: str | os.PathLike) -> Path:
    """Where the rows taken out of a log are kept: ``<log>.retried.jsonl`` next to it."""
    log = Path(log)
    return log.with_name(log.name + RETRIED_SUFFIX)


def _failed_record(line: bytes) -> dict[str, Any] | None:
    """The record of a JSONL line when it is the row of a failed call (else None)."""
    if not any(marker in line for marker in _MARKERS):
        return None
    try:
        record = json.loads(line)
    except ValueError:  # a torn last line: kept for the log writer to set aside
        return None
    return record if isinstance(record, dict) and call_failed(record) else None


def failed_attempt_ids(log: str | os.PathLike) -> set[str]:
    """The ``attempt_id`` of every failed-call row in a JSONL log (empty when there is no log)."""
    log = Path(log)
    if not log.exists():
        return set()
    with open(log, "rb") as lines:
        records = (_failed_record(line) for line in lines)
        return {str(record.get("attempt_id")) for record in records if record is not None}


def set_aside_failed(log: str | os.PathLike) -> int:
    """Move the rows of failed calls from a JSONL log to :func:`retried_path`; how many moved.

    The other lines (a torn last line included) stay as they are, in their order. The log
    is rewritten only when a row moved, crash-safely (see the module notes).
    """
    return set_aside(log, lambda line: _failed_record(line) is not None, retried_path(log))


def set_aside(log: str | os.PathLike, chosen: Callable[[bytes], bool], sidecar: Path) -> int:
    """Move the lines ``chosen`` picks from a JSONL log to the end of ``sidecar``; how many moved.

    Crash-safe (see the module notes): the moved lines reach the sidecar and disk before a
    temporary copy of the rest replaces the log atomically.
    """
    log = Path(log)
    if not log.exists():
        return 0
    temporary = log.with_name(log.name + ".tmp")
    aside = None
    moved = 0
    try:
        with open(log, "rb") as lines, open(temporary, "wb") as kept:
            for line in lines:
                if not chosen(line):
                    kept.write(line)
                    continue
                if aside is None:
                    aside = _open_aside(sidecar)
                aside.write(line if line.endswith(b"\n") else line + b"\n")
                moved += 1
            if aside is not None:  # the moved rows are on disk before the log loses them
                for written in (aside, kept):
                    written.flush()
                    os.fsync(written.fileno())
        if moved:
            os.replace(temporary, log)
            _sync_folder(log.parent)
    finally:
        if aside is not None:
            aside.close()
        temporary.unlink(missing_ok=True)
    return moved


def _open_aside(path: Path) -> BinaryIO:
    """The sidecar opened for appending, after a newline if a killed append left its last line torn."""
    aside = open(path, "ab")
    if aside.tell() > 0:
        with open(path, "rb") as last:
            last.seek(-1, os.SEEK_END)
            if last.read(1) != b"\n":
                aside.write(b"\n")
    return aside


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; Windows has no directory handles to sync)."""
    if os.name != "posix":
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
