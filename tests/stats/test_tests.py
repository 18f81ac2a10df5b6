"""Reference values: R 4.x documentation examples (printed digits; tolerance = half the last
printed digit), exact enumerations written here, scikit-posthocs, pingouin and statsmodels."""

import itertools
import math

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import scikit_posthocs as sp
from scipy import stats
from statsmodels.stats.multitest import multipletests

from hce.errors import DataError, HceWarning
from hce.stats.contingency import code_frequencies, contingency_core, contingency_test
from hce.stats.repeated_measures import mauchly, rm_anova
from hce.stats.tests import (
    friedman,
    kruskal_wallis,
    mann_whitney,
    p_adjust,
    posthoc,
    tie_term,
    wilcoxon_paired,
)

# R ?wilcox.test, two-sample example (Hollander & Wolfe 1973, p. 69)
HW_X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
HW_Y = [1.15, 0.88, 0.90, 0.74, 1.21]
# R ?wilcox.test, paired example (Hollander & Wolfe 1973, p. 29): depression scores
DEP_X = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
DEP_Y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
# R datasets::mtcars, mpg by am (0 = automatic)
MPG = [21.0, 21.0, 22.8, 21.4, 18.7, 18.1, 14.3, 24.4, 22.8, 19.2, 17.8, 16.4, 17.3, 15.2, 10.4, 10.4,
       14.7, 32.4, 30.4, 33.9, 21.5, 15.5, 15.2, 13.3, 19.2, 27.3, 26.0, 30.4, 15.8, 19.7, 15.0, 21.4]
AM = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
# R ?friedman.test: RoundingTimes (Hollander & Wolfe 1973, p. 140), 22 players x 3 methods
ROUNDING = np.array([
    5.40, 5.50, 5.55, 5.85, 5.70, 5.75, 5.20, 5.60, 5.50, 5.55, 5.50, 5.40, 5.90, 5.85, 5.70,
    5.45, 5.55, 5.60, 5.40, 5.40, 5.35, 5.45, 5.50, 5.35, 5.25, 5.15, 5.00, 5.85, 5.80, 5.70,
    5.25, 5.20, 5.10, 5.65, 5.55, 5.45, 5.60, 5.35, 5.45, 5.05, 5.00, 4.95, 5.50, 5.50, 5.40,
    5.45, 5.55, 5.50, 5.55, 5.55, 5.35, 5.45, 5.50, 5.55, 5.50, 5.45, 5.25, 5.65, 5.60, 5.40,
    5.70, 5.65, 5.55, 6.30, 6.30, 6.25]).reshape(22, 3)  # fmt: skip


def _two_sample(x, y, a="x", b="y"):
    return pd.DataFrame({"g": [a] * len(x) + [b] * len(y), "v": list(x) + list(y)})


def _paired(x, y):
    n = len(x)
    return pd.DataFrame({"item_id": list(range(n)) * 2, "g": ["x"] * n + ["y"] * n, "v": list(x) + list(y)})


def _long(matrix, labels=("RO", "NA", "WA")):
    frame = pd.DataFrame(matrix, columns=list(labels)).rename_axis("item_id").reset_index()
    return frame.melt(id_vars="item_id", var_name="condition_id", value_name="sd")


# ----------------------------------------------------------------------------- Mann-Whitney
def test_mann_whitney_exact_matches_r_and_enumeration():
    out = mann_whitney(_two_sample(HW_X, HW_Y), condition="g", score="v", alternative="greater").iloc[0]
    # R: wilcox.test(x, y, alternative = "g") -> W = 35, p-value = 0.1272
    assert out["statistic"] == 35
    assert out["p_value"] == pytest.approx(0.1272, abs=5e-5)
    # exact reference: share of the C(15, 5) rank sets of y giving U_x >= 35 (no ties here)
    ranks = range(1, 16)
    count = sum(1 for ys in itertools.combinations(ranks, 5) if (120 - sum(ys)) - 55 >= 35)
    assert out["p_value"] == pytest.approx(count / math.comb(15, 5), rel=1e-12)
    assert "exact" in out["method"]


def test_mann_whitney_with_ties_matches_r_and_effectsize():
    df = pd.DataFrame({"am": AM, "mpg": MPG})
    out = mann_whitney(df, condition="am", score="mpg", a=0, b=1).iloc[0]
    # R: wilcox.test(mpg ~ am, data = mtcars) -> W = 42, p-value = 0.001871 (ties: normal approx.)
    assert out["statistic"] == 42
    assert out["p_value"] == pytest.approx(0.001871, abs=5e-7)
    # R: effectsize::rank_biserial(mpg ~ am, data = mtcars) -> -0.66, 95% CI [-0.84, -0.36]
    assert out["effect_size"] == pytest.approx(-0.66, abs=0.005)
    assert (out["effect_ci_low"], out["effect_ci_high"]) == pytest.approx((-0.84, -0.36), abs=0.005)
    # r = 2U/(n1 n2) - 1 exactly
    assert out["effect_size"] == pytest.approx(2 * 42 / (19 * 13) - 1, rel=1e-12)


def test_mann_whitney_needs_two_levels():
    df = pd.DataFrame({"g": list("abc"), "v": [1, 2, 3]})
    with pytest.raises(DataError, match="3 levels"):
        mann_whitney(df, condition="g", score="v")


# ----------------------------------------------------------------------------- Wilcoxon
def test_wilcoxon_exact_matches_r_and_enumeration():
    out = wilcoxon_paired(_paired(DEP_X, DEP_Y), condition="g", score="v", alternative="greater").iloc[0]
    # R: wilcox.test(x, y, paired = TRUE, alternative = "greater") -> V = 40, p-value = 0.01953
    assert out["statistic"] == 40
    # exact: sign patterns over ranks 1..9 with V >= 40, out of 2^9
    count = sum(1 for signs in itertools.product([0, 1], repeat=9)
                if sum(r for r, s in zip(range(1, 10), signs) if s) >= 40)  # fmt: skip
    assert out["p_value"] == pytest.approx(count / 512, rel=1e-12) == pytest.approx(0.01953, abs=5e-6)
    # R: effectsize::rank_biserial(Pair(first, second) ~ 1, data = depression) -> 0.78, CI [0.30, 0.94]
    assert out["effect_size"] == pytest.approx(35 / 45, rel=1e-12)
    assert (out["effect_ci_low"], out["effect_ci_high"]) == pytest.approx((0.30, 0.94), abs=0.005)


def test_wilcoxon_normal_approximation_matches_r():
    df = _paired(DEP_Y, DEP_X)
    out = wilcoxon_paired(df, condition="g", score="v", alternative="less", exact=False, continuity=False).iloc[0]
    # R: wilcox.test(y - x, alternative = "less", exact = FALSE, correct = FALSE) -> V = 5, p-value = 0.01908
    assert out["statistic"] == 5
    assert out["p_value"] == pytest.approx(0.01908, abs=5e-6)


def _r_wilcox_approx(d, correct=True):
    """R's stats:::wilcox.test.default, normal branch, two-sided: zeros dropped, ties corrected."""
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    n = d.size
    r = stats.rankdata(np.abs(d))
    v = r[d > 0].sum()
    z = v - n * (n + 1) / 4
    _, nties = np.unique(r, return_counts=True)
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24 - (nties**3 - nties).sum() / 48)
    correction = np.sign(z) * 0.5 if correct else 0.0
    return v, 2 * min(stats.norm.cdf((z - correction) / sigma), stats.norm.sf((z - correction) / sigma))


def test_wilcoxon_zeros_and_ties_follow_r_formula():
    a = [3, 5, 5, 7, 2, 4, 6, 6, 8, 1, 4]
    b = [3, 4, 3, 5, 2, 2, 4, 3, 5, 2, 5]  # two zero differences, tied |d|
    out = wilcoxon_paired(_paired(a, b), condition="g", score="v").iloc[0]
    v, p = _r_wilcox_approx(np.subtract(a, b))
    assert out["statistic"] == v
    assert out["p_value"] == pytest.approx(p, rel=1e-10)
    assert (out["n_pairs"], out["n_zero"], out["n"]) == (11, 2, 9)
    assert "normal approximation" in out["method"]


def test_wilcoxon_all_zero_differences():
    out = wilcoxon_paired(_paired([1, 2, 3], [1, 2, 3]), condition="g", score="v").iloc[0]
    assert np.isnan(out["p_value"]) and out["n"] == 0 and out["n_zero"] == 3


def test_incomplete_pairs_are_dropped_with_warning():
    df = _paired(DEP_X, DEP_Y).iloc[:-1]
    with pytest.warns(HceWarning, match="1 'item_id' block"):
        out = wilcoxon_paired(df, condition="g", score="v").iloc[0]
    assert out["n_pairs"] == 8


# ----------------------------------------------------------------------------- Friedman and post-hoc
def test_friedman_matches_r_rounding_times():
    out = friedman(_long(ROUNDING), random_state=1).iloc[0]
    # R: friedman.test(RoundingTimes) -> Friedman chi-squared = 11.143, df = 2, p-value = 0.003805
    assert out["statistic"] == pytest.approx(11.143, abs=5e-4)
    assert out["p_value"] == pytest.approx(0.003805, abs=5e-7)
    assert out["df1"] == 2 and out["n"] == 22
    # scipy.stats.friedmanchisquare applies the same tie correction
    assert out["statistic"] == pytest.approx(stats.friedmanchisquare(*ROUNDING.T).statistic, rel=1e-12)
    assert out["effect_size"] == pytest.approx(out["statistic"] / (22 * 2), rel=1e-12)
    assert out["effect_ci_low"] < out["effect_size"] < out["effect_ci_high"]


def test_kendalls_w_without_ties_is_the_classic_coefficient():
    # W = 12 S / (m^2 (n^3 - n)) with S the squared deviations of rank sums (Kendall & Babington Smith)
    rng = np.random.default_rng(3)
    m = rng.permutation(np.arange(1.0, 13.0)).reshape(4, 3)
    ranks = stats.rankdata(m, axis=1)
    s = ((ranks.sum(axis=0) - ranks.sum() / 3) ** 2).sum()
    out = friedman(_long(m), random_state=0).iloc[0]
    assert out["effect_size"] == pytest.approx(12 * s / (4**2 * (3**3 - 3)), rel=1e-12)


def test_tie_term_by_hand():
    assert list(tie_term(np.array([[1, 1, 1, 2], [1, 1, 2, 2], [1, 2, 3, 4]]))) == [24, 12, 0]


@pytest.mark.parametrize("method,reference", [("nemenyi", sp.posthoc_nemenyi_friedman),
                                              ("conover", sp.posthoc_conover_friedman)])
def test_posthoc_matches_scikit_posthocs(method, reference):
    out = posthoc(_long(ROUNDING), method=method, p_adjust_method="none")
    expected = reference(pd.DataFrame(ROUNDING, columns=["RO", "NA", "WA"]))
    for _, row in out.iterrows():
        assert row["p_value"] == pytest.approx(expected.loc[row["a"], row["b"]], rel=1e-10)
    assert list(out.columns[:2]) == ["a", "b"]


def test_posthoc_conover_holm_matches_scikit_posthocs():
    out = posthoc(_long(ROUNDING), method="conover", p_adjust_method="holm")
    expected = sp.posthoc_conover_friedman(pd.DataFrame(ROUNDING, columns=["RO", "NA", "WA"]), p_adjust="holm")
    for _, row in out.iterrows():
        assert row["p_adjusted"] == pytest.approx(expected.loc[row["a"], row["b"]], rel=1e-10)


def test_pairwise_wilcoxon_bonferroni_is_wilcoxon_times_pairs():
    data = _long(ROUNDING)
    out = posthoc(data, method="wilcoxon", p_adjust_method="bonferroni").set_index(["a", "b"])
    single = wilcoxon_paired(data, condition="condition_id", score="sd", a="RO", b="WA").iloc[0]
    assert out.loc[("RO", "WA"), "statistic"] == single["statistic"]
    assert out.loc[("RO", "WA"), "p_adjusted"] == pytest.approx(min(1, 3 * single["p_value"]), rel=1e-12)
    assert out.loc[("RO", "WA"), "effect_size"] == pytest.approx(single["effect_size"], rel=1e-12)


@pytest.mark.parametrize("ours,theirs", [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
def test_p_adjust_matches_statsmodels(ours, theirs):
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.005, 0.04])
    np.testing.assert_allclose(p_adjust(p, ours), multipletests(p, method=theirs)[1], rtol=1e-12)
    with_nan = p_adjust(np.append(p, np.nan), ours)
    assert np.isnan(with_nan[-1])
    np.testing.assert_allclose(with_nan[:-1], multipletests(p, method=theirs)[1], rtol=1e-12)


def test_duplicate_cells_are_refused():
    data = pd.concat([_long(ROUNDING), _long(ROUNDING).iloc[:1]])
    with pytest.raises(DataError, match="more than one 'sd'"):
        friedman(data)


# ----------------------------------------------------------------------------- RM-ANOVA
def test_rm_anova_matches_pingouin():
    data = _long(ROUNDING)
    out = rm_anova(data, transform="none").iloc[0]
    ref = pg.rm_anova(data, dv="sd", within="condition_id", subject="item_id", correction=True,
                      effsize="np2").iloc[0]  # fmt: skip
    assert out["statistic"] == pytest.approx(ref["F"], rel=1e-10)
    assert out["p_value"] == pytest.approx(ref["p_unc"], rel=1e-10)
    assert out["epsilon"] == pytest.approx(ref["eps"], rel=1e-10)
    assert out["p_gg"] == pytest.approx(ref["p_GG_corr"], rel=1e-10)
    assert out["effect_size"] == pytest.approx(ref["np2"], rel=1e-10)
    ng2 = pg.rm_anova(data, dv="sd", within="condition_id", subject="item_id", effsize="ng2").iloc[0]
    assert out["eta2_generalized"] == pytest.approx(ng2["ng2"], rel=1e-10)
    y = ROUNDING
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0) + y.mean()
    assert out["normality_p"] == pytest.approx(stats.shapiro(resid.ravel()).pvalue, rel=1e-10)


def test_rm_anova_transforms():
    data = _long(ROUNDING)
    sqrt = rm_anova(data, transform="sqrt").iloc[0]
    manual = rm_anova(data.assign(sd=np.sqrt(data["sd"])), transform="none").iloc[0]
    assert sqrt["statistic"] == pytest.approx(manual["statistic"], rel=1e-12)
    with pytest.raises(DataError, match="zero"):
        rm_anova(data.assign(sd=0.0), transform="log")


# ----------------------------------------------------------------------------- Kruskal-Wallis
def test_kruskal_wallis_matches_r():
    # R ?kruskal.test (Hollander & Wolfe 1973, p. 116):
    # kruskal.test(list(x, y, z)) -> Kruskal-Wallis chi-squared = 0.77143, df = 2, p-value = 0.68
    x, y, z = [2.9, 3.0, 2.5, 2.6, 3.2], [3.8, 2.7, 4.0, 2.4], [2.8, 3.4, 3.7, 2.2, 2.0]
    df = pd.DataFrame({"g": ["x"] * 5 + ["y"] * 4 + ["z"] * 5, "v": x + y + z})
    out = kruskal_wallis(df, condition="g", score="v", random_state=0).iloc[0]
    assert out["statistic"] == pytest.approx(0.77143, abs=5e-6)
    assert out["p_value"] == pytest.approx(0.68, abs=0.005)
    assert out["effect_size"] == pytest.approx(out["statistic"] / 13, rel=1e-12)
    assert 0 <= out["effect_ci_low"] <= out["effect_ci_high"]


# ----------------------------------------------------------------------------- contingency tables
def test_chi_squared_matches_r():
    # R ?chisq.test (Agresti 2007, p. 39): M <- as.table(rbind(c(762, 327, 468), c(484, 239, 477)))
    # chisq.test(M) -> X-squared = 30.07, df = 2, p-value = 2.954e-07
    table = np.array([[762, 327, 468], [484, 239, 477]])
    out = contingency_core(table, method="chi2")
    assert out["statistic"] == pytest.approx(30.07, abs=5e-3)
    assert out["p_value"] == pytest.approx(2.954e-07, abs=5e-11)
    assert out["df1"] == 2
    # Cramer's V: scipy.stats.contingency.association is an independent implementation
    assert out["effect_size"] == pytest.approx(stats.contingency.association(table, method="cramer"), rel=1e-10)
    # CI bounds invert the noncentral chi-squared: V = sqrt(ncp / (n (min(r, c) - 1)))
    n = table.sum()
    assert stats.ncx2.cdf(out["statistic"], 2, out["effect_ci_low"] ** 2 * n) == pytest.approx(0.975, abs=1e-8)


def test_two_by_two_uses_yates_like_r():
    table = np.array([[12, 5], [7, 15]])
    out = contingency_core(table, method="chi2")
    assert out["statistic"] == pytest.approx(stats.chi2_contingency(table, correction=True)[0], rel=1e-12)
    assert "Yates" in out["method"]


def test_fisher_exact_two_by_two_matches_r_tea_tasting():
    # R ?fisher.test: TeaTasting <- matrix(c(3, 1, 1, 3), nrow = 2); fisher.test(TeaTasting) -> p-value = 0.4857
    out = contingency_core(np.array([[3, 1], [1, 3]]), method="fisher")
    assert out["p_value"] == pytest.approx(0.4857, abs=5e-5)
    assert out["p_value"] == pytest.approx(34 / 70, rel=1e-12)  # hypergeometric: (1 + 16 + 16 + 1) / 70


def test_fisher_monte_carlo_matches_r_job_satisfaction():
    # R ?fisher.test (Agresti 2002, p. 57): Job <- matrix(c(1,2,1,0, 3,3,6,1, 10,10,14,9, 6,7,12,11), 4, 4)
    # fisher.test(Job) -> p-value = 0.7827. Monte Carlo SE at 20000 tables is 0.003; 0.015 is 5 SE.
    job = np.array([1, 2, 1, 0, 3, 3, 6, 1, 10, 10, 14, 9, 6, 7, 12, 11]).reshape(4, 4, order="F")
    out = contingency_core(job, method="fisher", n_sim=20000, random_state=42)
    assert out["p_value"] == pytest.approx(0.7827, abs=0.015)
    assert "Monte Carlo" in out["method"]


def test_contingency_auto_choice_and_frequencies():
    codes = pd.DataFrame({"model": ["a"] * 6 + ["b"] * 6,
                          "evidence": ["q", "q", "q", "q", "p", "p", "p", "p", "p", "p", "q", "g"]})
    out = contingency_test(codes, codes="evidence", random_state=0).iloc[0]
    assert out["min_expected"] < 5 and "Fisher" in out["method"]
    freq = code_frequencies(codes, codes="evidence")
    a = freq[(freq["model"] == "a")].set_index("level")
    assert a.loc["q", "count"] == 4 and a.loc["q", "estimate"] == pytest.approx(4 / 6)


@pytest.mark.parametrize(("alias", "name"), [("fdr_bh", "bh"), ("BH", "bh"), ("fdr", "bh"), ("bonferroni", "bonferroni"),
                                             ("holm", "holm"), ("b", "bonferroni"), ("h", "holm")])
def test_p_adjust_takes_statsmodels_and_r_names(alias, name):
    # Issue 36: statsmodels.stats.multitest.multipletests(p, method="fdr_bh") and R's
    # p.adjust(p, "BH") name the adjustments so; the answer is hce's own method's.
    p = [0.01, 0.02, 0.03, 0.5]
    np.testing.assert_array_equal(p_adjust(p, alias), p_adjust(p, name))


def test_posthoc_takes_statsmodels_names():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"item_id": np.repeat(np.arange(12), 3), "condition_id": np.tile(["a", "b", "c"], 12),
                         "sd": rng.random(36)})
    out = posthoc(data, method="conover", p_adjust_method="fdr_bh")
    assert (out["adjustment"] == "bh").all()
    np.testing.assert_array_equal(out["p_adjusted"], posthoc(data, method="conover", p_adjust_method="bh")["p_adjusted"])


def test_a_degenerate_rank_biserial_is_not_estimable_and_says_why():
    # Issue 33: r = -1.00 [-1.00, -1.00] printed as if informative. Every pair ordered one way
    # (complete separation) leaves the Fisher z interval at a point whatever n: no interval, a reason.
    data = pd.DataFrame({"condition": ["a"] * 4 + ["b"] * 4, "score": [1, 2, 3, 4, 5, 6, 7, 8]})
    out = mann_whitney(data, condition="condition", score="score", a="a", b="b").iloc[0]
    assert out["effect_size"] == -1 and np.isnan(out["effect_ci_low"]) and np.isnan(out["effect_ci_high"])
    assert "CI not estimable: every pair is ordered one way" in out["method"]
    # one non-zero difference of eight pairs: r = 1 from a single pair, P = 1
    paired = pd.DataFrame({"item": list(range(8)) * 2, "condition": ["a"] * 8 + ["b"] * 8,
                           "score": [1, 2, 3, 4, 5, 6, 7, 9] + [1, 2, 3, 4, 5, 6, 7, 8]})  # fmt: skip
    out = wilcoxon_paired(paired, item="item", condition="condition", score="score", a="a", b="b").iloc[0]
    assert out["effect_size"] == 1 and np.isnan(out["effect_ci_low"]) and "not estimable" in out["method"]
    table = posthoc(pd.concat([paired, paired[paired["condition"] == "b"].assign(condition="c")]), item="item",
                    condition="condition", score="score", method="wilcoxon")  # fmt: skip
    assert table["method"].str.contains("not estimable").any()


def test_epsilon_squared_interval_holds_its_estimate_near_zero():
    # Issue 33 (demo, Success Metric 6): epsilon squared 0.0068 with a percentile interval
    # [0.0069, 0.20]. Near the bound, the interval starts at 0 and the method says so.
    # Seed 5 draws groups alike (epsilon squared 0.0002), where the percentile limit passed it.
    rng = np.random.default_rng(5)
    data = pd.DataFrame({"condition": np.repeat(["a", "b", "c"], 30), "score": rng.normal(size=90)})
    out = kruskal_wallis(data, condition="condition", score="score", random_state=0).iloc[0]
    assert out["effect_ci_low"] == 0 <= out["effect_size"] <= out["effect_ci_high"]
    assert "lower limit 0, the percentile one excluding the estimate" in out["method"]


def test_mauchly_matches_r_and_pingouin():
    # R 4.2.2: mauchly.test(lm(RoundingTimes ~ 1), X = ~1) -> W = 0.70717762, p-value = 0.03128132
    # (RoundingTimes is ?friedman.test's matrix, ROUNDING here)
    w, p = mauchly(ROUNDING)
    assert (w, p) == pytest.approx((0.70717762, 0.03128132), abs=5e-9)
    out = rm_anova(_long(ROUNDING)).iloc[0]
    ref = pg.sphericity(_long(ROUNDING), dv="sd", within="condition_id", subject="item_id")
    assert (out["sphericity_w"], out["sphericity_p"]) == pytest.approx((ref.W, ref.pval), rel=1e-10)
    assert "sphericity rejected (Mauchly P = .03;" in out["assumptions"]  # JAMA: the formatter of every output
    assert mauchly(ROUNDING[:, :2]) == (1.0, 1.0)  # one contrast is always spherical


def test_rm_anova_names_zero_variance_conditions_and_failed_assumptions():
    # issue 45: the RM-ANOVA sensitivity analysis reported only the GG P while normality and sphericity
    # failed and one condition had zero variance; the row now says so
    rng = np.random.default_rng(4)
    y = np.column_stack([rng.exponential(1, 12), rng.exponential(1, 12) + 0.5, np.zeros(12)])
    out = rm_anova(_long(y)).iloc[0]
    assert out["zero_variance"] == "WA"
    assert "no variance in condition_id WA" in out["assumptions"]
    assert out["assumptions"].endswith("the rank test decides")
    ref = pg.sphericity(_long(y), dv="sd", within="condition_id", subject="item_id")
    assert out["sphericity_p"] == pytest.approx(ref.pval, rel=1e-10)


def test_rm_anova_eta_interval_uses_the_greenhouse_geisser_df():
    # Definition check, as R's effectsize::F_to_eta2(F, df = eps * df1, df_error = eps * df2): at the bounds the
    # noncentral F on the corrected df puts the observed F at the 97.5th and 2.5th percentiles.
    out = rm_anova(_long(ROUNDING)).iloc[0]
    ref = pg.rm_anova(_long(ROUNDING), dv="sd", within="condition_id", subject="item_id", correction=True).iloc[0]
    assert out["epsilon"] == pytest.approx(ref["eps"], rel=1e-10) and out["epsilon"] < 1
    f, gg1, gg2 = out["statistic"], out["df1_gg"], out["df2_gg"]
    assert (gg1, gg2) == pytest.approx((out["epsilon"] * 2, out["epsilon"] * 42), rel=1e-12)
    ncp_low = out["effect_ci_low"] * gg2 / (1 - out["effect_ci_low"])
    ncp_high = out["effect_ci_high"] * gg2 / (1 - out["effect_ci_high"])
    assert stats.ncf.cdf(f, gg1, gg2, ncp_low) == pytest.approx(0.975, abs=1e-8)
    assert stats.ncf.cdf(f, gg1, gg2, ncp_high) == pytest.approx(0.025, abs=1e-8)
