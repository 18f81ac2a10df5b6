"""Every reply a run receives is on disk before anything else can fail: a write-ahead record, then the log.

A reply is paid for once the endpoint answers it. So the rows of each reply are written
first to ``<log>.wal`` (the write-ahead record), then appended to the log. The record
holds space reserved when the run starts (1 MiB, :data:`RESERVE`), and while every
record has reached the log the next one overwrites it, so a full disk does not stop the
record from being written; a run whose record cannot get that room (a disk already nearly
full) is refused before anything is sent, naming the free space. When the log cannot be written (a full disk, a quota, a
file-size limit, a permission, an I/O error), the run stops launching calls, the calls in
flight are finished and their replies go only to the record, and the run ends with one
line naming the file and the cause. The next run of the same design on the same log
(after freeing space) first appends to the log every recorded reply it does not hold
(:func:`recover`), so nothing received is lost and nothing is paid for twice.

A reply recorded and logged both, as after a ``kill -9`` between the two writes, is
recognised by its ``attempt_id`` and not logged twice. The record ends at its first NUL
byte (JSON text never holds one), so what an overwritten longer record leaves behind it
is never read.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hce._paths import cause
from hce.errors import CollectError
from hce.log_files import logged_attempt_ids
from hce.log_writer import LogWriter, jsonl_line
from hce.log_writer import wal_path, wal_records

RESERVE = 1 << 20  # bytes reserved for the record: replies in flight when a disk fills fit in it
# Why a reservation fails for want of room (a full disk, a quota): the run is refused. A file-size limit
# (ulimit -f, EFBIG) is left to the writes: the log then stops the run as any failed write does.
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def recorded_rows(log: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows in a log's write-ahead record that the log does not hold yet (none without a record).

    Examples
    --------
    >>> import tempfile, os
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> recorded_rows(log)
    []
    """
    rows = wal_records(log)
    if not rows:
        return []
    logged = logged_attempt_ids(log)
    seen: set[str] = set()
    missing = []
    for row in rows:
        if row["attempt_id"] not in logged and row["attempt_id"] not in seen:
            seen.add(row["attempt_id"])
            missing.append(row)
    return missing


def recover(log: str | os.PathLike) -> int:
    """Append to the log the recorded replies it does not hold; the number of rows appended.

    Raises
    ------
    CollectError
        When the log still cannot be written: one line naming it and the cause; the record
        is kept, so a later run recovers it.
    """
    rows = recorded_rows(log)
    if rows:
        try:
            with LogWriter(log) as writer:
                writer.append_many(rows)
        except OSError as error:
            raise CollectError(
                f"cannot write {log}: {cause(error)}; {len(rows):,} replies received by an earlier run wait in "
                f"{wal_path(log)} and are logged by the next run once the log can be written (nothing was sent)"
            ) from None
    wal_path(log).unlink(missing_ok=True)
    return len(rows)


class Journal:
    """Write each reply's rows to the record, then to the log; after a write error, to the record only.

    ``reason`` is set (and the run stops launching calls) when either file cannot be
    written; ``unlogged`` counts the rows only in the record, ``lost`` those neither file
    took. The log is never written again after a failed write: a later write that fitted
    would leave the torn line of the failed one inside the log, where no reader accepts it.
    """

    def __init__(self, log: str | os.PathLike):
        self.log = Path(log)
        self.path = wal_path(log)
        self._log_failed: str | None = None
        self.log_cause: str | None = None  # why the log could not be written (the OS's words), once it failed
        self._record_failed: str | None = None
        self.unlogged = 0
        self.lost = 0
        self._offset = 0  # where the next record goes: 0 while every record so far is in the log
        recover(log)  # a record left by an earlier run is logged before this one overwrites it
        self._writer = LogWriter(log)
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            self._writer.close()
            raise CollectError(f"cannot write {self.path}: {cause(error)}; nothing was sent") from None
        try:
            os.posix_fallocate(self._fd, 0, RESERVE)
        except OSError as error:
            if error.errno in _NO_ROOM:
                self._refuse(error)
            # Else no support for reserving (some network file systems): the record is written, its room not reserved.

    def _refuse(self, error: OSError) -> None:
        """Stop before anything is sent: without its room the record cannot keep the replies a full disk refuses."""
        os.close(self._fd)
        self._writer.close()
        self.path.unlink(missing_ok=True)  # it held nothing: recover() logged and removed an earlier record
        free = _free_bytes(self.path.parent)
        raise CollectError(
            f"cannot reserve {RESERVE // 1024:,} KiB for the crash-safety record {self.path} ({cause(error)}; "
            f"{'unknown' if free is None else f'{free / 1024:,.0f} KiB'} free on its file system): replies received when "
            "the disk fills could be written nowhere and would be paid for again. Free some space and run again; "
            "nothing was sent"
        ) from None

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Record ``rows`` (one reply's), then append them to the log unless it failed before."""
        data = "".join(jsonl_line(row) for row in rows).encode("utf-8")
        recorded = self._record(data)
        if self._log_failed is None:
            try:
                self._writer.write_lines(data)
                return
            except OSError as error:
                self.log_cause = cause(error)
                self._log_failed = (f"cannot write {self.log}: {self.log_cause}. The run stopped; the replies received "
                                    f"are kept in {self.path} and logged by the next run of the same command, once "
                                    "the log can be written, without sending them again")
        if recorded:
            self._offset += len(data)
            self.unlogged += len(rows)
        else:
            self.lost += len(rows)

    @property
    def reason(self) -> str | None:
        """Why the run must stop (the log, else the record, cannot be written); None while both can."""
        return self._log_failed or self._record_failed

    def _record(self, data: bytes) -> bool:
        try:
            _write_at(self._fd, data + b"\0", self._offset)
            return True
        except OSError as error:
            self._record_failed = self._record_failed or f"cannot write {self.path}: {cause(error)}. The run stopped"
            return False

    def close(self) -> None:
        """Close both files; the record goes when every reply it held is in the log."""
        self._writer.close()
        os.close(self._fd)
        if self.reason is None:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _free_bytes(folder: Path) -> int | None:
    """Bytes this user may still write on the file system holding ``folder`` (None when it cannot be asked)."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
