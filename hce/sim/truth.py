"""The simulated judge's truth: each item's latent category levels, and the patient lines it plants.

An item's levels come from ``truth=`` when given, else from the lines a transcript made by the
simulator planted, else from a hash of its text (:mod:`hce.sim`, "The truth").
"""

from __future__ import annotations

import functools
import hashlib
import re

from hce.sim.reply import unit
from hce.errors import HceError
from hce.rubric import load_rubric


def text_key(text: str) -> str:
    """The key an item's truth is stored under: a hash of its whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def latent_scores(text: str, categories: list[str], low: int = 1, high: int = 4) -> dict[str, int]:
    """The hash-derived latent level of each category for an item text (no truth given).

    Examples
    --------
    >>> latent_scores("Doctor: Hello.\\nPatient: Hi.", ["clarity", "engagement"])
    {'clarity': 3, 'engagement': 2}
    """
    key = text_key(text)
    return {c: low + int(unit(key, c) * (high - low + 1)) for c in categories}


def split_total(total: int, categories: list[str], low: int, high: int, *, key: object = 0) -> dict[str, int]:
    """Deterministically split a target total into category levels (each within low..high)."""
    n = len(categories)
    if not n * low <= total <= n * high:
        raise HceError(f"target total {total} is outside {n * low}-{n * high}")
    levels = [low] * n
    order = sorted(range(n), key=lambda i: unit(key, total, i))
    remaining = total - n * low
    while remaining:
        for i in order:
            if remaining and levels[i] < high:
                levels[i] += 1
                remaining -= 1
    return dict(zip(categories, levels))


@functools.cache
def planted_lines() -> dict[str, dict[int, str]]:
    """A patient line per Rubric v5.0 category and level: the example's longest quote."""
    rubric = load_rubric("v5")
    bank: dict[str, dict[int, str]] = {}
    for cat in rubric.categories:
        bank[cat.name] = {}
        for level in cat.levels:
            quotes = re.findall(r'"([^"]+)"', level.example or "")
            bank[cat.name][level.score] = max(quotes, key=len).strip().rstrip(",") if quotes else ""
    # Two examples quote only a word ("good", "Yes"); a distinctive line stands in for them.
    bank["Lexical Diversity"][1] = "Good. It's good. I feel good, things are good."
    bank["Engagement with Health Information"][1] = "Yes. No. I don't know."
    return bank


# The doctor's question before each category's planted patient line in a synthetic transcript.
QUESTIONS = {
    "Clarity of Language": "Can you tell me about what you usually eat?",
    "Lexical Diversity": "How have you been feeling lately?",
    "Conciseness and Completeness": "What brings you in today?",
    "Engagement with Health Information": "Do you get any exercise?",
    "Health Literacy Indicator": "What do you know about cholesterol?",
}
