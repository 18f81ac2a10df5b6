"""The building blocks of the report's sections (:mod:`hce.report.generic`), whichever engine
holds the log (:mod:`hce.report.log_frame`).

A criterion and where the criteria come from; the context a report is built in (its log,
level, generator and what was not reported); one part of a section run so that a failure
becomes a "Not reported" entry and a warning a note in the report's own words; and the
spread, test and variance tables the criteria's sections add.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.errors import DataError, HceError, HceWarning
from hce.log import COLUMNS, text_among_numbers
from hce.report import figures
from hce.report.binary import binary_levels, cell_effects
from hce.report.document import Figure, Report, Section
from hce.report.log_frame import distinct, extremes, is_score, native
from hce.report.tables import Table
from hce.rubric import Rubric, load_rubric
from hce.stats._frames import EngineFrame

CONDITION = "condition_id"
ITEM = "item_id"
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


def per_criterion(context: _Context) -> list[tuple[Criterion, _Context]]:
    """Each criterion with the context to compute it in: its own random stream, spawned from
    the report's generator, so its numbers depend neither on the criteria before it nor on
    the process or engine that computes it (issue 35: the in-memory report computes some
    criteria in a forked child; an engine's report gives the same numbers).

    Examples
    --------
    >>> context = _Context(pd.DataFrame(), [Criterion("a", "a"), Criterion("b", "b")], 0.95, np.random.default_rng(0))
    >>> [(c.column, type(k.rng).__name__) for c, k in per_criterion(context)]
    [('a', 'Generator'), ('b', 'Generator')]
    """
    streams = context.rng.spawn(len(context.criteria))
    return [(criterion, replace(context, rng=stream)) for criterion, stream in zip(context.criteria, streams)]


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


def _criteria(view: EngineFrame, rubric: Rubric | None) -> tuple[list[Criterion], list[str]]:
    """The criteria to analyse in a log (:func:`~hce.report.log_frame.log_frame`), and notes saying where they came from."""
    notes = []
    if rubric is None and all(c in view.columns for c in load_rubric("v5").criteria):
        rubric = load_rubric("v5")
        notes.append("No rubric was named; the log has the five Rubric v5.0 criterion columns, so it is read as v5.")
    if rubric is not None:
        missing = [c.id for c in rubric.categories if c.id not in view.columns]
        if missing:
            raise DataError(f"the log has no column for criteria {missing} of rubric {rubric.name!r}; "
                            "name the rubric it was judged with")  # fmt: skip
        found = [Criterion(c.id, c.name, c.scores) for c in rubric.categories]
        if rubric.total_is_meaningful and "total" in view.columns:
            found.append(Criterion("total", "Total", rubric.total_levels))
        elif "total" in view.columns:
            notes.append(f"The total is not analysed: rubric {rubric.name!r} does not treat the sum of its criteria "
                         "as a score (its criteria have different scales, or it sets total_meaningful: false).")  # fmt: skip
        return found, [f"Criteria from rubric {rubric.name!r}: {', '.join(c.id for c in rubric.categories)}.", *notes]
    numeric = [c for c in view.columns if c not in COLUMNS and is_score(view, c)]
    if view.engine == "pandas":  # a score column with a typo is named, never dropped silently (an engine's column is typed)
        log = native(view)
        for column, row in text_among_numbers(log).items():
            notes.append(f"Column {column!r} is mostly numbers but also holds text (e.g. {log[column].iloc[row]!r}), so it is not "
                         "taken as a criterion: correct it, or pass rubric= to analyse it (the conditions holding text are then named).")  # fmt: skip
    found = [Criterion(c, c) for c in numeric]
    if "total" in view.columns:
        scales = extremes(view, numeric)
        if len(set(scales.values())) <= 1 and not any(binary_levels(distinct(view, c), None) for c in numeric):
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


def add_spread(section: Section, context: _Context, criterion: Criterion, stem: str, table: pd.DataFrame) -> pd.DataFrame:
    """Add a criterion's spread tables (summary, per item) and SD figure; return the per-item table."""
    section.add(Table(_spread_summary(table), f"{criterion.name}: spread of repeated scores per item, by condition",
                      f"{stem}_spread", context.confidence,
                      notes=["SD: sample SD of an item's repeated scores within a condition; summarised over items "
                             "(median and quartiles). The per-item table is in tables/" + f"{stem}_item_spread.csv."]),
                Table(table, f"{criterion.name}: per-item spread", f"{stem}_item_spread", context.confidence, inline=False))  # fmt: skip
    if table["sd"].notna().any():
        names = sorted(table.loc[table["sd"].notna(), CONDITION].astype(str).unique())
        key = None if figures.turned_ticks(names) is not None else figures.condition_ticks(names)[1]  # turned names need no key
        section.add(Figure(figures.sd_by_condition(table, condition=CONDITION, title=criterion.name, item=ITEM),
                           f"{stem}_sd_by_condition", f"{criterion.name}: per-item SD of repeated scores by condition"
                           + (f" (conditions: {key.replace(chr(160), ' ')})" if key else "")))  # fmt: skip
    return table


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


#: What a criterion whose repeats never differ shows in place of a variance decomposition: a result, not a failure.
NO_WITHIN_VARIANCE = "no within-item variance: all repeats identical"


def no_within_variance(section: Section, criterion: Criterion, spread: pd.DataFrame | None) -> bool:
    """Say so and return True when no item x condition cell of ``spread`` varies (every SD 0).

    A variance decomposition needs attempt-to-attempt noise: with none (every repeat of every
    cell scored alike) its REML likelihood is unbounded and there is nothing to decompose.
    That is a finding about the judge (perfectly repeatable on this criterion), so the
    section states it instead of listing the decomposition as "not computed" (``hce report``
    would exit 1 on a log that supports every section it wrote).

    Examples
    --------
    >>> section = Report("Demo").section("Clarity")
    >>> spread = pd.DataFrame({"n": [3, 3], "sd": [0.0, 0.0]})
    >>> no_within_variance(section, Criterion("clarity", "Clarity"), spread)
    True
    >>> section.blocks[-1].split(":")[1].strip()
    'no within-item variance'
    """
    if spread is None or "sd" not in spread:
        return False
    repeated = spread[spread["n"] >= 2]
    if not len(repeated) or repeated["sd"].isna().any() or (repeated["sd"] > 0).any():
        return False
    section.add(f"Variance decomposition of {criterion.name}: {NO_WITHIN_VARIANCE} ({len(repeated)} item x condition "
                "cells, every attempt scored as the others of its cell). The attempt-to-attempt variance is 0, so a single "
                "attempt is as repeatable as their mean on this criterion; the item and condition variances are those of the "
                "cell scores, and no G study is fitted (its likelihood is unbounded at a residual variance of 0).")  # fmt: skip
    return True


def add_variance(section: Section, context: _Context, criterion: Criterion, stem: str, vc: Any, attempts: int) -> None:
    """Add a criterion's variance components and G and Phi coefficients."""
    section.add(
        "Variance of the score split into item, condition, item x condition and residual (attempt-to-attempt noise); "
        f"G (relative) and Phi (absolute) for the mean of {attempts} attempts per item and condition.",
        Table(vc.components, f"{criterion.name}: variance components", f"{stem}_variance_components", context.confidence),
        Table(vc.coefficients, f"{criterion.name}: G and Phi coefficients", f"{stem}_g_coefficients", context.confidence),
    )




def add_condition_comparison(section: Section, context: _Context, criterion: Criterion, stem: str, high: str,
                             cells: pd.DataFrame) -> None:  # fmt: skip
    """Compare the conditions of a two-level criterion from its item x condition cells
    (:func:`~hce.report.binary.cell_effects`: the binomial GLMM or its cluster fallback), or
    record why not (fewer than two conditions)."""
    if cells[CONDITION].nunique() < 2:
        context.skip(f"{section.title}: comparison of conditions", "fewer than two conditions with a valid score",
                     "compare conditions: log two or more condition_id values", applicable=False)  # fmt: skip
        return
    effects, omnibus, why = cell_effects(cells, confidence=context.confidence, random_state=context.rng)
    section.add(why, Table(omnibus, f"{criterion.name}: does the share at {high} differ between conditions?",
                           f"{stem}_condition_test", context.confidence),
                Table(effects, f"{criterion.name}: each condition against {effects['reference'].iloc[0]} "
                      f"({effects['effect'].iloc[0]} of an attempt at {high})", f"{stem}_condition_effects",
                      context.confidence))  # fmt: skip


def agreement_rows(part: Any, condition: Any, score: str, confidence: float, rng: np.random.Generator) -> list[dict]:
    """ICC(1), ICC(1,k) and Krippendorff's interval alpha of one condition's valid attempts (each
    attempt a rater), as rows of the reliability table: ``part`` in memory or in an engine."""
    rows = []
    iccs = hs.icc(part, item=ITEM, rater="attempt", score=score, confidence=confidence, forms="oneway")
    for _, row in iccs.iterrows():
        rows.append({CONDITION: condition, "metric": row["mcgraw_wong"], "estimate": row["estimate"],
                     "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n_items": row["n_items"],
                     "n_scores": row["n_scores"], "method": row["method"]})  # fmt: skip
    alpha = hs.krippendorff_alpha(part, item=ITEM, rater="attempt", score=score, level="interval",
                                  confidence=confidence, random_state=rng).iloc[0]  # fmt: skip
    rows.append({CONDITION: condition, "metric": "Krippendorff's alpha (interval)", "estimate": alpha["estimate"],
                 "ci_low": alpha["ci_low"], "ci_high": alpha["ci_high"], "n_items": alpha["n_items"],
                 "n_scores": alpha["n_scores"], "method": alpha["ci_method"]})  # fmt: skip
    return rows
