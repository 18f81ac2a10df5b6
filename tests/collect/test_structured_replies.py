"""Issue 44 item 3: structured replies (``response_format: json_schema``), opt-in per condition.

The request shape is OpenAI's structured outputs (chat completions reference: ``response_format``
``{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}``), which llama.cpp's
server reads the same way (tools/server/README.md, "response_format ... json_schema").
"""

import json

import pytest
import yaml
from collect_helpers import TRANSCRIPTS, design, fast_client

import hce
from hce.collect import load_design
from hce.collect.call.messages import call_settings, item_messages
from hce.collect.call.parse import parse_reply
from hce.collect.design.fingerprint import settings_hash
from hce.collect.design.reply_schema import reply_schema
from hce.collect.running.runner import run
from hce.errors import CollectError
from hce.sim import SimJudge

NOTES = {
    "name": "Notes",
    "categories": [
        {"name": "Accurate", "levels": [{"score": 1, "label": "No", "descriptor": "Errors."},
                                        {"score": 2, "label": "Yes", "descriptor": "None."}]},
        {"name": "Medications", "levels": [{"score": 1, "label": "No", "descriptor": "Wrong."},
                                           {"score": 2, "label": "Yes", "descriptor": "Right."},
                                           {"score": 3, "label": "All", "descriptor": "All of them."}],
         "not_applicable": {"label": "NA", "descriptor": "The visit discussed no medication."}},
    ],
}


def notes(tmp_path):
    path = tmp_path / "notes.yaml"
    path.write_text(yaml.safe_dump(NOTES, sort_keys=False))
    return path


class Recording(SimJudge):
    """The simulated judge, keeping every chat body it was sent."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bodies = []

    def respond(self, method, path, body, **kwargs):
        if path.endswith("/chat/completions"):
            self.bodies.append(body)
        return super().respond(method, path, body, **kwargs)


def test_the_schema_is_built_from_the_rubric(tmp_path):
    v5 = hce.load_rubric("v5")
    spec = reply_schema(v5, "scores")
    assert spec["type"] == "json_schema" and spec["json_schema"]["strict"] is True
    schema = spec["json_schema"]["schema"]
    # beside the criteria no total: their sum, which hce adds (the model is asked for judgement, not arithmetic)
    assert list(schema["properties"]) == v5.criteria == schema["required"]
    assert schema["additionalProperties"] is False
    assert all(schema["properties"][c] == {"type": "integer", "enum": [1, 2, 3, 4]} for c in v5.criteria)
    assert reply_schema(v5, "total")["json_schema"]["schema"]["properties"]["total"]["enum"] == list(range(5, 21))
    assert list(reply_schema(v5, "cot")["json_schema"]["schema"]["properties"])[0] == "reasoning"  # reasoning first
    assert list(reply_schema(v5, "total")["json_schema"]["schema"]["properties"]) == ["total"]
    mixed = hce.load_rubric(notes(tmp_path))  # 1-2 beside 1-3: the total is no score, so it is not asked for
    props = reply_schema(mixed, "scores")["json_schema"]["schema"]["properties"]
    assert list(props) == ["accurate", "medications"]
    assert props["medications"] == {"anyOf": [{"type": "integer", "enum": [1, 2, 3]}, {"type": "string", "enum": ["NA"]}]}


def test_a_structured_condition_sends_the_schema_with_the_prompts_own_words():
    spec = design(prompts=("P2.1",), attempts=1,
                  conditions=[{"id": "text", "prompt": "P2.1"}, {"id": "json", "prompt": "P2.1", "response_format": "json_schema"}])
    parsed = load_design(spec)
    text, structured = parsed.conditions
    item = parsed.items[0]
    assert item_messages(item, text, parsed) == item_messages(item, structured, parsed)  # the PRD's words unchanged
    assert "response_format" not in call_settings(text, parsed, item)
    assert call_settings(structured, parsed, item)["response_format"] == reply_schema(parsed.rubric, "scores")
    assert settings_hash(text, parsed) != settings_hash(structured, parsed)  # a changed setting is caught on resume


def test_a_run_against_the_simulated_judge_answers_in_the_schema_and_is_read_as_json(serve, tmp_path):
    judge = Recording(seed=4)
    server = serve(judge)
    spec = design(prompts=("P2.1", "P2.3"), attempts=2,
                  conditions=[{"prompt": "P2.1", "response_format": "json_schema", "logprobs": True, "top_logprobs": 3},
                              {"prompt": "P2.3", "response_format": "json_schema"}, {"prompt": "P1.1", "response_format": "json_schema"}])
    summary = run(spec, tmp_path / "run.jsonl", client=fast_client(server))
    log = hce.read_log(tmp_path / "run.jsonl")
    assert summary.errors == 0 and len(log) == 3 * len(TRANSCRIPTS) * 2
    assert all(body["response_format"]["type"] == "json_schema" for body in judge.bodies)
    asked = [body["response_format"]["json_schema"]["schema"]["properties"] for body in judge.bodies]
    assert sum("total" in props for props in asked) == len(TRANSCRIPTS) * 2  # only P1.1, whose reply is the total
    for text in log["response_text"]:
        assert isinstance(json.loads(text), dict)
    scored = log[log["prompt_id"] != "P1.1"]
    criteria = hce.load_rubric("v5").criteria
    assert scored[criteria].notna().all().all() and (scored[criteria].sum(axis=1) == scored["total"]).all()
    assert log.loc[log["prompt_id"] == "P2.3", "reasoning"].notna().all()
    assert log.loc[log["prompt_id"] == "P1.1", "total"].between(5, 20).all()
    assert log.loc[log["prompt_id"] == "P2.1", "logprobs"].notna().all()


@pytest.mark.parametrize("reply, message", [
    ('{"accurate": 2, "medications": 4}', "Medications score 4 is not one of the levels [1, 2, 3] or 'NA'"),
    ('{"accurate": true, "medications": 2}', "Accurate score True is not one of the levels [1, 2]"),
    ('{"accurate": 2}', "the JSON reply has no 'medications'"),
    ('{"accurate": 2, "medications": 2, "total": 4}', "the JSON reply has keys the schema does not: 'total'"),
    ('Accurate: 2\nMedications: 2', "reply is not a single JSON object"),
])
def test_a_structured_reply_off_the_schema_is_flagged_naming_what_it_wrote(tmp_path, reply, message):
    row = parse_reply("P2.1", reply, rubric=hce.load_rubric(notes(tmp_path)), structured=True)
    assert row["error_flag"] and row["error_message"].startswith(message), row["error_message"]
    assert row["accurate"] is None and row["medications"] is None


@pytest.mark.parametrize("written", ["NA", "N/A", "n/a", "not applicable"])
def test_a_structured_reply_reads_the_declared_not_applicable_answer_in_any_spelling(tmp_path, written):
    row = parse_reply("P2.1", json.dumps({"accurate": 2, "medications": written}), rubric=hce.load_rubric(notes(tmp_path)),
                      structured=True)  # fmt: skip
    assert not row["error_flag"] and row["not_applicable"] == "medications" and row["accurate"] == 2


def test_a_structured_reply_gets_its_total_as_the_sum_of_its_scores(tmp_path):
    # Issue 44: asked for a total beside its scores, llama.cpp's 270M model (under the schema's grammar) wrote one off
    # its own scores in every reply, and every row was flagged. The schema no longer asks; hce adds the sum.
    v5 = hce.load_rubric("v5")
    scores = dict(zip(v5.criteria, [1, 2, 3, 4, 2], strict=True))
    row = parse_reply("P2.1", json.dumps(scores), rubric=v5, structured=True)
    assert not row["error_flag"] and row["total"] == 12 and all(row[c] == v for c, v in scores.items())
    cot = parse_reply("P2.3", json.dumps({"reasoning": "Clear words.", **scores}), rubric=v5, structured=True)
    assert not cot["error_flag"] and cot["total"] == 12 and cot["reasoning"] == "Clear words."
    # a rubric whose total is no score gets none; one criterion not applicable: none (another scale), as in text replies
    mixed = hce.load_rubric(notes(tmp_path))
    assert parse_reply("P2.1", '{"accurate": 2, "medications": 3}', rubric=mixed, structured=True)["total"] is None
    assert parse_reply("P2.1", '{"accurate": 2, "medications": "NA"}', rubric=mixed, structured=True)["total"] is None


def test_a_structured_total_the_reply_writes_anyway_is_checked_against_the_sum():
    v5 = hce.load_rubric("v5")
    reply = json.dumps({**{c: 2 for c in v5.criteria}, "total": 11})
    row = parse_reply("P2.1", reply, rubric=v5, structured=True)
    assert row["error_message"] == "total 11 is not the sum of the category scores (10)" and row["total"] is None
    assert parse_reply("P2.1", json.dumps({**{c: 2.0 for c in v5.criteria}, "total": 10}), rubric=v5, structured=True)["total"] == 10


@pytest.mark.parametrize("condition, endpoint, said", [
    ({"prompt": "P2.1"}, {"base_url": "https://api.anthropic.com/v1/", "api_key_env": "ANTHROPIC_API_KEY"},
     "response_format is ignored by anthropic (docs.anthropic.com/en/api/openai-sdk)"),
    ({"prompt": "BOOL", "behavior": "medications_extracted_correct"}, None, "prompt 'BOOL' does not: remove response_format"),
])
def test_a_schema_is_refused_where_it_cannot_be_honoured(condition, endpoint, said):
    spec = design(prompts=(), attempts=1, conditions=[{**condition, "response_format": "json_schema"}])
    if endpoint is not None:
        spec["endpoint"] = endpoint
    with pytest.raises(CollectError, match=said.replace("(", r"\(").replace(")", r"\)")):
        load_design(spec)
