"""Rubrics as data: Likert rubrics (categories x levels) and boolean behaviour specs, from YAML.

A Likert rubric has any number of categories, each with its own scored levels (PDSQI-9
mixes 5-point and binary items); the total is the sum of the category scores, and
``total_meaningful`` says whether that sum is a score worth analysing (by default only
when every category shares one scale). A boolean
behaviour spec (seed 001, section 3) describes one yes/no judge. Both load from YAML and
are validated field by field: an error names the file, the field and what was expected.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hce._vocabulary import keywords_checked
from hce.errors import RubricError

# The fields a rubric file may hold, at each level: anything else is a typo, refused.
_RUBRIC_FIELDS = ("name", "version", "description", "source", "total_meaningful", "allow_gaps", "categories")
_CATEGORY_FIELDS = ("name", "id", "description", "levels", "not_applicable")
_LEVEL_FIELDS = ("score", "label", "descriptor", "example")
_PACKAGED_RUBRICS = {"v5": "rubric_v5.yaml", "v5.0": "rubric_v5.yaml"}
SEVERITIES = ("low", "medium", "high", "critical")
UNCERTAINTY_POLICIES = ("fail_and_flag", "fail")


@dataclass(frozen=True)
class Level:
    """One scored level of a category: ``score``, short ``label``, ``descriptor``, ``example``."""

    score: int
    label: str
    descriptor: str
    example: str | None = None


@dataclass(frozen=True)
class NotApplicable:
    """A category's declared "not applicable" answer: the ``label`` the judge writes instead of a
    score (``N/A``) and when it applies (``descriptor``). Such a score is missing by design."""

    label: str
    descriptor: str

    @property
    def pattern(self) -> str:
        """A regular expression of the answer as judges write it: the label in any case, and a declared
        ``NA``, ``N/A``, ``n.a.`` or ``not applicable`` in any of those spellings (they mean one answer).

        Examples
        --------
        >>> import re
        >>> answer = NotApplicable("NA", "no medication discussed")
        >>> [bool(re.fullmatch(answer.pattern, said, re.I)) for said in ("N/A", "n.a.", "Not applicable", "none")]
        [True, True, True, False]
        """
        return _NA_SPELLING if re.fullmatch(_NA_SPELLING, self.label.strip(), re.I) else re.escape(self.label)


# The spellings of "not applicable" that mean one answer.
_NA_SPELLING = r"(?:n\s*/\s*a|n\.\s*a\.?|na|not\s+applicable)"


@dataclass(frozen=True)
class Category:
    """One rubric category (criterion); ``id`` is the snake_case attempt-log column; ``description``
    what the criterion means, given to the judge after its name."""

    id: str
    name: str
    levels: tuple[Level, ...]
    description: str | None = None
    not_applicable: NotApplicable | None = None

    @property
    def scores(self) -> tuple[int, ...]:
        """The scores a judge may give, ascending (a scale with ``allow_gaps`` skips some)."""
        return tuple(level.score for level in self.levels)

    @property
    def min_score(self) -> int:
        return min(level.score for level in self.levels)

    @property
    def max_score(self) -> int:
        return max(level.score for level in self.levels)


@dataclass(frozen=True)
class Rubric:
    """A Likert rubric. ``render()`` gives the text embedded in the judge prompts.

    Examples
    --------
    >>> import hce
    >>> rubric = hce.load_rubric("v5")
    >>> [c.id for c in rubric.categories][:2]
    ['clarity_of_language', 'lexical_diversity']
    >>> rubric.total_range
    (5, 20)
    """

    name: str
    categories: tuple[Category, ...]
    version: str | None = None
    description: str | None = None
    source: str | None = None
    total_meaningful: bool | None = None

    def __post_init__(self) -> None:
        # A rubric built in Python skips the file checks: a criterion named like a log column is refused here too.
        from hce.log_schema import RESERVED_COLUMNS  # the schema loads pandas: the simulator starts without it

        taken = [c.id for c in self.categories if c.id in RESERVED_COLUMNS]
        if taken:
            raise RubricError(f"rubric {self.name!r}: criterion id(s) {taken} are columns of the attempt log; their "
                              "scores would overwrite those columns in every row: give the categories other ids")

    @property
    def total_is_meaningful(self) -> bool:
        """Whether the sum of the category scores is a score to analyse.

        As the rubric states it (``total_meaningful:``); unstated, only when every category
        is scored on one scale: a 0-1 item added to 1-5 items (PDSQI-9) gives a sum whose
        differences mean different things depending on which item moved.

        Examples
        --------
        >>> import hce
        >>> hce.load_rubric("v5").total_is_meaningful
        True
        """
        if self.total_meaningful is not None:
            return self.total_meaningful
        return len({c.scores for c in self.categories}) == 1

    @property
    def criteria(self) -> list[str]:
        """Category ids in rubric order: the score columns of an attempt log."""
        return [c.id for c in self.categories]

    @property
    def total_range(self) -> tuple[int, int]:
        return (
            sum(c.min_score for c in self.categories),
            sum(c.max_score for c in self.categories),
        )

    @property
    def total_levels(self) -> tuple[int, ...]:
        """Every total the categories' scores can add up to, ascending."""
        totals = {0}
        for category in self.categories:
            totals = {t + s for t in totals for s in category.scores}
        return tuple(sorted(totals))

    def category(self, key: str) -> Category:
        """Category by id or display name."""
        for c in self.categories:
            if key in (c.id, c.name):
                return c
        raise RubricError(f"rubric {self.name!r} has no category {key!r}; categories: {self.criteria}")

    def render(self) -> str:
        """Plain text of the rubric, laid out as the PRD writes it, for embedding in prompts."""
        lines = [self.name]
        if self.description:
            lines.append(self.description.strip())
        for number, cat in enumerate(self.categories, start=1):
            lines.append("")
            lines.append(f"Criterion {number}: {cat.name}")
            if cat.description:
                lines.append(cat.description)
            for level in cat.levels:
                text = f"- {level.score} ({level.label}): {level.descriptor}"
                if level.example:
                    text += f" Example: {level.example}"
                lines.append(text)
            if cat.not_applicable is not None:
                lines.append(f"- {cat.not_applicable.label}: {cat.not_applicable.descriptor}")
        return "\n".join(lines)


@dataclass(frozen=True)
class BehaviorExample:
    """A worked case of a behaviour spec with the verdict a correct judge gives."""

    name: str
    expected_pass: bool
    ground_truth: Any = None
    narrative: Any = None
    candidate: Any = None
    expected_reason: str | None = None


@dataclass(frozen=True)
class BehaviorSpec:
    """One boolean judge (seed 001 section 3): AND-ed pass conditions, automatic fails, variations.

    Examples
    --------
    >>> import hce
    >>> spec = hce.load_behavior("medications_extracted_correct")
    >>> spec.severity, len(spec.pass_conditions), spec.uncertainty_policy
    ('high', 3, 'fail_and_flag')
    """

    behavior_id: str
    description: str
    category: str
    severity: str
    pass_conditions: tuple[str, ...]
    automatic_fail: tuple[str, ...] = ()
    acceptable_variations: tuple[str, ...] = ()
    uncertainty_policy: str = "fail_and_flag"
    field_name: str | None = None
    ground_truth_source: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    examples: tuple[BehaviorExample, ...] = field(default=())


# --- loading -----------------------------------------------------------------------------


class _Fields:
    """Reads typed fields from a parsed YAML mapping; errors name the file and field path."""

    def __init__(self, source: str, mapping: Any, path: str = ""):
        self.source = source
        self.path = path
        if not isinstance(mapping, dict):
            self.fail("", "a mapping of field: value", mapping)
        self.mapping = mapping

    def fail(self, key: str, expected: str, got: Any) -> None:
        where = f"{self.path}.{key}" if self.path and key else (self.path or key or "top level")
        shown = "nothing" if got is None else f"{type(got).__name__} {got!r}"
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise RubricError(f"{self.source}: field {where!r}: expected {expected}, got {shown}")

    def only(self, known: tuple[str, ...]) -> None:
        """Refuse a key the format does not have (a typo would be ignored silently), with the nearest known one."""
        for key in self.mapping:
            if key not in known:
                near = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                where = f"{self.path}.{key}" if self.path else str(key)
                raise RubricError(f"{self.source}: unknown field {where!r}{hint} (known here: {', '.join(known)})")

    def text(self, key: str, *, required: bool = True) -> str | None:
        value = self.mapping.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(key, "a non-empty string", value)
        return " ".join(value.split()) if "\n" in value.strip() else value.strip()

    def integer(self, key: str) -> int:
        value = self.mapping.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(key, "an integer", value)
        return value

    def boolean(self, key: str) -> bool:
        value = self.mapping.get(key)
        if not isinstance(value, bool):
            self.fail(key, "true or false", value)
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.mapping.get(key, default)
        if value not in choices:
            self.fail(key, f"one of {list(choices)}", value)
        return value

    def texts(self, key: str, *, required: bool = True) -> tuple[str, ...]:
        value = self.mapping.get(key)
        if value is None and not required:
            return ()
        if not isinstance(value, list) or not value:
            self.fail(key, "a non-empty list of strings", value)
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.fail(f"{key}[{i}]", "a non-empty string", item)
        return tuple(" ".join(item.split()) for item in value)

    def items(self, key: str, *, required: bool = True) -> list[_Fields]:
        value = self.mapping.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list) or not value:
            self.fail(key, "a non-empty list", value)
        prefix = f"{self.path}.{key}" if self.path else key
        return [_Fields(self.source, item, f"{prefix}[{i}]") for i, item in enumerate(value)]

    def sub(self, key: str) -> _Fields | None:
        if self.mapping.get(key) is None:
            return None
        return _Fields(self.source, self.mapping[key], f"{self.path}.{key}" if self.path else key)


def _read_yaml(source: str | Path, packaged: dict[str, str], kind: str) -> tuple[str, Any]:
    """Parse a packaged name or a YAML path into (display name, document)."""
    key = str(source)
    if key in packaged:
        text = resources.files("hce.data").joinpath(packaged[key]).read_text(encoding="utf-8")
        name = f"packaged {kind} {key!r}"
    else:
        path = Path(source)
        if not path.is_file():
            raise RubricError(
                f"{kind} {key!r} is neither a packaged name ({sorted(packaged)}) nor an existing file"
            )
        text = path.read_text(encoding="utf-8")
        name = str(path)
    try:
        return name, yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise RubricError(f"{name}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None


@keywords_checked
def load_rubric(source: str | Path = "v5") -> Rubric:
    """Load a Likert rubric: a packaged name (``"v5"``) or a YAML file.

    Parameters
    ----------
    source : str or path
        ``"v5"`` for the Patient Health Communication Rubric v5.0, or the path of a YAML
        file with ``name`` and ``categories``; each category has ``name``, optional ``id``
        (snake_case of the name by default) and ``levels``, each level ``score`` (integer),
        ``label``, ``descriptor`` and optional ``example``. A category's scores must be
        consecutive (1, 2, 3, 4, 5; not 1, 2, 4, 5 or only 1 and 5) unless the rubric sets
        ``allow_gaps: true``; then judge scores in a gap are flagged by the reply parser.
        ``total_meaningful: true|false`` says whether the sum of the category scores is
        analysed as a score (default: only when every category has the same scale).

    Returns
    -------
    Rubric

    Raises
    ------
    RubricError
        Naming the file, the field (e.g. ``categories[1].levels[0].score``) and what was expected.

    Examples
    --------
    >>> import hce
    >>> r = hce.load_rubric("v5")
    >>> r.name, len(r.categories), r.total_range
    ('Patient Health Communication Rubric v5.0', 5, (5, 20))
    >>> r.category("Lexical Diversity").levels[3].label
    'Excellent'
    """
    if str(source) in _PACKAGED_RUBRICS:
        return _packaged_rubric(str(source))
    return _parse_rubric(*_read_yaml(source, _PACKAGED_RUBRICS, "rubric"))


@cache
def _packaged_rubric(name: str) -> Rubric:
    # Packaged rubrics are immutable: parse each once (YAML parsing costs ~70 ms a call).
    return _parse_rubric(*_read_yaml(name, _PACKAGED_RUBRICS, "rubric"))


def _parse_rubric(name: str, doc: Any) -> Rubric:
    top = _Fields(name, doc)
    top.only(_RUBRIC_FIELDS)
    allow_gaps = top.boolean("allow_gaps") if "allow_gaps" in top.mapping else False
    categories = []
    for cat in top.items("categories"):
        cat.only(_CATEGORY_FIELDS)
        cat_name = cat.text("name")
        cat_id = cat.text("id", required=False) or _snake(cat_name)
        if not cat_id.isidentifier():
            cat.fail("id", "a snake_case identifier usable as a column name", cat_id)
        _refuse_reserved(cat, cat_id)
        levels = []
        for lvl in cat.items("levels"):
            lvl.only(_LEVEL_FIELDS)
            levels.append(
                Level(
                    score=lvl.integer("score"),
                    label=lvl.text("label"),
                    descriptor=lvl.text("descriptor"),
                    example=lvl.text("example", required=False),
                )
            )
        scores = [level.score for level in levels]
        if len(set(scores)) != len(scores):
            cat.fail("levels", "distinct scores", scores)
        gaps = sorted(set(range(min(scores), max(scores) + 1)) - set(scores))
        if gaps and not allow_gaps:
            cat.fail(
                "levels",
                f"consecutive scores (missing {gaps}); if the gap is intended, set 'allow_gaps: true' at the top "
                "of the rubric, and judge scores in the gap will be flagged",
                sorted(scores),
            )
        not_applicable = None
        if cat.mapping.get("not_applicable") is not None:
            na = _Fields(cat.source, cat.mapping["not_applicable"], f"{cat.path}.not_applicable")
            na.only(("label", "descriptor"))
            not_applicable = NotApplicable(label=na.text("label"), descriptor=na.text("descriptor"))
        categories.append(Category(cat_id, cat_name, tuple(sorted(levels, key=lambda lv: lv.score)),
                                   description=cat.text("description", required=False), not_applicable=not_applicable))
    ids = [c.id for c in categories]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        top.fail("categories", "distinct category ids", duplicated)
    version = top.mapping.get("version")
    total_meaningful = top.boolean("total_meaningful") if "total_meaningful" in top.mapping else None
    return Rubric(
        name=top.text("name"),
        categories=tuple(categories),
        version=None if version is None else str(version),
        description=top.text("description", required=False),
        source=top.text("source", required=False),
        total_meaningful=total_meaningful,
    )


def _refuse_reserved(cat: _Fields, cat_id: str) -> None:
    """Refuse a criterion id that is an attempt-log column: its score would overwrite the column's value."""
    from hce.log_schema import COLUMNS, RESERVED_COLUMNS  # the schema loads pandas: the simulator starts without it

    if cat_id not in RESERVED_COLUMNS:
        return
    column = COLUMNS.get(cat_id)
    meaning = f" ({column.description.split(' (')[0].lower()})" if column else ""
    given = "id" if "id" in cat.mapping else "name"
    raise RubricError(
        f"{cat.source}: field {cat.path}.{given!s}: the criterion id {cat_id!r} is a column of the attempt log{meaning}; "
        f"its scores would overwrite that column in every row. Give the category another id, e.g. 'id: {cat_id}_score'"
    )


def rubric_yaml(rubric: Rubric) -> str:
    """The rubric as YAML that :func:`load_rubric` reads back to an equal rubric.

    Examples
    --------
    >>> import hce, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "v5.yaml"
    >>> _ = path.write_text(rubric_yaml(hce.load_rubric("v5")))
    >>> hce.load_rubric(path) == hce.load_rubric("v5")
    True
    """
    doc: dict[str, Any] = {"name": rubric.name}
    doc.update({k: v for k, v in (("version", rubric.version), ("description", rubric.description), ("source", rubric.source),
                                  ("total_meaningful", rubric.total_meaningful)) if v is not None})  # fmt: skip
    if any(c.scores != tuple(range(c.min_score, c.max_score + 1)) for c in rubric.categories):
        doc["allow_gaps"] = True
    doc["categories"] = [
        {"id": c.id, "name": c.name, **({"description": c.description} if c.description else {}),
         "levels": [_level_fields(level) for level in c.levels],
         **({"not_applicable": {"label": c.not_applicable.label, "descriptor": c.not_applicable.descriptor}}
            if c.not_applicable else {})}
        for c in rubric.categories
    ]
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def _level_fields(level: Level) -> dict[str, Any]:
    fields = {"score": level.score, "label": level.label, "descriptor": level.descriptor, "example": level.example}
    return {key: value for key, value in fields.items() if value is not None}


def log_rubric_path(log: str | Path) -> Path:
    """Where the rubric a log was judged with is kept, beside it: ``<log>.rubric.yaml``."""
    return Path(f"{log}.rubric.yaml")


def kept_rubric(logs) -> Rubric | None:
    """The rubric ``hce collect`` kept beside the log file(s), if any (one for all of them).

    ``logs`` is a path or a list of paths and frames (frames keep no rubric). Logs judged
    with different rubrics are refused: their criteria are not the same.
    """
    parts = list(logs) if isinstance(logs, (list, tuple)) else [logs]
    paths = [p for p in parts if isinstance(p, (str, os.PathLike))]
    kept = [load_rubric(log_rubric_path(p)) for p in paths if log_rubric_path(p).is_file()]
    if kept and any(r != kept[0] for r in kept):
        raise RubricError(f"the logs were judged with different rubrics ({', '.join(sorted({r.name for r in kept}))}); "
                          "report them one at a time or name the rubric")  # fmt: skip
    return kept[0] if kept else None


def packaged_behaviors() -> list[str]:
    """Names of the behaviour specs shipped with hce."""
    folder = resources.files("hce.data").joinpath("behaviors")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


@keywords_checked
def load_behavior(source: str | Path) -> BehaviorSpec:
    """Load a boolean behaviour spec (the boolean judge specification's behaviour format): a packaged name or a YAML file.

    Required fields: ``behavior_id``, ``description``, ``category``, ``severity`` (one of
    low/medium/high/critical), ``pass_conditions`` (AND-ed). Optional: ``field_name``,
    ``ground_truth_source``, ``input_context`` (``include``/``ignore`` lists),
    ``automatic_fail``, ``acceptable_variations``, ``uncertainty_policy`` (``fail_and_flag``
    by default, or ``fail``), ``examples`` (each with ``name`` and ``expected_pass``).

    Parameters
    ----------
    source : str or Path
        A packaged behaviour's name (``hce/data/behaviors/``) or a YAML file.

    Returns
    -------
    BehaviorSpec
        The checked spec.

    Examples
    --------
    >>> import hce
    >>> spec = hce.load_behavior("medications_extracted_correct")
    >>> [(e.name, e.expected_pass) for e in spec.examples]
    [('simple_pass', True), ('simple_fail_missing_med', False)]
    """
    packaged = {name: f"behaviors/{name}.yaml" for name in packaged_behaviors()}
    name, doc = _read_yaml(source, packaged, "behaviour spec")
    top = _Fields(name, doc)
    context = top.sub("input_context")
    examples = tuple(
        BehaviorExample(
            name=ex.text("name"),
            expected_pass=ex.boolean("expected_pass"),
            ground_truth=ex.mapping.get("ground_truth"),
            narrative=ex.mapping.get("narrative"),
            candidate=ex.mapping.get("candidate"),
            expected_reason=ex.text("expected_reason", required=False),
        )
        for ex in top.items("examples", required=False)
    )
    return BehaviorSpec(
        behavior_id=top.text("behavior_id"),
        field_name=top.text("field_name", required=False),
        description=top.text("description"),
        category=top.text("category"),
        severity=top.choice("severity", SEVERITIES),
        ground_truth_source=top.texts("ground_truth_source", required=False),
        include=context.texts("include", required=False) if context else (),
        ignore=context.texts("ignore", required=False) if context else (),
        automatic_fail=top.texts("automatic_fail", required=False),
        pass_conditions=top.texts("pass_conditions"),
        acceptable_variations=top.texts("acceptable_variations", required=False),
        uncertainty_policy=top.choice("uncertainty_policy", UNCERTAINTY_POLICIES, "fail_and_flag"),
        examples=examples,
    )


def _snake(name: str) -> str:
    return "_".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())
