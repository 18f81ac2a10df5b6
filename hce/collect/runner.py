"""Run a design: every attempt called concurrently, parsed, and appended to the log at once.

Each finished attempt is one JSONL line, written and flushed as soon as it finishes, so a
run stopped in any way (Ctrl-C, a crash, ``kill -9``) loses at most the calls in flight.
Running the same design against the same log again skips the ``attempt_id`` values
already logged (ids are deterministic: experiment, item, condition, attempt number), so
the run resumes with nothing duplicated and nothing lost.

An attempt whose call failed after its retries (a timeout, a dropped connection, an HTTP
4xx or 5xx) is logged with ``error_flag`` and counts as done. ``retry_failed=True``
(``--retry-failed``) first moves the rows of such failed calls out of the log into
``<log>.retried.jsonl`` (crash-safely: :mod:`hce.collect.failed`), so the run sends them
again, after an outage say. A reply that came back unusable (malformed, unparsable, cut
off at ``max_tokens``) is a flagged row that stays: it is never re-asked, because
re-asking would bias the sample towards well-formed answers.

A systematic failure stops the run early: when ``max_same_errors`` consecutive calls of
one condition, for more than one item, are refused with the same HTTP 4xx error (a
setting the model does not accept, say) or get no answer after their retries (timeouts,
connection errors: a dead endpoint), nothing more is sent, the calls in flight are
finished and logged, and :class:`~hce.errors.CollectError` names the condition, the model
and the error. Attempts not sent are not logged: fixing the design or the endpoint and
running again with ``retry_failed=True`` sends them and the failed ones. A wrong key or
an unknown model (401, 403 or 404) or a redirect, on any endpoint, stops the run the same
way at its first call, the calls in flight to every endpoint finished and logged, and
raises :class:`FatalCallError` saying what to fix; so does any unexpected error. A
spending limit (``max_cost_usd``) stops launching calls the same way, before the log's
cost plus the estimates of the calls in flight would pass it. A reply received is written
to a write-ahead record before the log (:mod:`hce.collect.journal`): when the log cannot be
written (a full disk), the run stops with one line naming it and the cause, and the next
run logs those replies without sending them again.

Only one run writes a log at a time (:mod:`hce.collect.lock`); transcripts are cleaned by
:func:`~hce.collect.transcripts.clean_text` before they enter a prompt, and the log's
``cleaned_chars`` counts what was taken out.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked, keywords_of
from hce.collect.client import CallResult, JudgeClient, endpoint_key
from hce.collect.design import Attempt, Condition, Design, Endpoint, Item, load_design
from hce.collect.failed import call_failed, failed_attempt_ids, retried_path, set_aside_failed
from hce.collect.fingerprint import (
    Change,
    changed_settings,
    check_resume,
    keep_settings,
    set_aside_changed,
    settings_hash,
    superseded_path,
)
from hce.collect.journal import Journal, recover, recorded_rows
from hce.collect.lock import one_writer
from hce.collect.parse import flag, parse_reply, parse_synthetic
from hce.collect.pricing import (
    UnpricedModelWarning,
    cost_usd,
    price_of,
    unpriced_message,
)
from hce.collect.prompts import REPLY_FORMAT, render
from hce.collect.sampling import Request, group_requests, split_result
from hce.collect.stops import MAX_SAME_ERRORS, Budget, FailFast, Halt, logged_cost
from hce.collect.transcripts import clean_text
from hce._warnings import warn
from hce.errors import CollectError
from hce.log import SCHEMA, logged_attempt_ids
from hce.rubric import load_rubric, log_rubric_path, rubric_yaml

# Typical reply lengths in tokens, for estimates only (capped by max_tokens). A score block and a
# step-by-step reply grow with the rubric (:func:`_expected_output`); these are their Rubric v5.0 sizes.
TYPICAL_OUTPUT_TOKENS = {"total": 2, "scores": 53, "cot": 453, "verdict": 45, "synthetic": 700}
CHARS_PER_TOKEN = 4  # a rough rule for English text; the estimate says it is rough
REASONING_TOKENS = 80  # a step-by-step reply's paragraph per criterion, before its score block


@dataclass(frozen=True)
class RunSummary:
    """What a run did, as :func:`run` returns it.

    Attributes
    ----------
    planned, skipped, done : int
        Attempts of the design, those already logged, and those run now.
    errors, retries : int
        Attempts flagged among ``done``, and retries in total.
    cost_usd, wall_s : float
        Cost of the priced calls, and wall time.
    log : str
        The attempt log written.
    retried : int
        Rows of failed calls moved out of the log to be sent again.
    failed : int
        Calls that got no reply (``hce.collect.failed.call_failed``), among the flagged.
    superseded : tuple
        Conditions whose rows made with other settings were moved out (``new_settings=True``).
    not_applicable : int
        Criterion scores the judge answered with the rubric's "not applicable" label
        (missing by design, not errors).

    Examples
    --------
    >>> from hce.collect import RunSummary
    >>> print(RunSummary(planned=4, skipped=1, done=3, errors=0, retries=0, cost_usd=0.01,
    ...                  wall_s=2.0, log="run.jsonl"))
    3 attempts run, 1 already logged, of 4 planned; 0 flagged, 0 retries, $0.0100, 2.0 s -> run.jsonl
    """

    planned: int
    skipped: int
    done: int
    errors: int
    retries: int
    cost_usd: float
    wall_s: float
    log: str
    retried: int = 0
    failed: int = 0
    superseded: tuple[Change, ...] = ()  # conditions started afresh with new settings (--new-settings)
    not_applicable: int = 0  # criterion scores the judge answered with the rubric's "not applicable" label

    @property
    def all_failed(self) -> bool:
        """Whether calls were made and not one got a reply (the CLI then exits non-zero)."""
        return self.done > 0 and self.failed == self.done

    def __str__(self) -> str:
        again = ""
        if self.retried:
            again = f" ({self.retried:,} failed calls sent again; their old rows: {retried_path(self.log)})"
        if self.superseded:
            names = ", ".join(repr(c.condition_id) for c in self.superseded)
            again += f" (conditions {names} started afresh with new settings; their old rows: {superseded_path(self.log)})"
        failed = f" ({self.failed:,} calls got no reply)" if self.failed else ""
        if self.not_applicable:
            failed += f" ({self.not_applicable:,} criterion scores not applicable, missing by the rubric's design)"
        return (
            f"{self.done:,} attempts run, {self.skipped:,} already logged, of {self.planned:,} planned{again}; "
            f"{self.errors:,} flagged{failed}, {self.retries:,} retries, ${self.cost_usd:,.4f}, {self.wall_s:.1f} s "
            f"-> {self.log}"
        )


def _messages(item: Item, cond: Condition, design: Design) -> list[dict[str, str]]:
    if cond.prompt_id in design.prompts:
        return design.prompts[cond.prompt_id].render(item)
    if cond.prompt_id == "BOOL":
        return render("BOOL", behavior=cond.behavior, case=item.case)
    if cond.prompt_id == "SYNTH":
        return render("SYNTH", rubric=design.rubric, target_total=int(item.metadata["target_total"]))
    return render(cond.prompt_id, rubric=design.rubric, transcript=clean_text(item.text).text, template=cond.template,
                  examples=cond.examples)


def _expected_output(cond: Condition, criteria: Sequence[str]) -> int:
    """Output tokens one reply of ``cond`` is assumed to take, capped by ``max_tokens`` (estimates only).

    A score block (``scores``) is a line per criterion of the design's rubric, ``name: score``,
    and a total line: each line its name's characters / 4 (the prompt's token rule) plus 3 for
    ": ", the score and the newline, and 5 for the total; a step-by-step reply (``cot``) writes
    :data:`REASONING_TOKENS` of reasoning per criterion before that block. So the estimate
    follows the rubric (53 and 453 for Rubric v5.0's five criteria; the simulated judge writes
    51 and about 450 of its tokens). Other formats: :data:`TYPICAL_OUTPUT_TOKENS`.

    >>> from hce.collect.design import Condition
    >>> _expected_output(Condition("c", "P2.1", "m"), ["accuracy", "completeness"])  # (2 + 3) + (3 + 3) + 5
    16
    >>> _expected_output(Condition("c", "P2.3", "m"), ["accuracy", "completeness"])  # and 2 x 80 of reasoning
    176
    """
    if cond.template is None and cond.prompt_id not in REPLY_FORMAT:  # a CustomPrompt: no typical length known, so the cap
        return cond.max_tokens or TYPICAL_OUTPUT_TOKENS["cot"]
    typical = TYPICAL_OUTPUT_TOKENS[cond.reply_format]
    if cond.reply_format in ("scores", "cot") and criteria:
        typical = sum(math.ceil(len(name) / CHARS_PER_TOKEN) + 3 for name in criteria) + 5
        typical += REASONING_TOKENS * len(criteria) if cond.reply_format == "cot" else 0
    return min(typical, cond.max_tokens) if cond.max_tokens else typical


def _input_tokens(messages: list[dict[str, str]]) -> int:
    return math.ceil(sum(len(m["content"]) for m in messages) / CHARS_PER_TOKEN)


@keywords_checked
def estimate(
    design: Design | str | os.PathLike,
    *,
    log: str | os.PathLike | None = None,
    batch: bool = False,
    retry_failed: bool = False,
    new_settings: bool = False,
) -> pd.DataFrame:
    """Calls, tokens and cost a run would make, per condition, before anything is sent.

    Input tokens are the rendered prompts' characters / 4; output tokens a typical reply
    length for the prompt's format (2 for a bare total, 45 for a score block, 450 for
    step-by-step reasoning), capped by ``max_tokens``. Both are rough: use them to decide
    whether to run, not to budget to the cent. Attempts already in ``log`` are left out,
    except, with ``retry_failed=True``, those whose call failed (they would be sent again)
    and, with ``new_settings=True``, those of conditions whose settings changed (they would
    start afresh; without it such a log raises, as the run would); ``batch=True`` prices
    the calls at the Batch API's discount.

    Parameters
    ----------
    design : Design or path of a design YAML
    log : path, optional
        The attempt log a run would resume.
    batch, retry_failed, new_settings : bool
        As for :func:`run_batch` and :func:`run`.

    Returns
    -------
    DataFrame
        One row per condition: ``condition_id``, ``prompt_id``, ``endpoint`` (its name),
        ``host``, ``model``, ``temperature``, ``max_tokens``, ``calls`` (requests: one per
        ``samples_per_request`` attempts, the prompt counted once), ``input_tokens``,
        ``output_tokens``, ``cost_usd`` (NaN for unpriced models).

    Examples
    --------
    >>> d = load_design({"attempts": 10, "conditions": [{"prompt": "P1.1", "model": "gpt-4o"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> estimate(d)[["calls", "output_tokens"]].to_dict("records")
    [{'calls': 10, 'output_tokens': 20}]
    """
    design = design if isinstance(design, Design) else load_design(design)
    fresh: set[str] = set()
    if log is not None and new_settings:
        fresh = {change.condition_id for change in changed_settings(design, log)}
    elif log is not None:
        check_resume(design, log)
    # Replies an earlier run received but could not log are done: the run logs them without sending them.
    done = logged_attempt_ids(log) | {row["attempt_id"] for row in recorded_rows(log)} if log is not None else set()
    if retry_failed and log is not None:
        done -= failed_attempt_ids(log)
    rows = {c.id: dict(condition_id=c.id, prompt_id=c.prompt_id, endpoint=c.endpoint, host=design.endpoint_of(c).host,
                       model=c.model, temperature=c.temperature, max_tokens=c.max_tokens, calls=0, input_tokens=0,
                       output_tokens=0)
            for c in design.conditions}  # fmt: skip
    sizes: dict[tuple[str, str], int] = {}
    todo = [a for a in design.plan() if a.attempt_id not in done or a.condition.id in fresh]
    for request in group_requests(todo):  # a call per request: n attempts when samples_per_request > 1
        attempt = request.attempts[0]
        cond, row = attempt.condition, rows[attempt.condition.id]
        key = (attempt.item.id, cond.id)
        if key not in sizes:
            sizes[key] = _input_tokens(_messages(attempt.item, cond, design))
        row["calls"] += 1
        row["input_tokens"] += sizes[key]
        row["output_tokens"] += _expected_output(cond, design.rubric.criteria) * request.n
    table = pd.DataFrame(list(rows.values()))
    costs = []
    for cond in design.conditions:
        row = rows[cond.id]
        cost = cost_usd(cond.price_model or cond.model, row["input_tokens"], row["output_tokens"], batch=batch)
        costs.append(float("nan") if cost is None else cost)
    table["cost_usd"] = costs
    return table


class _RateLimit:
    """A token bucket refilled at ``per_minute / 60`` units a second, holding one second's worth.

    One second's worth, not a minute's, because providers enforce per-minute limits over
    shorter windows. A call larger than the bucket waits for a full bucket and leaves a
    debt the next calls wait out, so the long-run rate is the limit exactly.
    """

    def __init__(self, per_minute: float):
        self.rate = float(per_minute) / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, amount: float) -> None:
        need = min(float(amount), self.capacity)
        async with self.lock:  # first come, first served
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.level >= need:
                    self.level -= float(amount)
                    return
                await asyncio.sleep((need - self.level) / self.rate)


def call_settings(cond: Condition) -> dict[str, Any]:
    """The sampling settings of a condition's calls, as :meth:`JudgeClient.complete` and :func:`chat_body` take them."""
    return dict(
        model=cond.model,
        temperature=cond.temperature,
        max_tokens=cond.max_tokens,
        top_p=cond.top_p,
        seed=cond.seed,
        logprobs=cond.logprobs,
        top_logprobs=cond.top_logprobs,
        prompt_cache_key=cond.prompt_cache_key,
    )


def prompt_cache(design: Design, size: int) -> Callable[[str, str], list[dict[str, str]]]:
    """``messages(item_id, condition_id)``, the rendered prompt, kept for the last ``size`` pairs.

    Attempts of one item x condition come together: a small cache serves them all without
    holding every prompt of a large design in memory.
    """
    items = {item.id: item for item in design.items}
    conditions = {cond.id: cond for cond in design.conditions}

    @functools.lru_cache(maxsize=size)
    def messages(item_id: str, condition_id: str) -> list[dict[str, str]]:
        return _messages(items[item_id], conditions[condition_id], design)

    return messages


def pending(design: Design, log: str | os.PathLike) -> tuple[list[Attempt], list[Attempt]]:
    """(every planned attempt, those not yet in ``log``), in plan order.

    Raises :class:`CollectError` when the log holds rows of a condition made with other
    settings or of an item whose text changed (:func:`~hce.collect.fingerprint.check_resume`)
    or another rubric. What the rows are made of is kept beside the log
    (``<log>.settings.json``), and a rubric other than v5 (``<log>.rubric.yaml``) for the
    report to read.
    """
    check_resume(design, log)
    keep_settings(design, log)  # what the rows are made of, so a later change is named exactly
    keep_rubric(design, log)
    planned = design.plan()
    logged = logged_attempt_ids(log)
    return planned, [a for a in planned if a.attempt_id not in logged]


def keep_rubric(design: Design, log: str | os.PathLike) -> None:
    """Write the design's rubric beside the log, or stop if the log was judged with another one."""
    if design.rubric == load_rubric("v5"):
        return  # the PRD's rubric: the report knows it from the log's columns
    path, text = log_rubric_path(log), rubric_yaml(design.rubric)
    if path.exists() and load_rubric(path) != design.rubric:
        raise CollectError(f"{log} was judged with the rubric in {path} ({load_rubric(path).name!r}), not with this "
                           f"design's rubric {design.rubric.name!r}; write to a new log (or remove both files)")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


class Tally:
    """Running counts of a run (done, errors, retries, cost) that warns once per unpriced model."""

    def __init__(self) -> None:
        self.counts = {"done": 0, "errors": 0, "failed": 0, "retries": 0, "cost": 0.0, "not_applicable": 0}
        self._unpriced: set[str] = set()

    def add(self, row: Mapping[str, Any], result: CallResult, cond: Condition, *, call: bool = True) -> None:
        """Count one logged row; ``call=False`` for the second and later rows of one request (its retries count once)."""
        counts = self.counts
        counts["done"] += 1
        counts["errors"] += bool(row["error_flag"])
        counts["failed"] += call_failed(row)
        counts["not_applicable"] += len(row["not_applicable"].split(",")) if row.get("not_applicable") else 0
        counts["retries"] += result.retries if call else 0
        if row["cost_usd"] is not None:
            counts["cost"] += row["cost_usd"]
        elif result.input_tokens is not None and cond.model not in self._unpriced:
            self._unpriced.add(cond.model)
            warn(unpriced_message(cond.price_model or cond.model), UnpricedModelWarning)  # at the caller's line

    def summary(
        self, planned: int, todo: int, started: float, log: str | os.PathLike, *, retried: int = 0,
        superseded: Sequence[Change] = (),
    ) -> RunSummary:
        counts = self.counts
        return RunSummary(
            planned=planned,
            skipped=planned - todo,
            done=counts["done"],
            errors=counts["errors"],
            retries=counts["retries"],
            cost_usd=counts["cost"],
            wall_s=time.perf_counter() - started,
            log=str(Path(log)),
            retried=retried,
            failed=counts["failed"],
            superseded=tuple(superseded),
            not_applicable=counts["not_applicable"],
        )


def request_rows(
    request: Request, design: Design, messages: list[dict[str, str]], result: CallResult, *, batch: bool = False
) -> list[tuple[dict[str, Any], CallResult]]:
    """The log rows of one request's attempts, each with its share of the call (:mod:`hce.collect.sampling`)."""
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
    request with n > 1 (:mod:`hce.collect.sampling`).
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
        "retries": result.retries,
        # Seed 000 section 12: log every error; a retried try's error would otherwise vanish.
        "retry_errors": json.dumps(result.tries) if result.tries else None,  # JSON text, as `request`
    }
    if result.input_tokens is not None:
        priced = cond.price_model or (result.model_version if price_of(result.model_version) else cond.model)
        row["cost_usd"] = cost_usd(
            priced, result.input_tokens, result.output_tokens, result.cached_tokens, batch=batch, warn=False,
            cache_write_tokens=result.cache_write_tokens,
        )
    if request_id is not None:  # one attempt a request has no column of it: logs made before n-sampling are unchanged
        row["request_id"] = request_id
    row["system_fingerprint"] = result.system_fingerprint  # the backend configuration; fp_hce_sim_* when simulated
    if cond.behavior is not None:
        row["behavior_id"] = cond.behavior.behavior_id
    row.update(item.metadata)
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
        parsed = parse_reply(cond.prompt_id, result.response_text, rubric=design.rubric, fmt=cond.reply_format)
    if result.ok and result.finish_reason == "length" and not parsed.get("error_flag"):
        flag(parsed, "the reply was cut off at max_tokens (finish_reason=length)", criteria=() if custom else design.rubric.criteria)
    row.update(parsed)
    order = [c.name for c in SCHEMA]
    return {**{k: row[k] for k in order if k in row}, **{k: v for k, v in row.items() if k not in order}}


def _check_texts(design: Design) -> None:
    """Refuse, before any call, a transcript that is empty once cleaned (only control or zero-width characters)."""
    if {c.prompt_id for c in design.conditions} <= {"BOOL", "SYNTH", *design.prompts}:
        return
    for item in design.items:
        if not clean_text(item.text or "").text.strip():
            raise CollectError(f"item {item.id!r}: the transcript is empty once control and zero-width characters are removed")


def _check_budget(design: Design, limit: Any) -> None:
    """Refuse a spending limit that is not a positive number, or that cannot bound an unpriced model's calls."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
        raise CollectError(f"max_cost_usd must be a number of USD > 0, got {limit!r}")
    unpriced = sorted({c.price_model or c.model for c in design.conditions if price_of(c.price_model or c.model) is None})
    if unpriced:
        raise CollectError(
            f"max_cost_usd cannot bound the spend on unpriced model(s) {unpriced}: give their conditions a price_model "
            "(the priced model they cost as) or run without the limit"
        )


def _call_estimate(
    cond: Condition, messages: list[dict[str, str]], criteria: Sequence[str], *, batch: bool = False, n: int = 1
) -> float | None:
    """The estimated cost of one call asking for ``n`` choices (as :func:`estimate` prices it); None for an unpriced model."""
    return cost_usd(
        cond.price_model or cond.model, _input_tokens(messages), _expected_output(cond, criteria) * n, batch=batch, warn=False
    )


def check_keys(design: Design, base_url: str | None = None) -> None:
    """Read every used endpoint's key variable, as a run would before its first call (for ``--dry-run``).

    Raises
    ------
    CollectError
        Naming the endpoint and the variable that is unset or empty (never a key).
    """
    for endpoint in used_endpoints(design):
        endpoint_key(endpoint.name, base_url or endpoint.base_url, endpoint.api_key_env, needs_key=endpoint.needs_key)


def budget_stop(design: Design, log: str | os.PathLike | None, limit: float, *, batch: bool = False) -> str:
    """Where ``max_cost_usd=limit`` would stop a run of ``design`` on ``log``, in one line (for ``--dry-run``).

    The calls are taken in plan order at the dry run's estimates, as the run launches them;
    the run settles each call at its logged cost, so it stops near here, a call or two
    later when the replies cost less than estimated.

    Examples
    --------
    >>> d = load_design({"attempts": 100, "conditions": [{"prompt": "P1.2", "model": "gpt-4o"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> budget_stop(d, None, 0.05)  # doctest: +ELLIPSIS
    'with max_cost_usd=$0.0500: the log holds $0.0000; the run would stop after about ... of 100 calls (~$0.04...'
    """
    _check_budget(design, limit)
    spent = logged_cost(log) if log is not None else 0.0
    done = logged_attempt_ids(log) | {row["attempt_id"] for row in recorded_rows(log)} if log is not None else set()
    requests = group_requests([a for a in design.plan() if a.attempt_id not in done])
    messages = prompt_cache(design, 64)
    total, fit = spent, 0
    for request in requests:
        cond = request.attempts[0].condition
        cost = _call_estimate(cond, messages(request.attempts[0].item.id, cond.id), design.rubric.criteria,
                              batch=batch, n=request.n) or 0.0
        if total + cost > limit:
            break
        total, fit = total + cost, fit + 1
    head = f"with max_cost_usd=${limit:,.4f}: the log holds ${spent:,.4f}; "
    if fit == len(requests):
        return head + f"all {len(requests):,} calls fit (~${total:,.4f} in all)"
    return head + (f"the run would stop after about {fit:,} of {len(requests):,} calls (~${total:,.4f} at these estimates; "
                   "later when the replies cost less than estimated, sooner when more)")


def check_batch_budget(
    design: Design,
    log: str | os.PathLike,
    attempts: list[Attempt],
    limit: float | None,
    messages_for: Callable[[str, str], list[dict[str, str]]],
) -> None:
    """Refuse to submit ``attempts`` as batches when the log's spend plus their estimate would pass ``limit``.

    A submitted batch is paid whole, so the limit is checked for all its requests before any is sent.
    """
    if limit is None:
        return
    _check_budget(design, limit)
    cost = sum(
        _call_estimate(r.attempts[0].condition, messages_for(r.attempts[0].item.id, r.attempts[0].condition.id),
                       design.rubric.criteria, batch=True, n=r.n)
        for r in group_requests(attempts)
    )  # fmt: skip
    spent = logged_cost(log)
    if spent + cost > limit:
        raise CollectError(
            f"nothing was submitted: the log holds ${spent:,.4f} of calls and these {len(attempts):,} batch requests "
            f"would add ~${cost:,.4f}, passing max_cost_usd=${limit:,.4f}. Raise run.max_cost_usd (or --max-cost), "
            "or send fewer attempts."
        )


@keywords_checked
@one_writer  # one collector per log (hce.collect.lock)
@fill_doc
async def run_async(
    design: Design | str | os.PathLike | Mapping[str, Any],
    log: str | os.PathLike,
    *,
    client: JudgeClient | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    retry_failed: bool = False,
    new_settings: bool = False,
    max_same_errors: int | None = MAX_SAME_ERRORS,
    max_cost_usd: float | None = None,
    progress: bool = False,
    progress_every: float = 30.0,
    random_state: int | None = None,
) -> RunSummary:
    """Run a design into a JSONL attempt log, skipping attempts already logged there.

    Parameters
    ----------
    design : Design, path of a design YAML, or mapping
    log : path
        The JSONL log to append to (created if missing). Rerunning resumes.
    client : JudgeClient, optional
        Default: one client per endpoint the conditions use, each with the key of the
        variable its endpoint names (read, for every endpoint, before anything is sent).
        A ``client`` or ``base_url``/``api_key`` stands for the endpoint of a design that
        uses one; for a design with several it is refused.
    base_url, api_key : str, optional
        The server and key of the design's one endpoint (default: the endpoint's
        ``base_url``, else ``$OPENAI_BASE_URL``, and the variable ``api_key_env`` names).
    concurrency : int, optional
        Calls in flight at once in the whole run (default: the design's ``run``, else 8);
        an endpoint's own ``concurrency`` caps its share.
    requests_per_minute, tokens_per_minute : float, optional
        Client-side limits of the whole run (token bucket; tokens are the estimated input
        plus the typical output of each call, reserved before it is sent); an endpoint's
        own limits apply to its calls as well.
    retry_failed : bool
        First move the rows of attempts whose call failed (no reply: a timeout, a dropped
        connection, an HTTP 4xx or 5xx after the retries; or a request failed inside a
        batch) out of the log, appending them to ``<log>.retried.jsonl``, so they are sent
        again. Rows of replies that came back unusable (malformed, unparsable, cut off)
        stay: they are never re-asked.
    new_settings : bool
        A condition whose settings changed under the same id (see
        ``hce.collect.fingerprint``) starts afresh: its old rows move to
        ``<log>.superseded.jsonl``. Without it such a log stops the run before any call.
    max_same_errors : int or None
        Stop the run when this many consecutive calls of one condition, for more than one
        item, are refused with the same HTTP 4xx error, or get no answer at all (timeouts,
        connection errors, after the retries); default 10; None never stops.
    max_cost_usd : float, optional
        Launch no call once the log's logged cost plus the estimates of the calls in flight
        would pass this many USD (default: the design's ``run.max_cost_usd``; none). The
        whole log counts, so a resumed run goes on only under a raised limit. Every model
        must be priced (``price_model`` for a deployment name).
    progress : bool
        Show progress (done/total, errors, spend, ETA) on stderr: a live bar on a terminal;
        without one (output redirected: nohup, CI, a scheduler), one line every
        ``progress_every`` seconds and a last one at the end.
    progress_every : float
        Seconds between progress lines without a terminal (default 30).
    %(random_state)s

    Returns
    -------
    RunSummary
        With ``retried``, the failed calls moved out of the log to be sent again.

    Raises
    ------
    FatalCallError
        When an endpoint refuses the key or the model (401, 403, 404) or redirects: the
        run stops, the calls in flight to every endpoint are finished and logged, and a
        rerun after fixing it resumes.
    CollectError
        When ``max_same_errors`` calls in a row were refused alike or not answered (see the
        module notes), or the next call would pass ``max_cost_usd``, or the log cannot be
        written: the calls in flight are finished and logged (or, for the last, kept in
        ``<log>.wal`` for the next run to log), nothing more is sent, and the message says
        why (the condition, the model, the HTTP status and the API's error message; the
        spend; or the file and the cause).

    Examples
    --------
    >>> import asyncio, tempfile, os
    >>> from hce.collect import SimServer, run_async
    >>> design = {"attempts": 2, "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...           "items": [{"id": "T1", "text": "Doctor: How are you?\\nPatient: I walk sometimes."}]}
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with SimServer().start() as server:
    ...     summary = asyncio.run(run_async(design, log, base_url=server.url, api_key="local"))
    >>> summary.done
    2
    """
    design = design if isinstance(design, Design) else load_design(design)
    concurrency = int(concurrency if concurrency is not None else design.concurrency)
    if concurrency < 1:
        raise CollectError(f"concurrency must be >= 1, got {concurrency}")
    if max_same_errors is not None and max_same_errors < 1:
        raise CollectError(f"max_same_errors must be >= 1 or None (never stop), got {max_same_errors}")
    for name, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
        if value is not None and not value > 0:
            raise CollectError(f"{name} must be > 0, got {value}")
    max_cost_usd = design.max_cost_usd if max_cost_usd is None else max_cost_usd
    if max_cost_usd is not None:
        _check_budget(design, max_cost_usd)
    _check_texts(design)
    rpm = requests_per_minute or design.requests_per_minute
    tpm = tokens_per_minute or design.tokens_per_minute
    started = time.perf_counter()
    tally = Tally()
    async with contextlib.AsyncExitStack() as cleanup:
        # Every endpoint's key is read before anything is sent or the log is touched.
        clients = await _clients(design, cleanup, client, base_url=base_url, api_key=api_key, random_state=random_state)
        recover(log)  # replies an earlier run received but could not log, before anything reads the log
        retried = set_aside_failed(log) if retry_failed else 0  # before the writer opens the file it replaces
        superseded = set_aside_changed(design, log) if new_settings else []
        journal = cleanup.enter_context(Journal(log))  # sets a torn last line aside before we read the ids
        planned, todo = pending(design, log)
        hosts = {name: getattr(c, "base_url", None) or design.endpoints[name].host for name, c in clients.items()}
        fail_fast = FailFast(max_same_errors, hosts)
        budget = Budget(max_cost_usd, logged_cost(log) if max_cost_usd is not None else 0.0)
        halt = Halt()
        stops = (journal, halt, fail_fast, budget)  # the first with a reason says why the run ended
        # One queue per endpoint, so a slow or rate-limited provider does not hold up the others.
        queues: dict[str, asyncio.Queue[Request]] = {name: asyncio.Queue() for name in clients}
        for request in group_requests(todo):  # one attempt a request unless samples_per_request > 1
            queues[request.attempts[0].condition.endpoint].put_nowait(request)
        limits = (_RateLimit(rpm) if rpm else None, _RateLimit(tpm) if tpm else None)
        own = {name: _limits(design.endpoints[name]) for name in clients}
        slots = asyncio.Semaphore(concurrency)
        bar = None
        if progress and todo:
            bar = _Progress(len(todo), retried) if sys.stderr.isatty() else _ProgressLines(len(todo), progress_every)
        prompt_for = prompt_cache(design, 4 * concurrency)

        def stopped() -> bool:
            return any(stop.reason for stop in stops)

        async def call(request: Request) -> None:
            attempt, n = request.attempts[0], request.n
            cond = attempt.condition
            messages = prompt_for(attempt.item.id, cond.id)
            tokens = _input_tokens(messages) + _expected_output(cond, design.rubric.criteria) * n
            for limit, amount in ((limits[0], 1), (limits[1], tokens), *zip(own[cond.endpoint], (1, tokens))):
                if limit is not None:
                    await limit.take(amount)
            cost = _call_estimate(cond, messages, design.rubric.criteria, n=n) if budget.limit is not None else 0.0
            if stopped() or not budget.launch(cost):
                return  # not sent, so not logged: the next run sends it
            async with slots:
                if stopped():  # a stop came while this call waited for a slot
                    return
                result = await clients[cond.endpoint].complete(messages, **call_settings(cond), n=n,
                                                               request_id=attempt.attempt_id)  # fmt: skip
            rows = request_rows(request, design, messages, result)
            journal.write([row for row, _ in rows])  # one write: a request's rows land together
            budget.settle(cost, sum(row["cost_usd"] or 0.0 for row, _ in rows))
            for index, (row, part) in enumerate(rows):
                tally.add(row, part, cond, call=index == 0)
            fail_fast.add(attempt, result)
            if bar is not None:
                bar.update(tally.counts)

        async def worker(queue: asyncio.Queue[Request]) -> None:
            while not queue.empty() and not stopped():
                try:
                    await call(queue.get_nowait())
                except Exception as error:  # held, not raised: the other workers' calls in flight are finished first
                    halt.stop(error)

        try:
            if bar is not None:
                bar.start()
            async with asyncio.TaskGroup() as group:
                for name, queue in queues.items():
                    width = min(design.endpoints[name].concurrency or concurrency, concurrency)
                    for _ in range(min(width, queue.qsize())):
                        group.create_task(worker(queue))
        finally:
            if bar is not None:
                bar.stop()
        so_far = tally.summary(len(planned), len(todo), started, log)
        if journal.reason is not None:
            lost = f"; {journal.lost:,} replies could be written nowhere" if journal.lost else ""
            raise CollectError(f"{journal.reason} ({journal.unlogged:,} replies wait there{lost}). So far: {so_far}")
        halt.reraise(str(so_far))
        for stop in stops:
            if stop.reason is not None:
                raise CollectError(f"{stop.reason} So far: {so_far}")
    return tally.summary(len(planned), len(todo), started, log, retried=retried, superseded=superseded)


@keywords_of(run_async)
def run(design: Design | str | os.PathLike | Mapping[str, Any], log: str | os.PathLike, **kwargs: Any) -> RunSummary:
    """Synchronous :func:`run_async` (for scripts and the CLI; in a notebook, ``await run_async(...)``).

    A ``client=`` given here is closed when the run ends: its connections belong to the
    event loop this function creates and ends.

    Parameters
    ----------
    design : Design, path of a design YAML, or mapping
    log : path
        The JSONL attempt log.
    **kwargs
        The keywords of :func:`run_async`.

    Returns
    -------
    RunSummary

    Examples
    --------
    >>> import tempfile, os, hce
    >>> from hce.collect.sim import SimServer
    >>> design = {"attempts": 3, "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...           "items": [{"id": "T1", "text": "Doctor: How are you?\\nPatient: I walk sometimes."}]}
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with SimServer().start() as server:
    ...     summary = run(design, log, base_url=server.url, api_key="local")
    >>> summary.done, summary.errors, len(hce.read_log(log))
    (3, 0, 3)
    """
    return in_new_loop(run_async, design, log, kwargs)


def in_new_loop(run_fn: Callable[..., Any], design: Any, log: str | os.PathLike, kwargs: dict[str, Any]) -> Any:
    """``await run_fn(design, log, **kwargs)`` in a new event loop, closing a given ``client=`` at the end."""

    async def go() -> Any:
        try:
            return await run_fn(design, log, **kwargs)
        finally:
            if kwargs.get("client") is not None:
                await kwargs["client"].aclose()

    return asyncio.run(go())


def used_endpoints(design: Design) -> list[Endpoint]:
    """The endpoints the design's conditions go to, in the order the design names them."""
    names = {c.endpoint for c in design.conditions}
    return [e for name, e in design.endpoints.items() if name in names]


def client_for(
    design: Design,
    endpoint: Endpoint | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    random_state: int | None = None,
) -> JudgeClient:
    """The client of one endpoint (default: the design's only one); ``base_url``/``api_key`` override it.

    The key comes only from the variable the endpoint names (:func:`~hce.collect.client.endpoint_key`).
    An override is refused for a design whose conditions go to several endpoints: it
    would send every provider's calls, and one key, to one place.
    """
    if endpoint is None:
        used = used_endpoints(design)
        if len(used) > 1:
            raise CollectError(
                f"this design sends calls to {len(used)} endpoints ({', '.join(e.name for e in used)}); "
                "a single client, base_url or api_key cannot stand for them: set each under endpoints:"
            )
        endpoint = used[0]
    url = base_url or endpoint.base_url
    if api_key is None:
        api_key = endpoint_key(endpoint.name, url, endpoint.api_key_env, needs_key=endpoint.needs_key)
    return JudgeClient(
        base_url=url, api_key=api_key, timeout=endpoint.timeout, max_retries=endpoint.max_retries, random_state=random_state
    )


def check_batch(design: Design) -> Endpoint:
    """The one endpoint a batch run sends to, refused when its provider offers no OpenAI Batch API."""
    used = used_endpoints(design)
    if len(used) > 1:
        raise CollectError(f"--batch sends a design to one endpoint; this one uses {len(used)} "
                           f"({', '.join(e.name for e in used)}): run a design per endpoint")  # fmt: skip
    if not used[0].supports_batch:
        raise CollectError(
            f"endpoint {used[0].name!r} ({used[0].kind}, {used[0].host}) has no OpenAI-compatible Batch API "
            "(hce.collect.providers); run without --batch, or set batch: true on the endpoint if it has one"
        )
    return used[0]


async def _clients(
    design: Design, cleanup: contextlib.AsyncExitStack, client: JudgeClient | None, **overrides: Any
) -> dict[str, JudgeClient]:
    """A client per endpoint the design uses (a given ``client`` or override: the design must use one)."""
    used = used_endpoints(design)
    if client is not None or overrides.get("base_url") or overrides.get("api_key") is not None:
        if client is None:
            client = await cleanup.enter_async_context(client_for(design, **overrides))
        elif len(used) > 1:
            client_for(design)  # raises, naming the endpoints
        return {used[0].name: client}
    made = [client_for(design, e, random_state=overrides.get("random_state")) for e in used]  # every key, first
    return {e.name: await cleanup.enter_async_context(c) for e, c in zip(used, made, strict=True)}


def _limits(endpoint: Endpoint) -> tuple[_RateLimit | None, _RateLimit | None]:
    """An endpoint's own request and token buckets (None where it sets no limit)."""
    rpm, tpm = endpoint.requests_per_minute, endpoint.tokens_per_minute
    return (_RateLimit(rpm) if rpm else None, _RateLimit(tpm) if tpm else None)


class _Progress:
    """A rich progress bar on stderr: done/total, errors, spend, ETA."""

    def __init__(self, total: int, retried: int = 0):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn(f"judging ({retried:,} failed calls again)" if retried else "judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("${task.fields[spend]:.4f}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task("judging", total=total, errors=0, spend=0.0)

    def start(self) -> None:
        self.progress.start()

    def update(self, counts: Mapping[str, float]) -> None:
        self.progress.update(self.task, completed=counts["done"], errors=counts["errors"], spend=counts["cost"])

    def stop(self) -> None:
        self.progress.stop()


class _ProgressLines:
    """Progress without a terminal: one line on stderr every ``every`` seconds, and one at the end.

    A live bar draws nothing when stderr is a file or a pipe (nohup, CI, a scheduler), so a
    long run would print nothing between its start and its end. Each line is complete
    and flushed, so ``tail -f`` on the redirected output follows the run.

    Examples
    --------
    >>> lines = _ProgressLines(total=200, every=30)
    >>> lines.update({"done": 50, "errors": 2, "cost": 0.125})
    >>> lines.line(elapsed=60.0)
    'progress: 50/200 done (25%), 2 errors, $0.1250 spent, 0:01:00 elapsed, ETA 0:03:00'
    """

    def __init__(self, total: int, every: float):
        if not every > 0:
            raise CollectError(f"progress_every must be > 0 seconds, got {every!r}")
        self.total, self.every = total, float(every)
        self.counts: Mapping[str, float] = {"done": 0, "errors": 0, "cost": 0.0}
        self.started = time.monotonic()
        self.task: asyncio.Task[None] | None = None

    def line(self, elapsed: float | None = None) -> str:
        elapsed = time.monotonic() - self.started if elapsed is None else elapsed
        done = int(self.counts["done"])
        eta = _clock(elapsed / done * (self.total - done)) if done else "unknown"
        return (
            f"progress: {done:,}/{self.total:,} done ({done / self.total:.0%}), {int(self.counts['errors']):,} errors, "
            f"${self.counts['cost']:,.4f} spent, {_clock(elapsed)} elapsed, ETA {eta}"
        )

    def start(self) -> None:
        self.started = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            print(self.line(), file=sys.stderr, flush=True)

    def update(self, counts: Mapping[str, float]) -> None:
        self.counts = dict(counts)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        print(self.line(), file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def summarise_estimate(table: pd.DataFrame) -> str:
    """One line for a dry run: calls, tokens and cost (and which models are unpriced)."""
    cost = table["cost_usd"].sum(min_count=1)
    unpriced = sorted(set(table.loc[table["cost_usd"].isna(), "model"]))
    text = (
        f"dry run: {int(table['calls'].sum()):,} calls, ~{int(table['input_tokens'].sum()):,} input tokens, "
        f"~{int(table['output_tokens'].sum()):,} output tokens, ~${0.0 if pd.isna(cost) else cost:,.2f}"
    )
    if unpriced:
        text += f" (not counting unpriced models {unpriced})"
    return text + "; nothing was sent"
