"""Frames of other engines (Polars, PyArrow, DuckDB, Dask; PySpark in test_engines_spark.py) give
pandas' numbers (issue 37).

The reference is hce's own pandas path on the same rows, itself checked against R and the
published values in the other test files; here every engine must reproduce it to 1e-9
(``item_spread``, the reduced statistics: the same computation on the same values, summed
in another order). The one looser tolerance is stated where it applies: the standard errors
and intervals of an unbalanced G study come from second differences of the REML deviance at
the optimum (step 1e-3 of theta), which turn the rounding by which the rows' and the cells'
deviances differ (~1e-14 relative) into ~1e-9, and the Satterthwaite chi-square quantile
at df = 2 (estimate / SE)^2 into a few 1e-9: they agree to 1e-8.
"""

from __future__ import annotations

import importlib

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hce.stats as hs
from hce.errors import DataError, HceWarning
from hce.stats.mixed import lmer
from hce.stats._frames import ENGINE_STATISTICS, engine_frame, refuse_rows
from hce.stats.mixed.cell_fit import fit_cells
from engine_logs import REDUCED, RATED, attempt_log, ratings_log

INSTALL = 'pip install "hce[engines]"  (duckdb, polars)'


def _polars(df: pd.DataFrame):
    pl = pytest.importorskip("polars", reason=f"Polars is not installed: {INSTALL}")
    return pl.from_pandas(df)


def _duckdb(df: pd.DataFrame):
    duckdb = pytest.importorskip("duckdb", reason=f"DuckDB is not installed: {INSTALL}")
    # narwhals runs its queries on DuckDB's default connection (duckdb.sql, duckdb.read_parquet)
    return duckdb.from_arrow(_arrow(df))


def _arrow(df: pd.DataFrame):
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False)


def _dask(df: pd.DataFrame):
    dd = pytest.importorskip("dask.dataframe", reason='Dask is not installed: pip install "hce[dask]"')
    return dd.from_pandas(df, npartitions=2)  # two partitions: the grouped passes combine them


ENGINES = {
    "polars": _polars,
    "polars-lazy": lambda df: _polars(df).lazy(),
    "pyarrow": _arrow,
    "duckdb": _duckdb,
    "dask": _dask,
}
pytestmark = [
    # narwhals 2.x announces that its Dask support moves to the narwhals-dask package (third-party, not ours)
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
    # Dask's Arrow string handling uses NumPy's 'a' alias, seen where pytest.warns records every warning
    pytest.mark.filterwarnings("ignore:Data type alias 'a' was deprecated:DeprecationWarning"),
]


@pytest.fixture(params=list(ENGINES))
def engine(request):
    return ENGINES[request.param]


def quiet(call):
    """The call's result, with hce's own warnings (flagged attempts, NaN SDs) let through."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        return call()


# --- item_spread: value counts per cell -----------------------------------------------------


def test_item_spread_matches_pandas(engine):
    log = attempt_log(drop=0.1)
    rng = np.random.default_rng(3)
    log.loc[rng.random(len(log)) < 0.05, "error_flag"] = True
    log.loc[log["error_flag"], "total"] = np.nan  # a failed reply leaves no score
    log.loc[rng.random(len(log)) < 0.05, "total"] = np.nan  # and a parsed reply may lack one
    expected = quiet(lambda: hs.item_spread(log, score=["total", "accuracy"]))
    got = quiet(lambda: hs.item_spread(engine(log), score=["total", "accuracy"]))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_item_spread_of_continuous_scores_matches_pandas(engine):
    # more than 64 distinct scores: DuckDB and Polars compute the quartiles themselves
    log = attempt_log(drop=0.1)
    log["total"] = log["total"] + np.random.default_rng(4).normal(0, 0.3, len(log))
    expected = quiet(lambda: hs.item_spread(log))
    got = quiet(lambda: hs.item_spread(engine(log)))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_item_spread_long_view_matches_pandas(engine):
    log = attempt_log(n_items=6)
    long = log.melt(id_vars=["attempt_id", "item_id", "condition_id", "error_flag"], value_vars=["total", "accuracy"],
                    var_name="criterion", value_name="score")  # fmt: skip
    expected = hs.item_spread(long, score="score", criterion="criterion")
    got = hs.item_spread(engine(long), score="score", criterion="criterion")
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_item_spread_quartiles_of_one_cell_by_hand(engine):
    # scores 1, 2, 2, 7: R's quantile(type = 7): q1 at h = 0.75 -> 1 + 0.75 (2 - 1) = 1.75,
    # q3 at h = 2.25 -> 2 + 0.25 (7 - 2) = 3.25; sd = sqrt(((1-3)^2 + 2 (2-3)^2 + (7-3)^2) / 3) = sqrt(22/3)
    log = pd.DataFrame({"item_id": "a", "condition_id": "P", "total": [2.0, 7, 1, 2], "error_flag": False})
    row = hs.item_spread(engine(log)).iloc[0]
    assert (row["n"], row["mean"], row["min"], row["max"]) == (4, 3.0, 1.0, 7.0)
    np.testing.assert_allclose([row["q1"], row["q3"], row["sd"]], [1.75, 3.25, np.sqrt(22 / 3)], rtol=1e-12)


# --- variance_components: exact REML from the cell table -------------------------------------

_NUMBERS = ["estimate", "share", "std_error", "ci_low", "ci_high", "df"]


@pytest.mark.parametrize("drop", [0.0, 0.2], ids=["balanced", "unbalanced"])
def test_variance_components_match_pandas(engine, drop):
    log = attempt_log(drop=drop)
    call = dict(score="total", facets=["item_id", "condition_id"], n_attempts=4, random_state=1)
    expected = hs.variance_components(log, **call)
    got = hs.variance_components(engine(log), **call)
    assert got.components["method"].tolist() == expected.components["method"].tolist()
    assert got.levels == expected.levels and got.replicated == expected.replicated
    np.testing.assert_allclose(got.components["estimate"], expected.components["estimate"], rtol=1e-9, atol=1e-12)
    # balanced: closed form, exact; unbalanced: intervals from finite differences at the optimum (module docstring)
    tolerance = 1e-9 if drop == 0 else 1e-8
    np.testing.assert_allclose(got.components[_NUMBERS].to_numpy(float), expected.components[_NUMBERS].to_numpy(float),
                               rtol=tolerance, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(got.coefficients[["estimate", "ci_low", "ci_high"]].to_numpy(float),
                               expected.coefficients[["estimate", "ci_low", "ci_high"]].to_numpy(float), rtol=tolerance)  # fmt: skip


def test_variance_components_leave_out_flagged_attempts_in_the_engine(engine):
    log = attempt_log(n_items=10)
    log.loc[[0, 5], "error_flag"] = True
    call = dict(score="total", facets=["item_id", "condition_id"], random_state=1)
    with pytest.warns(HceWarning, match="left out 2 attempt"):
        got = hs.variance_components(engine(log), **call)
    expected = hs.variance_components(log[~log["error_flag"]], **call).components["estimate"]
    # unbalanced once the flagged attempts are out: two optimiser runs of one deviance (see test_cell_table_reml_...)
    np.testing.assert_allclose(got.components["estimate"], expected, rtol=1e-9, atol=1e-9 * expected.max())


@pytest.mark.parametrize("dtype", ["boolean", "float"])
def test_a_blank_error_flag_is_no_flag_in_every_engine(engine, dtype):
    # a log with unfinished rows: Dask cast a nullable boolean's NA to bool by raising and a
    # float's NaN to True, where pandas reads a blank flag as not flagged (issue 43)
    log = attempt_log(drop=0.1)
    rng = np.random.default_rng(6)
    flags = pd.array(np.where(rng.random(len(log)) < 0.1, None, rng.random(len(log)) < 0.05), dtype="boolean")
    log["error_flag"] = flags if dtype == "boolean" else flags.to_numpy(float, na_value=np.nan)
    pd.testing.assert_frame_equal(quiet(lambda: hs.item_spread(engine(log))), quiet(lambda: hs.item_spread(log)),
                                  check_dtype=False, rtol=1e-9, atol=1e-12)  # fmt: skip
    call = dict(score="total", facets=["item_id", "condition_id"], random_state=1)
    np.testing.assert_allclose(quiet(lambda: hs.variance_components(engine(log), **call)).components["estimate"],
                               quiet(lambda: hs.variance_components(log, **call)).components["estimate"], rtol=1e-8,
                               atol=1e-12)  # fmt: skip


def test_cell_deviance_equals_the_row_deviance_at_every_theta():
    # What makes the cell table exact: lme4's profiled REML deviance computed from cells equals
    # the one computed from the rows at any theta (rounding only), so both maximise one function.
    rows = attempt_log(2, n_items=12, drop=0.25)
    formula = "total ~ 1 + (1 | item_id) + (1 | condition_id) + (1 | item_id:condition_id)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_rows = lmer(formula, rows, method="pls")._problem
        by_cells = fit_cells(_cells(rows), formula)._problem
    for theta in ([0.5, 0.3, 0.8], [1.2, 0.0, 0.1], [0.01, 2.0, 3.0]):
        assert by_cells.profiled_deviance(np.array(theta)) == pytest.approx(by_rows.profiled_deviance(np.array(theta)), rel=1e-12)
        assert by_cells.deviance(np.array([*theta, 0.9])) == pytest.approx(by_rows.deviance(np.array([*theta, 0.9])), rel=1e-12)


def _cells(rows: pd.DataFrame) -> pd.DataFrame:
    groups = rows.groupby(["item_id", "condition_id"])["total"]
    return pd.DataFrame({"n": groups.size(), "mean": groups.mean(), "ss": groups.var(ddof=1).fillna(0) * (groups.size() - 1),
                         "min": groups.min(), "max": groups.max()}).reset_index()  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), n_items=st.integers(3, 9), n_conditions=st.integers(2, 4),
       n_attempts=st.integers(2, 4), drop=st.sampled_from([0.0, 0.15, 0.3]))  # fmt: skip
def test_cell_table_reml_equals_lmer_on_the_rows(seed, n_items, n_conditions, n_attempts, drop):
    # The REML likelihood of (1|item) + (1|condition) + (1|item:condition) reads the rows only
    # through cell counts, cell means and the within-cell sum of squares (hce.stats.mixed.cell_fit).
    rows = attempt_log(seed, n_items, n_conditions, n_attempts, drop)
    rows["total"] = rows["total"] + np.random.default_rng(seed).normal(0, 0.5, len(rows))  # no ties at 0
    formula = "total ~ 1 + (1 | item_id) + (1 | condition_id) + (1 | item_id:condition_id)"
    cells = _cells(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a boundary fit warns alike on both sides
        expected = lmer(formula, rows).varcorr()["vcov"].to_numpy()
        got = fit_cells(cells, formula).varcorr()["vcov"].to_numpy()
    # One deviance, two evaluations of it (rows, cells) that differ by rounding, both minimised until
    # the Richardson-extrapolated gradient vanishes (balanced designs: analytic Newton steps), so the
    # optimum agrees to 1e-9 (it agreed to 1e-6 when the search stopped on the deviance's decrease,
    # which along a variance of 2-4 levels changes by less than its rounding over 1e-6 of theta).
    # A variance at the boundary is 0 on both; a variance 1e-3 of the largest is compared on that scale.
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * expected.max())


# --- reliability and calibration: reduced in the engine, only their summaries come back ------


@pytest.fixture
def no_columns_back(monkeypatch):
    """``watch(log)``: from then on, fail a statistic that brings a column of ``log`` back.

    Every query an engine answers goes through narwhals' ``LazyFrame.collect``. A column
    brought back holds one value per row: at least 95% of a ratings_log's rows (the score
    with the most blanks, ``total``, lacks 5%). The largest summary a reduction returns
    there, the per-cluster x bin sums of the calibration bootstrap, holds at most 85% of
    them (30 targets x their 3-4 bins of 4 forecasts): 90% is the bound.
    """
    import narwhals as nw

    collect = nw.LazyFrame.collect

    def watch(log: pd.DataFrame) -> None:
        def bounded(self, *args, **kwargs):
            out = collect(self, *args, **kwargs)
            if len(out) >= 0.9 * len(log):
                raise AssertionError(f"{len(out)} rows of {list(out.columns)} came back from the engine")
            return out

        monkeypatch.setattr(nw.LazyFrame, "collect", bounded)

    return watch


def test_the_guard_catches_a_column_brought_back(engine, no_columns_back):
    import narwhals as nw

    log = ratings_log(drop=0.15)
    frame = nw.from_native(engine(log)).lazy()
    no_columns_back(log)
    assert len(frame.group_by("item_id").agg(nw.len()).collect()) == 30
    with pytest.raises(AssertionError, match="came back from the engine"):
        frame.filter(~nw.col("total").is_null()).select("total").collect()


@pytest.mark.parametrize("drop", [0.0, 0.15], ids=["complete", "incomplete"])
@pytest.mark.parametrize("name", list(REDUCED))
def test_reduced_statistics_match_pandas(engine, name, drop, no_columns_back):
    # the same rows: every coefficient, interval, bootstrap replicate and count to 1e-9
    log = ratings_log(drop=drop)
    frame = engine(log)
    no_columns_back(log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # icc(method="anova") drops targets alike on both sides
        expected = REDUCED[name](log)
        got = REDUCED[name](frame)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_icc_groups_in_an_engine_come_in_sorted_order(engine, no_columns_back):
    # an engine's frame has no row order: its groups come sorted, pandas' in order of first appearance
    log = ratings_log().sort_values("panel", ascending=False, kind="stable")
    no_columns_back(log)
    call = dict(**RATED, score="total", condition="panel")
    got = hs.icc_groups(engine(log), **call)
    assert got["group"].unique().tolist() == ["early", "late", "early vs late"]
    assert hs.icc_groups(log, **call)["group"].unique().tolist() == ["late", "early", "late vs early"]
    pd.testing.assert_frame_equal(got, hs.icc_groups(log.sort_values("panel", kind="stable"), **call), check_dtype=False,
                                  rtol=1e-9)  # fmt: skip


def test_reliability_table_of_quantile_bins_matches_pandas(engine, no_columns_back):
    # np.percentile's edges need an engine's exact quantiles (DuckDB, Polars); the others say so
    log = ratings_log(drop=0.1)
    call = dict(prob="prob", truth="outcome", strategy="quantile", n_bins=6)
    no_columns_back(log)
    if not engine_frame(engine(log)).exact_quantiles:
        with pytest.raises(DataError, match="strategy='quantile' needs exact quantiles"):
            hs.reliability_table(engine(log), **call)
        return
    pd.testing.assert_frame_equal(hs.reliability_table(engine(log), **call), hs.reliability_table(log, **call),
                                  check_dtype=False, rtol=1e-9)  # fmt: skip


@pytest.mark.parametrize("ci_method", ["wald", "bootstrap"])
# 0/1 ratings: 4 cells for 26 targets, the bootstrap reads the cross table; scores 0-10: more cells
# than half the targets, whose pairs come back, as few as the cells (the engine's docstring)
@pytest.mark.parametrize("score", ["included", "total"])
def test_cohen_kappa_matches_pandas(engine, ci_method, score, no_columns_back):
    log = ratings_log(drop=0.1)
    log = log[log["attempt"] <= 2]
    no_columns_back(log)
    call = dict(item="item_id", rater="attempt", score=score, weights="quadratic", ci_method=ci_method, random_state=1)
    pd.testing.assert_frame_equal(hs.cohen_kappa(engine(log), **call), hs.cohen_kappa(log, **call), check_dtype=False,
                                  rtol=1e-9)  # fmt: skip


@pytest.mark.parametrize("name", ["icc", "icc_groups", "variance_components"])
def test_a_boolean_score_is_read_as_0_1_in_every_engine(engine, name):
    # pass/fail judgements: PyArrow and DuckDB have no mean or variance of booleans (issue 43); every
    # target rated by every rater: the ICC's mean squares come from the engine's cell moments
    log = attempt_log(n_items=12, n_conditions=2)
    log = log.assign(passed=log["total"] >= 5, panel=np.where(log["attempt"] <= 2, "early", "late"))
    call = {
        "icc": lambda d: hs.icc(d, **RATED, score="passed"),
        "icc_groups": lambda d: hs.icc_groups(d, **RATED, score="passed", condition="panel"),
        "variance_components": lambda d: hs.variance_components(d, score="passed", facets=["item_id", "condition_id"],
                                                                random_state=1).components,
    }[name]  # fmt: skip
    one = log[log["condition_id"] == "C0"] if name != "variance_components" else log
    expected = quiet(lambda: call(one))
    pd.testing.assert_frame_equal(quiet(lambda: call(engine(one))), expected, check_dtype=False, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["fleiss_kappa", "alpha-nominal", "cohen_kappa", "icc"])
def test_a_categorical_score_is_read_as_its_values_in_every_engine(engine, name, no_columns_back):
    # a pandas Categorical stays a dictionary in PyArrow and a categorical in Dask, which order no
    # unordered categories (the door's min and max) and are no numbers (issue 43)
    log = ratings_log(drop=0.1)
    log = log.assign(code=pd.Categorical.from_codes(log["accuracy"] - 1, ["awful", "poor", "fair", "good", "great"]),
                     points=pd.Categorical.from_codes(log["total"].fillna(-1).astype(int), range(11)))  # 0-10, blanks
    call = {
        "fleiss_kappa": lambda d: hs.fleiss_kappa(d, **RATED, score="code"),
        "alpha-nominal": lambda d: hs.krippendorff_alpha(d, **RATED, score="code", level="nominal", n_boot=0),
        "cohen_kappa": lambda d: hs.cohen_kappa(d, **RATED, score="code"),
        "icc": lambda d: hs.icc(d, **RATED, score="points"),
    }[name]  # fmt: skip
    log = log[log["attempt"] <= 2] if name == "cohen_kappa" else log
    no_columns_back(log)
    pd.testing.assert_frame_equal(call(engine(log)), call(log), check_dtype=False, rtol=1e-9, atol=1e-12)


def test_reduced_statistics_refuse_what_needs_rows_naming_the_alternative(engine):
    log = ratings_log()
    with pytest.raises(DataError, match=r"ratings by rater|logged more than once"):
        hs.fleiss_kappa(engine(pd.concat([log, log.iloc[[0]].assign(attempt_id="x")])), **RATED, score="accuracy")
    with pytest.raises(DataError, match=r"calibration_metrics\(item=None, n_boot > 0\) of continuous forecasts.*"
                                        r"needs the row-level data"):  # fmt: skip
        hs.calibration_metrics(engine(log), prob="prob", truth="outcome", n_boot=10)
    two = log.assign(prob_b=1 - log["prob"], prob_a=log["prob"], y=np.where(log["outcome"] == 1, "a", "b"))
    with pytest.raises(DataError, match="takes one probability column.*collect the columns"):
        hs.calibration_metrics(engine(two), prob=["prob_a", "prob_b"], truth="y", n_boot=0)
    with pytest.raises(DataError, match="rater 1 appears in more than one 'panel'; each rater must belong to one group"):
        hs.icc_groups(engine(log.assign(panel=np.where(log["item_id"] == "T03", "late", log["panel"]))), **RATED,
                      score="total", condition="panel")  # fmt: skip
    with pytest.raises(DataError, match=r"column 'total' must hold 0/1 or booleans; found 2\.0"):
        hs.strict_agreement(engine(log), **RATED, score="total")
    with pytest.raises(DataError, match="no target is rated by every rater"):
        hs.strict_agreement(engine(log), item="item_id", rater="attempt_id", score="included")
    with pytest.raises(DataError, match="takes long ratings"):
        hs.cohen_kappa(engine(log[log["attempt"] <= 2]), **RATED, score="total", cluster="condition_id",
                       ci_method="bootstrap")  # fmt: skip


# --- the door's checks, in the engine ----------------------------------------------------------


def test_a_repeated_attempt_is_refused_in_the_engine(engine):
    log = attempt_log(n_items=4)
    log = pd.concat([log, log.iloc[[3]]], ignore_index=True)
    with pytest.raises(DataError, match=r"attempt_id '0-0-3' appears more than once; 1 attempt id"):
        hs.item_spread(engine(log))
    with pytest.raises(DataError, match="appears more than once"):
        hs.variance_components(engine(log), score="total", facets=["item_id", "condition_id"])


def test_blank_ids_infinite_and_text_scores_are_refused_by_name(engine):
    log = attempt_log(n_items=4)
    blank = log.assign(item_id=log["item_id"].where(log.index != 2))
    with pytest.raises(DataError, match="id column 'item_id' is blank in 1 row"):
        hs.item_spread(engine(blank))
    with pytest.raises(DataError, match=r"column 'total' holds 1 non-finite value"):
        hs.item_spread(engine(log.assign(total=log["total"].where(log.index != 1, np.inf))))
    with pytest.raises(DataError, match="column 'total' must be numeric, got String"):
        hs.item_spread(engine(log.assign(total=log["total"].astype(str))))
    with pytest.raises(DataError, match=r"no column\(s\) \['score'\]"):
        hs.item_spread(engine(log), score="score")


def test_a_row_level_statistic_refuses_an_engine_frame_naming_the_alternatives(engine):
    log = attempt_log(n_items=4)
    with pytest.raises(DataError, match=r"lmer needs the row-level data.*collect the columns it needs"):
        lmer("total ~ 1 + (1 | item_id)", engine(log))
    with pytest.raises(DataError, match="friedman needs the row-level data"):
        hs.friedman(engine(log), item="item_id", condition="condition_id", score="total")


def test_the_refusal_names_every_statistic_that_runs_in_an_engine():
    """The alternatives a refusal names are exactly the public statistics whose frame spec reads an engine
    frame: a statistic that learns to reduce in the engine is named, one that is not never is."""
    specs = {name: getattr(getattr(hs, name), "frame_spec", None) for name in hs.__all__}
    runs_in_engine = {name for name, spec in specs.items() if spec is not None and spec.engine is not None
                      and spec.formula is None}  # fmt: skip
    assert set(ENGINE_STATISTICS) == runs_in_engine
    message = str(refuse_rows("friedman", "duckdb"))
    assert all(name in message for name in runs_in_engine)


def test_something_no_engine_reads_is_refused():
    with pytest.raises(DataError, match="must be a pandas DataFrame or a frame narwhals reads"):
        hs.item_spread({"item_id": [1]})


@pytest.mark.parametrize("keep", [0.97, 0.25], ids=["few-missing", "sparse"])
def test_icc_rater_pairs_from_the_missing_cells_equal_pandas(engine, keep):
    # 40 targets x 30 attempts: with 3% missing the pairs come from the missing cells (the
    # report's repeated attempts at 100M rows, where joining each target's ratings to themselves
    # makes billions of rows); with a quarter kept, from the ratings joined to themselves
    log = attempt_log(7, n_items=40, n_conditions=1, n_attempts=30)
    log = log[np.random.default_rng(3).random(len(log)) < keep]
    call = dict(item="item_id", rater="attempt", score="total", method="reml")
    pd.testing.assert_frame_equal(hs.icc(engine(log), **call), hs.icc(log, **call), check_dtype=False, rtol=1e-9,
                                  atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("keep,method", [(1.0, "auto"), (0.97, "reml"), (0.6, "reml")],
                         ids=["complete-anova", "few-missing-reml", "sparse-reml"])  # fmt: skip
def test_icc_oneway_forms_equal_their_rows_of_all_six_without_the_rater_sums(engine, keep, method, monkeypatch):
    # The report's reliability table (each attempt a rater) reads ICC1 and ICC1k only: forms="oneway"
    # gives those rows, to the digit, in pandas and every engine, without the crossed fit's rater-pair
    # join (the costliest pass of a 20M-row report: issue 43).
    icc_module = importlib.import_module("hce.stats.reliability.icc")

    log = attempt_log(11, n_items=30, n_conditions=1, n_attempts=12)
    log = log[np.random.default_rng(5).random(len(log)) < keep]
    call = dict(item="item_id", rater="attempt", score="total", method=method)
    six = hs.icc(log, **call)
    expected = six[six["metric"].isin(["ICC1", "ICC1k"])].reset_index(drop=True)

    def no_pairs(*args, **kwargs):
        raise AssertionError("forms='oneway' joined rater pairs")

    monkeypatch.setattr(icc_module, "_rater_pairs", no_pairs)
    for frame in (log, engine(log)):
        got = hs.icc(frame, **call, forms="oneway")
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)
    assert list(got["metric"]) == ["ICC1", "ICC1k"]
    with pytest.raises(ValueError, match="forms"):
        hs.icc(log, **call, forms="one-way")


def test_the_repeated_rating_check_runs_once_per_frame_and_still_refuses_a_repeat(monkeypatch):
    # A report runs ICC and alpha on each condition's attempts: the (target, rater) check is a
    # full grouped pass, so the second statistic on the same frame trusts the first (issue 43);
    # a frame whose attempt ids are unique but holds one (item, attempt) twice is still refused.
    import duckdb

    engine_module = importlib.import_module("hce.stats.reliability._engine")
    calls = []
    check = engine_module._refuse_repeated_ratings
    monkeypatch.setattr(engine_module, "_refuse_repeated_ratings", lambda *a: calls.append(a) or check(*a))
    log = attempt_log(2, n_items=12, n_conditions=1, n_attempts=5)
    frame = duckdb.from_df(log)
    call = dict(item="item_id", rater="attempt", score="total")
    hs.icc(frame, **call, forms="oneway")
    hs.krippendorff_alpha(frame, **call, n_boot=0)
    assert len(calls) == 1
    repeated = log.copy()
    repeated.loc[repeated.index[1], "attempt"] = repeated.loc[repeated.index[0], "attempt"]
    twice = duckdb.from_df(repeated)
    hce_engines = importlib.import_module("hce.engines")
    hce_engines.checked(twice)  # attempt ids unique: that says nothing of (item, attempt)
    with pytest.raises(DataError, match=r"ratings by rater|logged more than once"):
        hs.icc(twice, **call)



# --- a log collected under a stopping rule (issue 48): spread statistics read the first min attempts ---


@pytest.mark.parametrize("name", ["polars", "duckdb"])
def test_spread_statistics_read_only_within_min_rows_in_the_engine(name):
    log = attempt_log()
    log["within_min"] = (log["attempt"] <= 3).astype("boolean")  # attempt 4: after the rule's min
    log.loc[log.index[:2], "within_min"] = pd.NA  # a blank counts as within, as in pandas' door
    first = log[log["within_min"].fillna(True)].drop(columns="within_min")
    later = int((~log["within_min"].fillna(True)).sum())
    assert later > 0
    frame = ENGINES[name](log)
    with pytest.warns(HceWarning, match=f"only the first min attempts.*left out {later:,} later"):
        got = hs.item_spread(frame)
    pd.testing.assert_frame_equal(got, hs.item_spread(first), check_dtype=False, rtol=1e-9, atol=1e-12)
    call = dict(score="total", facets=["item_id", "condition_id"], random_state=1)
    with pytest.warns(HceWarning, match="first min attempts"):
        g = hs.variance_components(ENGINES[name](log), **call)
    np.testing.assert_allclose(g.components["estimate"], hs.variance_components(first, **call).components["estimate"],
                               rtol=1e-9, atol=1e-12)  # fmt: skip
    with pytest.warns(HceWarning, match="first min attempts"):
        icc = hs.icc(ENGINES[name](log[log["condition_id"] == "C0"]), item="item_id", rater="attempt", score="total")
    one = first[first["condition_id"] == "C0"]
    np.testing.assert_allclose(icc["estimate"], hs.icc(one, item="item_id", rater="attempt", score="total")["estimate"],
                               rtol=1e-9)  # fmt: skip


@pytest.mark.parametrize("offset", [1e4, 1e6])
def test_statistics_of_scores_far_from_zero_match_pandas(engine, offset):
    # before: Dask's grouped variance is sum(x^2) - n mean^2, so scores of 1e6 +- 1 gave variance
    # components 1e-4 off pandas' (ICC by ANOVA and Krippendorff's interval alpha 1e-5 off); and
    # every engine's REML ICC read raw sums: 1e-2 off pandas at 1e6, both off the ICC of the same
    # ratings at 0
    log = attempt_log(drop=0.1)
    log["total"] = log["total"] + offset + np.random.default_rng(5).normal(0, 0.3, len(log))
    one = log[log["condition_id"] == log["condition_id"].iloc[0]]
    for call, data in (
        (lambda d: hs.variance_components(d, score="total", facets=["item_id", "condition_id"], random_state=1).components, log),
        (lambda d: hs.icc(d, **RATED, score="total", method="reml"), one),
        (lambda d: hs.icc(d, **RATED, score="total", method="anova"), one),
        (lambda d: hs.krippendorff_alpha(d, **RATED, score="total", n_boot=0), one),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the ANOVA ICC's targets lacking a rater
            expected, got = call(data), call(engine(data))
        numbers = expected.select_dtypes("number").columns
        pd.testing.assert_frame_equal(got[numbers], expected[numbers], check_dtype=False, rtol=1e-8, atol=1e-12)
