"""What each provider's OpenAI-compatible endpoint accepts, so a design is checked before any call.

A design's endpoint has a ``kind`` (stated, or inferred from its host by :func:`infer_kind`).
The rules below come from the vendors' own compatibility pages, as stored in the search
corpus on 2026-11-24:

- **anthropic** (``https://api.anthropic.com/v1/``), Anthropic's "OpenAI SDK
  compatibility" page (docs.anthropic.com/en/api/openai-sdk, "Request fields"):
  ``temperature`` "between 0 and 1 (inclusive); values greater than 1 are capped at 1";
  ``n`` "must be exactly 1"; ``logprobs``, ``top_logprobs``, ``seed`` and ``response_format`` "ignored". A
  condition asking for any of these would silently get something else, so it is refused
  (``samples_per_request`` above 1 is a request with ``n`` above 1; ``response_format:
  json_schema`` would be answered as free text).
  The layer has no OpenAI Batch API (Anthropic's batches are its own Messages API).
- **gemini** (``https://generativelanguage.googleapis.com/v1beta/openai/``), Google's
  "OpenAI compatibility" page (ai.google.dev/gemini-api/docs/openai) and its
  ``ChatCompletionsRequest`` reference (ai.google.dev/api/compatibility): temperature
  within OpenAI's 0-2; whether ``logprobs`` and ``seed`` are honoured could not be
  confirmed from those pages as stored here, so hce does not refuse them (a reply without
  logprobs leaves ``logprobs`` empty in the log). hce's batch mode is not offered for it.
- **azure** (``https://RESOURCE.openai.azure.com/openai/v1/``; the openai-python and
  openai-node Azure notes: the v1 API takes the standard client, ``model`` is the
  deployment name): OpenAI's own settings; batch needs a Global Batch deployment.
- **openai** (``https://api.openai.com/v1``): the reference the others are measured
  against; the reasoning-model temperature rule is in :mod:`hce.collect.design.design`.
- **local** (loopback) and **other** hosts: nothing is assumed; the server's answer
  decides (a refused setting stops the run, :mod:`hce.collect.running.runner`). A JSON
  schema (``response_format``) is accepted by vLLM (its structured outputs), llama.cpp's
  ``llama-server`` (tools/server/README.md: ``response_format`` with ``json_schema``, turned
  into a grammar) and Ollama 0.5+ (its OpenAI compatibility page lists ``response_format``).

Several samples per request (``n``) exist only in Chat Completions, the API hce calls;
OpenAI's Responses API has no ``n``. No OpenAI chat model is known here to refuse it.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Literal


Kind = Literal["openai", "azure", "anthropic", "gemini", "local", "other"]


@dataclass(frozen=True)
class Provider:
    """What an OpenAI-compatible endpoint of one kind honours."""

    temperature_max: float = 2.0
    logprobs: bool = True  # False: the field is ignored, so asking for it is refused
    seed: bool = True
    batch: bool = True
    n: bool = True  # False: a request may ask for one choice only (n = 1)
    json_schema: bool = True  # False: response_format is ignored, so asking for a JSON schema is refused
    source: str = ""


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(source="platform.openai.com/docs/api-reference/chat"),
    "azure": Provider(source="learn.microsoft.com/azure/ai-foundry/openai (v1 API)"),
    "anthropic": Provider(
        temperature_max=1.0, logprobs=False, seed=False, batch=False, n=False, json_schema=False,
        source="docs.anthropic.com/en/api/openai-sdk",
    ),
    "gemini": Provider(batch=False, source="ai.google.dev/gemini-api/docs/openai"),
    "local": Provider(source="the server's own documentation"),
    "other": Provider(source="the server's own documentation"),
}


def infer_kind(base_url: str | None) -> str:
    """The provider a base URL belongs to, from its host.

    Examples
    --------
    >>> infer_kind("https://api.anthropic.com/v1/"), infer_kind("http://127.0.0.1:8000/v1"), infer_kind(None)
    ('anthropic', 'local', 'openai')
    """
    host = (urllib.parse.urlsplit(base_url).hostname or "") if base_url else "api.openai.com"
    if host == "api.openai.com":
        return "openai"
    if host.endswith((".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")):
        return "azure"
    if host == "api.anthropic.com":
        return "anthropic"
    if host == "generativelanguage.googleapis.com":
        return "gemini"
    if host in ("localhost", "::1") or host.startswith("127."):
        return "local"
    return "other"


def unsupported(
    kind: str, *, temperature: float | None, logprobs: bool, seed: int | None, n: int = 1, response_format: str | None = None
) -> list[str]:
    """Why a condition's settings do not fit an endpoint of ``kind`` (empty when they do).

    ``n`` is the choices a request asks for (1 by default); ``response_format`` the
    condition's (None by default: the reply as text).

    Examples
    --------
    >>> unsupported("anthropic", temperature=1.5, logprobs=True, seed=None)  # doctest: +NORMALIZE_WHITESPACE
    ['temperature 1.5 is above 1, the most anthropic accepts (docs.anthropic.com/en/api/openai-sdk)',
     'logprobs are ignored by anthropic (docs.anthropic.com/en/api/openai-sdk): set logprobs: false']
    """
    rules = PROVIDERS[kind]
    problems = []
    if temperature is not None and temperature > rules.temperature_max:
        problems.append(
            f"temperature {temperature:g} is above {rules.temperature_max:g}, the most {kind} accepts ({rules.source})"
        )
    if logprobs and not rules.logprobs:
        problems.append(f"logprobs are ignored by {kind} ({rules.source}): set logprobs: false")
    if seed is not None and not rules.seed:
        problems.append(f"seed is ignored by {kind} ({rules.source}): remove it, or runs are not seeded as logged")
    if n > 1 and not rules.n:
        problems.append(
            f"samples_per_request {n} asks for n={n} choices a request, and {kind} takes n=1 only ({rules.source}): "
            "set samples_per_request: 1"
        )
    if response_format is not None and not rules.json_schema:
        problems.append(f"response_format is ignored by {kind} ({rules.source}): the reply would come as free text, not "
                        "in the JSON schema; remove response_format")  # fmt: skip
    return problems
