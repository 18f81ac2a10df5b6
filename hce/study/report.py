"""The study report: the report of any log, per experiment, plus the study's own sections (seed 000 section 9).

The claims (hypotheses, scorecard, Table 2) are :mod:`hce.study.claims`; Experiment 4's part
is :mod:`hce.study.report_exp4`.

:func:`study_report` runs the PRD's analysis plan for each experiment present in a log
(``hce.study.analyses``), lays the results out as the paper outline asks (Table 1
descriptives, Table 2 key results, every figure numbered as it appears), adds the success-metrics scorecard, the
hand-offs between experiments and the cost, and gives each experiment's rows the sections
of the report of any log (:func:`hce.report.report`: per ``condition_id`` and per
criterion). Nothing here computes a statistic of its own: every number comes from
:mod:`hce.stats`, so a report and a script calling the statistics directly agree to the
last digit.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import hce.stats as hs
from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.sim import SIM_FINGERPRINT
from hce.errors import DataError, HceError, HceWarning
from hce.log import combine_logs, read_log
from hce.report import figures
from hce.report import report as generic_report
from hce.report.cost import without_simulated_timings
from hce.report.document import Figure, Report, Section
from hce.report.generic import check_columns
from hce.report.provenance import log_notes, read_with_notes, separate_settings
from hce.report.sections import NOT_APPLICABLE, not_reported_section
from hce.report.tables import Table
from hce.rubric import Rubric, kept_rubric, load_rubric
from hce.stats._intervals import proportion_ci
from hce.stats._resample import as_generator
from hce.stats.result import AnalysisResult
from hce.study.analyses import (
    conditions_per_level,
    experiment1,
    experiment2,
    experiment3,
    experiment5,
)
from hce.study.claims import hypotheses, key_results, near_alpha_notes, rank_sums_as_counts, scorecard
from hce.study.sensitivity import sm1_tie_sensitivity, tie_notes
from hce.study.confidence import (
    DEFAULT_LOGPROBS_ARE,
    logprob_confidence,
    logprobs_behaviour,
    score_range,
)
from hce.study.config import JUDGED_LOGS
from hce.study.handoffs import decisions_in
from hce.study.human_ratings import Ratings, ratings_by_experiment, ratings_for, ratings_of_folder, unmatched_ratings
from hce.study.report_handoffs import cost_section, handoff_section
from hce.study.report_exp4 import (
    reasoning_codes,
    reasoning_section,
)
from hce.study.results import ReasoningCodes, StudyResults
from hce.study.settings import (
    SETTINGS_FILE,
    describe,
    effective_settings,
    read_settings,
)

RULES_NOTE = ("Each verdict comes from its pre-specified rule only (columns test, decides, alpha, direction, threshold): "
              "'supported' and 'met' where the rule's condition holds; an interval rule that the interval straddles is "
              "'inconclusive'. Multiplicity: each hypothesis of the confirmatory family H1a, H1b, H2, H3 is tested at "
              "the protocol's own alpha, as pre-specified, and the Holm-adjusted P across that family is given for the "
              "reader (H1c is decided by its cluster-bootstrap interval, not a test); post hoc, Experiment 4 and strata P values are adjusted within their own "
              "families (each table names how); the remaining tests (Success Metric 5's correlation, sensitivity "
              "analyses) are single secondary tests, not adjusted, and decide no claim.")
EXPERIMENTS = {
    "EXP1_BaselineRubricUtility": ("Experiment 1: baseline rubric utility (synthetic transcripts)", experiment1),
    "EXP2_PromptOptimization": ("Experiment 2: prompt strategy optimisation", experiment2),
    "EXP3_ModelComparison": ("Experiment 3: LLM architecture comparison", experiment3),
    "EXP5_FinalToolValidation": ("Experiment 5: optimised tool validation", experiment5),
}
# Captions for the helpers' tables; others get their name. Long per-item tables go to CSV only.
CAPTIONS = {
    "attempts": "Attempts, errors and items",
    "sd_summary": "Per-item SD of repeated total scores, summarised across items",
    "h1a": "H1a: SD of total scores, rubric (G2) vs non-rubric (G1), Mann-Whitney U",
    "mae_summary": "MAE of the mean total score from the target, per condition",
    "h1b": "H1b: MAE, G2 vs G1, Wilcoxon signed-rank paired by transcript",
    "h1c": "H1c: KL divergence of the score distribution from the target distribution",
    "h1c_difference": ("H1c: G2's KL divergence from the targets minus G1's, with its cluster-bootstrap interval over "
                       "transcripts (decides H1c) and the smoothing's share of the target mass"),
    "success_metric_3": "Success Metric 3: Pearson r of mean LLM total with target total",
    "hypotheses": "Hypotheses and verdicts",
    "friedman": "Friedman test of per-item SDs across conditions (Kendall's W)",
    "posthoc": "Post-hoc pairwise comparisons",
    "posthoc_nemenyi": "Post-hoc Nemenyi test",
    "effect_sizes_dz": "Paired effect sizes (Cohen's d_z) of per-item SDs",
    "winner": "Winner by the PRD's rule (lowest SD with a significant difference)",
    "rm_anova": "Repeated-measures ANOVA on transformed SDs",
    "mean_friedman": "Friedman test of mean total scores across models (systematic differences)",
    "mean_posthoc": "Post-hoc comparisons of mean total scores",
    "cost_latency": "API latency and cost per model",
    "success_metric_2": "Success Metric 2: share of items under the SD thresholds",
    "success_metric_2_sensitivity": ("Success Metric 2 at other SD thresholds (threshold sensitivity; the pre-specified "
                                     "pair marked): share of items under both and the rule's verdict"),
    "share_below": "Share of items under each SD threshold",
    "score_descriptives": "Scores assigned (descriptive)",
    "uncertainty": "Confidence vs per-item SD (Spearman)",
    "metadata": "SD by transcript metadata",
    "fairness_omnibus": "Fairness: scores and SDs across strata (Kruskal-Wallis, Holm)",
    "fairness_pairwise": "Fairness: pairwise comparisons across strata",
    "fairness_verdict": "Success Metric 6: any detrimental difference across strata",
}
#: Experiments that compare the levels of one factor (prompt_id or model) and may compare
#: conditions instead when a level covers several (Exp 1 compares two named prompts: refused).
COMPARED = ("EXP2_PromptOptimization", "EXP3_ModelComparison")
INLINE_ROWS = 30
#: Columns whose codes (a transcript metadata column's name) tables show in words; the CSV keeps the codes.
READABLE = ("stratum",)
# One row per item (or per bin): always written to CSV, never printed in the body.
PER_ITEM_TABLES = {"sd", "mae", "mean_scores", "distribution", "sd_histogram"}


def analyse(
    log: pd.DataFrame,
    *,
    strata: Sequence[str] = (),
    metadata: Sequence[str] = (),
    settings: Mapping[str, Mapping] | None = None,
    logprobs_are: str | None = None,
    random_state: int | None = None,
) -> StudyResults:
    """Run each experiment's analysis plan on the rows of the log that belong to it.

    ``settings`` (``analysis_settings.json`` of a study, :func:`hce.study.settings.read_settings`)
    gives each experiment the keyword arguments the study analysed it with, so the report
    shows what the study decided; an experiment without saved settings runs on the defaults,
    seeded with ``random_state``. ``strata`` and ``metadata``, when given, apply to Exp 5
    over any saved ones.
    """
    present = set(log["experiment_id"].dropna().unique()) if "experiment_id" in log else set()
    saved = {k: dict(v["settings"]) for k, v in (settings or {}).items()}
    results, failures, used, regrouped = {}, {}, {}, {}
    for experiment_id, (_, helper) in EXPERIMENTS.items():
        if experiment_id not in present:
            continue
        data, kwargs = log, dict(saved.get(experiment_id, {}))
        if "random_state" in effective_settings(helper):
            kwargs.setdefault("random_state", random_state)
        if experiment_id in COMPARED:
            factor = kwargs.get("condition", effective_settings(helper)["condition"])
            pooled = conditions_per_level(log[log["experiment_id"] == experiment_id], factor)
            if pooled:
                kwargs["condition"] = "condition_id"
                regrouped[experiment_id] = (
                    f"Compared by condition_id, not by {factor}: in this log " + "; ".join(
                        f"{factor} {level} covers conditions {', '.join(ids)}" for level, ids in pooled.items())
                    + f". The PRD's design has one condition per {factor}; grouping by it here would pool different "
                    "conditions, so each condition is compared instead (the winner is a condition, not a "
                    f"{factor}).")  # fmt: skip
        if experiment_id.startswith("EXP5"):
            kwargs.update({k: list(v) for k, v in (("strata", strata), ("metadata", metadata)) if v or k not in kwargs})
            data = with_logprob_confidence(log, experiment_id, logprobs_are=logprobs_are)
        used[experiment_id] = effective_settings(helper, **kwargs)
        try:
            with warnings.catch_warnings():
                # Items without two valid attempts are reported in the tables and notes.
                warnings.simplefilter("ignore", HceWarning)
                results[experiment_id] = helper(data, **kwargs)
        except HceError as exc:  # e.g. a single condition: the plan's test cannot run
            failures[experiment_id] = str(exc)
    for experiment_id, note in regrouped.items():
        if experiment_id in results:
            results[experiment_id].notes.insert(0, note)
    return StudyResults(log=log, experiments=results, simulated=is_simulated(log), failures=failures,
                        settings=used, saved=set(saved) & set(used))  # fmt: skip


def design_order(log: pd.DataFrame) -> pd.DataFrame:
    """The log in the design's order (experiment, item, condition, attempt), not the order replies arrived in.

    Sums then add up in one order and draws that pick rows pick the same ones, so a seeded
    report is the same to the last digit whatever the concurrency of the run.
    """
    order = [c for c in ("experiment_id", "item_id", "condition_id", "attempt", "attempt_id") if c in log]
    return log.sort_values(order, kind="stable", na_position="last").reset_index(drop=True) if order else log


def with_logprob_confidence(log: pd.DataFrame, experiment_id: str, *, logprobs_are: str | None = None) -> pd.DataFrame:
    """The log with Exp 5's ``confidence`` filled from logprobs where the judge stated none.

    The study runner computes the same confidence (:func:`hce.study.confidence.logprob_confidence`)
    but keeps it beside the log, so a report built from the log alone computes it again.
    """
    rows = log["experiment_id"] == experiment_id
    stated = "confidence" in log and log.loc[rows, "confidence"].notna().any()
    readable = {"logprobs", "prompt_id", "error_flag"} <= set(log.columns)  # the reply format comes from prompt_id
    if stated or not readable or not log.loc[rows, "logprobs"].notna().any():
        return log
    log = log.copy()
    if "confidence" not in log:
        log["confidence"] = np.nan
    log.loc[rows, "confidence"] = logprob_confidence(log[rows], logprobs_are=logprobs_are)
    return log


def is_simulated(log: pd.DataFrame) -> bool:
    """True when any attempt was answered by hce's simulated judge (its system fingerprint says so)."""
    if "system_fingerprint" not in log:
        return False
    return bool(log["system_fingerprint"].astype("str").str.startswith(SIM_FINGERPRINT).any())


def _table(result: AnalysisResult, name: str, prefix: str, confidence: float) -> Table:
    return Table(result[name], caption=CAPTIONS.get(name, name.replace("_", " ")), name=f"{prefix}_{name}", confidence=confidence,
                 readable=READABLE)


def _one_level(log: pd.DataFrame, experiment_id: str, results: StudyResults) -> bool:
    """Whether the experiment's rows hold one level of the factor its analysis compares: no comparison is possible.

    A comparison that a one-condition log cannot support is not a section the log supports, so
    its absence is "not applicable" (``hce report`` exits 0), not "not computed".
    """
    factor = results.settings.get(experiment_id, {}).get("condition")
    rows = log[log["experiment_id"] == experiment_id]
    return factor is not None and factor in rows and rows[factor].nunique() < 2


def _settings_line(experiment_id: str, results: StudyResults) -> str:
    """Which settings made this section's numbers: the study's saved ones, or the defaults (bare logs)."""
    words = describe(results.settings[experiment_id])
    if experiment_id in results.saved:
        return f"Analysis settings, as the study analysed this experiment ({SETTINGS_FILE}): {words}."
    helper = EXPERIMENTS[experiment_id][1].__name__
    return (f"Analysis settings: the defaults of hce.study.{helper} (no settings saved by a study for this log; "
            f"run `hce report` on the study folder to use the study's own): {words}.")


def _handed_on(experiment_id: str, decisions: Mapping[str, Mapping]) -> str | None:
    kind = {"EXP2": "prompt", "EXP3": "model"}.get(experiment_id.split("_")[0])
    decision = decisions.get(kind) if kind else None
    if not decision:
        return None
    return f"Handed on by the study (decisions.json): {kind} {decision['choice']} (source: {decision['source']})."


def _experiment_section(report: Report, experiment_id: str, result: AnalysisResult, results: StudyResults, confidence: float) -> None:
    log = results.log
    title, _ = EXPERIMENTS[experiment_id]
    section = report.section(title)
    prefix = experiment_id.split("_")[0].lower()
    rows = log[log["experiment_id"] == experiment_id]
    section.add(f"{len(rows):,} attempts on {rows['item_id'].nunique():,} items.")
    section.add(_settings_line(experiment_id, results))
    handed = _handed_on(experiment_id, results.decisions)
    if handed:
        section.add(handed)
    for note in result.notes:
        section.add(f"Note: {note}")
    long_tables = []
    for name in result:
        table = _table(result, name, prefix, confidence)
        if name in PER_ITEM_TABLES or len(table.data) > INLINE_ROWS:
            long_tables.append(table)
        else:
            section.add(table)
    for figure in _experiment_figures(experiment_id, result, prefix, results.settings.get(experiment_id, {})):
        section.add(figure)
    if long_tables:
        section.add("Per-item tables (CSV): " + ", ".join(f"tables/{t.name}.csv" for t in long_tables) + ".")
        section.blocks.extend(replace(t, inline=False) for t in long_tables)


def _total_sd(result: AnalysisResult) -> pd.DataFrame:
    sd = result["sd"]
    return sd[sd["criterion"] == "total"] if "criterion" in sd else sd


def _experiment_figures(experiment_id: str, result: AnalysisResult, prefix: str, settings: Mapping) -> list[Figure]:
    if experiment_id.startswith("EXP1"):
        dist = result["distribution"]
        # The legend names the groups as the caption and the text do: G1 and G2, with their prompts.
        names = {settings.get("non_rubric"): "G1", settings.get("rubric"): "G2"}
        groups = {
            f"{names[source]} ({source})" if source in names else str(source):
                np.repeat(part["total"].to_numpy(dtype=float), part["count"].to_numpy(dtype=int))
            for source, part in dist.groupby("source", sort=False)
        }
        return [Figure(figures.score_histograms(groups), f"{prefix}_score_histograms",
                       "Total scores of G1, G2 and the synthetic targets (H1c)")]
    if experiment_id.startswith(("EXP2", "EXP3")):
        sd = _total_sd(result)
        condition = result["winner"].columns[0]  # the compared factor (prompt_id or model)
        what = "prompt strategies" if experiment_id.startswith("EXP2") else "LLM architectures"
        return [Figure(figures.sd_by_condition(sd, condition=condition, item="item_id" if "item_id" in sd else None), f"{prefix}_sd_by_condition",
                       f"Per-item SD of total scores for the {what}")]
    if experiment_id.startswith("EXP5"):
        return [Figure(figures.sd_histogram(_total_sd(result), thresholds=[1.0]), f"{prefix}_sd_histogram",
                       "Distribution of per-item SDs of the total score for the final tool")]
    return []


def dataset_table(log: pd.DataFrame) -> pd.DataFrame:
    """Table 1: attempts, items, conditions, models, errors and scores per experiment."""
    rows = []
    for experiment_id, part in log.groupby("experiment_id", sort=True):
        valid = part.loc[~part["error_flag"], "total"] if "total" in part else pd.Series(dtype=float)
        n_items = part["item_id"].nunique()
        rows.append(
            {
                "experiment_id": experiment_id,
                "n_items": n_items,
                "n_conditions": part["condition_id"].nunique() if "condition_id" in part else np.nan,
                "models": ", ".join(sorted(part["model"].dropna().astype(str).unique())) if "model" in part else "",
                "prompts": ", ".join(sorted(part["prompt_id"].dropna().astype(str).unique())) if "prompt_id" in part else "",
                "n_attempts": len(part),
                "n_errors": int(part["error_flag"].sum()),
                "mean_total": float(valid.mean()) if len(valid) else np.nan,
                "sd_total": float(valid.std(ddof=1)) if len(valid) > 1 else np.nan,
                # when the attempts were made (the manuscript's drift span cites these cells), UTC
                **_call_span(part),
                # the best a share of these transcripts can show: all n of n, its Wilson 95% lower limit
                "wilson_best_lower": float(proportion_ci(np.array([n_items]), np.array([n_items]), 0.95, "wilson")[0][0]),
            }
        )
    return pd.DataFrame(rows)


def _call_span(part: pd.DataFrame) -> dict[str, str]:
    """The first and last ``timestamp`` of an experiment's attempts as ``YYYY-MM-DD HH:MM`` (UTC), blank without one."""
    stamps = pd.to_datetime(part["timestamp"], utc=True, errors="coerce").dropna() if "timestamp" in part else pd.Series([])
    if stamps.empty:
        return {"first_call": "", "last_call": ""}
    return {"first_call": f"{stamps.min():%Y-%m-%d %H:%M}", "last_call": f"{stamps.max():%Y-%m-%d %H:%M}"}


# --- the generic report, one experiment at a time --------------------------------------------


def _experiment_label(experiment_id: object) -> tuple[str, str]:
    """A section title prefix and a file-name prefix for one experiment's rows."""
    if pd.isna(experiment_id):
        return "Rows without experiment_id", "no_experiment"
    if experiment_id in EXPERIMENTS:
        return EXPERIMENTS[experiment_id][0].split(":")[0], str(experiment_id).split("_")[0].lower()
    return str(experiment_id), "".join(ch if ch.isalnum() else "_" for ch in str(experiment_id).lower())


def _experiment_order(log: pd.DataFrame) -> list[object]:
    """The log's experiment ids: the PRD's in plan order, then any other, then rows without one."""
    if "experiment_id" not in log:
        return []
    present = list(log["experiment_id"].drop_duplicates())
    planned = [e for e in EXPERIMENTS if e in present]
    others = sorted((e for e in present if e not in EXPERIMENTS and not pd.isna(e)), key=str)
    return planned + others + [e for e in present if pd.isna(e)][:1]


def _renamed(block: str | Table | Figure, prefix: str) -> str | Table | Figure:
    if isinstance(block, Table):
        return replace(block, name=f"{prefix}_{block.name}")
    if isinstance(block, Figure):
        return Figure(block.figure, f"{prefix}_{block.name}", block.caption)
    return block


def _one_source(block: str | Table | Figure, plan: AnalysisResult | None) -> str | Table | Figure:
    """A generic table that repeats a test of the experiment's analysis plan shows the plan's rows.

    The same test on the same data (same method, statistic and n) must print one estimate and
    one interval everywhere; a bootstrap interval drawn twice from two streams would differ.
    """
    if plan is None or not isinstance(block, Table) or not {"method", "statistic", "n"} <= set(block.data.columns):
        return block
    for frame in plan.tables.values():
        if frame.shape == block.data.shape and list(frame.columns) == list(block.data.columns) and frame["method"].equals(
                block.data["method"]) and np.allclose(frame[["statistic", "n"]].to_numpy(float),
                                                       block.data[["statistic", "n"]].to_numpy(float), equal_nan=True):
            return replace(block, data=frame)
    return block


def generic_sections(report: Report, rows: pd.DataFrame, experiment_id: object, *, rubric: Rubric | None,
                     confidence: float, random_state: np.random.Generator,
                     plan: AnalysisResult | None = None, humans: pd.DataFrame | None = None) -> list[dict[str, str]]:
    """The sections of :func:`hce.report.report` on one experiment's rows, titled and named after it.

    Every experiment is its own design (its items, its conditions), and the PRD's
    experiments may share a condition (Exp 3 reuses Exp 2's winning prompt on Exp 2's
    model), so each gets the report of any log on its rows alone: attempts and errors,
    cost, and per criterion the spread, tests between conditions, variance decomposition
    and reliability per ``condition_id``, calibration when the rows have logprobs, and what
    could not be computed. Titles start with the experiment; tables and figures with its
    prefix (``exp2_total_spread``). Returns what could not be computed (``not_reported``
    entries, named after the experiment), for the study report's one "Not reported" list.
    A test that repeats one of ``plan`` (the experiment's analysis) shows the plan's rows.
    ``humans`` (the rows' human ratings: ``hce.study.human_ratings.ratings_for``) adds the
    section "Agreement with human raters"; the "Judge biases" section comes when the rows carry probes or a golden
    history (:mod:`hce.report.biases`).
    """
    label, prefix = _experiment_label(experiment_id)
    try:
        part = generic_report(rows.reset_index(drop=True), rubric=rubric, confidence=confidence, random_state=random_state,
                              humans=humans)  # fmt: skip
    except HceError as exc:  # e.g. no condition_id: conditions are never guessed
        report.section(f"{label}: by condition and criterion").add(
            f"Not reported (the report of any log, per condition_id and criterion, cannot be made on these rows): {exc}")
        return [{"section": f"{label}: by condition and criterion", "reason": str(exc),
                 "fix": "give every row a condition_id"}]  # fmt: skip
    for section in part.sections:
        if section.title.startswith("Calibration") or section.title == "Not reported":
            continue  # the study's own calibration section replaces it; one "Not reported" list at the end
        blocks = [_renamed(_one_source(b, plan), prefix) for b in section.blocks]
        report.sections.append(Section(f"{label}: {section.title}", blocks))
    return [{**entry, "section": f"{label}: {entry['section']}"} for entry in part.not_reported]


#: The confidences and outcomes the calibration section shows, in its order.
CALIBRATION_VIEWS = (("adjusted", "prob", "agrees_with_repeat"), ("raw", "raw_prob", "agrees_with_repeat"),
                     ("adjusted", "prob", "agrees_with_mode"), ("raw", "raw_prob", "agrees_with_mode"))  # fmt: skip


def calibration_data(part: pd.DataFrame, criteria: Sequence[str], *, rubric: Rubric | None = None,
                     logprobs_are: str = DEFAULT_LOGPROBS_ARE, random_state: int = 0) -> pd.DataFrame:
    """Per attempt and criterion: the confidence of the chosen category score, raw and at the temperature used.

    The final score block ends the reply, so the k-th of its n category scores is the
    (k - n)-th score token from the end (:func:`hce.stats.logprob_confidence`); the possible
    scores are the rubric's (default v5: 1-4). ``prob`` is the chosen score's probability
    under the distribution sampled at the attempt's ``temperature`` (a missing temperature
    is the API default 1), given what the logprobs are (``logprobs_are``); ``raw_prob`` the
    logprobs' own, unadjusted. Outcomes: ``agrees_with_repeat`` (the score equals that of
    another attempt of the item: what ``prob`` is calibrated for by construction,
    :func:`hce.stats.agrees_with_repeat`) and ``agrees_with_mode`` (it is the item's most
    frequent score).
    """
    n = len(criteria)
    low, high = score_range(rubric or load_rubric("v5"))
    temperature = "temperature" if "temperature" in part else None
    found = hs.logprob_confidence(part, scores=range(low, high + 1), occurrence=range(-n, 0), temperature=temperature,
                                  logprobs_are=logprobs_are if temperature else None)  # fmt: skip
    condition = "condition_id" if "condition_id" in part else None
    frames = []
    for k, criterion in enumerate(criteria):
        conf = found[found["occurrence"] == k - n]
        repeat = hs.agrees_with_repeat(part, condition=condition, score=criterion, random_state=random_state)
        frames.append(conf.assign(criterion=criterion, agrees_with_repeat=repeat.to_numpy(dtype=float),
                                  agrees_with_mode=hs.agrees_with_mode(part, score=criterion).to_numpy(dtype=float))
                      [["item_id", "attempt", "criterion", "temperature", "logprobs_are", "prob", "raw_prob",
                        "agrees_with_repeat", "agrees_with_mode"]])  # fmt: skip
    data = pd.concat(frames, ignore_index=True)
    return data[data["prob"].notna() & data["agrees_with_repeat"].notna() & data["agrees_with_mode"].notna()]


def calibration_tables(data: pd.DataFrame, *, confidence: float = 0.95, random_state: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Calibration metrics and reliability bins of each confidence (adjusted, raw) against each outcome.

    Returns
    -------
    (metrics, bins)
        :func:`hce.stats.calibration_metrics` and :func:`hce.stats.reliability_table`
        rows with ``confidence`` (``adjusted`` / ``raw``) and ``outcome`` in front, in
        :data:`CALIBRATION_VIEWS` order.
    """
    metrics, bins = [], []
    for name, prob, outcome in CALIBRATION_VIEWS:
        m = hs.calibration_metrics(data, prob=prob, truth=outcome, item="item_id", confidence=confidence, random_state=random_state)
        b = hs.reliability_table(data, prob=prob, truth=outcome, confidence=confidence)
        for frame, out in ((m, metrics), (b, bins)):
            frame.insert(0, "outcome", outcome)
            frame.insert(0, "confidence", name)
            out.append(frame)
    return pd.concat(metrics, ignore_index=True), pd.concat(bins, ignore_index=True)


def _calibration_section(report: Report, results: StudyResults, confidence: float) -> None:
    log = results.log
    if "logprobs" not in log:
        return
    criteria = [c for c in load_rubric("v5").criteria if c in log]
    section = None
    for experiment_id in results.experiments:
        part = log[(log["experiment_id"] == experiment_id) & ~log["error_flag"] & log["logprobs"].notna()].reset_index(drop=True)
        if len(part) < 20 or not criteria:
            continue
        behaviour = logprobs_behaviour(part, results.logprobs_are)
        data = calibration_data(part, criteria, logprobs_are=behaviour)
        if len(data) < 20:
            continue
        prefix = experiment_id.split("_")[0].lower()
        metrics, bins = calibration_tables(data, confidence=confidence)
        fig, axes = figures.new_figure(9, 4.5, ncols=2, sharey=True)
        for ax, name in zip(axes, ("adjusted", "raw")):
            view = bins[(bins["confidence"] == name) & (bins["outcome"] == "agrees_with_repeat")]
            figures.reliability_diagram(view.drop(columns=["confidence", "outcome"]), ax=ax)
            ax.set_title(f"{name} confidence" + (f" (temperature {_temperatures(data)})" if name == "adjusted" else ""))
        if section is None:
            section = report.section("Confidence and calibration (token probabilities)")
            section.add("Confidence is the judge's token probability of the category score it gave, read two ways: "
                        "'adjusted' is the probability under the distribution it sampled from at the temperature used "
                        "(the chance an independent repeat writes the same score), 'raw' is the logprobs as returned. "
                        "Outcomes: agreement with an independent repeat of the item (what the adjusted confidence is "
                        "calibrated for by construction) and with the item's most frequent score (PRD Exp 5, item 5).")
        section.add(f"{EXPERIMENTS[experiment_id][0]}: logprobs assumed {behaviour!r} (" + (
            "the simulator's default for its models" if results.logprobs_are is None and results.simulated else
            "the study's experiments.exp5.logprobs_are" if results.logprobs_are is not None else
            "the default, OpenAI's behaviour: set experiments.exp5.logprobs_are for another provider") + ").")
        section.add(Table(metrics, f"{EXPERIMENTS[experiment_id][0]}: calibration of category-score confidence, adjusted and raw",
                          f"{prefix}_calibration", confidence),
                    Table(bins, f"{EXPERIMENTS[experiment_id][0]}: reliability table", f"{prefix}_reliability_bins", confidence, inline=False),
                    Figure(fig, f"{prefix}_reliability_diagram",
                           f"Reliability diagram of category-score confidence against agreement with a repeat, "
                           f"temperature-adjusted beside raw ({prefix})"))  # fmt: skip


def _temperatures(data: pd.DataFrame) -> str:
    return ", ".join(f"{t:g}" for t in sorted(data["temperature"].dropna().unique())) or "1"


def bayes_section(report: Report, results: StudyResults, confidence: float, *, random_state: int = 0) -> None:
    """Bayesian uncertainty (slow, MCMC): judge noise by condition and attempts each item needs.

    For each experiment with several conditions, the location-scale ordinal model
    ``total ~ condition_id + (1 | item_id)`` with ``noise = condition_id`` gives each condition's
    noise and P(one condition is more consistent than another); for Experiment 5, the model
    ``total ~ 1 + (1 | item_id)`` gives the attempts each item needs for a mean with SD <= 1.
    """
    from hce.stats.bayes import bayes_ordinal

    section = report.section("Bayesian uncertainty (hierarchical ordinal models)")
    log = results.log
    valid = log[~log["error_flag"] & log["total"].notna()]
    for experiment_id in results.experiments:
        part = valid[valid["experiment_id"] == experiment_id].copy()
        factor = ["condition_id"] if "condition_id" in part and part["condition_id"].nunique() > 1 else []
        prefix = experiment_id.split("_")[0].lower()
        title = EXPERIMENTS[experiment_id][0]
        part["total"] = part["total"].round().astype(int)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if factor:
                fit = bayes_ordinal(f"total ~ {factor[0]} + (1 | item_id)", part, noise=factor[0], random_state=random_state)
                section.add(Table(fit.summary(), f"{title}: posterior summary", f"{prefix}_bayes_summary", confidence),
                            Table(fit.noise_pairs(), f"{title}: P(one condition is more consistent than another)",
                                  f"{prefix}_bayes_noise_pairs", confidence))
            else:
                fit = bayes_ordinal("total ~ 1 + (1 | item_id)", part, random_state=random_state)
                section.add(Table(fit.summary(), f"{title}: posterior summary", f"{prefix}_bayes_summary", confidence),
                            Table(fit.attempts(target_sd=1.0), f"{title}: attempts needed for a mean total with an SD of at most 1",
                                  f"{prefix}_bayes_attempts", confidence))
        verdict = "converged" if fit.converged else "NOT CONVERGED: " + "; ".join(map(str, fit.flags))
        section.add(f"{title}: MCMC diagnostics {verdict}.", *(f"Note ({prefix}): {note}" for note in sampler_notes(caught)))


#: What a sampling library's warnings are about, in the report's words (their text is not a reader's).
SAMPLER_TOPICS = (
    (r"diverg", "the sampler reported divergent transitions: the posterior may be biased where the sampler could not go"),
    (r"r.?hat", "some R-hat values are above the convergence limit: the chains disagree"),
    (r"effective sample size|\bess\b", "the effective sample size is small for some parameters: their intervals are imprecise"),
    (r"tree ?depth", "the sampler reached its maximum tree depth: sampling was inefficient"),
)


def sampler_notes(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """The library warnings of a Bayesian fit, rephrased as the report's notes (no library text in any output).

    hce's own diagnostics warning is the section's verdict line already; every other warning
    is named by what it is about, and what matches no known topic is counted, not quoted.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("There were 3 divergences after tuning. Increase `target_accept`.", UserWarning)
    ...     warnings.warn("invalid value encountered in log", RuntimeWarning)
    >>> sampler_notes(caught)
    ['the sampler reported divergent transitions: the posterior may be biased where the sampler could not go', '1 other message of the numerical libraries during sampling (not about convergence; the diagnostics above decide)']
    """
    from hce.stats.bayes.sampling import MCMCDiagnosticsWarning

    notes, other = [], 0
    for w in caught:
        if issubclass(w.category, MCMCDiagnosticsWarning):
            continue
        topics = [text for pattern, text in SAMPLER_TOPICS if re.search(pattern, str(w.message), flags=re.IGNORECASE)]
        notes += [t for t in topics if t not in notes]
        other += not topics
    if other:
        notes.append(f"{other} other message{'s' * (other > 1)} of the numerical libraries during sampling (not about "
                     "convergence; the diagnostics above decide)")
    return notes


def _bayes_skipped(report: Report, results: StudyResults, confidence: float) -> None:
    report.section("Bayesian uncertainty (hierarchical ordinal models)").add(
        "Skipped: MCMC takes minutes. Run `hce report ... --bayes` (or pass "
        "`extra_sections=[bayes_section]` to study_report) to include it."
    )


SectionBuilder = Callable[[Report, StudyResults, float], None]
@keywords_checked
@fill_doc
def study_report(
    logs: pd.DataFrame | Sequence[pd.DataFrame],
    *,
    title: str = "LLM judge study report",
    strata: Sequence[str] = (),
    metadata: Sequence[str] = (),
    extra_sections: Sequence[SectionBuilder] = (),
    confidence: float = 0.95,
    settings: Mapping[str, Mapping] | None = None,
    decisions: Mapping[str, Mapping] | None = None,
    reasoning: ReasoningCodes | None = None,
    logprobs_are: str | None = None,
    rubric: Rubric | str | os.PathLike | None = None,
    random_state: int | np.random.Generator | None = None,
    humans: Ratings | Mapping[str, Ratings] | None = None,
) -> Report:
    """Build the study report from one or more attempt logs (no API calls).

    The report of any log (:func:`hce.report.report`) for each experiment's rows, plus the
    study's own sections: Table 1 and 2 and the success-metrics scorecard, each
    experiment's analysis plan (``hce.study.analyses``), Experiment 4's codes, the
    calibration of the judge's confidence, the hand-offs between experiments and the cost.

    Parameters
    ----------
    logs : DataFrame or list of DataFrames
        Attempt logs (:func:`hce.read_log`); several are concatenated, refusing an
        ``attempt_id`` in two of them (``hce.log.merge_logs`` combines them on purpose).
    title : str
        A report from the simulated judge says so in its title, whatever is passed.
    strata, metadata : list of str
        Demographic strata (Success Metric 6) and transcript metadata columns for Exp 5.
    extra_sections : list of callables
        Builders ``f(report, results, confidence)`` adding optional sections (e.g. Bayesian).
    %(confidence)s
    settings, decisions : mapping, optional
        A study's ``analysis_settings.json`` and ``decisions.json``: each experiment is
        analysed with the study's own settings and the section says what the study handed
        on. Without them the defaults are used and each section says so
        (``study_folder_report`` reads both from a study folder).
    reasoning : ReasoningCodes, optional
        Experiment 4's codes and kappas (``reasoning_codes`` of a study folder): its
        section (Table 3) and Success Metric 4.
    logprobs_are : {"raw", "sampled", "raw_at_zero"}, optional
        What the logprobs are the log of, for the temperature-adjusted confidence
        (``logprobs_behaviour``: default the simulator's for a simulated log, else raw).
    rubric : Rubric, packaged name or YAML path, optional
        The rubric the logs were judged with, for the per-criterion sections (default: as
        :func:`hce.report.report` finds it, Rubric v5.0 for logs with its five columns).
    %(random_state)s
        It serves the experiments without saved settings and the per-criterion sections.
    humans : DataFrame or CSV path, or a mapping of them, optional
        Human ratings of the logs' items (``item_id``, ``rater``, one column per criterion;
        ``condition_id`` when they rate each condition's output; ``hce report --humans FILE``;
        a study folder's ``humans.csv`` or its study file's ``humans:`` keys). A mapping gives
        each experiment id its own ratings (``"*"``: the study-wide ones). Each experiment
        whose items they rate gets the section "Agreement with human raters" (alt-test,
        kappa, concordance, Bland-Altman, PPI and the label budget: ``hce.report.humans``), as
        do log rows with ``rater_role == "human"``; Experiment 1 without ratings of its own
        compares the judge with its targets (rater ``target``,
        ``hce.study.human_ratings.target_ratings``). Default None.

    Returns
    -------
    Report
        ``.write(folder)`` writes Markdown, HTML, CSV, LaTeX, PNG and SVG.

    Examples
    --------
    The report of a study's logs (a minute for the PRD's five experiments):

    >>> import hce
    >>> from hce.study import study_report
    >>> logs = [hce.read_log(f"my_study/{name}.jsonl") for name in ("exp1", "exp2")]  # doctest: +SKIP
    >>> study_report(logs).write("reports/my_study")  # doctest: +SKIP
    """
    log = combine_logs(logs) if isinstance(logs, Sequence) else logs  # an attempt in two logs is refused
    humans = ratings_by_experiment(humans)  # each CSV read once; ids as text
    read_notes = log_notes(*(logs if isinstance(logs, Sequence) else [logs]))  # a torn last line, say
    # one condition_id run with two settings in one experiment: kept apart, never pooled
    log, split = separate_settings(log, within=["experiment_id"])
    log = design_order(log)
    log, timings = without_simulated_timings(log, SIM_FINGERPRINT)  # the simulator's timings are no model's latency
    check_columns(log, "--strata", strata)  # a misspelt column is an error before any work, not a lost section
    check_columns(log, "--metadata", metadata)
    # The experiments record their seed in the report's settings: an integer (or None), drawn
    # from a Generator when one is given.
    seed = int(random_state.integers(2**31)) if isinstance(random_state, np.random.Generator) else random_state
    results = analyse(log, strata=strata, metadata=metadata, settings=settings, logprobs_are=logprobs_are, random_state=seed)
    results.decisions = dict(decisions or {})
    results.reasoning = reasoning
    results.logprobs_are = logprobs_are
    if results.simulated:
        title = f"{title} — SIMULATED JUDGE (hce sim-server), not real model output"
    report = Report(title)
    overview = report.section("Datasets and key results")
    overview.add(*read_notes, *split, *timings)
    overview.add(Table(dataset_table(log), "Table 1: Attempt log by experiment", "table1_datasets", confidence))
    key = key_results(results.experiments)
    if len(key):
        overview.add(Table(key, "Table 2: Key statistical results for prompt and model comparisons", "table2_key_results", confidence))
    alpha = float(results.settings.get("EXP1_BaselineRubricUtility", {}).get("alpha", 0.05))
    claims = hypotheses(results.experiments, alpha=alpha)
    overview.add(RULES_NOTE,
                 Table(claims, "Pre-specified hypotheses: rule and verdict", "hypotheses", confidence),
                 *(f"Note: {note}." for note in near_alpha_notes(claims)),
                 Table(scorecard(results.experiments, log=log, coded=results.reasoning.coded if results.reasoning else None,
                                 alpha=alpha), "Success metrics scorecard (PRD section 1): rule and verdict", "scorecard",
                       confidence))  # fmt: skip
    ties = sm1_tie_sensitivity(results.experiments, alpha=alpha)  # hce.study.sensitivity: the tie correction undone
    if len(ties):
        overview.add(Table(ties, "Success Metric 1's Friedman tests with and without the tie correction (sensitivity; the "
                           "tie-corrected P decides)", "sm1_tie_sensitivity", confidence), *(f"Note: {n}." for n in tie_notes(ties)))
    if not results.experiments and not results.failures:
        overview.add("No rows of Experiments 1, 2, 3 or 5 were found (column experiment_id); their analysis plans are not shown.")
    rubric = rubric if rubric is None or isinstance(rubric, Rubric) else load_rubric(rubric)
    rng = as_generator(random_state)
    skipped = [{"section": EXPERIMENTS[e][0], "reason": message, "fix": "see the reason; the other experiments are reported",
                **({"status": NOT_APPLICABLE, "fix": "log two or more conditions to compare"} if _one_level(log, e, results) else {})}
               for e, message in results.failures.items()]  # fmt: skip
    for experiment_id in _experiment_order(log) or [None]:
        if experiment_id == "EXP5_FinalToolValidation":
            reasoning_section(report, results, confidence)  # the sections follow the experiments' order
        if experiment_id in results.experiments:
            _experiment_section(report, experiment_id, results.experiments[experiment_id], results, confidence)
        elif experiment_id in results.failures:
            report.section(EXPERIMENTS[experiment_id][0]).add(
                f"The analysis plan could not be run on this log: {results.failures[experiment_id]}")
        if experiment_id is None or "experiment_id" not in log:
            rows = log
        else:
            rows = log[log["experiment_id"].isna()] if pd.isna(experiment_id) else log[log["experiment_id"] == experiment_id]
        skipped += generic_sections(report, rows, experiment_id, rubric=rubric, confidence=confidence, random_state=rng,
                                    plan=results.experiments.get(experiment_id),
                                    humans=ratings_for(humans, experiment_id, rows))  # fmt: skip
        skipped += unmatched_ratings(humans, experiment_id, rows, _experiment_label(experiment_id)[0])
    if "EXP5_FinalToolValidation" not in (_experiment_order(log) or []):
        reasoning_section(report, results, confidence)
    for builder in (_calibration_section, handoff_section, cost_section, *extra_sections):
        builder(report, results, confidence)
    if bayes_section not in extra_sections:
        _bayes_skipped(report, results, confidence)
    not_reported_section(report, skipped, confidence)
    for section in report.sections:  # U and V print as the counts they are, in every table of every section
        section.blocks = [replace(b, data=rank_sums_as_counts(b.data)) if isinstance(b, Table) else b for b in section.blocks]
    return report.number_figures()


def study_folder_report(folder: str | os.PathLike, **kwargs) -> Report:
    """The study report of a study's output folder, analysed exactly as the study analysed it.

    The folder's judged logs (``exp1.jsonl``, ``exp2.jsonl``, ``exp3.jsonl``, ``exp5.jsonl``)
    are reported with the settings the run saved (``analysis_settings.json``: winner rule,
    adjustment, alpha, seeds) and the decisions it handed on (``decisions.json``), so the
    report names the same winners; human ratings of the items from the study file's ``humans:`` keys
    (their absolute paths in ``study.resolved.yaml``), else the folder's ``humans.csv`` (the
    section "Agreement with human raters"); Experiment 4 comes from ``exp4/`` (``reasoning_codes``) and what the
    logprobs are from the study's ``experiments.exp5.logprobs_are`` (``study.resolved.yaml``). Other keyword arguments go to :func:`study_report`.
    """
    folder = Path(folder)
    paths = [folder / name for name in JUDGED_LOGS if (folder / name).is_file()]
    if not paths:
        raise DataError(f"{folder}: no attempt log of a judged experiment ({', '.join(JUDGED_LOGS)}); "
                        "is it a study's output folder?")  # fmt: skip
    logs = [read_with_notes(read_log, path)[0] for path in paths]
    kwargs.setdefault("logprobs_are", _study_logprobs_are(folder))
    kwargs.setdefault("rubric", kept_rubric(paths))  # the rubric the study judged with, kept beside its logs
    ratings = ratings_of_folder(folder, _resolved(folder))  # the study file's humans: keys, else humans.csv
    if ratings:
        kwargs.setdefault("humans", ratings)
    return study_report(logs, settings=read_settings(folder), decisions=decisions_in(folder),
                        reasoning=reasoning_codes(folder), **kwargs)


def _resolved(folder: Path) -> dict:
    """The study's configuration as its run recorded it (``study.resolved.yaml``; empty without one)."""
    path = folder / "study.resolved.yaml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.is_file() else {}


def _study_logprobs_are(folder: Path) -> str | None:
    """The study's ``experiments.exp5.logprobs_are`` as its run recorded it (``study.resolved.yaml``)."""
    return ((_resolved(folder).get("experiments") or {}).get("exp5") or {}).get("logprobs_are")
