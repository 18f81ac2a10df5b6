"""``clmm`` and ``glmer`` against R on real judge data (R as an oracle, statsmodels-style).

``tests/stats/r/real_judge_reference.R`` fits R ``ordinal::clmm`` to Topical-Chat scores of
gpt-3.5-turbo (coherence, engagingness, naturalness, groundedness; 40-90 items x 3-10 samples,
7 prompt variants) and R ``lme4::glmer`` to HealthBench physician labels plus an LLM grader;
``tests/stats/data/real_judge_reference.json`` holds the results with the R, ordinal and lme4
versions (R 4.2.2, ordinal 2022.11-16, lme4 1.1-31 when written). The data stay in the shared
folder: these tests rebuild the frames the R script defines, and skip without it.

Tolerances, with reasons:

* log-likelihood: never lower than R's by more than 1e-4 (issue 42: a worse optimum). It may be
  higher: ordinal's nlminb stops at max.grad ~1e-3 and its inner Newton at 1e-4, and on items
  20-59 x samples 0-9 it stopped at max.grad 24 (logLik 0.010 below hce's);
* estimates: 2e-3 absolute where R's fit converged (max.grad below 2e-3);
* fixed-effect standard errors: 2e-3 relative (measured: below 1e-4);
* standard errors against the Laplace approximation with its modes converged
  (``std_error_laplace``, fits with one random term): 2e-3 relative, thresholds included.
  ordinal's printed threshold SEs are 1% off on the issue-42 case (0.3732 against 0.3771 for
  1|2): its C code for one random term (getNLA.ssr, NRalgv3) stops the inner Newton at
  max|gradient| 1e-4 and takes ``log|D|`` from the Hessian of the previous iterate, so its
  objective sits up to 1e-3 off the Laplace approximation and moves unevenly, and a
  finite-difference Hessian of it (deriv12, step 1e-4) carries that. The R script evaluates
  ordinal's own C code with the modes converged and D at the mode (logLik -1395.637067 at
  ordinal's estimates, equal to hce's to 1e-9, where ordinal prints -1395.637926) and takes
  its Hessian by numDeriv's Richardson extrapolation: 1|2 SE 0.37711, hce 0.37719. Against
  ordinal's printed SEs only the fixed effects are held (2e-3; measured below 1e-4), the
  thresholds at 1.5e-2 (that error, with room);
* the crossed item + prompt fit runs ordinal's general code, which takes D at the final
  modes: there every SE is held to ordinal's printed ones at 2e-3;
* glmer's standard error with a variance at 0: 1e-2 relative (issue 42), lme4's from its
  central-difference Hessian at theta = 0.
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import clmm, glmer

REFERENCE = json.loads((Path(__file__).resolve().parent / "data" / "real_judge_reference.json").read_text())
ISSUE_CASE = {"attribute": "coherence", "items": [0, 59], "samples": [0, 4], "link": "logit",
              "formula": "score ~ prompt_variant + (1 | item_id)"}  # fmt: skip


def _as_list(value) -> list:
    """R's JSON writes a length-1 vector as a scalar."""
    return value if isinstance(value, list) else [value]


def _case_id(fit: dict) -> str:
    return f"{fit['attribute']}|items {fit['items']}|samples {fit['samples']}|{fit['link']}|{fit['formula']}"


@pytest.fixture
def topical_scores(shared_dir) -> pd.DataFrame:
    path = shared_dir / "data/topicalchat_gpt35_repeated/judge_scores_long.csv"
    if not path.exists():
        pytest.skip(f"Topical-Chat judge scores not found at {path}")
    return _read_scores(path)


@functools.cache
def _read_scores(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def topical_frame(scores: pd.DataFrame, fit: dict) -> pd.DataFrame:
    """The rows the R script fits: one attribute, closed item and sample ranges, scores on the
    attribute's scale (NaN and out-of-range replies dropped), item_id as a factor."""
    scale = [0, 1] if fit["attribute"] == "groundedness" else [1, 2, 3]
    (i0, i1), (s0, s1) = fit["items"], fit["samples"]
    rows = scores[
        (scores["attribute"] == fit["attribute"])
        & scores["item_id"].between(i0, i1)
        & scores["sample_idx"].between(s0, s1)
        & scores["score"].isin(scale)
    ]
    return rows.assign(item_id=rows["item_id"].astype(str))


def check_clmm(scores: pd.DataFrame, ref: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fit that reaches the optimum warns of nothing
        m = clmm(ref["formula"], topical_frame(scores, ref), link=ref["link"])
    assert m.n == ref["n"] and m.converged
    assert m.loglik >= ref["loglik"] - 1e-4, (m.loglik, ref["loglik"])
    if ref["max_grad"] > 2e-3:  # R stopped short of its optimum: only the likelihood compares
        return m
    table = pd.concat([m.thresholds(), m.fixef()], ignore_index=True)
    n_theta = len(m.thresholds())
    np.testing.assert_allclose(table["estimate"], _as_list(ref["estimate"]), rtol=0, atol=2e-3)
    se = np.array(_as_list(ref["std_error"]))
    np.testing.assert_allclose(table["std_error"][n_theta:], se[n_theta:], rtol=2e-3)
    if "std_error_laplace" in ref:  # one random term: ordinal's stale log|D| (see the top)
        assert m.loglik >= ref["loglik_laplace"] - 1e-6, (m.loglik, ref["loglik_laplace"])
        laplace = np.array(_as_list(ref["std_error_laplace"]))[: len(table)]  # the sd's last
        np.testing.assert_allclose(table["std_error"], laplace, rtol=2e-3)
        np.testing.assert_allclose(table["std_error"][:n_theta], se[:n_theta], rtol=1.5e-2)
    else:
        np.testing.assert_allclose(table["std_error"], se, rtol=2e-3)
    sd = m.varcorr().set_index("group")["sdcor"]
    np.testing.assert_allclose(sd[_as_list(ref["sd_group"])], _as_list(ref["sd"]), rtol=0, atol=2e-3)
    return m


def test_clmm_reaches_ordinal_on_topical_chat_items_0_59(topical_scores):
    # issue 42: hce stopped at logLik -1549.30 (item variance 1.76, geval 1.93); ordinal
    # reaches -1395.64 (variance 7.25, geval 3.23)
    ref = next(f for f in REFERENCE["clmm"] if all(f[k] == v for k, v in ISSUE_CASE.items()))
    m = check_clmm(topical_scores, ref)
    geval = m.fixef().set_index("term").loc["prompt_variant[T.geval]", "estimate"]
    assert abs(geval - 3.2345) < 2e-3 and abs(m.varcorr()["vcov"].iloc[0] - 7.255) < 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("ref", [pytest.param(f, id=_case_id(f)) for f in REFERENCE["clmm"]])
def test_clmm_reaches_ordinal_on_topical_chat(topical_scores, ref):
    check_clmm(topical_scores, ref)


@pytest.fixture
def healthbench(shared_dir) -> pd.DataFrame:
    folder = shared_dir / "data/healthbench_meta_subset"
    if not folder.is_dir():
        pytest.skip(f"HealthBench meta-evaluation subset not found at {folder}")
    gold = [json.loads(line) for line in (folder / "healthbench_meta_gold.jsonl").read_text().splitlines()]
    grader = [json.loads(line) for line in (folder / "healthbench_meta_strongmodel_labels.jsonl").read_text().splitlines()]
    rows = [(g["item_id"], p, int(label)) for g in gold
            for p, label in zip(g["anonymized_physician_ids"], g["binary_labels"])]  # fmt: skip
    rows += [(g["item_id"], "llm_grader", int(g["criteria_met"])) for g in grader]
    return pd.DataFrame(rows, columns=["item_id", "rater_id", "score"])


@pytest.mark.parametrize("ref", REFERENCE["glmer"], ids=lambda f: f["formula"])
def test_glmer_hessian_se_with_a_zero_variance_as_lme4(healthbench, ref):
    # issue 42: with the rater variance at 0, hce gave the RX fallback's 0.2248; lme4 0.2649
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "boundary")
        m = glmer(ref["formula"], healthbench, family="binomial")
    assert m.n == ref["n"] and m.singular == ref["singular"]
    assert m.vcov_method == "Hessian"
    fe = m.fixef()
    np.testing.assert_allclose(fe["estimate"], _as_list(ref["estimate"]), rtol=0, atol=2e-3)
    np.testing.assert_allclose(fe["std_error"], _as_list(ref["std_error"]), rtol=1e-2)
    np.testing.assert_allclose(m.loglik, ref["loglik"], rtol=0, atol=1e-3)


def test_reference_file_records_its_provenance():
    assert REFERENCE["r_version"].startswith("R version")
    assert REFERENCE["ordinal_version"] and REFERENCE["lme4_version"]
    sizes = {(f["items"][1] - f["items"][0] + 1, f["samples"][1] - f["samples"][0] + 1) for f in REFERENCE["clmm"]}
    assert all(40 <= i <= 90 and 3 <= s <= 10 for i, s in sizes) and len(REFERENCE["clmm"]) >= 8
