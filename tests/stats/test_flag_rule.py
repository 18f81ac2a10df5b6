"""Issue 34: one error-flag rule for every statistic, and one score per attempt.

A flag that went through a CSV round trip (``"true"``/``"false"`` text, or object dtype
because one cell is blank) was ignored by icc, krippendorff_alpha, lmer,
variance_components, correlation, fleiss_kappa and vote_confidence, which kept the flagged
rows (Topical-Chat ICC1 0.4467 on 7,180 scores instead of 0.4481 on 7,177), while
item_spread refused the same frame. Each function must now give, on the text flags, the
answer it gives on boolean flags.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.errors import DataError


def log_frame():
    """20 items x 3 conditions x 2 attempts, scores 1-5; one flagged row holding a failed reply's 99."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(20):
        truth = rng.integers(1, 6)
        for c in ("A", "B", "C"):
            for a in (1, 2):
                rows.append({"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i}", "condition_id": c, "attempt": a,
                             "total": float(np.clip(truth + rng.integers(-1, 2), 1, 5)), "error_flag": False})
    frame = pd.DataFrame(rows)
    frame["human"] = frame.groupby("item_id")["total"].transform("mean") + rng.normal(0, 0.3, len(frame))
    frame.loc[6, ["total", "error_flag"]] = [99.0, True]
    return frame


CALLS = {
    "icc": lambda d: hs.icc(d[d["attempt"] == 1], item="item_id", rater="condition_id", score="total"),
    "krippendorff_alpha": lambda d: hs.krippendorff_alpha(d[d["attempt"] == 1], item="item_id", rater="condition_id",
                                                          score="total", n_boot=50, random_state=0),
    "lmer": lambda d: hs.lmer("total ~ condition_id + (1|item_id)", d).fixef(),
    "variance_components": lambda d: hs.variance_components(d, score="total", facets=["item_id", "condition_id"],
                                                            random_state=0).components,
    "correlation": lambda d: hs.correlation(d, x="total", y="human"),
    "fleiss_kappa": lambda d: hs.fleiss_kappa(d[d["attempt"] == 1], item="item_id", rater="condition_id", score="total"),
    "vote_confidence": lambda d: hs.vote_confidence(d, by=["condition_id"]),
    "item_spread": lambda d: hs.item_spread(d),
}


def quietly(call, frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the flagged row left out, a singular fit: the same on both sides
        return call(frame)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("spelling", ["text", "Title", "with a blank", "0/1"])
def test_every_statistic_reads_a_round_tripped_flag_as_the_boolean(name, spelling):
    frame = log_frame()
    expected = quietly(CALLS[name], frame)
    flags = {"text": ["true" if f else "false" for f in frame["error_flag"]],
             "Title": ["True" if f else "False" for f in frame["error_flag"]],
             "with a blank": ["true" if f else ("" if i == 3 else "false") for i, f in enumerate(frame["error_flag"])],
             "0/1": [1 if f else 0 for f in frame["error_flag"]]}[spelling]
    frame["error_flag"] = pd.Series(flags, dtype=object)
    got = quietly(CALLS[name], frame)
    pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(expected))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_flag_that_is_not_a_flag_is_refused_naming_the_values(name):
    frame = log_frame()
    frame["error_flag"] = pd.Series(["no"] * len(frame), dtype=object)
    frame.loc[6, "error_flag"] = "yes"
    with pytest.raises(DataError, match=r"column 'error_flag' \(error flag\) holds 'no', 'yes'; a flag is true/false"):
        quietly(CALLS[name], frame)


@pytest.mark.parametrize("name", ["item_spread", "lmer", "variance_components", "vote_confidence", "icc"])
def test_one_attempt_logged_under_two_ids_is_refused_naming_the_pair_and_both_ids(name):
    # Issue 34: the same (item, attempt) under two attempt_ids: item_spread reported n = 21 for an item, lmer used it.
    frame = log_frame()
    copy = frame.iloc[[10]].assign(attempt_id="extra-id")
    frame = pd.concat([frame, copy], ignore_index=True)
    with pytest.raises(DataError, match=r"the attempt \(item_id='T1', condition_id='C', attempt=1\) is logged twice, "
                                        r"as attempt_id '1-C-1' and 'extra-id'"):
        quietly(CALLS[name], frame)


def test_one_attempt_under_two_ids_is_refused_in_the_long_view_too():
    frame = log_frame()
    frame["clarity"], frame["tone"] = frame["total"], frame["total"]
    frame = pd.concat([frame, frame.iloc[[10]].assign(attempt_id="extra-id")], ignore_index=True)
    long = frame.melt(id_vars=["attempt_id", "item_id", "condition_id", "attempt", "error_flag"],
                      value_vars=["clarity", "tone"], var_name="criterion", value_name="score")
    with pytest.raises(DataError, match=r"the attempt \(item_id='T1', condition_id='C', criterion='clarity', attempt=1\) "
                                        r"is logged twice, as attempt_id '1-C-1' and 'extra-id'"):
        quietly(lambda d: hs.item_spread(d, score="score", criterion="criterion"), long)
