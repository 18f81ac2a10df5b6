"""Issue 44: collecting from servers hce did not write (llama.cpp, vLLM, Ollama): the reply's own words."""

import re

from collect_helpers import design, fast_client

import hce
from hce.collect.runner import run
from hce.collect.sim import SimJudge


class CutJudge(SimJudge):
    """Every reply stopped at max_tokens before its score block, as a small local model's."""

    def _reply(self, fmt, prompt, item, model, draw, malformed, rng, shift=0.0):
        return "Let me think about the clarity of this transcript. The doctor", "length"


def test_a_reply_cut_at_max_tokens_says_so_first_and_counts_as_flagged_not_failed(serve, tmp_path, capfd):
    # Issue 44: 30 rows with finish_reason length said "no score line for Clarity of Language"; the progress
    # line said "30 errors" for 30 answered, flagged replies.
    server = serve(CutJudge(seed=0))
    spec = design(prompts=("P1.2",), attempts=2, defaults={"model": "gpt-4.1-mini", "max_tokens": 60})
    summary = run(spec, tmp_path / "run.jsonl", client=fast_client(server), progress=True, progress_every=30)
    log = hce.read_log(tmp_path / "run.jsonl")
    assert log["error_flag"].all()
    assert log["error_message"].str.startswith("cut at max_tokens=60 before the score block (finish_reason=length; "
                                               "no score line for Clarity of Language)").all()
    assert summary.errors == 6 and summary.failed == 0
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"6 flagged replies, 0 failed calls", last), last


def test_latency_is_the_whole_attempt_and_the_last_try_is_kept_beside_it(serve, tmp_path):
    from hce.collect.sim import Faults

    server = serve(SimJudge(seed=3, faults=Faults(rate_500=0.5)))
    run(design(prompts=("P1.2",), attempts=4), tmp_path / "run.jsonl", client=fast_client(server, max_retries=10))
    log = hce.read_log(tmp_path / "run.jsonl")
    retried = log[log["retries"] > 0]
    assert len(retried) and (retried["latency_s"] > retried["latency_last_s"]).all()
    assert (log["latency_s"] >= log["latency_last_s"]).all()
    assert hce.log.COLUMNS["latency_last_s"].dtype == "float"
