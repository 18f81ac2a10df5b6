import json
import shutil
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import hce
from hce.cli import app
import hce.study as st
from hce.study.designs import condition
from hce.collect.call.client import CallResult
from hce.errors import CollectError
from hce.rubric import load_rubric
from hce.stats.result import AnalysisResult

DEMO = str(resources.files("hce.data").joinpath("demo_corpus.jsonl"))


def test_default_plan_counts_the_protocols_attempts():
    table = st.plan(st.load_study())
    judging = table[table["step"] == "judging"].groupby("experiment", sort=False)["calls"].sum()
    # Seed 000, 7.1.6 / 7.2.6 / 7.3.6 / 7.5.6: 50x2x50, 50x3x25, 50x4x20, 577x10.
    assert judging.to_dict() == {"EXP1_BaselineRubricUtility": 5000, "EXP2_PromptOptimization": 3750,
                                 "EXP3_ModelComparison": 4000, "EXP5_FinalToolValidation": 5770}  # fmt: skip
    generation = table[table["step"] == "generation"].iloc[0]
    assert (generation["calls"], generation["model"], generation["condition_id"]) == (50, "gpt-4.1-2025-04-14", "SYNTH|gpt-4.1-2025-04-14|t0.7")
    exp1 = table[(table["step"] == "judging") & (table["experiment"] == "EXP1_BaselineRubricUtility")]
    assert exp1["condition_id"].tolist() == ["P1.1|gpt-4.1-mini-2025-04-14|t0.3", "P1.2|gpt-4.1-mini-2025-04-14|t0.3"]
    exp3 = table[table["experiment"] == "EXP3_ModelComparison"]
    assert exp3["prompt_id"].unique().tolist() == ["P2.3"]  # assumed until Exp 2 decides
    # o-series models take no temperature (section 5's default cannot be sent to them).
    assert "P2.3|o3-2025-04-16" in exp3["condition_id"].tolist()
    assert table["cost_usd"].notna().all() and (table["input_tokens"] > 0).all()


def test_plan_with_a_corpus_uses_its_sets(tmp_path):
    study = st.load_study({"corpus": {"paths": [DEMO]}, "partition": {"n_a": 8, "n_b": 8},
                           "experiments": {"exp1": {"enabled": False}}})  # fmt: skip
    table = st.plan(study, st.load_corpus(study))
    assert table.groupby("experiment", sort=False)["calls"].sum().to_dict() == {
        "EXP2_PromptOptimization": 8 * 3 * 25, "EXP3_ModelComparison": 8 * 4 * 20, "EXP5_FinalToolValidation": 8 * 10}


def test_overrides_and_config_errors(tmp_path):
    study = st.load_study({"experiments": {"exp2": {"attempts": 5, "winner": {"alpha": 0.01}}}})
    assert study.exp("exp2")["attempts"] == 5 and study.exp("exp2")["winner"]["alpha"] == 0.01
    assert study.exp("exp3")["winner"]["alpha"] == 0.05  # the YAML anchor is not shared after merging
    with pytest.raises(CollectError, match=r"experiments.exp2.atempts: unknown key; did you mean 'attempts'\? \(valid here: attempts, enabled"):
        st.load_study({"experiments": {"exp2": {"atempts": 5}}})
    with pytest.raises(CollectError, match="never holds an API key"):
        st.load_study({"endpoint": {"api_key": "sk-x"}})
    with pytest.raises(CollectError, match="must list judging prompts"):
        st.load_study({"experiments": {"exp2": {"prompts": ["P2.9"]}}})
    with pytest.raises(CollectError, match="Exp 2 is disabled, so experiments.exp3.prompt must name a prompt"):
        st.load_study({"experiments": {"exp2": {"enabled": False}}})
    st.load_study({"experiments": {"exp2": {"enabled": False}, "exp3": {"prompt": "P2.1"}, "exp5": {"prompt": "P2.1"}}})
    path = tmp_path / "study.yaml"
    path.write_text("experiments:\n  exp5: {attempts: 0}\n")
    with pytest.raises(CollectError, match="experiments.exp5.attempts must be a whole number >= 1"):
        st.load_study(path)
    with pytest.raises(CollectError, match="corpus.paths is empty"):
        st.run_study({"output": str(tmp_path / "out")})


def _result(winner_flags, friedman_p=0.001):
    table = pd.DataFrame({"prompt_id": ["P2.3", "P2.1", "P2.2"], "median_sd": [0.5, 0.9, 1.0], "winner": winner_flags})
    return AnalysisResult(
        title="EXP2_PromptOptimization",
        tables={"winner": table, "friedman": pd.DataFrame({"p_value": [friedman_p]}),
                "posthoc": pd.DataFrame({"a": ["P2.1"], "b": ["P2.3"], "p_adjusted": [0.01]})},
        notes=["no winner: Friedman p = 0.3 >= 0.05; 'P2.3' has the lowest median SD but no significant difference"],
    )  # fmt: skip


def test_winner_rule_pin_fallback_and_stop():
    rule = dict(st.load_study().exp("exp2")["winner"])
    won = st.choose_winner(_result([True, False, False]), kind="prompt", column="prompt_id", rule=rule)
    assert (won["choice"], won["source"]) == ("P2.3", "rule")
    assert won["evidence"]["conditions"][0]["median_sd"] == 0.5 and "Friedman p < 0.05" in won["rule"]
    with pytest.raises(st.StudyStop, match="no winner: Friedman p = 0.3 .* Pin a prompt"):
        st.choose_winner(_result([False, False, False]), kind="prompt", column="prompt_id", rule=rule)
    fallback = st.choose_winner(_result([False] * 3), kind="prompt", column="prompt_id", rule={**rule, "on_no_winner": "lowest_sd"})
    assert (fallback["choice"], fallback["source"]) == ("P2.3", "lowest_sd_fallback")
    pinned = st.choose_winner(_result([True, False, False]), kind="prompt", column="prompt_id", rule={**rule, "pin": "P2.2"})
    assert (pinned["choice"], pinned["source"]) == ("P2.2", "pinned")


def _demo_config(out):
    return {
        "output": str(out),
        "corpus": {"paths": [DEMO]},
        "partition": {"n_a": 10, "n_b": 8},  # Set C: 6
        "defaults": {"temperature": 1.0},  # the simulated judge's spread shows at temperature 1
        "model_settings": {"o4-mini": {"logprobs": False}},  # a reasoning model answers logprobs with a 400
        "experiments": {
            "exp1": {"synthetic": {"n": 6, "model": "gpt-4.1"}, "attempts": 4},
            # The simulated judge's CoT advantage is small (noise x 0.85): a 10-transcript Set A
            # may not show it significantly, so the lowest-SD prompt is taken and recorded as such.
            "exp2": {"attempts": 10, "winner": {"on_no_winner": "lowest_sd"}},
            "exp3": {"models": ["gpt-4o", "o4-mini", "gpt-4.1-mini"], "attempts": 6},
            "exp4": {"n_transcripts": 5},
            "exp5": {"attempts": 4},
        },
        "simulation": {"profiles": {"gpt-4o": {"noise": 0.4}, "o4-mini": {"bias": 0.3, "noise": 1.0},
                                    "gpt-4.1-mini": {"bias": -0.2, "noise": 1.0}}},  # fmt: skip
    }


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The reduced study (demo corpus, simulated judge) run once for this module."""
    folder = tmp_path_factory.mktemp("study")
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(_demo_config(folder / "out")))
    return path, st.run_study(path, simulate=True)


def test_study_runs_end_to_end_against_the_simulated_judge(demo_run):
    path, result = demo_run
    out = path.parent / "out"
    # The winning prompt (Exp 2) feeds Exp 3; the winning model (Exp 3) and prompt feed Exp 5.
    decisions = json.loads((out / "decisions.json").read_text())
    prompt = decisions["prompt"]["choice"]
    assert decisions["prompt"]["source"] in ("rule", "lowest_sd_fallback")
    by_sd = sorted(decisions["prompt"]["evidence"]["conditions"], key=lambda c: (c["median_sd"], c["mean_sd"]))
    assert prompt == by_sd[0]["prompt_id"]  # the lowest median SD
    # The models differ clearly (simulated noise 0.4 vs 1.0): the rule itself picks the model.
    assert decisions["model"]["choice"] == "gpt-4o" and decisions["model"]["source"] == "rule"
    assert decisions["model"]["evidence"]["friedman"][0]["p_value"] < 0.05
    exp3 = hce.read_log(out / "exp3.jsonl")
    assert set(exp3["prompt_id"]) == {prompt} and set(exp3["model"]) == {"gpt-4o", "o4-mini", "gpt-4.1-mini"}
    exp5 = hce.read_log(out / "exp5.jsonl")
    assert set(exp5["prompt_id"]) == {prompt} and set(exp5["model"]) == {"gpt-4o"} and len(exp5) == 6 * 4
    assert exp5["logprobs"].notna().all()
    # Exp 5's uncertainty input: the mean probability the judge's logprobs gave its category scores.
    confidence = pd.read_csv(out / "exp5_confidence.csv")["confidence"]
    assert len(confidence) == 24 and confidence.between(0, 1).all()
    assert "uncertainty" in result.analyses["exp5"]
    # The partition: Set A judged in Exp 2, Set B in Exp 3, Set C in Exp 5, disjoint.
    sets = json.loads((out / "partition.json").read_text())["sets"]
    assert set(hce.read_log(out / "exp2.jsonl")["item_id"]) == set(sets["A"])
    assert set(exp3["item_id"]) == set(sets["B"]) and set(exp5["item_id"]) == set(sets["C"])
    # Exp 1: synthetic transcripts with their targets, judged with P1.1 and P1.2.
    synth = pd.read_json(out / "synthetic_corpus.jsonl", lines=True)
    assert len(synth) == 6 and synth["target_total"].between(5, 20).all()
    exp1 = hce.read_log(out / "exp1.jsonl")
    assert len(exp1) == 6 * 2 * 4 and set(exp1["target_total"]) <= set(synth["target_total"])
    assert (out / "analysis" / "exp1" / "hypotheses.csv").is_file()
    # Exp 4: selection, segments and the coding sheet (no codes yet: the run says so).
    selection = pd.read_csv(out / "exp4" / "selection.csv")
    assert len(selection) == 5 and set(selection["item_id"]) <= set(sets["B"])
    assert pd.read_csv(out / "exp4" / "segments.csv")["segment_found"].all()
    assert any("coding sheet written" in m for m in result.messages)
    # Resuming sends nothing new.
    again = st.run_study(path, simulate=True, until="exp3")
    assert {k: (s.done, s.skipped) for k, s in again.summaries.items()} == {
        "exp1": (0, 48), "exp2": (0, 300), "exp3": (0, 144)}
    status = st.status(st.load_study(path)).set_index("experiment")
    assert status.loc["EXP3_ModelComparison", "decision"] == "model gpt-4o (rule)"
    assert status.loc["EXP5_FinalToolValidation", "attempts_logged"] == 24


def test_human_codes_give_kappa_and_code_tests(demo_run, tmp_path):
    path, _ = demo_run
    shutil.copytree(path.parent / "out", tmp_path / "out")
    sheet = pd.read_csv(tmp_path / "out" / "exp4" / "coding_template.csv")
    scheme = st.reasoning.load_coding_scheme()
    second = (sheet["coder"] == "coder_2").to_numpy()
    for dim in scheme.dimensions:
        cycle = [dim.codes[i % len(dim.codes)] for i in range(len(sheet))]
        # coder_2 agrees except on every fourth segment, where it takes the next code.
        shifted = [dim.codes[(i + 1) % len(dim.codes)] if i % 4 == 0 else cycle[i] for i in range(len(sheet))]
        sheet[dim.id] = [s if two else c for c, s, two in zip(cycle, shifted, second)]
    sheet.to_csv(tmp_path / "codes.csv", index=False)
    config = _demo_config(tmp_path / "out")
    config["experiments"]["exp4"]["human_codes"] = str(tmp_path / "codes.csv")
    study = st.load_study(config)
    result = st.run_study(study, simulate=True, until="exp4")
    kappa = pd.read_csv(tmp_path / "out" / "exp4" / "kappa.csv")
    assert kappa["dimension"].tolist() == scheme.ids and kappa["n"].gt(0).all()
    assert kappa["coder_a"].unique().tolist() == ["coder_1"]
    tests = result.analyses["exp4"]["tests"]
    assert len(tests) == len(scheme.ids)


def test_pinned_model_reaches_exp5_and_old_attempts_stay_out(demo_run, tmp_path):
    path, _ = demo_run
    shutil.copytree(path.parent / "out", tmp_path / "out")
    config = _demo_config(tmp_path / "out")
    config["experiments"]["exp3"]["winner"] = {"pin": "o4-mini"}
    config["experiments"]["exp4"]["enabled"] = False
    result = st.run_study(st.load_study(config), simulate=True)
    decisions = json.loads((tmp_path / "out" / "decisions.json").read_text())
    assert (decisions["model"]["choice"], decisions["model"]["source"]) == ("o4-mini", "pinned")
    assert decisions["model"]["evidence"]["conditions"][0]["model"] == "gpt-4o"  # the rule's pick, kept as evidence
    assert (result.summaries["exp3"].done, result.summaries["exp5"].done) == (0, 24)
    exp5 = hce.read_log(tmp_path / "out" / "exp5.jsonl")
    assert exp5.groupby("model").size().to_dict() == {"gpt-4o": 24, "o4-mini": 24}
    assert result.analyses["exp5"]["attempts"]["n_attempts"].iloc[0] == 24
    assert any("24 logged attempt(s) of another configuration left out" in m for m in result.messages)


class _CodingClient:
    """Stands in for JudgeClient: answers every coding request with valid codes."""

    def __init__(self, **kwargs):
        self.calls = 0

    async def complete(self, messages, **kwargs):
        scheme = st.reasoning.load_coding_scheme()
        content = messages[0]["content"]
        criteria = [c for c in hce.load_rubric("v5").criteria if f"[{c}]" in content]
        self.calls += 1
        codes = {c: {d.id: d.codes[(k + self.calls) % len(d.codes)] for k, d in enumerate(scheme.dimensions)} for c in criteria}
        return CallResult(response_text=json.dumps(codes), finish_reason="stop", model_version="gpt-4.1-2025-04-14",
                          input_tokens=1000, output_tokens=200, cached_tokens=0, latency_s=0.01)

    async def aclose(self):
        pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()


def test_llm_coding_through_the_client(demo_run, tmp_path, monkeypatch):
    path, _ = demo_run
    shutil.copytree(path.parent / "out", tmp_path / "out")
    monkeypatch.setattr("hce.collect.call.endpoints.JudgeClient", _CodingClient)  # Exp 4's coding goes through runner.run
    config = _demo_config(tmp_path / "out")
    config["experiments"]["exp4"]["llm_coding"] = {"enabled": True, "model": "gpt-4.1"}
    result = st.run_study(st.load_study(config), simulate=True, until="exp4")
    log = hce.read_log(tmp_path / "out" / "exp4_llm_coding.jsonl")
    assert len(log) == 5 * 3 and not log["error_flag"].any()  # 5 transcripts x 3 models, one call each
    assert log["cost_usd"].gt(0).all() and set(log["prompt_id"]) == {"CODE"}
    codes = pd.read_csv(tmp_path / "out" / "exp4" / "llm_codes.csv")
    assert len(codes) == 5 * 3 * 5 and set(codes["coder"]) == {"llm:gpt-4.1"} and codes["evidence_type"].notna().all()
    assert "llm:gpt-4.1" in result.analyses["exp4"].notes[-1]


def test_cli_init_plan_run_status(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["study", "plan", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = runner.invoke(app, ["study", "init", str(tmp_path / "s"), "--demo"])
    assert result.exit_code == 0 and (tmp_path / "s" / "demo_corpus.jsonl").is_file()
    result = runner.invoke(app, ["study", "plan", str(tmp_path / "s" / "study.yaml")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "nothing was sent" in result.output and "EXP2" in result.output
    result = runner.invoke(app, ["study", "status", str(tmp_path / "s" / "study.yaml")], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "EXP5_FinalToolValidation" in result.output


def test_logprob_confidence_by_hand():
    import math

    entry = {"token": "15", "logprob": math.log(0.6),
             "top_logprobs": [{"token": "15", "logprob": math.log(0.6)}, {"token": "14", "logprob": math.log(0.3)},
                              {"token": "fifteen", "logprob": math.log(0.1)}]}  # fmt: skip
    log = pd.DataFrame({"response_text": ["15", "15"], "logprobs": [json.dumps([entry]), None],
                        "prompt_id": ["P1.1", "P1.1"], "error_flag": [False, False]})  # fmt: skip
    # Renormalised over the valid totals 5-20: 0.6 / (0.6 + 0.3) = 2/3; no logprobs -> missing.
    confidence = st.logprob_confidence(log)
    assert confidence.iloc[0] == pytest.approx(2 / 3, rel=1e-12) and np.isnan(confidence.iloc[1])


def test_logprob_confidence_of_a_score_block_by_hand():
    # P2.1: five category lines, then the total (14, not a category score, so passed over).
    # Category k's token has p(chosen) = p_k among 1-4 plus 0.1 on a non-score token "x":
    # renormalised over 1-4, p_k / 0.9. The confidence is the mean over the five categories.
    import math

    chosen = [0.6, 0.5, 0.8, 0.4, 0.7]
    tokens = []
    for name, p in zip(load_rubric("v5").criteria, chosen, strict=True):
        tokens.append({"token": f"{name}: ", "logprob": 0.0, "top_logprobs": []})
        tokens.append({"token": "3", "logprob": math.log(p), "top_logprobs": [
            {"token": "3", "logprob": math.log(p)}, {"token": "2", "logprob": math.log(0.9 - p)},
            {"token": "x", "logprob": math.log(0.1)}]})
    tokens += [{"token": "Total Score: ", "logprob": 0.0, "top_logprobs": []},
               {"token": "14", "logprob": math.log(0.5), "top_logprobs": [{"token": "14", "logprob": math.log(0.5)}]}]
    log = pd.DataFrame({"logprobs": [json.dumps(tokens)] * 2, "prompt_id": ["P2.1", "P2.1"], "error_flag": [False, True]})
    confidence = st.logprob_confidence(log)
    assert confidence.iloc[0] == pytest.approx(np.mean(chosen) / 0.9, rel=1e-12) and np.isnan(confidence.iloc[1])


def test_model_settings_apply_to_an_alias_and_o_series_temperature_is_refused():
    # model_settings keyed by the dated snapshot also serve its alias (and the reverse), so
    # "o4-mini" gets temperature null like "o4-mini-2025-04-16"; a study that still sends
    # o4-mini a temperature fails before any call, naming the condition.
    study = st.load_study(None)
    alias = condition(study, "P2.1", "o4-mini")
    assert alias.temperature is None and alias.logprobs is False
    study.config["model_settings"] = {"o4-mini": {"temperature": None}}
    assert condition(study, "P2.1", "o4-mini-2025-04-16").temperature is None
    study.config["model_settings"] = {}
    with pytest.raises(CollectError, match=r"P2.1\|o4-mini\|t0.1.*reasoning model"):
        condition(study, "P2.1", "o4-mini")


def test_study_reads_only_the_variable_its_endpoint_names(tmp_path, monkeypatch):
    # Issue 19: `hce study` fell back to OPENAI_API_KEY for any endpoint.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-study")
    monkeypatch.delenv("COLLEAGUE_VLLM_KEY", raising=False)
    only_exp1 = {f"exp{i}": {"enabled": False} for i in range(2, 6)}
    local = {"output": str(tmp_path / "out"), "experiments": only_exp1,
             "endpoint": {"base_url": "http://127.0.0.1:9/v1"}}  # fmt: skip
    with pytest.raises(CollectError, match="names no api_key_env") as caught:
        st.run_study(local)
    assert "sk-PLANTED" not in str(caught.value)
    local["endpoint"]["api_key_env"] = "COLLEAGUE_VLLM_KEY"
    with pytest.raises(CollectError, match="endpoint 'study' .* COLLEAGUE_VLLM_KEY .* not set"):
        st.run_study(local)
    assert not (tmp_path / "out" / "exp1_generation.jsonl").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"endpoint": {"base_ulr": "http://127.0.0.1:9/v1"}}, r"endpoint.base_ulr: unknown key; did you mean 'base_url'\?"),
        ({"run": {"requests_per_minut": 30}}, r"run.requests_per_minut: unknown key; did you mean 'requests_per_minute'\?"),
        ({"defaults": {"temprature": 0.9}}, r"defaults.temprature: unknown key; did you mean 'temperature'\?"),
        ({"defaults": {"temperature": 7}}, r"defaults.temperature: must be <= 2, got 7"),
        ({"defaults": {"max_tokens": -5}}, r"defaults.max_tokens: must be >= 1, got -5"),
        ({"run": {"requests_per_minute": -5}}, r"run.requests_per_minute: must be > 0, got -5"),
        ({"run": {"concurrency": 0}}, r"run.concurrency: must be >= 1, got 0"),
        ({"endpoint": {"timeout": 0}}, r"endpoint.timeout: must be > 0, got 0"),
        ({"experiments": {"exp1": {"temperature": "0,7"}}}, r"experiments.exp1.temperature: must be a number, got '0,7' \(a decimal comma"),
        ({"experiments": {"exp4": {"llm_coding": {"max_tokens": 0}}}}, r"experiments.exp4.llm_coding.max_tokens: must be >= 1"),
        ({"model_settings": {"o3": {"temprature": None}}}, r"model_settings.o3.temprature: unknown key; did you mean 'temperature'\?"),
    ],
)
def test_every_study_setting_is_checked(change, message):
    with pytest.raises(CollectError, match=message):
        st.load_study(change)
