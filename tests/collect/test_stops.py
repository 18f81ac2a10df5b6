"""A run stops early on a dead endpoint, says when every call failed, and keeps to a spending limit."""

import json
import socket

import pytest
import yaml
from collect_helpers import MODEL, design, fast_client
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.collect.running.batch import run_batch, state_path
from hce.collect.call.client import JudgeClient
from hce.collect.call.pricing import cost_usd
from hce.collect.running.runner import estimate, run
from hce.sim import Faults, SimJudge
from hce.errors import CollectError

runner = CliRunner()
ITEMS = {f"T{i}": f"Doctor: How are you today?\nPatient: Fine, thanks, number {i}." for i in range(8)}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_design(tmp_path, name="design.yaml", **kwargs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(design(**kwargs)))
    return path


def test_a_closed_port_stops_the_run_early_with_a_non_zero_exit(tmp_path, monkeypatch):
    # Issue 19: against a closed port every call was retried, flagged, and the run exited 0.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    path = write_design(tmp_path, prompts=("P1.2",), attempts=4, items=ITEMS,  # 32 calls
                        endpoint={"base_url": url, "api_key_env": "OPENAI_API_KEY", "max_retries": 0}, run={"concurrency": 2})
    log = tmp_path / "dead.jsonl"
    result = runner.invoke(app, ["collect", str(path), "--log", str(log)])
    output = " ".join(result.output.split())
    assert result.exit_code == 2, output
    assert f"the run stopped: 10 calls in a row of condition 'P1.2|{MODEL}|t0.1' (model '{MODEL}') got no answer from endpoint 'default' ({url}" in output
    assert "connection error" in output and "--retry-failed" in output
    rows = hce.read_log(log)
    assert 10 <= len(rows) < 10 + 2  # the 10th stops it; at most concurrency - 1 more were in flight
    assert rows["error_message"].str.startswith("connection error: ").all()


def test_timeouts_stop_the_run_too(serve, tmp_path):
    server = serve(SimJudge(seed=0, faults=Faults(rate_slow=1.0, slow_s=2.0)))
    spec = design(prompts=("P1.2",), attempts=4, items=ITEMS)
    with pytest.raises(CollectError, match=r"10 calls in a row .* got no answer from .*the last: timeout: "):
        run(spec, tmp_path / "slow.jsonl", client=fast_client(server, timeout=0.05, max_retries=1), concurrency=3)
    rows = hce.read_log(tmp_path / "slow.jsonl")
    # The timeout is the whole call's (issue 44): a try that used it all is not retried.
    assert 10 <= len(rows) < 10 + 3 and (rows["retries"] == 0).all()


def test_one_items_unanswered_calls_do_not_stop_the_run_but_an_all_failed_run_exits_non_zero(tmp_path, monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    one_item = design(prompts=("P1.2",), attempts=12, items={"T1": ITEMS["T1"]})
    summary = run(one_item, tmp_path / "one.jsonl", client=JudgeClient(base_url=url, api_key="sk-test", max_retries=0))
    assert summary.done == summary.failed == 12 and summary.all_failed and "12 calls got no reply" in str(summary)
    # The command line: a run in which no call got a reply exits non-zero, whatever stopped it or not.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = write_design(tmp_path, prompts=("P1.2",), attempts=3, items={"T1": ITEMS["T1"]},
                        endpoint={"base_url": url, "api_key_env": "OPENAI_API_KEY", "max_retries": 0})
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "cli.jsonl")])
    assert result.exit_code == 2 and "3 attempts run" in result.output, result.output
    assert "every call failed" in " ".join(result.output.split())


def call_costs(frame):
    return [cost_usd(MODEL, a, b, c) for a, b, c in zip(frame["input_tokens"], frame["output_tokens"], frame["cached_tokens"])]


def test_max_cost_stops_within_one_round_of_concurrent_calls_and_a_resume_never_pays_twice(serve, tmp_path):
    judge = SimJudge(seed=0, latency=0.01)
    server = serve(judge)
    spec = design(attempts=10)  # 3 items x 2 prompts x 10 attempts = 60 calls
    table = estimate(spec)
    planned, per_call = float(table["cost_usd"].sum()), float((table["cost_usd"] / table["calls"]).max())
    limit = 0.4 * planned
    concurrency = 4
    log = tmp_path / "capped.jsonl"
    with pytest.raises(CollectError, match=r"the run stopped before passing max_cost_usd=\$") as caught:
        run(spec, log, client=fast_client(server), concurrency=concurrency, max_cost_usd=limit)
    assert "Raise run.max_cost_usd (or --max-cost)" in str(caught.value)
    frame = hce.read_log(log)
    costs = call_costs(frame)
    spent, biggest = sum(costs), max(costs)
    assert judge.stats["requests"] == len(frame) < 60  # everything sent was logged; not everything was sent
    # Within one round of concurrent calls of the limit, on either side. Above it only by what the
    # calls in flight cost beyond their estimates; below it by at most the estimates of the calls
    # in flight and the next one, since it stops only when the next call would pass.
    assert limit - concurrency * per_call <= spent <= limit + concurrency * biggest
    # The design's run.max_cost_usd is the same limit; the whole log counts, so a resume under it sends nothing.
    with pytest.raises(CollectError, match="max_cost_usd"):
        run(design(attempts=10, run={"max_cost_usd": spent}), log, client=fast_client(server))
    assert judge.stats["requests"] == len(frame)
    # Raised, the run resumes: each attempt paid once.
    summary = run(design(attempts=10, run={"max_cost_usd": 10 * planned}), log, client=fast_client(server))
    ids = [json.loads(line)["attempt_id"] for line in log.read_text().splitlines()]
    assert summary.skipped == len(frame) and len(ids) == len(set(ids)) == 60 == judge.stats["requests"]


def test_max_cost_refuses_what_it_cannot_bound(serve, tmp_path, monkeypatch):
    server = serve()
    with pytest.raises(CollectError, match=r"max_cost_usd cannot bound the spend on unpriced model\(s\) \['my-llama'\]"):
        run(design(defaults={"model": "my-llama"}), tmp_path / "x.jsonl", client=fast_client(server), max_cost_usd=1.0)
    with pytest.raises(CollectError, match="max_cost_usd must be a number of USD > 0, got -1"):
        run(design(), tmp_path / "x.jsonl", client=fast_client(server), max_cost_usd=-1)
    assert server.judge.stats["requests"] == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = write_design(tmp_path, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"})
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "cli.jsonl"), "--max-cost", "0.000001"])
    assert result.exit_code == 2 and "the run stopped before passing max_cost_usd=$0.0000" in result.output
    assert server.judge.stats["requests"] == 0


def test_a_batch_that_would_pass_max_cost_is_not_submitted(serve, tmp_path):
    server = serve()
    spec = design(attempts=2)
    batch_price = float(estimate(spec, batch=True)["cost_usd"].sum())
    log = tmp_path / "batch.jsonl"
    with pytest.raises(CollectError, match=r"nothing was submitted: .* 12 batch requests would add"):
        run_batch(spec, log, client=fast_client(server), poll_interval=0.001, max_cost_usd=0.9 * batch_price)
    assert not state_path(log).exists() and not log.exists()
    capped = design(attempts=2, run={"max_cost_usd": 1.1 * batch_price})  # the design's limit, the same check
    assert run_batch(capped, log, client=fast_client(server), poll_interval=0.001).done == 12
