"""The spending limit (``max_cost_usd``) checked before anything is sent.

:func:`check_budget` refuses a limit that cannot bound the spend; :func:`budget_stop` tells a
dry run where the limit would stop a run; :func:`check_batch_budget` refuses batches whose
estimate would pass it. While a run goes, :class:`hce.collect.running.stops.Budget` holds the limit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hce.collect.design.design import Attempt, Design
from hce.collect.estimates import call_estimate
from hce.collect.running.journal import recorded_rows
from hce.collect.call.messages import prompt_cache
from hce.collect.call.pricing import price_of
from hce.collect.call.sampling import group_requests
from hce.errors import CollectError
from hce.log_files import logged_attempt_ids


def check_budget(design: Design, limit: Any) -> None:
    """Refuse a spending limit that is not a positive number, or that cannot bound an unpriced model's calls."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
        raise CollectError(f"max_cost_usd must be a number of USD > 0, got {limit!r}")
    # An endpoint's own pricing (none, or its prices) prices its conditions whatever the model.
    unpriced = sorted({c.price_model or c.model for c in design.conditions
                       if design.endpoint_of(c).pricing is None and price_of(c.price_model or c.model) is None})
    if unpriced:
        raise CollectError(
            f"max_cost_usd cannot bound the spend on unpriced model(s) {unpriced}: give their conditions a price_model "
            "(the priced model they cost as) or run without the limit"
        )


def budget_stop(design: Design, log: str | os.PathLike | None, limit: float, *, batch: bool = False) -> str:
    """Where ``max_cost_usd=limit`` would stop a run of ``design`` on ``log``, in one line (for ``--dry-run``).

    The calls are taken in plan order at the dry run's estimates, as the run launches them;
    the run settles each call at its logged cost, so it stops near here, a call or two
    later when the replies cost less than estimated.

    Examples
    --------
    >>> from hce.collect.design.design import load_design
    >>> d = load_design({"attempts": 100, "conditions": [{"prompt": "P1.2", "model": "gpt-4o"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> budget_stop(d, None, 0.05)  # doctest: +ELLIPSIS
    'with max_cost_usd=$0.0500: the log holds $0.0000; the run would stop after about ... of 100 calls (~$0.04...'
    """
    check_budget(design, limit)
    spent = logged_cost(log) if log is not None else 0.0
    done = logged_attempt_ids(log) | {row["attempt_id"] for row in recorded_rows(log)} if log is not None else set()
    requests = group_requests([a for a in design.plan() if a.attempt_id not in done])
    messages = prompt_cache(design, 64)
    total, fit = spent, 0
    for request in requests:
        cond = request.attempts[0].condition
        cost = call_estimate(cond, messages(request.attempts[0].item.id, cond.id), design, batch=batch, n=request.n) or 0.0
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
    check_budget(design, limit)
    cost = sum(
        call_estimate(r.attempts[0].condition, messages_for(r.attempts[0].item.id, r.attempts[0].condition.id),
                       design, batch=True, n=r.n)
        for r in group_requests(attempts)
    )  # fmt: skip
    spent = logged_cost(log)
    if spent + cost > limit:
        raise CollectError(
            f"nothing was submitted: the log holds ${spent:,.4f} of calls and these {len(attempts):,} batch requests "
            f"would add ~${cost:,.4f}, passing max_cost_usd=${limit:,.4f}. Raise run.max_cost_usd (or --max-cost), "
            "or send fewer attempts."
        )


def logged_cost(log: str | os.PathLike) -> float:
    """The sum of ``cost_usd`` over a JSONL log's rows (0 when there is no log yet); unpriced rows count 0.

    Examples
    --------
    >>> import tempfile, os
    >>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with open(log, "w") as f:
    ...     _ = f.write('{"attempt_id": "a", "cost_usd": 0.25}\\n{"attempt_id": "b", "cost_usd": null}\\n')
    >>> logged_cost(log)
    0.25
    """
    path = Path(log)
    if not path.exists():
        return 0.0
    total = 0.0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if '"cost_usd"' in line:
                try:
                    total += json.loads(line).get("cost_usd") or 0.0
                except json.JSONDecodeError:  # a torn last line: LogWriter sets it aside
                    continue
    return total
