"""ICC: Shrout & Fleiss (1979) published values, pingouin parity, REML for incomplete designs."""

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import statsmodels.formula.api as smf
from statsmodels.regression.mixed_linear_model import MixedLMParams
from irr_tables import SHROUT_FLEISS, expected, long_from_wide, shared_csv

from hce.errors import DataError
from hce.stats import icc, icc_groups
from hce.stats.reliability.icc import mean_squares
from hce.stats.reliability.icc_reml import reml_components

FORMS = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]


def _pingouin(long: pd.DataFrame) -> pd.DataFrame:
    """pingouin 0.7 ICC table (an independent implementation of the same ANOVA formulas)."""
    return pg.intraclass_corr(long, targets="target", raters="rater", ratings="rating")


def test_shrout_fleiss_published_values():
    out = icc(long_from_wide(SHROUT_FLEISS), item="target", rater="rater", score="rating").set_index("metric")
    # Shrout & Fleiss (1979) Table 4 (also psych::ICC's example), two decimals
    published = [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]
    np.testing.assert_array_equal(out.loc[FORMS, "estimate"].round(2), published)
    # 95% CIs as printed by psych::ICC / asserted in pingouin's tests, two decimals
    np.testing.assert_array_equal(
        out.loc[FORMS, "ci_low"].round(2), [-0.13, 0.02, 0.34, -0.88, 0.07, 0.68]
    )
    np.testing.assert_array_equal(
        out.loc[FORMS, "ci_high"].round(2), [0.72, 0.76, 0.95, 0.91, 0.93, 0.99]
    )
    assert list(out.loc[FORMS, "mcgraw_wong"]) == [
        "ICC(1)", "ICC(A,1)", "ICC(C,1)", "ICC(k)", "ICC(A,k)", "ICC(C,k)"
    ]  # fmt: skip


def test_shrout_fleiss_mean_squares_table_2():
    # Shrout & Fleiss (1979) Table 2: BMS 11.24, WMS 6.26, JMS 32.49, EMS 1.02
    ms = mean_squares(SHROUT_FLEISS)
    np.testing.assert_array_equal(
        np.round([ms["msr"], ms["msw"], ms["msc"], ms["mse"]], 2), [11.24, 6.26, 32.49, 1.02]
    )


def test_matches_pingouin_to_machine_precision():
    long = long_from_wide(SHROUT_FLEISS)
    ours = icc(long, item="target", rater="rater", score="rating")
    ref = _pingouin(long)
    np.testing.assert_allclose(ours.estimate, ref.ICC, rtol=1e-12)
    np.testing.assert_allclose(ours.statistic, ref.F, rtol=1e-12)
    np.testing.assert_allclose(ours.df1, ref.df1)
    np.testing.assert_allclose(ours.df2, ref.df2)
    np.testing.assert_allclose(ours.p_value, ref.pval, rtol=1e-10)
    ref_ci = np.vstack(ref.CI95.to_numpy())  # pingouin rounds its CI to 2 decimals
    np.testing.assert_allclose(ours[["ci_low", "ci_high"]].round(2), ref_ci, atol=1e-12)
    assert (ours.n_items == 6).all() and (ours.n_scores == 24).all()
    assert (ours.n_dropped == 0).all() and (ours.method == "ANOVA mean squares").all()


@pytest.mark.parametrize(
    "name, row",
    [("irr_anxiety.csv", "pingouin"), ("irr_video.csv", "pingouin")],
)
def test_irr_datasets_match_pingouin_computed_values(name, row):
    # expected_values.csv: values COMPUTED with pingouin 0.7.0 (no published source)
    wide = shared_csv(name).set_index("subject").to_numpy(dtype=float)
    out = icc(long_from_wide(wide), item="target", rater="rater", score="rating")
    values = [float(v) for v in expected(name, row).split(";")]
    np.testing.assert_allclose(out.estimate.round(4), values, atol=1e-12)


def test_wine_data_from_pingouin_tests():
    # pingouin tests/test_reliability.py (wine data): 0.73 0.73 0.73 0.91 0.91 0.92
    long = shared_csv("pingouin_icc.csv")
    out = icc(long, item="Wine", rater="Judge", score="Scores")
    values = [float(v) for v in expected("pingouin_icc.csv", "ICC1").split(";")]
    np.testing.assert_allclose(out.estimate.round(2), values, atol=1e-12)


def test_shared_shrout_fleiss_file_agrees_with_typed_matrix():
    wide = shared_csv("shrout_fleiss_1979_wide.csv").set_index("target").to_numpy(float)
    np.testing.assert_array_equal(wide, SHROUT_FLEISS)
    assert float(expected("shrout_fleiss_1979_wide.csv", "ICC(3,1)")) == 0.71


def _balanced(n=40, k=5, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, 1)) + 0.6 * rng.normal(size=(1, k)) + rng.normal(size=(n, k))
    return long_from_wide(y)


def test_reml_equals_anova_in_a_complete_design():
    # with interior estimates REML variance components equal the ANOVA ones exactly
    long = _balanced()
    anova = icc(long, item="target", rater="rater", score="rating", method="anova")
    reml = icc(long, item="target", rater="rater", score="rating", method="reml")
    cols = ["estimate", "ci_low", "ci_high", "statistic"]
    np.testing.assert_allclose(reml[cols], anova[cols], rtol=1e-6)
    # p-values of 1e-8..1e-14 amplify the optimiser's ~1e-8 relative tolerance on F
    np.testing.assert_allclose(reml.p_value, anova.p_value, rtol=1e-4)
    assert (reml.method == "REML variance components").all()


def test_reml_components_match_statsmodels_mixedlm():
    # crossed random effects fitted by statsmodels MixedLM (REML, variance components)
    long = _balanced(n=30, k=4, seed=1)
    rng = np.random.default_rng(2)
    long = long[rng.random(len(long)) > 0.2].reset_index(drop=True)
    model = smf.mixedlm(
        "rating ~ 1", long.assign(g=1), groups="g",
        vc_formula={"t": "0 + C(target)", "r": "0 + C(rater)"}, re_formula="0",
    )  # fmt: skip
    fit = model.fit(reml=True, method="lbfgs")
    target = pd.factorize(long.target, sort=True)[0]
    rater = pd.factorize(long.rater, sort=True)[0]
    vt, vr, ve = reml_components(target, rater, long.rating.to_numpy(), 30, 4)
    # the REML surface is flat along the rater variance (4 raters): statsmodels' own
    # optimisers disagree at 1e-4, so compare the likelihood tightly, the estimates loosely
    ours = MixedLMParams.from_components(
        fe_params=np.array([0.0]), cov_re=np.zeros((0, 0)), vcomp=np.array([vr, vt]) / ve
    )
    assert model.loglike(ours, profile_fe=True) >= fit.llf - 1e-9
    np.testing.assert_allclose([vr, vt, ve], [*fit.vcomp, fit.scale], rtol=1e-3)


def test_incomplete_design_uses_every_rating_and_says_so():
    long = _balanced(n=50, k=6, seed=3)
    long.loc[np.random.default_rng(4).random(len(long)) < 0.15, "rating"] = np.nan
    n_missing = int(long.rating.isna().sum())
    out = icc(long, item="target", rater="rater", score="rating")
    assert (out.method == "REML variance components").all()
    assert (out.n_items == 50).all() and (out.n_dropped == n_missing).all()
    assert (out.n_scores == len(long) - n_missing).all()
    assert out.ci_method.str.startswith("F approximation").all()
    assert ((out.ci_low < out.estimate) & (out.estimate < out.ci_high)).all()
    with pytest.warns(UserWarning, match=r"dropped \d+ of 50 targets"):
        listwise = icc(long, item="target", rater="rater", score="rating", method="anova")
    assert (listwise.n_items < 50).all()
    assert (listwise.n_dropped > n_missing).all()


def test_reml_icc_definitions_from_components():
    long = _balanced(n=25, k=4, seed=5).iloc[3:]  # target 0 lacks three ratings
    out = icc(long, item="target", rater="rater", score="rating").set_index("metric")
    t, r = (pd.factorize(long[c], sort=True)[0] for c in ("target", "rater"))
    vt, vr, ve = reml_components(t, r, long.rating.to_numpy(), 25, 4)
    vt1, _, vw = reml_components(t, None, long.rating.to_numpy(), 25, 4)
    k = 25 / (1 / np.bincount(t)).sum()  # harmonic mean of ratings per target
    np.testing.assert_allclose(out.loc["ICC2", "estimate"], vt / (vt + vr + ve), rtol=1e-10)
    np.testing.assert_allclose(out.loc["ICC3", "estimate"], vt / (vt + ve), rtol=1e-10)
    np.testing.assert_allclose(out.loc["ICC1", "estimate"], vt1 / (vt1 + vw), rtol=1e-10)
    np.testing.assert_allclose(out.loc["ICC3k", "estimate"], vt / (vt + ve / k), rtol=1e-10)
    np.testing.assert_allclose(out.loc["ICC3k", "k"], k)


@pytest.mark.parametrize("offset", [1e3, 1e5, 1e7])
def test_reml_icc_of_ratings_far_from_zero_is_their_icc_near_zero(offset):
    # the ICC is invariant to adding a constant to every rating (latencies in microseconds, a
    # 0-1000 scale). Before: the REML sums were raw (sum y^2 less the fitted part), which
    # cancelled log10(offset^2 / variance) digits: 2.8e-6 off at 1e3, 22% off at 1e5
    long = _balanced(n=40, k=5, seed=1)
    long = long.drop(index=np.random.default_rng(1).choice(len(long), 20, replace=False))
    cols = ["estimate", "ci_low", "ci_high", "statistic"]
    near = icc(long, item="target", rater="rater", score="rating", method="reml")[cols]
    far = icc(long.assign(rating=long.rating + offset), item="target", rater="rater", score="rating", method="reml")[cols]
    # the shifted ratings themselves are rounded to 1e-16 x offset: 1e-9 holds to offset 1e7
    np.testing.assert_allclose(far, near, rtol=1e-9)


def test_icc_groups_within_and_between():
    rng = np.random.default_rng(6)
    truth = rng.normal(size=20)
    rows = [
        (i, f"{g}{j}", g, truth[i] + rng.normal(scale=0.7))
        for i in range(20) for g in ("expert", "llm") for j in range(3)
    ]  # fmt: skip
    d = pd.DataFrame(rows, columns=["item", "rater", "group", "score"])
    out = icc_groups(d, item="item", rater="rater", score="score", condition="group")
    assert list(out.group.unique()) == ["expert", "llm", "expert vs llm"]
    within = icc(d[d.group == "llm"], item="item", rater="rater", score="score")
    got = out[out.group == "llm"].reset_index(drop=True)
    np.testing.assert_allclose(got.estimate, within.estimate, rtol=1e-12)
    means = d.groupby(["item", "group"], as_index=False).score.mean()
    between = icc(means, item="item", rater="group", score="score")
    got = out[out.comparison == "between"].reset_index(drop=True)
    np.testing.assert_allclose(got.estimate, between.estimate, rtol=1e-12)
    pooled = icc_groups(d, item="item", rater="rater", score="score", condition="group", between="pooled")
    assert (pooled[pooled.comparison == "between"].n_raters == 6).all()


def test_errors_name_the_problem():
    long = long_from_wide(SHROUT_FLEISS)
    with pytest.raises(DataError, match=r"target 0 has 2 ratings by rater 'r0'"):
        icc(pd.concat([long, long.iloc[:1]]), item="target", rater="rater", score="rating")
    with pytest.raises(DataError, match="at least 2 targets and 2 raters"):
        icc(long[long.rater == "r0"], item="target", rater="rater", score="rating")
    with pytest.raises(DataError, match=r"method='x' is not valid"):
        icc(long, item="target", rater="rater", score="rating", method="x")
    with pytest.raises(DataError, match=r"no column\(s\) \['score'\]"):
        icc(long, item="target", rater="rater", score="score")
    d = long.assign(group=np.where(long.rater == "r0", "a", "b"))
    d.loc[0, "group"] = "b"
    with pytest.raises(DataError, match="more than one 'group'"):
        icc_groups(d, item="target", rater="rater", score="rating", condition="group")
