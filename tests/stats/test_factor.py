"""Factor analysis against published R output (psych, factanal, lavaan) and independent code.

Reference outputs, each printed by R and published (values typed from the printout):

* psych ``fa(bfi[1:25], nfactors=5)`` and ``nfactors=6`` (minres, oblimin, pairwise
  correlations, n.obs = 2800): Justin Sulik, "Factor Analyses" (R Markdown notes, knitted
  2017-09-22), including ``print(fit1$loadings, cutoff=0.3)`` with 3 decimals.
* psych ``fa(bfi[, 1:25], nfactors=6, rotate="promax", fm="ml")``: ``summary()`` and ``$Phi``
  pasted as comments in a published R script (fit indices and factor correlations).
* psych ``KMO(bfi[, 1:25])``: overall MSA 0.85 and per-item MSA to 2 decimals, as printed in
  several published tutorials (e.g. "Run KMO and Bartlett's test", bfi_items <- bfi[, 1:25]).
* R ``factanal(~x1+...+x9, factors=3, data=HolzingerSwineford1939)`` (ML, varimax):
  uniquenesses and loadings to 3 decimals, chi-square 22.38 on 12 df, p = 0.0335, from a
  published knitted R notebook. psych's own test suite checks ``fa(fm="mle")`` against
  ``factanal`` to 1e-5 (cran/psych tests/testthat/test_fa.r).
* lavaan ``cfa(HS.model, data=HolzingerSwineford1939)``, ``summary(fit, fit.measures=TRUE,
  standardized=TRUE)``: the lavaan tutorial output (Rosseel 2012, J Stat Softw 48(2);
  lavaan.ugent.be/tutorial/cfa.html), reprinted verbatim in many course notes.
* Kirk (1973) tetrachoric values 0.4, 0.5, 0.8 for 2x2 tables with 0.5 marginals, as used in
  cran/psych tests/testthat/test_tetrachoric.r.
* Jensen & Weng (1994) hierarchical model: Schmid-Leiman loadings, as in cran/psych
  tests/testthat/test_omega.r.

Printed values are rounded, so a value printed with d decimals is compared with tolerance
0.5 * 10^-d plus 1e-6; 3-decimal values therefore agree within 1e-3.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from factor_analyzer.factor_analyzer import calculate_bartlett_sphericity, calculate_kmo
from scipy import stats
from seeds import fast_and_other_seeds

from hce.errors import DataError
from hce.stats import factor as F
from hce.stats.factor.correlation import _bvn_cdf, _polychoric_from_table
from hce.stats.factor.exploratory import rmsea_interval

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "factor_analysis"
BFI_ITEMS = [f"{t}{i}" for t in "ACENO" for i in range(1, 6)]
HS_ITEMS = [f"x{i}" for i in range(1, 10)]


def _read(name: str) -> pd.DataFrame:
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"reference data {path} not found (shared/data/factor_analysis)")
    return pd.read_csv(path)


def bfi_data() -> pd.DataFrame:
    return _read("psych_bfi.csv")


@pytest.fixture(scope="module")
def bfi() -> pd.DataFrame:
    return bfi_data()


@pytest.fixture(scope="module")
def hs() -> pd.DataFrame:
    return _read("HolzingerSwineford1939.csv")


def _printed(value: float, digits: int) -> float:
    return 0.5 * 10.0**-digits + 1e-6


# ----------------------------------------------------------------------------- psych::fa on bfi

# print(fit1$loadings, cutoff=0.3): loadings with |l| >= 0.3, 3 decimals (item, factor, value)
BFI5_LOADINGS_3DP = {
    ("A1", "MR5"): -0.414, ("A2", "MR5"): 0.640, ("A3", "MR5"): 0.660, ("A4", "MR5"): 0.433,
    ("A5", "MR5"): 0.532, ("C1", "MR3"): 0.546, ("C2", "MR3"): 0.666, ("C3", "MR3"): 0.567,
    ("C4", "MR3"): -0.614, ("C5", "MR3"): -0.553, ("E1", "MR1"): -0.557, ("E2", "MR1"): -0.676,
    ("E3", "MR1"): 0.418, ("E4", "MR1"): 0.591, ("E5", "MR1"): 0.421, ("N1", "MR2"): 0.815,
    ("N2", "MR2"): 0.777, ("N3", "MR2"): 0.706, ("N4", "MR2"): 0.474, ("N4", "MR1"): -0.386,
    ("N5", "MR2"): 0.486, ("O1", "MR4"): 0.508, ("O2", "MR4"): -0.456, ("O3", "MR4"): 0.609,
    ("O4", "MR1"): -0.323, ("O4", "MR4"): 0.371, ("O5", "MR4"): -0.542,
}
# print(fit1): the full pattern matrix, 2 decimals, columns MR2 MR1 MR3 MR5 MR4, then h2
BFI5_PATTERN_2DP = """
A1 0.21 0.17 0.07 -0.41 -0.06 0.19
A2 -0.02 0.00 0.08 0.64 0.03 0.45
A3 -0.03 0.12 0.02 0.66 0.03 0.52
A4 -0.06 0.06 0.19 0.43 -0.15 0.28
A5 -0.11 0.23 0.01 0.53 0.04 0.46
C1 0.07 -0.03 0.55 -0.02 0.15 0.33
C2 0.15 -0.09 0.67 0.08 0.04 0.45
C3 0.03 -0.06 0.57 0.09 -0.07 0.32
C4 0.17 0.00 -0.61 0.04 -0.05 0.45
C5 0.19 -0.14 -0.55 0.02 0.09 0.43
E1 -0.06 -0.56 0.11 -0.08 -0.10 0.35
E2 0.10 -0.68 -0.02 -0.05 -0.06 0.54
E3 0.08 0.42 0.00 0.25 0.28 0.44
E4 0.01 0.59 0.02 0.29 -0.08 0.53
E5 0.15 0.42 0.27 0.05 0.21 0.40
N1 0.81 0.10 0.00 -0.11 -0.05 0.65
N2 0.78 0.04 0.01 -0.09 0.01 0.60
N3 0.71 -0.10 -0.04 0.08 0.02 0.55
N4 0.47 -0.39 -0.14 0.09 0.08 0.49
N5 0.49 -0.20 0.00 0.21 -0.15 0.35
O1 0.02 0.10 0.07 0.02 0.51 0.31
O2 0.19 0.06 -0.08 0.16 -0.46 0.26
O3 0.03 0.15 0.02 0.08 0.61 0.46
O4 0.13 -0.32 -0.02 0.17 0.37 0.25
O5 0.13 0.10 -0.03 0.04 -0.54 0.30
"""


@pytest.fixture(scope="module")
def bfi5(bfi):
    return F.efa(bfi, n_factors=5, columns=BFI_ITEMS)


def test_bfi_five_factor_loadings_match_psych_to_three_decimals(bfi5):
    assert list(bfi5.loadings.columns) == ["MR2", "MR1", "MR3", "MR5", "MR4"]
    for (item, factor), value in BFI5_LOADINGS_3DP.items():
        assert bfi5.loadings.loc[item, factor] == pytest.approx(value, abs=_printed(value, 3))


def test_bfi_five_factor_pattern_and_communalities_match_psych(bfi5):
    rows = [line.split() for line in BFI5_PATTERN_2DP.strip().splitlines()]
    expected = pd.DataFrame([[float(v) for v in r[1:]] for r in rows], index=[r[0] for r in rows])
    np.testing.assert_allclose(bfi5.loadings.to_numpy(), expected.iloc[:, :5].to_numpy(),
                               atol=_printed(0, 2))
    np.testing.assert_allclose(bfi5.communalities["communality"], expected.iloc[:, 5],
                               atol=_printed(0, 2))


def test_bfi_five_factor_variance_and_factor_correlations_match_psych(bfi5):
    # print(fit1$loadings): colSums of squared pattern loadings, 3 decimals
    np.testing.assert_allclose((bfi5.loadings**2).sum(), [2.499, 1.964, 1.913, 1.805, 1.511],
                               atol=_printed(0, 3))
    # print(fit1): oblique SS loadings diag(Phi L'L) and proportions, 2 decimals
    v = bfi5.variance
    np.testing.assert_allclose(v["ss_loadings"], [2.57, 2.20, 2.03, 1.99, 1.59], atol=0.005)
    np.testing.assert_allclose(v["cumulative_var"], [0.10, 0.19, 0.27, 0.35, 0.41], atol=0.005)
    np.testing.assert_allclose(v["proportion_explained"], [0.25, 0.21, 0.20, 0.19, 0.15],
                               atol=0.005)
    phi = [[1.00, -0.21, -0.19, -0.04, -0.01], [-0.21, 1.00, 0.23, 0.33, 0.17],
           [-0.19, 0.23, 1.00, 0.20, 0.19], [-0.04, 0.33, 0.20, 1.00, 0.19],
           [-0.01, 0.17, 0.19, 0.19, 1.00]]
    np.testing.assert_allclose(bfi5.phi.to_numpy(), phi, atol=0.005)


@pytest.mark.parametrize(
    ("n_factors", "expected"),
    [
        # fa(bfi[, 1:25], nfactors = 4): same knitted notebook as the alpha reference in
        # test_instrument.py (fit statistics do not depend on which items were reversed)
        (4, {"likelihood_chi_square": (3421.61, 2), "empirical_chi_square": (3555.08, 2),
             "objective": (1.23, 2), "rmsr": (0.05, 2), "rmsr_df_corrected": (0.06, 2),
             "tli": (0.764, 3), "rmsea": (0.075, 3), "bic": (1786.51, 2),
             "fit_off_diagonal": (0.95, 2)}),
        (5, {"likelihood_chi_square": (1808.94, 2), "empirical_chi_square": (1392.16, 2),
             "null_chi_square": (20163.79, 2), "objective": (0.65, 2),
             "null_objective": (7.23, 2), "rmsr": (0.03, 2), "rmsr_df_corrected": (0.04, 2),
             "tli": (0.867, 3), "rmsea": (0.056, 3), "bic": (340.53, 2),
             "fit_off_diagonal": (0.98, 2)}),
        (6, {"likelihood_chi_square": (1032.48, 2), "empirical_chi_square": (639.91, 2),
             "objective": (0.37, 2), "rmsr": (0.02, 2), "rmsr_df_corrected": (0.03, 2),
             "tli": (0.92, 2), "rmsea": (0.043, 3), "bic": (-277.19, 2),
             "fit_off_diagonal": (0.99, 2)}),
    ],
)
def test_bfi_fit_indices_match_psych(bfi, bfi5, n_factors, expected):
    res = bfi5 if n_factors == 5 else F.efa(bfi, n_factors=n_factors, columns=BFI_ITEMS)
    if n_factors == 4:  # the notebook printed no p-values or interval for this model
        assert res.fit.set_index("index").loc["rmsea", "ci_low"] == pytest.approx(0.072,
                                                                                 abs=5e-4)
        return
    for index, (value, digits) in expected.items():
        assert res.fit_value(index) == pytest.approx(value, abs=_printed(value, digits)), index
    fit = res.fit.set_index("index")
    df = {5: 185, 6: 165}[n_factors]
    assert fit.loc["likelihood_chi_square", "df1"] == df
    assert fit.loc["null_chi_square", "df1"] == 300
    # "The harmonic number of observations is 2762"
    assert fit.loc["empirical_chi_square", "n"] == pytest.approx(2762, abs=0.5)
    # "with prob < 4.3e-264" / "1.8e-125" and empirical "5.6e-184" / "4.1e-57"
    p_lik = {5: 4.3e-264, 6: 1.8e-125}[n_factors]
    p_emp = {5: 5.6e-184, 6: 4.1e-57}[n_factors]
    assert fit.loc["likelihood_chi_square", "p_value"] == pytest.approx(p_lik, rel=0.012)
    assert fit.loc["empirical_chi_square", "p_value"] == pytest.approx(p_emp, rel=0.012)
    # "RMSEA index = 0.056 and the 90 % confidence intervals are 0.054 0.058" (0.041 0.046)
    low, high = {5: (0.054, 0.058), 6: (0.041, 0.046)}[n_factors]
    assert fit.loc["rmsea", "ci_low"] == pytest.approx(low, abs=_printed(low, 3))
    assert fit.loc["rmsea", "ci_high"] == pytest.approx(high, abs=_printed(high, 3))
    assert fit.loc["rmsea", "confidence"] == 0.90


def test_summary_reads_like_psych(bfi5):
    text = bfi5.summary()
    assert "Likelihood Chi Square = 1808.94" in text
    assert "RMSEA index = 0.056 and the 90 % confidence intervals are 0.054 0.058" in text
    assert "BIC = 340.53" in text
    assert "Tucker Lewis Index of factoring reliability = 0.867" in text
    tidy = bfi5.tidy()
    assert list(tidy.columns) == ["item", "factor", "loading", "ci_low", "ci_high",
                                  "communality", "uniqueness"]
    assert tidy[["ci_low", "ci_high"]].isna().all().all()  # no bootstrap asked
    assert len(tidy) == 25 * 5


def test_bfi_ml_promax_matches_psych():
    """psych::fa(bfi[, 1:25], nfactors = 6, rotate = "promax", fm = "ml"): summary() and
    Phi as pasted in a published R script (psych output, 2-3 decimals)."""
    res = F.efa(bfi_data(), n_factors=6, columns=BFI_ITEMS, method="ml", rotation="promax")
    expected = {"likelihood_chi_square": (1013.79, 2), "objective": (0.36, 2),
                "rmsr": (0.02, 2), "rmsr_df_corrected": (0.03, 2), "tli": (0.922, 3),
                "rmsea": (0.043, 3), "bic": (-295.88, 2)}
    for index, (value, digits) in expected.items():
        assert res.fit_value(index) == pytest.approx(value, abs=_printed(value, digits)), index
    fit = res.fit.set_index("index")
    assert fit.loc["likelihood_chi_square", "p_value"] == pytest.approx(4.6e-122, rel=0.012)
    # "RMSEA index = 0.043 and the 10 % confidence intervals are 0.04 0.045"
    assert fit.loc["rmsea", "ci_low"] == pytest.approx(0.04, abs=_printed(0, 2))
    assert fit.loc["rmsea", "ci_high"] == pytest.approx(0.045, abs=_printed(0, 3))
    phi = [[1.00, -0.36, 0.41, 0.33, -0.11, 0.09], [-0.36, 1.00, -0.21, -0.18, 0.11, 0.26],
           [0.41, -0.21, 1.00, 0.31, -0.15, 0.20], [0.33, -0.18, 0.31, 1.00, 0.03, 0.28],
           [-0.11, 0.11, -0.15, 0.03, 1.00, 0.09], [0.09, 0.26, 0.20, 0.28, 0.09, 1.00]]
    assert list(res.phi.columns) == ["ML1", "ML2", "ML3", "ML5", "ML4", "ML6"]
    np.testing.assert_allclose(res.phi.to_numpy(), phi, atol=_printed(0, 2))


# ----------------------------------------------------------------------------- ML = factanal


def test_ml_varimax_matches_factanal_on_holzinger_swineford(hs):
    res = F.efa(hs, n_factors=3, columns=HS_ITEMS, method="ml", rotation="varimax")
    uniq = [0.513, 0.749, 0.543, 0.279, 0.243, 0.305, 0.502, 0.469, 0.543]
    np.testing.assert_allclose(res.communalities["uniqueness"], uniq, atol=_printed(0, 3))
    # factanal's Factor1..3 are psych's ML1, ML3, ML2 (both order by sums of squares);
    # factanal hides |loading| < 0.1, so only the printed cells are compared
    printed = {"x1": [0.277, 0.623, 0.151], "x2": [0.105, 0.489, None],
               "x3": [None, 0.663, 0.130], "x4": [0.827, 0.165, None],
               "x5": [0.861, None, None], "x6": [0.801, 0.212, None],
               "x7": [None, None, 0.696], "x8": [None, 0.162, 0.709],
               "x9": [0.132, 0.406, 0.524]}
    for item, values in printed.items():
        for factor, value in zip(["ML1", "ML3", "ML2"], values):
            got = res.loadings.loc[item, factor]
            if value is None:
                assert abs(got) < 0.1
            else:
                assert got == pytest.approx(value, abs=_printed(value, 3)), (item, factor)
    np.testing.assert_allclose(res.variance["ss_loadings"], [2.185, 1.343, 1.327],
                               atol=_printed(0, 3))
    # "The chi square statistic is 22.38 on 12 degrees of freedom. The p-value is 0.0335"
    fit = res.fit.set_index("index")
    assert fit.loc["likelihood_chi_square", "estimate"] == pytest.approx(22.38, abs=0.005)
    assert fit.loc["likelihood_chi_square", "df1"] == 12
    assert fit.loc["likelihood_chi_square", "p_value"] == pytest.approx(0.0335, abs=5e-5)


def test_minres_matches_an_independent_scipy_minres(hs):
    """Harman's minres written directly (off-diagonal least squares over uniquenesses)."""
    r = hs[HS_ITEMS].corr().to_numpy()

    def off_diagonal_loss(psi):
        reduced = r - np.diag(psi)
        values, vectors = np.linalg.eigh(reduced)
        lam = vectors[:, -3:] * np.sqrt(np.clip(values[-3:], 0, None))
        resid = r - lam @ lam.T
        return np.sum(np.tril(resid, -1) ** 2)

    psi0 = 1 - (1 - 1 / np.diag(np.linalg.inv(r)))
    psi = __import__("scipy").optimize.minimize(
        off_diagonal_loss, psi0, method="L-BFGS-B", bounds=[(0.005, 1)] * 9,
        options={"ftol": 1e-15, "gtol": 1e-12}).x
    res = F.efa(hs, n_factors=3, columns=HS_ITEMS, rotation="none")
    np.testing.assert_allclose(res.communalities["uniqueness"], psi, atol=2e-4)


@pytest.mark.parametrize("rotation", ["varimax", "promax", "oblimin"])
def test_rotations_keep_communalities_and_reproduce_the_correlations(hs, rotation):
    none = F.efa(hs, n_factors=3, columns=HS_ITEMS, rotation="none")
    rot = F.efa(hs, n_factors=3, columns=HS_ITEMS, rotation=rotation)
    lam = rot.loadings.to_numpy()
    phi = np.eye(3) if rot.phi is None else rot.phi.to_numpy()
    np.testing.assert_allclose(np.diag(lam @ phi @ lam.T), none.communalities["communality"],
                               atol=1e-8)
    assert (rot.phi is None) == (rotation == "varimax")
    # rotation leaves the fit unchanged
    assert rot.fit_value("likelihood_chi_square") == pytest.approx(
        none.fit_value("likelihood_chi_square"), rel=1e-8)


# ----------------------------------------------------------------------------- KMO, Bartlett


def test_kmo_matches_published_psych_kmo_on_bfi(bfi):
    published = [0.74, 0.84, 0.87, 0.87, 0.90, 0.83, 0.79, 0.85, 0.82, 0.86, 0.83, 0.88, 0.89,
                 0.87, 0.89, 0.78, 0.78, 0.86, 0.88, 0.86, 0.85, 0.78, 0.84, 0.76, 0.76, 0.85]
    res = F.kmo(bfi, columns=BFI_ITEMS)
    assert list(res["item"]) == [*BFI_ITEMS, "overall"]
    np.testing.assert_allclose(res["msa"], published, atol=_printed(0, 2))


def test_bartlett_matches_psych_null_model_on_bfi(bfi):
    # psych prints the Bartlett statistic as the null model: "Chi Square of 20163.79", df 300
    res = F.bartlett_sphericity(bfi, columns=BFI_ITEMS)
    assert res.loc[0, "statistic"] == pytest.approx(20163.79, abs=0.005 + 1e-6)
    assert res.loc[0, "df1"] == 300
    assert res.loc[0, "n"] == 2800


def test_kmo_and_bartlett_match_factor_analyzer_on_complete_data(bfi, hs):
    for data, items in [(hs, HS_ITEMS), (bfi[BFI_ITEMS].dropna(), BFI_ITEMS)]:
        per_item, overall = calculate_kmo(data[items])
        res = F.kmo(data, columns=items)
        np.testing.assert_allclose(res["msa"], [*per_item, overall], rtol=1e-10)
        chi, p = calculate_bartlett_sphericity(data[items])
        bart = F.bartlett_sphericity(data, columns=items)
        assert bart.loc[0, "statistic"] == pytest.approx(chi, rel=1e-10)
        assert bart.loc[0, "p_value"] == pytest.approx(p, abs=1e-12)


# ----------------------------------------------------------------------------- retention


def test_eigenvalues_are_those_of_the_correlation_matrix(hs):
    res = F.eigenvalues(hs, columns=HS_ITEMS)
    expected = np.sort(np.linalg.eigvalsh(hs[HS_ITEMS].corr().to_numpy()))[::-1]
    np.testing.assert_allclose(res["eigenvalue"], expected, rtol=1e-12)
    assert res["cumulative"].iloc[-1] == pytest.approx(1.0)
    assert res["kaiser"].sum() == 3


@pytest.mark.parametrize("seed", fast_and_other_seeds(7))
def test_parallel_analysis_finds_the_simulated_structure_and_is_reproducible(seed):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(400, 3))
    d = pd.DataFrame({f"i{j}": f[:, j // 3] + rng.normal(size=400) for j in range(9)})
    a = F.parallel_analysis(d, random_state=seed, n_sim=6)
    b = F.parallel_analysis(d, random_state=seed, n_sim=6)
    pd.testing.assert_frame_equal(a.table, b.table)
    # margin, seeds 0-20: observed factor eigenvalues 3 and 4 are 0.84-1.01 and -0.08-0.02
    # against simulated 0.10-0.13 and 0.06-0.08 (components: 1.74-1.94 and 0.55-0.69
    # against 1.07-1.11 and 1.02-1.06), so 3 factors and 3 components at every seed
    assert (a.n_factors, a.n_components) == (3, 3)
    assert F.parallel_analysis(d, random_state=seed, quantile=0.95, n_sim=4).n_factors == 3


# ----------------------------------------------------------------------------- CFA vs lavaan


def test_cfa_reproduces_the_lavaan_holzinger_swineford_tutorial(hs):
    res = F.cfa(hs, model={"visual": ["x1", "x2", "x3"], "textual": ["x4", "x5", "x6"],
                     "speed": ["x7", "x8", "x9"]})
    fit = res.fit.set_index("index")
    expected = {"chi_square": 85.306, "baseline_chi_square": 918.852, "cfi": 0.931,
                "tli": 0.896, "rmsea": 0.092, "srmr": 0.065, "loglik": -3737.745,
                "aic": 7517.490, "bic": 7595.339}
    for index, value in expected.items():
        assert fit.loc[index, "estimate"] == pytest.approx(value, abs=_printed(value, 3)), index
    assert fit.loc["chi_square", "df1"] == 24
    assert fit.loc["baseline_chi_square", "df1"] == 36
    assert fit.loc["rmsea", "ci_low"] == pytest.approx(0.071, abs=_printed(0, 3))
    assert fit.loc["rmsea", "ci_high"] == pytest.approx(0.114, abs=_printed(0, 3))
    est = res.estimates.set_index("item")
    np.testing.assert_allclose(
        est["estimate"], [1, 0.554, 0.729, 1, 1.113, 0.926, 1, 1.180, 1.082], atol=_printed(0, 3))
    np.testing.assert_allclose(
        est["std_lv"], [0.900, 0.498, 0.656, 0.990, 1.102, 0.917, 0.619, 0.731, 0.670],
        atol=_printed(0, 3))
    np.testing.assert_allclose(
        est["std_all"], [0.772, 0.424, 0.581, 0.852, 0.855, 0.838, 0.570, 0.723, 0.665],
        atol=_printed(0, 3))
    phi = res.factor_correlations
    assert phi.loc["visual", "textual"] == pytest.approx(0.459, abs=_printed(0, 3))
    assert phi.loc["visual", "speed"] == pytest.approx(0.471, abs=_printed(0, 3))
    # lavaan: .x1 0.549, .x2 1.134 (residual variances)
    np.testing.assert_allclose(res.residual_variances["estimate"][:2], [0.549, 1.134],
                               atol=_printed(0, 3))


def test_cfa_drops_incomplete_rows_with_a_warning(hs):
    d = hs.copy()
    d.loc[0, "x1"] = np.nan
    with pytest.warns(UserWarning, match="1 rows with missing items dropped"):
        res = F.cfa(d, model={"a": ["x1", "x2", "x3"], "b": ["x4", "x5", "x6"]})
    assert res.n_obs == 300


# ----------------------------------------------------------------------------- polychoric


@pytest.mark.parametrize(("joint", "rho"), [(0.2275, 0.0), (0.3154950, 0.4),
                                            (0.3333333, 0.5), (0.39758450, 0.8)])
def test_tetrachoric_special_case_matches_kirk_1973(joint, rho):
    table = np.array([[joint, 0.5 - joint], [0.5 - joint, joint]]) * 10_000
    got = _polychoric_from_table(table, np.array([0.0]), np.array([0.0]), 0.5)
    # (0.2275 is psych's case with unequal marginals: d1 = .5, d2 = .2275 -> joint .11375)
    if joint == 0.2275:
        table = np.array([[0.11375, 0.5 - 0.11375], [0.2275 - 0.11375, 0.5 - 0.2275 + 0.11375]])
        got = _polychoric_from_table(table * 10_000, np.array([0.0]),
                                     np.array([stats.norm.ppf(0.2275)]), 0.5)
    assert got == pytest.approx(rho, abs=1e-5)


def test_bivariate_normal_cdf_matches_scipy():
    rng = np.random.default_rng(0)
    h, k = rng.normal(size=40), rng.normal(size=40)
    h[:4], k[2:6] = 0.0, 0.0
    for rho in (-0.9, -0.2, 0.0, 0.5, 0.97):
        mvn = stats.multivariate_normal(cov=[[1, rho], [rho, 1]])
        np.testing.assert_allclose(_bvn_cdf(h, k, rho), [mvn.cdf([a, b]) for a, b in zip(h, k)],
                                   atol=1e-9)


def test_polychoric_recovers_the_latent_correlation_and_matches_brute_force():
    rng = np.random.default_rng(11)
    z = rng.multivariate_normal([0, 0, 0], [[1, .6, .3], [.6, 1, .5], [.3, .5, 1]], size=3000)
    cuts = [-1.0, -0.2, 0.5, 1.3]
    d = pd.DataFrame(np.digitize(z, cuts) + 1, columns=["a", "b", "c"])
    r = F.polychoric(d)
    np.testing.assert_allclose(r.to_numpy()[np.triu_indices(3, 1)], [.6, .3, .5], atol=0.04)
    # brute force: same two-step likelihood with scipy's multivariate normal CDF
    tab = pd.crosstab(d["a"], d["b"]).to_numpy().astype(float)
    ta = stats.norm.ppf(np.cumsum(np.bincount(d["a"])[1:])[:-1] / len(d))
    tb = stats.norm.ppf(np.cumsum(np.bincount(d["b"])[1:])[:-1] / len(d))

    def loglik(rho):
        mvn = stats.multivariate_normal(cov=[[1, rho], [rho, 1]])
        ex, ey = np.r_[-9, ta, 9], np.r_[-9, tb, 9]
        cdf = np.array([[mvn.cdf([x, y]) for y in ey] for x in ex])
        cells = np.diff(np.diff(cdf, axis=0), axis=1)
        return -np.sum(tab * np.log(cells))

    best = __import__("scipy").optimize.minimize_scalar(loglik, bounds=(0.3, 0.9),
                                                        method="bounded",
                                                        options={"xatol": 1e-7}).x
    assert r.loc["a", "b"] == pytest.approx(best, abs=1e-5)


def test_efa_on_polychoric_correlations_runs_and_names_them(bfi):
    res = F.efa(bfi.head(600), n_factors=2, columns=["N1", "N2", "N3", "E1", "E2", "E3"], cor="polychoric")
    assert res.cor == "polychoric"
    assert np.all(np.abs(res.loadings.to_numpy()) <= 1)


# ----------------------------------------------------------------------------- omega, alpha


def _jensen_weng() -> tuple[pd.DataFrame, np.ndarray]:
    """Population data of psych sim.hierarchical(): g -> 3 group factors -> 9 items."""
    gload = np.array([0.9, 0.8, 0.7])
    fload = np.array([0.8, 0.7, 0.6, 0.7, 0.6, 0.5, 0.6, 0.5, 0.4])
    lam = np.zeros((9, 3))
    lam[np.arange(9), np.arange(9) // 3] = fload
    phi = np.outer(gload, gload)
    np.fill_diagonal(phi, 1)
    r = lam @ phi @ lam.T
    np.fill_diagonal(r, 1)
    # exact-moment sample: n rows whose correlation matrix is r
    rng = np.random.default_rng(0)
    z = rng.standard_normal((2000, 9))
    z = (z - z.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(z, rowvar=False))).T
    x = z @ np.linalg.cholesky(r).T
    return pd.DataFrame(x, columns=[f"V{i + 1}" for i in range(9)]), r


def test_omega_reproduces_jensen_weng_schmid_leiman_loadings():
    data, r = _jensen_weng()
    res = F.omega_hierarchical(data)
    jensen = pd.DataFrame({
        "g": [.72, .63, .54, .56, .48, .40, .42, .35, .28],
        "F1": [.3487, .3051, .2615, 0, 0, 0, 0, 0, 0],
        "F2": [0, 0, 0, .42, .36, .30, 0, 0, 0],
        "F3": [0, 0, 0, 0, 0, 0, .428, .3570, .2856],
        "h2": [.64, .49, .36, .49, .36, .25, .36, .25, .16]})
    got = res.loadings[["g", "F1", "F2", "F3", "h2"]].to_numpy()
    # psych's test: sum of absolute differences below 0.001 (group factor order may differ)
    got = got[:, [0, *(1 + np.argsort(np.argmax(np.abs(got[:, 1:4]), axis=0))), 4]]
    assert np.sum(np.abs(got - jensen.to_numpy())) < 0.002
    g = jensen["g"].to_numpy()
    est = res.estimates.set_index("metric")["estimate"]
    assert est["omega_hierarchical"] == pytest.approx(g.sum() ** 2 / r.sum(), abs=1e-4)
    assert est["omega_total"] == pytest.approx(1 - np.sum(1 - jensen["h2"]) / r.sum(), abs=1e-4)
    k = 9
    assert est["alpha_standardized"] == pytest.approx(k / (k - 1) * (1 - k / r.sum()), rel=1e-9)


def test_ordinal_alpha_is_standardized_alpha_of_the_polychoric_matrix():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(800, 1)) + rng.normal(size=(800, 4))
    d = pd.DataFrame(np.digitize(z, [-1, 0, 1]) + 1, columns=list("abcd"))
    r = F.polychoric(d).to_numpy()
    expected = 4 / 3 * (1 - 4 / r.sum())
    assert F.ordinal_alpha(d)["estimate"].iloc[0] == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------- errors


def test_bad_inputs_raise_data_errors_naming_the_problem(hs):
    with pytest.raises(DataError, match="rotation='quartimax' is not valid"):
        F.efa(hs, n_factors=2, columns=HS_ITEMS, rotation="quartimax")
    with pytest.raises(DataError, match="n_factors=9 must be an integer from 1 to 8"):
        F.efa(hs, n_factors=9, columns=HS_ITEMS)
    with pytest.raises(DataError, match="no column"):
        F.kmo(hs, columns=["x1", "x2", "nope"])
    with pytest.raises(DataError, match="item 'c' is constant"):
        F.kmo(pd.DataFrame({"a": [1, 2, 3, 4], "b": [2, 1, 4, 3], "c": [1, 1, 1, 1]}))
    with pytest.raises(DataError, match="at least 3 items"):
        F.efa(hs, n_factors=1, columns=["x1", "x2"])


def _stats_varimax(x, eps=1e-5):
    """R stats::varimax (normalize = TRUE), written out for an independent check."""
    sc = np.sqrt((x**2).sum(1))
    x = x / sc[:, None]
    p, nc = x.shape
    tt = np.eye(nc)
    d = 0.0
    for _ in range(1000):
        z = x @ tt
        b = x.T @ (z**3 - z @ np.diag((z**2).sum(0)) / p)
        u, s, vt = np.linalg.svd(b)
        tt = u @ vt
        dpast, d = d, s.sum()
        if d < dpast * (1 + eps):
            break
    return (x @ tt) * sc[:, None]


def test_promax_matches_an_independent_port_of_psych_kaiser_promax(hs):
    """psych: rotate = "promax" is kaiser(L, rotate = "Promax"): Kaiser-normalise the rows,
    Promax(m = 4) (stats::varimax, then the power-4 target by least squares), denormalise."""
    unrotated = F.efa(hs, n_factors=3, columns=HS_ITEMS, rotation="none").loadings.to_numpy()
    h = np.sqrt((unrotated**2).sum(1))
    x = _stats_varimax(unrotated / h[:, None])
    q = x * np.abs(x) ** 3
    u = np.linalg.lstsq(x, q, rcond=None)[0]
    u = u @ np.diag(np.sqrt(np.diag(np.linalg.inv(u.T @ u))))
    expected = (x @ u) * h[:, None]
    got = F.efa(hs, n_factors=3, columns=HS_ITEMS, rotation="promax").loadings.to_numpy()
    # same solution up to the order and sign of the factors
    for col in expected.T:
        match = np.argmax(np.abs(got.T @ col))
        sign = np.sign(got[:, match] @ col)
        np.testing.assert_allclose(sign * got[:, match], col, atol=1e-6)


def test_rmsea_interval_and_bic_reproduce_the_pdsqi9_appendix_b_printout():
    """seeds/002 Appendix B prints psych::fa for n = 118, df = 2: "Likelihood Chi Square =
    2.6", "90 % confidence intervals are 0 0.198", "BIC = -6.94". From the printed (rounded)
    chi-square the same formulas give the same interval and BIC."""
    low, high = rmsea_interval(2.6, 2, 118, 0.90)
    assert low == 0.0
    assert np.sqrt(high / (118 - 1) / 2) == pytest.approx(0.198, abs=0.0005)
    assert 2.6 - 2 * np.log(118) == pytest.approx(-6.94, abs=0.005)


def test_unidentified_models_are_flagged(hs):
    assert [F.max_identified_factors(p) for p in (3, 4, 5, 8, 9)] == [1, 1, 2, 4, 5]
    with pytest.warns(UserWarning, match="negative degrees of freedom"):
        F.efa(hs, n_factors=2, columns=["x1", "x2", "x4", "x5"], rotation="none")


@pytest.mark.parametrize("module", ["adequacy", "confirmatory", "correlation", "exploratory"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"hce.stats.factor.{module}"),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_alpha_and_omega_live_in_reliability_and_old_paths_still_reach_them():
    import hce.stats.reliability as R
    from hce.stats.factor import OmegaResult, omega_hierarchical, ordinal_alpha

    assert omega_hierarchical is R.omega_hierarchical and ordinal_alpha is R.ordinal_alpha
    assert OmegaResult is R.OmegaResult and F.omega_hierarchical is R.omega_hierarchical
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        F.nope  # noqa: B018

