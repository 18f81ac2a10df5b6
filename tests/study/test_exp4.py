"""Experiment 4 end to end against the simulated judge, whose reasoning styles are the known truth (issue 23)."""

import re
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from seeds import fast_and_other_seeds

import hce.study as st
from hce.sim.reasoning import style
from hce.errors import CollectError
from hce.stats import code_frequencies, cohen_kappa
from hce.study.claims import scorecard
from hce.study.report import StudyResults
from hce.study.report_exp4 import ReasoningCodes
from hce.study.sim_coders import expected_kappa, second_coder

DEMO = str(resources.files("hce.data").joinpath("demo_corpus.jsonl"))
MODELS = ["gpt-4o-2024-08-06", "o4-mini-2025-04-16", "o3-2025-04-16", "gpt-4.1-mini-2025-04-14"]


def _exp4_study(out, seed):
    return st.load_study({
        "output": str(out), "corpus": {"paths": [DEMO]}, "partition": {"n_a": 2, "n_b": 20},  # Set B: 20 transcripts
        "experiments": {
            "exp1": {"enabled": False}, "exp2": {"enabled": False}, "exp5": {"enabled": False},
            "exp3": {"prompt": "P2.3", "models": MODELS, "attempts": 2, "winner": {"on_no_winner": "lowest_sd"}},
            "exp4": {"n_transcripts": 20, "llm_coding": {"enabled": True}},
        },
        "simulation": {"seed": seed, "coders": {"enabled": True, "seed": seed}},
    })  # fmt: skip


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
def test_exp4_code_frequencies_recover_the_simulator_s_styles(tmp_path, seed):
    result = st.run_study(_exp4_study(tmp_path / "out", seed), simulate=True, until="exp4")
    folder = tmp_path / "out" / "exp4"
    codes = pd.read_csv(folder / "codes.csv")
    # 20 transcripts x 4 models x 5 categories, every segment coded by the simulated LLM through runner.run.
    assert len(codes) == 400 and set(codes["coder"]) == {"llm:gpt-4.1-2025-04-14"}
    scheme = st.reasoning.load_coding_scheme("prd")
    # Margin: each of the 60 shares (4 models x 15 codes, 100 segments each) gets its Wilson interval at
    # 1 - 0.01 / 60, so all 60 hold the true probability (hce.sim.reasoning) with >= 99% chance.
    freq = code_frequencies(codes, condition="model", codes=scheme.ids, confidence=1 - 0.01 / 60)
    truth = np.array([style(m)[d][c] for m, d, c in zip(freq["model"], freq["code"], freq["level"])])
    inside = (freq["ci_low"] <= truth) & (truth <= freq["ci_high"])
    assert len(freq) == 60 and inside.all(), freq[~inside]
    # The study's own tests (7.4.7): the styles differ, so every dimension's distribution differs by model.
    tests = result.analyses["exp4"]["tests"]
    assert len(tests) == 5 and (tests["p_adjusted"] < 0.05).all()
    # The LLM coder reads the codes exactly, so it agrees with the researcher who knows them.
    versus = pd.read_csv(folder / "kappa_llm_vs_human.csv")
    assert (versus["percent_agreement"] == 1).all() and np.allclose(versus["estimate"], 1, atol=1e-12)
    # Refinement rounds on the 3 ICR transcripts (60 segments): each round's kappa estimates the known one.
    # Margin 0.3: the SE of kappa on 60 segments is at most ~0.09 here (Wald intervals up to 0.45 wide), so
    # 0.3 is over 3 SE; the Wald SE itself cannot serve, being 0 when the coders happen to agree on all 60.
    rounds = pd.read_csv(folder / "kappa_rounds.csv")
    assert ((rounds["estimate"] - rounds["expected_kappa"]).abs() <= 0.3).all(), rounds
    assert rounds.groupby("round")["estimate"].mean().is_monotonic_increasing  # agreement 0.5, 0.8, 0.95
    by_round = rounds.groupby("round")["meets_target"].all()
    assert by_round.iloc[-1] or len(by_round) == 3
    assert not by_round.iloc[:-1].any()


def test_second_coder_kappa_matches_its_known_agreement():
    # Truth with unequal shares (0.6, 0.3, 0.1); coder 2 copies it with probability 0.8, else uniform.
    rng = np.random.default_rng(1)
    scheme = st.reasoning.load_coding_scheme("prd")
    dim = scheme.dimensions[1]  # rubric_alignment: 3 codes
    n = 20000
    truth = pd.DataFrame({"item_id": "t", "model": "m", "attempt_id": [f"a{i}" for i in range(n)], "criterion": "c",
                          "coder": "coder_1", **{d: dim.codes[0] for d in scheme.ids}})  # fmt: skip
    truth[dim.id] = rng.choice(dim.codes, size=n, p=[0.6, 0.3, 0.1])
    other = second_coder(truth, scheme, 0.8, rng)
    assert (other["coder"] == "coder_2").all()
    wide = pd.DataFrame({"a": truth[dim.id], "b": other[dim.id]})
    k = cohen_kappa(wide, rater=["a", "b"]).iloc[0]
    want = expected_kappa(truth[dim.id], dim.codes, 0.8)
    # By hand: a (1 - sum p^2) / (1 - a sum p^2 - (1 - a)/K), sum p^2 = 0.46: 0.432 / 0.5653 = 0.764.
    assert want == pytest.approx(0.8 * (1 - 0.46) / (1 - 0.8 * 0.46 - 0.2 / 3), abs=0.01)
    assert k["ci_low"] <= want <= k["ci_high"]  # SE ~0.005 at n = 20000


def _codes(transcripts):
    return pd.DataFrame([{"item_id": f"T{t}", "model": m, "attempt_id": f"T{t}{m}", "criterion": c}
                         for t in range(transcripts) for m in ("a", "b") for c in ("x", "y")])  # fmt: skip


def test_success_metric_4_reads_the_transcripts_coded():
    base = StudyResults(log=pd.DataFrame({"experiment_id": []}), experiments={}, simulated=True)
    def sm4(results):
        coded = results.reasoning.coded if results.reasoning else None
        return scorecard(results.experiments, log=results.log, coded=coded).set_index("id").loc["SM4"]

    assert sm4(base)["verdict"].startswith("not measurable")
    for n, verdict in ((15, "met"), (14, "not met")):
        base.reasoning = ReasoningCodes(_codes(n))
        row = sm4(base)
        assert (row["value"], row["verdict"]) == (f"{n} transcripts x 2 models coded ({n * 4} segments)", verdict)


def test_a_reasoning_model_asked_for_logprobs_is_refused_at_load():
    # Exp 5's model is the Exp 3 winner, which may be o3; without model_settings turning its logprobs off
    # every Exp 5 call would be a 400, so the study is refused before anything is sent.
    config = {"model_settings": {"o3-2025-04-16": {"temperature": None}},
              "experiments": {"exp3": {"models": ["gpt-4o-2024-08-06", "o3-2025-04-16"]}}}  # fmt: skip
    with pytest.raises(CollectError, match=r"experiments.exp5 \(model: winner.*'o3-2025-04-16'.*logprobs"):
        st.load_study(config)
    with pytest.raises(CollectError, match=r"experiments.exp5: model 'o4-mini'.*logprobs"):
        st.load_study({"model_settings": {"o4-mini": {"temperature": None}},
                       "experiments": {"exp3": {"models": ["gpt-4o", "gpt-4.1-mini"]}, "exp5": {"model": "o4-mini"}}})
    with pytest.raises(CollectError, match=r"experiments.exp5.logprobs_are must be one of"):
        st.load_study({"experiments": {"exp5": {"logprobs_are": "scaled"}}})
    st.load_study(config | {"model_settings": {"o3-2025-04-16": {"temperature": None, "logprobs": False}}})


def test_reasoning_codes_read_from_a_study_folder(tmp_path):
    # A folder with human codes only (no refinement rounds): the section shows the two researchers' kappa;
    # codes of a single model cannot be compared, and the section says so instead of failing.
    from hce.report.document import Report
    from hce.study.report_exp4 import reasoning_codes, reasoning_section

    assert reasoning_codes(tmp_path) is None
    (tmp_path / "exp4").mkdir()
    codes = _codes(3).assign(coder="coder_1", evidence_type=["direct_quote", "paraphrase"] * 6)
    codes.to_csv(tmp_path / "exp4" / "codes.csv", index=False)
    pd.DataFrame({"dimension": ["evidence_type"], "coder_a": ["coder_1"], "coder_b": ["coder_2"], "estimate": [0.8],
                  "ci_low": [0.6], "ci_high": [1.0], "n": [12], "percent_agreement": [0.9], "meets_target": [True]}
                 ).to_csv(tmp_path / "exp4" / "kappa.csv", index=False)  # fmt: skip
    data = reasoning_codes(tmp_path)
    assert data.failure is None and data.coded == {"transcripts": 3, "models": 2, "replies": 6, "segments": 12}
    freq = data.result["frequencies"]
    assert set(freq["model"]) == {"a", "b"} and freq["estimate"].between(0, 1).all()
    results = StudyResults(log=pd.DataFrame({"experiment_id": []}), experiments={}, simulated=False, reasoning=data)
    report = Report("t")
    reasoning_section(report, results, 0.95)
    text = report.to_markdown()
    assert "Table 3: Reasoning codes per model" in text and "Inter-coder reliability of the two researchers" in text
    assert re.search(r"\| \d+/\d+ \(\d+\.\d%\) \|", text)  # count/n (percent), never a bare share
    codes[codes["model"] == "a"].to_csv(tmp_path / "exp4" / "codes.csv", index=False)
    single = reasoning_codes(tmp_path)
    assert single.result is None and single.failure
    report = Report("t")
    reasoning_section(report, StudyResults(log=pd.DataFrame(), experiments={}, simulated=False, reasoning=single), 0.95)
    assert "The frequency tests could not be run" in report.to_markdown()
