"""A judge-study design: items x conditions (prompt x model x settings) x attempts, from YAML.

A design file (every key but ``conditions`` and ``items`` optional)::

    experiment_id: EXP2_PromptOptimization
    rubric: v5                    # a packaged rubric or a YAML path (relative to this file)
    attempts: 25                  # or a stopping rule: {min: 3, max: 15, stop_when: {criterion: total,
                                  #   half_width: 0.5}} (hce.collect.running.stopping)
    endpoint:                     # never the API key itself
      base_url: http://127.0.0.1:8000/v1
      api_key_env: LOCAL_KEY      # the environment variable that holds the key (only it is read)
      timeout: 60
      max_retries: 3
    run:                          # limits of the whole run
      concurrency: 8
      requests_per_minute: 500
      tokens_per_minute: 200000
      max_cost_usd: 25            # stop launching calls before the log's spend would pass it
    defaults:                     # settings every condition inherits (seed 000 section 5)
      model: gpt-4o-mini-2024-07-18
      temperature: 0.1
      max_tokens: 1000
    conditions:
      - prompt: P2.1              # id defaults to "P2.1|<model>|t<temperature>"
      - {id: few_shot, prompt: P2.2}
      - {prompt: P2.3, logprobs: true, top_logprobs: 5}
      - {id: pooled, prompt: P2.1, samples_per_request: 5, prompt_cache_key: exp2-p21}
      - {id: mine, prompt: prompts/mine.txt, examples: prompts/mine_examples.yaml}
      - {id: structured, prompt: P2.1, response_format: json_schema}

``prompt:`` is a packaged prompt (P1.1 ... P2.3, SYNTH, BOOL) or a template file of one's own
(:mod:`hce.collect.design.templates`: placeholders such as ``{{RubricText}}``, ``{{ScoreFormat}}``,
``{{TranscriptText}}``); ``examples:`` a YAML/JSONL file of few-shot examples (item text and a
score per rubric criterion) for a template with ``{{FewShotExamples}}``. Both are checked
against the rubric when the design is loaded, before any call.

Several providers in one design: ``endpoints:`` names them (each with the keys of
``endpoint:`` plus ``kind``, ``concurrency``, ``requests_per_minute``,
``tokens_per_minute``, ``batch``), and a condition (or ``defaults``) picks one with
``endpoint: NAME``; a single ``endpoint:`` is the endpoint named ``default``. Every
mapping is checked against :mod:`hce.collect.design.schema` (unknown keys, types, ranges) and
each condition against its endpoint's provider (``hce.collect.call.providers``).
    items:                        # a list, a folder of .txt files, or a .jsonl/.csv file
      - {id: T001, text: "Doctor: ... Patient: ..."}
      - {id: T002, file: transcripts/T002.txt, metadata: {source: DoVA}}

Boolean judges (``prompt: BOOL``) name a ``behavior`` (packaged or a YAML path) and their
items carry a ``case`` (``ground_truth``, ``narrative``, ``candidate``); synthetic
transcript generation (``prompt: SYNTH``) reads each item's ``metadata.target_total``.
Item metadata become extra log columns (``target_total`` next to the scores).

A design built in Python may also send prompts of its own (:class:`CustomPrompt`, named by
its conditions' ``prompt_id`` in ``Design.prompts``): the caller renders each item's
messages and parses each reply; the runner does the rest (concurrency, rate limits,
retries, resume, the attempt log) as for any other call.

``samples_per_request: k`` answers k attempts of an item with one request asking for
``n = k`` choices (prompt billed once; :mod:`hce.collect.call.sampling`, and docs/guide/cost.md on what
it changes statistically); ``prompt_cache_key`` is sent with each request so that requests
sharing it share OpenAI's prompt cache. ``response_format: json_schema`` asks for the reply as
JSON in a schema built from the rubric (:mod:`hce.collect.design.reply_schema`), the prompt's
words unchanged; the reply is then read as that JSON.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hce._paths import input_file
from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.collect.call.keys import OPENAI_URL
from hce.collect.call.pricing import Price
from hce.collect.design.prompts import REPLY_FORMAT, fewshot_examples
from hce.collect.design.reply_schema import SCHEMA_FORMATS
from hce.collect.design.probes import Probe, check_probe_items, load_probes, twin_conditions
from hce.collect.call.providers import PROVIDERS, infer_kind, unsupported
from hce.model_names import REASONING_MODEL
from hce.collect.design.schema import AttemptsSpec, ConditionSpec, DesignSpec, EndpointSpec, SchemaError, did_you_mean, validate
from hce.collect.running.stopping import StopRule, stop_rule_of
from hce.collect.design.templates import (
    PromptTemplate, canonical, check_examples, check_template, load_examples, load_template, packaged_template,
)
from hce.collect.design.transcripts import read_text_file
from hce.errors import CollectError, HceError, HceWarning
from hce.log_schema import COLUMNS, make_attempt_id
from hce.rubric import BehaviorSpec, Rubric, load_behavior, load_rubric

DEFAULTS: dict[str, Any] = {"temperature": 0.1, "max_tokens": 1000}  # seed 000 section 5


@dataclass(frozen=True)
class Item:
    """One judged item: its text (transcripts), or a boolean-judge ``case``, and metadata.

    The runner sends ``text`` through :func:`~hce.collect.design.transcripts.clean_text`.
    """

    id: str
    text: str | None = None
    case: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    cleaned_chars: int = 0  # removed from ``text`` before it came here (hce.collect.design.transcripts.clean_text)


@dataclass(frozen=True)
class Endpoint:
    """Where a condition's calls go: an OpenAI-compatible server and how to reach it.

    Attributes
    ----------
    name : str
        The name conditions use for it.
    base_url : str or None
        The server (None: ``$OPENAI_BASE_URL``, else OpenAI).
    api_key_env : str or None
        The environment variable holding the key.
    needs_key : bool
        Whether calls need a key (a local server may not).
    kind : str
        The provider (``hce.collect.call.providers``), inferred from the host unless stated.
    timeout : float
        Seconds a call may take.
    max_retries : int
        Retries of a failed call.
    concurrency : int or None
        This endpoint's own limit on calls in flight (None: only the run's).
    requests_per_minute, tokens_per_minute : float or None
        This endpoint's own rate limits (None: only the run's).
    batch : bool or None
        Whether the Batch API is used; None means the provider's default.
    pricing : "none", Price or None
        ``"none"``: its calls are not priced (a judge on your own hardware: empty
        ``cost_usd``, no warning); a ``hce.collect.call.pricing.Price``: its own per-token
        prices; None (the default): hce's price table, by model.

    Examples
    --------
    >>> from hce.collect import Endpoint
    >>> Endpoint(base_url="http://127.0.0.1:8000/v1", needs_key=False).host
    'http://127.0.0.1:8000'
    """

    name: str = "default"
    base_url: str | None = None
    api_key_env: str | None = None
    needs_key: bool = True
    kind: str = "openai"
    timeout: float = 60.0
    max_retries: int = 3
    concurrency: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    batch: bool | None = None
    pricing: str | Price | None = None

    @property
    def host(self) -> str:
        """``scheme://host[:port]`` of the endpoint (``$OPENAI_BASE_URL``, else OpenAI, when no base_url)."""
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        parts = urllib.parse.urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def supports_batch(self) -> bool:
        """Whether calls go through the Batch API (``batch``, else the provider's default)."""
        return self.batch if self.batch is not None else PROVIDERS[self.kind].batch


@dataclass(frozen=True)
class Condition:
    """Prompt x model x settings x endpoint. ``price_model`` prices a deployment (Azure) as a known model."""

    id: str
    prompt_id: str
    model: str
    temperature: float | None = 0.1
    max_tokens: int | None = 1000
    top_p: float | None = None
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    behavior: BehaviorSpec | None = None
    price_model: str | None = None
    endpoint: str = "default"
    samples_per_request: int = 1  # attempts answered by one request (its n): hce.collect.call.sampling
    prompt_cache_key: str | None = None  # sent as prompt_cache_key: requests sharing it share OpenAI's prompt cache
    template: PromptTemplate | None = None  # a user's template (prompt_id is its id); None: the packaged one
    examples: tuple[Mapping[str, Any], ...] | None = None  # few-shot examples; None: the packaged ones
    probe: Probe | None = None  # a probe's twin of a condition (hce.collect.design.probes); None: an original
    # "json_schema": the reply is asked for in the rubric's JSON schema (hce.collect.design.reply_schema); None: as text
    response_format: str | None = None

    @property
    def reply_format(self) -> str:
        """How the prompt asks the judge to answer (``scores``, ``cot``, ``total``, ...)."""
        return self.template.reply if self.template is not None else REPLY_FORMAT[self.prompt_id]


@dataclass(frozen=True)
class CustomPrompt:
    """A prompt its caller renders and parses, sent by the runner like any other.

    Parameters
    ----------
    render : callable
        ``render(item) -> messages``: the chat messages of one item.
    parse : callable
        ``parse(item, reply_text) -> dict`` of log columns, with ``error_flag`` and
        ``error_message``; ``reply_text`` is None when the call failed (the runner then
        logs the call's own error message).
    version : str
        Names the template and its settings; hashed into each row's ``settings_hash``, so a
        changed template under the same condition id is caught on resume.

    Notes
    -----
    Expected output tokens (rate limits, budget, estimates) are the condition's ``max_tokens``.

    Examples
    --------
    >>> from hce.collect import CustomPrompt
    >>> prompt = CustomPrompt(render=lambda item: [{"role": "user", "content": item.text}],
    ...                       parse=lambda item, text: {"error_flag": text is None, "error_message": None},
    ...                       version="echo-1")
    >>> prompt.version
    'echo-1'
    """

    render: Callable[[Item], list[dict[str, str]]]
    parse: Callable[[Item, str | None], dict[str, Any]]
    version: str


@dataclass(frozen=True)
class Attempt:
    """One planned call: item x condition x attempt number, with its deterministic id."""

    attempt_id: str
    item: Item
    condition: Condition
    attempt: int


@dataclass(frozen=True)
class Design:
    """A parsed design; see the module notes for the YAML form.

    Attributes
    ----------
    experiment_id : str
        The ``experiment_id`` of every attempt.
    items, conditions : tuple
        What is judged (``hce.collect.design.design.Item``) and how
        (``hce.collect.design.design.Condition``: prompt x model x settings x endpoint).
    attempts : int
        Repeated attempts per item and condition (with ``stop_rule``: at most).
    stop_rule : StopRule or None
        Repeats that stop when a cell's score is known (``hce.collect.running.stopping``); None:
        every cell gets ``attempts``.
    rubric : Rubric
        The rubric judged with.
    endpoints : mapping of str to Endpoint
        The servers, by the name conditions use.
    concurrency : int
        Calls in flight at most.
    requests_per_minute, tokens_per_minute : float or None
        The run's rate limits.
    max_cost_usd : float or None
        The run stops before its estimated cost passes this.
    prompts : mapping of str to CustomPrompt
        Prompts the caller renders and parses itself, by the prompt_id its conditions name.
    probes : tuple of Probe
        The design's ``probes:`` (``hce.collect.design.probes``); each transforming probe's twins
        of the conditions are in ``conditions`` (their ``probe`` set).
    golden_run : int or None
        The period of a golden-set history this run judges (``hce collect --golden``,
        ``hce.collect.running.golden``): it is logged as ``golden_run`` and makes the
        attempt ids of each period new; None (default) for an ordinary run.

    Examples
    --------
    >>> from hce.collect import load_design
    >>> design = load_design({"experiment_id": "demo", "attempts": 2,
    ...                       "items": [{"id": "T1", "text": "Doctor: How are you?"}],
    ...                       "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}]})
    >>> len(design.plan())
    2
    """

    experiment_id: str
    items: tuple[Item, ...]
    conditions: tuple[Condition, ...]
    attempts: int = 1
    rubric: Rubric = field(default_factory=lambda: load_rubric("v5"))
    endpoints: Mapping[str, Endpoint] = field(default_factory=lambda: {"default": Endpoint()})
    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_cost_usd: float | None = None
    stop_rule: StopRule | None = None
    probes: tuple[Probe, ...] = ()  # the design's probes (hce.collect.design.probes); their twins are in conditions
    golden_run: int | None = None  # the golden-set period judged (hce.collect.running.golden)
    # Prompts the caller renders and parses itself, by the prompt_id its conditions name.
    prompts: Mapping[str, CustomPrompt] = field(default_factory=dict, compare=False)
    # settings_hash per condition id, filled on first use (hce.collect.design.fingerprint); not part of the design.
    fingerprints: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def endpoint_of(self, cond: Condition) -> Endpoint:
        """The endpoint a condition's calls go to.

        Parameters
        ----------
        cond : Condition

        Returns
        -------
        Endpoint
        """
        return self.endpoints[cond.endpoint]

    def plan(self) -> list[Attempt]:
        """Every attempt of the design, item-major (item, condition, attempt number).

        Returns
        -------
        list of Attempt
        """
        # A golden run re-judges the same attempts in a new period: the period is part of their ids.
        key = self.experiment_id if self.golden_run is None else f"{self.experiment_id}\x1fgolden{self.golden_run}"
        return [
            Attempt(make_attempt_id(key, item.id, cond.id, n), item, cond, n)
            for item in self.items
            for cond in self.conditions
            for n in range(1, self.attempts + 1)
        ]


@keywords_checked
def load_design(source: str | os.PathLike | Mapping[str, Any]) -> Design:
    """Read a design from a YAML file or a mapping of the same shape.

    Parameters
    ----------
    source : path or mapping
        A design YAML file, or a mapping of the same shape.

    Returns
    -------
    Design

    Raises
    ------
    CollectError
        Naming the file and the field that is wrong, with the valid choices.

    Examples
    --------
    >>> d = load_design({"experiment_id": "demo", "attempts": 2,
    ...                  "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
    ...                  "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]})
    >>> d.conditions[0].id, len(d.plan())
    ('P1.2|gpt-4.1-mini|t0.1', 2)
    """
    if isinstance(source, Mapping):
        doc, name, base = dict(source), "design", Path.cwd()
    else:
        path = Path(source)
        if not path.exists():
            raise CollectError(f"design file {path} does not exist")
        input_file(path, "design file")  # a folder or a device: one line, not an endless read
        name, base = str(path), path.resolve().parent
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise CollectError(f"{name}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise CollectError(f"{name}: a design is a mapping with 'conditions' and 'items'")
    _no_secret(doc, name)
    spec = validate(DesignSpec, doc, name)
    try:
        rubric_path = base / spec.rubric
        rubric = load_rubric(rubric_path if rubric_path.is_file() else spec.rubric)
    except HceError as exc:
        raise CollectError(f"{name}: field 'rubric': {exc}") from None
    endpoints = _endpoints(spec, name)
    defaults = {**DEFAULTS, **spec.defaults.model_dump(exclude_unset=True)}
    conditions = tuple(_condition(c, defaults, i, name, base, endpoints, rubric) for i, c in enumerate(spec.conditions))
    ids = [c.id for c in conditions]
    if len(set(ids)) != len(ids):
        raise CollectError(f"{name}: condition ids must be distinct, got {ids}")
    items = tuple(_items(doc.get("items"), name, base))
    _check_items(items, conditions, rubric, name)
    rule = None
    if isinstance(spec.attempts, AttemptsSpec):
        try:
            rule = stop_rule_of(spec.attempts.model_dump(), rubric.criteria)
        except CollectError as exc:
            raise CollectError(f"{name}: {exc}") from None
    probes = load_probes(spec.probes, name)
    check_probe_items(probes, items, name)
    conditions = twin_conditions(conditions, probes)
    return Design(
        experiment_id=spec.experiment_id,
        items=items,
        conditions=conditions,
        attempts=rule.max if rule else spec.attempts,
        stop_rule=rule,
        rubric=rubric,
        endpoints=endpoints,
        concurrency=spec.run.concurrency,
        requests_per_minute=spec.run.requests_per_minute,
        tokens_per_minute=spec.run.tokens_per_minute,
        max_cost_usd=spec.run.max_cost_usd,
        probes=probes,
    )


def endpoint_from(name: str, spec: EndpointSpec) -> Endpoint:
    """An :class:`Endpoint` from its checked mapping, the provider inferred from the host unless stated."""
    kind = spec.kind or infer_kind(spec.base_url or os.environ.get("OPENAI_BASE_URL"))
    pricing = spec.pricing
    if pricing is not None and pricing != "none":
        pricing = Price(pricing.input, pricing.cached_input, pricing.output, as_of="the design", source="the endpoint's pricing:")
    return Endpoint(name=name, kind=kind, pricing=pricing, **spec.model_dump(exclude={"kind", "pricing"}))


def _endpoints(spec: DesignSpec, name: str) -> dict[str, Endpoint]:
    named = dict(spec.endpoints or {})
    if spec.endpoint is not None:
        if "default" in named:
            raise CollectError(f"{name}: 'endpoint' is the endpoint named 'default', and endpoints.default exists too; "
                               "keep one of them")  # fmt: skip
        named["default"] = spec.endpoint
    if not named:
        named["default"] = EndpointSpec()
    return {key: endpoint_from(key, value) for key, value in named.items()}


def _no_secret(doc: Any, name: str, where: str = "") -> None:
    if isinstance(doc, dict):
        for key, value in doc.items():
            if str(key).lower() in ("api_key", "apikey", "key", "secret", "token", "password"):
                raise CollectError(
                    f"{name}: field {where + str(key)!r}: a design never holds an API key; "
                    "set it in the environment (endpoint.api_key_env names the variable)"
                )
            _no_secret(value, name, f"{where}{key}.")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            _no_secret(value, name, f"{where}[{i}].")


def check_temperature(where: str, temperature: float | None, *models: str | None, logprobs: bool = False) -> None:
    """Refuse a temperature (or ``logprobs``) an OpenAI reasoning model would answer with HTTP 400 on every call."""
    reasoning = [m for m in models if m and REASONING_MODEL.match(str(m))]
    if reasoning and temperature is not None and float(temperature) != 1:
        raise CollectError(
            f"{where}: model {reasoning[0]!r} is an OpenAI reasoning model (o-series, gpt-5), which accepts only "
            f"the default temperature (1), not {float(temperature):g}; set temperature: null (not sent) for it"
        )
    if reasoning and logprobs:
        raise CollectError(
            f"{where}: model {reasoning[0]!r} is an OpenAI reasoning model (o-series, gpt-5), which answers "
            "logprobs with HTTP 400 ('logprobs' is not supported with this model); set logprobs: false for it "
            "(its confidence can come from repeated attempts: hce.stats.vote_confidence)"
        )


def _condition(
    spec: ConditionSpec, defaults: Mapping[str, Any], index: int, name: str, base: Path, endpoints: Mapping[str, Endpoint],
    rubric: Rubric,
) -> Condition:
    where = f"{name}: conditions[{index}]"
    settings = {**defaults, **spec.model_dump(exclude_unset=True)}
    prompt = settings.get("prompt")
    template = None
    if prompt not in REPLY_FORMAT:
        if not prompt or not (base / str(prompt)).is_file():
            raise CollectError(f"{where}: prompt={prompt!r} is not valid; choose one of {list(REPLY_FORMAT)} or a template "
                               f"file of your own (none at {base / str(prompt or '')})")  # fmt: skip
        try:
            template = load_template(base / str(prompt))
        except HceError as exc:
            raise CollectError(f"{where}: {exc}") from None
        prompt = template.id
    if not settings.get("model"):
        raise CollectError(f"{where}: no model (set it here or under defaults)")
    behavior = None
    if prompt == "BOOL":
        source = settings.get("behavior")
        if not source:
            raise CollectError(f"{where}: prompt BOOL needs behavior: (a packaged behaviour or a YAML path)")
        try:
            behavior = load_behavior(base / source if (base / str(source)).is_file() else source)
        except HceError as exc:
            raise CollectError(f"{where}: {exc}") from None
    temperature = settings.get("temperature")
    default_id = f"{prompt}|{settings['model']}" + (f"|t{temperature:g}" if temperature is not None else "")
    cond_id = settings.get("id") or default_id
    examples = _examples(template, settings.get("examples"), prompt, rubric, base, f"{where} ({cond_id})")
    check_temperature(f"{where} ({cond_id})", temperature, settings["model"], settings.get("price_model"),
                      logprobs=bool(settings.get("logprobs")))  # fmt: skip
    endpoint = settings.get("endpoint") or (next(iter(endpoints)) if len(endpoints) == 1 else None)
    if endpoint not in endpoints:
        said = f"endpoint {endpoint!r} is not defined;{did_you_mean(str(endpoint), endpoints)}" if endpoint else "no endpoint"
        raise CollectError(f"{where} ({cond_id}): {said} (choose one of {sorted(endpoints)}, here or under defaults)")
    kind = endpoints[endpoint].kind
    samples = int(settings.get("samples_per_request") or 1)
    response_format = settings.get("response_format")
    if response_format is not None and (template.reply if template else REPLY_FORMAT[prompt]) not in SCHEMA_FORMATS:
        raise CollectError(f"{where} ({cond_id}): response_format: {response_format} is built from the rubric, for a "
                           f"prompt that scores it ({', '.join(SCHEMA_FORMATS)} replies); prompt {prompt!r} does not: "
                           "remove response_format")  # fmt: skip
    problems = unsupported(
        kind, temperature=temperature, logprobs=bool(settings.get("logprobs")), seed=settings.get("seed"), n=samples,
        response_format=response_format,
    )
    if problems:
        raise CollectError(f"{where} ({cond_id}) goes to endpoint {endpoint!r} ({kind}): " + "; ".join(problems))
    return Condition(
        id=str(cond_id),
        prompt_id=prompt,
        model=str(settings["model"]),
        temperature=temperature,
        max_tokens=settings.get("max_tokens"),
        top_p=settings.get("top_p"),
        seed=settings.get("seed"),
        logprobs=bool(settings.get("logprobs", False)),
        top_logprobs=settings.get("top_logprobs"),
        behavior=behavior,
        price_model=settings.get("price_model"),
        endpoint=endpoint,
        samples_per_request=samples,
        prompt_cache_key=settings.get("prompt_cache_key"),
        template=template,
        examples=examples,
        response_format=response_format,
    )


def _examples(
    template: PromptTemplate | None, source: str | None, prompt: str, rubric: Rubric, base: Path, where: str
) -> tuple[Mapping[str, Any], ...] | None:
    """The condition's few-shot examples, checked with its template against the rubric before any call."""
    if prompt == "BOOL":
        return None
    used = template or packaged_template(prompt)
    places = "FewShotExamples" in {canonical(n) for n in used.placeholders}
    if source is not None and not places:
        raise CollectError(f"{where}: examples: {source} is given but prompt {prompt!r} never places them (its template "
                           "has no {{FewShotExamples}}); remove examples: or use a template that places them")  # fmt: skip
    try:
        examples = load_examples(base / source) if source is not None else None
        if examples is not None:
            check_examples(examples, rubric, str(base / source))
        elif places and template is None:  # the packaged P2.2 and its packaged examples
            try:
                check_examples(fewshot_examples(), rubric, "the packaged few-shot examples (hce/data/fewshot_v5.yaml)")
            except HceError as exc:
                raise CollectError(f"{exc}. They are scored on Rubric v5.0; for rubric {rubric.name!r} add examples: FILE "
                                   "(YAML or JSONL: text and a score per criterion) to this condition or to defaults") from None
            return None
        check_template(used, examples, rubric)
    except HceError as exc:
        raise CollectError(f"{where}: {exc}") from None
    return examples


def _folder_items(path: Path, name: str) -> list[Item]:
    """One item per text file of a folder (``.txt`` in any case: Windows tools write ``.TXT``); others named, not read."""
    entries = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    files = [p for p in entries if p.suffix.lower() == ".txt"]
    if not files:
        raise CollectError(f"{name}: field 'items': folder {path} has no .txt files")
    others = [p.name for p in entries if p.suffix.lower() != ".txt"]
    if others:
        warn(f"{name}: field 'items': {len(others)} file(s) in {path} are not .txt transcripts and are not judged "
             f"(e.g. {others[0]!r})", HceWarning)
    return [Item(f.stem, read_text_file(f)) for f in files]


def _items(spec: Any, name: str, base: Path) -> list[Item]:
    if isinstance(spec, str):
        path = base / spec
        if path.is_dir():
            return _folder_items(path, name)
        if path.suffix.lower() == ".jsonl" and path.is_file():
            lines = read_text_file(path).splitlines()
            spec = [json.loads(line) for line in lines if line.strip()]
        elif path.suffix.lower() == ".csv" and path.is_file():
            import pandas as pd  # here only: a design of inline or .jsonl items never loads it (issue 44)

            spec = pd.read_csv(io.StringIO(read_text_file(path)), dtype=str, keep_default_na=False).to_dict("records")
        else:
            raise CollectError(f"{name}: field 'items': {path} is neither a folder of .txt files nor a .jsonl/.csv file")
    if not isinstance(spec, list) or not spec:
        raise CollectError(f"{name}: field 'items' must be a non-empty list, a folder or a .jsonl/.csv file")
    items = []
    for i, entry in enumerate(spec):
        where = f"{name}: items[{i}]"
        if not isinstance(entry, dict) or entry.get("id") in (None, ""):
            raise CollectError(f"{where} must be a mapping with an 'id'")
        entry = dict(entry)
        _check_item_keys(entry, where)
        text = entry.pop("text", None)
        if entry.get("file"):
            file = base / entry.pop("file")
            if not file.is_file():
                raise CollectError(f"{where}: file {file} does not exist")
            text = read_text_file(file)
        entry.pop("file", None)
        item_id = str(entry.pop("id"))
        case = entry.pop("case", None)
        metadata = dict(entry.pop("metadata", None) or {})
        metadata.update(entry)  # flat extra columns of a CSV/JSONL row
        items.append(Item(item_id, text, case, metadata))
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise CollectError(f"{name}: item ids must be distinct; repeated: {sorted({i for i in ids if ids.count(i) > 1})}")
    return items


_ITEM_KEYS = ("id", "text", "file", "case", "metadata")


def _check_item_keys(entry: Mapping[str, Any], where: str) -> None:
    """Refuse an item key that is surely a typo: flat extra keys are metadata columns, but one
    that nearly spells an item key (``txt``, ``metdata``) or holds a mapping or list is not."""
    for key, value in entry.items():
        if key in _ITEM_KEYS:
            continue
        close = difflib.get_close_matches(str(key), _ITEM_KEYS, n=1, cutoff=0.75)
        if close or isinstance(value, (Mapping, list)):
            hint = f" did you mean {close[0]!r}?" if close else " extra keys are metadata columns and hold one value each;"
            raise SchemaError(f"{where}.{key}: unknown key;{hint} (an item has {', '.join(_ITEM_KEYS)})")


def _check_items(items: tuple[Item, ...], conditions: tuple[Condition, ...], rubric: Rubric, name: str) -> None:
    prompts = {c.prompt_id for c in conditions}
    reserved = set(COLUMNS) | set(rubric.criteria) | {"behavior_id", "system_fingerprint", "retry_errors"}
    for item in items:
        clash = sorted(set(item.metadata) & reserved)
        if clash:
            raise CollectError(f"{name}: item {item.id!r}: metadata {clash} would overwrite log columns; rename them")
        if prompts - {"BOOL", "SYNTH"} and not (isinstance(item.text, str) and item.text.strip()):
            raise CollectError(f"{name}: item {item.id!r} has no text (give text: or file:)")
        if "BOOL" in prompts and not isinstance(item.case, Mapping):
            raise CollectError(f"{name}: item {item.id!r} has no case: (ground_truth, narrative, candidate) for BOOL")
        if "SYNTH" in prompts and item.metadata.get("target_total") is None:
            raise CollectError(f"{name}: item {item.id!r} has no metadata.target_total for SYNTH")
