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
    """Whether :func:`beside` forks: Linux with a second core that is idle.

    Idle: the 1-minute load average is below ``cores - 0.5``. On a busy machine the child
    does not get a core of its own: the scheduler shares one slice among a session's
    processes, so parent and child only take turns, and paying for the fork made the pilot's
    report slower (issue 35: at load 9 on 2 cores, writing took 7.2 s forked, 4.4 s not).
    """
    return sys.platform.startswith("linux") and cores() > 1 and os.getloadavg()[0] < cores() - 0.5


class _Beside(Generic[T]):
    def __init__(self, work: Callable[[], T], fork: bool):
        self._work, self._pid, self._read = work, None, None
        if fork and can_fork():
            read, write = os.pipe()
            with warnings.catch_warnings():  # Python 3.12 warns of fork in a process with threads
                warnings.simplefilter("ignore", DeprecationWarning)  # (BLAS's idle pool): the child only computes
                pid = os.fork()
            if pid == 0:  # the child: its result, or nothing (the parent then does the work), then exit
                os.close(read)
                _own_streams()
                status = 0
                try:
                    with warnings.catch_warnings(record=True) as caught:  # the parent's filters still apply
                        value = work()
                    raised = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
                    with os.fdopen(write, "wb") as pipe:
                        pickle.dump((value, raised), pipe, protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001  (the parent does the work again and meets any error itself)
                    status = 1
                finally:
                    for stream in (sys.stdout, sys.stderr):
                        stream.flush()
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
            if os.waitstatus_to_exitcode(status) == 0 and data:
                value, raised = pickle.loads(data)
                for message, category, filename, lineno in raised:  # as if raised here, after this block's own
                    warnings.warn_explicit(message, category, filename, lineno)
                self._work = _given(value)
        value = self._work()
        self._work = _given(value)
        return value

    def discard(self) -> None:
        """Stop waiting for the child: it is reaped, its result dropped."""
        if self._pid is not None:
            os.close(self._read)  # a child still writing meets a closed pipe and exits
            os.waitpid(self._pid, 0)
            self._pid = None


def _own_streams() -> None:
    """Fresh ``sys.stdout``/``sys.stderr`` in the child, on the same files: a lock of the parent's
    objects that another thread (a progress display) held at the fork would never be released here."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        try:
            setattr(sys, name, open(os.dup(fd), "w", encoding="utf-8", errors="replace"))  # noqa: SIM115  (lives as long as the child)
        except OSError:  # no such descriptor (a windowless process): nothing to write to
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115


def _given(value: T) -> Callable[[], T]:
    return lambda: value


@contextmanager
def beside(work: Callable[[], T], *, fork: bool = True) -> Iterator[_Beside[T]]:
    """Run ``work`` in a forked child while the ``with`` block runs here; ``.result()`` gives its value.

    ``fork=False`` (work too small to pay for a fork) runs it here when the result is asked for.

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
    other = _Beside(work, fork)
    try:
        yield other
    except BaseException:
        other.discard()
        raise
    other.result()
