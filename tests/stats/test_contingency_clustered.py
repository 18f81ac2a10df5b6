"""The cluster-aware test of Experiment 4's code tables (issue 33: segments nested in replies)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hce.errors import DataError
from hce.stats import cluster_permutation_test


def nested() -> pd.DataFrame:
    # 4 transcripts x 2 replies (models a, b) x 3 segments. Model a's replies code every segment x;
    # model b's code y, x, y. Table [[12, 0], [4, 8]]: X^2 = 2 + 4 + 2 + 4 = 12 by hand.
    rows = [{"reply": r, "model": "ab"[r % 2], "item": r // 2, "code": "x" if r % 2 == 0 else "yxy"[s]}
            for r in range(8) for s in range(3)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_permutation_p_value_counts_whole_replies():
    out = cluster_permutation_test(nested(), condition="model", codes="code", cluster=["reply"], strata="item",
                                   n_sim=20000, random_state=1).iloc[0]  # fmt: skip
    assert out["statistic"] == pytest.approx(12.0) and out["n_clusters"] == 8 and out["n"] == 24
    # Exact null distribution by hand: each transcript's two replies swap labels or not (2^4 = 16
    # equally likely tables); X^2 >= 12 only when all four swap alike: 2/16 = 0.125. The Monte Carlo
    # p within 4 SE (SE = sqrt(0.125 * 0.875 / 20000) = 0.0023).
    assert out["p_value"] == pytest.approx(0.125, abs=0.01)
    # The segment-level chi-squared calls the same table significant: P = .0005.
    naive = stats.chi2_contingency(np.array([[12, 0], [4, 8]]), correction=False)
    assert naive.pvalue < 0.001


def test_a_cluster_must_belong_to_one_group():
    data = nested()
    data.loc[0, "model"] = "b"
    with pytest.raises(DataError, match="holds several 'model' values"):
        cluster_permutation_test(data, condition="model", codes="code", cluster=["reply"], strata="item", n_sim=10)
