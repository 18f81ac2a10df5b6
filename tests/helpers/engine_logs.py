"""A small attempt log for the engine tests (tests/stats/test_engines*.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import hce.stats as hs


def attempt_log(seed: int = 1, n_items: int = 24, n_conditions: int = 3, n_attempts: int = 4, drop: float = 0.0) -> pd.DataFrame:
    """A small log: integer scores, an item x condition effect, some errors and blanks."""
    rng = np.random.default_rng(seed)
    item, cond = rng.normal(0, 1, n_items), rng.normal(0, 0.5, n_conditions)
    both = rng.normal(0, 0.7, (n_items, n_conditions))
    rows = []
    for i in range(n_items):
        for c in range(n_conditions):
            for a in range(n_attempts):
                if rng.random() < drop:
                    continue
                score = float(np.clip(np.round(5 + item[i] + cond[c] + both[i, c] + rng.normal(0, 1)), 0, 10))
                rows.append({"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i:02d}", "condition_id": f"C{c}",
                             "attempt": a + 1, "total": score, "accuracy": int(rng.integers(1, 6)),
                             "error_flag": False})  # fmt: skip
    return pd.DataFrame(rows)


def ratings_log(seed: int = 5, drop: float = 0.0) -> pd.DataFrame:
    """Each attempt a rater of its item; a blank score here and there, some lone ratings."""
    log = attempt_log(seed, n_items=30, n_conditions=1, n_attempts=4, drop=drop)
    rng = np.random.default_rng(seed)
    log.loc[rng.random(len(log)) < 0.05, "total"] = np.nan
    log["prob"] = rng.uniform(0.05, 0.95, len(log))
    log["outcome"] = (rng.random(len(log)) < log["prob"]).astype(float)
    log["stated"] = np.round(log["prob"] * 4) / 4  # a verbal confidence: five values
    log["smooth"] = log["total"] + rng.normal(0, 0.1, len(log))  # continuous ratings
    log["panel"] = np.where(log["attempt"] <= 2, "early", "late")  # two groups of raters (icc_groups)
    log["included"] = (log["total"] >= 5).astype(float).where(log["total"].notna())  # a 0/1 judgement, blank here and there
    return log


RATED = dict(item="item_id", rater="attempt")
#: Each statistic that reduces in the engine, called as the tests call it (on ratings_log).
REDUCED = {
    "icc": lambda d: hs.icc(d, **RATED, score="total"),
    "icc-reml": lambda d: hs.icc(d, **RATED, score="total", method="reml"),
    "icc-reml-raters": lambda d: hs.icc(d, **RATED, score="total", method="reml", k="raters"),
    "icc-anova-dropping": lambda d: hs.icc(d, **RATED, score="total", method="anova"),
    "alpha-interval": lambda d: hs.krippendorff_alpha(d, **RATED, score="total", n_boot=200, random_state=1),
    "alpha-interval-continuous": lambda d: hs.krippendorff_alpha(d, **RATED, score="smooth", n_boot=200, random_state=1),
    "alpha-nominal": lambda d: hs.krippendorff_alpha(d, **RATED, score="accuracy", level="nominal", n_boot=200,
                                                     random_state=2),
    "alpha-ordinal": lambda d: hs.krippendorff_alpha(d, **RATED, score="total", level="ordinal", n_boot=200,
                                                     random_state=3, minimum=[0.5, 0.8]),
    "alpha-ratio": lambda d: hs.krippendorff_alpha(d, **RATED, score="accuracy", level="ratio", n_boot=0),
    "fleiss_kappa": lambda d: hs.fleiss_kappa(d, **RATED, score="accuracy"),
    "gwet_ac1": lambda d: hs.gwet_ac(d, **RATED, score="accuracy"),
    "gwet_ac2": lambda d: hs.gwet_ac(d, **RATED, score="total", weights="quadratic", categories=list(range(11))),
    "percent_agreement": lambda d: hs.percent_agreement(d, **RATED, score="total", weights="linear"),
    "calibration-clusters": lambda d: hs.calibration_metrics(d, prob="prob", truth="outcome", item="item_id",
                                                             n_boot=200, random_state=1),
    "calibration-pairs": lambda d: hs.calibration_metrics(d, prob="stated", truth="outcome", n_boot=200, random_state=2),
    "calibration-unique": lambda d: hs.calibration_metrics(d, prob="stated", truth="outcome", strategy="unique",
                                                           item="item_id", n_boot=100, random_state=3),
    "calibration-point": lambda d: hs.calibration_metrics(d, prob="prob", truth="outcome", n_bins=7, n_boot=0),
    "expected_calibration_error": lambda d: hs.expected_calibration_error(d, prob="prob", truth="outcome", n_boot=0),
    "brier_score": lambda d: hs.brier_score(d, prob="prob", truth="outcome", item="item_id", n_boot=100,
                                            random_state=4),
    "icc_groups": lambda d: hs.icc_groups(d, **RATED, score="total", condition="panel"),
    "icc_groups-pooled-reml": lambda d: hs.icc_groups(d, **RATED, score="total", condition="panel", between="pooled",
                                                      method="reml"),
    "strict_agreement": lambda d: hs.strict_agreement(d, **RATED, score="included"),
    "reliability_table": lambda d: hs.reliability_table(d, prob="prob", truth="outcome"),
    "reliability_table-unique": lambda d: hs.reliability_table(d, prob="stated", truth="outcome", strategy="unique"),
}  # fmt: skip


#: PySpark 4.3 warns on every pandas 3 DataFrame handed to createDataFrame (third-party, not
#: ours): the filter of every Spark test module (which is slow too: a JVM starts).
SPARK_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"
#: What the Spark tests need, said when they skip.
SPARK = 'pip install "hce[spark]" and Java: apt-get install -y openjdk-17-jre-headless'


def local_spark():
    """A Spark session in local[2] mode for a test module (yielded, then stopped); skips the
    tests without PySpark or Java."""
    import shutil

    import pytest

    pyspark = pytest.importorskip("pyspark", reason=f"PySpark is not installed: {SPARK}")
    if shutil.which("java") is None:
        pytest.skip(f"no Java for Spark: {SPARK}")
    session = (
        pyspark.sql.SparkSession.builder.master("local[2]").appName("hce-tests")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC").getOrCreate()
    )  # fmt: skip
    yield session
    session.stop()
