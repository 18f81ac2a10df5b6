"""``clmm`` against stored R ``ordinal::clmm`` fits (R as an oracle, statsmodels-style).

``tests/stats/r/clmm_reference.R`` simulates the designs (``tests/stats/data/clmm_reference/``:
1-5 scores with a random intercept per item, a covariate, two crossed terms (items and
raters), a 1-5 scale with no 3 observed, an item variance near 0, a two-level response) and
fits each with R ordinal's defaults (Laplace unless nAGQ is given; logit, probit and cloglog
links); ``tests/stats/data/clmm_reference.json`` holds the results with the R and ordinal
versions (R 4.2.2, ordinal 2022.11-16 when written). No R is needed to run these tests.

Tolerances (issue 32), with reasons:

* log-likelihood: never lower than ordinal's by more than 1e-4 (a worse optimum) and not higher
  by more than 1e-3 (a different likelihood: ordinal's nlminb stops within ~1e-5 of its
  optimum, its inner Newton at max|gradient| 1e-4);
* thresholds, fixed effects, standard deviations and conditional modes: within 2e-3 (both are
  optimisers stopped at a tolerance on a flat likelihood);
* standard errors: 1e-2 relative (ordinal's come from a finite-difference Hessian, step 1e-4,
  of an objective computed with its inner tolerance).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import clmm
from hce.stats.mixed.lmer_result import SingularFitWarning

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = json.loads((DATA / "clmm_reference.json").read_text())
FITS = REFERENCE["fits"]


def _case_id(fit: dict) -> str:
    return f"{fit['design']}|{fit['formula']}|{fit['link']}|nAGQ={fit['nAGQ']}"


def _as_list(value) -> list:
    """R's JSON writes a length-1 vector as a scalar."""
    return value if isinstance(value, list) else [value]


def read_design(name: str) -> pd.DataFrame:
    data = pd.read_csv(DATA / "clmm_reference" / f"{name}.csv")
    if name == "empty_middle":  # the ordered-categorical path, with an unused middle level
        data["score"] = pd.Categorical(data["score"], categories=[1, 2, 3, 4, 5], ordered=True)
    return data


def fit_like_r(ref: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ordinal converged silently on every stored fit
        if "clm_std_error" not in ref:
            return clmm(ref["formula"], read_design(ref["design"]), link=ref["link"], nAGQ=ref["nAGQ"])
        # a standard deviation on the boundary: named as lme4 names a singular fit (issue 42)
        with pytest.warns(SingularFitWarning, match=r"boundary \(singular\) fit.*conditional"):
            m = clmm(ref["formula"], read_design(ref["design"]), link=ref["link"], nAGQ=ref["nAGQ"])
        assert m.singular and m.converged
        return m


@pytest.mark.parametrize("ref", [pytest.param(f, id=_case_id(f)) for f in FITS])
def test_fit_matches_ordinal(ref):
    m = fit_like_r(ref)
    assert m.loglik >= ref["loglik"] - 1e-4, (m.loglik, ref["loglik"])
    assert m.loglik <= ref["loglik"] + 1e-3, (m.loglik, ref["loglik"])
    assert m.n == ref["n"]
    assert m.ngroups == ref["ngroups"]
    table = pd.concat([m.thresholds(), m.fixef()], ignore_index=True)
    terms = _as_list(ref["terms"])
    n_theta = len(m.thresholds())
    assert table["term"].tolist()[:n_theta] == terms[:n_theta]  # "1|2", "2|4", ... as R
    assert len(table) == len(terms)
    np.testing.assert_allclose(table["estimate"], _as_list(ref["estimate"]), rtol=0, atol=2e-3)
    sd = m.varcorr().set_index("group")["sdcor"]
    np.testing.assert_allclose(sd[_as_list(ref["sd_group"])], _as_list(ref["sd"]), rtol=0, atol=2e-3)
    se = ref.get("clm_std_error", ref["std_error"])
    np.testing.assert_allclose(table["std_error"], _as_list(se), rtol=1e-2)
    _check_ranef(m, ref)


def _check_ranef(m, ref):
    theirs = pd.DataFrame(ref["ranef"])
    ours = m.ranef()
    merged = theirs.merge(ours, on=["group", "level"], suffixes=("_r", ""))
    assert len(merged) == len(theirs) == len(ours)
    np.testing.assert_allclose(merged["estimate"], merged["estimate_r"], rtol=0, atol=2e-3)
    np.testing.assert_allclose(merged["std_error"] ** 2, merged["cond_var"], rtol=1e-2, atol=1e-6)


def test_an_empty_middle_level_is_dropped_as_r_drops_it():
    ref = next(f for f in FITS if f["design"] == "empty_middle")
    m = fit_like_r(ref)
    assert m.levels == ["1", "2", "4", "5"]
    assert m.thresholds()["term"].tolist() == ["1|2", "2|4", "4|5"]


def test_summary_prints_as_ordinal():
    m = fit_like_r(next(f for f in FITS if f["design"] == "crossed" and f["link"] == "logit"))
    text = m.summary()
    assert text.startswith("Cumulative Link Mixed Model fitted with the Laplace approximation")
    for part in ("Random effects:", "Number of groups:  item 30,  rater 8", "Coefficients:",
                 "Threshold coefficients:", "max.grad", "cond.H"):  # fmt: skip
        assert part in text
    # summary(clmm(score ~ x + (1 | item) + (1 | rater), data = d)) in R 4.2.2, ordinal
    # 2022.11-16, whitespace aside
    lines = {" ".join(line.split()) for line in text.splitlines()}
    for line in ("item (Intercept) 0.7628 0.8734", "rater (Intercept) 0.3129 0.5593",
                 "x 0.4553 0.1418 3.212 0.00132 **", "1|2 -1.5725 0.3274 -4.803",
                 "4|5 1.2221 0.3159 3.868"):  # fmt: skip
        assert line in lines, text


def test_reference_file_records_its_provenance():
    assert REFERENCE["r_version"].startswith("R version")
    assert re.fullmatch(r"\d{4}\.\d+\.\d+", REFERENCE["ordinal_version"])
    designs = {f["design"] for f in FITS}
    assert {"likert_item", "covariate", "crossed", "empty_middle"} <= designs
    assert {f["link"] for f in FITS} >= {"logit", "probit"}
    assert all((DATA / "clmm_reference" / f"{d}.csv").exists() for d in designs)
