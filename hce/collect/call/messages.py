"""What one call of a run sends: an item's prompt rendered for a condition, and the condition's sampling settings.

Online runs, batch runs, the dry run's estimates and the cost projection all render prompts
through :func:`item_messages`, so what is priced is what is sent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hce.collect.design.design import Condition, Design, Item
from hce.collect.design.prompts import render
from hce.collect.design.reply_schema import reply_schema
from hce.collect.design.transcripts import clean_text
from hce.rubric import Rubric


def item_messages(item: Item, cond: Condition, design: Design) -> list[dict[str, str]]:
    """The chat messages of one item for one condition."""
    if cond.prompt_id in design.prompts:
        return design.prompts[cond.prompt_id].render(item)
    if cond.prompt_id == "BOOL":
        return render("BOOL", behavior=cond.behavior, case=item.case)
    if cond.prompt_id == "SYNTH":
        return render("SYNTH", rubric=design.rubric, target_total=int(item.metadata["target_total"]))
    text = clean_text(item.text).text
    if cond.probe is not None:  # a probe's twin sees the item transformed (hce.collect.design.probes)
        text = cond.probe.transform_text(text, item.id)
    rubric = item_rubric(item, cond, design)
    return render(cond.prompt_id, rubric=rubric, transcript=text, template=cond.template, examples=cond.examples)


def item_rubric(item: Item, cond: Condition, design: Design) -> Rubric:
    """The rubric as one item's prompt presents it (a probe's twin may shuffle its criteria)."""
    return cond.probe.transform_rubric(design.rubric, item.id) if cond.probe is not None else design.rubric


def call_settings(cond: Condition, design: Design | None = None, item: Item | None = None) -> dict[str, Any]:
    """The sampling settings of a condition's calls, as :meth:`JudgeClient.complete` and :func:`chat_body` take them.

    A structured reply's JSON schema (``response_format: json_schema``) is built from the
    rubric of ``design`` as ``item``'s prompt presents it, so a twin that shuffles the
    criteria asks for them in its own order.
    """
    structured = {}
    if cond.response_format == "json_schema":
        if design is None or item is None:
            raise ValueError(f"condition {cond.id!r} asks for a JSON schema: call_settings needs its design and item")
        structured["response_format"] = reply_schema(item_rubric(item, cond, design), cond.reply_format)
    return dict(
        **structured,
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
        return item_messages(items[item_id], conditions[condition_id], design)

    return messages
