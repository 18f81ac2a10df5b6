"""The simulator behaves like the providers' endpoints where they differ (issue #23, item 3),
and hce's collector reacts as it should: refuses at load what it can know, logs the rest."""

import asyncio

import pytest
from collect_helpers import MODEL, design, fast_client

import hce
from hce.collect.design.design import load_design
from hce.collect.design.prompts import render
from hce.model_names import REASONING_MODEL
from hce.collect.running.runner import run
from hce.sim import SimJudge
from hce.sim.families import FAMILIES, Drift, Family, refusal
from hce.errors import CollectError, HceError

RUBRIC = hce.load_rubric("v5")
TEXT = "Doctor: How are you today?\nPatient: Fine, thanks."


def chat(judge, model=MODEL, **body):
    request = {"model": model, "messages": render("P2.1", rubric=RUBRIC, transcript=TEXT), **body}
    return judge.respond("POST", "/v1/chat/completions", request)


@pytest.mark.parametrize("model", ["o1", "o3-2025-04-16", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-nano"])
def test_reasoning_models_refuse_temperature_and_logprobs_with_the_apis_400(model):
    judge = SimJudge(seed=0)
    reply = chat(judge, model, temperature=0.1)
    # The API's text, quoted in openai/openai-python#2104 (see hce.sim's notes).
    assert reply.status == 400 and reply.body["error"] == {
        "message": "Unsupported value: 'temperature' does not support 0.1 with this model. "
                   "Only the default (1) value is supported.",
        "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value",
    }  # fmt: skip
    reply = chat(judge, model, logprobs=True, top_logprobs=3)
    assert reply.status == 400 and reply.body["error"]["code"] == "unsupported_parameter"
    assert reply.body["error"]["message"] == "Unsupported parameter: 'logprobs' is not supported with this model."
    for temperature in (None, 1):  # the default is taken, sent or not
        usage = chat(judge, model, temperature=temperature).body["usage"]
        hidden = usage["completion_tokens_details"]["reasoning_tokens"]
        assert 96 <= hidden <= 288 and usage["completion_tokens"] > hidden  # counted in completion_tokens
    assert judge.stats["400"] == 2


def test_chat_models_take_temperature_and_logprobs_and_report_no_reasoning_tokens():
    reply = chat(SimJudge(seed=0), "gpt-4o", temperature=0.1, logprobs=True, n=1, seed=3)
    assert reply.status == 200 and reply.body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0
    assert not REASONING_MODEL.match("gpt-4o") and FAMILIES[".*"] == Family()


def test_n_and_seed_support_per_family():
    judge = SimJudge(seed=0, families={"strict-.*": Family(n=False, seed=False)})
    for param, value in (("n", 2), ("seed", 7), ("seed", 0)):
        reply = chat(judge, "strict-model", **{param: value})
        assert reply.status == 400 and reply.body["error"]["param"] == param
        assert reply.body["error"]["message"] == f"Unsupported parameter: '{param}' is not supported with this model."
    assert chat(judge, "strict-model", n=1).status == 200  # n = 1 is the default, accepted
    assert chat(judge, "other-model", seed=7).status == 200
    assert refusal(Family(), {"n": 3, "seed": 1, "logprobs": True}) is None
    with pytest.raises(HceError, match="logprobs_are must be one of"):
        Family(logprobs_are="scaled")


def test_model_version_drifts_after_the_set_number_of_completions():
    judge = SimJudge(seed=0, drift={MODEL: Drift(after=3, model="gpt-4.1-mini-2025-09-01")})
    bodies = [chat(judge).body for _ in range(5)]
    assert [b["model"] for b in bodies] == [MODEL] * 3 + ["gpt-4.1-mini-2025-09-01"] * 2
    assert [b["system_fingerprint"] for b in bodies] == ["fp_hce_sim_0"] * 3 + ["fp_hce_sim_0_drift"] * 2
    assert chat(judge, "gpt-4o").body["model"] == "gpt-4o-2024-08-06"  # other models keep their version


def call(client, **settings):
    async def go():
        async with client:
            return await client.complete(render("P2.1", rubric=RUBRIC, transcript=TEXT), **settings)

    return asyncio.run(go())


def test_the_client_records_the_reasoning_models_400_with_its_message_and_the_drifted_version(serve):
    result = call(fast_client(serve(SimJudge(seed=0))), model="o3", max_tokens=50, logprobs=True)
    assert not result.ok and result.status == 400 and result.retries == 0  # a 400 is not retried
    assert "'logprobs' is not supported with this model" in result.error_message
    drifted = SimJudge(seed=0, drift={MODEL: Drift(after=0, model="gpt-4.1-mini-x")})
    assert call(fast_client(serve(drifted)), model=MODEL).model_version == "gpt-4.1-mini-x"


def test_a_design_asking_a_reasoning_model_for_logprobs_is_refused_at_load():
    spec = design(conditions=[{"prompt": "P2.1", "model": "o4-mini", "temperature": None, "logprobs": True}])
    with pytest.raises(CollectError, match=r"'o4-mini' is an OpenAI reasoning model .* set logprobs: false"):
        load_design(spec)
    ok = design(conditions=[{"prompt": "P2.1", "model": "gpt-4o", "temperature": 0.1, "logprobs": True}])
    assert load_design(ok).conditions[0].logprobs


def test_the_runner_logs_a_refused_setting_as_an_error_row_with_the_apis_message(serve, tmp_path):
    # A deployment name hce cannot recognise as a reasoning model: the refusal comes from the server.
    judge = SimJudge(seed=0, families={"my-reasoner": Family(reasoning=True)})
    spec = design(prompts=("P2.1",), attempts=2, defaults={"model": "my-reasoner", "temperature": None, "logprobs": True})
    summary = run(spec, tmp_path / "log.jsonl", client=fast_client(serve(judge)))
    logged = hce.read_log(tmp_path / "log.jsonl")
    assert summary.errors == len(logged) == 6 and logged["error_flag"].all()
    assert (logged["error_message"] == "HTTP 400: Error code: 400 - Unsupported parameter: "
            "'logprobs' is not supported with this model. (after 1 try)").all()  # fmt: skip
