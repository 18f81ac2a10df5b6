"""Issue 42: a mixed-model fit that did not converge shows estimates and no inference unless
asked; ``max_iter`` provokes it; boundary fits are named; the real-data doors of the models
and the agreement statistics (unused levels, no random term, constant or missing scores,
scores stored as text)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.errors import DataError, FormulaError
from hce.stats.mixed.lmer_result import ConvergenceWarning, SingularFitWarning

INFERENCE = ["std_error", "statistic", "p_value", "ci_low", "ci_high"]


@pytest.fixture(scope="module")
def judged() -> pd.DataFrame:
    """Unbalanced items x conditions with a numeric score, a 0/1 verdict and a 1-4 rating."""
    rng = np.random.default_rng(2)
    d = pd.DataFrame({"item": np.repeat(np.arange(24), 6), "cond": np.tile(["a", "b", "c"], 48)})
    d["y"] = rng.normal(0, 1, 24)[d["item"]] + 0.5 * (d["cond"] == "b") + rng.normal(size=len(d))
    d["v"] = (d["y"] + rng.logistic(size=len(d)) > 0).astype(int)
    d["s"] = np.digitize(d["y"], [-1, 0, 1]) + 1
    return d.iloc[5:].reset_index(drop=True)


FITS = {
    "lmer": lambda d, **kw: hs.lmer("y ~ cond + (1 | item)", d, **kw),
    "glmer": lambda d, **kw: hs.glmer("v ~ cond + (1 | item)", d, **kw),
    "clmm": lambda d, **kw: hs.clmm("s ~ cond + (1 | item)", d, **kw),
}


def quiet(fit, d, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(d, **kw)


@pytest.mark.parametrize("model", list(FITS))
def test_a_fit_stopped_by_max_iter_shows_estimates_only(judged, model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = FITS[model](judged, max_iter=1)
    assert any(w.category is ConvergenceWarning and "max_iter=1" in str(w.message) for w in caught)
    assert not m.converged
    fe = m.fixef()
    assert fe["estimate"].notna().all()
    assert fe[INFERENCE].isna().all().all()
    assert fe["method"].str.startswith("did not converge").all()
    text = m.summary()
    assert "did not converge" in text and "Std. Error" not in text and "Pr(>|" not in text
    shown = m.fixef(unconverged="show")
    assert shown[INFERENCE].notna().all().all()
    assert shown["method"].str.endswith("(fit did not converge)").all()
    assert "Std. Error" in m.summary(unconverged="show")
    converged = FITS[model](judged)
    assert converged.converged and converged.fixef()[INFERENCE].notna().all().all()


@pytest.mark.parametrize("reml", [True, False])
def test_lmer_summary_says_where_an_unconverged_fit_stopped(judged, reml):
    # issue 42: the summary said "REML criterion at convergence" on a fit that stopped short;
    # lme4 prints its optimiser's code and the convergence messages at the end (.prt.warn)
    text = quiet(FITS["lmer"], judged, max_iter=1, REML=reml).summary()
    assert "at convergence" not in text
    assert "where the optimiser stopped: the fit did not converge" in text
    assert "convergence code: -1" in text and "Warning: the profiled" in text
    done = FITS["lmer"](judged, REML=reml).summary()
    assert "did not converge" not in done and "convergence code" not in done
    assert ("REML criterion at convergence" in done) is reml


def test_lmer_anova_and_contrasts_hide_their_tests_when_not_converged(judged):
    m = quiet(FITS["lmer"], judged, max_iter=1)
    table = m.anova()
    assert table[["statistic", "den_df", "p_value"]].isna().all().all()
    assert table["method"].str.startswith("did not converge").all()
    assert m.anova(unconverged="show")["p_value"].notna().all()
    pairs = m.contrasts("cond")
    assert pairs["estimate"].notna().all() and pairs[["p_value", "p_adjusted"]].isna().all().all()


def test_clmm_thresholds_hide_their_tests_when_not_converged(judged):
    m = quiet(FITS["clmm"], judged, max_iter=1)
    assert m.thresholds()[INFERENCE].isna().all().all()
    assert m.thresholds(unconverged="show")["std_error"].notna().all()


def test_bad_max_iter_and_unconverged_values_are_refused(judged):
    for bad in (0, -3, 2.5, True):
        with pytest.raises(DataError, match="max_iter"):
            FITS["clmm"](judged, max_iter=bad)
    with pytest.raises(DataError, match="unconverged"):
        FITS["lmer"](judged).fixef(unconverged="maybe")


def test_clmm_names_a_zero_variance_as_lme4_names_a_singular_fit():
    # no item effect at all: the item SD is estimated at 0 (ordinal prints NaN SEs there)
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"item": np.repeat(np.arange(30), 4), "cond": np.tile(["a", "b"], 60)})
    d["s"] = np.digitize(0.8 * (d["cond"] == "b") + rng.logistic(size=120), [-1, 0, 1]) + 1
    with pytest.warns(SingularFitWarning, match=r"boundary \(singular\) fit: the standard deviation of item"):
        m = hs.clmm("s ~ cond + (1 | item)", d)
    assert m.singular and m.converged
    assert m.varcorr()["sdcor"].iloc[0] < 1e-3
    assert m.fixef()["std_error"].notna().all()  # conditional on the boundary, and said so
    assert "conditional on it" in m.summary()


@pytest.mark.parametrize("model", list(FITS))
def test_unused_categorical_levels_are_dropped_with_a_note(judged, model):
    # issue 42: LinAlgError: Singular matrix before; R drops the level and fits
    d = judged.assign(cond=pd.Categorical(judged["cond"], categories=["a", "b", "c", "never"]))
    with pytest.warns(UserWarning, match=r"dropped 1 unused categorical level\(s\) \['never'\]"):
        m = FITS[model](d)
    plain = FITS[model](judged)
    np.testing.assert_allclose(m.fixef()["estimate"], plain.fixef()["estimate"], rtol=1e-8)
    if model == "lmer":
        with pytest.warns(UserWarning, match="unused"):
            assert hs.lmer("y ~ cond + (1 | item)", d).anova()["term"].tolist() == ["cond"]


@pytest.mark.parametrize("model,formula", [("lmer", "y ~ cond"), ("glmer", "v ~ cond"), ("clmm", "s ~ cond")])
def test_a_formula_without_a_random_term_is_refused(judged, model, formula):
    fit = {"lmer": hs.lmer, "glmer": hs.glmer, "clmm": hs.clmm}[model]
    with pytest.raises(FormulaError, match=r"use statsmodels OLS/GLM, or add \(1\|item\)"):
        fit(formula, judged)


CONSTANT = "holds one value .* there is no variation to analyse"
MISSING = "has no scores: all .* missing"


@pytest.mark.parametrize("model", list(FITS))
@pytest.mark.parametrize("value,message", [(1, CONSTANT), (np.nan, MISSING)])
def test_models_refuse_constant_or_missing_scores(judged, model, value, message):
    d = judged.assign(y=float(value), v=value, s=value)
    with pytest.raises(DataError, match=message):
        FITS[model](d)


AGREEMENT = ["icc", "krippendorff_alpha", "fleiss_kappa", "cohen_kappa", "cronbach_alpha"]


@pytest.fixture(scope="module")
def ratings() -> pd.DataFrame:
    return pd.DataFrame({"item_id": np.repeat(np.arange(10), 3), "rater_id": np.tile(["r1", "r2", "r3"], 10),
                         "score": np.arange(30) % 4 + 1.0})  # fmt: skip


@pytest.mark.parametrize("name", AGREEMENT)
@pytest.mark.parametrize("value,message", [(2.0, CONSTANT), (np.nan, MISSING)])
def test_agreement_statistics_refuse_constant_or_missing_scores(ratings, name, value, message):
    # issue 42: fleiss_kappa on all-NaN ratings raised a numpy reshape error
    with pytest.raises(DataError, match=f"{name}: column 'score' {message}"):
        getattr(hs, name)(ratings.assign(score=value), item="item_id", rater="rater_id", score="score")


def test_percent_agreement_is_defined_on_constant_ratings_but_not_on_none(ratings):
    out = hs.percent_agreement(ratings.assign(score=2.0), item="item_id", rater="rater_id", score="score")
    assert out["estimate"].iloc[0] == 1.0
    with pytest.raises(DataError, match=MISSING):
        hs.percent_agreement(ratings.assign(score=np.nan), item="item_id", rater="rater_id", score="score")


@pytest.mark.parametrize("model", ["lmer", "clmm"])
def test_scores_stored_as_text_are_read_as_icc_reads_them(judged, model):
    # one rule (hce.stats._validate): text that reads as numbers is read as numbers, with a note
    column = {"lmer": "y", "clmm": "s"}[model]
    text = judged.assign(**{column: judged[column].astype(str)})
    with pytest.warns(UserWarning, match=f"column '{column}' holds numbers stored as text"):
        m = FITS[model](text)
    np.testing.assert_allclose(m.fixef()["estimate"], FITS[model](judged).fixef()["estimate"], rtol=1e-10)
    with pytest.raises(DataError, match="not a number"):
        hs.lmer("y ~ cond + (1 | item)", text.assign(y=text["y"].where(text.index != 3, "n/a")))


def test_clmm_restarts_when_the_first_search_stops_short(judged, monkeypatch):
    # the search of issue 42 stopped where its gradient overflowed (NaN), 150 log-likelihood
    # units below ordinal's optimum; here the gradient fails the same way on a few calls
    from hce.stats.mixed import clmm_laplace

    reference = FITS["clmm"](judged)
    exact, calls = clmm_laplace.Laplace.gradient, {"n": 0}

    def failing(self, par):  # the first steps with a random-intercept SD: NaN
        calls["n"] += par[-1] > 0
        return np.full(len(par), np.nan) if 1 <= calls["n"] <= 3 and par[-1] > 0 else exact(self, par)

    monkeypatch.setattr(clmm_laplace.Laplace, "gradient", failing)
    m = FITS["clmm"](judged)
    assert calls["n"] > 3 and m.converged
    np.testing.assert_allclose(m.loglik, reference.loglik, rtol=0, atol=1e-6)
