"""The "Agreement with human raters" section on real data (issue 46, item 4): HealthBench's
meta-evaluation subset (pariskang/Med-Bench-Arena @a9beea8, from OpenAI's oss_meta_eval; see
../shared/data/README.md): 120 responses, each graded by 2-4 of 107 physicians and by one strong
LLM grader (criteria met: 0/1). The grader's verdicts are the log; the physicians' verdicts of
the first 60 items (sorted ids) are the human labels, so PPI has unlabelled items to work with.
Skipped when the shared data is absent."""

import json

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.report.generic import report


def healthbench(shared_dir):
    folder = shared_dir / "data" / "healthbench_meta_subset"
    gold, graded = folder / "healthbench_meta_gold.jsonl", folder / "healthbench_meta_strongmodel_labels.jsonl"
    if not (gold.is_file() and graded.is_file()):
        pytest.skip(f"HealthBench meta-evaluation subset not found in {folder}")
    log = pd.DataFrame([{"attempt_id": r["item_id"], "item_id": r["item_id"], "condition_id": "strong-grader", "attempt": 1,
                         "criteria_met": int(r["criteria_met"]), "error_flag": False}
                        for r in map(json.loads, graded.read_text().splitlines())])  # fmt: skip
    humans = pd.DataFrame([{"item_id": r["item_id"], "rater": who, "criteria_met": int(label)}
                           for r in map(json.loads, gold.read_text().splitlines())
                           for who, label in zip(r["anonymized_physician_ids"], r["binary_labels"])])  # fmt: skip
    labelled = sorted(humans["item_id"].unique())[:60]
    return log, humans[humans["item_id"].isin(labelled)]


def test_healthbench_grader_against_the_physicians(shared_dir):
    log, humans = healthbench(shared_dir)
    doc = report(log, humans=humans, random_state=0)
    section = next(s for s in doc.sections if s.title == "Agreement with human raters")
    tables = {b.name: b.data for b in section.blocks if hasattr(b, "data")}
    assert (len(log), humans["item_id"].nunique(), humans["rater"].nunique()) == (120, 60, 71)
    # No physician graded 30 items: the alt-test skips them all and says so (the authors' code divides by zero).
    notes = [b for b in section.blocks if isinstance(b, str)]
    assert any("no human has 30 items" in n for n in notes) and any("71 humans skipped" in n for n in notes)
    kappa = tables["human_kappa_criteria_met"].iloc[0]
    consensus = np.floor(humans.groupby("item_id")["criteria_met"].mean() + 0.5).rename("human")
    wide = log.set_index("item_id")["criteria_met"].rename("judge").to_frame().join(consensus, how="inner").reset_index()
    direct = hs.cohen_kappa(wide, item="item_id", rater=["judge", "human"]).iloc[0]
    assert kappa.human == "humans (consensus)" and kappa.weights == "unweighted" and kappa.n_items == 60
    assert kappa.estimate == pytest.approx(direct.estimate) == pytest.approx(0.5442, abs=5e-4)
    assert (kappa.ci_low, kappa.ci_high) == pytest.approx((0.2718, 0.7359), abs=5e-4)
    ppi = tables["human_ppi_criteria_met"].set_index("method")  # one condition: hs.ppi_mean's rows
    # The pass rate on the physicians' scale: PPI++ from 60 labelled + 60 unlabelled items, beside the grader's own
    # rate (all 120) and the physicians' (60 items).
    assert ppi.loc["judge_only", "estimate"] == pytest.approx(log["criteria_met"].mean())
    assert ppi.loc["classical", "estimate"] == pytest.approx(humans.groupby("item_id")["criteria_met"].mean().mean())
    assert ppi.loc["ppi++", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([0.6492, 0.5521, 0.7462], abs=5e-4)
    budget = tables["human_budget_criteria_met"].set_index("cost_ratio")
    assert budget.loc[0.01, ["n_labelled", "n_unlabelled"]].tolist() == [100, 409]  # ppi_corr 0.453: at 1% of a label's cost
