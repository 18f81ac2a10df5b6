"""Issue 34: inputs as real tools write them: NA words, round-tripped flags, integer scales."""

import json
import warnings

import pandas as pd
import pytest

import hce
from hce.importers import from_geval, ratings_long
from hce.log import MissingValueWarning


def test_a_csv_log_written_by_r_reads_na_nan_and_null_as_missing_and_counts_them(tmp_path):
    # Issue 34: R's write.csv writes NA for a missing score: refused as "expected a number, got 'NA'".
    path = tmp_path / "from_r.csv"
    path.write_text('"attempt_id","item_id","attempt","total","accuracy","error_flag","response_text"\n'
                    '"a","T1",1,3,2,FALSE,"Score: 3"\n"b","T1",2,NA,NA,TRUE,"NA"\n"c","T2",1,NaN,null,,"x"\n')
    with pytest.warns(MissingValueWarning, match=r"read 4 cells written NA, NaN or null as missing "
                                                 r"\(2 in 'total', 2 in 'accuracy'\)") as caught:
        log = hce.read_log(path)
    assert caught[0].filename == __file__
    assert log["total"].isna().tolist() == [False, True, True] and log["accuracy"].dtype == "float64"
    assert log["error_flag"].tolist() == [False, True, False]  # a blank flag is no flag
    assert log["response_text"].tolist() == ["Score: 3", "NA", "x"]  # a reply may be the word NA


def test_a_ratings_table_reads_na_as_a_missing_rating_and_reports_it():
    table = pd.DataFrame({"item": ["a", "a", "b", "b"], "rater": ["r1", "r2", "r1", "r2"], "score": ["1", "NA", "2", "3"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imported = ratings_long(table, item="item", rater="rater", score="score")
    assert len(imported.data) == 3 and "no rating from rater 'r2'" in str(imported.problems)


def test_a_fractional_reply_on_an_integer_scale_is_flagged_with_the_reason(tmp_path):
    # Issue 34: "1.3" on the integer 1-3 scale was kept as 1.3, and vote_confidence grew a prob_1.3 column.
    path = tmp_path / "geval.json"
    path.write_text(json.dumps([{"doc_id": "d1", "system_id": "s", "all_responses": ["1.3", "2", 3, 2.5]}]))
    data = from_geval(path, condition_id="c", low=1, high=3).data
    assert data["total"].tolist()[1:] == [2.0, 3.0, 2.5] and data["error_flag"].tolist() == [True, False, False, False]
    assert data["error_message"].iloc[0] == "score 1.3 is not a level of the scale [1, 2, 3]"
    continuous = from_geval(path, condition_id="c", low=1.0, high=3.0).data  # floats: a continuous scale
    assert continuous["total"].iloc[0] == 1.3


def test_importing_by_position_warns_when_the_lengths_differ_and_a_real_key_joins(tmp_path):
    # Issue 34: the Topical-Chat guide imported by position beside items.csv: 290 of 359 ids off by one, no warning.
    from hce.importers import MadeUpIdWarning

    records = [{"system_output": f"reply {i}", "all_responses": ["2"]} for i in (0, 1, 3)]  # reply 2 missing
    path = tmp_path / "geval.json"
    path.write_text(json.dumps(records))
    items = pd.DataFrame({"item_id": [10, 11, 12, 13], "response": [f"reply {i}" for i in range(4)]})
    with pytest.warns(MadeUpIdWarning, match=r"3 records numbered by position stand for 4 items: a record is missing"):
        from_geval(path, condition_id="c", item_keys=(), n_items=len(items), low=1, high=3)
    data = from_geval(path, condition_id="c", item_keys=("system_output",), low=1, high=3,
                      ids=dict(zip(items["response"], items["item_id"]))).data
    assert data["item_id"].tolist() == ["10", "11", "13"]


def test_the_topicalchat_guide_join_gives_the_published_judge_human_correlation(shared_dir):
    # Issue 34: by position, judge-vs-human r was 0.154 instead of 0.468 (Chiang & Lee 2023 gpt-3.5 G-Eval
    # coherence replies; items.csv's human coherence, Mehri & Eskenazi 2020), with no warning.
    from hce.importers import MadeUpIdWarning

    folder = shared_dir / "data/topicalchat_gpt35_repeated"
    items = pd.read_csv(folder / "items.csv")
    path = folder / "raw_geval_json/gpt3.5_coh_geval.json"
    human = items.assign(item_id=items["item_id"].astype(str)).set_index("item_id")["human_coherence"]

    def r(data):
        judge = data[~data["error_flag"]].groupby("item_id")["total"].mean()
        both = pd.concat([judge, human], axis=1, join="inner")
        return len(both), round(both.corr().iloc[0, 1], 3)

    joined = from_geval(path, condition_id="geval", item_keys=("system_output",), low=1, high=3,
                        ids=dict(zip(items["response"], items["item_id"]))).data
    assert r(joined) == (359, 0.468)
    with pytest.warns(MadeUpIdWarning, match="359 records numbered by position stand for 360 items"):
        by_position = from_geval(path, condition_id="geval", item_keys=(), n_items=len(items), low=1, high=3).data
    assert r(by_position)[1] < 0.2
