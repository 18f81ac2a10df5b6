"""What a study folder shows: its configuration, partition, decisions, analysis settings and logs.

The Methods, the Limitations and the statements are written from these facts only. Which
experiments ran is read from the files the run wrote (an experiment's log with rows, Exp 4's
codes), never from the configuration alone: a configured experiment with no log was not run.

Example
-------
>>> facts = StudyFacts.read("reports/demo/study/study_output")  # doctest: +SKIP
>>> facts.ran("EXP4_ReasoningAnalysis"), facts.simulated  # doctest: +SKIP
(True, True)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from hce.errors import DataError
from hce.log import read_log
from hce.report.tables import words
from hce.rubric import Rubric, kept_rubric, load_rubric
from hce.study.config import JUDGED_LOGS
from hce.study.handoffs import decisions_in
from hce.study.report import is_simulated
from hce.study.settings import read_settings

#: The PRD's experiments in plan order: id -> (short name, the config key).
EXPERIMENTS = {
    "EXP1_BaselineRubricUtility": ("Experiment 1", "exp1"),
    "EXP2_PromptOptimization": ("Experiment 2", "exp2"),
    "EXP3_ModelComparison": ("Experiment 3", "exp3"),
    "EXP4_ReasoningAnalysis": ("Experiment 4", "exp4"),
    "EXP5_FinalToolValidation": ("Experiment 5", "exp5"),
}
#: The factor each comparing experiment varies (its conditions' levels).
COMPARED = {"EXP1_BaselineRubricUtility": "prompt_id", "EXP2_PromptOptimization": "prompt_id",
            "EXP3_ModelComparison": "model"}  # fmt: skip
#: The request settings the Methods name per experiment, and that confound a comparison when they differ with its factor.
REQUEST_SETTINGS = ("model", "prompt_id", "temperature", "max_tokens")
#: Request settings as the Methods name them (the log's and the API's names are codes); others in :func:`words`.
SETTING_WORDS = {"prompt_id": "prompt", "max_tokens": "maximum output tokens", "top_p": "top-p",
                 "model_version": "model version", "top_logprobs": "top log-probabilities per token",
                 "logprobs": "token log-probabilities", "response_format": "reply format"}
_COLUMNS = ["experiment_id", "item_id", "condition_id", "prompt_id", "model", "model_version", "timestamp",
            "temperature", "max_tokens", "retries", "error_flag", "error_message", "system_fingerprint"]  # fmt: skip


@dataclass
class StudyFacts:
    """A study output folder as the manuscript reads it.

    ``log`` holds the judged experiments' attempts (the columns the Methods need);
    ``config`` is ``study.resolved.yaml``, the configuration the run used.
    """

    folder: Path
    config: dict[str, Any]
    log: pd.DataFrame
    partition: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, dict] = field(default_factory=dict)
    synthetic: pd.DataFrame = field(default_factory=pd.DataFrame)
    generation: pd.DataFrame = field(default_factory=pd.DataFrame)
    coded: pd.DataFrame = field(default_factory=pd.DataFrame)
    simulated: bool = False
    rubric: Rubric | None = None
    #: One logged request (its chat messages, as JSON text) per prompt_id: what was actually sent.
    requests: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: str | Path) -> StudyFacts:
        """Read a study's output folder (the folder ``hce study run`` writes, with ``study.resolved.yaml``)."""
        folder = Path(folder)
        resolved = folder / "study.resolved.yaml"
        paths = [folder / name for name in JUDGED_LOGS if (folder / name).is_file()]
        if not resolved.is_file() or not paths:
            raise DataError(f"{folder}: not a study's output folder (needs study.resolved.yaml and one of "
                            f"{', '.join(JUDGED_LOGS)}); give the folder `hce study run` wrote")  # fmt: skip
        logs = [read_log(p) for p in paths]
        settings = read_settings(folder)
        # The strata Experiment 5 compared stay in the log: the limitations name their levels' sizes.
        strata = ((settings.get("EXP5_FinalToolValidation") or {}).get("settings") or {}).get("strata") or []
        columns = [*_COLUMNS, *(s for s in strata if s not in _COLUMNS)]
        log = pd.concat([frame[[c for c in columns if c in frame]] for frame in logs], ignore_index=True)
        facts = cls(folder, yaml.safe_load(resolved.read_text(encoding="utf-8")) or {}, log,
                    decisions=decisions_in(folder), settings=settings)  # fmt: skip
        facts.simulated = any(is_simulated(frame) for frame in logs)
        for frame in logs:
            if "request" in frame and "prompt_id" in frame:
                sent = frame.dropna(subset=["request", "prompt_id"]).drop_duplicates("prompt_id")
                facts.requests.update({str(k): str(v) for k, v in zip(sent["prompt_id"], sent["request"])})
        # The rubric kept beside the logs is the one they were judged with; else the configured (packaged) one.
        facts.rubric = kept_rubric(paths) or load_rubric(str(facts.config.get("rubric", "v5")))
        if (folder / "partition.json").is_file():
            facts.partition = json.loads((folder / "partition.json").read_text(encoding="utf-8"))
        if (folder / "synthetic_targets.csv").is_file():
            facts.synthetic = pd.read_csv(folder / "synthetic_targets.csv")
        if (folder / "exp1_generation.jsonl").is_file():
            facts.generation = read_log(folder / "exp1_generation.jsonl")
        if (folder / "exp4" / "codes.csv").is_file():
            facts.coded = pd.read_csv(folder / "exp4" / "codes.csv", dtype=str)
        return facts

    def ran(self, experiment_id: str) -> bool:
        """Whether the folder holds the experiment's results (its log rows; Exp 4: its codes)."""
        if experiment_id == "EXP4_ReasoningAnalysis":
            return len(self.coded) > 0
        return bool((self.log["experiment_id"] == experiment_id).any())

    def rows(self, experiment_id: str) -> pd.DataFrame:
        return self.log[self.log["experiment_id"] == experiment_id]

    def exp(self, key: str) -> dict[str, Any]:
        return (self.config.get("experiments") or {}).get(key) or {}

    @property
    def manuscript(self) -> dict[str, Any]:
        """The ``manuscript`` section of the configuration (empty fields for a study run before it existed)."""
        given = self.config.get("manuscript") or {}
        return {"title": given.get("title"), "irb": given.get("irb"), "data_sources": list(given.get("data_sources") or []),
                "repository": given.get("repository")}  # fmt: skip

    def versions(self) -> pd.DataFrame:
        """Per requested model: the ``model_version`` of its first and last call, and how many versions answered.

        Returns
        -------
        DataFrame
            ``model, first_version, last_version, n_versions, first_call, last_call, n_calls``
            (calls that returned a version; in timestamp order).

        Examples
        --------
        >>> facts.versions()[["model", "first_version", "n_versions"]].iloc[0].tolist()  # doctest: +SKIP
        ['gpt-4.1-mini-2025-04-14', 'gpt-4.1-mini-2025-04-14', 1]
        """
        rows = []
        answered = self.log.dropna(subset=["model_version"]).sort_values("timestamp", kind="stable")
        for model, part in answered.groupby("model", sort=True):
            rows.append({"model": model, "first_version": part["model_version"].iloc[0],
                         "last_version": part["model_version"].iloc[-1], "n_versions": part["model_version"].nunique(),
                         "first_call": part["timestamp"].iloc[0], "last_call": part["timestamp"].iloc[-1],
                         "n_calls": len(part)})  # fmt: skip
        return pd.DataFrame(rows, columns=["model", "first_version", "last_version", "n_versions", "first_call",
                                           "last_call", "n_calls"])  # fmt: skip

    def request_settings(self) -> pd.DataFrame:
        """Each judged experiment's request settings as its attempts logged them (one row per experiment x setting).

        Returns
        -------
        DataFrame
            ``experiment_id``, ``setting`` (:data:`REQUEST_SETTINGS`), ``values`` (the
            distinct values sent, "not sent (API default)" for a missing one).
        """
        rows = []
        for experiment_id in EXPERIMENTS:
            part = self.rows(experiment_id)
            for setting in (s for s in REQUEST_SETTINGS if s in part and len(part)):
                rows.append({"experiment_id": experiment_id, "setting": setting, "values": sent_values(part[setting])})
        return pd.DataFrame(rows, columns=["experiment_id", "setting", "values"])

    def confounds(self) -> pd.DataFrame:
        """Request settings that differ between the conditions an experiment compares (its factor's levels).

        Experiment 3 compares models; if its models also ran at different temperatures, a
        difference in SD may be the temperature's: the comparison is confounded, and the
        Methods and Limitations say so. Read from the attempt logs, so a configuration that
        sets no temperature for one model (the API default) shows as "not sent".

        Returns
        -------
        DataFrame
            ``experiment_id``, ``factor``, ``setting``, ``by_level`` ("level: values" per level).

        Examples
        --------
        >>> facts.confounds()[["experiment_id", "setting"]].values.tolist()  # doctest: +SKIP
        [['EXP3_ModelComparison', 'temperature']]
        """
        rows = []
        for experiment_id, factor in COMPARED.items():
            part = self.rows(experiment_id)
            if factor not in part or part[factor].nunique() < 2:
                continue
            for setting in (s for s in REQUEST_SETTINGS if s != factor and s in part):
                by_level = {str(level): sent_values(values) for level, values in part.groupby(factor, sort=True)[setting]}
                if len(set(by_level.values())) > 1:
                    rows.append({"experiment_id": experiment_id, "factor": factor, "setting": setting,
                                 "by_level": "; ".join(f"{level}: {v}" for level, v in by_level.items())})  # fmt: skip
        return pd.DataFrame(rows, columns=["experiment_id", "factor", "setting", "by_level"])

    def sets(self) -> dict[str, list[str]]:
        """Transcript IDs per set: A, B, C of the partition, and the synthetic transcripts of Exp 1.

        Examples
        --------
        >>> {name: len(ids) for name, ids in facts.sets().items()}  # doctest: +SKIP
        {'Set A': 8, 'Set B': 8, 'Set C': 8, 'Synthetic (Experiment 1)': 12}
        """
        out = {f"Set {name}": list(ids) for name, ids in (self.partition.get("sets") or {}).items()}
        if len(self.synthetic):
            out["Synthetic (Experiment 1)"] = self.synthetic["transcript_id"].astype(str).tolist()
        return out


def sent_values(values: pd.Series) -> str:
    """The distinct values of a request setting as the Methods state them; a missing one was not sent (the API default).

    Examples
    --------
    >>> sent_values(pd.Series([0.1, 0.1, None])), sent_values(pd.Series(["gpt-4o"]))
    ('0.1 and not sent (API default)', 'gpt-4o')
    """
    shown = sorted({"not sent (API default)" if pd.isna(v) else f"{v:g}" if isinstance(v, (int, float)) else str(v)
                    for v in values})  # fmt: skip
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def setting_words(name: object) -> str:
    """A request setting's name as the Methods write it.

    Examples
    --------
    >>> [setting_words(s) for s in ("max_tokens", "temperature", "reasoning_effort")]
    ['maximum output tokens', 'temperature', 'reasoning effort']
    """
    return SETTING_WORDS.get(str(name), words(name))


#: How a carried-forward choice was made (decisions.json's ``source``), in words.
DECISION_WORDS = {"rule": "rule", "lowest_sd_fallback": "lowest-SD fallback", "pin": "fixed in the configuration"}


def decision_words(source: object) -> str:
    """A decision's source as the text writes it.

    Examples
    --------
    >>> decision_words("lowest_sd_fallback"), decision_words("rule")
    ('lowest-SD fallback', 'rule')
    """
    return DECISION_WORDS.get(str(source), words(source))
