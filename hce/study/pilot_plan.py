"""A main study planned from its pilot, on one page (``hce plan PILOT_LOG``).

Three answers from one pilot attempt log: the smallest difference between two conditions'
mean scores each design of a grid detects, with its calls and cost
(:func:`hce.stats.mde`); the attempts per item a G or Phi target needs
(:meth:`hce.stats.VarianceComponents.solve`); and what repeats that stop when the score is
known would save (``hce.collect.running.stopping``). The cost of an attempt is the pilot's own
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

__all__ = ["PilotPlan", "cost_per_attempt", "plan_from_pilot"]


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
    """

    components: pd.DataFrame
    grid: pd.DataFrame
    power: pd.DataFrame | None
    d_study: pd.DataFrame
    stopping: pd.DataFrame
    cost_per_attempt: float


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
    usable = pilot
    if "error_flag" in usable.columns:
        usable = usable[~usable["error_flag"].fillna(False).astype(bool)]
    if "within_min" in usable.columns:  # a pilot collected under a rule: only its unbiased first attempts
        usable = usable[usable["within_min"].astype("boolean").fillna(True)]
    rows = []
    for cond, part in usable.dropna(subset=[score]).groupby(condition, sort=True):
        cells = [g_[score].tolist() for _, g_ in part.groupby(item, sort=False)]
        mean = expected_attempts(rule, cells, seed=random_state)
        rows.append({"condition_id": cond, "min": rule_min, "max": rule_max, "half_width": half_width,
                     "expected_attempts": mean, "saving": 1 - mean / rule_max})  # fmt: skip
    return PilotPlan(components, grid, against, d_study, pd.DataFrame(rows), price)
