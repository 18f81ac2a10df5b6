"""The simulated judge's reasoning styles: a known truth for Experiment 4 (seed 000, 7.4).

A step-by-step reply of the simulated judge (:mod:`hce.sim`) reasons about each
rubric category in one segment. Each segment carries one code per dimension of the PRD's
reasoning coding scheme (``hce/data/coding_scheme_prd.yaml``: evidence type, rubric
alignment, specificity, reasoning depth, strengths/weaknesses), drawn independently, per
segment and per dimension, from the model's style (:data:`REASONING_STYLES`, the truth):

================================  ==============================================================
model                             style (probabilities of the codes, in the scheme's order)
================================  ==============================================================
``gpt-4o-2024-08-06``             quotes the patient most: evidence .55/.25/.15/.05
``o4-mini-2025-04-16``            paraphrases: evidence .20/.50/.20/.10; depth .15/.50/.35
``o3-2025-04-16``                 ties to the rubric and goes deep: alignment .80/.15/.05,
                                  depth .05/.35/.60, balanced .70
``gpt-4.1-mini-2025-04-14``       gist and generic: evidence .10/.20/.50/.20, generic .60,
                                  depth .50/.40/.10, misses obvious points .25
any other model                   :data:`DEFAULT_STYLE`
================================  ==============================================================

(the full tables are :data:`REASONING_STYLES`). A code is written as a fixed sentence
(:data:`PHRASES`; the direct quote holds the patient's first line), so a reader who knows
the phrases recovers every code exactly: :func:`read_codes` is that reader. The simulated
judge answers hce's reasoning-coding prompt (:func:`hce.study.reasoning.coding_messages`)
with the codes :func:`read_codes` finds in each segment shown to it: the simulated LLM coder
is exact (its codes are the truth of the segments it reads); a human coder who is not is
simulated by the study (``hce.study.sim_coders``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping

from hce.model_names import ALIASES

#: The PRD scheme's dimensions and codes, in its order (``hce/data/coding_scheme_prd.yaml``).
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "evidence_type": ("direct_quote", "paraphrase", "general_gist", "no_clear_evidence"),
    "rubric_alignment": ("clear_link", "loose_link", "misinterpretation"),
    "specificity": ("specific", "generic"),
    "reasoning_depth": ("superficial", "moderate", "in_depth"),
    "strengths_weaknesses": ("balanced", "focuses_on_one", "misses_obvious"),
}

Style = dict[str, dict[str, float]]


def _style(*probabilities: tuple[float, ...]) -> Style:
    """A style from the probabilities of each dimension's codes, in :data:`DIMENSIONS` order."""
    return {dim: dict(zip(codes, probs)) for (dim, codes), probs in
            zip(DIMENSIONS.items(), probabilities, strict=True)}  # fmt: skip


#: The style of a model not in :data:`REASONING_STYLES`.
DEFAULT_STYLE: Style = _style((0.30, 0.30, 0.25, 0.15), (0.55, 0.35, 0.10), (0.60, 0.40), (0.25, 0.50, 0.25), (0.45, 0.40, 0.15))

#: The truth of Experiment 4: per model, per dimension, the probability of each code.
REASONING_STYLES: dict[str, Style] = {
    "gpt-4o-2024-08-06": _style((0.55, 0.25, 0.15, 0.05), (0.60, 0.30, 0.10), (0.75, 0.25), (0.20, 0.55, 0.25), (0.50, 0.35, 0.15)),
    "o4-mini-2025-04-16": _style((0.20, 0.50, 0.20, 0.10), (0.65, 0.30, 0.05), (0.65, 0.35), (0.15, 0.50, 0.35), (0.55, 0.35, 0.10)),
    "o3-2025-04-16": _style((0.35, 0.40, 0.20, 0.05), (0.80, 0.15, 0.05), (0.80, 0.20), (0.05, 0.35, 0.60), (0.70, 0.25, 0.05)),
    "gpt-4.1-mini-2025-04-14": _style((0.10, 0.20, 0.50, 0.20), (0.40, 0.45, 0.15), (0.40, 0.60), (0.50, 0.40, 0.10), (0.30, 0.45, 0.25)),
}

#: How each code is written in a segment; ``{quote}``, ``{level}``, ``{category}`` are filled in.
PHRASES: dict[str, dict[str, str]] = {
    "evidence_type": {
        "direct_quote": 'Quote: "{quote}".',
        "paraphrase": "Paraphrase: the patient explains it plainly.",
        "general_gist": "Overall impression only.",
        "no_clear_evidence": "No evidence cited.",
    },
    "rubric_alignment": {
        "clear_link": "Matches the level {level} descriptor.",
        "loose_link": "Broadly about {category}.",
        "misinterpretation": "Judged by medical vocabulary instead.",
    },
    "specificity": {"specific": "Specific to this visit.", "generic": "Typical of patients."},
    "reasoning_depth": {
        "superficial": "Nothing more.",
        "moderate": "One or two observations.",
        "in_depth": "Several observations; neighbouring levels fit less.",
    },
    "strengths_weaknesses": {
        "balanced": "Strengths and weaknesses both.",
        "focuses_on_one": "Only one side noted.",
        "misses_obvious": "Nothing else to note.",
    },
}


def style(model: str) -> Style:
    """The reasoning style (truth) of a model (an undated alias is its snapshot): :data:`REASONING_STYLES`
    or :data:`DEFAULT_STYLE`.

    Examples
    --------
    >>> style("gpt-4o")["evidence_type"]["direct_quote"]
    0.55
    """
    return REASONING_STYLES.get(ALIASES.get(model, model), DEFAULT_STYLE)


def draw_codes(model: str, rng: random.Random) -> dict[str, str]:
    """One segment's codes, each dimension drawn independently from the model's style."""
    out = {}
    for dim, probs in style(model).items():
        u, acc, chosen = rng.random(), 0.0, next(iter(probs))
        for code, p in probs.items():
            acc += p
            chosen = code
            if u < acc:
                break
        out[dim] = chosen
    return out


def segment_text(codes: Mapping[str, str], *, category: str, level: int, quote: str) -> str:
    """The reasoning sentence of one category segment, carrying ``codes`` (:data:`PHRASES`).

    Examples
    --------
    >>> codes = {"evidence_type": "no_clear_evidence", "rubric_alignment": "clear_link", "specificity": "generic",
    ...          "reasoning_depth": "superficial", "strengths_weaknesses": "misses_obvious"}
    >>> segment_text(codes, category="Lexical Diversity", level=2, quote="Fine.")
    'No evidence cited. Matches the level 2 descriptor. Typical of patients. Nothing more. Nothing else to note.'
    """
    fill = {"quote": quote, "level": level, "category": category.lower()}
    return " ".join(PHRASES[dim][codes[dim]].format(**fill) for dim in DIMENSIONS)


# A phrase's fixed part (the text before its first placeholder) identifies its code.
_QUOTED = re.compile(r'Quote: ".*?"\.', re.DOTALL)
_MARKERS = {dim: {code: phrase.split("{")[0] for code, phrase in codes.items()} for dim, codes in PHRASES.items()}


def read_codes(segment: str) -> dict[str, str | None]:
    """The codes a segment written by :func:`segment_text` carries (None: no phrase of that dimension).

    Examples
    --------
    >>> read_codes("Overall impression only. Nothing more.")["evidence_type"]
    'general_gist'
    """
    evidence = next((code for code, marker in _MARKERS["evidence_type"].items() if marker in segment), None)
    rest = _QUOTED.sub(" ", segment)  # the patient's words must not be read as a phrase
    out = {dim: next((code for code, marker in markers.items() if marker in rest), None) for dim, markers in _MARKERS.items()}
    return out | {"evidence_type": evidence}


# --- the coding prompt (hce.study.reasoning.coding_messages) ----------------------------------

_CODING = re.compile(r"qualitative researcher coding the reasoning", re.IGNORECASE)
_SEGMENTS = re.compile(r"\nReasoning segments:\n(.*?)\n\nAnswer with one JSON object", re.DOTALL)
_HEAD = re.compile(r"^\[([^\]\n]+)\] [^\n]*:\n", re.MULTILINE)


def is_coding_prompt(prompt: str) -> bool:
    """Whether the prompt asks to code reasoning segments (hce's reasoning-coding prompt)."""
    return bool(_CODING.search(prompt)) and "Reasoning segments:" in prompt


def coding_reply(prompt: str) -> str:
    """The simulated coder's answer: one JSON object, per category shown, the codes its segment carries.

    A dimension whose phrase the segment lacks (a reply not written by this simulator) is
    left out, so the study's parser flags it rather than a code being made up.
    """
    found = _SEGMENTS.search(prompt)
    body = found.group(1) if found else ""
    heads = list(_HEAD.finditer(body))
    answer = {}
    for k, head in enumerate(heads):
        text = body[head.end(): heads[k + 1].start() if k + 1 < len(heads) else len(body)]
        codes = read_codes(text)
        answer[head.group(1)] = {dim: code for dim, code in codes.items() if code is not None}
    return json.dumps(answer)
