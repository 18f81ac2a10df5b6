"""The steps of the study run: each experiment judged, analysed, saved and handed on."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hce.collect.design.design import Design
from hce.collect.running.runner import run
from hce.log import read_log
from hce.stats.result import AnalysisResult
from hce.study import synthetic
from hce.study.analyses import experiment1, experiment2, experiment3, experiment5
from hce.study.claims import DEMOGRAPHIC_STRATA
from hce.study.confidence import logprob_confidence, logprobs_behaviour
from hce.study.config import Study, StudyStop
from hce.study.designs import corpus_items, exp_design, generation_design, synthetic_targets
from hce.study.handoffs import choose_winner, read_decisions, resolved, winner_kwargs, write_decision
from hce.study.settings import save_settings
from hce.study.transcripts import write_transcripts

#: Seed of every bootstrap of a study's analyses (recorded in analysis_settings.json).
ANALYSIS_SEED = 0


@dataclass
class StudyRun:
    """What :func:`run_study` did: per-experiment summaries, decisions and where things are.

    Attributes
    ----------
    output : Path
        The study's output folder.
    summaries : dict
        Experiment -> its collection summary (:class:`hce.collect.RunSummary`).
    decisions : dict
        Kind (prompt, model) -> the choice handed on, its source and evidence.
    analyses : dict
        Experiment -> its :class:`~hce.stats.AnalysisResult`.
    messages : list of str
        What the run reported along the way.
    simulated : bool
        Whether the simulated judge judged (Experiment 4 then simulates its researchers too).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hce.study import StudyRun
    >>> StudyRun(output=Path("my_study")).decisions
    {}
    """

    output: Path
    summaries: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    analyses: dict[str, Any] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    simulated: bool = False  # judged by the simulated judge (Exp 4 then simulates its researchers too)


def run_design(design: Design, log: Path, connection: Mapping[str, Any]) -> Any:
    return run(design, log, **connection)


def judge(study: Study, result: StudyRun, key: str, design: Design, connection: Mapping[str, Any]) -> pd.DataFrame:
    """Run an experiment's design (resuming) and return the log rows of exactly that design."""
    result.summaries[key] = run_design(design, study.log_path(key), connection)
    return current_log(study, result, key, design)


def current_log(study: Study, result: StudyRun, key: str, design: Design) -> pd.DataFrame:
    # A log can hold attempts of an earlier configuration (another pinned prompt, say);
    # only the current design's attempts are analysed, and the rest is reported.
    log = read_log(study.log_path(key))
    planned = {a.attempt_id for a in design.plan()}
    current = log[log["attempt_id"].isin(planned)].copy()
    if len(current) < len(log):
        result.messages.append(f"{design.experiment_id}: {len(log) - len(current)} logged attempt(s) of another "
                               f"configuration left out of the analysis (kept in {study.log_path(key)})")  # fmt: skip
    return current


def analyse(study: Study, result: StudyRun, key: str, function: Callable[..., AnalysisResult], data: pd.DataFrame,
            *, notes: Sequence[str] = (), **kwargs: Any) -> AnalysisResult:
    """Run an experiment's analysis, save its tables and the settings that made it (for the report)."""
    if "random_state" in inspect.signature(function).parameters:
        kwargs.setdefault("random_state", ANALYSIS_SEED)  # saved below, so the report redraws the same intervals
    analysis = function(data, **kwargs)
    analysis.notes.extend(notes)
    log = study.log_path(key).name if key in ("exp1", "exp2", "exp3", "exp5") else None
    save_settings(study.output, study.exp(key)["id"], function, log, **kwargs)
    folder = study.output / "analysis" / key
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in analysis.tables.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    (folder / "summary.md").write_text(analysis.summary() + "\n", encoding="utf-8")
    result.analyses[key] = analysis
    return analysis


def exp1(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    spec = study.exp("exp1")["synthetic"]
    targets = synthetic_targets(study)
    target_file = study.output / "synthetic_targets.csv"
    if target_file.is_file():
        saved = pd.read_csv(target_file, dtype={"transcript_id": str})
        if not saved[["transcript_id", "target_total"]].equals(targets[["transcript_id", "target_total"]]):
            raise StudyStop(f"{target_file} holds other targets than experiments.exp1.synthetic gives now; "
                            "move the output folder away to start Exp 1 anew")  # fmt: skip
    else:
        targets.to_csv(target_file, index=False)
    gen_log = study.log_path("exp1_generation")
    todo = targets
    for tries in range(1, spec["max_regenerations"] + 2):
        # Attempt k of a target is only requested when attempts 1..k-1 failed or leaked.
        run_design(generation_design(study, todo, attempts=tries), gen_log, connection)
        log = read_log(gen_log)
        usable = log[~log["error_flag"].astype(bool) & ~log["leak_flag"].fillna(False).astype(bool)]
        todo = targets[~targets["transcript_id"].isin(usable["item_id"])]
        if todo.empty:
            break
    synth = synthetic.synthetic_corpus(read_log(gen_log), targets, policy={"use_leaked": spec["use_leaked"]})
    write_transcripts(synth, study.output / "synthetic_corpus.jsonl")
    leaked = int(synth["leak_flag"].sum())
    if leaked:
        result.messages.append(f"Exp 1: {leaked} synthetic transcript(s) still mention the rubric or score (leak_flag)")
    items = corpus_items(synth[["transcript_id", "text", "target_total", "stratum", "leak_flag", "n_words"]], rubric=study.rubric)
    log = judge(study, result, "exp1", exp_design(study, "exp1", items), connection)
    analyse(study, result, "exp1", experiment1, log, non_rubric=study.exp("exp1")["prompts"][0],
            rubric=study.exp("exp1")["prompts"][-1], experiment_id=study.exp("exp1")["id"])  # fmt: skip


def exp2(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp2")
    items = corpus_items(corpus, sets[exp["set"]], study.rubric)
    log = judge(study, result, "exp2", exp_design(study, "exp2", items), connection)
    analysis = analyse(study, result, "exp2", experiment2, log, experiment_id=exp["id"], **winner_kwargs(exp["winner"]))
    write_decision(study, "prompt", choose_winner(analysis, kind="prompt", column="prompt_id", rule=exp["winner"]))


def exp3(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp3")
    if study.exp("exp2")["winner"]["pin"] and not study.enabled("exp2"):
        write_decision(study, "prompt", {"choice": study.exp("exp2")["winner"]["pin"], "source": "pinned", "kind": "prompt"})
    prompt = resolved(study, "exp3", "prompt")
    items = corpus_items(corpus, sets[exp["set"]], study.rubric)
    log = judge(study, result, "exp3", exp_design(study, "exp3", items, prompt=prompt), connection)
    analysis = analyse(study, result, "exp3", experiment3, log, experiment_id=exp["id"], **winner_kwargs(exp["winner"]))
    decision = choose_winner(analysis, kind="model", column="model", rule=exp["winner"])
    decision["prompt"] = prompt
    write_decision(study, "model", decision)


def exp5(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp5")
    prompt, model = resolved(study, "exp5", "prompt"), resolved(study, "exp5", "model")
    if study.exp("exp3")["winner"]["pin"] and "model" not in read_decisions(study):
        write_decision(study, "model", {"choice": model, "source": "pinned", "kind": "model"})
    items = corpus_items(corpus, sets[exp["set"]], study.rubric)
    log = judge(study, result, "exp5", exp_design(study, "exp5", items, prompt=prompt, model=model), connection)
    notes = [f"configuration: prompt {prompt}, model {model}"]
    if ("confidence" not in log.columns or log["confidence"].isna().all()) and "logprobs" in log.columns:
        log["confidence"] = logprob_confidence(log, rubric=study.rubric, logprobs_are=exp["logprobs_are"])
        log[["attempt_id", "confidence"]].to_csv(study.output / "exp5_confidence.csv", index=False)
        notes.append("confidence: the judge's mean probability of the category scores it wrote at the temperature used, "
                     f"from logprobs assumed {logprobs_behaviour(log, exp['logprobs_are'])!r} "
                     f"(exp5_confidence.csv; {int(log['confidence'].notna().sum())} of {len(log)} attempts)")  # fmt: skip
    meta = [c for c in ("n_words", "source") if c in log.columns and log[c].nunique() >= 2]
    # Success Metric 6 is assessed on every demographic stratum the corpus records (PRD: "if available").
    strata = [c for c in DEMOGRAPHIC_STRATA if c in log.columns and log[c].nunique() >= 2]
    if strata:
        notes.append(f"Success Metric 6: strata {', '.join(strata)} (the demographic columns the corpus records)")
    analyse(study, result, "exp5", experiment5, log, notes=notes, experiment_id=exp["id"], metadata=meta, strata=strata)
