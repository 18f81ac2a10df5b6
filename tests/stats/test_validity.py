"""Validity helpers against R's documented examples, pingouin and scipy."""

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats
from seeds import fast_and_other_seeds

from hce.errors import DataError
from hce.stats.validity import discriminant_validity, rater_expertise, substantive_validity

# R ?wilcox.test examples (Hollander & Wolfe 1973): two-sample (p. 69) and paired (p. 29)
HW_X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
HW_Y = [1.15, 0.88, 0.90, 0.74, 1.21]
DEP_X = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
DEP_Y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]


def test_discriminant_matches_r_wilcox_test_and_pingouin():
    d = pd.DataFrame({"g": ["hi"] * 10 + ["lo"] * 5, "s": HW_X + HW_Y})
    res = discriminant_validity(d, condition="g", score="s", high="hi", low="lo").iloc[0]
    # R: wilcox.test(x, y, alternative = "g") -> W = 35, p-value = 0.1272 (two-sided 0.2544)
    assert res["statistic"] == 35
    assert res["p_value"] == pytest.approx(2 * 0.1272061, abs=1e-6)
    # pingouin.mwu(x, y): RBC 0.4
    ref = pg.mwu(HW_X, HW_Y)
    assert res["effect_size"] == pytest.approx(float(ref["RBC"].iloc[0]), abs=1e-12)
    assert res["effect_ci_low"] < res["effect_size"] < res["effect_ci_high"]
    assert (res["n_high"], res["n_low"]) == (10, 5)


def test_large_or_tied_samples_use_the_corrected_normal_approximation_as_r():
    rng = np.random.default_rng(8)
    hi, lo = rng.normal(0.3, 1, 60), rng.normal(0, 1, 55)  # no ties, but n >= 50
    d = pd.DataFrame({"g": ["h"] * 60 + ["l"] * 55, "s": np.r_[hi, lo]})
    res = discriminant_validity(d, condition="g", score="s", high="h", low="l").iloc[0]
    ref = stats.mannwhitneyu(hi, lo, method="asymptotic", use_continuity=True)
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", fast_and_other_seeds(2))
def test_delong_interval_covers_like_a_bootstrap(seed):
    # margin: the bootstrap SE of 600 replicates carries ~3% Monte Carlo error; SE ratio
    # ours / bootstrap is 0.95-1.05 over seeds 0-17 (12% allowed)
    rng = np.random.default_rng(seed)
    hi, lo = rng.normal(0.6, 1, 150).round(), rng.normal(0, 1, 120).round()
    d = pd.DataFrame({"g": ["h"] * 150 + ["l"] * 120, "s": np.r_[hi, lo]})
    res = discriminant_validity(d, condition="g", score="s", high="h", low="l").iloc[0]
    boot = []
    for _ in range(600):
        a, b = rng.choice(hi, hi.size), rng.choice(lo, lo.size)
        u = stats.mannwhitneyu(a, b).statistic
        boot.append(2 * u / (a.size * b.size) - 1)
    se_boot = np.std(boot, ddof=1)
    se_ours = (res["effect_ci_high"] - res["effect_ci_low"]) / (2 * stats.norm.ppf(0.975))
    assert se_ours == pytest.approx(se_boot, rel=0.12)


def test_discriminant_by_attribute_and_errors():
    d = pd.DataFrame({"g": ["a", "b"] * 6, "s": [5, 1, 4, 2, 5, 2, 3, 3, 4, 1, 5, 2],
                      "attr": ["x"] * 6 + ["y"] * 6})
    res = discriminant_validity(d, condition="g", score="s", high="a", low="b", attribute="attr")
    assert list(res["attribute"]) == ["x", "y"]
    with pytest.raises(DataError, match="low='c' is not a value of column 'g'"):
        discriminant_validity(d, condition="g", score="s", high="a", low="c")


def test_rater_expertise_matches_r_paired_wilcox_test_and_pingouin():
    n = len(DEP_X)
    d = pd.DataFrame({"text": list(range(n)) * 2, "level": ["junior"] * n + ["senior"] * n,
                      "score": DEP_X + DEP_Y})
    res = rater_expertise(d, item="text", condition="level", score="score").iloc[0]
    # R: wilcox.test(x, y, paired = TRUE, alternative = "greater") -> V = 40, p = 0.01953
    assert res["statistic"] == 40
    assert res["p_value"] == pytest.approx(2 * 0.01953125, abs=1e-9)
    assert res["effect_size"] == pytest.approx(float(pg.wilcoxon(DEP_X, DEP_Y)["RBC"].iloc[0]))
    assert res["n"] == n


def test_rater_expertise_averages_raters_within_group_and_pairs_texts():
    d = pd.DataFrame({
        "text": [1, 1, 1, 2, 2, 2, 3, 3, 4],
        "level": ["j", "j", "s", "j", "j", "s", "j", "s", "j"],
        "score": [3, 5, 3, 2, 4, 4, 5, 2, 1]})
    res = rater_expertise(d, item="text", condition="level", score="score",
                          levels=("j", "s")).iloc[0]
    # paired texts 1-3: junior means 4, 3, 5 against senior 3, 4, 2 (text 4 has no senior)
    assert res["n"] == 3
    # tied |differences| (1, 1): R falls back to the normal approximation with correction
    ref = stats.wilcoxon([4, 3, 5], [3, 4, 2], method="approx", correction=True)
    assert res["p_value"] == pytest.approx(ref.pvalue)
    with pytest.raises(DataError, match="rater group 'x' not found"):
        rater_expertise(d, item="text", condition="level", score="score", levels=("j", "x"))


def test_substantive_pearson_matches_scipy_and_pingouin():
    rng = np.random.default_rng(4)
    words = rng.integers(1500, 4000, 120)
    score = np.clip(np.round(4 - words / 3000 + rng.normal(0, 0.8, 120)), 1, 5)
    d = pd.DataFrame({"words": words, "score": score})
    res = substantive_validity(d, predictor="words", score="score").iloc[0]
    ref = stats.pearsonr(words, score)
    ci = ref.confidence_interval(0.95)
    assert res["estimate"] == pytest.approx(ref.statistic, rel=1e-12)
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert (res["ci_low"], res["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    pgr = pg.corr(words, score)
    assert res["ci_low"] == pytest.approx(pgr["CI95"].iloc[0][0], abs=0.005)
    assert res["df1"] == 118


def test_substantive_spearman_uses_bonett_wright_and_averages_per_target():
    d = pd.DataFrame({"text": [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
                      "words": [100, 100, 200, 200, 300, 300, 400, 400, 500, 500, 600, 600],
                      "score": [5, 4, 3, 3, 4, 3, 2, 3, 2, 3, 1, 2]})
    res = substantive_validity(d, predictor="words", score="score", item="text",
                               method="spearman").iloc[0]
    means = d.groupby("text")[["words", "score"]].mean()
    rho = stats.spearmanr(means["words"], means["score"]).statistic
    assert res["n"] == 6 and res["estimate"] == pytest.approx(rho)
    half = stats.norm.ppf(0.975) * np.sqrt((1 + rho**2 / 2) / 3)
    assert res["ci_low"] == pytest.approx(np.tanh(np.arctanh(rho) - half))
    bad = d.assign(words=range(12))
    with pytest.raises(DataError, match="varies within target"):
        substantive_validity(bad, predictor="words", score="score", item="text")


def test_substantive_kendall_is_tau_b_with_fieller_interval():
    # tied 1-5 scores: tau-b and its tie-corrected normal p, as scipy.stats.kendalltau
    rng = np.random.default_rng(8)
    words = rng.integers(1500, 4000, 40)
    score = np.clip(np.round(4 - words / 3000 + rng.normal(0, 0.8, 40)), 1, 5)
    res = substantive_validity(pd.DataFrame({"words": words, "score": score}), predictor="words",
                               score="score", method="kendall").iloc[0]
    ref = stats.kendalltau(words, score)
    assert res["estimate"] == pytest.approx(ref.statistic, rel=1e-12)
    # 40 pairs on a 1-5 scale are heavily tied: the P is the permutation P of S (issue 45), which the
    # tie-corrected normal approximation scipy gives (0.644) approaches; 0.03 is far above their gap here
    assert res["p_value"] == pytest.approx(ref.pvalue, abs=0.03)
    half = stats.norm.ppf(0.975) * np.sqrt(0.437 / 36)  # Fieller et al. (1957), n - 4 = 36
    assert res["ci_high"] == pytest.approx(np.tanh(np.arctanh(ref.statistic) + half), rel=1e-12)
    assert res["n"] == 40 and np.isnan(res["df1"])
