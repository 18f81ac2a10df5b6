"""Judges from several providers in one design (issue 19): each key and each call goes only to its own endpoint."""

import pytest
import yaml
from collect_helpers import TRANSCRIPTS, design
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.collect.call.providers import infer_kind, unsupported
from hce.collect.running.runner import run
from hce.sim import Profile, SimJudge


class RecordingJudge(SimJudge):
    """A simulated judge that remembers the model of every completion asked of it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.asked = []

    def _chat(self, body, request_id=None):
        self.asked.append(body.get("model") if isinstance(body, dict) else None)
        return super()._chat(body, request_id)


# Three providers, as Experiment 3 of seed 000 compares them (7.3.4); simulated on loopback.
PROVIDERS = {
    "openai": ("OPENAI_TEST_KEY", "sk-openai-PLANTED-1", "gpt-4.1-mini-2025-04-14"),
    "anthropic": ("ANTHROPIC_TEST_KEY", "sk-ant-PLANTED-2", "claude-3-5-sonnet-20240620"),
    "gemini": ("GEMINI_TEST_KEY", "gem-PLANTED-3", "gemini-1.5-pro-latest"),
}


@pytest.fixture
def three(serve, monkeypatch):
    servers = {}
    for name, (variable, key, model) in PROVIDERS.items():
        monkeypatch.setenv(variable, key)
        judge = RecordingJudge(seed=len(name), models=[model], profiles={model: Profile(0.3 * len(servers), 0.8)})
        servers[name] = serve(judge, api_key=key)
    spec = design(prompts=(), attempts=3)
    # The stated kind stands for the real host each loopback server plays.
    spec["endpoints"] = {name: {"base_url": servers[name].url, "api_key_env": variable, "kind": name, "concurrency": 2}
                         for name, (variable, _, _) in PROVIDERS.items()}  # fmt: skip
    spec["defaults"] = {"temperature": 0.5, "max_tokens": 1000, "price_model": "gpt-4o-2024-08-06"}
    spec["conditions"] = [{"id": f"P1.2|{name}", "prompt": "P1.2", "endpoint": name, "model": model}
                          for name, (_, _, model) in PROVIDERS.items()]  # fmt: skip
    return servers, spec


def test_three_endpoints_each_receive_only_their_own_key_and_calls(three, tmp_path):
    servers, spec = three
    log = tmp_path / "three.jsonl"
    summary = run(spec, log, concurrency=6)
    assert summary.done == 27 and summary.errors == 0
    for name, (_, key, model) in PROVIDERS.items():
        server = servers[name]
        # What each server received: only its own key, only its own conditions' model, all 9 of its calls.
        assert dict(server.keys_seen) == {key: 9}, name
        assert server.judge.asked == [model] * 9, name
    frame = hce.read_log(log)
    by = frame.groupby("condition_id")[["endpoint", "model"]].agg(lambda s: sorted(set(s)))
    assert by.to_dict("index") == {f"P1.2|{n}": {"endpoint": [n], "model": [m]} for n, (_, _, m) in PROVIDERS.items()}
    # The models side by side: one column of mean totals per model.
    side = frame.pivot_table(index="item_id", columns="model", values="total", aggfunc="mean")
    assert sorted(side.columns) == sorted(m for _, _, m in PROVIDERS.values()) and list(side.index) == sorted(TRANSCRIPTS)


def test_a_missing_key_of_one_endpoint_stops_before_any_server_is_called(three, tmp_path, monkeypatch):
    servers, spec = three
    monkeypatch.delenv("GEMINI_TEST_KEY")
    with pytest.raises(hce.HceError, match=r"endpoint 'gemini' \(http://127.0.0.1:\d+/v1\): the environment variable "
                                           "GEMINI_TEST_KEY that should hold its API key is not set"):
        run(spec, tmp_path / "none.jsonl")
    assert all(not s.keys_seen for s in servers.values()) and not (tmp_path / "none.jsonl").exists()


def test_three_endpoint_design_from_the_command_line_with_report(three, tmp_path):
    servers, spec = three
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "three.jsonl"
    cli = CliRunner()
    result = cli.invoke(app, ["collect", str(path), "--log", str(log), "--dry-run"])
    assert result.exit_code == 0 and all(f"{name} {servers[name].url.removesuffix('/v1')}" in result.output
                                         for name in PROVIDERS), result.output  # fmt: skip
    result = cli.invoke(app, ["collect", str(path), "--log", str(log)])
    assert result.exit_code == 0 and "27 attempts run" in result.output, result.output
    # --base-url would send every provider's calls (and one key) to one place: refused.
    result = cli.invoke(app, ["collect", str(path), "--log", str(log), "--base-url", servers["openai"].url])
    assert result.exit_code == 2 and "sends calls to 3 endpoints" in result.output
    result = cli.invoke(app, ["report", str(log), "--out", str(tmp_path / "report")])
    # Exit 1 when a section could not be computed (with 9 ratings a condition may score one
    # criterion identically, leaving its ICC undefined); the report is written either way.
    assert result.exit_code == 0 or (result.exit_code == 1 and "were not reported" in result.output), result.output
    text = (tmp_path / "report" / "report.md").read_text()
    assert all(model in text for _, _, model in PROVIDERS.values())


def test_provider_kinds_from_hosts_and_their_rules():
    assert [infer_kind(u) for u in ("https://api.openai.com/v1", "https://x.openai.azure.com/openai/v1/",
                                    "https://generativelanguage.googleapis.com/v1beta/openai/",
                                    "http://localhost:11434/v1", "https://vllm.example.org/v1")] == \
        ["openai", "azure", "gemini", "local", "other"]  # fmt: skip
    assert unsupported("anthropic", temperature=1.0, logprobs=False, seed=None) == []
    assert unsupported("openai", temperature=2.0, logprobs=True, seed=1) == []
    assert unsupported("anthropic", temperature=None, logprobs=False, seed=5)[0].startswith("seed is ignored by anthropic")
