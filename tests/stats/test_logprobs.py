"""The vectorised logprob reader against a plain per-reply reference, on any encoding of the column."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from hce.stats.calibration import _logprobs
from hce.stats.calibration import logprob_confidence

SCORES = {"1": 1.0, "2": 2.0, "3": 3.0, "4": 4.0}


def reference(reply, occurrence):
    """(chosen score, probability of each score) read the obvious way, one reply at a time.

    The rule of logprob_confidence: the occurrence-th top-level token whose stripped,
    lower-cased text is a score; alternatives mapping to a score add their probabilities;
    the sampled token counts once more only when its exact text is not among them.
    """
    def level(token):
        return None if token is None else SCORES.get(token.strip().lower())

    found = [e for e in reply if level(e["token"]) is not None]
    if not -len(found) <= occurrence < len(found):
        return None
    entry = found[occurrence]
    mass = dict.fromkeys(SCORES.values(), 0.0)
    for alt in entry["top_logprobs"]:
        if level(alt["token"]) is not None and alt["logprob"] is not None:
            mass[level(alt["token"])] += math.exp(alt["logprob"])
    if all(alt["token"] != entry["token"] for alt in entry["top_logprobs"]) and entry["logprob"] is not None:
        mass[level(entry["token"])] += math.exp(entry["logprob"])
    total = sum(mass.values())
    if total == 0:
        return None
    return level(entry["token"]), [mass[s] / total for s in sorted(mass)]


tokens = st.one_of(
    st.sampled_from(["1", "2", "3", "4", " 3", "3 ", "\n2", "\t4", "Score", ":", "5", "12", "true", '"', "\\", "{", "]}",
                     '{"token": "3"', '", "logprob": ', "é", "😀", "\u2028"]),
    st.text(max_size=4),
)
logprobs = st.one_of(st.floats(-30, 0), st.just(-9999.0), st.none())
alternative = st.fixed_dictionaries({"token": tokens, "logprob": logprobs})
entry = st.fixed_dictionaries({"token": tokens, "logprob": logprobs, "top_logprobs": st.lists(alternative, max_size=4)})
replies = st.lists(st.lists(entry, max_size=6), min_size=1, max_size=12)


def encodings(reply, kind):
    if kind == "list":
        return reply
    if kind == "json":
        return json.dumps(reply, ensure_ascii=False)
    if kind == "ascii-compact":
        return json.dumps(reply, separators=(",", ":"))
    if kind == "indented":  # raw newlines: read one by one
        return json.dumps(reply, indent=1)
    if kind == "reordered+bytes":  # the API's own layout, keys in another order
        return json.dumps([{"top_logprobs": [{"bytes": [1], **a} for a in e["top_logprobs"]], "bytes": None, **e}
                           for e in reply])
    if kind == "content":
        return {"content": reply}
    return [SimpleNamespace(token=e["token"], logprob=e["logprob"],
                            top_logprobs=[SimpleNamespace(**a) for a in e["top_logprobs"]]) for e in reply]


KINDS = ["list", "json", "ascii-compact", "indented", "reordered+bytes", "content", "objects"]


@settings(max_examples=60, deadline=None)
@given(replies=replies, kinds=st.lists(st.sampled_from(KINDS), min_size=12, max_size=12),
       occurrence=st.sampled_from([-1, -2, 0, 1]))
def test_confidence_matches_reference_on_every_encoding(replies, kinds, occurrence):
    column = [encodings(reply, kind) for reply, kind in zip(replies, kinds, strict=False)]
    out = logprob_confidence(pd.DataFrame({"logprobs": column}), scores=range(1, 5), occurrence=occurrence)
    for i, reply in enumerate(replies):
        expected = reference(reply, occurrence)
        if expected is None:
            assert out["error_flag"].iloc[i], (i, reply)
            continue
        assert not out["error_flag"].iloc[i]
        assert out["chosen_score"].iloc[i] == expected[0]
        np.testing.assert_allclose(out[["prob_1", "prob_2", "prob_3", "prob_4"]].iloc[i], expected[1], rtol=1e-9, atol=1e-300)


def test_unreadable_rows_inside_a_chunk_are_flagged_and_the_rest_read(monkeypatch):
    # Small chunks and a small row-by-row threshold make read_json reject chunks: each is
    # halved until the bad rows stand alone, and every good row is still read by Arrow.
    monkeypatch.setattr(_logprobs, "_CHUNK_BYTES", 2000)
    monkeypatch.setattr(_logprobs, "_ONE_BY_ONE", 2)
    good = json.dumps([{"token": "3", "logprob": math.log(0.8), "top_logprobs": [{"token": "3", "logprob": math.log(0.8)},
                                                                               {"token": "2", "logprob": math.log(0.2)}]}])
    bad = {7: "not json", 40: good[:-5], 41: "[1, 2]", 90: '{"content": "x"}', 120: "null", 150: '[{"token": 3, "logprob": -0.2}]'}
    indented = json.dumps(json.loads(good), indent=2)  # raw newlines: read on its own
    column = [bad.get(i, indented if i in (0, 60) else good) for i in range(200)] + [float("nan"), None, "", "   "]
    out = logprob_confidence(pd.DataFrame({"logprobs": column}), scores=range(1, 5))
    flagged = set(np.flatnonzero(out["error_flag"]))
    assert flagged == set(bad) - {150} | {200, 201, 202, 203}
    assert out.loc[150, "chosen_score"] == 3 and out.loc[150, "prob"] == 1  # a numeric token is read as its text
    np.testing.assert_allclose(out.loc[~out["error_flag"], "prob"].drop(150), 0.8)


def test_several_occurrences_come_from_one_parse_stacked():
    lp = math.log
    reply = [{"token": t, "logprob": lp(p), "top_logprobs": [{"token": t, "logprob": lp(p)}, {"token": o, "logprob": lp(1 - p)}]}
             for t, o, p in (("1", "2", 0.9), ("4", "3", 0.6), ("2", "4", 0.7))]
    data = pd.DataFrame({"item_id": ["a", "b"], "logprobs": [json.dumps(reply), json.dumps(reply[:2])]}, index=[10, 11])
    out = logprob_confidence(data, scores=range(1, 5), occurrence=range(-3, 0))
    assert out.columns[:2].tolist() == ["item_id", "occurrence"]
    assert out.index.tolist() == [10, 11, 10, 11, 10, 11]
    assert out["occurrence"].tolist() == [-3, -3, -2, -2, -1, -1]
    np.testing.assert_allclose(out["prob"], [0.9, np.nan, 0.6, 0.9, 0.7, 0.6])
    assert out["error_flag"].tolist() == [False, True, False, False, False, False]
