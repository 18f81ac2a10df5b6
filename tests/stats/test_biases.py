"""probe_effect and length_bias (issue 47, item 2) against R and against textbook identities.

R references: ``tests/stats/r/biases_reference.R`` writes the designs
(``tests/stats/data/biases_reference/``) and ``tests/stats/data/biases_reference.json``
(R 4.2.2, lme4 1.1-31, lmerTest 3.1-3, sandwich 3.0-2 when written): lmerTest's Satterthwaite
fit of the probe design with item, item-by-condition and item-by-version random intercepts;
lme4::glmer on 0/1 verdicts; OLS with ``sandwich::vcovCL(type = "HC1")`` (CR1, statsmodels'
``cov_type="cluster"`` default too) and ``coeftest(df = G - 1)`` for the length slope.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import hce.stats as hs
from hce.errors import DataError

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = json.loads((DATA / "biases_reference.json").read_text())


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / "biases_reference" / f"{name}.csv", keep_default_na=False)


def paired_log(n: int = 30, effect: float = 0.4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        level = rng.normal(12, 2)
        for p in (0, 1):
            rows.append({"item_id": f"T{i:02d}", "condition_id": "c" + ("~pad" if p else ""), "probe_id": "pad" if p else "",
                         "base_condition_id": "c", "total": level + effect * p + rng.normal(0, 0.7)})  # fmt: skip
    return pd.DataFrame(rows)


def test_probe_effect_matches_lmertest_with_repeated_attempts_and_two_conditions():
    out = hs.probe_effect(_read("probe"), probe="pad", score="total").iloc[0]
    ref = REFERENCE["probe"]
    assert out["estimate"] == pytest.approx(ref["estimate"], abs=1e-6)
    assert out["std_error"] == pytest.approx(ref["std_error"], rel=1e-4)
    assert out["df"] == pytest.approx(ref["df"], rel=1e-3)
    assert out["p_value"] == pytest.approx(ref["p_value"], rel=1e-3)
    assert "(1 | cell)" in out["method"] and "(1 | ic)" in out["method"]


def test_probe_effect_on_verdicts_is_glmer_and_matches_lme4():
    out = hs.probe_effect(_read("verdict"), probe="swap", score="verdict").iloc[0]
    ref = REFERENCE["probe_glmer"]
    assert out["scale"] == "log odds" and out["method"].startswith("glmer")
    assert out["estimate"] == pytest.approx(ref["estimate"], abs=2e-3)
    assert out["std_error"] == pytest.approx(ref["std_error"], rel=1e-3)


def test_one_attempt_per_item_is_the_paired_t_test():
    # With one condition and one attempt per item and version the mixed model is Student's paired t test.
    log = paired_log()
    out = hs.probe_effect(log, probe="pad").iloc[0]
    wide = log.pivot(index="item_id", columns="probe_id", values="total")
    t = stats.ttest_rel(wide["pad"], wide[""])
    d = wide["pad"] - wide[""]
    assert out["estimate"] == pytest.approx(d.mean(), abs=1e-8)
    assert out["std_error"] == pytest.approx(d.std(ddof=1) / np.sqrt(len(d)), rel=1e-5)
    assert out["df"] == pytest.approx(len(d) - 1, rel=1e-4)
    assert out["p_value"] == pytest.approx(t.pvalue, rel=1e-4)


def test_identical_repeats_in_every_cell_are_fitted_on_the_cell_means():
    """Session 6's probe test: at temperature 0.1 every item's two repeats agreed, the residual
    variance went to 0 and the fit stopped at effect 4.68 with no SE. R 4.2.2's lmerTest stops there
    too: ``lmer(y ~ effect + (1|item) + (1|cell))`` on these 12 rows gives effect 4.2807, df 0.0072,
    "nearly unidentifiable". The limit is the cell-means model; R, lmerTest 3.1-3,
    ``lmer(y ~ effect + (1|item))`` on the 6 cell means: 4.66666666667, SE 1.45296631433, df 2.00000000058,
    P 0.0847913693 (= the paired t test, whose 95% CI is -1.58494281271 to 10.91827614604)."""
    means = {"T1": (14, 19), "T2": (12, 19), "T3": (18, 20)}
    rows = [{"item_id": i, "condition_id": "c" + ("~pad" if p else ""), "probe_id": "pad" if p else "",
             "base_condition_id": "c", "total": float(means[i][p])} for i in means for p in (0, 1) for _ in range(2)]  # fmt: skip
    out = hs.probe_effect(pd.DataFrame(rows), probe="pad").iloc[0]
    assert out["estimate"] == pytest.approx(4.66666666667, abs=1e-8)
    assert out["std_error"] == pytest.approx(1.45296631433, rel=1e-6)
    assert out["df"] == pytest.approx(2.0, rel=1e-6)
    assert out["p_value"] == pytest.approx(0.0847913693, rel=1e-5)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((-1.58494281271, 10.91827614604), rel=1e-5)
    assert out["n"] == 12 and "cell means" in out["method"] and "(1 | cell)" not in out["method"]


def test_tost_says_equivalent_exactly_when_the_90_percent_interval_is_inside_the_margin():
    for seed, effect in [(1, 0.0), (2, 0.05), (3, 0.3), (4, -0.1)]:
        log = paired_log(effect=effect, seed=seed)
        out = hs.probe_effect(log, probe="pad", margin=0.25, confidence=0.90).iloc[0]
        inside = -0.25 < out["ci_low"] and out["ci_high"] < 0.25
        assert bool(out["equivalent"]) == inside
        # Schuirmann: p_TOST is the larger of the one-sided p values.
        tdist = stats.t(out["df"])
        p = max(tdist.sf((out["estimate"] + 0.25) / out["std_error"]), tdist.cdf((out["estimate"] - 0.25) / out["std_error"]))
        assert out["p_equivalence"] == pytest.approx(p, rel=1e-9)


def test_without_margin_there_is_no_equivalence_verdict():
    out = hs.probe_effect(paired_log(), probe="pad")
    assert out["equivalent"].isna().all() and out["p_equivalence"].isna().all()


def test_several_criteria_give_one_row_each():
    log = paired_log().assign(clarity=lambda d: d["total"] / 5)
    out = hs.probe_effect(log, probe="pad", score=["total", "clarity"])
    assert list(out["criterion"]) == ["total", "clarity"]
    assert out["estimate"].iloc[1] == pytest.approx(out["estimate"].iloc[0] / 5)


def test_clmm_on_request():
    rng = np.random.default_rng(5)
    log = paired_log(n=60, seed=5)
    log["score"] = np.clip(np.round(log["total"] / 4 + rng.normal(0, 0.3, len(log))), 2, 4).astype(int)
    out = hs.probe_effect(log, probe="pad", score="score", model="clmm").iloc[0]
    assert out["scale"] == "latent (logit)" and out["method"].startswith("clmm") and out["estimate"] > 0


def test_author_probe_recovers_self_preference():
    # Each text is judged by two families; the judge scores its own family's texts 0.6 higher.
    rng = np.random.default_rng(7)
    rows = []
    for i in range(80):
        author = ["gpt-4o", "claude-3-5-sonnet"][i % 2]
        quality = rng.normal(12, 2)
        for judge in ("gpt-4.1-mini", "claude-3-haiku"):
            own = hs.model_family(judge) == hs.model_family(author)
            rows.append({"item_id": f"T{i}", "condition_id": judge, "model": judge, "author_model": author,
                         "total": quality + 0.6 * own + 0.3 * (judge == "claude-3-haiku") + rng.normal(0, 0.5)})  # fmt: skip
    out = hs.probe_effect(pd.DataFrame(rows), probe="author", margin=0.25).iloc[0]
    assert out["ci_low"] < 0.6 < out["ci_high"] and out["ci_low"] > 0.25
    assert not out["equivalent"]


def test_author_probe_needs_both_kinds_of_text():
    log = pd.DataFrame({"item_id": ["a", "a", "b", "b"], "condition_id": "c", "model": "gpt-4o",
                        "author_model": ["gpt-4o", "gpt-4o", "o3", "o3"], "total": [1.0, 1.5, 2.0, 2.5]})  # fmt: skip
    with pytest.raises(DataError, match="judge's family"):
        hs.probe_effect(log, probe="author")


def test_unknown_probe_names_the_probes_present():
    with pytest.raises(DataError, match=r"probes in the log: \['pad'\]"):
        hs.probe_effect(paired_log(), probe="swap")


def test_length_bias_matches_sandwich_cr1():
    log = _read("length")
    for truth, key in [(None, "length"), ("human", "length_truth")]:
        out = hs.length_bias(log, length="chars", truth=truth).iloc[0]
        ref = REFERENCE[key]
        for column in ("estimate", "std_error", "ci_low", "ci_high"):
            assert out[column] == pytest.approx(ref[column], rel=1e-8)
        assert out["p_value"] == pytest.approx(ref["p_value"], rel=1e-6)
        assert out["df"] == 39


def test_length_bias_takes_a_text_column_as_its_length():
    log = _read("length").assign(text=lambda d: ["x" * int(c) for c in d["chars"]])
    a = hs.length_bias(log, length="text").iloc[0]
    b = hs.length_bias(log, length="chars").iloc[0]
    assert a["estimate"] == pytest.approx(b["estimate"])


def test_model_family_groups_a_provider():
    assert {hs.model_family(m) for m in ("gpt-4o-2024-08-06", "o3-2025-04-16", "gpt-4.1-mini")} == {"openai"}
    assert hs.model_family("claude-3-haiku") != hs.model_family("gemini-1.5-pro")


def test_author_probe_needs_more_than_one_score_per_item():
    log = pd.DataFrame({"item_id": ["a", "b"], "condition_id": "c", "model": "gpt-4o",
                        "author_model": ["gpt-4o", "claude-3-haiku"], "total": [1.0, 2.0]})  # fmt: skip
    with pytest.raises(DataError, match="more than once"):
        hs.probe_effect(log, probe="author")
