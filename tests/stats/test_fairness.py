import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats.subgroup_fairness import fairness
from hce.stats.tests import mann_whitney_core, p_adjust


def _log(shift_old=-2.0, seed=0):
    """60 items x 8 attempts; every item has the same spread of totals, items aged >65 are shifted."""
    rng = np.random.default_rng(seed)
    items = pd.DataFrame({"item_id": range(60), "age": np.repeat(["<40", "40-65", ">65"], 20),
                          "sex": np.tile(["f", "m"], 30)})
    log = items.loc[items.index.repeat(8)].reset_index(drop=True)
    base = np.concatenate([rng.permutation([10, 11, 12, 13, 10, 11, 12, 13]) for _ in range(60)])
    level = np.repeat(rng.normal(0, 0.3, 60), 8)  # item means differ a little, SDs do not
    log["total"] = base + level + np.where(log["age"] == ">65", shift_old, 0.0)
    log["error_flag"] = False
    return log


def test_detects_the_disadvantaged_stratum():
    out = fairness(_log(), strata=["age", "sex"], random_state=0)
    verdict = out["verdict"].iloc[0]
    assert not verdict["passes"] and verdict["disadvantaged"] == "age=>65"
    pairs = out["pairwise"]
    flagged = pairs[pairs["detrimental"]]
    assert set(flagged["measure"]) == {"mean"} and set(flagged["disadvantaged"]) == {">65"}


def test_pairwise_p_values_are_mann_whitney_with_holm_across_the_family():
    log = _log()
    out = fairness(log, strata=["age", "sex"], random_state=0)
    means = log.groupby("item_id").agg(total=("total", "mean"), sex=("sex", "first"))
    row = out["pairwise"].query("stratum == 'sex' and measure == 'mean'").iloc[0]
    core = mann_whitney_core(means.loc[means["sex"] == "f", "total"].to_numpy(),
                             means.loc[means["sex"] == "m", "total"].to_numpy())
    assert row["p_value"] == pytest.approx(core["p_value"], rel=1e-12)
    adjusted = p_adjust(out["pairwise"]["p_value"].to_numpy(), "holm")
    np.testing.assert_allclose(out["pairwise"]["p_adjusted"], adjusted, rtol=1e-12)


def test_no_difference_passes_and_higher_sd_counts_as_harm():
    # no difference by construction: each 'm' item repeats the scores of the 'f' item before
    # it, so the verdict cannot depend on the seed (a random null would fail at rate alpha)
    log = _log(shift_old=0.0)
    female = log["sex"] == "f"
    log.loc[~female, "total"] = log.loc[female, "total"].to_numpy()
    out = fairness(log, strata="sex", random_state=0)
    assert out["verdict"].iloc[0]["passes"]
    log = _log(shift_old=0.0)
    noisy = log["age"] == ">65"
    log.loc[noisy, "total"] = log.loc[noisy, "total"] + np.tile([-4, 4], noisy.sum() // 2)
    out = fairness(log, strata="age", measures={"sd": "higher"}, random_state=0)
    assert out["verdict"].iloc[0]["disadvantaged"] == "age=>65"


def test_strata_must_be_item_level():
    log = _log()
    log.loc[0, "sex"] = "m" if log.loc[0, "sex"] == "f" else "f"
    with pytest.raises(DataError, match="vary within item"):
        fairness(log, strata="sex")
