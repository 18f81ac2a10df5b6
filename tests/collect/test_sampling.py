"""samples_per_request: k attempts from one request with n = k; rows complete and unique through kills,
faults, retries and batches; usage totals equal the server's."""

import warnings
from collections import Counter

import pytest
import yaml
from collect_helpers import design, fast_client, kill_mid_run

import hce
from hce.collect.running.batch import run_batch
from hce.collect.design.design import load_design
from hce.collect.running.runner import run
from hce.collect.design.schema import SchemaError
from hce.sim import Faults, SimJudge
from hce.errors import CollectError
from hce.log import TruncatedLogWarning, make_attempt_id


class CountingJudge(SimJudge):
    """A simulated judge that adds up the usage of every completion it answers (what the server bills)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.billed = Counter()

    def _completion(self, model, prompt, cache_key, choices):
        body = super()._completion(model, prompt, cache_key, choices)
        usage = body["usage"]
        with self._lock:
            self.billed.update(requests=1, choices=len(choices), input=usage["prompt_tokens"],
                               output=usage["completion_tokens"], cached=usage["prompt_tokens_details"]["cached_tokens"])
        return body


def k_design(k=4, attempts=10, **extra):
    spec = design(prompts=("P2.1", "P2.3"), attempts=attempts, **extra)
    spec["defaults"]["samples_per_request"] = k
    return spec


def expected_ids(spec):
    d = load_design(spec)
    return {make_attempt_id("TEST", i.id, c.id, n) for i in d.items for c in d.conditions for n in range(1, d.attempts + 1)}


def check_complete(log, spec):
    frame = hce.read_log(log)
    assert frame["attempt_id"].is_unique and set(frame["attempt_id"]) == expected_ids(spec)
    assert set(frame["attempt"]) == set(range(1, spec["attempts"] + 1))
    return frame


def test_one_request_gives_k_rows_with_exact_usage(serve, tmp_path):
    judge = CountingJudge(seed=1)
    server = serve(judge)
    spec = k_design(k=4, attempts=10)  # requests of 4, 4 and 2 attempts per item x condition
    log = tmp_path / "k.jsonl"
    summary = run(spec, log, client=fast_client(server), concurrency=4)
    frame = check_complete(log, spec)
    assert summary.done == 60 and summary.errors == 0
    # 3 items x 2 conditions x 3 requests
    assert judge.billed["requests"] == 18 and judge.billed["choices"] == 60
    sizes = frame.groupby("request_id")["attempt"].agg(["size", "min", "max"])
    assert sorted(sizes["size"]) == [2] * 6 + [4] * 12
    assert ((sizes["max"] - sizes["min"] + 1) == sizes["size"]).all()  # attempts 1-4, 5-8, 9-10
    # Usage split over the rows adds up exactly to what the server billed.
    assert frame["input_tokens"].sum() == judge.billed["input"]
    assert frame["output_tokens"].sum() == judge.billed["output"]
    assert frame["cached_tokens"].sum() == judge.billed["cached"]
    assert (frame["cached_tokens"] <= frame["input_tokens"]).all()
    # Choices of one request differ (separate draws), and each row parses on its own.
    assert frame["total"].notna().all()


def test_one_sample_a_request_logs_no_request_id(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    log = tmp_path / "one.jsonl"
    run(design(attempts=2), log, client=fast_client(server))
    assert "request_id" not in hce.read_log(log).columns or hce.read_log(log)["request_id"].isna().all()


def test_faults_and_retry_failed_keep_rows_complete_and_unique(serve, tmp_path):
    judge = CountingJudge(seed=5, faults=Faults(rate_500=0.35, rate_malformed=0.1))
    server = serve(judge)
    spec = k_design(k=5, attempts=10)
    log = tmp_path / "faults.jsonl"
    run(spec, log, client=fast_client(server, max_retries=0), concurrency=6)
    frame = check_complete(log, spec)
    failed = frame["error_message"].str.startswith("HTTP 500", na=False)
    assert failed.any()
    # A failed request fails all its rows together: whole requests are sent again.
    assert frame.loc[failed].groupby("request_id").size().eq(5).all()
    judge.faults = Faults()
    again = run(spec, log, client=fast_client(server), retry_failed=True)
    assert again.retried == int(failed.sum()) == again.done
    final = check_complete(log, spec)
    assert not final["error_message"].str.startswith("HTTP 500", na=False).any()
    billed = judge.billed
    assert final["input_tokens"].sum() == billed["input"] - _aside_sum(log, "input_tokens")
    assert final["output_tokens"].sum() == billed["output"] - _aside_sum(log, "output_tokens")


def _aside_sum(log, column):
    aside = log.with_name(log.name + ".retried.jsonl")
    return 0 if not aside.exists() else int(hce.read_log(aside)[column].fillna(0).sum())


def test_a_partly_logged_request_is_completed_under_a_new_request_id(serve, tmp_path):
    server = serve(SimJudge(seed=2))
    spec = k_design(k=5, attempts=5)
    log = tmp_path / "partial.jsonl"
    run(spec, log, client=fast_client(server))
    lines = log.read_text().splitlines(keepends=True)
    # A kill tore the last request's write after two of its five rows (and mid-way through the third).
    log.write_text("".join(lines[:-3]) + lines[-3][:30])
    with pytest.warns(TruncatedLogWarning):
        summary = run(spec, log, client=fast_client(server))
    assert summary.done == 3
    frame = check_complete(log, spec)
    sizes = sorted(frame.groupby("request_id").size())
    assert sizes == [2, 3] + [5] * 5  # the torn request: 2 rows kept, 3 asked again in a request of their own


def test_kill_9_mid_run_then_resume_with_faults(serve, tmp_path):
    judge = CountingJudge(seed=4, latency=0.1, faults=Faults(rate_500=0.2, rate_429=0.1, retry_after=0.01))
    server = serve(judge)
    spec = k_design(k=3, attempts=12, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"},
                    run={"concurrency": 3})  # fmt: skip
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "killed.jsonl"
    done_before = kill_mid_run(path, log, at_least=15)
    assert 15 <= done_before < 72, "the run was not stopped mid-way"
    judge.faults = Faults()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)  # only if the kill tore a line
        run(path, log, client=fast_client(server), retry_failed=True)
    frame = check_complete(log, spec)
    assert len(frame) == 72 and not frame["error_message"].str.startswith("HTTP", na=False).any()


def test_batch_mode_sends_requests_and_logs_each_attempt_once(serve, tmp_path):
    judge = CountingJudge(seed=6)
    server = serve(judge)
    spec = k_design(k=4, attempts=6)
    log = tmp_path / "batch.jsonl"
    summary = run_batch(spec, log, client=fast_client(server), poll_interval=0.01)
    frame = check_complete(log, spec)
    assert summary.done == 36 and judge.billed["requests"] == 12  # 3 items x 2 conditions x (4 + 2)
    assert frame["input_tokens"].sum() == judge.billed["input"]
    assert frame["output_tokens"].sum() == judge.billed["output"]
    assert sorted(frame.groupby("request_id").size()) == [2] * 6 + [4] * 6
    # Rerun: nothing is sent again.
    assert run_batch(spec, log, client=fast_client(server), poll_interval=0.01).done == 0
    assert len(hce.read_log(log)) == 36


def test_k_above_one_is_refused_where_n_is_not_taken():
    spec = k_design(k=2, endpoint={"base_url": "https://api.anthropic.com/v1/", "api_key_env": "ANTHROPIC_KEY"})
    with pytest.raises(CollectError, match=r"samples_per_request 2 .* anthropic takes n=1 only"):
        load_design(spec)
    with pytest.raises(SchemaError, match=r"samples_per_request: must be >= 1"):
        load_design(k_design(k=0))
    with pytest.raises(SchemaError, match=r"samples_per_request: must be <= 128"):
        load_design(k_design(k=129))


def test_prompt_cache_key_is_sent(serve, tmp_path):
    judge = CountingJudge(seed=0)
    server = serve(judge)
    spec = design(prompts=("P2.1",), attempts=2)
    spec["defaults"]["prompt_cache_key"] = "exp5-p21"
    seen = []
    original = judge._chat
    judge._chat = lambda body, *rest: (seen.append(body.get("prompt_cache_key")), original(body, *rest))[1]
    run(spec, tmp_path / "key.jsonl", client=fast_client(server))
    assert seen and set(seen) == {"exp5-p21"}


def test_batch_stopped_while_waiting_failures_cancel_and_resubmit_keep_rows_unique(serve, tmp_path):
    from hce.collect.running.batch import cancel_batches
    from hce.sim.batch import BatchSettings

    judge = CountingJudge(seed=8, batch=BatchSettings(polls=3, failure_rate=0.3))
    server = serve(judge)
    spec = k_design(k=4, attempts=8)
    log = tmp_path / "batch.jsonl"
    options = dict(client=fast_client(server), poll_interval=0.01)
    first = run_batch(spec, log, wait=False, **options)  # submitted; the run stops while the batch is open
    assert first.waiting == 1 and not log.exists()
    run_batch(spec, log, **{**options, "client": fast_client(server)})  # a later run collects it, sends nothing new
    frame = check_complete(log, spec)
    failed = frame["error_message"].str.startswith("batch request failed", na=False)
    assert failed.any() and frame.loc[failed].groupby("request_id").size().eq(4).all()  # whole requests fail
    # The provider recovers; the failed requests go again, as requests, and are cancelled half-way once.
    judge.batches.settings = BatchSettings(polls=2, cancel_share=0.5)
    run_batch(spec, log, wait=False, resubmit_failed=True, **{**options, "client": fast_client(server)})
    cancel_batches(spec, log, **{**options, "client": fast_client(server)})
    run_batch(spec, log, **{**options, "client": fast_client(server)})  # sends what the cancel left unsent
    final = check_complete(log, spec)
    assert not final["error_message"].str.startswith("batch request failed", na=False).any()
    assert final["attempt_id"].is_unique and len(final) == 48
