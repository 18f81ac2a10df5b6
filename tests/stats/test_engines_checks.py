"""The repeated-attempt check of a frame of another engine (issue 43, items 4 and 6): once per
frame, not once per statistic, and exact whatever pass finds the answer.

Before: each statistic re-ran the grouped count of ``attempt_id`` (a full shuffle on Spark: 35
jobs for three statistics), and that count, which holds every id, was the step of a 20M-row
DuckDB report that outgrew 2 GB. Now a pass over 64-bit hashes settles it when every hash is
distinct (equal ids hash alike, so this proves the ids distinct); only fewer hashes than rows
runs the grouped count, which names the first repeated id.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import hce.engine_checks
import hce.stats as hs
import hce.stats._frames as frames
from engine_logs import attempt_log
from hce.errors import DataError, HceWarning

duckdb = pytest.importorskip("duckdb", reason='DuckDB is not installed: pip install "hce[engines]"')
pl = pytest.importorskip("polars", reason='Polars is not installed: pip install "hce[engines]"')
ENGINES = {
    "duckdb": lambda df: duckdb.from_df(df),
    "polars": lambda df: pl.from_pandas(df),
    "polars-lazy": lambda df: pl.from_pandas(df).lazy(),
}


@pytest.fixture(params=list(ENGINES))
def engine(request):
    return ENGINES[request.param]


def test_the_check_runs_once_per_frame_not_once_per_statistic(engine, monkeypatch):
    calls = []
    real = frames.repeated_attempts
    monkeypatch.setattr(frames, "repeated_attempts", lambda native, keys: calls.append(keys) or real(native, keys))
    frame = engine(attempt_log())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        hs.item_spread(frame, score="total")
        hs.item_spread(frame, score="accuracy")
        hs.variance_components(frame, score="total", facets=["item_id", "condition_id"])
    # the same keys: one pass for the three statistics, and one for the attempts' own keys
    assert calls == [["attempt_id"], ["item_id", "condition_id", "attempt"]]
    hs.item_spread(engine(attempt_log()), score="total")  # another frame is checked anew
    assert len(calls) == 4


def test_a_subset_of_a_checked_frame_is_not_checked_again(engine, monkeypatch):
    # a report's frames are subsets of the checked log (one condition, the attempts with a valid
    # score): filtering rows keeps ids unique, so no statistic on them runs the pass again (at 20M
    # rows on DuckDB these repeated passes were 62 s of the report, issue 43)
    from hce.report.log_frame import log_frame, native, of_condition, valid

    calls = []
    real = frames.repeated_attempts
    monkeypatch.setattr(frames, "repeated_attempts", lambda native, keys: calls.append(keys) or real(native, keys))
    log = log_frame(engine(attempt_log()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        hs.item_spread(native(log), score="total")
        for condition in ("C0", "C1"):
            hs.item_spread(native(of_condition(valid(log, "total"), condition)), score="total")
    assert calls == [["attempt_id"], ["item_id", "condition_id", "attempt"]]
    doubled = log_frame(engine(pd.concat([attempt_log(), attempt_log().iloc[[3]]], ignore_index=True)))
    with pytest.raises(DataError, match="appears more than once"):  # a subset of an unchecked frame is checked
        hs.item_spread(native(of_condition(doubled, "C0")), score="total")


def test_one_attempt_under_two_ids_is_refused_as_pandas_refuses_it(engine):
    # before: the engines checked attempt_id alone, so an attempt logged twice under two ids (a
    # log merged with its re-run) was counted twice, silently, where pandas' door refuses it
    log = attempt_log()
    twice = pd.concat([log, log.iloc[[5]].assign(attempt_id="again")], ignore_index=True)
    with pytest.raises(DataError, match="logged twice"):
        hs.item_spread(twice, score="total")
    with pytest.raises(DataError, match=r"1 attempt\(s\) \(item_id, condition_id, attempt\) are logged more than once"):
        hs.item_spread(engine(twice), score="total")


def test_a_repeated_attempt_is_found_and_named(engine):
    log = attempt_log()
    doubled = pd.concat([log, log.iloc[[7, 3]]], ignore_index=True)
    first = min(log["attempt_id"].iloc[[7, 3]])
    with pytest.raises(DataError, match=rf"attempt_id {first!r} appears more than once; 2 attempt id\(s\)"):
        hs.item_spread(engine(doubled), score="total")
    n, found = hce.engine_checks.repeated_attempts(engine(doubled), ["attempt_id"])
    assert (n, found) == (2, first)
    assert hce.engine_checks.repeated_attempts(engine(log), ["attempt_id"]) == (0, None)


def test_an_id_repeated_over_criteria_is_unique_within_them(engine):
    log = attempt_log()
    long = pd.concat([log.assign(criterion=c) for c in ("accuracy", "clarity")], ignore_index=True)
    assert hce.engine_checks.repeated_attempts(engine(long), ["attempt_id", "criterion"]) == (0, None)
    assert hce.engine_checks.repeated_attempts(engine(long), ["attempt_id"])[0] == len(log)


def test_a_hash_collision_falls_back_to_the_exact_count(monkeypatch):
    # fewer distinct hashes than rows without a repeat (what a collision looks like): the grouped
    # count of the ids themselves decides, and finds none
    log = attempt_log()
    relation = duckdb.from_df(log)

    class Colliding:
        __module__ = "duckdb"

        def aggregate(self, _):
            return relation.aggregate("count(*), count(*) - 1")

        def __getattr__(self, name):
            return getattr(relation, name)

    grouped = hce.engine_checks._grouped_repeats
    monkeypatch.setattr(hce.engine_checks, "_grouped_repeats", lambda native, keys: grouped(relation, keys))
    assert hce.engine_checks.repeated_attempts(Colliding(), ["attempt_id"]) == (0, None)


def test_one_conditions_rows_drop_the_condition_from_the_unique_keys(engine):
    # (condition, item, attempt) unique in a log: (item, attempt) is unique within one condition's
    # rows, not within any other subset (two conditions' attempt 1 of one item)
    import narwhals as nw

    from hce.report.log_frame import log_frame, native, of_condition

    log = engine(attempt_log())
    hce.engine_checks.settle_unique(log, ["condition_id", "item_id", "attempt"])
    frame = log_frame(log)
    assert hce.engine_checks.known_unique(native(of_condition(frame, "C0")), ("item_id", "attempt"))
    assert not hce.engine_checks.known_unique(native(frame.where(nw.col("item_id") != "none")), ("item_id", "attempt"))
    doubled = engine(pd.concat([attempt_log(), attempt_log().iloc[[3]]], ignore_index=True))
    hce.engine_checks.settle_unique(doubled, ["condition_id", "item_id", "attempt"])  # a repeat: nothing settled
    assert not hce.engine_checks.known_unique(native(of_condition(log_frame(doubled), "C0")), ("item_id", "attempt"))


def test_a_column_found_finite_is_not_scanned_again_in_the_frame_or_its_subsets(engine):
    # the door's inf/blank probes ran once per statistic: 60 passes, 6.5 s of a 20M-row DuckDB
    # report (issue 43); a column found clean stays clean in any subset of the rows
    import numpy as np

    from hce.report.log_frame import log_frame, native, of_condition

    log = engine(attempt_log())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        hs.item_spread(log, score="total")
        assert hce.engine_checks.known_clean(log, "inf:total") and hce.engine_checks.known_clean(log, "blank:item_id")
        assert hce.engine_checks.known_clean(native(of_condition(log_frame(log), "C0")), "inf:total")
        bad = attempt_log()
        bad.loc[5, "total"] = np.inf
        with pytest.raises(DataError, match="'total' holds 1 non-finite value"):  # another frame: checked anew
            hs.item_spread(native(of_condition(log_frame(engine(bad)), bad.loc[5, "condition_id"])), score="total")


def test_the_valid_attempts_are_known_to_hold_no_blank_and_no_flag(engine):
    # a report's statistics counted the blank scores and the flagged attempts of frames made of
    # the valid attempts only: passes that can only find 0 (issue 43)
    from hce.report.log_frame import log_frame, native, valid

    log = attempt_log()
    log["error_flag"] = False
    log.loc[[2, 9], "error_flag"] = True
    log.loc[4, "total"] = None
    frame = log_frame(engine(log))
    assert frame.count_blank("total") == 1 and frame.count_flagged("error_flag") == 2
    kept = valid(frame, "total")
    assert hce.engine_checks.known_clean(native(kept), "blank:total") and hce.engine_checks.known_clean(native(kept), "flagged:error_flag")
    assert kept.count_blank("total") == 0 and kept.count_flagged("error_flag") == 0 and kept.count_rows() == len(log) - 3
