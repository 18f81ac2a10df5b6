"""Agreement of a judge with human raters as a reviewer reads it: Bland-Altman limits of
agreement, Lin's concordance correlation and McNemar's test of paired verdicts.

Each answers a different question: how far apart the two scores may be for one item
(Bland-Altman), how close they lie to the line of identity (concordance), and whether one
passes more often than the other (McNemar).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import _label, check_confidence, numeric_column, plain, require_columns
from hce.errors import DataError
from hce.stats._validate import statistic
from hce.stats.boolean import _as_bool

BLAND_ALTMAN_COLUMNS = ["quantity", "estimate", "ci_low", "ci_high", "se", "statistic", "p_value", "n", "method"]


def _paired(data: pd.DataFrame, item: str | None, a: str, b: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The two score columns on the rows where both are present; an item in two rows refused."""
    require_columns(data, [a, b] + ([item] if item else []))
    if item is not None:
        twice = data[item].duplicated(keep=False).to_numpy()
        if twice.any():
            first, second = np.flatnonzero(twice)[:2]
            raise DataError(f"{name}: {item} {plain(data[item].iloc[first])!r} is in rows {_label(data.index[first])} "
                            f"and {_label(data.index[second])}; give one row per item with the two scores in "
                            f"{a!r} and {b!r}")  # fmt: skip
    x, y = numeric_column(data, a), numeric_column(data, b)
    both = ~np.isnan(x) & ~np.isnan(y)
    if both.sum() < 3:
        raise DataError(f"{name}: need at least 3 rows with both {a!r} and {b!r}, got {int(both.sum())}")
    return x[both], y[both]


@statistic(keys=("item",), numbers=("a", "b"))
def bland_altman(
    data: pd.DataFrame,
    *,
    item: str | None = "item_id",
    a: str,
    b: str,
    agreement: float = 1.96,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Bland-Altman analysis: bias and limits of agreement of two scores of the same items.

    %(paired_parameters)s
    agreement : float
        Multiple of the SD of the differences ``a - b`` for the limits, default 1.96
        (Bland & Altman 1986 used 2).
    %(confidence)s

    Returns
    -------
    DataFrame
        Rows ``quantity``: ``"bias"`` (mean difference, t interval, ``p_value`` of the
        one-sample t test of no bias), ``"lower_limit"`` and ``"upper_limit"`` (bias -/+
        agreement x SD, intervals with the approximate SE ``sqrt(3 s^2 / n)`` of Bland &
        Altman 1986 on n - 1 df), ``"proportional_bias"`` (slope of the difference on
        the pair mean: nonzero when the scores disagree more at one end of the scale;
        t interval and test on n - 2 df). Columns ``estimate``, ``ci_low``, ``ci_high``,
        ``se``, ``statistic``, ``p_value``, ``n``, ``method``. The plot of these rows is
        ``hce.report.figures.bland_altman_plot``.

    References
    ----------
    .. [1] Bland, J. M., & Altman, D. G. (1986). Statistical methods for assessing agreement
       between two methods of clinical measurement. Lancet i, 307-310.
    .. [2] Bland, J. M., & Altman, D. G. (1999). Measuring agreement in method comparison
       studies. Stat. Methods Med. Res. 8, 135-160.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": range(6), "judge": [3, 4, 2, 5, 4, 3], "human": [3, 3, 2, 4, 4, 2]})
    >>> bland_altman(df, a="judge", b="human")[["quantity", "estimate"]].round(3)
                quantity  estimate
    0               bias     0.500
    1        lower_limit    -0.574
    2        upper_limit     1.574
    3  proportional_bias     0.171
    """
    check_confidence(confidence)
    x, y = _paired(data, item, a, b, "bland_altman")
    d, mean = x - y, (x + y) / 2
    n = len(d)
    bias, sd = float(d.mean()), float(d.std(ddof=1))
    t = stats.t.ppf((1 + confidence) / 2, n - 1)
    se_bias, se_limit = sd / np.sqrt(n), np.sqrt(3 * sd**2 / n)
    rows = [{"quantity": "bias", "estimate": bias, "se": se_bias, "half": t * se_bias,
             "statistic": bias / se_bias if se_bias > 0 else np.nan, "df": n - 1}]
    for quantity, sign in (("lower_limit", -1), ("upper_limit", 1)):
        rows.append({"quantity": quantity, "estimate": bias + sign * agreement * sd, "se": se_limit,
                     "half": t * se_limit, "statistic": np.nan, "df": n - 1})
    fit = stats.linregress(mean, d) if np.ptp(mean) > 0 else None
    slope, se_slope = (fit.slope, fit.stderr) if fit is not None else (np.nan, np.nan)
    rows.append({"quantity": "proportional_bias", "estimate": slope, "se": se_slope,
                 "half": stats.t.ppf((1 + confidence) / 2, n - 2) * se_slope,
                 "statistic": slope / se_slope if se_slope > 0 else np.nan, "df": n - 2})  # fmt: skip
    out = pd.DataFrame(rows)
    out["ci_low"], out["ci_high"] = out["estimate"] - out["half"], out["estimate"] + out["half"]
    out["p_value"] = 2 * stats.t.sf(out["statistic"].abs(), out["df"])
    out["n"] = n
    out["method"] = ["one-sample t", f"bias -/+ {agreement:g} SD, SE sqrt(3s^2/n)", f"bias -/+ {agreement:g} SD, "
                     "SE sqrt(3s^2/n)", "least squares of a - b on (a + b)/2"]  # fmt: skip
    return out[BLAND_ALTMAN_COLUMNS]


@statistic(keys=("item",), numbers=("a", "b"))
def concordance(
    data: pd.DataFrame,
    *,
    item: str | None = "item_id",
    a: str,
    b: str,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Lin's concordance correlation coefficient of two scores of the same items.

    %(paired_parameters)s
    %(confidence)s

    Returns
    -------
    DataFrame
        One row: ``estimate`` (CCC), ``ci_low``, ``ci_high`` (Fisher z-transform interval,
        epiR's default), ``se`` (asymptotic SE of Lin 2000), ``asymptotic_low`` and
        ``asymptotic_high`` (the untransformed interval), ``pearson_r`` (precision),
        ``bias_correction`` (C_b = CCC / r: accuracy, 1 on the line of identity),
        ``location_shift`` and ``scale_shift`` (epiR's ``l.shift``, ``s.shift``), ``n``,
        ``method``.

    Notes
    -----
    ``CCC = 2 s_ab / (s_a^2 + s_b^2 + (mean_a - mean_b)^2)`` with moments over n; with
    r the Pearson correlation and ``u = (mean_b - mean_a) / (s_a s_b)^(1/2)``,
    ``se^2 = [(1 - r^2) CCC^2 (1 - CCC^2) / r^2 + 2 CCC^3 (1 - CCC) u^2 / r
    - CCC^4 u^4 / (2 r^2)] / (n - 2)`` (Lin 2000), and the z interval is
    ``tanh(atanh(CCC) +/- z se / (1 - CCC^2))``, as epiR's ``epi.ccc``.

    References
    ----------
    .. [1] Lin, L. I. (1989). A concordance correlation coefficient to evaluate
       reproducibility. Biometrics 45, 255-268.
    .. [2] Lin, L. I. (2000). A note on the concordance correlation coefficient.
       Biometrics 56, 324-325.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": range(6), "judge": [3, 4, 2, 5, 4, 3], "human": [3, 3, 2, 4, 4, 2]})
    >>> round(float(concordance(df, a="judge", b="human")["estimate"].iloc[0]), 4)
    0.7273
    """
    check_confidence(confidence)
    x, y = _paired(data, item, a, b, "concordance")
    n = len(x)
    sx2, sy2 = x.var(), y.var()
    r = float(np.corrcoef(x, y)[0, 1]) if sx2 > 0 and sy2 > 0 else np.nan
    p = float(2 * r * np.sqrt(sx2 * sy2) / (sx2 + sy2 + (y.mean() - x.mean()) ** 2))
    u = (y.mean() - x.mean()) / (sx2 * sy2) ** 0.25
    se = float(np.sqrt(((1 - r**2) * p**2 * (1 - p**2) / r**2 + 2 * p**3 * (1 - p) * u**2 / r
                        - 0.5 * p**4 * u**4 / r**2) / (n - 2)))  # fmt: skip
    z = stats.norm.ppf((1 + confidence) / 2)
    centre, half = np.arctanh(p), z * se / (1 - p**2)
    return pd.DataFrame([{
        "estimate": p, "ci_low": float(np.tanh(centre - half)), "ci_high": float(np.tanh(centre + half)), "se": se,
        "asymptotic_low": p - z * se, "asymptotic_high": p + z * se, "pearson_r": r, "bias_correction": p / r,
        "location_shift": float(u), "scale_shift": float(np.std(y, ddof=1) / np.std(x, ddof=1)), "n": n,
        "method": "Lin's concordance correlation (Lin 1989, 2000), z-transform interval",
    }])  # fmt: skip


@statistic(keys=("item", "rater"), labels=("score",))
def mcnemar(data: pd.DataFrame, *, item: str = "item_id", rater: str, score: str) -> pd.DataFrame:
    """McNemar's test: do two raters (a judge and a human) pass items at different rates?

    Parameters
    ----------
    data : DataFrame
        Long format, one row per verdict: exactly two raters, each item paired by ``item``
        (items only one rater scored are left out).
    item : str
        Item column, default ``"item_id"``.
    rater, score : str
        Rater column (two values) and the verdict column (booleans or 0/1). Required.

    Returns
    -------
    DataFrame
        Two rows, ``method`` ``"exact"`` (two-sided binomial test of the discordant pairs,
        ``statistic`` = the smaller discordant count, as statsmodels) and
        ``"chi-square, continuity corrected"`` (``(|b - c| - 1)^2 / (b + c)`` on 1 df).
        Columns ``statistic``, ``p_value``, ``b`` (first rater passes, second fails), ``c``
        (the other way), ``n`` (paired items), ``rater_a``, ``rater_b`` (sorted), ``method``.

    References
    ----------
    .. [1] McNemar, Q. (1947). Note on the sampling error of the difference between
       correlated proportions or percentages. Psychometrika 12, 153-157.
    .. [2] Edwards, A. L. (1948). Note on the "correction for continuity" in testing the
       significance of the difference between correlated proportions. Psychometrika 13,
       185-187.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": list(range(10)) * 2, "rater": ["judge"] * 10 + ["human"] * 10,
    ...                    "verdict": [1] * 9 + [0] + [1] * 5 + [0] * 5})
    >>> mcnemar(df, rater="rater", score="verdict")[["method", "b", "c", "p_value"]].round(4)
                                 method  b  c  p_value
    0                             exact  0  4   0.1250
    1  chi-square, continuity corrected  0  4   0.1336
    """
    require_columns(data, [item, rater, score])
    raters = sorted(data[rater].dropna().unique().tolist(), key=str)
    if len(raters) != 2:
        raise DataError(f"mcnemar needs exactly 2 raters in {rater!r}; found {len(raters)}: {raters[:10]}")
    verdict = pd.Series(_as_bool(data, score), index=data.index)
    if verdict.notna().any() and not verdict.dropna().isin((0, 1)).all():
        raise DataError(f"mcnemar: column {score!r} must hold verdicts (booleans or 0/1)")
    twice = data.duplicated([item, rater], keep=False).to_numpy()
    if twice.any():
        first = int(np.flatnonzero(twice)[0])
        raise DataError(f"mcnemar: rater {plain(data[rater].iloc[first])!r} gave {item} "
                        f"{plain(data[item].iloc[first])!r} two verdicts; keep one per item and rater")  # fmt: skip
    wide = pd.DataFrame({"item": data[item], "rater": data[rater], "v": verdict}).dropna()
    wide = wide.pivot(index="item", columns="rater", values="v").dropna()
    first, second = wide[raters[0]].to_numpy(), wide[raters[1]].to_numpy()
    b, c = int(((first == 1) & (second == 0)).sum()), int(((first == 0) & (second == 1)).sum())
    exact = float(min(1.0, 2 * stats.binom.cdf(min(b, c), b + c, 0.5))) if b + c else 1.0
    chi2 = (abs(b - c) - 1) ** 2 / (b + c) if b + c else np.nan
    common = {"b": b, "c": c, "n": len(wide), "rater_a": raters[0], "rater_b": raters[1]}
    return pd.DataFrame([
        {"statistic": float(min(b, c)), "p_value": exact, **common, "method": "exact"},
        {"statistic": chi2, "p_value": float(stats.chi2.sf(chi2, 1)) if b + c else np.nan, **common,
         "method": "chi-square, continuity corrected"},
    ])  # fmt: skip
