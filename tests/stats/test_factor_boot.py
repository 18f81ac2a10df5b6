"""Bootstrap intervals of factor loadings, omega and ordinal alpha (``n_boot=`` in
hce.stats.factor and hce.stats.reliability; machinery in hce.stats.factor.bootstrap).

Reference values, each independent of the code under test:

* Alignment: a signed permutation of a known loading matrix must be undone exactly.
* Resampling: with one replicate, both interval limits equal the statistic of that one
  resample, recomputed here from the public functions on the resampled rows.
* Standard error: with three items and one factor the model is just identified, and the
  minres (= ML) loading has the closed form lambda_1 = sqrt(r12 r13 / r23). Under
  normality the sample covariances have n cov(s_ij, s_kl) = s_ik s_jl + s_il s_jk
  (Anderson 2003, An Introduction to Multivariate Statistical Analysis, 3rd ed., Thm 3.4.4),
  and the delta method gives the asymptotic SE of lambda_1; a 20,000-sample Monte Carlo of
  the closed form, computed in the test, confirms it.
* Coverage (slow): percentile intervals against the population loadings of simulated data.
"""

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hce.errors import DataError, HceWarning
from hce.stats import efa, omega_hierarchical, ordinal_alpha
from hce.stats.factor.bootstrap import (
    align_factors,
    bootstrap_rows,
    congruence,
    match_factors,
)
from hce.stats.factor import efa_intervals
from hce.stats.factor.exploratory import _efa_solution

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "factor_analysis"


PATTERN = np.zeros((6, 2))
PATTERN[:3, 0] = PATTERN[3:, 1] = [0.75, 0.65, 0.55]


def _two_factor_data(n=300, seed=0, phi=0.3):
    """Six items, three per factor (``PATTERN``); factor correlation ``phi``."""
    rng = np.random.default_rng(seed)
    cov = PATTERN @ np.array([[1, phi], [phi, 1]]) @ PATTERN.T
    np.fill_diagonal(cov, 1.0)
    x = rng.multivariate_normal(np.zeros(6), cov, size=n)
    return pd.DataFrame(x, columns=[f"i{j}" for j in range(6)]), cov


# ----------------------------------------------------------------------------- alignment


def test_alignment_undoes_every_permutation_and_reflection_exactly():
    rng = np.random.default_rng(4)
    target = rng.uniform(-0.2, 0.2, size=(9, 3))
    target[np.arange(9), np.arange(9) // 3] = rng.uniform(0.5, 0.9, size=9)
    phi = np.array([[1.0, 0.3, -0.2], [0.3, 1.0, 0.4], [-0.2, 0.4, 1.0]])
    for order in itertools.permutations(range(3)):
        for signs in itertools.product([1.0, -1.0], repeat=3):
            order_, signs_ = list(order), np.array(signs)
            scrambled = target[:, order_] * signs_
            scrambled_phi = phi[np.ix_(order_, order_)] * np.outer(signs_, signs_)
            aligned, aligned_phi = align_factors(scrambled, target, scrambled_phi)
            np.testing.assert_array_equal(aligned, target)
            np.testing.assert_array_equal(aligned_phi, phi)
    # a replicate is the target plus sampling noise: still matched factor by factor
    noisy = (target + rng.normal(0, 0.05, target.shape))[:, [2, 0, 1]] * [1, -1, -1]
    aligned, _ = align_factors(noisy, target)
    assert np.abs(aligned - target).max() < 0.2
    np.testing.assert_array_equal(np.sign(aligned[np.arange(9), np.arange(9) // 3]), 1)


def test_alignment_of_a_refitted_solution_on_permuted_factors():
    """An oblimin solution, its factors swapped and reflected, is restored by alignment."""
    data, _ = _two_factor_data()
    loadings, phi, _, _ = _efa_solution(data.corr().to_numpy(), 2, "minres", "oblimin")
    aligned, aligned_phi = align_factors(-loadings[:, ::-1], loadings, phi[::-1, ::-1])
    np.testing.assert_array_equal(aligned, loadings)
    np.testing.assert_array_equal(aligned_phi, phi)


def test_congruence_is_tuckers_coefficient():
    a = np.array([[1.0, 0.2], [0.8, 0.1], [0.1, 0.9]])
    b = np.array([[0.5, 0.0], [0.4, 0.3], [0.0, 0.7]])
    expected = [[(a[:, i] @ b[:, j]) / np.sqrt((a[:, i] @ a[:, i]) * (b[:, j] @ b[:, j]))
                 for j in range(2)] for i in range(2)]
    np.testing.assert_allclose(congruence(a, b), expected, rtol=1e-12)


# ----------------------------------------------------------------------------- failures


def test_failed_replicates_are_counted_reported_and_left_out():
    calls = iter(range(100))

    def statistic(rows):
        i = next(calls)
        if i % 4 == 1:
            raise DataError("an item is constant in the resample")
        if i % 5 == 2:
            warnings.warn("Failed to converge: ABNORMAL_TERMINATION_IN_LNSRCH")
        if i % 3 == 0:
            warnings.warn("correlation matrix was not positive definite; smoothed")
        return np.array([rows.mean(), float(i)])

    x = np.arange(20.0)[:, None]
    with pytest.warns(HceWarning) as record:
        reps = bootstrap_rows(x, statistic, 20, np.random.default_rng(0), size=2, what="test")
    failed = [i for i in range(20) if i % 4 == 1 or i % 5 == 2]
    assert reps.n_failed == len(failed) == 8
    assert np.isnan(reps.values[failed]).all()
    kept = [i for i in range(20) if i not in failed]
    np.testing.assert_array_equal(reps.values[kept, 1], kept)
    messages = [str(w.message) for w in record]
    assert any("8 of 20 bootstrap replicates failed" in m and "x5" in m and "x3" in m
               for m in messages)
    smoothed = sum(1 for i in kept if i % 3 == 0)
    assert any(f"{smoothed} of 20 bootstrap replicates warned" in m for m in messages)


def test_efa_counts_resamples_with_a_constant_item():
    rng = np.random.default_rng(2)
    f = rng.normal(size=40)
    d = pd.DataFrame({"a": f + rng.normal(size=40), "b": f + rng.normal(size=40),
                      "c": f + rng.normal(size=40), "rare": 0.0})
    d.loc[[3, 17], "rare"] = 1.0
    # replay the resamples: a replicate fails when it misses both rows where "rare" is 1
    replay = np.random.default_rng(5)
    expected = sum(not np.isin([3, 17], replay.integers(0, 40, size=40)).any()
                   for _ in range(30))
    assert expected > 0
    with pytest.warns(HceWarning) as record:  # also a Heywood notice from a small resample
        res = efa(d, n_factors=1, n_boot=30, random_state=5)
    assert any(f"{expected} of 30 bootstrap replicates failed and are left out" in str(w.message)
               and "an item is constant in the resample" in str(w.message) for w in record)
    assert (res.intervals["n_failed"] == expected).all()
    assert res.intervals[["ci_low", "ci_high"]].notna().all().all()


# ----------------------------------------------------------------------------- definition


def test_one_replicate_is_the_refit_on_that_resample():
    data, _ = _two_factor_data(n=200, seed=1)
    rows = np.random.default_rng(9).integers(0, 200, size=200)
    resample = data.iloc[rows].reset_index(drop=True)
    full = efa(data, n_factors=2, n_boot=1, random_state=9)
    refit = efa(resample, n_factors=2)
    expected, expected_phi = align_factors(refit.loadings.to_numpy(), full.loadings.to_numpy(),
                                           refit.phi.to_numpy())
    ci = full.intervals
    loads = ci[ci["parameter"] == "loading"]
    np.testing.assert_allclose(loads["ci_low"], expected.ravel(), rtol=1e-12)
    np.testing.assert_allclose(loads["ci_high"], expected.ravel(), rtol=1e-12)
    comm = ci[ci["parameter"] == "communality"]
    np.testing.assert_allclose(comm["ci_low"], refit.communalities["communality"], rtol=1e-12)
    corr = ci[ci["parameter"] == "factor_correlation"]
    assert corr["ci_low"].iloc[0] == pytest.approx(expected_phi[1, 0], rel=1e-12)

    omega = omega_hierarchical(data, n_factors=2, n_boot=1, random_state=9).estimates
    ref = omega_hierarchical(resample, n_factors=2).estimates
    np.testing.assert_allclose(omega["ci_low"], ref["estimate"], rtol=1e-12)
    np.testing.assert_allclose(omega["ci_high"], ref["estimate"], rtol=1e-12)

    ordinal = pd.DataFrame(np.digitize(data.to_numpy(), [-1, 0, 1]), columns=data.columns)
    alpha = ordinal_alpha(ordinal, n_boot=1, random_state=9)
    ref = ordinal_alpha(ordinal.iloc[rows])
    assert alpha["ci_low"].iloc[0] == pytest.approx(ref["estimate"].iloc[0], rel=1e-12)
    assert alpha["ci_high"].iloc[0] == pytest.approx(ref["estimate"].iloc[0], rel=1e-12)


def test_reproducible_with_random_state_and_off_by_default():
    data, _ = _two_factor_data(n=200, seed=1)
    a = efa(data, n_factors=2, n_boot=12, random_state=7)
    b = efa(data, n_factors=2, n_boot=12, random_state=np.random.default_rng(7))
    c = efa(data, n_factors=2, n_boot=12, random_state=8)
    pd.testing.assert_frame_equal(a.intervals, b.intervals)
    assert not np.allclose(a.intervals["ci_low"], c.intervals["ci_low"])
    plain = efa(data, n_factors=2)
    assert plain.intervals is None
    pd.testing.assert_frame_equal(plain.loadings, a.loadings)
    pd.testing.assert_frame_equal(plain.fit, a.fit)  # RMSEA stays at 90%
    assert (a.intervals["confidence"] == 0.95).all() and a.fit["confidence"].max() == 0.90
    both = efa(data, n_factors=2, n_boot=12, random_state=7, confidence=0.8)
    assert (both.intervals["confidence"] == 0.8).all() and both.fit["confidence"].max() == 0.8
    assert "bootstrapped 95 % confidence intervals (12 resamples, 0 failed)" in a.summary()

    om1 = omega_hierarchical(data, n_factors=2, n_boot=8, random_state=3).estimates
    om2 = omega_hierarchical(data, n_factors=2, n_boot=8, random_state=3).estimates
    pd.testing.assert_frame_equal(om1, om2)
    off = omega_hierarchical(data, n_factors=2).estimates
    np.testing.assert_array_equal(off["estimate"], om1["estimate"])
    assert off[["ci_low", "ci_high"]].isna().all().all() and off["n_failed"].eq(0).all()
    with pytest.raises(DataError, match="n_boot=-1 must be a non-negative integer"):
        efa(data, n_factors=2, n_boot=-1)


def test_efa_intervals_adds_efas_own_intervals_to_a_fitted_result():
    """The public entry point instrument_report uses: the same intervals as efa(n_boot=),
    at a level of its own, the fit (and its 90% RMSEA interval) untouched."""
    data, _ = _two_factor_data(n=200, seed=1)
    fitted = efa(data, n_factors=2)
    one_call = efa(data, n_factors=2, n_boot=12, random_state=7, confidence=0.8)
    added = efa_intervals(data, fitted, n_boot=12, confidence=0.8, random_state=7)
    pd.testing.assert_frame_equal(added.intervals, one_call.intervals)
    pd.testing.assert_frame_equal(added.fit, fitted.fit)
    assert added.fit["confidence"].max() == 0.90 and fitted.intervals is None
    with pytest.raises(DataError, match=r"are not the items \['i0', 'i1'"):
        efa_intervals(data, fitted, ["i0", "i1", "i2", "i3"], n_boot=5)
    with pytest.raises(DataError, match="n_boot=0 must be at least 1"):
        efa_intervals(data, fitted, n_boot=0)


# ----------------------------------------------------------------------------- accuracy


def _closed_form_loading(s: np.ndarray) -> np.ndarray:
    """lambda_1 = sqrt(r12 r13 / r23) for one or many 3 x 3 covariance matrices."""
    d = np.sqrt(np.einsum("...ii->...i", s))
    r = s / (d[..., :, None] * d[..., None, :])
    return np.sqrt(r[..., 0, 1] * r[..., 0, 2] / r[..., 1, 2])


def test_bootstrap_se_of_a_one_factor_loading_matches_the_asymptotic_se():
    lam = np.array([0.8, 0.7, 0.6])
    sigma = np.outer(lam, lam)
    np.fill_diagonal(sigma, 1.0)
    n = 4000
    # delta method on the normal-theory covariance of the 6 distinct covariances
    pairs = [(i, j) for i in range(3) for j in range(i, 3)]

    def at(v):
        s = np.zeros((3, 3))
        for (i, j), value in zip(pairs, v):
            s[i, j] = s[j, i] = value
        return _closed_form_loading(s)

    v0 = np.array([sigma[i, j] for i, j in pairs])
    h = 1e-6
    grad = np.array([(at(v0 + h * e) - at(v0 - h * e)) / (2 * h) for e in np.eye(6)])
    gamma = np.array([[sigma[i, k] * sigma[j, m] + sigma[i, m] * sigma[j, k]
                       for k, m in pairs] for i, j in pairs])
    se_asymptotic = np.sqrt(grad @ gamma @ grad / n)
    # Monte Carlo of the sampling distribution: n S ~ Wishart(n - 1, Sigma) for normal rows
    # (20,000 samples; the SE of their SD is 1/sqrt(40,000) = 0.5%)
    sims = _closed_form_loading(stats.wishart.rvs(df=n - 1, scale=sigma, size=20_000,
                                                  random_state=0))
    assert sims.std(ddof=1) == pytest.approx(se_asymptotic, rel=0.03)
    # bootstrap SE, 150 replicates on each of four data sets. The ratio bootstrap /
    # asymptotic SE varies by 1/sqrt(2 B) = 0.058 from the replicates and, measured at
    # n = 1,000 (16 data sets, B = 300: SD 0.074), by about 0.062 sqrt(1000 / n) = 0.031 from
    # the data; the mean of four has SD 0.033 and must lie within 0.10 (3 SD) of 1
    rng = np.random.default_rng(1)
    chol = np.linalg.cholesky(sigma)
    ratios = []
    for seed in range(4):
        x = rng.standard_normal((n, 3)) @ chol.T
        res = efa(pd.DataFrame(x, columns=["a", "b", "c"]), n_factors=1, n_boot=150, random_state=seed)
        ratios.append(res.intervals["se"].iloc[0] / se_asymptotic)
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.10)


def test_bfi_five_factor_intervals_keep_every_factor_in_place():
    """psych bfi (2,800 x 25), ``fa(bfi[1:25], 5)`` with 20 bootstrap resamples: every salient
    loading of the published solution keeps its sign across replicates, which fails if
    replicates' factors were left in their own order."""
    path = DATA / "psych_bfi.csv"
    if not path.is_file():
        pytest.skip(f"reference data {path} not found (shared/data/factor_analysis)")
    bfi = pd.read_csv(path)
    items = [f"{t}{i}" for t in "ACENO" for i in range(1, 6)]
    res = efa(bfi, n_factors=5, columns=items, n_boot=20, random_state=1)
    ci = res.intervals
    assert ci["n_failed"].eq(0).all() and len(ci) == 25 * 5 + 25 + 10
    loads = ci[ci["parameter"] == "loading"]
    salient = loads[loads["estimate"].abs() > 0.3]
    assert len(salient) == 27  # the 27 loadings psych prints with cutoff = 0.3
    assert (np.sign(salient["ci_low"]) == np.sign(salient["ci_high"])).all()
    assert ((salient["ci_low"] <= salient["estimate"])
            & (salient["estimate"] <= salient["ci_high"])).all()
    # at n = 2,800 a loading's SE is a few hundredths; one replicate whose factors were
    # swapped or reflected would put a salient loading's SE near 0.2 or more
    assert loads["se"].max() < 0.06


@pytest.mark.slow
def test_percentile_intervals_cover_the_population_loadings():
    """Coverage of 95% percentile intervals (B = 200) over simulated normal data sets.

    One factor, four items (loadings 0.8, 0.7, 0.6, 0.5), n = 200, 150 data sets: 600
    intervals; the Monte Carlo SE of a coverage near 0.95 is sqrt(.95 .05 / 600) = 0.009 if
    the four intervals of a data set were independent and at most sqrt(.95 .05 / 150) =
    0.018 if they always moved together. Two oblique factors (oblimin, six items,
    phi = 0.3), n = 300, 60 data sets: 720 loading intervals, SE between 0.008 and 0.028,
    and 60 intervals of phi (SE 0.028). The two-factor target is the generating pattern:
    for a perfect cluster structure the quartimin criterion (oblimin, gamma = 0) is 0, its
    minimum, at the true pattern and phi, so they are the population oblimin solution; each
    sample's factors are matched to it. Percentile intervals at these sizes run a little
    below nominal, so the test accepts 0.90 to 0.98 for loadings (0.85 to 1 for phi).
    Heywood replicates are part of the estimator's distribution; their notices are allowed.
    """
    lam = np.array([0.8, 0.7, 0.6, 0.5])
    cov = np.outer(lam, lam)
    np.fill_diagonal(cov, 1.0)
    rng = np.random.default_rng(2024)
    one, two = [], []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "efa: .* bootstrap replicates warned", HceWarning)
        for s in range(150):
            x = rng.multivariate_normal(np.zeros(4), cov, size=200)
            ci = efa(pd.DataFrame(x), n_factors=1, n_boot=200, random_state=s).intervals
            ci = ci[ci["parameter"] == "loading"]
            one.append((ci["ci_low"].to_numpy() <= lam) & (lam <= ci["ci_high"].to_numpy()))
        phi_hits = []
        for s in range(60):
            data, _ = _two_factor_data(n=300, seed=1000 + s)
            res = efa(data, n_factors=2, n_boot=200, random_state=s)
            ci = res.intervals[res.intervals["parameter"] == "loading"]
            low = ci["ci_low"].to_numpy().reshape(6, 2)
            high = ci["ci_high"].to_numpy().reshape(6, 2)
            # the sample's factors in the population's order and sign (a reflected
            # interval [lo, hi] is [-hi, -lo])
            order, signs = match_factors(res.loadings.to_numpy(), PATTERN)
            low, high = low[:, order], high[:, order]
            low, high = np.where(signs > 0, low, -high), np.where(signs > 0, high, -low)
            two.append((low <= PATTERN) & (PATTERN <= high))
            phi = res.intervals[res.intervals["parameter"] == "factor_correlation"].iloc[0]
            bounds = sorted([signs.prod() * phi["ci_low"], signs.prod() * phi["ci_high"]])
            phi_hits.append(bounds[0] <= 0.3 <= bounds[1])
    assert 0.90 <= np.mean(one) <= 0.98, np.mean(one)
    assert 0.90 <= np.mean(two) <= 0.98, np.mean(two)
    assert 0.85 <= np.mean(phi_hits) <= 1.0, np.mean(phi_hits)
