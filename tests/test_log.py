import json
import warnings

import numpy as np
import pandas as pd
import pytest

import hce
from hce.errors import LogFormatError
from hce.log import SCHEMA, LogValueWarning, LogWriter, TruncatedLogWarning, logged_attempt_ids, make_attempt_id, to_long, validate_log


def full_log(n=4) -> pd.DataFrame:
    """Every schema column, with missing values, plus extra columns of several types."""
    rows = []
    for i in range(n):
        rows.append(
            {
                "attempt_id": make_attempt_id("EXP2_PromptOptimization", f"T{i // 2}", "P2.1", i % 2 + 1),
                "experiment_id": "EXP2_PromptOptimization",
                "item_id": f"T{i // 2}",
                "condition_id": "P2.1|gpt-4o-mini",
                "prompt_id": "P2.1",
                "model": "gpt-4o-mini",
                "model_version": "gpt-4o-mini-2024-07-18",
                "attempt": i % 2 + 1,
                "timestamp": f"2026-11-21T08:00:0{i}.123456Z",
                "temperature": 0.1,
                "max_tokens": 1000,
                "top_p": None,
                "seed": None if i else 7,
                "request": [{"role": "user", "content": f"Transcript {i}: «café» \"quoted\"\nline"}],
                "response_text": f"Clarity of Language: 3\nTotal Score: {12 + i}",
                "finish_reason": "stop",
                "logprobs": None if i % 2 else [{"token": "3", "logprob": -0.01, "top_logprobs": []}],
                "input_tokens": 1500 + i,
                "output_tokens": 40,
                "cached_tokens": 0,
                "cost_usd": None if i == 3 else 0.000123 * (i + 1),
                "latency_s": 0.5 + i / 10,
                "retries": i % 2,
                "total": None if i == 3 else float(12 + i),
                "verdict": None if i == 2 else bool(i % 2),
                "reasoning": None,
                "confidence": 0.8,
                "confidence_level": "high",
                "error_flag": i == 3,
                "error_message": "unparseable reply" if i == 3 else None,
                "clarity_of_language": None if i == 3 else float(1 + i % 4),
                "transcript_words": 250 + i,
                "source": "DoVA",
                "weight": 0.25 * i,
            }
        )
    return validate_log(pd.DataFrame(rows))


def test_schema_covers_prd_section_8():
    names = [c.name for c in SCHEMA]
    # seed 000 section 8: AttemptID, ExperimentID, TranscriptID, ConditionID, AttemptNum, Timestamp,
    # LLM_Model_Version, FullRequestPrompt, FullLLM_Response, Parsed_Score_Total, Parsed_Reasoning_Text,
    # LLM_Output_Confidence_Score, Cost, API_Latency, Error_Flag, Error_Message.
    for name in ["attempt_id", "experiment_id", "item_id", "condition_id", "attempt", "timestamp",
                 "model_version", "request", "response_text", "total", "reasoning", "confidence",
                 "cost_usd", "latency_s", "error_flag", "error_message"]:
        assert name in names
    assert hce.log.schema_table().shape == (len(SCHEMA), 4)


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_round_trip_preserves_every_column_and_dtype(tmp_path, suffix):
    log = full_log()
    path = tmp_path / f"log.{suffix}"
    hce.write_log(log, path)
    back = hce.read_log(path)
    assert list(back.columns) == list(log.columns)
    assert back.dtypes.to_dict() == log.dtypes.to_dict()
    pd.testing.assert_frame_equal(back, log)
    assert json.loads(back.loc[0, "request"])[0]["content"].startswith("Transcript 0: «café»")
    assert str(back.dtypes["timestamp"]) == "datetime64[us, UTC]"
    assert back.loc[0, "timestamp"] == pd.Timestamp("2026-11-21T08:00:00.123456Z")


def test_parquet_column_selection_reads_required_plus_asked(tmp_path):
    path = tmp_path / "log.parquet"
    hce.write_log(full_log(), path)
    back = hce.read_log(path, columns=["total"])
    assert list(back.columns) == ["attempt_id", "item_id", "attempt", "error_flag", "total"]


def test_jsonl_truncated_last_line_is_reported_and_complete_lines_kept(tmp_path):
    path = tmp_path / "run.jsonl"
    hce.write_log(full_log(), path)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"attempt_id": "zz", "item_id": "T9", "att')  # killed mid-write
    with pytest.warns(TruncatedLogWarning, match=r"line 5 is incomplete .* the 4 complete line\(s\) were read"):
        back = hce.read_log(path)
    assert len(back) == 4
    assert logged_attempt_ids(path) == set(full_log()["attempt_id"])
    # Appending sets the torn line aside (nothing lost) and keeps the log readable.
    with pytest.warns(TruncatedLogWarning, match="moved to run.jsonl.partial"):
        writer = LogWriter(path)
    with writer:
        writer.append({"attempt_id": "zz", "item_id": "T9", "attempt": 1, "error_flag": False})
    assert (tmp_path / "run.jsonl.partial").read_text().startswith('{"attempt_id": "zz"')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(hce.read_log(path)) == 5


def test_jsonl_bad_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"attempt_id": "a", "item_id": "T1", "attempt": 1}\nnot json\n{"attempt_id": "b", "item_id": "T1", "attempt": 2}\n')
    with pytest.raises(LogFormatError, match=r"run.jsonl: line 2 is not valid JSON"):
        hce.read_log(path)


@pytest.mark.parametrize(
    ("suffix", "content", "message"),
    [
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1}\n{"attempt_id": "b", "item_id": "T1", "attempt": "two"}\n',
         r"line 2, column 'attempt': expected a whole number, got 'two'"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1.5}\n',
         r"line 1, column 'attempt': expected a whole number, got 1.5"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "total": true}\n',
         r"line 1, column 'total': expected a number, got True"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "error_flag": "maybe"}\n',
         r"line 1, column 'error_flag': expected true or false, got 'maybe'"),
        # Issue 18: non-finite numbers and impossible attempt numbers are refused at the door.
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "total": NaN}\n',
         r"line 1, column 'total': expected a finite number, got NaN"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "total": 3}\n{"attempt_id": "b", "item_id": "T1", "attempt": 2, "total": Infinity}\n',
         r"line 2, column 'total': expected a finite number, got Infinity"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "clarity_of_language": 1e400}\n',
         r"line 1, column 'clarity_of_language': expected a finite number, got 1e400"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1, "latency_s": -Infinity}\n',
         r"line 1, column 'latency_s': expected a finite number, got -Infinity"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 0}\n',
         r"line 1, column 'attempt': expected a whole number >= 1 .*, got 0"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1}\n{"attempt_id": "b", "item_id": "T1", "attempt": -3}\n',
         r"line 2, column 'attempt': expected a whole number >= 1 .*, got -3"),
        ("csv", "attempt_id,item_id,attempt,total\na,T1,1,inf\n",
         r"row 1 \(line 2\), column 'total': expected a finite number .*, got 'inf'"),
        ("csv", "attempt_id,item_id,attempt,coherence\na,T1,1,2\nb,T1,2,-inf\n",
         r"row 2 \(line 3\), column 'coherence': expected a finite number .*, got -inf"),
        ("csv", "", r"the file is empty; expected a UTF-8 CSV file with a header line"),
        ("csv", "attempt_id,item_id,attempt\na,T1,1\nb,T1,2,3,4\n", r"not a readable CSV file \(.*line 3, saw 5\); values holding ',' must be quoted, and .* separated by ';'"),
        ("parquet", "PAR1 this is not parquet", r"not a readable Parquet file .*expected a Parquet attempt log"),
        ("parquet", "", r"not a readable Parquet file"),
        ("jsonl", '{"attempt_id": "a", "item_id": "T1", "attempt": 1}\n{"attempt_id": "a", "item_id": "T2", "attempt": 1}\n',
         r"attempt_id 'a' appears twice \(line 1 and line 2\)"),
        ("jsonl", '{"attempt_id": "a", "attempt": 1}\n', r"missing required column\(s\) \['item_id'\]"),
        ("jsonl", '[1, 2]\n', r"line 1: expected a JSON object, got list"),
        ("csv", "attempt_id,item_id,attempt,total\na,T1,1,12\nb,T1,2,twelve\n",
         r"row 2 \(line 3\), column 'total': expected a number, got 'twelve'"),
    ],
)
def test_bad_files_name_line_or_row_and_column(tmp_path, suffix, content, message):
    path = tmp_path / f"bad.{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(LogFormatError, match=message) as info:
        hce.read_log(path)
    assert str(path) in str(info.value)


def test_binary_csv_names_the_file_and_byte_offset(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    with pytest.raises(LogFormatError, match=r"log.csv: byte offset 0 .* is not UTF-8 text; expected a UTF-8 CSV"):
        hce.read_log(path)


def test_frames_with_infinity_are_refused_by_validate_log():
    frame = pd.DataFrame({"attempt_id": ["a", "b"], "item_id": ["T1", "T1"], "attempt": [1, 2], "total": [3.0, float("inf")]})
    with pytest.raises(LogFormatError, match=r"row 1, column 'total': expected a finite number"):
        validate_log(frame)
    frame = frame.assign(total=[3.0, None], score=[float("-inf"), 1.0])
    with pytest.raises(LogFormatError, match=r"row 0, column 'score': expected a finite number"):
        validate_log(frame)


def test_parquet_with_infinity_is_refused(tmp_path):
    path = tmp_path / "log.parquet"
    pd.DataFrame({"attempt_id": ["a", "b"], "item_id": ["T1", "T1"], "attempt": [1, 2], "coherence": [2.0, -np.inf]}).to_parquet(path)
    with pytest.raises(LogFormatError, match=r"log.parquet: row 1, column 'coherence': expected a finite number"):
        hce.read_log(path)


def test_semicolon_csv_with_decimal_commas_is_read(tmp_path):
    # A log saved by a spreadsheet in a European locale: ';' between fields, ',' before decimals.
    path = tmp_path / "excel.csv"
    path.write_text("attempt_id;item_id;attempt;total;latency_s;coherence\na;T1;1;12;0,75;2,5\nb;T1;2;13,5;1,25;3\n", encoding="utf-8")
    log = hce.read_log(path)
    assert log["total"].tolist() == [12.0, 13.5]
    assert log["latency_s"].tolist() == [0.75, 1.25]
    assert log["coherence"].tolist() == [2.5, 3.0]


def test_bad_timestamp_is_reported_and_kept_as_text(tmp_path):
    # Excel rewrites ISO timestamps in the local format; no statistic reads them, so the log still loads.
    path = tmp_path / "excel.csv"
    path.write_text("attempt_id,item_id,attempt,timestamp,total\na,T1,1,11/21/2026 08:00,12\nb,T1,2,2026-11-21T08:00:01Z,13\n")
    with pytest.warns(LogValueWarning, match=r"row 1 \(line 2\), column 'timestamp': expected an ISO 8601 timestamp, got '11/21/2026 08:00'.*kept as text"):
        log = hce.read_log(path)
    assert log["timestamp"].tolist() == ["11/21/2026 08:00", "2026-11-21T08:00:01Z"]
    assert log["total"].tolist() == [12.0, 13.0]


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(LogFormatError, match=r"cannot tell the log format from the suffix '.txt'"):
        hce.write_log(full_log(), tmp_path / "log.txt")
    with pytest.raises(LogFormatError, match="no such log file"):
        hce.read_log(tmp_path / "absent.jsonl")


def test_integer_item_ids_become_text_and_error_flag_defaults_false():
    out = validate_log(pd.DataFrame({"attempt_id": ["a", "b"], "item_id": [12, 13], "attempt": [1, 2]}))
    assert out["item_id"].tolist() == ["12", "13"]
    assert out["error_flag"].dtype == bool and not out["error_flag"].any()


def test_long_view_one_row_per_attempt_and_criterion():
    log = full_log()
    long = to_long(log, ["clarity_of_language"])
    assert len(long) == 2 * len(log)  # clarity_of_language + total
    first = long[long["attempt_id"] == log.loc[0, "attempt_id"]]
    assert first[["criterion", "score"]].values.tolist() == [["clarity_of_language", 1.0], ["total", 12.0]]
    errored = long[long["error_flag"]]
    assert errored["score"].isna().all() and len(errored) == 2
    assert long["attempt"].dtype == "Int64"
    with pytest.raises(LogFormatError, match=r"no criterion column\(s\) \['nope'\]"):
        to_long(log, ["nope"])


def test_long_view_takes_criteria_from_the_rubric_and_refuses_to_guess(tmp_path):
    # Issue 18: on a custom-rubric log to_long returned only 'total' (it assumed Rubric v5.0).
    log = validate_log(pd.DataFrame({"attempt_id": ["a", "b"], "item_id": ["T1", "T1"], "attempt": [1, 2],
                                     "accuracy": [3, 4], "tone": [1, 0], "total": [4.0, 4.0]}))
    with pytest.raises(LogFormatError, match=r"cannot tell which columns .* \['accuracy', 'tone'\]; pass criteria="):
        to_long(log)
    rubric = tmp_path / "r.yaml"
    rubric.write_text("name: R\ncategories:\n"
                      "  - {name: Accuracy, levels: [{score: 3, label: a, descriptor: d}, {score: 4, label: b, descriptor: d}]}\n"
                      "  - {name: Tone, levels: [{score: 0, label: a, descriptor: d}, {score: 1, label: b, descriptor: d}]}\n")
    long = to_long(log, rubric=rubric)
    assert long["criterion"].tolist() == ["accuracy", "tone", "total"] * 2
    assert long["score"].tolist() == [3.0, 1.0, 4.0, 4.0, 0.0, 4.0]
    assert to_long(log, [])["criterion"].tolist() == ["total", "total"]
    with pytest.raises(LogFormatError, match=r"no criterion column\(s\) \['clarity_of_language'"):
        to_long(log, rubric="v5")
    v5 = log.assign(**{c: 2 for c in hce.load_rubric("v5").criteria})
    assert len(to_long(v5)) == 2 * 6  # a log holding all of Rubric v5.0's criteria is a v5 log
    assert to_long(log[["attempt_id", "item_id", "attempt", "total"]])["criterion"].tolist() == ["total", "total"]


def test_attempt_id_is_deterministic_and_distinct():
    a = make_attempt_id("E", "T1", "C", 1)
    assert a == make_attempt_id("E", "T1", "C", 1)
    assert len({a, make_attempt_id("E", "T1", "C", 2), make_attempt_id("E", "T11", "C", 1)}) == 3
