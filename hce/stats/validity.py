"""Validity evidence for a rating instrument, following the PDSQI-9 validation design.

The PDSQI-9 study (seeds/002, section 3.5) gathered, besides reliability and factor structure:

* **discriminant validity**: a Mann-Whitney U test between the lowest- and highest-quality
  summaries (GPT-4o with error-free prompts against Llama/Mixtral with error-prone prompts);
* **substantive validity**: Pearson correlations between an input characteristic (note
  length) and attribute scores (Organized r = -0.190, p = 0.037; Succinct r = -0.200);
* **rater expertise**: a Wilcoxon signed-rank test of junior against senior physicians on
  the summaries both rated (n = 48, p = 0.187).

Each function takes a long ratings table (one row per rating) and returns one row per
attribute, with an effect size and its confidence interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._validate import statistic
from hce.stats.effects import CORRELATION_METHODS, CorrelationMethod, correlation_core

__all__ = ["discriminant_validity", "rater_expertise", "substantive_validity"]

_ALL = "all"


def _require_values(data: pd.DataFrame, column: str, named: dict[str, object]) -> None:
    """Each value of ``named`` is a value of ``column``; else the error leads with its key."""
    present = set(data[column].dropna().unique())
    for said, value in named.items():
        if value not in present:
            raise DataError(f"{said} column {column!r}; values present: {sorted(map(str, present))}")


def _by_attribute(data: pd.DataFrame, attribute: str | None):
    """(attribute label, rows) pairs; a single ``"all"`` group when no attribute column."""
    if attribute is None:
        return [(_ALL, data)]
    return [(a, rows) for a, rows in data.groupby(attribute, sort=True, observed=True)]


def _auc_delong(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """P(X > Y) + P(X = Y)/2 and its DeLong standard error (ties count one half)."""
    psi = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    auc = float(psi.mean())
    v10, v01 = psi.mean(1), psi.mean(0)
    var = (v10.var(ddof=1) / x.size if x.size > 1 else 0.0) + (
        v01.var(ddof=1) / y.size if y.size > 1 else 0.0)
    return auc, float(np.sqrt(var))


@statistic(keys=("condition", "attribute"), numbers=("score",), retired={"group": "condition"})
def discriminant_validity(
    data: pd.DataFrame,
    *,
    condition: str,
    score: str,
    high: object,
    low: object,
    attribute: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Do scores separate known high- from known low-quality texts? (Mann-Whitney U).

    PDSQI-9 compared summaries built to be good (GPT-4o, error-free prompts) with summaries
    built to be poor (Llama 3-8b and Mixtral 8x7b, error-prone prompts) and reported the
    Mann-Whitney U test per attribute; a valid instrument scores the first group higher.

    Parameters
    ----------
    data : DataFrame
        Long ratings: one row per score.
    condition : str
        Column naming each row's quality group.
    score : str
        Numeric score column.
    high, low : object
        Values of ``condition`` for the high- and the low-quality texts.
    %(attribute_effect)s

    Returns
    -------
    DataFrame
        ``attribute, n_high, n_low, median_high, median_low, statistic`` (U of the high
        group), ``p_value`` (two-sided), ``effect_size`` (rank-biserial r), ``effect_ci_low,
        effect_ci_high, method``.

    Notes
    -----
    U counts pairs (high, low) with the high score larger, ties one half. p is exact when
    both groups have fewer than 50 scores and there are no ties, otherwise from the normal
    approximation with tie and continuity corrections (R ``wilcox.test`` defaults). The
    rank-biserial correlation r = 2 U / (n_high n_low) - 1 = 2 AUC - 1 runs from -1 to 1
    (1: every high score above every low one); its interval is AUC +/- z SE_DeLong mapped
    to r and clipped to [-1, 1].

    References
    ----------
    .. [1] Mann HB, Whitney DR (1947). On a test of whether one of two random variables is
       stochastically larger than the other. Ann Math Stat 18, 50-60.
    .. [2] DeLong ER, DeLong DM, Clarke-Pearson DL (1988). Comparing the areas under two or
       more correlated ROC curves. Biometrics 44, 837-845.
    .. [3] Croxford E et al. (2025). Development and validation of the Provider Documentation
       Summarization Quality Instrument (PDSQI-9). (seeds/002)

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"model": ["good"] * 5 + ["poor"] * 5,
    ...                   "score": [5, 4, 5, 4, 3, 2, 3, 1, 2, 2]})
    >>> res = discriminant_validity(d, condition="model", score="score", high="good", low="poor")
    >>> res[["statistic", "effect_size"]].round(2).to_string(index=False)
    ' statistic  effect_size\\n      24.5         0.96'
    """
    check_confidence(confidence)
    require_columns(data, [condition, score] + ([attribute] if attribute else []))
    _require_values(data, condition, {f"high={high!r} is not a value of": high, f"low={low!r} is not a value of": low})
    z = stats.norm.ppf(0.5 + confidence / 2)
    rows = []
    for label, part in _by_attribute(data, attribute):
        y = numeric_column(part, score)
        x_high = y[(part[condition] == high).to_numpy() & np.isfinite(y)]
        x_low = y[(part[condition] == low).to_numpy() & np.isfinite(y)]
        if x_high.size == 0 or x_low.size == 0:
            raise DataError(f"attribute {label!r}: a group has no scores "
                            f"(high {x_high.size}, low {x_low.size})")
        # R wilcox.test: exact when both groups are under 50 and there are no ties, else the
        # normal approximation with tie and continuity corrections
        tied = np.unique(np.r_[x_high, x_low]).size < x_high.size + x_low.size
        exact = not tied and x_high.size < 50 and x_low.size < 50
        test = stats.mannwhitneyu(x_high, x_low, alternative="two-sided",
                                  method="exact" if exact else "asymptotic")
        auc, se = _auc_delong(x_high, x_low)
        rows.append({
            "attribute": label, "n_high": x_high.size, "n_low": x_low.size,
            "median_high": float(np.median(x_high)), "median_low": float(np.median(x_low)),
            "statistic": float(test.statistic), "p_value": float(test.pvalue),
            "effect_size": 2 * auc - 1,
            "effect_ci_low": max(2 * (auc - z * se) - 1, -1.0),
            "effect_ci_high": min(2 * (auc + z * se) - 1, 1.0),
            "method": "Mann-Whitney U; rank-biserial r with DeLong interval"})
    return pd.DataFrame(rows)


@statistic(keys=("attribute", "item"), numbers=("predictor", "score"), retired={"target": "item"})
def substantive_validity(
    data: pd.DataFrame,
    *,
    predictor: str,
    score: str,
    attribute: str | None = None,
    item: str | None = None,
    method: CorrelationMethod = "pearson",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Correlation of an input characteristic (e.g. note length) with each attribute's score.

    PDSQI-9 tested whether longer source notes lowered the Organized, Succinct and Thorough
    scores, as theory predicts for summarisation (Pearson r, seeds/002 section 4).

    Parameters
    ----------
    data : DataFrame
        Long ratings: one row per score.
    predictor : str
        Numeric input characteristic (word or token count of the source, say).
    score : str
        Numeric score column.
    attribute : str, optional
        Column of rubric attributes; one row of output per attribute.
    item : str, optional
        Column identifying the rated text. When given, scores are averaged per text (over
        raters or attempts) before correlating, as the seed did; the predictor must then be
        constant within a text.
    method : {"pearson", "spearman", "kendall"}, default "pearson"
        Correlation coefficient (``"kendall"``: tau-b, ties handled).
    %(confidence)s

    Returns
    -------
    DataFrame
        ``attribute, n, estimate, ci_low, ci_high, statistic`` (t; for Kendall T or z),
        ``df1`` (n - 2; NaN for Kendall), ``p_value`` (two-sided), ``method``.

    Notes
    -----
    As :func:`hce.stats.correlation`: t = r sqrt(n - 2) / sqrt(1 - r^2) on n - 2 df (for
    Spearman the same t approximation R ``cor.test(exact=FALSE)`` uses); Kendall's test as
    R's ``cor.test(method = "kendall")``. Interval: tanh(atanh(r) +/- z sqrt(v)),
    v = 1/(n - 3) for Pearson, (1 + r^2/2)/(n - 3) for Spearman, 0.437/(n - 4) for Kendall
    (Bonett & Wright 2000); NaN when n is too small for v.

    References
    ----------
    .. [1] Bonett DG, Wright TA (2000). Sample size requirements for estimating Pearson,
       Kendall and Spearman correlations. Psychometrika 65, 23-28.
    .. [2] Messick S (1995). Standards of validity and the validity of standards in
       performance assessment. Educ Meas Issues Pract 14(4), 5-8.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"words": [120, 340, 560, 800, 950, 1200],
    ...                   "score": [5, 5, 4, 4, 3, 2]})
    >>> res = substantive_validity(d, predictor="words", score="score")
    >>> round(float(res["estimate"].iloc[0]), 3)
    -0.953
    """
    check_choice("method", method, CORRELATION_METHODS)
    check_confidence(confidence)
    cols = [predictor, score] + [c for c in (attribute, item) if c]
    require_columns(data, cols)
    rows = []
    for label, part in _by_attribute(data, attribute):
        frame = pd.DataFrame({"x": numeric_column(part, predictor),
                              "y": numeric_column(part, score)}, index=part.index)
        if item is not None:
            frame["t"] = part[item].to_numpy()
            spread = frame.groupby("t")["x"].agg(lambda v: v.max() - v.min())
            if (spread > 0).any():
                raise DataError(f"predictor {predictor!r} varies within target "
                                f"{spread[spread > 0].index[0]!r}; it must be one value per text")
            frame = frame.groupby("t")[["x", "y"]].mean()
        frame = frame.dropna()
        n = len(frame)
        if n < 3:
            raise DataError(f"attribute {label!r}: {n} complete pairs; at least 3 needed")
        row = correlation_core(frame["x"].to_numpy(), frame["y"].to_numpy(), method, confidence,
                               names=(predictor, score))
        rows.append({"attribute": label, "n": n, **row, "method": f"{row['method']}; predictor {predictor!r}"})
    return pd.DataFrame(rows)


@statistic(
    keys=("item", "condition", "attribute"), numbers=("score",),
    retired={"target": "item", "rater_group": "condition", "groups": "levels"},
)
def rater_expertise(
    data: pd.DataFrame,
    *,
    item: str,
    condition: str,
    score: str,
    levels: Sequence[object] = ("junior", "senior"),
    attribute: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Do less and more experienced raters score the same texts alike? (Wilcoxon signed-rank).

    PDSQI-9 compared its five junior physicians with two senior physicians on the 48
    summaries both groups rated (Wilcoxon signed-rank, p = 0.187): no difference supports
    use of the instrument across levels of expertise.

    Parameters
    ----------
    data : DataFrame
        Long ratings: one row per score.
    item : str
        Column identifying the rated text; texts rated by both groups are paired.
    condition : str
        Column giving each rating's rater group.
    score : str
        Numeric score column.
    levels : pair of objects, default ("junior", "senior"), default ('junior', 'senior')
        The two values of ``condition`` compared (first minus second).
    %(attribute_effect)s

    Returns
    -------
    DataFrame
        ``attribute, n`` (paired texts), ``median_a, median_b`` (per-text mean scores of each
        group), ``statistic`` (W+, sum of ranks of positive differences, R's V),
        ``p_value`` (two-sided), ``effect_size`` (matched-pairs rank-biserial r),
        ``effect_ci_low, effect_ci_high, method``.

    Notes
    -----
    Each group's scores are averaged per text; differences d = a - b of texts rated by both
    are tested with the signed-rank test as R ``wilcox.test(paired = TRUE)`` runs it: zeros
    dropped, exact below 50 pairs without ties or zeros, otherwise the normal approximation
    with tie and continuity corrections.
    r = (W+ - W-) / (W+ + W-); its interval uses the normal approximation to W+ with
    variance m(m+1)(2m+1)/24 (m non-zero differences), mapped to r and clipped to [-1, 1].

    References
    ----------
    .. [1] Wilcoxon F (1945). Individual comparisons by ranking methods. Biometrics Bull 1,
       80-83.
    .. [2] Kerby DS (2014). The simple difference formula: an approach to teaching
       nonparametric correlation. Compr Psychol 3, 11.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"text": [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
    ...                   "level": ["junior", "senior"] * 6,
    ...                   "score": [4, 4, 3, 4, 5, 4, 2, 3, 4, 4, 3, 4]})
    >>> res = rater_expertise(d, item="text", condition="level", score="score")
    >>> res[["n", "statistic", "effect_size"]].round(2).to_string(index=False)
    ' n  statistic  effect_size\\n 6        2.5         -0.5'
    """
    check_confidence(confidence)
    require_columns(data, [item, condition, score] + ([attribute] if attribute else []))
    if len(levels) != 2:
        raise DataError(f"groups must name exactly two rater groups, got {levels!r}")
    a, b = levels
    _require_values(data, condition, {f"rater group {g!r} not found in": g for g in (a, b)})
    z = stats.norm.ppf(0.5 + confidence / 2)
    rows = []
    for label, part in _by_attribute(data, attribute):
        means = (part.assign(_y=numeric_column(part, score))
                 .groupby([item, condition], observed=True)["_y"].mean().unstack())
        paired = means[[a, b]].dropna()
        d = (paired[a] - paired[b]).to_numpy()
        nz = d[d != 0]
        m = nz.size
        if m == 0:
            raise DataError(f"attribute {label!r}: the groups agree on every paired text "
                            f"({len(d)} texts); the signed-rank test is undefined")
        # R wilcox.test(paired = TRUE): exact below 50 pairs without ties or zeros, else the
        # normal approximation with continuity correction
        exact = m == len(d) and m < 50 and np.unique(np.abs(nz)).size == m
        test = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided",
                              method="exact" if exact else "approx", correction=not exact)
        ranks = stats.rankdata(np.abs(nz))
        w_plus = float(ranks[nz > 0].sum())
        total = m * (m + 1) / 2
        half = z * np.sqrt(m * (m + 1) * (2 * m + 1) / 24)
        rows.append({
            "attribute": label, "n": len(d), "median_a": float(paired[a].median()),
            "median_b": float(paired[b].median()), "statistic": w_plus,
            "p_value": float(test.pvalue), "effect_size": (2 * w_plus - total) / total,
            "effect_ci_low": max((2 * (w_plus - half) - total) / total, -1.0),
            "effect_ci_high": min((2 * (w_plus + half) - total) / total, 1.0),
            "method": f"Wilcoxon signed-rank, {a} minus {b}; matched-pairs rank-biserial r"})
    return pd.DataFrame(rows)
