"""Simulated attempt logs with known truth, for tests, benchmarks and examples (no network)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.rubric import load_rubric
from hce.stats._resample import as_generator


@keywords_checked
def simulated_log(
    *,
    experiment_id: str = "EXP5_FinalToolValidation",
    n_items: int = 50,
    n_attempts: int = 10,
    noise: Mapping[str, float] | None = None,
    condition: str = "condition_id",
    error_rate: float = 0.02,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """A simulated attempt log with known truth: ``n_items x len(noise) x n_attempts`` attempts.

    For examples, guides and dry runs of an analysis: no API call, the attempt-log schema of
    :func:`hce.read_log` (the five criteria of rubric v5, ``total``, ``verdict``,
    ``confidence``, ``error_flag``, ...), and a truth to check the statistics against.

    Parameters
    ----------
    experiment_id : str, default "EXP5_FinalToolValidation"
        The log's ``experiment_id``.
    n_items, n_attempts : int
        Items (``T0000``, ``T0001``, ...) and repeated attempts per item and condition.
        Defaults: ``n_items=50``, ``n_attempts=10``.
    noise : mapping str -> float, optional
        Each condition's name and the SD of its scores around the item's latent score;
        default one condition, ``{"C1": 0.3}``.
    condition : str, default "condition_id"
        Name of the condition column.
    error_rate : float, default 0.02
        Share of attempts flagged failed (``error_flag``), which carry no scores.
    random_state : int, Generator or None, default 0
        Seed of the simulation (unlike the statistics' None, so the default gives the same
        log every time).

    Returns
    -------
    DataFrame
        One row per attempt: ``experiment_id``, ``item_id``, the condition, ``attempt``, one
        column per criterion, ``total``, ``target_total`` (the item's true total),
        ``verdict``, ``confidence``, ``latency_s``, ``cost_usd``, ``error_flag``,
        ``error_message``, ``sex`` and ``transcript_words`` (item metadata).

    Notes
    -----
    Each item has latent category scores, uniform on 1-4; an attempt rounds latent + normal
    noise with the condition's SD and clips to 1-4. ``target_total`` is the sum of the
    latent scores, rounded; ``verdict`` is whether the attempt's total is >= 13.

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> log = simulated_log(n_items=3, n_attempts=2, noise={"A": 0.2, "B": 0.8})
    >>> log[["item_id", "condition_id", "attempt", "total"]].head(4)
      item_id condition_id  attempt  total
    0   T0000            A        1   11.0
    1   T0000            A        2   11.0
    2   T0000            B        1   10.0
    3   T0000            B        2   10.0
    """
    rng = as_generator(random_state)
    noise = dict(noise or {"C1": 0.3})
    categories = load_rubric("v5").criteria  # the attempt log's category columns
    k = len(categories)
    latent = rng.uniform(1, 4, size=(n_items, k))
    n_cond = len(noise)
    item = np.repeat(np.arange(n_items), n_cond * n_attempts)
    cond = np.tile(np.repeat(np.arange(n_cond), n_attempts), n_items)
    sd = np.array(list(noise.values()))[cond]
    scores = np.clip(np.rint(latent[item] + rng.normal(size=(item.size, k)) * sd[:, None]), 1, 4)
    errored = rng.random(item.size) < error_rate
    scores[errored] = np.nan
    log = pd.DataFrame(scores, columns=list(categories))
    log.insert(0, "experiment_id", experiment_id)
    log.insert(1, "item_id", [f"T{i:04d}" for i in item])
    log.insert(2, condition, np.array(list(noise))[cond])
    log.insert(3, "attempt", np.tile(np.arange(1, n_attempts + 1), n_items * n_cond))
    log["total"] = scores.sum(axis=1)
    log["target_total"] = np.rint(latent.sum(axis=1))[item]
    log["verdict"] = pd.array(np.where(errored, None, log["total"] >= 13), dtype="boolean")
    log["confidence"] = np.where(errored, np.nan, rng.uniform(0.5, 1, item.size))
    log["latency_s"] = rng.gamma(4, 0.5, item.size)
    log["cost_usd"] = rng.uniform(1e-4, 1e-3, item.size)
    log["error_flag"] = errored
    log["error_message"] = np.where(errored, "simulated parse failure", None)
    log["sex"] = np.array(["female", "male"])[np.arange(n_items) % 2][item]
    log["transcript_words"] = rng.integers(300, 700, n_items)[item]
    return log
