"""The study report's validity sections (issues 46 and 47): "Agreement with human raters" for an
experiment whose items the humans rated (``humans=``, ``hce report --humans``, a study folder's
humans.csv) and "Judge biases" for an experiment whose rows carry probes, authors or a golden
history; neither without them."""

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.stats._simulate import simulated_log
from hce.study.report import study_report

MODEL = "gpt-4.1-2025-04-14"


@pytest.fixture(scope="module")
def exp2():
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", error_rate=0,
                        noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=12, n_attempts=4)  # fmt: skip
    log = log.assign(model=MODEL, condition_id=log["prompt_id"] + f"|{MODEL}|t0.1")
    # half the transcripts "written" by the judge's own family: the author probe of issue 47
    authors = {item: ("gpt-4o" if k % 2 else "claude-3-5-sonnet") for k, item in enumerate(sorted(log["item_id"].unique()))}
    log["author_model"] = log["item_id"].map(authors)
    rng = np.random.default_rng(0)
    truth = log.groupby("item_id")["target_total"].first()
    humans = pd.DataFrame([{"item_id": item, "rater": f"dr{r}", "total": float(t + rng.integers(-1, 2))}
                           for r in range(2) for item, t in truth.items()])  # fmt: skip
    return log, humans


@pytest.fixture(scope="module")
def built(exp2):  # a study report: 40 s under load 14 (2 cores, 8 engineers), hence the slow marks
    log, humans = exp2
    return study_report(log, humans=humans, random_state=0)


def titles(report):
    return [s.title for s in report.sections]


@pytest.mark.slow
def test_both_sections_appear_per_experiment(built, exp2):
    log, humans = exp2
    assert [t.split(":")[0] for t in titles(built) if t.endswith(("Agreement with human raters", "Judge biases"))] == \
        ["Experiment 2"] * 2
    biases = next(s for s in built.sections if s.title.endswith(": Judge biases"))
    got = next(b.data for b in biases.blocks if hasattr(b, "data"))
    expected = hs.probe_effect(log, probe="author", score=["clarity_of_language"], margin=0.25)
    row = got[got["criterion"] == "clarity_of_language"].iloc[0]
    assert row.estimate == pytest.approx(expected["estimate"].iloc[0])
    humans_section = next(s for s in built.sections if s.title.endswith(": Agreement with human raters"))
    names = {getattr(b, "name", "") for b in humans_section.blocks}
    assert any(n.endswith("human_kappa_total") for n in names) and any(n.endswith("human_budget_total") for n in names)


@pytest.mark.slow
def test_neither_section_without_humans_or_bias_rows(exp2):
    log, _ = exp2
    plain = study_report(log.drop(columns=["author_model"]), random_state=0)
    assert not [t for t in titles(plain) if t.endswith(("Agreement with human raters", "Judge biases"))]


@pytest.mark.slow
def test_ratings_per_experiment_and_ratings_of_none_of_its_items(exp2):
    log, humans = exp2
    log = log.drop(columns=["author_model"])
    built = study_report(log, humans={"EXP2_PromptOptimization": humans}, random_state=0)
    assert "Experiment 2: Agreement with human raters" in titles(built)
    wrong = study_report(log, humans={"EXP2_PromptOptimization": humans.assign(item_id="X" + humans["item_id"])},
                         random_state=0)  # fmt: skip
    assert "Experiment 2: Agreement with human raters" not in titles(wrong)
    entry = next(e for e in wrong.not_reported if e["section"] == "Experiment 2: Agreement with human raters")
    assert "rate none of its 12 items" in entry["reason"]
