"""Exploratory factor analysis as ``psych::fa`` reports it, with bootstrap intervals.

Extraction (minres, ML) and rotations run on ``factor_analyzer``; hce adds the psych
conventions (sign and order of factors, oblique sums of squares), every fit statistic of
``psych::fa`` and row-bootstrap percentile intervals of the loadings, communalities and
factor correlations (``psych::fa(n.iter=)``; the resampling lives in
:mod:`hce.stats.factor.bootstrap`). :func:`extract`, :func:`rotate` and
:func:`schmid_leiman` are shared with parallel analysis, CFA and omega.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, stats

from hce._checks import check_choice, check_confidence
from hce.errors import DataError
from hce.stats._resample import Bootstrap, as_generator, check_n_boot
from hce.stats._validate import statistic
from hce.stats.factor.bootstrap import align_factors, bootstrap_rows, summarise
from hce.stats.factor.correlation import (
    CORRELATIONS,
    Correlation,
    correlation_core,
    item_matrix,
    pairwise_counts,
    resample_correlation,
    smooth,
)

Method = Literal["minres", "ml"]
Rotation = Literal["oblimin", "varimax", "promax", "none"]

METHODS = ("minres", "ml")
ROTATIONS = ("oblimin", "varimax", "promax", "none")
_PREFIX = {"minres": "MR", "ml": "ML"}

__all__ = ["FactorResult", "Method", "Rotation", "efa", "efa_intervals", "max_identified_factors"]


# ----------------------------------------------------------------------------- extraction


@contextmanager
def quiet_dependency_notices():
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


def extract(r: np.ndarray, n_factors: int, method: str) -> np.ndarray:
    """Unrotated loadings by minres or ML (factor_analyzer; psych's bounds and SMC start)."""
    # factor_analyzer (and scikit-learn behind it) is imported when used, not with hce.stats
    from factor_analyzer import FactorAnalyzer

    fa = FactorAnalyzer(n_factors=n_factors, rotation=None, method=method,
                        is_corr_matrix=True, bounds=(0.005, 1))
    with quiet_dependency_notices():
        fa.fit(r)
    return np.asarray(fa.loadings_, dtype=float).reshape(r.shape[0], n_factors)


def rotate(loadings: np.ndarray, rotation: str) -> tuple[np.ndarray, np.ndarray | None]:
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


def rmsea_interval(chisq: float, df: int, n_obs: float, confidence: float):
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
    m_inv_r = np.linalg.solve(smooth(m), smooth(r))
    objective = float(np.trace(m_inv_r) - np.linalg.slogdet(m_inv_r)[1] - p)
    null_objective = float(-np.linalg.slogdet(smooth(r))[1])
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
        low, high = rmsea_interval(chisq, dof, n_obs, confidence)
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
    unrotated = extract(r, n_factors, method)
    communality = (unrotated**2).sum(1)
    if communality.max() > 1:
        warnings.warn("an ultra-Heywood case was detected (a communality above 1); "
                      "examine the results carefully", stacklevel=4)
    rotated, phi = rotate(unrotated, rotation)
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


def _efa_vector(loadings, communality, phi) -> np.ndarray:
    """Loadings (item by item), communalities and the lower triangle of Phi as one vector."""
    parts = [loadings.ravel(), communality]
    if phi is not None:
        parts.append(phi[np.tril_indices(phi.shape[0], -1)])
    return np.concatenate(parts)


def _interval_table(x, result: FactorResult, correct, n_boot, confidence, rng) -> pd.DataFrame:
    """Row-bootstrap percentile intervals of loadings, communalities and factor correlations."""
    target = result.loadings.to_numpy()
    phi = None if result.phi is None else result.phi.to_numpy()
    k = target.shape[1]

    def replicate(rows: np.ndarray) -> np.ndarray:
        r = resample_correlation(rows, result.cor, correct)
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


@statistic(wide="columns", log=False, retired={"items": "columns"})
def efa(
    data: pd.DataFrame,
    *,
    n_factors: int,
    columns: Sequence[str] | None = None,
    method: Method = "minres",
    rotation: Rotation = "oblimin",
    cor: Correlation = "pearson",
    correct: float = 0.5,
    boot: Bootstrap = Bootstrap(confidence=None, n_boot=0),
) -> FactorResult:
    """Exploratory factor analysis with psych's fit indices (R ``psych::fa``).

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per item; missing values are handled pairwise.
    n_factors : int
        Number of factors to extract.
    columns : list of str, optional
        Item columns; default every numeric column.
    method : {"minres", "ml"}, default "minres"
        Minimum residual (psych's default) or maximum likelihood (as ``factanal``).
    rotation : {"oblimin", "varimax", "promax", "none"}, default "oblimin"
        psych's default is oblimin; PDSQI-9 used varimax.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        ``"polychoric"`` for ordinal rubric scores (psych ``fa(cor="poly")``).
    correct : float, default 0.5
        Continuity correction for polychoric correlations.
    %(confidence)s
        None (the default): each interval keeps its convention: 0.95 for the
        bootstrap intervals, 0.90 for RMSEA (psych's ``p = .05`` and ``alpha = .1``;
        lavaan also prints 90% for RMSEA). A number sets both.
    %(n_boot)s
        Here: resamples of the rows for intervals of the loadings, communalities and
        factor correlations (psych ``fa(n.iter=)``); 0 fits once, with no intervals.
    %(random_state)s

    Returns
    -------
    FactorResult
        ``loadings``, ``phi``, ``structure``, ``communalities``, ``variance``, ``fit``,
        ``intervals`` (with ``n_boot``), ``tidy()`` and ``summary()``; see
        :class:`~hce.stats.factor.FactorResult`.

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

    %(two_factor_example)s
    >>> res = efa(d, n_factors=2, rotation="varimax")
    >>> res.loadings.round(1).abs().max(axis=1).tolist()
    [0.7, 0.8, 0.7, 0.7, 0.7, 0.7]
    >>> round(res.fit_value("rmsea"), 3)
    0.0
    >>> boot = efa(d, n_factors=2, rotation="varimax", n_boot=50, random_state=1)
    >>> boot.tidy().head(2)[["item", "factor", "loading", "ci_low", "ci_high"]].round(2)
      item factor  loading  ci_low  ci_high
    0   i0    MR1     0.72    0.64     0.79
    1   i1    MR1     0.75    0.68     0.81
    """
    confidence, n_boot, random_state = boot
    check_choice("method", method, METHODS)
    check_choice("rotation", rotation, ROTATIONS)
    check_choice("cor", cor, CORRELATIONS)
    check_n_boot(n_boot)
    if confidence is not None:
        check_confidence(confidence)
    x, names = item_matrix(data, columns)
    if not (isinstance(n_factors, (int, np.integer)) and 1 <= n_factors < len(names)):
        raise DataError(f"n_factors={n_factors!r} must be an integer from 1 to {len(names) - 1}")
    if int(n_factors) > max_identified_factors(len(names)):
        warnings.warn(f"{n_factors} factors of {len(names)} items leave negative degrees of "
                      "freedom: the model is not identified and its fit statistics are "
                      "undefined", stacklevel=2)
    r = correlation_core(x, cor, correct)
    result = _efa_core(r, int(n_factors), method, rotation, x.shape[0], pairwise_counts(x),
                       0.90 if confidence is None else confidence, names, cor)
    if not n_boot:
        return result
    intervals = _interval_table(x, result, correct, int(n_boot),
                                0.95 if confidence is None else confidence,
                                as_generator(random_state))
    return replace(result, intervals=intervals)


@statistic(wide="items", log=False)
def efa_intervals(
    data: pd.DataFrame,
    result: FactorResult,
    items: Sequence[str] | None = None,
    *,
    n_boot: int,
    confidence: float = 0.95,
    correct: float = 0.5,
    random_state: int | np.random.Generator | None = None,
) -> FactorResult:
    """Add row-bootstrap intervals to an EFA already fitted, without refitting it.

    ``efa(..., n_boot=)`` does the same in one call, with one ``confidence`` for the
    bootstrap and the RMSEA intervals; this keeps the fitted result (and its RMSEA interval)
    as it is and sets the bootstrap level on its own.

    Parameters
    ----------
    data : DataFrame
        The data ``result`` was fitted to.
    result : FactorResult
        The fitted EFA, from :func:`~hce.stats.efa`.
    items : list of str, optional
        Item columns; default every numeric column. They must be the items of ``result``.
    n_boot : int
        Bootstrap resamples of the rows (at least 1).
    confidence : float, default 0.95
        Level of the bootstrap intervals.
    correct : float, default 0.5
        Continuity correction, when ``result`` was fitted on polychoric correlations.
    random_state : int or Generator, optional
        Seed of the bootstrap.

    Returns
    -------
    FactorResult
        ``result`` with ``intervals`` filled (see :class:`~hce.stats.factor.FactorResult`); the resampling is
        described under :func:`~hce.stats.efa`.

    %(two_factor_example)s
    >>> fitted = efa(d, n_factors=2, rotation="varimax")
    >>> boot = efa_intervals(d, fitted, n_boot=50, random_state=1)
    >>> boot.intervals.equals(efa(d, n_factors=2, rotation="varimax", n_boot=50, random_state=1).intervals)
    True
    """
    check_n_boot(n_boot)
    if n_boot < 1:
        raise DataError(f"n_boot={n_boot!r} must be at least 1 to make intervals")
    check_confidence(confidence)
    x, names = item_matrix(data, items)
    if names != list(result.loadings.index):
        raise DataError(f"items {names} are not the items {list(result.loadings.index)} the "
                        "EFA was fitted to")
    intervals = _interval_table(x, result, correct, int(n_boot), confidence,
                                as_generator(random_state))
    return replace(result, intervals=intervals)


def max_identified_factors(n_items: int) -> int:
    """Most factors with non-negative model df: p(p - 1)/2 - pk + k(k - 1)/2 >= 0."""
    k = 0
    while k + 1 < n_items and (n_items * (n_items - 1) / 2 - n_items * (k + 1)
                               + (k + 1) * k / 2) >= 0:
        k += 1
    return k


def schmid_leiman(r: np.ndarray, n_factors: int, method: str) -> np.ndarray:
    """g and group loadings (items x (1 + k)) from an oblimin solution (psych ``schmid``)."""
    loadings, phi = rotate(extract(r, n_factors, method), "oblimin")
    loadings, phi, _ = _order(loadings, phi, "F")
    if n_factors == 2:  # psych: two factors load equally on g
        g = np.full(2, np.sqrt(abs(phi[0, 1])))
    else:
        g = extract(phi, 1, method).ravel()
        g = g if g.sum() >= 0 else -g
    return np.column_stack([loadings @ g, loadings * np.sqrt(1 - g**2)])

