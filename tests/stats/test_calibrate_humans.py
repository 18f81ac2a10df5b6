"""Tests for hce.stats.calibrate_to_humans. The isotonic mapping is checked against
scikit-learn 1.9 ``IsotonicRegression(out_of_bounds="clip")`` (tests/stats/data/isotonic_reference.json,
written by tests/stats/py/isotonic_reference.py)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError
from hce.stats import calibrate_to_humans
from hce.stats.calibrate_humans import apply_map, isotonic_map

CASES = json.loads((Path(__file__).parent / "data" / "isotonic_reference.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c['seed']}")
def test_isotonic_map_equals_scikit_learn(case):
    knots, fitted = isotonic_map(np.array(case["judge"]), np.array(case["human"]))
    got = apply_map(knots, fitted, np.array(case["query"]), None)
    np.testing.assert_allclose(got, case["predicted"], rtol=1e-10, atol=1e-12)


def test_cross_validated_agreement_improves_for_a_shifted_judge():
    case = CASES[0]
    df = pd.DataFrame({"judge_score": case["judge"], "human_score": case["human"]})
    out = calibrate_to_humans(df, method="ordinal", random_state=1)
    agreement = out["agreement"].set_index("method")
    # The judge scores on 0-11 against a 1-5 human scale: raw MAE is large, the mapping's is not.
    assert agreement.loc["after", "mae"] < agreement.loc["before", "mae"]
    assert set(out["calibrated"]["calibrated_score"]) <= set(case["human"])
    again = calibrate_to_humans(df, method="ordinal", random_state=1)["agreement"]
    pd.testing.assert_frame_equal(again, out["agreement"])


def test_unlabelled_rows_get_a_calibrated_score_and_bad_input_is_named():
    df = pd.DataFrame({"judge_score": [1, 2, 3, 4] * 5 + [2.5], "human_score": [1, 1, 2, 3] * 5 + [None]})
    out = calibrate_to_humans(df, random_state=0)["calibrated"]
    assert out["calibrated_score"].iloc[-1] == pytest.approx(1.5)
    with pytest.raises(DataError, match="need at least 10"):
        calibrate_to_humans(df.head(6))
    with pytest.raises(DataError, match="n_folds"):
        calibrate_to_humans(df, n_folds=1)
