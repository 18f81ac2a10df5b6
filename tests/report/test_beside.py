"""hce.report._beside: work on a second core, the same result as in the parent (issue 35)."""

import os

import pytest

from hce.report import _beside
from hce.report._beside import beside


def test_the_result_comes_from_a_child_where_it_can_fork():
    with beside(os.getpid) as other:
        here = os.getpid()
    assert other.result() != here if _beside.can_fork() else other.result() == here


def test_without_a_second_core_the_work_runs_here(monkeypatch):
    monkeypatch.setattr(_beside, "can_fork", lambda: False)
    with beside(os.getpid) as other:
        pass
    assert other.result() == os.getpid()


def test_a_failed_child_is_replaced_by_the_work_done_here():
    parent, calls = os.getpid(), []

    def work():
        calls.append(os.getpid())  # the child's append is not seen here
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return "done"

    with beside(work) as other:
        pass
    assert other.result() == "done" and calls == [parent]


def test_an_error_in_the_block_reaps_the_child_and_propagates():
    with pytest.raises(ValueError, match="in the block"), beside(lambda: 1):
        raise ValueError("in the block")
    with pytest.raises(ChildProcessError):  # no child left behind
        os.waitpid(-1, os.WNOHANG)
