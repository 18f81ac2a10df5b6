"""Experiment 4's run step: the reasoning of Exp 3 segmented, coded (by people, optionally an LLM) and tested."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from hce.collect.design.design import Condition, CustomPrompt, Item
from hce.log import read_log
from hce.study import reasoning
from hce.study.analyses import experiment4
from hce.study.config import Study, StudyStop, scheme_source
from hce.study.designs import corpus_items, design_of, exp_design
from hce.study.handoffs import resolved
from hce.study.human_ratings import ALL_CODES_FILE
from hce.study.sim_coders import refinement_rounds, true_codes
from hce.study.steps import ANALYSIS_SEED as KAPPA_SEED
from hce.study.steps import StudyRun, analyse, current_log, run_design

#: The final coder's codes, one row per coded segment: what the frequency tests and the report read.
CODES_FILE = "codes.csv"


def exp4(study: Study, result: StudyRun, corpus, sets, connection) -> None:
    exp = study.exp("exp4")
    folder = study.output / "exp4"
    folder.mkdir(parents=True, exist_ok=True)
    if not study.log_path("exp3").is_file():
        raise StudyStop("Exp 4 codes the reasoning logged by Exp 3, which has not run (enable experiments.exp3)")
    items = corpus_items(corpus, sets[study.exp("exp3")["set"]], study.rubric)
    log = current_log(study, result, "exp3", exp_design(study, "exp3", items, prompt=resolved(study, "exp3", "prompt")))
    scheme = reasoning.load_coding_scheme(scheme_source(study, exp["coding_scheme"]))
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
        llm = _llm_codes(study, result, segments, corpus, scheme, connection)
        llm.to_csv(folder / "llm_codes.csv", index=False)
        codes.append(llm)
        flagged = read_log(study.log_path("exp4_llm"))["error_flag"]
        if flagged.any():
            result.messages.append(f"Exp 4: {int(flagged.sum())} of {len(flagged)} LLM coding replies flagged "
                                   f"(see error_message in {study.log_path('exp4_llm')}); their codes are missing")  # fmt: skip
    if exp["human_codes"]:
        codes.append(reasoning.read_codes(study.base / exp["human_codes"], scheme))
    elif result.simulated and study.config["simulation"]["coders"]["enabled"]:
        codes.append(_simulated_human_codes(study, result, segments, selection, scheme))
    if not codes:
        result.messages.append(f"Exp 4: coding sheet written to {folder / 'coding_template.csv'}; fill it in and set "
                               "experiments.exp4.human_codes (or enable llm_coding), then run again")  # fmt: skip
        return
    allcodes = pd.concat(codes, ignore_index=True)
    allcodes.to_csv(folder / ALL_CODES_FILE, index=False)  # every coder's codes: the LLM coder's human labels (report)
    coders = sorted(allcodes["coder"].unique())
    human = sorted(c for c in coders if not c.startswith("llm:"))
    if len(human) >= 2:
        kappa = reasoning.intercoder_agreement(allcodes, scheme, coders=human[:2], target=exp["kappa_target"],
                                               random_state=KAPPA_SEED)  # fmt: skip
        kappa.to_csv(folder / "kappa.csv", index=False)
    llm_coders = [c for c in coders if c.startswith("llm:")]
    if llm_coders and human:
        # How far the LLM's coding agrees with a researcher's (7.4.6: "AI applies final coding scheme if possible").
        versus = reasoning.intercoder_agreement(allcodes, scheme, coders=[human[0], llm_coders[0]],
                                                target=exp["kappa_target"], random_state=KAPPA_SEED)  # fmt: skip
        versus.to_csv(folder / "kappa_llm_vs_human.csv", index=False)
    final = exp["final_coder"] or (llm_coders[0] if llm_coders else human[0])
    chosen = allcodes[allcodes["coder"] == final].dropna(subset=scheme.ids, how="all")
    chosen.to_csv(folder / CODES_FILE, index=False)  # the coded segments the frequency tests (and the report) use
    if chosen["model"].nunique() < 2:
        result.messages.append(f"Exp 4: coder {final!r} has codes for fewer than two models; no frequency tests")
    else:
        analyse(study, result, "exp4", experiment4, chosen.dropna(subset=scheme.ids), notes=[f"codes of coder {final!r}"],
                condition="model", dimensions=list(scheme.ids))  # fmt: skip


def _simulated_human_codes(study: Study, result: StudyRun, segments: pd.DataFrame, selection: pd.DataFrame,
                           scheme: reasoning.CodingScheme) -> pd.DataFrame:
    """A rehearsal's researchers (simulation.coders): coder_1 codes every segment, coder_2 the ICR transcripts."""
    folder = study.output / "exp4"
    spec = study.config["simulation"]["coders"]
    icr = selection.loc[selection["role"] == "icr", "item_id"]
    double, rounds = refinement_rounds(segments[segments["item_id"].isin(icr)], scheme, agreement=spec["agreement"],
                                       target=study.exp("exp4")["kappa_target"], random_state=spec["seed"])  # fmt: skip
    rounds.to_csv(folder / "kappa_rounds.csv", index=False)
    codes = pd.concat([true_codes(segments, scheme), double[double["coder"] == "coder_2"]], ignore_index=True)
    codes.to_csv(folder / "human_codes_simulated.csv", index=False)
    last = rounds[rounds["round"] == rounds["round"].max()]
    result.messages.append(
        f"Exp 4: simulated researchers (coder_1 reads each segment's true codes; coder_2 agrees with it at "
        f"{', '.join(f'{a:g}' for a in rounds['agreement'].unique())} in successive rounds, on {icr.size} ICR "
        f"transcripts): kappa {'reached' if last['meets_target'].all() else 'did NOT reach'} the target in round "
        f"{int(last['round'].iloc[0])} (exp4/kappa_rounds.csv)"
    )
    return codes


def _llm_codes(study: Study, result: StudyRun, segments: pd.DataFrame, corpus: pd.DataFrame,
               scheme: reasoning.CodingScheme, connection: Mapping[str, Any]) -> pd.DataFrame:
    """Code every reply's segments with an LLM, through the collection runner (logged, resumable, rate-limited).

    One call per coded reply (transcript x model): the item ``<transcript>|<model>`` of a
    design whose prompt is the coding request (:class:`~hce.collect.design.design.CustomPrompt`),
    so the runner's concurrency, rate limits, retries, resume and attempt log apply.
    """
    coding = study.exp("exp4")["llm_coding"]
    texts = corpus.set_index("transcript_id")["text"]
    messages, criteria, items = {}, {}, []
    for (item, model, reply_id), cell in segments.groupby(["item_id", "model", "attempt_id"], sort=True):
        found = dict(zip(cell["criterion"], cell["segment"].where(cell["segment_found"], None)))
        key = f"{item}|{model}"
        messages[key] = reasoning.coding_messages(found, texts[item], scheme, rubric=study.rubric)
        criteria[key] = [c for c, text in found.items() if text]
        items.append(Item(key, metadata={"coded_item": item, "coded_model": model, "coded_attempt_id": reply_id}))

    def parse(item: Item, text: str | None) -> dict[str, Any]:
        parsed, problems = reasoning.parse_codes(text, scheme, criteria[item.id])
        return {"codes": json.dumps(parsed), "error_flag": bool(problems), "error_message": "; ".join(problems) or None}

    # The coding request with no segment and no transcript stands for the template (settings_hash).
    template = json.dumps(reasoning.coding_messages({}, "", scheme, rubric=study.rubric), sort_keys=True)
    prompt = CustomPrompt(render=lambda item: messages[item.id], parse=parse, version=template)
    cond = Condition(id=f"CODE|{coding['model']}|t{float(coding['temperature']):g}", prompt_id="CODE", model=coding["model"],
                     temperature=float(coding["temperature"]), max_tokens=int(coding["max_tokens"]))  # fmt: skip
    design = design_of(study, study.exp("exp4")["id"], tuple(items), [cond], 1, prompts={"CODE": prompt})
    result.summaries["exp4_llm"] = run_design(design, study.log_path("exp4_llm"), connection)
    log = current_log(study, result, "exp4_llm", design)
    rows = []
    for rec in log.to_dict(orient="records"):
        parsed = json.loads(rec["codes"]) if isinstance(rec.get("codes"), str) else {}
        for criterion, dims in parsed.items():
            rows.append({"item_id": rec["coded_item"], "model": rec["coded_model"], "attempt_id": rec["coded_attempt_id"],
                         "criterion": criterion, "coder": f"llm:{rec['model']}", **dims})  # fmt: skip
    return pd.DataFrame(rows, columns=[*reasoning.SEGMENT_KEY, "coder", *scheme.ids])
