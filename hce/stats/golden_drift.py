"""Drift of a judge on a golden set: per period the paired shift from a baseline, agreement, and a control-chart alarm.

A golden set is a fixed list of items judged again every period (a date, a batch, a served
``model_version``): a provider that ships a new version under the same name moves the scores
of the same items (seed 001, section 7.5). :func:`drift` reports for each period the paired
shift from the baseline period on the items both judged, with its t interval, the agreement of
the two periods (Cohen's kappa for 0/1 scores, else the absolute-agreement ICC(A,1)), and an
EWMA or CUSUM chart whose in-control average run length is ``arl0``
(:func:`hce.stats.control_limits`).

What the chart watches
----------------------
With ``m_t`` the mean over the golden items of the period's score minus the baseline's (``m``
is 0 for the baseline), the chart is fed the recursive residuals of Hawkins's self-starting
scheme,

    T_t = (m_t - mean(m_0, ..., m_(t-1))) / (sigma sqrt(1/n_t + sum_(s<t) (1/n_s) / t^2)),

with ``sigma`` the SD of one item's score in one period (its attempts averaged). Charting
``m_t`` against the baseline itself would carry the baseline's own noise into every period, a
common offset that makes false alarms far more frequent than ``arl0`` says; the recursive
residuals cancel it and are independent N(0, 1) while the judge is stable (Hawkins 1987), so
the chart's in-control ARL is the ``arl0`` asked for. ``sigma^2`` is half the pooled
within-period variance of the items' paired differences (a shift of every item alike leaves it
unchanged), from all periods: a retrospective (Phase I) chart of the history given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._validate import statistic
from hce.stats.biases import _columns, _is_binary
from hce.stats.control_charts import Chart, control_limits, run_chart

Agreement = Literal["auto", "kappa", "icc"]


def _order(periods: pd.Series) -> list:
    """Periods in time order: sorted when numbers or dates, else in their order of first appearance."""
    values = periods.dropna()
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_datetime64_any_dtype(values):
        return sorted(pd.unique(values))
    return list(pd.unique(values))


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's (1960) kappa of two 0/1 ratings of the same items."""
    observed = np.mean(a == b)
    pa, pb = a.mean(), b.mean()
    expected = pa * pb + (1 - pa) * (1 - pb)
    return float((observed - expected) / (1 - expected)) if expected < 1 else np.nan


def _icc_a1(a: np.ndarray, b: np.ndarray) -> float:
    """McGraw & Wong's (1996) ICC(A,1), absolute agreement of two ratings of the same items."""
    x = np.column_stack([a, b])
    n, k = x.shape
    grand = x.mean()
    msr = k * np.sum((x.mean(axis=1) - grand) ** 2) / (n - 1)
    msc = n * np.sum((x.mean(axis=0) - grand) ** 2) / (k - 1)
    mse = np.sum((x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + grand) ** 2) / ((n - 1) * (k - 1))
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    return float((msr - mse) / denominator) if denominator > 0 else np.nan


@statistic(keys=("period", "item"), numbers=("score",))
def drift(
    data: pd.DataFrame,
    *,
    period: str,
    item: str = "item_id",
    score: str | Sequence[str] = "total",
    baseline: object = None,
    chart: Chart = "ewma",
    arl0: float = 370.0,
    smoothing: float = 0.2,
    reference: float = 0.5,
    agreement: Agreement = "auto",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per period of a golden-set history: the paired shift from baseline, agreement with it, and a chart alarm.

    The same golden items, judged again in each period, are compared with their scores in
    the baseline period (``baseline``, by default the first).

    Parameters
    ----------
    data : DataFrame
        One row per attempt: the golden items judged in several periods.
    period : str
        The period column: a date, a batch number or ``model_version``. Numbers and dates are
        taken in sorted order, other values in their order of first appearance.
    item : str
        The item column (default ``item_id``).
    score : str or list of str
        The score column(s), one block of rows each (default ``total``). The attempts of an
        item in a period are averaged.
    baseline : optional
        The baseline period's value (default None: the first period).
    chart : {"ewma", "cusum"}
        The control chart (default ``"ewma"``), see the module notes.
    arl0 : float
        The chart's in-control average run length in periods (default 370).
    smoothing : float
        The EWMA's weight of the newest period (default 0.2).
    reference : float
        The CUSUM's reference value in standard units (default 0.5).
    agreement : {"auto", "kappa", "icc"}
        ``"auto"`` (default): Cohen's kappa when every score is 0 or 1, else ICC(A,1).
    %(confidence)s

    Returns
    -------
    DataFrame
        One row per criterion and period, in time order: ``criterion``, ``period``,
        ``n_items`` (items judged in it and in the baseline), ``estimate`` (mean paired
        shift from the baseline), ``ci_low``, ``ci_high``, ``p_value`` (paired t), ``agreement``
        and ``agreement_method``, ``residual`` (the standardised recursive residual the chart
        is fed), ``chart_statistic``, ``limit``, ``alarm``, ``first_alarm`` (True on the first
        alarming period), ``method``. The baseline's row has shift 0 and no chart value.

    Raises
    ------
    DataError
        With fewer than two periods, a baseline that is not a period, or a period sharing
        fewer than two items with the baseline.

    References
    ----------
    Hawkins, D. M. (1987). Self-starting CUSUM charts for location and scale. The
    Statistician, 36, 299-315. Lucas, J. M., & Saccucci, M. S. (1990). Technometrics, 32, 1-12.
    McGraw, K. O., & Wong, S. P. (1996). Psychological Methods, 1, 30-46.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> rows = [(p, f"G{i}", 10 + i % 5 + (1.0 if p >= 20 else 0.0) + rng.normal(0, 1))
    ...         for p in range(30) for i in range(20)]
    >>> out = drift(pd.DataFrame(rows, columns=["batch", "item_id", "total"]), period="batch")
    >>> int(out.loc[out["first_alarm"], "period"].iloc[0]) in range(20, 25)
    True
    """
    limits = control_limits(chart, arl0=arl0, smoothing=smoothing, reference=reference)
    order = _order(data[period])
    if len(order) < 2:
        raise DataError(f"drift: {period!r} holds {len(order)} period(s); a history needs at least two")
    base = order[0] if baseline is None else baseline
    if base not in order:
        raise DataError(f"drift: baseline {baseline!r} is not a value of {period!r}; periods: {order[:10]}")
    order = [base] + [p for p in order if p != base]
    blocks = [_drift_one(data, column, period, item, order, limits, agreement, confidence) for column in _columns(score)]
    return pd.concat(blocks, ignore_index=True)


def _drift_one(data: pd.DataFrame, column: str, period: str, item: str, order: list, limits: dict,
               agreement: str, confidence: float) -> pd.DataFrame:
    frame = pd.DataFrame({"p": data[period], "i": data[item].astype(str), "y": data[column].astype(float)})
    missing = int(frame["y"].isna().sum())
    if missing:
        warn(f"drift: left out {missing} of {len(frame)} attempts with no {column!r}", HceWarning)
    cells = frame.dropna().groupby(["p", "i"])["y"].mean()
    binary = _is_binary(frame["y"])
    kind = ("kappa" if binary else "icc") if agreement == "auto" else agreement
    first = cells.loc[order[0]]
    rows, var_sum, var_df = [], 0.0, 0
    for t, p in enumerate(order):
        current = cells.loc[p] if p in cells.index.get_level_values(0) else pd.Series(dtype=float)
        common = first.index.intersection(current.index)
        if t > 0 and len(common) < 2:
            raise DataError(f"drift: period {p!r} shares {len(common)} item(s) with the baseline {order[0]!r}; need 2")
        d = (current[common] - first[common]).to_numpy()
        n = len(common)
        if t > 0:
            var_sum += float(np.var(d, ddof=1)) * (n - 1)
            var_df += n - 1
        se = np.std(d, ddof=1) / np.sqrt(n) if n > 1 else np.nan
        crit = stats.t.ppf(0.5 + confidence / 2, n - 1) if n > 1 else np.nan
        a, b = first[common].to_numpy(), current[common].to_numpy()
        rows.append({
            "criterion": column, "period": p, "n_items": n, "estimate": float(d.mean()),
            "ci_low": d.mean() - crit * se if t else np.nan, "ci_high": d.mean() + crit * se if t else np.nan,
            "p_value": float(2 * stats.t.sf(abs(d.mean() / se), n - 1)) if t and se > 0 else np.nan,
            "agreement": (_kappa(a, b) if kind == "kappa" else _icc_a1(a, b)) if t else np.nan,
            "agreement_method": "Cohen's kappa" if kind == "kappa" else "ICC(A,1)",
        })  # fmt: skip
    out = pd.DataFrame(rows)
    # One item's score in one period: half the variance of a paired difference (module notes).
    sigma = np.sqrt(var_sum / var_df / 2) if var_df else np.nan
    means, sizes = out["estimate"].to_numpy(), out["n_items"].to_numpy(dtype=float)
    residual = np.full(len(out), np.nan)
    for t in range(1, len(out)):
        spread = sigma * np.sqrt(1 / sizes[t] + np.sum(1 / sizes[:t]) / t**2)
        residual[t] = (means[t] - means[:t].mean()) / spread if spread > 0 else 0.0
    statistic, alarm = run_chart(residual[1:], limits)
    out["residual"] = residual
    out["chart_statistic"] = np.concatenate([[np.nan], statistic])
    out["limit"] = limits["limit"]
    out["alarm"] = np.concatenate([[False], alarm])
    out["first_alarm"] = out["alarm"] & ~out["alarm"].cummax().shift(1, fill_value=False)
    out["method"] = (f"paired t on the items both periods judged; {limits['method']}, arl0 {limits['arl0']:g}, "
                     "fed Hawkins's self-starting recursive residuals")  # fmt: skip
    return out
