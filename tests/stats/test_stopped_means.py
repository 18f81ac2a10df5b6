"""hce.stats.stopped_item_means: item means of a log whose repeats stopped when the score was known.

References: the Wilson interval is statsmodels' ``proportion_confint(method="wilson")``; the
score interval is Chow & Robbins (1965): mean +- t(n-1, 0.975) sqrt((s^2 + 1/n) / n), written
out here with SciPy's t quantile. That it is the interval the collection stops on is checked by
calling the rule itself (hce.collect.running.stopping.StopRule).
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

import hce.stats as hs
from hce.collect.running.stopping import StopRule


def test_score_means_use_every_attempt_with_chow_robbins_and_the_rule_s_own_interval():
    rng = np.random.default_rng(4)
    log = pd.DataFrame({"item_id": np.repeat([f"T{i}" for i in range(6)], 7), "condition_id": "P",
                        "attempt": np.tile(np.arange(1, 8), 6), "total": rng.integers(8, 15, 42).astype(float),
                        "within_min": np.tile(np.arange(1, 8), 6) <= 3})  # fmt: skip
    log = log[~((log["item_id"] == "T0") & (log["attempt"] > 3))]  # a cell that stopped at min
    got = hs.stopped_item_means(log).set_index("item_id")
    rule = StopRule(min=3, max=15, criterion="total", half_width=0.5)
    for item, part in log.groupby("item_id"):
        x = part["total"].to_numpy()
        n, mean = len(x), x.mean()
        width = stats.t.ppf(0.975, n - 1) * np.sqrt((x.var(ddof=1) + 1 / n) / n)
        row = got.loc[item]
        assert row["n"] == n and row["estimate"] == pytest.approx(mean)  # every attempt, not the first min
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((mean - width, mean + width), rel=1e-12)
        assert row["ci_high"] - mean == pytest.approx(rule.interval_half_width(list(x)), rel=1e-12)
    assert got.loc["T0", "n"] == 3 and got.loc["T1", "n"] == 7


def test_true_false_scores_get_wilson_as_statsmodels():
    log = pd.DataFrame({"item_id": ["a"] * 9 + ["b"] * 4, "condition_id": "P",
                        "verdict": [True] * 7 + [False] * 2 + [True] * 4})  # fmt: skip
    got = hs.stopped_item_means(log, score="verdict", confidence=0.9).set_index("item_id")
    for item, (k, n) in {"a": (7, 9), "b": (4, 4)}.items():
        low, high = proportion_confint(k, n, alpha=0.1, method="wilson")
        assert (got.loc[item, "ci_low"], got.loc[item, "ci_high"]) == pytest.approx((low, high), rel=1e-12)
        assert got.loc[item, "estimate"] == pytest.approx(k / n) and "Wilson" in got.loc[item, "method"]
    one = hs.stopped_item_means(pd.DataFrame({"item_id": ["a"], "condition_id": "P", "total": [3.0]}))
    assert one["ci_low"].isna().all() and one["n"].tolist() == [1]
