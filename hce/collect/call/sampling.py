"""Several attempts from one request: ``samples_per_request: k`` sends ``n = k`` and logs k rows.

A condition with ``samples_per_request: k`` answers the attempts of an item in requests of
up to k: attempts ``1..k`` are one request, ``k+1..2k`` the next, and so on (the last may be
smaller). Each attempt keeps its own row, ``attempt_id`` and ``attempt`` number; the rows of
one request share its ``request_id``, a hash of their attempt ids. Only the attempts not
yet logged are asked for, so a resumed run (or ``--retry-failed``) asks a request for just
the attempts it still lacks, under a ``request_id`` of its own; a request's rows are written
to the log in one write, so nothing is lost or logged twice.

Usage is the request's, and the server bills it once (the prompt once, each choice's
output). It is split over the rows so that every column adds up exactly to what the
server reported (:func:`split_usage`):

- ``input_tokens`` and ``cached_tokens``: in equal shares, the remainder one token each to
  the first rows (so a row never has more cached than input tokens);
- ``output_tokens``: in proportion to each choice's own length (its logprob tokens when
  every choice has them, else its characters), by largest remainder;
- ``cost_usd`` is then each row's tokens at the price (it adds up to the request's cost);
  ``latency_s`` and ``retries`` are the request's, on every row.

A reply with fewer choices than asked fills the rows it can; the others are flagged
("the reply has 1 choice(s) where n=3 was asked") and, as an unusable reply, kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hce.collect.design.design import Attempt

if TYPE_CHECKING:  # the HTTP client (asyncio) loads only where calls are made: a dry run groups requests too
    from hce.collect.call.client import CallResult


@dataclass(frozen=True)
class Request:
    """Attempts of one item x condition answered by one call (``n = len(attempts)``)."""

    request_id: str
    attempts: tuple[Attempt, ...]

    @property
    def n(self) -> int:
        return len(self.attempts)


def request_id(attempt_ids: Sequence[str]) -> str:
    """The id of the request answering these attempts (24 hex digits).

    Examples
    --------
    >>> request_id(["a1", "a2"]) == request_id(["a2", "a1"]), len(request_id(["a1"]))
    (True, 24)
    """
    key = "\x1f".join(["request", *sorted(attempt_ids)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def group_requests(attempts: Sequence[Attempt]) -> list[Request]:
    """The requests that answer ``attempts`` (pending ones, in plan order), k per request.

    Attempts of one item x condition fall into the fixed slots ``1..k``, ``k+1..2k``, ...;
    the pending attempts of one slot form one request. With k = 1 every attempt is a request.

    Examples
    --------
    >>> from hce.collect.design.design import load_design
    >>> d = load_design({"attempts": 5, "conditions": [{"prompt": "P2.1", "model": "gpt-4o", "samples_per_request": 2}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> [[a.attempt for a in r.attempts] for r in group_requests(d.plan())]
    [[1, 2], [3, 4], [5]]
    >>> [[a.attempt for a in r.attempts] for r in group_requests([a for a in d.plan() if a.attempt != 2])]
    [[1], [3, 4], [5]]
    """
    slots: dict[tuple[str, str, int], list[Attempt]] = {}
    for attempt in attempts:
        k = attempt.condition.samples_per_request
        slots.setdefault((attempt.item.id, attempt.condition.id, (attempt.attempt - 1) // k), []).append(attempt)
    return [Request(request_id([a.attempt_id for a in group]), tuple(group)) for group in slots.values()]


def _shares(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` by largest remainder (ties to the first); sums to ``total``.

    Examples
    --------
    >>> _shares(10, [1, 1, 1]), _shares(7, [0, 0]), _shares(5, [3, 1])
    ([4, 3, 3], [4, 3], [4, 1])
    """
    n = len(weights)
    whole = float(sum(weights))
    if whole <= 0:
        weights, whole = [1.0] * n, float(n)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(n), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def split_usage(result: CallResult, n: int) -> list[tuple[int | None, int | None, int | None]]:
    """``(input_tokens, output_tokens, cached_tokens)`` of each of ``n`` rows; columns add up to the request's.

    See the module notes for the rule.

    Examples
    --------
    >>> from hce.collect.call.client import CallResult
    >>> r = CallResult(input_tokens=2001, output_tokens=10, cached_tokens=1920,
    ...                choices=[("Total: 12", "stop", None), ("Total: 9", "stop", None), ("1", "stop", None)])
    >>> split_usage(r, 3)
    [(667, 5, 640), (667, 4, 640), (667, 1, 640)]
    """
    if result.input_tokens is None:
        return [(None, None, None)] * n
    equal = [1.0] * n
    inputs = _shares(int(result.input_tokens), equal)
    cached = _shares(int(result.cached_tokens or 0), equal)
    choices = (result.choices + [(None, None, None)] * n)[:n]
    if all(lp is not None for _, _, lp in choices):
        weights = [float(len(lp)) for _, _, lp in choices]
    else:
        weights = [float(len(text or "")) for text, _, _ in choices]
    outputs = _shares(int(result.output_tokens or 0), weights)
    return list(zip(inputs, outputs, cached, strict=True))


def split_result(result: CallResult, n: int) -> list[CallResult]:
    """One :class:`CallResult` per choice of a request asking for ``n``, usage split by :func:`split_usage`.

    A failed call gives ``n`` copies of its failure; a reply with fewer choices than asked
    gives flagged results for the rows it cannot fill.
    """
    if n == 1:
        return [result]
    if not result.choices:  # no reply (a failed call, an unreadable body): every row shares the failure
        return [dataclasses.replace(result) for _ in range(n)]
    parts = []
    written = _shares(int(result.cache_write_tokens or 0), [1.0] * n)  # as the cached tokens: in equal shares
    for index, (tokens_in, tokens_out, tokens_cached) in enumerate(split_usage(result, n)):
        part = dataclasses.replace(result, input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=tokens_cached,
                                   cache_write_tokens=written[index] if result.input_tokens is not None else None)
        if index < len(result.choices):
            part.response_text, part.finish_reason, part.logprobs = result.choices[index]
            part.error_message = None if part.response_text is not None else (
                f"the reply has no message content (finish_reason={part.finish_reason!r})"
            )  # fmt: skip
        else:
            part.response_text = part.finish_reason = part.logprobs = None
            part.error_message = f"the reply has {len(result.choices)} choice(s) where n={n} was asked"
        parts.append(part)
    return parts
