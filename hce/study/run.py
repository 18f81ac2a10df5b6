"""The study of seed 000 (Experiments 1-5) as configuration: plan it, run it, resume it.

A study file (YAML) is merged over the packaged defaults (:mod:`hce.study.config`), so a
researcher writes only what differs: usually the corpus paths. :func:`~hce.study.plan.plan`
counts calls, tokens and cost per experiment without sending anything; :func:`run_study`
runs the experiments in order, each feeding the next:

1. Exp 1 draws stratified target totals, generates synthetic transcripts (SYNTH prompt,
   temperature 0.7; failed or leaking replies regenerated up to a limit), and judges them
   with P1.1 and P1.2.
2. The real corpus is loaded and partitioned (Set A/B/C, manifest written).
3. Exp 2 judges Set A with P2.1-P2.3 and chooses the winning prompt.
4. Exp 3 judges Set B with the winning prompt on every model and chooses the winning model.
5. Exp 4 selects diverse transcripts, segments their reasoning, writes the coding sheet,
   optionally codes it with an LLM, and computes kappa and code-frequency tests when
   codes exist.
6. Exp 5 judges Set C with the winning prompt and model.

Everything lands in the study's output folder (logs, manifest, decisions, analyses). Every
call is logged as it finishes and attempt ids are deterministic, so running again resumes
where a run stopped, and finished analyses are recomputed from the logs. The winner rule
and the hand-offs between experiments are in :mod:`hce.study.handoffs`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
import yaml

from hce._vocabulary import keywords_checked
from hce.collect.call.client import endpoint_key
from hce.collect.design.transcripts import is_missing
from hce.errors import CollectError
from hce.log import read_log
from hce.rubric import Rubric
from hce.study.coding import exp4
from hce.study.config import EXPERIMENTS, Study, load_study
from hce.study.designs import load_corpus, study_sets
from hce.study.handoffs import read_decisions
from hce.study.human_ratings import absolute_ratings
from hce.study.steps import StudyRun, exp1, exp2, exp3, exp5

_STEPS = {"exp1": exp1, "exp2": exp2, "exp3": exp3, "exp4": exp4, "exp5": exp5}


def _truth(corpus: pd.DataFrame, rubric: Rubric) -> dict[str, dict[str, Any]]:
    """Latent truth for the simulated judge from target columns (``target_<criterion>``, ``target_total``)."""
    truth = {}
    cats = [c for c in rubric.criteria if f"target_{c}" in corpus.columns]
    for record in corpus.to_dict(orient="records"):
        levels = {c: int(record[f"target_{c}"]) for c in cats if not is_missing(record[f"target_{c}"])}
        if levels:
            truth[record["text"]] = levels
        elif "target_total" in record and not is_missing(record["target_total"]):
            truth[record["text"]] = {"total": int(record["target_total"])}
    return truth


@contextlib.contextmanager
def _simulated(study: Study, corpus: pd.DataFrame | None) -> Iterator[tuple[str, str]]:
    from hce.sim import Profile, SimJudge, SimServer

    sim = study.config["simulation"]
    # Fields left out keep the simulator's own defaults.
    profiles = {m: Profile(**{k: float(v) for k, v in (p or {}).items()}) for m, p in (sim["profiles"] or {}).items()}
    default = Profile(**{k: float(v) for k, v in (sim["default"] or {}).items()})
    truth = _truth(corpus, study.rubric) if corpus is not None else {}
    judge = SimJudge(seed=int(sim["seed"]), profiles=profiles, default=default, truth=truth)
    with SimServer(judge).start(process=True) as server:  # the judge on the other core
        yield server.url, "simulated"


@keywords_checked
def run_study(
    study: Study | str | os.PathLike | Mapping[str, Any],
    *,
    simulate: bool = False,
    base_url: str | None = None,
    api_key: str | None = None,
    progress: bool = False,
    until: str | None = None,
) -> StudyRun:
    """Run (or resume) the study: Experiments 1-5 in order, each feeding the next.

    Parameters
    ----------
    study : Study, path or mapping
    simulate : bool
        Judge with the simulated judge (``hce.sim``) on loopback instead of an
        API; item targets (``target_<criterion>`` / ``target_total`` columns) are its truth.
    base_url, api_key : str, optional
        Override the study's endpoint (the key otherwise comes from the environment).
    progress : bool
        Progress bars on stderr.
    until : {"exp1", ..., "exp5"}, optional
        Stop after this experiment.

    Returns
    -------
    StudyRun

    Raises
    ------
    StudyStop
        When a decision needs the researcher (no significant winner, say); collected
        attempts are kept and the next run resumes.

    Examples
    --------
    The simulated judge runs the whole protocol offline (minutes; a real run takes days):

    >>> from hce.study import run_study
    >>> run = run_study("study.yaml", simulate=True)  # doctest: +SKIP
    >>> run.decisions["prompt"]["choice"]  # doctest: +SKIP
    'P2.3'
    """
    study = study if isinstance(study, Study) else load_study(study)
    if until is not None and until not in EXPERIMENTS:
        raise CollectError(f"until={until!r} is not valid; choose one of {list(EXPERIMENTS)}")
    out = study.output
    out.mkdir(parents=True, exist_ok=True)
    # the human ratings' paths absolute: the study folder's report finds them wherever it is made
    resolved = absolute_ratings(study.config, study.base)
    (out / "study.resolved.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False), encoding="utf-8")
    result = StudyRun(output=out, simulated=simulate)
    needs_corpus = any(study.enabled(k) for k in ("exp2", "exp3", "exp4", "exp5"))
    corpus = load_corpus(study) if needs_corpus else None
    if needs_corpus and corpus is None:
        raise CollectError(f"{study.source}: corpus.paths is empty, but Experiments 2-5 need the real transcripts "
                           "(or disable them: experiments.expN.enabled: false)")  # fmt: skip
    sets = study_sets(study, corpus) if corpus is not None else {}
    with contextlib.ExitStack() as stack:
        if simulate:
            # The simulator knows the levels it planted in the synthetic transcripts it wrote;
            # the real corpus's target columns (if any) are its truth for the rest.
            url, key = stack.enter_context(_simulated(study, corpus))
            connection = {"base_url": url, "api_key": key}
        else:
            # The key is read once, before any call, and only from the variable the endpoint names.
            endpoint = study.endpoint
            url = base_url or endpoint.base_url
            key = api_key if api_key is not None else endpoint_key("study", url, endpoint.api_key_env,
                                                                         needs_key=endpoint.needs_key)
            connection = {"base_url": url, "api_key": key}
        connection["progress"] = progress
        for key in EXPERIMENTS:
            if study.enabled(key):
                _STEPS[key](study, result, corpus, sets, connection)
            if key == until:
                break
    result.decisions = read_decisions(study)
    return result


@keywords_checked
def status(study: Study) -> pd.DataFrame:
    """Where the study stands: per experiment, attempts logged, errors, and its decision.

    Parameters
    ----------
    study : Study

    Returns
    -------
    DataFrame
        ``experiment``, ``enabled``, ``log``, ``attempts_logged``, ``errors``,
        ``items``, ``decision`` (the chosen prompt/model and its source, where one is made).

    Examples
    --------
    >>> from hce.study import load_study, status
    >>> status(load_study({"output": "a_new_study"}))[["experiment", "attempts_logged"]].head(2)
                                    experiment  attempts_logged
    0  EXP1_BaselineRubricUtility (generation)                0
    1               EXP1_BaselineRubricUtility                0
    """
    decisions = read_decisions(study)
    rows = []
    for key, log_key in (("exp1", "exp1_generation"), ("exp1", "exp1"), ("exp2", "exp2"), ("exp3", "exp3"),
                         ("exp4", "exp4_llm"), ("exp5", "exp5")):  # fmt: skip
        path = study.log_path(log_key)
        logged = errors = items = 0
        if path.is_file():
            log = read_log(path)
            logged, errors, items = len(log), int(log["error_flag"].sum()), int(log["item_id"].nunique())
        decision = ""
        if log_key == "exp2" and "prompt" in decisions:
            decision = f"prompt {decisions['prompt']['choice']} ({decisions['prompt']['source']})"
        if log_key == "exp3" and "model" in decisions:
            decision = f"model {decisions['model']['choice']} ({decisions['model']['source']})"
        name = study.exp(key)["id"] + (" (generation)" if log_key == "exp1_generation" else "") + (" (LLM coding)" if log_key == "exp4_llm" else "")
        rows.append({"experiment": name, "enabled": study.enabled(key), "log": str(path) if path.is_file() else "",
                     "attempts_logged": logged, "errors": errors, "items": items, "decision": decision})  # fmt: skip
    return pd.DataFrame(rows)

