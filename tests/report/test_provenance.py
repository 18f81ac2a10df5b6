"""A condition is its condition_id and its settings; a torn log says so in the report (issue 33)."""

import warnings

import pandas as pd
import pytest
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.log import TruncatedLogWarning
from hce.report import report
from hce.report.provenance import separate_settings


def one_log(condition_id: str, *, max_tokens: int, endpoint: str, seed: int, n_items: int = 6) -> pd.DataFrame:
    """A generic log: one condition, 6 items x 4 attempts, two criteria (the id shared across logs)."""
    rng = pd.Series(range(n_items * 4)).sample(frac=1, random_state=seed).to_numpy()
    rows = []
    for k, (item, attempt) in enumerate((i, a) for i in range(n_items) for a in range(1, 5)):
        rows.append({"attempt_id": f"{endpoint}-{item}-{attempt}", "experiment_id": "MINE", "item_id": f"T{item}",
                     "condition_id": condition_id, "model": "m", "prompt_id": "p", "attempt": attempt,
                     "temperature": 0.1, "max_tokens": max_tokens, "endpoint": endpoint,
                     "clarity": 1 + (item + rng[k]) % 4, "ok": int((item + rng[k]) % 3 == 0), "error_flag": False})  # fmt: skip
    return pd.DataFrame(rows)


def test_two_logs_sharing_a_condition_id_with_other_settings_are_kept_apart(tmp_path):
    a = one_log("plain", max_tokens=1000, endpoint="server-a", seed=1)
    b = one_log("plain", max_tokens=400, endpoint="server-b", seed=2)
    for name, frame in (("a.jsonl", a), ("b.jsonl", b)):
        hce.write_log(frame, tmp_path / name)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                                      "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Condition 'plain' was run with 2 different settings (max_tokens 1000 / 400; endpoint server-a / server-b)" in markdown
    spread = pd.read_csv(tmp_path / "out" / "tables" / "clarity_spread.csv")
    assert sorted(spread["condition_id"]) == ["plain [max_tokens 1000; endpoint server-a]",
                                              "plain [max_tokens 400; endpoint server-b]"]  # two conditions, never one
    assert (spread["n_items"] == 6).all()


def test_one_settings_per_condition_is_left_as_it_is():
    log = one_log("plain", max_tokens=1000, endpoint="server-a", seed=1)
    out, notes = separate_settings(log)
    assert out is log and notes == []


def test_a_torn_last_line_is_in_the_report_itself(tmp_path):
    path = tmp_path / "log.jsonl"
    hce.write_log(one_log("plain", max_tokens=1000, endpoint="a", seed=1), path)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"attempt_id": "a-9-1", "item_id": "T9", "condi')  # a run stopped mid-write
    with pytest.warns(TruncatedLogWarning):
        doc = report(path)
    assert "Incomplete log: " in doc.to_markdown() and "line 25 is incomplete" in doc.to_markdown()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)
        result = CliRunner().invoke(app, ["report", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code in (0, 1), result.output
    assert "Incomplete log: " in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_one_condition_id_in_two_experiments_is_two_analyses_not_a_split():
    # The demo's study report split "P2.3|gpt-4o-2024-08-06|t0.1" of Experiments 3 and 5 (other
    # designs, so other settings hashes) into "[settings ...]" labels, and numbered figures out of order.

    log = pd.DataFrame({"experiment_id": ["E3", "E3", "E5", "E5"], "condition_id": "c",
                        "settings_hash": ["h3", "h3", "h5", "h5"]})  # fmt: skip
    same, notes = separate_settings(log, within=["experiment_id"])
    assert notes == [] and same["condition_id"].tolist() == ["c"] * 4
    split, notes = separate_settings(log)  # the generic report pools experiments by condition id: kept apart
    assert len(notes) == 1 and split["condition_id"].nunique() == 2


def test_one_condition_id_in_two_experiments_of_a_log_is_two_conditions_in_its_report(tmp_path):
    # before: the generic report pooled expA's and expB's "plain" (no settings column told them
    # apart), so their attempts, equal in item and number, were "logged twice": 4 sections not
    # computed and exit 1. Now each run's rows are a condition of their own (runs numbered on from
    # each other still pool: tests/report/test_reviewer_generic.py); and an engine, which does not
    # relabel rows, refuses one condition id under two settings, naming the condition.
    a = one_log("plain", max_tokens=1000, endpoint="server-a", seed=1).drop(columns=["max_tokens", "endpoint"])
    b = one_log("plain", max_tokens=1000, endpoint="server-b", seed=2).drop(columns=["max_tokens", "endpoint"])
    log = pd.concat([a.assign(experiment_id="expA"), b.assign(experiment_id="expB")], ignore_index=True)
    log.to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Condition 'plain' holds the same item and attempt numbers in experiments expA, expB" in markdown
    spread = pd.read_csv(tmp_path / "out" / "tables" / "clarity_item_spread.csv")
    assert sorted(spread["condition_id"].unique()) == ["plain [experiment_id expA]", "plain [experiment_id expB]"]
    pytest.importorskip("duckdb", reason='DuckDB is not installed: pip install "hce[engines]"')
    pd.concat([a, b.assign(max_tokens=400)], ignore_index=True).to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", "duckdb", "--out", str(tmp_path / "e")])
    assert done.exit_code == 2 and "condition 'plain' was run with different max_tokens" in done.output, done.output
