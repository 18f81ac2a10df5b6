"""``hce audit`` end to end through ``hce sim-server`` with a planted length bias (issue 47, item 5)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow  # two processes and ten mixed-model fits: about a minute idle, two and a half under load
def test_audit_recovers_a_planted_length_bias_through_the_cli(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, *sys.path]), "OPENAI_API_KEY": "sk-test"}
    server = subprocess.Popen([sys.executable, "-m", "hce.cli", "sim-server", "--port", "0", "--seed", "3",
                               "--length-bias", "0.8", "--noise", "0.6"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        line = server.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line).group(1)
        items = [{"id": f"T{i}", "text": f"Doctor: How are things, visit {i}?\nPatient: They are fine, thanks {i}."}
                 for i in range(40)]  # fmt: skip
        design = {"experiment_id": "AUDIT", "attempts": 1, "endpoint": {"base_url": url, "needs_key": False},
                  "defaults": {"model": "gpt-4.1-mini", "temperature": 1.0},
                  "conditions": [{"prompt": "P2.1"}], "items": items,
                  "probes": [{"id": "pad", "kind": "pad_neutral", "chars": 1000}, {"id": "labels", "kind": "swap_labels"}]}  # fmt: skip
        path = tmp_path / "design.yaml"
        path.write_text(yaml.safe_dump(design))
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "hce.cli", "audit", str(path), "--log", str(tmp_path / "log.jsonl"),
                                 "-o", str(tmp_path / "audit")],
                                env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert time.monotonic() - started < 600
    finally:
        server.terminate()
        server.wait(10)
        server.stdout.close()
    report = (tmp_path / "audit" / "audit.md").read_text()
    assert "## Judge biases" in report and " | pad | " in report and " | labels | " in report
    probes = pd.read_csv(tmp_path / "audit" / "probes.csv")
    pad = probes[probes["probe"] == "pad"]
    # 0.8 a criterion away from the 1-4 scale's ends; at the ends less: every criterion well above 0, none above 0.8 + CI.
    assert (pad["estimate"] > 0.2).all() and (pad["ci_low"] < 0.8 + 0.05).all()
    assert not probes.loc[probes["probe"] == "pad", "equivalent"].any()
    labels = probes[probes["probe"] == "labels"]
    assert (labels["estimate"].abs() < 0.3).all()


def test_audit_tables_and_report_from_a_log_without_running(tmp_path):
    import numpy as np

    from hce.collect.design.design import load_design
    from hce.study.audit import audit_tables, write_audit

    items = [{"id": f"T{i}", "text": "Doctor: Hi.\nPatient: " + "word " * (5 + 40 * (i % 3))} for i in range(12)]
    design = load_design({"conditions": [{"prompt": "P2.1", "model": "gpt-4o"}], "items": items,
                          "probes": [{"id": "pad", "kind": "pad_neutral", "chars": 200}]})  # fmt: skip
    rng = np.random.default_rng(0)
    rows = []
    for version in ("v1", "v2"):
        for item in design.items:
            for twin in (False, True):
                row = {"item_id": item.id, "condition_id": design.conditions[int(twin)].id, "model_version": version,
                       "probe_id": "pad" if twin else None, "base_condition_id": design.conditions[0].id if twin else None,
                       "error_flag": False}  # fmt: skip
                row.update({c: float(rng.integers(1, 5)) for c in design.rubric.criteria})
                rows.append(row)
    log = pd.DataFrame(rows).assign(condition_id=lambda d: d["condition_id"] + "|" + d["model_version"])
    log["base_condition_id"] = log["base_condition_id"].where(log["probe_id"].isna(), log["base_condition_id"] + "|"
                                                               + log["model_version"])  # fmt: skip
    tables = audit_tables(log, design, margin=0.5)
    assert set(tables) == {"probes", "length_bias", "drift"}
    assert list(tables["probes"]["criterion"]) == design.rubric.criteria
    report = write_audit(tables, tmp_path / "audit").read_text()
    assert report.count(" | pad | ") == 5 and "Length bias" in report and "Golden-set drift" in report
    assert tables["probes"]["equivalent"].notna().all()  # every row gives its verdict
    assert (tmp_path / "audit" / "figures" / "drift_clarity_of_language.png").exists()  # the drift chart
    assert (tmp_path / "audit" / "probes.csv").exists() and (tmp_path / "audit" / "drift.csv").exists()
