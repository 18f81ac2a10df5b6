"""Work done in a forked child on a second core while the parent goes on (issue 35).

A pilot's report is a few seconds of single-threaded Python (statistics, matplotlib); on a
machine with a second core, :func:`beside` runs an independent part of it in a child made by
``os.fork``: the child starts with the parent's imports and data, so it costs no start-up,
and its result comes back pickled through a pipe. Where there is no second core, no
``fork`` (Windows) or fork is unsafe (macOS: system frameworks may not survive it), or the
child fails, the work runs in the parent instead: the result is the same either way, only
the wall time differs.
"""

from __future__ import annotations

import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork() -> bool:
    """Whether :func:`beside` forks: Linux with a second core."""
    return sys.platform.startswith("linux") and cores() > 1


class _Beside(Generic[T]):
    def __init__(self, work: Callable[[], T]):
        self._work, self._pid, self._read = work, None, None
        if can_fork():
            read, write = os.pipe()
            with warnings.catch_warnings():  # Python 3.12 warns of fork in a process with threads
                warnings.simplefilter("ignore", DeprecationWarning)  # (BLAS's idle pool): the child only computes
                pid = os.fork()
            if pid == 0:  # the child: its result, or nothing (the parent then does the work), then exit
                os.close(read)
                status = 0
                try:
                    with os.fdopen(write, "wb") as pipe:
                        pickle.dump(work(), pipe, protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001  (the parent does the work again and meets any error itself)
                    status = 1
                finally:
                    os._exit(status)  # no atexit handlers, no flush of the parent's buffers
            os.close(write)
            self._pid, self._read = pid, read

    def result(self) -> T:
        """The child's result (waiting for it), or the work done here when the child failed or was not made."""
        if self._pid is not None:
            with os.fdopen(self._read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(self._pid, 0)
            self._pid = None
            self._work = self._work if os.waitstatus_to_exitcode(status) != 0 or not data else _given(pickle.loads(data))
        value = self._work()
        self._work = _given(value)
        return value

    def discard(self) -> None:
        """Stop waiting for the child: it is reaped, its result dropped."""
        if self._pid is not None:
            os.close(self._read)  # a child still writing meets a closed pipe and exits
            os.waitpid(self._pid, 0)
            self._pid = None


def _given(value: T) -> Callable[[], T]:
    return lambda: value


@contextmanager
def beside(work: Callable[[], T]) -> Iterator[_Beside[T]]:
    """Run ``work`` in a forked child while the ``with`` block runs here; ``.result()`` gives its value.

    At the end of the block the child's result is collected (its work done here if it
    failed); if the block raises, the child is reaped and its result dropped. ``work`` must
    not depend on what the block does, and its result must pickle.

    Examples
    --------
    >>> with beside(lambda: sum(range(10))) as other:
    ...     here = sum(range(5))
    >>> here, other.result()
    (10, 45)
    """
    other = _Beside(work)
    try:
        yield other
    except BaseException:
        other.discard()
        raise
    other.result()
