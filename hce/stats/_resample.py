"""The one place for random numbers and the bootstrap in hce.stats.

- :func:`as_generator`: ``random_state`` -> Generator, once per public function.
- The row bootstrap, :func:`resample_rows`: row indices drawn uniformly with replacement.
  A cluster bootstrap is the row bootstrap of the clusters: :func:`resample_counts` gives
  how often each unit (row or cluster) is drawn per replicate, in memory-bounded blocks.
- :func:`bootstrap_sums` and :func:`bootstrap_row_sums`: replicates of statistics that are
  functions of per-unit sums (calibration, boolean and Edit-F1 statistics, rank tests), as
  ``counts @ unit_stats``, without touching rows again.
- :func:`percentile_interval`: percentile limits of replicates.
- :func:`bootstrapped`: the keywords ``confidence=``, ``n_boot=`` and ``random_state=`` of a
  statistic with a bootstrap interval, declared once as a :class:`Bootstrap`.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import numpy as np
import pandas as pd

F = TypeVar("F", bound=Callable)


class Bootstrap(NamedTuple):
    """The bootstrap settings of a statistic: interval level, resamples and seed.

    A statistic declares ``boot: Bootstrap = Bootstrap(...)`` with its own defaults and
    unpacks it (``confidence, n_boot, random_state = boot``); :func:`bootstrapped` offers
    its callers the three keywords in its place.
    """

    confidence: float | None = 0.95
    n_boot: int = 1000
    random_state: int | np.random.Generator | None = None


#: Annotations of the public keywords, as the signatures spelt them.
_BOOT_ANNOTATIONS = {"confidence": "float", "n_boot": "int", "random_state": "int | np.random.Generator | None"}


def fields_in_place(name: str, annotations: dict[str, str]) -> Callable[[F], F]:
    """Offer a function's parameter ``name``, a NamedTuple of settings, as its fields in its place.

    Callers pass each field as a keyword-only argument, with the default the parameter's
    default holds (``annotations`` gives each field's annotation; ``| None`` is added where
    that default is None); the function receives them as one ``name`` (or a ``name=`` of
    its own, from another function of the group).
    """

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        params = list(signature.parameters.values())
        at = [p.name for p in params].index(name)
        keywords = [
            inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=value,
                              annotation=annotations[field] + (" | None" if value is None and "None" not in annotations[field] else ""))
            for field, value in params[at].default._asdict().items()
        ]  # fmt: skip
        group = type(params[at].default)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            given = group(*(kwargs.pop(p.name, p.default) for p in keywords))
            return func(*args, **{name: kwargs.pop(name, given)}, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*params[:at], *keywords, *params[at + 1:]])  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def bootstrapped(func: F) -> F:
    """Offer ``func``'s ``boot`` parameter (a :class:`Bootstrap`) as keywords in its place.

    Callers pass ``confidence=``, ``n_boot=`` and ``random_state=`` as before, with the
    defaults of ``func``'s ``boot`` default; ``func`` receives them as one ``boot``
    (:func:`fields_in_place`). The docstring states them through the shared fragments
    (``%(confidence)s``, ``%(n_boot)s``, ``%(random_state)s``), whose defaults
    :func:`~hce._docstrings.fill_doc`, applied above this decorator, reads from the
    signature made here.

    Examples
    --------
    >>> @bootstrapped
    ... def mean_interval(values, *, boot=Bootstrap(n_boot=200)):
    ...     confidence, n_boot, random_state = boot
    ...     return n_boot, random_state
    >>> str(inspect.signature(mean_interval))
    "(values, *, confidence: 'float' = 0.95, n_boot: 'int' = 200, random_state: 'int | np.random.Generator | None' = None)"
    >>> mean_interval([1.0], random_state=3)
    (200, 3)
    """
    return fields_in_place("boot", _BOOT_ANNOTATIONS)(func)


def as_generator(random_state) -> np.random.Generator:
    """One generator from a seed, a SeedSequence or a Generator (returned as is).

    Every function that draws random numbers takes ``random_state`` and passes it through
    here once; a caller that draws several streams passes the *generator* on, so the streams
    continue one another instead of restarting from the same seed.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


# Rows up to which the row bootstrap draws every row; groups from which the normal limit draws.
_EXACT_ROWS = 100_000
_NORMAL_MIN = 100
# Replicates x units drawn per block; bounds memory at about 160 MB of int64 counts.
_BLOCK_CELLS = 20_000_000


def unit_sums(units: np.ndarray, cells: np.ndarray, values: np.ndarray, n_units: int, n_cells: int):
    """Dense ``(n_units, n_cells)`` matrix of sums of ``values`` per (unit, cell)."""
    flat = units.astype(np.int64) * n_cells + cells.astype(np.int64)
    return np.bincount(flat, weights=values, minlength=n_units * n_cells).reshape(n_units, n_cells)


def resample_rows(n_rows: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The row bootstrap: ``(n_boot, n_rows)`` row indices drawn uniformly with replacement.

    Draw one replicate at a time with ``n_boot=1``: successive calls continue the stream, so
    any blocking of the replicates gives the same resamples. Within strata (a stratified
    bootstrap), call it once per stratum.

    Examples
    --------
    >>> resample_rows(4, 2, as_generator(0)).shape
    (2, 4)
    """
    # int32 where it fits halves the memory; the draws are the same for either dtype
    dtype = np.int32 if n_rows < 2**31 else np.int64
    return rng.integers(0, n_rows, size=(n_boot, n_rows), dtype=dtype)


def resample_counts(
    n_units: int,
    n_boot: int,
    rng: np.random.Generator,
    *,
    multiplicity: np.ndarray | None = None,
    block_cells: int = _BLOCK_CELLS,
):
    """Bootstrap counts, how often each unit is drawn per replicate, in blocks of replicates.

    Yields ``(start, stop, counts)`` with ``counts`` of shape ``(stop - start, n_units)``,
    about ``block_cells`` cells a block. Without ``multiplicity``: the counts of
    :func:`resample_rows` (the row bootstrap; with cluster codes as units, the cluster
    bootstrap). With ``multiplicity`` (unit k stands for ``multiplicity[k]`` identical
    units, or a weight of 1 each for a whole-unit resample drawn at once): counts are
    Multinomial(total, multiplicity / total), the same resampling distribution.
    """
    block = max(1, min(n_boot, block_cells // max(n_units, 1)))
    if multiplicity is not None:
        total = int(multiplicity.sum())
        for start in range(0, n_boot, block):
            stop = min(n_boot, start + block)
            yield start, stop, rng.multinomial(total, multiplicity / total, size=stop - start)
        return
    counts = np.empty((block, n_units))
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        # one bincount per replicate: a single bincount over all blocks thrashes the cache
        for row, drawn in enumerate(resample_rows(n_units, stop - start, rng)):
            counts[row] = np.bincount(drawn, minlength=n_units)
        yield start, stop, counts[: stop - start]


def bootstrap_sums(
    unit_stats: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    collapse: bool = False,
    multiplicity: np.ndarray | None = None,
) -> np.ndarray:
    """Column sums of ``unit_stats`` over ``n_boot`` resamples of its rows (with replacement).

    Returns an ``(n_boot, n_cells)`` array; row ``b`` equals ``unit_stats[idx_b].sum(0)`` for
    ``idx_b`` a uniform resample of the units, computed as ``counts_b @ unit_stats``
    (:func:`resample_counts`).

    ``multiplicity`` says that row k stands for ``multiplicity[k]`` identical units; the
    counts are then Multinomial(total, multiplicity / total) over the distinct rows: the same
    resampling distribution at a cost set by the number of distinct rows. ``collapse=True``
    finds identical rows itself (use it for count data).
    """
    n_units = unit_stats.shape[0]
    if collapse and multiplicity is None:
        first, counted = distinct_rows(unit_stats)
        if len(first) < n_units // 2:
            unit_stats, multiplicity = unit_stats[first], counted
    out = np.empty((n_boot, unit_stats.shape[1]))
    for start, stop, counts in resample_counts(len(unit_stats), n_boot, rng, multiplicity=multiplicity):
        out[start:stop] = counts @ unit_stats
    return out


def bootstrap_row_sums(
    cells: np.ndarray, values: np.ndarray, n_cells: int, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap cell sums when every row is its own unit, without a dense rows x cells matrix.

    ``cells[i, j]`` is the cell that ``values[i, j]`` adds to. Up to ``_EXACT_ROWS`` rows each
    replicate draws n rows with replacement (cost ``n_boot * values.size``). Beyond, rows
    are grouped by the cells they add to (for calibration: bin x outcome): each replicate
    draws the group counts from their exact multinomial and, given a count m, the sum of m
    rows of a group from its normal limit ``N(m mean, m cov)``; groups under
    ``_NORMAL_MIN`` rows are still drawn row by row. The error of that approximation is
    far below the Monte Carlo error of the percentile interval, and a million rows take
    under a second for 1000 replicates instead of half a minute.
    """
    n = cells.shape[0]
    if n > _EXACT_ROWS:
        groups, pattern = _row_patterns(cells)
        if len(pattern) * _NORMAL_MIN <= n:
            return _grouped_normal_sums(groups, pattern, values, n_cells, n_boot, rng)
    flat = cells.ravel()
    out = np.empty((n_boot, n_cells))
    for b, _, weights in resample_counts(n, n_boot, rng, block_cells=n):  # one replicate a block
        out[b] = np.bincount(flat, weights=(values * weights[0][:, None]).ravel(), minlength=n_cells)
    return out


def _row_patterns(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group code of each row by its whole row of cells, and each group's row of cells."""
    codes = np.zeros(len(cells), dtype=np.int64)
    for column in cells.T:  # one column at a time keeps the combined key below n * n_cells
        codes = pd.factorize(codes * (int(column.max()) + 1) + column)[0]
    first = np.unique(codes, return_index=True)[1]
    return codes, cells[first]


def _grouped_normal_sums(groups, pattern, values, n_cells, n_boot, rng) -> np.ndarray:
    n, k = values.shape
    n_groups = len(pattern)
    size = np.bincount(groups, minlength=n_groups)
    counts = rng.multinomial(n, size / n, size=n_boot)
    mean = np.column_stack([np.bincount(groups, weights=values[:, j], minlength=n_groups) for j in range(k)]) / size[:, None]
    centred = values - mean[groups]
    cov = np.empty((n_groups, k, k))
    for j in range(k):
        for m in range(j, k):
            cov[:, j, m] = cov[:, m, j] = np.bincount(groups, weights=centred[:, j] * centred[:, m], minlength=n_groups) / size
    eigval, eigvec = np.linalg.eigh(cov)
    root = eigvec * np.sqrt(np.clip(eigval, 0, None))[:, None, :]  # root @ root.T = cov
    sums = counts[..., None] * mean + np.sqrt(counts)[..., None] * np.einsum(
        "bgk,glk->bgl", rng.standard_normal((n_boot, n_groups, k)), root)
    for g in np.flatnonzero(size < _NORMAL_MIN):
        members = np.flatnonzero(groups == g)
        drawn = members[rng.integers(0, len(members), counts[:, g].sum())]
        replicate = np.repeat(np.arange(n_boot), counts[:, g])
        sums[:, g] = np.column_stack([np.bincount(replicate, weights=values[drawn, j], minlength=n_boot) for j in range(k)])
    scatter = np.zeros((n_groups * k, n_cells))
    np.add.at(scatter, (np.arange(n_groups * k), pattern.ravel()), 1.0)
    return sums.reshape(n_boot, n_groups * k) @ scatter


def distinct_rows(unit_stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the first of each set of identical rows, and how many rows each stands for.

    Small non-negative integer rows (counts) are told apart by one integer key, others by
    sorting the rows.
    """
    rounded = np.rint(unit_stats)
    if unit_stats.size and (rounded == unit_stats).all() and unit_stats.min() >= 0:
        radix = rounded.max(axis=0).astype(np.int64) + 1
        if np.prod(radix.astype(float)) < 2**62:
            weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]])
            keys = rounded.astype(np.int64) @ weights
            _, first, multiplicity = np.unique(keys, return_index=True, return_counts=True)
            return first, multiplicity
    _, first, multiplicity = np.unique(unit_stats, axis=0, return_index=True, return_counts=True)
    return first, multiplicity


def multinomial_counts(multiplicity: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of Multinomial(n, multiplicity / n), n = multiplicity.sum(), as an int array.

    Row b counts how often each distinct unit is drawn when n units are resampled with
    replacement, unit k standing for ``multiplicity[k]`` identical ones. Exact, and cheaper
    than ``rng.multinomial`` (one binomial draw per category, in sequence) when there are
    many categories, with no Python loop over the rows: independent Poisson(s multiplicity)
    counts, given their total t, are Multinomial(t, multiplicity / n) whatever s; with
    s = 1 - 4 / sqrt(n) the total exceeds n about once in 30,000 rows, and such a row is
    drawn again (rejecting on t leaves the law given t unchanged); each row is then topped
    up with n - t single draws (about 4 sqrt(n) a row), and Multinomial(t, p) plus an
    independent Multinomial(n - t, p) is Multinomial(n, p).

    Examples
    --------
    >>> counts = multinomial_counts(np.array([3, 1, 6]), 4, np.random.default_rng(0))
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((4, 3), [10, 10, 10, 10])
    """
    multiplicity = np.asarray(multiplicity, dtype=np.int64)
    n, width = int(multiplicity.sum()), len(multiplicity)
    if n == 0:
        return np.zeros((size, width), dtype=np.int64)
    mean = multiplicity * max(0.0, 1.0 - 4.0 / np.sqrt(n))
    counts = rng.poisson(mean, size=(size, width))
    totals = counts.sum(axis=1)
    redraw = np.flatnonzero(totals > n)
    while redraw.size:  # rows whose total passed n (none when the mean is 0)
        counts[redraw] = rng.poisson(mean, size=(redraw.size, width))
        totals[redraw] = counts[redraw].sum(axis=1)
        redraw = redraw[totals[redraw] > n]
    short = n - totals
    # a top-up draw is one of the n units, told by a lookup table of each unit's category
    drawn = np.repeat(np.arange(width), multiplicity)[rng.integers(0, n, int(short.sum()))]
    np.add.at(counts.reshape(-1), np.repeat(np.arange(size) * width, short) + drawn, 1)
    return counts


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile limits along axis 0, ignoring replicates where the statistic is NaN.

    The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy's default
    linear interpolation) of bootstrap replicates or posterior draws; a column that is
    NaN in every replicate gets NaN limits.

    Examples
    --------
    >>> np.round(percentile_interval(np.arange(101.0), 0.9), 9).tolist()
    [5.0, 95.0]
    """
    replicates = np.asarray(replicates)
    alpha = 1 - confidence
    q = [alpha / 2, 1 - alpha / 2]
    if not np.isnan(replicates).any():  # the same numbers; nanquantile loops over columns
        low, high = np.quantile(replicates, q, axis=0)
        return np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    with warnings.catch_warnings():
        # A statistic undefined in every replicate (e.g. precision with no positives) has a
        # NaN interval; numpy's "All-NaN slice" warning says nothing more than that.
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        low = np.nanquantile(replicates, alpha / 2, axis=0)
        high = np.nanquantile(replicates, 1 - alpha / 2, axis=0)
    return np.asarray(low, dtype=float), np.asarray(high, dtype=float)


def check_n_boot(n_boot: int, name: str = "n_boot") -> None:
    """``n_boot`` is a non-negative integer (0 switches the bootstrap off)."""
    from hce.errors import DataError

    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 0:
        raise DataError(f"{name}={n_boot!r} must be a non-negative integer (0 = no bootstrap)")
