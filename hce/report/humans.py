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

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.errors import DataError
from hce.report.document import Report
from hce.report.sections import CONDITION, ITEM, _attempt, _Context
from hce.report.tables import Table

ROLE = "rater_role"
RATER = "rater"
TITLE = "Agreement with human raters"
#: The judge's cost of one item as a share of one human label's, for the label budget (a judge call
#: costs cents, a clinician's rating dollars).
COST_RATIOS = (0.01, 0.1)
#: Fewest items of one human for a kappa row of their own (the alt-test's default).
MIN_KAPPA_ITEMS = 30
CONSENSUS = "humans (consensus)"


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
    """Write the section when there are human ratings of a criterion the log has."""
    if humans is None:
        return
    criteria = [c for c in context.criteria if c.column in humans]
    if not criteria:
        context.skip(TITLE, f"the human ratings have none of the log's criteria ({[c.column for c in context.criteria]})",
                     "name the human score columns as the log's criteria")  # fmt: skip
        return
    section = document.section(TITLE)
    section.add("Each condition is one judge. Alt-test: Calderon, Reichart & Dror (2025), each human left out in turn, "
                "the judge's mean score per item against the remaining humans by negative RMSE, epsilon = 0.2 "
                "(expert raters), Benjamini-Yekutieli at 0.05; the judge passes at a winning rate of 0.5. "
                "Agreement: the judge's item mean against the humans' item mean; Cohen's kappa of the judge with the "
                "humans' consensus and each human. PPI: where the humans rated only some items, the conditions' "
                "human-scale means compared by PPI++ (Angelopoulos et al. 2023). Budget: ppi_budget (Broska et al. "
                "2024).")  # fmt: skip
    for criterion in criteria:
        human = humans[[ITEM, RATER, criterion.column]].dropna()
        human = human.rename(columns={criterion.column: "score"}).astype({"score": float})
        judged = (context.log.dropna(subset=[criterion.column]).groupby([CONDITION, ITEM])[criterion.column]
                  .mean().rename("score").reset_index())  # fmt: skip
        stem = criterion.column

        def alt(human=human, judged=judged, criterion=criterion, stem=stem) -> None:
            judges = judged.rename(columns={CONDITION: RATER})
            conditions = judges[RATER].unique().tolist()
            if set(conditions) & set(human[RATER]):
                raise DataError(f"a condition_id is also a human rater id: {sorted(set(conditions) & set(human[RATER]))}")
            result = hs.alt_test(pd.concat([human, judges], ignore_index=True), item=ITEM, rater=RATER, score="score",
                                 judge=conditions, scoring="neg_rmse")  # fmt: skip
            table = result["summary"].rename(columns={"judge": CONDITION})
            section.add(Table(table, f"Alt-test: can the judge replace the humans? ({criterion.name})",
                              f"alt_test_{stem}", context.confidence), *_condensed(result.notes))  # fmt: skip

        def agreement(human=human, judged=judged, criterion=criterion, stem=stem) -> None:
            mean_human = human.groupby(ITEM)["score"].mean().rename("humans")
            rows = []
            for condition, part in judged.groupby(CONDITION, sort=True):
                wide = part.set_index(ITEM)["score"].rename("judge").to_frame().join(mean_human, how="inner").reset_index()
                ccc = hs.concordance(wide, a="judge", b="humans").iloc[0]
                ba = hs.bland_altman(wide, a="judge", b="humans").set_index("quantity")["estimate"]
                rows.append({CONDITION: condition, "n_items": len(wide), "ccc": ccc.estimate, "ccc_ci_low": ccc.ci_low,
                             "ccc_ci_high": ccc.ci_high, "bias": ba["bias"], "lower_limit": ba["lower_limit"],
                             "upper_limit": ba["upper_limit"], "proportional_bias": ba["proportional_bias"]})  # fmt: skip
            section.add(Table(pd.DataFrame(rows), f"Judge against the humans' mean ({criterion.name})",
                              f"human_agreement_{stem}", context.confidence))  # fmt: skip

        def kappa(human=human, judged=judged, criterion=criterion, stem=stem) -> None:
            section.add(Table(kappa_with_humans(judged, human, confidence=context.confidence),
                              f"Cohen's kappa of the judge (its item mean, rounded) with the humans' consensus and with each human "
                              f"of {MIN_KAPPA_ITEMS} items or more ({criterion.name})",
                              f"human_kappa_{stem}", context.confidence))  # fmt: skip

        paired = judged.merge(human.groupby(ITEM)["score"].mean().rename("humans").reset_index(), on=ITEM, how="left")

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

        def budget(paired=paired, criterion=criterion, stem=stem) -> None:
            section.add(Table(label_budget(paired), f"Human labels for the next study ({criterion.name}): to estimate a "
                              "condition's human-scale mean as precisely as human labels of every item would, label "
                              "n_labelled items and let the judge alone score n_unlabelled more (ppi_budget; the judge's "
                              "cost per item as a share of a human label's)", f"human_budget_{stem}", context.confidence))  # fmt: skip

        _attempt(context, section, f"alt-test of {criterion.name}", alt)
        _attempt(context, section, f"agreement with the humans on {criterion.name}", agreement)
        _attempt(context, section, f"kappa with the humans on {criterion.name}", kappa)
        _attempt(context, section, f"PPI comparison of the conditions on {criterion.name}", ppi)
        _attempt(context, section, f"human-label budget for {criterion.name}", budget)


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

