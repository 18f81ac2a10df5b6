import json
import warnings

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError, HceWarning, LogFormatError
from hce.importers import (
    ImportProblemWarning,
    MadeUpIdWarning,
    from_geval,
    from_inspect,
    item_means,
    ratings_lists,
    ratings_long,
    ratings_wide,
)


def write_json(tmp_path, obj, name="f.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_geval_maps_replies_to_attempts_and_names_malformed_records(tmp_path):
    records = [
        {"doc_id": "d1", "system_id": "M1", "scores": {"consistency": 4.0}, "all_responses": [1.5, 2.25]},
        "not a record",
        {"doc_id": "d2", "system_id": "M1", "all_responses": []},
        {"doc_id": "d3", "system_id": "M2", "all_responses": ["7", "Score: 3"]},
    ]
    path = write_json(tmp_path, records)
    with pytest.warns(ImportProblemWarning, match=r"2 record problem\(s\), e.g. record 1 field ''"):
        imp = from_geval(path, condition_id="con_detailed", model="gpt-4o", low=1, high=5)
    log = imp.data
    assert log[["item_id", "attempt"]].values.tolist() == [["d1|M1", 1], ["d1|M1", 2], ["d3|M2", 1], ["d3|M2", 2]]
    # A flagged reply has no score (issue 18): the raw reply stays in response_text for audit.
    assert log["total"].tolist()[:2] == [1.5, 2.25] and np.isnan(log.loc[2, "total"]) and log.loc[3, "total"] == 3.0
    assert log["error_flag"].tolist() == [False, False, True, False]
    assert log.loc[2, "error_message"] == "score 7 outside 1-5" and log.loc[2, "response_text"] == "7"
    assert log.loc[0, "human_consistency"] == 4.0 and np.isnan(log.loc[2, "human_consistency"])
    assert log["attempt_id"].is_unique
    assert imp.problems.values.tolist() == [
        [1, "", "expected a JSON object, got str"],
        ["d2|M1", "all_responses", "missing or empty: no judge replies to import"],
    ]
    assert imp.summary().endswith("4 rows imported, 2 problem(s)")


def test_geval_bad_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(DataError, match=r"bad.json: not valid JSON"):
        from_geval(bad, condition_id="x")
    with pytest.raises(DataError, match="expected a JSON list of records, got dict"):
        from_geval(write_json(tmp_path, {"a": 1}), condition_id="x")


def test_geval_topicalchat_matches_published_reshaped_scores(shared_dir):
    # Source: Chiang & Lee (2023) gpt-3.5 G-Eval coherence replies; the shared folder's
    # judge_scores_long.csv is the same data reshaped by its curator (NaN = unparseable).
    folder = shared_dir / "data/topicalchat_gpt35_repeated"
    imp = from_geval(folder / "raw_geval_json/gpt3.5_coh_geval.json", condition_id="geval", item_keys=(), low=1, high=3)
    log = imp.data
    assert len(log) == 359 * 20 and imp.problems.empty
    # The JSON lacks item 69 of items.csv; records are matched to items by response text.
    records = json.loads((folder / "raw_geval_json/gpt3.5_coh_geval.json").read_text())
    items = pd.read_csv(folder / "items.csv")
    by_text = dict(zip(items["response"], items["item_id"]))
    position_to_item = {str(i): by_text[r["system_output"]] for i, r in enumerate(records)}
    reference = pd.read_csv(folder / "judge_scores_long.csv")
    reference = reference[(reference.attribute == "coherence") & (reference.prompt_variant == "geval")]
    reference = reference[reference.item_id != 69]
    merged = log.assign(item=log.item_id.map(position_to_item), sample_idx=log.attempt - 1).merge(
        reference, left_on=["item", "sample_idx"], right_on=["item_id", "sample_idx"]
    )
    assert len(merged) == len(reference)
    ok = merged["score"].notna() & ~merged["error_flag"]
    assert ok.sum() >= 0.99 * len(merged)
    differ = merged[ok & (merged["total"] != merged["score"])]
    assert differ.empty
    # One reply is literally "1.3", off the integer 1-3 scale: flagged with the reason (issue 34; hce kept it as
    # 1.3 before, the curator's reshaping kept its leading integer).
    odd = merged[merged["response_text"] == "1.3"]
    assert odd["error_flag"].tolist() == [True] and odd["error_message"].tolist() == ["score 1.3 is not a level of the scale [1, 2, 3]"]


def inspect_log(samples):
    return {
        "version": 2,
        "status": "success",
        "eval": {"task": "meds", "model": "openai/gpt-4o", "model_generate_config": {"temperature": 0.0, "max_tokens": 200}},
        "samples": samples,
    }


def sample(id_, epoch, value, **extra):
    return {
        "id": id_,
        "epoch": epoch,
        "input": "q",
        "target": "t",
        "output": {
            "model": "gpt-4o-2024-08-06",
            "choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": "ok "}, {"type": "text", "text": "done"}]}, "stop_reason": "stop"}],
            "usage": {"input_tokens": 100, "output_tokens": 7, "input_tokens_cache_read": 64},
            "time": 0.8,
        },
        "scores": {"judge": {"value": value, "explanation": "because"}},
        **extra,
    }


def test_inspect_log_samples_epochs_and_scores(tmp_path):
    path = write_json(
        tmp_path,
        inspect_log([sample(1, 1, "C"), sample(1, 2, "I"), sample("x", 1, 0.5), sample(2, 1, None, error={"message": "timeout"}), sample(3, 1, "maybe")]),
    )
    with pytest.warns(ImportProblemWarning, match="'maybe' is not numeric"):
        imp = from_inspect(path)
    log = imp.data
    assert log[["item_id", "attempt", "total"]].values.tolist()[:3] == [["1", 1, 1.0], ["1", 2, 0.0], ["x", 1, 0.5]]
    first = log.iloc[0]
    assert first["condition_id"] == "meds|openai/gpt-4o" and first["model_version"] == "gpt-4o-2024-08-06"
    assert (first["response_text"], first["input_tokens"], first["cached_tokens"], first["latency_s"]) == ("ok done", 100, 64, 0.8)
    assert first["temperature"] == 0.0 and first["reasoning"] == "because"
    assert log.loc[3, "error_flag"] and log.loc[3, "error_message"] == "timeout"
    assert log.loc[4, "error_flag"] and log.loc[4, "error_message"] == "scorer 'judge' gave no numeric value"


def test_inspect_not_a_log(tmp_path):
    with pytest.raises(DataError, match="not an Inspect AI evaluation log"):
        from_inspect(write_json(tmp_path, [1, 2]))
    with pytest.raises(DataError, match="holds no samples"):
        from_inspect(write_json(tmp_path, inspect_log([])))


def test_ratings_wide_kqa_style_three_physicians(shared_dir):
    # K-QA (Manes et al. 2024): each claim labelled by three physicians (label_0..label_2).
    data = pd.read_csv(shared_dir / "data/kqa/NLI_medical_annotator.csv")
    imp = ratings_wide(data.reset_index(), item="index", raters=["label_0", "label_1", "label_2"])
    table = imp.data
    assert list(table.columns) == ["item_id", "rater_id", "criterion", "score"]
    assert len(table) + len(imp.problems) == 3 * len(data)
    assert set(table["rater_id"]) == {"label_0", "label_1", "label_2"}


def test_ratings_lists_healthbench(shared_dir):
    # HealthBench meta-evaluation: binary physician labels with anonymised ids per item.
    gold = pd.read_json(shared_dir / "data/healthbench_meta_subset/healthbench_meta_gold.jsonl", lines=True)
    imp = ratings_lists(gold, item="item_id", labels="binary_labels", raters="anonymized_physician_ids")
    assert imp.problems.empty
    assert len(imp.data) == gold["binary_labels"].map(len).sum()
    assert set(imp.data["score"].unique()) <= {0.0, 1.0}


def test_ratings_long_duplicate_is_an_error():
    df = pd.DataFrame({"i": [1, 1], "r": ["a", "a"], "s": [1, 2]})
    with pytest.raises(DataError, match=r"rater 'a' rated item 1 on 'score' more than once"):
        ratings_long(df, item="i", rater="r", score="s")
    with pytest.raises(DataError, match=r"no column\(s\) \['nope'\]"):
        ratings_long(df, item="i", rater="r", score="nope")


def test_item_means_and_wide_mixed_criteria():
    df = pd.DataFrame({"item": ["a", "b"], "coh": [2.5, None], "eng": [3.0, 1.0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        imp = item_means(df, item="item", columns=["coh", "eng"])
    assert sorted(imp.data.values.tolist()) == [["a", "mean", "coh", 2.5], ["a", "mean", "eng", 3.0], ["b", "mean", "eng", 1.0]]
    assert imp.problems.values.tolist() == [["b", "score", "no rating from rater 'mean'"]]
    assert len(caught) == 1


# --- issue 18: no silent wrong answer from dirty input -------------------------------------


def six_items(second):
    return pd.DataFrame({"item": list("abcdef"), "r1": [1, 2, 3, 1, 2, 3], "r2": second})


def test_ratings_wide_numbers_and_text_numbers_are_one_scale():
    # Before: 1 and "1" were different categories (percent agreement 0.0 where 5 of 6 items agree).
    with pytest.warns(ImportProblemWarning, match=r"5 text rating\(s\) such as '1' \(row 0\) read as numbers"):
        imp = ratings_wide(six_items(["1", "2", "3", "1", "2", 1]), item="item", raters=["r1", "r2"])
    table = imp.data
    assert table["score"].dtype == "float64" and set(table["score"]) == {1.0, 2.0, 3.0}
    wide = table.pivot(index="item_id", columns="rater_id", values="score")
    assert (wide["r1"] == wide["r2"]).sum() == 5
    assert imp.problems.values.tolist() == [
        ["column r2", "score", "5 text rating(s) such as '1' (row 0) read as numbers, as the other ratings are numbers"]
    ]


def test_ratings_wide_a_label_among_numbers_is_refused_naming_column_row_value():
    with pytest.raises(DataError, match=r"column 'r2', row 2 holds 'three', which is not a number, while other ratings are numbers"):
        ratings_wide(six_items(["1", "2", "three", "1", "2", "1"]), item="item", raters=["r1", "r2"])
    with pytest.raises(DataError, match=r"column 'r1', row 1: rating inf is not a finite number"):
        ratings_wide(six_items([1, 2, 3, 1, 2, 1]).assign(r1=[1, np.inf, 3, 1, 2, 3]), item="item", raters=["r1", "r2"])


def test_ratings_wide_blank_cells_of_a_sparse_design_are_missing_ratings(shared_dir):
    # Medical-safety crowd labels: 3 to 12 crowd raters per item, the other cells blank by design
    # (before: "7,023 problems").
    data = pd.read_csv(shared_dir / "data/medical_safety/crowd_expert_labels_wide.csv")
    crowd = [f"crowd_{i}" for i in range(1, 13)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imp = ratings_wide(data, item="row_idx", criterion="item_type", raters=crowd)
    assert imp.problems.empty
    blank = int(data[crowd].isna().sum().sum())
    assert imp.missing == blank and len(imp.data) + blank == 12 * len(data)
    assert f"{blank:,} blank cell(s) read as missing ratings, 0 problem(s)" in imp.summary()


def test_duplicate_ratings_name_the_users_rows(shared_dir):
    # K-QA repeats some claim texts; before, the error named rows of hce's internal long table.
    data = pd.read_csv(shared_dir / "data/kqa/NLI_medical_annotator.csv")
    with pytest.raises(DataError, match=r"more than once \(rows \[188, 199\] of your table, column 'label_0'\)"):
        ratings_wide(data, item="claim", raters=["label_0", "label_1", "label_2"])
    assert data.loc[188, "claim"] == data.loc[199, "claim"]
    small = pd.DataFrame({"item": ["x", "y", "x"], "a": [1, 2, 3]}, index=[10, 11, 12])
    with pytest.raises(DataError, match=r"rows \[10, 12\] of your table, column 'a'"):
        ratings_wide(small, item="item", raters=["a"])


def test_ratings_lists_missing_lists_are_problems_not_tracebacks():
    df = pd.DataFrame({"id": ["a", "b", "c"], "labels": [[1, 0], [1], np.nan], "who": [["p1", "p2"], np.nan, ["p1"]]})
    with pytest.warns(ImportProblemWarning, match="2 record problem"):
        imp = ratings_lists(df, item="id", labels="labels", raters="who")
    assert imp.problems.values.tolist() == [
        ["b", "who", "expected a list of rater ids, got nan"],
        ["c", "labels", "expected a list of labels, got nan"],
    ]
    assert imp.data["score"].tolist() == [1.0, 0.0]


def test_inspect_structure_errors_name_the_file_and_sample(tmp_path):
    bad_epoch = write_json(tmp_path, inspect_log([sample(1, 1, "C"), sample(1, "two", "C")]), "epoch.json")
    with pytest.raises(LogFormatError, match=r"epoch.json: samples\[1\] \(id 1\): expected a whole number >= 1 as the attempt \(epoch\), got 'two'"):
        from_inspect(bad_epoch)
    zero = write_json(tmp_path, inspect_log([sample(1, 0, "C")]), "zero.json")
    with pytest.raises(LogFormatError, match=r"zero.json: samples\[0\] \(id 1\): .* got 0"):
        from_inspect(zero)
    text_choices = sample(1, 1, "C")
    text_choices["output"]["choices"] = "the answer"
    path = write_json(tmp_path, inspect_log([text_choices]), "choices.json")
    with pytest.raises(LogFormatError, match=r"choices.json: samples\[0\] \(id 1\): field 'output.choices': expected a list of objects, got 'the answer'"):
        from_inspect(path)
    text_output = {**sample(1, 1, "C"), "output": "the answer"}
    with pytest.raises(LogFormatError, match=r"field 'output': expected an object, got str"):
        from_inspect(write_json(tmp_path, inspect_log([text_output]), "output.json"))


def test_inspect_errored_sample_keeps_no_score(tmp_path):
    path = write_json(tmp_path, inspect_log([sample(1, 1, "C", error={"message": "timeout"})]))
    log = from_inspect(path).data
    assert log.loc[0, "error_flag"] and np.isnan(log.loc[0, "total"])


def test_geval_warns_when_it_must_make_item_ids_up(tmp_path):
    # Topical-Chat records have no doc_id: ids like "Original Ground Truth#6" cannot be joined back.
    records = [{"system_id": "Original Ground Truth", "all_responses": ["2"]} for _ in range(3)]
    path = write_json(tmp_path, records)
    with pytest.warns(MadeUpIdWarning, match=r"2 item id\(s\) were made up .* \(e.g. 'Original Ground Truth#1'\).*Pass item_keys="):
        log = from_geval(path, condition_id="g", low=1, high=3).data
    assert log["item_id"].tolist() == ["Original Ground Truth", "Original Ground Truth#1", "Original Ground Truth#2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert from_geval(path, condition_id="g", item_keys=(), low=1, high=3).data["item_id"].tolist() == ["0", "1", "2"]


def test_geval_flagged_reply_keeps_the_reply_and_no_score(tmp_path):
    replies = ["On a scale of 1-5, I would give it a 4.", "1e3", "Score: 2 or 3", "January 26, 1982"]
    path = write_json(tmp_path, [{"doc_id": "d", "all_responses": replies}])
    log = from_geval(path, condition_id="g", low=1, high=5).data
    assert log["total"].tolist()[0] == 4.0 and log["total"].isna().tolist() == [False, True, True, True]
    assert log["error_flag"].tolist() == [False, True, True, True]
    assert log["response_text"].tolist() == replies


def test_geval_binary_or_non_finite_input(tmp_path):
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    with pytest.raises(LogFormatError, match=r"bin.json: byte offset 0 is not UTF-8 text; expected a JSON file"):
        from_geval(binary, condition_id="g")
    path = tmp_path / "nan.json"
    path.write_text('[{"doc_id": "d", "all_responses": [NaN, Infinity, 2]}]')
    log = from_geval(path, condition_id="g", low=1, high=3).data
    assert log["error_flag"].tolist() == [True, True, False]
    assert log["error_message"].tolist()[:2] == ["score nan is not a finite number", "score inf is not a finite number"]
    assert log["total"].isna().tolist() == [True, True, False]
