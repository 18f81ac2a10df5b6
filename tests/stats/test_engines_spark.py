"""PySpark frames give pandas' numbers, in Spark's local[2] mode (issue 37; slow: a JVM starts).

Reference: hce's pandas path on the same rows, as in tests/stats/test_engines.py (whose
tolerances and their reasons apply here too).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import hce
import hce.stats as hs
from hce.errors import HceWarning
from engine_logs import RATED, REDUCED, SPARK_WARNING, attempt_log, local_spark, ratings_log

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings(SPARK_WARNING)]


@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


def _log(drop: float) -> pd.DataFrame:
    return attempt_log(drop=drop)  # the log of tests/stats/test_engines.py


def test_item_spread_in_spark_matches_pandas(spark):
    log = _log(0.1)
    log.loc[log.index % 17 == 0, "error_flag"] = True
    log.loc[log["error_flag"], "total"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # cells with fewer than 2 valid scores: said on both sides
        expected = hs.item_spread(log, score=["total", "accuracy"])
        got = hs.item_spread(spark.createDataFrame(log), score=["total", "accuracy"])
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_continuous_scores_and_quantile_bins_use_sparks_exact_percentile(spark):
    # more than 64 distinct scores: the quartiles and np.percentile's bin edges come from Spark's
    # percentile (linear interpolation, R's type 7), not from every score brought back
    log = _log(0.1)
    log["total"] = log["total"] + np.random.default_rng(4).normal(0, 0.3, len(log))
    pd.testing.assert_frame_equal(hs.item_spread(spark.createDataFrame(log)), hs.item_spread(log), check_dtype=False,
                                  rtol=1e-9, atol=1e-12)  # fmt: skip
    ratings = ratings_log(drop=0.1)
    call = dict(prob="prob", truth="outcome", strategy="quantile", n_bins=6)
    pd.testing.assert_frame_equal(hs.reliability_table(spark.createDataFrame(ratings), **call),
                                  hs.reliability_table(ratings, **call), check_dtype=False, rtol=1e-9)  # fmt: skip


@pytest.mark.parametrize("drop", [0.0, 0.2], ids=["balanced", "unbalanced"])
def test_variance_components_in_spark_match_pandas(spark, drop):
    log = _log(drop)
    call = dict(score="total", facets=["item_id", "condition_id"], n_attempts=4, random_state=1)
    expected = hs.variance_components(log, **call).components
    got = hs.variance_components(spark.createDataFrame(log), **call).components
    np.testing.assert_allclose(got["estimate"], expected["estimate"], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(REDUCED))
def test_reliability_and_calibration_in_spark_match_pandas(spark, name):
    # the statistics of tests/stats/test_engines.py's test_reduced_statistics_match_pandas, on an
    # incomplete design (NaN scores stay NaN in Spark, where Arrow makes them null: both are blank)
    log = ratings_log(drop=0.15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # icc(method="anova") drops targets alike on both sides
        expected = REDUCED[name](log)
        got = REDUCED[name](spark.createDataFrame(log))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, atol=1e-12)


def test_cohen_kappa_in_spark_matches_pandas(spark):
    log = ratings_log(drop=0.1)
    log = log[log["attempt"] <= 2]
    call = dict(**RATED, score="total", weights="linear", ci_method="bootstrap", n_boot=200, random_state=1)
    pd.testing.assert_frame_equal(hs.cohen_kappa(spark.createDataFrame(log), **call), hs.cohen_kappa(log, **call),
                                  check_dtype=False, rtol=1e-9)  # fmt: skip


def test_a_partitioned_parquet_log_is_read_by_spark(spark, tmp_path):
    log = _log(0.0)
    for condition, part in log.groupby("condition_id"):
        (tmp_path / f"condition_id={condition}").mkdir()
        part.drop(columns="condition_id").to_parquet(tmp_path / f"condition_id={condition}" / "part-0.parquet", index=False)
    lazy = hce.read_log(tmp_path, engine="spark")
    got = hs.item_spread(lazy, score="total")
    pd.testing.assert_frame_equal(got, hs.item_spread(log, score="total"), check_dtype=False, rtol=1e-9)
