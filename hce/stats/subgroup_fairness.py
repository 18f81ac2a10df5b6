"""Success Metric 6: do scores or their spread differ detrimentally across demographic strata?"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, require_columns
from hce.errors import DataError
from hce.stats._resample import Bootstrap, as_generator
from hce.stats.result import AnalysisResult
from hce.stats.spread import as_list, item_spread
from hce.stats.tests import Adjustment, adjustment, kruskal_row, mann_whitney_core, p_adjust
from hce.stats._validate import statistic

Worse = Literal["lower", "higher"]
_DEFAULT_WORSE = {"mean": "lower", "sd": "higher"}


@statistic(keys=("strata", "item", "condition"), blank_keys=("strata",), numbers=("score",))
def fairness(
    data: pd.DataFrame,
    *,
    strata: str | Sequence[str],
    item: str = "item_id",
    condition: str | Sequence[str] | None = None,
    score: str = "total",
    measures: Mapping[str, Worse] | None = None,
    alpha: float = 0.05,
    p_adjust_method: Adjustment = "holm",
    boot: Bootstrap = Bootstrap(),
) -> AnalysisResult:
    """Kruskal-Wallis and pairwise Mann-Whitney tests of item scores and SDs across strata.

    Parameters
    ----------
    data : DataFrame
        Attempt log with item-level stratum columns (e.g. ``sex``, ``age_group``).
    strata : str or sequence of str
        Stratum columns; each must be constant within an item. Items missing a stratum
        are left out of that stratum's tests.
    item, condition, score
        As in :func:`hce.stats.item_spread`. Items are the units: each item's repeated
        attempts are first reduced to their mean and SD.
        Defaults: ``item="item_id"``, ``score="total"``.
    measures : mapping {"mean", "sd"} -> {"lower", "higher"} or None
        Item statistics tested and which direction harms a stratum. Default
        ``{"mean": "lower", "sd": "higher"}``: systematically lower scores, or less
        consistent (higher-SD) scores, count as detrimental.
    alpha : float
        Significance level (PRD: 0.05).
    p_adjust_method : {"bonferroni", "holm", "bh", "none"}
        Correction applied within each condition across all omnibus tests, and separately
        across all pairwise tests (every stratum column x measure x pair).
    %(confidence)s
        Here: the effect-size intervals.
    %(n_boot)s
        Here: resamples for the interval of epsilon squared.
    %(random_state)s

    Returns
    -------
    AnalysisResult
        ``omnibus``: condition columns, ``stratum`` (column), ``measure``, ``k`` (levels),
        ``statistic`` (Kruskal-Wallis H), ``df1``, ``p_value``, ``p_adjusted``,
        ``effect_size`` (epsilon squared), ``effect_ci_low``, ``effect_ci_high``, ``n`` (items), ``method``.
        ``pairwise``: condition columns, ``stratum``, ``measure``, ``a``, ``b`` (levels),
        ``n_a``, ``n_b``, ``median_a``, ``median_b``, ``statistic`` (U of a), ``p_value``,
        ``p_adjusted``, ``effect_size`` (rank-biserial r, positive when ``a`` is higher),
        ``effect_ci_low``, ``effect_ci_high``, ``disadvantaged`` (the level on the harmful side, when
        ``p_adjusted < alpha``; else empty), ``detrimental`` (bool), ``method``.
        ``verdict``: one row per condition: ``n_tests``, ``alpha``, ``adjustment``,
        ``any_detrimental``, ``disadvantaged`` (``"stratum=level"`` list), ``passes``
        (no detrimental difference: Success Metric 6).

    Notes
    -----
    Any significant pairwise difference in the harmful direction is detrimental to the
    level on that side; the omnibus Kruskal-Wallis tests are reported for context and do
    not gate the pairwise tests (the correction already controls the family-wise error).

    References
    ----------
    .. [1] Kruskal, W. H., & Wallis, W. A. (1952). Use of ranks in one-criterion variance
       analysis. JASA 47, 583-621.
    .. [2] Mann, H. B., & Whitney, D. R. (1947). On a test of whether one of two random
       variables is stochastically larger than the other. Ann. Math. Statist. 18, 50-60.
    .. [3] Holm, S. (1979). A simple sequentially rejective multiple test procedure.
       Scandinavian Journal of Statistics 6, 65-70.

    Examples
    --------
    >>> from hce.stats import fairness, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> result = fairness(log, strata="sex", condition="condition_id", n_boot=200, random_state=0)
    >>> result["verdict"][["condition_id", "n_tests", "any_detrimental", "passes"]]
      condition_id  n_tests  any_detrimental  passes
    0            A        2            False    True
    1            B        2            False    True
    """
    confidence, n_boot, random_state = boot
    check_confidence(confidence)
    p_adjust_method = adjustment("p_adjust_method", p_adjust_method)
    measures = dict(_DEFAULT_WORSE if measures is None else measures)
    for name, worse in measures.items():
        check_choice("measures key", name, ["mean", "sd"])
        check_choice(f"measures[{name!r}]", worse, ["lower", "higher"])
    strata = as_list(strata)
    conditions = as_list(condition)
    require_columns(data, [item, *strata, *conditions])
    item_strata = _item_strata(data, item, strata)
    spread = item_spread(data, item=item, condition=condition or None, score=score, error=None)
    spread = spread.merge(item_strata, on=item, how="left")
    rng = as_generator(random_state)
    omnibus, pairwise = [], []
    groups = spread.groupby(conditions, sort=True) if conditions else [((), spread)]
    for key, cell in groups:
        labels = dict(zip(conditions, key if isinstance(key, tuple) else (key,)))
        for stratum, measure in itertools.product(strata, measures):
            worse = measures[measure]
            sub = cell[[stratum, measure]].dropna()
            levels = sorted(pd.unique(sub[stratum]), key=str)
            if len(levels) < 2:
                continue
            values = {lv: sub.loc[sub[stratum] == lv, measure].to_numpy(float) for lv in levels}
            kw = kruskal_row(list(values.values()), confidence, n_boot, rng)
            omnibus.append({**labels, "stratum": stratum, "measure": measure, **kw})
            for a, b in itertools.combinations(levels, 2):
                mw = mann_whitney_core(values[a], values[b], confidence=confidence)
                pairwise.append({**labels, "stratum": stratum, "measure": measure, "a": a, "b": b,
                                 "n_a": values[a].size, "n_b": values[b].size,
                                 "median_a": float(np.median(values[a])),
                                 "median_b": float(np.median(values[b])), "_worse": worse, **mw})  # fmt: skip
    if not omnibus:
        raise DataError(f"no stratum in {strata} has two or more levels with data")
    omnibus_t = _adjust(pd.DataFrame(omnibus), conditions, p_adjust_method)
    pairwise_t = _adjust(pd.DataFrame(pairwise), conditions, p_adjust_method)
    significant = pairwise_t["p_adjusted"] < alpha
    a_higher = pairwise_t["effect_size"] > 0
    harmed_is_a = np.where(pairwise_t["_worse"] == "lower", ~a_higher, a_higher)
    harmed = np.where(harmed_is_a, pairwise_t["a"].astype(str), pairwise_t["b"].astype(str))
    pairwise_t["disadvantaged"] = np.where(significant & (pairwise_t["effect_size"] != 0), harmed, "")
    pairwise_t["detrimental"] = pairwise_t["disadvantaged"] != ""
    pairwise_t = pairwise_t.drop(columns="_worse")
    verdict = _verdict(pairwise_t, conditions, alpha, p_adjust_method)
    return AnalysisResult(
        title="Fairness: detrimental differences across strata",
        tables={"omnibus": omnibus_t, "pairwise": pairwise_t, "verdict": verdict},
        notes=[f"units are items; each item's attempts reduced to {sorted(measures)}",
               f"{p_adjust_method} correction within each condition, alpha = {alpha}"],
    )  # fmt: skip


def _item_strata(data: pd.DataFrame, item: str, strata: list[str]) -> pd.DataFrame:
    per_item = data[[item, *strata]].drop_duplicates()
    varying = per_item[item].duplicated(keep=False)
    if varying.any():
        bad = per_item.loc[varying, item].iloc[0]
        raise DataError(f"stratum columns {strata} vary within item {bad!r}; strata must be item-level")
    return per_item


def _adjust(table: pd.DataFrame, conditions: list[str], method: str) -> pd.DataFrame:
    if conditions:
        table["p_adjusted"] = table.groupby(conditions)["p_value"].transform(
            lambda p: p_adjust(p.to_numpy(), method)
        )
    else:
        table["p_adjusted"] = p_adjust(table["p_value"].to_numpy(), method)
    rest = [c for c in table.columns if c not in ("p_adjusted", "method")]
    at = rest.index("p_value") + 1
    return table[rest[:at] + ["p_adjusted"] + rest[at:] + ["method"]]


def _verdict(pairwise: pd.DataFrame, conditions: list[str], alpha: float, method: str) -> pd.DataFrame:
    rows = []
    groups = pairwise.groupby(conditions, sort=True) if conditions else [((), pairwise)]
    for key, cell in groups:
        labels = dict(zip(conditions, key if isinstance(key, tuple) else (key,)))
        hits = cell[cell["detrimental"]]
        names = sorted({f"{s}={lv}" for s, lv in zip(hits["stratum"], hits["disadvantaged"])})
        rows.append({**labels, "n_tests": len(cell), "alpha": alpha, "adjustment": method,
                     "any_detrimental": bool(len(hits)), "disadvantaged": ", ".join(names),
                     "passes": not len(hits)})  # fmt: skip
    return pd.DataFrame(rows)
