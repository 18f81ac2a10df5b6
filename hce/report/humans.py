"""The report section "Agreement with human raters": written when a log carries human scores
(rows whose ``rater_role`` is ``"human"``, with the rater in ``rater``) or a table of them is
given (:func:`hce.report.report`'s ``humans=``, ``hce report --humans FILE``, joined on
``item_id``); absent otherwise.

Per criterion and condition (each condition is one judge configuration): the alternative
annotator test against the humans; the agreement of the judge's item mean with the humans'
item mean (Lin's concordance, Bland-Altman bias and limits); Cohen's kappa of the judge with
the humans' consensus and each human of 30 items or more (quadratic weights on a scale of
more than two levels; the bounded Fisher-z interval); the conditions compared on the human scale by prediction-powered inference (PPI++,
items as clusters) beside the judge-only and human-only comparisons; and the human-label
budget of the next study (:func:`hce.stats.ppi_budget`). Every number comes from
:mod:`hce.stats`.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.errors import DataError
from hce.report import figures
from hce.report.document import Figure, Report
from hce.report.sections import CONDITION, ITEM, _attempt, _Context
from hce.report.tables import Table

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

ROLE = "rater_role"
RATER = "rater"
TITLE = "Agreement with human raters"
#: The judge's cost of one item as a share of one human label's, for the label budget (a judge call
#: costs cents, a clinician's rating dollars).
COST_RATIOS = (0.01, 0.1)
#: Fewest items of one human for a kappa row of their own (the alt-test's default).
MIN_KAPPA_ITEMS = 30
CONSENSUS = "humans (consensus)"
#: The ``rater_role`` of ratings that are the design's own target scores, not human judgements (free to have).
TARGET = "target"


def split_humans(log: pd.DataFrame, humans: pd.DataFrame | str | os.PathLike | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The judge's rows and the human ratings (long: ``item_id``, ``rater``, one column per
    criterion), from the log's ``rater_role`` column or the ``humans`` table; None without either.

    Examples
    --------
    >>> log = pd.DataFrame({"item_id": ["a", "a"], "condition_id": ["J", "H"], "rater_role": ["judge", "human"],
    ...                     "rater": [None, "dr1"], "accuracy": [4, 5]})
    >>> judge, humans = split_humans(log, None)
    >>> len(judge), humans["rater"].tolist()
    (1, ['dr1'])
    """
    if humans is not None and not isinstance(humans, pd.DataFrame):
        humans = pd.read_csv(humans, dtype={ITEM: str})  # ids are text, as in the log (T001 and 001 stay apart from 1)
    if ROLE in log:
        is_human = log[ROLE].astype(str).str.lower().eq("human").to_numpy()
        if is_human.any():
            rated = log.loc[is_human]
            if RATER not in rated or rated[RATER].isna().any():
                raise DataError(f"rows with {ROLE}='human' need the rater's id in column {RATER!r}")
            humans = rated if humans is None else pd.concat([humans, rated], ignore_index=True)
            log = log.loc[~is_human]
    if humans is None:
        return log, None
    missing = [c for c in (ITEM, RATER) if c not in humans]
    if missing:
        raise DataError(f"the human ratings need columns {ITEM!r} and {RATER!r}; missing {missing}; "
                        f"columns: {list(humans.columns)}")  # fmt: skip
    return log, humans


def humans_section(document: Report, context: _Context, humans: pd.DataFrame | None) -> None:
    """Write the section when there are human ratings of a criterion the log has.

    Ratings whose ``rater_role`` is ``"target"`` (every one) are the design's own target
    scores (a synthetic transcript written to a known level): the section compares the judge
    with them, and says that the label budget does not apply (a target costs nothing). A
    ``condition_id`` column in the ratings makes them per condition (the humans rated each
    condition's output, not the item once): each condition is compared with its own labels.
    """
    if humans is None:
        return
    criteria = [c for c in context.criteria if c.column in humans]
    if not criteria:
        context.skip(TITLE, f"the human ratings have none of the log's criteria ({[c.column for c in context.criteria]})",
                     "name the human score columns as the log's criteria")  # fmt: skip
        return
    targets = ROLE in humans and humans[ROLE].astype(str).str.lower().eq(TARGET).all()
    humans, unknown = per_condition_ratings(humans, context.log[CONDITION])
    per_condition = CONDITION in humans
    section = document.section(TITLE)
    section.add("Each condition is one judge. Alt-test: Calderon, Reichart & Dror (2025), each human left out in turn, "
                "the judge's mean score per item against the remaining humans by negative RMSE, epsilon = 0.2 "
                "(expert raters), Benjamini-Yekutieli at 0.05; the judge passes at a winning rate of 0.5. "
                "Agreement: the judge's item mean against the humans' item mean; Cohen's kappa of the judge with the "
                "humans' consensus and each human. PPI: where the humans rated only some items, the conditions' "
                "human-scale means compared by PPI++ (Angelopoulos et al. 2023). Budget: ppi_budget (Broska et al. "
                "2024).")  # fmt: skip
    if targets:
        section.add(f"The ratings here are the design's target scores (rater_role {TARGET!r}: rater "
                    f"{', '.join(map(repr, sorted(humans[RATER].astype(str).unique())))}), the level each item was "
                    "written to, not human judgements: agreement with them is the judge's accuracy against the design.")  # fmt: skip
    if per_condition:
        section.add("The human ratings are per condition (their condition_id column): each condition is compared with "
                    "the labels of its own outputs.")  # fmt: skip
    if unknown:
        section.add(f"Note: {sum(unknown.values())} rating row(s) name a condition_id the judge's rows do not have, and are "
                    f"left out: {', '.join(f'{c!r} ({n})' for c, n in unknown.items())}.")  # fmt: skip
    for criterion in criteria:
        keep = [ITEM, RATER, criterion.column, *([CONDITION] if per_condition else [])]
        human = humans[keep].dropna(subset=[ITEM, RATER, criterion.column])
        human = human.rename(columns={criterion.column: "score"}).astype({"score": float})
        judged = (context.log.dropna(subset=[criterion.column]).groupby([CONDITION, ITEM])[criterion.column]
                  .mean().rename("score").reset_index())  # fmt: skip
        stem = criterion.column
        conditions = judged[CONDITION].unique().tolist()
        by_condition = {c: labels_of(human, c) for c in conditions}

        def alt(by_condition=by_condition, judged=judged, criterion=criterion, stem=stem) -> None:
            overlap = set(judged[CONDITION]) & set(pd.concat(list(by_condition.values()))[RATER])
            if overlap:
                raise DataError(f"a condition_id is also a human rater id: {sorted(overlap)}")
            most = max(int(h.groupby(ITEM)[RATER].nunique().max()) if len(h) else 0 for h in by_condition.values())
            if most < 2:
                raters = sorted(pd.concat(list(by_condition.values()))[RATER].astype(str).unique())
                why = (f"it leaves each human out in turn and asks whether the judge predicts the remaining humans as "
                       f"well as the one left out does, so it needs at least two raters of an item; here every item has "
                       f"one ({', '.join(map(repr, raters))})")  # fmt: skip
                section.add(f"Alt-test of {criterion.name}: not run: {why}. Agreement and kappa below compare the judge "
                            "with that rater directly.")  # fmt: skip
                context.skip(f"{TITLE}: alt-test of {criterion.name}", why, "rate the items by two or more humans",
                             applicable=False)  # fmt: skip
                return
            summaries, notes = [], []
            groups = by_condition.items() if per_condition else [(conditions, by_condition[conditions[0]])]
            for judges, labels in groups:
                judges = judges if isinstance(judges, list) else [judges]
                rows = judged[judged[CONDITION].isin(judges)].rename(columns={CONDITION: RATER})[[ITEM, RATER, "score"]]
                result = hs.alt_test(pd.concat([labels[[ITEM, RATER, "score"]], rows], ignore_index=True), item=ITEM,
                                     rater=RATER, score="score", judge=judges, scoring="neg_rmse")  # fmt: skip
                summaries.append(result["summary"])
                notes += result.notes
            table = pd.concat(summaries, ignore_index=True).rename(columns={"judge": CONDITION})
            section.add(Table(table, f"Alt-test: can the judge replace the humans? ({criterion.name})",
                              f"alt_test_{stem}", context.confidence), *_condensed(notes))  # fmt: skip

        def agreement(by_condition=by_condition, judged=judged, criterion=criterion, stem=stem) -> None:
            rows, pairs = [], {}
            for condition, part in judged.groupby(CONDITION, sort=True):
                mean_human = by_condition[condition].groupby(ITEM)["score"].mean().rename("humans")
                wide = part.set_index(ITEM)["score"].rename("judge").to_frame().join(mean_human, how="inner").reset_index()
                pairs[condition] = wide
                ccc = hs.concordance(wide, a="judge", b="humans").iloc[0]
                ba = hs.bland_altman(wide, a="judge", b="humans").set_index("quantity")["estimate"]
                rows.append({CONDITION: condition, "n_items": len(wide), "ccc": ccc.estimate, "ccc_ci_low": ccc.ci_low,
                             "ccc_ci_high": ccc.ci_high, "bias": ba["bias"], "lower_limit": ba["lower_limit"],
                             "upper_limit": ba["upper_limit"], "proportional_bias": ba["proportional_bias"]})  # fmt: skip
            section.add(Table(pd.DataFrame(rows), f"Judge against the humans' mean ({criterion.name})",
                              f"human_agreement_{stem}", context.confidence))  # fmt: skip
            section.add(Figure(bland_altman_panels(pairs), f"human_bland_altman_{stem}",
                               f"Bland-Altman plot of the judge's item mean against the humans' ({criterion.name}): "
                               "bias and 95% limits of agreement with their confidence bands, one panel per condition"))  # fmt: skip

        def kappa(by_condition=by_condition, judged=judged, criterion=criterion, stem=stem) -> None:
            tables = [kappa_with_humans(part, by_condition[condition], confidence=context.confidence)
                      for condition, part in judged.groupby(CONDITION, sort=True)]  # fmt: skip
            section.add(Table(pd.concat(tables, ignore_index=True),
                              f"Cohen's kappa of the judge (its item mean, rounded) with the humans' consensus and with each human "
                              f"of {MIN_KAPPA_ITEMS} items or more ({criterion.name})",
                              f"human_kappa_{stem}", context.confidence))  # fmt: skip

        paired = pd.concat([part.merge(by_condition[condition].groupby(ITEM)["score"].mean().rename("humans").reset_index(),
                                       on=ITEM, how="left")
                            for condition, part in judged.groupby(CONDITION, sort=True)], ignore_index=True)  # fmt: skip

        def ppi(paired=paired, criterion=criterion, stem=stem) -> None:
            if paired["humans"].notna().all():  # nothing for the judge to add: the classical comparison is the humans'
                what = f"{TITLE}: PPI comparison of the conditions on {criterion.name}"
                context.skip(what, "the humans rated every item: the human-only comparison needs no judge",
                             applicable=False)  # fmt: skip
                return
            if paired[CONDITION].nunique() > 1:
                compared = hs.ppi_compare(paired, condition=CONDITION, score="score", truth="humans", tuning="power",
                                          cluster=ITEM, confidence=context.confidence)  # fmt: skip
            else:  # one condition: its human-scale mean (one row per item)
                compared = hs.ppi_mean(paired, score="score", truth="humans", tuning="power", confidence=context.confidence)
                compared.insert(0, "term", "(Intercept)")
            section.add(Table(compared, f"Conditions compared on the human scale ({criterion.name}): PPI++ from the judge's "
                              "scores and the human labels, beside the judge-only and the human-only (classical) estimates; "
                              "items are clusters", f"human_ppi_{stem}", context.confidence))  # fmt: skip
            if not per_condition and same_items(paired):
                section.add(SAME_ITEMS_NOTE)

        def budget(paired=paired, criterion=criterion, stem=stem) -> None:
            if targets:
                why = ("the ratings are the design's targets, known for every item at no labelling cost (cost 0 per "
                       "label), so no judge need stand in for them")  # fmt: skip
                section.add(f"Human-label budget for {criterion.name}: not applicable: {why}; with human raters the "
                            "budget (ppi_budget) is given here.")  # fmt: skip
                context.skip(f"{TITLE}: human-label budget for {criterion.name}", why, applicable=False)
                return
            section.add(Table(label_budget(paired), f"Human labels for the next study ({criterion.name}): to estimate a "
                              "condition's human-scale mean as precisely as human labels of every item would, label "
                              "n_labelled items and let the judge alone score n_unlabelled more (ppi_budget; the judge's "
                              "cost per item as a share of a human label's)", f"human_budget_{stem}", context.confidence))  # fmt: skip

        _attempt(context, section, f"alt-test of {criterion.name}", alt)
        _attempt(context, section, f"agreement with the humans on {criterion.name}", agreement)
        _attempt(context, section, f"kappa with the humans on {criterion.name}", kappa)
        _attempt(context, section, f"PPI comparison of the conditions on {criterion.name}", ppi)
        _attempt(context, section, f"human-label budget for {criterion.name}", budget)


#: Said under a PPI comparison of conditions that judged the same items, labelled once per item.
SAME_ITEMS_NOTE = ("Note: the conditions judged the same items, and an item's human scores are the same whichever "
                   "condition judged it, so they enter every condition's mean alike: the human-only (classical) difference between conditions is 0 by "
                   "construction (its SE too, up to rounding), and a PPI++ difference estimates only how the "
                   "conditions' judge errors differ, not a difference the humans would see. To compare conditions on "
                   "the human scale, have the humans rate each condition's output (a condition_id column in the "
                   "human ratings).")  # fmt: skip


def per_condition_ratings(humans: pd.DataFrame, conditions: pd.Series) -> tuple[pd.DataFrame, dict[str, int]]:
    """The ratings with ``condition_id`` kept only when it names the judge's conditions (ratings per condition).

    A ``condition_id`` naming none of them is the humans' own (rows ``rater_role == "human"``
    of a stacked log): the ratings are of the items, and the column is dropped. When some rows
    name a judge's condition, those with another (not blank) are left out, counted per value.

    Examples
    --------
    >>> humans = pd.DataFrame({"item_id": ["a", "a", "b"], "rater": "dr1", "condition_id": ["A", "C", None]})
    >>> kept, unknown = per_condition_ratings(humans, pd.Series(["A", "B"]))
    >>> kept["condition_id"].tolist(), unknown
    (['A', nan], {'C': 1})
    >>> "condition_id" in per_condition_ratings(humans.assign(condition_id="humans"), pd.Series(["A"]))[0]
    False
    """
    if CONDITION not in humans:
        return humans, {}
    named = humans[CONDITION].notna()
    known = named & humans[CONDITION].astype(str).isin(set(conditions.astype(str)))
    if not known.any():
        return humans.drop(columns=CONDITION), {}
    other = named & ~known
    unknown = humans.loc[other, CONDITION].astype(str).value_counts(sort=False).to_dict()
    return humans.loc[~other], {str(k): int(v) for k, v in unknown.items()}


def bland_altman_panels(pairs: dict[object, pd.DataFrame]) -> MplFigure:
    """One Bland-Altman panel per condition (``judge`` against ``humans``, one row per item), three to a row.

    Examples
    --------
    >>> wide = pd.DataFrame({"item_id": range(5), "judge": [3.0, 4, 2, 5, 4], "humans": [3.0, 3, 2, 4, 4]})
    >>> len(bland_altman_panels({"A": wide, "B": wide.assign(judge=wide["judge"] - 1)}).axes)
    2
    """
    ncols = min(len(pairs), 3)
    nrows = -(-len(pairs) // ncols)
    fig, axes = figures.new_figure(4.2 * ncols, 3.4 * nrows, nrows=nrows, ncols=ncols, squeeze=False, sharey=True)
    panels = list(axes.ravel())
    for ax, (condition, wide) in zip(panels, pairs.items()):
        figures.bland_altman_plot(wide, a="judge", b="humans", ax=ax, title=str(condition))
    for ax in panels[len(pairs):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def labels_of(human: pd.DataFrame, condition: object) -> pd.DataFrame:
    """The human ratings that apply to one condition: its own rows when the ratings are per condition
    (a ``condition_id`` column; a blank there applies to every condition), else all of them.

    Examples
    --------
    >>> human = pd.DataFrame({"item_id": ["a", "a", "b"], "rater": "dr1", "score": [1.0, 3.0, 2.0],
    ...                       "condition_id": ["A", "B", None]})
    >>> labels_of(human, "A")["score"].tolist(), labels_of(human.drop(columns="condition_id"), "A")["score"].tolist()
    ([1.0, 2.0], [1.0, 3.0, 2.0])
    """
    if CONDITION not in human:
        return human
    return human[human[CONDITION].isna() | human[CONDITION].astype(str).eq(str(condition))]


def same_items(paired: pd.DataFrame) -> bool:
    """Whether every condition judged the same labelled items (the human-only difference is then 0 by construction).

    Examples
    --------
    >>> paired = pd.DataFrame({"condition_id": list("AABB"), "item_id": list("xyxy"), "humans": [1, None, 1, None]})
    >>> same_items(paired), same_items(paired.iloc[:3])
    (True, True)
    >>> same_items(paired.assign(item_id=list("xyzy")))
    False
    """
    labelled = paired[paired["humans"].notna()]
    sets = {frozenset(part[ITEM]) for _, part in labelled.groupby(CONDITION)}
    return labelled[CONDITION].nunique() > 1 and len(sets) == 1


def _condensed(notes: list[str]) -> list[str]:
    """The alt-test's notes with its one line per skipped human counted instead (107 physicians make 107 lines).

    Examples
    --------
    >>> _condensed(["judge 'A': human 'h1' skipped, 5 item(s) < 30", "judge 'A': human 'h2' skipped, 1 item(s) < 30", "x"])
    ['x', "judge 'A': 2 humans skipped (too few items; the alt-test's minimum is 30)"]
    """
    skipped = [n for n in notes if re.match(r"judge '.*': human '.*' skipped", n)]
    counts = pd.Series([n.split(": human '")[0] for n in skipped], dtype=object).value_counts(sort=False)
    return [n for n in notes if n not in skipped] + [f"{judge}: {k} humans skipped (too few items; the alt-test's "
                                                     "minimum is 30)" for judge, k in counts.items()]  # fmt: skip


def kappa_with_humans(judged: pd.DataFrame, human: pd.DataFrame, *, confidence: float = 0.95,
                      min_items: int = MIN_KAPPA_ITEMS) -> pd.DataFrame:  # fmt: skip
    """Cohen's kappa of each condition's item score (its mean, rounded half up) with the humans'.

    One row per condition against the humans' consensus (their item mean, rounded half up:
    the majority verdict, a tie counting as 1), and one per human who rated at least
    ``min_items`` items. Quadratic weights when the scores take more than two levels,
    unweighted for 0/1 verdicts; the interval is :func:`hce.stats.cohen_kappa`'s default
    (Fisher z, bounded in [-1, 1]).

    Parameters
    ----------
    judged : DataFrame
        ``condition_id``, ``item_id``, ``score`` (the judge's item mean).
    human : DataFrame
        ``item_id``, ``rater``, ``score``.
    confidence : float
        The interval's level (default 0.95).
    min_items : int
        Fewest items of a human for a row of their own (default 30, the alt-test's).

    Returns
    -------
    DataFrame
        One row per condition and human: ``condition_id``, ``human`` (``"humans (consensus)"``
        or the rater) and the kappa's columns.

    Examples
    --------
    >>> judged = pd.DataFrame({"condition_id": "A", "item_id": range(8), "score": [1, 2, 3, 4, 1, 2, 3, 4.4]})
    >>> human = pd.DataFrame({"item_id": range(8), "rater": "dr1", "score": [1, 2, 3, 4, 2, 2, 3, 4]})
    >>> row = kappa_with_humans(judged, human, min_items=8).iloc[1]
    >>> row.condition_id, row.human, row.weights, int(row.n_items)
    ('A', 'dr1', 'quadratic', 8)
    """
    rounded = judged.assign(score=_round_half_up(judged["score"]))
    weights = "quadratic" if pd.concat([rounded["score"], human["score"]]).nunique() > 2 else "unweighted"
    consensus = human.groupby(ITEM)["score"].mean().pipe(_round_half_up)
    raters = {CONSENSUS: consensus}
    counts = human[RATER].value_counts()
    raters.update({rater: human[human[RATER] == rater].set_index(ITEM)["score"]
                   for rater in sorted(counts.index[counts >= min_items])})  # fmt: skip
    rows = []
    for condition, part in rounded.groupby(CONDITION, sort=True):
        for rater, scores in raters.items():
            wide = part.set_index(ITEM)["score"].rename("judge").to_frame().join(scores.rename("human"), how="inner")
            kappa = hs.cohen_kappa(wide.reset_index(), item=ITEM, rater=["judge", "human"], weights=weights,
                                   confidence=confidence)  # fmt: skip
            rows.append(kappa.assign(**{CONDITION: condition, "human": rater}))
    table = pd.concat(rows, ignore_index=True)
    return table[[CONDITION, "human", *[c for c in table.columns if c not in (CONDITION, "human")]]]


def _round_half_up(values: pd.Series) -> pd.Series:
    """Scores rounded to whole points, halves up (a 0/1 tie is a pass)."""
    return np.floor(values.astype(float) + 0.5)


def label_budget(paired: pd.DataFrame, ratios: tuple[float, ...] = COST_RATIOS) -> pd.DataFrame:
    """The human-label budget per condition and judge-to-human cost ratio (:func:`hce.stats.ppi_budget`).

    The target precision is that of human labels of every item the log holds
    (``effective_n`` = its items); costs are in units of one human label.

    Parameters
    ----------
    paired : DataFrame
        ``condition_id``, ``item_id``, ``score`` (the judge's) and ``humans`` (the humans' item
        mean, NaN where unlabelled).
    ratios : tuple of float
        The judge's cost per item as a share of a human label's (default (0.01, 0.1)).

    Returns
    -------
    DataFrame
        One row per condition and ratio: ``condition_id``, ``cost_ratio`` and ppi_budget's columns.
    """
    rows = []
    for condition, part in paired.groupby(CONDITION, sort=True):
        for ratio in ratios:
            budget = hs.ppi_budget(part, cost_label=1.0, cost_judge=ratio, effective_n=part[ITEM].nunique(),
                                   score="score", truth="humans")  # fmt: skip
            rows.append(budget.assign(**{CONDITION: condition, "cost_ratio": ratio}))
    table = pd.concat(rows, ignore_index=True)
    return table[[CONDITION, "cost_ratio", *[c for c in table.columns if c not in (CONDITION, "cost_ratio")]]]

