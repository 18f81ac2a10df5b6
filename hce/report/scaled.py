"""The generic report of a log larger than memory: every section computed in the log's engine.

:func:`report_in_engine` writes the sections of :func:`hce.report.generic.report` whose
statistics reduce to per-cell summaries, from a lazy log (DuckDB, Polars, PySpark, Dask;
``hce report PATH --engine duckdb``): attempts and errors per condition, and per criterion
the spread of repeated scores (:func:`hce.stats.item_spread`, one grouped pass), the tests
between conditions on that per-item table, and the variance decomposition
(:func:`hce.stats.variance_components`, exact REML from the item x condition cell table).
Only tables of items x conditions come back from the engine; the attempts stay where they
are, and agreement of repeated attempts (ICC, Krippendorff's alpha, Fleiss' kappa) runs in the
engine per condition. The parts whose statistics do not run in an engine (:data:`ROW_PARTS`:
shares and flips of a binary criterion, calibration from token logprobs, cost) are listed under
"Not reported" as not applicable, with how to get them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.engines import column_kinds, known_unique, remember_unique
from hce.errors import DataError
from hce.log import COLUMNS
from hce.report.binary import binary_levels
from hce.report.document import Report
from hce.report.sections import CONDITION, ITEM, Criterion, _attempt, _Context, _criteria, _stem, _tests, per_criterion  # fmt: skip
from hce.report.sections import add_condition_comparison, add_spread, add_variance, agreement_rows, not_reported_section  # fmt: skip
from hce.report.tables import Table
from hce.rubric import Rubric, load_rubric
from hce.stats._frames import ENGINE_STATISTICS, engine_frame
from hce.stats._resample import as_generator

_ROW_LEVEL = "needs every attempt in memory, which a report in the log's engine does not load"
_FIX = "report the log with --engine pandas (it fits in memory), or a sample of its items"
_AGREEMENT = "agreement of repeated attempts (ICC, Krippendorff's alpha)"
_NOMINAL = "nominal agreement (Fleiss' kappa)"
_SHARES = "share of items at the higher level (majority of attempts) and flips"
#: The parts of the in-memory report that read every attempt, with what each runs: a part is
#: written here when all of it runs in an engine (hce.stats._frames.ENGINE_STATISTICS), and listed
#: under "Not reported" otherwise, so the list is what does not run, not a list kept by hand.
ROW_PARTS = {
    _AGREEMENT: ("icc", "krippendorff_alpha"),
    _NOMINAL: ("fleiss_kappa",),
    _SHARES: ("binary_summary",),  # per-item majorities and flips: hce.report.binary, pandas only
    "Calibration": ("calibration_data", "calibration_metrics", "reliability_table"),  # logprobs parsed per row
    "Cost and tokens": ("cost_summary",),
}


def runs_in_engine(part: str) -> bool:
    """Whether every statistic of ``part`` (a key of :data:`ROW_PARTS`) runs in a lazy log's engine.

    Examples
    --------
    >>> runs_in_engine("agreement of repeated attempts (ICC, Krippendorff's alpha)"), runs_in_engine("Cost and tokens")
    (True, False)
    """
    return set(ROW_PARTS[part]) <= set(ENGINE_STATISTICS)


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
    for section in ("Calibration", "Cost and tokens"):
        if not runs_in_engine(section):
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
        _binary(section, context, log, criterion, stem, *cells)
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
    if runs_in_engine(_AGREEMENT):
        _attempt(context, section, "reliability", lambda: _reliability(section, context, log, criterion, stem, spread))
    else:
        context.skip(f"{section.title}: {_AGREEMENT}", _ROW_LEVEL, _FIX, applicable=False)


def _by_condition(log: Any, spread: pd.DataFrame, criterion: Criterion, statistic: Callable[[Any, Any], list]):
    """``statistic(part, condition)`` on each condition's valid attempts, filtered in the engine
    (conditions without 2 items or an item with 2 valid attempts left out, as in memory); the
    rows it returns, and the conditions left out with why."""
    import narwhals as nw

    frame = nw.from_native(log)
    frame = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
    valid = ~nw.col(criterion.column).is_null()
    valid = valid & ~nw.col("error_flag") if "error_flag" in frame.collect_schema() else valid
    rows, skipped = [], []
    for condition, cells in spread[spread["n"] > 0].groupby(CONDITION, sort=True):
        if cells[ITEM].nunique() < 2 or cells["n"].max() < 2:
            skipped.append((condition, "fewer than 2 items or no item with 2 valid attempts", False))
            continue
        part = frame.filter(valid & (nw.col(CONDITION) == condition)).to_native()
        if known_unique(log):
            remember_unique(part, ("attempt_id",))  # a part of a checked log: no second pass
        try:
            rows += statistic(part, condition)
        except DataError as exc:
            skipped.append((condition, f"{type(exc).__name__}: {exc}", True))
    return rows, skipped


def _reliability(section, context: _Context, log: Any, criterion: Criterion, stem: str, spread: pd.DataFrame) -> None:
    """ICC(1), ICC(1,k) and Krippendorff's alpha per condition, each run in the engine, as in memory."""
    rows, skipped = _by_condition(log, spread, criterion, lambda part, condition: agreement_rows(
        part, condition, criterion.column, context.confidence, context.rng))  # fmt: skip
    for condition, reason, applicable in skipped:
        section.add(f"Reliability of condition {condition} is not reported: {reason}.")
        context.skip(f"{section.title}: reliability of {condition}", reason,
                     "none needed when the scores do not vary; otherwise collect more items or attempts", applicable=applicable)  # fmt: skip
    if rows:
        section.add(Table(pd.DataFrame(rows), f"{criterion.name}: agreement of repeated attempts per condition (each attempt a rater)",
                          f"{stem}_reliability", context.confidence))  # fmt: skip


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


def _binary(section, context: _Context, log: Any, criterion: Criterion, stem: str, levels: tuple, cells: pd.DataFrame) -> None:
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
    for what in (_SHARES, _NOMINAL):
        if not runs_in_engine(what):
            context.skip(f"{section.title}: {what}", _ROW_LEVEL, _FIX, applicable=False)  # not a failure: exit 0
    _attempt(context, section, f"comparison of the share at {high}",
             lambda: add_condition_comparison(section, context, criterion, stem, high, cells))
    if runs_in_engine(_NOMINAL):
        _attempt(context, section, "nominal agreement", lambda: _nominal(section, context, log, criterion, stem, cells))


def _nominal(section, context: _Context, log: Any, criterion: Criterion, stem: str, cells: pd.DataFrame) -> None:
    """Fleiss' kappa of repeated attempts per condition, run in the engine, as in memory."""
    rows, skipped = _by_condition(log, cells, criterion, lambda part, condition: [hs.fleiss_kappa(
        part, item=ITEM, rater="attempt", score=criterion.column, confidence=context.confidence).assign(**{CONDITION: condition})])  # fmt: skip
    section.add(*(f"The agreement of condition {condition} is not reported: {reason}." for condition, reason, _ in skipped))
    if rows:
        table = pd.concat(rows, ignore_index=True)
        section.add(Table(table[[CONDITION, *[c for c in table.columns if c != CONDITION]]],
                          f"{criterion.name}: agreement of repeated attempts on the nominal level (Fleiss' kappa, each attempt a rater)",
                          f"{stem}_agreement", context.confidence))  # fmt: skip


def _variance(section, context: _Context, log: Any, criterion: Criterion, stem: str, spread: pd.DataFrame) -> None:
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
