import re

import pytest

import hce
from hce.collect.design.prompts import PROMPT_IDS, fewshot_examples, render, render_behavior_message, render_fewshot, score_format
from hce.errors import HceError
from hce.rubric import BehaviorSpec

PRD = "seeds/000_4d279bfdffb3ea61.txt"
RUBRIC_SLOT = "[Embed Full Rubric 5.0 Text Here - as in Section 4]"
EXAMPLE_SLOTS = "\n---\n".join(f"[Embed Example {i}: Snippet, Scores, Rationale]" for i in (1, 2, 3)) + "\n---"
TRANSCRIPT = "Doctor: How are you? Patient: Fine."


def seed_lines(shared_dir):
    """PRD text with markdown escapes removed, one stripped non-empty line each."""
    text = (shared_dir / PRD).read_text(encoding="utf-8")
    text = re.sub(r"\\(.)", r"\1", text)
    return [line.strip() for line in text.splitlines() if line.strip()]


def block(lines, first, last, after=None):
    start = lines.index(after) if after else 0
    i = next(k for k in range(start, len(lines)) if lines[k].startswith(first))
    j = next(k for k in range(i, len(lines)) if lines[k] == last)
    return [ln.replace("{{TranscriptText}}", TRANSCRIPT).replace("{{TTS}}", "13") for ln in lines[i : j + 1]]


def rendered_lines(prompt_id, **kwargs):
    rubric = hce.load_rubric("v5")
    text = render(prompt_id, **kwargs)[0]["content"]
    text = text.replace(rubric.render(), RUBRIC_SLOT).replace(render_fewshot(rubric), EXAMPLE_SLOTS)
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("prompt_id", "first", "last", "after"),
    [
        ("P1.1", "You are a health communication analyst. Read the following", "Total Score (5-20):", None),
        ("P1.2", "You are a health communication analyst. You must use", "Scores:", "* **P1.2 (G2 - Rubric-Based):**"),
        ("P2.1", "You are a health communication analyst. You must use", "Scores:", "* **P1.2 (G2 - Rubric-Based):**"),
        ("P2.2", "You are a health communication analyst. You must use", "Scores:", "* P2.2 (Few-shot):"),
        ("P2.3", "You are a health communication analyst. You must use", "Total Score: [sum_of_scores_5_20]",
         "* **P2.3 (CoT - Chain-of-Thought):**"),
    ],
)
def test_judge_prompts_match_prd_wording(shared_dir, prompt_id, first, last, after):
    # Source: seed 000 section 6 (7.1.5 and 7.2.5 prompt templates).
    expected = block(seed_lines(shared_dir), first, last, after)
    assert rendered_lines(prompt_id, transcript=TRANSCRIPT) == expected


def test_synthetic_prompt_matches_prd_wording(shared_dir):
    expected = block(seed_lines(shared_dir), "You are an expert in simulating", "[LLM generates transcript]")
    assert rendered_lines("SYNTH", target_total=13) == expected


def test_rubric_embedded_and_format_lines():
    rubric = hce.load_rubric("v5")
    text = render("P2.3", transcript=TRANSCRIPT)[0]["content"]
    assert rubric.render() in text and TRANSCRIPT in text
    assert score_format(rubric).splitlines() == [
        "Clarity of Language: [score_1_4]",
        "Lexical Diversity: [score_1_4]",
        "Conciseness and Completeness: [score_1_4]",
        "Engagement with Health Information: [score_1_4]",
        "Health Literacy Indicator: [score_1_4]",
        "Total Score: [sum_of_scores_5_20]",
    ]


def test_fewshot_examples_are_valid_and_distinct():
    rubric = hce.load_rubric("v5")
    examples = fewshot_examples()
    assert len(examples) == 3
    totals = [sum(e["scores"][c] for c in rubric.criteria) for e in examples]
    assert totals == [6, 12, 19]
    for e in examples:
        for category in rubric.categories:
            assert category.min_score <= e["scores"][category.id] <= category.max_score
    text = render_fewshot(rubric)
    assert text.count("Example Transcript Snippet:") == 3 and text.count("\n---") == 3
    assert "Total Score: 12\nRationale:" in text


def test_boolean_prompt_matches_seed_001_worked_instance(shared_dir):
    # Source: seed 001 section 4.1 (system message) and section 6.2 (user message instance).
    seed = (shared_dir / "seeds/001_130cec490064d8e9.txt").read_text(encoding="utf-8")
    spec = BehaviorSpec(
        behavior_id="medications_extracted_correct",
        description="Verifies that the AI output lists all active medications administered during the encounter\n"
        "with correct name, dose, and route, without adding unsupported medications.",
        category="extraction",
        severity="high",
        include=("Medications administered during the documented encounter.", "Doses and routes for those medications."),
        ignore=("Home medications not administered during this encounter.", "Formatting-only differences and casing."),
        automatic_fail=(
            "Any administered medication in the ground truth is missing from the AI output.",
            "A medication in the AI output has a clearly incorrect dose (wrong magnitude or units).",
            "The AI output adds a medication that does not appear in either the ground truth or narrative.",
        ),
        pass_conditions=(
            "Every administered medication in the ground truth appears in the AI output.",
            "For each medication, name, dose, and route match ground truth, allowing minor spelling differences and standard abbreviations.",
            "No extra medications are present beyond those supported by the ground truth or narrative.",
        ),
        acceptable_variations=(
            "Brand vs generic names for the same active ingredient.",
            "Abbreviations such as ASA/aspirin, NTG/nitroglycerin, NS/normal saline.",
            "Differences in ordering or line breaks.",
        ),
    )
    case = {
        "ground_truth": ["Aspirin 324mg PO", "Nitroglycerin 0.4mg SL", "Normal Saline 500mL IV"],
        "narrative": '"58 y/o male with chest pain. Administered ASA 324mg by mouth, NTG 0.4mg sublingual,\n and NS 500mL IV bolus."',
        "candidate": ["ASA 324mg PO", "NTG 0.4mg SL", "NS 500mL IV"],
    }
    messages = render("BOOL", behavior=spec, case=case)
    section = seed[seed.index("User message:\n") + len("User message:\n") : seed.index("Expected JSON response")]
    expected = [line[4:] if line.startswith("    ") else line for line in section.strip("\n").splitlines()]
    assert messages[1]["content"].splitlines() == [ln.rstrip() for ln in expected]
    system = seed[seed.index("4.1 System message template") : seed.index("4.2 User message template")]
    system_lines = [line[4:] for line in system.splitlines()[2:] if line.strip()]
    assert [ln for ln in messages[0]["content"].splitlines() if ln.strip()] == system_lines


def test_boolean_prompt_from_packaged_spec():
    spec = hce.load_behavior("medications_extracted_correct")
    example = spec.examples[0]
    text = render_behavior_message(spec, {"ground_truth": example.ground_truth, "narrative": example.narrative, "candidate": example.candidate})
    assert "1. Every administered medication in the ground truth appears in the candidate output." in text
    assert '["ASA 324mg PO", "NTG 0.4mg SL"]' in text


def test_render_errors_name_what_is_missing():
    with pytest.raises(HceError, match=r"choose one of \['P1.1'"):
        render("P9")
    with pytest.raises(HceError, match="needs transcript="):
        render("P2.1")
    with pytest.raises(HceError, match="needs target_total="):
        render("SYNTH")
    with pytest.raises(HceError, match="needs behavior="):
        render("BOOL")
    assert set(PROMPT_IDS) == {"P1.1", "P1.2", "P2.1", "P2.2", "P2.3", "SYNTH", "BOOL"}


MIXED_RUBRIC = """
name: Mixed Scale Rubric
categories:
  - name: Clarity
    levels:
      - {score: 1, label: Poor, descriptor: Unclear.}
      - {score: 2, label: Fair, descriptor: Often unclear.}
      - {score: 3, label: Good, descriptor: Mostly clear.}
      - {score: 4, label: Very good, descriptor: Clear.}
      - {score: 5, label: Excellent, descriptor: Always clear.}
  - name: Asks About Medication
    levels:
      - {score: 0, label: "No", descriptor: Never asks.}
      - {score: 1, label: "Yes", descriptor: Asks at least once.}
"""


@pytest.mark.parametrize("prompt_id", ["P1.2", "P2.1", "P2.3"])
def test_a_rubric_of_mixed_scales_gets_each_categorys_own_scale(tmp_path, prompt_id):
    # Issue 19: a 1-5 item beside a 0-1 item was asked "provide a score from 0 to 5" for every category.
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED_RUBRIC)
    rubric = hce.load_rubric(path)
    text = render(prompt_id, rubric=rubric, transcript=TRANSCRIPT)[0]["content"]
    assert "from 0 to 5" not in text
    assert "a score on its own scale (Clarity: 1 to 5; Asks About Medication: 0 to 1)" in text
    assert "Clarity: [score_1_5]\nAsks About Medication: [score_0_1]" in text


def _no_total_rubrics(tmp_path):
    """A 0/1 criterion beside a 1-5 one (no total inferred), and one scale for all with total_meaningful: false."""
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(MIXED_RUBRIC)
    stated = tmp_path / "stated.yaml"
    stated.write_text(MIXED_RUBRIC.replace("categories:", "total_meaningful: false\ncategories:", 1).replace(
        "      - {score: 0, label: \"No\", descriptor: Never asks.}\n      - {score: 1, label: \"Yes\", descriptor: Asks at least once.}",
        "".join(f"      - {{score: {k}, label: L{k}, descriptor: D{k}.}}\n" for k in range(1, 6)).rstrip("\n")))
    return [hce.load_rubric(mixed), hce.load_rubric(stated)]


@pytest.mark.parametrize("prompt_id", ["P1.2", "P2.1", "P2.2", "P2.3"])
def test_a_rubric_whose_total_is_no_score_is_not_asked_for_one_and_parses_without_it(tmp_path, prompt_id):
    # A 0/1 criterion beside a 1-5 one: the sum is no score (rubric.total_is_meaningful), yet the prompt
    # asked for a 'Total Score' and the parser flagged every reply without one.
    from hce.collect.call.parse import parse_reply
    from hce.sim import SimJudge

    for rubric in _no_total_rubrics(tmp_path):
        assert not rubric.total_is_meaningful
        examples = [{"id": "e1", "snippet": "Patient: I take my pills.", "scores": dict.fromkeys(rubric.criteria, 1)}]
        text = render(prompt_id, rubric=rubric, transcript=TRANSCRIPT, examples=examples)[0]["content"]
        assert "total" not in text.lower(), prompt_id
        reply = SimJudge(seed=0).respond("POST", "/v1/chat/completions", {
            "model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).body["choices"][0]["message"]["content"]
        assert "Total" not in reply
        row = parse_reply(prompt_id, reply, rubric=rubric)
        assert not row["error_flag"], row["error_message"]
        assert all(row[c] is not None for c in rubric.criteria) and row["total"] is None
        scores = [int(row[c]) for c in rubric.criteria]
        anyway = parse_reply(prompt_id, f"{reply}\nTotal Score: {sum(scores)}", rubric=rubric)
        assert not anyway["error_flag"] and anyway["total"] == sum(scores)  # given anyway: logged


def test_the_prd_rubric_is_still_asked_for_its_total_and_flagged_without_it():
    from hce.collect.call.parse import parse_reply

    text = render("P2.1", transcript=TRANSCRIPT)[0]["content"]
    assert "Then, provide a total score, which is the sum of the 5 category scores (must be between 5 and 20)." in text
    assert text.count("Total Score: [sum_of_scores_5_20]") == 1
    reply = "\n".join(f"{c.name}: 2" for c in hce.load_rubric("v5").categories)
    assert parse_reply("P2.1", reply)["error_message"] == "no 'Total Score' line"
    assert parse_reply("P2.3", reply)["error_message"] == "no final score block (no 'Total Score' line)"


def test_the_estimate_of_a_score_block_without_a_total_leaves_its_line_out(tmp_path):
    from hce.collect.design.design import Condition
    from hce.collect.estimates import expected_output

    mixed, _ = _no_total_rubrics(tmp_path)
    shown = hce.load_rubric(tmp_path / "mixed.yaml")
    with_total = type(shown)(shown.name, shown.categories, total_meaningful=True)
    for prompt_id in ("P2.1", "P2.3"):
        assert expected_output(Condition("c", prompt_id, "m"), with_total) - expected_output(Condition("c", prompt_id, "m"), mixed) == 5


def test_one_scale_for_all_keeps_the_protocols_words():
    text = render("P2.3", transcript=TRANSCRIPT)[0]["content"]
    assert "2. Assign a score from 1 to 4 for this category." in text and "own scale" not in text


def test_the_estimate_of_a_structured_reply_counts_no_total():
    # issue 44: a json_schema condition asks for no total (hce sums the criteria), yet its dry run counted 5 tokens for one
    from hce.collect.design.design import Condition
    from hce.collect.estimates import expected_output

    v5 = hce.load_rubric("v5")
    plain = expected_output(Condition("c", "P2.1", "m"), v5)
    structured = expected_output(Condition("c", "P2.1", "m", response_format="json_schema"), v5)
    assert (plain, structured) == (53, 48)
