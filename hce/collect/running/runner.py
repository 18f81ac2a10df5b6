"""Run a design: every attempt called concurrently, parsed, and appended to the log at once.

Each finished attempt is one JSONL line, written and flushed as soon as it finishes, so a
run stopped in any way (Ctrl-C, a crash, ``kill -9``) loses at most the calls in flight.
Running the same design against the same log again skips the ``attempt_id`` values
already logged (ids are deterministic: experiment, item, condition, attempt number), so
the run resumes with nothing duplicated and nothing lost.

An attempt whose call failed after its retries (a timeout, a dropped connection, an HTTP
4xx or 5xx) is logged with ``error_flag`` and counts as done. ``retry_failed=True``
(``--retry-failed``) first moves the rows of such failed calls out of the log into
``<log>.retried.jsonl`` (crash-safely: :mod:`hce.collect.running.failed`), so the run sends them
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
to a write-ahead record before the log (:mod:`hce.collect.running.journal`): when the log cannot be
written (a full disk), the run stops with one line naming it and the cause, and the next
run logs those replies without sending them again.

A design whose ``attempts`` is a stopping rule (``hce.collect.running.stopping``) is run in
rounds: every cell's first ``min`` attempts, then the next attempts of the cells whose interval
is still wider than the target, decided from the log after each round, until every cell is
settled or at ``max``; the stops above end it as they end a fixed run.

Only one run writes a log at a time (:mod:`hce.collect.running.lock`); transcripts are cleaned by
:func:`~hce.collect.design.transcripts.clean_text` before they enter a prompt, and the log's
``cleaned_chars`` counts what was taken out.

This module holds the run itself (its checks, the concurrent call loop, its stops); the parts it
shares with batch runs and dry runs live in modules named after what they do: which attempts are
pending (:mod:`~hce.collect.running.resume`), the messages sent (:mod:`~hce.collect.call.messages`), the
estimates (:mod:`~hce.collect.estimates`) and the spending limit (:mod:`~hce.collect.running.spend_limit`),
the endpoints and their clients (:mod:`~hce.collect.call.endpoints`), rate limits
(:mod:`~hce.collect.call.rate_limit`), the log rows (:mod:`~hce.collect.running.log_rows`), progress
(:mod:`~hce.collect.running.progress`) and the summary (:mod:`~hce.collect.running.run_summary`). Their names stay
importable from here, where they were defined before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any

from hce.collect.design.design import Attempt, Design, load_design
from hce.collect.call.endpoints import (
    check_batch,
    check_keys,
    client_for,
    open_clients,
    used_endpoints,
)
from hce.collect.estimates import (
    CHARS_PER_TOKEN,
    REASONING_TOKENS,
    TYPICAL_OUTPUT_TOKENS,
    call_estimate,
    estimate,
    expected_output,
    input_tokens,
    summarise_estimate,
)
from hce.collect.running.journal import Journal
from hce.collect.running.log_rows import attempt_row, request_rows
from hce.collect.running.pipeline import EndpointOverride, Pipeline, collector, in_new_loop, open_log, synchronous
from hce.collect.call.messages import call_settings, prompt_cache
from hce.collect.running.progress import progress_display
from hce.collect.call.rate_limit import endpoint_limits, rate_limits
from hce.collect.running.resume import check_texts, keep_rubric, pending
from hce.collect.running.run_summary import RunSummary, Tally
from hce.collect.call.sampling import Request, group_requests
from hce.collect.running.spend_limit import budget_stop, check_batch_budget, check_budget, logged_cost
from hce.collect.running.stopping import due, logged_records
from hce.collect.running.stops import MAX_SAME_ERRORS, Budget, FailFast, Halt
from hce.errors import CollectError
from hce.log_files import logged_attempt_ids

__all__ = [  # this module's names, and those it defined before the split (callers import them from here)
    "CHARS_PER_TOKEN", "REASONING_TOKENS", "TYPICAL_OUTPUT_TOKENS", "RunSummary", "Tally", "attempt_row",
    "budget_stop", "call_settings", "check_batch", "check_batch_budget", "check_keys", "client_for", "estimate",
    "in_new_loop", "keep_rubric", "load_design", "pending", "prompt_cache", "request_rows", "run", "run_async",
    "summarise_estimate", "used_endpoints",
]  # fmt: skip


@collector  # keywords checked, one writer per log, fragments filled
async def run_async(
    design: Design | str | os.PathLike | Mapping[str, Any],
    log: str | os.PathLike,
    *,
    endpoint: EndpointOverride = EndpointOverride(),
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

    %(run_parameters)s
    log : path
        The JSONL log to append to (created if missing). Rerunning resumes.
    client : JudgeClient, optional
        Default: one client per endpoint the conditions use, each with the key of the
        variable its endpoint names (read, for every endpoint, before anything is sent).
        A ``client`` or ``base_url``/``api_key`` stands for the endpoint of a design that
        uses one; for a design with several it is refused.
    %(endpoint_override)s
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
        ``hce.collect.design.fingerprint``) starts afresh: its old rows move to
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

    %(run_example_setup)s
    >>> from hce.collect import run_async
    >>> design = example_design(attempts=2)
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
        check_budget(design, max_cost_usd)
    check_texts(design)
    rpm = requests_per_minute or design.requests_per_minute
    tpm = tokens_per_minute or design.tokens_per_minute
    started = time.perf_counter()
    tally = Tally.of(design)
    async with contextlib.AsyncExitStack() as cleanup:
        # Every endpoint's key is read before anything is sent or the log is touched.
        clients = await open_clients(design, cleanup, endpoint.client, base_url=endpoint.base_url, api_key=endpoint.api_key,
                                     random_state=random_state)
        aside = open_log(design, log, retry_failed=retry_failed, new_settings=new_settings)
        journal = cleanup.enter_context(Journal(log))  # sets a torn last line aside before we read the ids
        planned, todo = pending(design, log)
        hosts = {name: getattr(c, "base_url", None) or design.endpoints[name].host for name, c in clients.items()}
        fail_fast = FailFast(max_same_errors, hosts)
        budget = Budget(max_cost_usd, logged_cost(log) if max_cost_usd is not None else 0.0)
        halt = Halt()
        stops = (journal, halt, fail_fast, budget)  # the first with a reason says why the run ended
        limits = rate_limits(rpm, tpm)
        own = {name: endpoint_limits(design.endpoints[name]) for name in clients}
        slots = asyncio.Semaphore(concurrency)
        bar = progress_display(len(todo), aside.retried, progress_every) if progress and todo else None
        pipeline = Pipeline(design, journal, tally, budget, fail_fast, bar)
        prompt_for = prompt_cache(design, 4 * concurrency)

        def stopped() -> bool:
            return any(stop.reason for stop in stops)

        async def call(request: Request) -> None:
            attempt, n = request.attempts[0], request.n
            cond = attempt.condition
            messages = prompt_for(attempt.item.id, cond.id)
            tokens = input_tokens(messages) + expected_output(cond, design.rubric) * n
            for limit, amount in ((limits[0], 1), (limits[1], tokens), *zip(own[cond.endpoint], (1, tokens))):
                if limit is not None:
                    await limit.take(amount)
            cost = call_estimate(cond, messages, design, n=n) if budget.limit is not None else 0.0
            if stopped() or not budget.launch(cost):
                return  # not sent, so not logged: the next run sends it
            async with slots:
                if stopped():  # a stop came while this call waited for a slot
                    return
                result = await clients[cond.endpoint].complete(messages, **call_settings(cond, design, attempt.item), n=n,
                                                               request_id=attempt.attempt_id)  # fmt: skip
            pipeline.record(request, messages, result, estimate=cost)

        async def worker(queue: asyncio.Queue[Request]) -> None:
            while not queue.empty() and not stopped():
                try:
                    await call(queue.get_nowait())
                except Exception as error:  # held, not raised: the other workers' calls in flight are finished first
                    halt.stop(error)

        async def send(attempts: list[Attempt]) -> None:
            # One queue per endpoint, so a slow or rate-limited provider does not hold up the others.
            queues: dict[str, asyncio.Queue[Request]] = {name: asyncio.Queue() for name in clients}
            for request in group_requests(attempts):  # one attempt a request unless samples_per_request > 1
                queues[request.attempts[0].condition.endpoint].put_nowait(request)
            async with asyncio.TaskGroup() as group:
                for name, queue in queues.items():
                    width = min(design.endpoints[name].concurrency or concurrency, concurrency)
                    for _ in range(min(width, queue.qsize())):
                        group.create_task(worker(queue))

        unsent = todo
        try:
            if bar is not None:
                bar.start()
            if design.stop_rule is None:
                await send(todo)
            else:  # round by round, each cell's next attempts decided from the log (hce.collect.running.stopping)
                while not stopped() and (batch := due(design.stop_rule, unsent, logged_records(log))):
                    await send(batch)
                    logged = logged_attempt_ids(log)
                    unsent = [a for a in unsent if a.attempt_id not in logged]
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
    settled = len(unsent) if design.stop_rule is not None else 0
    return tally.summary(len(planned), len(todo), started, log, retried=aside.retried, superseded=aside.superseded,
                         settled=settled)


@synchronous(run_async)
def run(design: Design | str | os.PathLike | Mapping[str, Any], log: str | os.PathLike, **kwargs: Any) -> RunSummary:
    """Synchronous :func:`run_async` (for scripts and the CLI; in a notebook, ``await run_async(...)``).

    A ``client=`` given here is closed when the run ends: its connections belong to the
    event loop this function creates and ends.

    %(sync_parameters)s

    Returns
    -------
    RunSummary
        What the run did; printed, one line of counts, spend and the log's path.

    %(run_example_setup)s
    >>> design = example_design(attempts=3)
    >>> with SimServer().start() as server:
    ...     summary = run(design, log, base_url=server.url, api_key="local")
    >>> summary.done, summary.errors, len(hce.read_log(log))
    (3, 0, 3)
    """
