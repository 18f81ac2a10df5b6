"""The statistical caveat of n-sampling, measured: within-request against between-request variance on logs
from the simulated judge, whose choices of one request share a shift only when asked (Profile.request_sd)."""

import pytest
from collect_helpers import fast_client

import hce
from hce.collect.running.runner import run
from hce.sim import Profile, SimJudge
from hce.errors import DataError
from hce.stats import request_variance

MODEL = "gpt-4.1-mini-2025-04-14"


def pilot(serve, tmp_path, request_sd, name):
    # 40 items x 6 attempts in requests of 3 (n = 3): two requests an item. Temperature 1, so the choices of
    # one request differ (at the PRD's 0.1 they would nearly all agree).
    judge = SimJudge(seed=11, profiles={MODEL: Profile(noise=1.0, request_sd=request_sd)})
    spec = {
        "experiment_id": "PILOT", "attempts": 6,
        "defaults": {"model": MODEL, "temperature": 1.0, "max_tokens": 200, "samples_per_request": 3},
        "conditions": [{"prompt": "P2.1"}],
        "items": [{"id": f"T{i}", "text": f"Doctor: How are you?\nPatient: Case {i}, my knee hurts on stairs."}
                  for i in range(40)],
    }  # fmt: skip
    log = tmp_path / f"{name}.jsonl"
    run(spec, log, client=fast_client(serve(judge)), concurrency=8)
    return hce.read_log(log)


def test_independent_choices_show_no_request_effect(serve, tmp_path):
    result = request_variance(pilot(serve, tmp_path, 0.0, "independent")).iloc[0]
    # The simulator draws each choice independently: s2_request's truth is 0. Margins: p > 0.05 (the test's
    # size), an intraclass correlation under 0.15 (its sampling SD with 80 requests of 3 is about 0.07).
    assert result["p_value"] > 0.05 and result["request_icc"] < 0.15
    assert (result["n_items"], result["n_requests"], result["n_shared"], result["n"]) == (40, 80, 80, 240)


def test_a_shared_request_state_is_detected(serve, tmp_path):
    result = request_variance(pilot(serve, tmp_path, 0.8, "shared")).iloc[0]
    # A shift of SD 0.8 a category, shared by a request's choices, against the choices' own spread
    # (a total's SD ~1.5 at noise 1.0): far from the boundary, p < 1e-6 with a wide margin.
    assert result["p_value"] < 1e-6 and result["request_icc"] > 0.3
    assert result["sd_within_request"] < result["sd_separate"]


def test_a_log_without_both_kinds_of_replicate_is_refused():
    import pandas as pd

    single = pd.DataFrame({"item_id": ["a", "a", "b", "b"], "total": [10, 11, 12, 13]})
    with pytest.raises(DataError, match="no request holds two attempts"):
        request_variance(single)
    one_request = pd.DataFrame({"item_id": ["a", "a"], "request_id": ["r", "r"], "total": [10, 11]})
    with pytest.raises(DataError, match="no item has two requests"):
        request_variance(one_request)
