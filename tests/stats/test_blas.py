"""Tests for hce.stats._blas: statistics run with BLAS on one thread (issue 35).

OpenBLAS threads spinning after each small factorisation made the 20,000-attempt study
report take 46 s of CPU instead of 20 s; the door every public statistic goes through now
holds BLAS to one thread and gives the caller's setting back afterwards.
"""

from __future__ import annotations

import threading

import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from hce.stats._blas import one_blas_thread
from hce.stats._validate import reads_frame


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def two_threads():
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can see")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_a_statistic_runs_on_one_blas_thread_and_restores_the_callers(two_threads):
    @reads_frame(keys=("item",), numbers=("score",))
    def seen(data, *, item="item_id", score="total"):
        return _blas_threads()

    assert seen(pd.DataFrame({"item_id": ["a", "b"], "total": [1.0, 2.0]})) == {1}
    assert _blas_threads() == {2}


def test_nested_uses_share_one_limit_and_a_worker_thread_leaves_the_setting_alone(two_threads):
    with one_blas_thread():
        with one_blas_thread():
            assert _blas_threads() == {1}
        assert _blas_threads() == {1}  # the inner exit did not lift the outer limit
    assert _blas_threads() == {2}
    with one_blas_thread():
        thread = threading.Thread(target=one_blas_thread().__enter__)  # entered and never left
        thread.start()
        thread.join(10)
    assert _blas_threads() == {2}  # a worker thread's use neither holds nor drops the limit
