"""Judge replies -> log columns. Parsers never raise on model output.

A reply that cannot be read becomes a row with ``error_flag=True`` and a message that
says why. Scores are read by the rule of :mod:`hce.score_extraction` (ASCII numerals;
``1e3`` is 1000; a range such as ``3-4`` is not a score). A flagged row holds no score:
its criterion columns, ``total``, ``verdict`` and ``verdict_score`` are cleared, and the
message names the values the judge wrote (out of range, off the scale's levels, a total
that is not the sum); the whole reply stays in the log's ``response_text`` for audit.
Nothing is ever "fixed".
"""

from __future__ import annotations

import json
import re
from typing import Any

from hce.collect.design.prompts import REPLY_FORMAT
from hce.rubric import NotApplicable, Rubric, load_rubric
from hce.score_extraction import NUMERAL, extract_score

# A score after a label: a numeral that does not open a range ("3-4" is no score).
_NUMBER = rf"({NUMERAL})(?!\s*(?:-|–|—|\bto\b)\s*[0-9])"
# Decoration models add around labels and values: bullets, markdown bold/italics, headings.
_DECOR = r"[\s>#*_\-•]*"
# Between the separator and the value a '-' is a sign, never decoration ("Clarity: -1" is -1).
_VALUE_DECOR = r"[\s>#*_•]*"
CONFIDENCE_LEVELS = ("high", "medium", "low")


def _label_pattern(label: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in label.split())
    return re.compile(
        rf"(?im)^{_DECOR}{words}{_DECOR}(?:score)?{_DECOR}[:=\-–]{_VALUE_DECOR}\[?{_NUMBER}\]?(?:\s*(?:/|out of)\s*\d+)?"
    )


def _na_pattern(label: str, answer: NotApplicable) -> re.Pattern[str]:
    """A category's line answered with its declared "not applicable" answer (``Medications: N/A``), in any spelling."""
    words = r"\s+".join(re.escape(w) for w in label.split())
    return re.compile(rf"(?im)^{_DECOR}{words}{_DECOR}(?:score)?{_DECOR}[:=\-–]{_VALUE_DECOR}{answer.pattern}(?!\w)")


_TOTAL = _label_pattern("Total Score")
_TOTAL_SHORT = _label_pattern("Total")


def _blank(rubric: Rubric) -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in rubric.criteria}
    row.update(total=None, verdict=None, reasoning=None, error_flag=False, error_message=None)
    return row


def _error(row: dict[str, Any], message: str) -> dict[str, Any]:
    row["error_flag"] = True
    row["error_message"] = message if row["error_message"] is None else f"{row['error_message']}; {message}"
    return row


_SCORE_KEYS = ("total", "verdict", "verdict_score")
_COUNT = {2: "two", 3: "three", 4: "four"}


def flag(row: dict[str, Any], message: str, *, criteria: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Flag a parsed row and clear its scores, so no statistic can pick up a flagged reply.

    For steps after parsing (e.g. a reply cut off at ``max_tokens``): ``criteria`` are the
    rubric's score columns; ``total``, ``verdict`` and ``verdict_score`` are cleared too.

    Examples
    --------
    >>> flag({"clarity": 3.0, "total": 12.0, "error_flag": False, "error_message": None}, "cut off", criteria=["clarity"])
    {'clarity': None, 'total': None, 'error_flag': True, 'error_message': 'cut off'}
    """
    _error(row, message)
    for key in (*criteria, *_SCORE_KEYS):
        if key in row:
            row[key] = None
    return row


def parse_reply(
    prompt_id: str, text: str | None, *, rubric: Rubric | None = None, fmt: str | None = None, structured: bool = False
) -> dict[str, Any]:
    """Read one judge reply into log columns, according to the prompt's reply format.

    Parameters
    ----------
    prompt_id : str
        A key of :data:`hce.collect.design.prompts.REPLY_FORMAT` (``"P2.3"``, ``"BOOL"``, ...).
    text : str or None
        The reply text (None when the call failed).
    rubric : Rubric, optional
        Default Rubric v5.0: its categories name the score lines and their ranges.
    fmt : str, optional
        The reply format (``scores``, ``cot``, ``total``, ``verdict``) of a user's template
        (``Condition.reply_format``); default the packaged prompt's.
    structured : bool
        The reply was asked for as JSON in the rubric's schema (``response_format:
        json_schema``, :mod:`hce.collect.design.reply_schema`) and is read as that JSON;
        False (the default) reads the prompt's text format.

    Returns
    -------
    dict
        One key per rubric criterion, ``total``, ``verdict``, ``reasoning``, ``error_flag``,
        ``error_message``; BOOL replies give ``verdict``, ``reasoning``, ``confidence_level``,
        ``uncertain`` and ``verdict_score`` instead of scores.

    Examples
    --------
    >>> from hce.collect.call.parse import parse_reply
    >>> reply = '''**Clarity of Language:** 3
    ... Lexical Diversity: 2
    ... Conciseness and Completeness: 3
    ... Engagement with Health Information: 2
    ... Health Literacy Indicator: 2
    ... Total Score: 12/20'''
    >>> row = parse_reply("P2.1", reply)
    >>> row["clarity_of_language"], row["total"], row["error_flag"]
    (3.0, 12.0, False)
    >>> parse_reply("P2.1", "I cannot score this.")["error_message"]
    'no score line for Clarity of Language'
    """
    rubric = rubric or load_rubric("v5")
    fmt = fmt or REPLY_FORMAT.get(prompt_id)
    row = _blank(rubric)
    if fmt is None:
        _error(row, f"unknown prompt_id {prompt_id!r}; known: {list(REPLY_FORMAT)}")
    elif not isinstance(text, str) or not text.strip():
        _error(row, "empty reply")
    elif structured and fmt in ("scores", "cot", "total"):
        _parse_json_scores(row, text, rubric, fmt)
    elif fmt == "total":
        _parse_total_only(row, text, rubric)
    elif fmt in ("scores", "cot"):
        _parse_score_block(row, text, rubric, final_only=fmt == "cot")
    elif fmt == "verdict":
        row = parse_verdict(text)
    else:
        _error(row, f"prompt {prompt_id!r} is not a judging prompt (its replies are read by parse_synthetic)")
    if row["error_flag"]:
        for key in (*rubric.criteria, *_SCORE_KEYS):
            if key in row:
                row[key] = None
    return row


def _parse_total_only(row: dict[str, Any], text: str, rubric: Rubric) -> dict[str, Any]:
    low, high = rubric.total_range
    read = extract_score(text, low=low, high=high, labels=("total score", "total", "score"), levels=rubric.total_levels, what="total")
    if read.problem is not None:
        return _error(row, read.problem)
    row["total"] = read.value
    return row


def _finite(text: str) -> bool:
    try:
        return float(text) == float(text) and abs(float(text)) != float("inf")
    except ValueError:
        return False


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _parse_score_block(row: dict[str, Any], text: str, rubric: Rubric, *, final_only: bool) -> dict[str, Any]:
    block = text
    if final_only:
        # Chain-of-thought replies score each category while reasoning; only the final block counts.
        totals = list(_TOTAL.finditer(text))
        if not totals and rubric.total_is_meaningful:
            return _error(row, "no final score block (no 'Total Score' line)")
        # Without a total (not asked for: the rubric's total is no score) the block is the last run of score lines.
        end = totals[-1].end() if totals else len(text)
        start = totals[-2].end() if len(totals) > 1 else 0
        first_line = [_label_pattern(c.name) for c in rubric.categories][0]
        starts = [m.start() for m in first_line.finditer(text, start, end)]
        block_start = starts[-1] if starts else start
        block = text[block_start:end]
        row["reasoning"] = text[:block_start].strip() or None
    not_applicable = []
    for category in rubric.categories:
        matches = list(_label_pattern(category.name).finditer(block))
        if category.not_applicable is not None:
            said = list(_na_pattern(category.name, category.not_applicable).finditer(block))
            if said and (not matches or said[-1].start() > matches[-1].start()):
                not_applicable.append(category.id)  # missing by the rubric's design: no score, no error
                continue
        if not matches:
            return _error(row, f"no score line for {category.name}")
        written = list(dict.fromkeys(_fmt(float(m.group(1))) for m in matches if _finite(m.group(1))))
        if len(written) > 1:  # which one the judge meant is unknowable: keeping the last would guess
            _error(row, f"{_COUNT.get(len(written), len(written))} scores for {category.name}: {' and '.join(written)}")
            continue
        # The value and the rest of its line: "3 or 4" is conflicting, "3/4" is 3.
        value_line = block[matches[-1].start(1) :].split("\n", 1)[0]
        read = extract_score(
            value_line, low=category.min_score, high=category.max_score, labels=(), levels=category.scores,
            what=f"{category.name} score",
        )  # fmt: skip
        row[category.id] = read.value
        if read.problem is not None:
            _error(row, read.problem)
    if not_applicable:
        # The total of fewer criteria is on another scale: none is kept; which criteria did not apply is logged.
        row["not_applicable"] = ",".join(not_applicable)
        return row
    totals = _TOTAL.findall(block) or _TOTAL_SHORT.findall(block)
    if not totals:
        # A rubric whose total is no score is not asked for one; a reply that gives one anyway is logged as written.
        return _error(row, "no 'Total Score' line") if rubric.total_is_meaningful else row
    row["total"] = float(totals[-1])
    scores = [row[c] for c in rubric.criteria]
    if None not in scores and row["total"] != sum(scores):
        _error(row, f"total {_fmt(row['total'])} is not the sum of the category scores ({_fmt(sum(scores))})")
    return row


def _parse_json_scores(row: dict[str, Any], text: str, rubric: Rubric, fmt: str) -> dict[str, Any]:
    """A structured reply: the JSON object of :func:`hce.collect.design.reply_schema.reply_schema`, checked as text
    replies are (a level of the scale or the declared not-applicable answer), never fixed. Beside the criteria the
    total is their sum, added here when it is a score; a total the reply writes anyway is kept when it is the sum
    and flagged when it is not."""
    obj, problem = json_object(text)
    if obj is None:
        return _error(row, problem)
    categories = rubric.categories if fmt != "total" else ()
    expected = [*(("reasoning",) if fmt == "cot" else ()), *(c.id for c in categories),
                *(("total",) if fmt == "total" else ())]  # the schema's order
    missing = [key for key in expected if key not in obj]
    if missing:
        return _error(row, f"the JSON reply has no {', '.join(repr(k) for k in missing)}")
    allowed = [*expected, *(("total",) if categories and rubric.total_is_meaningful else ())]
    unknown = [key for key in obj if key not in allowed]
    if unknown:
        return _error(row, f"the JSON reply has keys the schema does not: {', '.join(repr(k) for k in unknown)}")
    if fmt == "cot":
        row["reasoning"] = obj["reasoning"].strip() or None if isinstance(obj["reasoning"], str) else None
    not_applicable = []
    for category in categories:
        value = obj[category.id]
        answer = category.not_applicable
        if isinstance(value, str) and answer is not None and re.fullmatch(answer.pattern, value.strip(), re.I):
            not_applicable.append(category.id)
            continue
        if not _whole(value) or int(value) not in category.scores:
            _error(row, f"{category.name} score {value!r} is not one of the levels {list(category.scores)}"
                        + (f" or {answer.label!r}" if answer is not None else ""))  # fmt: skip
            continue
        row[category.id] = float(value)
    if not_applicable:  # as in a text reply: the total of fewer criteria is on another scale
        row["not_applicable"] = ",".join(not_applicable)
        return row
    scores = [row[c] for c in rubric.criteria]
    if "total" not in obj:  # not asked for beside the criteria: their sum, when it is a score
        if categories and rubric.total_is_meaningful and None not in scores:
            row["total"] = float(sum(scores))
        return row
    total = obj["total"]
    if not _whole(total) or int(total) not in rubric.total_levels:
        low, high = rubric.total_range
        return _error(row, f"total {total!r} is not a total of this rubric ({low}-{high})")
    row["total"] = float(total)
    if categories and None not in scores and row["total"] != sum(scores):
        _error(row, f"total {_fmt(row['total'])} is not the sum of the category scores ({_fmt(sum(scores))})")
    return row


def _whole(value: Any) -> bool:
    """A JSON integer (``3``, or ``3.0``: JSON Schema's integer is the number's value), never ``true``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(str(value)) and float(value).is_integer()


# A fenced block anywhere in the reply (```json ... ``` or ``` ... ```): the first one is read.
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", flags=re.S)


def json_object(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object a reply holds, or why there is none: the one reader of JSON replies.

    The object is the whole reply or, when the reply holds a code fence, the first fenced
    block, whatever prose surrounds it (models often write "Here are the codes:" before the
    fence). Without a fence the reply must be exactly one JSON object: trailing prose is
    an error, not ignored.

    Returns
    -------
    (object, problem)
        The parsed object and None, or None and what is wrong (``"empty reply"``, ``"reply is
        not a single JSON object (<reason> at position <n>)"``, ``"reply is JSON list, not an
        object"``).

    Examples
    --------
    >>> json_object('Here is my verdict:\\n```json\\n{"pass": true}\\n```\\nThanks.')
    ({'pass': True}, None)
    >>> json_object('{"pass": true} thanks!')
    (None, 'reply is not a single JSON object (Extra data at position 15)')
    """
    if not isinstance(text, str) or not text.strip():
        return None, "empty reply"
    body = text.strip()
    fenced = _FENCED.search(body)
    if fenced:
        body = fenced.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"reply is not a single JSON object ({exc.msg} at position {exc.pos})"
    if not isinstance(obj, dict):
        return None, f"reply is JSON {type(obj).__name__}, not an object"
    return obj, None


def parse_verdict(text: str | None) -> dict[str, Any]:
    """Read a boolean judge's JSON verdict (seed 001 section 2) into log columns.

    ``pass`` (boolean) and ``reason`` (string) are required; ``score`` (number),
    ``confidence`` (high/medium/low, logged as ``confidence_level``) and ``uncertain``
    (boolean) are optional. The JSON is read by :func:`json_object` (the whole reply, or
    its first fenced block with any prose around it); anything else is flagged. ``uncertain: true`` together
    with ``pass: true`` contradicts the spec (uncertain implies fail) and is flagged.

    Examples
    --------
    >>> from hce.collect.call.parse import parse_verdict
    >>> row = parse_verdict('{"pass": true, "reason": "All meds present.", "score": 1.0}')
    >>> row["verdict"], row["reasoning"], row["error_flag"]
    (True, 'All meds present.', False)
    >>> parse_verdict('{"pass": "yes", "reason": "x"}')["error_message"]
    "'pass' must be true or false, got 'yes'"
    """
    row: dict[str, Any] = dict(
        verdict=None, reasoning=None, confidence_level=None, uncertain=None, verdict_score=None, error_flag=False, error_message=None
    )
    obj, problem = json_object(text)
    if obj is None:
        return _error(row, problem)
    if not isinstance(obj.get("pass"), bool):
        return _error(row, f"'pass' must be true or false, got {obj.get('pass')!r}")
    row["verdict"] = obj["pass"]
    reason = obj.get("reason")
    if isinstance(reason, str) and reason.strip():
        row["reasoning"] = reason.strip()
    else:
        _error(row, f"'reason' must be a non-empty string, got {reason!r}")
    score = obj.get("score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            _error(row, f"'score' must be a number, got {score!r}")
        else:
            row["verdict_score"] = float(score)
    confidence = obj.get("confidence")
    if confidence is not None:
        if confidence in CONFIDENCE_LEVELS:
            row["confidence_level"] = confidence
        else:
            _error(row, f"'confidence' must be one of {list(CONFIDENCE_LEVELS)}, got {confidence!r}")
    uncertain = obj.get("uncertain")
    if uncertain is not None:
        if not isinstance(uncertain, bool):
            _error(row, f"'uncertain' must be true or false, got {uncertain!r}")
        else:
            row["uncertain"] = uncertain
            if uncertain and row["verdict"]:
                _error(row, "'uncertain' is true but 'pass' is true (uncertain implies fail)")
    return row


def parse_synthetic(text: str | None, *, target_total: int | None = None, rubric: Rubric | None = None) -> dict[str, Any]:
    """Split a synthetic-transcript reply into outline and transcript, flagging leaks.

    The transcript must not mention the rubric or the score (seed 000, Experiment 1); a
    mention (the words rubric/score, a category name, or "<target>/20") sets ``leak_flag``.

    Returns
    -------
    dict
        ``outline``, ``transcript``, ``leak_flag``, ``leak_reason``, ``error_flag``, ``error_message``.
    """
    rubric = rubric or load_rubric("v5")
    row: dict[str, Any] = dict(outline=None, transcript=None, leak_flag=False, leak_reason=None, error_flag=False, error_message=None)
    if not isinstance(text, str) or not text.strip():
        return _error(row, "empty reply")
    heading = rf"(?im)^{_DECOR}(outline|transcript){_DECOR}:?{_DECOR}$|^{_DECOR}(outline|transcript){_DECOR}:"
    marks = [(m.group(1) or m.group(2)).lower() for m in re.finditer(heading, text)]
    spans = list(re.finditer(heading, text))
    transcript_marks = [m for m, k in zip(spans, marks) if k == "transcript"]
    if not transcript_marks:
        return _error(row, "no 'Transcript:' section in reply")
    cut = transcript_marks[-1]
    outline_marks = [m for m, k in zip(spans, marks) if k == "outline" and m.start() < cut.start()]
    row["outline"] = text[outline_marks[-1].end() : cut.start()].strip() if outline_marks else None
    row["transcript"] = text[cut.end() :].strip() or None
    if row["transcript"] is None:
        return _error(row, "the 'Transcript:' section is empty")
    leaks = []
    lowered = row["transcript"].lower()
    for word in ("rubric", "score"):
        if re.search(rf"\b{word}", lowered):
            leaks.append(f"mentions '{word}'")
    leaks += [f"names the category '{c.name}'" for c in rubric.categories if c.name.lower() in lowered]
    if target_total is not None and re.search(rf"\b{int(target_total)}\s*(?:/|out of)\s*{rubric.total_range[1]}\b", lowered):
        leaks.append(f"states the target {target_total}/{rubric.total_range[1]}")
    if leaks:
        row["leak_flag"] = True
        row["leak_reason"] = "; ".join(leaks)
    return row

