"""A user's own prompt templates and few-shot examples (issue #21): checked at load, run end to end."""

import json

import pytest
import yaml
from collect_helpers import MODEL, TRANSCRIPTS, design, fast_client

import hce
from hce.collect import SimJudge, load_design, run
from hce.collect.design.prompts import render
from hce.collect.design.templates import PromptTemplate, load_template
from hce.errors import CollectError
from hce.report import report

RUBRIC = {
    "name": "Summary quality",
    "categories": [
        {"id": "accurate", "name": "Accurate", "levels": [{"score": s, "label": str(s), "descriptor": f"accuracy {s}"} for s in range(1, 6)]},
        {"id": "stigma", "name": "Stigmatizing language", "levels": [{"score": 0, "label": "No", "descriptor": "none"},
                                                                      {"score": 1, "label": "Yes", "descriptor": "present"}]},
    ],
}
TEMPLATE = """---
id: summary_fewshot
reply: scores
---
Judge the item below with "{{ RubricName }}".
{{RubricText}}
Scales:
{{ScaleLines}}
Worked examples:
{{FewShotExamples}}
Answer in exactly this format:
{{ScoreFormat}}

Transcript:
{{TranscriptText}}

Scores:
"""
EXAMPLES = [
    {"id": "good", "text": "Patient: I take 5 mg daily.", "scores": {"accurate": 5, "stigma": 0}, "rationale": "Exact."},
    {"id": "poor", "text": "Patient: the pink one.", "scores": {"accurate": 2, "stigma": 0}},
]


def _files(tmp_path, template=TEMPLATE, examples=EXAMPLES, conditions=None):
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(RUBRIC))
    (tmp_path / "mine.txt").write_text(template)
    (tmp_path / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    spec = {
        "experiment_id": "OWN", "rubric": "rubric.yaml", "attempts": 4,
        "defaults": {"model": MODEL, "temperature": 0.7, "logprobs": True, "top_logprobs": 5},
        "conditions": conditions or [{"id": "own", "prompt": "mine.txt", "examples": "examples.jsonl"}],
        "items": [{"id": k, "text": v} for k, v in TRANSCRIPTS.items()],
    }  # fmt: skip
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_own_template_and_examples_run_against_the_simulator(serve, tmp_path):
    path = _files(tmp_path)
    d = load_design(path)
    cond = d.conditions[0]
    assert (cond.prompt_id, cond.reply_format, [e["id"] for e in cond.examples]) == ("summary_fewshot", "scores", ["good", "poor"])
    server = serve(SimJudge(seed=0))
    log = tmp_path / "log.jsonl"
    run(path, log, client=fast_client(server))
    frame = hce.read_log(log)
    assert len(frame) == 12 and not frame["error_flag"].any()
    assert (frame["prompt_id"] == "summary_fewshot").all() and (frame["condition_id"] == "own").all()
    assert frame["accurate"].between(1, 5).all() and frame["stigma"].isin([0, 1]).all()
    sent = json.loads(frame["request"].iloc[0])[0]["content"]
    assert "Example Transcript Snippet: Patient: I take 5 mg daily." in sent and "Summary quality Scores:" in sent
    assert "Accurate: 1 to 5\nStigmatizing language: 0 to 1" in sent and "{{" not in sent
    # The rubric is kept beside the log, and the report reads it: a section per criterion, no total
    # (1-5 beside 0-1), and the calibration of the logprobs of each criterion's score.
    assert hce.load_rubric(tmp_path / "log.jsonl.rubric.yaml") == d.rubric
    document = report(log)
    titles = [s.title for s in document.sections]
    assert titles == ["Attempts and errors by condition", "Cost and tokens by condition", "Criterion: Accurate",
                      "Criterion: Stigmatizing language (stigma)", "Calibration (token probabilities)", "Not reported"]
    calibration = next(t.data for t in document.tables() if t.name == "calibration")
    assert calibration.loc[calibration["metric"] == "ece", "n"].item() == 24  # 12 attempts x 2 criteria, all matched
    # (A changed rubric under the same condition id is already refused by the settings check: use a new id.)
    spec = yaml.safe_load(path.read_text())
    spec["conditions"][0]["id"] = "own_again"
    path.write_text(yaml.safe_dump(spec))
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(dict(RUBRIC, name="Another instrument")))
    with pytest.raises(CollectError, match=r"log.jsonl was judged with the rubric in .*'Summary quality'.* write to a new log"):
        run(path, log, client=fast_client(server))


def test_str_format_templates_and_snake_case_names(tmp_path):
    (tmp_path / "fmt.txt").write_text("Rubric {rubric_name}:\n{rubric_text}\n{score_format}\n\nTranscript:\n{item_text}\n")
    template = load_template(tmp_path / "fmt.txt")
    assert (template.id, template.syntax) == ("fmt", "format")
    text = render(template.id, rubric=hce.load_rubric("v5"), transcript="Patient: hi.", template=template)[0]["content"]
    assert text.startswith("Rubric Patient Health Communication Rubric v5.0:") and text.endswith("Transcript:\nPatient: hi.")


def test_packaged_prompts_are_templates_of_the_same_format():
    from hce.collect.design.templates import packaged_template

    assert {n: packaged_template(n).reply for n in ("P1.1", "P1.2", "P2.1", "P2.2", "P2.3")} == {
        "P1.1": "total", "P1.2": "scores", "P2.1": "scores", "P2.2": "scores", "P2.3": "cot"}  # fmt: skip
    assert isinstance(packaged_template("P2.2"), PromptTemplate) and "FewShotExamples" in packaged_template("P2.2").placeholders


@pytest.mark.parametrize(
    "template, examples, message",
    [
        (TEMPLATE.replace("{{TranscriptText}}", "{{Transcript}}"), EXAMPLES,
         r"conditions\[0\] \(own\): .*mine.txt: unknown placeholder 'Transcript' \(did you mean 'TranscriptText'\?\)"),
        (TEMPLATE.replace("{{TranscriptText}}", "(item)"), EXAMPLES, r"mine.txt: the template never places the item: add \{\{TranscriptText\}\}"),
        (TEMPLATE, [{"id": "good", "text": "x", "scores": {"accurate": 5}}],
         r"conditions\[0\] \(own\): .*examples.jsonl: example 'good' has no score for \['stigma'\]; give every criterion"),
        (TEMPLATE, [{"id": "good", "text": "x", "scores": {"accurate": 6, "stigma": 0}}],
         r"examples.jsonl: example 'good' has scores off the scale: accurate 6 \(scale 1-5\)"),
    ],
)
def test_bad_template_or_example_is_refused_before_any_call(serve, tmp_path, template, examples, message):
    path = _files(tmp_path, template, examples)
    with pytest.raises(CollectError, match=message) as caught:
        load_design(path)
    assert str(path) in str(caught.value)  # the design file is named too
    server = serve(SimJudge(seed=0))
    with pytest.raises(CollectError, match=message):
        run(path, tmp_path / "log.jsonl", client=fast_client(server))
    assert server.judge.stats["requests"] == 0 and not (tmp_path / "log.jsonl").exists()


def test_packaged_few_shot_prompt_with_another_rubric_names_the_fix(tmp_path):
    # Issue #21: P2.2 with a custom rubric used to fail mid-run with "few-shot example 'fewshot_low' has no
    # score for [...]", naming neither the design nor a fix.
    path = _files(tmp_path, conditions=[{"id": "fewshot", "prompt": "P2.2"}])
    with pytest.raises(CollectError, match=r"design.yaml: conditions\[0\] \(fewshot\): the packaged few-shot examples .* "
                                            r"example 'fewshot_low' has no score for \['accurate', 'stigma'\].* add examples: FILE"):
        load_design(path)
    path = _files(tmp_path, conditions=[{"id": "fewshot", "prompt": "P2.2", "examples": "examples.jsonl"}])
    assert load_design(path).conditions[0].examples[1]["id"] == "poor"


def na_rubric(tmp_path):
    levels = [{"score": s, "label": str(s), "descriptor": "d"} for s in (1, 2, 3, 4)]
    spec = {"name": "Notes", "categories": [{"name": "Accurate", "levels": levels},
                                             {"name": "Medications", "levels": levels,
                                              "not_applicable": {"label": "NA", "descriptor": "no medication"}}]}
    path = tmp_path / "notes.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return hce.load_rubric(path)


@pytest.mark.parametrize("text, message", [
    ("Judge {{ItemText}}.\nScales:\n{ScaleLines}\nAnswer:\n{{ScoreFormat}}",
     r"\{ScaleLines\} has single braces, so the judge would read it as written: write \{\{ScaleLines\}\}"),
    ("Judge {{ItemText}} by {{RubricText}}. Be fair.",
     r"never says how to answer \(no line for Accurate, Medications\): place \{\{ScoreFormat\}\}"),
    ("Judge {{ItemText}}.\nAccurate: 1-5\nMedications: 1-4 or NA",
     r"the answer line for Accurate offers 1-5, but the rubric's levels are 1-4"),
    ("Judge {{ItemText}}.\nAccurate: 1-4\nMedications: 1-4",
     r"the answer line for Medications offers 1-4, but the rubric also allows 'NA' \(no medication\)"),
])
def test_templates_are_checked_against_the_rubric_before_any_call(tmp_path, text, message):
    # Issue 44: a single-brace {ScaleLines} went to the judge literally; no answer format, or 1-5 where NA is allowed, passed.
    from hce.collect.design.templates import PromptTemplate, TemplateError, check_template
    with pytest.raises(TemplateError, match=message):
        check_template(PromptTemplate("mine", text, source="mine.txt"), None, na_rubric(tmp_path))


def test_a_template_that_writes_the_rubrics_lines_or_places_the_score_format_passes(tmp_path):
    from hce.collect.design.prompts import score_format
    from hce.collect.design.templates import PromptTemplate, check_template
    rubric = na_rubric(tmp_path)
    for text in ("Judge {{ItemText}}.\n{{ScoreFormat}}", "Judge {{ItemText}}.\nAccurate: 1-4\nMedications: 1-4 or N/A",
                 'Judge {{ItemText}}. Reply {"ok": 1}\n{{ScoreFormat}}'):
        check_template(PromptTemplate("mine", text, source="mine.txt"), None, rubric)
    # The score lines hce writes offer the declared answer too.
    assert score_format(rubric).splitlines()[1] == "Medications: [score_1_4 or NA]"


def test_a_design_with_a_bad_template_stops_before_any_call(tmp_path):
    (tmp_path / "mine.txt").write_text("Judge {{ItemText}}.\n{ScoreFormat}\n")
    spec = design(conditions=[{"prompt": "mine.txt"}])
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(CollectError, match=r"single braces"):
        load_design(path)
