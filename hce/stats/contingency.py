"""Tests of count tables: chi-squared and Fisher's exact test with Cramer's V, code frequencies,
and the cluster-aware permutation test for rows nested in clusters (Experiment 4's segments in replies).

Split from :mod:`hce.stats.tests` (the rank tests): counts of codes are their own topic.

A group x code table whose rows are nested in clusters (a reply's segments share its model,
transcript and style) breaks the independence the chi-squared and Fisher tests assume, which
makes them too liberal. :func:`cluster_permutation_test` permutes the group labels among the
whole clusters of each stratum (the unit that was assigned a group) and recomputes the Pearson
chi-squared statistic; its p-value is ``(1 + #{X*^2 >= X^2}) / (1 + B)`` (Phipson & Smyth, 2010),
valid under the null that codes do not depend on the group, whatever the dependence within a
cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, require_columns
from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.errors import DataError
from hce.stats._intervals import noncentrality_ci, proportion_ci
from hce.stats._resample import as_generator
from hce.stats._validate import statistic
from hce.stats.tests import ordered_columns

ContingencyMethod = Literal["auto", "chi2", "fisher"]


def contingency_core(
    table: np.ndarray,
    *,
    method: ContingencyMethod = "auto",
    confidence: float = 0.95,
    n_sim: int = 10000,
    random_state: int | np.random.Generator | None = None,
) -> dict[str, object]:
    """Chi-squared or Fisher's exact test of an r x c count table, with Cramer's V (NumPy core)."""
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    r, c = table.shape
    if r < 2 or c < 2:
        raise DataError(f"a contingency test needs >= 2 non-empty rows and columns, got {r} x {c}")
    n = table.sum()
    chi2, _, df, expected = stats.chi2_contingency(table, correction=False)
    min_expected = float(expected.min())
    if method == "auto":
        method = "chi2" if min_expected >= 5 else "fisher"
    m = min(r, c) - 1
    v = float(np.sqrt(chi2 / (n * m)))
    ncp_low, ncp_high = noncentrality_ci(chi2, lambda x, nc: stats.ncx2.cdf(x, df, nc) if nc > 0
                                         else stats.chi2.cdf(x, df), confidence, upper_start=chi2)  # fmt: skip
    row = {"effect_size": v, "effect_ci_low": float(min(np.sqrt(ncp_low / (n * m)), 1.0)),
           "effect_ci_high": float(min(np.sqrt(ncp_high / (n * m)), 1.0)), "n": int(n), "min_expected": min_expected}  # fmt: skip
    if method == "chi2":
        yates = (r, c) == (2, 2)
        stat, p, df, _ = stats.chi2_contingency(table, correction=yates)
        row.update(statistic=float(stat), df1=int(df), p_value=float(p),
                   method="Pearson chi-squared" + (" with Yates correction" if yates else ""))
    elif (r, c) == (2, 2):
        res = stats.fisher_exact(table)
        row.update(statistic=float(res.statistic), df1=np.nan, p_value=float(res.pvalue),
                   method="Fisher's exact test (statistic: sample odds ratio, not R's conditional MLE)")
    else:
        rows, cols = table.sum(axis=1).astype(int), table.sum(axis=0).astype(int)
        dist = stats.random_table(rows, cols, seed=random_state)
        observed = dist.logpmf(table)
        sims = dist.logpmf(dist.rvs(size=n_sim))
        # tables as or less probable than the observed one (R's relative tolerance 1e-7)
        extreme = (sims <= observed + np.log1p(1e-7)).sum()
        row.update(statistic=np.nan, df1=np.nan, p_value=float((1 + extreme) / (1 + n_sim)),
                   method=f"Fisher's exact test, Monte Carlo p ({n_sim} tables with fixed margins)")
    row["method"] += "; Cramer's V (uncorrected chi-squared), noncentral chi-squared CI"
    return row


@statistic(keys=("condition", "codes"), retired={"group": "condition"})
def contingency_test(
    data: pd.DataFrame,
    *,
    condition: str = "model",
    codes: str | Sequence[str] = "code",
    method: ContingencyMethod = "auto",
    confidence: float = 0.95,
    n_sim: int = 10000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Chi-squared / Fisher's exact tests of code frequencies by group, with Cramer's V (Exp 4).

    Parameters
    ----------
    data : DataFrame
        One row per coded segment: a ``condition`` column (the model) and one column per coding
        dimension (e.g. ``evidence_type``). Missing codes are dropped.
    condition : str, default "model"
        Column whose levels are compared.
    codes : str or sequence of str, default "code"
        Coding dimension(s); one test per dimension.
    method : {"auto", "chi2", "fisher"}
        ``"auto"`` uses chi-squared when every expected count is >= 5 (Cochran's rule)
        and Fisher's exact test otherwise. Chi-squared uses Yates' correction for 2 x 2
        tables only (R's ``chisq.test`` default). Fisher's test is exact for 2 x 2 tables
        and Monte Carlo for larger ones (R's ``fisher.test(simulate.p.value = TRUE)``).
    %(confidence)s
        Here: the interval for Cramer's V.
    n_sim : int, default 10000
        Simulated tables for the Monte Carlo p-value.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per coding dimension: ``code``, ``statistic`` (chi-squared; odds ratio for
        a 2 x 2 Fisher test (the sample odds ratio); NaN for Monte Carlo), ``df1``, ``p_value``, ``effect_size``
        (Cramer's V), ``effect_ci_low``, ``effect_ci_high``, ``n`` (segments), ``min_expected``, ``method``.

    Notes
    -----
    :math:`V = \sqrt{\chi^2/(n(\min(r, c) - 1))}` from the uncorrected statistic; its
    interval inverts the noncentral chi-squared and maps ``ncp`` to
    :math:`\sqrt{ncp/(n(\min(r,c)-1))}`, capped at 1 (R's ``effectsize::cramers_v``, ``adjust = FALSE``).

    References
    ----------
    .. [1] Cramer, H. (1946). Mathematical Methods of Statistics. Princeton.
    .. [2] Agresti, A. (2002). Categorical Data Analysis, 2nd ed. Wiley.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import contingency_test
    >>> d = pd.DataFrame({"model": ["a"] * 12 + ["b"] * 12,
    ...                   "code": ["q"] * 9 + ["p"] * 3 + ["q"] * 3 + ["p"] * 9})
    >>> contingency_test(d, random_state=0)[["code", "statistic", "p_value", "effect_size"]].round(4)
       code  statistic  p_value  effect_size
    0  code     4.1667   0.0412          0.5
    """
    check_choice("method", method, ["auto", "chi2", "fisher"])
    check_confidence(confidence)
    code_columns = [codes] if isinstance(codes, str) else list(codes)
    require_columns(data, [condition, *code_columns])
    rng = as_generator(random_state)
    rows = []
    for code in code_columns:
        table = pd.crosstab(data[condition], data[code]).to_numpy()
        core = contingency_core(table, method=method, confidence=confidence, n_sim=n_sim,
                                random_state=rng)  # fmt: skip
        rows.append({"code": code, **core})
    return ordered_columns(pd.DataFrame(rows))


@statistic(keys=("condition", "codes"), retired={"group": "condition"})
def code_frequencies(
    data: pd.DataFrame, *, condition: str = "model", codes: str | Sequence[str] = "code", confidence: float = 0.95
) -> pd.DataFrame:
    """Counts and within-group shares of each code level by group (Experiment 4, step 1).

    Parameters
    ----------
    data : DataFrame
        One row per coded segment, as :func:`contingency_test` takes.
    condition : str
        Column of the groups compared (the model).
    codes : str or sequence of str, default "code"
        Column(s) of the coding dimensions.
    %(confidence)s
        Here: the Wilson interval of each share.

    Returns
    -------
    DataFrame
        One row per coding dimension x group x level: ``code``, the ``condition`` column
        (the group), ``level``, ``count``, ``estimate`` (the share of the group's coded
        segments), ``n`` (the group's coded segments) and the Wilson interval of the share
        (``ci_low``, ``ci_high``; R ``prop.test(correct = FALSE)``), which treats segments
        as independent.

    Examples
    --------
    >>> import pandas as pd
    >>> codes = pd.DataFrame({"model": ["a", "a", "a", "b"], "code": ["q", "q", "p", "p"]})
    >>> code_frequencies(codes).round(3).to_dict("records")[0]
    {'code': 'code', 'model': 'a', 'level': 'p', 'count': 1, 'estimate': 0.333, 'n': 3, 'ci_low': 0.061, 'ci_high': 0.792}
    """
    check_confidence(confidence)
    code_columns = [codes] if isinstance(codes, str) else list(codes)
    require_columns(data, [condition, *code_columns])
    tables = []
    for code in code_columns:
        counts = pd.crosstab(data[condition], data[code]).stack().rename("count").reset_index()
        counts.columns = [condition, "level", "count"]
        counts["n"] = counts.groupby(condition)["count"].transform("sum")
        counts.insert(3, "estimate", counts["count"] / counts["n"])
        counts["ci_low"], counts["ci_high"] = proportion_ci(counts["count"].to_numpy(), counts["n"].to_numpy(), confidence, "wilson")
        counts.insert(0, "code", code)
        tables.append(counts)
    return pd.concat(tables, ignore_index=True)


def _chi2(table: np.ndarray) -> np.ndarray:
    """Pearson X^2 of each ``(..., groups, codes)`` table, codes with no count left out."""
    n = table.sum(axis=(-2, -1), keepdims=True)
    expected = table.sum(axis=-1, keepdims=True) * table.sum(axis=-2, keepdims=True) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    return cells.sum(axis=(-2, -1))


@keywords_checked
@fill_doc
def cluster_permutation_test(
    data: pd.DataFrame,
    *,
    condition: str = "model",
    codes: str | Sequence[str] = "code",
    cluster: Sequence[str] = ("item_id", "model", "attempt_id"),
    strata: str | None = "item_id",
    n_sim: int = 10000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Permutation test of ``condition`` x code tables whose rows are nested in clusters.

    Parameters
    ----------
    data : DataFrame
        One row per coded unit (a reasoning segment), with its group, its codes and the
        columns naming its cluster.
    condition : str
        The group column (the model); constant within a cluster.
    codes : str or sequence of str, default "code"
        Code columns, one test each.
    cluster : sequence of str, default ('item_id', 'model', 'attempt_id')
        Columns whose values together name a cluster (a reply: transcript, model, attempt).
    strata : str or None, default "item_id"
        Column within whose values the groups are permuted (the transcript: each transcript's
        replies trade models); None permutes across all clusters.
    n_sim : int, default 10000
        Permutations.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per code column: ``code``, ``statistic`` (Pearson :math:`X^2` of the group x
        code table), ``p_value``, ``n`` (coded rows), ``n_clusters`` and ``method``.

    Notes
    -----
    Under the null that the codes do not depend on the group, clusters are exchangeable
    within a stratum, so the group labels are permuted among whole clusters and
    :math:`X^2` recomputed; :math:`p = (1 + \#\{X^{*2} \ge X^2\}) / (1 + B)`. Dependence within
    a cluster is kept, which the segment-level chi-squared and Fisher tests ignore.

    References
    ----------
    .. [1] Phipson, B., & Smyth, G. K. (2010). Permutation p-values should never be zero.
       Statistical Applications in Genetics and Molecular Biology, 9(1), 39.

    Examples
    --------
    >>> rows = [{"reply": r, "model": "ab"[r % 2], "item": r // 2, "code": "x" if r % 2 == 0 else "yxy"[s]}
    ...         for r in range(8) for s in range(3)]
    >>> out = cluster_permutation_test(pd.DataFrame(rows), condition="model", codes="code", cluster=["reply"],
    ...                                strata="item", n_sim=999, random_state=0)
    >>> out[["statistic", "n_clusters", "n"]].round(2).to_dict("records"), bool(out["p_value"].iloc[0] > 0.05)
    ([{'statistic': 12.0, 'n_clusters': 8, 'n': 24}], True)
    """
    code_columns = [codes] if isinstance(codes, str) else list(codes)
    cluster = list(cluster)
    require_columns(data, [condition, *code_columns, *cluster, *([strata] if strata else [])])
    if n_sim < 1:
        raise DataError(f"n_sim={n_sim!r} must be a positive number of permutations")
    rng = as_generator(random_state)
    return pd.DataFrame([{"code": column, **_cluster_permutation(data, condition, column, cluster, strata, n_sim, rng)}
                         for column in code_columns])  # fmt: skip


def _cluster_permutation(data, condition, code, cluster, strata, n_sim, rng) -> dict[str, object]:
    data = data.dropna(subset=[code])
    # The same text as a row-wise join, built column-wise (a row-wise apply took 20 s at 150,000 rows).
    parts = [data[c].astype(str) for c in cluster]
    keys = parts[0].str.cat(parts[1:], sep="\x1f") if len(parts) > 1 else parts[0]
    per = data.groupby(keys.to_numpy(), sort=True)
    labels = per[condition].nunique()
    if (labels > 1).any():
        raise DataError(f"cluster {cluster} {labels.index[labels > 1][0]!r} holds several {condition!r} values; "
                        "a cluster must belong to one group")  # fmt: skip
    counts = pd.crosstab(keys.to_numpy(), data[code].to_numpy()).sort_index()
    group_of = per[condition].first().loc[counts.index]
    stratum = per[strata].first().loc[counts.index].to_numpy() if strata is not None else np.zeros(len(counts))
    groups, g = np.unique(group_of.to_numpy().astype(str), return_inverse=True)
    if len(groups) < 2 or counts.shape[1] < 2:
        raise DataError(f"{code!r}: needs >= 2 groups and >= 2 codes (got {len(groups)} x {counts.shape[1]})")
    c = counts.to_numpy(dtype=float)
    onehot = np.eye(len(groups))[g]
    observed = float(_chi2(onehot.T @ c))
    perms = np.tile(np.arange(len(c)), (n_sim, 1))
    for s in np.unique(stratum):  # shuffle the group labels among the clusters of each stratum, all replicates at once
        idx = np.flatnonzero(stratum == s)
        perms[:, idx] = idx[rng.permuted(np.tile(np.arange(len(idx)), (n_sim, 1)), axis=1)]
    tables = np.einsum("bkg,kc->bgc", onehot[perms], c)
    exceed = int((_chi2(tables) >= observed - 1e-9 * max(observed, 1.0)).sum())
    within = f" within {strata}" if strata else ""
    return {"statistic": observed, "p_value": (1 + exceed) / (1 + n_sim), "n": int(c.sum()), "n_clusters": len(c),
            "method": f"permutation of {condition} among whole clusters ({', '.join(cluster)}){within}, "
                      f"Pearson X^2 ({n_sim} permutations)"}  # fmt: skip
