"""The study's plan: calls, tokens and cost of every experiment, before anything is sent."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.collect.design.design import Design, Item
from hce.collect.call.pricing import cost_usd
from hce.collect.running.runner import CHARS_PER_TOKEN, estimate
from hce.errors import CollectError
from hce.study import reasoning
from hce.study.config import Study, scheme_source
from hce.study.designs import corpus_items, exp_design, generation_design, synthetic_targets
from hce.study.handoffs import read_decisions
from hce.study.partition import partition

_TYPICAL_CODING_OUTPUT = 400  # tokens of a JSON object of 5 x 5 codes


def _placeholder_items(prefix: str, n: int, words: int) -> tuple[Item, ...]:
    # Text of the assumed length: about 5.6 characters per English word with its space.
    text = "Patient: " + ("lorem " * int(words))
    return tuple(Item(f"{prefix}{k:04d}", text) for k in range(1, n + 1))


@keywords_checked
def plan(study: Study, corpus: pd.DataFrame | None = None) -> pd.DataFrame:
    """Calls, tokens and cost of every experiment, before anything is sent.

    Real transcripts are used when the corpus is given (their lengths, Set sizes);
    otherwise the ``plan`` section's assumptions (677 transcripts of about 1,000 words).
    Prompts and models chosen by earlier experiments are taken from ``decisions.json``
    when it exists, else pinned ones, else ``plan.assume_prompt`` and, for Exp 5's model,
    the dearest candidate (an upper bound). Attempts already logged are not subtracted:
    this is the whole study.

    Parameters
    ----------
    study : Study
    corpus : DataFrame, optional
        The real transcripts (:func:`load_corpus`).

    Returns
    -------
    DataFrame
        One row per experiment x condition: ``experiment``, ``step`` (generation,
        judging, coding), ``condition_id``, ``prompt_id``, ``model``, ``items``,
        ``attempts``, ``calls``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (NaN when
        unpriced; prompt caching not counted, so an upper bound), ``note``.

    Examples
    --------
    >>> from hce.study import load_study, plan
    >>> costs = plan(load_study())
    >>> costs[["experiment", "step", "calls"]].head(2)
                       experiment        step  calls
    0  EXP1_BaselineRubricUtility  generation     50
    1  EXP1_BaselineRubricUtility     judging   2500
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
        targets = synthetic_targets(study)
        add("exp1", "generation", generation_design(study, targets), "one call per synthetic transcript; regenerations not counted")
        synth_items = _placeholder_items("SYN-", len(targets), assume["synthetic_words"])
        add("exp1", "judging", exp_design(study, "exp1", synth_items), f"assumed: synthetic transcripts of ~{assume['synthetic_words']} words")
    if corpus is not None:
        sets = partition(corpus["transcript_id"], seed=study.config["partition"]["seed"],
                         n_a=study.config["partition"]["n_a"], n_b=study.config["partition"]["n_b"])  # fmt: skip
        set_items = {s: corpus_items(corpus, ids, study.rubric) for s, ids in sets.items()}
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
    scheme_chars = len(reasoning.load_coding_scheme(scheme_source(study, exp4["coding_scheme"])).render())
    per_call = math.ceil((scheme_chars + 1200 + assume["words_per_transcript"] * 5.6 + 3000) / CHARS_PER_TOKEN)
    cost = cost_usd(coding["model"], calls * per_call, calls * _TYPICAL_CODING_OUTPUT, warn=False)
    return {"experiment": exp4["id"], "step": "coding", "condition_id": f"CODE|{coding['model']}", "prompt_id": "CODE",
            "model": coding["model"], "items": exp4["n_transcripts"], "attempts": 1, "calls": calls,
            "input_tokens": calls * per_call, "output_tokens": calls * _TYPICAL_CODING_OUTPUT,
            "cost_usd": np.nan if cost is None else cost,
            "note": "one call per transcript x model; reasoning of ~3,000 characters assumed"}  # fmt: skip


