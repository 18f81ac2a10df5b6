"""Calls, tokens and cost a run would make, estimated before anything is sent (the dry run).

Input tokens are the rendered prompt's characters / :data:`CHARS_PER_TOKEN`; output tokens a
typical reply of the prompt's format (:func:`expected_output`). The spending limit
(:mod:`hce.collect.running.spend_limit`) and the run's reservations price calls the same way.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

from hce._vocabulary import keywords_checked
from hce.collect.design.design import Condition, Design, Endpoint, load_design
from hce.collect.running.failed import failed_attempt_ids
from hce.collect.design.fingerprint import changed_settings, check_resume
from hce.collect.running.journal import recorded_rows
from hce.collect.call.messages import item_messages
from hce.collect.call.pricing import Price, cost_usd
from hce.collect.design.prompts import REPLY_FORMAT
from hce.collect.call.sampling import group_requests
from hce.log_files import logged_attempt_ids
from hce.rubric import Rubric

if TYPE_CHECKING:
    import pandas as pd

# Typical reply lengths in tokens, for estimates only (capped by max_tokens). A score block and a
# step-by-step reply grow with the rubric (:func:`expected_output`); these are their Rubric v5.0 sizes.
TYPICAL_OUTPUT_TOKENS = {"total": 2, "scores": 53, "cot": 453, "verdict": 45, "synthetic": 700}
CHARS_PER_TOKEN = 4  # a rough rule for English text; the estimate says it is rough
REASONING_TOKENS = 80  # a step-by-step reply's paragraph per criterion, before its score block


def expected_output(cond: Condition, rubric: Rubric) -> int:
    """Output tokens one reply of ``cond`` is assumed to take, capped by ``max_tokens`` (estimates only).

    A score block (``scores``) is a line per criterion of the design's rubric, ``name: score``,
    and a total line when the rubric's total is a score (the prompt asks for none otherwise, nor
    does a structured reply, ``response_format``, whose total hce sums from the criteria):
    each line its name's characters / 4 (the prompt's token rule) plus 3 for ": ", the score
    and the newline, and 5 for the total; a step-by-step reply (``cot``) writes
    :data:`REASONING_TOKENS` of reasoning per criterion before that block. So the estimate
    follows the rubric (53 and 453 for Rubric v5.0's five criteria; the simulated judge writes
    51 and about 450 of its tokens). Other formats: :data:`TYPICAL_OUTPUT_TOKENS`.

    >>> import hce
    >>> from hce.collect.design.design import Condition
    >>> expected_output(Condition("c", "P2.1", "m"), hce.load_rubric("v5")), expected_output(Condition("c", "P2.3", "m"), hce.load_rubric("v5"))
    (53, 453)
    """
    if cond.template is None and cond.prompt_id not in REPLY_FORMAT:  # a CustomPrompt: no typical length known, so the cap
        return cond.max_tokens or TYPICAL_OUTPUT_TOKENS["cot"]
    typical = TYPICAL_OUTPUT_TOKENS[cond.reply_format]
    if cond.reply_format in ("scores", "cot") and rubric.criteria:
        typical = sum(math.ceil(len(name) / CHARS_PER_TOKEN) + 3 for name in rubric.criteria)
        # a structured reply (response_format) has no total: hce sums the criteria itself
        typical += 5 if rubric.total_is_meaningful and cond.response_format is None else 0
        typical += REASONING_TOKENS * len(rubric.criteria) if cond.reply_format == "cot" else 0
    return min(typical, cond.max_tokens) if cond.max_tokens else typical


def input_tokens(messages: list[dict[str, str]]) -> int:
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
        ``output_tokens``, ``cost_usd`` (as the endpoint prices it: 0 for ``pricing: none``, its
        own prices when it has them; NaN for unpriced models).

    Examples
    --------
    >>> d = load_design({"attempts": 10, "conditions": [{"prompt": "P1.1", "model": "gpt-4o"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> estimate(d)[["calls", "output_tokens"]].to_dict("records")
    [{'calls': 10, 'output_tokens': 20}]
    """
    import pandas as pd

    return pd.DataFrame(estimate_rows(design, log=log, batch=batch, retry_failed=retry_failed, new_settings=new_settings))


def estimate_rows(design: Design | str | os.PathLike, *, log: str | os.PathLike | None = None, batch: bool = False,
                  retry_failed: bool = False, new_settings: bool = False) -> list[dict[str, Any]]:
    """:func:`estimate`'s rows as dicts, without pandas: what ``hce collect --dry-run`` prints (issue 44: it
    starts in under a second, and pandas alone took a third of that)."""
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
            sizes[key] = input_tokens(item_messages(attempt.item, cond, design))
        row["calls"] += 1
        row["input_tokens"] += sizes[key]
        row["output_tokens"] += expected_output(cond, design.rubric) * request.n
    for cond in design.conditions:
        row = rows[cond.id]
        cost = planned_cost(cond, design.endpoint_of(cond), row["input_tokens"], row["output_tokens"], batch=batch,
                            warn=True)  # fmt: skip
        row["cost_usd"] = float("nan") if cost is None else cost
    return list(rows.values())


def planned_cost(
    cond: Condition, endpoint: Endpoint, tokens_in: int, tokens_out: int, cached: int = 0, *, batch: bool = False,
    warn: bool = False,
) -> float | None:
    """The cost of planned calls as their endpoint prices them; None when unpriced.

    An endpoint's ``pricing: none`` costs 0 (a judge on your own hardware); its own prices
    price every call; else hce's table prices ``price_model`` or the model (``cached``
    prompt tokens at the cached rate, 0 by default; ``batch`` at the Batch API's discount,
    False by default), as the log will (``hce.collect.running.log_rows``); ``warn=True`` warns
    of a model the table does not price (False by default).

    Examples
    --------
    >>> from hce.collect.design.design import Condition, Endpoint
    >>> cond = Condition("c", "P2.1", "gpt-4.1-mini-2025-04-14")
    >>> planned_cost(cond, Endpoint(pricing="none"), 1000, 50), planned_cost(cond, Endpoint(), 1_000_000, 0)
    (0.0, 0.4)
    """
    if endpoint.pricing == "none":
        return 0.0
    if isinstance(endpoint.pricing, Price):
        return cost_usd(cond.model, tokens_in, tokens_out, cached, prices={cond.model: endpoint.pricing}, batch=batch,
                        warn=False)  # fmt: skip
    return cost_usd(cond.price_model or cond.model, tokens_in, tokens_out, cached, batch=batch, warn=warn)


def call_estimate(
    cond: Condition, messages: list[dict[str, str]], design: Design, *, batch: bool = False, n: int = 1
) -> float | None:
    """The estimated cost of one call asking for ``n`` choices (as :func:`estimate` prices it); None when unpriced."""
    return planned_cost(cond, design.endpoint_of(cond), input_tokens(messages), expected_output(cond, design.rubric) * n,
                        batch=batch)  # fmt: skip


def summarise_estimate(table: pd.DataFrame | list[dict[str, Any]]) -> str:
    """One line for a dry run: calls, tokens and cost (and which models are unpriced), of :func:`estimate`'s
    table or :func:`estimate_rows`' rows."""
    rows = table if isinstance(table, list) else table.to_dict("records")
    costs = [float(r["cost_usd"]) for r in rows if r["cost_usd"] == r["cost_usd"]]  # NaN: unpriced
    unpriced = sorted({r["model"] for r in rows if r["cost_usd"] != r["cost_usd"]})
    total = {name: int(sum(r[name] for r in rows)) for name in ("calls", "input_tokens", "output_tokens")}
    text = (
        f"dry run: {total['calls']:,} calls, ~{total['input_tokens']:,} input tokens, "
        f"~{total['output_tokens']:,} output tokens, ~${sum(costs) if costs else 0.0:,.2f}"
    )
    if unpriced:
        text += f" (not counting unpriced models {unpriced})"
    return text + "; nothing was sent"
