"""Run a design through the OpenAI Batch API: the same attempt log at half the price, within 24 hours.

:func:`run_batch` writes the design's pending attempts as batch JSONL (one request a line,
``custom_id`` = ``attempt_id``, the body exactly as the online call sends it), splits it
into files within the provider's limits (50,000 requests and 200 MB a file, one model a
file), uploads each file, creates a batch over it, polls with a growing interval, and
ingests the output and error files into the attempt log through the same row builder and
parsers as :func:`~hce.collect.running.runner.run`. The log is the one an online run writes apart
from the timing fields (``timestamp`` is when the reply was ingested, ``latency_s`` is
empty, ``retries`` 0) and ``cost_usd``, priced at the batch discount.

A request that failed inside the batch (the provider's error file) becomes an error row
(``error_flag``, ``error_message`` starting ``"batch request failed"``) and counts as done;
``resubmit_failed=True`` (``--resubmit-failed``, also spelt ``--retry-failed``) moves the
rows of failed calls, these and those of online calls that failed their retries, out of
the log into ``<log>.retried.jsonl`` and sends them again (:mod:`hce.collect.running.failed`). A
malformed reply is parsed into a flagged row and, as online, is not re-asked. A batch the
provider rejects (``failed``: a malformed or oversized file) stops the run with the
provider's reasons.

The batches of a log are recorded in a state file next to it (``<log>.batch.json``): each
input file once uploaded, its batch id once created (a run stopped between the two finds
the batch by its input file in the provider's batch list, or creates it then). A run that stops while waiting (Ctrl-C, a crash, a closed laptop,
or ``wait=False``) resumes from those batch ids when started again: it waits for the open
batches and ingests them before submitting anything new, so nothing is paid for twice.

:func:`cancel_batches` (``--cancel``) cancels the open batches of a log and withdraws
uploads not yet submitted, recording both in the state file, and sends nothing. A
cancelled batch ends with the requests it finished in its output and error files: they are
paid for, and are logged like any batch's results (by the cancel when it waits, else by the
next run). The requests it never ran (error code ``batch_cancelled``, or in neither file)
are not logged, so they are pending again: the next :func:`run_batch` sends exactly those.
The same holds for the requests an expired batch (24 hours passed) never ran
(``batch_expired``); what it did finish is logged as usual.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


from hce._warnings import warn
from hce.collect.call.client import CallResult, JudgeClient, chat_body, fill
from hce.collect.design.design import Design, load_design
from hce.collect.call.endpoints import check_batch, client_for
from hce.collect.running.failed import BATCH_FAILED
from hce.collect.running.journal import Journal
from hce.collect.running.pipeline import EndpointOverride, Pipeline, collector, open_log, synchronous
from hce.collect.call.messages import call_settings, prompt_cache
from hce.collect.running.resume import pending
from hce.collect.running.run_summary import RunSummary, Tally
from hce.collect.call.sampling import Request, group_requests
from hce.collect.running.spend_limit import check_batch_budget
from hce.errors import CollectError
from hce.log_files import logged_attempt_ids

ENDPOINT = "/v1/chat/completions"
MAX_REQUESTS = 50_000  # OpenAI's limits on one batch input file
MAX_BYTES = 200_000_000
FINISHED = ("completed", "failed", "expired", "cancelled")
CANCELLING = ("cancelling", "cancelled")


@dataclass(frozen=True)
class BatchSummary(RunSummary):
    """A :class:`RunSummary` of a batch run, as :func:`run_batch` returns it.

    Attributes
    ----------
    batch_ids : tuple of str
        This log's batches.
    waiting : int
        Batches still open when the run returned (``wait=False`` or a poll timeout).

    Examples
    --------
    >>> from hce.collect import BatchSummary
    >>> print(BatchSummary(planned=4, skipped=0, done=0, errors=0, retries=0, cost_usd=0.0,
    ...                    wall_s=1.0, log="run.jsonl", batch_ids=("batch_1",), waiting=1))
    0 attempts run, 0 already logged, of 4 planned; 0 flagged, 0 retries, $0.0000, 1.0 s -> run.jsonl; batches batch_1; 1 still open: run again to collect them
    """

    batch_ids: tuple[str, ...] = ()
    waiting: int = 0

    def __str__(self) -> str:
        text = super().__str__() + f"; batches {', '.join(self.batch_ids) or 'none'}"
        if self.waiting:
            text += f"; {self.waiting} still open: run again to collect them"
        return text


def state_path(log: str | os.PathLike) -> Path:
    """Where the batch ids of a log are kept: ``<log>.batch.json`` next to it."""
    log = Path(log)
    return log.with_name(log.name + ".batch.json")


def split_files(
    requests: Sequence[tuple[str, bytes]], *, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
) -> list[bytes]:
    """Pack ``(model, JSONL line)`` requests into batch files: one model a file, within both limits.

    Requests keep their order within a model; a file is closed when the next line would
    take it past ``max_requests`` lines or ``max_bytes`` bytes.

    Examples
    --------
    >>> lines = [("m", b'{"a": 1}\\n'), ("m", b'{"a": 2}\\n'), ("n", b'{"a": 3}\\n')]
    >>> split_files(lines, max_requests=1)
    [b'{"a": 1}\\n', b'{"a": 2}\\n', b'{"a": 3}\\n']
    >>> split_files(lines, max_bytes=20)
    [b'{"a": 1}\\n{"a": 2}\\n', b'{"a": 3}\\n']
    """
    if max_requests < 1 or max_bytes < 1:
        raise CollectError(f"max_requests and max_bytes must be >= 1, got {max_requests} and {max_bytes}")
    by_model: dict[str, list[bytes]] = {}
    for model, line in requests:
        if len(line) > max_bytes:
            raise CollectError(
                f"one request of model {model!r} is {len(line):,} bytes, over the file limit max_bytes={max_bytes:,}"
            )
        by_model.setdefault(model, []).append(line)
    files: list[bytes] = []
    for lines in by_model.values():
        current: list[bytes] = []
        size = 0
        for line in lines:
            if current and (len(current) == max_requests or size + len(line) > max_bytes):
                files.append(b"".join(current))
                current, size = [], 0
            current.append(line)
            size += len(line)
        files.append(b"".join(current))
    return files


# Error codes of requests a batch never ran (openai-python ``types/batch_request_output.py``,
# ``BatchRequestOutputError.code``): "batch_cancelled", the batch was cancelled before this
# request executed; "batch_expired", it could not be executed before the completion window
# ended. Neither was run nor paid for.
NEVER_RAN = ("batch_cancelled", "batch_expired")


def never_ran(entry: Mapping[str, Any]) -> bool:
    """Whether a line of a batch's error file is a request the batch never ran (cancelled or expired first).

    Such a request is not logged and stays pending: the next run sends it again.

    Examples
    --------
    >>> never_ran({"custom_id": "a", "response": None, "error": {"code": "batch_cancelled", "message": "..."}})
    True
    >>> never_ran({"custom_id": "a", "response": None, "error": {"code": "batch_expired", "message": "..."}})
    True
    >>> never_ran({"custom_id": "a", "response": None, "error": {"code": "request_timeout", "message": "..."}})
    False
    """
    return entry.get("response") is None and (entry.get("error") or {}).get("code") in NEVER_RAN


def batch_result(entry: Mapping[str, Any]) -> CallResult:
    """The :class:`CallResult` of one line of a batch output or error file."""
    result = CallResult()
    response, error = entry.get("response"), entry.get("error")
    if response and response.get("status_code") == 200:
        try:
            fill(result, response["body"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            result.error_message = f"unreadable response: {type(exc).__name__}: {exc}"
        return result
    if response:
        detail = (response.get("body") or {}).get("error") or {}
        result.error_message = f"{BATCH_FAILED}: HTTP {response.get('status_code')}: {detail.get('message', 'no message')}"
    else:
        error = error or {}
        result.error_message = f"{BATCH_FAILED}: {error.get('code')}: {error.get('message', 'no message')}"
    return result


@collector  # keywords checked, one writer per log, fragments filled
async def run_batch_async(
    design: Design | str | os.PathLike | Mapping[str, Any],
    log: str | os.PathLike,
    *,
    endpoint: EndpointOverride = EndpointOverride(),
    resubmit_failed: bool = False,
    wait: bool = True,
    poll_interval: float = 15.0,
    max_poll_interval: float = 300.0,
    max_requests: int = MAX_REQUESTS,
    max_bytes: int = MAX_BYTES,
    max_cost_usd: float | None = None,
    progress: bool = False,
    random_state: int | None = None,
) -> BatchSummary:
    """Run a design's pending attempts as OpenAI batches into a JSONL attempt log.

    %(run_parameters)s
    log : path
        The JSONL log to append to (created if missing); its batches are recorded in
        ``state_path``, and a rerun resumes them.
    client : JudgeClient, optional
        Default: one built from the design's endpoint, ``base_url``/``api_key`` (else
        ``$OPENAI_BASE_URL`` and the variable ``endpoint.api_key_env`` names).
    %(endpoint_override)s
    resubmit_failed : bool
        Move the rows of calls that failed (inside a batch, or online after their retries)
        out of the log into ``<log>.retried.jsonl`` and send them again; a malformed reply
        is kept as it is.
    wait : bool
        Poll until every batch has finished (default); False submits, checks once and
        returns, and a later run collects the results.
    poll_interval, max_poll_interval : float
        Seconds between polls: the first interval, growing 1.5-fold to the maximum.
    max_requests, max_bytes : int
        Limits of one input file (OpenAI's: 50,000 requests, 200 MB).
    max_cost_usd : float, optional
        Submit nothing new when the log's spend plus the new requests' estimate (at the
        batch price) would pass this many USD (default: the design's ``run.max_cost_usd``).
    progress : bool
        Show each batch's status and request counts on stderr.
    %(random_state)s

    Returns
    -------
    BatchSummary

    Raises
    ------
    CollectError
        When the provider rejects a batch file (the batch ends ``failed``: its errors are
        quoted) or a control call keeps failing; batches already created stay recorded.

    %(run_example_setup)s
    >>> from hce.collect import run_batch_async
    >>> design = example_design(attempts=2)
    >>> with SimServer().start() as server:
    ...     summary = asyncio.run(run_batch_async(design, log, base_url=server.url, api_key="local", poll_interval=0.01))
    >>> summary.done
    2
    """
    design = design if isinstance(design, Design) else load_design(design)
    check_batch(design)
    started = time.perf_counter()
    retried = open_log(design, log, retry_failed=resubmit_failed).retried
    planned, todo = pending(design, log)
    session = _Session(design, log, *endpoint, random_state, progress, poll_interval, max_poll_interval)
    async with session:
        client, state = session.client, session.state

        async def submit(entry: dict[str, Any], *, look_first: bool) -> None:
            # A run that stopped between creating a batch and recording it finds it by its file.
            batch = await client.find_batch(entry["input_file_id"]) if look_first else None
            if batch is None:
                metadata = {"hce_experiment": design.experiment_id[:512], "hce_file": entry["file"][:512]}
                batch = await client.create_batch(entry["input_file_id"], metadata)
            state.created(entry, batch)

        # Open batches first: their attempts are not in the log yet and must not be sent twice.
        for entry in state.unsubmitted():
            await submit(entry, look_first=True)
        if await session.finish(wait) and todo:
            todo = pending(design, log)[1]  # a cancelled batch's requests that never ran are among them
            limit = design.max_cost_usd if max_cost_usd is None else max_cost_usd
            check_batch_budget(design, log, todo, limit, session.prompt_for)
            requests, members = [], {}
            for request in group_requests(todo):
                attempt = request.attempts[0]
                messages = session.prompt_for(attempt.item.id, attempt.condition.id)
                body = chat_body(messages, **call_settings(attempt.condition, design, attempt.item), n=request.n)
                custom_id = attempt.attempt_id
                if attempt.condition.samples_per_request > 1:  # a request answers several attempts: remember which
                    custom_id = request.request_id
                    members[custom_id] = [a.attempt_id for a in request.attempts]
                line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
                requests.append((attempt.condition.model, (json.dumps(line) + "\n").encode("utf-8")))
            state.remember(members)  # before any upload, so a later run can log what a batch answers
            files = split_files(requests, max_requests=max_requests, max_bytes=max_bytes)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            for number, data in enumerate(files, start=1):
                name = f"hce_{design.experiment_id}_{stamp}_{number:03d}.jsonl"
                file_id = await client.upload_batch_file(name, data)
                entry = state.uploaded(file_id, name, requests=data.count(b"\n"), size=len(data))
                await submit(entry, look_first=False)
            await session.finish(wait)
    summary = session.tally.summary(len(planned), len(todo), started, log, retried=retried)
    return BatchSummary(**vars(summary), batch_ids=state.ids(), waiting=len(state.open()))


@synchronous(run_batch_async)
def run_batch(design: Design | str | os.PathLike | Mapping[str, Any], log: str | os.PathLike, **kwargs: Any) -> BatchSummary:
    """Synchronous :func:`run_batch_async` (for scripts and the CLI).

    A ``client=`` given here is closed when the run ends.

    %(sync_parameters)s

    Returns
    -------
    BatchSummary
        A run's summary with this log's batch ids and how many are still open.

    %(run_example_setup)s
    >>> design = example_design(attempts=3)
    >>> with SimServer().start() as server:
    ...     summary = run_batch(design, log, base_url=server.url, api_key="local", poll_interval=0.01)
    >>> summary.done, summary.errors, summary.batch_ids, len(hce.read_log(log))
    (3, 0, ('batch_sim000001',), 3)
    """


@dataclass(frozen=True)
class CancelSummary:
    """What a cancel did, as :func:`cancel_batches` returns it.

    Attributes
    ----------
    cancelled, earlier, ended : tuple of str
        Batch ids cancelled now, cancelled earlier and still open, and ended before the
        cancel reached them.
    withdrawn : tuple of str
        Uploaded input files withdrawn before their batch was created.
    done, errors : int
        Rows logged from the results collected, and those flagged.
    cost_usd : float
        Cost of the collected results.
    waiting : int
        Batches still cancelling.
    missing : int
        The design's attempts not in the log, which the next :func:`run_batch` sends (once
        ``waiting`` is 0).
    log : str
        The attempt log.

    Examples
    --------
    >>> from hce.collect import CancelSummary
    >>> print(CancelSummary(cancelled=(), earlier=(), ended=(), withdrawn=(), done=0, errors=0,
    ...                     cost_usd=0.0, waiting=0, missing=0, log="run.jsonl"))
    nothing to cancel: no open batch is recorded in run.jsonl.batch.json
    """

    cancelled: tuple[str, ...]
    earlier: tuple[str, ...]
    ended: tuple[str, ...]
    withdrawn: tuple[str, ...]
    done: int
    errors: int
    cost_usd: float
    waiting: int
    missing: int
    log: str

    def __str__(self) -> str:
        if not (self.cancelled or self.earlier or self.ended or self.withdrawn):
            return f"nothing to cancel: no open batch is recorded in {state_path(self.log)}"
        parts = []
        if self.cancelled:
            parts.append(f"cancelled {len(self.cancelled)} batches ({', '.join(self.cancelled)})")
        if self.earlier:
            parts.append(f"{len(self.earlier)} cancelled before ({', '.join(self.earlier)})")
        if self.ended:
            parts.append(f"{len(self.ended)} had ended already ({', '.join(self.ended)})")
        if self.withdrawn:
            parts.append(f"withdrew {len(self.withdrawn)} uploaded files never submitted")
        parts.append(f"logged {self.done:,} finished requests ({self.errors:,} flagged, ${self.cost_usd:,.4f}) -> {self.log}")
        if self.waiting:
            parts.append(f"{self.waiting} still cancelling: run again to collect what they finished")
        else:
            parts.append(f"{self.missing:,} attempts not in the log: a --batch run without --cancel sends them")
        return "; ".join(parts)


@collector
async def cancel_batches_async(
    design: Design | str | os.PathLike | Mapping[str, Any],
    log: str | os.PathLike,
    *,
    endpoint: EndpointOverride = EndpointOverride(),
    wait: bool = True,
    poll_interval: float = 15.0,
    max_poll_interval: float = 300.0,
    progress: bool = False,
    random_state: int | None = None,
) -> CancelSummary:
    """Cancel the open batches of a log and collect what they finished; nothing new is sent.

    Every batch recorded in ``state_path`` and not yet ingested is asked to cancel
    (``POST /batches/{id}/cancel``); one that has ended meanwhile is just collected. An
    uploaded input file whose batch was never created (a run stopped between the two) is
    looked for in the provider's batch list: its batch, if found, is cancelled too, and
    otherwise the file is marked ``withdrawn`` in the state file so no later run submits
    it (the file stays with the provider, unused). Each cancel is recorded in the state
    file (``status``, ``cancel_requested_at``) as soon as the provider answers it.

    The cancelled batches are then polled like a run's: a batch ends ``cancelled`` with
    the requests it finished in its output and error files (paid for; they are logged as
    a run logs them), and the requests that never ran (error code ``batch_cancelled``)
    are not logged, so they stay pending: the next :func:`run_batch` sends them again
    unless it is cancelled too. Calling this again collects batches still cancelling.

    %(run_parameters)s
        The design the batches were run for (to log their results).
    log : path
        The JSONL attempt log whose batches are cancelled.
    client, base_url, api_key
        As for :func:`run_batch_async`.
    wait : bool
        Poll until every cancelled batch has ended and is logged (default; OpenAI takes up
        to 10 minutes); False sends the cancels, checks once and returns.
    poll_interval, max_poll_interval, progress, random_state
        As for :func:`run_batch_async`.

    Returns
    -------
    CancelSummary

    Raises
    ------
    CollectError
        When a control call keeps failing (cancels already accepted stay recorded).

    Examples
    --------
    >>> import asyncio, tempfile, os
    >>> from hce.collect import SimServer, cancel_batches_async
    >>> design = {"attempts": 2, "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...           "items": [{"id": "T1", "text": "Doctor: How are you?"}]}
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with SimServer().start() as server:  # no batch was run: nothing to cancel
    ...     summary = asyncio.run(cancel_batches_async(design, log, base_url=server.url, api_key="local"))
    >>> summary.cancelled
    ()
    """
    design = design if isinstance(design, Design) else load_design(design)
    session = _Session(design, log, *endpoint, random_state, progress, poll_interval, max_poll_interval)
    cancelled, earlier, ended, withdrawn = [], [], [], []
    async with session:
        client, state = session.client, session.state
        for entry in state.unsubmitted():
            batch = await client.find_batch(entry["input_file_id"])
            if batch is None:
                state.withdraw(entry)
                withdrawn.append(entry["input_file_id"])
            else:
                state.created(entry, batch)
        for entry in state.entries(open_only=True):
            if entry["status"] in CANCELLING:  # asked before (by an earlier call, or on the provider's site)
                earlier.append(entry["batch_id"])
                continue
            batch = await client.cancel_batch(entry["batch_id"])
            state.cancel_requested(entry, batch)
            (cancelled if batch.status in CANCELLING else ended).append(batch.id)
        await session.finish(wait)
    tally = session.tally.counts
    return CancelSummary(
        cancelled=tuple(cancelled), earlier=tuple(earlier), ended=tuple(ended), withdrawn=tuple(withdrawn),
        done=tally["done"], errors=tally["errors"], cost_usd=tally["cost"], waiting=len(state.open()),
        missing=len(pending(design, log)[1]), log=str(Path(log)),
    )


@synchronous(cancel_batches_async)
def cancel_batches(
    design: Design | str | os.PathLike | Mapping[str, Any], log: str | os.PathLike, **kwargs: Any
) -> CancelSummary:
    """Synchronous :func:`cancel_batches_async` (for scripts and the CLI).

    %(sync_parameters)s

    Returns
    -------
    CancelSummary
        The batches cancelled, and what their finished requests added to the log.

    %(run_example_setup)s
    >>> design = example_design(attempts=4)
    >>> with SimServer().start() as server:   # the simulated batch stops after half its requests
    ...     options = dict(base_url=server.url, api_key="local", poll_interval=0.01)
    ...     submitted = run_batch(design, log, wait=False, **options)
    ...     summary = cancel_batches(design, log, **options)
    >>> summary.cancelled, summary.done, summary.missing, len(hce.read_log(log))
    (('batch_sim000001',), 2, 2, 2)
    """


def open_batches(log: str | os.PathLike) -> list[dict[str, Any]]:
    """The recorded batches of a log not yet logged (running, cancelling, or uploaded and
    not yet created), as the state file holds them; empty when there is none."""
    state = _State(state_path(log))
    return state.entries(open_only=True) + state.unsubmitted()


class _Session:
    """What a batch run or cancel works with: the client, the state file, the log and the ingester.

    ``async with`` shows the progress display; leaving closes it, the log and the client
    when it was made here. The log is opened when the first batch is logged, so a call
    that logs nothing leaves no empty log behind.
    """

    def __init__(
        self, design: Design, log: str | os.PathLike, client: JudgeClient | None, base_url: str | None,
        api_key: str | None, random_state: int | None, progress: bool, first: float, most: float,
    ):
        self.design, self.log = design, log
        self.state = _State(state_path(log))
        self.own_client = client is None
        self.client = client or client_for(design, base_url=base_url, api_key=api_key, random_state=random_state)
        self.tally = Tally.of(design)
        self.attempts = {a.attempt_id: a for a in design.plan()}
        self.prompt_for = prompt_cache(design, 64)
        self.bar = (_Progress() if sys.stderr.isatty() else _PollLines()) if progress else None
        self.poller = _Poller(self.client, self.state, self.bar, first, most)
        self.pipeline: Pipeline | None = None  # the log is opened when the first batch is logged

    async def __aenter__(self) -> _Session:
        if self.bar is not None:
            self.bar.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self.bar is not None:
                self.bar.stop()
            if self.pipeline is not None:
                self.pipeline.journal.close()
        finally:
            if self.own_client:
                await self.client.aclose()

    async def finish(self, wait: bool) -> bool:
        """Poll the open batches, logging each as it ends (see :class:`_Poller`)."""
        return await self.poller.finish(self.ingest, wait)

    async def ingest(self, batch: Any) -> None:
        """Log the results of an ended batch: each attempt once, none that never ran."""
        if self.pipeline is None:
            self.pipeline = Pipeline(self.design, Journal(self.log), self.tally)
        journal = self.pipeline.journal
        logged = logged_attempt_ids(self.log)
        unknown = 0
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id is None:
                continue
            for line in (await self.client.file_content(file_id)).decode("utf-8").splitlines():
                if not line.strip():
                    continue
                entry = json.loads(line)
                custom_id = entry.get("custom_id")
                ids = self.state.requests.get(custom_id, [custom_id])
                if not all(i in self.attempts for i in ids):
                    unknown += 1
                    continue
                if all(i in logged for i in ids) or never_ran(entry):
                    continue  # ingested before a crash; or cancelled before it ran, so still pending
                result = batch_result(entry)
                if result.error_message is not None:
                    result.error_message = self.client.scrub(result.error_message)
                request = Request(custom_id, tuple(self.attempts[i] for i in ids))
                attempt = request.attempts[0]
                messages = self.prompt_for(attempt.item.id, attempt.condition.id)
                self.pipeline.record(request, messages, result, batch=True, logged=logged)
                if journal.reason is not None:  # the batch stays open in the state file: the next run collects it
                    failed = f"cannot write {self.log}: {journal.log_cause}" if journal.log_cause else journal.reason
                    raise CollectError(f"{failed}. The batch {batch.id} stays open; its results stay with the provider "
                                       f"(those received are kept in {journal.path}), and the next --batch run of the "
                                       "same command logs the ones not logged yet, without sending them again")
        if unknown:
            warn(
                f"batch {batch.id}: {unknown} results name attempts this design does not plan (was the design changed?); "
                "they were not logged")


class _State:
    """The batches of one log, in a JSON file rewritten atomically after every change."""

    def __init__(self, path: Path):
        self.path = path
        self.batches: list[dict[str, Any]] = []
        self.requests: dict[str, list[str]] = {}  # custom_id -> attempt ids, for requests with n > 1
        if path.exists():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                self.batches, self.requests = saved["batches"], saved.get("requests", {})
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise CollectError(f"{path}: not a batch state file ({exc}); move it away to start afresh") from None

    def uploaded(self, file_id: str, name: str, *, requests: int, size: int) -> dict[str, Any]:
        """Record an uploaded input file before its batch is created."""
        entry = dict(batch_id=None, input_file_id=file_id, file=name, requests=requests, bytes=size,
                     created_at=None, status="uploaded", ingested=False)
        self.batches.append(entry)
        self.save()
        return entry

    def created(self, entry: dict[str, Any], batch: Any) -> None:
        created = datetime.fromtimestamp(batch.created_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        entry.update(batch_id=batch.id, created_at=created, status=batch.status)
        self.save()

    def withdraw(self, entry: dict[str, Any]) -> None:
        """Mark an upload whose batch was never created so that no run submits it."""
        entry.update(status="withdrawn", cancel_requested_at=_now())
        self.save()

    def cancel_requested(self, entry: dict[str, Any], batch: Any) -> None:
        entry.update(status=batch.status, cancel_requested_at=_now())
        self.save()

    def update(self, batch: Any, **fields: Any) -> None:
        for entry in self.batches:
            if entry["batch_id"] == batch.id:
                entry.update(status=batch.status, **fields)
        self.save()

    def unsubmitted(self) -> list[dict[str, Any]]:
        return [b for b in self.batches if b["batch_id"] is None and b["status"] == "uploaded"]

    def entries(self, *, open_only: bool) -> list[dict[str, Any]]:
        return [b for b in self.batches if b["batch_id"] is not None and not (open_only and b["ingested"])]

    def open(self) -> list[str]:
        return [b["batch_id"] for b in self.entries(open_only=True)]

    def ids(self) -> tuple[str, ...]:
        return tuple(b["batch_id"] for b in self.entries(open_only=False))

    def remember(self, members: Mapping[str, list[str]]) -> None:
        """Record which attempts each request with n > 1 answers (its ``custom_id`` names the request)."""
        if members:
            self.requests.update(members)
            self.save()

    def save(self) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        saved: dict[str, Any] = {"batches": self.batches}
        if self.requests:
            saved["requests"] = self.requests
        temporary.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Poller:
    """Polls the open batches with a growing interval and ingests each as it finishes."""

    def __init__(self, client: JudgeClient, state: _State, bar: _Progress | _PollLines | None, first: float, most: float):
        self.client, self.state, self.bar = client, state, bar
        self.first, self.most = float(first), float(most)

    async def finish(self, ingest: Any, wait: bool) -> bool:
        """Poll until no batch is open (True) or, with ``wait=False``, once (True when none is left)."""
        interval = self.first
        while self.state.open():
            for batch_id in self.state.open():
                batch = await self.client.retrieve_batch(batch_id)
                if self.bar is not None:
                    self.bar.update(batch)
                if batch.status not in FINISHED:
                    continue
                await ingest(batch)
                counts = batch.request_counts
                self.state.update(batch, ingested=True, completed=counts.completed if counts else None,
                                  failed=counts.failed if counts else None)
                if batch.status == "failed":
                    problems = "; ".join(
                        f"line {e.line}: {e.message}" if e.line else str(e.message) for e in (batch.errors.data or [])[:5]
                    ) if batch.errors else "no reason given"
                    raise CollectError(f"batch {batch.id} was rejected by the provider: {problems}")
            if not wait or not self.state.open():
                break
            await asyncio.sleep(interval)
            interval = min(self.most, interval * 1.5)
        return not self.state.open()


class _Progress:
    """One line per batch on stderr: status, requests done of total, failed."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            TextColumn("{task.fields[status]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self.tasks: dict[str, Any] = {}

    def start(self) -> None:
        self.progress.start()

    def update(self, batch: Any) -> None:
        counts = batch.request_counts
        done, total, failed = (counts.completed + counts.failed, counts.total, counts.failed) if counts else (0, None, 0)
        if batch.id not in self.tasks:
            self.tasks[batch.id] = self.progress.add_task(batch.id, total=total or None, status=batch.status, failed=0)
        self.progress.update(self.tasks[batch.id], completed=done, total=total or None, status=batch.status, failed=failed)

    def stop(self) -> None:
        self.progress.stop()


class _PollLines:
    """Progress without a terminal (nohup, CI): a line per batch at each poll, where a live bar would draw nothing.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> batch = SimpleNamespace(id="batch_1", status="in_progress",
    ...                         request_counts=SimpleNamespace(completed=40, failed=2, total=100))
    >>> _PollLines().line(batch)
    'batch batch_1: in_progress, 42/100 requests done, 2 failed'
    """

    def start(self) -> None:
        pass

    def line(self, batch: Any) -> str:
        counts = batch.request_counts
        done, total, failed = (counts.completed + counts.failed, counts.total, counts.failed) if counts else (0, 0, 0)
        return f"batch {batch.id}: {batch.status}, {done:,}/{total:,} requests done, {failed:,} failed"

    def update(self, batch: Any) -> None:
        print(self.line(batch), file=sys.stderr, flush=True)

    def stop(self) -> None:
        pass
