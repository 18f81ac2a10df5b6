"""The Quickstart's `hce demo`: the whole study offline, through the real collection layer."""

import numpy as np
import pandas as pd
import pytest

import hce
from hce.report.generic import Criterion, calibration_data
from hce.stats import calibration
from hce.study.demo import run_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return run_demo(tmp_path_factory.mktemp("demo") / "demo")


def test_demo_runs_the_study_and_writes_the_report(demo):
    markdown = (demo / "report.md").read_text(encoding="utf-8")
    assert markdown.startswith("# hce demo study report — SIMULATED JUDGE")
    for section in ("## Experiment 1", "## Experiment 2", "## Experiment 3", "## Experiment 5",
                    "## Experiment 2: Criterion: Total", "## Experiment 5: Attempts and errors by condition",
                    "## Experiment 5: Calibration (token probabilities)", "## Hand-offs between experiments",
                    "## Cost of the study", "Success metrics scorecard"):
        assert section in markdown
    assert (demo / "report.html").stat().st_size > 50_000  # figures embedded
    exp2 = hce.read_log(demo / "study" / "study_output" / "exp2.jsonl")
    assert len(exp2) == 8 * 3 * 12 and not exp2["error_flag"].any()  # Set A x P2.1-P2.3 x 12 attempts
    assert exp2["system_fingerprint"].str.startswith("fp_hce_sim_").all()


def test_demo_calibration_equals_calibration_metrics(demo):
    exp5 = hce.read_log(demo / "study" / "study_output" / "exp5.jsonl")
    written = pd.read_csv(demo / "tables" / "exp5_calibration.csv")
    # The study report's calibration section is the generic report's, on Exp 5's rows (one condition).
    criteria = [Criterion(c.id, c.name, c.scores) for c in hce.load_rubric("v5").categories]
    data = calibration_data(exp5, criteria)
    direct = calibration.calibration_metrics(data, prob="prob", outcome="outcome", item="item_id", random_state=0)
    np.testing.assert_array_equal(written["estimate"].to_numpy(float), direct["estimate"].to_numpy(float))
    assert (demo / "figures" / "exp5_reliability_diagram.svg").is_file()
