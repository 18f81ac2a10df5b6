"""What one experiment hands the next: the winning prompt and model, with their evidence.

The winner rule (7.2.8, 7.3.7): the condition with the lowest median SD of total scores
wins if Friedman's test is significant and the post-hoc tests (Wilcoxon signed-rank with
Bonferroni correction by default) find it significantly lower than every other condition.
Without such a winner the run stops and asks for a pinned choice (or, if configured, takes
the lowest-SD condition and says so). The choice, its source and its evidence are written
to ``decisions.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.study.config import Study, StudyStop


@keywords_checked
def read_decisions(study: Study) -> dict[str, Any]:
    """The decisions the study has made so far (``decisions.json`` of its output folder).

    Parameters
    ----------
    study : Study

    Returns
    -------
    dict
        Kind (``prompt``, ``model``) -> the choice, its source and evidence; empty before
        any decision.

    Examples
    --------
    >>> from hce.study import load_study, read_decisions
    >>> read_decisions(load_study({"output": "a_new_study"}))
    {}
    """
    return decisions_in(study.output)


def decisions_in(folder: Path) -> dict[str, Any]:
    """``decisions.json`` of a study output folder: kind (prompt, model) -> choice, source, evidence."""
    path = Path(folder) / "decisions.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def write_decision(study: Study, kind: str, decision: Mapping[str, Any]) -> None:
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


@keywords_checked
def choose_winner(result: Any, *, kind: str, column: str, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the winner rule to an Exp 2/3 analysis; return the choice with its evidence.

    Parameters
    ----------
    result : AnalysisResult
        From :func:`hce.study.experiment2` or :func:`hce.study.experiment3`, whose
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

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> from hce.study import choose_winner, default_config, experiment2
    >>> log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
    ...                     noise={"P2.1": 0.6, "P2.2": 0.6, "P2.3": 0.2}, n_items=20, n_attempts=5)
    >>> rule = default_config()["experiments"]["exp2"]["winner"]
    >>> decision = choose_winner(experiment2(log, random_state=0), kind="prompt", column="prompt_id", rule=rule)
    >>> decision["choice"], decision["source"]
    ('P2.3', 'rule')
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


def winner_kwargs(rule: Mapping[str, Any]) -> dict[str, Any]:
    """The winner rule's test settings as keyword arguments of :func:`~hce.study.analyses.experiment2`/``3``."""
    return {"posthoc_method": rule["posthoc"], "p_adjust_method": rule["p_adjust"], "require": rule["require"], "alpha": rule["alpha"]}


def resolved(study: Study, key: str, kind: str) -> str:
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
