"""What hce knows of model names: the snapshot behind an undated alias, and which models reason.

The call layer prices and checks a model by these names, and the simulated judge answers as
the named model would, so both read this one table.
"""

from __future__ import annotations

import re

# Undated aliases resolve to the snapshot OpenAI served under that name on the table's date.
ALIASES: dict[str, str] = {
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "o4-mini": "o4-mini-2025-04-16",
    "o3": "o3-2025-04-16",
    "o3-mini": "o3-mini-2025-01-31",
    "o1": "o1-2024-12-17",
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14",
    "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07",
    "gpt-5-nano": "gpt-5-nano-2025-08-07",
    "gpt-3.5-turbo": "gpt-3.5-turbo-0125",
}

# OpenAI's reasoning models refuse any temperature but the default: HTTP 400 "Unsupported
# value: 'temperature' does not support 0.1 with this model. Only the default (1) value is
# supported." The o-series (o1, o3, o3-mini, o4-mini, their dated snapshots): the API's reply
# quoted in openai/openai-python#2104 and leafo/lua-openai#12. gpt-5, gpt-5-mini, gpt-5-nano:
# the same reply in tmc/langchaingo#1355, chatboxai/chatbox#2564, BoltAI/BoltAI#373. Later
# gpt-5.x models take a temperature when reasoning is off, so they are not listed. They refuse
# ``logprobs`` too: "Unsupported parameter: 'logprobs' is not supported with this model."
# (UKGovernmentBEIS/inspect_ai#2739: "logprobs are not supported for reasoning models").
REASONING_MODEL = re.compile(r"^(openai/)?(o[134](-mini|-pro|-preview)?|gpt-5(-mini|-nano)?)(-\d{4}-\d{2}-\d{2})?$")
