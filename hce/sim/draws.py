"""The simulated judge's draws and the truth of their logprobs (:mod:`hce.sim`'s notes,
"Calibration truth"): the score distribution at temperature 1, the distribution sampled at a
temperature, and the one a reply's logprobs report. Tests draw from them directly, without HTTP.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from hce.sim.families import LOGPROBS_ARE
from hce.errors import HceError


def score_distribution(mean: float, spread: float, low: int, high: int) -> dict[int, float]:
    """The judge's score distribution at temperature 1: ``P(x) ∝ exp(-(x - mean)^2 / (2 spread^2))``.

    The truth of every score draw (module notes); tests draw from it directly, without HTTP.

    Examples
    --------
    >>> {x: round(p, 3) for x, p in score_distribution(3, 0.8, 1, 4).items()}
    {1: 0.022, 2: 0.234, 3: 0.51, 4: 0.234}
    """
    spread = max(spread, 1e-3)
    weights = {x: math.exp(-((x - mean) ** 2) / (2 * spread**2)) + 1e-12 for x in range(low, high + 1)}
    total = sum(weights.values())
    return {x: w / total for x, w in weights.items()}


def tempered(p: Mapping[Any, float], temperature: float, power: float = 1.0) -> dict[Any, float]:
    """``p^(power / T)`` renormalised: the distribution sampled at temperature ``T`` (``power`` 1).

    At ``T = 0`` (below 1e-6) all mass goes to the most probable key (the first of ties):
    greedy decoding. Computed on the log scale, so small temperatures do not underflow.

    Examples
    --------
    >>> {k: round(v, 4) for k, v in tempered({"a": 0.6, "b": 0.4}, 0.5).items()}
    {'a': 0.6923, 'b': 0.3077}
    >>> tempered({"a": 0.6, "b": 0.4}, 0)
    {'a': 1.0, 'b': 0.0}
    """
    if temperature <= 1e-6:
        top = max(p, key=p.get)
        return {k: float(k == top) for k in p}
    logs = {k: power * math.log(v) / temperature for k, v in p.items() if v > 0}
    peak = max(logs.values())
    weights = {k: math.exp(logs[k] - peak) if k in logs else 0.0 for k in p}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def reported(p: Mapping[Any, float], temperature: float, logprobs_are: str = "raw", overconfidence: float = 1.0) -> dict[Any, float]:
    """The distribution a reply's logprobs are the log of, for judge distribution ``p`` (at T = 1).

    ``r`` = ``p`` (``"raw"``; ``"raw_at_zero"`` at ``T = 0``) or ``p`` tempered at ``T``
    (``"sampled"``; ``"raw_at_zero"`` at ``T > 0``); then ``r^f`` renormalised with ``f =
    overconfidence``. Keys of probability 0 (greedy ``"sampled"``) are absent from the logprobs.

    Examples
    --------
    >>> {k: round(v, 4) for k, v in reported({"a": 0.6, "b": 0.4}, 0.5, "sampled").items()}
    {'a': 0.6923, 'b': 0.3077}
    >>> reported({"a": 0.6, "b": 0.4}, 0.5, "raw", overconfidence=2) == tempered({"a": 0.6, "b": 0.4}, 0.5)
    True
    """
    if logprobs_are not in LOGPROBS_ARE:
        raise HceError(f"logprobs_are must be one of {LOGPROBS_ARE}, got {logprobs_are!r}")
    raw = logprobs_are == "raw" or (logprobs_are == "raw_at_zero" and temperature <= 1e-6)
    r = dict(p) if raw else tempered(p, temperature)
    return r if overconfidence == 1 else tempered(r, 1.0, overconfidence)


class Draw:
    """Categorical draws at a temperature, remembering for each the distribution its logprobs report."""

    def __init__(self, rng: random.Random, temperature: float, logprobs_are: str = "raw", overconfidence: float = 1.0):
        self.rng = rng
        self.temperature = temperature
        self.logprobs_are = logprobs_are
        self.overconfidence = overconfidence
        self.dists: list[tuple[str, dict[str, float]]] = []  # (chosen token, the reported distribution)

    def pick(self, weights: dict[str, float]) -> str:
        total = sum(weights.values())
        p = {k: w / total for k, w in weights.items()}
        sampled = tempered(p, self.temperature)
        if self.temperature <= 1e-6:
            chosen = max(sampled, key=sampled.get)
        else:
            u, acc, chosen = self.rng.random(), 0.0, next(iter(p))
            for k, v in sampled.items():
                acc += v
                chosen = k
                if u < acc:
                    break
        self.dists.append((chosen, reported(p, self.temperature, self.logprobs_are, self.overconfidence)))
        return chosen

    def score(self, mean: float, spread: float, low: int, high: int) -> int:
        return int(self.pick({str(x): v for x, v in score_distribution(mean, spread, low, high).items()}))
