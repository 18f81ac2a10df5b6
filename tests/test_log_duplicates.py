"""Issue 22, item 2: an attempt counted twice is refused; overlapping logs are merged on purpose.

The cases are those of the issue: a log read with the ``.retried.jsonl`` a retry set its
failed calls aside in (``hce report retry.jsonl retry.jsonl.retried.jsonl`` gave Table 1 with
83 attempts and 23 errors for a 60-attempt, 0-error log), a log passed twice, and
``pd.concat([log, log])`` handed to a statistic (which silently shrank every SD).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import hce
import hce.log_writer
import hce.stats as hs
from hce.cli import app
from hce.collect.running.failed import retried_path, set_aside_failed
from hce.errors import DataError, LogFormatError
from hce.log import LogWriter, combine_logs, make_attempt_id, merge_logs
from hce.stats._simulate import simulated_log

runner = CliRunner()


def exp2_log(n_items: int = 12, n_attempts: int = 5) -> pd.DataFrame:
    """A 3-prompt Experiment 2 log with deterministic attempt ids."""
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=n_items,
                        n_attempts=n_attempts, noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3})  # fmt: skip
    log = log.assign(condition_id=log["prompt_id"])
    ids = [make_attempt_id(e, i, c, a) for e, i, c, a in
           zip(log["experiment_id"], log["item_id"], log["condition_id"], log["attempt"])]  # fmt: skip
    return log.assign(attempt_id=ids)


def retried_run(tmp_path, n_failed: int = 23):
    """What ``hce collect --retry-failed`` leaves: a complete log and the failed rows it set aside.

    The first run's ``n_failed`` calls failed (HTTP 500); the retry moved those rows to
    ``<log>.retried.jsonl`` (the real :func:`set_aside_failed`) and logged their answers.
    """
    log = exp2_log(n_items=4).assign(error_flag=False)  # 4 items x 3 prompts x 5 attempts = 60, no errors
    path = tmp_path / "retry.jsonl"
    first = log.copy()
    failed = first.index[:n_failed]
    first["error_message"] = None
    first.loc[failed, "error_flag"] = True
    first.loc[failed, "total"] = np.nan
    first.loc[failed, "error_message"] = "HTTP 500: server error (after 4 tries)"
    hce.write_log(first, path)
    assert set_aside_failed(path) == n_failed
    with LogWriter(path) as writer:  # the retry logs the answers of the same attempts
        for record in hce.log_writer.records_of(hce.log.validate_log(log.loc[failed])):
            writer.append(record)
    return log, path


def test_two_files_sharing_an_attempt_are_refused_naming_both_files_and_lines(tmp_path):
    log = exp2_log()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    hce.write_log(log.iloc[:30], a)
    hce.write_log(pd.concat([log.iloc[30:40], log.iloc[[2]]]), b)  # a's line 3 again, as b's line 11
    with pytest.raises(LogFormatError) as caught:
        hce.read_log([a, b])
    message = str(caught.value)
    assert f"{a} line 3" in message and f"{b} line 11" in message
    assert log["attempt_id"].iloc[2] in message and "hce log merge" in message


def test_one_file_twice_and_csv_rows_are_named(tmp_path):
    path = tmp_path / "log.csv"
    hce.write_log(exp2_log(), path)
    with pytest.raises(LogFormatError, match=r"log.csv row 1 \(line 2\) and .*log.csv row 1 \(line 2\); 180 attempt ids"):
        hce.read_log([path, path])


def test_disjoint_files_read_as_one_log(tmp_path):
    log = exp2_log()
    paths = [tmp_path / "a.parquet", tmp_path / "b.jsonl"]
    hce.write_log(log.iloc[:100], paths[0])
    hce.write_log(log.iloc[100:], paths[1])
    both = hce.read_log(paths)
    assert len(both) == len(log) and both["attempt_id"].tolist() == log["attempt_id"].tolist()


def test_a_log_with_its_retried_sidecar_is_refused_with_the_fix(tmp_path):
    log, path = retried_run(tmp_path)
    assert len(hce.read_log(path)) == 60 and not hce.read_log(path)["error_flag"].any()
    with pytest.raises(LogFormatError) as caught:
        hce.read_log([path, retried_path(path)])
    message = str(caught.value)
    assert "failed calls a retry took out of" in message and "23 of its rows" in message
    assert f"Pass {path} alone" in message and "hce log merge" in message


def test_merging_a_log_with_its_sidecar_keeps_the_answers(tmp_path):
    log, path = retried_run(tmp_path)
    merged, dropped = merge_logs([retried_path(path), path])  # the failed rows first: order does not matter
    assert len(merged) == 60 and not merged["error_flag"].any()
    assert sorted(merged["attempt_id"]) == sorted(log["attempt_id"])
    assert len(dropped) == 23 and dropped["error_flag"].all() and (dropped["log"] == 1).all()


def test_merge_keeps_the_failed_row_of_an_attempt_never_answered(tmp_path):
    log = exp2_log(n_items=2)
    failed = log.iloc[:3].assign(error_flag=True, total=np.nan)
    merged, dropped = merge_logs([log.iloc[2:], failed])  # attempts 0 and 1 have only a failed row
    assert len(merged) == len(log) and len(dropped) == 1
    assert merged.set_index("attempt_id")["error_flag"][log["attempt_id"].iloc[:2]].all()
    assert not merged.set_index("attempt_id")["error_flag"][log["attempt_id"].iloc[2]]


def test_two_different_answers_for_one_attempt_are_refused_naming_them():
    # Issue 44: two logs with one attempt scored 3 and 5 merged with exit 0, the first kept without a word.
    log = exp2_log(n_items=2)
    other = log.assign(total=log["total"] + 1)
    first = log["attempt_id"].iloc[0]
    with pytest.raises(LogFormatError, match=rf"30 attempt\(s\) have two different answers.*attempt {first} \(log 1 row 1 "
                                             rf"and log 2 row 1\) differs in total: {log['total'].iloc[0]:g} vs "
                                             rf"{log['total'].iloc[0] + 1:g}.*--prefer first\|last\|usable"):
        merge_logs([log, other])
    # The same answer twice (only its call record differs) is one attempt, not a conflict.
    merged, dropped = merge_logs([log, log.assign(latency_s=9.0)])
    assert len(merged) == len(log) and len(dropped) == len(log)


def test_a_flagged_reply_is_not_dropped_for_a_usable_one_without_a_choice():
    # Issue 44: the usable row was kept over the flagged one: 57 flagged rows dropped, the bias --retry-failed avoids.
    log = exp2_log(n_items=1).assign(response_text="Total Score: 12", error_flag=False)
    flagged = log.assign(response_text="I cannot score", error_flag=True, total=np.nan)
    with pytest.raises(LogFormatError, match="differs in"):
        merge_logs([flagged, log])
    merged, _ = merge_logs([flagged, log], prefer="usable")
    assert not merged["error_flag"].any()
    merged, _ = merge_logs([flagged, log], prefer="first")
    assert merged["error_flag"].all()
    merged, _ = merge_logs([flagged, log], prefer="last")
    assert not merged["error_flag"].any()


def test_cli_merge_refuses_a_conflict_and_prefer_chooses(tmp_path):
    log = exp2_log(n_items=1)
    hce.write_log(log, tmp_path / "a.jsonl")
    hce.write_log(log.assign(total=log["total"] + 1), tmp_path / "b.jsonl")
    out = tmp_path / "merged.jsonl"
    refused = CliRunner().invoke(app, ["log", "merge", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--out", str(out)])
    assert refused.exit_code == 2 and "have two different answers" in refused.output and not out.exists()
    chosen = CliRunner().invoke(app, ["log", "merge", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--out", str(out),
                                      "--prefer", "last"])
    assert chosen.exit_code == 0, chosen.output
    assert hce.read_log(out)["total"].fillna(-1).tolist() == (log["total"] + 1).fillna(-1).tolist()


def test_merge_rule_between_two_successful_rows_the_first_given_wins_when_preferred():
    log = exp2_log(n_items=2)
    other = log.assign(total=log["total"] + 1)
    merged, dropped = merge_logs([log, other], prefer="first")
    assert merged["total"].tolist() == log["total"].tolist()
    assert dropped["total"].tolist() == other["total"].tolist() and (dropped["log"] == 2).all()
    assert dropped["row"].tolist() == list(range(1, len(log) + 1))


def test_a_sidecar_read_alone_says_what_it_is(tmp_path):
    log = exp2_log(n_items=1).assign(error_flag=True)
    sidecar = tmp_path / "run.jsonl.retried.jsonl"
    hce.write_log(log.iloc[:2], sidecar)
    with open(sidecar, "a") as f:  # the same attempt failed on two retries
        f.write(sidecar.read_text().splitlines()[0] + "\n")
    with pytest.raises(LogFormatError, match=r"line 1 and line 3\).*not an attempt log.*read .*run.jsonl instead"):
        hce.read_log(sidecar)


def test_combine_logs_refuses_frames_sharing_an_attempt():
    log = exp2_log(n_items=2)
    with pytest.raises(LogFormatError, match=r"\(log 1 row 4 and log 2 row 1; 27 attempt ids"):
        combine_logs([log, log.iloc[3:]])


def test_cli_report_refuses_a_log_with_its_sidecar_and_writes_nothing(tmp_path):
    _, path = retried_run(tmp_path)
    out = tmp_path / "rep"
    result = runner.invoke(app, ["report", str(path), str(retried_path(path)), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "failed calls a retry took out of" in " ".join(result.output.split())
    assert not out.exists()


def test_cli_report_refuses_one_log_passed_twice(tmp_path):
    path = tmp_path / "log.jsonl"
    hce.write_log(exp2_log(), path)
    result = runner.invoke(app, ["report", str(path), str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2
    output = " ".join(result.output.split())
    assert "appears twice" in output and "line 1 and" in output and "has 2 ratings" not in output


def test_cli_log_merge(tmp_path):
    log, path = retried_run(tmp_path)
    out = tmp_path / "merged.parquet"
    result = runner.invoke(app, ["log", "merge", str(path), str(retried_path(path)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "60 attempts; left out 23 repeated row(s) (23 flagged, 0 successful ones after the first)" in " ".join(result.output.split())
    merged = hce.read_log(out)
    assert len(merged) == 60 and not merged["error_flag"].any()
    result = runner.invoke(app, ["log", "merge", str(path), str(retried_path(path)), "-o", str(path)])
    assert result.exit_code == 2 and "replace one of its inputs" in result.output


def test_study_report_refuses_a_log_given_twice():
    from hce.study import study_report

    log = exp2_log()
    with pytest.raises(LogFormatError, match="appears twice"):
        study_report([log, log])


def test_item_spread_refuses_a_log_concatenated_with_itself():
    # Before: the SDs of the doubled log were silently smaller (n - 1 grows faster than the sum of squares).
    log = exp2_log()
    with pytest.raises(DataError, match=r"appears in rows 0 and 0 \(positions 0 and 180\); 180 attempt id"):
        hs.item_spread(pd.concat([log, log]))
    long = hce.to_long(log, [])
    assert len(hs.item_spread(long, score="score", criterion="criterion")) == len(hs.item_spread(log))
    with pytest.raises(DataError, match="appears in rows 0 and 0 \\(positions 0 and 180\\)"):
        hs.item_spread(pd.concat([long, long]), score="score", criterion="criterion")


def test_experiment2_refuses_a_repeated_attempt():
    from hce.study import experiment2

    log = exp2_log()
    with pytest.raises(DataError, match="experiment2: attempt_id"):
        experiment2(pd.concat([log, log.iloc[[5]]], ignore_index=True))


def test_study_report_takes_frames_without_attempt_ids():
    """Simulated logs have no attempt_id: nothing to compare, and the report still reads them."""
    from hce.study import study_report

    log = simulated_log(n_items=8, n_attempts=3)
    assert "attempt_id" not in log.columns
    assert study_report([log, simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                                            n_items=8, n_attempts=3)]).tables()  # fmt: skip


def test_a_log_changed_in_place_after_a_check_is_checked_again():
    # The door remembers a unique attempt_id column (a report hands one log to dozens of
    # statistics); an id written into that column afterwards must still be caught.
    log = exp2_log()
    hs.item_spread(log)
    log.loc[4, "attempt_id"] = log.loc[3, "attempt_id"]  # the same item and condition
    with pytest.raises(DataError, match=r"appears in rows 3 and 4"):
        hs.item_spread(log)


def test_a_table_of_ratings_of_attempts_is_not_a_log_with_repeats():
    # Two raters per attempt: attempt_id repeats once per rater, which the call names.
    ratings = pd.DataFrame({"attempt_id": np.repeat([f"a{i}" for i in range(12)], 2), "item_id": np.repeat(range(12), 2),
                            "rater": ["r1", "r2"] * 12, "score": np.tile([1, 2, 3, 4, 5, 3], 4)})  # fmt: skip
    assert len(hs.krippendorff_alpha(ratings, item="item_id", rater="rater", score="score", n_boot=0)) == 1
    assert len(hs.krippendorff_alpha(ratings, item="attempt_id", rater="rater", score="score", n_boot=0)) == 1
    with pytest.raises(DataError, match=r"appears in rows 4 and 4 \(positions 4 and 24\)"):
        hs.krippendorff_alpha(pd.concat([ratings, ratings.iloc[[4]]]), item="item_id", rater="rater", score="score", n_boot=0)
