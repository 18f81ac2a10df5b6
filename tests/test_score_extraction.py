"""The score-extraction rule (hce.score_extraction): adversarial replies are read right or flagged.

Issue 18: "On a scale of 1-5, I would give it a 4." was read as 1 and "1e3" as 1, unflagged.
The properties below hold for every reply hypothesis builds: a reply is either read as the
score it states or flagged with a reason, never read as another number.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hce.score_extraction import extract_score


@pytest.mark.parametrize(
    ("reply", "low", "high", "value", "problem"),
    [
        ("On a scale of 1-5, I would give it a 4.", 1, 5, 4, None),
        ("1e3", 1, 5, None, "score 1000 outside 1-5"),
        ("2e0", 1, 5, 2, None),
        ("Rating: 2\nRationale: the 1995 playoff win against the Patriots (3 touchdowns).", 1, 3, 2, None),
        ("On January 26, 1982, he scored a career high 40 points.", 1, 3, None,
         "no score within 1-3 in the reply (numbers found: 26, 1982, 40)"),
        ("Coherence: 3", 1, 3, 3, None),
        ("1. Coherence: 1", 1, 3, 1, None),
        ("I'd say 4 out of 5.", 1, 5, 4, None),
        ("4/5", 1, 5, 4, None),
        ("On a 5-point scale: 2", 1, 5, 2, None),
        ("Somewhere between 2 and 3.", 1, 5, None, "no score in the reply (ranges such as 'between 2 and 3' are scale statements, not scores)"),
        ("2 or 3", 1, 5, None, "conflicting scores in the reply: 2, 3"),
        ("Score: -2", 1, 5, None, "score -2 outside 1-5"),
        ("-2", 1, 5, None, "score -2 outside 1-5"),
        ("Score: ٣", 1, 5, None, "no score in the reply"),
        ("Score: ３", 1, 5, None, "no score in the reply"),
        ("I am 90% sure it is a 3.", 1, 5, 3, None),
        ("Score: 3\nOn reflection, Score: 4", 1, 5, 4, None),
        ("n/a", 1, 5, None, "no score in the reply"),
        (4.0, 1, 5, 4, None),
        (float("nan"), 1, 5, None, "score nan is not a finite number"),
        (True, 1, 5, None, "reply True is not a score"),
    ],
)
def test_examples(reply, low, high, value, problem):
    read = extract_score(reply, low=low, high=high)
    assert (read.value, read.problem) == (value, problem)


LOW, HIGH = 1, 5
score = st.integers(LOW, HIGH)
filler = st.sampled_from(["", "The reply is clear. ", "Overall, ", "Having read it twice, ", "Well: "])
scale = st.sampled_from(
    ["", f"On a scale of {LOW}-{HIGH}, ", f"On a {HIGH}-point scale, ", f"(scale {LOW} to {HIGH}) ",
     f"Between {LOW} and {HIGH}, "]
)
out_of = st.sampled_from(["", f"/{HIGH}", f" out of {HIGH}", f" / {HIGH}"])
label = st.sampled_from(["", "Score: ", "Rating: ", "**Score:** ", "Final score is "])
digits = "0123456789"


@settings(max_examples=300, deadline=None)
@given(score, filler, scale, out_of, label, st.sampled_from(["", ".", " (good)."]))
def test_a_stated_score_is_read_whatever_the_scale_statements(s, before, statement, denominator, lab, after):
    reply = f"{before}{statement}{lab}{s}{denominator}{after}"
    read = extract_score(reply, low=LOW, high=HIGH)
    assert (read.value, read.problem) == (s, None), reply


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(1, 12), label)
def test_an_exponent_is_never_read_as_its_mantissa(mantissa, exponent, lab):
    reply = f"{lab}{mantissa}e{exponent}"
    read = extract_score(reply, low=LOW, high=HIGH)
    # mantissa * 10**exponent >= 10 is outside 1-5: always flagged, never read as the mantissa
    assert read.value is None and read.problem == f"score {mantissa * 10**exponent:g} outside {LOW}-{HIGH}"


@settings(max_examples=200, deadline=None)
@given(score, filler, label)
def test_a_negative_number_is_never_read_as_positive(s, before, lab):
    read = extract_score(f"{before}{lab}-{s}", low=LOW, high=HIGH)
    assert read.value is None and read.problem == f"score -{s} outside {LOW}-{HIGH}"


@settings(max_examples=200, deadline=None)
@given(st.lists(score, min_size=2, max_size=4, unique=True), filler)
def test_several_distinct_candidates_without_a_label_are_flagged(values, before):
    reply = before + ", then ".join(str(v) for v in values) + "."
    read = extract_score(reply, low=LOW, high=HIGH)
    assert read.value is None and read.problem.startswith("conflicting scores in the reply")


@settings(max_examples=200, deadline=None)
@given(st.lists(score, min_size=1, max_size=3), score, filler)
def test_the_last_labelled_score_wins_over_other_numbers(noise, s, before):
    reply = before + " ".join(f"Point {v} matters." for v in noise) + f"\nScore: {s}"
    assert extract_score(reply, low=LOW, high=HIGH).value == s


non_ascii_digits = st.characters(
    codec="utf-8", categories=("Nd",)
).filter(lambda c: c not in digits and unicodedata.digit(c, None) is not None)


@settings(max_examples=200, deadline=None)
@given(st.lists(non_ascii_digits, min_size=1, max_size=3), label)
def test_unicode_digits_are_not_numbers(chars, lab):
    read = extract_score(lab + "".join(chars), low=LOW, high=HIGH)
    assert read.value is None and read.problem == "no score in the reply"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_read_as_a_number_it_contains_or_flagged(text):
    read = extract_score(text, low=LOW, high=HIGH)
    assert (read.value is None) != (read.problem is None)
    if read.value is not None:
        assert LOW <= read.value <= HIGH
