"""Hypothesis tests of the PRD's analysis plans, each with an effect size and its interval.

Module name: ``tests.py`` as in the design. pytest does not collect it (it collects
``test_*.py`` under ``tests/`` only); ``hypothesis.py`` was rejected because the test suite
uses the Hypothesis library and a module of that name would read as (and shadow) it.

Every function returns a tidy DataFrame with ``statistic``, ``p_value``, ``effect_size``,
``effect_ci_low``/``effect_ci_high`` (the effect size's interval, two-sided at ``confidence``), ``n`` and
``method``. p-values follow R's defaults so that numbers match ``wilcox.test``,
``friedman.test``, ``kruskal.test`` and ``chisq.test``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce._vocabulary import default_column, keywords_checked
from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._intervals import fisher_z_ci
from hce.stats._resample import (
    Bootstrap,
    bootstrapped,
    as_generator,
    bootstrap_sums,
    percentile_interval,
    resample_rows,
)
from hce.stats._validate import statistic

Alternative = Literal["two-sided", "less", "greater"]
Adjustment = Literal["bonferroni", "holm", "bh", "none"]
_ALTERNATIVES = ["two-sided", "less", "greater"]
_ADJUSTMENTS = ["bonferroni", "holm", "bh", "none"]
#: The same adjustments as statsmodels' ``multipletests`` and R's ``p.adjust`` name them.
ADJUSTMENT_ALIASES = {"fdr_bh": "bh", "BH": "bh", "fdr": "bh", "b": "bonferroni", "h": "holm"}


def adjustment(name: str, method: str) -> str:
    """hce's name of a p-value adjustment given as hce, statsmodels or R names it; else refused.

    Examples
    --------
    >>> adjustment("p_adjust_method", "fdr_bh")
    'bh'
    """
    method = ADJUSTMENT_ALIASES.get(method, method)
    check_choice(name, method, _ADJUSTMENTS)
    return method


# --------------------------------------------------------------------------- multiplicity
@keywords_checked
def p_adjust(p_values: Sequence[float] | np.ndarray, method: Adjustment = "holm") -> np.ndarray:
    """Adjust p-values for multiple comparisons, as R's ``p.adjust``; NaNs are left out.

    Parameters
    ----------
    p_values : array_like
        Unadjusted p-values.
    method : {"bonferroni", "holm", "bh", "none"}
        Bonferroni, Holm's step-down, Benjamini-Hochberg step-up (FDR), or none; statsmodels'
        and R's names (``"fdr_bh"``, ``"BH"``, ``"fdr"``) are accepted too.

    Returns
    -------
    ndarray
        Adjusted p-values, capped at 1, NaN where the input was NaN.

    References
    ----------
    .. [1] Holm, S. (1979). A simple sequentially rejective multiple test procedure.
       Scandinavian Journal of Statistics 6, 65-70.
    .. [2] Benjamini, Y., & Hochberg, Y. (1995). Controlling the false discovery rate: a
       practical and powerful approach to multiple testing. JRSS B 57, 289-300.
    .. [3] R Core Team. ``stats::p.adjust``.

    Examples
    --------
    >>> p_adjust([0.01, 0.02, 0.04], "holm")
    array([0.03, 0.04, 0.04])
    """
    method = adjustment("p_adjust", method)
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m == 0 or method == "none":
        out[ok] = q
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    if method == "bonferroni":
        adj = ranked * m
    elif method == "holm":
        adj = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    result = np.empty(m)
    result[order] = np.minimum(adj, 1.0)
    out[ok] = result
    return out


# --------------------------------------------------------------------------- data shaping
def two_levels(data: pd.DataFrame, group: str, a: object, b: object) -> tuple[object, object]:
    """The two levels compared: ``a`` and ``b`` as given, or the only two levels of ``group``."""
    levels = list(pd.unique(data[group].dropna()))
    if a is None and b is None:
        if len(levels) != 2:
            raise DataError(f"column {group!r} has {len(levels)} levels {levels}; name a= and b=")
        a, b = levels
    for name, level in (("a", a), ("b", b)):
        if level not in levels:
            raise DataError(f"{name}={level!r} is not a level of {group!r}; levels: {levels}")
    return a, b


def _two_groups(
    data: pd.DataFrame, group: str, value: str, a: object, b: object
) -> tuple[object, object, np.ndarray, np.ndarray]:
    require_columns(data, [group, value])
    a, b = two_levels(data, group, a, b)
    v = numeric_column(data, value)
    g = data[group].to_numpy()
    x, y = v[g == a], v[g == b]
    return a, b, x[~np.isnan(x)], y[~np.isnan(y)]


def _item_means(data: pd.DataFrame, item: str, group: str, value: str) -> pd.DataFrame:
    """One mean ``value`` per item within each group: repeated attempts of an item are not independent."""
    require_columns(data, [item, group, value])
    frame = data[[group, item]].assign(**{value: numeric_column(data, value)})
    means = frame.groupby([group, item], observed=True, sort=False)[value].mean().reset_index()
    shared = means[item].duplicated(keep=False)
    if shared.any():
        warn(f"{means.loc[shared, item].nunique()} item(s) in {item!r} appear in more than one "
             f"{group!r} group (first {means.loc[shared, item].iloc[0]!r}): the design is paired, "
             "which wilcoxon_paired uses; this test treats the groups as independent", HceWarning)
    return means


def block_matrix(
    data: pd.DataFrame, block: str, group: str, value: str, levels: Sequence[object] | None = None
) -> tuple[np.ndarray, list[object], int]:
    """Blocks x groups matrix of one value per cell; incomplete blocks dropped (and counted).

    Returns the matrix, the group labels (columns) and the number of blocks dropped.
    """
    require_columns(data, [block, group, value])
    frame = data[[block, group]].copy()
    frame["_v"] = numeric_column(data, value)
    if levels is not None:
        frame = frame[frame[group].isin(list(levels))]
    dup = frame.duplicated([block, group])
    if dup.any():
        row = frame.index[np.argmax(dup.to_numpy())]
        raise DataError(
            f"more than one {value!r} per {block!r} x {group!r} (first repeat at row {row!r}); "
            "pass one value per cell, e.g. item_spread() filtered to one criterion"
        )
    wide = frame.pivot(index=block, columns=group, values="_v")
    if levels is not None:
        wide = wide.reindex(columns=list(levels))
    complete = wide.notna().all(axis=1)
    dropped = int((~complete).sum())
    if dropped:
        shown = [str(g) for g in (levels if levels is not None else wide.columns)]
        warn(f"{dropped} {block!r} block(s) lack a {value!r} for some of {group!r} {', '.join(shown)} "
             "and were dropped: a paired or blocked test compares each block with itself", HceWarning)
    return wide[complete].to_numpy(dtype=float), list(wide.columns), dropped


# --------------------------------------------------------------------------- two samples
def _r_exact(n_x: int, n_y: int | None, has_ties: bool, exact: bool | None) -> bool:
    """R's rule: exact p when every sample is under 50 and there are no ties (or zeros)."""
    if exact is not None:
        return exact and not has_ties
    return n_x < 50 and (n_y is None or n_y < 50) and not has_ties


def _approx(continuity: bool) -> str:
    return "normal approximation with tie" + (" and continuity" if continuity else "") + " correction"


def mann_whitney_core(
    x: np.ndarray,
    y: np.ndarray,
    *,
    alternative: Alternative = "two-sided",
    exact: bool | None = None,
    continuity: bool = True,
    confidence: float = 0.95,
) -> dict[str, object]:
    """Mann-Whitney U of ``x`` vs ``y`` with Glass's rank-biserial correlation (NumPy core)."""
    n_x, n_y = len(x), len(y)
    if n_x == 0 or n_y == 0:
        raise DataError(f"Mann-Whitney needs both samples non-empty (sizes {n_x}, {n_y})")
    ties = len(np.unique(np.concatenate([x, y]))) < n_x + n_y
    use_exact = _r_exact(n_x, n_y, ties, exact)
    res = stats.mannwhitneyu(
        x, y, alternative=alternative, use_continuity=continuity,
        method="exact" if use_exact else "asymptotic",
    )  # fmt: skip
    u = float(res.statistic)
    r = 2 * u / (n_x * n_y) - 1
    low, high = _rank_biserial_ci(r, np.sqrt((n_x + n_y + 1) / (3 * n_x * n_y)), confidence)
    return {
        "statistic": u, "p_value": float(res.pvalue), "effect_size": r,
        "effect_ci_low": low, "effect_ci_high": high,
        "method": "Mann-Whitney U, " + ("exact" if use_exact else _approx(continuity))
                  + "; rank-biserial r" + _not_estimable(r),
    }  # fmt: skip


#: Why a rank-biserial interval is not given at |r| = 1 (the method column says it).
NOT_ESTIMABLE = ("; CI not estimable: every pair is ordered one way (|r| = 1), where the Fisher z interval "
                 "collapses to a point")


def _rank_biserial_ci(r: float, se: float, confidence: float) -> tuple[float, float]:
    """The Fisher z interval of a rank-biserial r; NaN at |r| = 1, where it would be [r, r] whatever n."""
    return (np.nan, np.nan) if abs(r) >= 1 else fisher_z_ci(r, se, confidence)


def _not_estimable(r: float) -> str:
    return NOT_ESTIMABLE if abs(r) >= 1 else ""


@statistic(keys=("condition", "item"), numbers=("score",), retired={"group": "condition", "value": "score"})
def mann_whitney(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    score: str = "sd",
    item: str | None = None,
    a: object = None,
    b: object = None,
    alternative: Alternative = "two-sided",
    exact: bool | None = None,
    continuity: bool = True,
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""Mann-Whitney U test (Wilcoxon rank-sum) of ``score`` between two groups (H1a).

    Parameters
    ----------
    data : DataFrame
        Long table, e.g. :func:`hce.stats.item_spread` output.
    condition : str, default "condition_id"
        Column holding the group labels.
    score : str, default "sd"
        Numeric column compared; NaNs are dropped.
    item : str, optional
        Unit column, as in the paired tests. Default ``None``: every row is one independent
        value (an :func:`item_spread` table). Given, the rows of each item within a group
        are averaged first, so an item judged several times counts once; an item found in
        both groups is warned about (the design is paired: :func:`wilcoxon_paired`).
    a, b : object
        The two levels compared (``a`` vs ``b``); optional when ``condition`` has two levels.
    alternative : {"two-sided", "less", "greater"}
        ``"less"``: ``a`` tends to be smaller than ``b``.
    exact : bool or None
        ``None`` follows R's ``wilcox.test``: exact p-value when both samples have fewer
        than 50 values and there are no ties, else the normal approximation with tie and
        continuity correction. ``True`` asks for the exact p (ignored under ties).
    continuity : bool, default True
        Continuity correction of the normal approximation (R's ``correct = TRUE``).
    %(confidence)s
        Here: the (two-sided) interval for the rank-biserial correlation.

    Returns
    -------
    DataFrame
        One row: ``a``, ``b``, ``n_a``, ``n_b``, ``median_a``, ``median_b``, ``statistic``
        (U of ``a``: pairs with a > b plus half the ties; R's ``W``), ``p_value``,
        ``effect_size`` (rank-biserial r, positive when ``a`` tends to be larger),
        ``effect_ci_low``, ``effect_ci_high``, ``n`` (n_a + n_b), ``alternative``, ``method``.

    Notes
    -----
    :math:`r = 2U_a/(n_a n_b) - 1` (Glass, 1965; Kerby, 2014). Its interval is
    :math:`\tanh(\operatorname{atanh} r \pm z\,SE)` with
    :math:`SE = \sqrt{(n_a + n_b + 1)/(3 n_a n_b)}`, as R's ``effectsize::rank_biserial``.
    With complete separation (:math:`|r| = 1`) the interval collapses to the point, as in
    ``effectsize``. When every value is tied, scipy's p is 1 where R's is NaN.

    References
    ----------
    .. [1] Kerby, D. S. (2014). The simple difference formula: an approach to teaching
       nonparametric correlation. Comprehensive Psychology 3, 11.IT.3.1.
    .. [2] R Core Team. ``stats::wilcox.test``.

    Examples
    --------
    >>> df = pd.DataFrame({"g": ["x"] * 3 + ["y"] * 3, "v": [1, 2, 3, 4, 5, 6]})
    >>> mann_whitney(df, condition="g", score="v")[["statistic", "p_value", "effect_size"]]
       statistic  p_value  effect_size
    0        0.0      0.1         -1.0
    """
    check_choice("alternative", alternative, _ALTERNATIVES)
    check_confidence(confidence)
    if item is not None:
        data = _item_means(data, item, condition, score)
    a, b, x, y = _two_groups(data, condition, score, a, b)
    core = mann_whitney_core(x, y, alternative=alternative, exact=exact, continuity=continuity,
                             confidence=confidence)
    row = {"a": a, "b": b, "n_a": len(x), "n_b": len(y),
           "median_a": float(np.median(x)), "median_b": float(np.median(y)),
           **core, "n": len(x) + len(y), "alternative": alternative}  # fmt: skip
    return ordered_columns(pd.DataFrame([row]))


def wilcoxon_core(
    d: np.ndarray,
    *,
    alternative: Alternative = "two-sided",
    exact: bool | None = None,
    continuity: bool = True,
    confidence: float = 0.95,
) -> dict[str, object]:
    """Wilcoxon signed-rank test of paired differences ``d`` (NumPy core, R's conventions).

    Zero differences are dropped before ranking (R, ``zero_method="wilcox"``); ``statistic``
    is R's ``V``, the sum of the ranks of the positive differences.
    """
    d = d[~np.isnan(d)]
    n_zero = int((d == 0).sum())
    nz = d[d != 0]
    n = nz.size
    base = {"n_pairs": d.size, "n_zero": n_zero}
    if n == 0:
        return {**base, "statistic": 0.0, "p_value": np.nan, "effect_size": np.nan,
                "effect_ci_low": np.nan, "effect_ci_high": np.nan,
                "method": "Wilcoxon signed-rank: every difference is zero"}  # fmt: skip
    ranks = stats.rankdata(np.abs(nz))
    v = float(ranks[nz > 0].sum())
    ties = len(np.unique(np.abs(nz))) < n
    use_exact = _r_exact(n, None, ties or n_zero > 0, exact)
    res = stats.wilcoxon(
        nz, zero_method="wilcox", correction=continuity, alternative=alternative,
        method="exact" if use_exact else "approx",
    )  # fmt: skip
    total = n * (n + 1) / 2
    r = (2 * v - total) / total
    se = np.sqrt((2 * n**3 + 3 * n**2 + n) / 6) / total
    low, high = _rank_biserial_ci(r, se, confidence)
    return {**base, "statistic": v, "p_value": float(res.pvalue), "effect_size": r,
            "effect_ci_low": low, "effect_ci_high": high,
            "method": "Wilcoxon signed-rank, " + ("exact" if use_exact else _approx(continuity))
                      + ", zeros dropped; matched-pairs rank-biserial r" + _not_estimable(r)}  # fmt: skip


@statistic(
    keys=("item", "condition"), numbers=("score",), retired={"pair": "item", "group": "condition", "value": "score"}
)
def wilcoxon_paired(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "condition_id",
    score: str = "mae",
    a: object = None,
    b: object = None,
    alternative: Alternative = "two-sided",
    exact: bool | None = None,
    continuity: bool = True,
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""Wilcoxon signed-rank test of ``a`` vs ``b``, paired by ``item`` (H1b).

    Parameters
    ----------
    data : DataFrame
        Long table with one ``score`` per pair x group (e.g. MAE per item x condition).
    item : str, default "item_id"
        Column that pairs the observations (the item).
    condition : str, default "condition_id"
        Column holding the two conditions.
    score : str, default "mae"
        Numeric column; differences are ``a - b``.
    a, b : object
        Levels compared; optional when ``condition`` has two levels.
    alternative : {"two-sided", "less", "greater"}
        ``"less"``: ``a`` tends to be smaller than ``b``.
    exact : bool or None
        ``None`` follows R: exact p when fewer than 50 non-zero differences, no ties and
        no zeros; else the normal approximation with tie and continuity correction.
    continuity : bool, default True
        Continuity correction of the normal approximation (R's ``correct = TRUE``).
    %(confidence)s
        Here: the interval for the matched-pairs rank-biserial correlation.

    Returns
    -------
    DataFrame
        One row: ``a``, ``b``, ``n_pairs`` (complete pairs), ``n_zero`` (zero differences,
        dropped), ``median_a``, ``median_b``, ``statistic`` (R's ``V``: sum of ranks of
        positive ``a - b``), ``p_value``, ``effect_size`` (matched-pairs rank-biserial r,
        positive when ``a`` tends to be larger), ``effect_ci_low``, ``effect_ci_high``, ``n`` (non-zero
        pairs), ``alternative``, ``method``.

    Notes
    -----
    :math:`r = (T_+ - T_-)/(T_+ + T_-)` over the :math:`n` non-zero differences (Kerby,
    2014); the interval is :math:`\tanh(\operatorname{atanh} r \pm z\,SE)` with
    :math:`SE = \sqrt{(2n^3 + 3n^2 + n)/6}\,/\,(n(n+1)/2)`, as ``effectsize::rank_biserial``.

    References
    ----------
    .. [1] Kerby, D. S. (2014). Comprehensive Psychology 3, 11.IT.3.1.
    .. [2] R Core Team. ``stats::wilcox.test(paired = TRUE)``.

    Examples
    --------
    >>> from hce.stats import mae_vs_target, simulated_log, wilcoxon_paired
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> mae = mae_vs_target(log)  # each item's absolute error per condition
    >>> wilcoxon_paired(mae)[["a", "b", "n_pairs", "statistic", "p_value"]].round(4)
       a  b  n_pairs  statistic  p_value
    0  A  B        8        5.0   0.2918
    """
    check_choice("alternative", alternative, _ALTERNATIVES)
    check_confidence(confidence)
    require_columns(data, [item, condition, score])
    a, b = two_levels(data, condition, a, b)
    matrix, _, _ = block_matrix(data, item, condition, score, [a, b])
    core = wilcoxon_core(matrix[:, 0] - matrix[:, 1], alternative=alternative, exact=exact,
                         continuity=continuity, confidence=confidence)  # fmt: skip
    median_a, median_b = (np.median(matrix, axis=0) if len(matrix) else (np.nan, np.nan))
    row = {"a": a, "b": b, **core, "median_a": float(median_a), "median_b": float(median_b),
           "n": core["n_pairs"] - core["n_zero"], "alternative": alternative}  # fmt: skip
    return ordered_columns(pd.DataFrame([row]))


# --------------------------------------------------------------------------- k related samples
def tie_term(matrix: np.ndarray) -> np.ndarray:
    """Per row, the sum over tied groups of t^3 - t (t = group size), vectorised.

    Each element of a tied group of size t has max rank - min rank + 1 = t, so summing
    t^2 - 1 over the elements gives t(t^2 - 1) per group.
    """
    t = stats.rankdata(matrix, method="max", axis=-1) - stats.rankdata(matrix, method="min", axis=-1) + 1
    return (t.astype(float) ** 2 - 1).sum(axis=-1)


def _within_block_ranks(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks within each block and each block's tie term sum(t^3 - t)."""
    return stats.rankdata(matrix, axis=1), tie_term(matrix)


def _friedman_from_sums(rank_sums, tie_sum, n, k):
    denom = n * k * (k + 1) - tie_sum / (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = 12 * ((rank_sums - n * (k + 1) / 2) ** 2).sum(axis=-1) / denom
    return chi2


@bootstrapped
def friedman_core(
    matrix: np.ndarray,
    *,
    boot: Bootstrap = Bootstrap(),
) -> dict[str, object]:
    """Friedman chi-squared (tie-corrected, as R) and Kendall's W on a blocks x groups matrix."""
    confidence, n_boot, random_state = boot
    n, k = matrix.shape
    if n < 2 or k < 2:
        raise DataError(f"Friedman's test needs >= 2 complete blocks and >= 2 groups (got {n} x {k})")
    ranks, ties = _within_block_ranks(matrix)
    chi2 = float(_friedman_from_sums(ranks.sum(axis=0), ties.sum(), n, k))
    w = chi2 / (n * (k - 1))
    # blocks resampled through their sufficient statistics, rank sums and tie terms; with k
    # groups a block has at most a few dozen rank patterns, so the multinomial over distinct
    # patterns (collapse) costs nothing at 10,000 blocks
    sums = bootstrap_sums(np.column_stack([ranks, ties]), n_boot, as_generator(random_state), collapse=True)
    boot_w = _friedman_from_sums(sums[:, :k], sums[:, k], n, k) / (n * (k - 1))
    low, high = percentile_interval(boot_w, confidence) if np.isfinite(w) else (np.nan, np.nan)
    return {
        "statistic": chi2, "df1": k - 1, "p_value": float(stats.chi2.sf(chi2, k - 1)),
        "effect_size": w, "effect_ci_low": float(low), "effect_ci_high": float(high), "n": n,
        "method": f"Friedman chi-squared (tie-corrected); Kendall's W, percentile bootstrap "
                  f"CI over blocks (B={n_boot})",
    }  # fmt: skip


@statistic(
    keys=("item", "condition"), numbers=("score",), retired={"block": "item", "group": "condition", "value": "score"}
)
def friedman(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "condition_id",
    score: str = "sd",
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    r"""Friedman's test of ``score`` across groups within blocks, with Kendall's W (H2, H3).

    Parameters
    ----------
    data : DataFrame
        One ``score`` per block x group (e.g. SD per item x prompt).
    item : str, default "item_id"
        Block column (the item); blocks missing a group are dropped with a warning.
    condition : str, default "condition_id"
        Group column (prompt, model).
    score : str, default "sd"
        Numeric column compared.
    %(confidence)s
        Here: the bootstrap interval for W.
    %(n_boot)s
        Here: resamples of blocks for the interval of W.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``statistic`` (Friedman chi-squared), ``df1`` (k - 1), ``p_value``,
        ``effect_size`` (Kendall's W), ``effect_ci_low``, ``effect_ci_high``, ``n`` (complete blocks),
        ``k`` (groups), ``n_dropped`` (incomplete blocks), ``method``.

    Notes
    -----
    With :math:`R_j` the rank sums, :math:`t` the sizes of tied groups within blocks,
    :math:`\chi^2_F = 12\sum_j (R_j - n(k+1)/2)^2 / [nk(k+1) - \sum(t^3 - t)/(k-1)]`
    (R's ``friedman.test``) and :math:`W = \chi^2_F / (n(k-1))`, the tie-corrected
    Kendall's W. The interval for W resamples blocks (percentile bootstrap).

    References
    ----------
    .. [1] Hollander, M., & Wolfe, D. A. (1973). Nonparametric Statistical Methods, 139-146.
    .. [2] R Core Team. ``stats::friedman.test``.

    Examples
    --------
    >>> from hce.stats import friedman, item_spread, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> spread = item_spread(log)  # one row per item x condition: its SD across attempts
    >>> friedman(spread, random_state=0)[["k", "n", "statistic", "p_value", "effect_size"]]
       k  n  statistic  p_value  effect_size
    0  2  8        0.5   0.4795       0.0625
    """
    confidence, n_boot, random_state = boot
    check_confidence(confidence)
    matrix, levels, dropped = block_matrix(data, item, condition, score)
    core = friedman_core(matrix, boot=boot)
    core.update({"k": len(levels), "n_dropped": dropped})
    return ordered_columns(pd.DataFrame([core]))


PosthocMethod = Literal["nemenyi", "conover", "wilcoxon"]


@statistic(
    keys=("item", "condition"), numbers=("score",), retired={"block": "item", "group": "condition", "value": "score"}
)
def posthoc(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "condition_id",
    score: str = "sd",
    method: PosthocMethod = "nemenyi",
    p_adjust_method: Adjustment = "holm",
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""Pairwise comparisons after Friedman's test, as a tidy table (one row per pair).

    Parameters
    ----------
    data, item, condition, score
        As in :func:`friedman` (the same complete blocks are used).
        Defaults: ``item="item_id"``, ``condition="condition_id"``, ``score="sd"``.
    method : {"nemenyi", "conover", "wilcoxon"}
        ``"nemenyi"``: Nemenyi's test on mean ranks (studentized range, already
        family-wise); ``"conover"``: Conover's t test on rank sums; ``"wilcoxon"``:
        pairwise Wilcoxon signed-rank tests (R's conventions, as :func:`wilcoxon_paired`).
    p_adjust_method : {"bonferroni", "holm", "bh", "none"}
        Correction for ``conover`` and ``wilcoxon`` (Nemenyi's p is already adjusted), as
        :func:`p_adjust` names it (statsmodels' ``"fdr_bh"`` accepted).
    %(confidence)s
        Here: the interval for the effect size.

    Returns
    -------
    DataFrame
        One row per pair: ``a``, ``b``, ``n`` (blocks), ``mean_rank_a``, ``mean_rank_b``
        (within-block ranks), ``median_a``, ``median_b``, ``statistic`` (Nemenyi: the
        studentized range q; Conover: t; Wilcoxon: V), ``df1`` (Conover: (n-1)(k-1)),
        ``p_value``, ``p_adjusted``, ``adjustment``, ``effect_size`` (matched-pairs
        rank-biserial r of a - b, positive when ``a`` tends to be larger), ``effect_ci_low``,
        ``effect_ci_high``, ``method``.

    Notes
    -----
    With mean ranks :math:`\bar R_j`, Nemenyi's
    :math:`q = \sqrt 2\,|\bar R_a - \bar R_b| / \sqrt{k(k+1)/(6n)}` is referred to the
    studentized range with k groups and infinite df. Conover's
    :math:`t = |R_a - R_b| / \sqrt{2(nA - \sum_j R_j^2)/((n-1)(k-1))}` uses rank sums
    :math:`R_j` and :math:`A = \sum r_{ij}^2` (Conover 1999, p. 371), with (n-1)(k-1) df.

    References
    ----------
    .. [1] Demsar, J. (2006). Statistical comparisons of classifiers over multiple data
       sets. JMLR 7, 1-30.
    .. [2] Conover, W. J. (1999). Practical Nonparametric Statistics, 3rd ed. Wiley.
    .. [3] Pohlert, T. PMCMRplus: ``frdAllPairsNemenyiTest``, ``frdAllPairsConoverTest``;
       scikit-posthocs ``posthoc_nemenyi_friedman``, ``posthoc_conover_friedman``.

    Examples
    --------
    >>> from hce.stats import posthoc, item_spread, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> spread = item_spread(log)  # one row per item x condition: its SD across attempts
    >>> posthoc(spread)[["a", "b", "statistic", "p_value", "p_adjusted"]]
       a  b  statistic  p_value  p_adjusted
    0  A  B        1.0   0.4795      0.4795
    """
    check_choice("method", method, ["nemenyi", "conover", "wilcoxon"])
    p_adjust_method = adjustment("p_adjust_method", p_adjust_method)
    check_confidence(confidence)
    matrix, levels, _ = block_matrix(data, item, condition, score)
    n, k = matrix.shape
    if n < 2 or k < 2:
        raise DataError(f"post-hoc tests need >= 2 complete blocks and >= 2 groups (got {n} x {k})")
    ranks, _ = _within_block_ranks(matrix)
    rank_sums = ranks.sum(axis=0)
    rows = []
    for i, j in itertools.combinations(range(k), 2):
        pair = wilcoxon_core(matrix[:, i] - matrix[:, j], confidence=confidence)
        row = {"a": levels[i], "b": levels[j], "n": n,
               "mean_rank_a": rank_sums[i] / n, "mean_rank_b": rank_sums[j] / n,
               "median_a": float(np.median(matrix[:, i])),
               "median_b": float(np.median(matrix[:, j])),
               "effect_size": pair["effect_size"], "effect_ci_low": pair["effect_ci_low"],
               "effect_ci_high": pair["effect_ci_high"], "df1": np.nan}  # fmt: skip
        diff = abs(rank_sums[i] - rank_sums[j])
        if method == "nemenyi":
            q = np.sqrt(2) * (diff / n) / np.sqrt(k * (k + 1) / (6 * n))
            row.update(statistic=q, p_value=float(stats.studentized_range.sf(q, k, np.inf)))
        elif method == "conover":
            df = (n - 1) * (k - 1)
            scale = np.sqrt(2 * (n * (ranks**2).sum() - (rank_sums**2).sum()) / df)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = diff / scale
            row.update(statistic=t, df1=df, p_value=float(2 * stats.t.sf(t, df)))
        else:
            row.update(statistic=pair["statistic"], p_value=pair["p_value"])
        rows.append(row)
    out = pd.DataFrame(rows)
    if method == "nemenyi":
        out["p_adjusted"] = out["p_value"]
        out["adjustment"] = "single-step (studentized range)"
        name = "Nemenyi (Friedman mean ranks, studentized range)"
    else:
        out["p_adjusted"] = p_adjust(out["p_value"].to_numpy(), p_adjust_method)
        out["adjustment"] = p_adjust_method
        name = ("Conover (Friedman rank sums, t)" if method == "conover"
                else "pairwise Wilcoxon signed-rank (R conventions)")  # fmt: skip
    out["method"] = name + "; effect size: matched-pairs rank-biserial r" + out["effect_size"].map(_not_estimable)
    return ordered_columns(out)


# --------------------------------------------------------------------------- independent groups
def kruskal_core(groups: list[np.ndarray]) -> tuple[float, float, float]:
    """Kruskal-Wallis H (tie-corrected, R's ``kruskal.test``), its p and epsilon squared."""
    n = sum(len(g) for g in groups)
    if np.ptp(np.concatenate(groups)) == 0:  # every value tied: H is 0/0, as NaN in R
        return np.nan, np.nan, np.nan
    h, p = stats.kruskal(*groups)
    return float(h), float(p), float(h / (n - 1))


@statistic(keys=("condition",), numbers=("score",), retired={"group": "condition", "value": "score"})
def kruskal_wallis(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    score: str | None = None,
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    r"""Kruskal-Wallis test of ``score`` across independent groups, with epsilon squared.

    Parameters
    ----------
    data : DataFrame
        Long table; rows with a missing ``condition`` or ``score`` are dropped.
    condition : str, default "condition_id"
        Grouping column (e.g. a demographic stratum).
    score : str, optional
        Numeric column. Default: the table's own name for it (``hce._vocabulary.TABLES``):
        ``"sd"`` in :func:`item_spread`'s table, as :func:`mann_whitney` reads it, else
        ``"total"`` (an attempt log).
    %(confidence)s
        Here: the bootstrap interval for epsilon squared.
    %(n_boot)s
        Here: resamples (stratified by group).
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``statistic`` (H), ``df1`` (groups - 1), ``p_value``, ``effect_size``
        (:math:`\varepsilon^2_R = H/(n-1)`), ``effect_ci_low``, ``effect_ci_high``, ``n``, ``k``, ``method``.

    Notes
    -----
    H is tie-corrected as R's ``kruskal.test``; with every value tied it is NaN. The
    bootstrap interval of :math:`\varepsilon^2_R \ge 0` is biased away from 0 when the true
    effect is near 0, so read a lower bound near 0 as "no evidence of an effect".

    References
    ----------
    .. [1] Tomczak, M., & Tomczak, E. (2014). The need to report effect size estimates
       revisited. Trends in Sport Sciences 21, 19-25.

    Examples
    --------
    >>> from hce.stats import kruskal_wallis, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> kruskal_wallis(log, random_state=0)[["k", "n", "statistic", "p_value"]].round(4)
       k   n  statistic  p_value
    0  2  64      1.535   0.2154
    """
    confidence, n_boot, random_state = boot
    score = score or default_column(data, "score")
    check_confidence(confidence)
    require_columns(data, [condition, score])
    v = numeric_column(data, score)
    g = data[condition].to_numpy()
    keep = ~np.isnan(v) & pd.notna(data[condition]).to_numpy()
    levels = list(pd.unique(g[keep]))
    groups = [v[keep & (g == level)] for level in levels]
    if len(groups) < 2:
        raise DataError(f"Kruskal-Wallis needs >= 2 groups in {condition!r}; found {levels}")
    row = kruskal_row(groups, confidence, n_boot, random_state)
    return ordered_columns(pd.DataFrame([row]))


def _bootstrap_kruskal_h(
    groups: list[np.ndarray], n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    r"""Tie-corrected H of ``n_boot`` stratified resamples, from counts of distinct values.

    A resample only holds observed values, so with :math:`c_j` copies of the j-th smallest
    distinct value the average rank of each copy is :math:`\sum_{i \le j} c_i - (c_j - 1)/2`
    and the tie term is :math:`\sum_j c_j^3 - c_j`: no sorting per resample.
    """
    values, codes = np.unique(np.concatenate(groups), return_inverse=True)
    u = values.size
    sizes = np.array([len(x) for x in groups], dtype=float)
    n = sizes.sum()
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in groups])])
    rows = (np.arange(n_boot) * u)[:, None]
    counts = []
    for g, x in enumerate(groups):
        picked = codes[offsets[g]:offsets[g + 1]][resample_rows(len(x), n_boot, rng)]
        counts.append(np.bincount((rows + picked).ravel(), minlength=n_boot * u).reshape(n_boot, u))
    total = sum(counts).astype(float)
    avg_rank = np.cumsum(total, axis=1) - (total - 1) / 2
    rank_sums = np.stack([(c * avg_rank).sum(axis=1) for c in counts], axis=1)
    h = 12 / (n * (n + 1)) * (rank_sums**2 / sizes).sum(axis=1) - 3 * (n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return h / (1 - (total**3 - total).sum(axis=1) / (n**3 - n))


def kruskal_row(groups, confidence, n_boot, random_state) -> dict[str, object]:
    """Kruskal-Wallis row with a stratified percentile-bootstrap interval for epsilon squared."""
    h, p, eps2 = kruskal_core(groups)
    rng = as_generator(random_state)
    n = sum(len(x) for x in groups)
    # a resample with one distinct value has H = 0/0; no separation means epsilon squared 0
    boot_eps2 = np.nan_to_num(_bootstrap_kruskal_h(groups, n_boot, rng) / (n - 1), nan=0.0)
    low, high = percentile_interval(boot_eps2, confidence)
    # Near its bound at 0, epsilon squared's bootstrap distribution lies above the estimate and the
    # percentile interval can exclude it; the interval then starts at the bound, and says so.
    floored = bool(low > eps2)
    low = 0.0 if floored else float(low)
    return {"statistic": h, "df1": len(groups) - 1, "p_value": p, "effect_size": eps2,
            "effect_ci_low": low, "effect_ci_high": float(high), "n": n, "k": len(groups),
            "method": f"Kruskal-Wallis H (tie-corrected); epsilon squared, stratified "
                      f"percentile bootstrap CI (B={n_boot})"
                      + ("; lower limit 0, the percentile one excluding the estimate near the bound" if floored else "")}  # fmt: skip


def ordered_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Put the conventional columns in the conventional order; keep any others after."""
    first = ["a", "b", "k", "n_a", "n_b", "n_pairs", "n_zero", "mean_rank_a", "mean_rank_b",
             "median_a", "median_b", "statistic", "df1", "df2", "p_value", "epsilon", "p_gg",
             "p_adjusted", "adjustment", "effect_size", "effect_ci_low", "effect_ci_high", "n"]  # fmt: skip
    cols = [c for c in first if c in table.columns]
    cols += [c for c in table.columns if c not in cols and c != "method"] + ["method"]
    return table[cols]
