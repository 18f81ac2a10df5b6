"""The simulated judge's reasoning styles (Experiment 4's truth) and its answers to the coding prompt."""

import random

import pandas as pd
import pytest
from seeds import fast_and_other_seeds

import hce
from hce.sim import reasoning as sim_reasoning
from hce.collect.design.prompts import render
from hce.sim import PRD_MODELS, SimJudge, detect_format
from hce.stats import code_frequencies
from hce.study import reasoning

RUBRIC = hce.load_rubric("v5")
SCHEME = reasoning.load_coding_scheme("prd")
TEXT = "Doctor: How are you today?\nPatient: Fine, thanks. My knee aches when I climb the stairs.\nDoctor: I see."


def test_styles_cover_the_prd_scheme_and_sum_to_one():
    assert list(sim_reasoning.DIMENSIONS) == SCHEME.ids
    for dim in SCHEME.dimensions:
        assert sim_reasoning.DIMENSIONS[dim.id] == dim.codes
    for style in [*sim_reasoning.REASONING_STYLES.values(), sim_reasoning.DEFAULT_STYLE]:
        for dim, probs in style.items():
            assert sum(probs.values()) == pytest.approx(1, abs=1e-12), dim


def test_every_code_combination_is_written_and_read_back():
    rng = random.Random(0)
    for _ in range(500):
        codes = {dim: rng.choice(levels) for dim, levels in sim_reasoning.DIMENSIONS.items()}
        # A quote holding other phrases is not read as them.
        text = sim_reasoning.segment_text(codes, category="Lexical Diversity", level=2, quote="Nothing more. Typical of patients.")
        assert sim_reasoning.read_codes(text) == codes


def test_the_coding_prompt_is_recognised_and_answered_in_the_parser_s_format():
    segments = {"clarity_of_language": "1. Clarity of Language\nReasoning: No evidence cited. Broadly about x. "
                "Typical of patients. Nothing more. Only one side noted.\nScore: 2", "lexical_diversity": None}
    messages = reasoning.coding_messages(segments, TEXT, SCHEME)
    assert detect_format(messages[0]["content"]) == "coding"
    reply = SimJudge(seed=0).respond("POST", "/v1/chat/completions", {"model": "gpt-4.1-2025-04-14", "messages": messages})
    codes, problems = reasoning.parse_codes(reply.body["choices"][0]["message"]["content"], SCHEME, ["clarity_of_language"])
    assert problems == []
    assert codes == {"clarity_of_language": {"evidence_type": "no_clear_evidence", "rubric_alignment": "loose_link",
                                             "specificity": "generic", "reasoning_depth": "superficial",
                                             "strengths_weaknesses": "focuses_on_one"}}


def _coded(seed: int, replies: int) -> pd.DataFrame:
    """CoT replies of each PRD model, segmented and coded through the simulator's coding answer."""
    judge = SimJudge(seed=seed)
    rows = []
    for model in PRD_MODELS:
        for k in range(replies):
            text = TEXT + f"\nDoctor: Visit {k}."  # a different item each time: a different draw
            body = {"model": model, "messages": render("P2.3", rubric=RUBRIC, transcript=text)}
            reply = judge.respond("POST", "/v1/chat/completions", body).body["choices"][0]["message"]["content"]
            segments = reasoning.segment_reasoning(reply)
            coding = {"model": "gpt-4.1-2025-04-14", "messages": reasoning.coding_messages(segments, text, SCHEME)}
            answer = judge.respond("POST", "/v1/chat/completions", coding).body["choices"][0]["message"]["content"]
            codes, problems = reasoning.parse_codes(answer, SCHEME, list(segments))
            assert not problems
            rows += [{"model": model, **dims} for dims in codes.values()]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
def test_code_frequencies_recover_each_model_s_style(seed):
    # 60 replies x 5 categories = 300 segments per model, each dimension drawn independently from the
    # model's style (hce.sim.reasoning.REASONING_STYLES). Margin: every share's Wilson interval
    # at 1 - 0.01 / (number of shares) holds the true probability, so all 60 hold with >= 99% chance.
    freq = code_frequencies(_coded(seed, 60), condition="model", codes=SCHEME.ids, confidence=1 - 0.01 / 60)
    assert len(freq) == 4 * 15 and (freq["n"] == 300).all()
    truth = [sim_reasoning.style(m)[d][c] for m, d, c in zip(freq["model"], freq["code"], freq["level"])]
    inside = (freq["ci_low"] <= truth) & (pd.Series(truth) <= freq["ci_high"])
    assert inside.all(), freq[~inside]
