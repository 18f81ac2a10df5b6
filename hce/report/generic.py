"""A report for any attempt log: sections chosen from what the log holds, not from its name.

:func:`report` reads one or more attempt logs (any ``experiment_id``) and writes, for every
rubric criterion (and ``total`` only when the rubric says the sum is a meaningful score):
the spread of repeated scores per item and condition, tests between conditions with effect
sizes, a variance decomposition with G and Phi, and the reliability of repeated attempts
per condition; plus attempts and errors per condition and, when the log has token
logprobs, the calibration of the judge's confidence. A condition is always the log's
``condition_id``; prompt, model and temperature are shown as its attributes and never used
to pool conditions. A section that cannot be computed on the log is listed under "Not
reported" with the reason, and the rest of the report is still written.

Every number comes from :mod:`hce.stats`; nothing here computes a statistic of its own.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.engines import is_lazy_log
from hce.errors import DataError, HceError, HceWarning
from hce.log import COLUMNS, text_among_numbers
from hce.report import figures
from hce.report.binary import (
    as_high,
    binary_levels,
    binary_summary,
    condition_effects,
    nominal_agreement,
)
from hce.report.cost import cost_summary
from hce.report.document import Figure, Report, Section
from hce.report.logs import KEPT, kept_settings, missing_attempts, read_any
from hce.report.provenance import (
    read_with_notes,
    separate_settings,
)
from hce.report.tables import Table
from hce.rubric import Rubric, kept_rubric, load_rubric
from hce.stats._resample import as_generator

CONDITION = "condition_id"
ITEM = "item_id"
#: Condition attributes shown beside ``condition_id`` (never grouped on).
ATTRIBUTES = ("experiment_id", "prompt_id", "model", "temperature", "top_p", "max_tokens")
#: Smallest calibration bin drawn: a line through a bin of 2 scores and one of 398 looks like perfect calibration.
MIN_BIN = 10
SIM_FINGERPRINT = "fp_hce_sim_"  # hce.collect.sim's system_fingerprint prefix
#: Status of a "Not reported" entry: the log holds the data but the statistic failed on it
#: (``hce report`` exits 1), or the log holds nothing for it (no logprobs, one condition).
NOT_COMPUTED, NOT_APPLICABLE = "not computed", "not applicable"
# A statistic that cannot be computed on this log says so with one of these; anything else is a bug.
_EXPECTED = (HceError, ValueError, ArithmeticError, np.linalg.LinAlgError)


@dataclass(frozen=True)
class Criterion:
    """A score column to analyse: its log column, display name and scale (None: unknown)."""

    column: str
    name: str
    scores: tuple[int, ...] | None = None


@dataclass
class _Context:
    log: pd.DataFrame
    criteria: list[Criterion]
    confidence: float
    rng: np.random.Generator
    not_reported: list[dict[str, str]] = field(default_factory=list)
    progress: Callable[[str], None] = lambda _text: None

    def skip(self, section: str, reason: str, fix: str = "", *, applicable: bool = True) -> None:
        """Record a part not written: ``applicable=False`` when the log holds nothing for it."""
        self.not_reported.append({"section": section, "status": NOT_COMPUTED if applicable else NOT_APPLICABLE,
                                  "reason": reason, "fix": fix})  # fmt: skip


@keywords_checked
@fill_doc
def report(
    log: pd.DataFrame | str | os.PathLike | Sequence[pd.DataFrame | str | os.PathLike] | Any,
    *,
    rubric: Rubric | str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    title: str = "LLM judge report",
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The report of an attempt log, whatever its experiment: per condition and per criterion.

    Parameters
    ----------
    log : DataFrame, path, or a list of them, or a lazy log
        Attempt logs (:func:`hce.read_log` reads paths); several are concatenated. A lazy
        log (``hce.read_log(path, engine="duckdb")``, or any frame of Polars, DuckDB or
        PySpark) is reported in its engine: see ``hce.report.scaled.report_in_engine``.
    rubric : Rubric, packaged name or YAML path, optional
        The rubric the log was judged with: its criteria get a section each, and ``total``
        one only when ``rubric.total_is_meaningful``. Default: the rubric ``hce collect``
        kept beside the log file (``<log>.rubric.yaml``); else Rubric v5.0 when the log
        has its five columns; else the numeric columns outside the log schema (named in
        the report), with ``total`` analysed when present.
    out : path, optional
        Folder to write ``report.md``, ``report.html``, ``tables/`` and ``figures/`` to.
    title : str
        A report of the simulated judge says so in its title, whatever is passed.
    %(confidence)s
    %(random_state)s
        One generator serves the whole report; ``hce report`` passes ``--seed`` (default 0).
    progress : callable, optional
        Called with the name of each part before it is computed (``hce report`` shows it).

    Returns
    -------
    Report
        Sections: "Attempts and errors by condition", one "Criterion: ..." per criterion
        (spread, tests between conditions, variance decomposition, reliability),
        "Calibration" when the log has logprobs, and "Not reported" listing what could not
        be computed, why, and what to do about it (also in ``Report.not_reported``). A
        condition whose scores of a criterion are not all finite numbers (a text such as
        "three", an infinity) is left out of that criterion's section, named there and under
        "Not reported"; the other conditions are still reported.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> log = pd.DataFrame([{"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i}", "condition_id": c,
    ...                      "attempt": a, "accuracy": int(rng.integers(1, 6)), "error_flag": False}
    ...                     for i in range(6) for c in ("A", "B") for a in (1, 2, 3)])
    >>> doc = report(log)
    >>> [s.title for s in doc.sections][:2]
    ['Attempts and errors by condition', 'Criterion: accuracy']
    """
    if is_lazy_log(log):  # a log larger than memory: the statistics run in its engine
        from hce.report.scaled import report_in_engine

        return report_in_engine(log, rubric=rubric, out=out, title=title, confidence=confidence,
                                random_state=random_state, progress=progress)  # fmt: skip
    frame, read_notes = read_with_notes(read_any, log)
    kept = frame.attrs.get(KEPT) or kept_settings(log)
    frame, split = separate_settings(frame, fingerprints=kept["fingerprints"])  # one condition_id, two settings: kept apart
    if rubric is None:
        rubric = kept_rubric(log)
    criteria, notes = _criteria(frame, None if rubric is None else (rubric if isinstance(rubric, Rubric) else load_rubric(rubric)))
    if CONDITION not in frame or frame[CONDITION].isna().any():
        raise DataError(f"the log needs a {CONDITION!r} value on every row: conditions are never guessed from "
                        "prompt_id or model (two conditions may share a prompt)")  # fmt: skip
    if _simulated(frame):
        title = f"{title} — SIMULATED JUDGE (hce sim-server), not real model output"
    context = _Context(frame, criteria, confidence, as_generator(random_state), progress=progress or (lambda _text: None))
    document = Report(title)
    context.progress("attempts and errors")
    overview = _attempts_section(document, context)
    overview.add(*read_notes, *missing_attempts(frame, kept["items"], kept.get("plan")), *split, *notes)
    _cost_section(document, context)
    for criterion in criteria:
        _criterion_section(document, context, criterion)
    context.progress("calibration")
    _calibration_section(document, context)
    not_reported_section(document, context.not_reported, confidence)
    if out is not None:
        document.write(out, progress=context.progress)
    return document


def not_reported_section(document: Report, skipped: Sequence[dict[str, str]], confidence: float = 0.95) -> None:
    """List what could not be computed (``section``, ``reason``, ``fix``) under "Not reported".

    The entries are also kept in ``document.not_reported``, for ``hce report`` to print them
    and exit 1 when one has ``status`` "not computed" (an entry without a status counts as
    that). Nothing is added when every section was written.

    Examples
    --------
    >>> doc = Report("Demo")
    >>> not_reported_section(doc, [{"section": "Experiment 5", "reason": "no column 'sex'", "fix": "--strata gender"}])
    >>> [s.title for s in doc.sections], len(doc.not_reported)
    (['Not reported'], 1)
    """
    if not skipped:
        return
    entries = [{"section": e["section"], "status": e.get("status", NOT_COMPUTED), "reason": e["reason"], "fix": e.get("fix", "")}
               for e in skipped]  # fmt: skip
    document.not_reported.extend(entries)
    frame = pd.DataFrame(entries)
    document.section("Not reported").add(
        "These sections could be computed on a log like this one but not on this log; each row says why and what to do.",
        Table(frame, "Sections that could not be computed on this log, why, and the fix", "not_reported", confidence))  # fmt: skip


def check_columns(log: pd.DataFrame, option: str, names: Sequence[str]) -> None:
    """Refuse column names a log does not have, naming the option and the columns it does have.

    Examples
    --------
    >>> check_columns(pd.DataFrame({"attempt_id": ["a"], "gender": ["f"]}), "--strata", ["sex"])
    Traceback (most recent call last):
    hce.errors.DataError: --strata sex: no such column; columns: gender
    """
    missing = [n for n in names if n not in log]
    if missing:
        other = [c for c in log.columns if c not in COLUMNS] or list(log.columns)
        raise DataError(f"{option} {', '.join(missing)}: no such column; columns: {', '.join(map(str, other))}")


# --- what the log holds --------------------------------------------------------------------




def _criteria(log: pd.DataFrame, rubric: Rubric | None) -> tuple[list[Criterion], list[str]]:
    """The criteria to analyse and notes saying where they came from."""
    notes = []
    if rubric is None and all(c in log for c in load_rubric("v5").criteria):
        rubric = load_rubric("v5")
        notes.append("No rubric was named; the log has the five Rubric v5.0 criterion columns, so it is read as v5.")
    if rubric is not None:
        missing = [c.id for c in rubric.categories if c.id not in log]
        if missing:
            raise DataError(f"the log has no column for criteria {missing} of rubric {rubric.name!r}; "
                            "name the rubric it was judged with")  # fmt: skip
        found = [Criterion(c.id, c.name, c.scores) for c in rubric.categories]
        if rubric.total_is_meaningful and "total" in log:
            found.append(Criterion("total", "Total", rubric.total_levels))
        elif "total" in log:
            notes.append(f"The total is not analysed: rubric {rubric.name!r} does not treat the sum of its criteria "
                         "as a score (its criteria have different scales, or it sets total_meaningful: false).")  # fmt: skip
        return found, [f"Criteria from rubric {rubric.name!r}: {', '.join(c.id for c in rubric.categories)}.", *notes]
    numeric = [c for c in log.columns if c not in COLUMNS and pd.api.types.is_numeric_dtype(log[c])
               and not pd.api.types.is_bool_dtype(log[c])]  # fmt: skip
    for column, row in text_among_numbers(log).items():  # a score column with a typo is named, never dropped silently
        notes.append(f"Column {column!r} is mostly numbers but also holds text (e.g. {log[column].iloc[row]!r}), so it is not "
                     "taken as a criterion: correct it, or pass rubric= to analyse it (the conditions holding text are then named).")  # fmt: skip
    found = [Criterion(c, c) for c in numeric]
    if "total" in log:
        scales = {c: tuple(pd.to_numeric(log[c], errors="coerce").agg(["min", "max"])) for c in numeric}
        if len(set(scales.values())) <= 1 and not any(binary_levels(log[c], None) for c in numeric):
            found.append(Criterion("total", "Total"))
        else:  # a 0/1 item beside 1-5 ones: their sum is no score (the README's analysis asks the rubric the same)
            ranges = ", ".join(f"{c} {lo:g}-{hi:g}" for c, (lo, hi) in scales.items())
            notes.append(f"The total is not analysed: no rubric says the sum of the criteria is a score, and the criteria "
                         f"have different scales or two levels ({ranges}); pass a rubric with total_meaningful: true to analyse it.")  # fmt: skip
    if not found:
        raise DataError("the log has no score column: no rubric criterion, no numeric column outside the schema, no total")
    if numeric:
        notes.append(f"No rubric was named: the numeric columns outside the log schema are taken as criteria ({', '.join(numeric)}); "
                     "pass rubric= to name them.")  # fmt: skip
    return found, notes


def _simulated(log: pd.DataFrame) -> bool:
    column = log.get("system_fingerprint")
    return column is not None and bool(column.dropna().astype(str).str.startswith(SIM_FINGERPRINT).any())


@contextmanager
def _noting(section: Section) -> Iterator[None]:
    """Warnings raised by the statistics become notes of the section in the report's own words.

    hce's warnings speak of the data and are kept; a library's warning text (numpy's "invalid
    value encountered", matplotlib's open-figure count) never reaches a report: what it means
    for the reader is said instead, or nothing when it says nothing about the data.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for note in dict.fromkeys(filter(None, map(_note_of, caught))):
        section.add(f"Note: {note}")


def _note_of(caught: warnings.WarningMessage) -> str | None:
    if caught.category.__name__ == "SingularFitWarning":  # hce.stats.mixed's; by name: importing it costs the CLI's startup
        return ("the variance-component model is at its boundary (a component estimated as zero: Method says "
                "'boundary'); such a component's interval starts at 0.")  # fmt: skip
    if issubclass(caught.category, HceWarning):
        return str(caught.message)
    if issubclass(caught.category, RuntimeWarning) and re.search(r"invalid value|divide by zero", str(caught.message)):
        return ("a statistic of this section is undefined for some condition (no variation to divide by, e.g. every "
                "attempt scored alike) and is shown as —.")  # fmt: skip
    if "Convergence" in caught.category.__name__:
        return "a model of this section did not converge; its estimates are uncertain beyond their intervals."
    return None  # e.g. matplotlib's count of open figures: nothing about the data


def _attempt(context: _Context, section: Section, what: str, build: Callable[[], None]) -> None:
    """Run one part of a section; if the log does not allow it, record why under "Not reported"."""
    context.progress(f"{section.title}: {what}")
    try:
        with _noting(section):
            build()
    except _EXPECTED as exc:
        section.add(f"The {what} could not be computed: {exc}")
        context.skip(f"{section.title}: {what}", f"{type(exc).__name__}: {exc}", "see the reason; the other parts are reported")


def _stem(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower()).strip("_")


# --- attempts and errors -------------------------------------------------------------------


def condition_table(log: pd.DataFrame) -> pd.DataFrame:
    """One row per ``condition_id``: its attributes, items, attempts and errors.

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": ["a", "a", "b"], "prompt_id": "P", "item_id": ["1", "2", "1"],
    ...                     "attempt": 1, "error_flag": [False, True, False]})
    >>> condition_table(log)[["condition_id", "prompt_id", "n_items", "n_attempts", "n_errors"]]
      condition_id prompt_id  n_items  n_attempts  n_errors
    0            a         P        2           2         1
    1            b         P        1           1         0
    """
    rows = []
    attributes = [c for c in ATTRIBUTES if c in log and log[c].notna().any()]  # a setting never sent is not shown
    for condition, part in log.groupby(CONDITION, sort=True):
        row: dict[str, Any] = {CONDITION: condition}
        for column in attributes:
            if column in part:
                values = part[column].dropna().unique()
                row[column] = ", ".join(sorted(str(v) for v in values)) if len(values) != 1 else values[0]
        errors = part["error_flag"].astype(bool)
        per_item = part.groupby(ITEM).size()
        row.update({"n_items": part[ITEM].nunique(), "n_attempts": len(part),
                    "attempts_per_item": float(per_item.median()), "n_errors": int(errors.sum()),
                    "error_rate": float(errors.mean())})  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def _attempts_section(document: Report, context: _Context) -> Section:
    log = context.log
    section = document.section("Attempts and errors by condition")
    section.add("A condition is one condition_id of the log; prompt, model and temperature are its attributes "
                "(two conditions may share a prompt and differ in model or temperature: they are never pooled).",
                Table(condition_table(log), "Attempts, items and errors per condition", "conditions", context.confidence))  # fmt: skip
    errors = log[log["error_flag"].astype(bool)]
    if len(errors) and "error_message" in errors:
        counts = (errors.assign(error_message=errors["error_message"].fillna("(no message)"))
                  .groupby([CONDITION, "error_message"], sort=True).size().rename("n").reset_index())  # fmt: skip
        section.add(Table(counts, "Error messages per condition", "errors", context.confidence))
    return section


# --- cost --------------------------------------------------------------------------------


_COST_NOTE = ("Cost per attempt and per 1,000 attempts are over priced attempts (an unpriced model has no cost); "
              "cached share: cached / input tokens; batch share: attempts answered through the Batch API; "
              "latency: online attempts only.")


def _cost_section(document: Report, context: _Context) -> None:
    """Cost and tokens per condition (:func:`hce.report.cost.cost_summary`), or why not under "Not reported"."""
    logged = [c for c in ("cost_usd", "input_tokens", "output_tokens") if c in context.log and context.log[c].notna().any()]
    if not logged:
        context.skip("Cost and tokens by condition", "the log records no cost or token counts (cost_usd, input_tokens, output_tokens)")
        return
    missing = [c for c in ("cost_usd", "input_tokens", "cached_tokens", "output_tokens") if c not in context.log]
    if missing:  # e.g. a log imported from a tool that keeps the cost but not the tokens
        context.skip("Cost and tokens by condition", f"the log records {', '.join(logged)} but has no column(s) {', '.join(missing)}",
                     "hce collect logs all four per attempt", applicable=False)  # fmt: skip
        return
    try:
        table = cost_summary(context.log, by=CONDITION)
    except HceError as exc:
        context.skip("Cost and tokens by condition", f"{type(exc).__name__}: {exc}")
        return
    document.section("Cost and tokens by condition").add(
        Table(table, "Cost and tokens per condition and per 1,000 attempts, as logged at the collection's dated prices",
              "cost", context.confidence,
              notes=[_COST_NOTE]))  # fmt: skip


# --- one criterion -------------------------------------------------------------------------


def _criterion_section(document: Report, context: _Context, criterion: Criterion) -> None:
    section = document.section(f"Criterion: {criterion.name}" + (f" ({criterion.column})" if criterion.name.lower() != criterion.column.lower() else ""))
    stem = _stem(criterion.column)
    if criterion.scores:
        section.add(f"Scale: {', '.join(map(str, criterion.scores))}." if len(criterion.scores) <= 12
                    else f"Scale: {criterion.scores[0]} to {criterion.scores[-1]}.")  # fmt: skip
    context.progress(section.title)
    # Only the columns a criterion's statistics read: every filtered copy below then holds 6
    # columns, not the log's dozens (at 10 million attempts, gigabytes per copy).
    needed = [c for c in ("attempt_id", ITEM, CONDITION, "attempt", "error_flag", criterion.column) if c in context.log]
    log, left_out = _finite_scores(context.log[list(dict.fromkeys(needed))], criterion.column)
    for condition, reason in left_out.items():
        section.add(f"Condition {condition} is left out of this section: {reason}.")
        context.skip(f"{section.title}: condition {condition}", reason,
                     f"correct column {criterion.column!r} in the log (hce log validate lists such rows), then report again")  # fmt: skip
    context = dataclasses.replace(context, log=log)
    if log[criterion.column].notna().sum() == 0:
        context.skip(section.title, f"no attempt has a score in column {criterion.column!r}",
                     "check that the log was judged with this rubric (--rubric)")  # fmt: skip
        return
    levels = binary_levels(log[criterion.column], criterion.scores)
    if levels is not None:  # 0/1 scores have no meaningful SD, ICC or interval-level alpha
        _binary(section, context, criterion, stem, levels)
        return
    spread: dict[str, pd.DataFrame] = {}

    def spread_part() -> None:
        spread["table"] = add_spread(section, context, criterion, stem, hs.item_spread(
            log, item=ITEM, condition=CONDITION, score=criterion.column, error="error_flag"))  # fmt: skip

    _attempt(context, section, "spread", spread_part)
    if "table" in spread:
        for value, label in (("sd", "SD of repeated scores"), ("mean", "mean score")):
            _attempt(context, section, f"tests of the {label}",
                     lambda value=value, label=label: _tests(section, context, spread["table"], value, label, stem, criterion.name))
    _attempt(context, section, "variance decomposition", lambda: _variance(section, context, criterion, stem))
    _attempt(context, section, "reliability", lambda: _reliability(section, context, criterion, stem))


def add_spread(section: Section, context: _Context, criterion: Criterion, stem: str, table: pd.DataFrame) -> pd.DataFrame:
    """Add a criterion's spread tables (summary, per item) and SD figure; return the per-item table."""
    section.add(Table(_spread_summary(table), f"{criterion.name}: spread of repeated scores per item, by condition",
                      f"{stem}_spread", context.confidence,
                      notes=["SD: sample SD of an item's repeated scores within a condition; summarised over items "
                             "(median and quartiles). The per-item table is in tables/" + f"{stem}_item_spread.csv."]),
                Table(table, f"{criterion.name}: per-item spread", f"{stem}_item_spread", context.confidence, inline=False))  # fmt: skip
    if table["sd"].notna().any():
        _, key = figures.condition_ticks(sorted(table.loc[table["sd"].notna(), CONDITION].astype(str).unique()))
        section.add(Figure(figures.sd_by_condition(table, condition=CONDITION, title=criterion.name),
                           f"{stem}_sd_by_condition", f"{criterion.name}: per-item SD of repeated scores by condition"
                           + (f" (conditions: {key.replace(chr(160), ' ')})" if key else "")))  # fmt: skip
    return table


def _binary(section: Section, context: _Context, criterion: Criterion, stem: str, levels: tuple) -> None:
    """A two-level criterion: shares with Wilson intervals, flips, nominal agreement, tests of per-item shares."""
    column, low, high = criterion.column, *map(str, levels)
    context = dataclasses.replace(context, log=as_high(context.log, column, levels))
    section.add(f"{criterion.name} has two levels ({low}, {high}), so it is analysed as a binary outcome: the share of "
                f"items at {high}, the flips of repeated attempts, their agreement on the nominal level and a binomial model of "
                "the conditions (no SD, rank tests of means, ICC, interval alpha or variance decomposition, which describe a scale).")  # fmt: skip

    def shares() -> None:
        section.add(Table(binary_summary(context.log, column, confidence=context.confidence),
                          f"{criterion.name}: share of items at {high} (majority of attempts) and flips of repeated attempts",
                          f"{stem}_binary", context.confidence))  # fmt: skip

    def tests() -> None:
        if context.log.loc[context.log[column].notna(), CONDITION].nunique() < 2:
            context.skip(f"{section.title}: comparison of conditions", "fewer than two conditions with a valid score",
                         "compare conditions: log two or more condition_id values", applicable=False)  # fmt: skip
            return
        effects, omnibus, why = condition_effects(context.log, column, confidence=context.confidence, random_state=context.rng)
        section.add(why, Table(omnibus, f"{criterion.name}: does the share at {high} differ between conditions?",
                               f"{stem}_condition_test", context.confidence),
                    Table(effects, f"{criterion.name}: each condition against {effects['reference'].iloc[0]} "
                          f"({effects['effect'].iloc[0]} of an attempt at {high})", f"{stem}_condition_effects",
                          context.confidence))  # fmt: skip

    def agreement() -> None:
        table, skipped = nominal_agreement(context.log, column, confidence=context.confidence)
        section.add(*(f"The {reason}." for reason in skipped))
        if len(table):
            section.add(Table(table, f"{criterion.name}: agreement of repeated attempts on the nominal level (Fleiss' kappa, "
                              "each attempt a rater)", f"{stem}_agreement", context.confidence))  # fmt: skip

    for what, build in (("shares", shares), (f"comparison of the share at {high}", tests), ("nominal agreement", agreement)):
        _attempt(context, section, what, build)


def _finite_scores(log: pd.DataFrame, column: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """The log without conditions whose ``column`` holds a value that is not a finite number.

    Returns the rows of the other conditions (``column`` as float) and, per condition left
    out, the reason naming the first bad value and how many there are.
    """
    raw = log[column]
    numbers = pd.to_numeric(raw, errors="coerce").astype("float64")
    bad = (raw.notna() & numbers.isna()) | np.isinf(numbers)
    if not bad.any():
        return (log if raw.dtype == "float64" else log.assign(**{column: numbers})), {}
    reasons = {}
    for condition, rows in log.loc[bad, CONDITION].groupby(log.loc[bad, CONDITION], sort=True).groups.items():
        first = rows[0]
        reasons[str(condition)] = (f"{len(rows)} attempt(s) have a score that is not a finite number in column {column!r}, "
                                   f"first {raw.loc[first]!r} (attempt_id {log.loc[first].get('attempt_id', first)!r})")  # fmt: skip
    kept = ~log[CONDITION].astype(str).isin(reasons)
    return log.loc[kept].assign(**{column: numbers[kept]}), reasons


def _spread_summary(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for condition, part in table.groupby(CONDITION, sort=True):
        sd = part["sd"].dropna()
        rows.append({CONDITION: condition, "n_items": int(part["n"].gt(0).sum()), "mean_score": float(part["mean"].mean()),
                     "median_sd": float(sd.median()) if len(sd) else np.nan,
                     "q1_sd": float(sd.quantile(0.25)) if len(sd) else np.nan,
                     "q3_sd": float(sd.quantile(0.75)) if len(sd) else np.nan,
                     "max_sd": float(sd.max()) if len(sd) else np.nan,
                     "share_sd_zero": float((sd == 0).mean()) if len(sd) else np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def comparison_plan(spread: pd.DataFrame, value: str) -> tuple[str, list[str]]:
    """Which test compares ``value`` between conditions: by the number of conditions and pairing.

    Items are paired when every condition judged the same items; then Friedman (3 or more
    conditions) or Wilcoxon's signed-rank test (2); otherwise Kruskal-Wallis or
    Mann-Whitney's U. Returns the test's name and the conditions compared.

    Examples
    --------
    >>> sd = pd.DataFrame({"item_id": ["1", "2", "1", "2", "1"], "condition_id": list("aabbc"),
    ...                    "sd": [0.5, 0.1, 0.7, 0.0, 1.0]})
    >>> comparison_plan(sd, "sd")
    ('kruskal', ['a', 'b', 'c'])
    """
    usable = spread[spread[value].notna()]
    levels = sorted(usable[CONDITION].unique(), key=str)
    if len(levels) < 2:
        return "none", levels
    judged = spread.groupby(CONDITION)[ITEM].agg(frozenset)
    paired = judged.nunique() == 1
    if len(levels) == 2:
        return ("wilcoxon" if paired else "mann_whitney"), levels
    return ("friedman" if paired else "kruskal"), levels


def _tests(section: Section, context: _Context, spread: pd.DataFrame, value: str, label: str, stem: str, name: str) -> None:
    plan, levels = comparison_plan(spread, value)
    if plan == "none":
        context.skip(f"{section.title}: tests of the {label}", f"fewer than two conditions with a {label} ({levels})",
                     "compare conditions: log two or more condition_id values with repeated attempts", applicable=False)
        return
    data = spread[spread[value].notna()]
    common = {"confidence": context.confidence}
    if plan == "friedman":
        omnibus = hs.friedman(data, item=ITEM, condition=CONDITION, score=value, random_state=context.rng, **common)
        pairs = hs.posthoc(data, item=ITEM, condition=CONDITION, score=value, method="nemenyi", **common)
    elif plan == "kruskal":
        omnibus = hs.kruskal_wallis(data, condition=CONDITION, score=value, random_state=context.rng, **common)
        pairs = pd.concat([hs.mann_whitney(data, condition=CONDITION, score=value, a=a, b=b, **common)
                           for i, a in enumerate(levels) for b in levels[i + 1:]], ignore_index=True)  # fmt: skip
        pairs.insert(pairs.columns.get_loc("p_value") + 1, "p_adjusted", hs.p_adjust(pairs["p_value"].to_numpy(), "holm"))
    elif plan == "wilcoxon":
        omnibus, pairs = hs.wilcoxon_paired(data, item=ITEM, condition=CONDITION, score=value, a=levels[0], b=levels[1], **common), None
    else:
        omnibus, pairs = hs.mann_whitney(data, condition=CONDITION, score=value, a=levels[0], b=levels[1], **common), None
    what = {"friedman": "Friedman test (items as blocks), Kendall's W", "kruskal": "Kruskal-Wallis test (items differ between conditions), epsilon-squared",
            "wilcoxon": "Wilcoxon signed-rank test (paired by item), rank-biserial r",
            "mann_whitney": "Mann-Whitney U test (items differ between conditions), rank-biserial r"}[plan]  # fmt: skip
    kind = "sd" if value == "sd" else "mean"
    section.add(Table(omnibus, f"{name}: {label} per item compared between conditions — {what}", f"{stem}_{kind}_test", context.confidence))
    if pairs is not None:
        method = "Nemenyi" if plan == "friedman" else "Mann-Whitney U"
        adjusted = "Holm-adjusted" if plan == "kruskal" else f"P adjusted {pairs['adjustment'].iloc[0]}"  # Nemenyi: single-step
        section.add(Table(pairs, f"{name}: {label}, pairwise comparisons ({method}, {adjusted})", f"{stem}_{kind}_pairs", context.confidence))


def _valid(log: pd.DataFrame, column: str) -> pd.DataFrame:
    return log[~log["error_flag"].astype(bool) & log[column].notna()]


def _variance(section: Section, context: _Context, criterion: Criterion, stem: str) -> None:
    valid = _valid(context.log, criterion.column)
    facets = [ITEM, CONDITION] if valid[CONDITION].nunique() > 1 else [ITEM]
    cells = valid.groupby(facets).size()
    attempts = int(cells.median()) if len(cells) else 0
    if valid[ITEM].nunique() < 2 or attempts < 2:
        context.skip(f"{section.title}: variance decomposition",
                     f"needs 2 or more items with 2 or more valid attempts per cell (items {valid[ITEM].nunique()}, median attempts {attempts})",
                     "collect 2 or more attempts per item and condition", applicable=False)  # fmt: skip
        return
    vc = hs.variance_components(valid, score=criterion.column, facets=facets, n_attempts=attempts,
                                confidence=context.confidence, random_state=context.rng)  # fmt: skip
    add_variance(section, context, criterion, stem, vc, attempts)


def add_variance(section: Section, context: _Context, criterion: Criterion, stem: str, vc: Any, attempts: int) -> None:
    """Add a criterion's variance components and G and Phi coefficients."""
    section.add(
        "Variance of the score split into item, condition, item x condition and residual (attempt-to-attempt noise); "
        f"G (relative) and Phi (absolute) for the mean of {attempts} attempts per item and condition.",
        Table(vc.components, f"{criterion.name}: variance components", f"{stem}_variance_components", context.confidence),
        Table(vc.coefficients, f"{criterion.name}: G and Phi coefficients", f"{stem}_g_coefficients", context.confidence),
    )


def reliability_by_condition(
    log: pd.DataFrame, score: str, *, confidence: float = 0.95, random_state: int | np.random.Generator | None = None
) -> tuple[pd.DataFrame, list[dict[str, str]]]:
    """Agreement of repeated attempts, per ``condition_id``: ICC(1), ICC(1,k), Krippendorff's alpha.

    Attempts are exchangeable replications of one configuration, so the one-way ICCs apply
    (:func:`hce.stats.icc`), with Krippendorff's interval alpha and its unit-bootstrap
    interval beside them. Errored attempts are left out.

    Returns
    -------
    (DataFrame, list of dict)
        The estimates, and the conditions left out with the reason.
    """
    rng = as_generator(random_state)
    valid = _valid(log, score)
    rows, skipped = [], []
    for condition, part in valid.groupby(CONDITION, sort=True):
        if part[ITEM].nunique() < 2 or part.groupby(ITEM).size().max() < 2:
            skipped.append({CONDITION: str(condition), "reason": "fewer than 2 items or no item with 2 valid attempts",
                            "applicable": False})  # fmt: skip
            continue
        try:  # one condition the statistics cannot handle (all scores equal, say) leaves the others reported
            rows += _agreement_rows(part, condition, score, confidence, rng)
        except _EXPECTED as exc:
            skipped.append({CONDITION: str(condition), "reason": f"{type(exc).__name__}: {exc}"})
    return pd.DataFrame(rows), skipped


def _agreement_rows(part: pd.DataFrame, condition: Any, score: str, confidence: float, rng: np.random.Generator) -> list[dict]:
    rows = []
    iccs = hs.icc(part, item=ITEM, rater="attempt", score=score, confidence=confidence)
    for _, row in iccs[iccs["metric"].isin(["ICC1", "ICC1k"])].iterrows():
        rows.append({CONDITION: condition, "metric": row["mcgraw_wong"], "estimate": row["estimate"],
                     "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n_items": row["n_items"],
                     "n_scores": row["n_scores"], "method": row["method"]})  # fmt: skip
    alpha = hs.krippendorff_alpha(part, item=ITEM, rater="attempt", score=score, level="interval",
                                  confidence=confidence, random_state=rng).iloc[0]  # fmt: skip
    rows.append({CONDITION: condition, "metric": "Krippendorff's alpha (interval)", "estimate": alpha["estimate"],
                 "ci_low": alpha["ci_low"], "ci_high": alpha["ci_high"], "n_items": alpha["n_items"],
                 "n_scores": alpha["n_scores"], "method": alpha["ci_method"]})  # fmt: skip
    return rows


def _reliability(section: Section, context: _Context, criterion: Criterion, stem: str) -> None:
    table, skipped = reliability_by_condition(context.log, criterion.column, confidence=context.confidence, random_state=context.rng)
    for entry in skipped:
        section.add(f"Reliability of condition {entry[CONDITION]} is not reported: {entry['reason']}.")
        context.skip(f"{section.title}: reliability of {entry[CONDITION]}", entry["reason"],
                     "none needed when the scores do not vary; otherwise collect more items or attempts",
                     applicable=entry.get("applicable", True))  # fmt: skip
    if len(table):
        section.add(Table(table, f"{criterion.name}: agreement of repeated attempts per condition (each attempt a rater)",
                          f"{stem}_reliability", context.confidence))  # fmt: skip


# --- calibration ---------------------------------------------------------------------------


def _calibration_section(document: Report, context: _Context) -> None:
    log = context.log
    if "logprobs" not in log or log["logprobs"].isna().all():
        context.skip("Calibration", "the log has no token logprobs", "collect with logprobs: true, top_logprobs: 5", applicable=False)
        return
    criteria = [c for c in context.criteria if c.column != "total" and c.scores]
    if not criteria:
        context.skip("Calibration", "no criterion with a known scale", "name the rubric (--rubric)", applicable=False)
        return
    section = document.section("Calibration (token probabilities)")
    section.add("Confidence is the judge's token probability of the score it gave (the criterion's line in the score "
                "block that ends the reply); the outcome is whether that score is the item's most frequent one across "
                "the condition's attempts. Attempts whose token does not match the logged score are left out.")  # fmt: skip

    def build() -> None:
        data = calibration_data(log, criteria)
        if len(data) < 20:
            raise DataError(f"only {len(data)} attempt x criterion scores could be matched to their token probability (needs 20)")
        metrics = pd.concat([hs.calibration_metrics(part, prob="prob", truth="outcome", item=ITEM, confidence=context.confidence,
                                                    random_state=context.rng).assign(**{CONDITION: condition})
                             for condition, part in data.groupby(CONDITION, sort=True)], ignore_index=True)  # fmt: skip
        metrics = metrics[[CONDITION, *[c for c in metrics.columns if c != CONDITION]]]
        bins = hs.reliability_table(data, prob="prob", truth="outcome", confidence=context.confidence)
        ax = figures.reliability_diagram(bins, min_count=MIN_BIN)
        hidden = bins[bins["n"] < MIN_BIN]
        section.add(Table(metrics, "Calibration of score confidence per condition", "calibration", context.confidence),
                    Table(bins, "Reliability table (all conditions)", "calibration_bins", context.confidence),
                    Figure(ax.figure, "reliability_diagram",
                           f"Reliability diagram (all conditions): observed rate against mean confidence per bin, each "
                           f"labelled with its number of scores; bins of fewer than {MIN_BIN} scores are not drawn"
                           + (f" ({len(hidden)} bin(s), {int(hidden['n'].sum())} scores; they are in the table)" if len(hidden) else "")
                           + "."))  # fmt: skip

    _attempt(context, section, "calibration", build)


def calibration_data(log: pd.DataFrame, criteria: Sequence[Criterion]) -> pd.DataFrame:
    """Per attempt and criterion: the token probability of the score given and whether it is the modal score.

    The score block closes the reply, one line per criterion in rubric order, then the
    total. The k-th of n criteria is the (k - n)-th score-like token from the end, or the
    (k - n - 1)-th when the total is itself a score-like token (a total of 3 on 0-5 scales).
    Rows whose token does not equal the logged score are dropped (a reply laid out otherwise).
    """
    valid = log[~log["error_flag"].astype(bool) & log["logprobs"].notna()]
    valid = valid.dropna(subset=[c.column for c in criteria]).reset_index(drop=True)
    scale = sorted({s for c in criteria for s in c.scores})
    n = len(criteria)
    # logprob_confidence keeps the log's (here positional) index, repeated per occurrence.
    found = hs.logprob_confidence(valid, scores=scale, occurrence=range(-n, 0))
    total_is_score = valid["total"].isin(scale).to_numpy() if "total" in valid else np.zeros(len(valid), dtype=bool)
    if total_is_score.any():
        before = hs.logprob_confidence(valid, scores=scale, occurrence=range(-n - 1, -1))
        before = before.assign(occurrence=before["occurrence"] + 1)
        found = pd.concat([found[~total_is_score[found.index]], before[total_is_score[before.index]]])
    frames = []
    for k, criterion in enumerate(criteria):
        conf = found[found["occurrence"] == k - n].reindex(valid.index)
        outcome = pd.concat([hs.agrees_with_mode(part, item=ITEM, score=criterion.column)
                             for _, part in valid.groupby(CONDITION, sort=False)]).sort_index()  # fmt: skip
        frame = pd.DataFrame({ITEM: valid[ITEM], CONDITION: valid[CONDITION], "criterion": criterion.column,
                              "prob": conf["prob"], "chosen": conf["chosen_score"], "score": valid[criterion.column],
                              "outcome": outcome.astype("float")})  # fmt: skip
        frames.append(frame[frame["prob"].notna() & (frame["chosen"] == frame["score"]) & frame["outcome"].notna()])
    return pd.concat(frames, ignore_index=True)[[ITEM, CONDITION, "criterion", "prob", "outcome"]]
