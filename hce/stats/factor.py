"""Factor structure of a rating instrument: sampling adequacy, factor retention, EFA, CFA, omega.

Factor analysis works on an observations x items matrix, so these functions take a *wide*
DataFrame: one row per observation (a rated text, or a text x rater pair) and one column per
item (rubric attribute), chosen with ``items=``. :func:`hce.stats.instrument.instrument_report`
builds that matrix from a long ratings table.

The numbers follow R's ``psych`` package, which the validation literature (e.g. PDSQI-9,
Appendix B) reports: ``psych::fa`` for the EFA and its fit indices, ``psych::KMO``,
``psych::cortest.bartlett``, ``psych::fa.parallel``, ``psych::polychoric`` and
``psych::omega``; the CFA fit indices follow ``lavaan``. Extraction (minres, ML) and
rotations run on ``factor_analyzer``; hce adds the psych conventions (sign and order of
factors, oblique sums of squares) and every fit statistic. ``efa``, ``omega_hierarchical``
and ``ordinal_alpha`` take ``n_boot=`` for row-bootstrap percentile intervals (as
``psych::fa(n.iter=)``; the resampling lives in :mod:`hce.stats._factor_boot`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._factor_boot import align_factors, bootstrap_rows, summarise
from hce.stats._resample import check_n_boot
from hce.stats._validate import reads_frame

Method = Literal["minres", "ml"]
Rotation = Literal["oblimin", "varimax", "promax", "none"]
Correlation = Literal["pearson", "spearman", "polychoric"]

METHODS = ("minres", "ml")
ROTATIONS = ("oblimin", "varimax", "promax", "none")
CORRELATIONS = ("pearson", "spearman", "polychoric")
_PREFIX = {"minres": "MR", "ml": "ML"}
_EPS = np.finfo(float).eps

__all__ = [
    "CFAResult",
    "FactorResult",
    "OmegaResult",
    "ParallelResult",
    "bartlett_sphericity",
    "cfa",
    "correlation_matrix",
    "efa",
    "eigenvalues",
    "kmo",
    "omega_hierarchical",
    "ordinal_alpha",
    "parallel_analysis",
    "polychoric",
]


# ----------------------------------------------------------------------------- input


def _item_matrix(data: pd.DataFrame, items: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
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


def _pairwise_counts(x: np.ndarray) -> np.ndarray:
    """Number of rows observed on both items, for every pair (psych ``pairwiseCount``)."""
    seen = np.isfinite(x).astype(float)
    return seen.T @ seen


def _correlation_core(x: np.ndarray, method: str, correct: float) -> np.ndarray:
    """Pairwise-complete correlation matrix, smoothed to positive definite when needed."""
    if method == "polychoric":
        r, _ = _polychoric_core(x, correct)
    else:
        r = pd.DataFrame(x).corr(method=method).to_numpy()
    if not np.all(np.isfinite(r)):
        raise DataError("some item pairs share fewer than 2 observations; their correlation "
                        "is undefined")
    return _smooth(r)


def _smooth(r: np.ndarray) -> np.ndarray:
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


@reads_frame(wide="items", log=False)
def correlation_matrix(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    method: Correlation = "pearson",
    correct: float = 0.5,
) -> pd.DataFrame:
    """Item correlation matrix (pairwise-complete), as factor analysis uses it.

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
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

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [2, 1, 4, 3, 5], "c": [1, 3, 2, 5, 4]})
    >>> correlation_matrix(d).round(2).loc["a", "b"]
    np.float64(0.8)
    """
    check_choice("method", method, CORRELATIONS)
    x, names = _item_matrix(data, items)
    r = _correlation_core(x, method, correct)
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


@reads_frame(wide="items", log=False)
def polychoric(
    data: pd.DataFrame, items: Sequence[str] | None = None, *, correct: float = 0.5
) -> pd.DataFrame:
    """Polychoric correlation matrix of ordinal items (R ``psych::polychoric``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per ordinal item (integer scores).
    items : list of str, optional
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
    x, names = _item_matrix(data, items)
    r, _ = _polychoric_core(x, correct)
    return pd.DataFrame(_smooth(r), index=names, columns=names)


# ----------------------------------------------------------------------------- adequacy


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


@reads_frame(wide="items", log=False)
def kmo(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    cor: Correlation = "pearson",
) -> pd.DataFrame:
    """Kaiser-Meyer-Olkin sampling adequacy: per-item MSA and the overall KMO (psych ``KMO``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        Correlation the adequacy is computed on.

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

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> f = rng.normal(size=200)
    >>> d = pd.DataFrame({f"i{j}": f + rng.normal(size=200) for j in range(4)})
    >>> kmo(d)[["item", "msa"]].round(2).tail(1).to_string(index=False)
    '   item  msa\\noverall 0.76'
    """
    check_choice("cor", cor, CORRELATIONS)
    x, names = _item_matrix(data, items)
    msa, overall = _kmo_core(_correlation_core(x, cor, 0.5))
    return pd.DataFrame(
        {"item": [*names, "overall"], "msa": [*msa, overall], "method": f"KMO ({cor})"}
    )


def _bartlett_core(r: np.ndarray, n: int) -> tuple[float, int, float]:
    p = r.shape[0]
    _, logdet = np.linalg.slogdet(r)
    statistic = -((n - 1) - (2 * p + 5) / 6) * logdet
    df = p * (p - 1) // 2
    return float(statistic), df, float(stats.chi2.sf(statistic, df))


@reads_frame(wide="items", log=False)
def bartlett_sphericity(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    cor: Correlation = "pearson",
) -> pd.DataFrame:
    """Bartlett's test that the item correlation matrix is an identity (psych ``cortest.bartlett``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        Correlation tested.

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

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> f = rng.normal(size=200)
    >>> d = pd.DataFrame({f"i{j}": f + rng.normal(size=200) for j in range(4)})
    >>> bartlett_sphericity(d)[["statistic", "df1"]].round(1).to_string(index=False)
    ' statistic  df1\\n     188.3    6'
    """
    check_choice("cor", cor, CORRELATIONS)
    x, _ = _item_matrix(data, items)
    statistic, df, p = _bartlett_core(_correlation_core(x, cor, 0.5), x.shape[0])
    return pd.DataFrame(
        {"statistic": [statistic], "df1": [df], "p_value": [p], "n": [x.shape[0]],
         "method": [f"Bartlett sphericity ({cor})"]}
    )


# ----------------------------------------------------------------------------- extraction


@contextmanager
def _quiet_dependency_notices():
    """Hide two deprecation notices factor_analyzer 0.5.1 triggers in its own dependencies.

    It calls scikit-learn's ``check_array(force_all_finite=...)`` (renamed in 1.6) and passes
    ``disp`` to SciPy's L-BFGS-B (deprecated in 1.16); neither says anything about the user's
    analysis. Every other warning (convergence above all) still reaches the user.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'force_all_finite' was renamed",
                                category=FutureWarning)
        warnings.filterwarnings("ignore", message="scipy.optimize: The `disp` and `iprint`",
                                category=DeprecationWarning)
        yield


def _extract(r: np.ndarray, n_factors: int, method: str) -> np.ndarray:
    """Unrotated loadings by minres or ML (factor_analyzer; psych's bounds and SMC start)."""
    # factor_analyzer (and scikit-learn behind it) is imported when used, not with hce.stats
    from factor_analyzer import FactorAnalyzer

    fa = FactorAnalyzer(n_factors=n_factors, rotation=None, method=method,
                        is_corr_matrix=True, bounds=(0.005, 1))
    with _quiet_dependency_notices():
        fa.fit(r)
    return np.asarray(fa.loadings_, dtype=float).reshape(r.shape[0], n_factors)


def _rotate(loadings: np.ndarray, rotation: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Rotate as psych::fa does; return pattern loadings and factor correlations (or None)."""
    if rotation == "none" or loadings.shape[1] == 1:
        return loadings, None
    from factor_analyzer import Rotator

    # psych flips unrotated factors to positive column sums before rotating
    signs = np.where(loadings.sum(0) < 0, -1.0, 1.0)
    loadings = loadings * signs
    if rotation == "oblimin":  # GPArotation::oblimin: gamma 0, raw loadings, 1000 iterations
        rotator = Rotator(method="oblimin", max_iter=1000)
    else:  # stats::varimax and psych's kaiser(Promax) both Kaiser-normalise
        rotator = Rotator(method=rotation, normalize=True)
    rotated = np.asarray(rotator.fit_transform(loadings), dtype=float)
    phi = None if rotator.phi_ is None else np.asarray(rotator.phi_, dtype=float)
    return rotated, phi


def _order(loadings: np.ndarray, phi: np.ndarray | None, prefix: str):
    """psych's final sign flip and ordering by (oblique) sums of squares; keeps psych's labels."""
    k = loadings.shape[1]
    names = np.array([f"{prefix}{i + 1}" for i in range(k)])
    signs = np.where(loadings.sum(0) < 0, -1.0, 1.0)
    loadings = loadings * signs
    if phi is not None:
        phi = phi * np.outer(signs, signs)
    ss = _sum_squares(loadings, phi)
    order = np.argsort(-ss, kind="stable")
    loadings = loadings[:, order]
    if phi is not None:
        phi = phi[np.ix_(order, order)]
    return loadings, phi, list(names[order])


def _sum_squares(loadings: np.ndarray, phi: np.ndarray | None) -> np.ndarray:
    """SS loadings; for oblique factors diag(Phi L'L), as psych reports them."""
    if phi is None:
        return (loadings**2).sum(0)
    return np.diag(phi @ loadings.T @ loadings)


# ----------------------------------------------------------------------------- fit statistics


def _rmsea_interval(chisq: float, df: int, n_obs: float, confidence: float):
    """psych/lavaan RMSEA bounds: non-centrality where P(chi2_df(ncp) <= chisq) hits the tails."""
    tail = (1 - confidence) / 2
    upper_ncp = max(n_obs, chisq) + 2 * n_obs

    def cdf(ncp: float) -> float:
        return stats.chi2.cdf(chisq, df) if ncp <= 0 else stats.ncx2.cdf(chisq, df, ncp)

    def bound(prob: float) -> float:
        if cdf(0.0) <= prob:
            return 0.0
        return optimize.brentq(lambda ncp: cdf(ncp) - prob, 0.0, upper_ncp, xtol=1e-12)

    return bound(1 - tail), bound(tail)


def _fit_core(r, loadings, phi, n_obs, np_obs, confidence):
    """Every fit statistic psych::fa prints (psych ``fa.stats``), as a dict."""
    p, k = loadings.shape
    model = loadings @ (phi if phi is not None else np.eye(k)) @ loadings.T
    residual = r - model
    np.fill_diagonal(residual, 0.0)
    dof = p * (p - 1) / 2 - p * k + k * (k - 1) / 2
    weighted = np_obs if np_obs is not None else np.full((p, p), float(n_obs))
    chi_emp = float(np.sum(residual**2 * weighted))
    n_h = float(stats.hmean(weighted.ravel()))
    rms = np.sqrt(chi_emp / (n_h * p * (p - 1)))
    r2_off = float(np.sum(r**2 * weighted) - np.trace(r**2 * weighted))
    out = {"dof": dof, "n_harmonic": n_h, "chi_empirical": chi_emp, "rmsr": rms,
           "fit_off": 1 - chi_emp / r2_off}
    out["crmsr"] = np.sqrt(chi_emp / (2 * n_h * dof)) if dof > 0 else np.nan
    out["p_empirical"] = stats.chi2.sf(chi_emp, dof) if dof > 0 else np.nan
    out["bic_empirical"] = chi_emp - dof * np.log(n_h) if dof > 0 else np.nan
    m = model.copy()
    np.fill_diagonal(m, np.diag(r))
    m_inv_r = np.linalg.solve(_smooth(m), _smooth(r))
    objective = float(np.trace(m_inv_r) - np.linalg.slogdet(m_inv_r)[1] - p)
    null_objective = float(-np.linalg.slogdet(_smooth(r))[1])
    factor = (n_obs - 1) - (2 * p + 5) / 6 - 2 * k / 3
    chisq = max(objective * factor, 0.0)
    null_df = p * (p - 1) / 2
    m0 = null_objective * 2 / (p * (p - 1))
    out.update(objective=objective, chisq=chisq, null_objective=null_objective, null_df=null_df,
               null_chisq=null_objective * ((n_obs - 1) - (2 * p + 5) / 6))
    out["p_value"] = stats.chi2.sf(chisq, dof) if dof > 0 else np.nan
    out["tli"] = (m0 - objective / dof) / (m0 - 1 / factor) if dof > 0 else np.nan
    if dof > 0:
        rmsea = np.sqrt(max(objective / dof - 1 / (n_obs - 1), 0.0))
        low, high = _rmsea_interval(chisq, dof, n_obs, confidence)
        low = np.sqrt(low / (n_obs - 1) / dof)
        high = np.sqrt(high / (n_obs - 1) / dof)
        # psych reports a bound that excludes the estimate as missing
        out["rmsea"] = rmsea
        out["rmsea_low"] = low if low <= rmsea else np.nan
        out["rmsea_high"] = high if high >= rmsea else np.nan
        out["bic"] = chisq - dof * np.log(n_obs)
    else:
        out.update(rmsea=np.nan, rmsea_low=np.nan, rmsea_high=np.nan, bic=np.nan)
    return out


def _fit_table(f: dict, n_obs: int, confidence: float) -> pd.DataFrame:
    nan = np.nan
    rows = [
        ("likelihood_chi_square", f["chisq"], nan, nan, f["dof"], f["p_value"], n_obs),
        ("empirical_chi_square", f["chi_empirical"], nan, nan, f["dof"], f["p_empirical"],
         f["n_harmonic"]),
        ("null_chi_square", f["null_chisq"], nan, nan, f["null_df"],
         stats.chi2.sf(f["null_chisq"], f["null_df"]), n_obs),
        ("objective", f["objective"], nan, nan, nan, nan, n_obs),
        ("null_objective", f["null_objective"], nan, nan, nan, nan, n_obs),
        ("rmsr", f["rmsr"], nan, nan, nan, nan, f["n_harmonic"]),
        ("rmsr_df_corrected", f["crmsr"], nan, nan, f["dof"], nan, f["n_harmonic"]),
        ("tli", f["tli"], nan, nan, f["dof"], nan, n_obs),
        ("rmsea", f["rmsea"], f["rmsea_low"], f["rmsea_high"], f["dof"], nan, n_obs),
        ("bic", f["bic"], nan, nan, f["dof"], nan, n_obs),
        ("empirical_bic", f["bic_empirical"], nan, nan, f["dof"], nan, f["n_harmonic"]),
        ("fit_off_diagonal", f["fit_off"], nan, nan, nan, nan, n_obs),
    ]
    table = pd.DataFrame(rows, columns=["index", "estimate", "ci_low", "ci_high", "df1",
                                        "p_value", "n"])
    table["confidence"] = np.where(table["index"] == "rmsea", confidence, np.nan)
    return table


# ----------------------------------------------------------------------------- EFA


@dataclass(frozen=True)
class FactorResult:
    """Exploratory factor analysis, laid out as ``psych::fa`` prints it.

    Attributes
    ----------
    loadings : DataFrame
        Pattern loadings, items x factors (psych's labels, e.g. ``MR2, MR1, MR3``).
    phi : DataFrame or None
        Factor correlations (oblique rotations only).
    structure : DataFrame
        Structure loadings (pattern x phi; equal to the pattern when orthogonal).
    communalities : DataFrame
        ``item, communality (h2), uniqueness (u2), complexity`` (Hoffman's index).
    variance : DataFrame
        ``factor, ss_loadings, proportion_var, cumulative_var, proportion_explained,
        cumulative_proportion``.
    fit : DataFrame
        One row per index: ``index, estimate, ci_low, ci_high, df1, p_value, n,
        confidence`` (likelihood and empirical chi-square, RMSR, df-corrected RMSR, TLI,
        RMSEA with its interval, BIC, ...).
    method, rotation, cor : str
        Extraction, rotation and correlation used.
    n_obs : int
        Rows of the data (the n psych uses for the likelihood chi-square).
    intervals : DataFrame or None
        With ``efa(n_boot=...)``, one row per parameter: ``parameter`` (``"loading"``,
        ``"communality"``, ``"factor_correlation"``), ``item``, ``factor``, ``with_factor``
        (the second factor of a correlation), ``estimate``, ``se`` (bootstrap SD),
        ``ci_low``, ``ci_high`` (percentile), ``confidence``, ``n_boot``, ``n_failed``
        (replicates that failed and were left out) and ``method``. None without bootstrap.
    """

    loadings: pd.DataFrame
    phi: pd.DataFrame | None
    structure: pd.DataFrame
    communalities: pd.DataFrame
    variance: pd.DataFrame
    fit: pd.DataFrame
    method: str
    rotation: str
    cor: str
    n_obs: int
    intervals: pd.DataFrame | None = None

    def tidy(self) -> pd.DataFrame:
        """Long table: ``item, factor, loading, ci_low, ci_high, communality, uniqueness``.

        ``ci_low`` and ``ci_high`` bound the loading (NaN unless ``efa`` ran with ``n_boot``).
        """
        long = self.loadings.rename_axis("item").reset_index().melt(
            id_vars="item", var_name="factor", value_name="loading")
        if self.intervals is None:
            long["ci_low"] = long["ci_high"] = np.nan
        else:
            bounds = self.intervals.loc[self.intervals["parameter"] == "loading",
                                        ["item", "factor", "ci_low", "ci_high"]]
            long = long.merge(bounds, on=["item", "factor"], how="left")
        return long.merge(self.communalities[["item", "communality", "uniqueness"]], on="item")

    def fit_value(self, index: str) -> float:
        """One fit index by name (``"rmsea"``, ``"tli"``, ``"bic"``, ...)."""
        row = self.fit.loc[self.fit["index"] == index, "estimate"]
        if row.empty:
            raise DataError(f"no fit index {index!r}; choose one of {list(self.fit['index'])}")
        return float(row.iloc[0])

    def summary(self, digits: int = 2) -> str:
        """The analysis as ``print(psych::fa(...))`` shows it."""
        f = self.fit.set_index("index")
        table = self.loadings.copy()
        cm = self.communalities.set_index("item")
        table["h2"], table["u2"] = cm["communality"], cm["uniqueness"]
        table["com"] = cm["complexity"]
        var = self.variance.set_index("factor").T
        var.index = ["SS loadings", "Proportion Var", "Cumulative Var", "Proportion Explained",
                     "Cumulative Proportion"]
        k = self.loadings.shape[1]
        lines = [f"Factor Analysis using method = {self.method} (rotation = {self.rotation}, "
                 f"correlations = {self.cor})",
                 "Standardized loadings (pattern matrix) based upon correlation matrix",
                 table.round(digits).to_string(), "", var.round(digits).to_string()]
        if self.phi is not None:
            lines += ["", "With factor correlations of", self.phi.round(digits).to_string()]
        if self.intervals is not None:
            lines += ["", *self._interval_lines(digits)]

        def val(name: str, col: str = "estimate") -> float:
            return float(f.loc[name, col])

        lines += [
            "",
            f"Mean item complexity = {cm['complexity'].mean():.1f}",
            f"Test of the hypothesis that {k} factor{'s are' if k > 1 else ' is'} sufficient.",
            f"df null model = {val('null_chi_square', 'df1'):g} with the objective function = "
            f"{val('null_objective'):.{digits}f} with Chi Square = "
            f"{val('null_chi_square'):.{digits}f}",
            f"df of the model are {val('likelihood_chi_square', 'df1'):g} and the objective "
            f"function was {val('objective'):.{digits}f}",
            "",
            f"The root mean square of the residuals (RMSR) is {val('rmsr'):.{digits}f}",
            f"The df corrected root mean square of the residuals is "
            f"{val('rmsr_df_corrected'):.{digits}f}",
            "",
            f"The harmonic n.obs is {val('empirical_chi_square', 'n'):.0f} with the empirical chi "
            f"square {val('empirical_chi_square'):.{digits}f} with prob < "
            f"{val('empirical_chi_square', 'p_value'):.2g}",
            f"The total n.obs was {self.n_obs} with Likelihood Chi Square = "
            f"{val('likelihood_chi_square'):.{digits}f} with prob < "
            f"{val('likelihood_chi_square', 'p_value'):.2g}",
            "",
            f"Tucker Lewis Index of factoring reliability = {val('tli'):.3f}",
            f"RMSEA index = {val('rmsea'):.3f} and the {val('rmsea', 'confidence') * 100:g} % "
            f"confidence intervals are {val('rmsea', 'ci_low'):.3f} {val('rmsea', 'ci_high'):.3f}",
            f"BIC = {val('bic'):.{digits}f}",
            f"Fit based upon off diagonal values = {val('fit_off_diagonal'):.{digits}f}",
        ]
        return "\n".join(lines)

    def _interval_lines(self, digits: int) -> list[str]:
        """psych's "Coefficients and bootstrapped confidence intervals" block."""
        ci = self.intervals
        first = ci.iloc[0]
        head = (f"Coefficients and bootstrapped {first['confidence'] * 100:g} % confidence "
                f"intervals ({first['n_boot']} resamples, {first['n_failed']} failed)")
        loads = ci[ci["parameter"] == "loading"]
        wide = pd.DataFrame(index=self.loadings.index)
        for factor in self.loadings.columns:
            one = loads[loads["factor"] == factor].set_index("item")
            wide[f"{factor} low"] = one["ci_low"]
            wide[factor] = one["estimate"]
            wide[f"{factor} upper"] = one["ci_high"]
        lines = [head, wide.round(digits).to_string()]
        phis = ci[ci["parameter"] == "factor_correlation"]
        if not phis.empty:
            pairs = phis.assign(pair=phis["factor"] + "-" + phis["with_factor"]).set_index("pair")
            lines += ["", "Interfactor correlations and bootstrapped confidence intervals",
                      pairs[["ci_low", "estimate", "ci_high"]].round(digits).to_string()]
        return lines

    def __repr__(self) -> str:
        return self.summary()


def _efa_solution(r, n_factors, method, rotation):
    """Extract, rotate and order as psych::fa: pattern loadings, Phi, communalities, labels."""
    unrotated = _extract(r, n_factors, method)
    communality = (unrotated**2).sum(1)
    if communality.max() > 1:
        warnings.warn("an ultra-Heywood case was detected (a communality above 1); "
                      "examine the results carefully", stacklevel=4)
    rotated, phi = _rotate(unrotated, rotation)
    loadings, phi, labels = _order(rotated, phi, _PREFIX[method])
    return loadings, phi, communality, labels


def _efa_core(r, n_factors, method, rotation, n_obs, np_obs, confidence, names, cor):
    loadings, phi, communality, labels = _efa_solution(r, n_factors, method, rotation)
    structure = loadings @ phi if phi is not None else loadings
    complexity = (loadings**2).sum(1) ** 2 / (loadings**4).sum(1)
    uniqueness = np.diag(r) - communality
    ss = _sum_squares(loadings, phi)
    total = float(np.sum(communality + uniqueness))
    variance = pd.DataFrame({
        "factor": labels, "ss_loadings": ss, "proportion_var": ss / total,
        "cumulative_var": np.cumsum(ss / total), "proportion_explained": ss / ss.sum(),
        "cumulative_proportion": np.cumsum(ss / ss.sum())})
    fit = _fit_table(_fit_core(r, loadings, phi, n_obs, np_obs, confidence), n_obs, confidence)
    return FactorResult(
        loadings=pd.DataFrame(loadings, index=names, columns=labels),
        phi=None if phi is None else pd.DataFrame(phi, index=labels, columns=labels),
        structure=pd.DataFrame(structure, index=names, columns=labels),
        communalities=pd.DataFrame({"item": names, "communality": communality,
                                    "uniqueness": uniqueness, "complexity": complexity}),
        variance=variance, fit=fit, method=method, rotation=rotation, cor=cor, n_obs=n_obs)


def _resample_correlation(rows: np.ndarray, cor: str, correct: float) -> np.ndarray:
    """Correlation matrix of a bootstrap resample; a resample with a constant item fails."""
    seen = np.isfinite(rows)
    if np.any(np.where(seen, rows, -np.inf).max(0) <= np.where(seen, rows, np.inf).min(0)):
        raise DataError("an item is constant in the resample")
    return _correlation_core(rows, cor, correct)


def _efa_vector(loadings, communality, phi) -> np.ndarray:
    """Loadings (item by item), communalities and the lower triangle of Phi as one vector."""
    parts = [loadings.ravel(), communality]
    if phi is not None:
        parts.append(phi[np.tril_indices(phi.shape[0], -1)])
    return np.concatenate(parts)


def _efa_intervals(x, result: FactorResult, correct, n_boot, confidence, rng) -> pd.DataFrame:
    """Row-bootstrap percentile intervals of loadings, communalities and factor correlations."""
    target = result.loadings.to_numpy()
    phi = None if result.phi is None else result.phi.to_numpy()
    k = target.shape[1]

    def replicate(rows: np.ndarray) -> np.ndarray:
        r = _resample_correlation(rows, result.cor, correct)
        loadings, phi_b, communality, _ = _efa_solution(r, k, result.method, result.rotation)
        loadings, phi_b = align_factors(loadings, target, phi_b)
        return _efa_vector(loadings, communality, phi_b)

    estimate = _efa_vector(target, result.communalities["communality"].to_numpy(), phi)
    reps = bootstrap_rows(x, replicate, n_boot, rng, size=estimate.size, what="efa")
    se, low, high = summarise(reps, confidence)
    items, labels = list(result.loadings.index), list(result.loadings.columns)
    keys = [("loading", i, f, None) for i in items for f in labels]
    keys += [("communality", i, None, None) for i in items]
    if phi is not None:
        keys += [("factor_correlation", None, labels[a], labels[b])
                 for a, b in zip(*np.tril_indices(k, -1))]
    table = pd.DataFrame(keys, columns=["parameter", "item", "factor", "with_factor"])
    return table.assign(
        estimate=estimate, se=se, ci_low=low, ci_high=high, confidence=confidence,
        n_boot=n_boot, n_failed=reps.n_failed,
        method=f"percentile bootstrap over rows (B={n_boot}); replicate factors matched to "
               "the full-sample ones by Tucker congruence (order and sign)")


@reads_frame(wide="items", log=False)
def efa(
    data: pd.DataFrame,
    n_factors: int,
    items: Sequence[str] | None = None,
    *,
    method: Method = "minres",
    rotation: Rotation = "oblimin",
    cor: Correlation = "pearson",
    correct: float = 0.5,
    n_boot: int = 0,
    confidence: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> FactorResult:
    """Exploratory factor analysis with psych's fit indices (R ``psych::fa``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item; missing values are handled pairwise.
    n_factors : int
        Number of factors to extract.
    items : list of str, optional
        Item columns; default every numeric column.
    method : {"minres", "ml"}, default "minres"
        Minimum residual (psych's default) or maximum likelihood (as ``factanal``).
    rotation : {"oblimin", "varimax", "promax", "none"}, default "oblimin"
        psych's default is oblimin; PDSQI-9 used varimax.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        ``"polychoric"`` for ordinal rubric scores (psych ``fa(cor="poly")``).
    correct : float, default 0.5
        Continuity correction for polychoric correlations.
    n_boot : int, default 0
        Bootstrap resamples of the rows for intervals of the loadings, communalities and
        factor correlations (psych ``fa(n.iter=)``); 0 fits once, with no intervals.
    confidence : float, optional
        Level of every interval made. By default each keeps its convention: 0.95 for the
        bootstrap intervals, 0.90 for RMSEA (psych's ``p = .05`` and ``alpha = .1``; lavaan
        also prints 90% for RMSEA). A number sets both.
    random_state : int or Generator, optional
        Seed of the bootstrap.

    Returns
    -------
    FactorResult
        ``loadings``, ``phi``, ``structure``, ``communalities``, ``variance``, ``fit``,
        ``intervals`` (with ``n_boot``), ``tidy()`` and ``summary()``; see
        :class:`FactorResult`.

    Notes
    -----
    With p items, k factors, model correlation M = L Phi L' (unit diagonal) and n rows:
    objective F = tr(M^-1 R) - ln|M^-1 R| - p; likelihood chi-square
    F (n - 1 - (2p + 5)/6 - 2k/3) on df = p(p - 1)/2 - pk + k(k - 1)/2; null chi-square
    -ln|R| (n - 1 - (2p + 5)/6); TLI = (M0 - F/df) / (M0 - 1/(n - 1 - (2p+5)/6 - 2k/3)) with
    M0 = -2 ln|R| / (p(p - 1)); RMSEA = sqrt(max(F/df - 1/(n - 1), 0)) with bounds from the
    non-central chi-square; BIC = chi-square - df ln n. Residual statistics weight each
    off-diagonal residual by its pairwise n: empirical chi-square sum(res^2 n_ij), RMSR
    sqrt(chi_emp / (n_h p (p - 1))), df-corrected RMSR sqrt(chi_emp / (2 n_h df)) with n_h the
    harmonic mean pairwise n. These are psych's ``fa.stats`` formulas.

    Bootstrap: each replicate redraws n rows with replacement, recomputes the correlations
    and refits with the same extraction and rotation. A solution is identified only up to
    the order and signs of its factors, so each replicate's factors are matched one-to-one
    to the full-sample factors by the largest absolute Tucker congruence
    phi(a, b) = a'b / sqrt(a'a b'b) (Hungarian assignment) and reflected where phi < 0; the
    factor correlations are permuted and reflected with them. Intervals are the
    ``(1 - confidence)/2`` and ``(1 + confidence)/2`` percentiles of the matched replicates;
    ``se`` is their standard deviation. psych instead target-rotates each replicate
    (``target.rot``: an oblique least-squares fit of the replicate to the full-sample
    loadings) and reports mean +/- z SD. Matching removes only the indeterminacy the
    rotation leaves (order, sign), so every replicate stays a solution of the stated
    rotation criterion and the intervals describe that estimator; a target rotation replaces
    it by another one, fitted towards the full-sample answer. With a clear simple structure
    the two give nearly the same SEs (within 1% on a two-factor example); they part where
    factors are weak or nearly alike. Replicates that fail (a constant item in the resample,
    an extraction that does not converge) are counted in ``n_failed`` with a warning and
    left out of the percentiles; warnings inside replicates (Heywood cases, smoothing) are
    counted and reported once, and those replicates kept, as psych keeps them. An oblimin
    rotation that stops at its iteration limit is not detected (``factor_analyzer`` does
    not report it).

    References
    ----------
    .. [1] Revelle W. psych: Procedures for Psychological, Psychometric, and Personality
       Research. ``fa``, ``fa.stats``.
    .. [2] Tucker LR, Lewis C (1973). A reliability coefficient for maximum likelihood factor
       analysis. Psychometrika 38, 1-10.
    .. [3] Zientek LR, Thompson B (2007). Applying the bootstrap to the multivariate case:
       bootstrap component/factor analysis. Behav Res Methods 39, 318-325.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> f = rng.normal(size=(300, 2))
    >>> d = pd.DataFrame({f"i{j}": f[:, j // 3] + rng.normal(size=300) for j in range(6)})
    >>> res = efa(d, 2, rotation="varimax")
    >>> res.loadings.round(1).abs().max(axis=1).tolist()
    [0.7, 0.8, 0.7, 0.7, 0.7, 0.7]
    >>> round(res.fit_value("rmsea"), 3)
    0.0
    >>> boot = efa(d, 2, rotation="varimax", n_boot=50, random_state=1)
    >>> boot.tidy().head(2)[["item", "factor", "loading", "ci_low", "ci_high"]].round(2)
      item factor  loading  ci_low  ci_high
    0   i0    MR1     0.72    0.64     0.79
    1   i1    MR1     0.75    0.68     0.81
    """
    check_choice("method", method, METHODS)
    check_choice("rotation", rotation, ROTATIONS)
    check_choice("cor", cor, CORRELATIONS)
    check_n_boot(n_boot)
    if confidence is not None:
        check_confidence(confidence)
    x, names = _item_matrix(data, items)
    if not (isinstance(n_factors, (int, np.integer)) and 1 <= n_factors < len(names)):
        raise DataError(f"n_factors={n_factors!r} must be an integer from 1 to {len(names) - 1}")
    if int(n_factors) > max_identified_factors(len(names)):
        warnings.warn(f"{n_factors} factors of {len(names)} items leave negative degrees of "
                      "freedom: the model is not identified and its fit statistics are "
                      "undefined", stacklevel=2)
    r = _correlation_core(x, cor, correct)
    result = _efa_core(r, int(n_factors), method, rotation, x.shape[0], _pairwise_counts(x),
                       0.90 if confidence is None else confidence, names, cor)
    if not n_boot:
        return result
    intervals = _efa_intervals(x, result, correct, int(n_boot),
                               0.95 if confidence is None else confidence,
                               np.random.default_rng(random_state))
    return replace(result, intervals=intervals)


def max_identified_factors(n_items: int) -> int:
    """Most factors with non-negative model df: p(p - 1)/2 - pk + k(k - 1)/2 >= 0."""
    k = 0
    while k + 1 < n_items and (n_items * (n_items - 1) / 2 - n_items * (k + 1)
                               + (k + 1) * k / 2) >= 0:
        k += 1
    return k


# ----------------------------------------------------------------------------- retention


@reads_frame(wide="items", log=False)
def eigenvalues(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    cor: Correlation = "pearson",
) -> pd.DataFrame:
    """Eigenvalues of the item correlation matrix: the scree plot's data.

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        Correlation decomposed.

    Returns
    -------
    DataFrame
        ``factor`` (1..p), ``eigenvalue``, ``proportion`` (eigenvalue / p), ``cumulative``
        and ``kaiser`` (eigenvalue > 1).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> f = rng.normal(size=200)
    >>> d = pd.DataFrame({f"i{j}": f + rng.normal(size=200) for j in range(4)})
    >>> round(float(eigenvalues(d)["eigenvalue"].sum()), 6)
    4.0
    """
    check_choice("cor", cor, CORRELATIONS)
    x, _ = _item_matrix(data, items)
    values = np.linalg.eigvalsh(_correlation_core(x, cor, 0.5))[::-1]
    p = values.size
    return pd.DataFrame({"factor": np.arange(1, p + 1), "eigenvalue": values,
                         "proportion": values / p, "cumulative": np.cumsum(values) / p,
                         "kaiser": values > 1})


def _fa_values(r: np.ndarray) -> np.ndarray:
    """Eigenvalues of R with the one-factor minres communalities on the diagonal (psych)."""
    loadings = _extract(r, 1, "minres")
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
    n_iter : int
        Simulated data sets.
    """

    table: pd.DataFrame
    n_factors: int
    n_components: int
    n_iter: int

    def summary(self) -> str:
        return (f"Parallel analysis suggests that the number of factors = {self.n_factors} "
                f"and the number of components = {self.n_components}\n"
                + self.table.round(3).to_string(index=False))

    def __repr__(self) -> str:
        return self.summary()


@reads_frame(wide="items", log=False)
def parallel_analysis(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    n_iter: int = 20,
    quantile: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> ParallelResult:
    """Horn's parallel analysis for components and factors (psych ``fa.parallel``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
    n_iter : int, default 20
        Number of simulated normal data sets of the same size (psych's default).
    quantile : float, optional
        Compare with this quantile of the simulated eigenvalues (e.g. 0.95) instead of
        their mean.
    random_state : int or Generator, optional
        Seed for the simulation.

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

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> f = rng.normal(size=(300, 2))
    >>> d = pd.DataFrame({f"i{j}": f[:, j // 3] + rng.normal(size=300) for j in range(6)})
    >>> parallel_analysis(d, n_iter=5, random_state=1).n_factors
    2
    """
    x, _ = _item_matrix(data, items)
    if not (isinstance(n_iter, (int, np.integer)) and n_iter >= 1):
        raise DataError(f"n_iter={n_iter!r} must be a positive integer")
    if quantile is not None and not 0 < quantile < 1:
        raise DataError(f"quantile={quantile!r} must be strictly between 0 and 1")
    rng = np.random.default_rng(random_state)
    r = _correlation_core(x, "pearson", 0.5)
    n, p = x.shape
    sim_pc, sim_fa = np.empty((n_iter, p)), np.empty((n_iter, p))
    for i in range(n_iter):
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
                          count("observed_pc", "simulated_pc"), int(n_iter))


# ----------------------------------------------------------------------------- CFA


@dataclass(frozen=True)
class CFAResult:
    """Confirmatory factor analysis (ML), reported as ``lavaan::cfa`` summarises it.

    Attributes
    ----------
    estimates : DataFrame
        ``factor, item, estimate`` (first item of each factor fixed to 1, lavaan's default
        scaling), ``std_lv`` (factor variances 1) and ``std_all`` (fully standardised).
    factor_correlations : DataFrame
        Factor correlation matrix.
    residual_variances : DataFrame
        ``item, estimate, std_all``.
    fit : DataFrame
        ``index, estimate, ci_low, ci_high, df1, p_value, n, confidence``: chi-square,
        baseline chi-square, CFI, TLI, RMSEA (with interval), SRMR, log-likelihood, AIC, BIC.
    n_obs : int
        Complete rows used.
    """

    estimates: pd.DataFrame
    factor_correlations: pd.DataFrame
    residual_variances: pd.DataFrame
    fit: pd.DataFrame
    n_obs: int

    def fit_value(self, index: str) -> float:
        """One fit index by name (``"cfi"``, ``"rmsea"``, ...)."""
        row = self.fit.loc[self.fit["index"] == index, "estimate"]
        if row.empty:
            raise DataError(f"no fit index {index!r}; choose one of {list(self.fit['index'])}")
        return float(row.iloc[0])

    def summary(self, digits: int = 3) -> str:
        return "\n".join([
            f"Confirmatory factor analysis (ML), {self.n_obs} observations",
            self.fit.round(digits).to_string(index=False), "", "Loadings:",
            self.estimates.round(digits).to_string(index=False), "", "Factor correlations:",
            self.factor_correlations.round(digits).to_string()])

    def __repr__(self) -> str:
        return self.summary()


@reads_frame(mapping="model", log=False)
def cfa(
    data: pd.DataFrame,
    model: Mapping[str, Sequence[str]],
    *,
    confidence: float = 0.90,
) -> CFAResult:
    """Confirmatory factor analysis of a stated structure, with lavaan's fit indices.

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item; rows with a missing item are dropped
        (listwise, lavaan's default) with a warning.
    model : mapping of str to list of str
        Factor name -> its items, e.g. ``{"clarity": ["organized", "succinct"], ...}``.
        Factors are allowed to correlate; each item loads on the factors that list it.
    confidence : float, default 0.90
        Level of the RMSEA interval (0.90 is what lavaan prints).

    Returns
    -------
    CFAResult
        ``estimates``, ``factor_correlations``, ``residual_variances``, ``fit``, ``summary()``.

    Notes
    -----
    Maximum likelihood on the covariance matrix S (divisor n), fitted by ``factor_analyzer``.
    With q free parameters, p items and Sigma the implied covariance:
    F = ln|Sigma| + tr(S Sigma^-1) - ln|S| - p; chi-square = n F on p(p + 1)/2 - q df;
    baseline chi-square n (sum ln s_jj - ln|S|) on p(p - 1)/2 df;
    CFI = 1 - max(chi2 - df, 0) / max(chi2_b - df_b, chi2 - df, 0);
    TLI = (chi2_b/df_b - chi2/df) / (chi2_b/df_b - 1); RMSEA = sqrt(max(chi2/df - 1, 0)/n)
    with non-central chi-square bounds; SRMR = sqrt(mean over j <= i of
    ((s_ij - sigma_ij) / sqrt(s_ii s_jj))^2); AIC = -2 logL + 2q, BIC = -2 logL + q ln n.
    These are lavaan's defaults (``estimator = "ML"``, ``likelihood = "normal"``).

    References
    ----------
    .. [1] Rosseel Y (2012). lavaan: An R package for structural equation modeling.
       J Stat Softw 48(2), 1-36.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> f = rng.normal(size=(300, 2))
    >>> d = pd.DataFrame({f"i{j}": f[:, j // 3] + rng.normal(size=300) for j in range(6)})
    >>> res = cfa(d, {"A": ["i0", "i1", "i2"], "B": ["i3", "i4", "i5"]})
    >>> int(res.fit.set_index("index").loc["chi_square", "df1"])
    8
    """
    check_confidence(confidence)
    if not isinstance(model, Mapping) or not model:
        raise DataError("model must be a non-empty mapping of factor name -> list of items")
    factors = list(model)
    items = list(dict.fromkeys(item for f in factors for item in model[f]))
    for f in factors:
        if len(model[f]) < 1 or isinstance(model[f], str):
            raise DataError(f"model[{f!r}] must be a list of item names, got {model[f]!r}")
    x, names = _item_matrix(data, items)
    complete = np.all(np.isfinite(x), axis=1)
    if not complete.all():
        warnings.warn(f"cfa: {int((~complete).sum())} rows with missing items dropped "
                      "(listwise)", stacklevel=2)
        x = x[complete]
    n, p = x.shape
    pattern = np.array([[1.0 if item in model[f] else 0.0 for f in factors] for item in names])
    from factor_analyzer.confirmatory_factor_analyzer import (
        ConfirmatoryFactorAnalyzer,
        ModelSpecification,
    )

    spec = ModelSpecification(loadings=pattern, n_variables=p, n_factors=len(factors),
                              factor_names=factors, variable_names=names)
    fitted = ConfirmatoryFactorAnalyzer(spec, disp=False, n_obs=n)
    # factor_analyzer only provides starting values here; its own convergence notice is
    # replaced by the verdict of the exact-gradient fit in _polish_cfa
    with _quiet_dependency_notices():
        warnings.filterwarnings("ignore", message="The optimization routine failed to converge",
                                category=UserWarning)
        fitted.fit(x)
    s = np.cov(x, rowvar=False, ddof=0)
    lam, phi, errors = _polish_cfa(
        s, pattern, np.asarray(fitted.loadings_, dtype=float),
        np.asarray(fitted.factor_varcovs_, dtype=float),
        np.asarray(fitted.error_vars_, dtype=float).ravel())
    # a factor's sign is arbitrary: orient each so that its first (marker) item loads positively
    signs = np.array([1.0 if lam[names.index(model[f][0]), j] >= 0 else -1.0
                      for j, f in enumerate(factors)])
    lam, phi = lam * signs, phi * np.outer(signs, signs)
    sigma = lam @ phi @ lam.T + np.diag(errors)
    q = int(pattern.sum()) + p + len(factors) * (len(factors) - 1) // 2
    fit = _cfa_fit(s, sigma, n, q, confidence)
    sd = np.sqrt(np.diag(sigma))
    rows = []
    for j, f in enumerate(factors):
        marker = lam[names.index(model[f][0]), j]
        for item in model[f]:
            i = names.index(item)
            rows.append((f, item, lam[i, j] / marker, lam[i, j], lam[i, j] / sd[i]))
    estimates = pd.DataFrame(rows, columns=["factor", "item", "estimate", "std_lv", "std_all"])
    return CFAResult(
        estimates=estimates,
        factor_correlations=pd.DataFrame(phi, index=factors, columns=factors),
        residual_variances=pd.DataFrame({"item": names, "estimate": errors,
                                         "std_all": errors / sd**2}),
        fit=fit, n_obs=n)


def _polish_cfa(s, pattern, lam, phi, errors):
    """Finish factor_analyzer's ML fit with an exact gradient, so estimates agree to ~1e-6.

    factor_analyzer stops L-BFGS-B on numerical gradients near the optimum (HS1939: a
    marker-scaled loading of 0.5535 where lavaan reaches 0.5540); BFGS from there with the
    analytic gradient of F = ln|Sigma| + tr(S Sigma^-1) converges fully.
    """
    free = pattern.astype(bool)
    k = phi.shape[0]
    low = np.tril_indices(k, -1)

    def unpack(theta):
        lam_ = np.zeros_like(pattern)
        lam_[free] = theta[: free.sum()]
        phi_ = np.eye(k)
        phi_[low] = phi_[low[::-1]] = theta[free.sum(): free.sum() + low[0].size]
        return lam_, phi_, theta[free.sum() + low[0].size:]

    def loss(theta):
        lam_, phi_, err = unpack(theta)
        sigma = lam_ @ phi_ @ lam_.T + np.diag(err)
        sign, logdet = np.linalg.slogdet(sigma)
        if sign <= 0 or np.any(err <= 0):
            return np.inf, np.zeros_like(theta)
        inv = np.linalg.inv(sigma)
        g = inv - inv @ s @ inv
        grad = np.concatenate([(2 * g @ lam_ @ phi_)[free], 2 * (lam_.T @ g @ lam_)[low],
                               np.diag(g)])
        return logdet + np.trace(s @ inv), grad

    start = np.concatenate([lam[free], phi[low], errors])
    res = optimize.minimize(loss, start, jac=True, method="BFGS", options={"gtol": 1e-9})
    if not res.success and np.max(np.abs(res.jac)) > 1e-6:
        warnings.warn(f"cfa: maximum likelihood did not converge ({res.message})", stacklevel=3)
    return unpack(res.x)


def _cfa_fit(s, sigma, n, q, confidence) -> pd.DataFrame:
    p = s.shape[0]
    inv = np.linalg.inv(sigma)
    logdet_sigma = np.linalg.slogdet(sigma)[1]
    logdet_s = np.linalg.slogdet(s)[1]
    f_ml = logdet_sigma + np.trace(s @ inv) - logdet_s - p
    chisq = n * f_ml
    df = p * (p + 1) // 2 - q
    base = n * (np.sum(np.log(np.diag(s))) - logdet_s)
    base_df = p * (p - 1) // 2
    cfi = 1 - max(chisq - df, 0) / max(base - base_df, chisq - df, 0)
    tli = (base / base_df - chisq / df) / (base / base_df - 1)
    rmsea = np.sqrt(max(chisq / df - 1, 0) / n)
    low, high = _rmsea_interval(chisq, df, n, confidence)
    d = np.sqrt(np.diag(s))
    resid = (s - sigma) / np.outer(d, d)
    srmr = np.sqrt(np.mean(resid[np.tril_indices(p)] ** 2))
    loglik = -n / 2 * (p * np.log(2 * np.pi) + logdet_sigma + np.trace(s @ inv))
    nan = np.nan
    rows = [
        ("chi_square", chisq, nan, nan, df, stats.chi2.sf(chisq, df)),
        ("baseline_chi_square", base, nan, nan, base_df, stats.chi2.sf(base, base_df)),
        ("cfi", cfi, nan, nan, df, nan), ("tli", tli, nan, nan, df, nan),
        ("rmsea", rmsea, np.sqrt(low / (n * df)), np.sqrt(high / (n * df)), df, nan),
        ("srmr", srmr, nan, nan, nan, nan), ("loglik", loglik, nan, nan, nan, nan),
        ("aic", -2 * loglik + 2 * q, nan, nan, nan, nan),
        ("bic", -2 * loglik + q * np.log(n), nan, nan, nan, nan),
    ]
    table = pd.DataFrame(rows, columns=["index", "estimate", "ci_low", "ci_high", "df1",
                                        "p_value"])
    table["n"] = n
    table["confidence"] = np.where(table["index"] == "rmsea", confidence, np.nan)
    return table


# ----------------------------------------------------------------------------- omega, alpha


def _standardized_alpha(r: np.ndarray) -> float:
    """Alpha of standardised items from a correlation matrix: k/(k-1) (1 - k / sum(R))."""
    k = r.shape[0]
    return float(k / (k - 1) * (1 - np.trace(r) / r.sum()))


def _row_intervals(x, statistic, size, n_boot, confidence, random_state, what):
    """``ci_low, ci_high, ci_method, n_failed`` of statistics of row resamples (NaN if off)."""
    if not n_boot:
        return np.full(size, np.nan), np.full(size, np.nan), "none (n_boot=0)", 0
    reps = bootstrap_rows(x, statistic, int(n_boot), np.random.default_rng(random_state),
                          size=size, what=what)
    _, low, high = summarise(reps, confidence)
    return (low, high, f"percentile bootstrap over rows (B={n_boot}, {reps.n_failed} failed)",
            reps.n_failed)


@reads_frame(wide="items", log=False)
def ordinal_alpha(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    correct: float = 0.5,
    n_boot: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Ordinal alpha: coefficient alpha on the polychoric correlation matrix.

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per ordinal item.
    items : list of str, optional
        Item columns; default every numeric column.
    correct : float, default 0.5
        Continuity correction of the polychoric correlations.
    n_boot : int, default 0
        Bootstrap resamples of the rows for a percentile interval; 0 gives none.
    confidence : float, default 0.95
        Level of the interval.
    random_state : int or Generator, optional
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
        One row: ``estimate``, ``ci_low``, ``ci_high`` (NaN without bootstrap), ``n`` (rows),
        ``n_items``, ``method``, ``ci_method`` and ``n_failed`` (bootstrap replicates that
        failed, e.g. an item constant in the resample, and were left out, with a warning).

    Notes
    -----
    alpha_ord = k / (k - 1) (1 - k / sum_ij rho_ij), with rho the polychoric matrix
    (Zumbo, Gadermann & Zeisser 2007). It estimates the reliability of the latent continuous
    responses, not of the observed sum score; report Cronbach's alpha for the latter. The
    bootstrap resamples rows and recomputes the polychoric matrix (thresholds included) in
    each replicate.

    References
    ----------
    .. [1] Zumbo BD, Gadermann AM, Zeisser C (2007). Ordinal versions of coefficients alpha
       and theta for Likert rating scales. J Mod Appl Stat Methods 6(1), 21-29.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 1, 2], "b": [1, 2, 2, 3, 3, 3, 1, 1],
    ...                   "c": [2, 1, 2, 3, 3, 2, 1, 2]})
    >>> round(float(ordinal_alpha(d)["estimate"].iloc[0]), 3)
    0.697
    """
    check_n_boot(n_boot)
    check_confidence(confidence)
    x, names = _item_matrix(data, items)

    def alpha_of(rows: np.ndarray) -> np.ndarray:
        return np.array([_standardized_alpha(_resample_correlation(rows, "polychoric",
                                                                   correct))])

    low, high, ci_method, failed = _row_intervals(x, alpha_of, 1, n_boot, confidence,
                                                  random_state, "ordinal_alpha")
    estimate = _standardized_alpha(_correlation_core(x, "polychoric", correct))
    return pd.DataFrame({"estimate": [estimate], "ci_low": low, "ci_high": high,
                         "n": [x.shape[0]], "n_items": [len(names)],
                         "method": ["ordinal alpha (polychoric; Zumbo et al. 2007)"],
                         "ci_method": [ci_method], "n_failed": [failed]})


@dataclass(frozen=True)
class OmegaResult:
    """McDonald's omega from a Schmid-Leiman solution (R ``psych::omega``).

    Attributes
    ----------
    estimates : DataFrame
        ``measure`` (``omega_hierarchical``, ``omega_total``, ``alpha_standardized``),
        ``estimate``, ``ci_low``, ``ci_high`` (NaN without bootstrap), ``n``, ``method``,
        ``ci_method``, ``n_failed``.
    loadings : DataFrame
        Schmid-Leiman loadings: ``g``, one column per group factor, ``h2``, ``u2``.
    """

    estimates: pd.DataFrame
    loadings: pd.DataFrame

    def summary(self, digits: int = 2) -> str:
        e = self.estimates.set_index("measure")

        def line(label: str, measure: str) -> str:
            row = e.loc[measure]
            ci = ("" if np.isnan(row["ci_low"])
                  else f"  [{row['ci_low']:.{digits}f}, {row['ci_high']:.{digits}f}]")
            return f"{label:<22}{row['estimate']:.{digits}f}{ci}"

        return "\n".join([
            line("Alpha:", "alpha_standardized"), line("Omega Hierarchical:", "omega_hierarchical"),
            line("Omega Total", "omega_total"), "",
            "Schmid Leiman Factor loadings", self.loadings.round(digits).to_string()])

    def __repr__(self) -> str:
        return self.summary()


def _schmid_leiman(r: np.ndarray, n_factors: int, method: str) -> np.ndarray:
    """g and group loadings (items x (1 + k)) from an oblimin solution (psych ``schmid``)."""
    loadings, phi = _rotate(_extract(r, n_factors, method), "oblimin")
    loadings, phi, _ = _order(loadings, phi, "F")
    if n_factors == 2:  # psych: two factors load equally on g
        g = np.full(2, np.sqrt(abs(phi[0, 1])))
    else:
        g = _extract(phi, 1, method).ravel()
        g = g if g.sum() >= 0 else -g
    return np.column_stack([loadings @ g, loadings * np.sqrt(1 - g**2)])


@reads_frame(wide="items", log=False)
def omega_hierarchical(
    data: pd.DataFrame,
    items: Sequence[str] | None = None,
    *,
    n_factors: int = 3,
    method: Method = "minres",
    cor: Correlation = "pearson",
    correct: float = 0.5,
    n_boot: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> OmegaResult:
    """McDonald's omega total and hierarchical (R ``psych::omega``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item.
    items : list of str, optional
        Item columns; default every numeric column.
    n_factors : int, default 3
        Group factors of the Schmid-Leiman solution (psych's default is 3; at least 2).
    method : {"minres", "ml"}, default "minres"
        Extraction used for the group factors and for g.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        ``"polychoric"`` gives ordinal omega.
    correct : float, default 0.5
        Continuity correction for polychoric correlations.
    n_boot : int, default 0
        Bootstrap resamples of the rows for percentile intervals of the three coefficients;
        0 gives none.
    confidence : float, default 0.95
        Level of the intervals.
    random_state : int or Generator, optional
        Seed of the bootstrap.

    Returns
    -------
    OmegaResult
        ``estimates`` (tidy, with ``ci_low``, ``ci_high``, ``ci_method``, ``n_failed``) and
        Schmid-Leiman ``loadings``.

    Notes
    -----
    Oblimin factors L with correlations Phi; g loadings of the factors from a one-factor
    solution of Phi (for two factors sqrt(phi_12) each); item g loadings c = L g, group
    loadings A = L diag(sqrt(1 - g^2)); u2 = 1 - c^2 - rowsum(A^2). With V = sum of all
    elements of R: omega_h = (sum c)^2 / V and omega_t = 1 - sum(u2) / V. The bootstrap
    redoes all of it (correlations, extraction, rotation, g) on each row resample; the
    coefficients do not depend on the order or signs of the factors, so no alignment is
    needed. Failed replicates are counted in ``n_failed`` (with a warning) and left out.

    References
    ----------
    .. [1] McDonald RP (1999). Test Theory: A Unified Treatment. Erlbaum.
    .. [2] Zinbarg RE, Revelle W, Yovel I, Li W (2005). Cronbach's alpha, Revelle's beta and
       McDonald's omega_H. Psychometrika 70, 123-133.
    .. [3] Schmid J, Leiman JM (1957). The development of hierarchical factor solutions.
       Psychometrika 22, 53-61.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(3)
    >>> g = rng.normal(size=(500, 1)); f = rng.normal(size=(500, 3))
    >>> d = pd.DataFrame({f"i{j}": g[:, 0] + f[:, j // 3] + rng.normal(size=500)
    ...                   for j in range(9)})
    >>> omega_hierarchical(d).estimates[["measure", "estimate"]].round(2)
                  measure  estimate
    0  omega_hierarchical      0.69
    1         omega_total      0.92
    2  alpha_standardized      0.87
    """
    check_choice("method", method, METHODS)
    check_choice("cor", cor, CORRELATIONS)
    check_n_boot(n_boot)
    check_confidence(confidence)
    x, names = _item_matrix(data, items)
    if not (isinstance(n_factors, (int, np.integer)) and 2 <= n_factors < len(names)):
        raise DataError(f"n_factors={n_factors!r} must be an integer from 2 to {len(names) - 1}")
    k = int(n_factors)
    sl, values = _omega_core(_correlation_core(x, cor, correct), k, method)
    low, high, ci_method, failed = _row_intervals(
        x, lambda rows: _omega_core(_resample_correlation(rows, cor, correct), k, method)[1],
        values.size, n_boot, confidence, random_state, "omega_hierarchical")
    h2 = (sl**2).sum(1)
    loadings = pd.DataFrame(sl, index=names, columns=["g", *[f"F{i + 1}" for i in range(k)]])
    loadings["h2"], loadings["u2"] = h2, 1 - h2
    estimates = pd.DataFrame({
        "measure": ["omega_hierarchical", "omega_total", "alpha_standardized"],
        "estimate": values, "ci_low": low, "ci_high": high, "n": x.shape[0],
        "method": f"Schmid-Leiman ({method}, oblimin, {k} group factors, {cor})",
        "ci_method": ci_method, "n_failed": failed})
    return OmegaResult(estimates, loadings)


def _omega_core(r: np.ndarray, n_factors: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Schmid-Leiman loadings and (omega_h, omega_t, standardized alpha) of a correlation."""
    sl = _schmid_leiman(r, n_factors, method)
    total = r.sum()
    u2 = 1 - (sl**2).sum(1)
    return sl, np.array([sl[:, 0].sum() ** 2 / total, 1 - u2.sum() / total,
                         _standardized_alpha(r)])
