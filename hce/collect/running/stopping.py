"""Repeats that stop when the score is known: a design's ``attempts: {min, max, stop_when}``.

A design may give ``attempts`` as a rule instead of a number::

    attempts:
      min: 3                      # every item x condition gets these
      max: 15                     # and never more than these
      batch: 2                    # attempts added to an unsettled cell per round (default 2)
      stop_when: {criterion: total, half_width: 0.5, confidence: 0.95, prior_sd: 1.0}

Each item x condition cell first gets ``min`` attempts; then, round by round, ``batch`` more
only while the half-width of its mean's interval is above ``half_width``, at ``confidence``:
for a true/false criterion (a verdict) the Wilson interval of the share; for a score the t
interval with Chow and Robbins' (1965) variance s^2 + 1/n, which keeps a cell whose first
scores happen to agree (s = 0, a t interval of width 0) from stopping at once
(:mod:`hce.stop_interval`). That interval is also the one to report for the cell's mean
(:func:`hce.stats.stopped_item_means`, and the report's table of item means). The run
reads the log between rounds, so a resumed run takes the same decisions from the same rows,
and resume, the lock, the write-ahead record and the spending limit work as for a fixed
design. Each row of such a run carries ``stop_rule`` (the rule as
JSON) and ``within_min`` (whether its attempt number is at most ``min``).

``prior_sd`` (optional) is the SD the design expects of the criterion over one cell's
attempts: a dry run without a pilot gives its expected attempts under that assumption
(scores normal with that SD; for a true/false criterion, a pass share ``p`` with
``sqrt(p (1 - p)) = prior_sd``). It decides nothing in the run itself.

Stopping on an observed spread biases that spread (a cell stops early when its first scores
happen to agree), so the spread statistics of ``hce.stats`` read only the attempts within
``min`` of a log that carries the rule; means and verdicts use every attempt.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hce.errors import CollectError
from hce.stop_interval import half_width
from hce.log_files import read_jsonl
from hce.log_writer import TruncatedLogWarning

DEFAULT_BATCH = 2


@dataclass(frozen=True)
class StopRule:
    """When to stop repeating an item x condition cell (see the module notes).

    Examples
    --------
    >>> rule = StopRule(min=3, max=15, criterion="total", half_width=0.5)
    >>> rule.settled([12, 12, 13]), rule.settled([8, 14, 11])
    (False, False)
    >>> rule.settled([12] * 9 + [13] * 6)
    True
    """

    min: int
    max: int
    criterion: str
    half_width: float
    confidence: float = 0.95
    batch: int = DEFAULT_BATCH
    prior_sd: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.max:
            raise CollectError(f"attempts: min={self.min} and max={self.max} need 1 <= min <= max")
        if not 0 < self.confidence < 1:
            raise CollectError(f"attempts.stop_when.confidence={self.confidence} must be strictly between 0 and 1")

    def as_json(self) -> str:
        """The rule as the JSON text each row's ``stop_rule`` holds."""
        return json.dumps(asdict(self), sort_keys=True)

    def interval_half_width(self, values: Sequence[Any]) -> float:
        """Half-width of the interval of the mean of ``values`` (:func:`hce.stop_interval.half_width`)."""
        return half_width(values, self.confidence)

    def settled(self, values: Sequence[Any]) -> bool:
        """Whether a cell with these scores (at least ``min`` of them) needs no more attempts."""
        return len(values) >= self.min and self.interval_half_width(values) <= self.half_width


def stop_rule_of(spec: Mapping[str, Any] | None, criteria: Iterable[str]) -> StopRule | None:
    """The :class:`StopRule` of a checked ``attempts:`` mapping (None for a plain number)."""
    if spec is None:
        return None
    when = spec["stop_when"]
    known = {"total", "verdict", *criteria}
    if when["criterion"] not in known:
        raise CollectError(f"attempts.stop_when.criterion={when['criterion']!r} is not a score of this design; "
                           f"choose one of {sorted(known)}")  # fmt: skip
    return StopRule(min=spec["min"], max=spec["max"], criterion=when["criterion"], half_width=when["half_width"],
                    confidence=when.get("confidence", 0.95), batch=spec.get("batch") or DEFAULT_BATCH,
                    prior_sd=when.get("prior_sd"))  # fmt: skip


def logged_records(log: str | os.PathLike) -> list[dict[str, Any]]:
    """The complete rows of a JSONL log (none when it does not exist), for the next round's decisions."""
    path = Path(log)
    if not path.exists():
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)  # the torn last line is the writer's to report
        records, _ = read_jsonl(path)
    return records


def scores_by_cell(records: Iterable[Mapping[str, Any]], criterion: str) -> tuple[dict, dict]:
    """(logged attempt numbers, usable scores) per (item_id, condition_id) from log records."""
    logged: dict[tuple[str, str], set[int]] = defaultdict(set)
    scores: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in records:
        key = (str(row.get("item_id")), str(row.get("condition_id")))
        logged[key].add(int(row.get("attempt") or 0))
        value = row.get(criterion)
        if not row.get("error_flag") and value is not None and not (isinstance(value, float) and math.isnan(value)):
            scores[key].append(value)
    return logged, scores


def due(rule: StopRule, todo: Sequence[Any], records: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The attempts of ``todo`` (not yet logged, in plan order) to send in the next round.

    A cell below ``min`` logged attempts gets those up to ``min``; a cell at a round's end
    (``min``, ``min + batch``, ``min + 2 batch``, ...) whose interval is still wider than the
    target gets its next ``batch`` attempts (up to ``max``); a settled cell gets none. A cell
    between two round ends (a run stopped mid-round: some of its round's calls logged, some
    not) gets the rest of its round, undecided: the run that started the round had decided
    it, so a resumed run takes the same decisions on the same attempts as one never stopped.
    A failed call counts as logged (it is not re-asked unless ``--retry-failed``), so a cell
    whose calls fail stops at ``max`` like any other.
    """
    logged, scores = scores_by_cell(records, rule.criterion)
    waiting: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for attempt in todo:
        waiting[(attempt.item.id, attempt.condition.id)].append(attempt)
    out = []
    for key, attempts in waiting.items():
        attempts = sorted(attempts, key=lambda a: a.attempt)
        first = [a for a in attempts if a.attempt <= rule.min]
        begun = (len(logged.get(key, ())) - rule.min) % rule.batch  # attempts of an unfinished round logged
        if first:
            out.extend(first)
        elif begun:
            out.extend(attempts[: rule.batch - begun])
        elif not rule.settled(scores.get(key, [])):
            out.extend(attempts[: rule.batch])
    order = {id(a): i for i, a in enumerate(todo)}
    return sorted(out, key=lambda a: order[id(a)])


def expected_attempts(rule: StopRule, cells: Sequence[Sequence[Any]], *, n_sim: int = 200, seed: int | None = 0) -> float:
    """Mean attempts a cell takes under the rule, by resampling pilot cells' scores.

    Each simulated cell draws its scores with replacement from one pilot cell (chosen at
    random) and takes attempts as the run would: ``min``, then ``batch`` at a time while
    unsettled, up to ``max``. A pilot cell with few attempts understates its spread, so give a
    pilot with at least ``min`` attempts per cell.

    Examples
    --------
    >>> rule = StopRule(min=3, max=15, criterion="total", half_width=0.5)
    >>> expected_attempts(rule, [[12, 12, 12, 12], [8, 14, 11, 10]]) < 15
    True
    """
    usable = [list(c) for c in cells if len(c) > 0]
    if not usable:
        raise CollectError("the pilot holds no usable scores of the stopping rule's criterion "
                           f"{rule.criterion!r}")  # fmt: skip
    import numpy as np

    rng = np.random.default_rng(seed)
    total = 0
    for _ in range(n_sim):
        pool = usable[rng.integers(len(usable))]
        draws = [pool[i] for i in rng.integers(len(pool), size=rule.max)]
        n = rule.min
        while n < rule.max and not rule.settled(draws[:n]):
            n = min(n + rule.batch, rule.max)
        total += n
    return total / n_sim


def prior_cells(rule: StopRule, binary: bool, *, size: int = 2000, seed: int | None = 0) -> list[list[Any]]:
    """One pool of scores as the rule's ``prior_sd`` assumes them, for :func:`expected_attempts`.

    Normal scores with SD ``prior_sd`` (their mean does not matter to the interval's width); for
    a true/false criterion (``binary``) true/false values with the pass share ``p <= 0.5`` whose
    SD ``sqrt(p (1 - p))`` is ``prior_sd`` (at most 0.5).

    Examples
    --------
    >>> rule = StopRule(min=3, max=15, criterion="verdict", half_width=0.2, prior_sd=0.4)
    >>> round(sum(prior_cells(rule, binary=True)[0]) / 2000, 2)
    0.2
    """
    sd = rule.prior_sd
    if sd is None:
        raise CollectError("attempts.stop_when.prior_sd is not set")
    if not binary:
        import numpy as np

        return [np.random.default_rng(seed).normal(0.0, sd, size).tolist()]
    if sd > 0.5:
        raise CollectError(f"attempts.stop_when.prior_sd={sd:g} is above 0.5, the largest SD of a true/false "
                           f"criterion ({rule.criterion!r}); give the SD of its pass share, sqrt(p (1 - p))")  # fmt: skip
    passed = round(size * (1 - math.sqrt(1 - 4 * sd**2)) / 2)
    return [[True] * passed + [False] * (size - passed)]


def expected_under_rule(design: Any, pilot: Any | None = None, *, n_sim: int = 200, seed: int = 0) -> Any:
    """Attempts a design with a stopping rule takes per condition: at least, at most, and expected.

    Parameters
    ----------
    design : Design
        A design whose ``stop_rule`` is set.
    pilot : DataFrame, optional
        A pilot attempt log: each condition's expected attempts per cell are those of
        :func:`expected_attempts` on the pilot's cells of the same ``condition_id`` (all its
        cells when it has none of that condition). Without it, the rule's ``prior_sd``
        (:func:`prior_cells`) when the design declares one; else ``expected`` is NaN.
    n_sim, seed : int
        Simulated cells per condition, and the seed (defaults 200, 0).

    Returns
    -------
    DataFrame
        One row per condition: ``condition_id, cells, at_least, at_most, expected``
        (attempts), ``saving`` (the share of ``at_most`` not needed), ``source`` (``"pilot"``,
        ``"prior_sd"`` or None: what ``expected`` assumes).

    Examples
    --------
    >>> from hce.collect import load_design
    >>> d = load_design({"attempts": {"min": 3, "max": 15, "stop_when": {"criterion": "total", "half_width": 0.5}},
    ...                  "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi."}, {"id": "T2", "text": "Doctor: Hello."}]})
    >>> expected_under_rule(d)[["cells", "at_least", "at_most"]].to_dict("records")
    [{'cells': 2, 'at_least': 6, 'at_most': 30}]
    """
    import pandas as pd

    rule = design.stop_rule
    if rule is None:
        raise CollectError("this design gives attempts as a number, not a stopping rule")
    cells: dict[str, list[list[Any]]] = {}
    if pilot is not None:
        if rule.criterion not in pilot.columns:
            raise CollectError(f"the pilot has no column {rule.criterion!r}, the stopping rule's criterion")
        ok = pilot if "error_flag" not in pilot.columns else pilot[~pilot["error_flag"].fillna(False).astype(bool)]
        if "within_min" in ok.columns:  # a pilot itself collected under a rule: its later attempts' spread is biased
            ok = ok[ok["within_min"].astype("boolean").fillna(True)]
        ok = ok.dropna(subset=[rule.criterion])
        for (condition, _), group in ok.groupby(["condition_id", "item_id"], sort=False):
            cells.setdefault(str(condition), []).append(group[rule.criterion].tolist())
    source = "pilot" if pilot is not None else "prior_sd" if rule.prior_sd is not None else None
    if source == "prior_sd":
        cells = {"": prior_cells(rule, binary=rule.criterion == "verdict", seed=seed)}
    rows = []
    for cond in design.conditions:
        n = len(design.items)
        pool = cells.get(cond.id) or [c for group in cells.values() for c in group]
        per_cell = expected_attempts(rule, pool, n_sim=n_sim, seed=seed) if pool else float("nan")
        rows.append({"condition_id": cond.id, "cells": n, "at_least": n * rule.min, "at_most": n * rule.max,
                     "expected": n * per_cell, "saving": 1 - per_cell / rule.max, "source": source})  # fmt: skip
    return pd.DataFrame(rows)
