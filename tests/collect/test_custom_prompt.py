"""A design's own prompt (CustomPrompt): rendered and parsed by its caller, run like any other call.

Issue 20: Exp 4's LLM coding had a one-call-at-a-time runner of its own beside runner.run;
runner.run now takes a design whose prompt the caller renders and parses, so such calls get
the runner's concurrency, rate limits, retries, resume and attempt log.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from collect_helpers import MODEL, fast_client

import hce
from hce.collect.design.design import Condition, CustomPrompt, Design, Item
from hce.collect.running.runner import estimate, run
from hce.sim import SimJudge
from hce.errors import CollectError


def _render(item: Item) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Say something about {item.metadata['topic']}."}]


def _parse(item: Item, text: str | None) -> dict:
    if text is None:
        return {"words": None, "error_flag": True, "error_message": "no reply"}
    words = len(text.split())
    return {"words": words, "error_flag": words < 1, "error_message": None if words else "empty"}


def _design(version: str = "v1") -> Design:
    items = tuple(Item(f"I{k}", metadata={"topic": topic}) for k, topic in enumerate(["tea", "rain", "maps"]))
    cond = Condition(id="ASK|sim", prompt_id="ASK", model=MODEL, temperature=0.5, max_tokens=50)
    return Design(experiment_id="CUSTOM", items=items, conditions=(cond,), attempts=2,
                  prompts={"ASK": CustomPrompt(render=_render, parse=_parse, version=version)})  # fmt: skip


def test_custom_prompt_runs_through_the_runner(serve, tmp_path):
    server = serve(SimJudge(seed=1))
    log = tmp_path / "log.jsonl"
    summary = run(_design(), log, client=fast_client(server), concurrency=3)
    frame = hce.read_log(log)
    assert summary.done == 6 and len(frame) == 6 and set(frame["prompt_id"]) == {"ASK"}
    # The caller's messages are sent as rendered; its parser's columns and the metadata are logged.
    first = frame.sort_values(["item_id", "attempt"]).iloc[0]
    assert json.loads(first["request"]) == _render(Item("I0", metadata={"topic": "tea"}))
    assert first["topic"] == "tea" and first["words"] >= 1 and not first["error_flag"]
    assert frame["cleaned_chars"].isna().all()  # no transcript was cleaned into the prompt
    # Resumed like every design: nothing is sent twice.
    assert run(_design(), log, client=fast_client(server)).done == 0


def test_custom_prompt_template_change_is_caught_on_resume(serve, tmp_path):
    server = serve(SimJudge(seed=1))
    log = tmp_path / "log.jsonl"
    run(_design("v1"), log, client=fast_client(server))
    with pytest.raises(CollectError, match="ASK"):
        run(_design("v2"), log, client=fast_client(server))


def test_custom_prompt_estimate_counts_its_cap_as_output():
    table = estimate(replace(_design(), attempts=4))
    assert table[["calls", "output_tokens"]].to_dict("records") == [{"calls": 12, "output_tokens": 12 * 50}]
