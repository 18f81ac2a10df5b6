"""The report's "Agreement with human raters" section (issue 46, item 4): present when the log
carries human scores (rater_role rows) or a humans table is given, absent otherwise. Its numbers
are hce.stats.alt_test's, concordance's and bland_altman's on the same data."""

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.report.generic import report

TITLE = "Agreement with human raters"


def log_and_humans(seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 40)
    log = pd.DataFrame([{"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i}", "condition_id": c, "attempt": a,
                         "accuracy": int(np.clip(truth[i] + rng.integers(-1, 2) * (rng.random() < noise), 1, 5)),
                         "error_flag": False}
                        for i in range(40) for c, noise in (("good", 0.2), ("poor", 0.8)) for a in (1, 2)])  # fmt: skip
    humans = pd.DataFrame([{"item_id": f"T{i}", "rater": f"dr{r}",
                            "accuracy": int(np.clip(truth[i] + rng.integers(-1, 2) * (rng.random() < 0.3), 1, 5))}
                           for r in range(3) for i in range(40)])  # fmt: skip
    return log, humans


def section(doc):
    return next((s for s in doc.sections if s.title == TITLE), None)


def test_no_section_without_human_scores():
    log, _ = log_and_humans()
    assert section(report(log, random_state=0)) is None


def test_section_from_a_humans_table_equals_the_statistics(tmp_path):
    log, humans = log_and_humans()
    path = tmp_path / "humans.csv"
    humans.to_csv(path, index=False)
    doc = report(log, humans=path, random_state=0)
    found = section(doc)
    assert found is not None
    tables = {t.name: t.data for t in found.blocks if hasattr(t, "data")}
    judged = log.groupby(["condition_id", "item_id"])["accuracy"].mean().rename("score").reset_index()
    stacked = pd.concat([humans.rename(columns={"accuracy": "score"}).astype({"score": float}),
                         judged.rename(columns={"condition_id": "rater"})], ignore_index=True)  # fmt: skip
    expected = hs.alt_test(stacked, rater="rater", score="score", judge=["good", "poor"], scoring="neg_rmse")["summary"]
    got = tables["alt_test_accuracy"]
    np.testing.assert_allclose(got["winning_rate"], expected["winning_rate"])
    np.testing.assert_allclose(got["advantage_probability"], expected["advantage_probability"])
    assert set(tables["human_agreement_accuracy"]["condition_id"]) == {"good", "poor"}


def test_section_from_rater_role_rows():
    log, humans = log_and_humans()
    stacked = pd.concat([log.assign(rater_role="judge"),
                         humans.assign(rater_role="human", condition_id="humans", attempt=1, error_flag=False,
                                       attempt_id=[f"h{i}" for i in range(len(humans))])], ignore_index=True)  # fmt: skip
    doc = report(stacked, random_state=0)
    assert section(doc) is not None
    overview = next(s for s in doc.sections if s.title.startswith("Attempts"))
    table = next(b for b in overview.blocks if hasattr(b, "data")).data
    assert "humans" not in table["condition_id"].tolist()


@pytest.mark.parametrize("bad", [pd.DataFrame({"item_id": ["T1"], "accuracy": [3]})])
def test_a_humans_table_without_rater_is_refused(bad):
    log, _ = log_and_humans()
    with pytest.raises(Exception, match="'rater'"):
        report(log, humans=bad, random_state=0)


def test_cli_humans_option(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    log, humans = log_and_humans()
    log.to_csv(tmp_path / "log.csv", index=False)
    humans.to_csv(tmp_path / "humans.csv", index=False)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "hce.cli", "report", str(tmp_path / "log.csv"), "--humans",
                           str(tmp_path / "humans.csv"), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)}, cwd=tmp_path)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert TITLE in (tmp_path / "out" / "report.md").read_text()
