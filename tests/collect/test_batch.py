"""The Batch API path, driven by the real openai client against the simulated server on loopback."""

import json
import math

import pytest
import yaml
from collect_helpers import MODEL, design, fast_client
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.collect.running.batch import BATCH_FAILED, batch_result, cancel_batches, run_batch, split_files, state_path
from hce.collect.call.client import FatalCallError, JudgeClient
from hce.collect.design.design import load_design
from hce.collect.running.runner import estimate, run
from hce.sim import SimJudge
from hce.sim.batch import BatchSettings
from hce.errors import CollectError

TIMING = ("timestamp", "latency_s", "latency_last_s", "retries")
FAST = dict(poll_interval=0.001, max_poll_interval=0.005)
# Scores, reasoning, a total with logprobs, and a reply cut off at max_tokens (a flagged row).
CONDITIONS = [
    {"prompt": "P1.2"},
    {"prompt": "P2.3"},
    {"id": "total_logprobs", "prompt": "P1.1", "logprobs": True, "top_logprobs": 3},
    {"id": "cut_short", "prompt": "P2.3", "max_tokens": 20},
]


def records(path):
    return {r["attempt_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def online_log(serve, spec, tmp_path):
    # One call at a time, in plan order: the simulator draws repeated identical requests in
    # the order they arrive, and a batch is answered in file order (the plan's).
    log = tmp_path / "online.jsonl"
    run(spec, log, client=fast_client(serve(SimJudge(seed=0))), concurrency=1)
    return records(log)


def assert_same_rows(batch_row, online_row):
    """Equal apart from the timing fields, at half the online cost; the same columns in the same order."""
    assert list(batch_row) == list(online_row)
    assert batch_row["latency_s"] is None and batch_row["retries"] == 0
    if online_row["cost_usd"] is None:
        assert batch_row["cost_usd"] is None
    else:
        assert batch_row["cost_usd"] == pytest.approx(0.5 * online_row["cost_usd"], rel=1e-12)
    strip = lambda row: {k: v for k, v in row.items() if k not in (*TIMING, "cost_usd")}  # noqa: E731
    assert strip(batch_row) == strip(online_row)


def test_batch_log_equals_the_online_log(serve, tmp_path):
    spec = design(attempts=3, conditions=CONDITIONS)
    online = online_log(serve, spec, tmp_path)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=3))
    log = tmp_path / "batch.jsonl"
    summary = run_batch(spec, log, client=fast_client(serve(judge)), **FAST)
    got = records(log)
    # 3 items x 4 conditions x 3 attempts
    assert (summary.planned, summary.done, summary.skipped, summary.waiting) == (36, 36, 0, 0)
    assert set(got) == set(online) and len(got) == 36
    for attempt_id, row in got.items():
        assert_same_rows(row, online[attempt_id])
    frame = hce.read_log(log)
    assert frame.loc[frame["condition_id"] == "cut_short", "error_flag"].all()  # finish_reason=length, as online
    assert frame.loc[frame["condition_id"] == "total_logprobs", "logprobs"].notna().all()
    assert summary.errors == 9 and summary.cost_usd == pytest.approx(frame["cost_usd"].sum(), rel=1e-12)
    assert judge.batches.created == 1 and summary.batch_ids == ("batch_sim000001",)
    state = json.loads(state_path(log).read_text())["batches"]
    assert [(b["batch_id"], b["requests"], b["status"], b["ingested"]) for b in state] == [
        ("batch_sim000001", 36, "completed", True)
    ]
    # The input file is the online bodies, one line per attempt, custom_id = attempt_id.
    meta, data = judge.batches.files[state[0]["input_file_id"]]
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert meta["purpose"] == "batch" and [x["custom_id"] for x in lines] == [a.attempt_id for a in load_design(spec).plan()]
    assert {x["url"] for x in lines} == {"/v1/chat/completions"} and lines[0]["body"]["max_tokens"] == 1000
    # Rerunning finds nothing to do and submits nothing.
    again = run_batch(spec, log, client=fast_client(serve(judge)), **FAST)
    assert (again.done, again.skipped, judge.batches.created) == (0, 36, 1)


def test_failures_inside_a_batch_become_error_rows_and_resubmission_fills_them(serve, tmp_path):
    spec = design(attempts=4)
    online = online_log(serve, spec, tmp_path)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1, failure_rate=0.3))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    first = run_batch(spec, log, client=fast_client(server), **FAST)
    frame = hce.read_log(log)
    failed = frame[frame["error_message"].str.startswith(BATCH_FAILED, na=False)]
    assert 0 < len(failed) < 24 and first.errors == len(failed) and len(frame) == 24
    assert failed["error_flag"].all() and failed["total"].isna().all()
    assert failed["error_message"].str.contains("HTTP 500: The server had an error").all()
    # Requests that did not fail got exactly the replies they get online (failed ones were drawn too).
    for attempt_id, row in records(log).items():
        if attempt_id not in set(failed["attempt_id"]):
            assert_same_rows(row, online[attempt_id])
    good_lines = [line for line in log.read_text().splitlines() if BATCH_FAILED not in line]
    failed_lines = [line for line in log.read_text().splitlines() if BATCH_FAILED in line]
    # A plain rerun leaves them (they count as done); a resubmission sends only them.
    assert run_batch(spec, log, client=fast_client(server), **FAST).done == 0 and judge.batches.created == 1
    judge.batches.settings = BatchSettings(polls=1)
    second = run_batch(spec, log, client=fast_client(server), resubmit_failed=True, **FAST)
    assert (second.done, second.errors, second.retried, judge.batches.created) == (len(failed), 0, len(failed), 2)
    assert (tmp_path / "batch.jsonl.retried.jsonl").read_text().splitlines() == failed_lines  # the old rows, kept
    final = hce.read_log(log)
    assert len(final) == 24 and final["attempt_id"].is_unique and not final["error_flag"].any()
    assert log.read_text().splitlines()[: len(good_lines)] == good_lines  # earlier rows untouched
    assert len(json.loads(state_path(log).read_text())["batches"]) == 2


class Crash(Exception):
    pass


def test_an_interrupted_poll_resumes_from_the_state_file_without_resubmitting(serve, tmp_path, monkeypatch):
    spec = design(attempts=2)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=3))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    retrieve = JudgeClient.retrieve_batch

    async def crash_on_second_poll(self, batch_id):
        if judge.batches.batches[batch_id].seen >= 1:
            raise Crash("the laptop lid closed")
        return await retrieve(self, batch_id)

    monkeypatch.setattr(JudgeClient, "retrieve_batch", crash_on_second_poll)
    with pytest.raises(Crash):
        run_batch(spec, log, client=fast_client(server), **FAST)
    monkeypatch.setattr(JudgeClient, "retrieve_batch", retrieve)
    state = json.loads(state_path(log).read_text())["batches"]
    assert [(b["batch_id"], b["ingested"]) for b in state] == [("batch_sim000001", False)]
    assert not log.exists() or log.read_text() == ""
    summary = run_batch(spec, log, client=fast_client(server), **FAST)
    assert judge.batches.created == 1 and summary.batch_ids == ("batch_sim000001",)
    assert summary.done == 12 and len(hce.read_log(log)) == 12


def stopped_around_creation(server, log, monkeypatch, crash):
    """A batch run of design(attempts=2) killed after its upload, or after its batch was created but not recorded."""
    create = JudgeClient.create_batch

    async def crashing(self, *args, **kwargs):
        if crash == "after creation":
            await create(self, *args, **kwargs)  # the provider has it; the state file does not yet
        raise Crash("killed")

    monkeypatch.setattr(JudgeClient, "create_batch", crashing)
    with pytest.raises(Crash):
        run_batch(design(attempts=2), log, client=fast_client(server), **FAST)
    monkeypatch.setattr(JudgeClient, "create_batch", create)


@pytest.mark.parametrize("crash", ["after upload", "after creation"])
def test_a_run_stopped_around_batch_creation_creates_no_second_batch(serve, tmp_path, monkeypatch, crash):
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    stopped_around_creation(server, log, monkeypatch, crash)
    [entry] = json.loads(state_path(log).read_text())["batches"]
    assert (entry["batch_id"], entry["status"]) == (None, "uploaded")
    summary = run_batch(design(attempts=2), log, client=fast_client(server), **FAST)
    # The recorded upload is reused and, when its batch exists, that batch is found, not made again.
    assert judge.batches.created == 1 and summary.batch_ids == ("batch_sim000001",) and summary.done == 12
    assert sum(meta["purpose"] == "batch" for meta, _ in judge.batches.files.values()) == 1


def test_no_wait_submits_and_a_later_run_collects(serve, tmp_path):
    spec = design(attempts=2)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    submitted = run_batch(spec, log, client=fast_client(server), wait=False, **FAST)
    assert (submitted.done, submitted.waiting) == (0, 1) and "1 still open" in str(submitted)
    collected = run_batch(spec, log, client=fast_client(server), wait=False, **FAST)
    assert (collected.done, collected.waiting, judge.batches.created) == (12, 0, 1)


def test_files_are_split_at_the_limits(serve, tmp_path):
    two_models = [{"prompt": "P1.2"}, {"prompt": "P1.2", "model": "gpt-4o-mini-2024-07-18"}]
    spec = design(attempts=3, conditions=two_models)  # 9 requests per model
    judge = SimJudge(seed=0, batch=BatchSettings(polls=0, max_requests=4))
    log = tmp_path / "batch.jsonl"
    summary = run_batch(spec, log, client=fast_client(serve(judge)), max_requests=4, **FAST)
    # ceil(9 / 4) = 3 files per model, each of one model
    assert summary.done == 18 and len(summary.batch_ids) == 6 == judge.batches.created
    sizes = []
    for batch in judge.batches.batches.values():
        lines = judge.batches.files[batch.record["input_file_id"]][1].decode().splitlines()
        assert len({json.loads(x)["body"]["model"] for x in lines}) == 1
        sizes.append(len(lines))
    assert sizes == [4, 4, 1, 4, 4, 1]
    # By bytes: every line of this design is within a few bytes of the others.
    longest = max(len(x) + 1 for b in judge.batches.files.values() if b[0]["purpose"] == "batch" for x in b[1].splitlines())
    log2 = tmp_path / "bytes.jsonl"
    judge2 = SimJudge(seed=0, batch=BatchSettings(polls=0, max_bytes=2 * longest + 1))
    summary = run_batch(spec, log2, client=fast_client(serve(judge2)), max_bytes=2 * longest + 1, **FAST)
    assert summary.done == 18 and judge2.batches.created == 2 * math.ceil(9 / 2)
    with pytest.raises(CollectError, match="over the file limit"):
        split_files([("m", b"x" * 10)], max_bytes=9)


def test_a_file_over_the_provider_limit_is_rejected_with_its_reason(serve, tmp_path):
    judge = SimJudge(seed=0, batch=BatchSettings(polls=0, max_requests=5))
    log = tmp_path / "batch.jsonl"
    with pytest.raises(CollectError, match="rejected by the provider: the input file has 6 requests; the limit is 5"):
        run_batch(design(prompts=("P1.2",), attempts=2), log, client=fast_client(serve(judge)), **FAST)
    assert json.loads(state_path(log).read_text())["batches"][0]["status"] == "failed"


def test_estimate_prices_a_batch_at_half():
    spec = design(attempts=2)
    online, batch = estimate(spec), estimate(spec, batch=True)
    assert batch["cost_usd"].tolist() == pytest.approx((0.5 * online["cost_usd"]).tolist(), rel=1e-12)
    assert batch["calls"].tolist() == online["calls"].tolist()


def test_result_lines_without_a_response():
    # OpenAI writes requests a batch could not run in time to the error file like this.
    entry = {"id": "batch_req_1", "custom_id": "a", "response": None,
             "error": {"code": "batch_expired",
                       "message": "This request could not be executed before the completion window expired."}}
    result = batch_result(entry)
    assert not result.ok and result.error_message.startswith(f"{BATCH_FAILED}: batch_expired: This request")


def test_cli_batch_dry_run_no_wait_and_collect(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1))
    server = serve(judge)
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(design(attempts=2, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"})))
    log = tmp_path / "log.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--dry-run", "--batch"])
    batch_costs = estimate(load_design(path), batch=True)["cost_usd"]
    assert result.exit_code == 0 and "dry run: 12 calls" in result.output and judge.batches.created == 0
    assert all(f"{c:,.4f}" in result.output for c in batch_costs)
    common = ["collect", str(path), "--log", str(log), "--batch", "--poll-interval", "0.001"]
    result = runner.invoke(app, [*common, "--no-wait"])
    assert result.exit_code == 0 and "still open: run again" in result.output
    result = runner.invoke(app, common)
    assert result.exit_code == 0 and "12 attempts run" in result.output and judge.batches.created == 1
    assert len(hce.read_log(log)) == 12 and (hce.read_log(log)["model"] == MODEL).all()


def test_a_refused_key_stops_the_run_and_stays_out_of_the_message(serve, tmp_path):
    # The simulated server quotes the key it was given in its 401, as a careless server might.
    server = serve(SimJudge(seed=0), api_key="sk-right")
    with pytest.raises(FatalCallError, match="refused the API key for the upload") as caught:
        run_batch(design(attempts=1), tmp_path / "log.jsonl", client=fast_client(server, api_key="sk-wrong-secret"), **FAST)
    assert "sk-wrong-secret" not in str(caught.value) and "[API key removed]" in str(caught.value)


def test_control_calls_are_retried_then_give_up(serve, tmp_path):
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1, busy=3))  # the first 3 files/batches requests get 503
    summary = run_batch(design(attempts=1), tmp_path / "log.jsonl", client=fast_client(judge_server := serve(judge)), **FAST)
    assert summary.done == 6 and judge.batches.settings.busy == 0 and judge.batches.created == 1
    judge.batches.settings.busy = 99
    gave_up = r"the upload of .* failed: HTTP 503: .*The engine is currently overloaded.*\(after 4 tries\)"
    with pytest.raises(CollectError, match=gave_up):
        run_batch(design(attempts=2), tmp_path / "other.jsonl", client=fast_client(judge_server), **FAST)


# --- cancelling ----------------------------------------------------------------------------


def test_a_cancel_is_recorded_and_a_rerun_logs_the_finished_share_and_sends_only_the_rest(serve, tmp_path):
    spec = design(attempts=4)  # 24 attempts, one model: one batch file
    online = online_log(serve, spec, tmp_path)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=3, cancel_polls=1, cancel_share=0.25))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    run_batch(spec, log, client=fast_client(server), wait=False, **FAST)
    cancel = cancel_batches(spec, log, client=fast_client(server), wait=False, **FAST)
    assert (cancel.cancelled, cancel.done, cancel.waiting) == (("batch_sim000001",), 0, 1)
    assert "1 still cancelling: run again" in str(cancel)
    [entry] = json.loads(state_path(log).read_text())["batches"]
    assert (entry["status"], entry["ingested"]) == ("cancelling", False) and entry["cancel_requested_at"]
    rerun = run_batch(spec, log, client=fast_client(server), **FAST)
    plan = [a.attempt_id for a in load_design(spec).plan()]
    # The cancelled batch stopped after 0.25 x 24 = 6 requests (nothing was answered before the cancel):
    # those 6 are logged from it, and a second batch carries exactly the other 18.
    assert (rerun.done, rerun.batch_ids, judge.batches.created) == (24, ("batch_sim000001", "batch_sim000002"), 2)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["attempt_id"] for r in lines] == plan  # each attempt exactly once, the cancelled batch's 6 first
    first, second = json.loads(state_path(log).read_text())["batches"]
    assert (first["status"], first["ingested"], first["completed"], second["requests"]) == ("cancelled", True, 6, 18)
    sent = judge.batches.files[second["input_file_id"]][1].decode().splitlines()
    assert [json.loads(x)["custom_id"] for x in sent] == plan[6:]
    # Answered in plan order across both batches, so row for row the online log, at the batch price.
    for row in lines:
        assert_same_rows(row, online[row["attempt_id"]])


def test_a_waiting_cancel_logs_the_finished_share_and_a_dry_run_counts_the_rest(serve, tmp_path):
    spec = design(attempts=2)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=4, cancel_share=0.0))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    run_batch(spec, log, client=fast_client(server), wait=False, **FAST)
    judge.respond("GET", "/v1/batches/batch_sim000001", None)  # 12 x 1 // 4 = 3 answered before the cancel
    cancel = cancel_batches(spec, log, client=fast_client(server), **FAST)
    assert (cancel.done, cancel.waiting, cancel.missing) == (3, 0, 9) and len(hce.read_log(log)) == 3
    assert "9 attempts not in the log: a --batch run without --cancel sends them" in str(cancel)
    assert estimate(spec, log=log, batch=True)["calls"].sum() == 9
    # Cancelling again finds nothing open and changes nothing.
    state = state_path(log).read_text()
    again = cancel_batches(spec, log, client=fast_client(server), **FAST)
    assert str(again) == f"nothing to cancel: no open batch is recorded in {state_path(log)}"
    assert state_path(log).read_text() == state and len(hce.read_log(log)) == 3


def test_cancelling_with_nothing_open_is_a_no_op(serve, tmp_path):
    judge = SimJudge(seed=0, batch=BatchSettings(polls=0))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    summary = cancel_batches(design(attempts=1), log, client=fast_client(server), **FAST)
    assert str(summary).startswith("nothing to cancel") and summary.missing == 6
    assert not log.exists() and not state_path(log).exists()


def test_a_batch_that_ended_before_the_cancel_is_collected(serve, tmp_path):
    spec = design(attempts=2)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    run_batch(spec, log, client=fast_client(server), wait=False, **FAST)
    assert judge.respond("GET", "/v1/batches/batch_sim000001", None).body["status"] == "completed"
    summary = cancel_batches(spec, log, client=fast_client(server), **FAST)  # refused with 409, then collected
    assert (summary.cancelled, summary.ended, summary.done, summary.missing) == ((), ("batch_sim000001",), 12, 0)
    assert "1 had ended already (batch_sim000001)" in str(summary)


@pytest.mark.parametrize("crash", ["after upload", "after creation"])
def test_an_upload_never_submitted_is_withdrawn_or_its_batch_cancelled(serve, tmp_path, monkeypatch, crash):
    spec = design(attempts=2)
    judge = SimJudge(seed=0, batch=BatchSettings(polls=1, cancel_share=0.0))
    server = serve(judge)
    log = tmp_path / "batch.jsonl"
    stopped_around_creation(server, log, monkeypatch, crash)
    summary = cancel_batches(spec, log, client=fast_client(server), **FAST)
    [entry] = json.loads(state_path(log).read_text())["batches"]
    if crash == "after upload":
        assert summary.withdrawn == (entry["input_file_id"],) and summary.cancelled == ()
        assert (entry["batch_id"], entry["status"]) == (None, "withdrawn")
    else:
        assert summary.cancelled == ("batch_sim000001",) and entry["status"] == "cancelled"
    # Either way nothing was logged, and the next run sends all 12 in a new file, never the old one.
    rerun = run_batch(spec, log, client=fast_client(server), **FAST)
    assert rerun.done == 12 and len(hce.read_log(log)) == 12
    uploads = [meta["id"] for meta, _ in judge.batches.files.values() if meta["purpose"] == "batch"]
    assert len(uploads) == 2 and judge.batches.batches[rerun.batch_ids[-1]].record["input_file_id"] == uploads[1]


def test_a_refused_cancel_keeps_the_key_out_of_the_message(serve, tmp_path):
    server = serve(SimJudge(seed=0), api_key="sk-right")
    log = tmp_path / "log.jsonl"
    run_batch(design(attempts=1), log, client=fast_client(server, api_key="sk-right"), wait=False, **FAST)
    with pytest.raises(FatalCallError, match="refused the API key for the cancel of batch batch_sim000001") as caught:
        cancel_batches(design(attempts=1), log, client=fast_client(server, api_key="sk-wrong-secret"), **FAST)
    assert "sk-wrong-secret" not in str(caught.value) and "[API key removed]" in str(caught.value)


def test_cli_cancel_then_dry_run_then_resubmit(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    judge = SimJudge(seed=0, batch=BatchSettings(polls=3, cancel_share=0.25))
    server = serve(judge)
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(design(attempts=2, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"})))
    log = tmp_path / "log.jsonl"
    runner = CliRunner()
    common = ["collect", str(path), "--log", str(log), "--batch", "--poll-interval", "0.001"]
    outputs = [runner.invoke(app, [*common, "--no-wait"])]
    outputs.append(runner.invoke(app, [*common, "--cancel", "--no-wait"]))
    assert "cancelled 1 batches (batch_sim000001)" in outputs[-1].output and "still cancelling" in outputs[-1].output
    outputs.append(runner.invoke(app, [*common, "--dry-run"]))  # not collected yet: all 12 counted, and said so
    assert "dry run: 12 calls" in outputs[-1].output and "1 batches in" in outputs[-1].output
    outputs.append(runner.invoke(app, [*common, "--cancel"]))  # collects the 3 it finished (0.25 x 12)
    assert "1 cancelled before (batch_sim000001)" in outputs[-1].output and "logged 3 finished" in outputs[-1].output
    outputs.append(runner.invoke(app, [*common, "--dry-run"]))
    assert "dry run: 9 calls" in outputs[-1].output and "note:" not in outputs[-1].output
    outputs.append(runner.invoke(app, [*common, "--cancel"]))
    assert "nothing to cancel" in outputs[-1].output
    outputs.append(runner.invoke(app, common))
    assert "9 attempts run, 3 already logged" in outputs[-1].output and judge.batches.created == 2
    outputs.append(runner.invoke(app, ["collect", str(path), "--log", str(log), "--cancel"]))
    assert outputs[-1].exit_code == 2 and "--cancel goes with --batch" in outputs[-1].output
    assert all(r.exit_code == 0 for r in outputs[:-1]) and len(hce.read_log(log)) == 12
    assert not any("sk-test-secret" in r.output for r in outputs)
