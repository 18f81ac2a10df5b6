"""``glmer``'s refusals, its boundary flag and its summary (numbers: test_glmer_reference.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.errors import DataError
from hce.stats.mixed import SingularFitWarning


def _verdicts(seed: int = 0, n_items: int = 30, sd: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"item": np.repeat(np.arange(n_items), 8), "condition": np.tile(list("ab"), 4 * n_items)})
    eta = 0.2 + 0.5 * (d["condition"] == "b") + rng.normal(0, sd, n_items)[d["item"]]
    d["verdict"] = (rng.random(len(d)) < 1 / (1 + np.exp(-eta))).astype(int)
    return d


def test_complete_separation_is_refused_naming_the_term():
    d = _verdicts()
    d.loc[d["condition"] == "b", "verdict"] = 1  # condition b: always a pass
    with pytest.raises(DataError, match=r"complete separation: .*condition\[T\.b\]"):
        hs.glmer("verdict ~ condition + (1 | item)", d)


def test_separation_by_a_covariate_threshold_is_refused():
    d = _verdicts()
    d["length"] = np.where(d["verdict"] == 1, 1.0, -1.0) + np.random.default_rng(1).random(len(d))
    with pytest.raises(DataError, match="complete separation: .*length"):
        hs.glmer("verdict ~ length + (1 | item)", d)


def test_a_score_is_not_a_verdict():
    d = _verdicts()
    d.loc[5, "verdict"] = 3
    with pytest.raises(DataError, match=r"0/1 or True/False.*row 5 has 3\.0"):
        hs.glmer("verdict ~ condition + (1 | item)", d)


def test_boolean_verdicts_equal_0_1_verdicts():
    d = _verdicts()
    a = hs.glmer("verdict ~ condition + (1 | item)", d)
    b = hs.glmer("verdict ~ condition + (1 | item)", d.assign(verdict=d["verdict"].astype(bool)))
    assert a.loglik == pytest.approx(b.loglik, abs=1e-9)


def test_two_text_levels_are_coded_as_r_codes_a_factor():
    d = _verdicts()
    a = hs.glmer("verdict ~ condition + (1 | item)", d)
    b = hs.glmer("verdict ~ condition + (1 | item)", d.assign(verdict=d["verdict"].map({0: "fail", 1: "pass"})))
    assert a.loglik == pytest.approx(b.loglik, abs=1e-9)
    with pytest.raises(DataError, match="two levels.*it has 3"):
        hs.glmer("verdict ~ condition + (1 | item)", d.assign(verdict=np.resize(["a", "b", "c"], len(d))))


def test_quadrature_needs_one_scalar_term():
    d = _verdicts().assign(rater=lambda f: f.index % 3)
    with pytest.raises(DataError, match="single scalar random term"):
        hs.glmer("verdict ~ condition + (1 | item) + (1 | rater)", d, nAGQ=5)
    with pytest.raises(DataError, match="nAGQ must be an integer from 0 to 25"):
        hs.glmer("verdict ~ condition + (1 | item)", d, nAGQ=26)


def test_quadrature_approaches_the_exact_likelihood():
    """nAGQ = 1 is the Laplace value; more nodes converge (25 vs 20 within 1e-6)."""
    d = _verdicts(seed=2, sd=2.0)
    lls = {q: hs.glmer("verdict ~ condition + (1 | item)", d, nAGQ=q).loglik for q in (1, 20, 25)}
    assert abs(lls[25] - lls[20]) < 1e-6
    assert abs(lls[1] - lls[25]) > 1e-3  # Laplace is an approximation with a large variance


def test_a_zero_variance_is_flagged_singular_as_lme4():
    rng = np.random.default_rng(5)
    d = pd.DataFrame({"item": np.repeat(np.arange(40), 6), "condition": np.tile(list("ab"), 120)})
    d["verdict"] = (rng.random(len(d)) < 0.5).astype(int)  # no item effect at all
    with pytest.warns(SingularFitWarning):
        m = hs.glmer("verdict ~ condition + (1 | item)", d)
    assert m.singular and m.theta[0] < 1e-4 and "boundary (singular) fit" in m.summary()
    assert "convergence code: 0 (OK)" in m.summary()
    # lme4 1.1-31 on these data: theta 8.9e-08, logLik -165.5201264, estimates 0.03333642 and
    # 0.20106429 with SEs 0.18259972 and 0.25910608 (the RX covariance: the Hessian has a NaN)
    assert m.loglik == pytest.approx(-165.5201264, abs=1e-6)
    fe = m.fixef()
    np.testing.assert_allclose(fe["estimate"], [0.03333642, 0.20106429], atol=1e-6)
    np.testing.assert_allclose(fe["std_error"], [0.18259972, 0.25910608], rtol=1e-5)


def test_summary_prints_as_lme4():
    m = hs.glmer("verdict ~ condition + (1 | item)", _verdicts())
    text = m.summary()
    assert "Generalized linear mixed model fit by maximum likelihood (Laplace Approximation)" in text
    assert " Family: binomial  ( logit )" in text
    for piece in ("AIC", "BIC", "logLik", "deviance", "df.resid", "z value", "Pr(>|z|)", "item, 30"):
        assert piece in text
    assert m.deviance == pytest.approx(-2 * m.loglik)
    assert m.aic == pytest.approx(m.deviance + 2 * 3)
    fe = m.fixef()
    assert list(fe.columns) == [
        "term", "estimate", "std_error", "statistic", "df", "p_value", "ci_low", "ci_high", "method",
    ]  # fmt: skip
    assert (fe["ci_low"] < fe["estimate"]).all() and (fe["estimate"] < fe["ci_high"]).all()
    assert list(m.varcorr()["group"]) == ["item"]  # no residual row for a binomial


def test_cbind_equals_a_weighted_proportion():
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"item": np.repeat(np.arange(20), 2), "condition": np.tile(list("ab"), 20)})
    d["trials"] = rng.integers(2, 9, len(d))
    p = 1 / (1 + np.exp(-(0.5 * (d["condition"] == "b") + rng.normal(0, 1, 20)[d["item"]])))
    d["passes"] = rng.binomial(d["trials"], p)
    d["fails"] = d["trials"] - d["passes"]
    a = hs.glmer("cbind(passes, fails) ~ condition + (1 | item)", d)
    b = hs.glmer("share ~ condition + (1 | item)", d.assign(share=d["passes"] / d["trials"]), weights="trials")
    assert a.loglik == pytest.approx(b.loglik, abs=1e-9)
    with pytest.raises(DataError, match="either cbind"):
        hs.glmer("cbind(passes, fails) ~ condition + (1 | item)", d, weights="trials")
