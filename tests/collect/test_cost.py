"""Cost projections per strategy against the logged cost of the same design; `hce cost`; the cost summary."""

import pytest
import yaml
from collect_helpers import fast_client
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.collect.running.batch import run_batch
from hce.collect.design.design import load_design
from hce.collect.projection import project
from hce.collect.running.runner import run
from hce.sim import SimJudge
from hce.report.cost import cost_summary

runner = CliRunner()
MODEL = "gpt-4o-2024-08-06"  # the PRD's first model (seed 000 section 5)


def transcript(i: int) -> str:
    # A distinct consultation of ~1,300 characters (~330 tokens) per item; the patient speaks in long lines.
    lines = [f"Doctor: Visit {i}. What brings you in today?",
             f"Patient: My left knee has hurt for about {i + 2} weeks now, mostly when I climb stairs."]
    lines += [f"Doctor: Question {j} about it?\nPatient: Answer {j} for visit {i}, it is worse on stairs." for j in range(12)]
    return "\n".join(lines)


def spec(k=1, attempts=6, items=6):
    return {
        "experiment_id": "COST",
        "attempts": attempts,
        "defaults": {"model": MODEL, "temperature": 0.1, "max_tokens": 1000, "samples_per_request": k},
        "conditions": [{"prompt": "P2.1"}, {"prompt": "P2.3"}],
        "items": [{"id": f"T{i}", "text": transcript(i)} for i in range(items)],
    }


def logged(log):
    return hce.read_log(log).groupby("condition_id")["cost_usd"].sum()


def projected(design, strategy):
    table = project(load_design(design))
    return table[table["strategy"] == strategy].set_index("condition_id")["cost_usd"]


def test_dry_run_projection_equals_the_logged_cost_within_5_percent(serve, tmp_path):
    # The simulated judge caches as OpenAI does, so separate online calls against it are the "caching"
    # strategy, and n-sampled requests sent as a batch are "combined". Calibrated on a pilot (two items,
    # logged against a server of its own), the projection of the whole design matches its logged cost:
    # prompt and cached tokens exactly (the same count and cache rules), replies at the pilot's mean length.
    # A reasoning reply's length varies (SD ~24 of ~470 tokens), so the pilot has 16 replies: the SE of its
    # mean is ~1.3% of the length, and the 5% margin below is ~4 SEs (4 replies were 3 SEs off for one seed).
    pilot_log = tmp_path / "pilot.jsonl"
    run(spec(k=1, attempts=4, items=4), pilot_log, client=fast_client(serve(SimJudge(seed=9))))
    pilot = hce.read_log(pilot_log)
    separate, sampled = spec(k=1), spec(k=6)  # each run against a fresh server: a cold cache, as the projection's
    run(separate, tmp_path / "separate.jsonl", client=fast_client(serve(SimJudge(seed=0))), concurrency=3)
    run_batch(sampled, tmp_path / "combined.jsonl", client=fast_client(serve(SimJudge(seed=0))), poll_interval=0.01)
    for design, log, strategy in ((separate, "separate.jsonl", "caching"), (sampled, "combined.jsonl", "combined")):
        for calibration in (pilot, None):
            table = project(load_design(design), pilot=calibration)
            want = table[table["strategy"] == strategy].set_index("condition_id")
            got = hce.read_log(tmp_path / log).groupby("condition_id")[["cost_usd", "input_tokens", "cached_tokens"]].sum()
            assert (want["input_tokens"] == got["input_tokens"]).all()
            assert (want["cached_tokens"] == got["cached_tokens"]).all()
            # Without a pilot the replies are assumed from the rubric (estimates.expected_output: 53 tokens for
            # the score block, 453 with reasoning) against the simulator's 51 and ~450 of its own tokens.
            # Seen: P2.1 +1.5% (combined: the prompt billed once, so replies weigh most), P2.3 +0.3%.
            # With a pilot, exact where the simulator's reply length is constant (the score block: seen 1.0000).
            ratio = want["cost_usd"] / got["cost_usd"]
            assert ((ratio - 1).abs() < 0.05).all(), (strategy, calibration is None, ratio.to_dict())


def test_projection_by_hand_for_one_item():
    # One item, 4 attempts of P2.1 at gpt-4o-2024-08-06 ($2.50 in, $1.25 cached, $10 out per million); a reply
    # of Rubric v5.0's score block is assumed 53 tokens (estimates.expected_output).
    design = load_design({**spec(attempts=4, items=1), "conditions": [{"prompt": "P2.1"}]})
    table = project(design).set_index("strategy")
    p = int(table.loc["separate", "input_tokens"]) // 4  # prompt tokens of one call
    cached = 1024 + (p - 1024) // 128 * 128  # each repeat hits the whole prompt in 128-token steps
    assert table.loc["separate", "cost_usd"] == pytest.approx(4 * (p * 2.5 + 53 * 10) / 1e6, rel=1e-12)
    assert table.loc["caching", "cached_tokens"] == 3 * cached
    assert table.loc["n_sampling", "cost_usd"] == pytest.approx((p * 2.5 + 4 * 53 * 10) / 1e6, rel=1e-12)
    assert table.loc["batch", "cost_usd"] == pytest.approx(table.loc["separate", "cost_usd"] / 2, rel=1e-12)
    assert table.loc["combined", "cost_usd"] == pytest.approx((p * 2.5 + 4 * 53 * 10) / 2e6, rel=1e-12)  # one request


def test_cost_summary_adds_up_the_log(serve, tmp_path):
    server = serve(SimJudge(seed=0))
    log = tmp_path / "run.jsonl"
    run(spec(k=3, attempts=6, items=2), log, client=fast_client(server))
    frame = hce.read_log(log)
    table = cost_summary(frame).set_index("condition_id")
    assert table.loc["(all)", "cost_usd"] == pytest.approx(frame["cost_usd"].sum(), rel=1e-12)
    assert table.loc["(all)", "requests"] == 8 and table.loc["(all)", "attempts"] == 24  # 2 x 2 x (3 + 3)
    share = frame["cached_tokens"].sum() / frame["input_tokens"].sum()
    assert table.loc["(all)", "cached_share"] == pytest.approx(share, rel=1e-12)
    assert table.loc["(all)", "batch_share"] == 0


def test_hce_cost_command_and_dry_run_projection(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = serve(SimJudge(seed=0))
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump({**spec(attempts=2, items=2), "endpoint": {"base_url": server.url,
                                                                              "api_key_env": "OPENAI_API_KEY"}}))
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), "--dry-run"])
    assert result.exit_code == 0, result.output
    for strategy in ("separate", "n_sampling", "caching", "batch", "combined"):
        assert strategy in result.output
    assert "assumptions: prompt tokens = rendered characters / 4" in result.output
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["cost", str(tmp_path / "log.jsonl")])
    assert result.exit_code == 0, result.output
    assert "P2.1|gpt-4o-2024-08-06|t0.1" in result.output and "(all)" in result.output
    result = runner.invoke(app, ["cost", str(tmp_path / "log.jsonl"), "--by", "no_such_column"])
    assert result.exit_code == 2 and "no_such_column" in result.output


def test_dry_run_with_a_pilot_uses_its_reply_lengths(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = serve(SimJudge(seed=0))
    pilot = tmp_path / "pilot.jsonl"
    run(spec(attempts=1, items=1), pilot, client=fast_client(server))
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump({**spec(attempts=2, items=2), "endpoint": {"base_url": server.url,
                                                                              "api_key_env": "OPENAI_API_KEY"}}))
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), "--dry-run",
                                 "--pilot", str(pilot)])
    assert result.exit_code == 0, result.output
    assert "P2.1|gpt-4o-2024-08-06|t0.1 51 (pilot)" in result.output  # the simulator's score block: 51 tokens
