"""Prediction-powered comparisons of conditions: the difference between two prompts' or
models' human-scale means (or log-odds of a pass), corrected for the judge's bias with a
small human-labelled set, as ppi_py's ``ppi_ols_ci`` and ``ppi_logistic_ci``.

The model regresses the human score on the condition (treatment coding, the first level the
reference): its intercept is the reference condition's human-scale mean (log-odds for
``family="binomial"``), each other term that condition's difference from it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from hce._checks import check_choice, check_confidence, require_columns
from hce.errors import DataError
from hce.stats._intervals import _z
from hce.stats._validate import statistic
from hce.stats.ppi import judge_and_human

Family = Literal["gaussian", "binomial"]
COLUMNS = ["term", "estimate", "ci_low", "ci_high", "se", "statistic", "p_value", "n", "n_labelled",
           "n_unlabelled", "lambda", "scale", "method"]  # fmt: skip


def _mean_of(family: Family, X: np.ndarray, theta: np.ndarray) -> np.ndarray:
    return X @ theta if family == "gaussian" else special.expit(X @ theta)


def _fit(family: Family, Xl, y, fl, Xu, fu, lam: float) -> np.ndarray:
    """The rectified estimate: argmin of lam * loss(judge, unlabelled) + loss(human, labelled)
    - lam * loss(judge, labelled), ppi_py's ``ppi_ols_pointestimate`` / ``ppi_logistic_pointestimate``."""
    if family == "gaussian":
        imputed = np.linalg.lstsq(Xu, lam * fu, rcond=None)[0] if lam != 0 else 0.0
        return imputed + np.linalg.lstsq(Xl, y - lam * fl, rcond=None)[0]
    n, N = len(y), max(len(fu), 1)
    theta = np.zeros(Xl.shape[1])
    # Newton on a convex loss (lam in [0, 1]): ppi_py's L-BFGS-B reaches the same minimum.
    for _ in range(100):
        mu_l, mu_u = special.expit(Xl @ theta), special.expit(Xu @ theta)
        grad = lam / N * Xu.T @ (mu_u - fu) + Xl.T @ ((1 - lam) * mu_l - y + lam * fl) / n
        hess = lam / N * (Xu.T * (mu_u * (1 - mu_u))) @ Xu + (1 - lam) / n * (Xl.T * (mu_l * (1 - mu_l))) @ Xl
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.max(np.abs(step)) < 1e-13:
            break
    return theta


def _stats(family: Family, theta, Xl, y, fl, Xu, fu, use_unlabelled: bool):
    """Per-row gradients on the labelled (human, judge) and unlabelled (judge) rows and the
    inverse Hessian: ppi_py's ``_ols_get_stats`` / ``_logistic_get_stats``."""
    mu_l, mu_u = _mean_of(family, Xl, theta), _mean_of(family, Xu, theta)
    w_l = np.ones(len(y)) if family == "gaussian" else mu_l * (1 - mu_l)
    w_u = np.ones(len(fu)) if family == "gaussian" else mu_u * (1 - mu_u)
    if use_unlabelled:
        hess = ((Xu.T * w_u) @ Xu + (Xl.T * w_l) @ Xl) / (len(y) + len(fu))
    else:
        hess = (Xl.T * w_l) @ Xl / len(y)
    return Xl * (mu_l - y)[:, None], Xl * (mu_l - fl)[:, None], Xu * (mu_u - fu)[:, None], np.linalg.inv(hess)


def _tuned(grads, grads_hat, grads_hat_u, inv_hess) -> float:
    """PPI++'s lambda minimising the trace of the asymptotic covariance, clipped to [0, 1]
    (ppi_py's ``_calc_lam_glm(..., coord=None, clip=True)``)."""
    n, N = len(grads), len(grads_hat_u)
    gc, hc = grads - grads.mean(axis=0), grads_hat - grads_hat.mean(axis=0)
    cov = (gc.T @ hc + hc.T @ gc) / n
    var_hat = np.atleast_2d(np.cov(np.concatenate([grads_hat, grads_hat_u]).T))
    lam = np.trace(inv_hess @ cov @ inv_hess) / (2 * (1 + n / N) * np.trace(inv_hess @ var_hat @ inv_hess))
    return float(np.clip(lam, 0, 1))


def _covariance(grads, grads_hat, grads_hat_u, inv_hess, lam, clusters_l, clusters_u) -> np.ndarray:
    """Sandwich covariance of the estimate. Without clusters, ppi_py's
    ``inv_hess (var_u / N + var_l / n) inv_hess`` (covariances with ddof=1); with clusters the
    centred, so-scaled row contributions are summed within each cluster first."""
    n, N = len(grads), len(grads_hat_u)
    h_l = grads - lam * grads_hat
    h_l = (h_l - h_l.mean(axis=0)) / np.sqrt(n * (n - 1))
    if lam == 0:  # the classical estimator: no unlabelled term
        grads_hat_u, clusters_u = grads_hat_u[:0], None if clusters_u is None else clusters_u[:0]
        h_u = grads_hat_u
    else:
        h_u = lam * (grads_hat_u - grads_hat_u.mean(axis=0)) / np.sqrt(N * (N - 1))
    if clusters_l is not None:
        codes, _ = pd.factorize(np.concatenate([clusters_l, clusters_u]))
        sums = np.zeros((codes.max() + 1, h_l.shape[1]))
        np.add.at(sums, codes, np.concatenate([h_l, h_u]))
        h_l, h_u = sums, np.zeros((0, h_l.shape[1]))
    meat = h_l.T @ h_l + h_u.T @ h_u
    return inv_hess @ meat @ inv_hess


def _estimate(family: Family, Xl, y, fl, Xu, fu, lam: float | None, clusters_l=None, clusters_u=None):
    """(theta, se, lambda) of PPI (lam=1), classical (lam=0) or PPI++ (lam=None: ppi_py's
    default tuning, lambda from the gradients at the estimate tuned once already)."""
    if lam is None:
        theta = _fit(family, Xl, y, fl, Xu, fu, 1.0)
        for _ in range(2):  # ppi_py tunes in the point estimate, then again in the interval
            lam = _tuned(*_stats(family, theta, Xl, y, fl, Xu, fu, True))
            theta = _fit(family, Xl, y, fl, Xu, fu, lam)
    else:
        theta = _fit(family, Xl, y, fl, Xu, fu, lam)
    got = _stats(family, theta, Xl, y, fl, Xu, fu, lam != 0)
    cov = _covariance(*got, lam, clusters_l, clusters_u)
    # rounding can leave an exact zero variance at -1e-17 (a classical difference of conditions that share
    # every human label): it is 0, not NaN
    return theta, np.sqrt(np.clip(np.diag(cov), 0.0, None)), lam


@statistic(keys=("condition",), numbers=("score", "truth"), blank_keys=("cluster",))
def ppi_compare(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    family: Family = "gaussian",
    score: str = "judge_score",
    truth: str = "human_score",
    tuning: Literal["none", "power"] = "none",
    cluster: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Prediction-powered comparison of conditions on the human scale.

    Parameters
    ----------
    data : DataFrame
        One row per judged output (an item in a condition; an attempt with ``cluster=``).
        Every row has the judge's score; rows with a human score form the labelled set,
        the others the unlabelled set. Both sets need every condition.
    condition : str
        Column of the conditions compared, default ``"condition_id"``; the first level in
        sorted order is the reference.
    family : {"gaussian", "binomial"}
        ``"gaussian"`` (default): least squares, terms are means and differences of means.
        ``"binomial"``: logistic regression of a 0/1 human verdict (the judge's score a 0/1
        verdict or a probability), terms are log-odds and log-odds ratios.
    score, truth : str
        Judge score and human score columns, defaults ``"judge_score"``, ``"human_score"``
        (numbers or booleans).
    tuning : {"none", "power"}
        ``"none"`` (default): PPI, lambda = 1. ``"power"``: PPI++ with lambda tuned as
        ``ppi_py`` tunes it by default (minimising the trace of the covariance, in [0, 1]).
    cluster : str, optional
        Column of clusters (items with repeated attempts): standard errors sum the rows'
        contributions within each cluster first. Default None: rows independent.
    %(confidence)s

    Returns
    -------
    DataFrame
        One row per ``term`` (``"(Intercept)"``, then ``"<level> - <reference>"`` per other
        condition) and ``method``: ``"ppi"`` (or ``"ppi++"``), ``"classical"`` (the
        labelled rows' human scores alone, lambda = 0) and ``"judge_only"`` (the judge's
        scores on every row, as if they were the humans': biased by the judge's bias).
        Columns ``estimate``, ``ci_low``, ``ci_high``, ``se``, ``statistic`` and ``p_value``
        (z test of zero), ``n`` (rows used), ``n_labelled``, ``n_unlabelled``, ``lambda``,
        ``scale`` (``"mean"`` or ``"log-odds"``), ``method``.

    Notes
    -----
    With loss l (squared error or logistic), the estimate minimises
    ``lambda/N sum_j l(x~_j, f~_j) + 1/n sum_i [l(x_i, Y_i) - lambda l(x_i, f_i)]``; its
    covariance is ``H^-1 (lambda^2 Cov(g~)/N + Cov(g - lambda g^)/n) H^-1`` with g the
    per-row gradients and H the Hessian over all rows (ppi_py's ``ppi_ols_ci`` and
    ``ppi_logistic_ci``; intervals ``estimate +/- z se``). Valid when the labelled rows are
    a random sample of the rows within each condition. PPI++'s lambda is the one of
    ``ppi_py``'s intervals, tuned at the estimate tuned once already; its point estimate is
    the interval's centre (``ppi_py``'s separate point-estimate functions stop one tuning
    step earlier and differ slightly). The classical rows use the same
    sandwich (HC0 up to n/(n-1)); the judge-only rows the classical estimator on the
    judge's scores.

    %(ppi_references)s

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> human = np.r_[rng.normal(3, 1, 200), rng.normal(3.5, 1, 200)]
    >>> df = pd.DataFrame({"condition_id": ["A"] * 200 + ["B"] * 200,
    ...                    "judge_score": human + 0.5 + rng.normal(0, 0.5, 400),
    ...                    "human_score": np.where(np.arange(400) % 5 == 0, human, np.nan)})
    >>> out = ppi_compare(df)
    >>> out.loc[out.method == "ppi", ["term", "estimate"]].round(2)
              term  estimate
    0  (Intercept)      3.07
    1        B - A      0.48
    """
    check_choice("family", family, ["gaussian", "binomial"])
    check_choice("tuning", tuning, ["none", "power"])
    check_confidence(confidence)
    require_columns(data, [condition, score, truth] + ([cluster] if cluster else []))
    f, y = judge_and_human(data, score, truth)
    if family == "binomial":
        bad = ~np.isnan(y) & ~np.isin(y, (0, 1))
        if bad.any():
            raise DataError(f"ppi_compare: family='binomial' needs 0/1 values in {truth!r}; row "
                            f"{data.index[np.argmax(bad)]!r} holds {y[np.argmax(bad)]!r}")  # fmt: skip
    levels = sorted(data[condition].unique().tolist(), key=str)
    if len(levels) < 2:
        raise DataError(f"ppi_compare: column {condition!r} needs at least 2 conditions, found {levels}")
    codes = pd.Categorical(data[condition], categories=levels).codes
    X = np.column_stack([np.ones(len(data)), *(codes == k for k in range(1, len(levels)))]).astype(float)
    labelled = ~np.isnan(y)
    for name, part in (("labelled", labelled), ("unlabelled", ~labelled)):
        counts = np.bincount(codes[part], minlength=len(levels))
        if (counts < 2).any():
            lacking = levels[int(np.argmin(counts))]
            raise DataError(f"ppi_compare: condition {lacking!r} has {counts.min()} {name} row(s); "
                            "each condition needs at least 2 rows with a human score and 2 without")  # fmt: skip
    groups = data[cluster].to_numpy() if cluster else None
    parts = (X[labelled], y[labelled], f[labelled], X[~labelled], f[~labelled])
    cl, cu = (groups[labelled], groups[~labelled]) if cluster else (None, None)
    n, N = int(labelled.sum()), int((~labelled).sum())
    z = _z(confidence)
    terms = ["(Intercept)"] + [f"{level} - {levels[0]}" for level in levels[1:]]
    rows = []
    fits = [
        ("ppi" if tuning == "none" else "ppi++", _estimate(family, *parts, 1.0 if tuning == "none" else None, cl, cu),
         n + N),
        ("classical", _estimate(family, *parts, 0.0, cl, cu), n),
        ("judge_only", _estimate(family, X, f, f, X[:0], f[:0], 0.0, groups, groups[:0] if cluster else None),
         n + N),
    ]  # fmt: skip
    for method, (theta, se, lam), used in fits:
        for term, est, s in zip(terms, theta, se):
            stat = est / s if s > 0 else np.nan  # a difference known exactly (SE 0) has no test statistic
            rows.append({"term": term, "estimate": float(est), "ci_low": float(est - z * s),
                         "ci_high": float(est + z * s), "se": float(s), "statistic": float(stat),
                         "p_value": float(2 * stats.norm.sf(abs(stat))), "n": used, "n_labelled": n,
                         "n_unlabelled": N, "lambda": np.nan if method == "judge_only" else lam,
                         "scale": "mean" if family == "gaussian" else "log-odds", "method": method})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
