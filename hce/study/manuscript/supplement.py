"""The study side of the supplement: rubric, prompts as sent, transcript IDs, per-item tables, rebuild script.

Written into ``<out>/supplement/`` beside the manuscript (the writers add
``number_sources.csv``; the software environment comes from
:func:`hce.report.manuscript.environment_table` when the writers are installed).

Example
-------
>>> written = write_supplement(facts, report_dir, out_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pandas as pd

from hce.collect.design.prompts import REPLY_FORMAT, render
from hce.study.manuscript.facts import StudyFacts
from hce.study.report import PER_ITEM_TABLES

SUPPLEMENT = "supplement"
#: What stands for each transcript in the prompts as printed (the only part of a call that varies by item).
TRANSCRIPT = "{{TranscriptText}}"


def _rubric_text(facts: StudyFacts) -> str:
    """Supplement S1: the full rubric, laid out as the prompts embed it."""
    return f"# Supplement S1. {facts.rubric.name}\n\n```\n{facts.rubric.render()}\n```\n"


def _prompts_text(facts: StudyFacts) -> str:
    """Supplement S2: every prompt the logs used, rendered with the study's rubric as it was sent.

    The transcript is shown as ``{{TranscriptText}}``; the synthetic-transcript prompt is shown
    for the first target total drawn (the only other part that varies).
    """
    used = sorted(p for p in facts.log["prompt_id"].dropna().astype(str).unique() if p in REPLY_FORMAT)
    parts = ["# Supplement S2. Prompt templates as sent\n",
             f"Each call sent one user message: the text below, with {TRANSCRIPT} replaced by the transcript.\n"]  # fmt: skip
    for prompt_id in used:
        (message,) = render(prompt_id, rubric=facts.rubric, transcript=TRANSCRIPT)
        parts.append(f"## {prompt_id}\n\n```\n{message['content']}\n```\n")
        if not matches_log(message["content"], facts.requests.get(prompt_id)):
            parts.append(f"Note: the logged request of {prompt_id} does not match this rendering; see the attempt log's "
                         "`request` column for the text sent.\n")  # fmt: skip
    if len(facts.synthetic):
        target = int(facts.synthetic["target_total"].iloc[0])
        (message,) = render("SYNTH", rubric=facts.rubric, target_total=target)
        parts.append(f"## SYNTH (synthetic transcripts, Experiment 1; shown for target total {target})\n\n```\n{message['content']}\n```\n")
    return "\n".join(parts)


def matches_log(template: str, request: str | None) -> bool:
    """Whether a logged request (chat messages as JSON) is ``template`` with some transcript in place of its placeholder.

    Examples
    --------
    >>> matches_log("Rate: {{TranscriptText}} Score:", '[{"role": "user", "content": "Rate: D: Hi. P: Hello. Score:"}]')
    True
    >>> matches_log("Rate: {{TranscriptText}} Score:", None)
    False
    """
    if request is None:
        return False
    sent = "\n".join(m.get("content", "") for m in json.loads(request) if isinstance(m, dict))
    before, _, after = template.partition(TRANSCRIPT)
    return sent.startswith(before) and sent.endswith(after)


def _transcript_ids(facts: StudyFacts) -> pd.DataFrame:
    """Supplement S3: ``set, transcript_id``, one row per transcript of each set."""
    rows = [{"set": name, "transcript_id": i} for name, ids in facts.sets().items() for i in ids]
    return pd.DataFrame(rows, columns=["set", "transcript_id"])


def _reproduce_script(facts: StudyFacts, out_dir: Path) -> str:
    """``reproduce.sh``: rebuild the study report's tables from the logs, then compare them with the cited ones.

    Paths are relative to the manuscript folder (``out_dir``), so the study folder and its
    manuscript can be moved or shared together and the script still runs.
    """
    study = shlex.quote(os.path.relpath(facts.folder.resolve(), Path(out_dir).resolve()))
    return f"""#!/bin/sh
# Rebuild every table this manuscript cites from the study's attempt logs (no API calls), then
# compare them with the tables the manuscript was written from. Usage: sh reproduce.sh [STUDY_OUTPUT] [OUT]
# (default: the study folder and OUT=reproduced, both relative to the manuscript folder).
set -e
HERE=$(cd "$(dirname "$0")/.." && pwd)
STUDY=${{1:-"$HERE"/{study}}}
OUT=${{2:-"$HERE"/reproduced}}
mkdir -p "$OUT"
# exit 1: some section the log cannot support (listed in the report and in report.stderr)
hce report "$STUDY" --out "$OUT/report" 2> "$OUT/report.stderr" || test $? -eq 1
hce manuscript "$STUDY" --report "$OUT/report" -o "$OUT/manuscript"
status=0
for table in "$HERE"/tables/*.csv; do
  cmp -s "$table" "$OUT/report/tables/$(basename "$table")" || {{ echo "differs: $(basename "$table")"; status=1; }}
done
[ $status -eq 0 ] && echo "every cited table rebuilt identically from the logs"
exit $status
"""


def write_supplement(facts: StudyFacts, report_dir: Path, out_dir: Path) -> list[Path]:
    """Write S1-S3, the per-item tables, the environment and ``reproduce.sh`` into ``out_dir/supplement``.

    Examples
    --------
    >>> sorted(p.name for p in write_supplement(facts, Path("reports/demo"), Path("paper")))[:3]  # doctest: +SKIP
    ['S1_rubric.md', 'S2_prompts.md', 'S3_transcript_ids.csv']
    """
    folder = Path(out_dir) / SUPPLEMENT
    (folder / "per_item").mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("S1_rubric.md", _rubric_text(facts)), ("S2_prompts.md", _prompts_text(facts)),
                       ("reproduce.sh", _reproduce_script(facts, out_dir))):  # fmt: skip
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    _transcript_ids(facts).to_csv(folder / "S3_transcript_ids.csv", index=False)
    written.append(folder / "S3_transcript_ids.csv")
    for table in sorted(Path(report_dir, "tables").glob("*.csv")):
        # the per-item tables the report keeps out of its body (exp2_sd.csv, exp1_mae.csv, ...)
        if table.stem.split("_", 1)[-1] in PER_ITEM_TABLES or table.stem == "exp4_frequencies":
            written.append(Path(shutil.copy2(table, folder / "per_item" / table.name)))
    try:
        from hce.report.manuscript import environment_table
    except ImportError:  # the writers' branch is not merged yet: no environment table
        return written
    environment_table().to_csv(folder / "environment.csv", index=False)
    return written + [folder / "environment.csv"]
