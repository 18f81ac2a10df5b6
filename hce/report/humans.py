"""The report section "Agreement with human raters": written when a log carries human scores
(rows whose ``rater_role`` is ``"human"``, with the rater in ``rater``) or a table of them is
given (:func:`hce.report.report`'s ``humans=``, ``hce report --humans FILE``, joined on
``item_id``); absent otherwise.

Per criterion and condition (each condition is one judge configuration): the alternative
annotator test against the humans, and the agreement of the judge's item mean with the
humans' item mean (Lin's concordance, Bland-Altman bias and limits). Every number comes from
:mod:`hce.stats`.
"""

from __future__ import annotations

import os

import pandas as pd

import hce.stats as hs
from hce.errors import DataError
from hce.report.document import Report
from hce.report.sections import CONDITION, ITEM, _attempt, _Context
from hce.report.tables import Table

ROLE = "rater_role"
RATER = "rater"
TITLE = "Agreement with human raters"


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
        humans = pd.read_csv(humans)
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
                "Agreement: the judge's item mean against the humans' item mean.")  # fmt: skip
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
                              f"alt_test_{stem}", context.confidence), *result.notes)  # fmt: skip

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

        _attempt(context, section, f"alt-test of {criterion.name}", alt)
        _attempt(context, section, f"agreement with the humans on {criterion.name}", agreement)

