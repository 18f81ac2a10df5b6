"""Internal consistency of a multi-item scale: alpha and omega, each computed once here.

Cronbach's alpha and McDonald's omega (one-factor) read long ratings, as the rest of
:mod:`hce.stats.reliability`; ordinal alpha and omega hierarchical (Schmid-Leiman, as
``psych::omega``) read an observations x items frame, as :mod:`hce.stats.factor`, whose
correlations and factor solutions they use. Every alpha goes through
:func:`alpha_from_matrix` and every omega's general-factor share through
:func:`general_share`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, stats

from hce._checks import check_choice, check_confidence, plain
from hce.errors import DataError
from hce.stats._resample import Bootstrap, as_generator, check_n_boot, percentile_interval, resample_rows
from hce.stats._validate import statistic
from hce.stats.factor.bootstrap import row_intervals
from hce.stats.factor.correlation import (
    CORRELATIONS,
    Correlation,
    correlation_core,
    item_matrix,
    resample_correlation,
)
from hce.stats.factor.exploratory import METHODS, Method, schmid_leiman
from hce.stats.reliability._common import COUNT_COLUMNS, Ratings, counts, long_ratings, scale_layout

NanPolicy = Literal["pairwise", "listwise"]

COLUMNS = [
    "metric", "estimate", "ci_low", "ci_high", "df1", "df2", "method", "ci_method",
    *COUNT_COLUMNS,
]  # fmt: skip


def _wide(
    data: pd.DataFrame, targets: str, items: str, ratings: str, nan_policy: NanPolicy
) -> tuple[Ratings, np.ndarray, int]:
    """Targets x items matrix (NaN where absent), listwise-reduced if asked; rows dropped."""
    check_choice("nan_policy", nan_policy, ["pairwise", "listwise"])
    r = long_ratings(data, targets, items, ratings)
    if r.n_raters < 2 or r.n_targets < 2:
        raise DataError(
            f"need at least 2 items ({items!r}) and 2 targets ({targets!r}); "
            f"got {r.n_raters} and {r.n_targets}"
        )
    if r.n_raters > r.n_targets:
        # The roles read backwards give a number, not an error (0.988 for a scale whose
        # alpha is 0.827): a scale has fewer items than it has respondents, so more
        # "items" than "respondents" is the swapped reading.
        raise DataError(
            f"rater={items!r} has {r.n_raters} levels and item={targets!r} {r.n_targets}: a scale has fewer "
            f"items than respondents, so these look swapped. item= names what is measured (the "
            f"respondents, rated responses: the rows of the matrix), rater= the scale items (its "
            f"columns): call with item={items!r}, rater={targets!r}"
        )
    y = r.wide()
    complete = ~np.isnan(y).any(axis=1)
    if nan_policy == "listwise" and not complete.all():
        y = y[complete]
        if len(y) < 2:
            raise DataError("fewer than 2 targets have every item; use nan_policy='pairwise'")
    return r, y, int(np.isfinite(y).sum())


def _covariance(y: np.ndarray, items: pd.Index) -> np.ndarray:
    """Item covariance matrix, pairwise-complete where ratings are missing (as pandas).

    Two items rated together on fewer than two targets have no covariance: refused by
    name rather than returned as a NaN coefficient.
    """
    if not np.isnan(y).any():
        return np.cov(y, rowvar=False)
    c = pd.DataFrame(y).cov().to_numpy()
    if np.isnan(c).any():
        i, j = np.argwhere(np.isnan(c))[0]
        raise DataError(
            f"items {plain(items[i])!r} and {plain(items[j])!r} are rated together on fewer than "
            "2 targets, so their covariance is undefined; drop the sparse item or use "
            "nan_policy='listwise'"
        )
    return c


def alpha_from_matrix(c: np.ndarray) -> float:
    """Coefficient alpha of a k x k item covariance matrix: k / (k - 1) (1 - tr(C) / 1'C1).

    On a correlation matrix it is the standardised alpha (``psych::alpha``'s ``std.alpha``);
    on a polychoric one, ordinal alpha.
    """
    k = c.shape[0]
    return float(k / (k - 1) * (1 - np.trace(c) / c.sum()))


def general_share(general: np.ndarray, total: float) -> float:
    """Omega's numerator over a total-score variance: (sum of general loadings)^2 / total.

    McDonald's one-factor omega takes the model-implied total (Sum lambda)^2 + Sum psi;
    ``psych::omega`` takes the observed one, the sum of the correlation matrix.
    """
    return float(general.sum() ** 2 / total)


@statistic(
    keys=("item", "rater"), numbers=("score",), varying=("score",), wide="columns",
    retired={"targets": "item", "items": "rater", "ratings": "score"},
)
def cronbach_alpha(
    data: pd.DataFrame,
    *,
    item: str | None = None,
    rater: str | None = None,
    score: str | None = None,
    columns: Sequence[str] | None = None,
    nan_policy: NanPolicy = "pairwise",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Cronbach's alpha with the Feldt confidence interval.

    Parameters
    ----------
    data : DataFrame
        Long (one row per score, as every reliability statistic takes it) or wide (one row
        per respondent, one column per scale item, as pingouin's ``cronbach_alpha`` and
        ``psych::alpha`` take it).
    item, rater, score : str, optional
        Long layout, all three: the column naming what is measured (a respondent, a rated
        response: the matrix's rows), the column naming the scale's items (rubric criteria,
        questions: its columns) and the score. Default None: wide layout.
    columns : list of str, optional
        Wide layout: the scale-item columns. Default None: every column (but ``error_flag``)
        when ``item``, ``rater`` and ``score`` are not given.
    nan_policy : {"pairwise", "listwise"}, default "pairwise"
        Missing scores: pairwise-complete covariances (``psych::alpha(use="pairwise")``)
        or drop every target lacking an item (``use="complete.obs"``).
    %(confidence)s
        Here: the Feldt interval.

    Returns
    -------
    DataFrame
        One row: ``metric`` ("Cronbach's alpha"), ``estimate``, ``ci_low``, ``ci_high``,
        ``df1``, ``df2`` (of the Feldt F), ``method``, ``ci_method``, ``n_items``,
        ``n_raters`` (the number of items), ``n_scores`` (scores used) and ``n_dropped``.

    Notes
    -----
    alpha = k / (k - 1) (1 - tr(C) / 1'C1) for the k x k item covariance matrix C. Feldt
    interval: [1 - (1 - alpha) F(1 - a/2), 1 - (1 - alpha) F(a/2)] with F quantiles on
    (n - 1, (n - 1)(k - 1)) df, a = 1 - confidence, n targets (all targets under pairwise
    deletion, as pingouin does).

    References
    ----------
    .. [1] Cronbach, L. J. (1951). Coefficient alpha and the internal structure of tests.
       Psychometrika, 16(3), 297-334.
    .. [2] Feldt, L. S., Woodruff, D. J., & Salih, F. A. (1987). Statistical inference for
       coefficient alpha. Applied Psychological Measurement, 11(1), 93-103.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import cronbach_alpha
    >>> d = pd.DataFrame({"resp": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5],
    ...                   "item": ["q1", "q2", "q3"] * 5,
    ...                   "score": [4, 5, 4, 2, 3, 2, 5, 5, 4, 1, 2, 2, 3, 3, 4]})
    >>> cronbach_alpha(d, item="resp", rater="item", score="score")[["estimate", "ci_low", "ci_high"]].round(3)
       estimate  ci_low  ci_high
    0     0.939   0.691    0.993
    """
    check_confidence(confidence)
    data, item, rater, score = scale_layout(data, item, rater, score, columns, "cronbach_alpha")
    r, y, n_used = _wide(data, item, rater, score, nan_policy)
    n, k = y.shape
    c = _covariance(y, r.rater_labels)
    alpha = alpha_from_matrix(c)
    df1, df2 = n - 1, (n - 1) * (k - 1)
    tail = (1 - confidence) / 2
    row = dict(
        metric="Cronbach's alpha", estimate=float(alpha),
        ci_low=float(1 - (1 - alpha) * stats.f.isf(tail, df1, df2)),
        ci_high=float(1 - (1 - alpha) * stats.f.isf(1 - tail, df1, df2)),
        df1=float(df1), df2=float(df2),
        method=f"item covariances ({nan_policy} deletion)", ci_method="Feldt (1987) F",
        **counts(n, k, n_used, len(r.value) + r.n_missing - n_used),
    )  # fmt: skip
    return pd.DataFrame([row], columns=COLUMNS)


def one_factor(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood one-factor model of a covariance matrix: loadings, uniquenesses.

    Notes
    -----
    Minimises the ML discrepancy with the loadings concentrated out (Joreskog 1967): for
    uniquenesses psi, the loadings are psi^(1/2) u sqrt(max(theta - 1, 0)) where (theta, u)
    is the leading eigenpair of psi^(-1/2) S psi^(-1/2), and the discrepancy is
    sum over the other eigenvalues of theta_j - log(theta_j) - 1. Uniquenesses are kept in
    [0.005 var_j, var_j] (the bounds factor_analyzer and R's factanal use).
    """
    var = np.diag(s)

    def leading(psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        root = np.sqrt(psi)
        theta, u = np.linalg.eigh(s / np.outer(root, root))
        return theta, u[:, -1]

    def discrepancy(psi: np.ndarray) -> tuple[float, np.ndarray]:
        theta, u = leading(psi)
        # a singular S (fewer targets than items) has zero eigenvalues: keep the log finite
        rest = np.maximum(theta[:-1], 1e-12)
        loadings = np.sqrt(psi) * u * np.sqrt(max(theta[-1] - 1.0, 0.0))
        # gradient as in R's factanal: diag(L L' + Psi - S) / psi^2
        grad = (loadings**2 + psi - var) / psi**2
        return float((rest - np.log(rest) - 1).sum()), grad

    # R factanal's start: (1 - 0.5 factors / p) / diag(S^-1)
    start = np.clip((1 - 0.5 / len(s)) / np.diag(np.linalg.pinv(s)), 0.005 * var, var)
    fit = optimize.minimize(
        discrepancy, start, jac=True, method="TNC",
        bounds=list(zip(0.005 * var, var)), options=dict(ftol=1e-14, gtol=1e-10, maxfun=2000),
    )  # fmt: skip
    psi = fit.x
    theta, u = leading(psi)
    loadings = np.sqrt(psi) * u * np.sqrt(max(theta[-1] - 1.0, 0.0))
    if loadings.sum() < 0:
        loadings = -loadings
    return loadings, psi


def _omega(s: np.ndarray) -> float:
    """One-factor omega over the model-implied total variance (Sum lambda)^2 + Sum psi."""
    loadings, psi = one_factor(s)
    return general_share(loadings, loadings.sum() ** 2 + psi.sum())


@statistic(
    keys=("item", "rater"), numbers=("score",), varying=("score",), wide="columns",
    retired={"targets": "item", "items": "rater", "ratings": "score"},
)
def mcdonald_omega(
    data: pd.DataFrame,
    *,
    item: str | None = None,
    rater: str | None = None,
    score: str | None = None,
    columns: Sequence[str] | None = None,
    scale: Literal["covariance", "correlation"] = "covariance",
    nan_policy: NanPolicy = "listwise",
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """McDonald's omega (total) from a one-factor model, with a bootstrap interval.

    Parameters
    ----------
    data : DataFrame
        Long or wide, as in :func:`cronbach_alpha`.
    item, rater, score : str, optional
        Long layout, as in :func:`cronbach_alpha`. Default None: wide layout.
    columns : list of str, optional
        Wide layout: the scale-item columns (default every column but ``error_flag``).
    scale : {"covariance", "correlation"}, default "covariance"
        Fit the factor model to item covariances (omega of the raw sum score, comparable to
        raw alpha) or correlations (of the standardised sum, as ``psych::omega``). Unlike
        ``psych::omega``, which divides by the observed variance of the sum (the sum of the
        correlation matrix), this divides by the model-implied one, so the two differ where
        one factor does not fit exactly (Holzinger-Swineford x1-x9: 0.7235 here, psych's
        ``omega(nfactors = 1, fm = "ml")`` 0.7690).
    nan_policy : {"pairwise", "listwise"}, default "listwise"
        Missing scores, as in :func:`cronbach_alpha`. The bootstrap resamples the
        targets of the reduced (listwise) or full (pairwise) matrix.
    %(confidence)s
    %(n_boot)s
        Here: resamples of targets; 0 gives no interval.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``metric`` ("McDonald's omega"), ``estimate``, ``ci_low``, ``ci_high``
        (percentile bootstrap), ``df1``, ``df2`` (NaN), ``method``, ``ci_method``,
        ``n_items``, ``n_raters`` (items), ``n_scores``, ``n_dropped``.

    Notes
    -----
    With ML loadings lambda_j and uniquenesses psi_j of one common factor,
    omega = (sum_j lambda_j)^2 / ((sum_j lambda_j)^2 + sum_j psi_j), the share of the sum
    score's model-implied variance due to the common factor (McDonald 1999, eq. 6.20b).
    Alpha equals omega only when all loadings are equal (tau-equivalence).

    References
    ----------
    .. [1] McDonald, R. P. (1999). Test Theory: A Unified Treatment. Erlbaum.
    .. [2] Joreskog, K. G. (1967). Some contributions to maximum likelihood factor
       analysis. Psychometrika, 32(4), 443-482.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import mcdonald_omega
    >>> d = pd.DataFrame({"resp": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5],
    ...                   "item": ["q1", "q2", "q3"] * 5,
    ...                   "score": [4, 5, 4, 2, 3, 2, 5, 5, 4, 1, 2, 2, 3, 3, 4]})
    >>> out = mcdonald_omega(d, item="resp", rater="item", score="score", n_boot=0)
    >>> round(float(out.estimate[0]), 3)
    0.966
    """
    confidence, n_boot, random_state = boot
    check_confidence(confidence)
    check_choice("scale", scale, ["covariance", "correlation"])
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise DataError(f"n_boot={n_boot!r} must be a whole number >= 0")
    data, item, rater, score = scale_layout(data, item, rater, score, columns, "mcdonald_omega")
    r, y, n_used = _wide(data, item, rater, score, nan_policy)

    def omega_of(rows: np.ndarray) -> float:
        s = _covariance(rows, r.rater_labels)
        if not (np.diag(s) > 0).all():
            return np.nan  # a constant item (possible in a small resample)
        if scale == "correlation":
            sd = np.sqrt(np.diag(s))
            s = s / np.outer(sd, sd)
        return _omega(s)

    estimate = omega_of(y)
    ci_low = ci_high = np.nan
    ci_method = "none (n_boot=0)"
    if n_boot:
        rng = as_generator(random_state)
        reps = np.array([omega_of(y[rows]) for rows in resample_rows(len(y), n_boot, rng)])
        ci_low, ci_high = percentile_interval(reps, confidence)
        ci_method = f"percentile bootstrap over targets (B={n_boot})"
    row = dict(
        metric="McDonald's omega", estimate=estimate, ci_low=float(ci_low),
        ci_high=float(ci_high), df1=np.nan, df2=np.nan,
        method=f"ML one-factor model on item {scale}s ({nan_policy} deletion)",
        ci_method=ci_method, **counts(len(y), y.shape[1], n_used,
                                      len(r.value) + r.n_missing - n_used),
    )  # fmt: skip
    return pd.DataFrame([row], columns=COLUMNS)


@statistic(wide="columns", log=False, retired={"items": "columns"})
def ordinal_alpha(
    data: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    correct: float = 0.5,
    boot: Bootstrap = Bootstrap(n_boot=0),
) -> pd.DataFrame:
    """Ordinal alpha: coefficient alpha on the polychoric correlation matrix.

    Parameters
    ----------
    data : DataFrame
        One row per observation, one column per ordinal item.
    columns : list of str, optional
        Item columns; default every numeric column.
    correct : float, default 0.5
        Continuity correction of the polychoric correlations.
    %(confidence)s
    %(n_boot)s
        Here: resamples of the rows for a percentile interval; 0 gives none.
    %(random_state)s

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
    confidence, n_boot, random_state = boot
    check_n_boot(n_boot)
    check_confidence(confidence)
    x, names = item_matrix(data, columns)

    def alpha_of(rows: np.ndarray) -> np.ndarray:
        return np.array([alpha_from_matrix(resample_correlation(rows, "polychoric",
                                                                   correct))])

    low, high, ci_method, failed = row_intervals(x, alpha_of, 1, n_boot, confidence,
                                                  random_state, "ordinal_alpha")
    estimate = alpha_from_matrix(correlation_core(x, "polychoric", correct))
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
        ``metric`` (``omega_hierarchical``, ``omega_total``, ``alpha_standardized``),
        ``estimate``, ``ci_low``, ``ci_high`` (NaN without bootstrap), ``n``, ``method``,
        ``ci_method``, ``n_failed``.
    loadings : DataFrame
        Schmid-Leiman loadings: ``g``, one column per group factor, ``h2``, ``u2``.
    """

    estimates: pd.DataFrame
    loadings: pd.DataFrame

    def summary(self, digits: int = 2) -> str:
        e = self.estimates.set_index("metric")

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


@statistic(wide="columns", log=False, retired={"items": "columns"})
def omega_hierarchical(
    data: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    n_factors: int = 3,
    method: Method = "minres",
    cor: Correlation = "pearson",
    correct: float = 0.5,
    boot: Bootstrap = Bootstrap(n_boot=0),
) -> OmegaResult:
    """McDonald's omega total and hierarchical (R ``psych::omega``).

    %(wide_parameters)s
    n_factors : int, default 3
        Group factors of the Schmid-Leiman solution (psych's default is 3; at least 2).
    method : {"minres", "ml"}, default "minres"
        Extraction used for the group factors and for g.
    cor : {"pearson", "spearman", "polychoric"}, default "pearson"
        ``"polychoric"`` gives ordinal omega.
    correct : float, default 0.5
        Continuity correction for polychoric correlations.
    %(confidence)s
    %(n_boot)s
        Here: resamples of the rows for percentile intervals of the three coefficients;
        0 gives none.
    %(random_state)s

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
    >>> omega_hierarchical(d).estimates[["metric", "estimate"]].round(2)
                   metric  estimate
    0  omega_hierarchical      0.69
    1         omega_total      0.92
    2  alpha_standardized      0.87
    """
    confidence, n_boot, random_state = boot
    check_choice("method", method, METHODS)
    check_choice("cor", cor, CORRELATIONS)
    check_n_boot(n_boot)
    check_confidence(confidence)
    x, names = item_matrix(data, columns)
    if not (isinstance(n_factors, (int, np.integer)) and 2 <= n_factors < len(names)):
        raise DataError(f"n_factors={n_factors!r} must be an integer from 2 to {len(names) - 1}")
    k = int(n_factors)
    sl, values = _omega_core(correlation_core(x, cor, correct), k, method)
    low, high, ci_method, failed = row_intervals(
        x, lambda rows: _omega_core(resample_correlation(rows, cor, correct), k, method)[1],
        values.size, n_boot, confidence, random_state, "omega_hierarchical")
    h2 = (sl**2).sum(1)
    loadings = pd.DataFrame(sl, index=names, columns=["g", *[f"F{i + 1}" for i in range(k)]])
    loadings["h2"], loadings["u2"] = h2, 1 - h2
    estimates = pd.DataFrame({
        "metric": ["omega_hierarchical", "omega_total", "alpha_standardized"],
        "estimate": values, "ci_low": low, "ci_high": high, "n": x.shape[0],
        "method": f"Schmid-Leiman ({method}, oblimin, {k} group factors, {cor})",
        "ci_method": ci_method, "n_failed": failed})
    return OmegaResult(estimates, loadings)


def _omega_core(r: np.ndarray, n_factors: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Schmid-Leiman loadings and (omega_h, omega_t, standardized alpha) of a correlation."""
    sl = schmid_leiman(r, n_factors, method)
    total = r.sum()
    u2 = 1 - (sl**2).sum(1)
    return sl, np.array([general_share(sl[:, 0], total), 1 - u2.sum() / total,
                         alpha_from_matrix(r)])
