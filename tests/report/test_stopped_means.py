"""The report of a log collected under a stopping rule (issue 48): item means over every attempt
with the interval the rule stopped on, and spread from the first min attempts only."""

import warnings

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.report import report
from hce.rubric import Category, Level, Rubric

RUBRIC = Rubric("One", (Category("accurate", "Accurate", tuple(Level(s, str(s), f"level {s}") for s in range(1, 6))),))


def stopped_log(seed=0, n_items=8):
    """Two conditions; each cell 3 attempts, and 4 more where its first three disagree."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        level = rng.integers(2, 5)
        for cond in ("a", "b"):
            scores = list(np.clip(np.rint(level + rng.normal(0, 0.8, 7)), 1, 5).astype(int))
            n = 3 if len(set(scores[:3])) == 1 else 7
            for a in range(1, n + 1):
                rows.append({"attempt_id": f"{i}-{cond}-{a}", "experiment_id": "RULE", "item_id": f"T{i:02d}",
                             "condition_id": cond, "prompt_id": "P1.2", "model": "m1", "attempt": a,
                             "accurate": scores[a - 1], "error_flag": False, "within_min": a <= 3,
                             "stop_rule": '{"min": 3, "max": 7}'})  # fmt: skip
    return pd.DataFrame(rows)


def _table(document, name):
    found = [t for t in document.tables() if t.name == name]
    assert found, f"no table {name!r}; tables: {[t.name for t in document.tables()]}"
    return found[0].data


def test_a_stopped_log_reports_item_means_with_the_rule_s_interval(tmp_path):
    log = stopped_log()
    assert (~log["within_min"]).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = report(log, rubric=RUBRIC, out=tmp_path)
    means = _table(document, "accurate_stopped_item_means")
    want = hs.stopped_item_means(log, score="accurate")
    pd.testing.assert_frame_equal(means.reset_index(drop=True), want, check_dtype=False)
    assert "Chow-Robbins" in (tmp_path / "report.md").read_text()
    # the per-item spread reads the first min attempts only
    spread = _table(document, "accurate_item_spread")
    assert (spread["n"] == 3).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = report(log.drop(columns=["within_min", "stop_rule"]), rubric=RUBRIC, out=tmp_path / "plain")
    assert not [t for t in plain.tables() if t.name.endswith("stopped_item_means")]
