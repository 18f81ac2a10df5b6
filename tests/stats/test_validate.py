"""The shared door of hce.stats (hce/stats/_validate.py): dirty frames are refused or reported.

Cases from issue 18 ("No silent wrong answer from dirty input"); each failed on main before.
"""

import inspect

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.errors import DataError, HceWarning


def _log(n_items=6, n_attempts=3, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "item_id": np.repeat(np.arange(n_items), n_attempts),
        "attempt": np.tile(np.arange(1, n_attempts + 1), n_items),
        "total": rng.integers(5, 21, n_items * n_attempts).astype(float),
    })  # fmt: skip


def test_a_named_column_the_frame_lacks_lists_the_columns_present():
    with pytest.raises(DataError, match=r"icc: data has no column\(s\) \['score'\]; columns present: \['item_id'"):
        hs.icc(_log(), item="item_id", rater="attempt", score="score")
    with pytest.raises(DataError, match=r"no column\(s\) \['model'\].*columns present"):
        hs.kruskal_wallis(_log(), condition="model", score="total")


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
@pytest.mark.parametrize(
    "call",
    [
        lambda d: hs.item_spread(d, condition=None, error=None),
        lambda d: hs.icc(d, item="item_id", rater="attempt", score="total"),
        lambda d: hs.krippendorff_alpha(d, item="item_id", rater="attempt", score="total", n_boot=0),
        lambda d: hs.lmer("total ~ 1 + (1 | item_id)", d),
        lambda d: hs.variance_components(d, score="total", facets=["item_id"]),
        lambda d: hs.correlation(d.assign(x=np.arange(len(d), dtype=float)), x="x", y="total"),
    ],
    ids=["item_spread", "icc", "krippendorff_alpha", "lmer", "variance_components", "correlation"],
)
def test_non_finite_scores_are_refused_naming_column_and_count(call, bad):
    # Before: item_spread gave SD NaN/inf, icc and lmer NaN with numpy RuntimeWarnings, and
    # krippendorff_alpha on inf said "all pairable ratings are equal".
    log = _log()
    log.loc[[3, 7], "total"] = bad
    with pytest.raises(DataError, match=r"column 'total' holds 2 non-finite value\(s\).*first in row 3"):
        call(log)


def test_numbers_stored_as_text_next_to_numbers_are_read_as_numbers_and_reported():
    # Issue 18: 1 in one rater column and "1" in another; 5 of 6 items agree.
    wide = pd.DataFrame({"item": range(6), "r1": [1, 2, 3, 1, 2, 3], "r2": ["1", "2", "3", "1", "2", "1"]})
    with pytest.warns(HceWarning, match=r"cohen_kappa: ratings in \['r1', 'r2'\] mix numbers and numbers stored as text"):
        kappa = hs.cohen_kappa(wide, rater=["r1", "r2"])  # before: raw ZeroDivisionError
    # Agreement table [[2,0,0],[0,2,0],[1,0,1]]: pa = 5/6, pe = (2*3 + 2*2 + 2*1)/36 = 1/3,
    # kappa = (5/6 - 1/3) / (2/3) = 0.75
    assert kappa.loc[0, "pa"] == pytest.approx(5 / 6) and kappa.loc[0, "estimate"] == pytest.approx(0.75)
    long = pd.DataFrame({"item": np.tile(range(6), 2), "rater": np.repeat(["r1", "r2"], 6),
                         "rating": [*wide["r1"], *wide["r2"]]}, dtype=object)  # fmt: skip
    with pytest.warns(HceWarning, match="mix numbers and numbers stored as text"):
        agreement = hs.percent_agreement(long, item="item", rater="rater", score="rating")
    assert agreement.loc[0, "estimate"] == pytest.approx(5 / 6)  # before: 0.0


def test_text_that_is_not_a_number_next_to_numbers_is_refused_naming_row_and_value():
    wide = pd.DataFrame({"r1": [1, 2, 3], "r2": ["1", "three", "3"]}, index=[10, 11, 12])
    with pytest.raises(DataError, match=r"column 'r2' mixes numbers and text.*row 11 holds 'three'"):
        hs.cohen_kappa(wide, rater=["r1", "r2"])
    log = _log().astype({"total": object})
    log.loc[4, "total"] = "n/a"
    with pytest.raises(DataError, match=r"icc: column 'total' must be numeric; row 4 holds 'n/a'"):
        hs.icc(log, item="item_id", rater="attempt", score="total")


def test_a_numeric_score_column_stored_as_text_is_read_with_a_warning():
    log = _log()
    text = log.assign(total=log["total"].map(lambda v: f"{v:g}"))
    with pytest.warns(HceWarning, match=r"column 'total' holds numbers stored as text \(18 value"):
        got = hs.icc(text, item="item_id", rater="attempt", score="total")
    pd.testing.assert_frame_equal(got, hs.icc(log, item="item_id", rater="attempt", score="total"))


def test_item_ids_mixing_1_and_text_1_are_one_item():
    log = _log().astype({"item_id": object})
    log.loc[log["attempt"] == 2, "item_id"] = log.loc[log["attempt"] == 2, "item_id"].astype(str)
    with pytest.warns(HceWarning, match=r"id column 'item_id' mixes numbers and numbers stored as text"):
        got = hs.icc(log, item="item_id", rater="attempt", score="total")
    assert got.loc[0, "n_items"] == 6
    pd.testing.assert_frame_equal(got, hs.icc(_log(), item="item_id", rater="attempt", score="total"))


def test_blank_ratings_of_a_sparse_design_stay_missing():
    log = _log()
    log.loc[[1, 5], "total"] = np.nan
    out = hs.krippendorff_alpha(log, item="item_id", rater="attempt", score="total", n_boot=0)
    assert out.loc[0, "n_scores"] == 16 and np.isfinite(out.loc[0, "estimate"])


def test_statistics_that_read_a_log_gain_an_error_keyword():
    for name in ["icc", "krippendorff_alpha", "lmer", "spread_model", "variance_components",
                 "vote_confidence", "confidence_table", "correlation"]:  # fmt: skip
        parameter = inspect.signature(getattr(hs, name)).parameters["error"]
        assert parameter.default == "error_flag" and parameter.kind is parameter.KEYWORD_ONLY


def test_an_error_column_the_caller_names_must_exist_but_the_default_may_be_absent():
    hs.icc(_log(), item="item_id", rater="attempt", score="total")  # no error_flag column: nothing flagged
    with pytest.raises(DataError, match=r"no column\(s\) \['failed'\]"):
        hs.icc(_log(), item="item_id", rater="attempt", score="total", error="failed")


def test_flagged_attempts_are_out_of_icc_on_the_topical_chat_geval_log(shared_dir):
    # Issue 18: Chiang & Lee (2023), gpt-3.5 rate-explain coherence replies on Topical-Chat
    # (d223302/A-Closer-Look-To-LLM-Evaluation @9008442; shared data README). One reply quotes
    # "On January 26, 1982, he scored..." and was imported as total = 26 with error_flag set.
    # With that row ICC(1) was 0.637; without it 0.711 (lme4 agrees with both, per the issue).
    from hce.importers import from_geval

    path = shared_dir / "data/topicalchat_gpt35_repeated/raw_geval_json/gpt3.5_coh_rate_explain_auto_cot.json"
    log = from_geval(path, condition_id="rate_explain", item_keys=(), low=1, high=3).data
    flagged = log["error_flag"].astype(bool)
    january = log["response_text"].str.contains("January 26, 1982", regex=False) & flagged
    assert january.sum() == 1
    log.loc[january, "total"] = 26.0  # what the importer read before issue 18, whatever it reads now
    with pytest.warns(HceWarning, match=r"icc: left out \d+ attempt\(s\) flagged in 'error_flag'"):
        got = hs.icc(log, item="item_id", rater="attempt", score="total")
    expected = hs.icc(log[~flagged], item="item_id", rater="attempt", score="total")
    pd.testing.assert_frame_equal(got, expected)
    assert got.loc[0, "metric"] == "ICC1" and got.loc[0, "estimate"] == pytest.approx(0.711, abs=5e-4)
    # error=None uses every row, the old answer (kept for audits of the flagged rows)
    everything = hs.icc(log.assign(total=log["total"].fillna(2.0).where(~flagged | january)),
                        item="item_id", rater="attempt", score="total", error=None)  # fmt: skip
    assert everything.loc[0, "estimate"] < 0.70


def test_a_flagged_attempt_s_garbage_blocks_nothing():
    # A failed reply may leave anything in its score ("1e400" -> inf, text); it is out anyway.
    log = _log().assign(error_flag=False).astype({"total": object})
    log.loc[2, ["total", "error_flag"]] = [np.inf, True]
    log.loc[5, ["total", "error_flag"]] = ["Rating: n/a", True]
    clean = _log().drop(index=[2, 5])
    with pytest.warns(HceWarning, match=r"icc: left out 2 attempt\(s\) flagged in 'error_flag' \(rows 2, 5\)"):
        got = hs.icc(log, item="item_id", rater="attempt", score="total")
    pd.testing.assert_frame_equal(got, hs.icc(clean, item="item_id", rater="attempt", score="total"))
    spread = hs.item_spread(log, condition=None)  # counts them in n_errors, as before
    assert spread["n_errors"].sum() == 2
    np.testing.assert_allclose(spread["sd"], hs.item_spread(clean, condition=None, error=None)["sd"])
