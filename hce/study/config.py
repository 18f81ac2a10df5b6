"""The study file: packaged defaults, the researcher's overrides merged over them, and their checks.

A study file (YAML) is merged over the packaged defaults (``hce/study/data/study_default.yaml``,
the protocol's numbers), so a researcher writes only what differs: usually the corpus
paths. :func:`load_study` reads and checks it; :class:`Study` answers where things are.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hce._vocabulary import keywords_checked
from hce.collect.design.design import Endpoint, check_temperature, endpoint_from
from hce.model_names import ALIASES
from hce.collect.design.prompts import REPLY_FORMAT
from hce.collect.design.schema import EndpointSpec, RunSpec, SchemaError, SettingsSpec, did_you_mean, validate
from hce.sim.families import LOGPROBS_ARE
from hce.errors import CollectError, HceError
from hce.rubric import Rubric, load_rubric
from hce.study.human_ratings import check_ratings_keys

EXPERIMENTS = ("exp1", "exp2", "exp3", "exp4", "exp5")
# Mappings whose keys are the user's own (model names, strip rules), not checked against the defaults.
_FREE = {("model_settings",), ("simulation", "profiles"), ("simulation", "default"), ("corpus", "strip")}
_LOGS = {"exp1_generation": "exp1_generation.jsonl", "exp1": "exp1.jsonl", "exp2": "exp2.jsonl",
         "exp3": "exp3.jsonl", "exp4_llm": "exp4_llm_coding.jsonl", "exp5": "exp5.jsonl"}  # fmt: skip
#: The logs of the judging experiments, which the study report reads.
JUDGED_LOGS = tuple(_LOGS[key] for key in ("exp1", "exp2", "exp3", "exp5"))


class StudyStop(HceError):
    """The study cannot go on without the researcher: a decision to pin, codes to provide."""


@dataclass
class Study:
    """A parsed study file: the merged configuration and where its paths are relative to.

    Made by :func:`load_study`, which checks the configuration.

    Parameters
    ----------
    config : dict
        The study file merged over the packaged defaults (:func:`default_config`).
    base : Path
        The folder relative paths of the configuration start from.
    source : str
        What the configuration was read from, for messages.

    Examples
    --------
    >>> from hce.study import load_study
    >>> study = load_study({"output": "my_study"})
    >>> study.output.name, study.rubric.name
    ('my_study', 'Patient Health Communication Rubric v5.0')
    """

    config: dict[str, Any]
    base: Path
    source: str = "study"

    @property
    def output(self) -> Path:
        """The study's output folder (logs, decisions, report)."""
        return self.base / str(self.config["output"])

    @property
    def rubric(self) -> Rubric:
        """The rubric the study judges with (a packaged name or a YAML file)."""
        rubric = self.config["rubric"]
        path = self.base / str(rubric)
        return load_rubric(path if path.is_file() else rubric)

    @property
    def endpoint(self) -> Endpoint:
        """The study's endpoint (checked by :func:`load_study`)."""
        return endpoint_from("default", EndpointSpec.model_validate(self.config["endpoint"]))

    def settings(self, model: str, **overrides: Any) -> dict[str, Any]:
        """The sampling settings of a call to ``model``: defaults, then ``overrides``, then its model_settings.

        Parameters
        ----------
        model : str
            The model called (a dated snapshot or its alias).
        **overrides
            Settings that replace the defaults.

        Returns
        -------
        dict
            Setting name -> value.
        """
        settings = dict(self.config["defaults"])
        settings.update(overrides)
        # model_settings may name the dated snapshot or its alias ("o4-mini"): either applies.
        dated = ALIASES.get(model, model)
        for name, extra in (self.config["model_settings"] or {}).items():
            if ALIASES.get(name, name) == dated:
                settings.update(extra or {})
        return settings

    def exp(self, key: str) -> dict[str, Any]:
        """The configuration of experiment ``key`` (``"exp1"`` ... ``"exp5"``).

        Parameters
        ----------
        key : str

        Returns
        -------
        dict
        """
        return self.config["experiments"][key]

    def enabled(self, key: str) -> bool:
        """Whether experiment ``key`` runs.

        Parameters
        ----------
        key : str

        Returns
        -------
        bool
        """
        return bool(self.exp(key).get("enabled", True))

    def log_path(self, key: str) -> Path:
        """Where experiment ``key`` logs its attempts.

        Parameters
        ----------
        key : str

        Returns
        -------
        Path
        """
        return self.output / _LOGS[key]


def packaged(name: str) -> str:
    """The text of a packaged study file (``hce/study/data/``): ``study_default.yaml``, ``study_demo.yaml``."""
    return resources.files("hce.study").joinpath("data", name).read_text(encoding="utf-8")


def default_config() -> dict[str, Any]:
    """The packaged defaults (the protocol's numbers) as a fresh mapping.

    Returns
    -------
    dict
        The parsed ``study_default.yaml``: a new copy on every call.

    Examples
    --------
    >>> from hce.study import default_config
    >>> default_config()["experiments"]["exp5"]["attempts"]
    10
    """
    return copy.deepcopy(yaml.safe_load(packaged("study_default.yaml")))


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


@keywords_checked
def load_study(source: str | os.PathLike | Mapping[str, Any] | None = None) -> Study:
    """Read a study file (or mapping) merged over the packaged defaults, and check it.

    Parameters
    ----------
    source : path, mapping or None
        A YAML study file (its folder anchors relative paths), a mapping of the same shape
        (relative to the working directory), or None for the defaults alone.

    Returns
    -------
    Study

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
            raise CollectError(f"{name}: a study file is a mapping (see hce/study/data/study_default.yaml)")
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
    """Types and ranges of every setting (:mod:`hce.collect.design.schema`): endpoint, run, sampling settings."""
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
    if study.exp("exp5")["logprobs_are"] not in (None, *LOGPROBS_ARE):
        raise CollectError(f"{name}: experiments.exp5.logprobs_are must be one of {list(LOGPROBS_ARE)} or null, "
                           f"got {study.exp('exp5')['logprobs_are']!r}")  # fmt: skip
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
    _check_manuscript(study)
    check_ratings_keys(study.config, study.base, name, (*study.rubric.criteria, "total"))
    _check_calls(study)


def _check_manuscript(study: Study) -> None:
    """The manuscript's facts are text the draft prints as given: strings (or null), a list of strings."""
    facts = study.config["manuscript"]
    for key in ("title", "irb", "repository"):
        if facts[key] is not None and not isinstance(facts[key], str):
            raise CollectError(f"{study.source}: manuscript.{key} must be text or null, got {facts[key]!r}")
    sources = facts["data_sources"]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise CollectError(f"{study.source}: manuscript.data_sources must be a list of text lines, got {sources!r}")


def _check_calls(study: Study) -> None:
    """Refuse, at load, a call every request of which the API would answer with HTTP 400.

    Each enabled experiment's calls (Exp 5's ``model: winner`` may be any Exp 3 model) are
    resolved as the run resolves them (:meth:`Study.settings`) and checked by
    :func:`hce.collect.design.design.check_temperature`: a reasoning model asked for a temperature
    other than 1, or for logprobs (Exp 5's), is named with the setting to change.
    """
    exp = study.config["experiments"]
    calls: list[tuple[str, str, dict[str, Any]]] = []
    if study.enabled("exp1"):
        synthetic = exp["exp1"]["synthetic"]
        calls += [("experiments.exp1.synthetic", synthetic["model"], {"temperature": synthetic["temperature"]}),
                  ("experiments.exp1", exp["exp1"]["model"], {"temperature": exp["exp1"]["temperature"]})]  # fmt: skip
    if study.enabled("exp2"):
        calls.append(("experiments.exp2", exp["exp2"]["model"], {}))
    if study.enabled("exp3"):
        calls += [("experiments.exp3", m, {}) for m in exp["exp3"]["models"]]
    if study.enabled("exp4") and exp["exp4"]["llm_coding"]["enabled"]:
        calls.append(("experiments.exp4.llm_coding", exp["exp4"]["llm_coding"]["model"],
                      {"temperature": exp["exp4"]["llm_coding"]["temperature"]}))  # fmt: skip
    if study.enabled("exp5"):
        winner = exp["exp5"]["model"] == "winner"
        models = (exp["exp3"]["winner"]["pin"],) if winner and exp["exp3"]["winner"]["pin"] else \
            exp["exp3"]["models"] if winner else [exp["exp5"]["model"]]  # fmt: skip
        where = "experiments.exp5" + (" (model: winner, any of experiments.exp3.models)" if winner else "")
        calls += [(where, m, {"logprobs": exp["exp5"]["logprobs"]}) for m in models]
    for where, model, overrides in calls:
        settings = study.settings(str(model), **overrides)
        check_temperature(f"{study.source}: {where}", settings.get("temperature"), str(model),
                          logprobs=bool(settings.get("logprobs", False)))  # fmt: skip


def scheme_source(study: Study, source: str) -> str | Path:
    """A coding scheme named in the study: a file beside the study file, else a packaged name."""
    path = study.base / str(source)
    return path if path.is_file() else source
