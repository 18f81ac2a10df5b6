"""Tests for hce.collect.design.matcher: prompt rendering and reply parsing for the editJudge."""

from hypothesis import given
from hypothesis import strategies as st

from hce.collect.design.matcher import SYSTEM_PROMPT, parse_matcher_reply, render_matcher_prompt
from hce.stats.editf1 import edit_counts_from_matches

DRAFT = "I'm sorry you've been feeling nauseous. Have you recently changed your diet?"


def test_prompt_carries_sentence_draft_and_criterion():
    msgs = render_matcher_prompt("  Any diet changes? ", DRAFT)
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "would not have to rewrite this content" in SYSTEM_PROMPT and "NO MATCH" in SYSTEM_PROMPT
    assert "Clinician sentence:\nAny diet changes?" in msgs[1]["content"] and DRAFT in msgs[1]["content"]


def test_parse_variants():
    ok = {"match": "Have you recently changed your diet?", "error_flag": False, "error_message": None}
    assert parse_matcher_reply("Have you recently changed your diet?", DRAFT) == ok
    assert parse_matcher_reply("```\n\u201chave you recently   changed your diet?\u201d\n```", DRAFT) == ok
    assert parse_matcher_reply("Matching content: I'm sorry you've been feeling nauseous.", DRAFT)["match"] == "I'm sorry you've been feeling nauseous."
    for no in ("NO MATCH", "no match.", '"No_Match"'):
        assert parse_matcher_reply(no, DRAFT) == {"match": None, "error_flag": False, "error_message": None}
    bad = parse_matcher_reply("Please rest.", DRAFT)
    assert bad["error_flag"] and bad["match"] is None and "not a span" in bad["error_message"]
    assert parse_matcher_reply(None, DRAFT)["error_flag"] and parse_matcher_reply("  ", DRAFT)["error_message"] == "empty reply"


def test_parsed_matches_feed_algorithm1():
    replies = ["Have you recently changed your diet?", "NO MATCH"]
    matches = [parse_matcher_reply(r, DRAFT)["match"] for r in replies]
    assert edit_counts_from_matches(DRAFT, matches) == {"em": 1, "ea": 1, "ed": 1, "n_unlocated": 0}


@given(reply=st.one_of(st.none(), st.text()), draft=st.one_of(st.none(), st.text()))
def test_parser_never_raises(reply, draft):
    result = parse_matcher_reply(reply, draft)
    assert set(result) == {"match", "error_flag", "error_message"}
    assert result["match"] is None or result["match"] in (draft or "")
