"""What a run did: the running counts of its logged rows, and the summary :func:`hce.collect.run` returns."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hce._warnings import warn
from hce.collect.call.client import CallResult
from hce.collect.design.design import Condition
from hce.collect.running.failed import call_failed, retried_path
from hce.collect.design.fingerprint import Change, superseded_path
from hce.collect.call.pricing import UnpricedModelWarning, unpriced_message
from hce.log_schema import served_as_requested


@dataclass(frozen=True)
class RunSummary:
    """What a run did, as :func:`run` returns it.

    Attributes
    ----------
    planned, skipped, done : int
        Attempts of the design, those already logged, and those run now.
    errors, retries : int
        Attempts flagged among ``done``, and retries in total.
    cost_usd, wall_s : float
        Cost of the priced calls, and wall time.
    log : str
        The attempt log written.
    retried : int
        Rows of failed calls moved out of the log to be sent again.
    failed : int
        Calls that got no reply (``hce.collect.running.failed.call_failed``), among the flagged.
    superseded : tuple
        Conditions whose rows made with other settings were moved out (``new_settings=True``).
    not_applicable : int
        Criterion scores the judge answered with the rubric's "not applicable" label
        (missing by design, not errors).
    settled : int
        Planned attempts not sent because the design's stopping rule settled their cells
        first (``hce.collect.running.stopping``).
    served : tuple of (str, str)
        ``(requested, served)`` for each model asked for that another answered (the reply's
        ``model``: a local server names the file it loaded); their calls are not priced.

    Examples
    --------
    >>> from hce.collect import RunSummary
    >>> print(RunSummary(planned=4, skipped=1, done=3, errors=0, retries=0, cost_usd=0.01,
    ...                  wall_s=2.0, log="run.jsonl"))
    3 attempts run, 1 already logged, of 4 planned; 0 flagged, 0 retries, $0.0100, 2.0 s -> run.jsonl
    """

    planned: int
    skipped: int
    done: int
    errors: int
    retries: int
    cost_usd: float
    wall_s: float
    log: str
    retried: int = 0
    failed: int = 0
    superseded: tuple[Change, ...] = ()  # conditions started afresh with new settings (--new-settings)
    not_applicable: int = 0  # criterion scores the judge answered with the rubric's "not applicable" label
    settled: int = 0  # planned attempts the stopping rule made unnecessary (hce.collect.running.stopping)
    served: tuple[tuple[str, str], ...] = ()  # (requested, served) where another model answered

    @property
    def all_failed(self) -> bool:
        """Whether calls were made and not one got a reply (the CLI then exits non-zero)."""
        return self.done > 0 and self.failed == self.done

    def __str__(self) -> str:
        again = ""
        if self.retried:
            again = f" ({self.retried:,} failed calls sent again; their old rows: {retried_path(self.log)})"
        if self.superseded:
            names = ", ".join(repr(c.condition_id) for c in self.superseded)
            again += f" (conditions {names} started afresh with new settings; their old rows: {superseded_path(self.log)})"
        failed = f" ({self.failed:,} calls got no reply)" if self.failed else ""
        if self.not_applicable:
            failed += f" ({self.not_applicable:,} criterion scores not applicable, missing by the rubric's design)"
        if self.settled:
            again += f" ({self.settled:,} not needed: the stopping rule settled their items first)"
        for requested, answered in self.served:
            failed += f" (model {answered!r} answered where {requested!r} was asked for: those calls are not priced)"
        return (
            f"{self.done:,} attempts run, {self.skipped:,} already logged, of {self.planned:,} planned{again}; "
            f"{self.errors:,} flagged{failed}, {self.retries:,} retries, ${self.cost_usd:,.4f}, {self.wall_s:.1f} s "
            f"-> {self.log}"
        )


class Tally:
    """Running counts of a run (done, errors, retries, cost) that warns once per unpriced model."""

    def __init__(self, unpriced_endpoints: Sequence[str] = ()) -> None:
        self.counts = {"done": 0, "errors": 0, "failed": 0, "retries": 0, "cost": 0.0, "not_applicable": 0}
        self._unpriced: set[str] = set()
        self._served: dict[tuple[str, str], None] = {}
        self._free = set(unpriced_endpoints)  # endpoints with pricing: none: their calls are unpriced by design

    @classmethod
    def of(cls, design: Any) -> Tally:
        """The tally of a run of ``design``: its endpoints with ``pricing: none`` are never warned about."""
        return cls([name for name, endpoint in design.endpoints.items() if endpoint.pricing == "none"])

    def add(self, row: Mapping[str, Any], result: CallResult, cond: Condition, *, call: bool = True) -> None:
        """Count one logged row; ``call=False`` for the second and later rows of one request (its retries count once)."""
        counts = self.counts
        counts["done"] += 1
        counts["errors"] += bool(row["error_flag"])
        counts["failed"] += call_failed(row)
        counts["not_applicable"] += len(row["not_applicable"].split(",")) if row.get("not_applicable") else 0
        counts["retries"] += result.retries if call else 0
        served = row.get("model_version")
        if not served_as_requested(cond.model, served) and (cond.model, served) not in self._served:
            self._served[(cond.model, served)] = None
            if row["cost_usd"] is None and cond.endpoint not in self._free:
                warn(f"model {served!r} answered where {cond.model!r} was asked for (endpoint {cond.endpoint!r}): its "
                     "calls are logged with an empty cost, never at another model's price; set the endpoint's pricing "
                     "(none, or its own prices) or price_model", UnpricedModelWarning)
        if row["cost_usd"] is not None:
            counts["cost"] += row["cost_usd"]
        elif cond.endpoint in self._free or (cond.model, served) in self._served:
            pass  # unpriced by the endpoint's choice, or warned about above
        elif result.input_tokens is not None and cond.model not in self._unpriced:
            self._unpriced.add(cond.model)
            warn(unpriced_message(cond.price_model or cond.model), UnpricedModelWarning)  # at the caller's line

    def summary(
        self, planned: int, todo: int, started: float, log: str | os.PathLike, *, retried: int = 0,
        superseded: Sequence[Change] = (), settled: int = 0,
    ) -> RunSummary:
        counts = self.counts
        return RunSummary(
            planned=planned,
            skipped=planned - todo,
            done=counts["done"],
            errors=counts["errors"],
            retries=counts["retries"],
            cost_usd=counts["cost"],
            wall_s=time.perf_counter() - started,
            log=str(Path(log)),
            retried=retried,
            failed=counts["failed"],
            superseded=tuple(superseded),
            not_applicable=counts["not_applicable"],
            settled=settled,
            served=tuple(self._served),
        )
