"""What the study report is built from: the log's analyses (:class:`StudyResults`) and
Experiment 4's codes (:class:`ReasoningCodes`).

Both the report (:mod:`hce.study.report`) and its Experiment 4 section
(:mod:`hce.study.report_exp4`) read these bundles; they live here, below both, so neither
report module imports the other's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from hce.stats.result import AnalysisResult


@dataclass
class ReasoningCodes:
    """Experiment 4 as a study folder holds it: the final coder's codes and the coders' kappas.

    ``codes`` (``exp4/codes.csv``, one row per coded segment) feed the frequency tests;
    ``kappa`` (two researchers), ``rounds`` (the refinement loop, 7.4.5) and ``llm_vs_human``
    are the reliability tables the run wrote (empty when that step did not happen); ``all_codes``
    every coder's codes (researchers' and the LLM's: the human labels of the LLM coder);
    ``settings`` are the keyword arguments the study analysed the codes with.
    """

    codes: pd.DataFrame
    kappa: pd.DataFrame = field(default_factory=pd.DataFrame)
    rounds: pd.DataFrame = field(default_factory=pd.DataFrame)
    llm_vs_human: pd.DataFrame = field(default_factory=pd.DataFrame)
    settings: dict = field(default_factory=dict)
    result: AnalysisResult | None = None
    all_codes: pd.DataFrame = field(default_factory=pd.DataFrame)  # every coder's codes (exp4/all_codes.csv)
    failure: str | None = None

    @property
    def coded(self) -> dict[str, int]:
        """Transcripts, models, replies and segments coded."""
        c = self.codes
        return {"transcripts": c["item_id"].nunique(), "models": c["model"].nunique(),
                "replies": len(c.drop_duplicates(["item_id", "model"])), "segments": len(c)}  # fmt: skip


@dataclass
class StudyResults:
    """What the report is built from: the log, each experiment's analysis and the settings that made it.

    ``settings`` holds each analysis's effective keyword arguments; ``saved`` names the
    experiments whose settings a study saved (the rest ran on the defaults of
    ``hce.study.analyses``); ``decisions`` is the study's ``decisions.json`` (empty for bare logs).
    """

    log: pd.DataFrame
    experiments: dict[str, AnalysisResult]
    simulated: bool
    failures: dict[str, str] = field(default_factory=dict)
    settings: dict[str, dict] = field(default_factory=dict)
    saved: set[str] = field(default_factory=set)
    decisions: dict[str, dict] = field(default_factory=dict)
    reasoning: ReasoningCodes | None = None  # Experiment 4 (codes and kappas from a study folder)
    logprobs_are: str | None = None  # what the logprobs are (a study's setting; None: see logprobs_behaviour)
