import asyncio
import http.client
import json
import math
import sys
from collections import Counter

import pandas as pd
import pytest
from collect_helpers import MODEL, fast_client
from seeds import fast_and_other_seeds

import hce
from hce.collect import run
from hce.collect.call.parse import parse_reply, parse_synthetic
from hce.collect.design.prompts import REPLY_FORMAT, render
from hce.sim import (
    Faults,
    Profile,
    SimJudge,
    SimServer,
    detect_format,
    latent_scores,
    split_total,
)
from hce.errors import HceError
from hce.stats.calibration import logprob_confidence

RUBRIC = hce.load_rubric("v5")
NAMES = [c.name for c in RUBRIC.categories]
TEXT = "Doctor: How are you today?\nPatient: Fine, thanks. My knee aches when I climb the stairs at work."
CASE = {"ground_truth": ["Aspirin 324mg PO"], "narrative": "Gave ASA 324mg PO.", "candidate": ["ASA 324mg PO"]}


def messages(prompt_id, text=TEXT, target_total=13):
    if prompt_id == "BOOL":
        return render("BOOL", behavior=hce.load_behavior("medications_extracted_correct"), case=CASE)
    if prompt_id == "SYNTH":
        return render("SYNTH", rubric=RUBRIC, target_total=target_total)
    return render(prompt_id, rubric=RUBRIC, transcript=text)


def ask(judge, prompt_id, **body):
    request = {"model": MODEL, "messages": messages(prompt_id, **body.pop("render", {})), **body}
    reply = judge.respond("POST", "/v1/chat/completions", request)
    assert reply.status == 200, reply.body
    return reply.body


def text_of(body):
    return body["choices"][0]["message"]["content"]


@pytest.mark.parametrize("prompt_id", list(REPLY_FORMAT))
def test_answers_every_prompt_in_the_format_it_asks_for(prompt_id):
    prompt = "\n\n".join(m["content"] for m in messages(prompt_id))
    assert detect_format(prompt) == REPLY_FORMAT[prompt_id]
    judge = SimJudge(seed=1)
    for _ in range(5):
        reply = text_of(ask(judge, prompt_id, temperature=0.7))
        row = parse_synthetic(reply, target_total=13, rubric=RUBRIC) if prompt_id == "SYNTH" else parse_reply(prompt_id, reply, rubric=RUBRIC)
        assert not row["error_flag"], (reply, row["error_message"])
        if prompt_id == "SYNTH":
            assert not row["leak_flag"], row["leak_reason"]


def test_greedy_judge_returns_the_latent_truth():
    # temperature 0 and no bias: the mode of P(x) ∝ exp(-(x - L)^2 / 2s^2) is L itself.
    judge = SimJudge(seed=0)
    for prompt_id in ("P1.2", "P2.1", "P2.2", "P2.3"):
        row = parse_reply(prompt_id, text_of(ask(judge, prompt_id, temperature=0)), rubric=RUBRIC)
        truth = latent_scores(TEXT, NAMES)
        assert [row[c] for c in RUBRIC.criteria] == [truth[n] for n in NAMES]
        assert row["total"] == sum(truth.values())


def test_truth_given_and_bias_applied():
    truth = {"clarity_of_language": 1, "Lexical Diversity": 2, "conciseness_and_completeness": 3,
             "engagement_with_health_information": 4, "health_literacy_indicator": 2}
    judge = SimJudge(seed=0, truth={TEXT: truth}, profiles={"lenient": Profile(bias=1.0, noise=0.3)})
    row = parse_reply("P1.2", text_of(ask(judge, "P1.2", temperature=0)), rubric=RUBRIC)
    assert [row[c] for c in RUBRIC.criteria] == [1, 2, 3, 4, 2]
    row = parse_reply("P1.2", text_of(ask(judge, "P1.2", temperature=0, model="lenient")), rubric=RUBRIC)
    assert [row[c] for c in RUBRIC.criteria] == [2, 3, 4, 4, 3]  # +1, clipped at 4
    judge = SimJudge(seed=0, truth={TEXT: {"total": 17}})
    assert parse_reply("P1.2", text_of(ask(judge, "P1.2", temperature=0)), rubric=RUBRIC)["total"] == 17
    # P1.1 sees the same truth, shrunk halfway to the middle: mode of a bell at 0.5 * 17 + 0.5 * 12.5 = 14.75
    assert parse_reply("P1.1", text_of(ask(judge, "P1.1", temperature=0)), rubric=RUBRIC)["total"] == 15


def test_synthetic_transcripts_carry_their_target():
    judge = SimJudge(seed=5)
    for target in (5, 9, 13, 17, 20):
        made = parse_synthetic(text_of(ask(judge, "SYNTH", temperature=0.7, render={"target_total": target})), rubric=RUBRIC)
        row = parse_reply("P2.3", text_of(ask(judge, "P2.3", temperature=0, render={"text": made["transcript"]})), rubric=RUBRIC)
        assert row["total"] == target


def test_split_total():
    levels = split_total(13, NAMES, 1, 4, key="x")
    assert sum(levels.values()) == 13 and set(levels.values()) <= {1, 2, 3, 4}
    with pytest.raises(HceError, match="outside 5-20"):
        split_total(21, NAMES, 1, 4)


def test_logprobs_are_the_judges_distribution():
    judge = SimJudge(seed=2, default=Profile(noise=0.8))
    body = ask(judge, "P2.1", temperature=1.0, logprobs=True, top_logprobs=4)
    tokens = body["choices"][0]["logprobs"]["content"]
    assert "".join(t["token"] for t in tokens) == text_of(body)
    assert body["usage"]["completion_tokens"] == len(tokens)
    # The score block closes the reply: its five category scores are the last score tokens.
    cats = logprob_confidence(pd.DataFrame({"logprobs": [tokens]}), scores=range(1, 5), occurrence=range(-5, 0))
    assert not cats["error_flag"].any()
    truth = latent_scores(TEXT, NAMES)
    for (_, row), name in zip(cats.iterrows(), NAMES, strict=True):
        # P(x) ∝ exp(-(x - L)^2 / (2 * 0.8^2)) over x = 1..4
        weights = {x: math.exp(-((x - truth[name]) ** 2) / (2 * 0.8**2)) for x in range(1, 5)}
        z = sum(weights.values())
        assert row["expected_score"] == pytest.approx(sum(x * w / z for x, w in weights.items()), rel=1e-6)
        assert row["coverage"] == pytest.approx(1.0, rel=1e-9)


def test_draws_are_reproducible_and_seed_parameter_fixes_the_reply():
    def replies(judge, **body):
        return Counter(text_of(ask(judge, "P1.2", temperature=1.0, **body)) for _ in range(30))

    assert replies(SimJudge(seed=4)) == replies(SimJudge(seed=4))
    assert len(replies(SimJudge(seed=4))) > 1
    assert len(replies(SimJudge(seed=4), seed=123)) == 1


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
def test_temperature_scales_the_spread(seed):
    # 240 replies: at temperature 0.3 a total moves off the noiseless one in about 1 reply
    # of 12 (60 replies gave variance 0.017-0.15 over seeds 0-20, a single moved total at
    # seed 14); at 1.5 the variance is 1.6-3.1
    def spread(temperature):
        judge = SimJudge(seed=seed, default=Profile(noise=0.6))
        totals = [parse_reply("P1.2", text_of(ask(judge, "P1.2", temperature=temperature)), rubric=RUBRIC)["total"] for _ in range(240)]
        mean = sum(totals) / len(totals)
        return sum((t - mean) ** 2 for t in totals) / (len(totals) - 1)

    assert spread(0) == 0 < spread(0.3) < spread(1.5)


def test_faults_and_max_tokens():
    judge = SimJudge(seed=0, faults=Faults(rate_429=1.0, retry_after=2))
    reply = judge.respond("POST", "/v1/chat/completions", {"model": MODEL, "messages": messages("P1.1")})
    assert reply.status == 429 and reply.headers["Retry-After"] == "2"
    judge = SimJudge(seed=0, faults=Faults(rate_malformed=1.0))
    request = {"model": MODEL, "messages": messages("P1.2")}
    # a quarter of malformed replies break the HTTP body: with 12 replies none did at 4 of
    # seeds 0-20 (P = 0.75^12 = 3%); with 60, P(none) = 3e-8
    replies = [judge.respond("POST", "/v1/chat/completions", request) for _ in range(60)]
    broken = [r for r in replies if r.raw is not None]
    assert 0 < len(broken) < 60
    for reply in replies:
        if reply.raw is None:
            assert parse_reply("P1.2", text_of(reply.body), rubric=RUBRIC)["error_flag"]
    body = ask(SimJudge(seed=0), "P2.3", max_tokens=10)
    assert body["choices"][0]["finish_reason"] == "length" and body["usage"]["completion_tokens"] == 10
    with pytest.raises(HceError, match="sum to at most 1"):
        Faults(rate_429=0.6, rate_500=0.6)


def test_a_refusal_answers_every_call_for_its_model_with_a_400():
    refused = "Unsupported value: 'temperature' does not support 0.1 with this model."
    judge = SimJudge(seed=0, faults=Faults(rate_500=0.5, reject=refused, reject_model=MODEL))
    for _ in range(5):
        reply = judge.respond("POST", "/v1/chat/completions", {"model": MODEL, "messages": messages("P1.2")})
        assert reply.status == 400 and reply.body["error"]["message"] == refused
    other = judge.respond("POST", "/v1/chat/completions", {"model": "gpt-4o", "seed": 1, "messages": messages("P1.2")})
    assert other.status in (200, 500) and judge.stats["400"] == 5
    everyone = SimJudge(seed=0, faults=Faults(reject=refused))
    assert everyone.respond("POST", "/v1/chat/completions", {"model": "gpt-4o", "messages": messages("P1.1")}).status == 400


def test_http_routes_and_loopback_only(serve):
    server = serve(SimJudge(seed=0))
    client = fast_client(server)

    async def go():
        async with client:
            return await client.models()

    assert "gpt-4o-2024-08-06" in asyncio.run(go())
    judge = SimJudge()
    assert judge.respond("GET", "/v1/nothing", None).status == 404
    assert json.loads(json.dumps(judge.respond("POST", "/v1/chat/completions", {"model": "m"}).body))["error"]
    with pytest.raises(HceError, match="loopback only"):
        SimServer(host="0.0.0.0")
    with pytest.raises(HceError, match=f"cannot serve on 127.0.0.1:{server.port}"):
        SimServer(port=server.port).start()  # the port is taken


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a server process is forked on Linux only")
def test_a_server_in_its_own_process_replies_as_the_one_in_a_thread(tmp_path, serve):
    # Issue 35 item 4: `hce demo` serves its judge from a forked process, on the other core.
    design = {"attempts": 3, "conditions": [{"prompt": "P2.3", "model": "gpt-4o", "temperature": 0.7}],
              "items": [{"id": "T1", "text": TEXT}, {"id": "T2", "text": TEXT + " And my back."}]}  # fmt: skip
    logs = {}
    for kind in ("thread", "process"):
        server = serve() if kind == "thread" else SimServer(SimJudge(seed=0)).start(process=True)
        try:
            run(design, tmp_path / f"{kind}.jsonl", base_url=server.url, api_key="local")
        finally:
            server.stop()
        logs[kind] = hce.read_log(tmp_path / f"{kind}.jsonl").sort_values("attempt_id", ignore_index=True)
    assert logs["process"]["error_flag"].sum() == 0 and len(logs["process"]) == 6
    assert logs["process"]["response_text"].tolist() == logs["thread"]["response_text"].tolist()
    assert server._process is None  # stopped and joined
    with serve() as taken, pytest.raises(HceError, match=f"cannot serve on 127.0.0.1:{taken.port}"):
        SimServer(port=taken.port).start(process=True)


def test_the_redirect_fault_answers_307_to_another_loopback_port(serve):
    target = serve(SimJudge(seed=0))
    origin = f"http://127.0.0.1:{target.port}"
    redirecting = serve(SimJudge(seed=0, faults=Faults(redirect=origin)))
    connection = http.client.HTTPConnection("127.0.0.1", redirecting.port, timeout=10)
    try:
        body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]})
        connection.request("POST", "/v1/chat/completions?x=1", body=body,
                           headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
        reply = connection.getresponse()
        reply.read()
        assert (reply.status, reply.reason) == (307, "Temporary Redirect")
        assert reply.getheader("Location") == f"{origin}/v1/chat/completions?x=1"
        connection.request("GET", "/v1/models")
        reply = connection.getresponse()
        reply.read()
        assert reply.status == 307 and reply.getheader("Location") == f"{origin}/v1/models"
    finally:
        connection.close()
    assert redirecting.judge.stats["307"] == 2 and target.judge.stats["requests"] == 0  # nothing was followed here
    for bad in ("http://example.com:80", "http://127.0.0.1:9/v1", "ftp://127.0.0.1:9"):
        with pytest.raises(HceError, match="redirect must be a loopback origin"):
            Faults(redirect=bad)
