"""Judge-vs-human frames stacked from a log (issue 46, item 5): the judge's rows and the humans'
ratings of the same attempts keep condition_id and attempt; ``rater=`` tells them apart, so they
are no attempt logged twice. A repeat within one rater is still refused."""

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats import alt_test, cohen_kappa


def stacked(with_ids: bool) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    log = pd.DataFrame({"item_id": [f"q{i}" for i in range(40)], "condition_id": "C1", "attempt": 1,
                        "score": rng.integers(1, 4, 40)})  # fmt: skip
    if with_ids:
        log["attempt_id"] = [f"a{i}" for i in range(40)]
    humans = [log.assign(rater=h, score=np.where(rng.random(40) < 0.8, log["score"], rng.integers(1, 4, 40)))
              for h in ("h1", "h2", "h3")]  # fmt: skip
    return pd.concat([log.assign(rater="judge"), *humans], ignore_index=True)


@pytest.mark.parametrize("with_ids", [True, False])
def test_rater_separates_stacked_rows(with_ids):
    data = stacked(with_ids)
    pair = data[data["rater"].isin(["judge", "h1"])]
    assert -1 <= cohen_kappa(pair, item="item_id", rater="rater", score="score")["estimate"].iloc[0] <= 1
    out = alt_test(data, rater="rater", score="score", judge="judge", epsilon=0.1)
    assert out["summary"]["n_humans"].iloc[0] == 3


def test_a_repeat_within_one_rater_is_still_refused():
    data = stacked(False)
    twice = pd.concat([data, data[data["rater"] == "h1"].iloc[[0]]], ignore_index=True)
    with pytest.raises(DataError, match="logged twice"):
        cohen_kappa(twice[twice["rater"].isin(["judge", "h1"])], item="item_id", rater="rater", score="score")
