"""Effect sizes and agreement with targets: Cohen's d / d_z, correlations, MAE, KL divergence."""

from __future__ import annotations

import warnings

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError, HceWarning
from hce.stats._intervals import fisher_z_ci, noncentral_t_ci
from hce.stats._resample import Bootstrap, as_generator, bootstrap_sums, check_n_boot, percentile_interval
from hce.stats._rank_permutation import PERMUTATION_MAX_N, heavy_ties, kendall_permutation_p, spearman_permutation_p
from hce.stats.spread import as_list, present_error, valid_mask
from hce.stats.tests import _two_groups, block_matrix, two_levels
from hce.stats._validate import statistic


@statistic(keys=("condition",), numbers=("score",), retired={"group": "condition", "value": "score", "pair": "item"})
def cohens_d(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    score: str = "sd",
    a: object = None,
    b: object = None,
    paired: bool = False,
    item: str = "item_id",
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""Cohen's d (independent groups, pooled SD) or d_z (paired), with noncentral-t intervals.

    Parameters
    ----------
    data : DataFrame
        Long table with ``condition`` and ``score`` (and ``item`` when paired).
    condition : str, default "condition_id"
        Column holding the two conditions.
    score : str, default "sd"
        Numeric column.
    a, b : object
        Levels compared (``a`` minus ``b``); optional when ``condition`` has two levels.
    paired : bool, default False
        ``True`` gives :math:`d_z` on the differences within ``item`` (incomplete pairs
        dropped with a warning).
    item : str, default "item_id"
        Pairing column (used when ``paired``).
    %(confidence)s

    Returns
    -------
    DataFrame
        One row: ``a``, ``b``, ``n_a``, ``n_b`` (pairs twice when paired), ``mean_a``,
        ``mean_b``, ``statistic`` (Student's t, pooled or paired), ``df1``, ``p_value``
        (two-sided), ``effect_size`` (d or d_z), ``effect_ci_low``, ``effect_ci_high``, ``n``, ``method``.

    Notes
    -----
    Independent: :math:`d = (\bar x_a - \bar x_b)/s_p`,
    :math:`s_p^2 = ((n_a-1)s_a^2 + (n_b-1)s_b^2)/(n_a+n_b-2)`; paired:
    :math:`d_z = \bar d / s_d`. The interval inverts the noncentral t of
    :math:`t = d\sqrt{n_a n_b/(n_a+n_b)}` (resp. :math:`d_z\sqrt n`) and rescales the
    noncentrality bounds, as R's ``effectsize::cohens_d`` (Steiger & Fouladi, 1997).

    References
    ----------
    .. [1] Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed.
    .. [2] Steiger, J. H., & Fouladi, R. T. (1997). Noncentrality interval estimation and
       the evaluation of statistical models. In What If There Were No Significance Tests?

    Examples
    --------
    >>> from hce.stats import cohens_d, item_spread, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> cohens_d(item_spread(log))[["a", "b", "effect_size", "effect_ci_low", "effect_ci_high"]].round(3)
       a  b  effect_size  effect_ci_low  effect_ci_high
    0  A  B        -0.49         -1.478           0.514
    """
    check_confidence(confidence)
    if paired:
        require_columns(data, [item, condition, score])
        a, b = two_levels(data, condition, a, b)
        matrix, _, _ = block_matrix(data, item, condition, score, [a, b])
        x, y = matrix[:, 0], matrix[:, 1]
        d = x - y
        n = d.size
        if n < 2:
            raise DataError(f"d_z needs >= 2 complete pairs, got {n}")
        sd = d.std(ddof=1)
        dz = d.mean() / sd if sd > 0 else np.nan
        t, df = dz * np.sqrt(n), n - 1
        low, high = noncentral_t_ci(t, df, confidence)
        scale = 1 / np.sqrt(n)
        name = "Cohen's d_z (mean difference / SD of differences); noncentral-t CI"
        n_a = n_b = n
    else:
        a, b, x, y = _two_groups(data, condition, score, a, b)
        n_a, n_b = len(x), len(y)
        if n_a < 2 or n_b < 2:
            raise DataError(f"Cohen's d needs >= 2 values per group, got {n_a} and {n_b}")
        df = n_a + n_b - 2
        sp = np.sqrt(((n_a - 1) * x.var(ddof=1) + (n_b - 1) * y.var(ddof=1)) / df)
        dz = (x.mean() - y.mean()) / sp if sp > 0 else np.nan
        scale = np.sqrt((n_a + n_b) / (n_a * n_b))
        t = dz / scale
        low, high = noncentral_t_ci(t, df, confidence)
        name = "Cohen's d (pooled SD); noncentral-t CI"
        n = n_a + n_b
    row = {"a": a, "b": b, "n_a": n_a, "n_b": n_b, "mean_a": float(np.mean(x)),
           "mean_b": float(np.mean(y)), "statistic": t, "df1": df,
           "p_value": float(2 * stats.t.sf(abs(t), df)), "effect_size": dz,
           "effect_ci_low": low * scale, "effect_ci_high": high * scale, "n": n, "method": name}  # fmt: skip
    return pd.DataFrame([row])


CorrelationMethod = Literal["pearson", "spearman", "kendall"]
CORRELATION_METHODS = ("pearson", "spearman", "kendall")


def _kendall_test(u: np.ndarray, v: np.ndarray, tau: float) -> tuple[float, float, str]:
    """R's ``cor.test(method = "kendall")`` test of tau = 0: statistic, two-sided p, its name.

    Exact (statistic T, the number of concordant pairs) when n < 50 and neither variable
    has ties; otherwise z = S / sqrt(Var S) with the tie-corrected variance.
    """
    n = u.size
    counts = [np.unique(w, return_counts=True)[1].astype(float) for w in (u, v)]
    if n < 50 and all(c.size == n for c in counts):
        concordant = round((tau + 1) * n * (n - 1) / 4)
        p = float(stats.kendalltau(u, v, method="exact").pvalue)
        return float(concordant), p, "exact test on T (concordant pairs)"
    pairs = n * (n - 1) / 2
    tx, ty = counts
    s = tau * np.sqrt((pairs - np.sum(tx * (tx - 1)) / 2) * (pairs - np.sum(ty * (ty - 1)) / 2))
    var_s = ((n * (n - 1) * (2 * n + 5) - np.sum(tx * (tx - 1) * (2 * tx + 5))
              - np.sum(ty * (ty - 1) * (2 * ty + 5))) / 18
             + np.sum(tx * (tx - 1)) * np.sum(ty * (ty - 1)) / (2 * n * (n - 1))
             + np.sum(tx * (tx - 1) * (tx - 2)) * np.sum(ty * (ty - 1) * (ty - 2))
             / (9 * n * (n - 1) * (n - 2)))  # fmt: skip
    z = float(s / np.sqrt(var_s))
    return z, float(2 * stats.norm.sf(abs(z))), "normal approximation with tie-corrected variance"


def correlation_core(
    u: np.ndarray,
    v: np.ndarray,
    method: CorrelationMethod,
    confidence: float,
    names: tuple[str, str] = ("x", "y"),
    p_method: str = "auto",
    random_state: int | np.random.Generator | None = 0,
) -> dict[str, object]:
    """Coefficient, two-sided test and Fisher-z interval of complete pairs ``u``, ``v`` (n >= 3).

    The interval is NaN where its variance is undefined (n <= 3; n <= 4 for Kendall). A
    constant input gives NaN throughout and a warning naming it (``names``). ``p_method``
    and ``random_state``: as in :func:`correlation` (Spearman only).
    """
    n = u.size
    nan = float("nan")
    constant = [name for name, values in zip(names, (u, v)) if np.ptp(values) == 0]
    if constant:
        # e.g. every per-item SD is 0: the correlation is undefined, not an error in the data.
        warnings.warn(f"{constant[0]!r} is constant over the {n} rows: the correlation is undefined (NaN)",
                      HceWarning, stacklevel=3)  # fmt: skip
        return {"estimate": nan, "ci_low": nan, "ci_high": nan, "statistic": nan,
                "df1": n - 2 if method != "kendall" else nan, "p_value": nan, "n": n,
                "method": f"{method} (undefined: constant input)"}  # fmt: skip
    if method == "kendall":
        r = float(stats.kendalltau(u, v).statistic)
        statistic, p, test = _kendall_test(u, v, r)
        tied = np.unique(u).size < n or np.unique(v).size < n  # untied n < 50 has R's exact P already
        if p_method == "permutation" or (p_method == "auto" and tied and (n <= PERMUTATION_MAX_N or heavy_ties(u, v))):
            p, test = kendall_permutation_p(u, v, random_state)
        se = np.sqrt(0.437 / (n - 4)) if n > 4 else nan
        return {"estimate": r, **dict(zip(("ci_low", "ci_high"), fisher_z_ci(r, se, confidence))),
                "statistic": statistic, "df1": nan, "p_value": p, "n": n,
                "method": f"Kendall tau-b; {test}; Fieller Fisher z CI"}  # fmt: skip
    if method == "pearson":
        r = float(stats.pearsonr(u, v).statistic)
        se = 1 / np.sqrt(n - 3) if n > 3 else nan
        name = "Pearson r; t test; Fisher z CI"
    else:
        r = float(stats.spearmanr(u, v).statistic)
        se = np.sqrt((1 + r**2 / 2) / (n - 3)) if n > 3 else nan
        if p_method == "permutation" or (p_method == "auto" and (n <= PERMUTATION_MAX_N or heavy_ties(u, v))):
            p, test = spearman_permutation_p(u, v, random_state)
            low, high = fisher_z_ci(r, se, confidence)
            # R's S statistic of cor.test(method = "spearman"): (n^3 - n)(1 - rho) / 6
            return {"estimate": r, "ci_low": low, "ci_high": high, "statistic": (n**3 - n) * (1 - r) / 6, "df1": nan,
                    "p_value": p, "n": n, "method": f"Spearman rho; {test}; Bonett-Wright Fisher z CI"}  # fmt: skip
        name = "Spearman rho; t approximation; Bonett-Wright Fisher z CI"
    with np.errstate(divide="ignore"):
        t = r * np.sqrt((n - 2) / (1 - r**2)) if abs(r) < 1 else np.sign(r) * np.inf
    low, high = fisher_z_ci(r, se, confidence)
    return {"estimate": r, "ci_low": low, "ci_high": high, "statistic": t, "df1": n - 2,
            "p_value": float(2 * stats.t.sf(abs(t), n - 2)), "n": n, "method": name}  # fmt: skip


@statistic(numbers=("x", "y"))
def correlation(
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    method: CorrelationMethod = "pearson",
    confidence: float = 0.95,
    p_method: Literal["auto", "permutation", "t"] = "auto",
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Pearson, Spearman or Kendall correlation with a Fisher-z interval (Success Metric 3).

    Parameters
    ----------
    data : DataFrame
        One row per unit (e.g. item: mean LLM total and target total).
    x, y : str
        Numeric columns; rows missing either are dropped.
    method : {"pearson", "spearman", "kendall"}, default "pearson"
        Correlation coefficient; ``"kendall"`` is tau-b (ties handled), the usual choice for
        short ordinal scales with many ties.
    %(confidence)s
    p_method : {"auto", "permutation", "t"}, default "auto"
        Spearman's P: ``"t"`` the t approximation (R's ``cor.test(exact = FALSE)``);
        ``"permutation"`` the permutation P, exact over every distinct arrangement of the
        ranks when there are at most 400,000 of them (n <= 9 untied; more with ties), else
        Monte Carlo over 20,000; ``"auto"`` the permutation P for n <= 30 or heavy ties
        (a variable with at most n/2 distinct values), the t approximation otherwise.
        Kendall's tau with ties takes the same rule (``"t"``: R's tie-corrected normal
        approximation); untied, R's exact P below 50 pairs is kept under ``"auto"``.
    %(random_state)s
        It seeds the Monte Carlo permutation P (Spearman or Kendall, when the arrangements
        are too many to enumerate).

    Returns
    -------
    DataFrame
        One row: ``x``, ``y``, ``estimate`` (r, rho or tau-b), ``ci_low``, ``ci_high``,
        ``statistic`` (t for Pearson and Spearman; for Kendall R's T, the number of
        concordant pairs, when the test is exact, else z), ``df1`` (n - 2; NaN for
        Kendall), ``p_value`` (two-sided), ``n``, ``method`` (coefficient, test, interval).

    Notes
    -----
    Pearson: :math:`\tanh(\operatorname{atanh} r \pm z/\sqrt{n-3})`, p from
    :math:`t = r\sqrt{(n-2)/(1-r^2)}` (R's ``cor.test``). Spearman: the same t
    approximation for p (R's ``cor.test(method = "spearman", exact = FALSE)``) on more than
    30 pairs without heavy ties, the permutation P otherwise (``p_method``; ``statistic`` is
    then R's :math:`S = (n^3 - n)(1 - \rho)/6` and ``df1`` NaN), and the Bonett-Wright
    interval with :math:`SE = \sqrt{(1 + \rho^2/2)/(n-3)}`.

    Kendall: :math:`\tau_b = (n_c - n_d)/\sqrt{(n_0 - n_1)(n_0 - n_2)}`, with
    :math:`n_0 = n(n-1)/2` and :math:`n_1, n_2` the pairs tied in x, in y. The p-value is
    R's ``cor.test(method = "kendall")`` default: exact (the permutation distribution of
    :math:`T = n_c`) when n < 50 and neither variable has ties, otherwise
    :math:`z = S/\sqrt{\operatorname{Var} S}` with :math:`S = n_c - n_d` and the
    tie-corrected variance (Kendall 1970, eq. 4.4)
    :math:`[v_0 - v_t - v_u]/18 + v_1/(2n(n-1)) + v_2/(9n(n-1)(n-2))`, where
    :math:`v_0 = n(n-1)(2n+5)`, :math:`v_t = \sum t(t-1)(2t+5)` over the tie groups of x
    (likewise :math:`v_u` for y), :math:`v_1 = \sum t(t-1) \sum u(u-1)` and
    :math:`v_2 = \sum t(t-1)(t-2) \sum u(u-1)(u-2)`; no continuity correction. R gives no
    interval for tau; here :math:`\tanh(\operatorname{atanh}\tau \pm z\sqrt{0.437/(n-4)})`
    (Fieller, Hartley & Pearson 1957; recommended by Bonett & Wright 2000), which needs
    n >= 5. With ties on 30 pairs or fewer, or heavy ties, the normal approximation is
    replaced by the permutation P of S (as Spearman's; ``statistic`` stays z).

    References
    ----------
    .. [1] Bonett, D. G., & Wright, T. A. (2000). Sample size requirements for estimating
       Pearson, Kendall and Spearman correlations. Psychometrika 65, 23-28.
    .. [2] Fieller, E. C., Hartley, H. O., & Pearson, E. S. (1957). Tests for rank
       correlation coefficients. I. Biometrika 44, 470-481.
    .. [3] Kendall, M. G. (1970). Rank Correlation Methods, 4th ed. Griffin.

    Examples
    --------
    >>> import pandas as pd
    >>> tuna = pd.DataFrame({"hunter_l": [44.4, 45.9, 41.9, 53.3, 44.7, 44.1, 50.7, 45.2, 60.1],
    ...                      "panel": [2.6, 3.1, 2.5, 5.0, 3.6, 4.0, 5.2, 2.8, 3.8]})
    >>> row = correlation(tuna, x="hunter_l", y="panel", method="kendall").iloc[0]
    >>> round(float(row["estimate"]), 4), int(row["statistic"]), round(float(row["p_value"]), 4)
    (0.4444, 26, 0.1194)

    R's help page for ``cor.test`` gives ``T = 26`` and the one-sided ``p = 0.05972`` for
    these data (``alternative = "greater"``); the two-sided p is twice that.
    """
    check_choice("method", method, CORRELATION_METHODS)
    check_confidence(confidence)
    require_columns(data, [x, y])
    u, v = numeric_column(data, x), numeric_column(data, y)
    keep = ~(np.isnan(u) | np.isnan(v))
    u, v = u[keep], v[keep]
    n = u.size
    need = 5 if method == "kendall" else 4
    if n < need:
        raise DataError(f"a {method} correlation interval needs >= {need} complete rows, got {n}")
    check_choice("p_method", p_method, ("auto", "permutation", "t"))
    return pd.DataFrame([{"x": x, "y": y, **correlation_core(u, v, method, confidence, names=(x, y), p_method=p_method,
                                                             random_state=random_state)}])  # fmt: skip


@statistic(keys=("item", "condition"), numbers=("score", "truth"), retired={"target": "truth"})
def mae_vs_target(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str | Sequence[str] | None = "condition_id",
    score: str = "total",
    truth: str = "target_total",
    error: str | None = "error_flag",
) -> pd.DataFrame:
    r"""Absolute error of each item's mean score against its target (H1b, the PRD's MAE).

    Parameters
    ----------
    data : DataFrame
        Attempt log with a per-item ``truth`` (constant within an item).
    item, condition, score
        As in :func:`hce.stats.item_spread`.
        Defaults: ``item="item_id"``, ``condition="condition_id"``, ``score="total"``.
    truth : str, default "target_total"
        Target score column (e.g. the synthetic transcript's target total).
    %(error)s

    Returns
    -------
    DataFrame
        One row per item x condition: keys, ``n`` (valid scores), ``n_errors``, ``target`` (the
        item's ``truth``),
        ``mean_score``, ``error`` (mean - target, signed), ``mae`` (its absolute value;
        NaN when ``n == 0``).

    Notes
    -----
    The PRD (7.1.7, step 3) defines :math:`MAE = |\bar x_{LLM} - TTS|` per transcript and
    condition: the error of the mean, not the mean of per-attempt errors.

    References
    ----------
    .. [1] Willmott, C. J., & Matsuura, K. (2005). Advantages of the mean absolute error (MAE)
       over the root mean square error (RMSE) in assessing average model performance.
       Climate Research 30, 79-82.

    Examples
    --------
    >>> from hce.stats import mae_vs_target, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> mae_vs_target(log).head(3)
      item_id condition_id  n  n_errors  target  mean_score  error   mae
    0   T0000            A  4         0    14.0       14.25   0.25  0.25
    1   T0000            B  4         0    14.0       13.00  -1.00  1.00
    2   T0001            A  4         0    12.0       11.50  -0.50  0.50
    """
    keys = [item, *as_list(condition)]
    error = present_error(data.columns, error)
    require_columns(data, keys + [score, truth] + as_list(error))
    t = numeric_column(data, truth)
    per_item = pd.DataFrame({item: data[item].to_numpy(), "_t": t}).groupby(item, sort=False)["_t"]
    varying = per_item.nunique() > 1
    if varying.any():
        raise DataError(f"column {truth!r} varies within item(s) {list(varying[varying].index[:5])}")
    valid = valid_mask(data, error)
    frame = data[keys].copy()
    frame["_error"] = ~valid
    frame["_s"] = np.where(valid, numeric_column(data, score), np.nan)
    frame["_t"] = t
    g = frame.groupby(keys, sort=True, dropna=False, observed=True)
    out = pd.DataFrame({"n": g["_s"].count(), "n_errors": g["_error"].sum(),
                        "target": g["_t"].first(), "mean_score": g["_s"].mean()})  # fmt: skip
    out["error"] = out["mean_score"] - out["target"]
    out["mae"] = out["error"].abs()
    return out.reset_index().astype({"n": int, "n_errors": int})


def kl_divergence_core(p_counts: np.ndarray, q_counts: np.ndarray, smoothing: float) -> float:
    """D(P || Q) in nats between two count vectors on the same bins, after additive smoothing."""
    p = np.asarray(p_counts, dtype=float) + smoothing
    q = np.asarray(q_counts, dtype=float) + smoothing
    if p.sum() <= 0 or q.sum() <= 0:
        return np.nan
    return float(stats.entropy(p / p.sum(), q / q.sum()))


@statistic(keys=("condition",), numbers=("score",), retired={"group": "condition", "value": "score"})
def kl_divergence(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    score: str = "total",
    reference: object = "target",
    support: Sequence[float] | None = None,
    smoothing: float = 0.5,
) -> pd.DataFrame:
    r"""Kullback-Leibler divergence of each group's score distribution from a reference's (H1c).

    Parameters
    ----------
    data : DataFrame
        Long table of scores; the reference distribution is the rows whose ``condition`` equals
        ``reference`` (e.g. one row per synthetic transcript holding its target total).
    condition : str, default "condition_id"
        Column naming the distribution each score belongs to.
    score : str, default "total"
        Score column (discrete); NaNs are dropped.
    reference : object
        Level of ``condition`` holding the reference (target) distribution.
    support : sequence of float or None
        Every possible score (e.g. ``range(5, 21)`` for totals). By default the values seen
        in any group. Scores outside a given support raise :class:`~hce.DataError`.
    smoothing : float
        Pseudo-count added to every bin of both distributions before normalising
        (default 0.5, Jeffreys/Krichevsky-Trofimov). It keeps the divergence finite when a
        group never uses a score the reference uses; 0 disables it (the result may be inf).

    Returns
    -------
    DataFrame
        One row per non-reference group: ``a`` (group), ``b`` (reference), ``estimate``
        (:math:`D_{KL}(P_{ref} \| Q_a)` in nats), ``reverse`` (:math:`D_{KL}(Q_a \| P_{ref})`),
        ``n_a``, ``n_b``, ``n_bins``, ``smoothing``, ``method``.

    Notes
    -----
    :math:`D_{KL}(P \| Q) = \sum_s p_s \log(p_s / q_s)` with
    :math:`p_s = (c_s + \alpha)/(N + S\alpha)` over the S bins. Smaller means the group's
    scores are distributed more like the reference. The smoothed estimate depends on
    ``smoothing`` and on sample sizes; compare groups with similar n.

    References
    ----------
    .. [1] Kullback, S., & Leibler, R. A. (1951). On information and sufficiency. Ann. Math.
       Statist. 22, 79-86.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import kl_divergence
    >>> d = pd.DataFrame({"condition_id": ["target"] * 6 + ["A"] * 6 + ["B"] * 6,
    ...                   "total": [1, 2, 2, 3, 3, 4, 1, 2, 3, 3, 4, 4, 1, 1, 1, 2, 2, 4]})
    >>> kl_divergence(d, reference="target")[["a", "b", "estimate", "reverse"]].round(4)
       a       b  estimate  reverse
    0  A  target    0.0639   0.0639
    1  B  target    0.3441   0.2701
    """
    if smoothing < 0:
        raise DataError(f"smoothing={smoothing!r} must be >= 0")
    require_columns(data, [condition, score])
    v = numeric_column(data, score)
    g = data[condition].to_numpy()
    keep = ~np.isnan(v)
    levels = list(pd.unique(g[keep]))
    if reference not in levels:
        raise DataError(f"reference={reference!r} is not a level of {condition!r}; levels: {levels}")
    bins = np.unique(v[keep]) if support is None else np.asarray(sorted(support), dtype=float)
    outside = keep & ~np.isin(v, bins)
    if outside.any():
        raise DataError(f"{int(outside.sum())} {score!r} value(s) lie outside support {bins.tolist()}")

    def counts(level):
        sel = v[keep & (g == level)]
        return np.array([(sel == s).sum() for s in bins]), sel.size

    ref_counts, n_ref = counts(reference)
    rows = []
    for level in levels:
        if level == reference:
            continue
        c, n = counts(level)
        rows.append({"a": level, "b": reference,
                     "estimate": kl_divergence_core(ref_counts, c, smoothing),
                     "reverse": kl_divergence_core(c, ref_counts, smoothing),
                     "n_a": n, "n_b": n_ref, "n_bins": bins.size, "smoothing": smoothing,
                     "method": f"KL divergence D(reference || group), nats; "
                               f"additive smoothing {smoothing} per bin"})  # fmt: skip
    return pd.DataFrame(rows)


@statistic(keys=("item", "condition"), numbers=("score", "truth"))
def kl_difference(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "condition_id",
    score: str = "total",
    truth: str = "target_total",
    a: object,
    b: object,
    error: str | None = "error_flag",
    support: Sequence[float] | None = None,
    smoothing: float = 0.5,
    boot: Bootstrap = Bootstrap(n_boot=2000),
) -> pd.DataFrame:
    r"""Difference of two conditions' KL divergences from the items' targets, with a cluster-bootstrap interval (H1c).

    The reference distribution is the items' targets (one per item); each condition's
    distribution is its scores of those items. The estimate is
    :math:`D(T \| A) - D(T \| B)` (negative: ``a`` lies closer to the targets), each
    divergence as in :func:`kl_divergence`. Its interval resamples *items* with replacement
    (with every attempt of each and its target): the attempts of one item are not
    independent, so resampling attempts would make the interval too narrow.

    Parameters
    ----------
    data : DataFrame
        Attempt log with a per-item ``truth`` (constant within an item).
    item : str, default "item_id"
        Item column: the unit the bootstrap resamples.
    condition : str, default "condition_id"
        Condition column.
    score : str, default "total"
        Score column (discrete); NaN scores are dropped.
    truth : str, default "target_total"
        The item's target score.
    a, b : object
        The two levels of ``condition`` compared (``a`` minus ``b``).
    %(error)s
    support : sequence of float or None
        Every possible score (e.g. ``range(5, 21)``); by default the values seen.
    smoothing : float, default 0.5
        Pseudo-count per bin of every distribution, as in :func:`kl_divergence`. With few
        items it carries much of the reference's mass: ``smoothing_share`` says how much.
    %(confidence)s
    %(n_boot)s
        0 gives the estimate without an interval.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``a``, ``b``, ``estimate`` (the difference, nats), ``ci_low``, ``ci_high``
        (percentile interval of the item bootstrap), ``estimate_a``, ``estimate_b`` (each
        divergence), ``n_items``, ``n_a``, ``n_b`` (scores), ``n_errors`` (flagged attempts
        left out), ``n_bins``, ``smoothing``,
        ``smoothing_share`` (the pseudo-counts' share of the smoothed reference
        distribution, :math:`S\alpha / (N + S\alpha)`), ``n_boot``, ``method``.

    Notes
    -----
    A replicate draws n items with replacement and recomputes the three count vectors from
    the drawn items (targets and both conditions' scores), then the difference; the interval
    is the replicates' percentile interval [1]_. The smoothed plug-in divergence is biased
    upwards, the more so the fewer the scores; both conditions share the reference, so the
    difference is less biased than either divergence when their numbers of scores are alike.
    ``tests/stats/test_kl_difference.py`` measures the interval's coverage of the population
    difference (slow test).

    References
    ----------
    .. [1] Davison, A. C., & Hinkley, D. V. (1997). Bootstrap Methods and their Application,
       section 3.8 (resampling clusters). Cambridge University Press.

    Examples
    --------
    >>> from hce.stats import kl_difference, simulated_log
    >>> log = simulated_log(n_items=12, n_attempts=5, noise={"A": 0.5, "B": 2.0}, random_state=3)
    >>> log["target_total"] = log.groupby("item_id")["total"].transform("median").round()
    >>> row = kl_difference(log, a="A", b="B", n_boot=500, random_state=0).iloc[0]
    >>> bool(row["ci_low"] <= row["estimate"] <= row["ci_high"]), int(row["n_items"])
    (True, 12)
    """
    confidence, n_boot, random_state = boot
    if smoothing < 0:
        raise DataError(f"smoothing={smoothing!r} must be >= 0")
    check_n_boot(n_boot)
    check_confidence(confidence)
    error = present_error(data.columns, error)
    require_columns(data, [item, condition, score, truth] + as_list(error))
    for name, level in (("a", a), ("b", b)):
        if not (data[condition] == level).any():
            raise DataError(f"{name}={level!r}: no row has {condition}={level!r}")
    rows = data[data[condition].isin([a, b])]
    t = numeric_column(rows, truth)
    targets = pd.DataFrame({item: rows[item].to_numpy(), "_t": t}).groupby(item, sort=True)["_t"]
    varying = targets.nunique() > 1
    if varying.any():
        raise DataError(f"column {truth!r} varies within item(s) {list(varying[varying].index[:5])}")
    target = targets.first().dropna()
    valid = valid_mask(rows, error)
    v = np.where(valid, numeric_column(rows, score), np.nan)
    keep = ~np.isnan(v) & rows[item].isin(target.index).to_numpy()
    seen = np.concatenate([target.to_numpy(), v[keep]])
    bins = np.unique(seen) if support is None else np.asarray(sorted(support), dtype=float)
    outside = seen[~np.isin(seen, bins)]
    if outside.size:
        raise DataError(f"{outside.size} {score!r}/{truth!r} value(s) lie outside support {bins.tolist()}")
    codes = pd.Index(target.index)
    # one row per item: its target's bin, then a's and b's counts per bin (the unit the bootstrap draws)
    units = np.zeros((len(codes), 3 * bins.size))
    units[np.arange(len(codes)), np.searchsorted(bins, target.to_numpy())] = 1
    which = np.where(rows[condition].to_numpy()[keep] == a, 1, 2)
    np.add.at(units, (codes.get_indexer(rows[item].to_numpy()[keep]), which * bins.size + np.searchsorted(bins, v[keep])), 1)

    def differences(counts: np.ndarray) -> np.ndarray:
        ref, ca, cb = (counts[:, k * bins.size:(k + 1) * bins.size] + smoothing for k in range(3))
        ref, ca, cb = (c / c.sum(axis=1, keepdims=True) for c in (ref, ca, cb))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.stack([special.rel_entr(ref, c).sum(axis=1) for c in (ca, cb)], axis=1)

    kl_a, kl_b = differences(units.sum(axis=0, keepdims=True))[0]
    low = high = np.nan
    if n_boot > 0:
        replicates = differences(bootstrap_sums(units, n_boot, as_generator(random_state)))
        low, high = percentile_interval(replicates[:, 0] - replicates[:, 1], confidence)
    pseudo = bins.size * smoothing
    return pd.DataFrame([{
        "a": a, "b": b, "estimate": float(kl_a - kl_b), "ci_low": float(low), "ci_high": float(high),
        "estimate_a": float(kl_a), "estimate_b": float(kl_b), "n_items": len(codes),
        "n_a": int((which == 1).sum()), "n_b": int((which == 2).sum()), "n_errors": int((~valid).sum()),
        "n_bins": bins.size, "smoothing": smoothing,
        "smoothing_share": pseudo / (len(codes) + pseudo), "n_boot": n_boot,
        "method": f"KL divergence D(target || {a}) - D(target || {b}), nats; additive smoothing {smoothing:g} per bin; "
                  f"{confidence:.0%} percentile interval of {n_boot} cluster-bootstrap resamples of items",
    }])  # fmt: skip
