"""The study report's hand-offs and cost: which decision each experiment handed on, and what the study cost.

Split from :mod:`hce.study.report` (one module per part of the report): the decisions of a
study folder (``decisions.json``) against the values the later experiments' rows used, and the
cost per experiment as logged.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from hce.errors import HceError
from hce.report.cost import cost_summary, without_empty_latency
from hce.report.document import Report
from hce.report.tables import Table
from hce.study.results import StudyResults

#: What each decision is handed to, and the log column that shows it was used.
HANDOFFS = {"prompt": ("prompt_id", ("EXP3_ModelComparison", "EXP5_FinalToolValidation")),
            "model": ("model", ("EXP5_FinalToolValidation",))}  # fmt: skip


def handoff_table(log: pd.DataFrame, decisions: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per decision of the study (``decisions.json``) and what the later experiments' rows used.

    Examples
    --------
    >>> log = pd.DataFrame({"experiment_id": ["EXP3_ModelComparison"] * 2, "prompt_id": ["P2.3", "P2.3"],
    ...                     "model": ["m1", "m2"]})
    >>> handoff_table(log, {"prompt": {"choice": "P2.3", "source": "rule", "rule": "lowest SD"}})[["decision", "choice", "used_by"]]
      decision choice               used_by
    0   prompt   P2.3  EXP3_ModelComparison
    """
    rows = []
    for kind, (column, receivers) in HANDOFFS.items():
        decision = decisions.get(kind)
        if not decision:
            continue
        used, other = [], []
        for receiver in receivers:
            rows_of = log[log["experiment_id"] == receiver] if "experiment_id" in log else log.iloc[0:0]
            values = sorted(rows_of[column].dropna().astype(str).unique()) if column in rows_of else []
            if values == [str(decision["choice"])]:
                used.append(receiver)
            elif values:
                other.append(f"{receiver} ({', '.join(values)})")
        rows.append({"decision": kind, "choice": decision["choice"], "source": decision.get("source"),
                     "rule": decision.get("rule"), "used_by": ", ".join(used), "not_used_by": ", ".join(other)})  # fmt: skip
    return pd.DataFrame(rows, columns=["decision", "choice", "source", "rule", "used_by", "not_used_by"])


def handoff_section(report: Report, results: StudyResults, confidence: float) -> None:
    section = report.section("Hand-offs between experiments")
    if not results.decisions:
        section.add("No decisions recorded: these logs come without a study folder (its decisions.json says which "
                    "prompt Experiment 2 handed to Experiment 3 and which model Experiment 3 handed to Experiment 5). "
                    "Run `hce report` on the study folder to show them.")  # fmt: skip
        return
    section.add("Experiment 2 chooses the prompt and Experiment 3 the model for the experiments after them (PRD 7.2.8, "
                "7.3.7); 'not used by' names a later experiment whose rows used another value.",
                Table(handoff_table(results.log, results.decisions), "Decisions handed on and the experiments that used them",
                      "handoffs", confidence))  # fmt: skip


def cost_section(report: Report, results: StudyResults, confidence: float) -> None:
    section = report.section("Cost of the study")
    log = results.log
    if not any(c in log and log[c].notna().any() for c in ("cost_usd", "input_tokens", "output_tokens")):
        section.add("Not reported: the logs record no cost or token counts (cost_usd, input_tokens, output_tokens).")
        return
    try:
        table = without_empty_latency(cost_summary(log, by="experiment_id"))
    except HceError as exc:  # e.g. a cost column without the token counts
        section.add(f"Not reported: {exc}.")
        return
    section.add("What each experiment's attempts cost as logged (the collection's dated prices); per condition in each "
                "experiment's cost section.",
                Table(table, "Cost and tokens per experiment and per 1,000 attempts", "cost_by_experiment", confidence))  # fmt: skip
