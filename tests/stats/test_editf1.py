"""Tests for hce.stats.editf1: Algorithm 1 of seed 004 on its own examples, micro Edit-F1,
theme-level F1, strict inclusion/exclusion agreement and IAP."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hce.errors import DataError, HceWarning
from hce.stats.editf1 import (
    annotator_pairs,
    count_sentences,
    edit_counts,
    edit_counts_from_matches,
    edit_counts_table,
    edit_f1,
    inter_annotator_predictability,
    sentence_table,
    split_sentences,
    theme_f1,
    theme_inclusion_agreement,
)

# Seed 004, Table 7: (clinician sentence, LLM draft excerpt, match decision).
TABLE_7 = [
    ("Thank you for touching base - I'm sorry you have been experiencing these troubling symptoms.",
     "Hi Sarah, Thank you for reaching out and bringing this to my attention. Postmenopausal bleeding can "
     "indeed be a sign of something more serious, so it's important that we investigate further.",
     "Thank you for reaching out and bringing this to my attention."),
    ("Please let us know if you have any issues with getting the medication.",
     "Thanks for reaching out to me about your decision to switch. I would recommend a different medication. "
     "Please let me know if you have questions or concerns. We can discuss this further in your upcoming appointment.",
     "NO MATCH"),
    ("Have you eaten anything out of the ordinary for you?",
     "Have you experienced any other symptoms, such as stomach pain, bloating, or changes in bowel movements? "
     "Are you taking any new medications or supplements that could be causing the nausea? Have you recently "
     "changed your diet or experienced any significant stress?",
     "Have you recently changed your diet or experienced any significant stress?"),
]


def _table7_matcher(sentence, draft):
    return {s: m for s, _, m in TABLE_7}[sentence]


def test_algorithm1_on_seed004_table7():
    # Row 1: 1 match; the draft left is "Hi Sarah, Postmenopausal ... further." = 1 sentence.
    # Row 2: no match (EA = 1); all 4 draft sentences are deletions.
    # Row 3: 1 match; the 2 other questions are deletions.
    counts = [edit_counts(s, d, _table7_matcher) for s, d, _ in TABLE_7]
    assert [(c["em"], c["ea"], c["ed"]) for c in counts] == [(1, 0, 1), (0, 1, 4), (1, 0, 2)]
    # Micro average: EM = 2, EA = 1, ED = 7: P = 2/9, R = 2/3, F1 = 4/12 = 1/3.
    out = edit_f1(pd.DataFrame(counts), n_boot=0).set_index("metric")
    np.testing.assert_allclose(out.loc[["precision", "recall", "edit_f1"], "estimate"], [2 / 9, 2 / 3, 1 / 3], rtol=1e-12)
    assert out.loc["edit_f1", ["tp", "fp", "fn"]].tolist() == [2, 7, 1]


def test_algorithm1_figure2_style_example():
    # Figure 2 / Appendix C.1 pair: "I'm sorry to hear about your new symptoms" matches
    # "I'm sorry you've been feeling nauseous."; the diet question matches as in Table 7; the
    # third clinician sentence has no match in this draft.
    reference = ("I'm sorry to hear about your new symptoms. Have you eaten anything out of the ordinary for you? "
                 "Please call the office to schedule an appointment.")
    draft = ("I'm sorry you've been feeling nauseous. Have you experienced any other symptoms, such as stomach pain, "
             "bloating, or changes in bowel movements? Are you taking any new medications or supplements that could "
             "be causing the nausea? Have you recently changed your diet or experienced any significant stress?")
    matches = {
        "I'm sorry to hear about your new symptoms.": "I'm sorry you've been feeling nauseous.",
        "Have you eaten anything out of the ordinary for you?": "Have you recently changed your diet or experienced any significant stress?",
        "Please call the office to schedule an appointment.": None,
    }
    counts = edit_counts(reference, draft, lambda s, d: matches[s])
    # EM = 2, EA = 1, ED = 2: precision 2/4, recall 2/3, Edit-F1 = 4/7.
    assert counts == {"em": 2, "ea": 1, "ed": 2, "n_unlocated": 0}
    out = edit_f1(pd.DataFrame([counts]), n_boot=0)
    assert out["estimate"].tolist() == pytest.approx([0.5, 2 / 3, 4 / 7])


def test_spans_found_despite_case_and_spacing_and_unlocated_warn():
    draft = "Please   call us.  Rest well."
    assert edit_counts_from_matches(draft, ["please call us."])["ed"] == 1
    # Two reference sentences matching the same draft content remove it once, silently.
    assert edit_counts_from_matches(draft, ["Rest well.", "Rest well."]) == {"em": 2, "ea": 0, "ed": 1, "n_unlocated": 0}
    with pytest.warns(UserWarning, match="not verbatim"):
        out = edit_counts_from_matches(draft, ["Take ibuprofen."])
    assert out == {"em": 1, "ea": 0, "ed": 2, "n_unlocated": 1}


def test_split_sentences():
    assert split_sentences('He said "stop." Then left!\nNew line') == ['He said "stop."', "Then left!", "New line"]
    assert split_sentences("") == []


# Every character class the rule turns on: sentence ends, closing quotes, ASCII and Unicode
# whitespace (str.isspace), letters and digits beyond ASCII, and punctuation that is neither.
_ALPHABET = list(".!?\"')]\u201d\u201c([-,;:_ \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u2028\u3000aZé\u00b2\u0663\u4e00\u0301\U0001f600")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=_ALPHABET, max_size=40), min_size=1, max_size=8))
def test_vectorised_sentences_are_split_sentences(texts):
    expected = [split_sentences(t) for t in texts]
    assert count_sentences(texts).tolist() == [len(e) for e in expected]
    table = sentence_table(pd.DataFrame({"pair_id": range(len(texts)), "reference": texts, "draft": ""}))
    assert table.groupby("pair_id")["sentence"].agg(list).reindex(range(len(texts)), fill_value=[]).tolist() == expected
    assert (table.groupby("pair_id")["sentence_index"].agg(list) == table.groupby("pair_id").size().map(lambda n: list(range(n)))).all()


def test_sentence_table_with_a_matcher_gives_edit_counts_pair_by_pair():
    # Seed 004 Table 7's sentences and drafts, counted pair by pair (edit_counts) and as a
    # table (sentence_table -> edit_counts_table): the same EM, EA, ED for every pair.
    pairs = pd.DataFrame({"pair_id": range(len(TABLE_7)), "reference": [s for s, _, _ in TABLE_7],
                          "draft": [d for _, d, _ in TABLE_7]})
    table = sentence_table(pairs, matcher=_table7_matcher)
    expected = pd.DataFrame([{"pair_id": i, **edit_counts(s, d, _table7_matcher)} for i, (s, d, _) in enumerate(TABLE_7)])
    pd.testing.assert_frame_equal(edit_counts_table(table), expected, check_dtype=False)


def test_table_form_equals_pair_by_pair():
    rng = np.random.default_rng(4)
    sentences = ["Any fever?", "Rest well.", "Please call us.", "Take it with food!", "We can talk (tomorrow)."]
    rows, expected = [], []
    for pair in range(200):
        draft = " ".join(rng.choice(sentences, size=rng.integers(0, 5)))
        matches = [str(rng.choice(sentences)) if rng.random() < 0.5 else rng.choice([None, "NO MATCH", np.nan])
                   for _ in range(rng.integers(1, 4))]
        rows += [{"message": pair // 3, "model": pair % 3, "draft": draft, "match": m, "k": k} for k, m in enumerate(matches)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            expected.append({"message": pair // 3, "model": pair % 3, **edit_counts_from_matches(draft, matches)})
    # Rows of one pair need not be adjacent: first sentences of every pair, then second ones...
    data = pd.DataFrame(rows).sort_values("k", kind="stable")
    with pytest.warns(UserWarning, match="not verbatim"):
        out = edit_counts_table(data, item=["message", "model"])
    pd.testing.assert_frame_equal(out, pd.DataFrame(expected), check_dtype=False)


def test_edit_f1_groups_and_bootstrap():
    df = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "em": [1, 2, 0, 3, 3, 2], "ea": [1, 0, 2, 0, 1, 0], "ed": [2, 1, 1, 0, 1, 1]})
    out = edit_f1(df, by=["model"], n_boot=500, random_state=3)
    a = out[(out.model == "a") & (out.metric == "edit_f1")].iloc[0]
    assert a.estimate == pytest.approx(6 / (6 + 4 + 3))
    assert a.ci_low <= a.estimate <= a.ci_high
    with pytest.raises(DataError, match="non-negative"):
        edit_f1(df.assign(em=-1))


def test_theme_f1_hand_worked():
    # Pair 1: reference {Emp, SymQ, SymQ}, draft {Emp, Plan}. Pair 2: reference {Log}, draft {Log, Log}.
    # presence: TP = Emp, Log (2); FP = Plan (1); FN = SymQ (1): F1 = 4/6.
    # sentences: TP = 1 + 1; FP = Plan 1 + Log 1; FN = SymQ 2: F1 = 4/(4 + 2 + 2) = 0.5.
    df = pd.DataFrame({
        "pair_id": [1, 1, 1, 1, 1, 2, 2, 2],
        "side": ["reference"] * 3 + ["draft"] * 2 + ["reference", "draft", "draft"],
        "theme": ["Emp", "SymQ", "SymQ", "Emp", "Plan", "Log", "Log", "Log"],
    })
    # No draft has SymQ (precision 0/0) and no reference has Plan (recall 0/0): NaN, and a warning
    # naming both (seed 004 defines no value for an empty denominator).
    undefined = r"recall is undefined \(0/0\) for theme='Plan'.*precision is undefined \(0/0\) for theme='SymQ'"
    with pytest.warns(HceWarning, match=undefined):
        out = theme_f1(df, n_boot=0)
    micro = out.query("theme == 'micro'").set_index("metric")["estimate"]
    assert micro["edit_f1"] == pytest.approx(4 / 6)
    assert micro["precision"] == pytest.approx(2 / 3) and micro["recall"] == pytest.approx(2 / 3)
    assert out.query("theme == 'SymQ' and metric == 'recall'")["estimate"].iloc[0] == 0
    nan = out[out["estimate"].isna()].set_index(["theme", "metric"])
    assert sorted(nan.index) == [("Plan", "recall"), ("SymQ", "precision")]
    with pytest.warns(HceWarning, match=undefined):
        per_sentence = theme_f1(df, count="sentences", n_boot=0).query("theme == 'micro' and metric == 'edit_f1'")
    assert per_sentence["estimate"].iloc[0] == pytest.approx(0.5)
    with pytest.warns(HceWarning, match=r"^theme_f1: precision is undefined \(0/0\) for theme='SymQ'[^;]*; each"):
        without = theme_f1(df, exclude=["Plan"], n_boot=0).query("theme == 'micro' and metric == 'precision'")
    assert without["estimate"].iloc[0] == 1.0


def test_edit_f1_warns_once_naming_each_undefined_ratio():
    # Group "a": drafts with no sentence (EM = ED = 0): precision 0/0, recall 0/3 = 0, F1 0/3 = 0.
    # Group "b": nothing on either side: all three 0/0. Group "c" is defined throughout.
    df = pd.DataFrame({"model": ["a", "a", "b", "c"], "em": [0, 0, 0, 1], "ea": [2, 1, 0, 1], "ed": [0, 0, 0, 1]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = edit_f1(df, by=["model"], n_boot=200, random_state=1)
    assert [type(w.message) for w in caught] == [HceWarning]  # one warning, no numpy one
    message = str(caught[0].message)
    assert "precision is undefined (0/0) for model='a', model='b': EM + ED = 0" in message
    assert "recall is undefined (0/0) for model='b': EM + EA = 0" in message
    assert "edit_f1 is undefined (0/0) for model='b': EM + ED + EA = 0" in message
    nan = out[out["estimate"].isna()]
    assert sorted(zip(nan.model, nan.metric)) == [("a", "precision"), ("b", "edit_f1"), ("b", "precision"), ("b", "recall")]
    assert nan[["ci_low", "ci_high"]].isna().all().all()  # every replicate is 0/0 too
    assert out.query("model == 'a' and metric == 'recall'")["estimate"].iloc[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fully defined table warns nothing
        edit_f1(df[df.model == "c"], n_boot=0)
    pairs = pd.DataFrame({"message_id": [1, 1], "reference_annotator": ["A", "B"], "draft_annotator": ["B", "A"],
                          "em": [0, 1], "ea": [0, 1], "ed": [0, 0]})  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inter_annotator_predictability(pairs, n_boot=0)
    # A's response used as the draft for B's is empty on both sides; the pooled pairs are defined.
    assert len(caught) == 1 and "precision is undefined (0/0) for (reference_annotator='A', draft_annotator='B'): EM + ED" \
        in str(caught[0].message)


# Seed 004 Table 3 (strict inclusion / exclusion over the SyPPM IAA sample). Its values are
# multiples of 1/30: included-by-all and excluded-by-all counts out of 30 messages.
TABLE_3 = {"Emp": (16, 0), "SymQ": (16, 0), "MedQ": (6, 0), "Asse": (1, 10), "Plan": (0, 28),
           "Log": (17, 0), "Coord": (0, 10), "Cont": (0, 14)}
TABLE_3_PUBLISHED = {"Emp": (0.53, 0.00), "SymQ": (0.53, 0.00), "MedQ": (0.20, 0.00), "Asse": (0.03, 0.33),
                     "Plan": (0.00, 0.93), "Log": (0.57, 0.00), "Coord": (0.00, 0.33), "Cont": (0.00, 0.47)}


def test_theme_inclusion_agreement_reproduces_table3_counts():
    rows = []
    for theme, (all_in, none_in) in TABLE_3.items():
        for m in range(30):
            if m < all_in:
                writers = ["A", "B", "C"]
            elif m < all_in + none_in:
                writers = []
            else:
                writers = ["A", "C"] if m % 2 else ["B"]
            rows += [(m, w, theme) for w in writers]
    out = theme_inclusion_agreement(pd.DataFrame(rows, columns=["message_id", "annotator", "theme"]),
                                    annotators=["A", "B", "C"], themes=list(TABLE_3)).set_index("theme")
    for theme, (inc, exc) in TABLE_3_PUBLISHED.items():
        assert round(out.loc[theme, "strict_inclusion"], 2) == inc
        assert round(out.loc[theme, "strict_exclusion"], 2) == exc
    # Published strict agreement for Asse is 0.36 = 0.03 + 0.33 (sum of rounded parts); exact 11/30.
    assert out.loc["Asse", "strict_agreement"] == pytest.approx(11 / 30)
    assert (out["n"] == 30).all()


def test_iap_over_ordered_pairs():
    responses = pd.DataFrame({"message_id": [1, 1, 1], "annotator": ["A", "B", "C"],
                              "response": ["Sorry. Call us.", "Sorry. Rest.", "Call us."]})
    pairs = annotator_pairs(responses)
    assert len(pairs) == 6

    def exact(sentence, draft):
        return sentence if sentence in draft else None

    counts = pd.DataFrame([edit_counts(r, d, exact) for r, d in zip(pairs.reference, pairs.draft)])
    out = inter_annotator_predictability(pd.concat([pairs, counts], axis=1), n_boot=0)
    pooled = out[out.reference_annotator == "all"].set_index("metric")
    # Ordered pairs (ref, draft): AB em1 ea1 ed1; AC 1,1,0; BA 1,1,1; BC 0,2,1; CA 1,0,1; CB 0,1,2
    # -> EM 4, EA 6, ED 6: F1 = 8/20.
    assert pooled.loc["edit_f1", "estimate"] == pytest.approx(0.4)
    assert pooled.loc["edit_f1", ["tp", "fp", "fn"]].tolist() == [4, 6, 6]


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=20),
       seed=st.integers(0, 1000))
def test_permuting_pairs_leaves_edit_f1_unchanged(counts, seed):
    df = pd.DataFrame(counts, columns=["em", "ea", "ed"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = edit_f1(df, n_boot=0)
        b = edit_f1(df.sample(frac=1, random_state=seed), n_boot=0)
    pd.testing.assert_frame_equal(a, b)
    # A ratio is NaN exactly when its counts are all 0, and then each call warns naming it.
    total = df.sum()
    undefined = {"precision": total.em + total.ed == 0, "recall": total.em + total.ea == 0,
                 "edit_f1": total.sum() == 0}  # fmt: skip
    assert dict(zip(a.metric, a.estimate.isna(), strict=True)) == undefined
    assert [type(w.message) for w in caught] == [HceWarning] * (2 if any(undefined.values()) else 0)
    for metric, nan in undefined.items():
        assert all((f"{metric} is undefined (0/0)" in str(w.message)) == nan for w in caught)
