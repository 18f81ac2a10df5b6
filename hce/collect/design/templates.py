"""Prompt templates and few-shot examples as files, checked against the rubric before any call.

A template is a text file; an optional YAML header between ``---`` lines names its
``id`` (the log's ``prompt_id``; default the file name) and ``reply``, the answer it asks
for: ``scores`` (one line per criterion, then the total when the rubric's total is a score; the default), ``cot`` (reasoning,
then the score block) or ``total`` (a bare total). Placeholders are written Jinja-style,
``{{ RubricText }}``, or, in a file without ``{{``, ``str.format``-style, ``{rubric_text}``;
each has a CamelCase and a snake_case name (:data:`PLACEHOLDERS`). The packaged P1.1-P2.3
and SYNTH (``hce/data/prompts``) are templates of this very format.

Few-shot examples are a YAML file (a list, or a mapping with ``examples:``) or a JSONL
file, one example each: ``id`` (optional), ``text`` (or ``snippet``), ``scores`` (one per
rubric criterion, within its scale) and an optional ``rationale``.

Everything is checked when the design is loaded: an unknown placeholder, a template
without the item text, an example missing a criterion or scored off its scale is an
error naming the file, the condition and the fix.
"""

from __future__ import annotations

import difflib
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hce.errors import HceError
from hce.rubric import Rubric

#: The reply formats a template may ask for (the packaged SYNTH asks for "synthetic").
REPLIES = ("scores", "cot", "total")
#: Placeholder -> what it is filled with. Each also answers to its snake_case name.
PLACEHOLDERS: dict[str, str] = {
    "RubricName": "the rubric's name",
    "RubricText": "the whole rubric: every criterion with its scored levels",
    "NCategories": "the number of criteria",
    "ScoreMin": "the lowest score of any criterion",
    "ScoreMax": "the highest score of any criterion",
    "TotalMin": "the lowest possible total",
    "TotalMax": "the highest possible total",
    "ScoreFormat": "the exact score lines to answer with (one per criterion, then Total Score when the total is a score)",
    "ScaleLines": "one line per criterion with its own scale, e.g. 'Accurate: 1 to 5'",
    "TranscriptText": "the item text (the transcript, the summary judged)",
    "ItemText": "the item text (same as TranscriptText)",
    "FewShotExamples": "the few-shot examples with their scores per criterion",
    "TTS": "the target total score (SYNTH only)",
}
_ALIASES = {re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower(): name for name in PLACEHOLDERS}
_ITEM = ("TranscriptText", "ItemText")
_JINJA = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
# A placeholder name in single braces inside a {{ }} template (JSON such as {"pass": true} is not one).
_SINGLE = re.compile(r"(?<!\{)\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}(?!\})")
# The levels an answer line offers: "1-5", "1 to 5", "[score_1_5]".
_OFFERED = re.compile(r"(?i)(?<![\w.])(-?\d+)\s*(?:-|–|—|\bto\b|_)\s*(-?\d+)(?![\w.])")
_HEADER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)


class TemplateError(HceError, ValueError):
    """A prompt template or few-shot example file that cannot serve a condition (names the file and the fix)."""


@dataclass(frozen=True)
class PromptTemplate:
    """A judge prompt: its ``id`` (logged as ``prompt_id``), text, reply format and source.

    Examples
    --------
    >>> t = PromptTemplate("mine", "Rate:\\n{{ScoreFormat}}\\nTranscript:\\n{{ItemText}}", source="mine.txt")
    >>> t.placeholders
    ('ScoreFormat', 'ItemText')
    """

    id: str
    text: str
    reply: str = "scores"
    source: str = "template"
    syntax: str = "jinja"  # "format": str.format placeholders

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders the text uses, as written, in order of first use."""
        if self.syntax == "jinja":
            names = _JINJA.findall(self.text)
        else:
            try:
                names = [field for _, field, _, _ in string.Formatter().parse(self.text) if field is not None]
            except ValueError as exc:  # a lone { or }
                raise TemplateError(f"{self.source}: not a valid str.format template ({exc}); write a literal brace as {{{{ or }}}}") from None
        return tuple(dict.fromkeys(names))

    def fill(self, values: Mapping[str, Any]) -> str:
        """The text with every placeholder replaced (``values`` keyed by the CamelCase names)."""
        def value(name: str) -> str:
            key = canonical(name)
            if key is None or key not in values:
                raise TemplateError(f"{self.source}: placeholder {name!r} has no value here")
            return str(values[key])

        if self.syntax == "jinja":
            return _JINJA.sub(lambda m: value(m.group(1)), self.text)
        return self.text.format_map({name: value(name) for name in self.placeholders})


def canonical(name: str) -> str | None:
    """The CamelCase placeholder a name stands for (``rubric_text`` -> ``RubricText``), or None."""
    return name if name in PLACEHOLDERS else _ALIASES.get(name)


def parse_template(text: str, source: str, *, default_id: str) -> PromptTemplate:
    """A template from its file text: the optional YAML header, then the prompt."""
    header: dict[str, Any] = {}
    match = _HEADER.match(text)
    if match:
        try:
            header = yaml.safe_load(match.group(1)) or {}
        except yaml.YAMLError as exc:
            raise TemplateError(f"{source}: the header between the --- lines is not valid YAML: {exc}") from None
        if not isinstance(header, dict) or set(header) - {"id", "reply", "description"}:
            raise TemplateError(f"{source}: the header may hold id, reply and description only, got {header!r}")
        text = text[match.end():]
    reply = header.get("reply", "scores")
    if reply not in (*REPLIES, "synthetic"):
        raise TemplateError(f"{source}: reply: {reply!r} is not a reply format; choose one of {list(REPLIES)}")
    body = text.rstrip("\n")
    if not body.strip():
        raise TemplateError(f"{source}: the template is empty")
    return PromptTemplate(str(header.get("id", default_id)), body, reply, source, "jinja" if "{{" in body else "format")


def load_template(path: str | Path) -> PromptTemplate:
    """Read a template file (see the module notes for its format).

    Examples
    --------
    >>> packaged_template("P2.1").reply, packaged_template("P2.1").placeholders[:2]
    ('scores', ('RubricName', 'NCategories'))
    """
    path = Path(path)
    if not path.is_file():
        raise TemplateError(f"prompt template {path} does not exist")
    return parse_template(path.read_text(encoding="utf-8"), str(path), default_id=path.stem)


@cache
def packaged_template(name: str) -> PromptTemplate:
    """One of the study protocol's templates (``P1.1`` ... ``P2.3``, ``SYNTH``) from ``hce/data/prompts``."""
    text = resources.files("hce.data").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8")
    return parse_template(text, f"packaged prompt {name}", default_id=name)


def load_examples(path: str | Path) -> tuple[dict[str, Any], ...]:
    """Few-shot examples from a YAML or JSONL file, each as ``{id, snippet, scores, rationale}``.

    Raises
    ------
    TemplateError
        Naming the file and the example (by id or position) that is malformed.
    """
    path = Path(path)
    if not path.is_file():
        raise TemplateError(f"few-shot examples file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            entries = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            entries = yaml.safe_load(text)
            entries = entries.get("examples") if isinstance(entries, dict) else entries
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise TemplateError(f"{path}: not valid {'JSONL' if path.suffix == '.jsonl' else 'YAML'}: {exc}") from None
    if not isinstance(entries, list) or not entries:
        raise TemplateError(f"{path}: expected a non-empty list of examples (or a mapping with 'examples:')")
    examples = []
    for i, entry in enumerate(entries):
        name = entry.get("id", f"examples[{i}]") if isinstance(entry, dict) else f"examples[{i}]"
        snippet = entry.get("text", entry.get("snippet")) if isinstance(entry, dict) else None
        if not isinstance(snippet, str) or not snippet.strip() or not isinstance(entry.get("scores"), dict):
            raise TemplateError(f"{path}: example {name!r} needs text: (the item) and scores: (criterion: score)")
        examples.append({"id": str(name), "snippet": snippet.strip(), "scores": dict(entry["scores"]),
                         "rationale": entry.get("rationale")})  # fmt: skip
    return tuple(examples)


def check_examples(examples: Sequence[Mapping[str, Any]], rubric: Rubric, source: str) -> None:
    """Every example scored on every criterion of ``rubric``, within that criterion's scale.

    Examples
    --------
    >>> import hce
    >>> check_examples([{"id": "e1", "scores": {"clarity_of_language": 5}}], hce.load_rubric("v5"), "ex.yaml")
    Traceback (most recent call last):
    ...
    hce.collect.design.templates.TemplateError: ex.yaml: example 'e1' has no score for ['lexical_diversity', 'conciseness_and_completeness', 'engagement_with_health_information', 'health_literacy_indicator'] and scores off the scale: clarity_of_language 5 (scale 1-4); give every criterion of rubric 'Patient Health Communication Rubric v5.0' a score on its scale
    """
    for example in examples:
        scores = example["scores"]
        missing = [c for c in rubric.criteria if c not in scores]
        unknown = [k for k in scores if k not in rubric.criteria]
        off = [f"{c.id} {scores[c.id]!r} (scale {c.min_score}-{c.max_score})" for c in rubric.categories
               if c.id in scores and not (isinstance(scores[c.id], int) and not isinstance(scores[c.id], bool)
                                          and scores[c.id] in c.scores)]  # fmt: skip
        problems = ([f"no score for {missing}"] if missing else []) + ([f"scores for criteria the rubric does not have {unknown}"]
                    if unknown else []) + ([f"scores off the scale: {', '.join(off)}"] if off else [])  # fmt: skip
        if problems:
            raise TemplateError(f"{source}: example {example.get('id')!r} has {' and '.join(problems)}; "
                                f"give every criterion of rubric {rubric.name!r} a score on its scale")  # fmt: skip


def check_template(template: PromptTemplate, examples: Sequence[Mapping[str, Any]] | None, rubric: Rubric | None = None) -> None:
    """Refuse a template that cannot be filled: unknown placeholders, no item, examples placed but none given.

    With the ``rubric`` (default None: not checked) also a template that never says how to
    answer (neither ``{{ScoreFormat}}`` nor a line per criterion) and one whose own answer
    lines offer other levels than the rubric's (``1-5`` for a 1-4 scale, or no N/A where
    the rubric declares one). A single-brace ``{ScaleLines}`` in a ``{{ }}`` template, which
    would reach the judge as written, is refused always. The examples' scores are checked
    against the rubric by :func:`check_examples`.

    Examples
    --------
    >>> import hce
    >>> bad = PromptTemplate("mine", "Judge {{Transcript}} with {{RubricText}}", source="mine.txt")
    >>> check_template(bad, None)
    Traceback (most recent call last):
    ...
    hce.collect.design.templates.TemplateError: mine.txt: unknown placeholder 'Transcript' (did you mean 'TranscriptText'?); the known placeholders are FewShotExamples, ItemText, NCategories, RubricName, RubricText, ScaleLines, ScoreFormat, ScoreMax, ScoreMin, TTS, TotalMax, TotalMin, TranscriptText (or their snake_case names)
    """
    used = template.placeholders
    for name in used:
        if canonical(name) is None:
            close = difflib.get_close_matches(name, [*PLACEHOLDERS, *_ALIASES], n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(sorted(PLACEHOLDERS))
            raise TemplateError(f"{template.source}: unknown placeholder {name!r}{hint}; the known placeholders are {known} "
                                "(or their snake_case names)")  # fmt: skip
    if template.syntax == "jinja":
        for single in _SINGLE.finditer(template.text):
            name = single.group(1)
            meant = canonical(name) or name
            raise TemplateError(f"{template.source}: {{{name}}} has single braces, so the judge would read it as written: "
                                f"write {{{{{meant}}}}} (this template's placeholders take two braces)")
    names = {canonical(n) for n in used}
    if rubric is not None and template.reply in REPLIES:
        _check_answer_format(template, names, rubric)
    if template.reply != "synthetic" and not names & set(_ITEM):
        raise TemplateError(f"{template.source}: the template never places the item: add {{{{TranscriptText}}}} (or {{item_text}})")
    if "TTS" in names and template.reply != "synthetic":
        raise TemplateError(f"{template.source}: {{{{TTS}}}} (target total) only serves the SYNTH prompt")
    if "FewShotExamples" in names and not examples:
        raise TemplateError(f"{template.source}: the template places few-shot examples ({{{{FewShotExamples}}}}) but the "
                            "condition names none: add examples: FILE (YAML or JSONL: text and scores per criterion)")


def _check_answer_format(template: PromptTemplate, names: set[str | None], rubric: Rubric) -> None:
    """The template asks for the answer the parser reads, on the rubric's own levels."""
    text = template.text
    if "ScoreFormat" in names:
        return  # hce writes the lines: the rubric's criteria, levels and declared N/A answers
    if template.reply == "total":
        if not re.search(r"(?i)\btotal\b", text):
            raise TemplateError(f"{template.source}: reply: total, but the template never asks for the total: place "
                                "{{ScoreFormat}} or write the line to answer with ('Total Score: ...')")
        return
    lines = {c.id: re.search(rf"(?im)^[^\n]*\b{re.escape(c.name)}\b\s*[:=][^\n]*$", text) for c in rubric.categories}
    missing = [c.name for c in rubric.categories if lines[c.id] is None]
    if missing and "ScaleLines" not in names:
        raise TemplateError(f"{template.source}: the template never says how to answer (no line for {', '.join(missing)}): "
                            "place {{ScoreFormat}}, the score lines hce reads, or write one line per criterion "
                            "('Name: score')")
    for category in rubric.categories:
        line = lines[category.id]
        offered = _OFFERED.search(line.group(0)) if line is not None else None
        if offered is None:
            continue
        low, high = int(offered.group(1)), int(offered.group(2))
        if (low, high) != (category.min_score, category.max_score):
            raise TemplateError(f"{template.source}: the answer line for {category.name} offers {low}-{high}, but the "
                                f"rubric's levels are {category.min_score}-{category.max_score}: write its scale as the "
                                "rubric does, or place {{ScoreFormat}}")
        na = category.not_applicable
        if na is not None and not re.search(rf"(?i)(?<!\w){na.pattern}(?!\w)", line.group(0)):
            raise TemplateError(f"{template.source}: the answer line for {category.name} offers {low}-{high}, but the "
                                f"rubric also allows {na.label!r} ({na.descriptor}): add it to the line, or place "
                                "{{ScoreFormat}}")
