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
