"""Reference values: R documentation examples (stats, effectsize; printed digits, tolerance half
the last digit), scipy, pingouin and Wikipedia's worked KL example."""

import math

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats

from hce.errors import DataError
from hce.stats.effects import cohens_d, correlation, kl_divergence, kl_divergence_core, mae_vs_target

# R datasets::sleep: extra hours of sleep, 10 patients x 2 drugs (paired by ID)
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
# R datasets::mtcars, mpg by am
MPG = [21.0, 21.0, 22.8, 21.4, 18.7, 18.1, 14.3, 24.4, 22.8, 19.2, 17.8, 16.4, 17.3, 15.2, 10.4, 10.4,
       14.7, 32.4, 30.4, 33.9, 21.5, 15.5, 15.2, 13.3, 19.2, 27.3, 26.0, 30.4, 15.8, 19.7, 15.0, 21.4]
AM = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
# R ?cor.test (Hollander & Wolfe 1973, p. 187)
CT_X = [44.4, 45.9, 41.9, 53.3, 44.7, 44.1, 50.7, 45.2, 60.1]
CT_Y = [2.6, 3.1, 2.5, 5.0, 3.6, 4.0, 5.2, 2.8, 3.8]


def _sleep():
    return pd.DataFrame({"id": list(range(10)) * 2, "group": [1] * 10 + [2] * 10, "extra": SLEEP_1 + SLEEP_2})


def test_cohens_d_matches_effectsize_and_pingouin():
    df = pd.DataFrame({"am": AM, "mpg": MPG})
    out = cohens_d(df, condition="am", score="mpg", a=0, b=1).iloc[0]
    # R: effectsize::cohens_d(mpg ~ am, data = mtcars) -> -1.48, 95% CI [-2.27, -0.67]
    assert out["effect_size"] == pytest.approx(-1.48, abs=0.005)
    assert (out["effect_ci_low"], out["effect_ci_high"]) == pytest.approx((-2.27, -0.67), abs=0.005)
    x = np.array(MPG)[np.array(AM) == 0]
    y = np.array(MPG)[np.array(AM) == 1]
    assert out["effect_size"] == pytest.approx(pg.compute_effsize(x, y, eftype="cohen"), rel=1e-10)
    # R: t.test(mpg ~ am, data = mtcars, var.equal = TRUE) -> t = -4.1061, df = 30, p-value = 0.000285
    assert out["statistic"] == pytest.approx(-4.1061, abs=5e-5)
    assert out["p_value"] == pytest.approx(0.000285, abs=5e-7)


def test_cohens_dz_matches_effectsize_and_t_test():
    out = cohens_d(_sleep(), condition="group", score="extra", a=1, b=2, paired=True, item="id").iloc[0]
    # R: t.test(extra[group == 1], extra[group == 2], paired = TRUE) -> t = -4.0621, df = 9, p-value = 0.002833
    assert out["statistic"] == pytest.approx(-4.0621, abs=5e-5)
    assert out["p_value"] == pytest.approx(0.002833, abs=5e-7)
    # R: effectsize::cohens_d(Pair(extra.1, extra.2) ~ 1, data = sleep_wide) -> -1.28, 95% CI [-2.12, -0.41]
    assert out["effect_size"] == pytest.approx(-1.28, abs=0.005)
    assert (out["effect_ci_low"], out["effect_ci_high"]) == pytest.approx((-2.12, -0.41), abs=0.005)
    t = stats.ttest_rel(SLEEP_1, SLEEP_2).statistic
    assert out["effect_size"] == pytest.approx(t / np.sqrt(10), rel=1e-12)


def test_pearson_matches_r_cor_test():
    out = correlation(pd.DataFrame({"x": CT_X, "y": CT_Y}), x="x", y="y").iloc[0]
    # R: cor.test(x, y) -> t = 1.8411, df = 7, p-value = 0.1082; 95 percent CI -0.1497426 0.8955795;
    # cor 0.5711816
    assert out["estimate"] == pytest.approx(0.5711816, abs=5e-8)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((-0.1497426, 0.8955795), abs=5e-8)
    assert out["statistic"] == pytest.approx(1.8411, abs=5e-5)
    assert out["p_value"] == pytest.approx(0.1082, abs=5e-5)
    ci = stats.pearsonr(CT_X, CT_Y).confidence_interval(0.95)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-10)


def test_spearman_with_bonett_wright_interval():
    out = correlation(pd.DataFrame({"x": CT_X, "y": CT_Y}), x="x", y="y", method="spearman").iloc[0]
    # R: cor.test(x, y, method = "spearman") -> rho = 0.6 (no ties)
    assert out["estimate"] == pytest.approx(0.6, rel=1e-12)
    # R's help page for cor.test: S = 48, p-value = 0.0968 (exact, n = 9 untied): the permutation P over 9!
    assert out["statistic"] == pytest.approx(48) and out["p_value"] == pytest.approx(0.0968, abs=5e-5)
    t = correlation(pd.DataFrame({"x": CT_X, "y": CT_Y}), x="x", y="y", method="spearman", p_method="t").iloc[0]
    assert t["p_value"] == pytest.approx(stats.spearmanr(CT_X, CT_Y).pvalue, rel=1e-10)
    se = np.sqrt((1 + 0.6**2 / 2) / 6)  # Bonett & Wright (2000), n = 9
    z = stats.norm.ppf(0.975)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(
        (np.tanh(np.arctanh(0.6) - z * se), np.tanh(np.arctanh(0.6) + z * se)), rel=1e-12)


# R datasets::mtcars, wt (1000 lb), same row order as MPG (Henderson & Velleman 1981)
WT = [2.620, 2.875, 2.320, 3.215, 3.440, 3.460, 3.570, 3.190, 3.150, 3.440, 3.440, 4.070, 3.730, 3.780, 5.250,
      5.424, 5.345, 2.200, 1.615, 1.835, 2.465, 3.520, 3.435, 3.840, 3.845, 1.935, 2.140, 1.513, 3.170, 2.770,
      3.570, 2.780]


def _inversion_counts(n):
    """Number of permutations of n items with k inversions, k = 0..n(n-1)/2 (Mahonian numbers).

    Under H0 without ties every ranking is equally likely, so this is the exact null
    distribution of the number of discordant pairs (Kendall 1970, ch. 4): hand-worked, no scipy.
    """
    counts = [1]
    for m in range(2, n + 1):  # inserting item m adds 0..m-1 inversions
        counts = [sum(counts[k - j] for j in range(m) if 0 <= k - j < len(counts))
                  for k in range(len(counts) + m - 1)]
    return counts


def test_kendall_exact_matches_r_help_page_and_permutation_distribution():
    out = correlation(pd.DataFrame({"x": CT_X, "y": CT_Y}), x="x", y="y", method="kendall").iloc[0]
    # R ?cor.test: cor.test(x, y, method = "kendall", alternative = "greater") -> T = 26,
    # p = 0.05972 (exact: n = 9 < 50, no ties); cor.test.R doubles the tail for two-sided.
    assert out["estimate"] == pytest.approx((26 - 10) / 36, rel=1e-12)  # 26 concordant, 10 discordant
    assert out["statistic"] == 26 and np.isnan(out["df1"]) and out["n"] == 9
    assert out["p_value"] == pytest.approx(2 * 0.05972, abs=1e-5)
    counts = _inversion_counts(9)  # P(T >= 26) = P(discordant <= 10)
    assert out["p_value"] == pytest.approx(2 * sum(counts[:11]) / math.factorial(9), rel=1e-12)
    assert out["p_value"] == pytest.approx(stats.kendalltau(CT_X, CT_Y, method="exact").pvalue, rel=1e-12)
    assert "exact" in out["method"]
    # Fisher z with Fieller et al. (1957) variance 0.437 / (n - 4) (Bonett & Wright 2000)
    half = stats.norm.ppf(0.975) * np.sqrt(0.437 / 5)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(
        (np.tanh(np.arctanh(4 / 9) - half), np.tanh(np.arctanh(4 / 9) + half)), rel=1e-12)


def test_kendall_with_ties_matches_r_cor_test_on_mtcars():
    out = correlation(pd.DataFrame({"mpg": MPG, "wt": WT}), x="mpg", y="wt", method="kendall").iloc[0]
    # R: cor.test(mtcars$mpg, mtcars$wt, method = "kendall") -> z = -5.7981, p-value = 6.706e-09,
    # tau -0.7278321 (ties: normal approximation, with R's warning that no exact p is possible)
    assert out["estimate"] == pytest.approx(-0.7278321, abs=5e-8)
    assert out["statistic"] == pytest.approx(-5.7981, abs=5e-5)
    assert out["p_value"] == pytest.approx(6.706e-09, abs=5e-13)
    ref = stats.kendalltau(MPG, WT)  # tau-b; ties -> scipy's asymptotic p, the same variance
    assert out["estimate"] == pytest.approx(ref.statistic, rel=1e-12)
    assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert "normal approximation" in out["method"]


def test_kendall_switches_to_normal_approximation_at_50_like_r():
    rng = np.random.default_rng(11)
    for n, scipy_method in ((49, "exact"), (50, "asymptotic"), (200, "asymptotic")):
        u = rng.normal(size=n)
        v = u + rng.normal(scale=3, size=n)
        out = correlation(pd.DataFrame({"u": u, "v": v}), x="u", y="v", method="kendall").iloc[0]
        ref = stats.kendalltau(u, v, method=scipy_method)
        assert out["estimate"] == pytest.approx(ref.statistic, rel=1e-12)
        assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
        if scipy_method == "asymptotic":
            # no ties: Var S = n(n-1)(2n+5)/18, S = tau n(n-1)/2
            z = ref.statistic * n * (n - 1) / 2 / np.sqrt(n * (n - 1) * (2 * n + 5) / 18)
            assert out["statistic"] == pytest.approx(z, rel=1e-12)


def test_kendall_needs_five_rows_for_its_interval():
    df = pd.DataFrame({"x": [1, 2, 3, 4], "y": [2, 1, 4, 3]})
    with pytest.raises(DataError, match="kendall correlation interval needs >= 5 complete rows, got 4"):
        correlation(df, x="x", y="y", method="kendall")


def test_correlation_drops_incomplete_rows_and_needs_four():
    df = pd.DataFrame({"x": [1, 2, np.nan, 4, 5], "y": [2, 1, 3, np.nan, 5]})
    with pytest.raises(DataError, match=">= 4 complete rows, got 3"):
        correlation(df, x="x", y="y")


def test_mae_is_error_of_the_mean_and_ignores_errored_attempts():
    log = pd.DataFrame({"item_id": ["a"] * 4 + ["b"] * 2, "condition_id": "G2",
                        "total": [10, 12, 14, 99, 8, 9], "target_total": [11] * 4 + [10] * 2,
                        "error_flag": [False, False, False, True, False, False]})
    out = mae_vs_target(log).set_index("item_id")
    assert out.loc["a", "mean_score"] == 12 and out.loc["a", "mae"] == 1 and out.loc["a", "n_errors"] == 1
    assert out.loc["b", "error"] == -1.5 and out.loc["b", "mae"] == 1.5


def test_mae_refuses_targets_that_vary_within_an_item():
    log = pd.DataFrame({"item_id": ["a", "a"], "condition_id": "G2", "total": [1, 2], "target_total": [1, 2],
                        "error_flag": False})
    with pytest.raises(DataError, match="varies within item"):
        mae_vs_target(log)


def test_kl_matches_wikipedia_example():
    # Wikipedia "Kullback-Leibler divergence", example: P = (9, 12, 4)/25, Q uniform:
    # D(P || Q) = 0.0852996 nats, D(Q || P) = 0.097455 nats
    assert kl_divergence_core(np.array([9, 12, 4]), np.array([1, 1, 1]), 0) == pytest.approx(0.0852996, abs=5e-8)
    assert kl_divergence_core(np.array([1, 1, 1]), np.array([9, 12, 4]), 0) == pytest.approx(0.097455, abs=5e-7)


def test_kl_smoothing_and_support():
    df = pd.DataFrame({"source": ["target"] * 3 + ["g"] * 2, "total": [5, 6, 7, 5, 5]})
    out = kl_divergence(df, condition="source", score="total", support=range(5, 9)).iloc[0]
    p = np.array([1, 1, 1, 0]) + 0.5
    q = np.array([2, 0, 0, 0]) + 0.5
    assert out["estimate"] == pytest.approx(stats.entropy(p / p.sum(), q / q.sum()), rel=1e-12)
    assert out["n_bins"] == 4 and out["n_a"] == 2 and out["n_b"] == 3
    unsmoothed = kl_divergence(df, condition="source", score="total", smoothing=0).iloc[0]
    assert np.isinf(unsmoothed["estimate"])
    with pytest.raises(DataError, match="outside support"):
        kl_divergence(df, condition="source", score="total", support=range(6, 9))


def test_correlation_of_constant_input_is_nan_with_warning():
    import pandas as pd
    import pytest

    from hce.errors import HceWarning
    from hce.stats import correlation

    data = pd.DataFrame({"sd": [0.0] * 6, "confidence": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    with pytest.warns(HceWarning, match="'sd' is constant over the 6 rows"):
        row = correlation(data, x="sd", y="confidence", method="spearman").iloc[0]
    assert np.isnan(row["estimate"]) and np.isnan(row["p_value"]) and row["n"] == 6


def test_noncentral_t_interval_past_scipys_range_is_the_normal_approximation():
    # Issue #22 (report of 10,000 paired items): scipy's nct.cdf(30, 9999, 60) is NaN and the
    # root search stopped the report. Hedges & Olkin (1985, ch. 5): t ~ N(ncp, 1 + ncp^2/(2 df));
    # at t = 20 (exact nct still finite) the two agree to 1e-3, the tolerance used here.
    from scipy import stats

    from hce.stats._intervals import noncentral_t_ci

    assert np.isnan(stats.nct.cdf(30, 9999, 60))
    z = stats.norm.ppf(0.975)
    for t in (20.0, 30.0, 33.2):  # 33.2: finite at the bracket ends, NaN inside it
        half = z * np.sqrt(1 + t**2 / (2 * 9999))
        assert noncentral_t_ci(t, 9999, 0.95) == pytest.approx((t - half, t + half), abs=1e-3)
