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
    # the humans' own condition_id ("humans") is no judge's: the ratings are of the items, as from a table
    from_table = section(report(log, humans=humans, random_state=0))
    for name in ("alt_test_accuracy", "human_agreement_accuracy", "human_kappa_accuracy"):
        got, want = (next(b.data for b in s.blocks if getattr(b, "name", "") == name) for s in (section(doc), from_table))
        pd.testing.assert_frame_equal(got, want)
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


def test_kappa_ppi_and_budget_equal_the_statistics():
    log, humans = log_and_humans()
    humans = humans[humans["item_id"].isin([f"T{i}" for i in range(25)])]  # 25 of 40 items rated: PPI has work to do
    tables = {t.name: t.data for t in section(report(log, humans=humans, random_state=0)).blocks if hasattr(t, "data")}
    assert "dr1" not in set(tables["human_kappa_accuracy"]["human"])  # 25 items: the consensus row only
    judged = log.groupby(["condition_id", "item_id"])["accuracy"].mean().rename("score").reset_index()
    consensus = np.floor(humans.groupby("item_id")["accuracy"].mean() + 0.5).rename("human")
    wide = (judged[judged["condition_id"] == "poor"].assign(judge=lambda d: np.floor(d["score"] + 0.5)).set_index("item_id")
            .join(consensus, how="inner").reset_index())  # fmt: skip
    kappa = hs.cohen_kappa(wide, item="item_id", rater=["judge", "human"], weights="quadratic").iloc[0]
    got = tables["human_kappa_accuracy"].set_index(["condition_id", "human"]).loc[("poor", "humans (consensus)")]
    assert got[["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([kappa.estimate, kappa.ci_low, kappa.ci_high])
    assert -1 <= got.ci_low <= got.ci_high <= 1  # the bounded default interval
    paired = judged.merge(humans.groupby("item_id")["accuracy"].mean().rename("humans").reset_index(), how="left")
    with np.errstate(invalid="ignore"):  # the classical difference is 0 with variance ~ -1e-17: the humans rate the items, not the judges
        ppi = hs.ppi_compare(paired, score="score", truth="humans", tuning="power", cluster="item_id")
    np.testing.assert_allclose(tables["human_ppi_accuracy"][["estimate", "ci_low", "ci_high"]].to_numpy(float),
                               ppi[["estimate", "ci_low", "ci_high"]].to_numpy(float), atol=1e-12)  # fmt: skip
    assert set(tables["human_ppi_accuracy"]["method"]) == {"ppi++", "classical", "judge_only"}
    budget = hs.ppi_budget(paired[paired["condition_id"] == "good"], cost_label=1, cost_judge=0.01, effective_n=40,
                           score="score", truth="humans")  # fmt: skip
    row = tables["human_budget_accuracy"].query("condition_id == 'good' and cost_ratio == 0.01").iloc[0]
    assert (row.n_labelled, row.n_unlabelled) == (budget.n_labelled.iloc[0], budget.n_unlabelled.iloc[0])


def test_no_ppi_when_the_humans_rated_every_item():
    log, humans = log_and_humans()
    doc = report(log, humans=humans, random_state=0)
    assert "human_ppi_accuracy" not in {getattr(t, "name", "") for t in section(doc).blocks}
    assert any("rated every item" in entry["reason"] for entry in doc.not_reported)


def texts(found):
    return [b for b in found.blocks if isinstance(b, str)]


def test_the_same_items_note_only_when_the_conditions_judged_the_same_items():
    log, humans = log_and_humans()
    humans = humans[humans["item_id"].isin([f"T{i}" for i in range(25)])]
    found = section(report(log, humans=humans, random_state=0))
    assert any("0 by construction" in t for t in texts(found))
    # each condition judged items of its own (two systems' outputs, say): no such note
    own = log.assign(item_id=log["item_id"] + "-" + log["condition_id"])
    rated = pd.concat([humans.assign(item_id=humans["item_id"] + "-" + c) for c in ("good", "poor")], ignore_index=True)
    found = section(report(own, humans=rated, random_state=0))
    assert "human_ppi_accuracy" in {getattr(b, "name", "") for b in found.blocks}
    assert not any("0 by construction" in t for t in texts(found))


def test_human_ratings_per_condition_are_each_conditions_own():
    log, humans = log_and_humans()
    # the humans rated each condition's output: "poor"'s labels are its own scores, "good"'s are shifted by 1
    judged = log.groupby(["condition_id", "item_id"])["accuracy"].mean().rename("accuracy").reset_index()
    per = pd.concat([judged.assign(rater=f"dr{r}", accuracy=judged["accuracy"] + (judged["condition_id"] == "good"))
                     for r in range(3)], ignore_index=True)  # fmt: skip
    found = section(report(log, humans=per, random_state=0))
    assert any("per condition" in t for t in texts(found))
    extra = pd.concat([per, per.head(2).assign(condition_id="retired")], ignore_index=True)
    assert any("2 rating row(s) name a condition_id the judge's rows do not have" in t and "'retired' (2)" in t
               for t in texts(section(report(log, humans=extra, random_state=0))))
    agreement = next(b.data for b in found.blocks if getattr(b, "name", "") == "human_agreement_accuracy").set_index("condition_id")
    assert agreement.loc["poor", "bias"] == pytest.approx(0) and agreement.loc["poor", "ccc"] == pytest.approx(1)
    assert agreement.loc["good", "bias"] == pytest.approx(-1)  # the judge scores 1 below its own labels
    alt = next(b.data for b in found.blocks if getattr(b, "name", "") == "alt_test_accuracy").set_index("condition_id")
    stacked = pd.concat([per[per["condition_id"] == "poor"].drop(columns="condition_id"),
                         judged[judged["condition_id"] == "poor"].assign(rater="poor").drop(columns="condition_id")],
                        ignore_index=True).rename(columns={"accuracy": "score"})  # fmt: skip
    expected = hs.alt_test(stacked, rater="rater", score="score", judge="poor", scoring="neg_rmse")["summary"].iloc[0]
    assert alt.loc["poor", "winning_rate"] == pytest.approx(expected.winning_rate)


def test_one_rater_per_item_says_why_there_is_no_alt_test_and_targets_have_no_budget():
    log, humans = log_and_humans()
    target = humans[humans["rater"] == "dr0"].assign(rater="target", rater_role="target")
    doc = report(log, humans=target, random_state=0)
    found = section(doc)
    words = " ".join(texts(found))
    assert "Alt-test of accuracy: not run" in words and "at least two raters of an item" in words
    assert "Human-label budget for accuracy: not applicable" in words and "cost 0" in words
    names = {getattr(b, "name", "") for b in found.blocks}
    assert "human_agreement_accuracy" in names and "alt_test_accuracy" not in names and "human_budget_accuracy" not in names
    statuses = {e["section"]: e["status"] for e in doc.not_reported if e["section"].startswith(TITLE)}
    assert statuses[f"{TITLE}: alt-test of accuracy"] == statuses[f"{TITLE}: human-label budget for accuracy"] == "not applicable"
    # one human per item, no target role: the alt-test's words, and the budget priced as human labels
    found = section(report(log, humans=target.drop(columns="rater_role"), random_state=0))
    assert "human_budget_accuracy" in {getattr(b, "name", "") for b in found.blocks}


def test_the_bland_altman_figure_has_a_panel_per_condition():
    log, humans = log_and_humans()
    found = section(report(log, humans=humans, random_state=0))
    figure = next(b for b in found.blocks if getattr(b, "name", "") == "human_bland_altman_accuracy")
    titles = [ax.get_title() for ax in figure.figure.axes if ax.get_visible()]
    assert titles == ["good", "poor"]
    bias = next(b.data for b in found.blocks if getattr(b, "name", "") == "human_agreement_accuracy").set_index("condition_id")["bias"]
    for ax, condition in zip(figure.figure.axes, titles):  # the solid line is the table's bias
        solid = [line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "-" and line.get_linewidth() == 1.5]
        assert solid == [pytest.approx(bias[condition])]
