"""Row bootstrap for factor-analytic statistics: refit per resample, align factors, count failures.

Used by :func:`hce.stats.factor.efa` and by the factor-based reliability coefficients
(ordinal alpha, omega hierarchical) in :mod:`hce.stats.reliability.consistency`.

A factor solution is identified only up to the order and the signs of its factors, so before
a replicate's loadings can be compared with the full-sample ones its columns are matched to
them (:func:`align_factors`). Every refit may fail (a singular resample, an extraction that
does not converge); such replicates are kept as NaN rows and counted, never dropped silently.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from hce.errors import HceError, HceWarning
from hce.stats._resample import as_generator, percentile_interval

# factor_analyzer's notice when L-BFGS-B stops before convergence (factor_analyzer 0.5.1)
_NOT_CONVERGED = "Failed to converge"


def congruence(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tucker's congruence between every column of ``a`` and every column of ``b``.

    phi_ij = sum_k a_ki b_kj / sqrt(sum_k a_ki^2 sum_k b_kj^2) (psych ``factor.congruence``).
    """
    norm = np.sqrt(np.outer((a**2).sum(0), (b**2).sum(0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, (a.T @ b) / norm, 0.0)


def match_factors(loadings: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which factor of ``loadings`` matches each factor of ``target``, and its sign.

    A one-to-one assignment (Hungarian algorithm) that maximises the summed absolute Tucker
    congruence; a matched factor is reflected (sign -1) when its congruence is negative.
    ``loadings[:, order] * signs`` is then aligned with ``target``.
    """
    c = congruence(target, loadings)
    rows, order = linear_sum_assignment(-np.abs(c))
    return order, np.where(c[rows, order] < 0, -1.0, 1.0)


def align_factors(
    loadings: np.ndarray, target: np.ndarray, phi: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Reorder and reflect the factors of ``loadings`` (and ``phi``) to match ``target``."""
    order, signs = match_factors(loadings, target)
    aligned = loadings[:, order] * signs
    if phi is not None:
        phi = phi[np.ix_(order, order)] * np.outer(signs, signs)
    return aligned, phi


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates (failed ones as NaN rows) and why the failures failed."""

    values: np.ndarray
    failures: Counter

    @property
    def n_failed(self) -> int:
        return int(sum(self.failures.values()))


def bootstrap_rows(
    x: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
    *,
    size: int,
    what: str,
) -> Replicates:
    """Apply ``statistic`` to ``n_boot`` resamples of the rows of ``x`` (with replacement).

    ``statistic`` returns a vector of ``size`` values. A replicate fails when it raises an
    hce, value or linear-algebra error (a constant item in the resample, a singular matrix),
    or when the extraction reports that it did not converge; its row stays NaN. Other
    warnings raised in replicates (smoothing, Heywood cases) are tallied and emitted once
    each, with their count, and failures as one warning naming ``what`` and the reasons.
    Warnings point at the user's call (user -> public function -> its bootstrap helper ->
    here).
    """
    n = x.shape[0]
    values = np.full((n_boot, size), np.nan)
    failures: Counter = Counter()
    notices: Counter = Counter()
    for b in range(n_boot):
        rows = x[rng.integers(0, n, size=n)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = np.asarray(statistic(rows), dtype=float)
            except (HceError, ValueError, np.linalg.LinAlgError) as err:
                failures[f"{type(err).__name__}: {err}"] += 1
                continue
        messages = [str(w.message) for w in caught]
        stalled = [m for m in messages if m.startswith(_NOT_CONVERGED)]
        if stalled:
            failures[f"did not converge ({stalled[0]})"] += 1
            continue
        notices.update(set(messages))
        values[b] = value
    for message, count in notices.items():
        warnings.warn(f"{what}: {count} of {n_boot} bootstrap replicates warned: {message}",
                      HceWarning, stacklevel=4)
    if failures:
        reasons = "; ".join(f"{k} x{v}" for k, v in failures.most_common())
        warnings.warn(f"{what}: {sum(failures.values())} of {n_boot} bootstrap replicates failed "
                      f"and are left out of the intervals (n_failed): {reasons}", HceWarning,
                      stacklevel=4)
    return Replicates(values, failures)


def summarise(replicates: Replicates, confidence: float):
    """Bootstrap SE (SD of the successful replicates) and percentile limits, per statistic."""
    values = replicates.values
    seen = np.isfinite(values)
    valid = seen.sum(0)
    mean = np.where(seen, values, 0.0).sum(0) / np.maximum(valid, 1)
    squares = (np.where(seen, values - mean, 0.0) ** 2).sum(0)
    se = np.where(valid > 1, np.sqrt(squares / np.maximum(valid - 1, 1)), np.nan)
    low, high = percentile_interval(values, confidence)
    return se, low, high


def row_intervals(x, statistic, size, n_boot, confidence, random_state, what):
    """``ci_low, ci_high, ci_method, n_failed`` of statistics of row resamples (NaN if off)."""
    if not n_boot:
        return np.full(size, np.nan), np.full(size, np.nan), "none (n_boot=0)", 0
    reps = bootstrap_rows(x, statistic, int(n_boot), as_generator(random_state),
                          size=size, what=what)
    _, low, high = summarise(reps, confidence)
    return (low, high, f"percentile bootstrap over rows (B={n_boot}, {reps.n_failed} failed)",
            reps.n_failed)
