"""Kappas, Gwet's AC1/AC2, percent and strict agreement against irrCAC, statsmodels, papers."""

import numpy as np
import pandas as pd
import pytest
from irr_tables import KRIPPENDORFF, expected, long_from_wide, shared_csv
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from hce.errors import DataError
from hce.stats import cohen_kappa, fleiss_kappa, gwet_ac, percent_agreement, strict_agreement

# Gwet (2014) handbook example `cac.raw4raters`: 12 units x 4 raters, categories 1-5; it is
# Krippendorff's (2011) table with units as rows.
RAW4RATERS = long_from_wide(KRIPPENDORFF, target_axis=1)


def _check(out, **published):
    """Compare named columns with published values given to 5 decimals."""
    row = out.iloc[0]
    for column, value in published.items():
        assert round(float(row[column]), 5) == value, (column, float(row[column]), value)


def test_gwet_ac1_irrcac_example():
    # irrCAC gwet.ac1.raw(cac.raw4raters) as printed in the irrCAC (Python port) docstring:
    # AC1 0.77544, CI (0.46081, 1), p 0.00021, se 0.14295, pa 0.81818, pe 0.19032
    out = gwet_ac(RAW4RATERS, item="target", rater="rater", score="rating")
    _check(out, estimate=0.77544, se=0.14295, ci_low=0.46081, ci_high=1.0, p_value=0.00021,
           pa=0.81818, pe=0.19032, statistic=5.42458)  # fmt: skip
    assert out.metric[0] == "Gwet's AC1"
    assert (out.n_items[0], out.n_raters[0], out.n_scores[0]) == (12, 4, 41)


def test_gwet_ac2_quadratic_irrcac_example():
    # irrCAC tests: gwet, weights="quadratic" on raw4raters: 0.914, CI (0.68518, 1)
    out = gwet_ac(RAW4RATERS, item="target", rater="rater", score="rating", weights="quadratic")
    _check(out, estimate=0.914, ci_low=0.68518, ci_high=1.0)
    assert out.metric[0] == "Gwet's AC2"


def test_fleiss_kappa_irrcac_example_with_missing_ratings():
    # irrCAC fleiss.kappa.raw(cac.raw4raters): 0.76117, CI (0.42438, 1), p 0.00042,
    # se 0.15302, pa 0.81818, pe 0.23872
    out = fleiss_kappa(RAW4RATERS, item="target", rater="rater", score="rating")
    _check(out, estimate=0.76117, se=0.15302, ci_low=0.42438, ci_high=1.0, p_value=0.00042,
           pa=0.81818, pe=0.23872, statistic=4.97434)  # fmt: skip


def test_percent_agreement_irrcac_example():
    # pa of the irrCAC example above
    out = percent_agreement(RAW4RATERS, item="target", rater="rater", score="rating")
    _check(out, estimate=0.81818, pe=0.0)


def test_fleiss_1971_diagnoses():
    wide = shared_csv("irr_diagnoses.csv").set_index("subject")
    long = wide.stack().rename("rating").rename_axis(["target", "rater"]).reset_index()
    out = fleiss_kappa(long, item="target", rater="rater", score="rating")
    # Fleiss (1971) Psychol Bull 76:378: kappa = .430
    assert round(out.estimate[0], 3) == float(expected("irr_diagnoses.csv", "Fleiss"))
    table = inter_rater.aggregate_raters(wide.to_numpy())[0]
    np.testing.assert_allclose(out.estimate[0], inter_rater.fleiss_kappa(table), rtol=1e-12)
    assert (out.n_items[0], out.n_raters[0], out.n_scores[0]) == (30, 6, 180)


def test_fleiss_kappa_complete_data_matches_statsmodels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, (40, 5))
    out = fleiss_kappa(long_from_wide(y.astype(float)), item="target", rater="rater", score="rating")
    table = inter_rater.aggregate_raters(y)[0]
    np.testing.assert_allclose(out.estimate[0], inter_rater.fleiss_kappa(table), rtol=1e-12)


@pytest.mark.parametrize("weights", ["unweighted", "linear", "quadratic"])
def test_cohen_kappa_matches_statsmodels_and_sklearn(weights):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(0, 4, 80))
    long = long_from_wide(np.column_stack([a, b]).astype(float))
    out = cohen_kappa(long, item="target", rater="rater", score="rating", weights=weights)
    # statsmodels cohens_kappa: kappa, its SE and the z test under H0 (SAS formulas)
    ref = inter_rater.cohens_kappa(
        pd.crosstab(a, b).to_numpy(), wt=None if weights == "unweighted" else weights
    )
    np.testing.assert_allclose(out.estimate[0], ref.kappa, rtol=1e-12)
    np.testing.assert_allclose(out.se[0], ref.std_kappa, rtol=1e-12)
    np.testing.assert_allclose(out.statistic[0], ref.z_value, rtol=1e-12)
    np.testing.assert_allclose(out.p_value[0], ref.pvalue_two_sided, rtol=1e-10)
    sk = cohen_kappa_score(a, b, weights={"unweighted": None}.get(weights, weights))
    np.testing.assert_allclose(out.estimate[0], sk, rtol=1e-12)
    wald = cohen_kappa(long, item="target", rater="rater", score="rating", weights=weights, ci_method="wald")
    np.testing.assert_allclose(wald.ci_high[0] - wald.estimate[0], 1.959963984540054 * ref.std_kappa)
    # the default: the same SE through the delta method on atanh(kappa), back-transformed
    half = 1.959963984540054 * ref.std_kappa / (1 - ref.kappa**2)
    np.testing.assert_allclose([out.ci_low[0], out.ci_high[0]], np.tanh(np.arctanh(ref.kappa) + np.array([-half, half])))


def test_cohen_kappa_drops_targets_rated_once():
    long = long_from_wide(np.array([[1, 1], [2, 2], [1, 2], [2, np.nan]]))
    out = cohen_kappa(long, item="target", rater="rater", score="rating")
    assert (out.n_items[0], out.n_scores[0], out.n_dropped[0]) == (3, 6, 2)
    # by hand: pa = 2/3; margins a (2/3, 1/3), b (1/3, 2/3); pe = 4/9; kappa = 0.4
    np.testing.assert_allclose(out.estimate[0], (2 / 3 - 4 / 9) / (1 - 4 / 9), rtol=1e-12)


def test_cohen_kappa_two_wide_columns_equal_long_and_golden_agreement():
    from hce.stats import golden_agreement

    # 76 cases: judge x golden = [[23, 7], [5, 41]] (rows: judge pass / fail; columns: golden)
    judge = [True] * 30 + [False] * 46
    golden = [1] * 23 + [0] * 7 + [1] * 5 + [0] * 41
    wide = pd.DataFrame({"case": np.arange(100, 176), "judge": judge, "golden": golden})
    out = cohen_kappa(wide, rater=["judge", "golden"])
    long = wide.melt(id_vars="case", var_name="rater", value_name="label")
    pd.testing.assert_frame_equal(out, cohen_kappa(long, item="case", rater="rater", score="label"))
    pd.testing.assert_frame_equal(out, cohen_kappa(wide, item="case", rater=["golden", "judge"]))
    # statsmodels cohens_kappa on the 2x2 table: kappa, SE and limits of Fleiss, Cohen & Everitt (1969)
    ref = inter_rater.cohens_kappa(np.array([[23, 7], [5, 41]]))
    np.testing.assert_allclose(out.loc[0, ["estimate", "se"]].to_numpy(float), [ref.kappa, ref.std_kappa], rtol=1e-10)
    wald = cohen_kappa(wide, rater=["judge", "golden"], ci_method="wald")
    np.testing.assert_allclose(wald.loc[0, ["ci_low", "ci_high"]].to_numpy(float), [ref.kappa_low, ref.kappa_upp], rtol=1e-10)
    # golden_agreement takes the same two columns: identical kappa and interval
    gold = golden_agreement(wide, score="judge", truth="golden", n_boot=0).set_index("metric")
    np.testing.assert_allclose(gold.loc["cohen_kappa", ["estimate", "ci_low", "ci_high"]].to_numpy(float),
                               out.loc[0, ["estimate", "ci_low", "ci_high"]].to_numpy(float), rtol=1e-12)
    assert gold.loc["cohen_kappa", "n"] == out.n_items[0] == 76
    # a row missing one rating is dropped and counted, as in the long form
    holed = wide.assign(golden=wide["golden"].astype(float).where(wide.index != 0))
    assert (cohen_kappa(holed, rater=["judge", "golden"]).loc[0, ["n_items", "n_dropped"]] == [75, 2]).all()
    with pytest.raises(DataError, match="leave score='label' out"):
        cohen_kappa(wide, rater=["judge", "golden"], score="label")
    with pytest.raises(DataError, match="two distinct rating columns"):
        cohen_kappa(wide, rater=["judge", "golden", "case"])
    with pytest.raises(DataError, match="give item=, rater= and score="):
        cohen_kappa(long, item="case", rater="rater")


def test_strict_agreement_reproduces_seed_004_table_3():
    # Seed 004 Table 3 (theme-level IAA, 3 clinicians): the printed shares are multiples
    # of 1/30, so 30 messages are rebuilt per theme with those counts of unanimous
    # inclusion / exclusion; the rest are split 2-1.
    table = {  # theme: (all include, all exclude), printed inclusion / exclusion / agreement
        "Emp": (16, 0, 0.53, 0.00, 0.53), "Sym Q": (16, 0, 0.53, 0.00, 0.53),
        "Med Q": (6, 0, 0.20, 0.00, 0.20), "Asse": (1, 10, 0.03, 0.33, 0.36),
        "Plan": (0, 28, 0.00, 0.93, 0.93), "Log": (17, 0, 0.57, 0.00, 0.57),
        "Coord": (0, 10, 0.00, 0.33, 0.33), "Cont": (0, 14, 0.00, 0.47, 0.47),
    }  # fmt: skip
    for theme, (inc, exc, p_inc, p_exc, p_agree) in table.items():
        rows = [[1, 1, 1]] * inc + [[0, 0, 0]] * exc + [[1, 0, 1]] * (30 - inc - exc)
        out = strict_agreement(long_from_wide(np.array(rows, float)), item="target", rater="rater", score="rating")
        got = out.set_index("metric").estimate.round(2)
        assert got["strict inclusion"] == p_inc and got["strict exclusion"] == p_exc, theme
        # the paper adds rounded parts (0.03 + 0.33 = 0.36); the exact 11/30 rounds to 0.37
        assert got["strict agreement"] == (0.37 if theme == "Asse" else p_agree), theme


def test_strict_agreement_wilson_interval_and_dropped_targets():
    y = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, np.nan]])
    out = strict_agreement(long_from_wide(y), item="target", rater="rater", score="rating").set_index("metric")
    assert out.loc["strict agreement", "estimate"] == 2 / 3
    assert (out.n_items == 3).all() and (out.n_dropped == 3).all()
    # Wilson 95% interval for 2/3 (statsmodels proportion_confint, method="wilson")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(2, 3, alpha=0.05, method="wilson")
    np.testing.assert_allclose(out.loc["strict agreement", ["ci_low", "ci_high"]], [lo, hi])


def test_errors():
    with pytest.raises(DataError, match="exactly 2 raters"):
        cohen_kappa(RAW4RATERS, item="target", rater="rater", score="rating")
    with pytest.raises(DataError, match=r"not among categories"):
        gwet_ac(RAW4RATERS, item="target", rater="rater", score="rating", categories=[1, 2, 3])
    with pytest.raises(DataError, match=r"weights='cubic' is not valid"):
        gwet_ac(RAW4RATERS, item="target", rater="rater", score="rating", weights="cubic")
    with pytest.raises(DataError, match="must hold 0/1"):
        strict_agreement(RAW4RATERS, item="target", rater="rater", score="rating")
    same = long_from_wide(np.ones((5, 3)))
    # constant ratings: the one message of every agreement statistic and model (issue 42)
    with pytest.raises(DataError, match="holds one value .* no variation to analyse"):
        fleiss_kappa(same, item="target", rater="rater", score="rating")
    # with the possible categories given, AC1 is defined and equals percent agreement
    out = gwet_ac(same, item="target", rater="rater", score="rating", categories=[0, 1])
    assert out.estimate[0] == 1.0 and out.pe[0] == 0.0


def test_weighted_agreement_on_text_labels_needs_their_order(shared_dir):
    # Issue 18: gwet_ac(weights="linear") on the medical-safety crowd labels of queries sorted
    # the labels alphabetically (Critical < Non-serious < Not medical < Serious) and gave 0.536.
    # Source: Abercrombie & Rieser (2022), GavinAbercrombie/medical-safety @debbc98, reshaped
    # in crowd_expert_labels_wide.csv (see the data README). Their order is the risk scale.
    wide = pd.read_csv(shared_dir / "data/medical_safety/crowd_expert_labels_wide.csv")
    queries = wide[wide["item_type"] == "query"]
    crowd = [c for c in wide if c.startswith("crowd_")]
    long = queries.melt(id_vars="row_idx", value_vars=crowd, var_name="rater", value_name="label").dropna()
    order = ["Not medical", "Non-serious", "Serious", "Critical"]
    for function in (gwet_ac, percent_agreement):
        with pytest.raises(DataError, match=r"weights='linear' on text labels .* needs their order: pass categories="):
            function(long, item="row_idx", rater="rater", score="label", weights="linear")
    ac2 = gwet_ac(long, item="row_idx", rater="rater", score="label", weights="linear", categories=order)
    # 0.707 as issue 18 reports for the labels in their real order (hce's irrCAC-checked AC2).
    assert ac2.loc[0, "estimate"] == pytest.approx(0.707, abs=5e-4)
    # Unweighted agreement does not depend on the order, so it needs none.
    gwet_ac(long, item="row_idx", rater="rater", score="label")
    two = queries.dropna(subset=["crowd_1", "crowd_2"])
    with pytest.raises(DataError, match="needs their order"):
        cohen_kappa(two, rater=["crowd_1", "crowd_2"], weights="quadratic")
    numeric = long.assign(label=long["label"].map({c: i for i, c in enumerate(order)}))
    same = gwet_ac(numeric, item="row_idx", rater="rater", score="label", weights="linear")
    assert same.loc[0, "estimate"] == pytest.approx(ac2.loc[0, "estimate"], rel=1e-12)


def test_perfect_agreement_has_kappa_one_and_standard_error_zero():
    # CI caught it on another CPU: at kappa = 1 the large-sample variance (Fleiss, Cohen & Everitt
    # 1969) is 0 in exact arithmetic and came out slightly negative, so sqrt warned. These counts
    # (213, 139, 48 on the diagonal) are the Exp 4 table that did it.
    codes = np.repeat(["a", "b", "c"], [213, 139, 48])
    pairs = pd.DataFrame({"segment": np.tile(np.arange(codes.size), 2), "coder": np.repeat(["c1", "c2"], codes.size),
                          "code": np.tile(codes, 2)})  # fmt: skip
    row = cohen_kappa(pairs, item="segment", rater="coder", score="code").iloc[0]
    assert row["estimate"] == pytest.approx(1.0) and row["se"] == 0.0


def _near_perfect() -> pd.DataFrame:
    # 60 segments of 12 replies (5 each), two coders agreeing on 57: the Wald upper limit passes 1.
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 60)
    b = a.copy()
    b[[4, 17, 40]] = (a[[4, 17, 40]] + 1) % 3
    long = long_from_wide(np.column_stack([a, b]).astype(float))
    return long.assign(reply=long["target"] // 5)


def test_cohen_kappa_bootstrap_interval_stays_in_the_parameter_space():
    long = _near_perfect()
    wald = cohen_kappa(long, item="target", rater="rater", score="rating", ci_method="wald").iloc[0]
    assert wald.ci_high > 1  # issue 33: "0.92 [0.81, 1.03]"
    boot = cohen_kappa(long, item="target", rater="rater", score="rating", ci_method="bootstrap", random_state=0).iloc[0]
    assert boot.estimate == wald.estimate and boot.se == wald.se and boot.p_value == wald.p_value
    assert -1 <= boot.ci_low <= boot.estimate <= boot.ci_high <= 1
    assert boot.ci_method == "percentile bootstrap over targets (B=1000)"


def test_cohen_kappa_bootstrap_equals_a_brute_force_percentile_bootstrap():
    # The same resampling by hand: draw the targets with replacement, recompute kappa with
    # scikit-learn, take numpy's percentiles; 4000 replicates each, limits agree within
    # 0.03 (the Monte Carlo SE of a 2.5% quantile of kappa here is about 0.01).
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(0, 4, 80))
    long = long_from_wide(np.column_stack([a, b]).astype(float))
    out = cohen_kappa(long, item="target", rater="rater", score="rating", ci_method="bootstrap", n_boot=4000,
                      random_state=5).iloc[0]  # fmt: skip
    draws = np.random.default_rng(6).integers(0, 80, (4000, 80))
    ref = np.quantile([cohen_kappa_score(a[i], b[i]) for i in draws], [0.025, 0.975])
    np.testing.assert_allclose([out.ci_low, out.ci_high], ref, atol=0.03)


def test_cohen_kappa_cluster_bootstrap_resamples_whole_clusters():
    long = _near_perfect()
    kw = {"item": "target", "rater": "rater", "score": "rating", "ci_method": "bootstrap", "random_state": 0}
    # One target per cluster is the target bootstrap, draw for draw.
    same = cohen_kappa(long.assign(reply=long["target"]), cluster="reply", **kw).iloc[0]
    plain = cohen_kappa(long, **kw).iloc[0]
    assert (same.ci_low, same.ci_high) == (plain.ci_low, plain.ci_high)
    nested = cohen_kappa(long, cluster="reply", **kw).iloc[0]
    assert nested.ci_method == "percentile bootstrap over reply (B=1000)"
    assert -1 <= nested.ci_low <= nested.estimate <= nested.ci_high <= 1
    with pytest.raises(DataError, match="cluster='reply' must be constant within each target"):
        cohen_kappa(long.assign(reply=np.arange(len(long))), cluster="reply", **kw)
    with pytest.raises(DataError, match="pass ci_method='bootstrap'"):
        cohen_kappa(long, item="target", rater="rater", score="rating", cluster="reply")


def test_cohen_kappa_default_interval_is_bounded_and_named():
    # Issue 45: 58 of 60 binary targets agreed on gave the Wald 0.842 to 1.024 by default. statsmodels'
    # cohens_kappa (SAS formulas) gives the same kappa and SE; the default interval is the Wald interval of
    # atanh(kappa) with the delta-method SE se / (1 - kappa^2), back-transformed: inside (-1, 1).
    a = np.repeat([1, 0], 30)
    b = a.copy()
    b[[0, 45]] = 1 - b[[0, 45]]
    out = cohen_kappa(pd.DataFrame({"a": a, "b": b}), rater=["a", "b"]).iloc[0]
    ref = inter_rater.cohens_kappa(pd.crosstab(a, b).to_numpy())
    assert (round(ref.kappa_low, 3), round(ref.kappa_upp, 3)) == (0.842, 1.024)  # the Wald interval of the issue
    half = 1.959963984540054 * ref.std_kappa / (1 - ref.kappa**2)
    np.testing.assert_allclose([out.ci_low, out.ci_high], np.tanh(np.arctanh(ref.kappa) + np.array([-half, half])), rtol=1e-12)
    assert -1 < out.ci_low < out.estimate < out.ci_high < 1
    assert out.ci_method.startswith("Wald on the Fisher z (atanh) scale")
    # perfect agreement: SE 0, atanh(1) infinite; no interval rather than the point [1, 1]
    perfect = cohen_kappa(pd.DataFrame({"a": a, "b": a}), rater=["a", "b"]).iloc[0]
    assert perfect.estimate == 1 and np.isnan(perfect.ci_low) and np.isnan(perfect.ci_high)
