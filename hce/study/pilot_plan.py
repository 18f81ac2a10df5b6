"""A main study planned from its pilot, on one page (``hce plan PILOT_LOG``).

Three answers from one pilot attempt log: the smallest difference between two conditions'
mean scores each design of a grid detects, with its calls and cost
(:func:`hce.stats.mde`); the attempts per item a G or Phi target needs
(:meth:`hce.stats.VarianceComponents.solve`); and what repeats that stop when the score is
known would save (``hce.collect.running.stopping``). With human ratings of the pilot's items,
a fourth: how many items humans must score, beside the judge's scores of the rest, for a
target half-width of the criterion's mean (:func:`label_budget`, :func:`hce.stats.ppi_budget`). The cost of an attempt is the pilot's own
(its logged ``cost_usd``, else its tokens at the model's price, ``hce.collect.call.pricing``):
this module sits above both layers, so ``hce.stats`` never sees a price.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.errors import DataError

__all__ = ["PilotPlan", "cost_per_attempt", "label_budget", "plan_from_pilot"]


def cost_per_attempt(pilot: pd.DataFrame) -> float:
    """Mean USD per attempt of a pilot: its logged ``cost_usd``, else its tokens priced; NaN if neither.

    Examples
    --------
    >>> cost_per_attempt(pd.DataFrame({"cost_usd": [0.001, 0.003]}))
    0.002
    """
    if "cost_usd" in pilot.columns and pilot["cost_usd"].notna().any():
        return float(pilot["cost_usd"].mean())
    if not {"model", "input_tokens", "output_tokens"} <= set(pilot.columns):
        return float("nan")
    from hce.collect.call.pricing import cost_usd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unpriced model: the cost stays NaN, the page says "unpriced"
        costs = [cost_usd(m, i, o, warn=False) for m, i, o in zip(pilot["model"], pilot["input_tokens"], pilot["output_tokens"])]
    values = [c for c in costs if c is not None]
    return float(np.mean(values)) if values else float("nan")


@keywords_checked
@fill_doc
def label_budget(
    pilot: pd.DataFrame,
    humans: pd.DataFrame,
    *,
    label_cost: float,
    half_width: float,
    score: str = "total",
    condition: str = "condition_id",
    item: str = "item_id",
    confidence: float = 0.95,
    judge_cost: float | None = None,
) -> pd.DataFrame:
    """Human labels a main study needs for a target half-width of the criterion's mean (PPI).

    The judge scores every item; humans score some. Per condition (each one judge
    configuration), the pilot's judge score of an item (its mean over the item's attempts)
    is paired with the humans' score of it (the mean over its raters), and
    :func:`hce.stats.ppi_budget` gives the cheapest split between items humans score and
    items only the judge scores whose prediction-powered interval of the mean is as narrow as a
    classical one from ``effective_n = (z sd / half_width)^2`` human-scored items, ``sd``
    being the SD of the humans' item scores and ``z`` the normal quantile of ``confidence``.

    Parameters
    ----------
    pilot : DataFrame
        The pilot's attempt log.
    humans : DataFrame
        Human ratings of its items: ``item`` and one column named ``score`` (a ``rater``
        column, when present, is averaged over), as ``hce report --humans`` reads them.
    label_cost : float
        USD of one item's human score (what the table's raters cost for one item).
    half_width : float
        Target half-width of the interval of the criterion's mean, in score points.
    score, condition, item : str
        The criterion and the columns (defaults ``total``, ``condition_id``, ``item_id``).
    %(confidence)s
    judge_cost : float, optional
        USD of the judge's score of one item; default the pilot's cost per attempt
        (``hce.study.pilot_plan.cost_per_attempt``) times its mean attempts per item and condition.

    Returns
    -------
    DataFrame
        One row per condition: ``n_labelled`` (items humans score), ``n_unlabelled`` (items
        the judge alone scores), ``label_cost_usd`` and ``judge_cost_usd`` (their parts of
        ``cost``), ``cost``, ``effective_n`` (the classical size of the precision reached), ``classical_n``
        and ``classical_cost_usd`` (the items humans alone must score for the target, and their
        cost), ``ppi_corr``, ``n`` (pilot items with both scores),
        ``half_width``, ``method``.

    Examples
    --------
    >>> pilot = pd.DataFrame({"item_id": list("abcdef") * 2, "condition_id": "J", "attempt": [1] * 6 + [2] * 6,
    ...                       "total": [10, 12, 9, 15, 14, 11, 11, 12, 10, 14, 15, 11]})
    >>> humans = pd.DataFrame({"item_id": list("abcdef"), "rater": "dr1", "total": [10, 13, 9, 14, 15, 12]})
    >>> label_budget(pilot, humans, label_cost=5.0, judge_cost=0.02, half_width=0.5)[["n_labelled", "n_unlabelled"]]
       n_labelled  n_unlabelled
    0          28           630
    """
    from scipy import stats

    from hce.stats import ppi_budget

    missing = [c for c in (item, score) if c not in humans.columns]
    if missing:
        raise DataError(f"the human ratings need columns {[item, score]}; missing {missing}; columns: {list(humans.columns)}")
    if not half_width > 0 or not label_cost > 0:
        raise DataError(f"half_width={half_width!r} and label_cost={label_cost!r} must be positive")
    usable = _usable(pilot).dropna(subset=[score])
    human = pd.to_numeric(humans[score], errors="coerce").groupby(humans[item].astype(str)).mean().dropna()
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    effective_n = (z * float(human.std(ddof=1)) / half_width) ** 2
    rows = []
    for cond, part in usable.groupby(condition, sort=True):
        judged = part.groupby(part[item].astype(str))[score].mean().rename("judge_score")
        pairs = judged.to_frame().join(human.rename("human_score"), how="inner")
        per_item = judge_cost if judge_cost is not None else cost_per_attempt(part) * part.groupby(item).size().mean()
        if not per_item > 0:
            raise DataError(f"the judge's cost of an item under {cond!r} is unknown (the pilot has no cost_usd and its "
                            "model is unpriced): give judge_cost=")  # fmt: skip
        got = ppi_budget(pairs, cost_label=label_cost, cost_judge=per_item, effective_n=effective_n).iloc[0]
        labels = got["n_labelled"] * label_cost
        rows.append({condition: cond, "n_labelled": int(got["n_labelled"]), "n_unlabelled": int(got["n_unlabelled"]),
                     "label_cost_usd": labels, "judge_cost_usd": got["cost"] - labels, "cost": got["cost"],
                     "effective_n": int(got["effective_n"]), "classical_n": round(effective_n),
                     "classical_cost_usd": round(effective_n) * label_cost,
                     "ppi_corr": got["ppi_corr"], "n": int(got["n"]), "half_width": half_width, "method": got["method"]})  # fmt: skip
    return pd.DataFrame(rows)


def _usable(pilot: pd.DataFrame) -> pd.DataFrame:
    """The pilot's rows a plan reads: no flagged attempts, and of a log with a stopping rule the first min."""
    usable = pilot
    if "error_flag" in usable.columns:
        usable = usable[~usable["error_flag"].fillna(False).astype(bool)]
    if "within_min" in usable.columns:  # a pilot collected under a rule: only its unbiased first attempts
        usable = usable[usable["within_min"].astype("boolean").fillna(True)]
    return usable


@dataclass
class PilotPlan:
    """What a pilot says about the main study; build with :func:`plan_from_pilot`.

    Attributes
    ----------
    components : DataFrame
        The pilot's variance components (:func:`hce.stats.planning_components`).
    grid : DataFrame
        The MDE of each design of the grid, the cheapest first (:func:`hce.stats.mde`).
    power : DataFrame or None
        With ``delta``: each design's power against it, the cheapest reaching ``power`` first.
    d_study : DataFrame
        Attempts per item and condition for the G and Phi target of an item's score under one
        condition (:meth:`hce.stats.VarianceComponents.solve`).
    stopping : DataFrame
        Per condition: the stopping rule's expected attempts per item and its saving.
    cost_per_attempt : float
        USD per attempt in the pilot (NaN when unpriced).
    labels : DataFrame or None
        With human ratings: the human labels per condition (:func:`label_budget`).
    """

    components: pd.DataFrame
    grid: pd.DataFrame
    power: pd.DataFrame | None
    d_study: pd.DataFrame
    stopping: pd.DataFrame
    cost_per_attempt: float
    labels: pd.DataFrame | None = None


@keywords_checked
@fill_doc
def plan_from_pilot(
    pilot: pd.DataFrame,
    *,
    score: str = "total",
    condition: str = "condition_id",
    item: str = "item_id",
    n_items: Sequence[int] = (20, 40, 80, 160),
    n_attempts: Sequence[int] = (1, 3, 5, 10),
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    delta: float | None = None,
    reliability: float = 0.8,
    rule_min: int = 3,
    rule_max: int = 15,
    half_width: float = 0.5,
    humans: pd.DataFrame | None = None,
    label_cost: float | None = None,
    label_half_width: float | None = None,
    random_state: int | None = None,
) -> PilotPlan:
    """Plan the main study from a pilot: detectable differences with costs, attempts, stopping savings.

    Parameters
    ----------
    pilot : DataFrame
        The pilot's attempt log (>= 2 conditions, >= 2 attempts per item and condition).
    score, condition, item : str
        Its columns (defaults ``total``, ``condition_id``, ``item_id``).
    n_items, n_attempts : sequence of int
        The design grid (defaults 20, 40, 80, 160 items; 1, 3, 5, 10 attempts).
    alpha, power, paired : float, float, bool
        As in :func:`hce.stats.mde` (defaults 0.05, 0.8, True).
    delta : float, optional
        A difference to detect: adds each design's power against it.
    reliability : float, default 0.8
        The G and Phi the D study solves for.
    rule_min, rule_max : int
        The stopping rule's min and max attempts (defaults 3, 15).
    half_width : float, default 0.5
        The stopping rule's target half-width of each item mean's 95% interval.
    humans : DataFrame, optional
        Human ratings of the pilot's items: adds the human-label budget (:func:`label_budget`)
        for ``label_half_width`` at ``label_cost`` USD an item (both then required).
    label_cost, label_half_width : float, optional
        See ``humans``.
    %(random_state)s

    Returns
    -------
    PilotPlan

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> pilot = simulated_log(n_items=12, n_attempts=3, noise={"A": 0.5, "B": 1.0}, error_rate=0,
    ...                       random_state=3)
    >>> plan = plan_from_pilot(pilot, n_items=[20, 40], n_attempts=[1, 3], random_state=0)
    >>> plan.grid[["n_items", "n_attempts", "calls"]].values.tolist()
    [[20, 1, 40], [40, 1, 80], [20, 3, 120], [40, 3, 240]]
    >>> plan.d_study["coefficient"].tolist()
    ['G', 'Phi']
    """
    from hce.collect.running.stopping import StopRule, expected_attempts
    from hce.stats import mde, planning_components, power_difference, variance_components

    if pilot.empty:
        raise DataError("the pilot log has no rows")
    price = cost_per_attempt(pilot)
    common = dict(condition=condition, score=score, item=item, n_items=list(n_items), n_attempts=list(n_attempts),
                  alpha=alpha, paired=paired, cost_per_attempt=None if np.isnan(price) else price)  # fmt: skip
    components = planning_components(pilot, condition=condition, score=score, item=item)
    grid = mde(pilot, power=power, **common)
    against = power_difference(pilot, delta=delta, target_power=power, **common) if delta is not None else None
    g = variance_components(pilot, score=score, facets=[item, condition], random_state=random_state)
    # the score of an item under one condition, averaged over its attempts
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* does not reach ")  # the page says "more than max_n" itself
        d_study = pd.concat([g.solve(target=reliability, coefficient=c, max_n=max(50, rule_max), n_levels={condition: 1},
                                     random_state=random_state) for c in ("G", "Phi")], ignore_index=True)  # fmt: skip
    rule = StopRule(min=rule_min, max=rule_max, criterion=score, half_width=half_width)
    usable = _usable(pilot)
    rows = []
    for cond, part in usable.dropna(subset=[score]).groupby(condition, sort=True):
        cells = [g_[score].tolist() for _, g_ in part.groupby(item, sort=False)]
        mean = expected_attempts(rule, cells, seed=random_state)
        rows.append({"condition_id": cond, "min": rule_min, "max": rule_max, "half_width": half_width,
                     "expected_attempts": mean, "saving": 1 - mean / rule_max})  # fmt: skip
    labels = None
    if humans is not None:
        if label_cost is None or label_half_width is None:
            raise DataError("a human-label budget needs label_cost (USD an item) and label_half_width (score points)")
        labels = label_budget(pilot, humans, label_cost=label_cost, half_width=label_half_width, score=score,
                              condition=condition, item=item)  # fmt: skip
    return PilotPlan(components, grid, against, d_study, pd.DataFrame(rows), price, labels)
