"""The study's corpus, its Set A/B/C, and the collection designs each experiment sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.collect.design.design import Condition, CustomPrompt, Design, Item, check_temperature
from hce.collect.design.transcripts import is_missing
from hce.errors import CollectError, DataError
from hce.log import COLUMNS
from hce.rubric import Rubric, load_rubric
from hce.study import synthetic
from hce.study.config import Study, StudyStop
from hce.study.partition import partition, read_manifest, write_manifest
from hce.study.transcripts import load_transcripts


@keywords_checked
def load_corpus(study: Study) -> pd.DataFrame | None:
    """The real transcripts named by ``corpus.paths`` (None when no path is given).

    Parameters
    ----------
    study : Study

    Returns
    -------
    DataFrame or None
        One row per transcript, as :func:`load_transcripts` reads them.

    Examples
    --------
    >>> from hce.study import load_corpus, load_study
    >>> load_corpus(load_study()) is None  # the defaults name no corpus
    True
    """
    spec = study.config["corpus"]
    paths = spec["paths"] or []
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        return None
    sources = spec.get("sources") or []
    if sources and len(sources) != len(paths):
        raise CollectError(f"{study.source}: corpus.sources must give one label per path ({len(paths)}), got {sources!r}")
    frames = []
    for k, p in enumerate(paths):
        frames.append(load_transcripts(
            study.base / p, id_column=spec["id_column"], text_column=spec["text_column"],
            source=sources[k] if sources else None, strip=spec["strip"], encoding=spec["encoding"],
        ))  # fmt: skip
    corpus = pd.concat(frames, ignore_index=True)
    dup = corpus["transcript_id"][corpus["transcript_id"].duplicated()]
    if not dup.empty:
        raise DataError(f"TranscriptID {dup.iloc[0]!r} appears in more than one corpus path; IDs must be unique")
    return corpus


def study_sets(study: Study, corpus: pd.DataFrame) -> dict[str, list[str]]:
    """Set A/B/C of the corpus; written to ``partition.json`` once, checked on every rerun."""
    part = study.config["partition"]
    path = study.output / "partition.json"
    sets = partition(corpus["transcript_id"], seed=part["seed"], n_a=part["n_a"], n_b=part["n_b"])
    if path.is_file():
        manifest = read_manifest(path)
        if manifest["sets"] != sets:
            raise StudyStop(f"{path} was made from another corpus or partition setting (seed {manifest['seed']}, "
                            f"{manifest['n_master']} transcripts); move it away to partition anew")  # fmt: skip
    else:
        study.output.mkdir(parents=True, exist_ok=True)
        write_manifest(sets, path, seed=part["seed"], extra={"sources": sorted(corpus["source"].unique())})
    return sets


# --- designs -------------------------------------------------------------------------------


def condition(study: Study, prompt: str, model: str, **overrides: Any) -> Condition:
    s = study.settings(model, **overrides)
    temperature = s.get("temperature")
    cond_id = f"{prompt}|{model}" + (f"|t{float(temperature):g}" if temperature is not None else "")
    logprobs = bool(s.get("logprobs", False))
    check_temperature(f"{study.source} ({cond_id})", temperature, model, logprobs=logprobs)
    return Condition(
        id=cond_id, prompt_id=prompt, model=model,
        temperature=None if temperature is None else float(temperature),
        max_tokens=None if s.get("max_tokens") is None else int(s["max_tokens"]),
        top_p=None if s.get("top_p") is None else float(s["top_p"]),
        seed=None if s.get("seed") is None else int(s["seed"]),
        logprobs=logprobs, top_logprobs=int(s["top_logprobs"]) if logprobs and s.get("top_logprobs") else None,
    )  # fmt: skip


def corpus_items(corpus: pd.DataFrame, ids: list[str] | None = None, rubric: Rubric | None = None) -> tuple[Item, ...]:
    rows = corpus if ids is None else corpus.set_index("transcript_id").loc[ids].reset_index()
    reserved = set(COLUMNS) | set((rubric or load_rubric("v5")).criteria) | {"behavior_id", "text", "transcript_id"}
    keep = [c for c in rows.columns if c not in reserved and c not in ("outline", "stripped_lines", "n_chars")]
    items = []
    for record in rows.to_dict(orient="records"):
        meta = {k: _plain(record[k]) for k in keep if not is_missing(record[k])}
        cleaned = record.get("cleaned_chars")  # when the corpus loader cleaned the text (load_transcripts)
        items.append(Item(str(record["transcript_id"]), record["text"], metadata=meta,
                          cleaned_chars=0 if is_missing(cleaned) else int(cleaned)))
    return tuple(items)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def design_of(study: Study, experiment_id: str, items: tuple[Item, ...], conditions: list[Condition], attempts: int,
              prompts: Mapping[str, CustomPrompt] | None = None) -> Design:
    """A collection design of the study's items and conditions, with its endpoint and run limits."""
    run = study.config["run"]
    return Design(
        experiment_id=experiment_id, items=items, conditions=tuple(conditions), attempts=int(attempts),
        rubric=study.rubric, endpoints={"default": study.endpoint}, concurrency=int(run["concurrency"]),
        requests_per_minute=run["requests_per_minute"], tokens_per_minute=run["tokens_per_minute"], prompts=dict(prompts or {}),
    )  # fmt: skip


def synthetic_targets(study: Study) -> pd.DataFrame:
    spec = study.exp("exp1")["synthetic"]
    return synthetic.draw_targets(spec["n"], strata=spec["strata"], allocation=spec["allocation"], random_state=spec["seed"])


def generation_design(study: Study, targets: pd.DataFrame, attempts: int = 1) -> Design:
    spec = study.exp("exp1")["synthetic"]
    items = tuple(Item(t.transcript_id, None, metadata={"target_total": int(t.target_total), "stratum": t.stratum})
                  for t in targets.itertuples(index=False))  # fmt: skip
    cond = condition(study, "SYNTH", spec["model"], temperature=spec["temperature"], max_tokens=spec["max_tokens"])
    return design_of(study, "EXP1_SyntheticGeneration", items, [cond], attempts)


def exp_design(study: Study, key: str, items: tuple[Item, ...], *, prompt: str | None = None, model: str | None = None) -> Design:
    """The judging design of one experiment over ``items`` (prompt/model resolve 'winner')."""
    exp = study.exp(key)
    if key == "exp1":
        conds = [condition(study, p, exp["model"], temperature=exp["temperature"]) for p in exp["prompts"]]
    elif key == "exp2":
        conds = [condition(study, p, exp["model"]) for p in exp["prompts"]]
    elif key == "exp3":
        conds = [condition(study, prompt, m) for m in exp["models"]]
    elif key == "exp5":
        extra = {"logprobs": exp["logprobs"], "top_logprobs": exp["top_logprobs"]}
        conds = [condition(study, prompt, model, **extra)]
    else:
        raise CollectError(f"experiment {key!r} has no judging design")
    return design_of(study, exp["id"], items, conds, exp["attempts"])

