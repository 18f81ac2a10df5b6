"""Cache-friendly prompts: the static part (instructions, rubric, few-shot examples) first, the item last,
byte-identical across attempts and items, so OpenAI's prompt cache (>= 1,024 tokens, exact prefixes) serves it."""

import os

import pytest

import hce
from hce.collect.design.prompts import render
from hce.prompt_cache import CHARS_PER_TOKEN, MIN_TOKENS

RUBRIC = hce.load_rubric("v5")
ONE = "Doctor: What brings you in?\nPatient: My belly is sore."
TWO = "Doctor: How is your diet?\nPatient: Mostly rice and chicken."
CASE_ONE = {"ground_truth": ["Aspirin 324mg PO"], "narrative": "Gave ASA 324mg PO.", "candidate": ["ASA 324mg PO"]}
CASE_TWO = {"ground_truth": ["Heparin 5000u SC"], "narrative": "Heparin given.", "candidate": ["Heparin SC"]}


def text(messages):
    # What a provider caches: the messages in order (roles are identical here, so contents decide).
    return "\n\n".join(f"{m['role']}:{m['content']}" for m in messages)


@pytest.mark.parametrize("prompt_id", ["P1.1", "P1.2", "P2.1", "P2.2", "P2.3"])
def test_everything_before_the_transcript_is_shared_by_all_items(prompt_id):
    one, two = text(render(prompt_id, rubric=RUBRIC, transcript=ONE)), text(render(prompt_id, rubric=RUBRIC, transcript=TWO))
    assert text(render(prompt_id, rubric=RUBRIC, transcript=ONE)) == one  # byte-identical across attempts
    shared = len(os.path.commonprefix([one, two]))
    # The two items first differ at their first character ("Doctor: W" vs "Doctor: H" after 8 shared ones),
    # so the common prefix is the whole static part plus "Doctor: ".
    static = one.index(ONE)
    assert shared == static + len("Doctor: ")
    assert one.endswith(one[static + len(ONE):]) and one[static:].startswith(ONE)  # the item comes after all of it
    if prompt_id != "P1.1":  # P1.1 carries no rubric: 90 tokens, under the cache's 1,024
        assert static / CHARS_PER_TOKEN >= MIN_TOKENS  # P1.2/P2.1/P2.3 ~1,480 tokens, P2.2 ~2,160


def test_the_boolean_judge_puts_the_case_last():
    behavior = hce.load_behavior("medications_extracted_correct")
    one = text(render("BOOL", behavior=behavior, case=CASE_ONE))
    two = text(render("BOOL", behavior=behavior, case=CASE_TWO))
    shared = len(os.path.commonprefix([one, two]))
    assert one[:shared].rstrip().endswith("GROUND_TRUTH:\n[\"")  # system prompt, behaviour spec: all shared
