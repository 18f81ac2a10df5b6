"""``lmer``, ``variance_components``, ``spread_model`` and ``icc(method="reml")`` agree.

All four fit ``y ~ 1 + (1 | item_id) + (1 | rater)`` by REML on the same numbers when ``y`` is
the log SD of each item x rater cell of an attempt log: ``spread_model`` builds that cell table
itself, ``lmer`` and ``variance_components`` read the table built here, and ``icc`` reaches the
same crossed model through its own REML code (:func:`hce.stats.reliability.icc_reml.reml_components`),
so the property compares two independent optimisers: ICC(A,1) = s2_item / (s2_item + s2_rater
+ s2_e) and ICC(C,1) = s2_item / (s2_item + s2_e). Five small incomplete designs per run
(10-25% of cells missing, 2-4 attempts per cell, variances from 0 to large): each example fits
four models, and variance_components' intervals make it about 2 s.

Tolerance: 1e-5 on the ICCs and 1e-5 x (estimate + residual) on the variances. On 25 random
designs of this kind lmer's and icc's REML estimates differed by at most 2.5e-8 (relative to
estimate + residual) and the ICCs by 1.5e-8, so the margin is wide, yet a different optimum
(a component trapped at 0) differs by far more.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hce.stats import icc, lmer, spread_model, variance_components

FORMULA = "log_sd ~ 1 + (1 | item_id) + (1 | rater)"
TOL = 1e-5


def attempt_log(seed, n_items, n_raters, share_missing, sd_item, sd_rater) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cells = pd.MultiIndex.from_product(
        [range(n_items), range(n_raters)], names=["item", "rater_no"]
    ).to_frame(index=False)
    cells = cells[rng.random(len(cells)) >= share_missing]
    # log SD of a cell = item effect + rater effect + noise
    log_sd = (
        rng.normal(0, sd_item, n_items)[cells["item"]]
        + rng.normal(0, sd_rater, n_raters)[cells["rater_no"]]
        + rng.normal(0, 0.3, len(cells))
    )
    rows = []
    for (item, rater), s in zip(cells.itertuples(index=False), np.exp(log_sd)):
        for score in rng.normal(10, s, rng.integers(2, 5)):
            rows.append((f"i{item:02d}", f"r{rater}", score))
    return pd.DataFrame(rows, columns=["item_id", "rater", "score"])


def quietly(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True):  # boundary fits are part of the property
        warnings.simplefilter("always")
        return fn(*args, **kwargs)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_items=st.integers(6, 14),
    n_raters=st.integers(3, 5),
    share_missing=st.floats(0.10, 0.25),
    sd_item=st.sampled_from([0.0, 0.2, 1.0]),
    sd_rater=st.sampled_from([0.0, 0.2, 1.0]),
)
def test_four_entry_points_agree(seed, n_items, n_raters, share_missing, sd_item, sd_rater):
    log = attempt_log(seed, n_items, n_raters, share_missing, sd_item, sd_rater)
    cells = (
        log.groupby(["item_id", "rater"])["score"].std().rename("sd").reset_index()
        .assign(log_sd=lambda d: np.log(d["sd"]))
    )  # fmt: skip
    spread = quietly(spread_model, FORMULA, log, score="score")
    fit = quietly(lmer, FORMULA, cells)
    g_study = quietly(variance_components, cells, score="log_sd", facets=["item_id", "rater"])
    iccs = quietly(icc, cells, item="item_id", rater="rater", score="log_sd", method="reml").set_index("metric")

    v = fit.varcorr().set_index("group")["vcov"]
    s2_item, s2_rater, s2_e = v["item_id"], v["rater"], v["Residual"]
    scale = np.array([s2_item, s2_rater, s2_e]) + s2_e
    for other in (
        spread.varcorr().set_index("group")["vcov"][["item_id", "rater", "Residual"]],
        g_study.components.set_index("component")["estimate"][["item_id", "rater", "residual"]],
    ):
        assert np.all(np.abs(other.to_numpy() - [s2_item, s2_rater, s2_e]) <= TOL * scale)
    np.testing.assert_allclose(-2 * spread.loglik, -2 * fit.loglik, rtol=0, atol=1e-8)
    icc_a = s2_item / (s2_item + s2_rater + s2_e)
    icc_c = s2_item / (s2_item + s2_e)
    assert abs(iccs.loc["ICC2", "estimate"] - icc_a) <= TOL
    assert abs(iccs.loc["ICC3", "estimate"] - icc_c) <= TOL
