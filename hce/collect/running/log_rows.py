"""The log rows of a call: each attempt's settings, the call's record and its parsed reply.

Online and batch runs make their rows here, so their logs differ only in the timing fields
and in the batch discount of ``cost_usd``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hce.collect.call.client import CallResult
from hce.collect.design.design import Attempt, Design
from hce.collect.design.fingerprint import settings_hash
from hce.collect.call.parse import flag, parse_reply, parse_synthetic
from hce.collect.call.pricing import Price, cost_usd, price_of
from hce.collect.design.probes import probe_columns
from hce.collect.call.sampling import Request, split_result
from hce.collect.design.transcripts import clean_text
from hce.log_schema import SCHEMA
from hce.log_schema import served_as_requested


def request_rows(
    request: Request, design: Design, messages: list[dict[str, str]], result: CallResult, *, batch: bool = False
) -> list[tuple[dict[str, Any], CallResult]]:
    """The log rows of one request's attempts, each with its share of the call (:mod:`hce.collect.call.sampling`)."""
    shared = request.request_id if request.attempts[0].condition.samples_per_request > 1 else None
    parts = split_result(result, request.n)
    return [
        (attempt_row(attempt, design, messages, part, batch=batch, request_id=shared), part)
        for attempt, part in zip(request.attempts, parts, strict=True)
    ]


def attempt_row(
    attempt: Attempt,
    design: Design,
    messages: list[dict[str, str]],
    result: CallResult,
    *,
    batch: bool = False,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The log row of one attempt: its settings, the call's record and the parsed reply.

    Online and batch calls go through this same function, so their logs differ only in the
    timing fields (``timestamp``, ``latency_s``, ``retries``) and in ``cost_usd`` (a batch
    call is priced at the batch discount). ``request_id`` is logged for the attempts of a
    request with n > 1 (:mod:`hce.collect.call.sampling`).
    """
    cond, item = attempt.condition, attempt.item
    custom = design.prompts.get(cond.prompt_id)
    row: dict[str, Any] = {
        "attempt_id": attempt.attempt_id,
        "experiment_id": design.experiment_id,
        "item_id": item.id,
        "condition_id": cond.id,
        "prompt_id": cond.prompt_id,
        "model": cond.model,
        "model_version": result.model_version,
        "attempt": attempt.attempt,
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "temperature": cond.temperature,
        "max_tokens": cond.max_tokens,
        "top_p": cond.top_p,
        "seed": cond.seed,
        "endpoint": cond.endpoint,
        "settings_hash": settings_hash(cond, design),
        "request": messages,
        # Characters taken out of the transcript before it was sent; None for prompts without one.
        "cleaned_chars": None if custom or cond.prompt_id in ("BOOL", "SYNTH") else item.cleaned_chars + clean_text(item.text).count,
        "response_text": result.response_text,
        "finish_reason": result.finish_reason,
        "logprobs": result.logprobs,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cached_tokens": result.cached_tokens,
        "cache_write_tokens": result.cache_write_tokens,
        "cost_usd": None,
        "latency_s": result.latency_s,
        "latency_last_s": result.latency_last_s,
        "retries": result.retries,
        # Seed 000 section 12: log every error; a retried try's error would otherwise vanish.
        "retry_errors": json.dumps(result.tries) if result.tries else None,  # JSON text, as `request`
    }
    if result.input_tokens is not None:
        row["cost_usd"] = _cost(cond, design.endpoints[cond.endpoint], result, batch)
    if request_id is not None:  # one attempt a request has no column of it: logs made before n-sampling are unchanged
        row["request_id"] = request_id
    if design.stop_rule is not None:  # the rule and which attempts the spread statistics may read (hce.collect.running.stopping)
        row["stop_rule"] = design.stop_rule.as_json()
        row["within_min"] = attempt.attempt <= design.stop_rule.min
    row["system_fingerprint"] = result.system_fingerprint  # the backend configuration; fp_hce_sim_* when simulated
    if cond.behavior is not None:
        row["behavior_id"] = cond.behavior.behavior_id
    if design.golden_run is not None:  # a golden-set period (hce collect --golden): hs.drift(period="golden_run")
        row["golden_run"] = design.golden_run
    row.update(item.metadata)
    row.update(probe_columns(cond, item.id, design.rubric))  # a probe's twin: probe_id and base_condition_id, so pairs match
    if custom is not None:
        parsed = dict(custom.parse(item, result.response_text if result.ok else None))
        if not result.ok:
            parsed.update(error_flag=True, error_message=result.error_message)
    elif not result.ok:
        parsed = parse_reply(cond.prompt_id, None, rubric=design.rubric, fmt=cond.reply_format)
        parsed["error_message"] = result.error_message
    elif cond.prompt_id == "SYNTH":
        parsed = parse_synthetic(result.response_text, target_total=item.metadata.get("target_total"), rubric=design.rubric)
    else:
        parsed = parse_reply(cond.prompt_id, result.response_text, rubric=design.rubric, fmt=cond.reply_format,
                             structured=cond.response_format == "json_schema")
    if result.ok and result.finish_reason in STOPPED_EARLY:
        _stopped_early(parsed, result.finish_reason, cond.max_tokens, criteria=() if custom else design.rubric.criteria)
    row.update(parsed)
    order = [c.name for c in SCHEMA]
    return {**{k: row[k] for k in order if k in row}, **{k: v for k, v in row.items() if k not in order}}


def _cost(cond: Any, endpoint: Any, result: CallResult, batch: bool) -> float | None:
    """The call's cost, or None: never at another model's price.

    An endpoint's ``pricing: none`` prices nothing; its own prices price every call. Else the
    table prices ``price_model`` when set; a served model the table knows (an Azure
    deployment answers with the model behind it); or the requested one, but only when the
    reply names that model (or nothing): a local server answering with its own file is
    left unpriced, with a warning (:class:`~hce.collect.running.run_summary.Tally`).
    """
    if endpoint.pricing == "none":
        return None
    tokens = (result.input_tokens, result.output_tokens, result.cached_tokens)
    if isinstance(endpoint.pricing, Price):
        return cost_usd(cond.model, *tokens, prices={cond.model: endpoint.pricing}, batch=batch, warn=False,
                        cache_write_tokens=result.cache_write_tokens)
    served = result.model_version
    if cond.price_model:
        priced = cond.price_model
    elif price_of(served) and not price_of(cond.model):
        priced = served
    elif served_as_requested(cond.model, served):
        priced = cond.model
    else:
        return None
    return cost_usd(priced, *tokens, batch=batch, warn=False, cache_write_tokens=result.cache_write_tokens)


#: finish_reason values that mean the reply was stopped before the judge finished it.
STOPPED_EARLY = ("length", "content_filter")


def _stopped_early(parsed: dict[str, Any], finish_reason: str, max_tokens: int | None, *, criteria: Any) -> None:
    """Flag a reply stopped early, the cause first: a parse error after a cut is the cut's doing, not the model's.

    Examples
    --------
    >>> row = {"error_flag": True, "error_message": "no score line for Clarity"}
    >>> _stopped_early(row, "length", 60, criteria=())
    >>> row["error_message"]
    'cut at max_tokens=60 before the score block (finish_reason=length; no score line for Clarity)'
    """
    cause = (f"cut at max_tokens={max_tokens}" if max_tokens is not None else "cut at the server's token limit") \
        if finish_reason == "length" else "stopped by the provider's content filter"
    said = parsed.get("error_message") if parsed.get("error_flag") else None
    where = "before the score block" if said else "after the score block began (its last score may be cut)"
    parsed["error_flag"], parsed["error_message"] = False, None
    flag(parsed, f"{cause} {where} (finish_reason={finish_reason}{f'; {said}' if said else ''})", criteria=criteria)
