"""NaN scores are missing in every engine, as in pandas (issue 43, item 1).

Polars, Spark, DuckDB and NumPy-written Parquet keep NaN as a number where pandas reads it as
missing: before the fix, a cell whose scores were all NaN came out of DuckDB and Polars with
n 24, n_missing 0, mean NaN and SD 0 (pandas: n 0, n_missing 24, SD NaN), and the variance
decomposition stopped on a NaN deviance. The reference is hce's pandas path on the same rows
(itself checked against R in the other test files), to the tolerances of tests/stats/test_engines.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.engines import scan_log
from hce.errors import HceWarning
from engine_logs import RATED, REDUCED, attempt_log, ratings_log

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pl = pytest.importorskip("polars", reason='Polars is not installed: pip install "hce[engines]"')
duckdb = pytest.importorskip("duckdb", reason='DuckDB is not installed: pip install "hce[engines]"')
pytestmark = [
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Data type alias 'a' was deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]


def nan_table(df: pd.DataFrame):
    """An Arrow table whose float columns hold NaN, not null (as Polars and NumPy write them)."""
    return pa.table({c: pa.array(df[c].to_numpy(), from_pandas=False) if df[c].dtype == float else pa.array(df[c])
                     for c in df.columns})  # fmt: skip


def nan_parquet(df: pd.DataFrame, folder, name: str = "log.parquet"):
    path = folder / name
    pq.write_table(nan_table(df), path)
    assert pq.read_table(path).column("total").null_count == 0  # NaN on disk, not null
    return path


def _dask(df, folder):
    dd = pytest.importorskip("dask.dataframe", reason='Dask is not installed: pip install "hce[dask]"')
    return dd.from_pandas(df, npartitions=2)


#: Each engine's frame of a log whose float columns hold NaN for missing values.
NAN_FRAMES = {
    "polars": lambda df, folder: pl.from_pandas(df, nan_to_null=False),
    "polars-lazy": lambda df, folder: pl.from_pandas(df, nan_to_null=False).lazy(),
    "pyarrow": lambda df, folder: nan_table(df),
    "duckdb": lambda df, folder: duckdb.from_arrow(nan_table(df)),
    "dask": _dask,
    # DuckDB answers isnan() from the file's statistics, which leave NaN out: the case that hid NaN
    "duckdb-parquet": lambda df, folder: scan_log(nan_parquet(df, folder), engine="duckdb", check=False),
    "polars-parquet": lambda df, folder: scan_log(nan_parquet(df, folder), engine="polars", check=False),
    "dask-parquet": lambda df, folder: (pytest.importorskip("dask"),
                                        scan_log(nan_parquet(df, folder), engine="dask", check=False))[1],
}


@pytest.fixture(params=list(NAN_FRAMES))
def nan_frame(request, tmp_path):
    return lambda df: NAN_FRAMES[request.param](df, tmp_path)


def quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        warnings.simplefilter("ignore", UserWarning)  # icc(method="anova") drops targets alike on both sides
        return call()


def nan_log() -> pd.DataFrame:
    """24 attempts per item x condition; one cell all NaN, one item NaN in every condition, NaN here and there."""
    log = attempt_log(seed=7, n_items=6, n_conditions=3, n_attempts=24)
    log["total"] = log["total"].astype(float)
    log.loc[(log["item_id"] == "T01") & (log["condition_id"] == "C1"), "total"] = np.nan
    log.loc[np.random.default_rng(8).random(len(log)) < 0.1, "total"] = np.nan
    log["smooth"] = log["total"] + np.random.default_rng(9).normal(0, 0.2, len(log))  # continuous: quartiles in the engine
    return log


def test_an_all_nan_cell_is_missing_in_every_engine(nan_frame):
    log = nan_log()
    got = quiet(lambda: hs.item_spread(nan_frame(log), score=["total", "smooth"]))
    cell = got[(got["item_id"] == "T01") & (got["condition_id"] == "C1") & (got["criterion"] == "total")].iloc[0]
    assert (cell["n"], cell["n_missing"]) == (0, 24) and np.isnan(cell["sd"]) and np.isnan(cell["mean"])
    expected = quiet(lambda: hs.item_spread(log, score=["total", "smooth"]))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_the_variance_decomposition_of_a_log_with_nan_cells_matches_pandas(nan_frame):
    log = nan_log()
    call = dict(score="total", facets=["item_id", "condition_id"], n_attempts=24, random_state=1)
    expected = quiet(lambda: hs.variance_components(log, **call))
    got = quiet(lambda: hs.variance_components(nan_frame(log), **call))
    numbers = ["estimate", "std_error", "ci_low", "ci_high"]
    # unbalanced (NaN cells out): one fit of one cell table on both sides; the standard errors come
    # from finite differences of the gradient at the optimum, steps large enough (2-8%) that the
    # upper limits too (df v / chi2_(alpha/2)(df), steep at df near 1) are held to 1e-8 (was 1e-7)
    np.testing.assert_allclose(got.components[numbers].to_numpy(float), expected.components[numbers].to_numpy(float),
                               rtol=1e-8, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(got.coefficients[["ci_low", "ci_high"]].to_numpy(float),
                               expected.coefficients[["ci_low", "ci_high"]].to_numpy(float), rtol=1e-8)  # G and Phi


def test_nan_is_counted_as_missing_by_the_engines_door(nan_frame):
    # the door's check counted +-inf only: NaN passed as a number; now it is a blank, as in pandas
    log = nan_log()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hs.variance_components(nan_frame(log), score="total", facets=["item_id", "condition_id"], random_state=1)
    blank = int(log["total"].isna().sum())
    assert [str(w.message) for w in caught if "dropped" in str(w.message)] == [f"dropped {blank} rows with missing values in ['total']"]


def nan_ratings() -> pd.DataFrame:
    log = ratings_log(drop=0.1)
    rng = np.random.default_rng(11)
    log.loc[log["item_id"] == "T04", ["total", "smooth", "included"]] = np.nan  # an item with no rating at all
    for column in ("smooth", "prob", "outcome", "stated"):
        log.loc[rng.random(len(log)) < 0.04, column] = np.nan
    return log


@pytest.mark.parametrize("name", list(REDUCED))
def test_every_reduced_statistic_on_nan_cells_matches_pandas(nan_frame, name):
    log = nan_ratings()
    expected = quiet(lambda: REDUCED[name](log))
    got = quiet(lambda: REDUCED[name](nan_frame(log)))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


#: Every score column of the ratings log (what the reduced statistics read).
SCORES = ["total", "smooth", "accuracy", "included", "prob", "stated", "outcome"]


def outcome(call):
    """A statistic's table, or the first clause of its refusal (pandas names the row, an engine
    the count: the clauses after the first may differ)."""
    try:
        return quiet(call)
    except Exception as err:  # the same refusal, or the same crash, is what the engines must match
        return f"{type(err).__name__}: {str(err).split(';')[0].split(', first in row')[0]}"


def degenerate(kind: str) -> pd.DataFrame:
    """The ratings log with every score column all NaN, one value throughout, or holding an inf."""
    log = nan_ratings()
    for column in SCORES:
        log[column] = {"blank": np.nan, "constant": 1.0}.get(kind, log[column].astype(float))
        if kind == "infinite":
            log.loc[3, column] = np.inf
    return log


@pytest.mark.parametrize("kind", ["blank", "constant", "infinite"])
@pytest.mark.parametrize("name", ["spread", *REDUCED])
def test_a_column_of_blanks_one_value_or_an_inf_gets_pandas_answer_in_every_engine(nan_frame, name, kind):
    # an all-NaN column crashed the engines with numpy's errors (DuckDB: "cannot convert float NaN
    # to integer"; Polars, Dask: "index 0 out-of-bounds in add.reduceat") where pandas answered or
    # said "has no scores"; an inf in a rating column was a category to Fleiss, Gwet and percent
    # agreement in every engine (pandas refuses it); one value throughout: the same refusal
    call = REDUCED.get(name, lambda d: hs.item_spread(d, score=SCORES))
    log = degenerate(kind)
    expected, got = outcome(lambda: call(log)), outcome(lambda: call(nan_frame(log)))
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        assert not expected.startswith(("ValueError", "IndexError", "TypeError", "KeyError")), expected
    else:
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_icc_by_reml_of_engine_sums_meets_pandas_to_1e_9():
    # the one-way and crossed REML fits stopped where the deviance's values stopped telling
    # (sqrt(eps) from the optimum): sums that differed in the 16th digit (a NaN log's, summed by
    # DuckDB in another order) gave ICCs 6e-8 and F statistics 1.5e-7 apart (an independent check)
    log = nan_ratings()
    call = lambda d: hs.icc(d, **RATED, score="smooth", method="reml")  # noqa: E731
    expected = quiet(lambda: call(log))
    for frame in (duckdb.from_arrow(nan_table(log)), pl.from_pandas(log, nan_to_null=False)):
        got = quiet(lambda: call(frame))
        numbers = ["estimate", "ci_low", "ci_high", "statistic"]
        np.testing.assert_allclose(got[numbers].to_numpy(float), expected[numbers].to_numpy(float), rtol=1e-9)
