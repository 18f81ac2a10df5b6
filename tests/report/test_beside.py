"""hce.report._beside: work on a second core, the same result as in the parent (issue 35)."""

import os
import sys
import warnings

import pytest

from hce.report import _beside
from hce.report._beside import beside

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child is forked on Linux only")


@pytest.fixture
def forking(monkeypatch):
    """As on an idle machine with two cores, whatever the load now."""
    monkeypatch.setattr(_beside, "can_fork", lambda: True)


@linux
def test_the_result_comes_from_a_child(forking):
    with beside(os.getpid) as other:
        here = os.getpid()
    assert other.result() not in (here, None)


def test_without_an_idle_second_core_the_work_runs_here(monkeypatch):
    monkeypatch.setattr(_beside, "cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.7, 1.0, 1.0))  # the second core is busy
    assert not _beside.can_fork()
    with beside(os.getpid) as other:
        pass
    assert other.result() == os.getpid()


@linux
def test_small_work_is_not_forked(forking):
    with beside(os.getpid, fork=False) as other:
        pass
    assert other.result() == os.getpid()


@linux
def test_a_failed_child_is_replaced_by_the_work_done_here(forking):
    parent, calls = os.getpid(), []

    def work():
        calls.append(os.getpid())  # the child's append is not seen here
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return "done"

    with beside(work) as other:
        pass
    assert other.result() == "done" and calls == [parent]


@linux
def test_the_childs_warnings_are_raised_here(forking):
    def work():
        warnings.warn("from the child", UserWarning, stacklevel=1)
        return os.getpid()

    with pytest.warns(UserWarning, match="from the child"), beside(work) as other:
        pass
    assert other.result() != os.getpid()


@linux
def test_an_error_in_the_block_reaps_the_child_and_propagates(forking):
    forked = []
    real_fork = os.fork

    def fork():
        forked.append(real_fork())
        return forked[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fork", fork)
        with pytest.raises(ValueError, match="in the block"), beside(lambda: 1):
            raise ValueError("in the block")
    assert forked and forked[0] > 0
    # that child is reaped (asked of it alone: an earlier test's processes, a Spark JVM, may still run)
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)
