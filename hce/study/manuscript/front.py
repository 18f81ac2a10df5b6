"""Title, structured abstract, Key Points and Introduction (seed 000 section 9).

The abstract's numbers are cited table cells, as in the Results; what only the authors can
write (importance, meaning, the Introduction) is a visible placeholder carrying the outline's
prompt. A simulated study says so in the title and the abstract.

Example
-------
>>> from hce.study.manuscript.facts import StudyFacts
>>> from hce.study.manuscript.cells import Cells
>>> facts, cells = StudyFacts.read("reports/demo/study/study_output"), Cells("reports/demo")  # doctest: +SKIP
>>> blocks = key_points(facts, cells) + abstract(facts, cells) + introduction()  # doctest: +SKIP
"""

from __future__ import annotations

from hce.report.manuscript.model import (
    Block,
    Bullets,
    Heading,
    Inline,
    Paragraph,
    Placeholder,
)
from hce.study.manuscript.cells import Cells, p_phrase
from hce.study.manuscript.facts import EXPERIMENTS, StudyFacts

#: JAMA's limit for a structured abstract of an Original Investigation.
ABSTRACT_WORDS = 350
DEFAULT_TITLE = ("A Systematic Evaluation of Large Language Model Configurations for Rubric-Based Assessment of "
                 "Patient Health Communication Proficiency")  # fmt: skip
SIMULATED_TAG = "(Simulated Judge, Not Real Model Output)"
SIMULATED_DESIGN = ("All scores in this draft were produced by hce's simulated judge (hce sim-server), a generative "
                    "model with known truth, not by the LLMs named; they test the pipeline, not the models.")  # fmt: skip


def title_of(given: str | None, *, simulated: bool) -> str:
    """The title given (argument, else the study's ``manuscript.title``) or the outline's; tagged when simulated.

    Examples
    --------
    >>> title_of("Judging Judges", simulated=True)
    'Judging Judges (Simulated Judge, Not Real Model Output)'
    >>> title_of("Judging Judges", simulated=False)
    'Judging Judges'
    """
    title = given or DEFAULT_TITLE
    return f"{title} {SIMULATED_TAG}" if simulated and "simulated" not in title.lower() else title


def _sets(facts: StudyFacts, cells: Cells) -> list[Inline]:
    """``transcripts of Set A (n = 8; Experiment 2), ...`` from Table 1's item counts."""
    parts: list[Inline] = []
    by_experiment = {v: k for k, v in (facts.partition.get("experiments") or {}).items()}
    for experiment_id, (name, _) in EXPERIMENTS.items():
        if experiment_id == "EXP4_ReasoningAnalysis" or not facts.ran(experiment_id):
            continue
        what = "synthetic transcripts" if experiment_id.startswith("EXP1") else f"Set {by_experiment.get(experiment_id, '?')}"
        parts += [", " if parts else "", f"{what} (n = ", cells.number("table1_datasets", experiment_id, "n_items"),
                  f"; {name})"]  # fmt: skip
    return parts


def abstract(facts: StudyFacts, cells: Cells) -> list[Block]:
    """The structured abstract (JAMA headings, role ``"abstract"``); every number a cited table cell.

    Examples
    --------
    >>> [p.parts[0][:10] for p in abstract(facts, cells) if hasattr(p, "parts")]  # doctest: +SKIP
    ['Importance', 'Objective:', 'Design, Se', 'Main Outco', 'Results: ', 'Conclusion']
    """
    sources = ", ".join(facts.partition.get("sources") or []) or "the study corpus"
    design: list[Inline] = [
        ("Design, Setting, and Participants: A sequence of prespecified experiments in which LLM judges scored "
        f"transcripts ({sources}) against the Patient Health Communication Rubric v5.0, each transcript repeatedly: "),
        *_sets(facts, cells), ". "]  # fmt: skip
    missing = [name for experiment_id, (name, _) in EXPERIMENTS.items() if not facts.ran(experiment_id)]
    if missing:
        design.append(f"{', '.join(missing)} {'was' if len(missing) == 1 else 'were'} not run. ")
    if facts.simulated:
        design.append(SIMULATED_DESIGN)
    blocks: list[Block] = [
        Heading(1, "Abstract"),
        Paragraph([("Importance: Assessment of patient health communication is often subjective and resource-intensive; "
                   "LLMs used as judges could make it scalable if their scores are consistent.")], role="abstract"),
        Paragraph([("Objective: To identify the prompt strategy and LLM that apply the Patient Health Communication "
                   "Rubric v5.0 most consistently, and to benchmark the consistency of the resulting tool.")], role="abstract"),
        Paragraph(design, role="abstract"),
        Paragraph([("Main Outcomes and Measures: The SD of repeated total scores (range 5-20) per transcript; the mean "
                   "absolute error and correlation against synthetic target scores; the share of held-out transcripts "
                   "under prespecified SD thresholds.")], role="abstract"),
        Paragraph(["Results: ", *_abstract_results(facts, cells)], role="abstract"),
        Paragraph(["Conclusions and Relevance: ",
                   "This run used a simulated judge, so it supports no conclusion about the LLMs named; it shows the "
                   "analysis plan running end to end. " if facts.simulated else "",
                   Placeholder("conclusions and relevance, in 1-2 sentences, from the findings above")], role="abstract"),
    ]  # fmt: skip
    return blocks


def _abstract_results(facts: StudyFacts, cells: Cells) -> list[Inline]:
    parts: list[Inline] = []
    if cells.has("cost_by_experiment"):
        parts += ["The study logged ", cells.number("cost_by_experiment", "(all)", "attempts"), " scoring attempts. "]
    if facts.ran("EXP1_BaselineRubricUtility") and cells.has("exp1_sd_summary"):
        settings = facts.settings["EXP1_BaselineRubricUtility"]["settings"]
        g1, g2 = settings["non_rubric"], settings["rubric"]
        h1a = cells.find("exp1_h1a", a=g2, b=g1)
        r = cells.find("exp1_success_metric_3", prompt_id=g2, method=lambda m: str(m).startswith("Pearson"))
        parts += ["On synthetic transcripts, the median SD of total scores was ", cells.number("exp1_sd_summary", g2, "median"),
                  " with the rubric-based prompt vs ", cells.number("exp1_sd_summary", g1, "median"), " without it (",
                  *p_phrase(cells.p("exp1_h1a", h1a)), f"; {cells.claim('H1a', rule=False)})",
                  "; mean rubric-based totals correlated with the targets with r = ", *cells.interval("exp1_success_metric_3", r),
                  ". "]  # fmt: skip
    for experiment_id, kind, what in (("EXP2_PromptOptimization", "prompt", "prompt strategies"),
                                      ("EXP3_ModelComparison", "model", "LLMs")):  # fmt: skip
        prefix = experiment_id.split("_")[0].lower()
        if not facts.ran(experiment_id) or not cells.has(f"{prefix}_friedman"):
            continue
        key = cells.find(f"{prefix}_friedman")
        parts += ["Across ", cells.number("table1_datasets", experiment_id, "n_conditions"), (f" {what}, the Friedman test "
                  "of SDs gave "), *p_phrase(cells.p(f"{prefix}_friedman", key)),
                  # W with its interval, so it has the decimals the Results give it (one statistic, one rounding)
                  " (Kendall W = ", *cells.interval(f"{prefix}_friedman", key, estimate="effect_size"), ")"]  # fmt: skip
        parts.append(f"; {cells.claim('H2' if kind == 'prompt' else 'H3', rule=False)}")
        decision = facts.decisions.get(kind)
        if decision:
            route = "by the prespecified winner rule" if decision.get("source") == "rule" else \
                "as the lowest-SD fallback (no condition satisfied the prespecified winner rule)" \
                if decision.get("source") == "lowest_sd_fallback" else "as fixed by the researchers"  # fmt: skip
            parts.append(f"; {decision['choice']} was carried forward {route}")
        parts.append(". ")
    if facts.ran("EXP5_FinalToolValidation") and cells.has("exp5_success_metric_2"):
        parts += ["With the final configuration, ", *cells.interval("exp5_success_metric_2", "both", percent=True),
                  " of ", cells.number("exp5_success_metric_2", "both", "n_items"),
                  f" held-out transcripts had every SD within its threshold; {cells.claim('SM2', rule=False)}."]  # fmt: skip
    return parts or ["No experiment's results are in the study folder."]


def key_points(facts: StudyFacts, cells: Cells) -> list[Block]:
    """Key Points (Question, Findings, Meaning): findings from cited cells, meaning left to the authors.

    Examples
    --------
    >>> [item[0].split(":")[0] for item in key_points(facts, cells)[1].items]  # doctest: +SKIP
    ['Question', 'Findings', 'Meaning']
    """
    findings: list[Inline] = ["Findings: "]
    if facts.simulated:
        findings.append("In this dry run with a simulated judge (not real model output), ")
    chosen = [f"{kind} {d['choice']}" for kind, d in facts.decisions.items() if kind in ("prompt", "model")]
    if chosen:
        findings.append(f"the study carried forward {' and '.join(chosen)}")
    if facts.ran("EXP5_FinalToolValidation") and cells.has("exp5_success_metric_2"):
        findings += [", and " if chosen else "", *cells.interval("exp5_success_metric_2", "both", percent=True),
                     f" of held-out transcripts had every SD within the prespecified thresholds ({cells.claim('SM2', rule=False)})"]  # fmt: skip
    findings.append(".")
    meaning: list[Inline] = ["Meaning: "]
    if facts.simulated:
        meaning.append("None yet for the models named (simulated scores). ")
    meaning.append(Placeholder("what the findings mean for assessing patient health communication, in one sentence"))
    return [Heading(1, "Key Points"), Bullets([
        [("Question: Which prompt strategy and large language model apply the Patient Health Communication Rubric v5.0 "
         "most consistently, and how consistent is the resulting assessment tool?")],
        findings, meaning], role="note")]  # fmt: skip


def introduction() -> list[Block]:
    """The Introduction as placeholders carrying the outline's prompts (seed 000 section 9, 1.1-1.2).

    Examples
    --------
    >>> [type(block).__name__ for block in introduction()]
    ['Heading', 'Paragraph', 'Paragraph']
    """
    return [
        Heading(1, "Introduction"),
        Paragraph([Placeholder("1.1 Background on the importance of health communication and the challenges in assessing it")]),
        Paragraph([Placeholder("1.2 Potential of LLMs, the need for a rigorous methodology, and the statement of the project aim")]),
    ]
