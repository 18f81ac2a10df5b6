"""Issue 44: collecting from servers hce did not write (llama.cpp, vLLM, Ollama): the reply's own words."""

import re

import numpy as np
import pytest

from collect_helpers import design, fast_client

import hce
import hce.collect.call.pricing
from hce.collect.running.runner import run
from hce.sim import SimJudge


class CutJudge(SimJudge):
    """Every reply stopped at max_tokens before its score block, as a small local model's."""

    def _reply(self, fmt, prompt, item, model, draw, malformed, rng, shift=0.0, served=0):
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


@pytest.mark.parametrize("finish_reason, parsed, said", [
    ("content_filter", {"error_flag": True, "error_message": "no score line for Clarity"},
     "stopped by the provider's content filter before the score block (finish_reason=content_filter; no score line for Clarity)"),
    ("content_filter", {"error_flag": False, "error_message": None},
     "stopped by the provider's content filter after the score block began (its last score may be cut) "
     "(finish_reason=content_filter)"),
    ("length", {"error_flag": True, "error_message": "reply is not a single JSON object"},
     "cut at the server's token limit before the score block (finish_reason=length; reply is not a single JSON object)"),
])
def test_a_reply_stopped_by_a_content_filter_or_the_servers_limit_names_that_cause_first(finish_reason, parsed, said):
    # Issue 44 item 2: finish_reason length and content_filter are the first thing the message says; a reply that
    # parsed before the stop is flagged too (its last score may be the cut one), its scores cleared.
    from hce.collect.running.log_rows import _stopped_early

    row = {"clarity": 3.0, "total": 3.0, **parsed}
    _stopped_early(row, finish_reason, None, criteria=["clarity"])
    assert row["error_flag"] and row["error_message"] == said and row["clarity"] is None and row["total"] is None


def test_latency_is_the_whole_attempt_and_the_last_try_is_kept_beside_it(serve, tmp_path):
    from hce.sim import Faults

    server = serve(SimJudge(seed=3, faults=Faults(rate_500=0.5)))
    run(design(prompts=("P1.2",), attempts=4), tmp_path / "run.jsonl", client=fast_client(server, max_retries=10))
    log = hce.read_log(tmp_path / "run.jsonl")
    retried = log[log["retries"] > 0]
    assert len(retried) and (retried["latency_s"] > retried["latency_last_s"]).all()
    assert (log["latency_s"] >= log["latency_last_s"]).all()
    assert hce.log.COLUMNS["latency_last_s"].dtype == "float"


class LocalServer(SimJudge):
    """Answers every request with its own model file's name, as llama-server does."""

    def respond(self, *args, **kwargs):
        reply = super().respond(*args, **kwargs)
        if isinstance(reply.body, dict) and "model" in reply.body:
            reply.body = {**reply.body, "model": "gemma-3-270m-it-Q4_K_M.gguf"}
        return reply


def test_a_local_model_answering_for_a_priced_one_is_not_billed_and_is_named(serve, tmp_path):
    # Issue 44: llama-server answered gpt-4o-mini-2024-07-18 with its gemma file; hce billed it at gpt-4o-mini's rates.
    import warnings

    from hce.collect.call.pricing import UnpricedModelWarning
    from hce.report import report

    server = serve(LocalServer(seed=0))
    spec = design(prompts=("P1.2",), attempts=2, defaults={"model": "gpt-4o-mini-2024-07-18"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = run(spec, tmp_path / "run.jsonl", client=fast_client(server))
    said = [str(w.message) for w in caught if issubclass(w.category, UnpricedModelWarning)]
    assert said == ["model 'gemma-3-270m-it-Q4_K_M.gguf' answered where 'gpt-4o-mini-2024-07-18' was asked for "
                    "(endpoint 'default'): its calls are logged with an empty cost, never at another model's price; "
                    "set the endpoint's pricing (none, or its own prices) or price_model"]
    log = hce.read_log(tmp_path / "run.jsonl")
    assert log["cost_usd"].isna().all() and (log["model_version"] == "gemma-3-270m-it-Q4_K_M.gguf").all()
    assert summary.cost_usd == 0 and summary.served == (("gpt-4o-mini-2024-07-18", "gemma-3-270m-it-Q4_K_M.gguf"),)
    assert "model 'gemma-3-270m-it-Q4_K_M.gguf' answered where 'gpt-4o-mini-2024-07-18' was asked for" in str(summary)
    text = report(log).to_markdown()
    assert "asked for model 'gpt-4o-mini-2024-07-18'; 'gemma-3-270m-it-Q4_K_M.gguf' answered" in text


def test_an_endpoints_own_pricing_none_or_prices(serve, tmp_path):
    import warnings

    server = serve(LocalServer(seed=0))
    for pricing, expect in (("none", None), ({"input": 1.0, "output": 2.0}, "priced")):
        spec = design(prompts=("P1.2",), attempts=1, defaults={"model": "my-local-llama"},
                      endpoint={"base_url": server.url, "needs_key": False, "pricing": pricing})
        log_path = tmp_path / f"run_{expect}.jsonl"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the endpoint's own choice, whatever file it serves: no warning
            run(spec, log_path)
        log = hce.read_log(log_path)
        if expect is None:
            assert log["cost_usd"].isna().all()
        else:
            expected = (log["input_tokens"] * 1.0 + log["output_tokens"] * 2.0) / 1e6
            assert np.allclose(log["cost_usd"], expected)


@pytest.mark.parametrize("pricing", ["none", {"input": 1.0, "output": 2.0}])
def test_the_dry_run_and_the_spending_limit_price_by_the_endpoints_own_pricing(pricing):
    # Issue 44: the estimate priced a local endpoint's calls at gpt-4o-mini's rates (or as unpriced, so that
    # max_cost_usd refused the design) although the endpoint said pricing: none or gave its own prices.
    import warnings

    from hce.collect import load_design
    from hce.collect.estimates import estimate
    from hce.collect.projection import project
    from hce.collect.running.spend_limit import budget_stop

    for model in ("gpt-4o-mini-2024-07-18", "my-local-llama"):
        spec = design(prompts=("P1.2",), attempts=4, defaults={"model": model},
                      endpoint={"base_url": "http://127.0.0.1:8080/v1", "needs_key": False, "pricing": pricing})
        parsed = load_design(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the endpoint prices it: no "unpriced model" warning
            table = estimate(parsed)
            stop = budget_stop(parsed, None, 10.0)
        tokens_in, tokens_out = int(table["input_tokens"].sum()), int(table["output_tokens"].sum())
        expected = 0.0 if pricing == "none" else (tokens_in * 1.0 + tokens_out * 2.0) / 1e6
        assert table["cost_usd"].sum() == pytest.approx(expected, rel=1e-12)
        separate = project(parsed).set_index("strategy").loc["separate", "cost_usd"]
        assert separate == pytest.approx(0.0 if pricing == "none" else expected, rel=0.01)
        assert stop.endswith(f"all {int(table['calls'].sum()):,} calls fit (~${expected:,.4f} in all)"), stop
