"""``lmer``'s fixed-effect tests against stored R lmerTest and pbkrtest results (issue 32).

``tests/stats/r/lmertest_reference.R`` generates the designs (``tests/stats/data/
lmertest_reference/``: random intercept, crossed, nested, correlated and uncorrelated slopes, a
factor x covariate interaction, an unbalanced two-factor design with its interaction, a
balanced crossed design and the same design less one row) and stores lmerTest's
``summary(m, ddf = ...)`` and ``anova(m, ddf = ...)`` for Satterthwaite and Kenward-Roger
(``tests/stats/data/lmertest_reference.json``, R 4.2.2, lme4 1.1-31, lmerTest 3.1-3, pbkrtest
0.5.2 when written). No R is needed to run these tests.

Tolerance: 1e-3 relative on SE, df, t, p, F and the denominator df (issue 32's bar). lmerTest
differentiates numerically (numDeriv) as hce does; both sit at the same optimum to ~1e-9, so
the agreement is far tighter than the bar on these designs.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import lmer

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = json.loads((DATA / "lmertest_reference.json").read_text())
RTOL = 1e-3


def _columns(table: dict) -> dict:
    """R's JSON writes a length-1 vector as a scalar: make every column a list."""
    return {k: v if isinstance(v, list) else [v] for k, v in table.items()}


FITS = REFERENCE["fits"]


def _fit(ref: dict):
    data = pd.read_csv(DATA / "lmertest_reference" / f"{ref['design']}.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary fits are compared like any other
        return lmer(ref["formula"], data, REML=ref["reml"])


def _case(ref: dict) -> str:
    return f"{ref['design']}|{ref['formula']}|{'REML' if ref['reml'] else 'ML'}"


@pytest.fixture(scope="module")
def fitted() -> dict:
    return {_case(ref): _fit(ref) for ref in FITS}


def _close(ours, theirs, what: str) -> None:
    np.testing.assert_allclose(np.asarray(ours, float), np.asarray(theirs, float), rtol=RTOL, err_msg=what)


def _in_r_order(fe: pd.DataFrame, r_terms: list[str]) -> pd.DataFrame:
    """Rows in R's order, matched by name: patsy's ``a[T.b]`` is R's ``ab`` (patsy puts the
    columns of terms with a numeric factor after the others, R keeps the formula's order)."""
    r_names = fe["term"].str.replace(r"\[T\.([^\]]*)\]", r"\1", regex=True)
    return fe.set_index(r_names).loc[r_terms].reset_index(drop=True)


@pytest.mark.parametrize("ref", FITS, ids=_case)
def test_fixef_satterthwaite_equals_lmertest(fitted, ref):
    m = fitted[_case(ref)]
    r = _columns(ref["satterthwaite"])
    fe = _in_r_order(m.fixef(), r["term"])
    _close(fe["estimate"], r["estimate"], "estimate")
    _close(fe["std_error"], r["se"], "std_error")
    _close(fe["df"], r["df"], "df")
    _close(fe["statistic"], r["t"], "t")
    _close(fe["p_value"], r["p"], "p")
    assert set(fe["method"]) == {"t, Satterthwaite df"}


@pytest.mark.parametrize("ref", [f for f in FITS if f["reml"]], ids=_case)
def test_fixef_kenward_roger_equals_pbkrtest(fitted, ref):
    r = _columns(ref["kenward_roger"])
    fe = _in_r_order(fitted[_case(ref)].fixef(ddf="kenward-roger"), r["term"])
    _close(fe["std_error"], r["se"], "std_error")
    _close(fe["df"], r["df"], "df")
    _close(fe["p_value"], r["p"], "p")


@pytest.mark.parametrize("ddf", ["satterthwaite", "kenward-roger"])
@pytest.mark.parametrize("ref", FITS, ids=_case)
def test_anova_type3_equals_lmertest(fitted, ref, ddf):
    key = f"anova_{ddf.replace('-', '_')}"
    if key not in ref:
        pytest.skip("Kenward-Roger is for REML fits only (pbkrtest)")
    table, r = fitted[_case(ref)].anova(ddf=ddf), _columns(ref[key])
    assert table["term"].tolist() == r["term"]
    _close(table["statistic"], r["F"], "F")
    np.testing.assert_array_equal(table["num_df"], r["num_df"])
    _close(table["den_df"], r["den_df"], "den df")
    _close(table["p_value"], r["p"], "p")


@pytest.mark.parametrize("ddf", ["satterthwaite", "kenward-roger"])
@pytest.mark.parametrize("ref", [f for f in FITS if "pairs" in f], ids=_case)
def test_contrasts_equal_lmertest_contest1d(fitted, ref, ddf):
    """Pairwise differences of equally weighted marginal means (emmeans' ``pairwise ~ f``),
    each L tested by lmerTest's ``contest1D`` in the R script."""
    out, r = fitted[_case(ref)].contrasts(ref["pairs"], ddf=ddf), ref[f"pairs_{ddf.replace('-', '_')}"]
    assert out["a"].tolist() == r["a"] and out["b"].tolist() == r["b"]
    _close(out["estimate"], r["estimate"], "estimate")
    _close(out["std_error"], r["se"], "std_error")
    _close(out["df"], r["df"], "df")
    _close(out["p_value"], r["p"], "p")


def test_a_balanced_boundary_fit_stays_on_the_balanced_engine(fitted):
    """The balanced design with a variance at 0 is fitted by the balanced engine's bounded
    maximisation (not the closed form), and still matches lmerTest (the parametrised tests)."""
    m = fitted["balanced_boundary|score ~ prompt + (1 | item_id) + (1 | item_id:prompt)|REML"]
    assert m.engine == "balanced-design REML likelihood, boundary"
    assert m.varcorr()["vcov"].iloc[1] == 0


def test_type3_does_not_depend_on_the_coding():
    """lmerTest maps another coding onto treatment contrasts' hypotheses (L ginv(X_t) X): with
    sum-to-zero contrasts the Type III F tests are those of the stored treatment-coded fit."""
    ref = next(f for f in FITS if f["design"] == "two_factor")
    data = pd.read_csv(DATA / "lmertest_reference" / "two_factor.csv")
    summed = lmer(
        "score ~ C(prompt, Sum) * C(model, Sum) + (1 | item_id) + (1 | item_id:prompt)", data
    ).anova()
    r = _columns(ref["anova_satterthwaite"])
    _close(summed["statistic"], r["F"], "F")
    _close(summed["den_df"], r["den_df"], "den df")


def test_balanced_and_less_one_row_give_lmertests_finite_df(fitted):
    """Issue 32: the balanced engine used to give NaN df, the PLS engine after dropping one row
    a Wald z with df = inf; both now give lmerTest's finite Satterthwaite df, close together."""
    formula = "score ~ 1 + (1 | item_id) + (1 | prompt) + (1 | item_id:prompt)"
    full = fitted[f"balanced|{formula}|REML"]
    less = fitted[f"balanced_minus_one|{formula}|REML"]
    assert full.engine.startswith("closed form")
    assert less.engine.startswith("penalised")
    df_full, df_less = full.fixef()["df"].iloc[0], less.fixef()["df"].iloc[0]
    assert np.isfinite(df_full) and np.isfinite(df_less)
    assert abs(df_full - df_less) < 0.02 * df_full  # one row of 288 moves it a little


def test_both_engines_give_the_same_df_on_the_same_data():
    data = pd.read_csv(DATA / "lmertest_reference" / "balanced.csv")
    for formula in ("score ~ 1 + (1 | item_id) + (1 | prompt) + (1 | item_id:prompt)",
                    "score ~ prompt + (1 | item_id)"):
        closed, pls = lmer(formula, data), lmer(formula, data, method="pls")
        assert closed.engine.startswith("closed form") and pls.engine.startswith("penalised")
        np.testing.assert_allclose(closed.fixef()["df"], pls.fixef()["df"], rtol=1e-5)
        np.testing.assert_allclose(closed.anova()["den_df"], pls.anova()["den_df"], rtol=1e-5)


def test_wald_keeps_z_and_says_so(fitted):
    m = fitted[_case(FITS[0])]
    fe = m.fixef(ddf="wald")
    assert np.all(np.isinf(fe["df"]))
    assert set(fe["method"]) == {"Wald z (asymptotic)"}
    np.testing.assert_allclose(fe["std_error"], m.fixef()["std_error"])


def test_kenward_roger_refuses_an_ml_fit(fitted):
    from hce.errors import DataError

    ml = next(f for f in FITS if not f["reml"])
    with pytest.raises(DataError, match="REML"):
        fitted[_case(ml)].fixef(ddf="kenward-roger")


def test_unknown_ddf_names_the_choices(fitted):
    from hce.errors import HceError

    with pytest.raises(HceError, match="satterthwaite"):
        fitted[_case(FITS[0])].fixef(ddf="containment")


def test_reference_records_versions():
    assert REFERENCE["versions"]["lmerTest"] == "3.1.3"
    assert REFERENCE["versions"]["pbkrtest"] == "0.5.2"


@pytest.fixture
def topical_chat_balanced(shared_dir):
    """Topical-Chat coherence (Chiang & Lee 2023; ../shared/data README): the 312 items whose
    7 prompts x 20 samples all parsed to 1-3, a balanced 43,680-row crossed design."""
    path = shared_dir / "data" / "topicalchat_gpt35_repeated" / "judge_scores_long.csv"
    if not path.exists():
        pytest.skip(f"{path} absent")
    d = pd.read_csv(path)
    d = d[d["attribute"] == "coherence"]
    full = d.groupby("item_id")["score"].agg(lambda s: len(s) == 140 and s.between(1, 3).all())
    d = d[d["item_id"].isin(full[full].index)].reset_index(drop=True)
    d["auto_cot"] = d["prompt_variant"].str.contains("auto_cot").astype(int)
    return d


TC_FORMULA = "score ~ {} + (1 | item_id) + (1 | prompt_variant) + (1 | item_id:prompt_variant)"


def test_topical_chat_issue_case(topical_chat_balanced):
    """Issue 32's numbers. lmerTest 3.1-3 (lme4 1.1-31, the tolerances of
    lmertest_reference.R) on these rows: intercept-only: df 7.472328, p 2.458353e-08; less the
    first row: df 7.472638, p 2.456541e-08; ``auto_cot`` (the prompt-level covariate) less the
    first row: df 5.000034, p 0.6851386, SE 0.1891845, intercept p 4.197463e-06. (lme4's default
    optimiser gives df 7.474747 and 4.998929: it stops ~1e-6 short of the optimum.) Before:
    NaN df on the balanced rows, a Wald z without the first row (p 0.667 for the covariate,
    5.5e-69 for the intercept). A p of 2e-8 at 7.5 df moves 12 times as fast as its df,
    hence 1e-3 on p, 1e-4 on df."""
    d = topical_chat_balanced
    assert len(d) == 43_680
    full = lmer(TC_FORMULA.format(1), d).fixef().iloc[0]
    less = lmer(TC_FORMULA.format(1), d.iloc[1:]).fixef().iloc[0]
    np.testing.assert_allclose(full["df"], 7.472328, rtol=1e-4)
    np.testing.assert_allclose(full["p_value"], 2.458353e-08, rtol=1e-3)
    np.testing.assert_allclose(less["df"], 7.472638, rtol=1e-4)
    np.testing.assert_allclose(less["p_value"], 2.456541e-08, rtol=1e-3)
    cov = lmer(TC_FORMULA.format("auto_cot"), d.iloc[1:]).fixef().set_index("term")
    np.testing.assert_allclose(cov.loc["auto_cot", ["df", "p_value", "std_error"]].astype(float), [5.000034, 0.6851386, 0.1891845], rtol=1e-4)
    np.testing.assert_allclose(cov.loc["(Intercept)", "p_value"], 4.197463e-06, rtol=1e-3)
    # the t(5) interval of the issue: -0.0813379 -+ qt(0.975, 5.000034) 0.1891845
    np.testing.assert_allclose(cov.loc["auto_cot", ["ci_low", "ci_high"]].astype(float), [-0.567651, 0.404975], atol=1e-4)
