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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.engine_checks import inherit_known, settle_unique
from hce.engines import is_lazy_log
from hce.errors import DataError, HceError
from hce.log import COLUMNS
from hce.report import figures
from hce.report._beside import beside
from hce.report.biases import GOLDEN, judge_bias_section
from hce.report.binary import (
    as_high,
    binary_cells,
    binary_levels,
    binary_summary,
    nominal_agreement,
)
from hce.report.cost import cost_summary, without_empty_latency, without_simulated_timings
from hce.report.document import Figure, Report, Section
from hce.report.humans import humans_section, split_humans
from hce.report.log_frame import any_starts_with, cells, distinct, flagged, has_values, log_frame, native, of_condition, per_condition, rows, valid
from hce.report.logs import KEPT, kept_settings, missing_attempts, read_any
from hce.report.provenance import (
    read_with_notes,
    refuse_mixed_settings,
    separate_runs,
    separate_settings,
    served_models,
)
from hce.report.sections import (
    _EXPECTED,
    CONDITION,
    ITEM,
    Criterion,
    _attempt,
    _Context,
    _criteria,
    _stem,
    _tests,
    add_condition_comparison,
    add_spread,
    add_variance,
    agreement_rows,
    no_within_variance,
    not_reported_section,
    per_criterion,
)
from hce.report.stopped import WITHIN_MIN, add_stopped_means
from hce.report.tables import Table
from hce.rubric import Rubric, kept_rubric, load_rubric
from hce.stats._blas import one_blas_thread
from hce.stats._frames import EngineFrame
from hce.stats._resample import as_generator

#: Condition attributes shown beside ``condition_id`` (never grouped on).
ATTRIBUTES = ("experiment_id", "prompt_id", "model", "temperature", "top_p", "max_tokens")
#: Smallest calibration bin drawn: a line through a bin of 2 scores and one of 398 looks like perfect calibration.
MIN_BIN = 10
SIM_FINGERPRINT = "fp_hce_sim_"  # hce.sim's system_fingerprint prefix


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
    humans: pd.DataFrame | str | os.PathLike | None = None,
) -> Report:
    """The report of an attempt log, whatever its experiment: per condition and per criterion.

    Parameters
    ----------
    log : DataFrame, path, or a list of them, or a lazy log
        Attempt logs (:func:`hce.read_log` reads paths); several are concatenated. A lazy
        log (``hce.read_log(path, engine="duckdb")``, or any frame of Polars, DuckDB,
        PySpark or Dask) gives the same report, its statistics reduced in its engine
        (module ``hce.report.log_frame``).
    rubric : Rubric, packaged name or YAML path, optional
        The rubric the log was judged with: its criteria get a section each, and ``total``
        one only when ``rubric.total_is_meaningful``. Default: the rubric ``hce collect``
        kept beside the log file (``<log>.rubric.yaml``); else Rubric v5.0 when the log
        has its five columns; else the numeric columns outside the log schema (named in
        the report), with ``total`` analysed when present.
    out : path, optional
        Folder to write ``report.md``, ``report.html``, ``tables/`` and ``figures/`` to.
    title : str, default "LLM judge report"
        A report of the simulated judge says so in its title, whatever is passed.
    %(confidence)s
    %(random_state)s
        One generator serves the whole report, each criterion drawing from a stream spawned
        from it (its numbers do not depend on the other criteria); ``hce report`` passes
        ``--seed`` (default 0).
    progress : callable, optional
        Called with the name of each part before it is computed (``hce report`` shows it).
    humans : DataFrame or CSV path, optional
        Human ratings of the log's items: columns ``item_id``, ``rater`` and one per
        criterion (the log's names). Rows of the log with ``rater_role == "human"`` count as
        human ratings too. With either, the report has a section "Agreement with human
        raters" (module ``hce.report.humans``). Default None.

    Returns
    -------
    Report
        Sections: "Attempts and errors by condition", one "Criterion: ..." per criterion
        (spread, tests between conditions, variance decomposition, reliability),
        "Calibration" when the log has logprobs, "Agreement with human raters" when
        there are human ratings, "Judge biases" when the log has probe rows (``probe_id``),
        ``author_model`` or a golden-set history (``golden_run``, module
        ``hce.report.biases``), and "Not reported" listing what could not
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
    if is_lazy_log(log):  # a frame of another engine: its reductions run there, nothing is read here
        if humans is not None:
            raise DataError("humans= takes an in-memory log; read the log with hce.read_log(path) first")
        # (a lazy log's simulated timings stay: hce.report.cost reads them there; the note is pandas')
        frame, read_notes, kept, human_ratings, split, timings = log, [], {"items": {}}, None, [], []
        refuse_mixed_settings(log_frame(frame))
    else:
        frame, read_notes = read_with_notes(read_any, log)
        kept = frame.attrs.get(KEPT) or kept_settings(log)
        frame, human_ratings = split_humans(frame, humans)
        frame, split = separate_settings(frame, fingerprints=kept["fingerprints"])  # one condition_id, two settings: kept apart
        frame, runs = separate_runs(frame)  # and two runs of one plan
        split += runs
        frame, timings = without_simulated_timings(frame, SIM_FINGERPRINT)
    if rubric is None:
        rubric = kept_rubric(log)
    view = log_frame(frame)
    criteria, notes = _criteria(view, None if rubric is None else (rubric if isinstance(rubric, Rubric) else load_rubric(rubric)))
    if CONDITION not in view.columns or view.count_blank(CONDITION):
        raise DataError(f"the log needs a {CONDITION!r} value on every row: conditions are never guessed from "
                        "prompt_id or model (two conditions may share a prompt)")  # fmt: skip
    if view.engine != "pandas" and {ITEM, "attempt"} <= set(view.columns):
        # each criterion's reliability rates an item's attempts by number within each condition: one
        # pass over hashes here settles those checks for all of them (15 s at 20M rows, issue 43)
        settle_unique(frame, [CONDITION, ITEM, "attempt"])
    if any_starts_with(view, "system_fingerprint", SIM_FINGERPRINT):
        title = f"{title} — SIMULATED JUDGE (hce sim-server), not real model output"
    context = _Context(frame, criteria, confidence, as_generator(random_state), progress=progress or (lambda _text: None))
    document = Report(title)
    context.progress("attempts and errors")
    overview = _attempts_section(document, context)
    overview.add(*read_notes, *missing_attempts(frame, kept["items"], kept.get("plan")), *split, *timings, *served_models(frame), *notes)
    _cost_section(document, context)
    period, golden = latest_golden_period(context)
    if golden:
        overview.add(golden)
    _criteria_sections(document, period)
    context.progress("calibration")
    _calibration_section(document, period)
    humans_section(document, period, human_ratings)
    judge_bias_section(document, context)
    not_reported_section(document, context.not_reported, confidence)
    if out is not None:
        document.write(out, progress=context.progress)
    return document


def latest_golden_period(context: _Context) -> tuple[_Context, str | None]:
    """The context the per-criterion sections read: a golden-set history's latest period only.

    A history from ``hce collect --golden`` judges the same items again each period, so across
    periods an item's attempts are not repeats of one judgement: its spread and agreement are
    read within the latest period, and the change between periods is the drift of the "Judge
    biases" section. Any other log is read whole (the note is None).

    Examples
    --------
    >>> log = pd.DataFrame({"item_id": ["a", "a", "a", "a"], "golden_run": [1, 1, 2, 2], "total": [3, 4, 3, 3]})
    >>> period, note = latest_golden_period(_Context(log, [], 0.95, None))
    >>> len(period.log), note.split(":")[0]
    (2, 'A golden-set history of 2 periods')
    """
    log = context.log
    if not isinstance(log, pd.DataFrame) or GOLDEN not in log or log[GOLDEN].nunique() < 2:
        return context, None
    latest = log[GOLDEN].max()
    note = (f"A golden-set history of {log[GOLDEN].nunique()} periods: the sections per criterion read the latest "
            f"period ({latest}) only, whose attempts repeat one judgement; the change between periods is the drift "
            "in \"Judge biases\"")
    return dataclasses.replace(context, log=log[log[GOLDEN] == latest]), note


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


# --- attempts and errors -------------------------------------------------------------------


def condition_table(log: Any) -> pd.DataFrame:
    """One row per ``condition_id``: its attributes, items, attempts and errors (a log of any engine).

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": ["a", "a", "b"], "prompt_id": "P", "item_id": ["1", "2", "1"],
    ...                     "attempt": 1, "error_flag": [False, True, False]})
    >>> condition_table(log)[["condition_id", "prompt_id", "n_items", "n_attempts", "n_errors"]]
      condition_id prompt_id  n_items  n_attempts  n_errors
    0            a         P        2           2         1
    1            b         P        1           1         0
    """
    view = log_frame(log)
    table = per_condition(view)
    for column in [c for c in ATTRIBUTES if has_values(view, c)]:  # a setting never sent is not shown
        values = cells(view.where(~view.blank(column)), [CONDITION], column).groupby(CONDITION, sort=True)[column]
        joined = values.agg(lambda v: v.iloc[0] if len(v) == 1 else ", ".join(sorted(str(x) for x in v)))
        table[column] = joined.astype(object).reindex(table.index, fill_value="")  # a condition that never sent it: blank
    table["error_rate"] = table["n_errors"] / table["n_attempts"]
    columns = [c for c in ATTRIBUTES if c in table]
    return table[[*columns, "n_items", "n_attempts", "attempts_per_item", "n_errors", "error_rate"]].rename_axis(CONDITION).reset_index()


def _attempts_section(document: Report, context: _Context) -> Section:
    log, view = context.log, log_frame(context.log)
    section = document.section("Attempts and errors by condition")
    section.add("A condition is one condition_id of the log; prompt, model and temperature are its attributes "
                "(two conditions may share a prompt and differ in model or temperature: they are never pooled).",
                Table(condition_table(log), "Attempts, items and errors per condition", "conditions", context.confidence))  # fmt: skip
    errors = view.where(flagged(view))
    if "error_message" in errors.columns and errors.count_rows():
        counts = cells(errors, [CONDITION], "error_message").fillna({"error_message": "(no message)"})
        counts = counts.groupby([CONDITION, "error_message"], sort=True)["n"].sum().reset_index()
        section.add(Table(counts, "Error messages per condition", "errors", context.confidence))
    answered = not_applicable_table(log)
    if len(answered):
        section.add("A not-applicable answer is one the rubric declares (e.g. N/A): that score is missing by design, "
                    "not an error, and is left out of the criterion's statistics.",
                    Table(answered, "Not-applicable answers per criterion and condition", "not_applicable", context.confidence))  # fmt: skip
    return section


def not_applicable_table(log: Any) -> pd.DataFrame:
    """Per condition and criterion: the declared not-applicable answers (``not_applicable`` column) and their share.

    The share is of the condition's unflagged attempts; an empty table when no answer was one.

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": ["a", "a", "b"], "error_flag": False,
    ...                     "not_applicable": ["meds", "meds,allergies", None]})
    >>> not_applicable_table(log)
      condition_id  criterion  n_not_applicable  n_answered  share
    0            a  allergies                 1           2    0.5
    1            a       meds                 2           2    1.0
    """
    columns = [CONDITION, "criterion", "n_not_applicable", "n_answered", "share"]
    view = log_frame(log)
    if not has_values(view, "not_applicable"):
        return pd.DataFrame(columns=columns)
    said = cells(view.where(~flagged(view)), [CONDITION], "not_applicable")  # one row per distinct answer list
    answered = said.groupby(CONDITION, sort=True)["n"].sum()
    said = said.assign(criterion=said["not_applicable"].str.split(",")).explode("criterion").dropna(subset=["criterion"])
    counts = said.groupby([CONDITION, "criterion"], sort=True)["n"].sum().rename("n_not_applicable").reset_index()
    counts["n_answered"] = counts[CONDITION].map(answered).astype(int)
    counts["share"] = counts["n_not_applicable"] / counts["n_answered"]
    return counts[columns]


# --- cost --------------------------------------------------------------------------------


_COST_NOTE = ("Cost per attempt and per 1,000 attempts are over priced attempts (an unpriced model has no cost); "
              "cached share: cached / input tokens; batch share: attempts answered through the Batch API; "
              "latency: online attempts only.")


def _cost_section(document: Report, context: _Context) -> None:
    """Cost and tokens per condition (:func:`hce.report.cost.cost_summary`), or why not under "Not reported"."""
    view = log_frame(context.log)
    logged = [c for c in ("cost_usd", "input_tokens", "output_tokens") if has_values(view, c)]
    if not logged:
        # a log without cost columns does not support the section: listed, not a failure (exit 0)
        context.skip("Cost and tokens by condition", "the log records no cost or token counts (cost_usd, input_tokens, output_tokens)",
                     applicable=False)
        return
    missing = [c for c in ("cost_usd", "input_tokens", "cached_tokens", "output_tokens") if c not in view.columns]
    if missing:  # e.g. a log imported from a tool that keeps the cost but not the tokens
        context.skip("Cost and tokens by condition", f"the log records {', '.join(logged)} but has no column(s) {', '.join(missing)}",
                     "hce collect logs all four per attempt", applicable=False)  # fmt: skip
        return
    try:  # a tabulation of every attempt's cost and latency: only those columns are read
        table = without_empty_latency(cost_summary(rows(view, [CONDITION, "attempt_id", "request_id", "cost_usd", "input_tokens", "cached_tokens",
                                         "output_tokens", "latency_s"]), by=CONDITION))  # fmt: skip
    except HceError as exc:
        context.skip("Cost and tokens by condition", f"{type(exc).__name__}: {exc}")
        return
    document.section("Cost and tokens by condition").add(
        Table(table, "Cost and tokens per condition and per 1,000 attempts, as logged at the collection's dated prices",
              "cost", context.confidence,
              notes=[_COST_NOTE]))  # fmt: skip


# --- one criterion -------------------------------------------------------------------------


def _criteria_sections(document: Report, context: _Context) -> None:
    """A section per criterion (each with its own random stream: :func:`per_criterion`); on
    an idle second core the later criteria go to a forked child (:mod:`hce.report._beside`).
    The first is computed before the fork, so the lazy imports and matplotlib's font caches
    are loaded once for both processes."""
    jobs = per_criterion(context)
    split = (len(jobs) + 2) // 2  # the parent's share, the first criterion included: 5 of 9

    def later() -> tuple[list[Section], list[dict[str, str]]]:
        return _sections([(c, dataclasses.replace(k, progress=lambda _text: None)) for c, k in jobs[split:]])

    first = _sections(jobs[:1])
    # One BLAS thread in both processes (the child inherits the limit): two OpenBLAS pools
    # spinning on two cores would take the cores the two processes need (hce.stats._blas).
    # Only a pandas log is forked: an engine's connection and threads do not survive a fork.
    with one_blas_thread(), beside(later, fork=len(jobs) > split and log_frame(context.log).engine == "pandas") as other:
        here = _sections(jobs[1:split])
    for sections, skipped in (first, here, other.result()):
        document.sections.extend(sections)
        context.not_reported.extend(skipped)


def _sections(jobs: list[tuple[Criterion, _Context]]) -> tuple[list[Section], list[dict[str, str]]]:
    """The criteria's sections and what they could not report, apart from any other."""
    part, skipped = Report(""), []
    for criterion, context in jobs:
        _criterion_section(part, dataclasses.replace(context, not_reported=skipped), criterion)
    return part.sections, skipped


def _criterion_section(document: Report, context: _Context, criterion: Criterion) -> None:
    section = document.section(f"Criterion: {criterion.name}" + (f" ({criterion.column})" if criterion.name.lower() != criterion.column.lower() else ""))
    stem = _stem(criterion.column)
    if criterion.scores:
        section.add(f"Scale: {', '.join(map(str, criterion.scores))}." if len(criterion.scores) <= 12
                    else f"Scale: {criterion.scores[0]} to {criterion.scores[-1]}.")  # fmt: skip
    context.progress(section.title)
    # Only the columns a criterion's statistics read: every filtered copy below then holds 6
    # columns, not the log's dozens (at 10 million attempts, gigabytes per copy).
    view = log_frame(context.log)
    # within_min: a stopping rule's log, whose spread reads only the first min attempts
    needed = list(dict.fromkeys(c for c in ("attempt_id", ITEM, CONDITION, "attempt", "error_flag", WITHIN_MIN,
                                            criterion.column) if c in view.columns))
    if view.engine == "pandas":  # a pandas column may hold text among its numbers; an engine's column is typed
        log, left_out = _finite_scores(context.log[needed], criterion.column)
    else:
        import narwhals as nw

        scores = view.select({c: c for c in needed}).frame.with_columns(nw.col(criterion.column).cast(nw.Float64))
        log, left_out = nw.to_native(scores), {}  # the scores as float, as pandas' _finite_scores makes them
        inherit_known(context.log, log)  # the log's rows, so its repeated-attempt check holds
    for condition, reason in left_out.items():
        section.add(f"Condition {condition} is left out of this section: {reason}.")
        context.skip(f"{section.title}: condition {condition}", reason,
                     f"correct column {criterion.column!r} in the log (hce log validate lists such rows), then report again")  # fmt: skip
    context = dataclasses.replace(context, log=log)
    scored = log_frame(log)
    if scored.count_blank(criterion.column) == scored.count_rows():  # the whole log's messages and answers say why
        context.skip(section.title, *_why_no_score(view, criterion.column))
        return
    # a rubric's scale says whether a criterion is binary: its values are read only when there is none
    levels = binary_levels(distinct(scored, criterion.column) if criterion.scores is None else None, criterion.scores)
    if levels is not None:  # 0/1 scores have no meaningful SD, ICC or interval-level alpha
        _binary(section, context, criterion, stem, levels)
        return
    spread: dict[str, pd.DataFrame] = {}

    def spread_part() -> None:
        spread["table"] = add_spread(section, context, criterion, stem, hs.item_spread(
            log, item=ITEM, condition=CONDITION, score=criterion.column, error="error_flag"))  # fmt: skip
        add_stopped_means(section, context, criterion, stem, log)

    _attempt(context, section, "spread", spread_part)
    if "table" in spread:
        for value, label in (("sd", "SD of repeated scores"), ("mean", "mean score")):
            _attempt(context, section, f"tests of the {label}",
                     lambda value=value, label=label: _tests(section, context, spread["table"], value, label, stem, criterion.name))
    _attempt(context, section, "variance decomposition", lambda: _variance(section, context, criterion, stem, spread.get("table")))
    _attempt(context, section, "reliability", lambda: _reliability(section, context, criterion, stem))


def _why_no_score(view: EngineFrame, column: str) -> tuple[str, str]:
    """Why a criterion has no score at all, and the fix: every reply flagged, answered N/A, or another rubric's log."""
    errors, n = view.where(flagged(view)), view.count_rows()
    if errors.count_rows() == n:
        messages = cells(errors.where(~errors.blank("error_message")), [], "error_message") if "error_message" in view.columns else None
        common = (f"; the commonest message: {messages.sort_values('n', ascending=False, kind='stable')['error_message'].iloc[0]!r}"
                  if messages is not None and len(messages) else "")  # fmt: skip
        return (f"every attempt was flagged ({n:,} of {n:,}){common}",
                "see the table 'Error messages per condition', fix its cause (a cut reply: raise max_tokens) and collect again")
    if "not_applicable" in view.columns:
        answers = cells(view.where(~flagged(view)), [], "not_applicable")["not_applicable"].fillna("").str.split(",")
        if answers.map(lambda ids: column in ids).all():
            return (f"every unflagged answer was the rubric's not-applicable answer for {column!r}",
                    "nothing to fix: the criterion did not apply to these items")
    return (f"no attempt has a score in column {column!r}", "check that the log was judged with this rubric (--rubric)")


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
        add_condition_comparison(section, context, criterion, stem, high, binary_cells(context.log, column))

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


def _variance(section: Section, context: _Context, criterion: Criterion, stem: str, spread: pd.DataFrame | None) -> None:
    if no_within_variance(section, criterion, spread):
        return
    scored = valid(log_frame(context.log), criterion.column)
    table = cells(scored, [ITEM, CONDITION])  # one pass: the items, the conditions and the cells' attempts
    n_items, n_conditions = table[ITEM].nunique(), table[CONDITION].nunique()
    facets = [ITEM, CONDITION] if n_conditions > 1 else [ITEM]
    per_cell = table["n"] if n_conditions > 1 else table.groupby(ITEM)["n"].sum()
    attempts = int(per_cell.median()) if len(per_cell) else 0
    if n_items < 2 or attempts < 2:
        context.skip(f"{section.title}: variance decomposition",
                     f"needs 2 or more items with 2 or more valid attempts per cell (items {n_items}, median attempts {attempts})",
                     "collect 2 or more attempts per item and condition", applicable=False)  # fmt: skip
        return
    vc = hs.variance_components(native(scored), score=criterion.column, facets=facets, n_attempts=attempts,
                                confidence=context.confidence, random_state=context.rng)  # fmt: skip
    add_variance(section, context, criterion, stem, vc, attempts)


def reliability_by_condition(
    log: Any, score: str, *, confidence: float = 0.95, random_state: int | np.random.Generator | None = None
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
    scored = valid(log_frame(log), score)
    per_item = cells(scored, [CONDITION, ITEM])
    estimates, skipped = [], []
    for condition, counts in per_item.groupby(CONDITION, sort=True):
        if len(counts) < 2 or counts["n"].max() < 2:
            skipped.append({CONDITION: str(condition), "reason": "fewer than 2 items or no item with 2 valid attempts",
                            "applicable": False})  # fmt: skip
            continue
        try:  # one condition the statistics cannot handle (all scores equal, say) leaves the others reported
            estimates += agreement_rows(native(of_condition(scored, condition)), condition, score, confidence, rng)
        except _EXPECTED as exc:
            skipped.append({CONDITION: str(condition), "reason": f"{type(exc).__name__}: {exc}"})
    return pd.DataFrame(estimates), skipped


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
    view = log_frame(context.log)
    if not has_values(view, "logprobs"):
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
        # token logprobs are read per attempt: only the columns the scores' probabilities need
        data = calibration_data(rows(view, [ITEM, CONDITION, "prompt_id", "model", "attempt", "error_flag", "logprobs", "total", *(c.column for c in criteria)]), criteria)
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
                           + (f" ({figures.bins_count(len(hidden))}, {int(hidden['n'].sum())} scores; they are in the table)" if len(hidden) else "")
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
    if valid.empty:
        raise DataError("no unflagged attempt has both its scores and token logprobs (every one was flagged or unscored)")
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
