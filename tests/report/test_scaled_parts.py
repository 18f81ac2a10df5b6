"""The engine report writes every part whose statistics run in an engine, and lists the rest
(issue 43, item 5): agreement of repeated attempts (ICC, Krippendorff's alpha, Fleiss' kappa) runs
in the engine and equals the in-memory report's; "Not reported" names exactly the parts of
``hce.report.scaled.ROW_PARTS`` whose statistics are not in ``ENGINE_STATISTICS``. Before, the
list was kept by hand and named ICC, alpha and Fleiss' kappa, which all run in every engine.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import hce.report.scaled as scaled
from hce.report import report
from hce.report.scaled import ROW_PARTS, report_in_engine, runs_in_engine
from hce.stats._frames import ENGINE_STATISTICS

pl = pytest.importorskip("polars", reason='Polars is not installed: pip install "hce[engines]"')


def log(binary: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for i in range(12):
        level = rng.normal()
        for c in ("A", "B"):
            for a in (1, 2, 3):
                value = float(np.clip(np.rint(3 + level + rng.normal(0, 0.7)), 1, 5))
                rows.append({"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i:02d}", "condition_id": c, "attempt": a,
                             "accuracy": float(value > 3) if binary else value, "error_flag": False})  # fmt: skip
    return pd.DataFrame(rows)


def tables(document) -> dict[str, pd.DataFrame]:
    return {t.name: t.data for t in document.tables()}


def quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def test_agreement_of_repeated_attempts_runs_in_the_engine_as_in_memory():
    frame = log()
    memory = tables(quiet(lambda: report(frame, random_state=0)))["accuracy_reliability"]
    engine = quiet(lambda: report_in_engine(pl.from_pandas(frame).lazy(), random_state=0))
    got = tables(engine)["accuracy_reliability"]
    columns = ["condition_id", "metric", "estimate", "n_items", "n_scores"]
    pd.testing.assert_frame_equal(got[columns], memory[columns], check_dtype=False, rtol=1e-9)
    icc = got["metric"].str.startswith("ICC")  # analytic intervals (alpha's are a bootstrap of its own stream)
    np.testing.assert_allclose(got.loc[icc, ["ci_low", "ci_high"]], memory.loc[icc, ["ci_low", "ci_high"]], rtol=1e-9)
    listed = " ".join(e["section"] for e in engine.not_reported)
    assert "ICC" not in listed and "alpha" not in listed
    assert {"Calibration", "Cost and tokens"} <= {e["section"] for e in engine.not_reported}


def test_fleiss_kappa_of_a_binary_criterion_runs_in_the_engine():
    frame = log(binary=True)
    memory = tables(quiet(lambda: report(frame, random_state=0)))["accuracy_agreement"]
    engine = quiet(lambda: report_in_engine(pl.from_pandas(frame).lazy(), random_state=0))
    pd.testing.assert_frame_equal(tables(engine)["accuracy_agreement"], memory, check_dtype=False, rtol=1e-9)
    listed = [e["section"] for e in engine.not_reported]
    assert not any("Fleiss" in s for s in listed) and any("flips" in s for s in listed)


def test_the_not_reported_list_is_what_does_not_run_in_an_engine(monkeypatch):
    assert [p for p in ROW_PARTS if not runs_in_engine(p)] == [
        "share of items at the higher level (majority of attempts) and flips", "Calibration", "Cost and tokens"]
    # a statistic that stopped running in engines: its part moves to "Not reported", not silently away
    monkeypatch.setattr(scaled, "ENGINE_STATISTICS", tuple(s for s in ENGINE_STATISTICS if s != "icc"))
    engine = quiet(lambda: report_in_engine(pl.from_pandas(log()).lazy(), random_state=0))
    assert "accuracy_reliability" not in tables(engine)
    assert any("ICC" in e["section"] and e["status"] == "not applicable" for e in engine.not_reported)
