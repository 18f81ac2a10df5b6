"""Discussion 4.1-4.7 and Conclusions: findings and limitations from facts, interpretation left to the authors.

4.1 restates what the study decided and the success-metrics scorecard's verdicts; 4.4 lists
the limitations the folder proves (a simulated judge, metrics not measurable or not met,
exclusions, a winner taken by the fallback, experiments not run, simulated coders, the
``model_version`` of each model's first and last call). Everything else is a placeholder
carrying the outline's prompt.

Example
-------
>>> blocks = discussion(facts, cells)  # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from hce.report.manuscript.model import (
    Block,
    Bullets,
    Heading,
    Inline,
    Number,
    Paragraph,
    Placeholder,
)
from hce.report.tables import words
from hce.study.claims import NEAR_ALPHA_WHY, near_alpha
from hce.study.manuscript.cells import Cells, p_phrase
from hce.study.manuscript.facts import EXPERIMENTS, StudyFacts, decision_words
from hce.study.rules import INCONCLUSIVE, MIN_PER_LEVEL, NOT_MEASURABLE
from hce.study.sensitivity import hardly_reachable

SIMULATED_LIMITATION = ("The scores were produced by a simulated judge (hce sim-server), a generative model with known "
                        "truth answering in the name of the models requested; no LLM was called, and no result here "
                        "describes any real model. The study must be rerun against the real APIs before any claim.")  # fmt: skip


def _summary(facts: StudyFacts, cells: Cells) -> list[Block]:
    """4.1: the decisions carried forward and each success metric's verdict (the report's scorecard)."""
    items: list[list[Inline]] = []
    for kind, decision in facts.decisions.items():
        if kind in ("prompt", "model"):
            route = "by the prespecified rule" if decision.get("source") == "rule" else f"by {str(decision.get('source')).replace('_', ' ')}"
            items.append([f"The {kind} carried forward was {decision['choice']} ({route})."])
    for name in ("hypotheses", "scorecard"):
        if cells.has(name):
            items += [[f"{row.id} (", _cited(cells, name, row, "claim"), f"): {row.verdict} (", _value(cells, name, row),
                       "; rule: ", _cited(cells, name, row, "rule"), ")."] for row in cells.frame(name).itertuples(index=False)]
    paragraph = Paragraph(["In this simulated run, " if facts.simulated else "",
                           ("the study's own record reads as follows (decisions.json, and the report's pre-specified "
                            "hypotheses and success-metrics scorecard, each verdict from its pre-specified rule).")])
    return [Heading(2, "4.1 Summary of Key Findings"), paragraph, Bullets(items or [["No decision or metric was recorded."]])]


def _limitations(facts: StudyFacts, cells: Cells) -> list[Block]:
    """4.4: limitations the study folder shows, then a placeholder for the authors' own."""
    items: list[list[Inline]] = []
    if facts.simulated:
        items.append([SIMULATED_LIMITATION])
    for name in ("hypotheses", "scorecard"):
        if not cells.has(name):
            continue
        card = cells.frame(name)
        verdicts = card["verdict"].astype(str)
        for row in card[verdicts.str.startswith(NOT_MEASURABLE)].itertuples(index=False):
            items.append([f"{row.id} (", _cited(cells, name, row, "claim"), f") could not be assessed: {row.verdict}."])
        for row in card[verdicts.isin(["not met", "not supported", INCONCLUSIVE])].itertuples(index=False):
            items.append([f"{row.id} (", _cited(cells, name, row, "claim"), f") was {row.verdict} (", _value(cells, name, row),
                          "; rule: ", _cited(cells, name, row, "rule"), ")."])  # fmt: skip
        items += _near_alpha(cells, name, card)
    items.append(_exclusions(facts, cells))
    for kind, decision in facts.decisions.items():
        if kind in ("prompt", "model") and decision.get("source") != "rule":
            items.append([(f"The {kind} {decision['choice']} was carried forward without meeting the prespecified winner "
                          f"rule ({decision_words(decision.get('source'))}); later experiments rest on that choice"),
                          *_reachable(facts, cells, kind), "."])  # fmt: skip
    for experiment_id, (name, _) in EXPERIMENTS.items():
        if not facts.ran(experiment_id):
            items.append([f"{name} was not run; its questions remain open."])
    items.append(_drift(facts, cells))
    items += _confounds(facts, cells) + _carried_across_models(facts)
    items += _sample_sizes(cells) + _strata_sizes(facts, cells)
    items.append(_targets(facts, cells))
    items.append([Placeholder("4.4 other limitations: scope of the transcripts, the specific LLMs tested, consistency vs "
                              "accuracy, generalisability")])  # fmt: skip
    return [Heading(2, "4.4 Limitations"), Bullets(items)]


def _confounds(facts: StudyFacts, cells: Cells) -> list[list[Inline]]:
    """Each comparison whose conditions also differ in a request setting (from the logs: :meth:`StudyFacts.confounds`),
    each level's value cited to the experiment's conditions table where it has one row per level."""
    return [[f"{EXPERIMENTS[r.experiment_id][0]}'s comparison of {r.factor} levels is confounded with {r.setting} (",
             *_by_level(cells, r), f"): a difference between them may be the {r.setting}'s, not the {r.factor}'s."]
            for r in facts.confounds().itertuples(index=False)]  # fmt: skip


def _by_level(cells: Cells, confound) -> list[Inline]:
    """``level: value; ...`` of a confound, each value a cell of ``<exp>_conditions`` (the logs' text where no cell says it)."""
    name = f"{confound.experiment_id.split('_')[0].lower()}_conditions"
    if not cells.has(name) or confound.setting not in cells.frame(name):
        return [confound.by_level]
    parts: list[Inline] = []
    for i, said in enumerate(str(confound.by_level).split("; ")):
        level, _, value = said.partition(": ")
        keys = cells.rows(name, **{confound.factor: level})
        cell = cells.value(name, keys[0], confound.setting) if len(keys) == 1 else None
        cited = cell is not None and not pd.isna(cell) and value == (f"{cell:g}" if isinstance(cell, float) else str(cell))
        parts += ["; " if i else "", f"{level}: ", cells.number(name, keys[0], confound.setting) if cited else value]
    return parts


def _carried_across_models(facts: StudyFacts) -> list[list[Inline]]:
    """The prompt chosen on one model and used with others later, which no experiment re-chose it on."""
    decision = facts.decisions.get("prompt") or {}
    chosen = decision.get("choice")
    if chosen is None or not facts.ran("EXP2_PromptOptimization"):
        return []
    chosen_on = set(facts.rows("EXP2_PromptOptimization")["model"].dropna().astype(str))
    later = facts.log[(facts.log["experiment_id"] != "EXP2_PromptOptimization") & (facts.log["prompt_id"].astype(str) == str(chosen))]
    others = sorted(set(later["model"].dropna().astype(str)) - chosen_on)
    if not others or not chosen_on:
        return []
    return [[(f"The prompt {chosen} was chosen in Experiment 2 on {', '.join(sorted(chosen_on))} and used with "
              f"{', '.join(others)} afterwards without being compared on them: the best prompt for one model need not be "
              "the best for another.")]]  # fmt: skip


def _value(cells: Cells, name: str, row) -> Number:
    """A claim's evidence as the hypotheses or scorecard table prints it, cited to that cell."""
    return _cited(cells, name, row, "value")


def _cited(cells: Cells, name: str, row, column: str) -> Number:
    """A text cell of the hypotheses or scorecard table (a claim, its evidence, its rule) cited whole: its numbers are the table's."""
    return Number(str(getattr(row, column)), cells.source(name, cells.find(name, id=row.id), column))


def _near_alpha(cells: Cells, name: str, card: pd.DataFrame) -> list[list[Inline]]:
    """The near-alpha note of each verdict :func:`hce.study.claims.near_alpha` finds, its P and alpha cited to the table."""
    items = []
    for row in near_alpha(card).itertuples(index=False):
        key = cells.find(name, id=row.id)
        level = {c: Number(_level(float(getattr(row, c))), cells.source(name, key, c)) for c in ("near_alpha", "alpha")}
        items.append([f"{row.id} was {row.verdict} on ", *p_phrase(cells.p(name, key)), ", within ", level["near_alpha"],
                      " of alpha = ", level["alpha"], f": {NEAR_ALPHA_WHY}."])  # fmt: skip
    return items


def _level(value: float) -> str:
    """A significance level as the report writes it: 0.05, 0.01, 0.005."""
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"


def _exclusions(facts: StudyFacts, cells: Cells) -> list[Inline]:
    """Attempts excluded for an error, per experiment, each count cited to Table 1."""
    errors = int(facts.log["error_flag"].astype(bool).sum())
    if not errors:
        return ["No attempt was excluded for an error; exclusions cannot explain the results."]
    if not cells.has("table1_datasets"):
        return [f"{errors} logged attempts ended in an error and were excluded."]
    parts: list[Inline] = ["Attempts that ended in an error and were excluded: "]
    for i, experiment_id in enumerate(cells.frame("table1_datasets")["experiment_id"]):
        parts += ["; " if i else "", f"{EXPERIMENTS.get(experiment_id, (experiment_id,))[0]}, ",
                  cells.number("table1_datasets", experiment_id, "n_errors"), " of ",
                  cells.number("table1_datasets", experiment_id, "n_attempts")]  # fmt: skip
    return parts + [" (Table 1)."]


def _sample_sizes(cells: Cells) -> list[list[Inline]]:
    """The transcripts per experiment (Table 1) and what the smallest lets a share show at best."""
    if not cells.has("table1_datasets"):
        return []
    table = cells.frame("table1_datasets")
    parts: list[Inline] = ["Transcripts per experiment: "]
    for i, experiment_id in enumerate(table["experiment_id"]):
        parts += ["; " if i else "", f"{EXPERIMENTS.get(experiment_id, (experiment_id,))[0]}, ",
                  cells.number("table1_datasets", experiment_id, "n_items")]  # fmt: skip
    smallest = str(table.loc[table["n_items"].idxmin(), "experiment_id"])
    cited = cells.number("table1_datasets", smallest, "n_items")
    return [[*parts, " (Table 1). With ", cited, " transcripts, even all of them under a threshold has a Wilson 95% CI lower "
             "limit of ", cells.percent("table1_datasets", smallest, "wilson_best_lower"), ": a share target above that "
             "cannot be shown at this size, and the tests have little power for moderate differences."]]  # fmt: skip


#: The experiment whose winner rule chose each carried-forward setting, and its winner table.
_CHOSEN_IN = {"prompt": ("EXP2_PromptOptimization", "exp2_winner"), "model": ("EXP3_ModelComparison", "exp3_winner")}


def _reachable(facts: StudyFacts, cells: Cells, kind: str) -> list[Inline]:
    """Where the winner rule could hardly be met at all (its post-hoc tests' smallest reachable P near or
    above alpha, :func:`hce.study.sensitivity.hardly_reachable`), that P with its pairs and comparisons, cited."""
    experiment_id, name = _CHOSEN_IN[kind]
    frame = cells.frame(name) if cells.has(name) else pd.DataFrame()
    if "smallest_reachable_p" not in frame:
        return []
    alpha = ((facts.settings.get(experiment_id) or {}).get("settings") or {}).get("alpha", 0.05)
    key = str(frame.iloc[0, 0])
    smallest = frame["smallest_reachable_p"].iloc[0]
    if pd.isna(smallest) or not hardly_reachable(float(smallest), float(alpha)):
        return []
    return ["; with ", cells.number(name, key, "n_pairs"), " paired transcripts and ", cells.number(name, key, "n_comparisons"),
            " adjusted comparisons, the smallest P its post hoc tests could reach was ",
            *p_phrase(cells.p(name, key, "smallest_reachable_p")),
            (", at or above alpha: the rule could not be met" if float(smallest) >= float(alpha) else
             ", close to alpha: the rule could hardly be met") + ", so no winner is no evidence that the conditions are alike"]  # fmt: skip


def _strata_sizes(facts: StudyFacts, cells: Cells) -> list[list[Inline]]:
    """The transcripts in each level of each stratum Experiment 5 compared (Success Metric 6), when a level is small,
    each count cited to the strata's pairwise table where it gives that level's n."""
    strata = ((facts.settings.get("EXP5_FinalToolValidation") or {}).get("settings") or {}).get("strata") or []
    rows = facts.rows("EXP5_FinalToolValidation") if facts.ran("EXP5_FinalToolValidation") else pd.DataFrame()
    sizes = {s: rows.drop_duplicates("item_id")[s].value_counts().sort_index() for s in strata if s in rows}
    if not sizes or all(counts.min() >= MIN_PER_LEVEL for counts in sizes.values()):
        return []
    parts: list[Inline] = ["Transcripts per stratum level in Experiment 5: "]
    for i, (stratum, counts) in enumerate(sizes.items()):
        parts.append(f"{'; ' if i else ''}{words(stratum)}: ")
        for j, (level, n) in enumerate(counts.items()):
            parts += [", " if j else "", f"{level} ", _stratum_n(cells, stratum, level, int(n))]
    # the minimum per level is Success Metric 6's rule, cited with it in 4.1: said here in words, not as a bare number
    return [[*parts, (". Levels below the minimum per level of Success Metric 6's rule give the strata tests little power: "
                      "finding no detrimental difference there is no evidence of none.")]]  # fmt: skip


def _stratum_n(cells: Cells, stratum: str, level: object, n: int) -> Inline:
    """A stratum level's transcripts, cited to ``exp5_fairness_pairwise`` (``n_a``/``n_b``) when that table counts the same."""
    name = "exp5_fairness_pairwise"
    if cells.has(name):
        for side in ("a", "b"):
            keys = cells.rows(name, stratum=stratum, **{side: level})
            if keys and cells.value(name, keys[0], f"n_{side}") == n:
                return cells.number(name, keys[0], f"n_{side}")
    return str(n)


def _targets(facts: StudyFacts, cells: Cells) -> list[Inline]:
    """Which scores have a reference to be accurate against: only synthetic transcripts with targets do (their count
    cited to H1c's table, which compares the scores with those targets, where it counts the same)."""
    judged = [EXPERIMENTS[e][0] for e in ("EXP2_PromptOptimization", "EXP3_ModelComparison", "EXP5_FinalToolValidation")
              if facts.ran(e)]  # fmt: skip
    real = f"{_listed(judged)} measure consistency, not accuracy" if judged else "no experiment scored real transcripts"
    if facts.ran("EXP1_BaselineRubricUtility") and len(facts.synthetic):
        n: Inline = str(len(facts.synthetic))
        if cells.has("exp1_h1c_difference") and cells.value("exp1_h1c_difference", "[1]", "n_items") == len(facts.synthetic):
            n = cells.number("exp1_h1c_difference", "[1]", "n_items")
        return [f"Real transcripts have no reference scores: {real}; only Experiment 1's ", n, " synthetic transcripts have targets."]
    return [f"No transcript had a reference score (no synthetic targets in the study folder): {real}, and no experiment measures accuracy."]


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _drift(facts: StudyFacts, cells: Cells) -> list[Inline]:
    """Model drift as the logs show it: the ``model_version`` of each model's first and last call, over the span
    of the attempts' timestamps (Table 1's first and last call, cited)."""
    versions = facts.versions()
    if versions.empty:
        return ["No call returned a model version, so model drift cannot be assessed from the logs."]
    changed = versions[(versions["n_versions"] > 1) | (versions["first_version"] != versions["last_version"])]
    span: list[Inline] = []
    table = cells.frame("table1_datasets") if cells.has("table1_datasets") else pd.DataFrame()
    if {"first_call", "last_call"} <= set(table) and table["first_call"].notna().any():
        first = str(table.loc[table["first_call"].astype(str).idxmin(), "experiment_id"])
        last = str(table.loc[table["last_call"].astype(str).idxmax(), "experiment_id"])
        span = [" (the attempt logs' timestamps, from ", Number(str(cells.value("table1_datasets", first, "first_call")),
                cells.source("table1_datasets", first, "first_call")), " to ",
                Number(str(cells.value("table1_datasets", last, "last_call")), cells.source("table1_datasets", last, "last_call")),
                " UTC, Table 1)"]  # fmt: skip
    if changed.empty:
        return ["Each model returned one model version for all its calls", *span, "; no drift was seen within the study, "
                "but the same names may answer differently later."]  # fmt: skip
    moved = "; ".join(f"{r.model}: {r.first_version} first, {r.last_version} last ({r.n_versions} versions)" for r in changed.itertuples())
    return ["Model drift: the model version returned changed during the study", *span, f": {moved}."]


def discussion(facts: StudyFacts, cells: Cells) -> list[Block]:
    """The Discussion (4.1-4.7) and Conclusions.

    Examples
    --------
    >>> [b.text for b in discussion(facts, cells) if hasattr(b, "level")][:3]  # doctest: +SKIP
    ['Discussion', '4.1 Summary of Key Findings', '4.2 Interpretation of Findings']
    """
    def prompt(text: str) -> Paragraph:
        return Paragraph([Placeholder(text)])

    conclusions: list[Inline] = ["This run used a simulated judge; it demonstrates the analysis plan, not the models. "
                                 if facts.simulated else "", Placeholder("the main takeaway regarding the assessment framework")]
    return [
        Heading(1, "Discussion"), *_summary(facts, cells),
        Heading(2, "4.2 Interpretation of Findings"),
        prompt("4.2 why certain strategies or models performed better; implications of the reasoning patterns"),
        Heading(2, "4.3 Strengths of the Study"), prompt("4.3 methodological rigour, systematic comparisons"),
        *_limitations(facts, cells),
        Heading(2, "4.5 Comparison With Existing Literature"), prompt("4.5 comparison with existing literature, if any"),
        Heading(2, "4.6 Potential Applications and Use Cases"), prompt("4.6 potential applications and use cases"),
        Heading(2, "4.7 Future Directions"),
        prompt("4.7 future directions: human expert validation, real-world implementation studies, multilingual adaptation"),
        Heading(1, "Conclusions"), Paragraph(conclusions),
    ]  # fmt: skip
