import asyncio
import itertools
import json
import logging
import re
import time
import warnings

import pytest
import yaml
from collect_helpers import MODEL, TRANSCRIPTS, design, fast_client, kill_mid_run

import hce
from hce.collect.call.client import FatalCallError
from hce.collect.design.design import load_design
from hce.collect.design.fingerprint import settings_path
from hce.collect.call.pricing import cost_usd
from hce.collect.call.rate_limit import RateLimit
from hce.collect.running.runner import estimate, run
from hce.sim import Faults, SimJudge, latent_scores
from hce.errors import CollectError
from hce.log import TruncatedLogWarning, make_attempt_id

RUBRIC = hce.load_rubric("v5")
CONDITIONS = [f"P1.2|{MODEL}|t0.1", f"P2.3|{MODEL}|t0.1"]


def expected_ids(spec):
    d = load_design(spec)
    return {make_attempt_id("TEST", i.id, c.id, n) for i in d.items for c in d.conditions for n in range(1, d.attempts + 1)}


def test_run_gives_exactly_the_expected_rows(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    spec = design(attempts=4)
    log = tmp_path / "run.jsonl"
    summary = run(spec, log, client=fast_client(server), concurrency=5)
    frame = hce.read_log(log)
    # 3 items x 2 conditions x 4 attempts, each once
    assert (summary.planned, summary.done, summary.skipped, summary.errors) == (24, 24, 0, 0)
    assert len(frame) == 24 and set(frame["attempt_id"]) == expected_ids(spec)
    got = sorted(zip(frame["item_id"], frame["condition_id"], frame["attempt"]))
    assert got == sorted(itertools.product(TRANSCRIPTS, CONDITIONS, range(1, 5)))
    assert not frame["error_flag"].any() and (frame["retries"] == 0).all()
    for c in RUBRIC.criteria:
        assert frame[c].between(1, 4).all()
    assert (frame[RUBRIC.criteria].sum(axis=1) == frame["total"]).all()
    assert (frame["model"] == MODEL).all() and (frame["model_version"] == MODEL).all()
    assert (frame["system_fingerprint"] == "fp_hce_sim_0").all()  # a report can tell the run was simulated
    assert frame.loc[frame["prompt_id"] == "P2.3", "reasoning"].notna().all()
    first = frame.iloc[0]
    assert first["request"].startswith('[{"role": "user"') and first["temperature"] == 0.1 and first["max_tokens"] == 1000
    expected_cost = [cost_usd(MODEL, a, b, c) for a, b, c in zip(frame["input_tokens"], frame["output_tokens"], frame["cached_tokens"])]
    assert frame["cost_usd"].tolist() == pytest.approx(expected_cost, rel=1e-12)
    assert summary.cost_usd == pytest.approx(sum(expected_cost), rel=1e-9)


def test_scores_centre_on_the_simulated_truth(serve, tmp_path):
    # Greedy decoding (temperature 0) and no bias: every attempt returns the latent levels.
    server = serve(SimJudge(seed=0))
    spec = design(prompts=("P2.1",), attempts=2, defaults={"model": MODEL, "temperature": 0})
    run(spec, tmp_path / "log.jsonl", client=fast_client(server))
    frame = hce.read_log(tmp_path / "log.jsonl")
    for row in frame.itertuples():
        truth = latent_scores(TRANSCRIPTS[row.item_id], [c.name for c in RUBRIC.categories])
        assert [getattr(row, c) for c in RUBRIC.criteria] == list(truth.values())


def test_faults_end_parsed_or_flagged_with_retries_counted(serve, tmp_path):
    judge = SimJudge(seed=7, faults=Faults(rate_429=0.2, rate_500=0.1, rate_malformed=0.15, retry_after=0.001))
    server = serve(judge)
    spec = design(attempts=10)
    log = tmp_path / "faults.jsonl"
    summary = run(spec, log, client=fast_client(server), concurrency=8)
    frame = hce.read_log(log)
    assert len(frame) == 60 and set(frame["attempt_id"]) == expected_ids(spec)
    parsed = ~frame["error_flag"] & frame["total"].notna()
    flagged = frame["error_flag"] & frame["error_message"].notna()
    assert (parsed | flagged).all()
    gave_up = frame["error_message"].str.contains(r"^HTTP (?:429|500)", na=False)
    # Every 429/500 served was followed by a retry, except the last try of an attempt that gave up.
    assert frame["retries"].sum() == judge.stats["429"] + judge.stats["500"] - gave_up.sum()
    assert judge.stats["requests"] == len(frame) + frame["retries"].sum()
    # Every failed try's error is kept: one per retry, plus the last one of an attempt that gave up.
    logged_errors = frame["retry_errors"].dropna().map(lambda text: len(json.loads(text))).sum()
    assert logged_errors == judge.stats["429"] + judge.stats["500"]
    assert judge.stats["429"] > 0 and judge.stats["500"] > 0 and judge.stats["malformed"] > 0
    # Each malformed reply became a flagged row (never a guessed score).
    assert (flagged & ~gave_up).sum() == judge.stats["malformed"]
    assert summary.errors == int(frame["error_flag"].sum()) and summary.retries == frame["retries"].sum()


def test_rerun_resumes_without_duplicates(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    log = tmp_path / "resume.jsonl"
    first = run(design(attempts=2), log, client=fast_client(server))
    lines_before = log.read_text().splitlines()
    second = run(design(attempts=3), log, client=fast_client(server))
    assert (first.done, second.skipped, second.done) == (12, 12, 6)
    assert log.read_text().splitlines()[:12] == lines_before  # earlier attempts untouched
    third = run(design(attempts=3), log, client=fast_client(server))
    assert third.done == 0 and third.skipped == 18
    assert set(hce.read_log(log)["attempt_id"]) == expected_ids(design(attempts=3))


def test_torn_last_line_is_set_aside_and_redone(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    log = tmp_path / "torn.jsonl"
    spec = design(attempts=2)
    run(spec, log, client=fast_client(server))
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]) + lines[-1][:40])  # a crash mid-write
    with pytest.warns(TruncatedLogWarning, match="moved to torn.jsonl.partial"):
        summary = run(spec, log, client=fast_client(server))
    assert summary.done == 1
    frame = hce.read_log(log)
    assert len(frame) == 12 and set(frame["attempt_id"]) == expected_ids(spec)


def test_kill_9_mid_run_then_resume_gives_each_attempt_once(serve, tmp_path):
    server = serve(SimJudge(seed=0, latency=0.1))
    spec = design(attempts=12, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"}, run={"concurrency": 4})
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "killed.jsonl"
    done_before = kill_mid_run(path, log, at_least=20)
    assert 20 <= done_before < 72, "the run was not stopped mid-way"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)  # only if the kill tore a line
        summary = run(path, log, client=fast_client(server))
    assert summary.skipped >= 20 and summary.skipped + summary.done == 72
    frame = hce.read_log(log)
    assert len(frame) == 72 and set(frame["attempt_id"]) == expected_ids(spec)


def test_planted_api_key_appears_nowhere(serve, tmp_path, monkeypatch, capfd, caplog):
    caplog.set_level(logging.DEBUG)  # openai, httpx and httpcore debug logs included
    planted = "sk-hce-PLANTED-9c2e51f0aa"
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    judge = SimJudge(seed=1, faults=Faults(rate_500=0.3, rate_malformed=0.2))
    server = serve(judge, api_key=planted)
    log = tmp_path / "key.jsonl"
    spec = design(attempts=3, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY", "max_retries": 1})
    summary = run(spec, log, progress=True, random_state=0)
    assert summary.done == 18 and judge.stats["requests"] > 0
    # The wrong key gets a 401 that quotes it back; the run stops and says why, without the key.
    wrong = serve(SimJudge(seed=1), api_key="another-key")
    with pytest.raises(FatalCallError) as caught:
        run(design(attempts=1, endpoint={"base_url": wrong.url, "api_key_env": "OPENAI_API_KEY"}), tmp_path / "refused.jsonl")
    captured = capfd.readouterr()
    assert "chat/completions" in caplog.text  # the debug logs were captured
    for text in (log.read_text(), captured.out, captured.err, caplog.text, str(caught.value), repr(caught.value)):
        assert planted not in text
    assert not (tmp_path / "refused.jsonl").read_text()  # nothing logged for a refused run


def test_design_file_never_holds_a_key(tmp_path):
    spec = design(endpoint={"base_url": "http://127.0.0.1:1/v1", "api_key": "sk-x"})
    with pytest.raises(hce.HceError, match="never holds an API key"):
        load_design(spec)


def test_boolean_judge_and_synthetic_conditions(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    case = {"ground_truth": ["Aspirin 324mg PO"], "narrative": "Gave ASA 324mg PO.", "candidate": ["ASA 324mg PO"]}
    spec = {
        "experiment_id": "TEST",
        "attempts": 2,
        "defaults": {"model": MODEL, "temperature": 0.0},
        "conditions": [{"prompt": "BOOL", "behavior": "medications_extracted_correct"}],
        "items": [{"id": "C1", "case": case}, {"id": "C2", "case": {**case, "candidate": []}}],
    }
    run(spec, tmp_path / "bool.jsonl", client=fast_client(server))
    frame = hce.read_log(tmp_path / "bool.jsonl")
    assert frame["verdict"].notna().all() and (frame["behavior_id"] == "medications_extracted_correct").all()
    spec = {
        "experiment_id": "EXP1",
        "defaults": {"model": MODEL, "temperature": 0.7},
        "conditions": [{"prompt": "SYNTH"}],
        "items": [{"id": f"S{t}", "metadata": {"target_total": t}} for t in (6, 12, 18)],
    }
    run(spec, tmp_path / "synth.jsonl", client=fast_client(server))
    frame = hce.read_log(tmp_path / "synth.jsonl")
    # rows are logged as the calls complete, in any order under concurrency
    assert dict(zip(frame["item_id"], frame["target_total"])) == {"S6": 6, "S12": 12, "S18": 18}
    assert frame["transcript"].str.contains("Patient:").all()
    assert not frame["error_flag"].any()


def test_dry_run_estimate_sends_nothing(serve, tmp_path):
    judge = SimJudge(seed=0)
    serve(judge)
    table = estimate(design(attempts=5))
    assert table["calls"].tolist() == [15, 15]
    # P1.2 / P2.3 replies on Rubric v5.0: a score block of 53 tokens (5 criteria), and 5 x 80 of reasoning before it
    assert table["output_tokens"].tolist() == [15 * 53, 15 * 453]
    assert (table["cost_usd"] > 0).all() and judge.stats["requests"] == 0


def test_rate_limit_token_bucket():
    async def go():
        limit = RateLimit(per_minute=600)  # 10 a second; the bucket holds one second's worth
        started = time.perf_counter()
        await limit.take(10)
        immediate = time.perf_counter() - started
        await limit.take(3)  # waits for 3 units to refill: 0.3 s
        paced = time.perf_counter() - started
        debt = RateLimit(per_minute=600)
        await debt.take(25)  # larger than the bucket: goes at once, leaving a debt of 15
        started = time.perf_counter()
        await debt.take(1)  # waits (1 + 15) / 10 = 1.6 s
        return immediate, paced, time.perf_counter() - started

    immediate, paced, repaid = asyncio.run(go())
    assert immediate < 0.05 and 0.25 < paced < 0.6 and 1.5 < repaid < 2.2


def test_requests_per_minute_paces_the_run(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    # 1,200 a minute is 20 a second: 30 calls need at least (30 - 20) / 20 = 0.5 s
    summary = run(design(prompts=("P1.1",), attempts=10), tmp_path / "paced.jsonl", client=fast_client(server),
                  concurrency=30, requests_per_minute=1200)
    assert summary.done == 30 and summary.wall_s >= 0.5


def test_missing_key_fails_before_any_call_and_openai_key_is_never_the_fallback(serve, tmp_path, monkeypatch):
    # Issue 19: with COLLEAGUE_VLLM_KEY unset, the OpenAI key went to the colleague's server on 6 of 6 calls.
    planted = "sk-PLANTED-openai-0b7d"
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    monkeypatch.delenv("COLLEAGUE_VLLM_KEY", raising=False)
    judge = SimJudge(seed=0)
    server = serve(judge)
    named = {"base_url": server.url, "api_key_env": "COLLEAGUE_VLLM_KEY"}
    with pytest.raises(hce.HceError, match="the environment variable COLLEAGUE_VLLM_KEY") as caught:
        run(design(attempts=1, endpoint=named), tmp_path / "x.jsonl")
    assert "'default'" in str(caught.value) and server.url in str(caught.value)
    with pytest.raises(hce.HceError, match="names no api_key_env"):  # no variable named: not OpenAI, so no key
        run(design(attempts=1, endpoint={"base_url": server.url}), tmp_path / "x.jsonl")
    assert judge.stats["requests"] == 0 and not (tmp_path / "x.jsonl").exists()
    assert all(planted not in str(v) for v in vars(caught.value).values())
    monkeypatch.setenv("COLLEAGUE_VLLM_KEY", "sk-colleague")
    assert run(design(attempts=1, endpoint=named), tmp_path / "x.jsonl").done == 6


def lines_by_id(path):
    return {json.loads(line)["attempt_id"]: line for line in path.read_text().splitlines()}


def test_retry_failed_sends_failed_calls_again_and_keeps_their_old_rows(serve, tmp_path):
    # 500s and timeouts that outlast one retry become error rows; malformed replies are flagged rows.
    judge = SimJudge(seed=3, faults=Faults(rate_500=0.4, rate_slow=0.1, rate_malformed=0.15, slow_s=0.5))
    server = serve(judge)
    spec = design(attempts=5)
    log = tmp_path / "outage.jsonl"
    first = run(spec, log, client=fast_client(server, max_retries=1, timeout=0.25), concurrency=8)
    before = lines_by_id(log)
    frame = hce.read_log(log)
    failed = frame["error_message"].str.contains(r"^(?:HTTP 500|timeout|connection error): ", na=False)
    malformed = frame["error_flag"] & ~failed
    assert first.done == 30 and failed.sum() > 0 and malformed.sum() > 0
    assert frame.loc[failed, "error_message"].str.startswith("timeout").any()
    assert run(spec, log, client=fast_client(server)).done == 0  # a plain rerun counts them as done
    # The outage is over: only the failed calls are sent again.
    judge.faults = Faults()
    requests_before = judge.stats["requests"]
    second = run(spec, log, client=fast_client(server), retry_failed=True)
    n = int(failed.sum())
    assert (second.retried, second.done, second.skipped, second.errors) == (n, n, 30 - n, 0)
    assert judge.stats["requests"] - requests_before == n
    assert f"({n} failed calls sent again; their old rows: {log}.retried.jsonl)" in str(second)
    final = hce.read_log(log)
    assert len(final) == 30 and set(final["attempt_id"]) == expected_ids(spec)  # each attempt exactly once
    usable = ~final["error_flag"]
    assert final.loc[usable, "total"].notna().all()
    after = lines_by_id(log)
    for attempt_id in frame.loc[~failed, "attempt_id"]:
        assert after[attempt_id] == before[attempt_id]  # malformed replies kept as they were, never re-asked
    assert set(final.loc[~usable, "attempt_id"]) == set(frame.loc[malformed, "attempt_id"])
    aside = lines_by_id(tmp_path / "outage.jsonl.retried.jsonl")
    assert aside == {a: before[a] for a in frame.loc[failed, "attempt_id"]}  # the old error rows, byte for byte
    assert run(spec, log, client=fast_client(server), retry_failed=True).retried == 0


def test_a_kill_while_the_log_is_rewritten_leaves_a_readable_log(serve, tmp_path, monkeypatch):
    judge = SimJudge(seed=1, faults=Faults(rate_500=0.5))
    server = serve(judge)
    spec = design(attempts=3)
    log = tmp_path / "log.jsonl"
    run(spec, log, client=fast_client(server, max_retries=0))
    original = log.read_bytes()
    failed_ids = set(hce.read_log(log).query("error_flag")["attempt_id"])
    judge.faults = Faults()

    def killed(*args):
        raise KeyboardInterrupt  # stands for SIGKILL in the replace step

    monkeypatch.setattr(hce.collect.running.failed.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        run(spec, log, client=fast_client(server), retry_failed=True)
    assert log.read_bytes() == original and len(hce.read_log(log)) == 18  # the old log, whole and readable
    assert set(lines_by_id(tmp_path / "log.jsonl.retried.jsonl")) == failed_ids
    monkeypatch.undo()
    summary = run(spec, log, client=fast_client(server), retry_failed=True)
    assert summary.retried == summary.done == len(failed_ids) > 0
    final = hce.read_log(log)
    assert len(final) == 18 and final["attempt_id"].is_unique and not final["error_flag"].any()


# The API's reply to o3 at temperature 0.1 (quoted in openai/openai-python#2104 and elsewhere; see design.py)
REFUSED = "Unsupported value: 'temperature' does not support 0.1 with this model. Only the default (1) value is supported."


def test_a_systematic_client_error_stops_the_run_and_names_it(serve, tmp_path):
    planted = "sk-hce-PLANTED-4b1d"
    judge = SimJudge(seed=0, faults=Faults(reject=f"{REFUSED} (key {planted})"))  # a server that quotes the key
    server = serve(judge)
    items = {f"T{i}": f"Doctor: How are you today?\nPatient: Fine, thanks, number {i}." for i in range(8)}
    spec = design(prompts=("P1.2",), attempts=4, items=items)  # 8 items x 4 attempts, all refused
    log = tmp_path / "refused.jsonl"
    with pytest.raises(CollectError) as caught:
        run(spec, log, client=fast_client(server, api_key=planted), concurrency=4)
    message = str(caught.value)
    assert f"condition 'P1.2|{MODEL}|t0.1' (model '{MODEL}')" in message
    assert "HTTP 400: " in message and REFUSED in message and "--retry-failed" in message
    assert planted not in message and "[API key removed]" in message
    logged = hce.read_log(log)
    # The K=10th refusal stops it; at most concurrency - 1 = 3 calls were in flight then, and they are logged.
    assert 10 <= len(logged) < 10 + 4 and judge.stats["requests"] == len(logged)
    assert logged["error_message"].str.startswith("HTTP 400: ").all()
    # Once fixed, a rerun with retry_failed sends the refused attempts and those never sent.
    judge.faults = Faults()
    summary = run(spec, log, client=fast_client(server), retry_failed=True)
    assert summary.retried == len(logged) and summary.done == 32 and summary.errors == 0
    assert len(hce.read_log(log)) == 32 and len(lines_by_id(tmp_path / "refused.jsonl.retried.jsonl")) == len(logged)


def test_the_stop_names_the_refused_condition_and_spares_one_items_failures(serve, tmp_path):
    judge = SimJudge(seed=0, faults=Faults(reject=REFUSED, reject_model="gpt-4o-2024-08-06"))
    server = serve(judge)
    spec = design(attempts=6, conditions=[{"prompt": "P1.2"}, {"prompt": "P1.2", "model": "gpt-4o-2024-08-06"}])
    with pytest.raises(CollectError, match=r"condition 'P1.2\|gpt-4o-2024-08-06\|t0.1' \(model 'gpt-4o-2024-08-06'\)"):
        run(spec, tmp_path / "mixed.jsonl", client=fast_client(server), concurrency=2)
    # One item's attempts failing alike is that item's problem (a transcript too long, say): no stop.
    one_item = design(attempts=12, items={"T1": TRANSCRIPTS["T1"]}, defaults={"model": "gpt-4o-2024-08-06"})
    summary = run(one_item, tmp_path / "one.jsonl", client=fast_client(server))
    assert summary.done == summary.errors == 24
    spec_all = design(prompts=("P1.2",), attempts=10, defaults={"model": "gpt-4o-2024-08-06", "temperature": 0.1})
    assert run(spec_all, tmp_path / "never.jsonl", client=fast_client(server), max_same_errors=None).errors == 30
    with pytest.raises(CollectError, match="max_same_errors must be >= 1 or None"):
        run(spec_all, tmp_path / "x.jsonl", client=fast_client(server), max_same_errors=0)


def test_a_server_without_keys_needs_none(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-openai")
    server = serve(SimJudge(seed=0))
    summary = run(design(attempts=1, endpoint={"base_url": server.url, "needs_key": False}), tmp_path / "n.jsonl")
    assert summary.done == 6 and dict(server.keys_seen) == {"no-key": 6}


@pytest.mark.parametrize("fault", ["model", "key"])
def test_a_401_or_404_stops_the_run_within_the_calls_in_flight(serve, tmp_path, fault):
    judge = SimJudge(seed=0, models=["served-model"])
    server = serve(judge, api_key="sk-right")
    spec = design(attempts=10, defaults={"model": "served-model" if fault == "key" else "misspelt-model"})
    client = fast_client(server, api_key="sk-right" if fault == "model" else "sk-wrong")
    with pytest.raises(FatalCallError, match="HTTP 404" if fault == "model" else "HTTP 401"):
        run(spec, tmp_path / "stop.jsonl", client=client, concurrency=4)
    # 60 attempts planned; only the first calls in flight reached the server, and none was logged.
    sent = sum(server.keys_seen.values())
    assert 1 <= sent <= 4 and judge.stats["ok"] == 0
    assert not (tmp_path / "stop.jsonl").exists() or hce.read_log(tmp_path / "stop.jsonl").empty


@pytest.mark.parametrize(
    "change, field, old, new",
    [
        ({"temperature": 1.0}, "temperature", "0.7", "1.0"),
        ({"model": "gpt-4o-2024-08-06"}, "model", MODEL, "gpt-4o-2024-08-06"),
        ({"max_tokens": 500}, "max_tokens", "1000", "500"),
        ({"seed": 3}, "seed", "empty", "3"),
        # Issue 34: these read "... endpoint kind other, but the design now says ... these", naming nothing.
        ({"logprobs": True}, "logprobs", "False", "True"),
        ({"samples_per_request": 5}, "samples_per_request", "1", "5"),
        ({"prompt": "P2.3"}, "prompt_id", "P1.2", "P2.3"),
    ],
)
def test_resuming_a_condition_with_changed_settings_stops_before_any_call(serve, tmp_path, change, field, old, new):
    # Issue 19: temperature 0.7 -> 1.0 (or gpt-4.1-mini -> gpt-4o) under one id pooled 30 + 60 rows silently.
    judge = SimJudge(seed=0)
    server = serve(judge)
    log = tmp_path / "log.jsonl"
    before = design(prompts=("P1.2",), attempts=10, defaults={"model": MODEL, "temperature": 0.7, "max_tokens": 1000})
    before["conditions"] = [{"prompt": "P1.2", "id": "zeroshot"}]
    assert run(before, log, client=fast_client(server)).done == 30
    frame = hce.read_log(log)
    assert set(frame["endpoint"]) == {"default"} and frame["settings_hash"].nunique() == 1
    after = {**before, "attempts": 30, "conditions": [{"prompt": "P1.2", "id": "zeroshot", **change}]}
    requests = judge.stats["requests"]
    with pytest.raises(CollectError, match=rf"condition 'zeroshot' has 30 logged attempts made with {re.escape(field)} "
                                           rf"{re.escape(old)}, but the design now says {re.escape(field)} {re.escape(new)}"):
        run(after, log, client=fast_client(server))
    with pytest.raises(CollectError, match="give the changed condition a new id"):
        estimate(after, log=log)  # --dry-run says so too
    assert judge.stats["requests"] == requests and len(hce.read_log(log)) == 30
    # A new id is a new condition: it starts afresh beside the old one.
    after["conditions"][0]["id"] = "zeroshot-v2"
    assert run(after, log, client=fast_client(server)).done == 90
    # The same settings resume as before.
    assert run(before, log, client=fast_client(server)).done == 0


def test_a_changed_rubric_template_or_transcript_is_named_on_resume(serve, tmp_path):
    # Issue 34: the fingerprint did not cover the item text (a transcript changed under the same id resumed into
    # the old rows), and a changed rubric was named only as "prompt template, rubric, ... other".
    server = serve(SimJudge(seed=0))
    log = tmp_path / "log.jsonl"
    rubric = hce.load_rubric("v5")
    before = design(prompts=("P1.2",), attempts=2)
    assert run(before, log, client=fast_client(server)).done == 6
    text = hce.rubric.rubric_yaml(rubric).replace("Clarity of Language", "Clarity of Speech")
    (tmp_path / "mine.yaml").write_text(text)
    with pytest.raises(CollectError, match=r"condition '[^']+' has 6 logged attempts made with rubric "
                                           r"'Patient Health Communication Rubric v5.0' \(sha256 \w{12}\), but the design "
                                           r"now says rubric 'Patient Health Communication Rubric v5.0' \(sha256 \w{12}\)"):
        run({**before, "rubric": str(tmp_path / "mine.yaml")}, log, client=fast_client(server))
    # A log made before the parts were recorded: the prompt it sent says where it changed.
    kept = settings_path(log).read_text()
    settings_path(log).unlink()
    with pytest.raises(CollectError, match=r"made with prompt sent '.*Clarity of Language: .*', but the design now says "
                                           r"prompt sent '.*Clarity of Speech: "):
        run({**before, "rubric": str(tmp_path / "mine.yaml")}, log, client=fast_client(server))
    settings_path(log).write_text(kept)
    items = [{"id": "T1", "text": TRANSCRIPTS["T1"] + " Doctor: And the pain?"},
             *({"id": k, "text": v} for k, v in TRANSCRIPTS.items() if k != "T1")]
    with pytest.raises(CollectError, match=r"item 'T1' has 2 logged attempts \(conditions '[^']+'\) judged on another "
                                           r"text \(sha256 \w{12}\), but the design's text is now sha256 \w{12}"):
        run({**before, "items": items}, log, client=fast_client(server))
    summary = run({**before, "items": items}, log, client=fast_client(server), new_settings=True)
    assert summary.done == 2 and len(hce.read_log(log)) == 6  # T1's two attempts judged afresh on the new text
