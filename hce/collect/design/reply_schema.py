"""The JSON schema of a structured reply (``response_format: json_schema``), built from the rubric.

A condition with ``response_format: json_schema`` sends OpenAI's structured-output request
(``{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}``; the chat
completions reference). OpenAI, vLLM, llama.cpp's ``llama-server`` (which turns the schema
into a grammar) and Ollama 0.5+ accept it, so even a small local model answers in the
rubric's format. The schema has one property per criterion, keyed by its id: an integer
among the criterion's levels, or its declared not-applicable answer; and ``reasoning``
first when the prompt asks for reasoning before the scores (P2.3), so the model reasons
before it scores, as the prompt intends. Every property is required and no other is
allowed, as OpenAI's strict mode requires. The prompt's own words are unchanged.

The total is not asked for beside the criteria: it is the sum of the category scores
(:class:`hce.rubric.Rubric`), which hce adds itself when it is a score
(:attr:`hce.rubric.Rubric.total_is_meaningful`) and no criterion was answered not
applicable. Asking the model for it asks for arithmetic, not judgement: under a grammar
that forces a value among the total's levels, llama.cpp's 270M model wrote a total off
its own scores in every reply (issue 44), and each such row was flagged and lost its
scores. Only a prompt that asks for the total alone (P1.1) gets ``total`` as its schema.
A reply that writes a total anyway is read as written and flagged when it is not the sum.
"""

from __future__ import annotations

from typing import Any

from hce.rubric import Category, Rubric

#: The reply formats a schema can be built for (a score block, reasoning then scores, a bare total).
SCHEMA_FORMATS = ("scores", "cot", "total")


def reply_schema(rubric: Rubric, fmt: str) -> dict[str, Any]:
    """The ``response_format`` of a structured reply to a prompt of reply format ``fmt``.

    Parameters
    ----------
    rubric : Rubric
        Names the criteria, their levels and declared not-applicable answers.
    fmt : str
        The prompt's reply format: ``scores``, ``cot`` (reasoning first) or ``total``.

    Returns
    -------
    dict
        ``{"type": "json_schema", "json_schema": {"name": ..., "strict": True, "schema": ...}}``.

    Examples
    --------
    >>> import hce
    >>> spec = reply_schema(hce.load_rubric("v5"), "cot")["json_schema"]
    >>> spec["name"], spec["strict"], list(spec["schema"]["properties"])[:2]
    ('hce_scores', True, ['reasoning', 'clarity_of_language'])
    >>> spec["schema"]["properties"]["clarity_of_language"]
    {'type': 'integer', 'enum': [1, 2, 3, 4]}
    """
    if fmt not in SCHEMA_FORMATS:
        raise ValueError(f"a JSON schema is built for reply formats {list(SCHEMA_FORMATS)}, not {fmt!r}")
    properties: dict[str, Any] = {}
    if fmt == "cot":
        properties["reasoning"] = {"type": "string"}
    if fmt != "total":
        properties.update({c.id: _criterion(c) for c in rubric.categories})
    if fmt == "total":  # beside the criteria the total is their sum, added by hce (module notes)
        properties["total"] = {"type": "integer", "enum": list(rubric.total_levels)}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "hce_scores", "strict": True, "schema": schema}}


def _criterion(category: Category) -> dict[str, Any]:
    scored = {"type": "integer", "enum": list(category.scores)}
    if category.not_applicable is None:
        return scored
    return {"anyOf": [scored, {"type": "string", "enum": [category.not_applicable.label]}]}
