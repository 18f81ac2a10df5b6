"""BLAS and LAPACK on one thread while hce.stats computes.

OpenBLAS (NumPy's and SciPy's each bring one) wakes a thread per core for a call on a
matrix of a few hundred rows and leaves it spinning after the call. Statistics here make
thousands of such calls (factorisations of a fit, a profile or a numerical Hessian): on a
2-core machine with other work, the spinning threads took 20-50 ms of CPU per call and
made the 20,000-attempt study report 2.3 times slower in CPU (46 s against 20 s with one
thread, issue 35), while the larger products (bootstrap counts times unit sums) gain
little from a second thread. :func:`one_blas_thread` is entered by every public statistic
(:func:`hce.stats._validate.reads_frame`) and by the inner loops that run outside one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_state: dict = {"depth": 0, "limiter": None, "controller": None}


def _controller():
    if _state["controller"] is None:  # finding the libraries costs ~5 ms: once
        import scipy.linalg  # noqa: F401  (SciPy's OpenBLAS loaded, so it is found)
        from threadpoolctl import ThreadpoolController

        _state["controller"] = ThreadpoolController()
    return _state["controller"]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Context in which BLAS and LAPACK run on one thread.

    Nested uses share one limit, set by the outermost and lifted when it leaves (a
    statistic that calls statistics pays for one). Only the main thread sets it: OpenBLAS
    0.3.30 neither applied a limit set from another thread nor took back from one a limit
    the main thread had set (the process stayed on one thread), so elsewhere this does nothing.

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float(np.linalg.det(np.eye(3)))
    1.0
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _state["depth"] == 0:
        _state["limiter"] = _controller().limit(limits=1, user_api="blas")
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            _state["limiter"].restore_original_limits()
