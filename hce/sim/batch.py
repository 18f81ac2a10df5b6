"""The OpenAI Files and Batch endpoints of the simulated judge, so batch runs are rehearsed offline.

:class:`~hce.sim.SimJudge` routes ``/v1/files`` and ``/v1/batches`` here:

- ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/{id}`` and
  ``GET /v1/files/{id}/content``;
- ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (newest first, with
  ``limit`` and ``after``), ``POST /v1/batches/{id}/cancel``.

A batch moves as OpenAI's do, one step per retrieval: ``validating`` (the input file is
checked as OpenAI checks it: one JSON request per line, unique ``custom_id``, ``POST`` to
the batch's endpoint, one model, at most ``max_requests`` lines and ``max_bytes``; a file
that breaks a rule ends the batch ``failed`` with the reasons in ``errors``), then
``in_progress`` for :attr:`BatchSettings.polls` retrievals while the requests are answered
in file order by the same judge as online calls, then ``completed`` with
``request_counts``, an ``output_file_id`` (replies) and an ``error_file_id`` (requests
that failed, one line each with their HTTP status and error body). A share
:attr:`BatchSettings.failure_rate` of the requests fails inside the batch, as a provider's
server error would; the failed request's reply is still drawn, so the other requests get
exactly the replies they would get online.

A cancel moves a ``validating`` or ``in_progress`` batch to ``cancelling`` (OpenAI's API
reference: ``cancelling`` for up to 10 minutes, then ``cancelled`` "with partial results
(if any) available in the output file"). It stays ``cancelling`` for
:attr:`BatchSettings.cancel_polls` retrievals, then ends ``cancelled`` having answered, in
file order, the requests answered before the cancel or the first
:attr:`BatchSettings.cancel_share` of them, whichever is more. Its output file holds the
replies; its error file holds the requests that failed and, one line each with ``response``
null and error code ``batch_cancelled``, those that never ran (the code and its meaning,
"The batch was cancelled before this request executed.", are openai-python's
``BatchRequestOutputError``; a cancelled OpenAI batch with ``request_counts`` failed 0 does
return an error file, BerriAI/litellm pull request 36034). ``request_counts.failed`` counts
the failed requests only. A batch cancelled while ``validating`` ends ``cancelled`` with no
files. Cancelling a batch that has ended answers HTTP 409 ``invalid_request_error`` "Cannot
cancel a batch with status '<status>'." (as the live API does, BerriAI/litellm's batch
tests); cancelling one that is ``cancelling`` returns it as it is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from hce.sim.reply import SimReply, error_reply, unit
from hce.errors import HceError

ENDPOINT = "/v1/chat/completions"
ENDED = ("completed", "failed", "expired", "cancelled")


@dataclass
class BatchSettings:
    """How simulated batches behave.

    Attributes
    ----------
    polls : int
        Retrievals that find a batch in progress before it completes.
    failure_rate : float
        Share of requests failing inside the batch.
    max_requests, max_bytes : int
        The input file limits (OpenAI's: 50,000 requests and 200 MB a file).
    busy : int
        How many of the next files and batches requests are answered 503 (an overloaded
        provider; counts down).
    cancel_polls : int
        Retrievals that find a cancelled batch ``cancelling``.
    cancel_share : float
        The least share of a cancelled batch's requests answered before it stops.

    Examples
    --------
    >>> from hce.collect import BatchSettings
    >>> BatchSettings(polls=0, failure_rate=0.1).max_requests
    50000
    """

    polls: int = 2
    failure_rate: float = 0.0
    max_requests: int = 50_000
    max_bytes: int = 200_000_000
    busy: int = 0
    cancel_polls: int = 1
    cancel_share: float = 0.5

    def __post_init__(self) -> None:
        if min(self.polls, self.cancel_polls) < 0 or not all(0 <= x <= 1 for x in (self.failure_rate, self.cancel_share)):
            raise HceError(
                "polls and cancel_polls must be >= 0 and failure_rate and cancel_share within [0, 1], got "
                f"{self.polls}, {self.cancel_polls}, {self.failure_rate}, {self.cancel_share}"
            )


@dataclass
class _Batch:
    record: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)
    seen: int = 0
    done: int = 0
    output: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cancel_seen: int = 0  # retrievals since the cancel


class SimBatches:
    """Files and batches held in memory; ``chat(body, request_id)`` answers one chat-completion body."""

    def __init__(self, chat: Callable[[Any, str | None], SimReply], *, seed: int, settings: BatchSettings | None = None):
        self.chat = chat
        self.seed = seed
        self.settings = settings or BatchSettings()
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, _Batch] = {}
        self.created = 0  # batches created so far (tests check that a resumed run made none)

    def respond(self, method: str, target: str, body: Any) -> SimReply | None:
        """The reply to a files or batches request, or None when the route is not one of these."""
        path, _, query = target.partition("?")
        parts = path.rstrip("/").removeprefix("/v1").strip("/").split("/")
        if parts[0] in ("files", "batches") and self.settings.busy > 0:
            self.settings.busy -= 1
            reply = error_reply(503, "The engine is currently overloaded, please try again later (simulated)", "server_error")
            reply.headers["Retry-After"] = "0"
            return reply
        if parts[0] == "files":
            if method == "POST" and len(parts) == 1:
                return self._upload(body)
            if method == "GET" and len(parts) in (2, 3) and parts[1] in self.files:
                meta, data = self.files[parts[1]]
                if len(parts) == 2:
                    return SimReply(200, meta)
                if parts[2] == "content":
                    return SimReply(200, {}, raw=data, content_type="application/octet-stream")
            return error_reply(404, f"No such File object: {'/'.join(parts[1:])}", "invalid_request_error")
        if parts[0] == "batches":
            if method == "POST" and len(parts) == 1:
                return self._create(body)
            if method == "GET" and len(parts) == 1:
                return self._list(parse_qs(query))
            if method == "GET" and len(parts) == 2 and parts[1] in self.batches:
                return SimReply(200, self._advance(self.batches[parts[1]]))
            if method == "POST" and len(parts) == 3 and parts[2] == "cancel" and parts[1] in self.batches:
                return self._cancel(self.batches[parts[1]])
            return error_reply(404, f"No batch found with id '{'/'.join(parts[1:])}'", "invalid_request_error")
        return None

    # --- files -----------------------------------------------------------------------------

    def _store(self, name: str, data: bytes, purpose: str) -> str:
        file_id = f"file-sim{len(self.files) + 1:06d}"
        meta = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": name, "purpose": purpose, "status": "processed"}
        self.files[file_id] = (meta, data)
        return file_id

    def _upload(self, body: Any) -> SimReply:
        if not isinstance(body, dict) or not isinstance(body.get("file"), tuple) or "purpose" not in body:
            return error_reply(400, "a file upload is multipart/form-data with 'file' and 'purpose'", "invalid_request_error")
        name, data = body["file"]
        return SimReply(200, self.files[self._store(name, data, body["purpose"])][0])

    # --- batches ---------------------------------------------------------------------------

    def _create(self, body: Any) -> SimReply:
        if not isinstance(body, dict) or body.get("input_file_id") not in self.files:
            named = body.get("input_file_id") if isinstance(body, dict) else None
            return error_reply(400, f"input_file_id {named!r} is not an uploaded file", "invalid_request_error")
        if body.get("endpoint") != ENDPOINT or body.get("completion_window") != "24h":
            return error_reply(400, f"the simulated judge batches only endpoint {ENDPOINT} with completion_window 24h",
                          "invalid_request_error")
        if self.files[body["input_file_id"]][0]["purpose"] != "batch":
            return error_reply(400, "the input file was not uploaded with purpose 'batch'", "invalid_request_error")
        self.created += 1
        now = int(time.time())
        batch_id = f"batch_sim{self.created:06d}"
        record = {
            "id": batch_id, "object": "batch", "endpoint": ENDPOINT, "errors": None,
            "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
            "expires_at": now + 86_400, "finalizing_at": None, "completed_at": None, "failed_at": None,
            "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata"),
        }
        self.batches[batch_id] = _Batch(record)
        return SimReply(200, dict(record))

    def _list(self, query: dict[str, list[str]]) -> SimReply:
        ids = sorted(self.batches, reverse=True)
        if "after" in query and query["after"][0] in self.batches:
            ids = ids[ids.index(query["after"][0]) + 1 :]
        limit = int(query.get("limit", ["20"])[0])
        page = [dict(self.batches[i].record) for i in ids[:limit]]
        return SimReply(200, {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                              "last_id": page[-1]["id"] if page else None, "has_more": len(ids) > limit})

    def _advance(self, batch: _Batch) -> dict[str, Any]:
        """One retrieval: validate, answer the next share of requests, or finish."""
        record = batch.record
        if record["status"] in ENDED:
            return dict(record)
        now = int(time.time())
        if record["status"] == "cancelling":
            batch.cancel_seen += 1
            if batch.cancel_seen > self.settings.cancel_polls:
                self._stop(batch, now)
            return dict(record)
        batch.seen += 1
        if record["status"] == "validating":
            problems = self._validate(batch)
            if problems:
                record.update(status="failed", failed_at=now, errors={"object": "list", "data": problems})
                return dict(record)
            record.update(status="in_progress", in_progress_at=now)
            record["request_counts"]["total"] = len(batch.requests)
        total, polls = len(batch.requests), self.settings.polls
        self._answer_up_to(batch, total if batch.seen > polls else total * (batch.seen - 1) // polls)
        if batch.done == total:
            record.update(status="completed", finalizing_at=now, completed_at=now)
            self._store_results(batch)
        return dict(record)

    def _cancel(self, batch: _Batch) -> SimReply:
        record = batch.record
        if record["status"] in ENDED:
            return error_reply(409, f"Cannot cancel a batch with status '{record['status']}'.", "invalid_request_error")
        if record["status"] != "cancelling":
            record.update(status="cancelling", cancelling_at=int(time.time()))
        return SimReply(200, dict(record))

    def _stop(self, batch: _Batch, now: int) -> None:
        """End a cancelled batch: its share answered, the requests that never ran in the error file."""
        total = len(batch.requests)  # 0 when it was cancelled before validation
        self._answer_up_to(batch, max(batch.done, int(total * self.settings.cancel_share)))
        failed = len(batch.errors)
        for request in batch.requests[batch.done :]:
            error = {"code": "batch_cancelled", "message": "The batch was cancelled before this request executed."}
            batch.errors.append(_result_line(batch, request["custom_id"], None, error))
        batch.record["request_counts"].update(completed=len(batch.output), failed=failed)
        batch.record.update(status="cancelled", cancelled_at=now)
        self._store_results(batch)

    def _store_results(self, batch: _Batch) -> None:
        record = batch.record
        name = record["id"]
        if batch.output:
            record["output_file_id"] = self._store(f"{name}_output.jsonl", _lines(batch.output), "batch_output")
        if batch.errors:
            record["error_file_id"] = self._store(f"{name}_error.jsonl", _lines(batch.errors), "batch_output")

    def _validate(self, batch: _Batch) -> list[dict[str, Any]]:
        data = self.files[batch.record["input_file_id"]][1]
        settings = self.settings
        if len(data) > settings.max_bytes:
            return [_problem("file_too_large", f"the input file has {len(data):,} bytes; the limit is {settings.max_bytes:,}")]
        lines = data.decode("utf-8").splitlines()
        if len(lines) > settings.max_requests:
            message = f"the input file has {len(lines):,} requests; the limit is {settings.max_requests:,}"
            return [_problem("too_many_requests", message)]
        problems, seen, models = [], set(), set()
        for number, line in enumerate(lines, start=1):
            try:
                request = json.loads(line)
            except ValueError:
                problems.append(_problem("invalid_json_line", "this line is not valid JSON", number))
                continue
            if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
                problems.append(_problem("invalid_request", "a request needs custom_id, method, url and body", number))
            elif request.get("custom_id") in seen:
                problems.append(_problem("duplicate_custom_id", f"custom_id {request.get('custom_id')!r} repeats", number))
            elif request.get("method") != "POST" or request.get("url") != ENDPOINT:
                problems.append(_problem("invalid_url", f"every request must be POST {ENDPOINT}", number))
            else:
                seen.add(request["custom_id"])
                models.add(request["body"].get("model"))
                batch.requests.append(request)
        if len(models) > 1:
            problems.append(_problem("mixed_models", f"one batch may use one model, this file uses {sorted(map(str, models))}"))
        return problems

    def _answer_up_to(self, batch: _Batch, target: int) -> None:
        """Answer the batch's requests in file order until ``target`` are done."""
        while batch.done < target:
            self._answer(batch, batch.requests[batch.done])
            batch.done += 1
        batch.record["request_counts"].update(completed=len(batch.output), failed=len(batch.errors))

    def _answer(self, batch: _Batch, request: dict[str, Any]) -> None:
        # Drawn even when it fails below, as a server would have started it; keyed by custom_id (the
        # attempt_id), as the online call is by its X-Client-Request-Id, so both give an attempt one reply.
        reply = self.chat(request["body"], request["custom_id"])
        custom_id = request["custom_id"]
        key = f"{batch.record['id']}/{custom_id}"
        if reply.status == 200 and reply.raw is not None:
            reply = error_reply(500, "The model's reply could not be encoded (simulated)", "server_error")
        elif reply.status == 200 and unit(self.seed, "batch-failure", key) < self.settings.failure_rate:
            reply = error_reply(500, "The server had an error while processing your request (simulated batch failure)", "server_error")
        response = {"status_code": reply.status, "request_id": f"req_{int(unit('request', key) * 1e15):015d}",
                    "body": reply.body}
        (batch.output if reply.status == 200 else batch.errors).append(_result_line(batch, custom_id, response, None))


def _result_line(batch: _Batch, custom_id: str, response: dict[str, Any] | None, error: dict[str, Any] | None) -> str:
    """One line of an output or error file, as OpenAI writes them."""
    key = f"{batch.record['id']}/{custom_id}"
    return json.dumps({"id": f"batch_req_{int(unit(key) * 1e15):015d}", "custom_id": custom_id,
                       "response": response, "error": error})


def _problem(code: str, message: str, line: int | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": None, "line": line}


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")
