"""Reading a prompt as the simulated judge does: the reply format asked for, the item, the score lines."""

from __future__ import annotations

import re

from hce.sim import reasoning as sim_reasoning

_SCORE_LINE = re.compile(r"^[ \t]*([^\n:]+?):[ \t]*\[score_(\d+)_(\d+)(?: or [^\]\n]+)?\]", re.MULTILINE)
TOTAL_RANGE = re.compile(r"\[sum_of_scores_(\d+)_(\d+)\]|Total Score \((\d+)-(\d+)\)")
_ITEM_START = re.compile(r"(?:^|\n)[ \t]*(?:New )?Transcript:[ \t]*\n")
_ITEM_END = re.compile(r"\n[ \t]*\n[ \t]*(?:Scores:|Step-by-step Analysis|Total Score \(|Final Scores Output:)")
TARGET = re.compile(r"Target Total Score for this transcript:\s*(\d+)")


def detect_format(prompt: str) -> str:
    """The reply format a prompt asks for: coding, verdict, synthetic, cot, scores, total or unknown."""
    if sim_reasoning.is_coding_prompt(prompt):  # it shows a transcript, and may quote a verdict prompt
        return "coding"
    if ("pass" in prompt and re.search(r"\bpass\b\s*:\s*boolean", prompt)) or '"pass"' in prompt:
        return "verdict"
    if "Outline:" in prompt and TARGET.search(prompt):
        return "synthetic"
    has_scores = "[score_" in prompt and _SCORE_LINE.search(prompt) is not None
    if has_scores and "step-by-step" in prompt.lower():
        return "cot"
    if has_scores:
        return "scores"
    if re.search(r"Total Score \(\d+-\d+\)|single holistic total score", prompt):
        return "total"
    return "unknown"


def item_text(prompt: str, fmt: str) -> tuple[str, str]:
    """(prefix before the item, the item text)."""
    if fmt == "verdict":
        at = prompt.rfind("INPUTS")
        return (prompt[:at], prompt[at:]) if at >= 0 else ("", prompt)
    # The item follows the last "Transcript:" heading (few-shot snippets come before it).
    heading = max(prompt.rfind("\nTranscript:"), prompt.rfind("\nNew Transcript:"))
    start = _ITEM_START.search(prompt, max(heading, 0))
    if start is None:
        return "", prompt
    begin = start.end()
    end = _ITEM_END.search(prompt, begin)
    return prompt[:begin], prompt[begin : end.start() if end else len(prompt)].strip()


def score_categories(prompt: str) -> list[tuple[str, int, int]]:
    """``(name, low, high)`` of each score line the prompt asks for (``Name: [score_1_4]``), in order, once each."""
    seen: dict[str, tuple[str, int, int]] = {}
    for m in _SCORE_LINE.finditer(prompt):
        name = m.group(1).strip().strip("*").strip()
        seen.setdefault(name, (name, int(m.group(2)), int(m.group(3))))
    return list(seen.values())
