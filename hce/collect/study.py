"""The study of seed 000 (Experiments 1-5) as configuration: plan it, run it, resume it.

A study file (YAML) is merged over the packaged defaults (``hce/data/study_default.yaml``,
the protocol's numbers), so a researcher writes only what differs: usually the corpus
paths. :func:`plan` counts calls, tokens and cost per experiment without sending anything;
:func:`run_study` runs the experiments in order, each feeding the next:

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
where a run stopped, and finished analyses are recomputed from the logs.

The winner rule (7.2.8, 7.3.7): the condition with the lowest median SD of total scores
wins if Friedman's test is significant and the post-hoc tests (Wilcoxon signed-rank with
Bonferroni correction by default) find it significantly lower than every other condition.
Without such a winner the run stops and asks for a pinned choice (or, if configured, takes
the lowest-SD condition and says so). The choice, its source and its evidence are written
to ``decisions.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from hce.collect import reasoning, synthetic
from hce.collect.client import endpoint_key
from hce.collect.design import Condition, Design, Endpoint, Item, check_temperature, endpoint_from
from hce.collect.partition import partition, read_manifest, write_manifest
from hce.collect.pricing import ALIASES, cost_usd
from hce.collect.prompts import REPLY_FORMAT
from hce.collect.runner import CHARS_PER_TOKEN, estimate
from hce.collect.schema import EndpointSpec, RunSpec, SchemaError, SettingsSpec, did_you_mean, validate
from hce.collect.transcripts import is_missing, load_transcripts, write_transcripts
from hce.errors import CollectError, DataError, HceError
from hce.log import COLUMNS, LogWriter, logged_attempt_ids, make_attempt_id, read_log
from hce.rubric import Rubric, load_rubric

EXPERIMENTS = ("exp1", "exp2", "exp3", "exp4", "exp5")
# Mappings whose keys are the user's own (model names, strip rules), not checked against the defaults.
_FREE = {("model_settings",), ("simulation", "profiles"), ("simulation", "default"), ("corpus", "strip")}
_LOGS = {"exp1_generation": "exp1_generation.jsonl", "exp1": "exp1.jsonl", "exp2": "exp2.jsonl",
         "exp3": "exp3.jsonl", "exp4_llm": "exp4_llm_coding.jsonl", "exp5": "exp5.jsonl"}  # fmt: skip
_TYPICAL_CODING_OUTPUT = 400  # tokens of a JSON object of 5 x 5 codes


class StudyStop(HceError):
    """The study cannot go on without the researcher: a decision to pin, codes to provide."""


@dataclass
class Study:
    """A parsed study file: the merged configuration and where its paths are relative to."""

    config: dict[str, Any]
    base: Path
    source: str = "study"

    @property
    def output(self) -> Path:
        return self.base / str(self.config["output"])

    @property
    def rubric(self) -> Rubric:
        rubric = self.config["rubric"]
        path = self.base / str(rubric)
        return load_rubric(path if path.is_file() else rubric)

    @property
    def endpoint(self) -> Endpoint:
        """The study's endpoint (checked by :func:`load_study`)."""
        return endpoint_from("default", EndpointSpec.model_validate(self.config["endpoint"]))

    def exp(self, key: str) -> dict[str, Any]:
        return self.config["experiments"][key]

    def enabled(self, key: str) -> bool:
        return bool(self.exp(key).get("enabled", True))

    def log_path(self, key: str) -> Path:
        return self.output / _LOGS[key]


def default_config() -> dict[str, Any]:
    """The packaged defaults (the protocol's numbers) as a fresh mapping."""
    text = resources.files("hce.data").joinpath("study_default.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


def _merge(base: dict[str, Any], over: Mapping[str, Any], where: tuple[str, ...], source: str) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        path = (*where, str(key))
        if key not in base:
            raise SchemaError(f"{source}: {'.'.join(path)}: unknown key;{did_you_mean(str(key), base)} "
                              f"(valid here: {', '.join(sorted(base))})")  # fmt: skip
        if path in _FREE or not isinstance(base[key], dict):
            out[key] = value  # free mappings (model names, strip rules) replace the default whole
        elif value is not None:
            if not isinstance(value, Mapping):
                raise CollectError(f"{source}: {'.'.join(path)!r} must be a mapping, got {value!r}")
            out[key] = _merge(base[key], value, path, source)
    return out


def load_study(source: str | os.PathLike | Mapping[str, Any] | None = None) -> Study:
    """Read a study file (or mapping) merged over the packaged defaults, and check it.

    Parameters
    ----------
    source : path, mapping or None
        A YAML study file (its folder anchors relative paths), a mapping of the same shape
        (relative to the working directory), or None for the defaults alone.

    Raises
    ------
    CollectError
        An unknown key (naming its path and the valid keys), a bad value, an API key.

    Examples
    --------
    >>> study = load_study({"experiments": {"exp5": {"attempts": 5}}})
    >>> study.exp("exp5")["attempts"], study.exp("exp2")["attempts"]
    (5, 25)
    """
    if source is None:
        doc, base, name = {}, Path.cwd(), "study defaults"
    elif isinstance(source, Mapping):
        doc, base, name = dict(source), Path.cwd(), "study"
    else:
        path = Path(source)
        if not path.is_file():
            raise CollectError(f"study file {path} does not exist")
        name, base = str(path), path.resolve().parent
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise CollectError(f"{name}: not valid YAML: {exc}") from None
        if not isinstance(doc, dict):
            raise CollectError(f"{name}: a study file is a mapping (see hce/data/study_default.yaml)")
    _no_secret(doc, name)
    config = _merge(default_config(), doc, (), name)
    study = Study(config=config, base=base, source=name)
    _check(study)
    return study


def _no_secret(doc: Any, name: str, where: str = "") -> None:
    if isinstance(doc, dict):
        for key, value in doc.items():
            if str(key).lower() in ("api_key", "apikey", "secret", "password"):
                raise CollectError(f"{name}: {where + str(key)!r}: a study file never holds an API key; "
                                   "set it in the environment (endpoint.api_key_env names the variable)")  # fmt: skip
            _no_secret(value, name, f"{where}{key}.")


_SAMPLING = ("temperature", "max_tokens", "top_p", "seed", "top_logprobs", "logprobs")


def _check_schema(study: Study) -> None:
    """Types and ranges of every setting (:mod:`hce.collect.schema`): endpoint, run, sampling settings."""
    name, config = study.source, study.config
    validate(EndpointSpec, config["endpoint"], name, ("endpoint",))
    validate(RunSpec, config["run"], name, ("run",))
    validate(SettingsSpec, config["defaults"], name, ("defaults",))
    settings = config["model_settings"] or {}
    if not isinstance(settings, Mapping):
        raise SchemaError(f"{name}: model_settings must be a mapping of model name -> settings")
    for model, values in settings.items():
        validate(SettingsSpec, values, name, ("model_settings", str(model)))
    # Each experiment's own sampling settings (the other keys are checked by _check below).
    for path, mapping in (
        (("experiments", "exp1"), config["experiments"]["exp1"]),
        (("experiments", "exp1", "synthetic"), config["experiments"]["exp1"]["synthetic"]),
        (("experiments", "exp4", "llm_coding"), config["experiments"]["exp4"]["llm_coding"]),
        (("experiments", "exp5"), config["experiments"]["exp5"]),
    ):
        validate(SettingsSpec, {k: v for k, v in mapping.items() if k in _SAMPLING}, name, path)


def _check(study: Study) -> None:
    name = study.source
    _check_schema(study)

    def whole(value: Any, what: str, low: int = 1) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise CollectError(f"{name}: {what} must be a whole number >= {low}, got {value!r}")

    for key in ("exp1", "exp2", "exp3", "exp5"):
        whole(study.exp(key)["attempts"], f"experiments.{key}.attempts")
    whole(study.config["partition"]["n_a"], "partition.n_a")
    whole(study.config["partition"]["n_b"], "partition.n_b")
    whole(study.exp("exp1")["synthetic"]["n"], "experiments.exp1.synthetic.n")
    whole(study.exp("exp1")["synthetic"]["max_regenerations"], "experiments.exp1.synthetic.max_regenerations", 0)
    whole(study.exp("exp4")["n_transcripts"], "experiments.exp4.n_transcripts")
    judging = [p for p in REPLY_FORMAT if REPLY_FORMAT[p] in ("total", "scores", "cot")]
    for key, field_ in (("exp1", "prompts"), ("exp2", "prompts")):
        prompts = study.exp(key)[field_]
        if not isinstance(prompts, list) or not prompts or any(p not in judging for p in prompts):
            raise CollectError(f"{name}: experiments.{key}.{field_} must list judging prompts from {judging}, got {prompts!r}")
    for key in ("exp3", "exp5"):
        prompt = study.exp(key)["prompt"]
        if prompt != "winner" and prompt not in judging:
            raise CollectError(f"{name}: experiments.{key}.prompt must be 'winner' or one of {judging}, got {prompt!r}")
    models = study.exp("exp3")["models"]
    if not isinstance(models, list) or len(models) < 2 or len(set(models)) != len(models):
        raise CollectError(f"{name}: experiments.exp3.models must list at least two distinct models, got {models!r}")
    for key in ("exp2", "exp3"):
        rule = study.exp(key)["winner"]
        if rule["on_no_winner"] not in ("stop", "lowest_sd"):
            raise CollectError(f"{name}: experiments.{key}.winner.on_no_winner must be 'stop' or 'lowest_sd', got {rule['on_no_winner']!r}")
        if rule["posthoc"] not in ("wilcoxon", "nemenyi", "conover"):
            raise CollectError(f"{name}: experiments.{key}.winner.posthoc must be wilcoxon, nemenyi or conover")
    if study.exp("exp2")["winner"]["pin"] not in (None, *judging):
        raise CollectError(f"{name}: experiments.exp2.winner.pin must be one of {judging}, got {study.exp('exp2')['winner']['pin']!r}")
    for key, needs in (("exp3", "exp2"), ("exp5", "exp2")):
        if study.enabled(key) and study.exp(key)["prompt"] == "winner" and not study.enabled(needs) \
                and study.exp("exp2")["winner"]["pin"] is None:  # fmt: skip
            raise CollectError(f"{name}: Exp 2 is disabled, so experiments.{key}.prompt must name a prompt "
                               "(or pin experiments.exp2.winner.pin)")  # fmt: skip
    if study.enabled("exp5") and study.exp("exp5")["model"] == "winner" and not study.enabled("exp3") \
            and study.exp("exp3")["winner"]["pin"] is None:  # fmt: skip
        raise CollectError(f"{name}: Exp 3 is disabled, so experiments.exp5.model must name a model "
                           "(or pin experiments.exp3.winner.pin)")  # fmt: skip


# --- corpus and partition ------------------------------------------------------------------


def load_corpus(study: Study) -> pd.DataFrame | None:
    """The real transcripts named by ``corpus.paths`` (None when no path is given)."""
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


def _settings(study: Study, model: str, **overrides: Any) -> dict[str, Any]:
    settings = dict(study.config["defaults"])
    settings.update({k: v for k, v in overrides.items()})
    # model_settings may name the dated snapshot or its alias ("o4-mini"): either applies.
    dated = ALIASES.get(model, model)
    for name, extra in (study.config["model_settings"] or {}).items():
        if ALIASES.get(name, name) == dated:
            settings.update(extra or {})
    return settings


def _condition(study: Study, prompt: str, model: str, **overrides: Any) -> Condition:
    s = _settings(study, model, **overrides)
    temperature = s.get("temperature")
    cond_id = f"{prompt}|{model}" + (f"|t{float(temperature):g}" if temperature is not None else "")
    check_temperature(f"{study.source} ({cond_id})", temperature, model)
    logprobs = bool(s.get("logprobs", False))
    return Condition(
        id=cond_id, prompt_id=prompt, model=model,
        temperature=None if temperature is None else float(temperature),
        max_tokens=None if s.get("max_tokens") is None else int(s["max_tokens"]),
        top_p=None if s.get("top_p") is None else float(s["top_p"]),
        seed=None if s.get("seed") is None else int(s["seed"]),
        logprobs=logprobs, top_logprobs=int(s["top_logprobs"]) if logprobs and s.get("top_logprobs") else None,
    )  # fmt: skip


def _items(corpus: pd.DataFrame, ids: list[str] | None = None, rubric: Rubric | None = None) -> tuple[Item, ...]:
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


def _design(study: Study, experiment_id: str, items: tuple[Item, ...], conditions: list[Condition], attempts: int) -> Design:
    run = study.config["run"]
    return Design(
        experiment_id=experiment_id, items=items, conditions=tuple(conditions), attempts=int(attempts),
        rubric=study.rubric, endpoints={"default": study.endpoint}, concurrency=int(run["concurrency"]),
        requests_per_minute=run["requests_per_minute"], tokens_per_minute=run["tokens_per_minute"],
    )  # fmt: skip


def _targets(study: Study) -> pd.DataFrame:
    spec = study.exp("exp1")["synthetic"]
    return synthetic.draw_targets(spec["n"], strata=spec["strata"], allocation=spec["allocation"], random_state=spec["seed"])


def _generation_design(study: Study, targets: pd.DataFrame, attempts: int = 1) -> Design:
    spec = study.exp("exp1")["synthetic"]
    items = tuple(Item(t.transcript_id, None, metadata={"target_total": int(t.target_total), "stratum": t.stratum})
                  for t in targets.itertuples(index=False))  # fmt: skip
    cond = _condition(study, "SYNTH", spec["model"], temperature=spec["temperature"], max_tokens=spec["max_tokens"])
    return _design(study, "EXP1_SyntheticGeneration", items, [cond], attempts)


def exp_design(study: Study, key: str, items: tuple[Item, ...], *, prompt: str | None = None, model: str | None = None) -> Design:
    """The judging design of one experiment over ``items`` (prompt/model resolve 'winner')."""
    exp = study.exp(key)
    if key == "exp1":
        conds = [_condition(study, p, exp["model"], temperature=exp["temperature"]) for p in exp["prompts"]]
    elif key == "exp2":
        conds = [_condition(study, p, exp["model"]) for p in exp["prompts"]]
    elif key == "exp3":
        conds = [_condition(study, prompt, m) for m in exp["models"]]
    elif key == "exp5":
        extra = {"logprobs": exp["logprobs"], "top_logprobs": exp["top_logprobs"]}
        conds = [_condition(study, prompt, model, **extra)]
    else:
        raise CollectError(f"experiment {key!r} has no judging design")
    return _design(study, exp["id"], items, conds, exp["attempts"])


# --- plan ----------------------------------------------------------------------------------


def _placeholder_items(prefix: str, n: int, words: int) -> tuple[Item, ...]:
    # Text of the assumed length: about 5.6 characters per English word with its space.
    text = "Patient: " + ("lorem " * int(words))
    return tuple(Item(f"{prefix}{k:04d}", text) for k in range(1, n + 1))


def plan(study: Study, corpus: pd.DataFrame | None = None) -> pd.DataFrame:
    """Calls, tokens and cost of every experiment, before anything is sent.

    Real transcripts are used when the corpus is given (their lengths, Set sizes);
    otherwise the ``plan`` section's assumptions (677 transcripts of about 1,000 words).
    Prompts and models chosen by earlier experiments are taken from ``decisions.json``
    when it exists, else pinned ones, else ``plan.assume_prompt`` and, for Exp 5's model,
    the dearest candidate (an upper bound). Attempts already logged are not subtracted:
    this is the whole study.

    Returns
    -------
    DataFrame
        One row per experiment x condition: ``experiment``, ``step`` (generation,
        judging, coding), ``condition_id``, ``prompt_id``, ``model``, ``items``,
        ``attempts``, ``calls``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (NaN when
        unpriced; prompt caching not counted, so an upper bound), ``note``.
    """
    assume = study.config["plan"]
    decisions = read_decisions(study)
    rows: list[dict[str, Any]] = []
    note_corpus = "from the corpus" if corpus is not None else f"assumed: {assume['corpus_size']} transcripts of ~{assume['words_per_transcript']} words"

    def add(key: str, step: str, design: Design, note: str) -> None:
        table = estimate(design)
        for row in table.to_dict(orient="records"):
            rows.append({"experiment": study.exp(key)["id"], "step": step, **row, "items": len(design.items),
                         "attempts": design.attempts, "note": note})  # fmt: skip

    if study.enabled("exp1"):
        targets = _targets(study)
        add("exp1", "generation", _generation_design(study, targets), "one call per synthetic transcript; regenerations not counted")
        synth_items = _placeholder_items("SYN-", len(targets), assume["synthetic_words"])
        add("exp1", "judging", exp_design(study, "exp1", synth_items), f"assumed: synthetic transcripts of ~{assume['synthetic_words']} words")
    if corpus is not None:
        sets = partition(corpus["transcript_id"], seed=study.config["partition"]["seed"],
                         n_a=study.config["partition"]["n_a"], n_b=study.config["partition"]["n_b"])  # fmt: skip
        set_items = {s: _items(corpus, ids, study.rubric) for s, ids in sets.items()}
    else:
        n_a, n_b = study.config["partition"]["n_a"], study.config["partition"]["n_b"]
        n_c = assume["corpus_size"] - n_a - n_b
        if n_c < 1:
            raise CollectError(f"plan.corpus_size {assume['corpus_size']} leaves no transcript for Set C")
        words = assume["words_per_transcript"]
        set_items = {"A": _placeholder_items("A", n_a, words), "B": _placeholder_items("B", n_b, words),
                     "C": _placeholder_items("C", n_c, words)}  # fmt: skip
    prompt, prompt_note = _planned_choice(study, decisions, "prompt")
    if study.enabled("exp2"):
        add("exp2", "judging", exp_design(study, "exp2", set_items[study.exp("exp2")["set"]]), note_corpus)
    if study.enabled("exp3"):
        p3 = prompt if study.exp("exp3")["prompt"] == "winner" else study.exp("exp3")["prompt"]
        add("exp3", "judging", exp_design(study, "exp3", set_items[study.exp("exp3")["set"]], prompt=p3), f"{note_corpus}; {prompt_note}")
    if study.enabled("exp4") and study.exp("exp4")["llm_coding"]["enabled"]:
        rows.append(_coding_plan(study, assume))
    if study.enabled("exp5"):
        p5 = prompt if study.exp("exp5")["prompt"] == "winner" else study.exp("exp5")["prompt"]
        model, model_note = _planned_choice(study, decisions, "model")
        candidates = [model] if model else list(study.exp("exp3")["models"])
        options = []
        for m in candidates:
            table = estimate(exp_design(study, "exp5", set_items[study.exp("exp5")["set"]], prompt=p5, model=m))
            options.append((table["cost_usd"].fillna(np.inf).sum(), m))
        dearest = max(options)[1]
        note = model_note if model else "model not chosen yet: the dearest candidate (upper bound)"
        add("exp5", "judging", exp_design(study, "exp5", set_items[study.exp("exp5")["set"]], prompt=p5, model=dearest),
            f"{note_corpus}; {prompt_note}; {note}")
    columns = ["experiment", "step", "condition_id", "prompt_id", "model", "items", "attempts", "calls",
               "input_tokens", "output_tokens", "cost_usd", "note"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _planned_choice(study: Study, decisions: dict[str, Any], kind: str) -> tuple[str | None, str]:
    key = "exp2" if kind == "prompt" else "exp3"
    pin = study.exp(key)["winner"]["pin"]
    if pin:
        return pin, f"{kind} pinned: {pin}"
    if kind in decisions:
        return decisions[kind]["choice"], f"{kind} chosen by Exp {key[-1]}: {decisions[kind]['choice']}"
    if kind == "prompt":
        return study.config["plan"]["assume_prompt"], f"prompt assumed {study.config['plan']['assume_prompt']} (Exp 2 not run yet)"
    return None, ""


def _coding_plan(study: Study, assume: Mapping[str, Any]) -> dict[str, Any]:
    exp4, coding = study.exp("exp4"), study.exp("exp4")["llm_coding"]
    calls = exp4["n_transcripts"] * len(study.exp("exp3")["models"])
    scheme_chars = len(reasoning.load_coding_scheme(_scheme_source(study, exp4["coding_scheme"])).render())
    per_call = math.ceil((scheme_chars + 1200 + assume["words_per_transcript"] * 5.6 + 3000) / CHARS_PER_TOKEN)
    cost = cost_usd(coding["model"], calls * per_call, calls * _TYPICAL_CODING_OUTPUT, warn=False)
    return {"experiment": exp4["id"], "step": "coding", "condition_id": f"CODE|{coding['model']}", "prompt_id": "CODE",
            "model": coding["model"], "items": exp4["n_transcripts"], "attempts": 1, "calls": calls,
            "input_tokens": calls * per_call, "output_tokens": calls * _TYPICAL_CODING_OUTPUT,
            "cost_usd": np.nan if cost is None else cost,
            "note": "one call per transcript x model; reasoning of ~3,000 characters assumed"}  # fmt: skip


def _scheme_source(study: Study, source: str) -> str | Path:
    path = study.base / str(source)
    return path if path.is_file() else source


# --- decisions -----------------------------------------------------------------------------


def read_decisions(study: Study) -> dict[str, Any]:
    path = study.output / "decisions.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def _write_decision(study: Study, kind: str, decision: Mapping[str, Any]) -> None:
    decisions = read_decisions(study)
    decisions[kind] = dict(decision)
    study.output.mkdir(parents=True, exist_ok=True)
    (study.output / "decisions.json").write_text(json.dumps(decisions, indent=1, default=_json_default) + "\n", encoding="utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def choose_winner(result: Any, *, kind: str, column: str, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the winner rule to an Exp 2/3 analysis; return the choice with its evidence.

    Parameters
    ----------
    result : AnalysisResult
        From :func:`hce.stats.experiment2` or :func:`hce.stats.experiment3`, whose
        ``winner`` table flags the condition that has the lowest median SD and is
        significantly lower than the others (after a significant Friedman test).
    kind : {"prompt", "model"}
    column : str
        The condition column (``prompt_id`` or ``model``).
    rule : mapping
        ``pin`` (a choice that overrides the rule), ``on_no_winner`` (``"stop"`` or
        ``"lowest_sd"``) and the test settings, recorded with the evidence.

    Returns
    -------
    dict
        ``choice``, ``source`` (``rule``, ``pinned`` or ``lowest_sd_fallback``), ``rule``
        (in words), ``evidence`` (Friedman row, post-hoc pairs, per-condition SD table and
        the analysis notes).

    Raises
    ------
    StudyStop
        No condition meets the rule and ``on_no_winner`` is ``"stop"``.
    """
    table = result["winner"]
    evidence = {
        "friedman": result["friedman"].to_dict(orient="records"),
        "posthoc": result["posthoc"].to_dict(orient="records"),
        "conditions": table.to_dict(orient="records"),
        "notes": list(result.notes),
    }
    words = (f"lowest median SD of total scores, significantly lower than {rule['require']} other condition(s): "
             f"Friedman p < {rule['alpha']}, then {rule['posthoc']} post-hoc with {rule['p_adjust']} adjustment")  # fmt: skip
    base = {"kind": kind, "rule": words, "evidence": evidence}
    if rule.get("pin"):
        return {"choice": rule["pin"], "source": "pinned", **base}
    winners = table.loc[table["winner"].astype(bool), column]
    if len(winners) == 1:
        return {"choice": str(winners.iloc[0]), "source": "rule", **base}
    lowest = str(table[column].iloc[0])
    if rule["on_no_winner"] == "lowest_sd":
        return {"choice": lowest, "source": "lowest_sd_fallback", **base}
    why = next((n for n in result.notes if n.startswith("no winner")), "no condition meets the rule")
    raise StudyStop(f"{result.title}: {why}. Pin a {kind} (winner.pin) or set winner.on_no_winner: lowest_sd, "
                    f"then run again (collected attempts are kept)")  # fmt: skip


# --- running -------------------------------------------------------------------------------


@dataclass
class StudyRun:
    """What :func:`run_study` did: per-experiment summaries, decisions and where things are."""

    output: Path
    summaries: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    analyses: dict[str, Any] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)


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
    from hce.collect.sim import Profile, SimJudge, SimServer

    sim = study.config["simulation"]
    # Fields left out keep the simulator's own defaults.
    profiles = {m: Profile(**{k: float(v) for k, v in (p or {}).items()}) for m, p in (sim["profiles"] or {}).items()}
    default = Profile(**{k: float(v) for k, v in (sim["default"] or {}).items()})
    truth = _truth(corpus, study.rubric) if corpus is not None else {}
    judge = SimJudge(seed=int(sim["seed"]), profiles=profiles, default=default, truth=truth)
    with SimServer(judge).start() as server:
        yield server.url, "simulated"


def _run_design(design: Design, log: Path, connection: Mapping[str, Any]) -> Any:
    from hce.collect.runner import run

    return run(design, log, **connection)


def _judge(study: Study, result: StudyRun, key: str, design: Design, connection: Mapping[str, Any]) -> pd.DataFrame:
    """Run an experiment's design (resuming) and return the log rows of exactly that design."""
    result.summaries[key] = _run_design(design, study.log_path(key), connection)
    return _current_log(study, result, key, design)


def _current_log(study: Study, result: StudyRun, key: str, design: Design) -> pd.DataFrame:
    # A log can hold attempts of an earlier configuration (another pinned prompt, say);
    # only the current design's attempts are analysed, and the rest is reported.
    log = read_log(study.log_path(key))
    planned = {a.attempt_id for a in design.plan()}
    current = log[log["attempt_id"].isin(planned)].copy()
    if len(current) < len(log):
        result.messages.append(f"{design.experiment_id}: {len(log) - len(current)} logged attempt(s) of another "
                               f"configuration left out of the analysis (kept in {study.log_path(key)})")  # fmt: skip
    return current


def _save(result: Any, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in result.tables.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    (folder / "summary.md").write_text(result.summary() + "\n", encoding="utf-8")


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
        Judge with the simulated judge (:mod:`hce.collect.sim`) on loopback instead of an
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
    """
    study = study if isinstance(study, Study) else load_study(study)
    if until is not None and until not in EXPERIMENTS:
        raise CollectError(f"until={until!r} is not valid; choose one of {list(EXPERIMENTS)}")
    out = study.output
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.resolved.yaml").write_text(yaml.safe_dump(study.config, sort_keys=False), encoding="utf-8")
    result = StudyRun(output=out)
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


def _exp1(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    spec = study.exp("exp1")["synthetic"]
    targets = _targets(study)
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
        _run_design(_generation_design(study, todo, attempts=tries), gen_log, connection)
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
    items = _items(synth[["transcript_id", "text", "target_total", "stratum", "leak_flag", "n_words"]], rubric=study.rubric)
    log = _judge(study, result, "exp1", exp_design(study, "exp1", items), connection)
    from hce.stats import experiment1

    analysis = experiment1(log, non_rubric=study.exp("exp1")["prompts"][0],
                           rubric=study.exp("exp1")["prompts"][-1], experiment_id=study.exp("exp1")["id"])  # fmt: skip
    _save(analysis, study.output / "analysis" / "exp1")
    result.analyses["exp1"] = analysis


def _winner_kwargs(rule: Mapping[str, Any]) -> dict[str, Any]:
    return {"posthoc_method": rule["posthoc"], "p_adjust_method": rule["p_adjust"], "require": rule["require"], "alpha": rule["alpha"]}


def _exp2(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp2")
    items = _items(corpus, sets[exp["set"]], study.rubric)
    log = _judge(study, result, "exp2", exp_design(study, "exp2", items), connection)
    from hce.stats import experiment2

    analysis = experiment2(log, experiment_id=exp["id"], **_winner_kwargs(exp["winner"]))
    _save(analysis, study.output / "analysis" / "exp2")
    result.analyses["exp2"] = analysis
    _write_decision(study, "prompt", choose_winner(analysis, kind="prompt", column="prompt_id", rule=exp["winner"]))


def _resolved(study: Study, key: str, kind: str) -> str:
    value = study.exp(key)[kind]
    if value != "winner":
        return value
    source = "exp2" if kind == "prompt" else "exp3"
    pin = study.exp(source)["winner"]["pin"]
    if pin:
        return pin
    decision = read_decisions(study).get(kind)
    if decision is None:
        raise StudyStop(f"{study.exp(key)['id']} needs the winning {kind}, but {study.exp(source)['id']} has not chosen one")
    return decision["choice"]


def _exp3(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp3")
    if study.exp("exp2")["winner"]["pin"] and not study.enabled("exp2"):
        _write_decision(study, "prompt", {"choice": study.exp("exp2")["winner"]["pin"], "source": "pinned", "kind": "prompt"})
    prompt = _resolved(study, "exp3", "prompt")
    items = _items(corpus, sets[exp["set"]], study.rubric)
    log = _judge(study, result, "exp3", exp_design(study, "exp3", items, prompt=prompt), connection)
    from hce.stats import experiment3

    analysis = experiment3(log, experiment_id=exp["id"], **_winner_kwargs(exp["winner"]))
    _save(analysis, study.output / "analysis" / "exp3")
    result.analyses["exp3"] = analysis
    decision = choose_winner(analysis, kind="model", column="model", rule=exp["winner"])
    decision["prompt"] = prompt
    _write_decision(study, "model", decision)


def _exp4(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp4")
    folder = study.output / "exp4"
    folder.mkdir(parents=True, exist_ok=True)
    if not study.log_path("exp3").is_file():
        raise StudyStop("Exp 4 codes the reasoning logged by Exp 3, which has not run (enable experiments.exp3)")
    items = _items(corpus, sets[study.exp("exp3")["set"]], study.rubric)
    log = _current_log(study, result, "exp3", exp_design(study, "exp3", items, prompt=_resolved(study, "exp3", "prompt")))
    scheme = reasoning.load_coding_scheme(_scheme_source(study, exp["coding_scheme"]))
    selection = reasoning.select_diverse(log, corpus, n=exp["n_transcripts"])
    selection.to_csv(folder / "selection.csv", index=False)
    segments = reasoning.reasoning_segments(log, items=selection["item_id"], attempt=exp["attempt"], rubric=study.rubric)
    segments.to_csv(folder / "segments.csv", index=False)
    reasoning.coding_template(segments, scheme).to_csv(folder / "coding_template.csv", index=False)
    found = float(segments["segment_found"].mean()) if len(segments) else 0.0
    if found < 1:
        result.messages.append(f"Exp 4: {1 - found:.0%} of category segments not found in the replies "
                               "(is the winning prompt chain-of-thought?)")  # fmt: skip
    codes = []
    if exp["llm_coding"]["enabled"]:
        llm = _llm_codes(study, segments, corpus, scheme, connection)
        llm.to_csv(folder / "llm_codes.csv", index=False)
        codes.append(llm)
        flagged = read_log(study.log_path("exp4_llm"))["error_flag"]
        if flagged.any():
            result.messages.append(f"Exp 4: {int(flagged.sum())} of {len(flagged)} LLM coding replies flagged "
                                   f"(see error_message in {study.log_path('exp4_llm')}); their codes are missing")  # fmt: skip
    if exp["human_codes"]:
        codes.append(reasoning.read_codes(study.base / exp["human_codes"], scheme))
    if not codes:
        result.messages.append(f"Exp 4: coding sheet written to {folder / 'coding_template.csv'}; fill it in and set "
                               "experiments.exp4.human_codes (or enable llm_coding), then run again")  # fmt: skip
        return
    allcodes = pd.concat(codes, ignore_index=True)
    coders = sorted(allcodes["coder"].unique())
    human = sorted(c for c in coders if not c.startswith("llm:"))
    if len(human) >= 2:
        kappa = reasoning.intercoder_agreement(allcodes, scheme, coders=human[:2], target=exp["kappa_target"])
        kappa.to_csv(folder / "kappa.csv", index=False)
    llm_coders = [c for c in coders if c.startswith("llm:")]
    if llm_coders and human:
        # How far the LLM's coding agrees with a researcher's (7.4.6: "AI applies final coding scheme if possible").
        versus = reasoning.intercoder_agreement(allcodes, scheme, coders=[human[0], llm_coders[0]], target=exp["kappa_target"])
        versus.to_csv(folder / "kappa_llm_vs_human.csv", index=False)
    final = exp["final_coder"] or (llm_coders[0] if llm_coders else human[0])
    chosen = allcodes[allcodes["coder"] == final].dropna(subset=scheme.ids, how="all")
    from hce.stats import experiment4

    if chosen["model"].nunique() < 2:
        result.messages.append(f"Exp 4: coder {final!r} has codes for fewer than two models; no frequency tests")
    else:
        analysis = experiment4(chosen.dropna(subset=scheme.ids), group="model", dimensions=scheme.ids)
        analysis.notes.append(f"codes of coder {final!r}")
        _save(analysis, study.output / "analysis" / "exp4")
        result.analyses["exp4"] = analysis


def _llm_codes(study: Study, segments: pd.DataFrame, corpus: pd.DataFrame, scheme: reasoning.CodingScheme, connection) -> pd.DataFrame:
    """Code every reply's segments with an LLM through the collection client; logged and resumable."""
    return asyncio.run(_llm_codes_async(study, segments, corpus, scheme, connection))


async def _llm_codes_async(study, segments, corpus, scheme, connection) -> pd.DataFrame:
    from hce.collect.client import JudgeClient

    coding = study.exp("exp4")["llm_coding"]
    endpoint = study.endpoint
    log_path = study.log_path("exp4_llm")
    texts = corpus.set_index("transcript_id")["text"]
    cond_id = f"CODE|{coding['model']}|t{float(coding['temperature']):g}"
    done = logged_attempt_ids(log_path) if log_path.is_file() else set()
    client = JudgeClient(base_url=connection["base_url"], api_key=connection["api_key"],
                         timeout=endpoint.timeout, max_retries=endpoint.max_retries)  # fmt: skip
    try:
        with LogWriter(log_path) as writer:
            for (item, model, reply_id), cell in segments.groupby(["item_id", "model", "attempt_id"], sort=True):
                attempt_id = make_attempt_id(study.exp("exp4")["id"], f"{item}|{model}", cond_id, 1)
                if attempt_id in done:
                    continue
                found = dict(zip(cell["criterion"], cell["segment"].where(cell["segment_found"], None)))
                messages = reasoning.coding_messages(found, texts[item], scheme, rubric=study.rubric)
                reply = await client.complete(messages, model=coding["model"], temperature=float(coding["temperature"]),
                                              max_tokens=int(coding["max_tokens"]))  # fmt: skip
                criteria = [c for c, s in found.items() if s]
                parsed, problems = reasoning.parse_codes(reply.response_text, scheme, criteria)
                writer.append({
                    "attempt_id": attempt_id, "experiment_id": study.exp("exp4")["id"], "item_id": item,
                    "condition_id": cond_id, "prompt_id": "CODE", "model": coding["model"],
                    "model_version": reply.model_version, "attempt": 1, "temperature": float(coding["temperature"]),
                    "max_tokens": int(coding["max_tokens"]), "request": messages, "response_text": reply.response_text,
                    "finish_reason": reply.finish_reason, "input_tokens": reply.input_tokens,
                    "output_tokens": reply.output_tokens, "cached_tokens": reply.cached_tokens,
                    "cost_usd": cost_usd(coding["model"], reply.input_tokens, reply.output_tokens, reply.cached_tokens, warn=False)
                    if reply.input_tokens is not None else None,
                    "latency_s": reply.latency_s, "retries": reply.retries,
                    "error_flag": (not reply.ok) or bool(problems),
                    "error_message": reply.error_message or ("; ".join(problems) if problems else None),
                    "coded_model": model, "coded_attempt_id": reply_id, "codes": json.dumps(parsed),
                })  # fmt: skip
    finally:
        await client.aclose()
    log = read_log(log_path)
    rows = []
    for rec in log.to_dict(orient="records"):
        parsed = json.loads(rec["codes"]) if isinstance(rec.get("codes"), str) else {}
        for criterion, dims in parsed.items():
            rows.append({"item_id": rec["item_id"], "model": rec["coded_model"], "attempt_id": rec["coded_attempt_id"],
                         "criterion": criterion, "coder": f"llm:{rec['model']}", **dims})  # fmt: skip
    return pd.DataFrame(rows, columns=[*reasoning.SEGMENT_KEY, "coder", *scheme.ids])


def _exp5(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp5")
    prompt, model = _resolved(study, "exp5", "prompt"), _resolved(study, "exp5", "model")
    if study.exp("exp3")["winner"]["pin"] and "model" not in read_decisions(study):
        _write_decision(study, "model", {"choice": model, "source": "pinned", "kind": "model"})
    items = _items(corpus, sets[exp["set"]], study.rubric)
    log = _judge(study, result, "exp5", exp_design(study, "exp5", items, prompt=prompt, model=model), connection)
    from hce.stats import experiment5

    notes = [f"configuration: prompt {prompt}, model {model}"]
    if ("confidence" not in log.columns or log["confidence"].isna().all()) and "logprobs" in log.columns:
        log["confidence"] = logprob_confidence(log, rubric=study.rubric)
        log[["attempt_id", "confidence"]].to_csv(study.output / "exp5_confidence.csv", index=False)
        notes.append("confidence: the judge's mean token probability of the category scores it wrote, from logprobs "
                     f"(exp5_confidence.csv; {int(log['confidence'].notna().sum())} of {len(log)} attempts)")  # fmt: skip
    meta = [c for c in ("n_words", "source") if c in log.columns and log[c].nunique() >= 2]
    analysis = experiment5(log, experiment_id=exp["id"], metadata=meta)
    analysis.notes.extend(notes)
    _save(analysis, study.output / "analysis" / "exp5")
    result.analyses["exp5"] = analysis


def logprob_confidence(log: pd.DataFrame, *, rubric: Rubric | None = None) -> pd.Series:
    """Per attempt, the judge's mean token probability of the category scores it wrote.

    Exp 5's uncertainty method (7.5.7 step 5, "output token probabilities"): the token
    carrying each score and its ``top_logprobs`` give a distribution over the possible
    scores (:func:`hce.stats.calibration.logprob_confidence`). The score block closes the
    reply, so its n category scores are the last n score-like tokens (the total line is
    passed over: it is the sum of the categories and carries no uncertainty of its own).
    The attempt's confidence is the mean of the chosen scores' probabilities; for a bare
    total (P1.1) it is that total's probability. Missing when the attempt errored or its
    logprobs hold no score.
    """
    from hce.stats.calibration import logprob_confidence as token_confidence

    rubric = rubric or load_rubric("v5")
    low = min(c.min_score for c in rubric.categories)
    high = max(c.max_score for c in rubric.categories)
    n = len(rubric.categories)
    # The total is score-like only when its range reaches into the categories' (not in v5).
    last = -1 if rubric.total_range[0] <= high else 0
    confidence = pd.Series(np.nan, index=log.index, name="confidence", dtype=float)
    usable = log[~log["error_flag"].astype(bool) & log["logprobs"].notna()]
    for prompt_id, part in usable.groupby("prompt_id", sort=False):
        fmt = REPLY_FORMAT.get(prompt_id)
        if fmt in ("scores", "cot"):
            found = token_confidence(part, scores=range(low, high + 1), occurrence=range(last - n, last), id_columns=())
            confidence[part.index] = found["prob"].groupby(level=0).mean()
        elif fmt == "total":
            totals = range(rubric.total_range[0], rubric.total_range[1] + 1)
            confidence[part.index] = token_confidence(part, scores=totals, id_columns=())["prob"]
    return confidence


_STEPS = {"exp1": _exp1, "exp2": _exp2, "exp3": _exp3, "exp4": _exp4, "exp5": _exp5}


# --- status --------------------------------------------------------------------------------


def status(study: Study) -> pd.DataFrame:
    """Where the study stands: per experiment, attempts logged, errors, and its decision.

    Returns
    -------
    DataFrame
        ``experiment``, ``enabled``, ``log``, ``attempts_logged``, ``errors``,
        ``items``, ``decision`` (the chosen prompt/model and its source, where one is made).
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

