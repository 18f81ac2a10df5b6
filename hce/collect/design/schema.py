"""The schema of design and study files: every mapping checked, every number range-checked.

A design or study file is read into pydantic models that forbid unknown keys and check
types strictly (``temperature: "0.7"`` is text, not a number: YAML quotes make it so), so a
typo such as ``endpoint: {base_ulr: ...}`` can no longer fall back silently to a default
(the default host, say, receiving every transcript). :func:`validate` turns pydantic's
errors into one :class:`SchemaError` naming the file, the path of the bad value
(``endpoint.base_ulr``, ``conditions[2].temperature``) and, for an unknown key, the
closest valid one ("did you mean 'base_url'?").

The ranges are the API's own: temperature 0-2 and top_p 0-1 (OpenAI's chat completions
reference), ``top_logprobs`` 0-20 (the same), ``max_tokens`` at least 1; and hce's:
concurrency and attempts at least 1, rates, timeouts and spending limits above 0.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator

from hce.collect.call.providers import Kind
from hce.errors import CollectError

M = TypeVar("M", bound=BaseModel)


class SchemaError(CollectError, ValueError):
    """A design or study file breaks its schema (names the file, the path and what was expected)."""


def _as_text(value: Any) -> Any:
    """Ids written as bare numbers in YAML (``id: 7``) are names, so they become text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Name = Annotated[str, BeforeValidator(_as_text)]


class Strict(BaseModel):
    """A mapping with no unknown keys and no type coercion (``"0.7"`` is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PricingSpec(Strict):
    """An endpoint's own ``pricing:``: USD per million tokens (a local server's power, a negotiated rate)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)


class EndpointSpec(Strict):
    """``endpoint:`` or one entry of ``endpoints:`` (see :mod:`hce.collect.call.providers`)."""

    base_url: str | None = None
    api_key_env: str | None = None
    needs_key: bool = True
    kind: Kind | None = None
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)
    concurrency: int | None = Field(None, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    batch: bool | None = None
    # "none": the calls cost nothing hce should count (a judge on your own hardware); or the endpoint's own prices.
    pricing: typing.Literal["none"] | PricingSpec | None = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = re.match(r"^(https?)://([^/\s?#]+)", value)
        if parts is None:
            raise ValueError("must be an http:// or https:// address with a host, e.g. http://127.0.0.1:8000/v1")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _variable(cls, value: str | None) -> str | None:
        # Never echo the value: a key pasted here by mistake must not reach a message.
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), never the key itself")
        return value


class RunSpec(Strict):
    """``run:``: limits of the whole run (an endpoint's own limits are under its entry)."""

    concurrency: int = Field(8, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    max_cost_usd: float | None = Field(None, gt=0)


class SettingsSpec(Strict):
    """``defaults:``: what every condition inherits."""

    prompt: str | None = None
    model: Name | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    behavior: str | None = None
    price_model: str | None = None
    endpoint: Name | None = None
    samples_per_request: int | None = Field(None, ge=1, le=128)  # OpenAI's n: 1-128
    prompt_cache_key: str | None = None
    # A user's few-shot examples (YAML/JSONL, relative to the design) for a template that places them.
    examples: str | None = None
    # json_schema: the reply is asked for as JSON in a schema built from the rubric (hce.collect.design.reply_schema).
    response_format: typing.Literal["json_schema"] | None = None


class ConditionSpec(SettingsSpec):
    """One entry of ``conditions:``."""

    id: Name | None = None


_NUMBER, _RULE = "<number>", "<rule>"  # the two forms of ``attempts``; never a key, so left out of error paths


class StopWhenSpec(Strict):
    """``attempts.stop_when``: the target half-width of each cell's interval (:mod:`hce.collect.running.stopping`)."""

    criterion: Name
    half_width: float = Field(gt=0)
    confidence: float = Field(0.95, gt=0, lt=1)
    prior_sd: float | None = Field(None, gt=0)


class AttemptsSpec(Strict):
    """``attempts:`` as a stopping rule: ``min`` each, more while unsettled, up to ``max``."""

    min: int = Field(ge=1)
    max: int = Field(ge=1)
    batch: int | None = Field(None, ge=1)
    stop_when: StopWhenSpec


class DesignSpec(Strict):
    """A design file's top level (``items`` are read by :mod:`hce.collect.design.design`)."""

    experiment_id: Name = "experiment"
    rubric: str = "v5"
    # a number, or a stopping rule (a mapping): one or the other by the value's type, so an error names only its own
    attempts: Annotated[
        Annotated[int, Field(ge=1), Tag(_NUMBER)] | Annotated[AttemptsSpec, Tag(_RULE)],
        Discriminator(lambda v: _RULE if isinstance(v, Mapping) or isinstance(v, AttemptsSpec) else _NUMBER),
    ] = 1
    endpoint: EndpointSpec | None = None
    endpoints: dict[Name, EndpointSpec] | None = None
    run: RunSpec = RunSpec()
    defaults: SettingsSpec = SettingsSpec()
    conditions: list[ConditionSpec] = Field(min_length=1)
    items: Any = None
    probes: Any = None  # checked by hce.collect.design.probes.load_probes (issue 47)


def validate(model: type[M], data: Any, source: str, where: tuple[str | int, ...] = ()) -> M:
    """``model`` read from ``data``, or :class:`SchemaError` naming every problem found.

    Examples
    --------
    >>> validate(EndpointSpec, {"base_ulr": "http://127.0.0.1:8000/v1"}, "design.yaml", ("endpoint",))
    Traceback (most recent call last):
    ...
    hce.collect.design.schema.SchemaError: design.yaml: endpoint.base_ulr: unknown key; did you mean 'base_url'? (valid here: api_key_env, base_url, batch, concurrency, kind, max_retries, needs_key, pricing, requests_per_minute, timeout, tokens_per_minute)
    """
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        problems = [_problem(model, error, where) for error in exc.errors()]
        raise SchemaError(f"{source}: " + "; ".join(dict.fromkeys(problems))) from None


def path_text(loc: tuple[str | int, ...]) -> str:
    """``("conditions", 2, "temperature")`` -> ``conditions[2].temperature``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def did_you_mean(key: str, valid: typing.Iterable[str]) -> str:
    """`` did you mean 'x'?`` for the closest valid key (difflib), or ``""``."""
    close = difflib.get_close_matches(str(key), sorted(valid), n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""


def _problem(model: type[BaseModel], error: Mapping[str, Any], where: tuple[str | int, ...]) -> str:
    loc = tuple(part for part in error["loc"] if part not in (_NUMBER, _RULE))
    path = path_text((*where, *loc))
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    secret = bool(loc) and loc[-1] == "api_key_env"
    shown = "" if secret else f", got {value!r}"
    if kind == "extra_forbidden":
        valid = _fields_at(model, loc[:-1])
        return f"{path}: unknown key;{did_you_mean(str(loc[-1]), valid)} (valid here: {', '.join(sorted(valid))})"
    if kind == "missing":
        return f"{path}: required"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        limit = next(iter(ctx.values()))
        return f"{path}: must be {sign} {limit:g}{shown}"
    if kind in ("float_type", "int_type", "float_parsing", "int_parsing", "int_from_float"):
        what = "a whole number" if kind.startswith("int") else "a number"
        hint = ""
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+,\d+\s*", value):
            hint = f" (a decimal comma? write {value.strip().replace(',', '.')} without quotes)"
        elif isinstance(value, str):
            hint = " (text: remove the quotes around a number)"
        elif isinstance(value, bool):
            hint = " (true/false is not a number)"
        return f"{path}: must be {what}{shown}{hint}"
    if kind == "bool_type":
        return f"{path}: must be true or false{shown}"
    if kind == "string_type":
        return f"{path}: must be text{shown}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{path}: must be a mapping (key: value){shown}"
    if kind == "list_type":
        return f"{path}: must be a list{shown}"
    if kind == "too_short":
        return f"{path}: must not be empty"
    if kind == "literal_error":
        return f"{path}: must be one of {ctx.get('expected')}{shown}"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{path}: {message}{shown}"


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """The valid keys of the mapping at ``loc`` inside ``model`` (for did-you-mean)."""
    node: Any = model
    for part in loc:
        node = _unwrap(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            if field is None:
                return []
            node = field.annotation
        else:  # a list index or a dict key: step into the element type
            args = typing.get_args(node)
            node = args[-1] if args else Any
    node = _unwrap(node)
    return list(node.model_fields) if isinstance(node, type) and issubclass(node, BaseModel) else []


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``; ``Annotated[X, ...]`` -> ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            models = [a for a in map(_unwrap, args) if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(args) != 1 and len(models) == 1:  # a number or a mapping (attempts): the mapping's keys
                return models[0]
            annotation = args[0] if len(args) == 1 else annotation
            if len(args) != 1:
                return annotation
        else:
            return annotation
