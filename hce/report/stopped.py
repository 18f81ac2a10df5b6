"""The item means of a log collected under a stopping rule, with the interval the rule stopped on.

A log whose repeats stopped once an item's score was known (``within_min`` rows,
``hce.collect.running.stopping``) has its spread statistics read from each cell's first
``min`` attempts, so the per-item spread table's ``mean`` is of those attempts too. Its item
means over every attempt, with the Chow-Robbins interval the run stopped on
(:func:`hce.stats.stopped_item_means`), are added beside it; a log without the rule gets nothing.
"""

from __future__ import annotations

import pandas as pd

import hce.stats as hs
from hce.report.document import Section
from hce.report.sections import CONDITION, ITEM, Criterion, _Context
from hce.report.tables import Table

WITHIN_MIN = "within_min"
#: Items x conditions printed in the report; a longer table goes to its CSV and LaTeX files only.
SHOWN_ROWS = 40


def add_stopped_means(section: Section, context: _Context, criterion: Criterion, stem: str, log: pd.DataFrame) -> None:
    """Add the table of item means with their sequential intervals when ``log`` was collected under a stopping rule."""
    if WITHIN_MIN not in log.columns or not log[WITHIN_MIN].astype("boolean").notna().any():
        return
    means = hs.stopped_item_means(log, item=ITEM, condition=CONDITION, score=criterion.column,
                                  confidence=context.confidence)  # fmt: skip
    section.add(Table(means, f"{criterion.name}: item means over every attempt (repeats stopped when the score was known)",
                      f"{stem}_stopped_item_means", context.confidence,
                      notes=["Collected under a stopping rule: the spread statistics above read each item's first min "
                             "attempts; these means use every attempt, with the interval the rule stopped on "
                             f"({means['method'].iloc[0] if len(means) else 'none'}; Chow & Robbins 1965)."],
                      inline=len(means) <= SHOWN_ROWS))  # fmt: skip
