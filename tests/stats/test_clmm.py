"""``clmm``: input handling and refusals (the fits themselves are checked against R ordinal in
test_clmm_reference.py and test_clmm_live.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError, FormulaError
from hce.stats import clmm


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    d = pd.DataFrame({"item": np.repeat(np.arange(25), 8), "condition": np.tile(["a", "b"], 100)})
    d["x"] = rng.normal(size=len(d))
    latent = rng.normal(0, 1, 25)[d["item"]] + 0.9 * (d["condition"] == "b") + rng.logistic(size=len(d))
    d["score"] = np.digitize(latent, [-1.5, -0.5, 0.5, 1.5]) + 1
    return d


def test_integer_scores_and_an_ordered_categorical_give_one_fit(scores):
    as_numbers = clmm("score ~ condition + (1 | item)", scores)
    labels = pd.Categorical.from_codes(scores["score"] - 1, ["very low", "low", "mid", "high", "very high"], ordered=True)
    as_labels = clmm("score ~ condition + (1 | item)", scores.assign(score=labels))
    assert as_labels.thresholds()["term"].tolist() == ["very low|low", "low|mid", "mid|high", "high|very high"]
    assert as_labels.loglik == pytest.approx(as_numbers.loglik, abs=1e-9)
    np.testing.assert_allclose(as_labels.fixef()["estimate"], as_numbers.fixef()["estimate"], atol=1e-7)


def test_a_positive_effect_moves_scores_up(scores):
    """ordinal's sign: logit P(Y <= j) = theta_j - x'beta, so condition b (scored higher in
    the simulation, by 0.9 on the latent scale) has a positive effect."""
    fe = clmm("score ~ condition + (1 | item)", scores).fixef()
    assert fe["estimate"].iloc[0] > 0.4
    assert fe["ci_low"].iloc[0] < fe["estimate"].iloc[0] < fe["ci_high"].iloc[0]
    assert fe["method"].iloc[0] == "Wald z, Laplace approximation"


def test_missing_scores_are_dropped_with_a_warning(scores):
    holed = scores.assign(score=scores["score"].astype(float).where(scores.index % 10 != 0))
    with pytest.warns(UserWarning, match="dropped 20 of 200 rows"):
        m = clmm("score ~ condition + (1 | item)", holed)
    assert m.n == 180


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (lambda d: np.where(d["score"] > 2, "high", "low"), "holds .* values; clmm needs ordinal scores"),
        (lambda d: d["score"] > 2, "holds bool values"),
        (lambda d: pd.Categorical(d["score"]), "unordered categorical"),
        (lambda d: np.full(len(d), 3), "holds one value \\(3\\) .* no variation to analyse"),
    ],
)
def test_a_response_that_is_not_ordinal_is_refused(scores, response, message):
    with pytest.raises(DataError, match=message):
        clmm("score ~ condition + (1 | item)", scores.assign(score=response(scores)))


@pytest.mark.parametrize(
    ("formula", "error", "message"),
    [
        ("score ~ condition + (x | item)", FormulaError, "random intercepts \\(1 \\| g\\) only"),
        ("score ~ condition", FormulaError, "no random term"),
        ("np.log(score) ~ condition + (1 | item)", FormulaError, "must be a column"),
        ("score ~ 0 + condition + (1 | item)", FormulaError, "thresholds play the part of the intercept"),
        ("score ~ condition + cond2 + (1 | item)", DataError, "collinear"),
    ],
)
def test_unsupported_formulas_are_refused(scores, formula, error, message):
    with pytest.raises(error, match=message):
        clmm(formula, scores.assign(cond2=scores["condition"]))


def test_quadrature_needs_one_term_and_a_sane_node_count(scores):
    d = scores.assign(rater=np.tile(np.arange(8), 25))
    with pytest.raises(DataError, match="quadrature needs a single random term"):
        clmm("score ~ condition + (1 | item) + (1 | rater)", d, nAGQ=5)
    with pytest.raises(DataError, match="nAGQ=0 must be an integer from 1"):
        clmm("score ~ condition + (1 | item)", d, nAGQ=0)
    with pytest.raises(DataError, match="link='logistic' is not valid"):
        clmm("score ~ condition + (1 | item)", d, link="logistic")


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
def test_the_exact_gradient_equals_finite_differences(scores, link):
    """The Laplace gradient derived through the modes (used by the optimiser and the Hessian
    for one term) against central differences of the approximation itself."""
    from hce.stats.mixed.clmm_laplace import LINKS, Laplace, Rows

    codes = scores["item"].to_numpy()
    rows = Rows(scores["score"].to_numpy() - 1, 5, np.c_[(scores["condition"] == "b"), scores["x"]].astype(float),
                [codes], [25], LINKS[link])  # fmt: skip
    laplace = Laplace(rows)
    par = np.array([-1.3, -0.4, 0.5, 1.4, 0.6, -0.2, 0.9])
    h = 1e-5
    numeric = [(laplace(par + e) - laplace(par - e)) / (2 * h) for e in np.eye(len(par)) * h]
    np.testing.assert_allclose(laplace.gradient(par), numeric, rtol=1e-6, atol=1e-5)
