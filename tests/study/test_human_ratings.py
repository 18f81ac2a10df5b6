"""Human ratings in a study (issue 46, item 4): the study file's ``humans:`` keys, checked at load and
recorded with absolute paths by the run; Exp 1's targets as the rater ``target``; Exp 4's researchers as
the human labels of the LLM coder. The demo's numbers are those of hce.stats on the demo's own files."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import hce
import hce.stats as hs
from hce.errors import CollectError
from hce.study import load_study
from hce.study.human_ratings import (
    STUDY_WIDE,
    absolute_ratings,
    coder_tables,
    ratings_for,
    ratings_of_folder,
    target_ratings,
)

EXP1 = "EXP1_BaselineRubricUtility"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("key", ["humans", "experiments.exp2.humans"])
@pytest.mark.parametrize(("text", "says"), [
    (None, "does not exist"),
    ("item_id,total\nT1,3\n", "need columns 'item_id' and 'rater'; missing ['rater']"),
    ("item_id,rater,total\nT1,dr1,3\nT2,,4\n", "row 2 (line 3 of the CSV) has no rater"),
    ("item_id,rater,total\nT1,dr1,3\nT2,dr1,four\n", "row 2 (line 3 of the CSV), column 'total': 'four' is not a number"),
    ("item_id,rater,accuracy\nT1,dr1,3\n", "no score column in the human ratings"),
])  # fmt: skip
def test_a_bad_humans_key_is_refused_at_load_naming_it(tmp_path, key, text, says):
    if text is not None:
        write(tmp_path / "ratings.csv", text)
    config = {"humans": "ratings.csv"} if key == "humans" else {"experiments": {"exp2": {"humans": "ratings.csv"}}}
    study = write(tmp_path / "study.yaml", yaml.safe_dump(config))
    with pytest.raises(CollectError) as caught:
        load_study(study)
    assert f"study.yaml: {key}" in str(caught.value) and says in str(caught.value)


def test_a_humans_key_must_be_a_path():
    with pytest.raises(CollectError, match=r"experiments\.exp5\.humans must be the path of a CSV"):
        load_study({"experiments": {"exp5": {"humans": ["a.csv"]}}})
    with pytest.raises(CollectError, match=r"experiments\.exp4\.humans: unknown key"):  # Exp 4 has its coders
        load_study({"experiments": {"exp4": {"humans": "a.csv"}}})


def test_the_run_records_absolute_paths_and_the_folder_report_finds_them(tmp_path):
    folder = tmp_path / "study"
    folder.mkdir()
    write(folder / "ratings.csv", "item_id,rater,total\nT1,dr1,3\n")
    write(folder / "exp2.csv", "item_id,rater,total\nT1,dr2,3\n")
    study = load_study(write(folder / "study.yaml", yaml.safe_dump({"humans": "ratings.csv",
                                                                    "experiments": {"exp2": {"humans": "exp2.csv"}}})))
    resolved = absolute_ratings(study.config, study.base)
    assert resolved["humans"] == str(folder.resolve() / "ratings.csv")
    assert resolved["experiments"]["exp2"]["humans"] == str(folder.resolve() / "exp2.csv")
    assert study.config["humans"] == "ratings.csv"  # the study's own configuration is left as written
    found = ratings_of_folder(tmp_path / "elsewhere", resolved)
    assert found == {STUDY_WIDE: folder.resolve() / "ratings.csv", "EXP2_PromptOptimization": folder.resolve() / "exp2.csv"}
    (folder / "exp2.csv").unlink()  # moved after the run: the report says which key and what to do
    with pytest.raises(CollectError, match=r"study\.resolved\.yaml: experiments\.exp2\.humans: .*exp2\.csv does not exist"):
        ratings_of_folder(tmp_path / "elsewhere", resolved)
    # without a humans: key the folder's humans.csv is the study-wide file
    (tmp_path / "out").mkdir()
    write(tmp_path / "out" / "humans.csv", "item_id,rater,total\nT1,dr1,3\n")
    assert ratings_of_folder(tmp_path / "out", {}) == {STUDY_WIDE: tmp_path / "out" / "humans.csv"}


def test_ratings_named_for_an_experiment_that_rate_none_of_its_items_are_not_passed_over():
    from hce.study.human_ratings import unmatched_ratings

    rows = pd.DataFrame({"item_id": ["A1", "A2"]})
    wrong = pd.DataFrame({"item_id": ["001"], "rater": ["dr1"], "total": [3.0]})
    entry = unmatched_ratings({"EXP2_PromptOptimization": wrong}, "EXP2_PromptOptimization", rows, "Experiment 2")
    assert entry[0]["section"] == "Experiment 2: Agreement with human raters" and "'001'" in entry[0]["reason"]
    assert unmatched_ratings({STUDY_WIDE: wrong}, "EXP2_PromptOptimization", rows, "Experiment 2") == []  # another's items
    assert unmatched_ratings({"EXP2_PromptOptimization": wrong.assign(item_id="A2")}, "EXP2_PromptOptimization", rows, "x") == []


def test_exp1_targets_are_the_rater_target_unless_exp1_has_ratings():
    rows = pd.DataFrame({"item_id": ["S1", "S1", "S2"], "target_total": [12, 12, 18], "total": [11, 13, 17]})
    targets = target_ratings(rows)
    assert targets.to_dict("list") == {"item_id": ["S1", "S2"], "rater": ["target"] * 2, "rater_role": ["target"] * 2,
                                       "total": [12.0, 18.0]}  # fmt: skip
    humans = pd.DataFrame({"item_id": ["S1"], "rater": ["dr1"], "total": [10.0]})
    assert ratings_for({EXP1: humans}, EXP1, rows) is humans
    assert ratings_for({STUDY_WIDE: humans}, "EXP2_PromptOptimization", rows) is humans
    other = humans.assign(item_id="T9")  # ratings of another experiment's items
    assert ratings_for({STUDY_WIDE: other}, "EXP2_PromptOptimization", rows) is None
    assert ratings_for({}, "EXP2_PromptOptimization", rows) is None and target_ratings(rows.drop(columns="target_total")) is None


def test_coder_tables_equal_the_statistics():
    rng = np.random.default_rng(3)
    truth = rng.choice(["a", "b", "c"], 40)
    rows = []
    for k, code in enumerate(truth):
        for coder, flip in (("coder_1", 0.1), ("coder_2", 0.2), ("coder_3", 0.2), ("llm:m", 0.15)):
            rows.append({"item_id": f"T{k // 4}", "model": "m1", "attempt_id": f"r{k // 4}", "criterion": f"c{k % 4}",
                         "coder": coder, "depth": rng.choice(["a", "b", "c"]) if rng.random() < flip else code})  # fmt: skip
    codes = pd.DataFrame(rows)
    alt, kappa, _ = coder_tables(codes, ["depth"])
    stacked = codes.assign(segment=codes["item_id"] + "|" + codes["model"] + "|" + codes["criterion"])
    expected = hs.alt_test(stacked, item="segment", rater="coder", score="depth", judge="llm:m")["summary"].iloc[0]
    got = alt.iloc[0]
    assert (got.dimension, got.llm) == ("depth", "llm:m")
    assert got.winning_rate == expected.winning_rate and got.advantage_probability == pytest.approx(expected.advantage_probability)
    wide = stacked.pivot(index="segment", columns="coder", values="depth").reset_index()
    want = hs.cohen_kappa(wide, item="segment", rater=["llm:m", "coder_2"]).iloc[0]
    row = kappa.set_index("human").loc["coder_2"]
    assert (row.weights, row.estimate, row.ci_low) == ("unweighted", pytest.approx(want.estimate), pytest.approx(want.ci_low))
    # one researcher: kappa only, and the reason there is no alt-test
    alt, kappa, notes = coder_tables(codes[codes["coder"].isin(["coder_1", "llm:m"])], ["depth"])
    assert alt.empty and list(kappa["human"]) == ["coder_1"] and "needs at least two researchers" in notes[-1]


# --- the demo (tests/study/conftest.py: one demo per test worker) ------------------------------


def test_demo_exp1_compares_the_judge_with_its_targets(demo_outputs):
    report = (demo_outputs / "report.md").read_text(encoding="utf-8")
    assert "## Experiment 1: Agreement with human raters" in report
    section = report.split("## Experiment 1: Agreement with human raters")[1].split("\n## ")[0]
    assert "Alt-test of Total: not run" in section and "at least two raters of an item" in section
    assert "Human-label budget for Total: not applicable" in section and "cost 0" in section
    log = hce.read_log(demo_outputs / "study" / "study_output" / "exp1.jsonl")
    targets = log.groupby("item_id")["target_total"].first()
    table = pd.read_csv(demo_outputs / "tables" / "exp1_human_agreement_total.csv").set_index("condition_id")
    for condition, part in log[~log["error_flag"]].groupby("condition_id"):
        wide = part.groupby("item_id")["total"].mean().rename("judge").to_frame().join(targets.rename("target")).reset_index()
        assert table.loc[condition, "ccc"] == pytest.approx(hs.concordance(wide, a="judge", b="target")["estimate"].iloc[0])
    by_prompt = {c.split("|")[0]: round(v, 2) for c, v in table["ccc"].items()}
    assert by_prompt == {"P1.1": 0.33, "P1.2": 0.92}  # the simulated judge: the rubric prompt tracks the targets


def test_demo_exp4_tests_the_llm_coder_against_the_researchers(demo_outputs):
    every = pd.read_csv(demo_outputs / "study" / "study_output" / "exp4" / "all_codes.csv")
    assert {"coder_1", "coder_2"} < set(every["coder"]) and every["coder"].str.startswith("llm:").any()
    dimensions = ["evidence_type", "rubric_alignment", "specificity", "reasoning_depth", "strengths_weaknesses"]
    alt, kappa, _ = coder_tables(every, dimensions)
    got = pd.read_csv(demo_outputs / "tables" / "exp4_alt_test.csv")
    np.testing.assert_allclose(got["advantage_probability"], alt["advantage_probability"])
    assert list(got["dimension"]) == dimensions and set(pd.read_csv(demo_outputs / "tables" / "exp4_human_kappa.csv")["weights"]) == {"unweighted"}
    report = (demo_outputs / "report.md").read_text(encoding="utf-8")
    assert "## Experiment 4: Agreement with human raters" in report


def test_demo_experiments_without_human_ratings_have_no_such_section(demo_outputs):
    report = (demo_outputs / "report.md").read_text(encoding="utf-8")
    titles = [line for line in report.splitlines() if line.startswith("## ") and line.endswith("Agreement with human raters")]
    assert titles == ["## Experiment 1: Agreement with human raters", "## Experiment 4: Agreement with human raters"]


@pytest.mark.slow  # a simulated run of Exp 1 and its study report: 11 s idle, far more on the shared 2 cores
def test_a_study_run_with_exp1_humans_reports_them_from_its_folder(tmp_path):
    from hce.study import run_study
    from hce.study.report import study_folder_report

    pd.DataFrame([{"item_id": f"SYN-{i:03d}", "rater": f"dr{r}", "total": 10 + i + r} for i in range(1, 5)
                  for r in range(2)]).to_csv(tmp_path / "exp1_humans.csv", index=False)  # fmt: skip
    config = {"output": "out", "experiments": {"exp1": {"synthetic": {"n": 4}, "attempts": 2, "humans": "exp1_humans.csv"},
                                               **{k: {"enabled": False} for k in ("exp2", "exp3", "exp4", "exp5")}}}  # fmt: skip
    write(tmp_path / "study.yaml", yaml.safe_dump(config))
    run_study(tmp_path / "study.yaml", simulate=True)
    resolved = yaml.safe_load((tmp_path / "out" / "study.resolved.yaml").read_text())
    assert resolved["experiments"]["exp1"]["humans"] == str((tmp_path / "exp1_humans.csv").resolve())
    section = next(s for s in study_folder_report(tmp_path / "out", random_state=0).sections
                   if s.title == "Experiment 1: Agreement with human raters")  # fmt: skip
    names = [b.name for b in section.blocks if not isinstance(b, str)]
    assert "exp1_alt_test_total" in names and "exp1_human_budget_total" in names  # the humans, not the targets
    texts = " ".join(b for b in section.blocks if isinstance(b, str))
    assert "target scores" not in texts and "no human has 30 items" in texts
