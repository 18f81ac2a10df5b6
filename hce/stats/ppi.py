"""Correcting a judge's bias with a small human-labelled set: prediction-powered inference
for a mean (or pass rate) and the Rogan-Gladen correction of a pass rate.

Both turn "the judge says 82% pass" into "the physicians would say 74% [68, 80]".
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._intervals import _z, proportion_ci
from hce.stats.boolean import _as_bool
from hce.stats._validate import statistic


def _values(data: pd.DataFrame, column: str) -> np.ndarray:
    """A score column as floats (booleans as 0/1, missing as NaN)."""
    return _as_bool(data, column) if data[column].dtype == bool else numeric_column(data, column)


def judge_and_human(data: pd.DataFrame, score: str, truth: str) -> tuple[np.ndarray, np.ndarray]:
    """The judge's scores (every row needs one: refused naming the row) and the human scores
    (NaN on the unlabelled rows) of a prediction-powered analysis."""
    f, y = _values(data, score), _values(data, truth)
    if np.isnan(f).any():
        row = data.index[np.argmax(np.isnan(f))]
        raise DataError(f"column {score!r} is missing in row {row!r}; every row needs a judge score")
    return f, y


def _ppi_core(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, lam: float):
    """PPI(++) point estimate and standard error for a mean, as ``ppi_py.ppi_mean_ci``."""
    n, N = len(y), len(f_unl)
    estimate = np.mean(lam * f_unl) + np.mean(y - lam * f_lab)
    se = np.sqrt(np.var(lam * f_unl) / N + np.var(y - lam * f_lab) / n)
    return float(estimate), float(se)


def _tuned_lambda(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray) -> float:
    """Power-tuning weight of PPI++ (Angelopoulos, Duchi & Zrnic 2023), clipped to [0, 1]."""
    n, N = len(y), len(f_unl)
    cov = np.mean((y - y.mean()) * (f_lab - f_lab.mean()))
    var = np.var(np.concatenate([f_lab, f_unl]), ddof=1)
    if var == 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / N) * var), 0, 1))


@statistic(numbers=("score", "truth"), retired={"judge": "score", "human": "truth"})
def ppi_mean(
    data: pd.DataFrame,
    *,
    score: str = "judge_score",
    truth: str = "human_score",
    tuning: Literal["none", "power"] = "none",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Prediction-powered estimate of the mean human score (or human pass rate).

    Parameters
    ----------
    data : DataFrame
        One row per item. Every row has the judge's score; rows with a human score form the
        small labelled (golden) set, rows without it the large unlabelled set.
    score, truth : str
        Judge score and human score columns (numbers or booleans; a pass rate is the mean
        of 0/1 values).
        Defaults: ``score="judge_score"``, ``truth="human_score"``.
    tuning : {"none", "power"}
        ``"none"`` (default): PPI of Angelopoulos et al. (2023), lambda = 1.
        ``"power"``: PPI++ with the variance-minimising lambda in [0, 1].
    %(confidence)s

    Returns
    -------
    DataFrame
        Three rows, column ``method``: ``"ppi"`` (or ``"ppi++"``), ``"classical"`` (the
        labelled human scores alone, z interval) and ``"judge_only"`` (the judge's mean on
        all rows, z interval: biased by whatever bias the judge has). Columns:
        ``estimate``, ``ci_low``, ``ci_high``, ``se``;
        ``n``: rows the row's estimator uses (``ppi``: n + N, every row; ``classical``: n,
        the labelled rows; ``judge_only``: n + N);
        ``n_labelled``: n, rows with a human score (ppi_py's ``Y.shape[0]``), the same on
        every row; ``n_unlabelled``: N, rows with only the judge's score (ppi_py's
        ``Yhat_unlabeled.shape[0]``), the same on every row;
        ``lambda``: the weight on the judge (1 for PPI, tuned for PPI++, 0 for classical,
        NaN for judge_only); ``method``.

    Notes
    -----
    With n labelled pairs (Y_i, f_i) and N unlabelled predictions f~_j:
    ``theta = mean_j(lambda f~_j) + mean_i(Y_i - lambda f_i)``,
    ``se^2 = var(lambda f~)/N + var(Y - lambda f)/n`` (variances with ddof=0, as
    ``ppi_py``), interval ``theta +/- z se``. PPI++ takes
    ``lambda = cov(Y, f) / ((1 + n/N) var(f, f~))``, clipped to [0, 1]. Valid when the
    labelled rows are a random sample of all rows.

    %(ppi_references)s

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"judge_score": [1, 1, 0, 1, 1, 1, 0, 1],
    ...                    "human_score": [1, 0, 0, 1, None, None, None, None]})
    >>> out = ppi_mean(df).set_index("method")
    >>> round(float(out.loc["ppi", "estimate"]), 4)
    0.5
    """
    check_choice("tuning", tuning, ["none", "power"])
    check_confidence(confidence)
    require_columns(data, [score, truth])
    f, y = judge_and_human(data, score, truth)
    labelled = ~np.isnan(y)
    n, N = int(labelled.sum()), int((~labelled).sum())
    if n < 2 or N < 2:
        raise DataError(f"need at least 2 labelled and 2 unlabelled rows, got {n} and {N}")
    y_lab, f_lab, f_unl = y[labelled], f[labelled], f[~labelled]
    lam = 1.0 if tuning == "none" else _tuned_lambda(y_lab, f_lab, f_unl)
    z = _z(confidence)
    rows = []
    for method, est, se, used, lam_used in (
        ("ppi" if tuning == "none" else "ppi++", *_ppi_core(y_lab, f_lab, f_unl, lam), n + N, lam),
        ("classical", float(y_lab.mean()), float(np.std(y_lab) / np.sqrt(n)), n, 0.0),
        ("judge_only", float(f.mean()), float(np.std(f) / np.sqrt(n + N)), n + N, np.nan),
    ):
        rows.append({"estimate": est, "ci_low": est - z * se, "ci_high": est + z * se, "se": se,
                     "n": used, "n_labelled": n, "n_unlabelled": N, "lambda": lam_used, "method": method})
    return pd.DataFrame(rows)


@statistic(labels=("score", "truth"), retired={"verdict": "score"})
def rogan_gladen(
    data: pd.DataFrame,
    *,
    score: str = "verdict",
    truth: str = "golden",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Pass rate corrected for the judge's sensitivity and specificity (Rogan & Gladen 1978).

    The judge's apparent pass rate over every verdict, corrected by its error rates on the
    rows with a golden label.

    Parameters
    ----------
    data : DataFrame
        One row per judged item. The apparent pass rate uses every row with a verdict; the
        judge's sensitivity and specificity come from the rows that also have a golden label.
    score, truth : str
        Boolean columns: the judge's verdict and the golden (human) label.
    %(confidence)s

    Returns
    -------
    DataFrame
        Rows (column ``method``): ``"rogan_gladen"`` (corrected rate, delta-method interval,
        both clipped to [0, 1]), ``"apparent"`` (judge pass rate, Wilson), ``"sensitivity"``
        and ``"specificity"`` (Wilson). Columns ``estimate, ci_low, ci_high, se, n,
        method``; ``se`` only for the corrected rate.

    Notes
    -----
    ``pi = (p + Sp - 1) / (Se + Sp - 1)``, with p the apparent rate on N rows and Se, Sp
    estimated on n1 golden positives and n0 golden negatives. Delta-method variance,
    treating the three as independent:
    ``var(pi) = [p(1-p)/N + pi^2 Se(1-Se)/n1 + (1-pi)^2 Sp(1-Sp)/n0] / (Se + Sp - 1)^2``.
    Undefined (raises) when Se + Sp <= 1, a judge no better than chance.

    References
    ----------
    .. [1] Rogan, W. J., & Gladen, B. (1978). Estimating prevalence from the results of a
       screening test. Am. J. Epidemiol. 107, 71-76.
    .. [2] Reiczigel, J., Foldi, J., & Ozsvari, L. (2010). Exact confidence limits for
       prevalence of a disease with an imperfect diagnostic test. Epidemiol. Infect. 138,
       1674-1678.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"verdict": [1] * 8 + [0] * 2, "golden": [1, 1, 1, 0, None, None, None, None, 0, 0]})
    >>> round(float(rogan_gladen(df)["estimate"].iloc[0]), 4)
    0.7
    """
    check_confidence(confidence)
    require_columns(data, [score, truth])
    v, g = _as_bool(data, score), _as_bool(data, truth)
    has_v = ~np.isnan(v)
    N = int(has_v.sum())
    p = float(v[has_v].mean())
    pos = has_v & (g == 1)
    neg = has_v & (g == 0)
    n1, n0 = int(pos.sum()), int(neg.sum())
    if n1 == 0 or n0 == 0:
        raise DataError(f"need golden positives and negatives with a verdict, got {n1} and {n0}")
    se_, sp_ = float(v[pos].mean()), float(1 - v[neg].mean())
    youden = se_ + sp_ - 1
    if youden <= 0:
        raise DataError(f"sensitivity + specificity = {se_ + sp_:.3f} <= 1: the correction is undefined")
    pi = (p + sp_ - 1) / youden
    pi_c = float(np.clip(pi, 0, 1))
    var = (p * (1 - p) / N + pi_c**2 * se_ * (1 - se_) / n1 + (1 - pi_c) ** 2 * sp_ * (1 - sp_) / n0) / youden**2
    sd = float(np.sqrt(var))
    z = _z(confidence)
    rows = [{"estimate": pi_c, "ci_low": max(0.0, pi - z * sd), "ci_high": min(1.0, pi + z * sd), "se": sd,
             "n": N, "method": "rogan_gladen"}]
    for method, k, m in (("apparent", p * N, N), ("sensitivity", se_ * n1, n1), ("specificity", sp_ * n0, n0)):
        low, high = proportion_ci(round(k), m, confidence, "wilson")
        rows.append({"estimate": k / m, "ci_low": float(low), "ci_high": float(high), "se": np.nan,
                     "n": m, "method": method})
    return pd.DataFrame(rows)


def _power_pair(corr: float, cost_label: float, cost_judge: float, budget: float | None,
                effective_n: float | None) -> dict:  # fmt: skip
    """ppi_py's ``ppi_power`` with no cost of an unlabelled row beyond the judge's (``cost_X = 0``)."""
    r2 = corr**2
    gamma = cost_judge / cost_label
    ppi_cost = cost_label * (1 - r2 + gamma * r2 + 2 * np.sqrt(gamma * r2 * (1 - r2)))
    n0 = budget / ppi_cost if budget is not None else effective_n
    n = n0 * (1 - r2 + np.sqrt(gamma * r2 * (1 - r2)))
    N = n * (n0 - n) / (n - (1 - r2) * n0) if corr != 0 else 0
    n, N = round(n), round(N)  # Python's rounding, as ppi_py
    if cost_label < ppi_cost or N < 0:  # the judge does not pay: labels only
        n = round(budget / cost_label) if budget is not None else round(n0)
        return {"n_labelled": n, "n_unlabelled": 0, "cost": n * cost_label, "effective_n": n}
    return {"n_labelled": n, "n_unlabelled": N, "cost": n * cost_label + (n + N) * cost_judge,
            "effective_n": round(n * (n + N) / (n + (1 - r2) * N))}


@statistic(numbers=("score", "truth"))
def ppi_budget(
    data: pd.DataFrame,
    *,
    cost_label: float,
    cost_judge: float,
    budget: float | None = None,
    effective_n: float | None = None,
    score: str = "judge_score",
    truth: str = "human_score",
) -> pd.DataFrame:
    """How many human labels and judge-only rows the next study needs (PPI power analysis).

    Parameters
    ----------
    data : DataFrame
        A pilot: rows with both a judge score and a human score (rows missing either are
        left out). Their correlation (the "PPI correlation") sets the answer.
    cost_label : float
        Cost of one human label (a labelled row also gets the judge's score).
    cost_judge : float
        Cost of one judge score.
    budget : float, optional
        Total budget: the most precise pair that costs at most this. Default None.
    effective_n : float, optional
        Target precision, as the number of human labels the classical estimate would need:
        the cheapest pair reaching it. Default None. Give one of ``budget`` and
        ``effective_n`` (``budget`` wins when both are given, as in ppi_py).
    score, truth : str
        Judge score and human score columns, defaults ``"judge_score"``, ``"human_score"``.

    Returns
    -------
    DataFrame
        One row: ``n_labelled`` (rows to label by humans), ``n_unlabelled`` (rows scored by
        the judge only), ``cost``, ``effective_n`` (the classical sample size of the same
        precision), ``ppi_corr`` and ``n`` (pilot rows used), ``method``.

    Notes
    -----
    As ppi_py's ``ppi_mean_power`` (Broska, Howes & van Loon 2024): with rho the pilot's
    correlation between human and judge scores (capped at 1 - 1/n) and
    ``gamma = cost_judge / cost_label``, a classical study of n0 labels is matched by
    ``n = n0 (1 - rho^2 + sqrt(gamma rho^2 (1 - rho^2)))`` labels and
    ``N = n (n0 - n) / (n - (1 - rho^2) n0)`` judge-only rows; with a budget,
    ``n0 = budget / (cost_label (1 - rho^2 + gamma rho^2 + 2 sqrt(gamma rho^2 (1 - rho^2))))``.
    When the judge does not pay for itself, every row is labelled (``n_unlabelled = 0``).

    References
    ----------
    .. [1] Broska, D., Howes, M., & van Loon, A. (2024). The mixed subjects design: treating
       large language models as (potentially) informative observations. SocArXiv j3bnt.
    .. [2] Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient
       prediction-powered inference. arXiv:2311.01453.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> human = rng.normal(3, 1, 80)
    >>> pilot = pd.DataFrame({"human_score": human, "judge_score": human + rng.normal(0, 0.5, 80)})
    >>> ppi_budget(pilot, cost_label=2.0, cost_judge=0.05, effective_n=200)[["n_labelled", "n_unlabelled"]]
       n_labelled  n_unlabelled
    0          61           630
    """
    if budget is None and effective_n is None:
        raise DataError("ppi_budget: give budget= (the most precise design for it) or effective_n= (the cheapest)")
    for name, value in (("cost_label", cost_label), ("cost_judge", cost_judge)):
        if not value > 0:
            raise DataError(f"ppi_budget: {name}={value!r} must be a positive cost")
    require_columns(data, [score, truth])
    f, y = _values(data, score), _values(data, truth)
    both = ~np.isnan(f) & ~np.isnan(y)
    y, f = y[both], f[both]
    n = len(y)
    if n < 3 or np.std(y) == 0 or np.std(f) == 0:
        raise DataError(f"ppi_budget: need at least 3 pilot rows with varying human and judge scores, got {n}")
    # ppi_py's _get_ppi_corr for a mean: gradients y - mean(y) and f - mean(y), moments over n.
    g, h = y - y.mean(), f - y.mean()
    gc, hc = g - g.mean(), h - h.mean()
    corr = float(min(np.mean(gc * hc) / np.sqrt(np.mean(gc**2) * np.mean(hc**2)), 1 - 1 / n))
    row = _power_pair(corr, cost_label, cost_judge, budget, effective_n)
    return pd.DataFrame([{**row, "ppi_corr": corr, "n": n, "method": "PPI power (ppi_py ppi_mean_power)"}])
