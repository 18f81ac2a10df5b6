
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hce
from hce.collect.call.parse import flag, json_object, parse_reply, parse_synthetic, parse_verdict

BLOCK = """Clarity of Language: 3
Lexical Diversity: 2
Conciseness and Completeness: 3
Engagement with Health Information: 2
Health Literacy Indicator: 4
Total Score: 14"""
CRITERIA = hce.load_rubric("v5").criteria


def scores(row):
    return [row[c] for c in CRITERIA] + [row["total"]]


@pytest.mark.parametrize(
    "text",
    [
        BLOCK,
        BLOCK.replace("Total Score: 14", "Total Score: 14/20"),
        BLOCK.replace("Clarity of Language: 3", "Clarity of Language: 3/4 (Good)").replace("Lexical Diversity: 2", "Lexical Diversity: 2 out of 4"),
        "\n".join(f"**{line.split(':')[0]}:** {line.split(':')[1].strip()}" for line in BLOCK.splitlines()),
        "\n".join(f"- **{line.split(':')[0]}**: {line.split(':')[1].strip()}" for line in BLOCK.splitlines()),
        "Scores:\n```\n" + BLOCK.replace(": ", ":   ") + "\n```",
        BLOCK.replace("Clarity of Language: 3", "clarity of language: 3").replace("Total Score: 14", "TOTAL SCORE: 14 out of 20"),
    ],
)
def test_score_block_variations(text):
    row = parse_reply("P2.1", text)
    assert scores(row) == [3, 2, 3, 2, 4, 14]
    assert row["error_flag"] is False and row["error_message"] is None


def test_cot_only_final_block_counts():
    reasoning = (
        "1. Clarity of Language: The patient is clear. Score: 4\nClarity of Language: 4\n"
        "Lexical Diversity: 1\nConciseness and Completeness: 1\nEngagement with Health Information: 1\n"
        "Health Literacy Indicator: 1\nTotal Score: 8\n\nOn reflection I revise.\n\nFinal Scores Output:\n"
    )
    row = parse_reply("P2.3", reasoning + BLOCK)
    assert scores(row) == [3, 2, 3, 2, 4, 14]
    assert row["reasoning"].startswith("1. Clarity of Language: The patient is clear.")
    assert row["reasoning"].endswith("Final Scores Output:")
    assert not row["error_flag"]


def test_out_of_range_and_bad_total_are_flagged_not_fixed():
    # Issue 18: a flagged row holds no score (a plain mean would pick partial scores up);
    # the message keeps what the judge wrote and the reply stays in response_text.
    row = parse_reply("P2.1", BLOCK.replace("Lexical Diversity: 2", "Lexical Diversity: 5").replace("Total Score: 14", "Total Score: 17"))
    assert scores(row) == [None] * 6
    assert row["error_flag"] is True
    assert row["error_message"] == "Lexical Diversity score 5 outside 1-4"
    row = parse_reply("P2.1", BLOCK.replace("Total Score: 14", "Total Score: 15"))
    assert scores(row) == [None] * 6 and row["error_flag"]
    assert row["error_message"] == "total 15 is not the sum of the category scores (14)"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("Clarity of Language: 1e3", "Clarity of Language score 1000 outside 1-4"),
        ("Clarity of Language: -3", "Clarity of Language score -3 outside 1-4"),
        ("Clarity of Language: 2-3", "no score line for Clarity of Language"),
        ("Clarity of Language: ٣", "no score line for Clarity of Language"),
        ("Clarity of Language: 3rd", "no score line for Clarity of Language"),
        ("Clarity of Language: 3 or 4", "conflicting Clarity of Language scores in the reply: 3, 4"),
        ("Clarity of Language: 2.5", "Clarity of Language score 2.5 is not a level of the scale [1, 2, 3, 4]"),
    ],
)
def test_category_values_that_are_not_one_score_are_flagged(line, message):
    row = parse_reply("P2.1", BLOCK.replace("Clarity of Language: 3", line))
    assert row["error_flag"] is True and row["error_message"].startswith(message)
    assert scores(row) == [None] * 6


def test_scores_in_an_allowed_gap_are_flagged(tmp_path):
    path = tmp_path / "gapped.yaml"
    path.write_text(
        "name: Gapped\nallow_gaps: true\ncategories:\n  - name: Accuracy\n    levels:\n"
        + "".join(f"      - {{score: {s}, label: L{s}, descriptor: d}}\n" for s in (1, 2, 4, 5))
    )
    rubric = hce.load_rubric(path)
    row = parse_reply("P2.1", "Accuracy: 4\nTotal Score: 4", rubric=rubric)
    assert (row["accuracy"], row["total"], row["error_flag"]) == (4.0, 4.0, False)
    row = parse_reply("P2.1", "Accuracy: 3\nTotal Score: 3", rubric=rubric)
    assert row["error_flag"] and row["error_message"].startswith("Accuracy score 3 is not a level of the scale [1, 2, 4, 5]")
    assert (row["accuracy"], row["total"]) == (None, None)
    row = parse_reply("P1.1", "Total: 3", rubric=rubric)
    assert row["error_flag"] and row["error_message"] == "total 3 is not a level of the scale [1, 2, 4, 5]"


def test_flag_clears_scores_for_steps_after_parsing():
    row = parse_reply("P2.1", BLOCK)
    flag(row, "the reply was cut off at max_tokens", criteria=CRITERIA)
    assert scores(row) == [None] * 6 and row["error_message"] == "the reply was cut off at max_tokens"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty reply"),
        (None, "empty reply"),
        ("I am unable to assess this transcript.", "no score line for Clarity of Language"),
        (BLOCK.replace("Total Score: 14", ""), "no 'Total Score' line"),
        (BLOCK.replace("Health Literacy Indicator: 4", "Health Literacy Indicator: high"), "no score line for Health Literacy Indicator"),
    ],
)
def test_unparseable_block_replies_are_flagged(text, message):
    row = parse_reply("P1.2", text)
    assert row["error_flag"] is True and row["error_message"] == message


@pytest.mark.parametrize(
    ("text", "total", "message"),
    [
        ("15", 15, None),
        ("Total Score (5-20): 12", 12, None),
        ("**17**/20", 17, None),
        ("I would rate this 9 out of 20.", 9, None),
        ("On the 5-20 scale: 11", 11, None),
        ("4", None, "total 4 outside 5-20"),
        ("12 or maybe 13", None, "conflicting totals in the reply: 12, 13"),
        ("Good communication.", None, "no total in the reply"),
        ("On a scale of 5-20 I would give it a 14.", 14, None),
        ("Total: 2e1", 20, None),  # the number written is 20, not 2
        ("Total: 1e3", None, "total 1000 outside 5-20"),
        ("Total Score: 12.5", None, "total 12.5 is not a level of the scale [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]"),
        ("Total Score: 12-14", None, "no total in the reply (ranges such as '12-14' are scale statements, not totals)"),
    ],
)
def test_holistic_total(text, total, message):
    row = parse_reply("P1.1", text)
    assert row["total"] == total
    assert row["error_message"] == message
    assert row["error_flag"] is (message is not None)


def test_verdict_json():
    row = parse_verdict('```json\n{"pass": false, "reason": "NTG missing.", "score": 0.0, "confidence": "high", "uncertain": false}\n```')
    assert (row["verdict"], row["reasoning"], row["verdict_score"], row["confidence_level"], row["uncertain"]) == (False, "NTG missing.", 0.0, "high", False)
    assert not row["error_flag"]
    assert parse_reply("BOOL", '{"pass": true, "reason": "ok"}')["verdict"] is True


@pytest.mark.parametrize(
    "text",
    [
        '{"pass": true, "reason": "ok"}',  # the whole reply
        '```json\n{"pass": true, "reason": "ok"}\n```',  # a fence around it
        '```\n{"pass": true, "reason": "ok"}\n```',  # a fence without a language
        'My verdict:\n```json\n{"pass": true, "reason": "ok"}\n```\nHope this helps.',  # prose around the fence
    ],
)
def test_one_json_reader_for_every_json_reply(text):
    # Issue 20: parse_verdict (fullmatch) and reasoning.parse_codes (search) had diverged; a
    # fenced block inside prose is read by both now, the first fenced block when there are several.
    assert json_object(text) == ({"pass": True, "reason": "ok"}, None)
    assert parse_verdict(text)["verdict"] is True and not parse_verdict(text)["error_flag"]


def test_json_reader_reads_the_first_fenced_block_and_nothing_unfenced():
    assert json_object('```json\n{"a": 1}\n```\nor\n```json\n{"a": 2}\n```') == ({"a": 1}, None)
    assert json_object('Verdict: {"pass": true}') == (None, "reply is not a single JSON object (Expecting value at position 0)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Pass.", "reply is not a single JSON object (Expecting value at position 0)"),
        ('{"pass": true, "reason": "ok"} thanks!', "reply is not a single JSON object (Extra data at position 31)"),
        ("[true]", "reply is JSON list, not an object"),
        ('{"reason": "x"}', "'pass' must be true or false, got None"),
        ('{"pass": true}', "'reason' must be a non-empty string, got None"),
        ('{"pass": false, "reason": "x", "confidence": "very"}', "'confidence' must be one of ['high', 'medium', 'low'], got 'very'"),
        ('{"pass": true, "reason": "x", "uncertain": true}', "'uncertain' is true but 'pass' is true (uncertain implies fail)"),
        ('{"pass": true, "reason": "x", "score": "1"}', "'score' must be a number, got '1'"),
    ],
)
def test_bad_verdicts_flagged(text, message):
    row = parse_verdict(text)
    assert row["error_flag"] is True and row["error_message"] == message


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["P1.1", "P1.2", "P2.2", "P2.3", "BOOL", "SYNTH", "nope"]))
def test_parsers_never_raise_on_model_output(text, prompt_id):
    row = parse_reply(prompt_id, text)
    assert isinstance(row["error_flag"], bool)
    assert row["error_flag"] or row["error_message"] is None
    parse_synthetic(text, target_total=12)


def test_synthetic_split_and_leak_flag():
    reply = "Outline:\n- patient vague about pain\n\nTranscript:\nDoctor: Hello.\nPatient: It hurts."
    row = parse_synthetic(reply, target_total=9)
    assert row["outline"] == "- patient vague about pain"
    assert row["transcript"] == "Doctor: Hello.\nPatient: It hurts."
    assert not row["leak_flag"] and not row["error_flag"]
    leaky = parse_synthetic("**Outline:** x\n**Transcript:**\nDoctor: This would score 9/20 on the rubric.", target_total=9)
    assert leaky["leak_flag"]
    assert leaky["leak_reason"] == "mentions 'rubric'; mentions 'score'; states the target 9/20"
    assert parse_synthetic("Just a dialogue.")["error_message"] == "no 'Transcript:' section in reply"


@pytest.mark.parametrize("prompt", ["P1.2", "P2.1"])
def test_two_different_scores_for_one_criterion_are_flagged_naming_both(prompt):
    # Issue 44: the last of two scores was kept silently (it differed from the score block in 7 of 9 rows).
    reply = ("Clarity of Language: 3\nLexical Diversity: 2\nConciseness and Completeness: 3\n"
             "Engagement with Health Information: 2\nHealth Literacy Indicator: 2\nClarity of Language: 4\nTotal Score: 12")
    row = parse_reply(prompt, reply)
    assert row["error_flag"] and "two scores for Clarity of Language: 3 and 4" in row["error_message"]
    assert row["clarity_of_language"] is None and row["total"] is None
    # The same score said twice is one score.
    same = reply.replace("Clarity of Language: 4", "Clarity of Language: 3")
    assert not parse_reply(prompt, same)["error_flag"]
