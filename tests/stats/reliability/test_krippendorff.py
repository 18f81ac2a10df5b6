"""Krippendorff's alpha: Krippendorff (2011) example, parity with `krippendorff`, bootstrap."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irr_tables import KRIPPENDORFF, expected, long_from_wide, shared_csv

from hce.errors import DataError
from hce.stats import krippendorff_alpha
from hce.stats.reliability.krippendorff import _Alpha

LEVELS = ["nominal", "ordinal", "interval", "ratio"]
# Krippendorff (2011) section C, three decimals
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _long(matrix: np.ndarray) -> pd.DataFrame:
    return long_from_wide(matrix, target_axis=1)  # observers x units


@pytest.mark.parametrize("level", LEVELS)
def test_krippendorff_2011_worked_example(level):
    out = krippendorff_alpha(_long(KRIPPENDORFF), item="target", rater="rater", score="rating",
                             level=level, n_boot=0)  # fmt: skip
    assert round(out.estimate[0], 3) == PUBLISHED[level]
    # fast-krippendorff (PyPI `krippendorff`), an independent implementation, to 1e-12
    ref = krippendorff.alpha(reliability_data=KRIPPENDORFF, level_of_measurement=level)
    np.testing.assert_allclose(out.estimate[0], ref, rtol=1e-12)
    # unit 12 has one value, so 11 pairable units and 40 pairable values; 7 cells missing
    assert (out.n_items[0], out.n_raters[0], out.n_scores[0], out.n_dropped[0]) == (
        11, 4, 40, 8
    )


@pytest.mark.parametrize("level", LEVELS)
def test_shared_file_expected_values(level):
    wide = shared_csv("krippendorff_2011_4obs_12units.csv").set_index("observer")
    np.testing.assert_array_equal(wide.to_numpy(float), KRIPPENDORFF)
    out = krippendorff_alpha(_long(wide.to_numpy(float)), item="target", rater="rater", score="rating",
                             level=level, n_boot=0)  # fmt: skip
    assert round(out.estimate[0], 3) == float(expected("krippendorff_2011_4obs_12units.csv", level))


def _random_ratings(n_units=300, n_raters=7, seed=0, missing=0.2):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 8, n_units)
    y = np.clip(truth[None, :] + rng.integers(-2, 3, (n_raters, n_units)), 1, 7).astype(float)
    y[rng.random(y.shape) < missing] = np.nan
    return y


@pytest.mark.parametrize("level", LEVELS)
def test_parity_with_krippendorff_package_on_missing_data(level):
    y = _random_ratings()
    out = krippendorff_alpha(_long(y), item="target", rater="rater", score="rating", level=level, n_boot=0)
    ref = krippendorff.alpha(reliability_data=y, level_of_measurement=level)
    np.testing.assert_allclose(out.estimate[0], ref, rtol=1e-10)


def test_distance_callable_and_string_labels():
    long = _long(_random_ratings(seed=1))
    interval = krippendorff_alpha(long, item="target", rater="rater", score="rating", n_boot=0).estimate[0]

    def squared(a, b):
        return (a - b) ** 2

    custom = krippendorff_alpha(long, item="target", rater="rater", score="rating", level=squared, n_boot=0)
    np.testing.assert_allclose(custom.estimate[0], interval, rtol=1e-12)
    assert custom.level[0] == "squared"
    nominal = krippendorff_alpha(long, item="target", rater="rater", score="rating", level="nominal", n_boot=0)
    labels = long.assign(rating=long.rating.map(lambda v: None if np.isnan(v) else f"c{v:.0f}"))
    text = krippendorff_alpha(labels, item="target", rater="rater", score="rating", level="nominal", n_boot=0)
    np.testing.assert_allclose(text.estimate[0], nominal.estimate[0], rtol=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_each_bootstrap_replicate_is_alpha_of_the_resampled_units(level):
    # the vectorised replicate for multinomial unit weights equals alpha recomputed from
    # scratch on the units repeated that many times (margins, and the ordinal metric, too)
    y = _random_ratings(n_units=60, n_raters=4, seed=2, missing=0.1)
    y = y[:, (~np.isnan(y)).sum(axis=0) >= 2]
    long = _long(y).dropna()
    unit = pd.factorize(long.target, sort=True)[0]
    model = _Alpha.of_values(unit, long.rating.to_numpy(), level)
    rng = np.random.default_rng(3)
    weights = rng.multinomial(y.shape[1], np.full(y.shape[1], 1 / y.shape[1]), size=3)
    reps = model.alphas(weights.astype(float))
    for w, rep in zip(weights, reps):
        resampled = np.repeat(y, w, axis=1)
        ref = krippendorff.alpha(reliability_data=resampled, level_of_measurement=level)
        np.testing.assert_allclose(rep, ref, rtol=1e-10)


def test_bootstrap_interval_and_probability_below_minimum():
    long = _long(KRIPPENDORFF)
    out = krippendorff_alpha(long, item="target", rater="rater", score="rating", level="interval",
                             minimum=[0.667, 0.8], random_state=7)  # fmt: skip
    again = krippendorff_alpha(long, item="target", rater="rater", score="rating", level="interval",
                               minimum=[0.667, 0.8], random_state=7)  # fmt: skip
    pd.testing.assert_frame_equal(out, again)
    assert list(out.minimum) == [0.667, 0.8]
    assert out.p_below[0] < out.p_below[1]
    assert (out.ci_low < out.estimate).all() and (out.ci_high <= 1.0).all()
    assert out.ci_method[0] == "percentile bootstrap over units (B=1000)"
    none = krippendorff_alpha(long, item="target", rater="rater", score="rating", n_boot=0)
    assert np.isnan(none.ci_low[0]) and np.isnan(none.p_below[0])


def test_fleiss_diagnoses_nominal_alpha_computed_value():
    # expected_values.csv: Krippendorff nominal alpha 0.4334 on Fleiss (1971), computed only
    wide = shared_csv("irr_diagnoses.csv").set_index("subject")
    long = wide.stack().rename("rating").rename_axis(["target", "rater"]).reset_index()
    out = krippendorff_alpha(long, item="target", rater="rater", score="rating", level="nominal", n_boot=0)
    assert round(out.estimate[0], 4) == 0.4334


def test_errors():
    long = _long(KRIPPENDORFF)
    with pytest.raises(DataError, match=r"level='metric' is not valid"):
        krippendorff_alpha(long, item="target", rater="rater", score="rating", level="metric")
    with pytest.raises(DataError, match="n_boot=-1"):
        krippendorff_alpha(long, item="target", rater="rater", score="rating", n_boot=-1)
    # constant ratings: the one message of every agreement statistic and model (issue 42)
    with pytest.raises(DataError, match="holds one value .* no variation to analyse"):
        krippendorff_alpha(long.assign(rating=1.0), item="target", rater="rater", score="rating")
    with pytest.raises(DataError, match="no unit has two or more ratings"):
        krippendorff_alpha(long[long.rater == "r0"], item="target", rater="rater", score="rating")


# Issue 22, item 4: the bootstrap draws multinomial counts over distinct units (units with
# the same value counts), not one weight per unit; the resampling scheme is unchanged.
def test_multinomial_counts_are_exactly_multinomial():
    from scipy import stats

    from hce.stats._resample import multinomial_counts

    multiplicity = np.array([1, 3, 2, 5])  # n = 11: every composition's probability is known
    counts = multinomial_counts(multiplicity, 20_000, np.random.default_rng(5))
    assert (counts.sum(axis=1) == 11).all() and (counts >= 0).all()
    keys, observed = np.unique(counts, axis=0, return_counts=True)
    expected_p = stats.multinomial(11, multiplicity / 11).pmf(keys)
    # pool compositions expected fewer than 5 times into one cell, as chi-square asks
    rare = expected_p * len(counts) < 5
    f_obs = np.append(observed[~rare], observed[rare].sum() + 0.0)
    f_exp = np.append(expected_p[~rare], 1 - expected_p[~rare].sum()) * len(counts)
    # p > 1e-4 under the true null fails once in 10,000 seeds; a wrong scheme (e.g. plain
    # Poisson counts, whose total varies) fails the total check above outright
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-4


@pytest.mark.parametrize("level", LEVELS)
def test_distinct_unit_replicates_equal_the_per_unit_replicates(level):
    # ordinal 1-5 with missing values: many units share their value counts
    y = np.clip(_random_ratings(n_units=300, n_raters=6, seed=4, missing=0.2), 1, 5)
    y = y[:, (~np.isnan(y)).sum(axis=0) >= 2]
    long = _long(y).dropna()
    unit = pd.factorize(long.target, sort=True)[0]
    model = _Alpha.of_values(unit, long.rating.to_numpy(), level)
    distinct, multiplicity = model.distinct()
    assert len(multiplicity) < len(model.m) / 2 and multiplicity.sum() == len(model.m)
    counts = np.random.default_rng(6).multinomial(len(model.m), multiplicity / len(model.m), size=5)
    # the same draw on the per-unit model: each distinct unit's count on one of its units
    first = {tuple(row): i for i, row in reversed(list(enumerate(model.key)))}
    on_units = np.zeros((5, len(model.m)))
    on_units[:, [first[tuple(row)] for row in distinct.key]] = counts
    np.testing.assert_allclose(distinct.alphas(counts.astype(float)), model.alphas(on_units), rtol=1e-10)
    np.testing.assert_allclose(distinct.alphas(multiplicity[None].astype(float))[0],
                               model.alphas(np.ones((1, len(model.m))))[0], rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_bootstrap_distribution_matches_per_unit_row_resampling(level):
    """The new CI equals the old one (multinomial weights on every unit) within Monte Carlo error."""
    from hce.stats.reliability.krippendorff import alpha_core

    y = np.clip(_random_ratings(n_units=400, n_raters=6, seed=8, missing=0.15), 1, 5)
    y = y[:, (~np.isnan(y)).sum(axis=0) >= 2]
    long = _long(y).dropna()
    unit = pd.factorize(long.target, sort=True)[0]
    n_units, n_boot = unit.max() + 1, 4000
    old = _Alpha.of_values(unit, long.rating.to_numpy(), level).alphas(
        np.random.default_rng(9).multinomial(n_units, np.full(n_units, 1 / n_units), size=n_boot).astype(float)
    )
    _, new = alpha_core(unit, long.rating.to_numpy(), level, n_boot=n_boot, random_state=10)
    sigma = old.std(ddof=1)
    # Two independent estimates of a 2.5% (97.5%) quantile from B replicates of a roughly
    # normal statistic differ with SD sqrt(2 p (1 - p) / B) / phi(1.96) sigma = 0.060 sigma
    # at B = 4000; allow 5 SD. Their SDs differ with SD sigma / sqrt(B) = 0.016 sigma: 5 SD.
    for p in (0.025, 0.975):
        assert abs(np.quantile(new, p) - np.quantile(old, p)) < 5 * 0.060 * sigma
    assert abs(new.std(ddof=1) - sigma) < 5 * 0.016 * sigma
    assert abs(new.mean() - old.mean()) < 5 * np.sqrt(2 / n_boot) * sigma


@pytest.mark.parametrize("values", [
    np.array([3, 1, 2, 1, 3]),  # a dense range: the offsets are the codes
    np.array([10, 4, 4, 7]),  # gaps in the range
    np.array([2.0, 5.0, 2.0, 9.0]),  # whole floats with gaps
    np.array([1.5, 0.5, 1.5]),  # not whole: hash-factorised
    np.array([np.uint8(3), np.uint8(250)], dtype=np.uint8),
    np.array(["b", "a", "b"], dtype=object),
])  # fmt: skip
def test_sorted_codes_match_a_sorted_factorisation(values):
    # issue 35 made the short-range path skip its copies and rank lookup where it can
    from hce.stats.reliability._common import sorted_codes

    codes, labels = sorted_codes(values)
    expected_codes, expected_labels = pd.factorize(values, sort=True)
    np.testing.assert_array_equal(codes, expected_codes)
    assert list(labels) == list(expected_labels)
