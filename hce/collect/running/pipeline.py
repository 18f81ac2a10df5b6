"""One way into the log for every reply a run receives, online or from a batch.

A reply is paid for once the endpoint answers it, so what happens to it must not depend on
how it was sent. The concurrent runner (:mod:`~hce.collect.running.runner`) and the batch run
(:mod:`~hce.collect.running.batch`) both open the log through :func:`open_log` (replies an
earlier run recorded are logged first, failed or superseded rows set aside on request) and
hand each reply to :meth:`Pipeline.record`: its rows are built
(:func:`~hce.collect.running.log_rows.request_rows`), written to the write-ahead record and then
to the log in one write (:class:`~hce.collect.running.journal.Journal`), counted for the summary
(:class:`~hce.collect.running.run_summary.Tally`), and the spending limit and the error watch
are told (:mod:`~hce.collect.running.stops`).

Every way of running a design also enters through one door: :func:`collector` checks its
keywords, holds the log's lock and fills its docstring, and :func:`synchronous` makes its
synchronous form (:func:`~hce.collect.running.runner.run` of
:func:`~hce.collect.running.runner.run_async`, and the batch forms likewise).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable, MutableSet
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked, keywords_of

from hce.collect.call.client import CallResult, JudgeClient
from hce.collect.call.sampling import Request
from hce.collect.design.design import Design
from hce.collect.design.fingerprint import set_aside_changed
from hce.collect.running.failed import set_aside_failed
from hce.collect.running.journal import recover
from hce.collect.running.lock import one_writer
from hce.collect.running.log_rows import request_rows
from hce.collect.running.run_summary import Tally
from hce.collect.running.stops import Budget, FailFast

F = TypeVar("F", bound=Callable[..., Any])


class EndpointOverride(NamedTuple):
    """How the caller of a run stands in for the design's one endpoint: its ``client=``, or its
    ``base_url=``/``api_key=`` (all None: the design's endpoints, each with its own key)."""

    client: JudgeClient | None = None
    base_url: str | None = None
    api_key: str | None = None


#: The public keywords a run's ``endpoint`` parameter stands for, in their order.
_OVERRIDE = [
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=f"{kind} | None")
    for name, kind in (("client", "JudgeClient"), ("base_url", "str"), ("api_key", "str"))
]


def collector(run_fn: F) -> F:
    """The door of every ``async def run(design, log, *, endpoint, ...)`` that writes a log.

    ``run_fn``'s ``endpoint`` parameter (an :class:`EndpointOverride`) is offered to callers
    as the keywords ``client``, ``base_url`` and ``api_key``, in its place; a misspelt keyword
    is refused naming the one meant (:func:`~hce._vocabulary.keywords_checked`), one collector
    at a time writes the log (:func:`~hce.collect.running.lock.one_writer`), and the
    docstring's shared fragments are filled (:func:`~hce._docstrings.fill_doc`).
    """
    signature = inspect.signature(run_fn)
    params = list(signature.parameters.values())
    at = [p.name for p in params].index("endpoint")

    @functools.wraps(run_fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        override = EndpointOverride(*(kwargs.pop(p.name, None) for p in _OVERRIDE))
        return await run_fn(*args, endpoint=override, **kwargs)

    run.__signature__ = signature.replace(parameters=[*params[:at], *_OVERRIDE, *params[at + 1:]])  # type: ignore[attr-defined]
    return keywords_checked(one_writer(fill_doc(run)))  # type: ignore[return-value]


def synchronous(run_fn: Callable[..., Any]) -> Callable[[F], F]:
    """Make the decorated ``def name(design, log, **kwargs)`` the synchronous form of ``run_fn``.

    The decorated function gives the name, signature and docstring (its fragments filled);
    calling it runs ``run_fn`` in a new event loop (:func:`in_new_loop`), with its keywords
    checked against ``run_fn``'s when it is called.
    """

    def decorate(func: F) -> F:
        @keywords_of(run_fn)
        @functools.wraps(func)
        def sync(design: Any, log: str | os.PathLike, **kwargs: Any) -> Any:
            return in_new_loop(run_fn, design, log, kwargs)

        return fill_doc(sync)  # type: ignore[return-value]

    return decorate


def in_new_loop(run_fn: Callable[..., Any], design: Any, log: str | os.PathLike, kwargs: dict[str, Any]) -> Any:
    """``await run_fn(design, log, **kwargs)`` in a new event loop, closing a given ``client=`` at the end."""

    async def go() -> Any:
        try:
            return await run_fn(design, log, **kwargs)
        finally:
            if kwargs.get("client") is not None:
                await kwargs["client"].aclose()

    return asyncio.run(go())


@dataclass(frozen=True)
class SetAside:
    """What :func:`open_log` moved out of the log before the run: failed calls' rows, and the
    conditions whose settings changed (their rows moved to ``<log>.superseded.jsonl``)."""

    retried: int = 0
    superseded: list[str] = field(default_factory=list)


def open_log(design: Design, log: str | os.PathLike, *, retry_failed: bool = False,
             new_settings: bool = False) -> SetAside:  # fmt: skip
    """Prepare ``log`` for a run of ``design``: recorded replies logged, then rows set aside.

    Replies an earlier run received but could not log go in first, before anything reads the
    log; the failed calls' rows (``retry_failed``) and the changed conditions' rows
    (``new_settings``) move out before a writer opens the file they replace.

    Examples
    --------
    >>> import tempfile, os
    >>> from hce.collect import load_design
    >>> design = load_design({"attempts": 1, "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...                       "items": [{"id": "T1", "text": "Doctor: Hi."}]})
    >>> open_log(design, os.path.join(tempfile.mkdtemp(), "run.jsonl"), retry_failed=True)
    SetAside(retried=0, superseded=[])
    """
    recover(log)
    retried = set_aside_failed(log) if retry_failed else 0
    superseded = set_aside_changed(design, log) if new_settings else []
    return SetAside(retried, superseded)


@dataclass
class Pipeline:
    """Every reply of a run, from any way of sending it, into the log (module notes).

    ``journal`` writes (a :class:`~hce.collect.running.journal.Journal`); ``budget`` and
    ``fail_fast`` are the runner's stops (a batch run checks its budget before it submits and
    has neither); ``bar`` a progress display updated with the counts after each reply.
    """

    design: Design
    journal: Any
    tally: Tally
    budget: Budget | None = None
    fail_fast: FailFast | None = None
    bar: Any = None

    def record(self, request: Request, messages: list[dict[str, Any]], result: CallResult, *, batch: bool = False,
               estimate: float = 0.0, logged: MutableSet[str] | None = None) -> int:  # fmt: skip
        """Log one reply's rows; the number of rows written.

        ``estimate`` is what the spending limit reserved for the call; ``logged`` the attempt
        ids the log holds already, whose rows are left out (a batch result seen before a
        crash), and which gains the ids written.
        """
        rows = request_rows(request, self.design, messages, result, batch=batch)
        if logged is not None:
            rows = [(row, part) for row, part in rows if row["attempt_id"] not in logged]
        self.journal.write([row for row, _ in rows])  # one write: a request's rows land together
        if self.budget is not None:
            self.budget.settle(estimate, sum(row["cost_usd"] or 0.0 for row, _ in rows))
        condition = request.attempts[0].condition
        for index, (row, part) in enumerate(rows):
            self.tally.add(row, part, condition, call=index == 0)
            if logged is not None:
                logged.add(row["attempt_id"])
        if self.fail_fast is not None:
            self.fail_fast.add(request.attempts[0], result)
        if self.bar is not None:
            self.bar.update(self.tally.counts)
        return len(rows)
