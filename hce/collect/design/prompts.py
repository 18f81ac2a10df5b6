"""Judge prompts rendered from the study protocol's templates, a rubric and an item.

The templates live in ``hce/data/prompts`` word for word from seed 000 section 6 (P1.1,
P1.2, P2.1, P2.2, P2.3, the synthetic-transcript prompt) and seed 001 section 4 (the
boolean judge), in the format of a user's own template (:mod:`hce.collect.design.templates`:
a header naming the reply format, then the text with ``{{...}}`` placeholders). Rendered with Rubric v5.0 they give the protocol's exact text; with a
custom rubric, its name, category count, score ranges and score lines are used instead,
and when its categories are scored on different ranges (a 1-5 item beside a 0-1 item) the
prompt states each category's own scale. A rubric whose total is no score (``total_meaningful``,
stated or inferred) is not asked for one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

import yaml

from hce.collect.design.templates import PromptTemplate, canonical, check_examples, packaged_template
from hce.errors import HceError
from hce.rubric import BehaviorSpec, Category, Rubric, load_rubric

Messages = list[dict[str, str]]

#: How each packaged prompt asks the judge to answer (its template's ``reply:``): ``total`` (P1.1, a
#: bare holistic total), ``scores`` (one line per category, then Total Score), ``cot`` (P2.3,
#: reasoning then the score block), ``synthetic`` (Outline: ... Transcript: ...), ``verdict``
#: (BOOL, one JSON object, seed 001 section 2). The parser and the simulated judge follow it.
REPLY_FORMAT: dict[str, str] = {
    **{name: packaged_template(name).reply for name in ("P1.1", "P1.2", "P2.1", "P2.2", "P2.3", "SYNTH")},
    "BOOL": "verdict",
}
PROMPT_IDS = tuple(REPLY_FORMAT)


@cache
def _system_message(name: str) -> str:
    return resources.files("hce.data").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8").rstrip("\n")


def score_format(rubric: Rubric) -> str:
    """The exact score lines the judge must output, e.g. ``Clarity of Language: [score_1_4]``.

    The ``Total Score`` line only when the rubric's total is a score (``total_is_meaningful``):
    a sum the analysis ignores is not asked for.

    Examples
    --------
    >>> from hce.rubric import Category, Level, Rubric
    >>> levels = lambda *scores: tuple(Level(s, str(s), "d") for s in scores)
    >>> print(score_format(Rubric("R", (Category("clarity", "Clarity", levels(1, 2, 3, 4, 5)),
    ...                                 Category("safety", "Safety", levels(0, 1))))))
    Clarity: [score_1_5]
    Safety: [score_0_1]
    """
    # A declared "not applicable" answer is offered on its criterion's line: the parser reads it, so the format says so.
    lines = [f"{c.name}: [score_{c.min_score}_{c.max_score}{_or_na(c)}]" for c in rubric.categories]
    if rubric.total_is_meaningful:
        low, high = rubric.total_range
        lines.append(f"Total Score: [sum_of_scores_{low}_{high}]")
    return "\n".join(lines)


def _or_na(category: Category) -> str:
    return f" or {category.not_applicable.label}" if category.not_applicable is not None else ""


# The packaged templates' sentences asking for the total (P1.2, P2.1; P2.3), left out for a
# rubric whose total is no score.
_TOTAL_REQUESTS = (
    "Then, provide a total score, which is the sum of the {{NCategories}} category scores (must be between "
    "{{TotalMin}} and {{TotalMax}}).\n",
    "After scoring all {{NCategories}} categories, calculate and provide the total score (sum of the {{NCategories}} "
    "category scores, must be between {{TotalMin}} and {{TotalMax}}).\n",
)


def _no_total(template: str, rubric: Rubric) -> str:
    """The template without the request for a total when the rubric's total is no score (its parser expects none)."""
    if rubric.total_is_meaningful:
        return template
    for sentence in _TOTAL_REQUESTS:
        template = template.replace(sentence, "")
    return template


# How the templates ask for a category's score; a rubric whose categories differ in range gets each one's own.
_ONE_SCALE = "a score from {{ScoreMin}} to {{ScoreMax}}"


def _own_scales(template: str, rubric: Rubric) -> str:
    """The template, asking for each category's own scale when the categories' ranges differ.

    With one range for all (Rubric v5.0: 1-4) the protocol's words stay as they are; otherwise
    "from the lowest minimum to the highest maximum" would misstate every category's scale.

    Examples
    --------
    >>> from hce.rubric import Category, Level, Rubric
    >>> levels = lambda *scores: tuple(Level(s, str(s), "d") for s in scores)
    >>> rubric = Rubric("R", (Category("clarity", "Clarity", levels(1, 2, 3, 4, 5)),
    ...                       Category("safety", "Safety", levels(0, 1))))
    >>> _own_scales("provide a score from {{ScoreMin}} to {{ScoreMax}}.", rubric)
    'provide a score on its own scale (Clarity: 1 to 5; Safety: 0 to 1).'
    """
    if len({(c.min_score, c.max_score) for c in rubric.categories}) == 1:
        return template
    scales = "; ".join(f"{c.name}: {c.min_score} to {c.max_score}" for c in rubric.categories)
    return template.replace(_ONE_SCALE, f"a score on its own scale ({scales})")


def _rubric_values(rubric: Rubric) -> dict[str, Any]:
    low, high = rubric.total_range
    return {
        "RubricName": rubric.name,
        "RubricText": rubric.render(),
        "NCategories": len(rubric.categories),
        "ScoreMin": min(c.min_score for c in rubric.categories),
        "ScoreMax": max(c.max_score for c in rubric.categories),
        "TotalMin": low,
        "TotalMax": high,
        "ScoreFormat": score_format(rubric),
        "ScaleLines": "\n".join(f"{c.name}: {c.min_score} to {c.max_score}{_or_na(c)}" for c in rubric.categories),
    }


@cache
def fewshot_examples() -> list[dict[str, Any]]:
    """The three packaged P2.2 examples (written for this project; see the data file)."""
    text = resources.files("hce.data").joinpath("fewshot_v5.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)["examples"]


def render_fewshot(rubric: Rubric, examples: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Examples in the protocol's format (snippet, scores, rationale), ``---``-separated.

    The scores are headed "Rubric 5.0 Scores:" for Rubric v5.0 (the protocol's words), else
    with the rubric's name; an example without a rationale has no Rationale line.
    """
    check_examples(examples if examples is not None else fewshot_examples(), rubric,
                   "few-shot examples" if examples is not None else "packaged few-shot examples (scored on Rubric v5.0)")
    heading = "Rubric 5.0 Scores:" if rubric == load_rubric("v5") else f"{rubric.name} Scores:"
    blocks = []
    for example in examples if examples is not None else fewshot_examples():
        scores = example["scores"]
        lines = [f"Example Transcript Snippet: {example['snippet']}", heading]
        lines += [f"{c.name}: {scores[c.id]}" for c in rubric.categories]
        if rubric.total_is_meaningful:
            lines.append(f"Total Score: {sum(scores[c] for c in rubric.criteria)}")
        if example.get("rationale"):
            lines.append(f"Rationale: {example['rationale']}")
        blocks.append("\n".join(lines) + "\n---")
    return "\n".join(blocks)


def render(
    prompt_id: str,
    *,
    rubric: Rubric | None = None,
    transcript: str | None = None,
    behavior: BehaviorSpec | None = None,
    case: Mapping[str, Any] | None = None,
    target_total: int | None = None,
    examples: Sequence[Mapping[str, Any]] | None = None,
    template: PromptTemplate | None = None,
) -> Messages:
    """Chat messages for one judge call.

    Parameters
    ----------
    prompt_id : {"P1.1", "P1.2", "P2.1", "P2.2", "P2.3", "SYNTH", "BOOL"}
    rubric : Rubric, optional
        Default Rubric v5.0.
    transcript : str
        The item text (all prompts but SYNTH and BOOL).
    behavior, case
        For ``"BOOL"``: the behaviour spec and a mapping with ``ground_truth``,
        ``narrative`` and ``candidate`` (lists and dicts are rendered as JSON).
    target_total : int
        For ``"SYNTH"``: the target total score (TTS).
    examples : list of dict, optional
        Few-shot examples (``id``, ``snippet``, ``scores``, ``rationale``) for a template
        that places them (P2.2; default: the three packaged ones, scored on Rubric v5.0).
    template : PromptTemplate, optional
        A user's template (:func:`hce.collect.design.templates.load_template`) used in place of
        ``prompt_id``'s packaged one; ``prompt_id`` is then its id.

    Returns
    -------
    list of dict
        OpenAI chat messages: one user message for the study prompts; system + user for BOOL.

    Examples
    --------
    >>> from hce.collect.design.prompts import render
    >>> messages = render("P1.1", transcript="Doctor: Hi. Patient: Hello.")
    >>> messages[0]["role"], messages[0]["content"].splitlines()[-1]
    ('user', 'Total Score (5-20):')
    """
    if template is None and prompt_id not in REPLY_FORMAT:
        raise HceError(f"prompt_id={prompt_id!r} is not valid; choose one of {list(PROMPT_IDS)}")
    if prompt_id == "BOOL":
        if behavior is None or case is None:
            raise HceError("prompt 'BOOL' needs behavior= (a BehaviorSpec) and case= (ground_truth, narrative, candidate)")
        return [
            {"role": "system", "content": _system_message("BOOL_system")},
            {"role": "user", "content": render_behavior_message(behavior, case)},
        ]
    rubric = rubric or load_rubric("v5")
    template = template or packaged_template(prompt_id)
    values = _rubric_values(rubric)
    if template.reply == "synthetic":
        if target_total is None:
            raise HceError("prompt 'SYNTH' needs target_total= (the target total score)")
        values["TTS"] = int(target_total)
    else:
        if not isinstance(transcript, str) or not transcript.strip():
            raise HceError(f"prompt {prompt_id!r} needs transcript= (non-empty text)")
        values["TranscriptText"] = values["ItemText"] = transcript
    if "FewShotExamples" in {canonical(name) for name in template.placeholders}:
        values["FewShotExamples"] = render_fewshot(rubric, examples)
    text = _no_total(_own_scales(template.text, rubric), rubric)
    return [{"role": "user", "content": replace(template, text=text).fill(values)}]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def render_behavior_message(behavior: BehaviorSpec, case: Mapping[str, Any]) -> str:
    """The boolean judge's user message (seed 001 section 4.2) for one case."""
    missing = [k for k in ("ground_truth", "narrative", "candidate") if k not in case]
    if missing:
        raise HceError(f"boolean judge case is missing {missing}; it needs ground_truth, narrative and candidate")
    lines = ["BEHAVIOR ID:", behavior.behavior_id, "", "BEHAVIOR DESCRIPTION:", behavior.description, ""]
    lines += ["EVALUATION SCOPE:", "- Include:"]
    lines += [f"  - {item}" for item in behavior.include]
    lines += ["- Ignore:"]
    lines += [f"  - {item}" for item in behavior.ignore]
    lines += ["", "RUBRIC", "", "Automatic fail if any of the following are true:"]
    lines += [f"- {item}" for item in behavior.automatic_fail]
    lines += ["", "Pass conditions (all must be satisfied):"]
    lines += [f"{i}. {item}" for i, item in enumerate(behavior.pass_conditions, start=1)]
    lines += ["", "Acceptable variations (still treated as pass):"]
    lines += [f"- {item}" for item in behavior.acceptable_variations]
    lines += [
        "",
        "Uncertainty policy:",
        "- If the information is ambiguous or incomplete, set pass = false and explain that the case is uncertain in the reason.",
        "",
        "INPUTS",
        "",
        "GROUND_TRUTH:",
        _as_text(case["ground_truth"]),
        "",
        "SOURCE_NARRATIVE:",
        _as_text(case["narrative"]),
        "",
        "CANDIDATE_OUTPUT:",
        _as_text(case["candidate"]),
    ]
    return "\n".join(lines)
