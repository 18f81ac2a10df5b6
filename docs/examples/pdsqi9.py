"""Your own instrument: PDSQI-9
=============================

Your own instrument end to end: PDSQI-9 as an hce rubric, own prompts, the simulated judge, the report.

1. Reads the PDSQI-9 instrument text (epic-open-source/evaluation-instruments, Apache-2.0,
   in ../shared/data/pdsqi9_rubric/) and writes it as an hce rubric YAML: eleven criteria,
   seven scored 1-5, four 0-1 (the abstraction gate and two stigmatizing-language items).
   The sum of 1-5 and 0-1 items is not a score, so the rubric says ``total_meaningful: false``
   and the report analyses each criterion, never a total. The "synthesized" item's NA grade
   ("no need for abstraction") has no integer score, so it is left out of the scale here.
2. Writes two prompt templates of its own (zero-shot and few-shot, with two few-shot
   examples WRITTEN FOR THIS EXAMPLE, scored on all eleven criteria) and a design: 18
   primock57 consultations (CC BY 4.0; the consultation is the source, the clinician's note
   the summary judged) x 3 conditions x 5 attempts. The conditions: zero-shot on model A at
   temperature 0.1, few-shot on model A at 0.1, few-shot on model B at 0.7, so two
   conditions share a prompt and are still never pooled.
3. Runs the design against ``hce.sim.SimServer`` on loopback (no key, no cost; with
   429s, 500s and malformed replies injected) and writes the generic report.

Run from the repository root (the data live in ../shared/data, see its README)::

    python docs/examples/pdsqi9.py [OUT]

OUT defaults to reports/examples/pdsqi9/. Without the shared data it says so and exits 0.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import yaml
from _common import arguments

import hce
from hce.collect import Faults, SimJudge, SimServer, run
from hce.report import report
from hce.report.document import Report

INSTRUMENT = "pdsqi9_rubric/pdsqi9_rubric_set.txt"
CONSULTATIONS = "primock57/consultations.csv"
NAMES = {"voice_summ": "Stigmatizing language in the summary", "voice_note": "Stigmatizing language in the notes"}
MODELS = ("gpt-4.1-mini-2025-04-14", "gpt-4o-2024-08-06")
N_ITEMS, ATTEMPTS = 18, 5

PROMPT = """---
id: <<id>>
reply: scores
---
You are a physician reviewing an AI-written clinical summary against the source clinical notes.
Use the instrument "{{RubricName}}":
{{RubricText}}
<<examples>>
Score each criterion on its own scale:
{{ScaleLines}}
Output the scores in the following exact format:
{{ScoreFormat}}

Transcript:
{{TranscriptText}}

Scores:
"""
# Two prompts of our own: the same instructions with and without few-shot examples.
ZERO_SHOT = PROMPT.replace("<<id>>", "pdsqi_zero_shot").replace("<<examples>>", "")
FEW_SHOT = PROMPT.replace("<<id>>", "pdsqi_few_shot").replace("<<examples>>", "\nHere are scored examples:\n{{FewShotExamples}}")
# Written for this example (not from any corpus): a faithful summary and a poor one, scored by its authors.
EXAMPLES = [
    {"id": "faithful", "rationale": "Every assertion traces to the notes, cited and in order; plain, brief; no stigma.",
     "text": "Notes: 3 days of watery diarrhoea, no blood, tolerating fluids; advised oral rehydration.\n"
             "Summary: Three days of non-bloody watery diarrhoea, drinking well [Note ID:1]. Plan: oral rehydration [Note ID:1].",
     "scores": {"citation": 5, "accurate": 5, "thorough": 5, "useful": 5, "organized": 5, "comprehensible": 5,
                "succinct": 5, "abstraction": 0, "synthesized": 3, "voice_summ": 0, "voice_note": 0}},
    {"id": "poor", "rationale": "No citations, a fabricated fever, the plan omitted, wordy, and a stigmatizing label.",
     "text": "Notes: 3 days of watery diarrhoea, no blood, tolerating fluids; advised oral rehydration.\n"
             "Summary: The noncompliant patient says he has had diarrhoea and diarrhoea for days, with fever.",
     "scores": {"citation": 1, "accurate": 2, "thorough": 1, "useful": 2, "organized": 3, "comprehensible": 3,
                "succinct": 2, "abstraction": 0, "synthesized": 2, "voice_summ": 1, "voice_note": 0}},
]


def pdsqi9_rubric(text: str) -> dict:
    """The instrument's tagged blocks (DESCRIPTION, NOTE, GRADES) as an hce rubric mapping."""
    categories, described = [], []
    for tag, body in re.findall(r"<(\w+)>\n(.*?)\n</\1>", text, flags=re.DOTALL):
        description = re.search(r"^DESCRIPTION:\s*(.+)$", body, flags=re.MULTILINE).group(1).strip()
        grades = re.findall(r"^(\w+) = (.+)$", body.split("GRADES:", 1)[1], flags=re.MULTILINE)
        levels = [{"score": int(score), "label": f"grade {score}", "descriptor": words.strip()}
                  for score, words in grades if score.isdigit()]  # NA (no need for abstraction) is not a score
        name = NAMES.get(tag, tag.capitalize())
        categories.append({"id": tag, "name": name, "levels": levels})
        described.append(f"{name}: {description}")
    return {
        "name": "PDSQI-9 (Provider Documentation Summarization Quality Instrument)",
        "source": "epic-open-source/evaluation-instruments @be2bf79, instruments/pdsqi_9/pdsqi_prompt.py (Apache-2.0)",
        "description": " ".join(described),
        "total_meaningful": False,  # 1-5 items beside 0-1 items: their sum is not a score
        "categories": categories,
    }


def items(data: Path) -> list[dict]:
    consultations = pd.read_csv(data / CONSULTATIONS).sort_values("consultation_id").head(N_ITEMS)
    return [{"id": row.consultation_id,
             "text": f"CLINICAL NOTES (consultation transcript):\n{row.transcript}\n\nCLINICAL SUMMARY:\n{row.clinician_note}"}
            for row in consultations.itertuples()]  # fmt: skip


def main() -> Report | None:
    args = arguments("pdsqi9")
    missing = [p for p in (INSTRUMENT, CONSULTATIONS) if not (args.data / p).is_file()]
    if missing:
        print(f"skipped: {args.data / missing[0]} is absent; this example reads the PDSQI-9 text and primock57 "
              "from ../shared/data (see its README), or give --data", file=sys.stderr)  # fmt: skip
        return None
    out: Path = args.out
    (out / "prompts").mkdir(parents=True, exist_ok=True)
    rubric_file = out / "pdsqi9.yaml"
    rubric_file.write_text(yaml.safe_dump(pdsqi9_rubric((args.data / INSTRUMENT).read_text(encoding="utf-8")), sort_keys=False))
    rubric = hce.load_rubric(rubric_file)
    (out / "prompts" / "zero_shot.txt").write_text(ZERO_SHOT)
    (out / "prompts" / "few_shot.txt").write_text(FEW_SHOT)
    (out / "prompts" / "examples.yaml").write_text(yaml.safe_dump({"examples": EXAMPLES}, sort_keys=False))
    log = out / "pdsqi.jsonl"
    log.unlink(missing_ok=True)  # a fresh run each time (a second run on the same log would only resume)
    faults = Faults(rate_429=0.03, rate_500=0.02, rate_malformed=0.02, retry_after=0.05)
    with SimServer(SimJudge(seed=21, faults=faults)).start() as server:
        design = {
            "experiment_id": "PDSQI_pilot", "rubric": "pdsqi9.yaml", "attempts": ATTEMPTS,
            "endpoint": {"base_url": server.url, "needs_key": False, "max_retries": 3},
            "defaults": {"max_tokens": 400, "logprobs": True, "top_logprobs": 5},
            "conditions": [
                {"id": "zero_shot|A|t0.1", "prompt": "prompts/zero_shot.txt", "model": MODELS[0], "temperature": 0.1},
                {"id": "few_shot|A|t0.1", "prompt": "prompts/few_shot.txt", "examples": "prompts/examples.yaml",
                 "model": MODELS[0], "temperature": 0.1},
                {"id": "few_shot|B|t0.7", "prompt": "prompts/few_shot.txt", "examples": "prompts/examples.yaml",
                 "model": MODELS[1], "temperature": 0.7},
            ],
            "items": items(args.data),
        }  # fmt: skip
        (out / "design.yaml").write_text(yaml.safe_dump(design, sort_keys=False))
        summary = run(out / "design.yaml", log)
    print(summary)
    built = report(log, rubric=rubric, out=out / "report", title="PDSQI-9 pilot: three conditions, 18 primock57 consultations")
    print(f"wrote {out / 'report' / 'report.html'} and report.md (rubric {rubric_file}, design {out / 'design.yaml'})")
    return built


if __name__ == "__main__":
    built = main()  # the report: its figures are the example's on the gallery page and card
