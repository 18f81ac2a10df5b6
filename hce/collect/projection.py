"""What a design would cost under each way of sending it: separate calls, n-sampling, caching, batch, all three.

:func:`project` prices the design's planned attempts five ways, before anything is sent:

- ``separate``: one online call per attempt, no prompt-cache hit (the PRD's plan as written);
- ``n_sampling``: one online request per item x condition answering ``k`` attempts (``n = k``:
  the prompt billed once, each choice's output), no cache hit;
- ``caching``: separate online calls, with OpenAI's prompt cache as :mod:`hce.prompt_cache`
  models it (the longest prefix an earlier request computed, from 1,024 tokens in 128-token
  steps, per model and ``prompt_cache_key``), the requests sent in plan order;
- ``batch``: separate calls through the Batch API (half price), no cache hit;
- ``combined``: n-sampling, caching and batch together.

The assumptions, stated with every projection (:data:`ASSUMPTIONS`): prompt tokens are the
rendered prompt's characters / 4 (the simulated judge counts the same way; a real tokenizer
differs by some percent); output tokens are a typical reply length per prompt format
grown with the rubric (:func:`hce.collect.estimates.expected_output`, capped by ``max_tokens``) per attempt,
whatever ``n``; cache hits as modelled (no eviction, no overflow to other machines: real
hit rates can be lower); the batch half applies to cached input too
(:mod:`hce.collect.call.pricing`); prices from the dated table.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hce.collect.design.design import Attempt, Condition, Design, load_design
from hce.collect.estimates import expected_output, input_tokens, planned_cost
from hce.collect.call.messages import prompt_cache
from hce.collect.call.pricing import _OPENAI
from hce.collect.call.sampling import group_requests
from hce.prompt_cache import PrefixCache
from hce.rubric import Rubric

if TYPE_CHECKING:
    import pandas as pd

STRATEGIES = {
    "separate": dict(n=False, cache=False, batch=False),
    "n_sampling": dict(n=True, cache=False, batch=False),
    "caching": dict(n=False, cache=True, batch=False),
    "batch": dict(n=False, cache=False, batch=True),
    "combined": dict(n=True, cache=True, batch=True),
}
ASSUMPTIONS = (
    "prompt tokens = rendered characters / 4; output tokens = a typical reply per prompt format "
    "(P1.1 2; a score block of the rubric's criteria, each name's characters / 4 + 3, + 5 for the total when it is a score: 53 for "
    "Rubric v5.0; reasoning 80 a criterion before it: 453; capped by max_tokens) per attempt whatever n; "
    "n-sampling asks k per request (k = samples_per_request, or the design's attempts up to 128 when it is 1); "
    "cache hits as OpenAI documents them (>= 1,024 tokens, 128-token steps, after a first request with the prefix), "
    "with no eviction or overflow, so real hits can be fewer; batch = half price on every token class; "
    f"prices from hce's dated table (read {_OPENAI})"
)


def project(design: Design | str | os.PathLike, *, k: int | None = None, pilot: pd.DataFrame | None = None) -> pd.DataFrame:
    """The projected cost of every planned attempt of a design under each strategy (module notes).

    Parameters
    ----------
    design : Design or path of a design YAML
    k : int, optional
        Attempts per request for n-sampling (default: each condition's ``samples_per_request``
        when above 1, else the design's ``attempts``, at most 128).
    pilot : DataFrame, optional
        An attempt log of a pilot run (seed 000 section 12: "monitor costs closely during
        pilots"): each condition's reply length is then its mean logged ``output_tokens``
        per attempt (rows with a reply, matched by ``condition_id``, else by ``prompt_id``)
        instead of the typical length.

    Returns
    -------
    DataFrame
        One row per condition x strategy: ``condition_id``, ``model``, ``strategy``, ``k``,
        ``calls``, ``attempts``, ``input_tokens``, ``cached_tokens``, ``output_tokens``,
        ``cost_usd`` (NaN for an unpriced model), ``cost_per_attempt``,
        ``cost_per_1000_attempts``, ``saving`` (``separate``'s cost over this one's, "N x
        cheaper"), ``reply_tokens`` (per attempt, as assumed) and ``reply_source``
        (``typical`` or ``pilot``).

    Examples
    --------
    >>> d = load_design({"attempts": 10, "conditions": [{"prompt": "P2.1", "model": "gpt-4o-2024-08-06"}],
    ...                  "items": [{"id": f"T{i}", "text": f"Doctor: Hi.\\nPatient: Hello {i}."} for i in range(5)]})
    >>> table = project(d).set_index("strategy")
    >>> table["calls"].to_dict()
    {'separate': 50, 'n_sampling': 5, 'caching': 50, 'batch': 50, 'combined': 5}
    >>> bool(table.loc["combined", "saving"] > 5)
    True
    """
    import pandas as pd

    return pd.DataFrame(project_rows(design, k=k, pilot=pilot))


def project_rows(design: Design | str | os.PathLike, *, k: int | None = None,
                 pilot: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """:func:`project`'s rows as dicts, without pandas (unless a pilot is given): what ``hce collect --dry-run``
    prints (issue 44: it starts in under a second)."""
    design = design if isinstance(design, Design) else load_design(design)
    messages_for = prompt_cache(design, 64)
    plan = design.plan()
    rows = []
    for cond in design.conditions:
        attempts = [a for a in plan if a.condition.id == cond.id]
        size = k or (cond.samples_per_request if cond.samples_per_request > 1 else min(design.attempts, 128))
        reply, source = _reply_tokens(cond, design.rubric, pilot)
        for strategy, how in STRATEGIES.items():
            each = size if how["n"] else 1
            grouped = group_requests([_with_k(a, each) for a in attempts])
            cache = PrefixCache() if how["cache"] else None
            calls = tokens_in = tokens_cached = tokens_out = 0
            for request in grouped:
                messages = messages_for(request.attempts[0].item.id, cond.id)
                prompt = "\n\n".join(m["content"] for m in messages)
                calls += 1
                tokens_in += input_tokens(messages)
                tokens_cached += cache.hit(cond.model, cond.prompt_cache_key, prompt) if cache is not None else 0
                tokens_out += reply * request.n
            cost = planned_cost(cond, design.endpoint_of(cond), tokens_in, tokens_out, tokens_cached, batch=how["batch"])
            cost = float("nan") if cost is None else cost
            rows.append(dict(condition_id=cond.id, model=cond.model, strategy=strategy, k=each, calls=calls,
                             attempts=len(attempts), input_tokens=tokens_in, cached_tokens=tokens_cached,
                             output_tokens=tokens_out, cost_usd=cost, cost_per_attempt=cost / max(len(attempts), 1),
                             cost_per_1000_attempts=1000 * cost / max(len(attempts), 1), reply_tokens=reply,
                             reply_source=source))  # fmt: skip
    base = {row["condition_id"]: row["cost_usd"] for row in rows if row["strategy"] == "separate"}
    for row in rows:
        row["saving"] = _ratio(base[row["condition_id"]], row["cost_usd"])
    return rows


def _ratio(a: float, b: float) -> float:
    """``a / b`` as pandas divides floats: NaN for 0/0 or a NaN, +-inf for a number over 0."""
    if b == 0 and a == a:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


def _reply_tokens(cond: Condition, rubric: Rubric, pilot: pd.DataFrame | None) -> tuple[float, str]:
    """Output tokens an attempt of ``cond`` is assumed to take, and whence: the pilot's mean, else typical."""
    if pilot is not None and {"output_tokens", "condition_id", "prompt_id"} <= set(pilot.columns):
        import pandas as pd

        answered = pilot[pd.to_numeric(pilot["output_tokens"], errors="coerce").notna()]
        for column, value in (("condition_id", cond.id), ("prompt_id", cond.prompt_id)):
            rows = answered.loc[answered[column] == value, "output_tokens"]
            if len(rows):
                return float(rows.astype(float).mean()), "pilot"
    return float(expected_output(cond, rubric)), "typical"


def _with_k(attempt: Attempt, k: int) -> Attempt:
    """The attempt as if its condition asked ``k`` samples a request (for grouping only)."""
    if attempt.condition.samples_per_request == k:
        return attempt
    return replace(attempt, condition=replace(attempt.condition, samples_per_request=k))
