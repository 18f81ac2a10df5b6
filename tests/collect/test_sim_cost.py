"""The simulated judge's prompt cache (OpenAI's rules) and ``n`` (several choices per request)."""

import math

import pytest

from hce.collect.call.parse import parse_reply
from hce.collect.design.prompts import render
from hce.sim import SimJudge
from hce.prompt_cache import PrefixCache

TEXT = "Doctor: How are you today?\nPatient: Fine, thanks. My knee aches when I climb the stairs at work."


def chat(judge, messages, **body):
    reply = judge.respond("POST", "/v1/chat/completions", {"model": "gpt-4o", "messages": messages, **body})
    return reply


def tokens(messages):
    # The simulator's count: ceil(characters / 4) of the messages' contents joined by a blank line.
    return math.ceil(len("\n\n".join(m["content"] for m in messages)) / 4)


def test_prefix_cache_follows_openai_rules():
    # OpenAI (openai.com/index/api-prompt-caching): >= 1,024 tokens, longest computed prefix, 128-token steps.
    cache = PrefixCache()
    short = "s" * 4 * 1000
    assert cache.hit("m", None, short) == 0 and cache.hit("m", None, short) == 0  # under 1,024 tokens: never
    shared = "r" * 4 * 1500
    assert cache.hit("m", None, shared + "A" * 4 * 600) == 0  # the first request writes
    # 1,500 shared tokens -> 1,024 + 3 * 128 = 1,408 cached
    assert cache.hit("m", None, shared + "B" * 4 * 600) == 1408
    # The same prompt again: all of it in whole 128-token steps, 2,100 -> 2,048
    assert cache.hit("m", None, shared + "B" * 4 * 600) == 2048
    # Per model and per prompt_cache_key
    assert cache.hit("other-model", None, shared + "B" * 4 * 600) == 0
    assert cache.hit("m", "key-1", shared + "B" * 4 * 600) == 0
    assert cache.hit("m", "key-1", shared + "C" * 4 * 600) == 1408


def test_simulator_reports_cached_tokens_for_repeated_attempts_and_items():
    judge = SimJudge(seed=0)
    first, second = render("P2.1", transcript=TEXT), render("P2.1", transcript=TEXT + " And my back.")
    usage = [chat(judge, m, temperature=0.1).body["usage"] for m in (first, first, second)]
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in usage]
    assert cached[0] == 0
    # attempt 2 of the same item: the whole prompt, rounded down to a 128-token step from 1,024
    assert cached[1] == 1024 + (tokens(first) - 1024) // 128 * 128
    # another item: the shared static part (instructions + Rubric v5.0, ~1,480 tokens) rounded down
    static = len(render("P2.1", transcript="X")[0]["content"].split("Transcript:\n")[0] + "Transcript:\n") // 4
    assert cached[2] == 1024 + (static - 1024) // 128 * 128
    assert all(u["prompt_tokens"] == tokens(first) for u in usage[:2])
    # cache writes (prompt_tokens_details.cache_write_tokens): the first request stores its longest
    # cacheable prefix, the repeat nothing, the other item the steps past the shared part
    longest = [1024 + (tokens(m) - 1024) // 128 * 128 for m in (first, first, second)]
    written = [u["prompt_tokens_details"]["cache_write_tokens"] for u in usage]
    assert written == [longest[0], 0, longest[2] - cached[2]]


def test_cache_writes_are_logged_and_billed_at_a_write_rate(serve, tmp_path):
    # hce.collect.call.client reads cache_write_tokens from the usage, the log keeps it, and a model with a
    # write rate (none in the dated table yet: a user's prices=) pays it instead of the input rate.
    from collect_helpers import fast_client

    import hce
    from hce.collect.call.pricing import Price, cost_usd
    from hce.collect.running.runner import run

    design = {"experiment_id": "W", "attempts": 2, "defaults": {"model": "gpt-4o-2024-08-06"},
              "conditions": [{"prompt": "P2.1"}], "items": [{"id": "T1", "text": TEXT}]}  # fmt: skip
    run(design, tmp_path / "w.jsonl", client=fast_client(serve(SimJudge(seed=0))))
    log = hce.read_log(tmp_path / "w.jsonl").sort_values("cache_write_tokens")  # whichever request came first wrote
    assert log["cache_write_tokens"].iloc[0] == 0 and log["cache_write_tokens"].iloc[1] > 1024
    row = log.iloc[1]
    price = {"m": Price(input=2.0, cached_input=1.0, output=8.0, as_of="2026-11-24", cache_write=2.5)}
    paid = cost_usd("m", row.input_tokens, row.output_tokens, row.cached_tokens, cache_write_tokens=row.cache_write_tokens, prices=price)
    plain = cost_usd("m", row.input_tokens, row.output_tokens, row.cached_tokens, prices=price)
    assert paid - plain == pytest.approx(row.cache_write_tokens * 0.5 / 1e6, rel=1e-12)


def test_n_choices_bill_the_prompt_once_and_each_completion():
    judge = SimJudge(seed=3)
    messages = render("P2.1", transcript=TEXT)
    reply = chat(judge, messages, temperature=1.0, n=6, logprobs=True, top_logprobs=2)
    assert reply.status == 200
    body = reply.body
    assert [c["index"] for c in body["choices"]] == list(range(6))
    lengths = [len(c["logprobs"]["content"]) for c in body["choices"]]
    assert body["usage"]["prompt_tokens"] == tokens(messages)
    assert body["usage"]["completion_tokens"] == sum(lengths)
    totals = [parse_reply("P2.1", c["message"]["content"])["total"] for c in body["choices"]]
    assert len(set(totals)) > 1  # independent draws at temperature 1 (6 draws of a 5-category sum)


@pytest.mark.parametrize("n", [0, 129, 2.0, "3", True])
def test_bad_n_is_refused_as_openai_does(n):
    reply = chat(SimJudge(seed=0), render("P2.1", transcript=TEXT), n=n)
    assert reply.status == 400 and "'n'" in reply.body["error"]["message"]
