import re

import pandas as pd
from typer.testing import CliRunner

import hce
from hce.cli import app

runner = CliRunner()


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("log", "rubric", "version"):
        assert command in result.output


def test_log_validate_and_convert(tmp_path):
    log = pd.DataFrame({"attempt_id": ["a", "b"], "item_id": ["T1", "T1"], "attempt": [1, 2],
                        "condition_id": ["P2.1", "P2.1"], "error_flag": [False, True]})
    src = tmp_path / "log.jsonl"
    hce.write_log(log, src)
    result = runner.invoke(app, ["log", "validate", str(src)])
    assert result.exit_code == 0
    assert "2 attempts, 1 items, 1 conditions, 1 flagged errors" in result.output
    result = runner.invoke(app, ["log", "convert", str(src), "-o", str(tmp_path / "log.parquet")])
    assert result.exit_code == 0
    assert len(hce.read_log(tmp_path / "log.parquet")) == 2


def test_errors_exit_2_with_message(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"attempt_id": "a", "attempt": 1}\n')
    result = runner.invoke(app, ["log", "validate", str(bad)])
    assert result.exit_code == 2
    assert "missing required column(s) ['item_id']" in result.output


def test_log_validate_refuses_empty_and_torn_logs(tmp_path):
    # Issue 18: an empty or torn-only log was "valid" with exit 0.
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = runner.invoke(app, ["log", "validate", str(empty)])
    assert result.exit_code == 1 and "0 attempts" in result.output and "valid;" not in result.output
    torn_only = tmp_path / "torn_only.jsonl"
    torn_only.write_text('{"attempt_id": "a", "item_id": "T1", "att')
    result = runner.invoke(app, ["log", "validate", str(torn_only)])
    assert result.exit_code == 1 and "line 1 is incomplete" in result.output and "--allow-torn" in result.output
    result = runner.invoke(app, ["log", "validate", "--allow-torn", str(torn_only)])
    assert result.exit_code == 1 and "0 attempts" in result.output
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"attempt_id": "a", "item_id": "T1", "attempt": 1}\n{"attempt_id": "b", "item_id": "T1", "att')
    result = runner.invoke(app, ["log", "validate", str(torn)])
    assert result.exit_code == 1 and "line 2 is incomplete" in result.output
    result = runner.invoke(app, ["log", "validate", "--allow-torn", str(torn)])
    assert result.exit_code == 0 and "valid; 1 attempts" in result.output and "line 2 is incomplete" in result.output


def test_log_validate_refuses_non_finite_and_binary_files(tmp_path):
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"attempt_id": "a", "item_id": "T1", "attempt": 1, "total": NaN}\n')
    result = runner.invoke(app, ["log", "validate", str(nan)])
    assert result.exit_code == 2 and "line 1, column 'total': expected a finite number, got NaN" in result.output
    binary = tmp_path / "log.parquet"
    binary.write_bytes(b"\x00\x01garbage")
    result = runner.invoke(app, ["log", "validate", str(binary)])
    assert result.exit_code == 2 and "not a readable Parquet file" in result.output and "Traceback" not in result.output


def test_rubric_commands():
    result = runner.invoke(app, ["rubric", "show", "v5"])
    assert result.exit_code == 0 and "Criterion 3: Conciseness and Completeness" in result.output
    result = runner.invoke(app, ["rubric", "behavior", "medications_extracted_correct"])
    assert result.exit_code == 0 and "3 pass conditions" in result.output


def _three_prompt_log(tmp_path, experiment_id, n_items, n_attempts, error_rate=0.02):
    from hce.stats._simulate import simulated_log

    log = simulated_log(experiment_id=experiment_id, condition="prompt_id", n_items=n_items, n_attempts=n_attempts,
                        noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, error_rate=error_rate)
    log = log.assign(attempt_id=[f"a{i}" for i in range(len(log))], condition_id=log["prompt_id"])
    path = tmp_path / "log.parquet"
    hce.write_log(log, path)
    return path


def test_report_command(tmp_path):
    # No errored attempts: a balanced design, whose variance components (six criteria) are in closed form
    path = _three_prompt_log(tmp_path, "EXP2_PromptOptimization", 12, 5, error_rate=0)
    result = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rep" / "report.html").is_file()
    assert (tmp_path / "rep" / "tables" / "exp2_friedman.csv").is_file()
    # the study report is the report of any log per experiment plus the study's own sections
    assert (tmp_path / "rep" / "tables" / "exp2_total_sd_test.csv").is_file()


def test_report_of_any_other_log_is_the_generic_report(tmp_path):
    # Issue #21: a log whose experiment_id is not one of the PRD's gets spread, tests, variance
    # decomposition and reliability per condition_id, not the study's Table 1 alone.
    path = _three_prompt_log(tmp_path, "PDSQI_pilot", 10, 4)
    result = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == (1 if "(not computed)" in result.output else 0), result.output  # issue #22's exit codes
    tables = {p.stem for p in (tmp_path / "rep" / "tables").glob("*.csv")}
    assert {"conditions", "total_spread", "total_sd_test", "total_variance_components", "total_reliability"} <= tables
    assert "exp2_friedman" not in tables


def test_report_refuses_a_strata_column_the_log_lacks_before_any_work(tmp_path):
    # Issue #22: --strata sex on a log with gender silently dropped Experiment 5 (exit 0).
    from hce.stats._simulate import simulated_log

    log = simulated_log(n_items=12, n_attempts=3).rename(columns={"sex": "gender"})
    path = tmp_path / "exp5.jsonl"
    hce.write_log(log.assign(attempt_id=[f"a{i}" for i in range(len(log))], condition_id="C1"), path)
    result = runner.invoke(app, ["report", str(path), "--strata", "sex", "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    assert "--strata sex: no such column; columns: " in result.output and "gender" in result.output
    assert not (tmp_path / "rep").exists()


def test_report_exits_1_and_lists_what_was_not_reported(tmp_path):
    # Issue #22: a condition whose totals are all equal made `hce report` exit 2 and write nothing.
    path = _three_prompt_log(tmp_path, "PDSQI_pilot", 10, 4)
    log = hce.read_log(path)
    log.loc[log["condition_id"] == "P2.2", "clarity_of_language"] = 3.0
    hce.write_log(log, path)
    result = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 1, result.output
    assert "not reported (not computed): Criterion: Clarity of Language (clarity_of_language): reliability of P2.2" in result.output
    tables = {p.stem for p in (tmp_path / "rep" / "tables").glob("*.csv")}
    assert {"clarity_of_language_reliability", "not_reported"} <= tables


def test_log_validate_flags_text_in_a_score_column(tmp_path):
    # Issue #22: a value "three" in a criterion column passed `hce log validate` and then dropped a section.
    log = pd.DataFrame({"attempt_id": ["a", "b", "c"], "item_id": ["T1", "T1", "T2"], "attempt": [1, 2, 1],
                        "condition_id": "C", "accuracy": [4, "three", 2], "note": ["x", "y", "z"]})
    path = tmp_path / "log.jsonl"
    hce.write_log(log, path)
    result = runner.invoke(app, ["log", "validate", str(path)])
    assert result.exit_code == 1
    assert "column 'accuracy' holds numbers and text: attempt_id 'b' has 'three'" in result.output
    assert "'note'" not in result.output


def _help_texts(command, path="hce"):
    """Every help text of the command line: each command's and each option's."""
    yield path, command.help or ""
    for param in command.params:
        yield f"{path} {(getattr(param, 'opts', None) or [param.name])[0]}", getattr(param, "help", "") or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, f"{path} {name}")


def test_help_speaks_to_users_not_to_the_spec_files():
    """Issue 36: no internal shorthand ("seed 001 section 3", "Success Metric 6", "Table 3") and
    no literal RST markup (``--allow-torn``) in what ``--help`` prints."""
    import typer

    from hce.cli import app

    shorthand = re.compile(r"seed 00\d|Success Metric \d|Table \d|``")
    found = [f"{where}: {m.group(0)!r}" for where, text in _help_texts(typer.main.get_command(app))
             for m in shorthand.finditer(text)]
    assert not found, "\n".join(found)


def test_example_writes_the_demo_dialogues_as_a_designs_inputs(tmp_path):
    import json

    result = runner.invoke(app, ["example", "-o", str(tmp_path), "--n", "3"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "transcripts").iterdir()) == ["DEMO01.txt", "DEMO02.txt", "DEMO03.txt"]
    rows = [json.loads(line) for line in (tmp_path / "summaries.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["DEMO01", "DEMO02", "DEMO03"]
    assert rows[0]["text"] == (tmp_path / "transcripts" / "DEMO01.txt").read_text()
    too_many = runner.invoke(app, ["example", "-o", str(tmp_path), "--n", "99"])
    assert too_many.exit_code == 2 and "n must be between 1 and 24" in too_many.output


def test_hce_report_ends_without_the_interpreters_teardown_and_loses_no_output(tmp_path):
    # Issue 35: after its files are written `hce report` exits at once (os._exit after the atexit
    # handlers and a flush): the exit status, the printed lines and the files are all there.
    import subprocess
    import sys

    log = _three_prompt_log(tmp_path, "my_eval", 6, 3, error_rate=0)
    code = "import atexit; atexit.register(print, 'atexit ran'); from hce.cli import main; main()"
    command = [sys.executable, "-c", code, "report", str(log), "--out", str(tmp_path / "rep")]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"wrote {tmp_path / 'rep' / 'report.html'} and {tmp_path / 'rep' / 'report.md'}",
                                        "atexit ran"]  # fmt: skip
    assert "not reported (not applicable): Calibration: the log has no token logprobs" in done.stderr
    assert (tmp_path / "rep" / "report.html").read_text().rstrip().endswith("</html>")
    assert (tmp_path / "rep" / ".hce-report").is_file()
