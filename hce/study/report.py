"""The study report: one section per experiment found in an attempt log (seed 000 section 9).

:func:`study_report` runs the PRD's analysis plan for each experiment present in a log
(:mod:`hce.study.analyses`), lays the results out as the paper outline asks (Table 1
descriptives, Table 2 key results, Figures 1-3) and adds the success-metrics scorecard.
Nothing here computes a statistic of its own: every number comes from :mod:`hce.stats`,
so a report and a script calling the statistics directly agree to the last digit.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import hce.stats as hs
from hce.collect.sim import SIM_FINGERPRINT
from hce.errors import DataError, HceError, HceWarning
from hce.log import combine_logs, read_log
from hce.report import figures
from hce.report.document import Figure, Report
from hce.report.generic import check_columns, not_reported_section
from hce.report.tables import Table, format_p
from hce.rubric import Rubric, load_rubric
from hce.stats.result import AnalysisResult
from hce.study.analyses import experiment1, experiment2, experiment3, experiment5
from hce.study.config import JUDGED_LOGS
from hce.study.confidence import logprob_confidence, score_range
from hce.study.handoffs import decisions_in
from hce.study.settings import SETTINGS_FILE, describe, effective_settings, read_settings

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
    "share_below": "Share of items under each SD threshold",
    "score_descriptives": "Scores assigned (descriptive)",
    "uncertainty": "Confidence vs per-item SD (Spearman)",
    "metadata": "SD by transcript metadata",
    "fairness_omnibus": "Fairness: scores and SDs across strata (Kruskal-Wallis, Holm)",
    "fairness_pairwise": "Fairness: pairwise comparisons across strata",
    "fairness_verdict": "Success Metric 6: any detrimental difference across strata",
}
INLINE_ROWS = 30
# One row per item (or per bin): always written to CSV, never printed in the body.
PER_ITEM_TABLES = {"sd", "mae", "mean_scores", "distribution", "sd_histogram"}


@dataclass
class StudyResults:
    """What the report is built from: the log, each experiment's analysis and the settings that made it.

    ``settings`` holds each analysis's effective keyword arguments; ``saved`` names the
    experiments whose settings a study saved (the rest ran on the defaults of
    :mod:`hce.study.analyses`); ``decisions`` is the study's ``decisions.json`` (empty for bare logs).
    """

    log: pd.DataFrame
    experiments: dict[str, AnalysisResult]
    simulated: bool
    failures: dict[str, str] = field(default_factory=dict)
    settings: dict[str, dict] = field(default_factory=dict)
    saved: set[str] = field(default_factory=set)
    decisions: dict[str, dict] = field(default_factory=dict)


def analyse(
    log: pd.DataFrame,
    *,
    strata: Sequence[str] = (),
    metadata: Sequence[str] = (),
    settings: Mapping[str, Mapping] | None = None,
) -> StudyResults:
    """Run each experiment's analysis plan on the rows of the log that belong to it.

    ``settings`` (``analysis_settings.json`` of a study, :func:`hce.study.settings.read_settings`)
    gives each experiment the keyword arguments the study analysed it with, so the report
    shows what the study decided; an experiment without saved settings runs on the defaults.
    ``strata`` and ``metadata``, when given, apply to Exp 5 over any saved ones.
    """
    present = set(log["experiment_id"].dropna().unique()) if "experiment_id" in log else set()
    saved = {k: dict(v["settings"]) for k, v in (settings or {}).items()}
    results, failures, used = {}, {}, {}
    for experiment_id, (_, helper) in EXPERIMENTS.items():
        if experiment_id not in present:
            continue
        data, kwargs = log, dict(saved.get(experiment_id, {}))
        if experiment_id.startswith("EXP5"):
            kwargs.update({k: list(v) for k, v in (("strata", strata), ("metadata", metadata)) if v or k not in kwargs})
            data = with_logprob_confidence(log, experiment_id)
        used[experiment_id] = effective_settings(helper, **kwargs)
        try:
            with warnings.catch_warnings():
                # Items without two valid attempts are reported in the tables and notes.
                warnings.simplefilter("ignore", HceWarning)
                results[experiment_id] = helper(data, **kwargs)
        except HceError as exc:  # e.g. a single condition: the plan's test cannot run
            failures[experiment_id] = str(exc)
    return StudyResults(log=log, experiments=results, simulated=is_simulated(log), failures=failures,
                        settings=used, saved=set(saved) & set(used))  # fmt: skip


def with_logprob_confidence(log: pd.DataFrame, experiment_id: str) -> pd.DataFrame:
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
    log.loc[rows, "confidence"] = logprob_confidence(log[rows])
    return log


def is_simulated(log: pd.DataFrame) -> bool:
    """True when any attempt was answered by hce's simulated judge (its system fingerprint says so)."""
    if "system_fingerprint" not in log:
        return False
    return bool(log["system_fingerprint"].astype("str").str.startswith(SIM_FINGERPRINT).any())


def _table(result: AnalysisResult, name: str, prefix: str, confidence: float) -> Table:
    return Table(result[name], caption=CAPTIONS.get(name, name.replace("_", " ")), name=f"{prefix}_{name}", confidence=confidence)


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
    for figure in _experiment_figures(experiment_id, result, prefix):
        section.add(figure)
    if long_tables:
        section.add("Per-item tables (CSV): " + ", ".join(f"tables/{t.name}.csv" for t in long_tables) + ".")
        section.blocks.extend(replace(t, inline=False) for t in long_tables)


def _total_sd(result: AnalysisResult) -> pd.DataFrame:
    sd = result["sd"]
    return sd[sd["criterion"] == "total"] if "criterion" in sd else sd


def _experiment_figures(experiment_id: str, result: AnalysisResult, prefix: str) -> list[Figure]:
    if experiment_id.startswith("EXP1"):
        dist = result["distribution"]
        groups = {
            source: np.repeat(part["total"].to_numpy(dtype=float), part["count"].to_numpy(dtype=int))
            for source, part in dist.groupby("source", sort=False)
        }
        return [Figure(figures.score_histograms(groups), f"{prefix}_score_histograms",
                       "Figure 4: Total scores of G1, G2 and the synthetic targets (H1c)")]
    if experiment_id.startswith(("EXP2", "EXP3")):
        sd = _total_sd(result)
        condition = result["winner"].columns[0]  # the compared factor (prompt_id or model)
        number, what = ("1", "prompt strategies") if experiment_id.startswith("EXP2") else ("2", "LLM architectures")
        return [Figure(figures.sd_by_condition(sd, condition=condition), f"{prefix}_sd_by_condition",
                       f"Figure {number}: Per-item SD of total scores for the {what}")]
    if experiment_id.startswith("EXP5"):
        return [Figure(figures.sd_histogram(_total_sd(result), thresholds=[1.0]), f"{prefix}_sd_histogram",
                       "Figure 3: Distribution of per-item SDs of the total score for the final tool")]
    return []


def dataset_table(log: pd.DataFrame) -> pd.DataFrame:
    """Table 1: attempts, items, conditions, models, errors and scores per experiment."""
    rows = []
    for experiment_id, part in log.groupby("experiment_id", sort=True):
        valid = part.loc[~part["error_flag"], "total"] if "total" in part else pd.Series(dtype=float)
        rows.append(
            {
                "experiment_id": experiment_id,
                "n_items": part["item_id"].nunique(),
                "n_conditions": part["condition_id"].nunique() if "condition_id" in part else np.nan,
                "models": ", ".join(sorted(part["model"].dropna().astype(str).unique())) if "model" in part else "",
                "prompts": ", ".join(sorted(part["prompt_id"].dropna().astype(str).unique())) if "prompt_id" in part else "",
                "n_attempts": len(part),
                "n_errors": int(part["error_flag"].sum()),
                "mean_total": float(valid.mean()) if len(valid) else np.nan,
                "sd_total": float(valid.std(ddof=1)) if len(valid) > 1 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def key_results(results: dict[str, AnalysisResult]) -> pd.DataFrame:
    """Table 2: the hypothesis tests of the prompt and model comparisons in one table."""
    picks = [
        ("EXP1_BaselineRubricUtility", "h1a", "H1a: SD, G2 vs G1"),
        ("EXP1_BaselineRubricUtility", "h1b", "H1b: MAE, G2 vs G1"),
        ("EXP2_PromptOptimization", "friedman", "H2: SD across prompt strategies"),
        ("EXP3_ModelComparison", "friedman", "H3: SD across models"),
    ]
    rows = []
    for experiment_id, name, label in picks:
        if experiment_id in results and name in results[experiment_id]:
            row = results[experiment_id][name].iloc[0]
            rows.append({"comparison": label, "method": row.get("method"), "statistic": row.get("statistic"),
                         "p_value": row.get("p_value"), "effect_size": row.get("effect_size"),
                         "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"), "n": row.get("n")})
    return pd.DataFrame(rows, columns=["comparison", "method", "statistic", "p_value", "effect_size", "ci_low", "ci_high", "n"])


NOT_MEASURABLE = "not measurable from this log"


def scorecard(results: StudyResults, *, alpha: float = 0.05) -> pd.DataFrame:
    """Each PRD success metric (seed 000 section 1) with its value, threshold and verdict.

    Returns
    -------
    DataFrame
        ``metric``, ``criterion``, ``value``, ``threshold``, ``verdict`` (``"met"``,
        ``"not met"`` or ``"not measurable from this log"``).
    """
    exp = results.experiments
    rows: list[dict[str, object]] = []

    def add(metric: str, criterion: str, value: str, threshold: str, verdict: str) -> None:
        rows.append({"metric": metric, "criterion": criterion, "value": value, "threshold": threshold, "verdict": verdict})

    tests = [(k, n) for k, n in (("EXP1_BaselineRubricUtility", "h1a"), ("EXP2_PromptOptimization", "friedman"), ("EXP3_ModelComparison", "friedman")) if k in exp]
    if tests:
        ps = {f"{k.split('_')[0]} {n}": float(exp[k][n]["p_value"].iloc[0]) for k, n in tests}
        value = "; ".join(f"{name} p {format_p(p)}" for name, p in ps.items())
        add("SM1", "significant differences between conditions", value, f"p < {alpha:g}",
            "met" if any(p < alpha for p in ps.values()) else "not met")
    else:
        add("SM1", "significant differences between conditions", "—", f"p < {alpha:g}", NOT_MEASURABLE)
    if "EXP5_FinalToolValidation" in exp:
        both = exp["EXP5_FinalToolValidation"]["success_metric_2"].set_index("metric").loc["both"]
        add("SM2", "items with category SD <= 0.40 and total SD <= 1.0 (Exp 5)",
            f"{both['estimate']:.1%} [{both['ci_low']:.1%}, {both['ci_high']:.1%}] of {int(both['n_items'])}",
            f">= {both['target_share']:.0%}", "met" if bool(both["meets"]) else "not met")
    else:
        add("SM2", "items with category SD <= 0.40 and total SD <= 1.0 (Exp 5)", "—", ">= 95%", NOT_MEASURABLE)
    if "EXP1_BaselineRubricUtility" in exp:
        sm3 = exp["EXP1_BaselineRubricUtility"]["success_metric_3"]
        g2 = sm3[sm3.iloc[:, 0].astype(str) == "P1.2"].iloc[0] if (sm3.iloc[:, 0].astype(str) == "P1.2").any() else sm3.iloc[-1]
        add("SM3", "Pearson r of mean G2 total with target (Exp 1)",
            f"r = {g2['estimate']:.2f} [{g2['ci_low']:.2f}, {g2['ci_high']:.2f}]", f">= {g2['threshold']:g}",
            "met" if bool(g2["meets"]) else "not met")
    else:
        add("SM3", "Pearson r of mean G2 total with target (Exp 1)", "—", ">= 0.7", NOT_MEASURABLE)
    add("SM4", "reasoning of >= 15 real transcripts reviewed (Exp 4)", "—", ">= 15 transcripts",
        NOT_MEASURABLE + " (needs the coded reasoning table)")
    exp5 = exp.get("EXP5_FinalToolValidation")
    log = results.log
    exp5_logprobs = bool("logprobs" in log and "experiment_id" in log
                         and log.loc[log["experiment_id"] == "EXP5_FinalToolValidation", "logprobs"].notna().any())
    if exp5 is not None and "uncertainty" in exp5 and len(exp5["uncertainty"]) and pd.notna(exp5["uncertainty"]["estimate"].iloc[0]):
        unc = exp5["uncertainty"].iloc[0]
        add("SM5", "a method quantifying score uncertainty explored (Exp 5)",
            f"{unc['method']}: rho = {unc['estimate']:.2f}, p {format_p(unc['p_value'])}", "reported", "met")
    elif exp5 is not None and exp5_logprobs:
        add("SM5", "a method quantifying score uncertainty explored (Exp 5)",
            "token-probability confidence and its calibration (section below)", "reported", "met")
    else:
        add("SM5", "a method quantifying score uncertainty explored (Exp 5)", "—", "reported", NOT_MEASURABLE)
    fair = exp.get("EXP5_FinalToolValidation")
    if fair is not None and "fairness_verdict" in fair:
        verdict = fair["fairness_verdict"].iloc[0]
        add("SM6", "no detrimental difference across demographic strata",
            "detrimental difference found" if bool(verdict["any_detrimental"]) else "none found",
            f"alpha = {verdict['alpha']:g}, {verdict['adjustment']}", "met" if bool(verdict["passes"]) else "not met")
    else:
        add("SM6", "no detrimental difference across demographic strata", "—", "alpha = 0.05", NOT_MEASURABLE + " (no strata given)")
    planned = ["EXP1_BaselineRubricUtility", "EXP2_PromptOptimization", "EXP3_ModelComparison", "EXP5_FinalToolValidation"]
    done = [p for p in planned if p in exp]
    add("SM7", "all planned experiments completed", f"{len(done)} of {len(planned)} analysable experiments in the log",
        "all", "met" if len(done) == len(planned) else "not met")
    return pd.DataFrame(rows)


def _conditions(log: pd.DataFrame) -> list[str]:
    """Columns that identify a condition: condition_id when logged, else prompt and model."""
    if "condition_id" in log and log["condition_id"].notna().all():
        return ["condition_id"]
    return [c for c in ("prompt_id", "model") if c in log and log[c].notna().all()]


def reliability_table(log: pd.DataFrame, *, score: str = "total", confidence: float = 0.95, random_state: int = 0) -> pd.DataFrame:
    """Agreement of repeated attempts with each other, per experiment and condition.

    Attempts are exchangeable replications of one judge configuration, so the one-way
    ICC(1) (single attempt) and ICC(1,k) (mean of k attempts) apply, with Krippendorff's
    interval alpha (unit-bootstrap CI) beside them. Errored attempts are left out and
    incomplete items kept (REML variance components).
    """
    valid = log[~log["error_flag"] & log[score].notna()] if score in log else log.iloc[0:0]
    experiments = valid.groupby("experiment_id", sort=True) if "experiment_id" in valid else [(None, valid)]
    rows = []
    for experiment_id, rows_of_experiment in experiments:
        keys = _conditions(rows_of_experiment)  # per experiment: Exp 2 varies the prompt, Exp 3 the model
        groups = rows_of_experiment.groupby(keys, sort=True) if keys else [((), rows_of_experiment)]
        for key, part in groups:
            if part["item_id"].nunique() < 2 or part.groupby("item_id").size().max() < 2:
                continue
            labels = {"experiment_id": experiment_id, **dict(zip(keys, key if isinstance(key, tuple) else (key,)))}
            try:  # one condition whose totals do not vary leaves the others reported
                rows += _reliability_rows(part, labels, score, confidence, random_state)
            except DataError as exc:
                rows.append({**labels, "estimator": "not reported", "method": str(exc)})
    return pd.DataFrame(rows)


def _reliability_rows(part: pd.DataFrame, labels: dict, score: str, confidence: float, random_state: int) -> list[dict]:
    rows = []
    iccs = hs.icc(part, targets="item_id", raters="attempt", ratings=score, confidence=confidence)
    for _, row in iccs[iccs["estimator"].isin(["ICC1", "ICC1k"])].iterrows():
        rows.append({**labels, "estimator": row["mcgraw_wong"], "estimate": row["estimate"], "ci_low": row["ci_low"],
                     "ci_high": row["ci_high"], "n_targets": row["n_targets"], "n_ratings": row["n_ratings"], "method": row["method"]})
    alpha = hs.krippendorff_alpha(part, targets="item_id", raters="attempt", ratings=score, level="interval",
                                  confidence=confidence, random_state=random_state).iloc[0]
    rows.append({**labels, "estimator": "Krippendorff's alpha (interval)", "estimate": alpha["estimate"], "ci_low": alpha["ci_low"],
                 "ci_high": alpha["ci_high"], "n_targets": alpha["n_targets"], "n_ratings": alpha["n_ratings"], "method": alpha["ci_method"]})
    return rows


def _reliability_section(report: Report, results: StudyResults, confidence: float) -> None:
    table = reliability_table(results.log, confidence=confidence)
    if len(table):
        report.section("Reliability across repeated attempts").add(
            "Each attempt is treated as a rater of the item; the judge is reliable when repeated attempts agree.",
            Table(table, "Intraclass correlation and Krippendorff's alpha of repeated total scores", "reliability_attempts", confidence),
        )


def _varying_factor(part: pd.DataFrame) -> list[str]:
    """The condition factor an experiment varies (prompt or model), if any."""
    return [c for c in ("prompt_id", "model") if c in part and part[c].nunique() > 1][:1]


def _variance_section(report: Report, results: StudyResults, confidence: float) -> None:
    log = results.log
    valid = log[~log["error_flag"] & log["total"].notna()] if "total" in log else log.iloc[0:0]
    section = None
    for experiment_id in results.experiments:
        part = valid[valid["experiment_id"] == experiment_id]
        facets = ["item_id", *_varying_factor(part)]
        attempts = int(part.groupby(facets).size().median()) if len(part) else 0
        if part["item_id"].nunique() < 2 or attempts < 2:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vc = hs.variance_components(part, score="total", facets=facets, n_attempts=attempts, confidence=confidence)
        if section is None:
            section = report.section("Variance decomposition (generalizability theory)")
            section.add("Variance of the total score split into item, condition, their interaction and the residual "
                        "(attempt-to-attempt noise); G and Phi for the mean of the attempts made per item.")
        prefix = experiment_id.split("_")[0].lower()
        section.add(Table(vc.components, f"{EXPERIMENTS[experiment_id][0]}: variance components", f"{prefix}_variance_components", confidence),
                    Table(vc.coefficients, f"{EXPERIMENTS[experiment_id][0]}: G and Phi coefficients", f"{prefix}_g_coefficients", confidence))
        section.add(*(f"Note ({prefix}): {w.message}" for w in caught))


def calibration_data(part: pd.DataFrame, criteria: Sequence[str], *, rubric: Rubric | None = None) -> pd.DataFrame:
    """Per attempt and criterion: the logprob of the chosen category score and whether it is the item's mode.

    The final score block ends the reply, so the k-th of its n category scores is the
    (k - n)-th score token from the end (:func:`hce.stats.logprob_confidence`); the possible
    scores are the rubric's (default v5: 1-4).
    """
    n = len(criteria)
    low, high = score_range(rubric or load_rubric("v5"))
    found = hs.logprob_confidence(part, scores=range(low, high + 1), occurrence=range(-n, 0))
    frames = []
    for k, criterion in enumerate(criteria):
        conf = found[found["occurrence"] == k - n]
        outcome = hs.agrees_with_mode(part, score=criterion).to_numpy(dtype=float)
        frames.append(conf.assign(criterion=criterion, outcome=outcome)[["item_id", "attempt", "criterion", "prob", "outcome"]])
    data = pd.concat(frames, ignore_index=True)
    return data[data["prob"].notna() & data["outcome"].notna()]


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
        data = calibration_data(part, criteria)
        if len(data) < 20:
            continue
        prefix = experiment_id.split("_")[0].lower()
        metrics = hs.calibration_metrics(data, prob="prob", outcome="outcome", item="item_id",
                                                  confidence=confidence, random_state=0)
        table = hs.reliability_table(data, prob="prob", outcome="outcome", confidence=confidence)
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
        figures.reliability_diagram(table, ax=ax)
        if section is None:
            section = report.section("Confidence and calibration (token probabilities)")
            section.add("Confidence is the judge's token probability of the category score it gave; the outcome is "
                        "whether that score is the item's most frequent one across attempts (PRD Exp 5, item 5).")
        section.add(Table(metrics, f"{EXPERIMENTS[experiment_id][0]}: calibration of category-score confidence",
                          f"{prefix}_calibration", confidence),
                    Table(table, f"{EXPERIMENTS[experiment_id][0]}: reliability table", f"{prefix}_reliability_bins", confidence),
                    Figure(fig, f"{prefix}_reliability_diagram", f"Figure 5: Reliability diagram of category-score confidence ({prefix})"))


def bayes_section(report: Report, results: StudyResults, confidence: float, *, random_state: int = 0) -> None:
    """Bayesian uncertainty (slow, MCMC): judge noise by condition and attempts each item needs.

    For each experiment that varies the prompt or the model, the location-scale ordinal model
    ``total ~ condition + (1 | item_id)`` with ``noise = condition`` gives each condition's
    noise and P(one condition is more consistent than another); for Experiment 5, the model
    ``total ~ 1 + (1 | item_id)`` gives the attempts each item needs for a mean with SD <= 1.
    """
    from hce.stats.bayes import bayes_ordinal

    section = report.section("Bayesian uncertainty (hierarchical ordinal models)")
    log = results.log
    valid = log[~log["error_flag"] & log["total"].notna()]
    for experiment_id in results.experiments:
        part = valid[valid["experiment_id"] == experiment_id].copy()
        factor = _varying_factor(part)
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
                            Table(fit.attempts(target_sd=1.0), f"{title}: attempts needed for a mean total with SD <= 1",
                                  f"{prefix}_bayes_attempts", confidence))
        verdict = "converged" if fit.converged else "NOT CONVERGED: " + "; ".join(map(str, fit.flags))
        section.add(f"{title}: MCMC diagnostics {verdict}.", *(f"Note ({prefix}): {w.message}" for w in caught))


def _bayes_skipped(report: Report, results: StudyResults, confidence: float) -> None:
    report.section("Bayesian uncertainty (hierarchical ordinal models)").add(
        "Skipped: MCMC takes minutes. Run `hce report ... --bayes` (or pass "
        "`extra_sections=[bayes_section]` to study_report) to include it."
    )


SectionBuilder = Callable[[Report, StudyResults, float], None]
DEFAULT_SECTIONS: tuple[SectionBuilder, ...] = (_variance_section, _reliability_section, _calibration_section)


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
) -> Report:
    """Build the study report from one or more attempt logs (no API calls).

    Parameters
    ----------
    logs : DataFrame or list of DataFrames
        Attempt logs (:func:`hce.read_log`); several are concatenated, refusing an
        ``attempt_id`` in two of them (:func:`hce.log.merge_logs` combines them on purpose).
    title : str
        A report from the simulated judge says so in its title, whatever is passed.
    strata, metadata : list of str
        Demographic strata (Success Metric 6) and transcript metadata columns for Exp 5.
    extra_sections : list of callables
        Builders ``f(report, results, confidence)`` adding optional sections (e.g. Bayesian).
    settings, decisions : mapping, optional
        A study's ``analysis_settings.json`` and ``decisions.json``: each experiment is
        analysed with the study's own settings and the section says what the study handed
        on. Without them the defaults are used and each section says so
        (:func:`study_folder_report` reads both from a study folder).

    Returns
    -------
    Report
        ``.write(folder)`` writes Markdown, HTML, CSV, LaTeX, PNG and SVG.
    """
    log = combine_logs(logs) if isinstance(logs, Sequence) else logs  # an attempt in two logs is refused
    check_columns(log, "--strata", strata)  # a misspelt column is an error before any work, not a lost section
    check_columns(log, "--metadata", metadata)
    results = analyse(log, strata=strata, metadata=metadata, settings=settings)
    results.decisions = dict(decisions or {})
    if results.simulated:
        title = f"{title} — SIMULATED JUDGE (hce sim-server), not real model output"
    report = Report(title)
    overview = report.section("Datasets and key results")
    overview.add(Table(dataset_table(log), "Table 1: Attempt log by experiment", "table1_datasets", confidence))
    key = key_results(results.experiments)
    if len(key):
        overview.add(Table(key, "Table 2: Key statistical results for prompt and model comparisons", "table2_key_results", confidence))
    overview.add(Table(scorecard(results), "Success metrics scorecard (PRD section 1)", "scorecard", confidence))
    for experiment_id, result in results.experiments.items():
        _experiment_section(report, experiment_id, result, results, confidence)
    for experiment_id, message in results.failures.items():
        report.section(EXPERIMENTS[experiment_id][0]).add(f"The analysis plan could not be run on this log: {message}")
    if not results.experiments and not results.failures:
        overview.add("No rows of Experiments 1, 2, 3 or 5 were found (column experiment_id); only Table 1 is shown.")
    for builder in (*DEFAULT_SECTIONS, *extra_sections):
        builder(report, results, confidence)
    if bayes_section not in extra_sections:
        _bayes_skipped(report, results, confidence)
    not_reported_section(report, [{"section": EXPERIMENTS[e][0], "reason": message, "fix": "see the reason; the other experiments are reported"}
                                  for e, message in results.failures.items()], confidence)  # fmt: skip
    return report


def study_folder_report(folder: str | os.PathLike, **kwargs) -> Report:
    """The study report of a study's output folder, analysed exactly as the study analysed it.

    The folder's judged logs (``exp1.jsonl``, ``exp2.jsonl``, ``exp3.jsonl``, ``exp5.jsonl``)
    are reported with the settings the run saved (``analysis_settings.json``: winner rule,
    adjustment, alpha, seeds) and the decisions it handed on (``decisions.json``), so the
    report names the same winners. Other keyword arguments go to :func:`study_report`.
    """
    folder = Path(folder)
    paths = [folder / name for name in JUDGED_LOGS if (folder / name).is_file()]
    if not paths:
        raise DataError(f"{folder}: no attempt log of a judged experiment ({', '.join(JUDGED_LOGS)}); "
                        "is it a study's output folder?")  # fmt: skip
    logs = [read_log(path) for path in paths]
    return study_report(logs, settings=read_settings(folder), decisions=decisions_in(folder), **kwargs)
