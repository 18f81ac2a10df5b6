"""Attempt logs drawn from the models themselves, with known parameters (for parameter
recovery, coverage studies, benchmarks and power planning)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce.stats._resample import as_generator
from hce.stats.bayes import _core


def simulate_ordinal(
    n_items: int,
    n_attempts: int,
    *,
    cutpoints: Sequence[float] = (-2.0, 0.0, 2.0),
    condition_effects: Sequence[float] = (0.0,),
    log_noise: Sequence[float] | None = None,
    sd_item: float = 2.0,
    sd_slope: float = 0.0,
    cor_slope: float = 0.0,
    link: str = "logit",
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Simulate ``score ~ condition + (1 | item_id)``, noise by condition, on a 1..K scale;
    with ``sd_slope > 0``, ``score ~ condition + (1 + condition | item_id)`` for two conditions.

    Parameters
    ----------
    n_items, n_attempts : int
        Items, and attempts per item and condition (fully crossed).
    cutpoints : sequence of float
        K - 1 increasing cutpoints; scores are ``1..K``.
    condition_effects : sequence of float
        Latent shift of each condition ``c0, c1, ...`` (the first is the reference, 0).
    log_noise : sequence of float, optional
        Log noise scale of each condition (first 0); default all 0.
    sd_item : float
        SD of the items' random intercepts.
    sd_slope, cor_slope : float, default 0, 0
        SD of each item's deviation from the condition effect (the same deviation shifts
        every non-reference condition), and its correlation with the random intercept.
    link : {"logit", "probit"}
    random_state : int or Generator, optional

    Returns
    -------
    pandas.DataFrame
        ``item_id``, ``condition``, ``attempt``, ``score``, ``latent`` (item location
        ``eta`` without noise); the truth is in ``.attrs["truth"]``.
    """
    rng = as_generator(random_state)
    effects = np.asarray(condition_effects, dtype=float)
    noise = np.zeros_like(effects) if log_noise is None else np.asarray(log_noise, dtype=float)
    frame = pd.MultiIndex.from_product(
        [range(n_items), range(len(effects)), range(n_attempts)], names=["item_id", "condition", "attempt"]
    ).to_frame(index=False)
    item = frame["item_id"].to_numpy()
    cond = frame["condition"].to_numpy()
    cov = [[sd_item**2, cor_slope * sd_item * sd_slope], [cor_slope * sd_item * sd_slope, sd_slope**2]]
    u = rng.multivariate_normal([0.0, 0.0], cov, n_items, method="cholesky") if sd_slope else np.c_[rng.normal(0.0, sd_item, n_items), np.zeros(n_items)]
    # the fitted models' effects sum to zero; the means sit in the cutpoints and the fixed effect
    u -= u.mean(axis=0)
    eta = effects[cond] + u[item, 0] + u[item, 1] * (cond > 0)
    draw = rng.logistic(size=len(frame)) if link == "logit" else rng.normal(size=len(frame))
    latent = eta + np.exp(noise[cond]) * draw
    frame["score"] = 1 + (latent[:, None] > np.asarray(cutpoints)[None, :]).sum(axis=1)
    frame["condition"] = [f"c{k}" for k in cond]
    frame["item_id"] = [f"i{k:04d}" for k in item]
    frame["latent"] = eta
    frame.attrs["truth"] = {
        "cutpoints": np.asarray(cutpoints, dtype=float) - 0.0,
        "condition_effects": effects,
        "log_noise": noise,
        "sd_item": sd_item,
        "sd_slope": sd_slope,
        "cor_slope": cor_slope,
        "latent_sd": _core.LATENT_SD[link] * np.exp(noise),
    }
    return frame
