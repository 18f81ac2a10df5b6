"""Seeds of simulation-based tests: the fast suite runs one, ``pytest -m slow -k seeds`` others.

A test whose assertion is a threshold on a random figure (an MCMC fit, a Monte Carlo
estimate, a bootstrap interval, a test on simulated data) takes a ``seed`` argument. The
fast suite runs it under one seed; the slow check runs it again under :data:`OTHER_SEEDS`,
so that a lucky seed cannot hide an assertion that is a coin toss (compiled code and
random streams differ across machines and library versions).
"""

from __future__ import annotations

import pytest

#: Seeds of the slow re-runs (any fast seed among them is replaced by the next one).
OTHER_SEEDS = (1, 2, 3, 4, 5)


def other_seeds(fast: int) -> tuple[int, ...]:
    """Five seeds other than ``fast``: :data:`OTHER_SEEDS`, or the next ones when it is one of them."""
    seeds = [s for s in OTHER_SEEDS if s != fast]
    return (*seeds, *(s for s in range(6, 6 + len(OTHER_SEEDS)) if s != fast))[: len(OTHER_SEEDS)]


def fast_and_other_seeds(fast: int) -> list:
    """Values for ``pytest.mark.parametrize("seed", ...)``: ``fast`` in the fast suite and
    :func:`other_seeds` marked slow, with ids ``seeds-N`` (selected by ``-k seeds``).

    >>> [p.id for p in fast_and_other_seeds(2)]
    ['seed-2', 'seeds-1', 'seeds-3', 'seeds-4', 'seeds-5', 'seeds-6']
    """
    return [pytest.param(fast, id=f"seed-{fast}")] + [
        pytest.param(s, marks=pytest.mark.slow, id=f"seeds-{s}") for s in other_seeds(fast)
    ]
