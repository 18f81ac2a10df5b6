"""The generic report of a log larger than memory: every section computed in the log's engine.

:func:`report_in_engine` writes the sections of :func:`hce.report.generic.report` whose
statistics reduce to per-cell summaries, from a lazy log (DuckDB, Polars, PySpark, Dask;
``hce report PATH --engine duckdb``): attempts and errors per condition, and per criterion
the spread of repeated scores (:func:`hce.stats.item_spread`, one grouped pass), the tests
between conditions on that per-item table, and the variance decomposition
(:func:`hce.stats.variance_components`, exact REML from the item x condition cell table).
Only tables of items x conditions come back from the engine; the attempts stay where they
are. The sections that need every attempt in memory (agreement of repeated attempts,
calibration from token logprobs, cost) are listed under "Not reported" as not applicable,
with how to get them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.engines import column_kinds
from hce.errors import DataError
from hce.log import COLUMNS
from hce.report.binary import binary_levels
from hce.report.document import Report
from hce.report.sections import CONDITION, ITEM, Criterion, _attempt, _Context, _criteria, _stem, _tests, per_criterion  # fmt: skip
from hce.report.sections import add_condition_comparison, add_spread, add_variance, no_within_variance, not_reported_section  # fmt: skip
from hce.report.tables import Table
from hce.rubric import Rubric, load_rubric
from hce.stats._frames import engine_frame
from hce.stats._resample import as_generator

_ROW_LEVEL = "needs every attempt in memory, which a report in the log's engine does not load"
_FIX = "report the log with --engine pandas (it fits in memory), or a sample of its items"


class _Columns(dict):
    """A lazy log's columns and kinds, standing in for the frame where only names are read."""

    @property
    def columns(self) -> list[str]:
        return list(self)


def report_in_engine(
    log: Any,
    *,
    rubric: Rubric | str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    title: str = "LLM judge report",
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The generic report of a lazy log, its statistics run in the log's engine.

    Parameters
    ----------
    log : lazy frame
        A DuckDB relation, Polars LazyFrame or DataFrame, PySpark or Dask DataFrame (e.g.
        ``hce.read_log(folder, engine="duckdb")``) in the attempt-log schema.
    rubric : Rubric, packaged name or YAML path, optional
        As for :func:`hce.report.generic.report`; without one, the numeric columns outside
        the log schema are the criteria.
    out : path, optional
        Folder to write the report to.
    title : str
        Report title.
    confidence : float
        Level of every interval.
    random_state : int, Generator or None, default None
        Seed of the simulation intervals (G and Phi, exact tests).
    progress : callable, optional
        Called with the name of each part before it is computed.

    Returns
    -------
    Report
        "Attempts and errors by condition", one "Criterion: ..." section per criterion
        (spread, tests, variance decomposition) and "Not reported".

    Examples
    --------
    >>> import numpy as np, pandas as pd, polars as pl
    >>> rng = np.random.default_rng(1)
    >>> log = pd.DataFrame([{"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i}", "condition_id": c,
    ...                      "attempt": a, "accuracy": float(rng.integers(1, 6)), "error_flag": False}
    ...                     for i in range(6) for c in ("A", "B") for a in (1, 2, 3)])
    >>> doc = report_in_engine(pl.from_pandas(log).lazy())
    >>> [s.title for s in doc.sections][:2]
    ['Attempts and errors by condition', 'Criterion: accuracy']
    """
    kinds = column_kinds(log)
    if CONDITION not in kinds:
        raise DataError(f"the log needs a {CONDITION!r} column: conditions are never guessed from prompt_id or model")
    names = _Columns(kinds)
    criteria, notes = _lazy_criteria(names, rubric if rubric is None or isinstance(rubric, Rubric) else load_rubric(rubric))
    context = _Context(names, criteria, confidence, as_generator(random_state), progress=progress or (lambda _text: None))  # type: ignore[arg-type]
    document = Report(title)
    overview = document.section("Attempts and errors by condition")
    overview.add(*notes, "Computed in the log's engine: only per item x condition tables came back to memory.")
    spreads: dict[str, pd.DataFrame] = {}
    for criterion, own in per_criterion(context):  # the in-memory report's random streams
        _criterion(document, own, log, criterion, spreads)
    if spreads:
        table = _attempts(next(iter(spreads.values())))
        overview.add(Table(table, "Attempts, items and errors per condition", "conditions", confidence))
    for section in ("Agreement of repeated attempts (ICC, Krippendorff's alpha)", "Calibration", "Cost and tokens"):
        context.skip(section, _ROW_LEVEL, _FIX, applicable=False)
    not_reported_section(document, context.not_reported, confidence)
    if out is not None:
        document.write(out, progress=context.progress)
    return document


def _lazy_criteria(kinds: _Columns, rubric: Rubric | None) -> tuple[list[Criterion], list[str]]:
    """The criteria of a lazy log: the rubric's (as :func:`hce.report.generic.report` finds
    them), else the numeric columns outside the log schema, and ``total``."""
    if rubric is not None or all(c in kinds for c in load_rubric("v5").criteria):
        return _criteria(kinds, rubric)  # type: ignore[arg-type]
    numeric = [c for c, kind in kinds.items() if kind == "number" and c not in COLUMNS]
    found = [Criterion(c, c) for c in numeric] + ([Criterion("total", "Total")] if "total" in kinds else [])
    if not found:
        raise DataError("the log has no score column: no rubric criterion, no numeric column outside the schema, no total")
    notes = [f"No rubric was named: the numeric columns outside the log schema are taken as criteria ({', '.join(numeric)}); "
             "pass rubric= to name them."] if numeric else []  # fmt: skip
    return found, notes


def _criterion(document: Report, context: _Context, log: Any, criterion: Criterion, spreads: dict) -> None:
    section = document.section(f"Criterion: {criterion.name}" + (f" ({criterion.column})" if criterion.name.lower() != criterion.column.lower() else ""))
    stem = _stem(criterion.column)
    context.progress(section.title)
    cells = _binary_cells(log, criterion)
    if cells is not None:  # 0/1 scores have no meaningful SD, rank tests of means or variance decomposition
        _binary(section, context, criterion, stem, *cells)
        return

    def spread_part() -> None:
        table = hs.item_spread(log, item=ITEM, condition=CONDITION, score=criterion.column, error="error_flag")
        spreads[criterion.column] = add_spread(section, context, criterion, stem, table)

    _attempt(context, section, "spread", spread_part)
    if criterion.column not in spreads:
        return
    spread = spreads[criterion.column]
    for value, label in (("sd", "SD of repeated scores"), ("mean", "mean score")):
        _attempt(context, section, f"tests of the {label}",
                 lambda value=value, label=label: _tests(section, context, spread, value, label, stem, criterion.name))  # fmt: skip
    _attempt(context, section, "variance decomposition", lambda: _variance(section, context, log, criterion, stem, spread))


def _binary_cells(log: Any, criterion: Criterion) -> tuple[tuple, pd.DataFrame] | None:
    """A two-level criterion's levels and item x condition cells (``high``, ``n`` valid attempts),
    from one grouped pass in the engine; ``None`` for a criterion with more levels. Without a
    rubric's scale the distinct values decide, as in :func:`hce.report.generic.report`."""
    if criterion.scores is not None and len(criterion.scores) != 2:
        return None
    frame = engine_frame(log)
    frame = frame.valid("error_flag") if "error_flag" in frame.columns else frame
    if criterion.scores is None and frame.count_distinct(criterion.column) != 2:
        return None  # one number back; the cells x values table only for a criterion that has two
    counts = frame.value_counts([ITEM, CONDITION], criterion.column)
    counts = counts[counts[criterion.column].notna()]
    levels = binary_levels(counts[criterion.column], criterion.scores)
    if levels is None:
        return None
    high = counts[criterion.column].astype(float) == float(levels[1])
    cells = (counts.assign(high=np.where(high, counts["n"], 0)).groupby([ITEM, CONDITION], sort=True)
             .agg(high=("high", "sum"), n=("n", "sum")).reset_index())  # fmt: skip
    return levels, cells


def _binary(section, context: _Context, criterion: Criterion, stem: str, levels: tuple, cells: pd.DataFrame) -> None:
    """A two-level criterion from its cells: attempts at the higher level per condition, and the
    conditions compared by the binomial GLMM (or its cluster fallback), as the in-memory report."""
    low, high = map(str, levels)
    section.add(f"{criterion.name} has two levels ({low}, {high}), so it is analysed as a binary outcome: the share of "
                f"attempts at {high} and a binomial model of the conditions (no SD, rank tests of means or variance "
                "decomposition, which describe a scale).")  # fmt: skip
    shares = cells.groupby(CONDITION, sort=True).agg(n_items=(ITEM, "nunique"), n_attempts=("n", "sum"),
                                                     n_attempts_high=("high", "sum")).reset_index()  # fmt: skip
    shares["share_attempts"] = shares["n_attempts_high"] / shares["n_attempts"]
    section.add(Table(shares, f"{criterion.name}: attempts at {high} per condition (descriptive; the comparison below "
                      "accounts for attempts nested in items)", f"{stem}_binary", context.confidence))  # fmt: skip
    for what in ("share of items at the higher level (majority of attempts) and flips", "nominal agreement (Fleiss' kappa)"):
        context.skip(f"{section.title}: {what}", _ROW_LEVEL, _FIX, applicable=False)  # not a failure: exit 0
    _attempt(context, section, f"comparison of the share at {high}",
             lambda: add_condition_comparison(section, context, criterion, stem, high, cells))


def _variance(section, context: _Context, log: Any, criterion: Criterion, stem: str, spread: pd.DataFrame) -> None:
    if no_within_variance(section, criterion, spread):
        return
    scored = spread[spread["n"] > 0]
    facets = [ITEM, CONDITION] if scored[CONDITION].nunique() > 1 else [ITEM]
    attempts = int(scored["n"].median()) if len(scored) else 0
    if scored[ITEM].nunique() < 2 or attempts < 2:
        context.skip(f"{section.title}: variance decomposition",
                     f"needs 2 or more items with 2 or more valid attempts per cell (items {scored[ITEM].nunique()}, median attempts {attempts})",
                     "collect 2 or more attempts per item and condition", applicable=False)  # fmt: skip
        return
    vc = hs.variance_components(log, score=criterion.column, facets=facets, n_attempts=attempts,
                                confidence=context.confidence, random_state=context.rng)  # fmt: skip
    add_variance(section, context, criterion, stem, vc, attempts)


def _attempts(spread: pd.DataFrame) -> pd.DataFrame:
    """Items, attempts and errors per condition, from a criterion's per-item spread table."""
    cells = spread.assign(n_attempts=spread["n"] + spread["n_errors"] + spread["n_missing"])
    rows = []
    for condition, part in cells.groupby(CONDITION, sort=True):
        attempts, errors = int(part["n_attempts"].sum()), int(part["n_errors"].sum())
        rows.append({CONDITION: condition, "n_items": part[ITEM].nunique(), "n_attempts": attempts,
                     "attempts_per_item": float(part.groupby(ITEM)["n_attempts"].sum().median()),
                     "n_errors": errors, "error_rate": errors / attempts if attempts else np.nan})  # fmt: skip
    return pd.DataFrame(rows)
