"""Unidentifiable mixed models are refused before fitting, by every entry point.

lme4 1.1-31 refuses the same models (``lmerControl()``'s ``check.nlev.gtr.1``,
``check.nobs.vs.nlev`` and ``check.nobs.vs.nRE``, all "stop" by default): one observation
per level ("number of levels of each grouping factor must be < number of observations"), a
single level ("grouping factors must have > 1 sampled level"), and at least as many random
effects as observations ("number of observations (=n) <= number of random effects (=q) for
term (x | g); the random-effects parameters and the residual variance (or scale parameter)
are probably unidentifiable"). Before these checks hce "fitted" them, e.g. item variance 7.39
and residual 7.38 with one observation per item, and said converged=True. Checked in R 4.2.2
with lme4 1.1-31 on the data of the first three lmer tests below: lme4 stops with exactly
those three messages. The aliased-intercepts case is hce's own addition: lme4 fits it and
splits the variance arbitrarily (0.0007 and 0.214 here) with "Model failed to converge:
degenerate Hessian".
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats import icc, lmer, spread_model, variance_components
from hce.stats.mixed.formula import check_identifiable


def one_per_item(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "item_id": [f"i{i:02d}" for i in range(n)],
            "condition": ["a", "b"] * (n // 2),
            "score": rng.normal(10, 3, n).round(1),
        }
    )


def judge(n_items: int = 12, n_cond: int = 2, n_att: int = 3, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    log = pd.MultiIndex.from_product(
        [range(n_items), [f"c{c}" for c in range(n_cond)], range(n_att)],
        names=["item_id", "condition", "attempt"],
    ).to_frame(index=False)
    log["score"] = rng.normal(size=n_items)[log["item_id"]] + rng.normal(size=len(log))
    log["x"] = log["attempt"].astype(float)
    return log


def test_one_observation_per_item_is_refused():
    with pytest.raises(DataError, match=r"\(1 \| item_id\).*40 levels for 40 observations"):
        lmer("score ~ condition + (1 | item_id)", one_per_item())


def test_one_more_observation_is_fitted_as_lme4_does():
    # 40 levels for 41 observations passes lme4's checks too: the boundary of the rule
    data = one_per_item()
    data = pd.concat([data, data.iloc[[0]].assign(score=9.0)], ignore_index=True)
    with warnings.catch_warnings(record=True):  # a boundary fit is fine here
        warnings.simplefilter("always")
        m = lmer("score ~ condition + (1 | item_id)", data)
    assert m.n == 41


def test_single_level_grouping_factor_is_refused():
    data = judge().query("item_id == 0")
    with pytest.raises(DataError, match=r"\(1 \| item_id\): item_id has 1 level in the 6"):
        lmer("score ~ 1 + (1 | item_id)", data)


def test_residual_not_separable_from_slopes_is_refused():
    data = judge(n_att=2)  # 12 items x 2 conditions x 2 attempts = 48 rows
    data = data[data["condition"] == "c0"]  # 24 rows, 12 items x (intercept, slope) = 24
    with pytest.raises(DataError, match=r"\(x \| item_id\): 24 random effects \(12 levels x 2"):
        lmer("score ~ x + (x | item_id)", data)


def test_interaction_identical_to_its_factor_is_refused():
    data = judge()
    data = data[(data["item_id"] % 2) == data["condition"].str[1].astype(int)]  # one condition per item
    with pytest.raises(DataError, match=r"\(1 \| item_id\) and \(1 \| item_id:condition\).*identically"):
        lmer("score ~ 1 + (1 | item_id) + (1 | item_id:condition)", data)


def test_variance_components_refuses_a_single_level_facet():
    data = judge().query("condition == 'c0'")
    with pytest.raises(DataError, match=r"\(1 \| condition\): condition has 1 level"):
        variance_components(data, score="score", facets=["item_id", "condition"])


def test_variance_components_refuses_one_score_per_object():
    with pytest.raises(DataError, match=r"\(1 \| item_id\): item_id has 40 levels for 40"):
        variance_components(one_per_item(), score="score", facets=["item_id"])


def test_spread_model_refuses_one_cell_per_item():
    data = judge(n_cond=1)  # one cell (one SD) per item
    with pytest.raises(DataError, match=r"\(1 \| item_id\): item_id has 12 levels for 12"):
        spread_model("log_sd ~ 1 + (1 | item_id)", data, score="score")


def test_icc_reml_refuses_one_rating_per_target():
    data = one_per_item().assign(rater=lambda d: ["r1", "r2", "r3", "r4"] * 10)
    with pytest.raises(DataError, match=r"\(1 \| item_id\): item_id has 40 levels for 40"):
        icc(data, item="item_id", rater="rater", score="score", method="reml")


def test_check_identifiable_counts_every_coefficient():
    codes = np.arange(10) % 5
    check_identifiable([("(1 | g)", "g", codes, 5, 1)], 10)
    with pytest.raises(DataError, match="10 random effects"):
        check_identifiable([("(x | g)", "g", None, 5, 2)], 10)


def identical_attempts(balanced: bool, conditions: str = "A") -> pd.DataFrame:
    """Every attempt of an item and condition scores the same (a judge at temperature ~0)."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(10):
        score = float(np.round(10 + 2 * rng.normal()))
        for k in range(1, 3 + (0 if balanced else i % 2)):
            rows += [{"item_id": f"T{i}", "condition_id": c, "attempt": k, "total": score + (c == "B")} for c in conditions]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("balanced, facets", [(True, ["item_id"]), (False, ["item_id", "condition_id"])])
def test_zero_residual_variance_is_refused_by_name(balanced, facets):
    # Found on hce demo's Experiment 5 (attempts at temperature 0.1 all equal): the balanced
    # fit's profile interval crashed on log(0) with a bare ValueError; penalised least squares,
    # which has no optimum here (the deviance falls without bound as the residual variance
    # goes to 0), stopped anywhere on the ridge: an item variance of 0.38 for item means whose
    # variance is 2.8, with a confident interval.
    data = identical_attempts(balanced=balanced, conditions="A" if balanced else "AB")
    with pytest.raises(DataError, match=f"does not vary within any {' x '.join(facets)} cell"):
        variance_components(data, score="total", facets=facets, n_attempts=3)
