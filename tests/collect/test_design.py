import json

import pytest
import yaml
from collect_helpers import MODEL, design

from hce.collect.design.design import load_design
from hce.collect.design.schema import SchemaError
from hce.errors import CollectError, HceError, HceWarning
from hce.log import make_attempt_id


def test_yaml_design_with_items_from_files(tmp_path):
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "A7.txt").write_text("Doctor: Hi.\nPatient: Hello.")
    (tmp_path / "transcripts" / "B2.txt").write_text("Doctor: Pain?\nPatient: Some.")
    spec = design(attempts=2, items={})
    spec["items"] = "transcripts"
    spec["conditions"] = [{"prompt": "P2.1", "id": "zero_shot"}, {"prompt": "P2.3", "temperature": 0.0, "logprobs": True}]
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(spec))
    d = load_design(tmp_path / "study.yaml")
    assert [i.id for i in d.items] == ["A7", "B2"] and d.items[0].text.startswith("Doctor: Hi.")
    assert [c.id for c in d.conditions] == ["zero_shot", f"P2.3|{MODEL}|t0"]
    assert d.conditions[1].temperature == 0.0 and d.conditions[1].logprobs and d.conditions[0].max_tokens == 1000
    plan = d.plan()
    assert len(plan) == 8 and plan[0].attempt_id == make_attempt_id("TEST", "A7", "zero_shot", 1)


def test_items_from_jsonl_and_csv(tmp_path):
    rows = [{"id": "T1", "text": "Doctor: Hi.", "source": "DoVA"}, {"id": "T2", "file": "t2.txt", "metadata": {"n": 3}}]
    (tmp_path / "t2.txt").write_text("Doctor: From a file.")
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "items.csv").write_text("id,text,source\nT1,Doctor: Hi.,DoVA\n")
    spec = design(items={})
    for name in ("items.jsonl", "items.csv"):
        spec["items"] = name
        (tmp_path / "d.yaml").write_text(yaml.safe_dump(spec))
        d = load_design(tmp_path / "d.yaml")
        assert d.items[0].metadata == {"source": "DoVA"} and d.items[0].text == "Doctor: Hi."
    assert d.items == d.items[:1]
    spec["items"] = "items.jsonl"
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(spec))
    assert load_design(tmp_path / "d.yaml").items[1].text == "Doctor: From a file."


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": 1}, r"design: colour: unknown key; \(valid here: attempts, conditions"),
        ({"conditions": [{"prompt": "P9"}]}, r"prompt='P9' is not valid; choose one of \['P1.1'"),
        ({"conditions": [{"prompt": "P2.1"}, {"prompt": "P2.1"}]}, "condition ids must be distinct"),
        ({"conditions": [{"prompt": "P2.1", "temprature": 0}]}, r"conditions\[0\].temprature: unknown key; did you mean 'temperature'\?"),
        ({"conditions": [{"prompt": "BOOL"}]}, "prompt BOOL needs behavior"),
        ({"conditions": [{"prompt": "SYNTH"}]}, "no metadata.target_total for SYNTH"),
        ({"attempts": 0}, "attempts: must be >= 1, got 0"),
        ({"items": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}, r"repeated: \['a'\]"),
        ({"items": [{"id": "a"}]}, "item 'a' has no text"),
        ({"items": [{"id": "a", "text": "x", "total": 3}]}, r"metadata \['total'\] would overwrite log columns"),
        ({"rubric": "nope.yaml"}, "field 'rubric'"),
        # o-series reasoning models refuse any temperature but the default (the API's 400, quoted in design.py)
        ({"defaults": {"model": "o3"}},
         r"\(P1.2\|o3\|t0.1\): model 'o3' is an OpenAI reasoning model \(o-series, gpt-5\).* not 0.1; set temperature: null"),
        ({"conditions": [{"prompt": "P2.1", "model": "gpt-5-mini-2025-08-07", "temperature": 0.7}]}, "model 'gpt-5-mini-2025-08-07'"),
        ({"conditions": [{"prompt": "P2.1", "model": "o4-mini-2025-04-16", "temperature": 0}]}, "model 'o4-mini-2025-04-16'"),
        ({"conditions": [{"prompt": "P2.1", "model": "my-azure-deployment", "price_model": "o3-mini"}]}, "model 'o3-mini'"),
    ],
)
def test_design_errors_name_the_field(change, message):
    spec = design()
    spec.update(change)
    with pytest.raises(CollectError, match=message):
        load_design(spec)


@pytest.mark.parametrize("model", ["o1", "o3-2025-04-16", "o3-mini", "o4-mini"])
def test_o_series_takes_the_default_temperature_or_none(model):
    for temperature in (None, 1):
        spec = design(defaults={"model": model, "temperature": temperature})
        assert {c.temperature for c in load_design(spec).conditions} == {temperature}
    assert load_design(design(defaults={"model": "gpt-4o", "temperature": 0})).conditions[0].temperature == 0


# Issue 19: a typo or an impossible value in any mapping is refused, naming file, path and the closest key.
@pytest.mark.parametrize(
    "change, message",
    [
        # Today `base_ulr` sends every transcript (and the key) to api.openai.com.
        ({"endpoint": {"base_ulr": "http://127.0.0.1:18701/v1"}}, r"endpoint.base_ulr: unknown key; did you mean 'base_url'\?"),
        ({"defaults": {"temprature": 0.9}}, r"defaults.temprature: unknown key; did you mean 'temperature'\?"),
        ({"run": {"requests_per_minut": 30}}, r"run.requests_per_minut: unknown key; did you mean 'requests_per_minute'\?"),
        ({"endpoints": {"local": {"base_url": "http://127.0.0.1:1/v1", "timout": 5}}},
         r"endpoints.local.timout: unknown key; did you mean 'timeout'\?"),
        ({"defaults": {"temperature": -0.5}}, r"defaults.temperature: must be >= 0, got -0.5"),
        ({"conditions": [{"prompt": "P2.1", "temperature": 7}]}, r"conditions\[0\].temperature: must be <= 2, got 7"),
        ({"defaults": {"max_tokens": -5}}, r"defaults.max_tokens: must be >= 1, got -5"),
        ({"defaults": {"top_p": 1.5}}, r"defaults.top_p: must be <= 1, got 1.5"),
        ({"run": {"requests_per_minute": -5}}, r"run.requests_per_minute: must be > 0, got -5"),
        ({"run": {"tokens_per_minute": 0}}, r"run.tokens_per_minute: must be > 0, got 0"),
        ({"run": {"concurrency": 0}}, r"run.concurrency: must be >= 1, got 0"),
        ({"endpoint": {"timeout": 0}}, r"endpoint.timeout: must be > 0, got 0"),
        ({"endpoint": {"max_retries": -1}}, r"endpoint.max_retries: must be >= 0, got -1"),
        ({"defaults": {"temperature": "0,7"}}, r"defaults.temperature: must be a number, got '0,7' \(a decimal comma\? write 0.7"),
        ({"defaults": {"temperature": "0.7"}}, r"defaults.temperature: must be a number, got '0.7' \(text: remove the quotes"),
        ({"defaults": {"max_tokens": 100.5}}, r"defaults.max_tokens: must be a whole number, got 100.5"),
        ({"defaults": {"logprobs": "yes"}}, r"defaults.logprobs: must be true or false, got 'yes'"),
        ({"run": [1]}, r"run: must be a mapping"),
        ({"endpoint": {"base_url": "api.openai.com/v1"}}, r"endpoint.base_url: must be an http:// or https:// address"),
        ({"defaults": {"endpoint": "lcoal"}}, r"endpoint 'lcoal' is not defined; did you mean 'local'\?"),
        ({"items": [{"id": "a", "txt": "Doctor: hi"}]}, r"items\[0\].txt: unknown key; did you mean 'text'\?"),
        ({"items": [{"id": "a", "text": "x", "metdata": {"source": "DoVA"}}]}, r"items\[0\].metdata: unknown key; did you mean 'metadata'\?"),
        ({"items": [{"id": "a", "text": "x", "notes": ["a"]}]}, r"items\[0\].notes: unknown key; extra keys are metadata"),
    ],
)
def test_every_mapping_is_checked(change, message):
    spec = design(endpoints={"local": {"base_url": "http://127.0.0.1:1/v1", "needs_key": False}})
    for key, value in change.items():
        spec[key] = {**spec[key], **value} if isinstance(spec.get(key), dict) and isinstance(value, dict) else value
    with pytest.raises(SchemaError if "defined" not in message else CollectError, match=message):
        load_design(spec)


def test_schema_errors_name_the_file_and_every_problem_but_never_a_pasted_key(tmp_path):
    spec = design(defaults={"model": MODEL, "temperature": 7, "max_tokens": -5})
    spec["endpoint"] = {"base_url": "http://127.0.0.1:1/v1", "api_key_env": "sk-proj-PASTED-by-mistake"}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SchemaError) as caught:
        load_design(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "defaults.temperature: must be <= 2" in message
    assert "defaults.max_tokens: must be >= 1" in message and "endpoint.api_key_env: must be the NAME" in message
    assert "PASTED" not in message


def test_endpoints_per_condition_and_provider_rules():
    endpoints = {
        "openai": {"api_key_env": "OPENAI_API_KEY"},
        "anthropic": {"base_url": "https://api.anthropic.com/v1/", "api_key_env": "ANTHROPIC_API_KEY"},
        "gemini": {"base_url": "https://generativelanguage.googleapis.com/v1beta/openai/", "api_key_env": "GEMINI_API_KEY"},
        "azure": {"base_url": "https://res.openai.azure.com/openai/v1/", "api_key_env": "AZURE_OPENAI_API_KEY"},
        "local": {"base_url": "http://127.0.0.1:8000/v1", "needs_key": False, "concurrency": 2},
    }
    spec = design(prompts=("P1.2",), endpoints=endpoints, defaults={"model": MODEL, "endpoint": "openai"})
    spec["conditions"] = [{"prompt": "P1.2", "id": name, "endpoint": name, "model": f"m-{name}"} for name in endpoints]
    spec["conditions"].append({"prompt": "P1.2", "id": "inherits"})
    parsed = load_design(spec)
    assert {c.id: c.endpoint for c in parsed.conditions}["inherits"] == "openai"
    assert {name: e.kind for name, e in parsed.endpoints.items()} == {n: n for n in endpoints}
    assert parsed.endpoints["local"].concurrency == 2 and parsed.endpoints["local"].host == "http://127.0.0.1:8000"
    assert [e.supports_batch for e in parsed.endpoints.values()] == [True, False, False, True, True]
    # Anthropic's OpenAI layer caps temperature at 1 and ignores logprobs and seed (its compatibility page).
    for bad, said in (({"temperature": 1.5}, "temperature 1.5 is above 1, the most anthropic accepts"),
                      ({"logprobs": True}, "logprobs are ignored by anthropic"), ({"seed": 7}, "seed is ignored by anthropic")):
        spec["conditions"][1] = {"prompt": "P1.2", "id": "anthropic", "endpoint": "anthropic", "model": "claude", **bad}
        with pytest.raises(CollectError, match=rf"conditions\[1\] \(anthropic\) goes to endpoint 'anthropic' \(anthropic\): {said}"):
            load_design(spec)
    # A stated kind wins over the host (an Anthropic proxy on loopback, say).
    proxy = design(endpoint={"base_url": "http://127.0.0.1:9/v1", "kind": "anthropic", "needs_key": False},
                   defaults={"model": "claude", "temperature": 1.2})
    with pytest.raises(CollectError, match="the most anthropic accepts"):
        load_design(proxy)
    # Several endpoints and no choice: each condition must name one.
    with pytest.raises(CollectError, match=r"no endpoint \(choose one of \['a', 'b'\]"):
        load_design(design(endpoints={"a": {"needs_key": False}, "b": {"needs_key": False}}))
    with pytest.raises(CollectError, match="endpoints.default exists too"):
        load_design(design(endpoint={}, endpoints={"default": {}}))


def test_folder_items_read_txt_in_any_case_and_name_other_files(tmp_path):
    # Issue 49: a .TXT transcript (as Windows tools write it) was skipped without a word.
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "A7.txt").write_text("Doctor: Hi.\nPatient: Hello.")
    (tmp_path / "transcripts" / "B2.TXT").write_text("Doctor: Pain?\nPatient: Some.")
    (tmp_path / "transcripts" / "notes.docx").write_bytes(b"PK")
    spec = design(attempts=1, items={})
    spec["items"] = "transcripts"
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(spec))
    with pytest.warns(HceWarning, match=r"1 file\(s\) in .* are not .txt transcripts and are not judged \(e.g. 'notes.docx'\)"):
        d = load_design(tmp_path / "study.yaml")
    assert [i.id for i in d.items] == ["A7", "B2"] and d.items[1].text.startswith("Doctor: Pain?")


def test_a_rubric_whose_criterion_is_named_like_a_log_column_stops_the_design_before_any_call(tmp_path):
    # Issue 44 item 5: a criterion id 'model' overwrote the model column of every paid row; the design that names
    # such a rubric is refused when it is read, so neither `hce collect` nor its dry run sends anything.
    levels = [{"score": 1, "label": "a", "descriptor": "a"}, {"score": 2, "label": "b", "descriptor": "b"}]
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump({"name": "T", "categories": [{"name": "Model", "levels": levels}]}))
    spec = design(prompts=("P2.1",), attempts=1)
    spec["rubric"] = "rubric.yaml"
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(HceError, match="'model' is a column of the attempt log"):
        load_design(tmp_path / "d.yaml")
