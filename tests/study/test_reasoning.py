import json

import numpy as np
import pandas as pd
import pytest

from hce.study.reasoning import (
    coding_messages,
    coding_template,
    intercoder_agreement,
    load_coding_scheme,
    parse_codes,
    read_codes,
    reasoning_segments,
    segment_reasoning,
    select_diverse,
)
from hce.errors import DataError

COT = """Step-by-step Analysis and Scoring:

**1. Clarity of Language**
The patient says "I walk 3-4 times a week", which is clear.
Score: 3

**2. Lexical Diversity**
Plain, repetitive words ("good", "good").
Score: 2

Category 3: Conciseness and Completeness - gives duration and triggers.
Score: 4

### Engagement with Health Information
Asks whether to add strength training.
Score: 4

5) Health Literacy Indicator: uses "LDL" correctly.
Score: 4

Final Scores Output:
Clarity of Language: 3
Lexical Diversity: 2
Conciseness and Completeness: 4
Engagement with Health Information: 4
Health Literacy Indicator: 4
Total Score: 17"""


def test_segments_follow_headings_in_rubric_order():
    seg = segment_reasoning(COT)
    assert seg["clarity_of_language"].startswith("**1. Clarity of Language**") and seg["clarity_of_language"].endswith("Score: 3")
    assert seg["lexical_diversity"] == '**2. Lexical Diversity**\nPlain, repetitive words ("good", "good").\nScore: 2'
    assert seg["conciseness_and_completeness"].startswith("Category 3: Conciseness")
    assert seg["engagement_with_health_information"].startswith("### Engagement")
    # The last segment stops at the final score block.
    assert seg["health_literacy_indicator"] == '5) Health Literacy Indicator: uses "LDL" correctly.\nScore: 4'
    missing = segment_reasoning("1. Clarity of Language\nfine\n\nFinal Scores Output:\nClarity of Language: 3")
    assert missing["clarity_of_language"] == "1. Clarity of Language\nfine" and missing["lexical_diversity"] is None
    assert all(v is None for v in segment_reasoning(None).values())


def test_scheme_is_the_protocols_five_dimensions():
    scheme = load_coding_scheme()
    assert [d.name for d in scheme.dimensions] == [
        "Evidence Type", "Rubric Alignment", "Specificity of Reasoning", "Reasoning Depth",
        "Identification of Strengths/Weaknesses",
    ]
    assert [len(d.codes) for d in scheme.dimensions] == [4, 3, 2, 3, 3]
    with pytest.raises(DataError, match="at least two 'levels'"):
        load_coding_scheme({"dimensions": [{"id": "x", "levels": [{"code": "a"}]}]})


def _log(n_items=20, models=("m1", "m2"), attempts=4):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_items):
        for m in models:
            for a in range(1, attempts + 1):
                rows.append({"item_id": f"T{i:02d}", "model": m, "attempt": a, "attempt_id": f"T{i:02d}{m}{a}",
                             "total": float(5 + i % 15 + rng.integers(0, 1 + i % 3)), "error_flag": a == 1 and i == 0,
                             "response_text": COT})  # fmt: skip
    return pd.DataFrame(rows)


def test_select_diverse_spreads_and_is_deterministic():
    log = _log()
    corpus = pd.DataFrame({"transcript_id": [f"T{i:02d}" for i in range(20)], "n_words": [100 + 37 * ((i * 7) % 20) for i in range(20)]})
    picks = select_diverse(log, corpus, n=15)
    assert len(picks) == 15 and picks["item_id"].is_unique
    assert picks.equals(select_diverse(log.sample(frac=1, random_state=1), corpus, n=15))
    # Farthest-point picks reach both ends of every feature.
    everyone = select_diverse(log, corpus, n=20)
    for col in ("sd", "length", "quality"):
        assert picks[col].min() == everyone[col].min() and picks[col].max() == everyone[col].max()
    assert picks["role"].value_counts().to_dict() == {"coding": 7, "scheme_draft": 5, "icr": 3}
    with pytest.raises(DataError, match="cannot select 25"):
        select_diverse(log, corpus, n=25)


def test_segments_template_codes_and_kappa(tmp_path):
    log = _log(n_items=2)
    segments = reasoning_segments(log, attempt=1)
    # T00 attempt 1 errored: its next valid attempt is used instead.
    assert segments.groupby(["item_id", "model"])["attempt"].first().to_dict() == {
        ("T00", "m1"): 2, ("T00", "m2"): 2, ("T01", "m1"): 1, ("T01", "m2"): 1}
    assert len(segments) == 4 * 5 and segments["segment_found"].all()
    scheme = load_coding_scheme()
    sheet = coding_template(segments, scheme)
    assert len(sheet) == 40 and set(sheet["coder"]) == {"coder_1", "coder_2"}
    # Two coders, 10 segments, specificity: S S S S S S G G G G vs S S S S G G G G G S.
    # Cross-table: SS 4, SG 2, GG 3, GS 1 -> po = 0.7; margins 6/4 and 5/5 -> pe = 0.6*0.5 + 0.4*0.5 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4 (computed by hand).
    first = sheet[sheet["coder"] == "coder_1"].head(10).index
    second = sheet[sheet["coder"] == "coder_2"].head(10).index
    sheet.loc[first, "specificity"] = ["specific"] * 6 + ["Generic statement"] * 4  # labels are accepted too
    sheet.loc[second, "specificity"] = ["SPECIFIC"] * 4 + ["generic"] * 5 + ["specific"]
    sheet.loc[first, "reasoning_depth"] = ["superficial", "moderate"] * 5
    sheet.loc[second, "reasoning_depth"] = ["superficial", "moderate"] * 5
    path = tmp_path / "codes.csv"
    sheet.to_csv(path, index=False)
    codes = read_codes(path, scheme)
    assert codes.loc[first[6], "specificity"] == "generic"
    kappa = intercoder_agreement(codes, scheme).set_index("dimension")
    assert kappa.loc["specificity", "estimate"] == pytest.approx(0.4, rel=1e-12)
    assert kappa.loc["specificity", "percent_agreement"] == pytest.approx(0.7)
    assert not kappa.loc["specificity", "meets_target"]
    assert kappa.loc["reasoning_depth", "estimate"] == pytest.approx(1.0) and kappa.loc["reasoning_depth", "meets_target"]
    assert np.isnan(kappa.loc["evidence_type", "estimate"]) and kappa.loc["evidence_type", "n"] == 0
    sheet.loc[first[0], "evidence_type"] = "quote"
    sheet.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"row 2, column 'evidence_type': 'quote' is not a code of Evidence Type; valid: \['direct_quote'"):
        read_codes(path, scheme)
    with pytest.raises(DataError, match="exactly two coders"):
        intercoder_agreement(codes.assign(coder="one"), scheme)


def test_llm_coding_prompt_and_parser():
    scheme = load_coding_scheme()
    segments = segment_reasoning(COT)
    messages = coding_messages(segments, "Doctor: Hi.\nPatient: Hello.", scheme)
    content = messages[0]["content"]
    assert "[lexical_diversity] Lexical Diversity:" in content and "direct_quote: Direct Quote." in content
    reply = {c: {"evidence_type": "direct_quote", "rubric_alignment": "Clear link to rubric definition",
                 "specificity": "specific", "reasoning_depth": "moderate", "strengths_weaknesses": "balanced"}
             for c in segments}  # fmt: skip
    reply["lexical_diversity"]["reasoning_depth"] = "deep"
    codes, problems = parse_codes("```json\n" + json.dumps(reply) + "\n```", scheme, list(segments))
    assert codes["clarity_of_language"]["rubric_alignment"] == "clear_link"
    assert codes["lexical_diversity"]["reasoning_depth"] is None
    assert problems == ["lexical_diversity.reasoning_depth: 'deep' is not one of ['superficial', 'moderate', 'in_depth']"]
    # One JSON reader (hce.collect.call.parse.json_object) for codes and verdicts, with one wording.
    assert parse_codes("not json", scheme, ["x"])[1][0].startswith("reply is not a single JSON object")
    # Prose around the fenced block, as models write it, does not lose the codes.
    prose = "Here are the codes:\n```json\n" + json.dumps(reply) + "\n```\nLet me know if you need more."
    assert parse_codes(prose, scheme, list(segments)) == (codes, problems)


def test_the_kappa_target_is_judged_on_the_interval_not_the_point():
    # Issue 45: kappa 0.76 (95% CI, 0.60-0.88) was called "met" at the target 0.7; the rule reads the lower limit.
    from hce.study.reasoning import kappa_verdicts

    old = pd.DataFrame({"dimension": ["a", "b", "c", "d"], "estimate": [0.76, 0.82, 0.5, np.nan],
                        "ci_low": [0.60, 0.71, 0.3, np.nan], "ci_high": [0.88, 0.92, 0.65, np.nan],
                        "target": 0.7, "meets_target": [True, True, False, False]})  # as an older run saved it
    out = kappa_verdicts(old).set_index("dimension")
    assert out["verdict"].tolist() == ["inconclusive", "met", "not met", "not measurable from this log"]
    assert out["meets_target"].tolist() == [False, True, False, False]
