import re
import warnings

import pytest

from hce.collect.call.pricing import (
    ALIASES,
    BATCH_DISCOUNT,
    PRICES,
    Price,
    UnpricedModelWarning,
    cost_usd,
    price_of,
)


def test_prd_models_are_priced_and_dated():
    # seed 000 section 5 lists these four models
    for model in ("gpt-4o-2024-08-06", "o4-mini-2025-04-16", "o3-2025-04-16", "gpt-4.1-mini-2025-04-14"):
        assert price_of(model) is not None
    for price in PRICES.values():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.as_of)
    assert all(target in PRICES for target in ALIASES.values())


def test_cost_by_hand():
    # gpt-4o-2024-08-06: $2.50 in, $1.25 cached in, $10.00 out per million tokens.
    # 3,000 prompt tokens of which 1,024 cached, 200 output:
    # (1976 * 2.50 + 1024 * 1.25 + 200 * 10.00) / 1e6 = (4940 + 1280 + 2000) / 1e6 = 0.00822
    assert cost_usd("gpt-4o-2024-08-06", 3000, 200, 1024) == pytest.approx(0.00822, rel=1e-12)
    # The undated alias and an "openai/" prefix resolve to the same snapshot.
    assert cost_usd("gpt-4o", 3000, 200, 1024) == cost_usd("openai/gpt-4o", 3000, 200, 1024)
    # gpt-4o-2024-05-13 has no cached rate: cached tokens are charged in full.
    # (3000 * 5.00 + 200 * 15.00) / 1e6 = 0.018
    assert cost_usd("gpt-4o-2024-05-13", 3000, 200, 1024) == pytest.approx(0.018, rel=1e-12)


def test_unknown_model_costs_nothing_and_warns():
    with pytest.warns(UnpricedModelWarning, match="'my-llama-3'.*never guessed"):
        assert cost_usd("my-llama-3", 100, 10) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cost_usd("my-llama-3", 100, 10, warn=False) is None


def test_own_price_table():
    table = {"my-llama-3": Price(0.0, None, 0.0, "2026-01-01")}
    assert cost_usd("my-llama-3", 100, 10, prices=table) == 0.0


def test_batch_calls_cost_half():
    # OpenAI Batch API: 50% of the standard price on input, cached input and output (read 2025-08-20).
    # gpt-4o-2024-08-06 as in test_cost_by_hand: 0.00822 online, 0.00411 through a batch.
    assert cost_usd("gpt-4o-2024-08-06", 3000, 200, 1024, batch=True) == pytest.approx(0.00411, rel=1e-12)
    assert BATCH_DISCOUNT == 0.5


def test_cache_write_rate_by_hand():
    # A model that bills cache writes (GPT-5.6 on: 1.25x the input rate, coder/mux#3705).
    # 3,000 prompt tokens: 1,024 cached, 1,152 written, 824 plain; 100 output.
    # (824 * 4 + 1024 * 0.4 + 1152 * 5 + 100 * 20) / 1e6 = (3296 + 409.6 + 5760 + 2000) / 1e6 = 0.0114656
    table = {"m": Price(4.0, 0.4, 20.0, "2026-07-09", cache_write=5.0)}
    assert cost_usd("m", 3000, 100, 1024, cache_write_tokens=1152, prices=table) == pytest.approx(0.0114656, rel=1e-12)
    # The batch half applies to every token class.
    assert cost_usd("m", 3000, 100, 1024, cache_write_tokens=1152, prices=table, batch=True) == pytest.approx(
        0.0057328, rel=1e-12
    )
    # Without a write rate (every model in hce's table), written tokens are plain input.
    assert cost_usd("gpt-4o-2024-08-06", 3000, 200, 1024, cache_write_tokens=500) == cost_usd(
        "gpt-4o-2024-08-06", 3000, 200, 1024
    )


def test_price_table_lists_every_rate_with_date_and_source():
    from hce.collect.call.pricing import price_table

    table = price_table()
    assert set(table["model"]) == set(PRICES)
    row = table.set_index("model").loc["gpt-4.1-mini-2025-04-14"]
    # OpenAI pricing page (read 2025-08-20): $0.40 in, $0.10 cached, $1.60 out; batch half of each.
    assert (row["input"], row["cached_input"], row["output"]) == (0.40, 0.10, 1.60)
    assert (row["batch_input"], row["batch_cached_input"], row["batch_output"]) == (0.20, 0.05, 0.80)
    assert table["source"].str.startswith("https://").all() and table["as_of"].str.match(r"\d{4}-\d{2}-\d{2}$").all()
