"""Lazy attempt logs larger than memory: hce.read_log(path, engine=...) and hce report --engine (issue 37)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from engine_logs import SPARK_WARNING, local_spark
from typer.testing import CliRunner

import hce
import hce.stats as hs
from hce.cli import app
from hce.engine_checks import known_unique
from hce.engines import AUTO_BYTES, choose_engine, scan_log
from hce.errors import HceWarning, LogFormatError

INSTALL = 'pip install "hce[engines]"  (duckdb, polars)'
duckdb = pytest.importorskip("duckdb", reason=f"DuckDB is not installed: {INSTALL}")
pl = pytest.importorskip("polars", reason=f"Polars is not installed: {INSTALL}")
#: The engines read_log opens, each with what a test of it needs installed.
LAZY = ["duckdb", "polars", pytest.param("dask", marks=pytest.mark.skipif(
    importlib.util.find_spec("dask") is None, reason='Dask is not installed: pip install "hce[dask]"'))]  # fmt: skip
#: The same engines, for a test that reads with each in turn.
IN_TURN = ["duckdb", "polars", *(["dask"] if importlib.util.find_spec("dask") else [])]
pytestmark = [
    # narwhals 2.x announces that its Dask support moves to the narwhals-dask package (third-party, not ours)
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
    # Dask's Arrow string handling uses NumPy's 'a' alias, seen where pytest.warns records every warning
    pytest.mark.filterwarnings("ignore:Data type alias 'a' was deprecated:DeprecationWarning"),
    # Dask's Parquet reader resets each partition's index in place, which pandas 3.1 deprecates (Dask's code)
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]


def small_log(n_items: int = 8, n_conditions: int = 2, n_attempts: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = [{"attempt_id": f"{i}-{c}-{a}", "experiment_id": "my_eval", "item_id": f"T{i}", "condition_id": f"C{c}",
             "attempt": a, "accuracy": float(rng.integers(1, 6)), "error_flag": bool(rng.random() < 0.05)}
            for i in range(n_items) for c in range(n_conditions) for a in range(1, n_attempts + 1)]  # fmt: skip
    log = pd.DataFrame(rows)
    log.loc[log["error_flag"], "accuracy"] = np.nan
    return log


def partitioned(log: pd.DataFrame, folder) -> None:
    """One Parquet file per condition, in Hive folders (condition_id=C0/part-0.parquet)."""
    for condition, part in log.groupby("condition_id"):
        (folder / f"condition_id={condition}").mkdir(parents=True)
        part.drop(columns="condition_id").to_parquet(folder / f"condition_id={condition}" / "part-0.parquet", index=False)


@pytest.mark.parametrize("engine", LAZY)
def test_a_partitioned_parquet_log_is_read_lazily_and_gives_pandas_numbers(tmp_path, engine):
    log = small_log()
    partitioned(log, tmp_path / "log")
    lazy = hce.read_log(tmp_path / "log", engine=engine)
    assert not isinstance(lazy, pd.DataFrame) and known_unique(lazy)
    expected = hs.item_spread(log, score="accuracy")
    got = hs.item_spread(lazy, score="accuracy")
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9)


@pytest.mark.parametrize("engine", LAZY)
def test_a_jsonl_log_is_read_lazily(tmp_path, engine):
    log = small_log()
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log.astype(object).where(log.notna(), None).to_dict("records")))
    got = hs.item_spread(scan_log(path, engine=engine), score="accuracy")
    pd.testing.assert_frame_equal(got, hs.item_spread(log, score="accuracy"), check_dtype=False, rtol=1e-9)


@pytest.mark.parametrize("engine", LAZY)
def test_a_repeated_attempt_is_refused_by_the_engine_that_reads_the_log(tmp_path, engine):
    log = small_log()
    pd.concat([log, log.iloc[[4]]]).to_parquet(tmp_path / "twice.parquet", index=False)
    with pytest.raises(LogFormatError, match=r"attempt_id '0-1-2' appears more than once; 1 attempt id"):
        hce.read_log(tmp_path / "twice.parquet", engine=engine)


def test_the_log_checks_run_in_the_engine(tmp_path):
    log = small_log()
    log.drop(columns="item_id").to_parquet(tmp_path / "no_item.parquet", index=False)
    with pytest.raises(LogFormatError, match=r"no column\(s\) \['item_id'\]"):
        scan_log(tmp_path / "no_item.parquet")
    # a flag written as text (a CSV round trip) is read as booleans, anything else refused by value
    log.assign(error_flag=log["error_flag"].map({True: "true", False: "False"})).to_parquet(tmp_path / "text.parquet", index=False)
    lazy = scan_log(tmp_path / "text.parquet", engine="polars")
    assert lazy.select(pl.col("error_flag").sum()).collect().item() == int(log["error_flag"].sum())
    log.assign(error_flag="maybe").to_parquet(tmp_path / "bad.parquet", index=False)
    with pytest.raises(LogFormatError, match="'maybe'"):
        scan_log(tmp_path / "bad.parquet")
    log.drop(columns="error_flag").to_parquet(tmp_path / "no_flag.parquet", index=False)
    assert "error_flag" in scan_log(tmp_path / "no_flag.parquet").columns


def test_auto_reads_small_logs_into_pandas(tmp_path):
    small_log().to_parquet(tmp_path / "log.parquet", index=False)
    assert (tmp_path / "log.parquet").stat().st_size < AUTO_BYTES
    assert choose_engine(tmp_path / "log.parquet", "auto") == "pandas"
    assert isinstance(hce.read_log(tmp_path / "log.parquet", engine="auto"), pd.DataFrame)
    assert len(hce.read_log(tmp_path, engine="pandas")) == len(small_log())  # a directory, read in pandas
    with pytest.raises(LogFormatError, match=r"small enough for pandas .* hce.read_log\(path, engine='auto'\)"):
        scan_log(tmp_path / "log.parquet", engine="auto")  # the lazy opener leaves pandas to read_log
    with pytest.raises(LogFormatError, match="engine='sql' is not valid"):
        hce.read_log(tmp_path / "log.parquet", engine="sql")


def same_report(pandas_out, engine_out) -> None:
    """The report of an engine's log is the pandas report: every table (to rounding) and the text."""
    names = sorted(p.name for p in (pandas_out / "tables").glob("*.csv"))
    assert names == sorted(p.name for p in (engine_out / "tables").glob("*.csv"))
    for name in names:
        expected, got = pd.read_csv(pandas_out / "tables" / name), pd.read_csv(engine_out / "tables" / name)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, obj=name)
    assert (engine_out / "report.md").read_text() == (pandas_out / "report.md").read_text()


@pytest.mark.parametrize("engine", ["duckdb", LAZY[-1]])
def test_hce_report_in_an_engine_is_the_pandas_report(tmp_path, engine):
    # Issue 49: one report pipeline; before, an engine's report left out reliability, cost and calibration
    log = small_log(n_items=10, n_conditions=3, n_attempts=4)
    log.to_parquet(tmp_path / "log.parquet", index=False)
    partitioned(log, tmp_path / "parts")
    runner = CliRunner()
    in_pandas = runner.invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "pandas")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        in_engine = runner.invoke(app, ["report", str(tmp_path / "parts"), "--engine", engine, "--out", str(tmp_path / engine)])
    # narwhals' notice that its Dask support moves to another package is no news to the report's reader
    assert not [w for w in caught if "narwhals" in str(w.message)]
    assert in_engine.exit_code == in_pandas.exit_code == 0, in_engine.output + in_pandas.output
    same_report(tmp_path / "pandas", tmp_path / engine)
    assert "accuracy_reliability.csv" in {p.name for p in (tmp_path / engine / "tables").iterdir()}


@pytest.mark.parametrize("engine", LAZY)
def test_a_report_runs_no_grouped_pass_over_ids_of_a_log_without_repeats(tmp_path, engine, monkeypatch):
    # A grouped count of attempt ids, or of (item, attempt) pairs within a condition, holds every
    # key: at 20M rows on DuckDB the report's per-criterion id checks took 13.6 s and the
    # repeated-rating checks of ICC and alpha 15 s (issue 43). The log is checked once when read
    # (one pass over hashes), its criterion frames inherit that, and one more pass over hashes
    # settles every condition's ratings; a grouped pass runs only where a repeat may be.
    import hce.engine_checks
    import hce.stats._frames as frames
    import hce.stats.reliability._engine as ratings

    log = small_log(n_items=10, n_conditions=3, n_attempts=4)
    partitioned(log, tmp_path / "parts")
    checks, grouped = [], []
    real_check, real_grouped = frames.repeated_attempts, hce.engine_checks._grouped_repeats
    monkeypatch.setattr(frames, "repeated_attempts", lambda native, keys: checks.append(keys) or real_check(native, keys))
    monkeypatch.setattr(hce.engine_checks, "_grouped_repeats", lambda native, keys: grouped.append(keys) or real_grouped(native, keys))
    real_ratings = ratings.distinct_by_hash
    rating_checks = []
    monkeypatch.setattr(ratings, "distinct_by_hash", lambda native, keys: rating_checks.append(keys) or real_ratings(native, keys))
    done = CliRunner().invoke(app, ["report", str(tmp_path / "parts"), "--engine", engine, "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "out" / "tables" / "accuracy_reliability.csv").exists()
    # the read's check holds for every criterion frame, the report's one pass over (condition,
    # item, attempt) hashes for every condition's ratings; Dask, which has no hash pass, takes one
    # grouped count of each (before: one per criterion, condition and statistic)
    once = [["attempt_id"], ["condition_id", "item_id", "attempt"]] if engine == "dask" else []
    assert checks == [] and grouped == once and rating_checks == []
    # a repeated (item, attempt) pair within a condition is still named
    one = log[log["condition_id"] == "C0"]
    doubled = one.assign(attempt=np.where((one["item_id"] == "T0") & (one["attempt"] == 2), 1, one["attempt"]))
    if engine == "dask":
        import dask.dataframe as dd

        lazy = dd.from_pandas(doubled, npartitions=2)
    else:
        lazy = duckdb.from_df(doubled) if engine == "duckdb" else pl.from_pandas(doubled).lazy()
    with pytest.raises(hce.errors.DataError, match=r"ratings by rater|logged more than once"), warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # its flagged attempts are left out, as said
        hs.icc(lazy, item="item_id", rater="attempt", score="accuracy")


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("polars", marks=pytest.mark.slow)])
def test_a_log_with_cost_logprobs_errors_and_a_binary_criterion_gives_the_pandas_report(tmp_path, engine):
    # Issue 33 and 49: a 0/1 criterion is analysed as binary in every engine (shares, flips, nominal
    # agreement, the binomial GLMM); cost, not-applicable answers and calibration are the pandas report's too.
    log = small_log(n_items=12, n_conditions=2, n_attempts=4)
    rng = np.random.default_rng(5)
    log["stigma"] = (rng.random(len(log)) < np.where(log["condition_id"] == log["condition_id"].min(), 0.3, 0.6)).astype(float)
    log["error_message"] = np.where(log["error_flag"], "cut reply", None)
    log["not_applicable"] = np.where(np.arange(len(log)) % 5 == 0, "accuracy", None)
    log.loc[log["not_applicable"].notna(), "accuracy"] = np.nan
    log["cost_usd"], log["latency_s"] = 0.001 * (1 + np.arange(len(log)) % 3), 0.5 + (np.arange(len(log)) % 7) / 10
    log["input_tokens"], log["cached_tokens"], log["output_tokens"] = 1000, 0, 40
    log.to_parquet(tmp_path / "log.parquet", index=False)
    partitioned(log, tmp_path / "parts")
    runner = CliRunner()
    in_pandas = runner.invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "pandas")])
    in_engine = runner.invoke(app, ["report", str(tmp_path / "parts"), "--engine", engine, "--out", str(tmp_path / engine)])
    assert in_engine.exit_code == in_pandas.exit_code, in_engine.output + in_pandas.output
    same_report(tmp_path / "pandas", tmp_path / engine)
    produced = {p.stem for p in (tmp_path / engine / "tables").glob("*.csv")}
    assert {"stigma_binary", "stigma_condition_test", "stigma_condition_effects", "stigma_agreement", "cost",
            "errors", "not_applicable"} <= produced  # fmt: skip


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_a_torn_log_and_another_served_model_are_noted_from_the_engine_as_in_pandas(engine):
    # Issue 49: the overview's notes come from grouped passes in the engine (items x conditions), not the attempts
    from hce.report.logs import missing_attempts
    from hce.report.provenance import served_models

    log = small_log(n_items=6, n_conditions=2, n_attempts=3).drop(index=[2, 7, 8])
    log["model"], log["model_version"] = "gpt-4o-mini", np.where(log["condition_id"] == "C1", "gemma-3-270m", "gpt-4o-mini")
    lazy = pl.from_pandas(log).lazy() if engine == "polars" else duckdb.connect().from_df(log)
    expected = missing_attempts(log, {"my_eval": {"T0", "T9"}}, {"my_eval": {"C0": 4, "C7": 2}})
    assert len(expected) == 3 and "T9: 4" in expected[0]
    assert missing_attempts(lazy, {"my_eval": {"T0", "T9"}}, {"my_eval": {"C0": 4, "C7": 2}}) == expected
    assert missing_attempts(lazy) == missing_attempts(log) != []
    assert served_models(lazy) == served_models(log) != []


# --- issue 43: Hive folders read the same in every engine and in pandas ---------------------

#: Every reader of a log folder: pandas (hce.read_log's default) and the lazy engines.
READERS = ["pandas", *LAZY]


def _read_back(path, engine: str) -> pd.DataFrame:
    """The log ``engine`` reads at ``path``, as a pandas frame sorted by attempt."""
    import narwhals as nw

    read = hce.read_log(path, engine=engine)
    frame = read if isinstance(read, pd.DataFrame) else nw.from_native(read).lazy().collect().to_pandas()
    return frame.sort_values("attempt_id").reset_index(drop=True)


def partitioned_jsonl(log: pd.DataFrame, folder) -> None:
    for condition, part in log.groupby("condition_id"):
        (folder / f"condition_id={condition}").mkdir(parents=True)
        records = part.drop(columns="condition_id").astype(object).where(part.notna(), None).to_dict("records")
        (folder / f"condition_id={condition}" / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("layout", [partitioned, partitioned_jsonl], ids=["parquet", "jsonl"])
@pytest.mark.parametrize("engine", READERS)
def test_a_hive_folder_keeps_its_partition_column_in_every_reader(tmp_path, engine, layout):
    # before: the default (pandas) reader dropped condition_id silently, and every engine dropped it from JSONL folders
    log = small_log()
    layout(log, tmp_path / "log")
    got = _read_back(tmp_path / "log", engine)
    assert got["condition_id"].astype(str).tolist() == log.sort_values("attempt_id")["condition_id"].tolist()
    if engine == "pandas":
        pd.testing.assert_frame_equal(hs.item_spread(hce.read_log(tmp_path / "log"), score="accuracy"),
                                      hs.item_spread(log, score="accuracy"), check_dtype=False)  # fmt: skip


@pytest.mark.parametrize("engine", READERS)
def test_a_column_both_in_the_files_and_the_folder_name_is_refused_unless_equal(tmp_path, engine):
    # before: DuckDB, Polars and Dask silently took the folder's value over the file's
    log = small_log()
    for condition, part in log.groupby("condition_id"):
        (tmp_path / "same" / f"condition_id={condition}").mkdir(parents=True)
        part.to_parquet(tmp_path / "same" / f"condition_id={condition}" / "part-0.parquet", index=False)
    assert _read_back(tmp_path / "same", engine)["condition_id"].astype(str).tolist() == \
        log.sort_values("attempt_id")["condition_id"].tolist()  # fmt: skip
    bad = tmp_path / "other" / "condition_id=C9"
    bad.mkdir(parents=True)
    log.to_parquet(bad / "part-0.parquet", index=False)
    with pytest.raises(LogFormatError, match=r"part-0.parquet: column 'condition_id' is both in the file \(e.g. 'C0'.*"
                                             r"and in its folder name \(condition_id=C9\)"):  # fmt: skip
        hce.read_log(tmp_path / "other", engine=engine)


@pytest.mark.parametrize("engine", READERS)
def test_a_jsonl_file_naming_another_condition_after_its_first_line_is_refused(tmp_path, engine):
    # before: only line 1 was read for the file's columns; a condition_id from line 2 on was
    # overwritten by the folder's in every engine, silently (pandas refused)
    import json

    folder = tmp_path / "log" / "condition_id=X"
    folder.mkdir(parents=True)
    log = small_log()
    records = log.astype(object).where(log.notna(), None).to_dict("records")  # JSON null, not NaN
    del records[0]["condition_id"]
    (folder / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(LogFormatError, match=r"part-0.jsonl: column 'condition_id' is both in the file \(e.g. 'C0'.*"
                                             r"and in its folder name \(condition_id=X\)"):  # fmt: skip
        hce.read_log(tmp_path / "log", engine=engine)


@pytest.mark.parametrize("engine", READERS)
def test_jsonl_files_whose_keys_differ_or_come_late_read_as_in_pandas(tmp_path, engine):
    # before: Dask took the first file's keys for every file (a KeyError at compute time), Polars
    # typed a key from its first 100 lines (text after 100 nulls stopped it), and both stopped on
    # an empty file
    import json

    log = small_log(n_items=40)
    log["error_message"] = None
    log.loc[len(log) - 3:, "error_message"] = "no score in the reply"
    records = log.astype(object).where(log.notna(), None).to_dict("records")
    for record in records[len(records) // 2:]:
        record["note"] = "second file"  # a key the first file lacks
    half = len(records) // 2
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "a.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "error_message"}) + "\n"
                                                      for r in records[:half]))  # fmt: skip
    (tmp_path / "log" / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[half:]))
    (tmp_path / "log" / "c.jsonl").write_text("")
    got = _read_back(tmp_path / "log", engine)
    assert len(got) == len(log) and got["note"].notna().sum() == len(log) - half
    assert got["error_message"].notna().sum() == 3
    pd.testing.assert_frame_equal(hs.item_spread(hce.read_log(tmp_path / "log", engine=engine), score="accuracy"),
                                  hs.item_spread(log, score="accuracy"), check_dtype=False)  # fmt: skip


@pytest.mark.parametrize("engine", LAZY)
def test_files_of_one_kind_in_other_widths_read_and_an_engines_own_refusal_exits_2(tmp_path, engine):
    # before: int32 attempts in one file and int64 in the next, or timestamps in two zones, stopped
    # Polars with a traceback (exit 1)
    log = small_log()
    (tmp_path / "log").mkdir()
    log.iloc[:20].astype({"attempt": "int32"}).to_parquet(tmp_path / "log" / "a.parquet", index=False)
    log.iloc[20:].to_parquet(tmp_path / "log" / "b.parquet", index=False)
    got = hs.item_spread(hce.read_log(tmp_path / "log", engine=engine), score="accuracy")
    pd.testing.assert_frame_equal(got, hs.item_spread(log, score="accuracy"), check_dtype=False)
    stamps = pd.Series(pd.date_range("2026-01-01", periods=len(log), freq="min"))
    log.iloc[:20].assign(timestamp=stamps[:20].dt.tz_localize("UTC")).to_parquet(tmp_path / "log" / "a.parquet", index=False)
    log.iloc[20:].assign(timestamp=stamps[20:].to_numpy()).to_parquet(tmp_path / "log" / "b.parquet", index=False)
    try:
        hs.item_spread(hce.read_log(tmp_path / "log", engine=engine), score="accuracy")
    except LogFormatError as err:  # an engine that cannot stack the two reads is named, and the report exits 2
        assert f"{engine} could not read the log" in str(err)
        done = CliRunner().invoke(app, ["report", str(tmp_path / "log"), "--engine", engine, "--out", str(tmp_path / "out")])
        assert done.exit_code == 2 and "could not read the log" in done.output, done.output


def test_a_file_value_that_differs_from_its_folder_only_by_spaces_is_refused(tmp_path):
    # before: ' C1 ' in the file under condition_id=C1 passed as equal; pandas and Dask then kept the
    # file's value and DuckDB, Polars and Spark the folder's: two conditions' labels
    folder = tmp_path / "log" / "condition_id=C1"
    folder.mkdir(parents=True)
    small_log().assign(condition_id=" C1 ").to_parquet(folder / "part-0.parquet", index=False)
    for engine in ["pandas", *IN_TURN]:
        with pytest.raises(LogFormatError, match=r"column 'condition_id' is both in the file \(e.g. ' C1 '"):
            hce.read_log(tmp_path / "log", engine=engine)


@pytest.mark.parametrize("damage", [b"", b"PAR1 not a parquet file"], ids=["empty", "corrupt"])
@pytest.mark.parametrize("engine", LAZY)
def test_an_empty_or_corrupt_parquet_file_is_named_and_the_report_exits_2(tmp_path, engine, damage):
    # before: a 100-line traceback and exit 1 (Polars did not name the file)
    partitioned(small_log(), tmp_path / "log")
    (tmp_path / "log" / "condition_id=C1" / "part-1.parquet").write_bytes(damage)
    with pytest.raises(LogFormatError, match=r"condition_id=C1/part-1.parquet: not a readable Parquet file"):
        hce.read_log(tmp_path / "log", engine=engine)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log"), "--engine", engine, "--out", str(tmp_path / "out")])
    assert done.exit_code == 2 and "part-1.parquet: not a readable Parquet file" in done.output, done.output


@pytest.mark.parametrize("engine", LAZY)
def test_a_blank_attempt_id_is_reported_as_blank_not_as_a_repeat(tmp_path, engine):
    # before: "attempt_id nan appears more than once"
    log = small_log().astype({"attempt_id": object})
    log.loc[[2, 5], "attempt_id"] = None
    log.to_parquet(tmp_path / "log.parquet", index=False)
    with pytest.raises(LogFormatError, match=r"column 'attempt_id' is blank in 2 row\(s\)"):
        hce.read_log(tmp_path / "log.parquet", engine=engine)


def _attempt_from_zero(log):
    return log.assign(attempt=log["attempt"] - 1)


def _half_attempt(log):
    log = log.astype({"attempt": float})
    log.loc[3, "attempt"] = 1.5
    return log


def _blank_item(log):
    log = log.astype({"item_id": object})
    log.loc[[1, 4], "item_id"] = None
    return log


@pytest.mark.parametrize("engine", LAZY)
@pytest.mark.parametrize(("damage", "expected"), [
    (_attempt_from_zero, r"column 'attempt': expected a whole number >= 1 \(attempts count from 1\), got 0"),
    (_half_attempt, r"column 'attempt': expected a whole number.*got 1\.5"),
    (_blank_item, r"column 'item_id'.*(missing|blank in 2 row)"),
])  # fmt: skip
def test_attempts_not_counted_from_1_and_blank_items_are_refused_as_pandas_refuses_them(tmp_path, engine, damage, expected):
    # before: pandas refused the log (exit 2) and every engine wrote a report of it and exited 1 (an
    # attempt log counted from 0 at 20M rows on DuckDB; the engines also read 1.5 and a blank item)
    damage(small_log()).to_parquet(tmp_path / "log.parquet", index=False)
    for reader in ("pandas", engine):
        with pytest.raises(LogFormatError, match=expected):
            hce.read_log(tmp_path / "log.parquet", engine=reader)
        done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", reader, "--out", str(tmp_path / "out")])
        assert done.exit_code == 2 and ("'attempt'" in done.output or "'item_id'" in done.output), done.output


@pytest.mark.parametrize("engine", LAZY)
def test_attempts_written_as_text_or_missing_read_as_in_pandas(tmp_path, engine):
    # pandas' door reads "2" as the attempt 2 and a missing attempt as missing; so does each engine
    log = small_log().astype({"attempt": str})
    log.to_parquet(tmp_path / "text.parquet", index=False)
    gaps = small_log().astype({"attempt": float})
    gaps.loc[3, "attempt"] = np.nan
    gaps.to_parquet(tmp_path / "gaps.parquet", index=False)
    for name in ("text", "gaps"):
        read = hce.read_log(tmp_path / f"{name}.parquet", engine=engine)
        got = pd.Series(nw_attempts(read)).sort_values(ignore_index=True)
        want = hce.read_log(tmp_path / f"{name}.parquet")["attempt"].astype(float).sort_values(ignore_index=True)
        pd.testing.assert_series_equal(got, want, check_names=False)


def nw_attempts(native) -> np.ndarray:
    import narwhals as nw

    frame = nw.from_native(native)
    frame = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
    return frame.select(nw.col("attempt").cast(nw.Float64)).collect().to_pandas()["attempt"].to_numpy()


@pytest.mark.parametrize("engine", LAZY)
def test_an_infinite_score_is_refused_on_reading_as_pandas_refuses_it(tmp_path, engine):
    # before: pandas refused the log (exit 2) and every engine wrote the report, the criterion
    # "not computed", and exited 1 (an independent check, -inf in one criterion)
    log = small_log()
    log["smooth"] = log["accuracy"] + 0.25
    log.loc[4, "smooth"] = -np.inf
    log.to_parquet(tmp_path / "log.parquet", index=False)
    for reader in ("pandas", engine):
        with pytest.raises(LogFormatError, match=r"column 'smooth'.*finite number"):
            hce.read_log(tmp_path / "log.parquet", engine=reader)
        done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", reader, "--out", str(tmp_path / "out")])
        assert done.exit_code == 2 and "'smooth'" in done.output, done.output


def test_a_memory_limit_that_is_not_a_size_is_refused_before_any_work(tmp_path):
    # before: DuckDB's "ParserException: Memory must have a number" as a traceback, exit 1
    small_log().to_parquet(tmp_path / "log.parquet", index=False)
    with pytest.raises(LogFormatError, match=r"memory limit 'lots' is not a size"):
        scan_log(tmp_path / "log.parquet", engine="duckdb", memory="lots")
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", "duckdb", "--memory-limit", "lots",
                                    "--out", str(tmp_path / "out")])  # fmt: skip
    assert done.exit_code == 2 and "is not a size" in done.output, done.output
    from hce.engine_readers import spark_size

    assert [spark_size(m) for m in ("2GB", "1.5GB", "512MiB", " 3 gb ")] == ["2g", "1536m", "512m", "3g"]


def test_memory_limit_reaches_duckdb_and_spark_options_are_checked(tmp_path, monkeypatch):
    small_log().to_parquet(tmp_path / "log.parquet", index=False)
    lazy = scan_log(tmp_path / "log.parquet", memory="300MB")
    assert lazy.query("log", "SELECT current_setting('memory_limit') AS m").fetchall()[0][0].startswith("286")  # 300 MB in MiB
    runner = CliRunner()
    for extra, said in ((["--engine", "duckdb", "--spark-master", "local[1]"], "need --engine spark"),
                        (["--engine", "spark", "--spark-conf", "spark.driver.memory"], "write KEY=VALUE"),
                        (["--memory-limit", "1GB"], "applies to --engine duckdb or spark")):  # fmt: skip
        done = runner.invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "out"), *extra])
        assert done.exit_code == 2 and said in done.output, done.output
    # the Spark session a report starts gets the master, the settings and the driver's memory
    import hce.engines as engines

    made = {}

    class Builder:
        def master(self, url):
            made["master"] = url
            return self

        def config(self, key, value):
            made[key] = value
            return self

        def getOrCreate(self):
            return "session"

    class Session:
        builder = Builder()

        @staticmethod
        def getActiveSession():
            return None

    monkeypatch.setitem(__import__("sys").modules, "pyspark.sql", type("module", (), {"SparkSession": Session}))
    assert engines.spark_session("local[2]", {"spark.executor.memory": "8g"}, "3GB") == "session"
    assert made == {"master": "local[2]", "spark.executor.memory": "8g", "spark.driver.memory": "3g"}


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_report_of_everything_the_log_supports_exits_0(tmp_path, engine):
    # before: a pandas report of a log without cost columns exited 1, and so did an engine report
    # of a 0/1 criterion (its row-level sections, which the engine cannot compute, counted as failures)
    log = small_log(n_items=12, n_conditions=2, n_attempts=4)
    log["stigma"] = (np.random.default_rng(5).random(len(log)) < 0.4).astype(float)
    log.to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", engine, "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "not reported (not applicable): Cost and tokens" in done.output


def test_an_object_store_path_goes_to_the_engine_that_reads_it(tmp_path, monkeypatch):
    # before: `hce report s3a://...` was refused (local paths only). No network: Spark's reader is
    # replaced by one that records the URL and returns a Polars frame of a small log
    import hce.engine_readers as readers

    log = small_log(n_items=10, n_conditions=2, n_attempts=3)
    asked = []

    class Reader:
        def parquet(self, url):
            asked.append(url)
            return pl.from_pandas(log).lazy()

    monkeypatch.setattr(readers, "spark_session", lambda **settings: type("Session", (), {"read": Reader()})())
    for url in ("s3a://bucket/judge-logs/", "gs://bucket/logs", "abfss://c@acct.dfs.core.windows.net/logs", "hdfs://nn/logs"):
        assert known_unique(hce.read_log(url, engine="spark"))  # checked once, in the engine
    assert asked == ["s3a://bucket/judge-logs/", "gs://bucket/logs", "abfss://c@acct.dfs.core.windows.net/logs", "hdfs://nn/logs"]
    done = CliRunner().invoke(app, ["report", "s3a://bucket/judge-logs", "--engine", "spark", "--out", str(tmp_path / "out")])
    assert done.exit_code == 0 and asked[-1] == "s3a://bucket/judge-logs", done.output
    refused = CliRunner().invoke(app, ["report", "s3a://bucket/judge-logs", "--out", str(tmp_path / "out2")])
    assert refused.exit_code == 2 and "add --engine spark" in refused.output, refused.output
    with pytest.raises(LogFormatError, match="not 'pandas'"):
        hce.read_log("s3a://bucket/judge-logs")


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_criterion_whose_repeats_never_differ_is_a_result_and_the_report_exits_0(tmp_path, engine):
    # issue 45: the demo's own report exited 1 because three Exp 5 criteria had no within-item variance (their variance
    # decompositions "not computed"); every repeat alike is a finding about the judge, stated in its section
    from hce.report.sections import NO_WITHIN_VARIANCE

    log = small_log(n_items=12, n_conditions=2, n_attempts=4)
    log["steady"] = log.groupby(["item_id", "condition_id"])["accuracy"].transform("first").fillna(3.0)
    log.loc[log["error_flag"], "steady"] = np.nan
    log.to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--engine", engine, "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "steady" not in done.output  # nothing about it under "not reported"
    text = (tmp_path / "out" / "report.md").read_text()
    assert f"Variance decomposition of steady: {NO_WITHIN_VARIANCE}" in text
    assert (tmp_path / "out" / "tables" / "accuracy_variance_components.csv").is_file()  # the varying criterion keeps its own


def test_a_variance_decomposition_that_fails_still_exits_1(tmp_path, monkeypatch):
    from hce.errors import DataError

    def fails(*args, **kwargs):
        raise DataError("the model did not fit")

    monkeypatch.setattr(hs, "variance_components", fails)
    small_log(n_items=12, n_conditions=2, n_attempts=4).to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "out")])
    assert done.exit_code == 1, done.output
    assert "not reported (not computed)" in done.output and "the model did not fit" in done.output


# ``hce report FOLDER``: a log folder or a study's output folder, each read as what it is (hce._cli_report)


def partitioned_csv(log: pd.DataFrame, folder) -> None:
    for condition, part in log.groupby("condition_id"):
        (folder / f"condition_id={condition}").mkdir(parents=True)
        part.drop(columns="condition_id").to_csv(folder / f"condition_id={condition}" / "part-0.csv", index=False)


def folder_report_is_the_logs(tmp_path, log: pd.DataFrame, layout, *options: str) -> None:
    """``hce report FOLDER`` of ``log`` laid out in a folder by ``layout`` is the report of the log as one file."""
    log.to_parquet(tmp_path / "log.parquet", index=False)
    layout(log, tmp_path / "parts")
    runner = CliRunner()
    one = runner.invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "one")])
    folder = runner.invoke(app, ["report", str(tmp_path / "parts"), *options, "--out", str(tmp_path / "folder")])
    assert folder.exit_code == one.exit_code == 0, folder.output
    same_report(tmp_path / "one", tmp_path / "folder")  # condition_id from the folder names, every condition there


@pytest.mark.parametrize("layout", [partitioned, partitioned_jsonl, partitioned_csv], ids=["parquet", "jsonl", "csv"])
def test_hce_report_of_a_hive_log_folder_is_the_report_of_its_log(tmp_path, layout):
    # before: any folder was taken for a study's output folder: "no attempt log of a judged
    # experiment (exp1.jsonl, ...); is it a study's output folder?", exit 2
    folder_report_is_the_logs(tmp_path, small_log(n_items=10, n_conditions=3, n_attempts=4), layout)


def in_three_files(log: pd.DataFrame, folder) -> None:
    folder.mkdir()
    for k in range(3):
        log.iloc[k::3].to_parquet(folder / f"part-{k}.parquet", index=False)


def test_a_folder_of_plain_log_files_is_read_as_one_log(tmp_path):
    folder_report_is_the_logs(tmp_path, small_log(n_items=10, n_conditions=2, n_attempts=4), in_three_files)


def test_auto_reads_a_small_hive_folder_in_pandas_with_its_partition_column(tmp_path):
    # before: --engine auto under 256 MB picked pandas, which took the folder for a study's and failed
    folder_report_is_the_logs(tmp_path, small_log(n_items=10, n_conditions=3, n_attempts=4), partitioned, "--engine", "auto")


@pytest.mark.parametrize("content", [None, "README.txt"], ids=["empty", "no-logs"])
def test_a_folder_that_is_neither_is_refused_saying_what_was_looked_for(tmp_path, content):
    (tmp_path / "folder").mkdir()
    if content:
        (tmp_path / "folder" / content).write_text("notes")
    done = CliRunner().invoke(app, ["report", str(tmp_path / "folder"), "--out", str(tmp_path / "out")])
    assert done.exit_code == 2, done.output
    words = " ".join(done.output.split())
    assert "neither a study's output folder (it holds none of exp1.jsonl, exp2.jsonl, exp3.jsonl, exp5.jsonl)" in words
    assert "nor a folder of attempt logs (no .parquet, .csv, .jsonl file in it or its subfolders)" in words


def test_a_study_output_folder_goes_to_the_study_report(tmp_path):
    from hce._cli_report import folder_kind, read_report_log

    small_log().to_json(tmp_path / "exp1.jsonl", orient="records", lines=True)
    (tmp_path / "exp4").mkdir()  # a study's other files, JSONL among them, do not make it a log folder
    (tmp_path / "exp4" / "codes.jsonl").write_text("")
    assert folder_kind(tmp_path) == "study"
    assert read_report_log([tmp_path], "pandas", "strict", {}) == (None, str(tmp_path))
    assert read_report_log([tmp_path], "auto", "strict", {}) == (None, str(tmp_path))


def test_a_study_output_folder_in_an_engine_is_refused_naming_the_fix(tmp_path):
    small_log().to_json(tmp_path / "exp1.jsonl", orient="records", lines=True)
    done = CliRunner().invoke(app, ["report", str(tmp_path), "--engine", "duckdb", "--out", str(tmp_path / "out")])
    assert done.exit_code == 2 and "is a study's output folder" in done.output and "drop --engine duckdb" in done.output, done.output


def test_a_folder_with_log_files_beside_it_is_refused(tmp_path):
    partitioned(small_log(), tmp_path / "parts")
    small_log().to_parquet(tmp_path / "log.parquet", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "parts"), str(tmp_path / "log.parquet"), "--out", str(tmp_path / "out")])
    assert done.exit_code == 2 and "not both" in done.output, done.output


def test_a_log_folder_mixing_formats_is_refused_naming_them(tmp_path):
    partitioned(small_log(), tmp_path / "parts")
    small_log().to_csv(tmp_path / "parts" / "extra.csv", index=False)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "parts"), "--out", str(tmp_path / "out")])
    said = " ".join(done.output.split())
    assert done.exit_code == 2 and "share one format and one file ending, found .csv (extra.csv), .parquet" in said, said
    for engine in IN_TURN:  # before: DuckDB, Polars and Dask read the Parquet half, silently, and exited 0
        with pytest.raises(LogFormatError, match=r"holds CSV files \(e.g. .*extra.csv\), which a lazy engine does not read"):
            hce.read_log(tmp_path / "parts", engine=engine)


def test_files_of_other_endings_are_named_not_dropped(tmp_path):
    # before: beside a.parquet, b.PARQUET and c.pq were read by some engines and left out by others, silently
    partitioned(small_log(), tmp_path / "parts")
    (tmp_path / "parts" / "condition_id=C1" / "part-0.parquet").rename(tmp_path / "parts" / "condition_id=C1" / "part-0.PARQUET")
    for engine in ["pandas", *IN_TURN]:
        with pytest.raises(LogFormatError, match=r"one file ending, found .PARQUET \(condition_id=C1/part-0.PARQUET\), .parquet"):
            hce.read_log(tmp_path / "parts", engine=engine)
    # one ending throughout, in any case or spelling, is read (.pq, .ndjson as .parquet and .jsonl)
    for file in (tmp_path / "parts").rglob("*.parquet"):
        file.rename(file.with_suffix(".PARQUET"))
    expected = hce.read_log(tmp_path / "parts").sort_values("attempt_id", ignore_index=True)
    assert len(expected) == len(small_log())
    for engine in IN_TURN:
        got = hs.item_spread(hce.read_log(tmp_path / "parts", engine=engine), score="accuracy")
        pd.testing.assert_frame_equal(got, hs.item_spread(expected, score="accuracy"), check_dtype=False)


def test_partition_folders_are_text_percent_decoded_and_one_layout(tmp_path):
    # before: condition_id=01 and condition_id=1 were one condition on Polars and Spark (numbers
    # guessed) and a Dask error; a%20b was "a%20b" in pandas and "a b" in every engine; a Hive folder
    # beside top-level files crashed DuckDB, Polars and Dask and was half read by Spark
    log = small_log(n_conditions=3)
    log["condition_id"] = log["condition_id"].map({"C0": "01", "C1": "1", "C2": "a b"})
    for value, rows in log.groupby("condition_id"):
        folder = tmp_path / "log" / f"condition_id={value.replace(' ', '%20')}"
        folder.mkdir(parents=True)
        rows.drop(columns="condition_id").to_parquet(folder / "part-0.parquet", index=False)
    expected = sorted(log["condition_id"].unique())
    for engine in ["pandas", *IN_TURN]:
        got = hs.item_spread(hce.read_log(tmp_path / "log", engine=engine), score="accuracy")
        assert sorted(got["condition_id"].astype(str).unique()) == expected, engine
    log.iloc[:4].to_parquet(tmp_path / "log" / "extra.parquet", index=False)
    for engine in ["pandas", *IN_TURN]:
        with pytest.raises(LogFormatError, match=r"different column=value folders: condition_id=01/part-0.parquet "
                                                 r"under \['condition_id'\], extra.parquet under none"):
            hce.read_log(tmp_path / "log", engine=engine)
    (tmp_path / "log" / "extra.parquet").unlink()
    (tmp_path / "log" / "condition_id=01").rename(tmp_path / "log" / "condition_id=__HIVE_DEFAULT_PARTITION__")
    for engine in ["pandas", *IN_TURN]:
        with pytest.raises(LogFormatError, match=r"how Hive and Spark write rows whose 'condition_id' is null"):
            hce.read_log(tmp_path / "log", engine=engine)


def test_an_hdfs_path_goes_to_an_engine_with_an_hdfs_client_and_is_refused_by_the_others():
    # before: "auto" sent hdfs:// to DuckDB and an engine named was taken at its word, to fail in its reader
    assert choose_engine("hdfs://namenode/judge-logs", "auto") == "spark"
    assert choose_engine("hdfs://namenode/judge-logs", "dask") == "dask"
    assert choose_engine("s3a://bucket/judge-logs", "auto") == "duckdb"
    for engine in ("duckdb", "polars"):
        with pytest.raises(LogFormatError, match=rf"engine='{engine}' reads no hdfs:// path; 'spark' or 'dask' reads it"):
            choose_engine("hdfs://namenode/judge-logs", engine)
    done = CliRunner().invoke(app, ["report", "hdfs://namenode/judge-logs", "--engine", "polars", "--out", "unused"])
    assert done.exit_code == 2 and "'spark' or 'dask' reads it" in done.output, done.output


# Spark in local[2] mode (slow: a JVM starts): folder logs whose files drift, the repeated-attempt
# check once per frame, and hce report --engine spark with its session options (issue 43, item 6)


@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


def drifted(folder):
    """Two files of one log, the second without the ``experiment_id`` column (a column added later)."""
    log = small_log(n_items=8, n_conditions=2, n_attempts=3)
    folder.mkdir()
    log.iloc[: len(log) // 2].to_parquet(folder / "part-0.parquet", index=False)
    log.iloc[len(log) // 2 :].drop(columns="experiment_id").to_parquet(folder / "part-1.parquet", index=False)
    return log


@pytest.mark.slow
@pytest.mark.filterwarnings(SPARK_WARNING)
def test_schema_strict_refuses_drifting_files_on_spark_and_union_reads_them_as_pandas_does(spark, tmp_path):
    drifted(tmp_path / "log")
    with pytest.raises(LogFormatError, match=r"part-1.parquet.*experiment_id"):
        hce.read_log(tmp_path / "log", engine="spark")
    with pytest.warns(UserWarning):
        expected = hs.item_spread(hce.read_log(tmp_path / "log", schema="union"), score="accuracy")
    with pytest.warns(UserWarning):
        lazy = hce.read_log(tmp_path / "log", engine="spark", schema="union")
    pd.testing.assert_frame_equal(hs.item_spread(lazy, score="accuracy"), expected, check_dtype=False, rtol=1e-9)


@pytest.mark.slow
@pytest.mark.filterwarnings(SPARK_WARNING)
def test_the_repeated_attempt_check_runs_once_per_spark_frame(spark, tmp_path, monkeypatch):
    # issue 43: three statistics on a plain spark.read.parquet frame re-checked duplicates with a
    # full shuffle each; now the first statistic's check is remembered for the frame
    import hce.stats._frames as frames

    log = small_log(n_items=10, n_conditions=2, n_attempts=4)
    log.to_parquet(tmp_path / "log.parquet", index=False)
    calls = []
    real = frames.repeated_attempts
    monkeypatch.setattr(frames, "repeated_attempts", lambda native, keys: calls.append(keys) or real(native, keys))
    plain = spark.read.parquet(str(tmp_path / "log.parquet"))
    statistics = (lambda f: hs.item_spread(f, score="accuracy"),
                  lambda f: hs.variance_components(f, score="accuracy", facets=["item_id", "condition_id"], random_state=1),
                  lambda f: hs.variance_components(f, score="accuracy", facets=["item_id"], random_state=1))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # the flagged attempts left out, said by each statistic
        for statistic in statistics:
            statistic(plain)
        assert len(calls) == 1, calls
        calls.clear()
        checked = hce.read_log(tmp_path / "log.parquet", engine="spark")  # checked as it is read
        for statistic in statistics:
            statistic(checked)
    assert calls == []


@pytest.mark.slow
@pytest.mark.filterwarnings(SPARK_WARNING)
def test_hce_report_on_spark_takes_the_master_and_settings_and_gives_the_pandas_report(spark, tmp_path):
    log = small_log(n_items=10, n_conditions=3, n_attempts=4)
    log.to_parquet(tmp_path / "log.parquet", index=False)
    partitioned(log, tmp_path / "parts")
    assert CliRunner().invoke(app, ["report", str(tmp_path / "log.parquet"), "--out", str(tmp_path / "pandas")]).exit_code == 0
    # a process of its own: no active session there, so the options make the session
    code = ("import sys, hce.cli; from pyspark.sql import SparkSession\n"
            "try:\n    hce.cli.app(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    s = SparkSession.getActiveSession(); print(s.sparkContext.master, s.conf.get('spark.sql.shuffle.partitions'))\n"
            "    raise\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, "report", str(tmp_path / "parts"), "--engine", "spark",
                           "--spark-master", "local[1]", "--spark-conf", "spark.sql.shuffle.partitions=3",
                           "--spark-conf", "spark.ui.enabled=false", "--out", str(tmp_path / "spark")],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "local[1] 3"
    same_report(tmp_path / "pandas", tmp_path / "spark")


def test_spark_refuses_attempts_not_counted_from_1_and_reads_missing_ones(spark, tmp_path):
    # Spark orders NaN above every number (NaN % 1 != 0 is true there), so a missing attempt is
    # tested apart from a fractional one
    for damage, expected in ((_attempt_from_zero, "got 0"), (_half_attempt, r"got 1\.5"), (_blank_item, "'item_id'")):
        damage(small_log()).to_parquet(tmp_path / f"log{damage.__name__}.parquet", index=False)
        with pytest.raises(LogFormatError, match=expected):
            hce.read_log(tmp_path / f"log{damage.__name__}.parquet", engine="spark")
    gaps = small_log().astype({"attempt": float})
    gaps.loc[3, "attempt"] = np.nan
    gaps.to_parquet(tmp_path / "gaps.parquet", index=False)
    assert np.isnan(nw_attempts(hce.read_log(tmp_path / "gaps.parquet", engine="spark"))).sum() == 1
