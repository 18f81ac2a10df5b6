"""Cronbach's alpha and Feldt CI against pingouin; McDonald's omega from a one-factor model."""

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from irr_tables import expected, long_from_wide, shared_csv

from hce.errors import DataError
from hce.stats import cronbach_alpha, mcdonald_omega
from hce.stats.reliability import one_factor

LOADINGS = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
UNIQUE = np.array([0.3, 0.4, 0.5, 0.6, 0.7])


def _exact_sample(cov: np.ndarray, n: int = 200, seed: int = 0) -> np.ndarray:
    """n rows whose sample covariance is exactly ``cov``."""
    z = np.random.default_rng(seed).normal(size=(n, len(cov)))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z, rowvar=False)).T)
    return z @ np.linalg.cholesky(cov).T


def test_cronbach_long_format_pingouin_reference():
    # pingouin tests/test_reliability.py (matches R psych::alpha): 0.592, CI95 [0.195, 0.840]
    long = shared_csv("pingouin_cronbach_alpha.csv")
    out = cronbach_alpha(long, item="Subj", rater="Items", score="Scores")
    assert round(out.estimate[0], 3) == float(expected("pingouin_cronbach_alpha.csv", "long"))
    np.testing.assert_array_equal(out[["ci_low", "ci_high"]].round(3).iloc[0], [0.195, 0.840])
    est, ci = pg.cronbach_alpha(long, items="Items", scores="Scores", subject="Subj")
    np.testing.assert_allclose(out.estimate[0], est, rtol=1e-12)


def test_cronbach_missing_values_pairwise_and_listwise():
    wide = shared_csv("pingouin_cronbach_wide_missing.csv")
    long = wide.rename_axis("subject").reset_index().melt("subject", var_name="item")
    pair = cronbach_alpha(long, item="subject", rater="item", score="value")
    listwise = cronbach_alpha(long, item="subject", rater="item", score="value", nan_policy="listwise")
    # pingouin tests: pairwise 0.73, listwise 0.80 (R psych::alpha use="pairwise"/"complete.obs")
    name = "pingouin_cronbach_wide_missing.csv"
    assert round(pair.estimate[0], 2) == float(expected(name, "pairwise"))
    assert round(listwise.estimate[0], 2) == float(expected(name, "listwise"))
    est, ci = pg.cronbach_alpha(wide)
    np.testing.assert_allclose(pair.estimate[0], est, rtol=1e-12)
    np.testing.assert_allclose(pair[["ci_low", "ci_high"]].round(3).iloc[0], ci)
    est, _ = pg.cronbach_alpha(wide, nan_policy="listwise")
    np.testing.assert_allclose(listwise.estimate[0], est, rtol=1e-12)
    # pingouin takes the Feldt df from the 12 rows before deletion; we use the 9 kept
    assert listwise.n_items[0] == 9 and listwise.df1[0] == 8


def test_cronbach_typed_data_matches_pingouin_feldt_interval():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(40, 1)) + rng.normal(size=(40, 6))
    out = cronbach_alpha(long_from_wide(y), item="target", rater="rater", score="rating", confidence=0.9)
    est, ci = pg.cronbach_alpha(pd.DataFrame(y), ci=0.9)
    np.testing.assert_allclose(out.estimate[0], est, rtol=1e-12)
    np.testing.assert_allclose(out[["ci_low", "ci_high"]].round(3).iloc[0], ci)
    # Feldt: 1 - (1 - alpha) F quantiles on (n-1, (n-1)(k-1)) df
    assert (out.df1[0], out.df2[0]) == (39, 195)


def test_one_factor_recovers_an_exact_model():
    cov = np.outer(LOADINGS, LOADINGS) + np.diag(UNIQUE)
    loadings, psi = one_factor(cov)
    np.testing.assert_allclose(loadings, LOADINGS, rtol=1e-6)
    np.testing.assert_allclose(psi, UNIQUE, rtol=1e-6)


def test_omega_from_exact_one_factor_data():
    cov = np.outer(LOADINGS, LOADINGS) + np.diag(UNIQUE)
    long = long_from_wide(_exact_sample(cov))
    out = mcdonald_omega(long, item="target", rater="rater", score="rating", n_boot=0)
    # (sum lambda)^2 / ((sum lambda)^2 + sum psi) = 12.25 / (12.25 + 2.5)
    np.testing.assert_allclose(out.estimate[0], 12.25 / 14.75, rtol=1e-6)


def test_omega_equals_alpha_under_tau_equivalence():
    cov = np.full((4, 4), 0.5) + np.diag(np.full(4, 0.5))  # equal loadings sqrt(.5)
    long = long_from_wide(_exact_sample(cov))
    omega = mcdonald_omega(long, item="target", rater="rater", score="rating", n_boot=0).estimate[0]
    alpha = cronbach_alpha(long, item="target", rater="rater", score="rating").estimate[0]
    np.testing.assert_allclose(omega, alpha, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:'force_all_finite' was renamed:FutureWarning")
def test_one_factor_matches_factor_analyzer_on_holzinger_swineford():
    from factor_analyzer import FactorAnalyzer

    hs = shared_csv("HolzingerSwineford1939.csv", folder="factor_analysis")
    items = hs[[f"x{i}" for i in range(1, 10)]]
    fa = FactorAnalyzer(n_factors=1, rotation=None, method="ml").fit(items)
    loadings, psi = one_factor(items.corr().to_numpy())
    # both minimise the same ML discrepancy; factor_analyzer stops at ~1e-6
    np.testing.assert_allclose(loadings, np.abs(fa.loadings_[:, 0]), atol=2e-6)
    np.testing.assert_allclose(psi, fa.get_uniquenesses(), atol=2e-6)



def test_one_factor_omega_divides_by_the_model_variance_psych_by_the_observed():
    """The two omega totals of one ML factor on Holzinger-Swineford x1-x9 correlations.

    R 4, psych 2.2.9: ``omega(hs[, paste0("x", 1:9)], nfactors = 1, fm = "ml")$omega.tot``
    prints 0.769019 (1 - sum(u2) / sum(R), the observed variance of the standardised sum);
    ``mcdonald_omega(scale="correlation")`` divides the same loadings' (sum lambda)^2 by the
    model-implied variance (sum lambda)^2 + sum(psi) (McDonald 1999, eq. 6.20b) and gives
    0.7235. Both come from the loadings checked against factor_analyzer above; 5e-7 is the
    printed rounding.
    """
    hs = shared_csv("HolzingerSwineford1939.csv", folder="factor_analysis")
    items = hs[[f"x{i}" for i in range(1, 10)]]
    r = items.corr().to_numpy()
    loadings, psi = one_factor(r)
    assert 1 - psi.sum() / r.sum() == pytest.approx(0.769019, abs=5e-7)
    long = items.rename_axis("t").reset_index().melt("t", var_name="item")
    got = mcdonald_omega(long, item="t", rater="item", score="value", scale="correlation", n_boot=0).estimate[0]
    # rel 1e-9: mcdonald_omega standardises the covariance matrix, a different rounding path
    assert got == pytest.approx(loadings.sum() ** 2 / (loadings.sum() ** 2 + psi.sum()), rel=1e-9)
    assert got == pytest.approx(0.7235, abs=5e-5)

def test_omega_bootstrap_is_reproducible_and_brackets_estimate():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(60, 1)) * LOADINGS + rng.normal(size=(60, 5)) * np.sqrt(UNIQUE)
    long = long_from_wide(y)
    a = mcdonald_omega(long, item="target", rater="rater", score="rating", n_boot=200, random_state=3)
    b = mcdonald_omega(long, item="target", rater="rater", score="rating", n_boot=200, random_state=3)
    pd.testing.assert_frame_equal(a, b)
    assert a.ci_low[0] < a.estimate[0] < a.ci_high[0]


def test_errors():
    long = long_from_wide(np.arange(5.0).reshape(5, 1))
    with pytest.raises(DataError, match="at least 2 items"):
        cronbach_alpha(long, item="target", rater="rater", score="rating")
    long = long_from_wide(np.arange(12.0).reshape(4, 3))
    with pytest.raises(DataError, match=r"nan_policy='drop' is not valid"):
        cronbach_alpha(long, item="target", rater="rater", score="rating", nan_policy="drop")


def test_cronbach_alpha_refuses_the_swapped_roles():
    # Issue 36: item= is the respondent (a row of the item-by-respondent matrix), rater= the
    # scale item; read the other way round the call gave a plausible number. The right
    # reading matches pingouin.cronbach_alpha on the wide table; the swapped one is refused.
    rng = np.random.default_rng(7)
    trait = rng.normal(size=40)
    wide = pd.DataFrame({f"q{j}": trait + rng.normal(scale=0.8, size=40) for j in range(5)})
    long = wide.rename_axis("respondent").reset_index().melt(id_vars="respondent", var_name="question",
                                                             value_name="score")
    ours = cronbach_alpha(long, item="respondent", rater="question", score="score")["estimate"].iloc[0]
    assert ours == pytest.approx(pg.cronbach_alpha(wide)[0], rel=1e-9)
    with pytest.raises(DataError, match=r"rater='respondent' has 40 levels and item='question' 5.*swapped"):
        cronbach_alpha(long, item="question", rater="respondent", score="score")
