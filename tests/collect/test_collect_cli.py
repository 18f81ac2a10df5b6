import re

import yaml
from collect_helpers import MODEL, design
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.sim import Faults, SimJudge

runner = CliRunner()


def write_design(tmp_path, server, name="design.yaml", **kwargs):
    path = tmp_path / name
    kwargs["endpoint"] = {"base_url": server.url, "api_key_env": "OPENAI_API_KEY", **kwargs.get("endpoint", {})}
    path.write_text(yaml.safe_dump(design(**kwargs)))
    return path


def test_help_lists_collect_commands():
    result = runner.invoke(app, ["--help"])
    assert "collect" in result.output and "sim-server" in result.output
    result = runner.invoke(app, ["sim-server", "--help"])
    assert result.exit_code == 0 and "--fail-429" in result.output


def test_dry_run_then_run_then_resume(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = SimJudge(seed=0)
    server = serve(judge)
    path = write_design(tmp_path, server, attempts=2)
    log = tmp_path / "log.jsonl"
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dry run: 12 calls" in result.output and "nothing was sent" in result.output
    assert judge.stats["requests"] == 0 and not log.exists()
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--concurrency", "3"])
    assert result.exit_code == 0, result.output
    assert "12 attempts run, 0 already logged, of 12 planned; 0 flagged" in result.output
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--dry-run"])
    assert "dry run: 0 calls" in result.output
    result = runner.invoke(app, ["collect", str(path), "--log", str(log)])
    assert "0 attempts run, 12 already logged" in result.output
    assert len(hce.read_log(log)) == 12


def test_retry_failed_and_a_refused_setting_from_the_command_line(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = SimJudge(seed=0, faults=Faults(rate_500=0.4))
    server = serve(judge)
    path = write_design(tmp_path, server, attempts=2, endpoint={"max_retries": 0})
    log = tmp_path / "log.jsonl"
    result = runner.invoke(app, ["collect", str(path), "--log", str(log)])
    failed = int(hce.read_log(log)["error_message"].str.startswith("HTTP 500").sum())
    assert result.exit_code == 0 and failed > 0, result.output
    judge.faults = Faults()
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--dry-run", "--retry-failed"])
    assert f"dry run: {failed} calls" in result.output and not (tmp_path / "log.jsonl.retried.jsonl").exists()
    result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--retry-failed"])
    assert result.exit_code == 0 and f"{failed} attempts run, {12 - failed} already logged" in result.output
    assert f"({failed} failed calls sent again" in result.output and not hce.read_log(log)["error_flag"].any()
    # A setting every call is refused for stops the run with the API's reason (exit status 2).
    judge.faults = Faults(reject="Unsupported value: 'temperature' does not support 0.1 with this model.")
    refused = write_design(tmp_path, server, "refused.yaml", attempts=2, prompts=("P1.2",))
    result = runner.invoke(
        app, ["collect", str(refused), "--log", str(tmp_path / "r.jsonl"), "--max-same-errors", "3", "--concurrency", "2"]
    )
    assert result.exit_code == 2 and "the run stopped: 3 calls in a row" in result.output
    assert "does not support 0.1" in result.output and 3 <= len(hce.read_log(tmp_path / "r.jsonl")) < 3 + 2
    # An o-series model at another temperature fails before anything is sent.
    o3 = write_design(tmp_path, server, "o3.yaml", defaults={"model": "o3", "temperature": 0.1})
    result = runner.invoke(app, ["collect", str(o3), "--log", str(tmp_path / "o3.jsonl"), "--dry-run"])
    assert result.exit_code == 2 and "accepts only the default temperature (1)" in result.output


def test_bad_design_exits_2(tmp_path):
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump({"conditions": [{"prompt": "P9"}], "items": [{"id": "a", "text": "x"}]}))
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl")])
    assert result.exit_code == 2 and "prompt='P9' is not valid; choose one of" in result.output


def test_sim_server_command_serves_on_loopback():
    import json
    import re
    import signal
    import subprocess
    import sys
    import urllib.request

    command = [sys.executable, "-c", "from hce.cli import main; main()", "sim-server", "--port", "0", "--seed", "3"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
            models = [m["id"] for m in json.load(response)["data"]]
        assert "gpt-4.1-mini-2025-04-14" in models
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
    assert process.returncode == 0


def test_sim_server_rehearses_a_wrong_key_and_an_unknown_model_end_to_end(tmp_path, monkeypatch):
    # Issue 19: the simulator took any key and any model. Now `--api-key` and `--models` make it
    # refuse, and `hce collect` (the real client) stops at once with the reason, not the key.
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-c", "from hce.cli import main; main()", "sim-server", "--port", "0",
               "--api-key", "sk-sim-right", "--models", "m1, m2"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "models m1, m2 only; a key is required" in line
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        endpoint = {"base_url": url, "api_key_env": "SIM_KEY", "max_retries": 0}

        def collect(name, model, key):
            monkeypatch.setenv("SIM_KEY", key)
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump(design(attempts=5, endpoint=endpoint, defaults={"model": model, "price_model": MODEL})))
            log = tmp_path / f"{name}.jsonl"
            return runner.invoke(app, ["collect", str(path), "--log", str(log), "--concurrency", "2"]), log

        result, log = collect("unknown", "m3", "sk-sim-right")
        assert result.exit_code == 2 and "does not know model 'm3' (HTTP 404" in result.output, result.output
        assert "does not exist" in result.output and not log.exists() or hce.read_log(log).empty
        result, log = collect("wrong", "m1", "sk-sim-WRONG-9f2")
        output = " ".join(result.output.split())
        assert result.exit_code == 2 and "refused the API key (HTTP 401" in output and "sk-sim-WRONG-9f2" not in output
        assert "refused model" not in output and "set the right key" in output  # issue 34: the ending fits a 401
        result, log = collect("right", "m2", "sk-sim-right")
        assert result.exit_code == 0 and "30 attempts run" in result.output, result.output
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)


def test_cli_options_are_range_checked(tmp_path, serve):
    path = write_design(tmp_path, serve())
    log = str(tmp_path / "log.jsonl")
    for option, value, said in (("--concurrency", "0", "'--concurrency': Input should be greater than or equal to 1"),
                                ("--poll-interval", "0", "must be > 0, got 0"),
                                ("--max-same-errors", "-1", "'--max-same-errors': Input should be greater than or equal to 0"),
                                ("--base-url", "127.0.0.1:8000", "must be an http:// or https:// address")):
        result = runner.invoke(app, ["collect", str(path), "--log", log, option, value, "--dry-run"])
        flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # rich's error box, unwrapped
        assert result.exit_code == 2 and said in flat, (option, result.output)
    assert not (tmp_path / "log.jsonl").exists()
    for option, value in (("--fail-429", "1.5"), ("--latency", "-1"), ("--port", "70000")):
        result = runner.invoke(app, ["sim-server", option, value])
        assert result.exit_code == 2 and f"'{option}'" in result.output, (option, result.output)


def test_dry_run_shows_endpoint_model_settings_and_never_cuts_names(tmp_path, serve, monkeypatch):
    # Issue 19: the dry run cut names ("zeroshot…", "gpt-4o-mi…") and showed neither endpoint nor temperature.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = serve()
    spec = design(prompts=("P1.2",), attempts=4, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"},
                  defaults={"model": "gpt-4o-mini-2024-07-18", "temperature": 0.7, "max_tokens": 321})
    spec["conditions"] = [{"prompt": "P1.2", "id": "zeroshot-with-a-rather-long-descriptive-condition-name"},
                          {"prompt": "P2.1", "id": "o3-at-default", "model": "o3-2025-04-16", "temperature": None}]
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), "--dry-run"])
    assert result.exit_code == 0, result.output
    estimate = result.output.split("projected cost")[0]  # the estimate's table, before the projection's
    rows = [line for line in estimate.splitlines() if "zeroshot" in line or "o3-at-default" in line]
    first, second = rows
    for shown in ("zeroshot-with-a-rather-long-descriptive-condition-name", "gpt-4o-mini-2024-07-18",
                  f"default {server.url.removesuffix('/v1')}", " 0.7 ", " 321 ", " 12 "):
        assert shown in first, (shown, first)
    assert "o3-2025-04-16" in second and "not sent" in second and "…" not in result.output


def test_batch_only_for_endpoints_that_have_a_batch_api(tmp_path):
    spec = design(endpoint={"base_url": "https://api.anthropic.com/v1/", "api_key_env": "ANTHROPIC_API_KEY"},
                  defaults={"model": "claude-3-5-sonnet-20240620", "price_model": MODEL})
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), "--batch", "--dry-run"])
    assert result.exit_code == 2 and "endpoint 'default' (anthropic, https://api.anthropic.com) has no" in result.output


def test_new_settings_starts_a_changed_condition_afresh(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = SimJudge(seed=0)
    server = serve(judge)
    log = tmp_path / "log.jsonl"
    conditions = [{"prompt": "P1.2", "id": "zeroshot"}, {"prompt": "P2.1", "id": "kept"}]
    before = write_design(tmp_path, server, "before.yaml", attempts=2, defaults={"model": MODEL, "temperature": 0.7})
    spec = yaml.safe_load(before.read_text())
    spec["conditions"] = conditions
    before.write_text(yaml.safe_dump(spec))
    assert runner.invoke(app, ["collect", str(before), "--log", str(log)]).exit_code == 0
    spec["conditions"] = [{**conditions[0], "temperature": 1.0}, conditions[1]]
    after = tmp_path / "after.yaml"
    after.write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["collect", str(after), "--log", str(log)])
    assert result.exit_code == 2 and "run with --new-settings to move its old rows to log.jsonl.superseded.jsonl" in \
        " ".join(result.output.split())  # fmt: skip
    result = runner.invoke(app, ["collect", str(after), "--log", str(log), "--dry-run", "--new-settings"])
    assert result.exit_code == 0 and "dry run: 6 calls" in result.output, result.output
    result = runner.invoke(app, ["collect", str(after), "--log", str(log), "--new-settings"])
    assert result.exit_code == 0 and "6 attempts run, 6 already logged" in result.output, result.output
    assert "conditions 'zeroshot' started afresh with new settings" in " ".join(result.output.split())
    frame = hce.read_log(log)
    assert len(frame) == 12 and set(frame.loc[frame["condition_id"] == "zeroshot", "temperature"]) == {1.0}
    old = hce.read_log(tmp_path / "log.jsonl.superseded.jsonl")
    assert len(old) == 6 and set(old["temperature"]) == {0.7} and set(old["condition_id"]) == {"zeroshot"}
    assert runner.invoke(app, ["collect", str(after), "--log", str(log)]).exit_code == 0  # now it resumes


def test_a_keyless_local_endpoint_without_its_address_is_refused_before_the_plan(tmp_path, monkeypatch):
    # Issue 44: `needs_key: false` and no base_url resolved to api.openai.com, shown by the dry run without a word.
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(design(endpoint={"needs_key": False})))
    for extra in (["--dry-run"], []):
        result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), *extra])
        said = " ".join(result.output.split())
        assert result.exit_code == 2, said
        assert "endpoint 'default' has needs_key: false (a local server) but its calls would go to https://api.openai.com/v1" in said
        assert "to run:" not in said
    assert not (tmp_path / "log.jsonl").exists()
