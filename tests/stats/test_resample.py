"""Tests for hce.stats._resample: the one generator door, the row and cluster bootstrap, the percentile interval.

Every bootstrap in hce.stats draws through these functions, so each check here says what a
replicate *is*: brute-force resamples drawn from the same generator must give the same
numbers (to rounding, rel 1e-12) as the vectorised paths.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from hce.stats._resample import (
    as_generator,
    bootstrap_sums,
    distinct_rows,
    percentile_interval,
    resample_counts,
    resample_rows,
)
from hce.stats.tests import friedman_core, kruskal_row


def test_as_generator_passes_a_generator_on_and_seeds_the_rest():
    rng = np.random.default_rng(1)
    assert as_generator(rng) is rng
    assert as_generator(5).integers(0, 10**9) == np.random.default_rng(5).integers(0, 10**9)
    assert isinstance(as_generator(None), np.random.Generator)


def test_resample_rows_is_one_stream_whatever_the_blocks():
    whole = resample_rows(37, 50, as_generator(3))
    rng = as_generator(3)
    pieces = np.concatenate([resample_rows(37, size, rng) for size in (1, 9, 40)])
    np.testing.assert_array_equal(whole, pieces)
    assert whole.min() >= 0 and whole.max() < 37 and whole.dtype == np.int32


@pytest.mark.parametrize("multiplicity", [None, np.array([3, 1, 5, 2])])
def test_resample_counts_blocks_concatenate_to_one_draw(multiplicity):
    n_units = 4
    one = [c.copy() for *_, c in resample_counts(n_units, 30, as_generator(2), multiplicity=multiplicity)]
    small = [c.copy() for *_, c in resample_counts(n_units, 30, as_generator(2), multiplicity=multiplicity, block_cells=28)]
    assert len(one) == 1 and len(small) == 5  # 28 cells = 7 replicates of 4 units a block
    np.testing.assert_array_equal(one[0], np.concatenate(small))
    total = n_units if multiplicity is None else multiplicity.sum()
    np.testing.assert_array_equal(one[0].sum(axis=1), total)


def test_bootstrap_sums_is_the_sum_over_the_resampled_rows():
    unit_stats = as_generator(0).normal(size=(25, 3))
    sums = bootstrap_sums(unit_stats, 40, as_generator(9))
    brute = np.stack([unit_stats[idx].sum(axis=0) for idx in resample_rows(25, 40, as_generator(9))])
    np.testing.assert_allclose(sums, brute, rtol=1e-12)


def test_percentile_interval_is_numpys_linear_quantile_ignoring_nan():
    # numpy's default "linear" rule is R's quantile(type = 7): 5% and 95% of 0..100 are 5 and 95.
    low, high = percentile_interval(np.arange(101.0), 0.9)
    assert low == pytest.approx(5.0, abs=1e-12) and high == pytest.approx(95.0, abs=1e-12)
    reps = as_generator(4).normal(size=(200, 2))
    with_nan = reps.copy()
    with_nan[::7, 0] = np.nan
    with_nan[:, 1] = np.nan  # undefined in every replicate: a NaN interval, no numpy warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = percentile_interval(with_nan, 0.95)
    kept = reps[np.arange(200) % 7 != 0, 0]
    np.testing.assert_allclose([low[0], high[0]], np.quantile(kept, [0.025, 0.975]), rtol=1e-12)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_friedman_interval_is_the_bootstrap_of_blocks():
    # Kendall's W of each resample of blocks, by scipy. Blocks are resampled through their rank
    # patterns (at most 3! = 6 here): Multinomial(12, pattern shares) counts, the distribution of
    # 12 blocks drawn with replacement (bootstrap_sums(collapse=True)), from the same draws.
    matrix = as_generator(5).normal(size=(12, 3))  # continuous: no ties, scipy and hce agree exactly
    out = friedman_core(matrix, n_boot=300, random_state=8)
    first, counted = distinct_rows(np.column_stack([stats.rankdata(matrix, axis=1), np.zeros(12)]))
    assert len(first) < 6  # the collapsed path
    counts = np.vstack([c for _, _, c in resample_counts(len(first), 300, as_generator(8), multiplicity=counted)])
    w = [stats.friedmanchisquare(*matrix[np.repeat(first, c)].T).statistic / (12 * 2) for c in counts]
    low, high = np.quantile(w, [0.025, 0.975])
    assert out["effect_ci_low"] == pytest.approx(low, rel=1e-12) and out["effect_ci_high"] == pytest.approx(high, rel=1e-12)


def test_kruskal_interval_is_the_stratified_row_bootstrap():
    # Each group resampled on its own (a stratified bootstrap), epsilon squared = H / (n - 1).
    rng = as_generator(6)
    groups = [rng.normal(size=10), rng.normal(1, size=8), rng.normal(0.5, size=9)]
    out = kruskal_row(groups, 0.9, 200, 11)
    draws = as_generator(11)
    picks = [resample_rows(len(x), 200, draws) for x in groups]
    eps2 = [stats.kruskal(*(x[p[b]] for x, p in zip(groups, picks, strict=True))).statistic / 26 for b in range(200)]
    low, high = np.quantile(eps2, [0.05, 0.95])
    assert out["effect_ci_low"] == pytest.approx(low, rel=1e-12) and out["effect_ci_high"] == pytest.approx(high, rel=1e-12)


# Issue 35: multinomial_counts draws shrunk Poisson counts, redraws rows past n and tops the
# others up; with n = 100 the shrink (1 - 4 / sqrt(n) = 0.6) puts 60% of the draws in the
# Poisson part, which the n = 11 test in test_krippendorff.py (shrink 0: top-ups only) skips.
def test_multinomial_counts_with_poisson_part_are_exactly_multinomial():
    from hce.stats._resample import multinomial_counts

    multiplicity = np.array([30, 50, 20])
    counts = multinomial_counts(multiplicity, 20_000, np.random.default_rng(35))
    assert (counts.sum(axis=1) == 100).all() and (counts >= 0).all()
    keys, observed = np.unique(counts, axis=0, return_counts=True)
    expected_p = stats.multinomial(100, multiplicity / 100).pmf(keys)
    rare = expected_p * len(counts) < 5  # pooled, as chi-square asks
    f_obs = np.append(observed[~rare], observed[rare].sum() + 0.0)
    f_exp = np.append(expected_p[~rare], 1 - expected_p[~rare].sum()) * len(counts)
    # fails once in 10,000 seeds under the true law; counts without the redraw of rows past
    # n would break the totals above, counts without the top-up their mean (60 not 100)
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-4
