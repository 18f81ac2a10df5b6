"""Dated per-model token prices, and the cost of one call.

Prices are US dollars per million tokens from OpenAI's public pricing page (standard
tier, not Flex), each with the date it was read and its source: uncached input, cached
input (prompt-cache hits), cache writes and output. A call made through the Batch API
costs :data:`BATCH_DISCOUNT` times that on every token class (``batch=True``). A model that
is not in the table gets no cost (``None``) and a :class:`UnpricedModelWarning`: hce never
guesses a price. Providers change prices; pass your own ``prices=`` table when yours differ
(Azure, negotiated rates, local servers at zero). :func:`price_table` shows the table.

Prompt caching (OpenAI's guide, developers.openai.com/api/docs/guides/prompt-caching, and
the announcement openai.com/index/api-prompt-caching, 2024-10-01): prompts of 1,024 tokens
or more are cached automatically; "the API caches the longest prefix of a prompt that has
been previously computed, starting at 1,024 tokens and increasing in 128-token
increments"; the usage reports the hits as ``prompt_tokens_details.cached_tokens``, part of
``prompt_tokens``. For the models below a cache write costs nothing extra (it is billed as
uncached input: ``cache_write`` None). Models from GPT-5.6 on bill cache writes above the
input rate (1.25x, reported as ``cache_write_tokens``: coder/mux#3705, 2026-07-09); none of
them is in this table, so give their rates in your own ``prices=`` (``Price.cache_write``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hce._warnings import warn as warn_at_caller
from hce.errors import HceWarning
from hce.model_names import ALIASES

if TYPE_CHECKING:  # pandas loads where a table is built: the simulator reads only the aliases
    import pandas as pd


class UnpricedModelWarning(HceWarning):
    """A model has no entry in the price table: its cost is left empty."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens: ``input`` (uncached), ``cached_input`` (prompt-cache hits; None: no
    cache discount), ``output``, ``cache_write`` (prompt tokens written to the cache; None: billed
    as uncached input); ``as_of`` the date read and ``source`` where."""

    input: float
    cached_input: float | None
    output: float
    as_of: str
    cache_write: float | None = None
    source: str = "https://openai.com/api/pricing"


_OPENAI = "2025-08-20"  # the date these were read from https://openai.com/api/pricing
PRICES: dict[str, Price] = {
    # The PRD's models (seed 000 section 5)
    "gpt-4o-2024-08-06": Price(2.50, 1.25, 10.00, _OPENAI),
    "o4-mini-2025-04-16": Price(1.10, 0.275, 4.40, _OPENAI),
    "o3-2025-04-16": Price(2.00, 0.50, 8.00, _OPENAI),  # after the 2025-06-10 price cut
    "gpt-4.1-mini-2025-04-14": Price(0.40, 0.10, 1.60, _OPENAI),
    # Common others
    "gpt-4o-2024-11-20": Price(2.50, 1.25, 10.00, _OPENAI),
    "gpt-4o-2024-05-13": Price(5.00, None, 15.00, _OPENAI),
    "gpt-4o-mini-2024-07-18": Price(0.15, 0.075, 0.60, _OPENAI),
    "gpt-4.1-2025-04-14": Price(2.00, 0.50, 8.00, _OPENAI),
    "gpt-4.1-nano-2025-04-14": Price(0.10, 0.025, 0.40, _OPENAI),
    "o3-mini-2025-01-31": Price(1.10, 0.55, 4.40, _OPENAI),
    "o1-2024-12-17": Price(15.00, 7.50, 60.00, _OPENAI),
    "gpt-5-2025-08-07": Price(1.25, 0.125, 10.00, _OPENAI),
    "gpt-5-mini-2025-08-07": Price(0.25, 0.025, 2.00, _OPENAI),
    "gpt-5-nano-2025-08-07": Price(0.05, 0.005, 0.40, _OPENAI),
    "gpt-3.5-turbo-0125": Price(0.50, None, 1.50, _OPENAI),
}

# OpenAI's Batch API: "50% cost discount compared to synchronous APIs", on input (cached
# included) and output alike (https://platform.openai.com/docs/guides/batch and the Batch
# column of https://openai.com/api/pricing, read on the date below). That the half also
# applies to cached input (the two discounts stack) is what third-party summaries say
# (aipromptshub.co/calc/openai-api-cost, read 2026-11-24); hce assumes it and says so.
BATCH_DISCOUNT = 0.5
BATCH_DISCOUNT_AS_OF = _OPENAI


def price_of(model: str | None, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price entry for a model name (dated snapshot, alias or ``openai/``-prefixed), else None.

    Examples
    --------
    >>> price_of("gpt-4o").input, price_of("gpt-4o").as_of
    (2.5, '2025-08-20')
    >>> price_of("my-local-llama") is None
    True
    """
    if not model:
        return None
    table = PRICES if prices is None else prices
    name = re.sub(r"^openai/", "", model.strip())
    if name in table:
        return table[name]
    return table.get(ALIASES.get(name, ""))


def cost_usd(
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cached_tokens: int | None = 0,
    *,
    cache_write_tokens: int | None = 0,
    prices: Mapping[str, Price] | None = None,
    batch: bool = False,
    warn: bool = True,
) -> float | None:
    """Cost of one call in USD, or None (with an :class:`UnpricedModelWarning` unless ``warn=False``) when unpriced.

    Cached prompt tokens are part of ``input_tokens`` (as the OpenAI usage reports them)
    and are charged at the cached rate where the table has one; so are the prompt tokens
    written to the cache (``cache_write_tokens``), charged at the write rate where the table
    has one. ``batch=True`` prices a call made through the Batch API: :data:`BATCH_DISCOUNT`
    (one half) of the standard price, on every token class.

    Notes
    -----
    cost = ((input - cached - written) * p_in + cached * p_cached + written * p_write
    + output * p_out) / 1e6, times 0.5 for a batch call; a missing rate is the input rate.

    Examples
    --------
    >>> round(cost_usd("gpt-4.1-mini-2025-04-14", 2000, 100, cached_tokens=1024), 6)
    0.000653
    >>> round(cost_usd("gpt-4.1-mini-2025-04-14", 2000, 100, cached_tokens=1024, batch=True), 7)
    0.0003264
    """
    price = price_of(model, prices)
    if price is None:
        if warn:
            warn_at_caller(unpriced_message(model), UnpricedModelWarning)
        return None
    if input_tokens is None or output_tokens is None:
        return None
    cached = min(int(cached_tokens or 0), int(input_tokens)) if price.cached_input is not None else 0
    written = min(int(cache_write_tokens or 0), int(input_tokens) - cached) if price.cache_write is not None else 0
    cost = (
        (input_tokens - cached - written) * price.input
        + cached * (price.cached_input or 0.0)
        + written * (price.cache_write or 0.0)
        + output_tokens * price.output
    ) / 1e6
    return cost * BATCH_DISCOUNT if batch else cost


def price_table(prices: Mapping[str, Price] | None = None) -> pd.DataFrame:
    """The price table, one row per model: USD per million tokens online and through a batch, date and source.

    Returns
    -------
    DataFrame
        ``model``, ``input``, ``cached_input``, ``cache_write``, ``output`` (NaN where the
        model has no such rate: it is billed as uncached input), ``batch_input``,
        ``batch_cached_input``, ``batch_output`` (times :data:`BATCH_DISCOUNT`), ``as_of``,
        ``source``.

    Examples
    --------
    >>> price_table().set_index("model").loc["gpt-4o-2024-08-06", ["input", "cached_input", "batch_output"]].tolist()
    [2.5, 1.25, 5.0]
    """
    import pandas as pd

    rows = []
    for model, p in (PRICES if prices is None else prices).items():
        nan = float("nan")
        cached = nan if p.cached_input is None else p.cached_input
        rows.append(dict(model=model, input=p.input, cached_input=cached,
                         cache_write=nan if p.cache_write is None else p.cache_write, output=p.output,
                         batch_input=p.input * BATCH_DISCOUNT, batch_cached_input=cached * BATCH_DISCOUNT,
                         batch_output=p.output * BATCH_DISCOUNT, as_of=p.as_of, source=p.source))  # fmt: skip
    return pd.DataFrame(rows)


def unpriced_message(model: str | None) -> str:
    """Why a model's cost is left empty, with the nearest priced name when it looks misspelt.

    Examples
    --------
    >>> "did you mean 'gpt-4o-2024-08-06'?" in unpriced_message("gpt-4o-2024-0806")
    True
    """
    near = difflib.get_close_matches(str(model), [*PRICES, *ALIASES], n=1, cutoff=0.85) if model else []
    hint = f" (did you mean {near[0]!r}? a misspelt model name is refused by the API)" if near else ""
    return (
        f"no price for model {model!r} in hce's price table (read {_OPENAI}){hint}: its cost is left empty, "
        "never guessed; pass prices= to price it"
    )
