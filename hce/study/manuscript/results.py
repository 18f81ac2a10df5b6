"""Results 3.1-3.5 (seed 000 section 9): every estimate, interval and p-value a cited table cell.

Each paragraph reads the study report's saved tables through :class:`~.cells.Cells`; an
experiment whose tables are absent is stated as not run, with no number. Tables 1-3 and
Figures 1-5 are placed where the text first refers to them.

Example
-------
>>> doc = results(facts, cells, figures_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import re

from dataclasses import replace
from pathlib import Path

from hce.report.manuscript.model import (
    Block,
    FigureBlock,
    Heading,
    Inline,
    Number,
    Paragraph,
    TableBlock,
)
from hce.report.tables import Table, words
from hce.study.claims import rank_sums_as_counts
from hce.study.manuscript.cells import TABLES as TABLES_DIR, Cells, p_phrase
from hce.study.manuscript.facts import EXPERIMENTS, StudyFacts

#: The study report's figures the outline places (seed 000 section 9), by file stem. They are numbered
#: in the order the text first shows them (JAMA), when the Results are laid out (:func:`_numbered`).
FIGURES = {
    "exp1_score_histograms": ("EXP1_BaselineRubricUtility",
                              ("Total scores of the non-rubric (G1) and rubric-based (G2) prompts and the synthetic "
                               "targets (Experiment 1)")),
    "exp2_sd_by_condition": ("EXP2_PromptOptimization",
                             "Per-transcript SD of repeated total scores for each prompt strategy (Experiment 2)"),
    "exp3_sd_by_condition": ("EXP3_ModelComparison", "Per-transcript SD of repeated total scores for each LLM (Experiment 3)"),
    "exp5_sd_histogram": ("EXP5_FinalToolValidation",
                          "Distribution of per-transcript SDs of the total score for the final tool (Experiment 5)"),
    "exp5_reliability_diagram": ("EXP5_FinalToolValidation",
                                 ("Reliability diagrams of the judge's token-probability confidence, temperature-adjusted "
                                  "and as returned (raw), against agreement with a repeat (Experiment 5)")),
}  # fmt: skip
#: The study report's tables the outline names: file, caption.
TABLES = {
    "Table 1": ("table1_datasets", "Attempts, transcripts, conditions, errors and total scores per experiment"),
    "Table 2": ("table2_key_results", "Key statistical results for the prompt and model comparisons"),
    "Table 3": ("table3_reasoning_codes", "Reasoning segments per code and model: segments with the code / segments coded for the model (%) (Experiment 4)"),
}
SIMULATED_RESULTS = ("Every score below was produced by hce's simulated judge (hce sim-server), not by the models "
                     "named: the numbers test the pipeline and its analyses, and say nothing about those models.")
_INTERVALS = "Estimates are followed by their 95% CIs; P values are 2-sided."


def _absent(facts: StudyFacts, experiment_id: str) -> Paragraph:
    """Why an experiment has no results here: not run (no log), or run but its analysis plan could not be computed."""
    name = EXPERIMENTS[experiment_id][0]
    if facts.ran(experiment_id):
        return Paragraph([(f"{name} ran, but its analysis plan could not be computed on its log (the study report says "
                          "why), so nothing is reported.")])  # fmt: skip
    return Paragraph([f"{name} was not run: the study folder holds no results for it, so nothing is reported."])


def _figure(stem: str, figures: Path, facts: StudyFacts) -> Block:
    """A figure of the study report in place (numbered later), or a sentence saying why it is absent."""
    experiment_id, caption = FIGURES[stem]
    path = figures / f"{stem}.png"
    if path.is_file():
        return FigureBlock(path, "", caption)
    reason = "was not run" if not facts.ran(experiment_id) else "has no data for it in the study report"
    return Paragraph([f"The figure of the {caption[0].lower()}{caption[1:]} is not shown: {EXPERIMENTS[experiment_id][0]} {reason}."],
                     role="note")  # fmt: skip


def _numbered(blocks: list[Block]) -> list[Block]:
    """The figures numbered 1, 2, ... in the order they appear (JAMA: in order of first mention)."""
    figures = iter(range(1, len(blocks) + 1))
    return [replace(b, label=f"Figure {next(figures)}") if isinstance(b, FigureBlock) else b for b in blocks]


def _table(label: str, cells: Cells) -> Block | None:
    """One of Tables 1-3 from the study report's CSV (None when the report has no such table)."""
    name, caption = TABLES[label]
    if not cells.has(name):
        return None
    frame = cells.frame(name)
    if "experiment_id" in frame:  # labels only, for a narrow column: "Experiment 2", not "EXP2_PromptOptimization"
        frame = frame.assign(experiment_id=frame["experiment_id"].map(lambda e: EXPERIMENTS.get(e, (e,))[0]))
        frame = frame.rename(columns={"experiment_id": "experiment"})
    # every number of the table traces to its cell: the CSV it comes from, at the same row and column
    source = f"Source: {TABLES_DIR}/{name}.csv (the study report's table; each number at its row and column)."
    return TableBlock(Table(rank_sums_as_counts(frame), caption, name, readable=("dimension", "code"), notes=[source]), label)


def _median_iqr(cells: Cells, name: str, key: str) -> list[Inline]:
    median, q1, q3 = cells.aligned([(name, key, c) for c in ("median", "q1", "q3")])
    return [median, " (IQR ", q1, "-", q3, ")"]


def _test(cells: Cells, name: str, key: str, *, statistic: str, effect: str) -> list[Inline]:
    """``statistic = s; P = p; effect = e (95% CI, l-h)`` from one row of a test table (a missing
    interval "not estimable" with the reason its method column states: every pair ordered one way, |r| = 1)."""
    head = [f"{statistic} = ", cells.number(name, key, "statistic"), "; ", *p_phrase(cells.p(name, key)), f"; {effect} = "]
    return [*head, *cells.interval(name, key, estimate="effect_size")]


def _paired(cells: Cells, g1: str, g2: str) -> list[Inline]:
    """H1a's sensitivity analysis: the same SDs paired by transcript (both prompts scored every transcript)."""
    if not cells.has("exp1_h1a_paired"):
        return ["no paired sensitivity analysis in the study report"]
    key = cells.find("exp1_h1a_paired", a=g2, b=g1)
    return ["sensitivity analysis pairing the SDs by transcript, Wilcoxon signed-rank test: ",
            *_test(cells, "exp1_h1a_paired", key, statistic="V", effect="matched-pairs rank-biserial r")]


def _exp1(facts: StudyFacts, cells: Cells, figures: Path) -> list[Block]:
    blocks: list[Block] = [Heading(2, "3.1 Baseline Rubric Utility and Synthetic Transcript Performance (Experiment 1)")]
    if not (facts.ran("EXP1_BaselineRubricUtility") and cells.has("exp1_h1a")):
        return blocks + [_absent(facts, "EXP1_BaselineRubricUtility")]
    g1, g2 = (facts.settings["EXP1_BaselineRubricUtility"]["settings"][k] for k in ("non_rubric", "rubric"))
    sd, mae = "exp1_sd_summary", "exp1_mae_summary"
    h1a = cells.find("exp1_h1a", a=g2, b=g1)
    h1b = cells.find("exp1_h1b", a=g2, b=g1)
    r = cells.find("exp1_success_metric_3", prompt_id=g2, method=lambda m: str(m).startswith("Pearson"))
    kl = {p: cells.find("exp1_h1c", a=p, b="target") for p in (g1, g2)}
    blocks.append(Paragraph([
        "Across ", cells.number("table1_datasets", "EXP1_BaselineRubricUtility", "n_items"), (" synthetic transcripts, the "
        "median per-transcript SD of repeated total scores was "), *_median_iqr(cells, sd, g2),
        f" with the rubric-based prompt (G2, {g2}) and ", *_median_iqr(cells, sd, g1), (f" with the non-rubric prompt "
        f"(G1, {g1}) (H1a, Mann-Whitney U test: "), *_test(cells, "exp1_h1a", h1a, statistic="U", effect="rank-biserial r"),
        "; ", *_paired(cells, g1, g2), f"). {cells.claim('H1a')}. ",
        "The median absolute error of the mean total score from the target total was ", *_median_iqr(cells, mae, g2),
        " for G2 and ", *_median_iqr(cells, mae, g1), " for G1 (H1b, Wilcoxon signed-rank test: ",
        *_test(cells, "exp1_h1b", h1b, statistic="V", effect="matched-pairs rank-biserial r"),
        f"). {cells.claim('H1b')}. ",
        "The Kullback-Leibler divergence of G2's total-score distribution from the targets', D(target ‖ G2), was ", cells.number("exp1_h1c", kl[g2], "estimate"), " nats and D(target ‖ G1) was ",
        cells.number("exp1_h1c", kl[g1], "estimate"), " nats", *_kl_difference(cells), f"; {cells.claim('H1c')}. ",
        "The mean G2 total correlated with the target total with Pearson r = ",
        *cells.interval("exp1_success_metric_3", r), " (Success Metric 3 threshold: r of at least ",
        cells.number("exp1_success_metric_3", r, "threshold"), f"); {cells.claim('SM3')}. " + _INTERVALS,
    ]))  # fmt: skip
    blocks.append(_figure("exp1_score_histograms", figures, facts))
    return blocks


def _comparison(facts: StudyFacts, cells: Cells, experiment_id: str, kind: str, label: str) -> list[Inline]:
    """Friedman test, the conditions' median SDs and the decision handed on (Exp 2: prompt, Exp 3: model)."""
    prefix = experiment_id.split("_")[0].lower()
    column = "prompt_id" if kind == "prompt" else "model"
    summary = f"{prefix}_sd_summary"
    parts: list[Inline] = [
        "The ", cells.number("table1_datasets", experiment_id, "n_conditions"), f" {label} were compared on ",
        cells.number("table1_datasets", experiment_id, "n_items"), " transcripts (",
        cells.number("table1_datasets", experiment_id, "n_attempts"), (" attempts). Median per-transcript SDs of the total "
        "score were ")]  # fmt: skip
    conditions = cells.frame(summary)[column].astype(str).tolist()
    for i, condition in enumerate(conditions):
        key = cells.find(summary, **{column: condition})
        parts += [f"{condition}, ", *_median_iqr(cells, summary, key), "; " if i < len(conditions) - 1 else ". "]
    friedman = cells.find(f"{prefix}_friedman")
    parts += ["The Friedman test gave χ²(", cells.number(f"{prefix}_friedman", friedman, "df1"), ") = ",
              cells.statistic(f"{prefix}_friedman", friedman), "; ", *p_phrase(cells.p(f"{prefix}_friedman", friedman)),
              "; Kendall W = ", *cells.interval(f"{prefix}_friedman", friedman, estimate="effect_size"), ". "]  # fmt: skip
    parts += _tie_check(cells, "H2" if kind == "prompt" else "H3")
    parts += _posthoc(cells, f"{prefix}_posthoc")
    parts.append(f"{cells.claim('H2' if kind == 'prompt' else 'H3')}. ")
    decision = facts.decisions.get(kind)
    if decision:
        parts.append(_decision_sentence(kind, decision))
    return parts


def _tie_check(cells: Cells, claim_id: str) -> list[Inline]:
    """Success Metric 1's tie check of one Friedman test: the statistic without the tie correction, and what it does to P.

    Every number and the words on alpha are cells of the study report's ``sm1_tie_sensitivity``
    (``hce.study.sensitivity``), cited there.
    """
    name = "sm1_tie_sensitivity"
    if not cells.has(name) or claim_id not in set(cells.frame(name)["id"].astype(str)):
        return []
    key = cells.find(name, id=claim_id)
    return ["Without the tie correction (", cells.number(name, key, "n_tied_blocks"), " of ", cells.number(name, key, "n"),
            " transcripts hold tied SDs), χ²(", cells.number(name, key, "df1"), ") = ",
            cells.statistic(name, key, "statistic_uncorrected"), "; ", *p_phrase(cells.p(name, key, "p_uncorrected")),
            " (the sensitivity analysis of Success Metric 1: ",
            Number(str(cells.value(name, key, "sensitivity")), cells.source(name, key, "sensitivity")),
            f"; Source: {TABLES_DIR}/{name}.csv). "]  # fmt: skip


def _posthoc(cells: Cells, name: str) -> list[Inline]:
    """Every post hoc pair the Methods announce, with its adjusted P (the winner rule and H2 rest on them)."""
    if not cells.has(name):
        return []
    frame = cells.frame(name)
    adjustment = str(frame["adjustment"].iloc[0]).capitalize() if "adjustment" in frame and len(frame) else "Unadjusted"
    parts: list[Inline] = [f"Post hoc comparisons ({frame['method'].iloc[0].split(';')[0]}, {adjustment}-adjusted P): "]
    for i, row in enumerate(frame.itertuples(index=False)):
        key = cells.find(name, a=row.a, b=row.b)
        parts += [f"{row.a} vs {row.b}, ", *p_phrase(cells.p(name, key, "p_adjusted")), "; " if i < len(frame) - 1 else ". "]
    return parts


def _strata(cells: Cells) -> list[Inline]:
    """Success Metric 6: the strata tests the Methods announce, each stratum and measure with its adjusted P."""
    name = "exp5_fairness_omnibus"
    if not cells.has(name):
        return []
    frame = cells.frame(name)
    parts: list[Inline] = [" Across the demographic strata (Kruskal-Wallis tests, Holm-adjusted P): "]
    for i, row in enumerate(frame.itertuples(index=False)):
        key = cells.find(name, stratum=row.stratum, measure=row.measure)
        parts += [f"{words(row.stratum)} ({'mean total' if row.measure == 'mean' else 'total-score SD'}), H = ",
                  cells.statistic(name, key), ", ", *p_phrase(cells.p(name, key, "p_adjusted")),
                  "; " if i < len(frame) - 1 else f"; {cells.claim('SM6')}."]  # fmt: skip
    return parts


def _decision_sentence(kind: str, decision: dict) -> str:
    """What the study handed on and by which route (decisions.json), stated as the run recorded it."""
    source = decision.get("source")
    if source == "rule":
        how = "it met the prespecified winner rule (Methods 2.5)"
    elif source == "lowest_sd_fallback":
        how = ("no condition met the prespecified winner rule (Methods 2.5), so, as the study's configuration allowed "
               "(when no condition wins, take the lowest SD), the condition with the lowest median SD was taken")
    elif source == "pin":
        how = "the researchers fixed it in the configuration (pin), not the data"
    else:
        how = f"source recorded as {source!r}"
    return f"The {kind} carried forward was {decision['choice']}: {how}."


def _exp2(facts: StudyFacts, cells: Cells, figures: Path) -> list[Block]:
    blocks: list[Block] = [Heading(2, "3.2 Prompt Strategy Optimization (Experiment 2)")]
    if not (facts.ran("EXP2_PromptOptimization") and cells.has("exp2_friedman")):
        return blocks + [_absent(facts, "EXP2_PromptOptimization")]
    blocks.append(Paragraph(_comparison(facts, cells, "EXP2_PromptOptimization", "prompt", "prompt strategies")))
    blocks.append(_figure("exp2_sd_by_condition", figures, facts))
    return blocks


def _exp3(facts: StudyFacts, cells: Cells, figures: Path) -> list[Block]:
    blocks: list[Block] = [Heading(2, "3.3 LLM Architecture Comparison (Experiment 3)")]
    if not (facts.ran("EXP3_ModelComparison") and cells.has("exp3_friedman")):
        return blocks + [_absent(facts, "EXP3_ModelComparison")]
    parts = _comparison(facts, cells, "EXP3_ModelComparison", "model", "LLMs")
    if cells.has("exp3_mean_friedman"):
        key = cells.find("exp3_mean_friedman")
        parts += [" Mean total scores compared across models gave Friedman χ²(", cells.number("exp3_mean_friedman", key, "df1"),
                  ") = ", cells.statistic("exp3_mean_friedman", key), "; ",
                  *p_phrase(cells.p("exp3_mean_friedman", key)), " (systematic differences in level, not in consistency)."]  # fmt: skip
    parts += _exp3_sensitivity(cells)
    blocks.append(Paragraph(parts))
    blocks.append(_figure("exp3_sd_by_condition", figures, facts))
    key_table = _table("Table 2", cells)
    if key_table is not None:
        blocks.append(key_table)
    return blocks


def _kappa_basis(cells: Cells, key: str, row) -> list[Inline]:
    """What a kappa rests on: its segments, the replies and transcripts they come from, and the interval method."""
    if "n_replies" not in row:  # a study folder written before the replies were counted
        return [cells.number("exp4_kappa_rounds", key, "n"), " segments"]
    interval = "percentile bootstrap CI over replies" if "bootstrap" in str(row["ci_method"]) else "Wald CI"
    return [cells.number("exp4_kappa_rounds", key, "n"), " segments from ", cells.number("exp4_kappa_rounds", key, "n_replies"),
            " replies to ", cells.number("exp4_kappa_rounds", key, "n_transcripts"), f" transcripts; {interval}"]


def _calibration(cells: Cells) -> list[Inline]:
    """Raw and temperature-adjusted confidence side by side (ECE and Brier score of each): neither reported alone.

    The adjusted confidence is, by construction, the chance that a repeat gives the same score,
    so its small error against that outcome says little; the raw logprobs are what a reader of
    the API gets, and their error is reported with it.
    """
    name = "exp5_calibration"
    if not cells.has(name):
        return []
    views = [v for v in ("raw", "adjusted") if cells.rows(name, confidence=v, outcome="agrees_with_repeat", metric="ece")]
    parts: list[Inline] = [" Against agreement with a repeat of the transcript, the expected calibration error and Brier score of "
                           "the token-probability confidence were "]
    for i, view in enumerate(views):
        ece, brier = (cells.find(name, confidence=view, outcome="agrees_with_repeat", metric=m) for m in ("ece", "brier"))
        parts += [f"{'as returned (raw)' if view == 'raw' else 'temperature-adjusted'}, ECE ", *cells.interval(name, ece),
                  " and Brier ", *cells.interval(name, brier), "; " if i < len(views) - 1 else ""]  # fmt: skip
    return parts + [(" (the reliability diagrams below show both; the adjusted confidence is the probability that a repeat "
                     "gives the same score, so it is calibrated for that outcome by construction).")]


def _kl_difference(cells: Cells) -> list[Inline]:
    """H1c's evidence: the difference of the divergences with its cluster-bootstrap interval (absent from older reports)."""
    if not cells.has("exp1_h1c_difference"):
        return []
    return [" (difference ", *cells.interval("exp1_h1c_difference", "[1]"), ", cluster bootstrap over transcripts)"]


def _exp3_sensitivity(cells: Cells) -> list[Inline]:
    """What the Methods announce for Experiment 3 beyond the Friedman test: the RM-ANOVA and latency and cost."""
    parts: list[Inline] = []
    if cells.has("exp3_rm_anova"):
        key = cells.find("exp3_rm_anova")
        parts += [" In the sensitivity analysis, a repeated-measures ANOVA of the transformed SDs gave F(",
                  cells.number("exp3_rm_anova", key, "df1"), ", ", cells.number("exp3_rm_anova", key, "df2"), ") = ",
                  cells.statistic("exp3_rm_anova", key), "; Greenhouse-Geisser ε = ", cells.number("exp3_rm_anova", key, "epsilon"),
                  ", ", *p_phrase(cells.p("exp3_rm_anova", key, "p_gg")),
                  "; partial η² = ", *cells.interval("exp3_rm_anova", key, estimate="effect_size"), " on the corrected df."]  # fmt: skip
        if "assumptions" in cells.frame("exp3_rm_anova"):  # a report written before the checks were printed lacks them
            # in words here; the checks' P values are the cells of the table (a sentence cites no uncited number)
            checks = re.sub(r"\s*\([^()]*\)", "", str(cells.value("exp3_rm_anova", key, "assumptions")))
            parts.append(f" Its assumptions (Shapiro-Wilk, Mauchly, each condition's variance; their P values in the RM-ANOVA table of the supplement): {checks}.")
    if cells.has("exp3_cost_latency"):
        frame = cells.frame("exp3_cost_latency")
        # the study report leaves out the latency of simulated calls (the simulator's time, not a model's)
        timed, priced = "median_latency_s" in frame, "mean_cost_usd" in frame
        if timed or priced:
            parts.append(" " + " and ".join(w for w, on in (("Median latency", timed), ("mean cost", priced)) if on).capitalize()
                         + (" per call were " if timed and priced else " per call was "))
        for i, model in enumerate(frame["model"].astype(str) if timed or priced else []):
            key = cells.find("exp3_cost_latency", model=model)
            parts += [f"{model}, ", *([cells.number("exp3_cost_latency", key, "median_latency_s"), " s"] if timed else []),
                      " and " if timed and priced else "",
                      *(["US $", cells.number("exp3_cost_latency", key, "mean_cost_usd")] if priced else []),
                      "; " if i < len(frame) - 1 else "."]  # fmt: skip
    return parts


def _exp4(facts: StudyFacts, cells: Cells) -> list[Block]:
    blocks: list[Block] = [Heading(2, "3.4 Qualitative Analysis of LLM Reasoning (Experiment 4)")]
    if not (facts.ran("EXP4_ReasoningAnalysis") and cells.has("exp4_tests")):
        return blocks + [_absent(facts, "EXP4_ReasoningAnalysis")]
    first = cells.rows("exp4_tests")[0]
    frame = cells.frame("exp4_tests")
    adjustment = str((facts.settings.get("EXP4_ReasoningAnalysis") or {}).get("settings", {}).get("p_adjust_method", "holm"))
    nested = "p_cluster_adjusted" in frame
    how = (f"permuting the models among each transcript's whole replies, because a reply's segments are not independent; "
           f"{adjustment.capitalize()}-adjusted P" if nested else f"{adjustment.capitalize()}-adjusted P")
    parts: list[Inline] = [
        "Of ", cells.number("exp4_tests", first, "n"), " coded reasoning segments",
        *([" from ", cells.number("exp4_tests", first, "n_replies"), " replies"] if nested else []),
        f" (Table 3), the distribution of codes across models compared as follows ({how}): "]  # fmt: skip
    dimensions = frame["code"].astype(str).tolist()
    keys = [cells.find("exp4_tests", code=dimension) for dimension in dimensions]
    decimals = cells.interval_decimals("exp4_tests", keys, estimate="effect_size")  # one V, one number of decimals
    for i, (dimension, key) in enumerate(zip(dimensions, keys)):
        parts += [f"{dimension.replace('_', ' ')}, Cramér V = ",
                  *cells.interval("exp4_tests", key, estimate="effect_size", decimals=decimals),
                  ", ", *p_phrase(cells.p("exp4_tests", key, "p_cluster_adjusted" if nested else "p_adjusted")),
                  "; " if i < len(dimensions) - 1 else ". "]  # fmt: skip
    if cells.has("exp4_kappa_rounds"):
        rounds = cells.frame("exp4_kappa_rounds")
        last = rounds[rounds["round"] == rounds["round"].max()]
        weakest = last.loc[last["ci_low"].idxmin()]  # the rule reads the lower limits
        low = cells.find("exp4_kappa_rounds", round=weakest["round"], dimension=weakest["dimension"])
        reached = "met" if bool((last["verdict"] == "met").all()) else "did not all meet"
        parts += ["After refinement round ", cells.number("exp4_kappa_rounds", low, "round"), (", the inter-coder "
                  "Cohen κ with the lowest 95% CI lower limit was "), *cells.interval("exp4_kappa_rounds", low),
                  f" ({weakest['dimension'].replace('_', ' ')}; ", *_kappa_basis(cells, low, weakest),
                  f"); the dimensions {reached} the prespecified κ target."]  # fmt: skip
    blocks.append(Paragraph(parts))
    code_table = _table("Table 3", cells)
    if code_table is not None:
        blocks.append(code_table)
    return blocks


def _exp5(facts: StudyFacts, cells: Cells, figures: Path) -> list[Block]:
    blocks: list[Block] = [Heading(2, "3.5 Performance of the Final Optimized Assessment Tool (Experiment 5)")]
    if not (facts.ran("EXP5_FinalToolValidation") and cells.has("exp5_success_metric_2")):
        return blocks + [_absent(facts, "EXP5_FinalToolValidation")]
    rows = facts.rows("EXP5_FinalToolValidation")
    config = ", ".join(f"{what} {', '.join(sorted(rows[c].dropna().astype(str).unique()))}"
                       for what, c in (("model", "model"), ("prompt", "prompt_id")))
    sm2, sd = "exp5_success_metric_2", "exp5_sd_summary"
    parts: list[Inline] = [
        f"The final tool ({config}) scored ", cells.number("table1_datasets", "EXP5_FinalToolValidation", "n_items"),
        " held-out transcripts (", cells.number("table1_datasets", "EXP5_FinalToolValidation", "n_attempts"),
        " attempts in all). The median per-transcript SD of the total score was ", *_median_iqr(cells, sd, "total"),
        " (maximum ", cells.number(sd, "total", "max"), "). Of the transcripts, ", *cells.interval(sm2, "both", percent=True),
        " had a mean category SD of at most ", cells.number(sm2, "category_sd", "threshold"), " and a total SD of at most ",
        cells.number(sm2, "total_sd", "threshold"), " (Success Metric 2 target, ", cells.percent(sm2, "both", "target_share"),
        f"); {cells.claim('SM2')}."]  # fmt: skip
    if cells.has("exp5_uncertainty"):
        key = cells.find("exp5_uncertainty")
        parts += [" The mean confidence of a transcript's scores and its total-score SD correlated with Spearman ρ = ",
                  *cells.interval("exp5_uncertainty", key), "; ", *p_phrase(cells.p("exp5_uncertainty", key)), "."]  # fmt: skip
    parts += _calibration(cells)
    parts += _strata(cells)
    blocks.append(Paragraph(parts))
    blocks += [_figure("exp5_sd_histogram", figures, facts), _figure("exp5_reliability_diagram", figures, facts)]
    return blocks


def results(facts: StudyFacts, cells: Cells, figures: Path) -> list[Block]:
    """The Results section: Table 1, then 3.1-3.5 in the outline's order, Tables 2-3 and Figures 1-5 in place.

    An experiment without results in the study folder is stated as not run, with no number.

    Examples
    --------
    >>> blocks = results(facts, cells, Path("reports/demo/figures"))  # doctest: +SKIP
    >>> [b.label for b in blocks if hasattr(b, "label")]  # doctest: +SKIP
    ['Table 1', 'Figure 1', 'Figure 2', 'Figure 3', 'Table 2', 'Table 3', 'Figure 4', 'Figure 5']
    """
    blocks: list[Block] = [Heading(1, "Results")]
    if facts.simulated:
        blocks.append(Paragraph([SIMULATED_RESULTS]))
    overview = _table("Table 1", cells)
    if overview is not None:
        counted = cells.has("cost_by_experiment")
        blocks.append(Paragraph(["The study logged ", cells.number("cost_by_experiment", "(all)", "attempts"),
                                 " scoring attempts; Table 1 describes them by experiment."] if counted else
                                ["Table 1 describes the attempts by experiment."]))  # fmt: skip
        blocks.append(overview)
    blocks += _exp1(facts, cells, figures) + _exp2(facts, cells, figures) + _exp3(facts, cells, figures)
    blocks += _exp4(facts, cells) + _exp5(facts, cells, figures)
    return _numbered(blocks)
