"""One writer per attempt log: an exclusive OS lock on ``<log>.lock`` held for a whole run.

Two collectors appending to one log would send every pending attempt twice and pay for
it twice, and the log, with each attempt id logged twice, would be refused by
``hce log validate`` and ``hce report``. So every run (online, batch, batch cancel) takes
:func:`hold_log` before it reads the log or sends anything; a second one on the same log
stops at once with :class:`LogLockedError`, naming the holder's pid, host and start time
(written into the lock file by the holder).

The lock is ``fcntl.flock``: the operating system releases it when the holding process
ends in any way (Ctrl-C, a crash, ``kill -9``), so a lock left by a dead process never
blocks a new run and needs no clean-up; the lock file itself is removed on a normal exit.
``flock`` locks an open file, not a process, so two runs inside one process (threads,
notebooks) also exclude each other. On network file systems (NFS) whether ``flock`` works
across machines depends on the mount; run one collector per log there.

A log has many names: a symlink, a relative or ``..`` spelling, a hard link in another
folder, a bind mount. The lock file sits beside the log's real path (symlinks resolved),
and a log that exists is locked as well through its own inode, so every name of one file
takes one lock: two collectors on ``real.jsonl`` and a link to it would pay for every
attempt twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import socket
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from hce._paths import output_file
from hce.errors import CollectError

T = TypeVar("T")


class LogLockedError(CollectError):
    """Another collector is writing the same log."""


def lock_path(log: str | os.PathLike) -> Path:
    """The lock file of a log: ``<log>.lock`` beside the file the log's path leads to (symlinks resolved).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> os.symlink(os.path.join(folder, "real.jsonl"), os.path.join(folder, "link.jsonl"))
    >>> lock_path(os.path.join(folder, "link.jsonl")).name
    'real.jsonl.lock'
    """
    log = Path(os.path.realpath(log))
    return log.with_name(log.name + ".lock")


@contextlib.contextmanager
def hold_log(log: str | os.PathLike) -> Iterator[Path]:
    """Hold the log's exclusive lock for the ``with`` block; raise at once if another run holds it.

    Raises
    ------
    LogLockedError
        Naming the holder (pid, host, since when) and the lock file.

    Examples
    --------
    >>> import tempfile, os
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with hold_log(log):
    ...     try:
    ...         with hold_log(log):
    ...             pass
    ...     except LogLockedError as exc:
    ...         print(f"pid {os.getpid()} on host" in str(exc))
    True
    """
    output_file(log, "log")  # before the lock file is made beside it: --log /dev/full would make /dev/full.lock
    path = lock_path(log)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LogLockedError(
                f"another collector is writing {log} ({holder}; lock file {path}): two collectors on one log would "
                "send and pay for every pending attempt twice. Wait for it to finish, or stop it and run again to "
                "resume; the lock goes when that process ends, however it ends."
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # A holder that was just leaving may have removed the file we opened: lock the file now at the path.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        inode = _hold_inode(log)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # this lock file is ours (held): a refused run leaves none behind
        os.close(fd)
        raise
    try:
        record = {"pid": os.getpid(), "host": socket.gethostname(), "since": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))
        yield path
    finally:
        # Remove the file while still holding the lock, so no run can lock a file about to vanish.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if inode is not None:
            os.close(inode)
        os.close(fd)


def _hold_inode(log: str | os.PathLike) -> int | None:
    """Lock the log file itself (its inode: every hard link and mount of it), when it exists; its descriptor.

    A hard link in another folder has another lock file, but the same inode: a collector
    holding it through another name stops this one here.
    """
    try:
        inode = os.open(log, os.O_RDONLY)
    except FileNotFoundError:
        return None  # a new log: no other name can lead to it yet
    try:
        fcntl.flock(inode, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        number = os.fstat(inode).st_ino
        os.close(inode)
        raise LogLockedError(
            f"another collector is writing {log} under another name (a hard link or another mount of the same file, "
            f"inode {number}): two collectors on one log would send and pay for "
            "every pending attempt twice. Wait for it to finish, or stop it and run again to resume."
        ) from None
    return inode


def check_free(log: str | os.PathLike) -> None:
    """Raise :class:`LogLockedError` now when another collector holds the log, before any plan is shown.

    The run takes the lock again when it starts (a collector starting in between is still stopped then).
    """
    with hold_log(log):
        pass


def _holder(fd: int) -> str:
    """Who holds a lock, as its lock file says (it may be mid-write: then say so)."""
    try:
        record = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"pid {record['pid']} on host {record['host']}, since {record['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet written its pid"


def one_writer(run_fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Decorate an ``async def run(design, log, ...)`` to hold ``log``'s lock (:func:`hold_log`) while it runs."""

    @functools.wraps(run_fn)
    async def locked(design: Any, log: str | os.PathLike, *args: Any, **kwargs: Any) -> T:
        with hold_log(log):
            return await run_fn(design, log, *args, **kwargs)

    return locked
