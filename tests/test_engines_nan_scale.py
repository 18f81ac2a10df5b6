"""A log with NaN cells gives pandas' numbers in every engine, at 1M attempts (issue 43, item 1).

Generated, not stored: items x 4 conditions x repeated attempts, integer-like scores with an
item, a condition and an item x condition effect (``cell``: the rated target of the agreement statistics), 5% NaN scores written as NaN (not null, as
Polars and NumPy write them), one cell and one item NaN throughout, a judge's probabilities
with their outcomes. Every engine reads the same Parquet file; the reference is hce's pandas
path (hce.read_log), itself held to R in tests/stats. Tolerance 1e-8 as the issue asks: the
statistics reduce to the same sums in every engine, the variance components are one REML fit
of one cell table (tests/stats/test_cell_fit_scale.py). The 1M-row case is slow (minutes, with
Spark's JVM when installed); the small one runs in every test run.
"""

from __future__ import annotations

import importlib.util
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import hce
import hce.stats as hs
from hce.errors import HceWarning

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb", reason='DuckDB is not installed: pip install "hce[engines]"')
pytest.importorskip("polars", reason='Polars is not installed: pip install "hce[engines]"')
pytestmark = [
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Data type alias 'a' was deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]
ENGINES = ["duckdb", "polars", pytest.param("dask", marks=pytest.mark.skipif(
    importlib.util.find_spec("dask") is None, reason='Dask is not installed: pip install "hce[dask]"'))]  # fmt: skip
SPARK = pytest.param("spark", marks=[pytest.mark.slow, pytest.mark.skipif(
    importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
    reason='PySpark or Java is missing: pip install "hce[spark]"; apt-get install -y openjdk-17-jre-headless')])  # fmt: skip
#: (items, attempts per cell): 1M attempts at 5,000 x 4 x 50; 4,800 at 200 x 4 x 6.
SIZES = {"1m": (5_000, 50), "small": (200, 6)}
FACETS = dict(score="total", facets=["item_id", "condition_id"])
#: What every engine must give as pandas does, called on the log as read.
STATISTICS = {
    "item_spread": lambda d, k: hs.item_spread(d, score=["total", "prob"]),
    "variance_components": lambda d, k: hs.variance_components(d, **FACETS, n_attempts=k, random_state=1),
    "icc": lambda d, k: hs.icc(d, item="cell", rater="attempt", score="total"),
    "krippendorff_alpha": lambda d, k: hs.krippendorff_alpha(d, item="cell", rater="attempt", score="total", n_boot=0),
    "calibration_metrics": lambda d, k: hs.calibration_metrics(d, prob="prob", truth="outcome", n_boot=0),
    "brier_score": lambda d, k: hs.brier_score(d, prob="prob", truth="outcome", n_boot=0),
}  # fmt: skip


def nan_log_file(folder, n_items: int, n_attempts: int, n_conditions: int = 4, seed: int = 43):
    rng = np.random.default_rng(seed)
    shape = (n_items, n_conditions, n_attempts)
    item, condition = rng.normal(0, 1, n_items), rng.normal(0, 0.4, n_conditions)
    cell = rng.normal(0, 0.6, (n_items, n_conditions))
    total = np.round(5 + item[:, None, None] + condition[None, :, None] + cell[:, :, None] + rng.normal(0, 1, shape))
    total[rng.random(shape) < 0.05] = np.nan
    total[0, 1, :] = np.nan  # a cell without a score
    total[1, :, :] = np.nan  # an item without a score
    prob = rng.uniform(0.02, 0.98, shape)
    outcome = (rng.random(shape) < prob).astype(float)
    prob[rng.random(shape) < 0.03] = np.nan
    i, c, a = (axis.ravel() for axis in np.indices(shape))
    table = pa.table({
        "attempt_id": pa.array(np.char.add(np.char.add(i.astype(str), "-"), (c * n_attempts + a).astype(str))),
        "item_id": pa.array(np.char.add("T", i.astype(str))), "condition_id": pa.array(np.char.add("C", c.astype(str))),
        "cell": pa.array(np.char.add(np.char.add("T", i.astype(str)), np.char.add(":C", c.astype(str)))),  # an item in a condition
        "attempt": pa.array(a + 1), "total": pa.array(total.ravel(), from_pandas=False),
        "prob": pa.array(prob.ravel(), from_pandas=False), "outcome": pa.array(outcome.ravel()),
        "error_flag": pa.array(np.zeros(len(i), dtype=bool)),
    })  # fmt: skip
    path = folder / "log.parquet"
    pq.write_table(table, path, row_group_size=250_000)
    assert pq.read_table(path, columns=["total"]).column("total").null_count == 0  # NaN on disk, not null
    return path


@pytest.fixture(scope="module", params=[pytest.param("1m", marks=pytest.mark.slow), "small"])
def nan_file(request, tmp_path_factory):
    n_items, n_attempts = SIZES[request.param]
    path = nan_log_file(tmp_path_factory.mktemp(f"nan-{request.param}"), n_items, n_attempts)
    return path, n_attempts, {}


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # cells and items without scores: said alike on both sides
        warnings.simplefilter("ignore", UserWarning)
        return call()


def _numbers(result) -> list[pd.DataFrame]:
    """The frames a result's numbers are in (a variance decomposition: its components and G/Phi)."""
    if isinstance(result, pd.DataFrame):
        return [result]
    return [result.components, result.coefficients]


@pytest.mark.parametrize("engine", [*ENGINES, SPARK])
@pytest.mark.parametrize("name", list(STATISTICS))
def test_every_engine_gives_pandas_numbers_on_a_log_with_nan_cells(nan_file, engine, name):
    path, n_attempts, cache = nan_file
    if "pandas" not in cache:
        cache["pandas"] = _quiet(lambda: hce.read_log(path))
    expected = _quiet(lambda: STATISTICS[name](cache["pandas"], n_attempts))
    if engine == "spark":
        from pyspark.sql import SparkSession

        if SparkSession.getActiveSession() is None:
            SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").config(
                "spark.sql.shuffle.partitions", "4").getOrCreate()  # fmt: skip
    got = _quiet(lambda: STATISTICS[name](hce.read_log(path, engine=engine), n_attempts))
    for want, have in zip(_numbers(expected), _numbers(got)):
        pd.testing.assert_frame_equal(have, want, check_dtype=False, rtol=1e-8, atol=1e-12)
