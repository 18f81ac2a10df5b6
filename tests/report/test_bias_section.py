"""The report section "Judge biases" (issue 47): present when the log carries probe twins or a
golden-set history (``golden_run``), absent otherwise; its numbers are hce.stats.probe_effect's and
drift's on the same rows, and a golden history gets a drift chart per criterion."""

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.report.generic import report

TITLE = "Judge biases"


def probe_log(seed=0, shift=0.6):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 0.8, 30)
    rows = []
    for i in range(30):
        for twin in (False, True):
            rows.append({"attempt_id": f"{i}-{twin}", "item_id": f"T{i}", "condition_id": "A~pad" if twin else "A",
                         "attempt": 1, "probe_id": "pad" if twin else None, "base_condition_id": "A" if twin else None,
                         "accuracy": truth[i] + shift * twin + rng.normal(0, 0.3), "error_flag": False})  # fmt: skip
    return pd.DataFrame(rows)


def golden_log(seed=0, periods=10, shift_at=7):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 0.8, 20)
    return pd.DataFrame([{"attempt_id": f"{t}-{i}", "item_id": f"G{i}", "condition_id": "A", "attempt": 1, "golden_run": t,
                          "accuracy": truth[i] + 1.5 * (t >= shift_at) + rng.normal(0, 0.5), "error_flag": False}
                         for t in range(1, periods + 1) for i in range(20)])  # fmt: skip


def section(doc):
    return next((s for s in doc.sections if s.title == TITLE), None)


def tables(found):
    return {b.name: b.data for b in found.blocks if hasattr(b, "data")}


def test_no_section_without_probes_or_golden_rows():
    log = probe_log()
    assert section(report(log[log["probe_id"].isna()].drop(columns=["probe_id", "base_condition_id"]), random_state=0)) is None


def test_probe_effects_equal_the_statistics():
    log = probe_log()
    found = section(report(log, random_state=0))
    assert found is not None
    got = tables(found)["bias_probes"]
    expected = hs.probe_effect(log, probe="pad", score="accuracy", margin=0.25)
    np.testing.assert_allclose(got[["estimate", "ci_low", "ci_high"]], expected[["estimate", "ci_low", "ci_high"]])
    assert got["probe"].tolist() == ["pad"] and not got["equivalent"].iloc[0]


def test_a_golden_history_gets_the_drift_table_and_chart():
    log = golden_log()
    found = section(report(log, random_state=0))
    assert found is not None
    got = tables(found)["bias_drift"]
    expected = hs.drift(log, period="golden_run", score="accuracy")
    np.testing.assert_allclose(got["chart_statistic"], expected["chart_statistic"])
    assert got.loc[got["first_alarm"], "period"].tolist() == expected.loc[expected["first_alarm"], "period"].tolist() == [7]
    figure = next(b for b in found.blocks if getattr(b, "name", "") == "drift_accuracy" and hasattr(b, "figure"))
    assert "control limits" in figure.caption
    assert "accuracy alarms first at period 7" in " ".join(b for b in found.blocks if isinstance(b, str))


def test_a_golden_history_reads_its_latest_period_per_criterion_and_its_drift_across_periods():
    # Issue 47: across periods an item's attempts are not repeats of one judgement; the per-criterion
    # sections refused the history as attempts "logged twice" (18 sections not reported).
    import warnings

    from hce.report import report
    from hce.stats._simulate import simulated_log

    parts = []
    for period in (1, 2):
        log = simulated_log(n_items=6, n_attempts=3, random_state=period)
        log["golden_run"] = period
        log["attempt_id"] = log["item_id"] + "-" + log["condition_id"] + "-" + log["attempt"].astype(str) + f"-g{period}"
        parts.append(log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = report(pd.concat(parts, ignore_index=True), random_state=0).to_markdown()
    assert "twice" not in text and "A golden-set history of 2 periods" in text and "Judge biases" in text


def test_a_log_of_another_engine_gets_the_same_section():
    """Session 6's note: a lazy log's report had no "Judge biases" section, without a word. The
    models are fitted on the columns the section reads, collected from the engine."""
    import duckdb
    import polars as pl

    log = probe_log()
    expected = tables(section(report(log, random_state=0)))["bias_probes"]
    for lazy in (pl.from_pandas(log).lazy(), duckdb.from_df(log)):
        got = tables(section(report(lazy, random_state=0)))["bias_probes"]
        pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-10)
