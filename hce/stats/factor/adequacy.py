"""Is the correlation matrix worth factoring, and into how many factors?

Sampling adequacy (``psych::KMO``), Bartlett's sphericity test (``psych::cortest.bartlett``),
the eigenvalues of a scree plot and Horn's parallel analysis (``psych::fa.parallel``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice
from hce.errors import DataError
from hce.stats._resample import as_generator
from hce.stats._validate import statistic
from hce.stats.factor.correlation import (
    CORRELATIONS,
    Correlation,
    correlation_core,
    item_matrix,
)
from hce.stats.factor.exploratory import extract

__all__ = ["ParallelResult", "bartlett_sphericity", "eigenvalues", "kmo", "parallel_analysis"]


# ----------------------------------------------------------------------------- adequacy


def _of_item_correlations(core: Callable[[np.ndarray, np.ndarray, list[str], str], pd.DataFrame]) -> Callable:
    """The public statistic of a wide item table made from ``core(r, x, names, cor)``.

    One door for the statistics of the item correlation matrix: the caller's
    ``(data, *, columns=None, cor="pearson")`` is checked, the item matrix ``x`` (with the
    item ``names``) taken and its correlation matrix ``r`` computed, then ``core`` runs on
    them. The statistic takes ``core``'s name and docstring.
    """

    def public(data: pd.DataFrame, *, columns: Sequence[str] | None = None,
               cor: Correlation = "pearson") -> pd.DataFrame:  # fmt: skip
        check_choice("cor", cor, CORRELATIONS)
        x, names = item_matrix(data, columns)
        return core(correlation_core(x, cor, 0.5), x, names, cor)

    public.__name__, public.__qualname__, public.__doc__ = core.__name__, core.__qualname__, core.__doc__
    return statistic(wide="columns", log=False, retired={"items": "columns"})(public)


def _kmo_core(r: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-item MSA and overall KMO from a correlation matrix (Kaiser 1970)."""
    inv = np.linalg.inv(r)
    partial = -inv / np.sqrt(np.outer(np.diag(inv), np.diag(inv)))
    r2 = r**2
    q2 = partial**2
    np.fill_diagonal(r2, 0.0)
    np.fill_diagonal(q2, 0.0)
    msa = r2.sum(0) / (r2.sum(0) + q2.sum(0))
    return msa, float(r2.sum() / (r2.sum() + q2.sum()))


@_of_item_correlations
def kmo(r: np.ndarray, x: np.ndarray, names: list[str], cor: str) -> pd.DataFrame:
    """Kaiser-Meyer-Olkin sampling adequacy: per-item MSA and the overall KMO (psych ``KMO``).

    %(correlation_parameters)s
        Correlation the adequacy is computed on (``"polychoric"`` for ordinal items).

    Returns
    -------
    DataFrame
        ``item`` (the last row is ``"overall"``), ``msa`` and ``method``.

    Notes
    -----
    MSA_j = sum_{i != j} r_ij^2 / (sum_{i != j} r_ij^2 + sum_{i != j} q_ij^2), with q the
    partial (anti-image) correlations from R^-1; the overall KMO sums over every pair.
    Values below 0.5 are commonly read as unacceptable, above 0.8 as meritorious.

    References
    ----------
    .. [1] Kaiser HF (1970). A second generation little jiffy. Psychometrika 35, 401-415.

    %(one_factor_example)s
    >>> kmo(d)[["item", "msa"]].round(2).tail(1).to_string(index=False)
    '   item  msa\\noverall 0.76'
    """
    msa, overall = _kmo_core(r)
    return pd.DataFrame(
        {"item": [*names, "overall"], "msa": [*msa, overall], "method": f"KMO ({cor})"}
    )


def _bartlett_core(r: np.ndarray, n: int) -> tuple[float, int, float]:
    p = r.shape[0]
    _, logdet = np.linalg.slogdet(r)
    statistic = -((n - 1) - (2 * p + 5) / 6) * logdet
    df = p * (p - 1) // 2
    return float(statistic), df, float(stats.chi2.sf(statistic, df))


@_of_item_correlations
def bartlett_sphericity(r: np.ndarray, x: np.ndarray, names: list[str], cor: str) -> pd.DataFrame:
    """Bartlett's test that the item correlation matrix is an identity (psych ``cortest.bartlett``).

    %(correlation_parameters)s
        Correlation whose matrix is tested against the identity.

    Returns
    -------
    DataFrame
        One row: ``statistic`` (chi-square), ``df1``, ``p_value``, ``n`` (rows of ``data``)
        and ``method``.

    Notes
    -----
    chi2 = -(n - 1 - (2p + 5) / 6) ln|R| on p(p - 1)/2 degrees of freedom. It is the null
    model chi-square that ``psych::fa`` prints.

    References
    ----------
    .. [1] Bartlett MS (1951). The effect of standardization on a chi square approximation
       in factor analysis. Biometrika 38, 337-344.

    %(one_factor_example)s
    >>> bartlett_sphericity(d)[["statistic", "df1"]].round(1).to_string(index=False)
    ' statistic  df1\\n     188.3    6'
    """
    statistic, df, p = _bartlett_core(r, x.shape[0])
    return pd.DataFrame(
        {"statistic": [statistic], "df1": [df], "p_value": [p], "n": [x.shape[0]],
         "method": [f"Bartlett sphericity ({cor})"]}
    )


# ----------------------------------------------------------------------------- retention


@_of_item_correlations
def eigenvalues(r: np.ndarray, x: np.ndarray, names: list[str], cor: str) -> pd.DataFrame:
    """Eigenvalues of the item correlation matrix: the scree plot's data.

    %(correlation_parameters)s
        Correlation decomposed; its eigenvalues sum to the number of items.

    Returns
    -------
    DataFrame
        ``factor`` (1..p), ``eigenvalue``, ``proportion`` (eigenvalue / p), ``cumulative``
        and ``kaiser`` (eigenvalue > 1).

    References
    ----------
    .. [1] Kaiser, H. F. (1960). The application of electronic computers to factor analysis.
       Educational and Psychological Measurement 20, 141-151.

    %(one_factor_example)s
    >>> round(float(eigenvalues(d)["eigenvalue"].sum()), 6)
    4.0
    """
    values = np.linalg.eigvalsh(r)[::-1]
    p = values.size
    return pd.DataFrame({"factor": np.arange(1, p + 1), "eigenvalue": values,
                         "proportion": values / p, "cumulative": np.cumsum(values) / p,
                         "kaiser": values > 1})


def _fa_values(r: np.ndarray) -> np.ndarray:
    """Eigenvalues of R with the one-factor minres communalities on the diagonal (psych)."""
    loadings = extract(r, 1, "minres")
    reduced = r.copy()
    np.fill_diagonal(reduced, (loadings**2).sum(1))
    return np.linalg.eigvalsh(reduced)[::-1]


@dataclass(frozen=True)
class ParallelResult:
    """Parallel analysis: observed against simulated eigenvalues.

    Attributes
    ----------
    table : DataFrame
        ``factor, observed_pc, simulated_pc, observed_fa, simulated_fa``.
    n_factors, n_components : int
        Factors (components) whose observed eigenvalue exceeds the simulated one, counted
        until the first that does not (psych's rule).
    n_sim : int
        Simulated data sets.
    """

    table: pd.DataFrame
    n_factors: int
    n_components: int
    n_sim: int

    def summary(self) -> str:
        return (f"Parallel analysis suggests that the number of factors = {self.n_factors} "
                f"and the number of components = {self.n_components}\n"
                + self.table.round(3).to_string(index=False))

    def __repr__(self) -> str:
        return self.summary()


@statistic(wide="columns", log=False, retired={"items": "columns", "n_iter": "n_sim"})
def parallel_analysis(
    data: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    n_sim: int = 20,
    quantile: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> ParallelResult:
    """Horn's parallel analysis for components and factors (psych ``fa.parallel``).

    %(wide_parameters)s
    n_sim : int, default 20
        Number of simulated normal data sets of the same size (psych's default).
    quantile : float, optional
        Compare with this quantile of the simulated eigenvalues (e.g. 0.95) instead of
        their mean.
    %(random_state)s

    Returns
    -------
    ParallelResult
        ``table`` (one row per factor number), ``n_factors``, ``n_components``.

    Notes
    -----
    Component eigenvalues are those of the Pearson correlation matrix (also for ordinal
    items: psych's ``fa.parallel.poly`` is not reproduced); factor eigenvalues are those
    of the correlation matrix with the communalities of a one-factor minres solution on its
    diagonal, as ``fa.parallel`` computes them. Simulated data are independent standard
    normal columns with the same number of rows and items.

    References
    ----------
    .. [1] Horn JL (1965). A rationale and test for the number of factors in factor
       analysis. Psychometrika 30, 179-185.

    %(two_factor_example)s
    >>> parallel_analysis(d, n_sim=5, random_state=1).n_factors
    2
    """
    x, _ = item_matrix(data, columns)
    if not (isinstance(n_sim, (int, np.integer)) and n_sim >= 1):
        raise DataError(f"n_sim={n_sim!r} must be a positive integer")
    if quantile is not None and not 0 < quantile < 1:
        raise DataError(f"quantile={quantile!r} must be strictly between 0 and 1")
    rng = as_generator(random_state)
    r = correlation_core(x, "pearson", 0.5)
    n, p = x.shape
    sim_pc, sim_fa = np.empty((n_sim, p)), np.empty((n_sim, p))
    for i in range(n_sim):
        rs = np.corrcoef(rng.standard_normal((n, p)), rowvar=False)
        sim_pc[i] = np.linalg.eigvalsh(rs)[::-1]
        sim_fa[i] = _fa_values(rs)
    summarise = (lambda a: np.quantile(a, quantile, axis=0)) if quantile else (
        lambda a: a.mean(0))
    table = pd.DataFrame({"factor": np.arange(1, p + 1),
                          "observed_pc": np.linalg.eigvalsh(r)[::-1],
                          "simulated_pc": summarise(sim_pc), "observed_fa": _fa_values(r),
                          "simulated_fa": summarise(sim_fa)})

    def count(obs: str, sim: str) -> int:
        above = (table[obs] > table[sim]).to_numpy()
        return int(np.argmin(above)) if not above.all() else p

    return ParallelResult(table, count("observed_fa", "simulated_fa"),
                          count("observed_pc", "simulated_pc"), int(n_sim))

