"""A seeded dry run is reproducible end to end: each attempt's reply is a function of the seed, the
request and the attempt (issue 33), never of the order concurrent requests arrive in."""

import pandas as pd
from collect_helpers import MODEL, design, fast_client

import hce
from hce.collect.design.prompts import render
from hce.collect.running.runner import run
from hce.sim import Faults, SimJudge

BODY = {"model": MODEL, "temperature": 1.0,
        "messages": render("P1.2", rubric=hce.load_rubric("v5"), transcript="Doctor: How are you?\nPatient: My knee aches.")}  # fmt: skip
IDS = [f"attempt-{k}" for k in range(12)]


def replies(order, **faults):
    judge = SimJudge(seed=3, faults=Faults(**faults))
    out = {}
    for request_id in order:
        reply = judge.respond("POST", "/v1/chat/completions", BODY, request_id=request_id)
        out[request_id] = (reply.status, reply.body["choices"][0]["message"]["content"] if reply.status == 200 else None)
    return out


def test_identical_requests_get_their_attempts_replies_in_any_order():
    forward, backward = replies(IDS), replies(IDS[::-1])
    assert forward == backward
    assert len({text for _, text in forward.values()}) > 1  # attempts still differ: repeated scores have a spread
    # faults too: the k-th try of an attempt fails or not whatever came before it
    assert replies(IDS, rate_500=0.4) == replies(IDS[::-1], rate_500=0.4)


def test_a_concurrent_run_logs_the_same_scores_as_a_sequential_one(serve, tmp_path):
    scores = []
    for concurrency in (1, 8):
        server = serve(SimJudge(seed=7))
        log = tmp_path / f"run{concurrency}.jsonl"
        run(design(attempts=5), log, client=fast_client(server), concurrency=concurrency)
        frame = hce.read_log(log).set_index("attempt_id").sort_index()
        scores.append(frame[["total", "response_text"]])
    pd.testing.assert_frame_equal(*scores)
