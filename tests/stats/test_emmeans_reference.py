"""``emmeans()`` of lmer, glmer and clmm against stored R emmeans results (issue 42, item 4).

``tests/stats/r/emmeans_reference.R`` fits the stored designs of the lmerTest, glmer and clmm
reference scripts in R and stores emmeans' marginal means (estimate, SE, df, 95% limits) and
pairwise contrasts with Tukey, Holm, Bonferroni and no adjustment (adjusted limits and P values):
lmer with Satterthwaite and Kenward-Roger df, glmer on the link and the response scale (``type =
"response"``; contrasts by ``regrid``), clmm on the latent scale
(``tests/stats/data/emmeans_reference.json``; R 4.2.2, emmeans 1.8.4-1, lme4 1.1-31, lmerTest
3.1-3, pbkrtest 0.5.2, ordinal 2022.11-16 when written). No R is needed to run these tests; the
slow test regenerates them when R is present.

Tolerances are those of the existing reference tests of each model (the estimates belong to
hce's own fit, which agrees with R's to them): lmer 1e-3 relative on everything
(``test_lmertest_reference.py``); glmer 2e-3 absolute on estimates and limits, 1e-3 relative
on SEs (``test_glmer_reference.py``); clmm 2e-3 absolute on estimates and limits, 1e-2 relative
on SEs (``test_clmm_reference.py``). P values: the same relative tolerance as the SEs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import clmm, glmer, lmer

DATA = Path(__file__).resolve().parent / "data"
FOLDER = {"lmer": "lmertest_reference", "glmer": "glmer_reference", "clmm": "clmm_reference"}
ADJUST = ["tukey", "holm", "bonferroni", "none"]
# (relative tolerance of SE, df and p; absolute tolerance of estimates and limits, None: relative)
TOLERANCE = {"lmer": (1e-3, None), "glmer": (1e-3, 2e-3), "clmm": (1e-2, 2e-3)}


def _cases(path: Path) -> list[dict]:
    fits = json.loads(path.read_text())["fits"]
    out = []
    for ref in fits:
        scales = {"lmer": ["satterthwaite", "kenward-roger"], "glmer": ["link", "response"], "clmm": ["latent"]}
        out += [{**ref, "scale": s} for s in scales[ref["kind"]]]
    return out


CASES = _cases(DATA / "emmeans_reference.json")


def _id(case: dict) -> str:
    return f"{case['kind']}|{case['design']}|{case['formula']}|{case['factor']}|{case['scale']}"


def _columns(table: dict) -> dict:
    """R's JSON writes a length-1 vector as a scalar: make every column a list."""
    return {k: v if isinstance(v, list) else [v] for k, v in table.items()}


_FITS: dict = {}


def _model(case: dict):
    key = (case["kind"], case["design"], case["formula"])
    if key not in _FITS:
        data = pd.read_csv(DATA / FOLDER[case["kind"]] / f"{case['design']}.csv")
        fit = {"lmer": lmer, "clmm": clmm}.get(case["kind"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # boundary fits are compared like any other
            if case["kind"] == "glmer":
                _FITS[key] = glmer(case["formula"], data, family=case["family"])
            else:
                _FITS[key] = fit(case["formula"], data)
    return _FITS[key]


def _emmeans(case: dict, **kwargs) -> pd.DataFrame:
    m = _model(case)
    if case["kind"] == "lmer":
        return m.emmeans(case["factor"], ddf=case["scale"], **kwargs)
    if case["kind"] == "glmer":
        return m.emmeans(case["factor"], scale=case["scale"], **kwargs)
    return m.emmeans(case["factor"], **kwargs)


def _close(case: dict, ours, theirs, what: str, location: bool) -> None:
    rtol, atol = TOLERANCE[case["kind"]]
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    if location and atol is not None:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol, err_msg=what)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-12, err_msg=what)


def _compare_rows(case: dict, out: pd.DataFrame, r: dict) -> None:
    """Estimate, SE, df (R's JSON writes Inf as a string) and interval of every row."""
    _close(case, out["estimate"], r["estimate"], "estimate", True)
    _close(case, out["std_error"], r["se"], "std_error", False)
    r_df = np.array([np.inf if v in (None, "Inf") else v for v in r["df"]], dtype=float)
    _close(case, out["df"], r_df, "df", False)
    _close(case, out["ci_low"], r["lower"], "ci_low", True)
    _close(case, out["ci_high"], r["upper"], "ci_high", True)


def _ref(case: dict) -> dict:
    return case[case["scale"]]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_marginal_means_equal_r_emmeans(case):
    out, r = _emmeans(case), _columns(_ref(case)["means"])
    assert out[case["factor"]].astype(str).tolist() == r["level"]
    _compare_rows(case, out, r)


@pytest.mark.parametrize("adjust", ADJUST)
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_pairwise_contrasts_equal_r_emmeans(case, adjust):
    out, r = _emmeans(case, pairwise=True, adjust=adjust), _columns(_ref(case)["pairs"][adjust])
    assert out["contrast"].tolist() == r["contrast"]
    _compare_rows(case, out, r)
    _close(case, out["p_value"], r["p"], "p_value", False)


def test_contrast_names_wrap_levels_as_emmeans_does():
    """emmeans wraps a level holding -, +, / or * in parentheses (its option ``parens``):
    ``(gpt-4) - llama``; the R session that checked it: ``pairs(emmeans(m, "prompt"))`` on
    ``two_factor`` with p2 renamed ``p-2 x`` printed ``(p-2 x) - p1``."""
    data = pd.read_csv(DATA / "lmertest_reference" / "two_factor.csv")
    data["prompt"] = data["prompt"].replace({"p2": "p-2 x"})
    m = lmer("score ~ prompt * model + (1 | item_id) + (1 | item_id:prompt)", data)
    assert m.emmeans("prompt", pairwise=True)["contrast"].tolist() == [
        "(p-2 x) - p1", "(p-2 x) - p3", "p1 - p3",
    ]  # fmt: skip


def test_contrasts_is_emmeans_without_adjustment_plus_holm():
    """``contrasts()`` is a thin view of ``emmeans(pairwise=True, adjust="none")``: the same
    estimates, SEs, df and p values, plus the Holm-adjusted column."""
    case = next(c for c in CASES if c["kind"] == "lmer" and c["design"] == "two_factor")
    m = _model(case)
    plain = m.emmeans("prompt", pairwise=True, adjust="none")
    holm = m.emmeans("prompt", pairwise=True, adjust="holm")
    old = m.contrasts("prompt")
    np.testing.assert_array_equal(old["estimate"], plain["estimate"])
    np.testing.assert_array_equal(old["p_value"], plain["p_value"])
    np.testing.assert_allclose(old["p_adjusted"], holm["p_value"])
    assert (old["a"] + " - " + old["b"]).tolist() == plain["contrast"].tolist()


def test_emmeans_refuses_a_covariate_and_an_unknown_adjustment():
    case = next(c for c in CASES if c["kind"] == "lmer" and c["design"] == "factor_covariate")
    m = _model(case)
    with pytest.raises(Exception, match="not a categorical fixed effect"):
        m.emmeans("x")
    with pytest.raises(Exception, match="adjust"):
        m.emmeans("condition", pairwise=True, adjust="scheffe")


@pytest.mark.slow
def test_stored_references_are_what_r_emmeans_gives_now(tmp_path):
    """Live oracle: rerun the R script into a temporary folder (with the stored designs) and
    compare with the stored JSON, so a drift of either side shows."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    probe = subprocess.run(["Rscript", "-e", "library(emmeans); library(lmerTest); library(ordinal)"],
                           capture_output=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        pytest.skip("R packages emmeans, lmerTest or ordinal missing")
    for folder in FOLDER.values():
        shutil.copytree(DATA / folder, tmp_path / folder)
    script = Path(__file__).resolve().parent / "r" / "emmeans_reference.R"
    subprocess.run(["Rscript", str(script), str(tmp_path)], check=True, capture_output=True)
    fresh = _cases(tmp_path / "emmeans_reference.json")
    assert [_id(c) for c in fresh] == [_id(c) for c in CASES]
    for case in fresh:
        out, r = _emmeans(case), _columns(_ref(case)["means"])
        _close(case, out["estimate"], r["estimate"], _id(case), True)
        pairs = _columns(_ref(case)["pairs"]["tukey"])
        _close(case, _emmeans(case, pairwise=True)["p_value"], pairs["p"], _id(case), False)
