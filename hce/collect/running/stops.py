"""What stops a run early, each as an object the workers ask before sending a call.

Every stop works the same way: once its ``reason`` is set, no call is launched, the calls
in flight are finished and their replies logged, and the run ends with the reason. A stop
never cancels a call in flight: its reply may already be paid for
(:mod:`hce.collect.running.journal`).
"""

from __future__ import annotations

from collections.abc import Mapping

from hce.collect.call.client import CallResult, FatalCallError, client_error
from hce.collect.design.design import Attempt


class Halt:
    """The first exception a worker met (a wrong key, a redirect, an unexpected error), held
    until the calls in flight of every endpoint are finished and logged, then raised.

    A :class:`~asyncio.TaskGroup` would cancel the other workers at the first exception,
    throwing away replies their endpoints had already answered (and billed).
    """

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.reason: str | None = None

    def stop(self, error: BaseException) -> None:
        """Keep the first error (later ones, the same endpoint refusing the calls in flight, say, repeat it)."""
        if self.error is None:
            self.error = error
            self.reason = str(error)

    def reraise(self, so_far: str) -> None:
        """Raise the held error, saying what was logged; a no-op when nothing stopped the run."""
        if self.error is None:
            return
        if isinstance(self.error, FatalCallError):
            raise FatalCallError(
                f"{self.error}; the run stopped, and its calls in flight to every endpoint were finished and logged: "
                f"{self.error.fix}, then run the same command again to resume. So far: {so_far}",
                fix=self.error.fix,
            ) from None
        raise self.error


MAX_SAME_ERRORS = 10  # consecutive calls of a condition refused alike (or unanswered) before a run stops
NO_ANSWER = ("timeout: ", "connection error: ")  # how the client's error_message begins when nothing answered


class FailFast:
    """Watches each condition for a systematic failure: its calls, one after another, for more
    than one item, refused with the same HTTP 4xx error, or not answered at all (a timeout or
    a connection error after the retries: a dead endpoint, a wrong port, a blocked network).

    More than one item, because one item's repeated attempts failing alike is a problem of
    that item (a transcript too long for the model), not of the design or the endpoint.
    Per condition, because conditions may use different endpoints.
    """

    def __init__(self, limit: int | None, hosts: Mapping[str, str] | None = None):
        self.limit = limit
        self.hosts = hosts or {}  # endpoint name -> its address, for the message
        self.runs: dict[str, tuple[str, int, set[str]]] = {}  # condition id -> (error, calls, items)
        self.reason: str | None = None  # why the run stops, once it must

    def add(self, attempt: Attempt, result: CallResult) -> None:
        cond = attempt.condition
        unanswered = not result.ok and result.status is None and result.error_message.startswith(NO_ANSWER)
        if self.limit is None or not (unanswered or client_error(result.status)):
            self.runs.pop(cond.id, None)
            return
        # The status and the API's message (the key struck out); any timeout or dropped connection is one kind.
        error = "no answer" if unanswered else result.tries[-1]
        same, calls, items = self.runs.get(cond.id, (error, 0, set()))
        if same != error:
            calls, items = 0, set()
        items.add(attempt.item.id)
        self.runs[cond.id] = (error, calls + 1, items)
        if calls + 1 < self.limit or len(items) < 2 or self.reason is not None:
            return
        if unanswered:
            host = self.hosts.get(cond.endpoint)
            where = f" from endpoint {cond.endpoint!r} ({host})" if host else ""
            what = (f"got no answer{where} (the last: {result.error_message}). Is the server up, and are the base_url "
                    "and its port right? ")
        else:
            what = f"were refused with the same error, {error}. "
        self.reason = (
            f"the run stopped: {calls + 1} calls in a row of condition {cond.id!r} (model {cond.model!r}) {what}"
            "Nothing more was sent; the calls in flight were finished and logged. "
            "Fix the design or the endpoint, then run the same command again with --retry-failed "
            "(retry_failed=True) to send the failed attempts again and the others for the first time. "
            f"(The run stops after max_same_errors={self.limit} such calls; --max-same-errors 0 or "
            "max_same_errors=None never stops it.)"
        )


class Budget:
    """Launches a call only while the log's spend plus the estimates of the calls in flight stays
    within ``limit`` USD (``max_cost_usd``); once one would pass it, nothing more is launched.

    A call's estimate is the dry run's (:func:`estimate`); when it finishes, its estimate gives
    way to its logged cost. So the spend passes the limit only by the estimates' error on the
    calls in flight, at most one round of ``concurrency`` calls.
    """

    def __init__(self, limit: float | None, spent: float):
        self.limit = limit
        self.spent = spent  # logged, this run's calls included once they finish
        self.in_flight = 0.0
        self.reason: str | None = None

    def launch(self, cost: float) -> bool:
        """Reserve ``cost`` for a call about to be sent; False (and a reason) when it would pass the limit."""
        if self.limit is None:
            return True
        if self.reason is None and self.spent + self.in_flight + cost > self.limit:
            self.reason = (
                f"the run stopped before passing max_cost_usd=${self.limit:,.4f}: the log holds ${self.spent:,.4f} of "
                f"calls and the next one (~${cost:,.4f}) would pass it, counting ${self.in_flight:,.4f} estimated for "
                "the calls then in flight (they were finished and logged). Nothing more was sent; attempts not sent "
                "are not logged. Raise run.max_cost_usd (or --max-cost) and run the same command again to send them."
            )
        if self.reason is not None:
            return False
        self.in_flight += cost
        return True

    def settle(self, estimate: float, cost: float | None) -> None:
        """A launched call finished: its logged cost replaces its estimate."""
        if self.limit is not None:
            self.in_flight -= estimate
            self.spent += cost or 0.0
