"""Seeded studies of the simulated judge with planted biases, run in-process (issue 47's coverage tests).

Each study is the real path minus HTTP: a design with probes (:mod:`hce.collect.design.probes`), each
attempt's messages rendered by :func:`hce.collect.call.messages.item_messages`, answered by
:class:`hce.sim.SimJudge` (its planted biases, :mod:`hce.sim.biases`) and parsed
by :func:`hce.collect.call.parse.parse_reply`, the log row given the probe's columns as the runner
gives them. The rubric is a nine-point one of three criteria (``bias_rubric.yaml``) and every
item's truth is level 4, 5 or 6 on each, judged at temperature 1 with noise 0.6: far from the
scale's ends and with enough spread, a planted shift of B moves the mean score by B (to within
0.001; hce.sim, "The judge"), so B itself is the truth an interval must cover.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hce.collect.design.design import load_design
from hce.collect.call.messages import item_messages
from hce.collect.call.parse import parse_reply
from hce.collect.design.probes import probe_columns
from hce.sim import Profile, SimJudge
from hce.sim.biases import PlantedBiases
from hce.rubric import load_rubric

RUBRIC = Path(__file__).resolve().parent / "bias_rubric.yaml"
CRITERIA = load_rubric(RUBRIC).criteria
NAMES = [c.name for c in load_rubric(RUBRIC).categories]
NOISE = 0.6


def study(seed: int, *, probes: list[dict], biases: PlantedBiases | None = None, n_items: int = 60,
          models: tuple[str, ...] = ("gpt-4.1-mini",), attempts: int = 2, authors: tuple[str, ...] = ()) -> pd.DataFrame:
    """One seeded study's attempt log: items x conditions (one per model) x attempts, with the probes' twins."""
    rng = np.random.default_rng(seed)
    items, truth, author_of = [], {}, {}
    for i in range(n_items):
        text = (f"Doctor: What brings you in today, visit {seed}-{i}?\nPatient: Item {i} of study {seed}: "
                f"I have had a cough for {rng.integers(2, 30)} days and I take my tablets.")  # fmt: skip
        truth[text] = {name: int(rng.integers(4, 7)) for name in NAMES}
        entry = {"id": f"T{i:03d}", "text": text}
        if authors:
            entry["author_model"] = author_of[text] = authors[i % len(authors)]
        items.append(entry)
    design = load_design({
        "experiment_id": f"BIAS{seed}", "attempts": attempts, "rubric": str(RUBRIC),
        "defaults": {"temperature": 1.0, "max_tokens": 1000},
        "conditions": [{"prompt": "P2.1", "model": m} for m in models],
        "items": items, "probes": probes,
    })  # fmt: skip
    planted = biases or PlantedBiases()
    if authors:
        planted = PlantedBiases(length=planted.length, order=planted.order, self_preference=planted.self_preference,
                                authors=author_of)  # fmt: skip
    judge = SimJudge(seed=seed, truth=truth, biases=planted, default=Profile(noise=NOISE))
    rows = []
    for attempt in design.plan():
        cond, item = attempt.condition, attempt.item
        body = {"model": cond.model, "temperature": cond.temperature, "max_tokens": cond.max_tokens,
                "messages": item_messages(item, cond, design)}  # fmt: skip
        reply = judge.respond("POST", "/v1/chat/completions", body, request_id=attempt.attempt_id)
        text = reply.body["choices"][0]["message"]["content"]
        row = {"attempt_id": attempt.attempt_id, "item_id": item.id, "condition_id": cond.id, "model": cond.model,
               "attempt": attempt.attempt, **item.metadata, **probe_columns(cond, item.id, design.rubric)}  # fmt: skip
        row.update(parse_reply(cond.prompt_id, text, rubric=design.rubric, fmt=cond.reply_format))
        rows.append(row)
    return pd.DataFrame(rows)


def golden_history(seed: int, *, shift_at: int | None = None, shift: float = 1.0, n_items: int = 20,
                   periods: int = 30, noise: float = 1.0) -> pd.DataFrame:
    """A golden set's history: ``n_items`` fixed items judged once a period, score noise SD ``noise``,
    every score moved by ``shift`` from period ``shift_at`` on (the drift the simulator plants)."""
    rng = np.random.default_rng(seed)
    levels = rng.normal(12, 2, n_items)
    rows = [(p, f"G{i:02d}", levels[i] + (shift if shift_at is not None and p >= shift_at else 0.0) + rng.normal(0, noise))
            for p in range(periods) for i in range(n_items)]  # fmt: skip
    return pd.DataFrame(rows, columns=["period", "item_id", "total"])
