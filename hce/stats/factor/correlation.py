"""Item correlation matrices for factor analysis: Pearson, Spearman and polychoric.

Every function of :mod:`hce.stats.factor` starts here: :func:`item_matrix` reads the
observations x items matrix (every item named and checked) and :func:`correlation_core`
turns it into the pairwise-complete correlation matrix, smoothed to positive definite as
``psych::cor.smooth`` does. The polychoric estimator follows ``psych::polychoric``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, special

from hce._checks import check_choice, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._validate import statistic

Correlation = Literal["pearson", "spearman", "polychoric"]

CORRELATIONS = ("pearson", "spearman", "polychoric")
_EPS = np.finfo(float).eps

__all__ = ["Correlation", "correlation_matrix", "polychoric"]


# ----------------------------------------------------------------------------- input


def item_matrix(data: pd.DataFrame, items: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """Observations x items as float64 (NaN kept); every item named and checked."""
    if items is None:
        require_columns(data, [])
        items = [c for c in data.columns if pd.api.types.is_numeric_dtype(data[c])]
    items = list(items)
    require_columns(data, items)
    if len(items) < 3:
        raise DataError(f"factor analysis needs at least 3 items; got {items}")
    x = np.column_stack([numeric_column(data, c) for c in items])
    observed = np.isfinite(x)
    for j, name in enumerate(items):
        values = x[observed[:, j], j]
        if values.size < 3:
            raise DataError(f"item {name!r} has {values.size} observed values; at least 3 needed")
        if np.ptp(values) == 0:
            raise DataError(f"item {name!r} is constant ({values[0]:g}); it has no correlation")
    return x, items


def pairwise_counts(x: np.ndarray) -> np.ndarray:
    """Number of rows observed on both items, for every pair (psych ``pairwiseCount``)."""
    seen = np.isfinite(x).astype(float)
    return seen.T @ seen


def correlation_core(x: np.ndarray, method: str, correct: float) -> np.ndarray:
    """Pairwise-complete correlation matrix, smoothed to positive definite when needed."""
    if method == "polychoric":
        r, _ = _polychoric_core(x, correct)
    else:
        r = pd.DataFrame(x).corr(method=method).to_numpy()
    if not np.all(np.isfinite(r)):
        raise DataError("some item pairs share fewer than 2 observations; their correlation "
                        "is undefined")
    return smooth(r)


def smooth(r: np.ndarray) -> np.ndarray:
    """psych ``cor.smooth``: lift eigenvalues below machine epsilon, rescale to a correlation."""
    values, vectors = np.linalg.eigh(r)
    if values.min() >= _EPS:
        return r
    warnings.warn(
        "correlation matrix was not positive definite; smoothed as psych::cor.smooth does",
        stacklevel=3,
    )
    values = np.where(values < 1e-12, 100 * 1e-12, values)
    values = len(values) * values / values.sum()
    s = vectors @ np.diag(values) @ vectors.T
    d = np.sqrt(np.diag(s))
    return s / np.outer(d, d)


def resample_correlation(rows: np.ndarray, cor: str, correct: float) -> np.ndarray:
    """Correlation matrix of a bootstrap resample; a resample with a constant item fails."""
    seen = np.isfinite(rows)
    if np.any(np.where(seen, rows, -np.inf).max(0) <= np.where(seen, rows, np.inf).min(0)):
        raise DataError("an item is constant in the resample")
    return correlation_core(rows, cor, correct)


@statistic(wide="columns", log=False, retired={"items": "columns"})
def correlation_matrix(
    data: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    method: Correlation = "pearson",
    correct: float = 0.5,
) -> pd.DataFrame:
    """Item correlation matrix (pairwise-complete), as factor analysis uses it.

    %(wide_parameters)s
    method : {"pearson", "spearman", "polychoric"}, default "pearson"
        ``"polychoric"`` treats each item as a coarsened normal variable (R
        ``psych::polychoric``), the usual choice for Likert rubric scores.
    correct : float, default 0.5
        Polychoric only: empty cells of a pair's table are given ``correct / n`` (psych's
        continuity correction); 0 turns it off.

    Returns
    -------
    DataFrame
        Square correlation matrix indexed by item on both axes.

    References
    ----------
    .. [1] Olsson, U. (1979). Maximum likelihood estimation of the polychoric correlation
       coefficient. Psychometrika 44, 443-460.
    .. [2] Revelle, W. ``psych::polychoric`` and ``psych::cor.smooth``, R package psych.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [2, 1, 4, 3, 5], "c": [1, 3, 2, 5, 4]})
    >>> correlation_matrix(d).round(2).loc["a", "b"]
    np.float64(0.8)
    """
    check_choice("method", method, CORRELATIONS)
    x, names = item_matrix(data, columns)
    r = correlation_core(x, method, correct)
    return pd.DataFrame(r, index=names, columns=names)


# ----------------------------------------------------------------------------- polychoric


def _bvn_cdf(h: np.ndarray, k: np.ndarray, rho: float) -> np.ndarray:
    """Standard bivariate normal CDF at finite (h, k) through Owen's T function.

    Phi2(h, k; rho) = Phi(h)/2 + Phi(k)/2 - T(h, a_h) - T(k, a_k) - beta, with
    a_h = (k - rho h) / (h sqrt(1 - rho^2)), a_k likewise and beta = 1/2 when h k < 0 or
    (h k = 0 and h + k < 0) (Owen 1956).
    """
    h, k = np.broadcast_arrays(np.asarray(h, float), np.asarray(k, float))
    s = np.sqrt(1.0 - rho * rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_h = np.where(h == 0, np.copysign(np.inf, k - rho * h), (k - rho * h) / (h * s))
        a_k = np.where(k == 0, np.copysign(np.inf, h - rho * k), (h - rho * k) / (k * s))
    beta = np.where((h * k < 0) | ((h * k == 0) & (h + k < 0)), 0.5, 0.0)
    out = 0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - special.owens_t(h, a_h)
    out = out - special.owens_t(k, a_k) - beta
    both_zero = (h == 0) & (k == 0)
    out[both_zero] = 0.25 + np.arcsin(rho) / (2 * np.pi)
    return out


def _cell_probabilities(tau_x: np.ndarray, tau_y: np.ndarray, rho: float) -> np.ndarray:
    """Probabilities of the (len(tau_x)+1) x (len(tau_y)+1) cells cut by the thresholds."""
    grid = np.zeros((tau_x.size + 2, tau_y.size + 2))
    grid[1:-1, 1:-1] = _bvn_cdf(tau_x[:, None], tau_y[None, :], rho)
    grid[-1, 1:-1] = special.ndtr(tau_y)
    grid[1:-1, -1] = special.ndtr(tau_x)
    grid[-1, -1] = 1.0
    return np.diff(np.diff(grid, axis=0), axis=1)


def _polychoric_from_table(
    table: np.ndarray, tau_x: np.ndarray, tau_y: np.ndarray, correct: float
) -> float:
    """Maximum-likelihood correlation of one contingency table with fixed thresholds."""
    total = table.sum()
    p = table / total
    if correct > 0:
        p = np.where(p == 0, correct / total, p)

    def loss(rho: float) -> float:
        cells = np.clip(_cell_probabilities(tau_x, tau_y, rho), 1e-300, None)
        return -float(np.sum(p * np.log(cells)))

    res = optimize.minimize_scalar(loss, bounds=(-0.99999, 0.99999), method="bounded",
                                   options={"xatol": 1e-10})
    return float(res.x)


def _thresholds(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Normal thresholds between ordered categories from the item's own marginal (psych global)."""
    counts = np.array([np.sum(values == v) for v in levels], dtype=float)
    return special.ndtri(np.cumsum(counts)[:-1] / counts.sum())


def _polychoric_core(x: np.ndarray, correct: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """Two-step polychoric matrix: thresholds per item, then ML correlation per pair."""
    n_items = x.shape[1]
    levels, taus = [], []
    for j in range(n_items):
        col = x[np.isfinite(x[:, j]), j]
        lev = np.unique(col)
        if lev.size > 20:
            raise DataError(
                f"item {j} has {lev.size} distinct values; polychoric correlations are for "
                "ordinal items with few categories"
            )
        levels.append(lev)
        taus.append(_thresholds(col, lev))
    r = np.eye(n_items)
    for i in range(n_items):
        for j in range(i + 1, n_items):
            both = np.isfinite(x[:, i]) & np.isfinite(x[:, j])
            xi = np.searchsorted(levels[i], x[both, i])
            xj = np.searchsorted(levels[j], x[both, j])
            table = np.zeros((levels[i].size, levels[j].size))
            np.add.at(table, (xi, xj), 1.0)
            r[i, j] = r[j, i] = _polychoric_from_table(table, taus[i], taus[j], correct)
    return r, taus


@statistic(wide="columns", log=False, retired={"items": "columns"})
def polychoric(
    data: pd.DataFrame, *, columns: Sequence[str] | None = None, correct: float = 0.5
) -> pd.DataFrame:
    """Polychoric correlation matrix of ordinal items (R ``psych::polychoric``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per ordinal item (integer scores).
    columns : list of str, optional
        Item columns; default every numeric column.
    correct : float, default 0.5
        Empty cells of a pair's contingency table get ``correct / n`` before fitting.

    Returns
    -------
    DataFrame
        Square matrix of polychoric correlations, indexed by item.

    Notes
    -----
    Two-step estimator (Olsson 1979), as psych with ``global=TRUE``: thresholds
    tau = Phi^-1(cumulative proportions) from each item's own distribution, then for each
    pair the rho maximising sum_ab p_ab log P_ab(rho), where P_ab is the bivariate normal
    probability of cell (a, b). A matrix that is not positive definite is smoothed as
    ``psych::cor.smooth`` does (with a warning).

    References
    ----------
    .. [1] Olsson U (1979). Maximum likelihood estimation of the polychoric correlation
       coefficient. Psychometrika 44, 443-460.
    .. [2] Revelle W. psych: ``polychoric``.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 1, 2], "b": [1, 2, 2, 3, 3, 3, 1, 1],
    ...                   "c": [2, 1, 2, 3, 3, 2, 1, 2]})
    >>> round(float(polychoric(d).loc["a", "b"]), 3)
    0.527
    """
    x, names = item_matrix(data, columns)
    r, _ = _polychoric_core(x, correct)
    return pd.DataFrame(smooth(r), index=names, columns=names)
