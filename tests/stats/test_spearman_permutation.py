"""Spearman's permutation P against R (tests/stats/r/spearman_permutation_reference.R; issue 45).

R's brute force over all n! permutations of y, and for untied data R's own exact cor.test (AS 89),
stored in tests/stats/data/spearman_permutation_reference.json so CI needs no R.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import correlation

REFERENCE = json.loads((Path(__file__).parent / "data" / "spearman_permutation_reference.json").read_text())
CASES = [name for name in REFERENCE if name != "r_version"]


@pytest.mark.parametrize("name", CASES)
def test_spearman_permutation_p_equals_r(name):
    case = REFERENCE[name]
    data = pd.DataFrame({"x": case["x"], "y": case["y"]})
    out = correlation(data, x="x", y="y", method="spearman").iloc[0]
    assert out.estimate == pytest.approx(case["rho"], rel=1e-12)
    assert out.p_value == pytest.approx(case["p_permutation"], rel=1e-10)
    if case["p_cor_test_exact"] != {}:
        assert out.p_value == pytest.approx(case["p_cor_test_exact"], rel=1e-10)
    assert "exact permutation P" in out.method and np.isnan(out.df1)
    n = len(data)
    assert out.statistic == pytest.approx((n**3 - n) * (1 - case["rho"]) / 6)  # R's S
    t = correlation(data, x="x", y="y", method="spearman", p_method="t").iloc[0]
    assert t.p_value == pytest.approx(case["p_t"], rel=1e-10) and "t approximation" in t.method


def test_the_demo_confidence_sd_case_is_p_018_not_005():
    # Issue 45: 8 items whose SD takes two values; the t approximation gave .005, the 56 arrangements 1/56.
    case = REFERENCE["sm5"]
    out = correlation(pd.DataFrame({"x": case["x"], "y": case["y"]}), x="x", y="y", method="spearman").iloc[0]
    assert out.p_value == pytest.approx(1 / 56) and "56 distinct arrangements" in out.method


def test_many_pairs_without_ties_keep_the_t_approximation_and_monte_carlo_in_between():
    rng = np.random.default_rng(5)
    big = pd.DataFrame({"x": rng.normal(size=60), "y": rng.normal(size=60)})
    assert "t approximation" in correlation(big, x="x", y="y", method="spearman").iloc[0].method
    mid = big.iloc[:15]  # 15! arrangements: Monte Carlo, seeded, within 3 SE (0.0035 at p = 0.5) of the t P
    out = correlation(mid, x="x", y="y", method="spearman", random_state=1).iloc[0]
    again = correlation(mid, x="x", y="y", method="spearman", random_state=1).iloc[0]
    t = correlation(mid, x="x", y="y", method="spearman", p_method="t").iloc[0]
    assert "Monte Carlo permutation P" in out.method and out.p_value == again.p_value
    assert abs(out.p_value - t.p_value) < 0.02


@pytest.mark.parametrize("name", ["sm5", "two_levels", "ties_both"])
def test_kendall_permutation_p_with_ties_equals_brute_force_over_all_n_factorial_pairings(name):
    # Issue 45: with ties R's cor.test(method = "kendall") has no exact P and uses the normal approximation; on a few
    # heavily tied pairs the permutation P replaces it. Reference: every one of the n! pairings enumerated here, each
    # scored by scipy's tau-b (the same statistic the function orders arrangements by, through S).
    import itertools

    from scipy import stats

    case = REFERENCE[name]
    x, y = np.asarray(case["x"], float), np.asarray(case["y"], float)
    out = correlation(pd.DataFrame({"x": x, "y": y}), x="x", y="y", method="kendall").iloc[0]
    perms = np.array(list(itertools.permutations(range(len(y)))))
    i, j = np.triu_indices(len(y), 1)
    s = np.sign(y[perms][:, i] - y[perms][:, j]) @ np.sign(x[i] - x[j])  # tau-b's numerator for every pairing
    observed = abs(stats.kendalltau(x, y).statistic)
    tau = s / np.sqrt((len(i) - _tied_pairs(x)) * (len(i) - _tied_pairs(y)))
    assert out.p_value == pytest.approx(float(np.mean(np.abs(tau) >= observed - 1e-12)), rel=1e-12)
    assert "exact permutation P" in out.method
    normal = correlation(pd.DataFrame({"x": x, "y": y}), x="x", y="y", method="kendall", p_method="t").iloc[0]
    assert "normal approximation" in normal.method


def _tied_pairs(values: np.ndarray) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))
