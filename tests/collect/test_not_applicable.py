"""Issue 34: a rubric may declare a "not applicable" answer (PDSQI-9's); such a score is missing by design."""

import pytest
import yaml
from collect_helpers import design, fast_client

import hce
from hce.collect.call.parse import parse_reply
from hce.collect.running.runner import run
from hce.sim import SimJudge

RUBRIC = {
    "name": "Notes",
    "categories": [
        {"name": "Accurate", "levels": [{"score": 1, "label": "No", "descriptor": "Errors."},
                                        {"score": 2, "label": "Yes", "descriptor": "None."}]},
        {"name": "Medications", "levels": [{"score": 1, "label": "No", "descriptor": "Wrong."},
                                           {"score": 2, "label": "Yes", "descriptor": "Right."}],
         "not_applicable": {"label": "N/A", "descriptor": "The visit discussed no medication."}},
    ],
}


def rubric(tmp_path):
    path = tmp_path / "notes.yaml"
    path.write_text(yaml.safe_dump(RUBRIC, sort_keys=False))
    return hce.load_rubric(path)


def test_the_not_applicable_answer_is_in_the_prompt_and_parsed_as_missing_without_error(tmp_path):
    notes = rubric(tmp_path)
    assert "Criterion 2: Medications\n- 1 (No): Wrong.\n- 2 (Yes): Right.\n- N/A: The visit discussed no medication." in notes.render()
    row = parse_reply("P1.2", "Accurate: 2\nMedications: N/A\nTotal Score: 2", rubric=notes)
    assert row["medications"] is None and row["accurate"] == 2 and row["total"] is None
    assert not row["error_flag"] and row["not_applicable"] == "medications"
    # Where none is declared, N/A is no score: flagged as before.
    assert parse_reply("P1.2", "Accurate: N/A\nMedications: 2\nTotal Score: 2", rubric=notes)["error_flag"]
    again = tmp_path / "again.yaml"
    again.write_text(hce.rubric.rubric_yaml(notes))
    assert hce.load_rubric(again) == notes


def test_a_run_counts_the_not_applicable_scores_and_reports_them(serve, tmp_path):
    notes = rubric(tmp_path)

    class NotApplicableJudge(SimJudge):
        def _reply(self, fmt, prompt, item, model, draw, malformed, rng, shift=0.0, served=0):
            return "Accurate: 2\nMedications: N/A\nTotal Score: 2", "stop"

    server = serve(NotApplicableJudge(seed=0))
    spec = design(prompts=("P1.2",), attempts=2, rubric=str(tmp_path / "notes.yaml"))
    summary = run(spec, tmp_path / "log.jsonl", client=fast_client(server))
    assert summary.errors == 0 and summary.not_applicable == 6
    assert "6 criterion scores not applicable, missing by the rubric's design" in str(summary)
    log = hce.read_log(tmp_path / "log.jsonl")
    assert log["medications"].isna().all() and (log["accurate"] == 2).all() and (log["not_applicable"] == "medications").all()
    assert notes.criteria == ["accurate", "medications"]


def declared(tmp_path, label):
    spec = {**RUBRIC, "categories": [RUBRIC["categories"][0], {**RUBRIC["categories"][1], "not_applicable":
                                                              {"label": label, "descriptor": "No medication."}}]}
    path = tmp_path / f"rubric_{abs(hash(label))}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return hce.load_rubric(path)


@pytest.mark.parametrize("label", ["NA", "N/A", "n/a", "Not applicable"])
@pytest.mark.parametrize("written", ["N/A", "n/a", "NA", "na", "N.A.", "not applicable", "**N/A**"])
def test_any_spelling_of_not_applicable_is_read_as_the_declared_answer(tmp_path, label, written):
    # Issue 44: "N/A" where the rubric declares "NA" was flagged as "no score line".
    row = parse_reply("P1.2", f"Accurate: 2\nMedications: {written}\nTotal Score: 2", rubric=declared(tmp_path, label))
    assert not row["error_flag"], row["error_message"]
    assert row["not_applicable"] == "medications" and row["accurate"] == 2


def test_a_declared_word_answer_is_read_in_any_case_but_not_as_n_a(tmp_path):
    notes = declared(tmp_path, "Unscorable")
    assert parse_reply("P1.2", "Accurate: 2\nMedications: unscorable\nTotal Score: 2", rubric=notes)["not_applicable"] == "medications"
    assert parse_reply("P1.2", "Accurate: 2\nMedications: N/A\nTotal Score: 2", rubric=notes)["error_flag"]
