"""The permutation P of Spearman's rho and Kendall's tau: exact over every distinct arrangement, else Monte Carlo.

The t approximation of Spearman's P assumes many untied ranks. On few pairs, or when one
variable takes a handful of values (a per-item SD that is 0 or 0.5), the null distribution
of rho is a few dozen atoms and the t approximation can be off by a factor of three (8 pairs,
an SD with two values: t gives .005, the 56 arrangements give 1/56 = .018). The permutation
null holds the ranks of both variables (ties included) fixed and pairs them at random.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from hce.stats._resample import as_generator

#: Pairs up to which Spearman's P is a permutation P (above: only with heavy ties).
PERMUTATION_MAX_N = 30
#: Distinct arrangements up to which the permutation P is exact (every one enumerated); n = 9 untied is 362,880.
EXACT_ARRANGEMENTS = 400_000
#: Random arrangements of the Monte Carlo permutation P, beyond that.
MONTE_CARLO = 20_000


def heavy_ties(u: np.ndarray, v: np.ndarray) -> bool:
    """Whether either variable takes at most half as many distinct values as there are pairs."""
    return min(np.unique(u).size, np.unique(v).size) <= u.size / 2


def arrangements(values: np.ndarray) -> int:
    """How many distinct orders the multiset ``values`` has: n! / prod(t!) over its tie groups."""
    _, counts = np.unique(values, return_counts=True)
    return math.factorial(values.size) // math.prod(math.factorial(int(c)) for c in counts)


def _distinct_orders(values: np.ndarray) -> np.ndarray:
    """Every distinct order of the multiset ``values`` as the rows of one array."""
    levels, counts = np.unique(values, return_counts=True)
    n = values.size
    if counts.max() == 1:
        return levels[np.array(list(itertools.permutations(range(n))), dtype=np.intp)]
    rows: list[np.ndarray] = []

    def place(row: np.ndarray, free: tuple[int, ...], group: int) -> None:
        if group == len(levels) - 1:
            row[list(free)] = levels[group]
            rows.append(row.copy())
            return
        for chosen in itertools.combinations(free, int(counts[group])):
            row[list(chosen)] = levels[group]
            place(row, tuple(i for i in free if i not in chosen), group + 1)

    place(np.empty(n), tuple(range(n)), 0)
    return np.array(rows)


def spearman_permutation_p(u: np.ndarray, v: np.ndarray, random_state=0) -> tuple[float, str]:
    """Two-sided permutation P of Spearman's rho of the pairs ``u``, ``v``, with the method in words.

    Exact (every distinct arrangement of the variable with fewer of them, each equally likely
    under the null) when there are at most :data:`EXACT_ARRANGEMENTS`; otherwise
    ``(1 + hits) / (1 + B)`` over :data:`MONTE_CARLO` random arrangements drawn from
    ``random_state``. The statistic is the cross product of the centred average ranks, which
    orders arrangements as rho does (the rank variances do not change under permutation).

    Examples
    --------
    >>> p, how = spearman_permutation_p(np.arange(8.0), np.array([0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5]))
    >>> round(p, 4), how
    (0.0357, 'exact permutation P over the 56 distinct arrangements')
    """
    a, b = stats.rankdata(u), stats.rankdata(v)
    a, b = a - a.mean(), b - b.mean()
    if arrangements(b) > arrangements(a):
        a, b = b, a  # permute the variable with fewer distinct orders
    observed = abs(float(a @ b))
    tolerance = 1e-9 * max(1.0, observed)  # equal statistics computed in another order
    count = arrangements(b)
    if count <= EXACT_ARRANGEMENTS:
        null = np.abs(_distinct_orders(b) @ a)
        return float(np.mean(null >= observed - tolerance)), f"exact permutation P over the {count:,} distinct arrangements"
    rng = as_generator(random_state)
    null = np.abs(rng.permuted(np.tile(b, (MONTE_CARLO, 1)), axis=1) @ a)
    hits = int(np.sum(null >= observed - tolerance))
    return (1 + hits) / (1 + MONTE_CARLO), f"Monte Carlo permutation P ({MONTE_CARLO:,} arrangements)"


#: Arrangements scored per block by the Kendall permutation (arrangements x pairs floats: about 80 MB at n = 30).
_KENDALL_BLOCK = 20_000


def kendall_permutation_p(u: np.ndarray, v: np.ndarray, random_state=0) -> tuple[float, str]:
    """Two-sided permutation P of Kendall's tau of tied pairs ``u``, ``v``, with the method in words.

    R's ``cor.test(method = "kendall")`` has no exact P with ties and falls back to the normal
    approximation, which on a few pairs with heavy ties (an SD that is 0 or 0.5) can be far
    off. Under the null every distinct arrangement of one variable against the other is
    equally likely; the statistic is S, the concordant minus discordant pairs, which orders
    arrangements as tau-b does (the tie counts, and so tau-b's denominator, do not change
    under permutation). Exact over every distinct arrangement when there are at most
    :data:`EXACT_ARRANGEMENTS`, else :data:`MONTE_CARLO` random ones, ``(1 + hits) / (1 + B)``.

    Examples
    --------
    >>> p, how = kendall_permutation_p(np.arange(8.0), np.array([0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5]))
    >>> round(p, 4), how
    (0.0357, 'exact permutation P over the 56 distinct arrangements')
    """
    if arrangements(v) > arrangements(u):
        u, v = v, u  # permute the variable with fewer distinct orders
    i, j = np.triu_indices(u.size, 1)
    fixed = np.sign(u[i] - u[j])

    def s_of(rows: np.ndarray) -> np.ndarray:
        return np.concatenate([np.sign(block[:, i] - block[:, j]) @ fixed
                               for block in np.array_split(rows, max(1, len(rows) // _KENDALL_BLOCK))])  # fmt: skip

    observed = abs(float(np.sign(v[i] - v[j]) @ fixed))
    count = arrangements(v)
    if count <= EXACT_ARRANGEMENTS:
        null = np.abs(s_of(_distinct_orders(v)))
        return float(np.mean(null >= observed - 1e-9)), f"exact permutation P over the {count:,} distinct arrangements"
    rng = as_generator(random_state)
    null = np.abs(s_of(rng.permuted(np.tile(v, (MONTE_CARLO, 1)), axis=1)))
    return (1 + int(np.sum(null >= observed - 1e-9))) / (1 + MONTE_CARLO), f"Monte Carlo permutation P ({MONTE_CARLO:,} arrangements)"
