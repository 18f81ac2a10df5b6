"""A simulated OpenAI-compatible judge with known truth, served over HTTP on loopback.

No API key exists in development or CI, and a study should be rehearsed before it costs
money. :class:`SimServer` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on
127.0.0.1 (and the Files and Batch endpoints, ``hce.collect.sim_batch``), so the real
``openai`` client, retries, parsing and logging run end to end.
:class:`SimJudge` is the generative model behind it; because its truth is known, the
statistics computed from its logs can be checked against that truth.

The generative model
--------------------
*What is asked.* The reply format is read from the prompt text, as a model would: a JSON
verdict (the prompt names ``pass: boolean``), a synthetic transcript (``Outline:`` and a
``Target Total Score``), reasoning then scores (``step-by-step``), a score block (score
lines such as ``Clarity of Language: [score_1_4]``, whatever the rubric) or a bare total
(``Total Score (5-20)``). The item is the text after the last ``Transcript:`` heading (the
``INPUTS`` section for verdicts).

*The truth.* Each item has latent category levels ``L_k``: from ``truth=`` (keyed by the
item text) when given; else, for a transcript made by this simulator, from the patient
lines it planted (one per category, at its level, taken from the Rubric v5.0 examples);
else from a hash of the text (:func:`latent_scores`), uniform over the levels. A verdict
item has a latent pass probability ``q`` from the hash (truth: ``q >= 0.5``) unless given.

*The judge.* Condition ``c`` (the model name; see :class:`Profile`) has a bias ``b_c`` and
a noise ``s_c``. The score for category ``k`` is drawn from
``P(x) ∝ exp(-(x - L_k - b_c)^2 / (2 s^2))`` over the levels, with ``s = s_c`` for a
score block and ``0.85 s_c`` for step-by-step prompts. A bare holistic total (P1.1) is
one draw over the total's range with mean ``(sum L_k + middle) / 2 + n b_c`` (shrunk
halfway to the scale's middle, as an unguided judge would) and ``s = 2 sqrt(n) s_c``.
That is the judge's distribution at temperature 1 (:func:`score_distribution`); at
temperature ``T`` it samples from ``P^(1/T)`` renormalised (greedy at ``T = 0``,
:func:`tempered`), which is what temperature does to a softmax. A verdict passes with probability
``sigmoid(8 (q - 0.5 + b_c) / s_c)`` (``q`` is 0.85 or 0.15 when ``truth=`` gives
``pass``), tempered the same way. Draws come from a hash of the server seed, the request
and the ``X-Client-Request-Id`` header the runner sends (the ``attempt_id``), so each
attempt gets the same reply at any concurrency and in any order of arrival (a seeded study
is reproducible end to end); without that header, identical requests are told apart by how
many came before (the multiset of replies is then the same, not who gets which). A request
carrying ``seed`` gets the same reply every time.

*Calibration truth.* Every drawn token (a score, a verdict) reports in ``logprobs`` the
distribution :func:`reported` gives: ``r^f`` renormalised, where ``f`` is the profile's
``overconfidence`` (default 1) and ``r`` depends on the model's ``Family``:

- ``logprobs_are="raw"`` (default, as OpenAI): ``r = P``, the distribution at temperature 1,
  whatever the request's temperature;
- ``"sampled"``: ``r = P^(1/T)`` renormalised, the very distribution the token was drawn from
  (one-hot at ``T = 0``);
- ``"raw_at_zero"``: sampled at ``T > 0``, raw at ``T = 0``.

With ``f = 1`` the sampling distribution recovered from the logprobs (as reported when
sampled, ``r^(1/T)`` renormalised when raw) is the true probability that an independent
repeat of the same request gives the same token: it is calibrated, by construction, for
agreement with a repeat (:func:`hce.stats.calibration.agrees_with_repeat`), not for agreement
with the item's mode nor with the latent level. With ``f != 1`` that recovered probability is
``P^(f/T)`` renormalised while repeats follow ``P^(1/T)``: its calibration gap is known exactly.

Why ``raw`` is the default: returned logprobs that change with the sampling parameters are
"incompatible with OpenAI API" (vllm-project/vllm#9453, whose commenters map vLLM's values
back to "OpenAI probability (top_p=1, temperature=1)"); Ollama's logprobs are raw too
(ollama/ollama#16196 "Logprobs are not temperature-scaled"); OpenRouter's providers show
raw and raw-except-at-0 behaviour (standardcompletions/rfcs#11 "Logprobs affected by
temperature", which names the three behaviours). OpenAI's own reference does not say;
the evidence is third-party observation, so the default is a choice, made explicit here.

*Provider behaviours* (``FAMILIES``, per model-name pattern; ``families=`` adds or
overrides). OpenAI's reasoning models (o1, o3, o3-mini, o4-mini, gpt-5, gpt-5-mini,
gpt-5-nano and their snapshots; the pattern of :data:`hce.collect.providers.REASONING_MODEL`)
answer a temperature other than 1 with HTTP 400 ``unsupported_value`` "Unsupported value:
'temperature' does not support 0.1 with this model. Only the default (1) value is
supported." (openai/openai-python#2104) and ``logprobs`` with 400 ``unsupported_parameter``
"Unsupported parameter: 'logprobs' is not supported with this model." (the shape of
BerriAI/litellm#38842; UKGovernmentBEIS/inspect_ai#2739: "logprobs are not supported for
reasoning models"); their usage counts hidden ``completion_tokens_details.reasoning_tokens``
(about 192 a reply here, uniform +-50%), included in ``completion_tokens``. A family with
``n=False`` or ``seed=False`` answers those parameters with the same ``unsupported_parameter``
400 (Anthropic's layer demands ``n`` = 1 and ignores ``seed``: :mod:`hce.collect.providers`,
where hce refuses such designs at load). A :class:`Drift` per model changes the returned
``model`` and ``system_fingerprint`` after a set number of completions.

*Reasoning styles (Experiment 4's truth).* Each category step of a step-by-step reply
carries one code per dimension of the PRD's reasoning coding scheme, drawn from the
model's style: per model, a distribution over each dimension's codes (``gpt-4o`` quotes the
patient directly in 55% of segments, ``o4-mini`` paraphrases in 50%, ``o3`` ties 80% to the
rubric's descriptor and reasons in depth in 60%, ``gpt-4.1-mini`` gives the general gist in
50% and generic statements in 60%; the tables and phrases are
:data:`hce.collect.sim_reasoning.REASONING_STYLES`). A prompt asking to code reasoning
segments (hce's coding prompt, :func:`hce.study.reasoning.coding_messages`) is answered
with the codes each shown segment carries, read back exactly
(:func:`hce.collect.sim_reasoning.coding_reply`).

*The call.* ``system_fingerprint`` is ``fp_hce_sim_<seed>`` (the runner logs it, so a
report can tell a simulated run). ``usage`` counts about 4 characters a prompt token;
``cached_tokens`` is the longest prefix an earlier request of the model and
``prompt_cache_key`` computed, from 1,024 tokens in 128-token steps, as OpenAI caches
(:mod:`hce.collect.sim_cache`). ``n`` asks for several choices, each drawn independently
from the same request: the prompt is billed once, ``completion_tokens`` adds up the
choices. ``model`` comes back as the dated snapshot for an undated alias.

*Faults*, on request (:class:`Faults`): 429 with ``Retry-After``, 500, slow replies and
malformed reply texts, each with its own probability; every reply waits ``latency``. A
*refusal* answers every completion (or every one for one model) with a 400 and a given
message, as the API refuses a setting a model does not take. A *redirect*
(``Faults(redirect="http://127.0.0.1:PORT")``, ``hce sim-server --redirect``) answers every
request with ``307 Temporary Redirect`` to the same path on another loopback server: a
test that an API key does not follow a redirect to another host or port.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import random
import re
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hce.collect.pricing import ALIASES
from hce.collect import sim_reasoning
from hce.collect.sim_batch import BatchSettings, SimBatches
from hce.collect.sim_cache import PrefixCache
from hce.collect.sim_draws import Draw
from hce.collect.sim_families import FAMILIES, Drift, Family, refusal
from hce.collect.sim_reply import SimReply, error_reply, unit
from hce.errors import HceError
from hce.rubric import _snake, load_rubric

LOOPBACK = "127.0.0.1"
PRD_MODELS = ("gpt-4o-2024-08-06", "o4-mini-2025-04-16", "o3-2025-04-16", "gpt-4.1-mini-2025-04-14")
SIM_FINGERPRINT = "fp_hce_sim_"  # logged with every attempt: reports can tell simulated runs apart
FORMAT_NOISE = {"total": 2.0, "scores": 1.0, "cot": 0.85}
# A step-by-step reply (P2.3) quotes 14 words of the patient's first line: about 450 of this simulator's
# tokens when that line is that long (its usage counts each word, space and punctuation mark: ~2 a word, where
# a real tokenizer counts ~1.3), near the 450 hce's estimates assume (hce.collect.runner.TYPICAL_OUTPUT_TOKENS);
# a score block (P2.1) is 51.
COT_QUOTE_WORDS = 14
MAX_CHOICES = 128  # the most choices (``n``) one chat completion may ask for (OpenAI's API reference)
_TINY = 1e-300


@dataclass(frozen=True)
class Profile:
    """A simulated condition: how far off and how noisy the simulated judge is.

    With the default noise 1.2, at the PRD's temperature 0.1 the total of a score block
    varies from attempt to attempt with an SD of about 0.5, a bare holistic total (P1.1)
    with about 1.6.

    Attributes
    ----------
    bias : float
        Score points added to every category.
    noise : float
        The SD-like spread of the judge's distribution at temperature 1, in score points.
    request_sd : float
        SD of a shift drawn once per request and added to ``bias`` for all its choices
        (default 0: none). It stands for what the choices of one request share on the
        server (its batch, its numerics), so the ``n`` choices of one request agree more
        than separate requests do: the case :func:`hce.stats.request_variance` tests for.
    overconfidence : float
        ``f``, default 1 (calibrated): the reported logprobs are of ``r^f`` renormalised,
        where ``r`` is what the model family's logprobs report (``Family``); ``f > 1``
        is over-confident.

    Examples
    --------
    >>> from hce.collect import Profile
    >>> Profile(bias=-0.5, noise=0.8).noise
    0.8
    """

    bias: float = 0.0
    noise: float = 1.2
    request_sd: float = 0.0
    overconfidence: float = 1.0  # f: logprobs report r^f renormalised (module notes, "Calibration truth")

    def __post_init__(self) -> None:
        if not (self.overconfidence > 0 and math.isfinite(self.overconfidence)):
            raise HceError(f"overconfidence must be a positive number, got {self.overconfidence!r}")


@dataclass(frozen=True)
class Faults:
    """Probabilities of injected faults per request, and their settings.

    Attributes
    ----------
    rate_429 : float
        Share of requests answered 429, with ``Retry-After: retry_after`` seconds.
    rate_500 : float
        Share answered 500.
    rate_slow : float
        Share whose reply waits ``slow_s`` more seconds.
    rate_malformed : float
        Share whose reply text does not follow the asked format: cut short, words for
        numbers or a refusal; one in four breaks the JSON of the HTTP body itself.
    retry_after, slow_s : float
        Seconds of the 429's ``Retry-After`` and of a slow reply's wait.
    reject : str or None
        A message every completion is refused with, HTTP 400 ``invalid_request_error``,
        before any other fault.
    reject_model : str or None
        Only completions for this model are refused.
    redirect : str or None
        A loopback origin (``http://127.0.0.1:PORT``); every request, before anything else
        is looked at but the server's own key check, is answered ``307 Temporary Redirect``
        with ``Location`` that origin plus the request's path and query (a 307 keeps the
        method and the body).

    Examples
    --------
    >>> Faults(redirect="http://127.0.0.1:9000").redirect
    'http://127.0.0.1:9000'
    """

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_malformed: float = 0.0
    retry_after: float = 1.0
    slow_s: float = 5.0
    reject: str | None = None
    reject_model: str | None = None
    redirect: str | None = None

    def __post_init__(self) -> None:
        rates = (self.rate_429, self.rate_500, self.rate_slow, self.rate_malformed)
        if any(r < 0 for r in rates) or sum(rates) > 1:
            raise HceError(f"fault rates must be >= 0 and sum to at most 1, got {rates}")
        if self.redirect is not None:
            target = urllib.parse.urlsplit(self.redirect)
            # Loopback only, as the server itself: a rehearsal must not send a request off the machine.
            if target.scheme not in ("http", "https") or target.hostname not in (LOOPBACK, "localhost", "::1") \
                    or target.path not in ("", "/") or target.query or target.fragment:
                raise HceError(f"redirect must be a loopback origin such as http://127.0.0.1:8001, got {self.redirect!r}")


# --- truth ---------------------------------------------------------------------------------


def text_key(text: str) -> str:
    """The key an item's truth is stored under: a hash of its whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def latent_scores(text: str, categories: list[str], low: int = 1, high: int = 4) -> dict[str, int]:
    """The hash-derived latent level of each category for an item text (no truth given).

    Examples
    --------
    >>> latent_scores("Doctor: Hello.\\nPatient: Hi.", ["clarity", "engagement"])
    {'clarity': 3, 'engagement': 2}
    """
    key = text_key(text)
    return {c: low + int(unit(key, c) * (high - low + 1)) for c in categories}


def split_total(total: int, categories: list[str], low: int, high: int, *, key: object = 0) -> dict[str, int]:
    """Deterministically split a target total into category levels (each within low..high)."""
    n = len(categories)
    if not n * low <= total <= n * high:
        raise HceError(f"target total {total} is outside {n * low}-{n * high}")
    levels = [low] * n
    order = sorted(range(n), key=lambda i: unit(key, total, i))
    remaining = total - n * low
    while remaining:
        for i in order:
            if remaining and levels[i] < high:
                levels[i] += 1
                remaining -= 1
    return dict(zip(categories, levels))


@functools.cache
def _bank() -> dict[str, dict[int, str]]:
    """A patient line per Rubric v5.0 category and level: the example's longest quote."""
    rubric = load_rubric("v5")
    bank: dict[str, dict[int, str]] = {}
    for cat in rubric.categories:
        bank[cat.name] = {}
        for level in cat.levels:
            quotes = re.findall(r'"([^"]+)"', level.example or "")
            bank[cat.name][level.score] = max(quotes, key=len).strip().rstrip(",") if quotes else ""
    # Two examples quote only a word ("good", "Yes"); a distinctive line stands in for them.
    bank["Lexical Diversity"][1] = "Good. It's good. I feel good, things are good."
    bank["Engagement with Health Information"][1] = "Yes. No. I don't know."
    return bank




_QUESTIONS = {
    "Clarity of Language": "Can you tell me about what you usually eat?",
    "Lexical Diversity": "How have you been feeling lately?",
    "Conciseness and Completeness": "What brings you in today?",
    "Engagement with Health Information": "Do you get any exercise?",
    "Health Literacy Indicator": "What do you know about cholesterol?",
}


# --- reading the prompt ---------------------------------------------------------------------

_SCORE_LINE = re.compile(r"^[ \t]*([^\n:]+?):[ \t]*\[score_(\d+)_(\d+)\]", re.MULTILINE)
_TOTAL_RANGE = re.compile(r"\[sum_of_scores_(\d+)_(\d+)\]|Total Score \((\d+)-(\d+)\)")
_ITEM_START = re.compile(r"(?:^|\n)[ \t]*(?:New )?Transcript:[ \t]*\n")
_ITEM_END = re.compile(r"\n[ \t]*\n[ \t]*(?:Scores:|Step-by-step Analysis|Total Score \(|Final Scores Output:)")
_TARGET = re.compile(r"Target Total Score for this transcript:\s*(\d+)")


def detect_format(prompt: str) -> str:
    """The reply format a prompt asks for: coding, verdict, synthetic, cot, scores, total or unknown."""
    if sim_reasoning.is_coding_prompt(prompt):  # it shows a transcript, and may quote a verdict prompt
        return "coding"
    if ("pass" in prompt and re.search(r"\bpass\b\s*:\s*boolean", prompt)) or '"pass"' in prompt:
        return "verdict"
    if "Outline:" in prompt and _TARGET.search(prompt):
        return "synthetic"
    has_scores = "[score_" in prompt and _SCORE_LINE.search(prompt) is not None
    if has_scores and "step-by-step" in prompt.lower():
        return "cot"
    if has_scores:
        return "scores"
    if re.search(r"Total Score \(\d+-\d+\)|single holistic total score", prompt):
        return "total"
    return "unknown"


def _item_text(prompt: str, fmt: str) -> tuple[str, str]:
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


def _categories(prompt: str) -> list[tuple[str, int, int]]:
    seen: dict[str, tuple[str, int, int]] = {}
    for m in _SCORE_LINE.finditer(prompt):
        name = m.group(1).strip().strip("*").strip()
        seen.setdefault(name, (name, int(m.group(2)), int(m.group(3))))
    return list(seen.values())


# --- the judge ----------------------------------------------------------------------------


_MARK = re.compile("\x02([^\x03]*)\x03")
_WORDS = re.compile(r"\d+|[A-Za-z]+|\s+|[^\sA-Za-z\d]")  # the simulator's tokens


def _mark(token: object) -> str:
    """Wrap a drawn token so its logprobs land on this occurrence (the reply may repeat it)."""
    return f"\x02{token}\x03"


def _tokens(text: str) -> tuple[list[str], list[int | None]]:
    """Tokens of a marked reply, and for each the index of its draw (None: not drawn)."""
    tokens: list[str] = []
    draws: list[int | None] = []
    at = 0
    for n, m in enumerate(_MARK.finditer(text)):
        plain = _WORDS.findall(text, at, m.start())
        tokens += [*plain, m.group(1)]
        draws += [None] * len(plain) + [n]
        at = m.end()
    plain = _WORDS.findall(text, at)
    return tokens + plain, draws + [None] * len(plain)


def _count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


class SimJudge:
    """The simulated judge: a request body in, a ``SimReply`` out (see the module notes).

    Parameters
    ----------
    seed : int
        Seeds every draw and fault.
    profiles : mapping of model name -> Profile, optional
        Per-condition bias and noise; other models get ``default``.
    default : Profile
    faults : Faults
    latency : float
        Seconds every chat completion waits before answering.
    truth : mapping of item text -> mapping, optional
        Known truth per item: category levels by category name or snake_case id, or
        ``{"total": t}`` (split across categories), or ``{"pass": bool}`` for verdicts.
    batch : BatchSettings, optional
        How the simulated Batch API behaves (``hce.collect.sim_batch``): polls before
        completion, failures inside a batch, file limits.
    models : list of str, optional
        The only models served: any other gets OpenAI's 404 ``model_not_found`` (to
        rehearse a misspelt model); ``GET /models`` lists just these. Default: any model.
    families : mapping of model-name pattern -> Family, optional
        Provider behaviour per model family (``re.fullmatch`` on the requested name), looked
        at before ``FAMILIES``: e.g. ``{".*": Family(logprobs_are="sampled")}`` makes
        every model's logprobs those of its sampling distribution.
    drift : mapping of model name -> Drift, optional
        Version strings that change after some completions of a model (to rehearse drift).

    Examples
    --------
    >>> judge = SimJudge(seed=1)
    >>> body = {"model": "gpt-4o", "temperature": 0,
    ...         "messages": [{"role": "user", "content": "Assign a single holistic total score. "
    ...                       "Transcript:\\nPatient: I walk sometimes.\\n\\nTotal Score (5-20):"}]}
    >>> reply = judge.respond("POST", "/v1/chat/completions", body)
    >>> reply.status, reply.body["model"], reply.body["choices"][0]["message"]["content"]
    (200, 'gpt-4o-2024-08-06', '12')
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        profiles: Mapping[str, Profile] | None = None,
        default: Profile = Profile(),
        faults: Faults = Faults(),
        latency: float = 0.0,
        truth: Mapping[str, Mapping[str, Any]] | None = None,
        batch: BatchSettings | None = None,
        models: Sequence[str] | None = None,
        families: Mapping[str, Family] | None = None,
        drift: Mapping[str, Drift] | None = None,
    ):
        self.seed = seed
        self.profiles = dict(profiles or {})
        self.default = default
        self.faults = faults
        self.latency = float(latency)
        self.models = tuple(models) if models else None
        self.truth = {text_key(text): dict(value) for text, value in (truth or {}).items()}
        own = dict(families or {})
        self.families = {**own, **{k: v for k, v in FAMILIES.items() if k not in own}}  # the judge's own first
        self.drift = dict(drift or {})
        self._served: Counter[str] = Counter()  # completions per model, for drift
        self.stats: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self.prefix_cache = PrefixCache()
        self._lock = threading.Lock()
        self.batches = SimBatches(self._chat, seed=seed, settings=batch)

    def respond(self, method: str, path: str, body: Any, *, request_id: str | None = None) -> SimReply:
        """The reply to one HTTP request of the OpenAI protocol, faults included.

        With a ``request_id`` every draw of a chat completion is a function of the seed, the
        body and that id (and a retry's number for the faults), so the same attempts get the
        same replies whatever order concurrent requests arrive in; without one, identical
        bodies are told apart by their order of arrival.

        Parameters
        ----------
        method, path : str
            The request's method and path (``POST /v1/chat/completions``, ...).
        body : object
            The request's parsed JSON body.
        request_id : str, optional
            The client's ``X-Client-Request-Id`` header (hce's runner sends the attempt id).

        Returns
        -------
        SimReply
            Status, JSON body and headers.
        """
        if self.faults.redirect is not None:
            self._count("307")
            location = self.faults.redirect.rstrip("/") + path
            return SimReply(307, {"redirect": location}, headers={"Location": location})
        reply = self.batches.respond(method, path, body)
        if reply is not None:
            return reply
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path in ("/v1/models", "/models"):
            names = sorted(self.models or {*PRD_MODELS, "sim-judge", *self.profiles})
            return SimReply(200, {"object": "list", "data": [_model(n) for n in names]})
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            return self._chat(body, request_id)
        return error_reply(404, f"no route {method} {path} on the simulated judge", "invalid_request_error")

    def _chat(self, body: Any, request_id: str | None = None) -> SimReply:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"] or not body.get("model"):
            return error_reply(400, "the body must be a JSON object with 'model' and non-empty 'messages'", "invalid_request_error")
        canonical = json.dumps(body, sort_keys=True)
        with self._lock:
            # With a request id, the count is of that attempt's tries (its retries); else of identical bodies.
            seen = canonical if request_id is None else f"{canonical}\x00{request_id}"
            occurrence = self._seen[seen]
            self._seen[seen] += 1
            self.stats["requests"] += 1
        if self.models is not None and body["model"] not in self.models:
            self._count("404")
            return error_reply(404, f"The model `{body['model']}` does not exist or you do not have access to it.",
                          "invalid_request_error", "model_not_found")  # fmt: skip
        n = body.get("n", 1)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CHOICES:
            self._count("400")
            return error_reply(400, f"Invalid value for 'n': expected an integer from 1 to {MAX_CHOICES}, got {n!r}.",
                          "invalid_request_error")  # fmt: skip
        f = self.faults
        if f.reject is not None and f.reject_model in (None, body["model"]):
            self._count("400")
            return error_reply(400, f.reject, "invalid_request_error")
        family = self.family(str(body["model"]))
        refused = refusal(family, body)
        if refused is not None:
            self._count("400")
            return refused
        attempt = (canonical,) if request_id is None else (canonical, request_id)
        fault = unit(self.seed, "fault", *attempt, occurrence)
        if fault < f.rate_429:
            self._count("429")
            reply = error_reply(429, "Rate limit reached (simulated)", "requests", "rate_limit_exceeded")
            reply.headers["Retry-After"] = f"{f.retry_after:g}"
            return reply
        fault -= f.rate_429
        if fault < f.rate_500:
            self._count("500")
            return error_reply(500, "The server had an error while processing your request (simulated)", "server_error")
        fault -= f.rate_500
        delay = self.latency
        if fault < f.rate_slow:
            self._count("slow")
            delay += f.slow_s
        fault -= f.rate_slow
        malformed = fault < f.rate_malformed
        if malformed:
            self._count("malformed")
        # A sent seed makes identical bodies answer alike; a request id keys the attempt, not its arrival order.
        draw_key = ((self.seed, canonical) if body.get("seed") is not None else (self.seed, canonical, request_id)
                    if request_id is not None else (self.seed, canonical, occurrence))  # fmt: skip
        rng = random.Random(int(unit(*draw_key) * 2**53))
        temperature = float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0)
        prompt = "\n\n".join(str(m.get("content") or "") for m in body["messages"] if isinstance(m, dict))
        model = str(body["model"])
        fmt = detect_format(prompt)
        _, item = _item_text(prompt, fmt)
        profile = self.profiles.get(model, self.default)
        shift = rng.gauss(0.0, profile.request_sd) if profile.request_sd > 0 else 0.0  # shared by the choices
        choices = []
        for index in range(n):  # each choice its own draws from the request's stream (n = 1: as before n existed)
            bad = malformed if index == 0 else unit(self.seed, "malformed", *attempt, occurrence, index) < f.rate_malformed
            draw = Draw(rng, temperature, family.logprobs_are, profile.overconfidence)
            marked, finish = self._reply(fmt, prompt, item, model, draw, bad, rng, shift=shift)
            tokens, draws = _tokens(marked)
            cap = body.get("max_completion_tokens") or body.get("max_tokens")
            if cap is not None and len(tokens) > int(cap):
                tokens, draws, finish = tokens[: int(cap)], draws[: int(cap)], "length"
            choices.append((tokens, finish, draws, draw.dists))
        self._count("ok")
        if malformed and rng.random() < 0.25:  # a quarter of malformed replies break the HTTP body itself
            return SimReply(200, {}, delay=delay, raw=b'{"id": "chatcmpl-broken", "choices": [{"message": ')
        top = int(body.get("top_logprobs") or 0)
        choices = [(t, fin, _logprobs(t, d, dists, top) if body.get("logprobs") else None) for t, fin, d, dists in choices]
        completion = self._completion(model, prompt, body.get("prompt_cache_key"), choices)
        self._as_served(completion, model, family, unit(self.seed, "reasoning", *attempt, occurrence))
        return SimReply(200, completion, delay=delay)

    def family(self, model: str) -> Family:
        """The ``Family`` whose pattern the model name matches first.

        Parameters
        ----------
        model : str

        Returns
        -------
        Family
        """
        return next(fam for pattern, fam in self.families.items() if re.fullmatch(pattern, model))

    def _as_served(self, completion: dict[str, Any], model: str, family: Family, u: float) -> None:
        """Hidden reasoning tokens in usage, and the drifted version strings once due."""
        if family.reasoning_tokens:
            hidden = round(family.reasoning_tokens * (0.5 + u))  # about reasoning_tokens a reply, uniform +-50%
            usage = completion["usage"]
            usage["completion_tokens"] += hidden
            usage["total_tokens"] += hidden
            usage["completion_tokens_details"]["reasoning_tokens"] = hidden
        drift = self.drift.get(model)
        if drift is None:
            return
        with self._lock:
            served = self._served[model]
            self._served[model] += 1
        if served >= drift.after:
            completion["model"] = drift.model
            completion["system_fingerprint"] = drift.fingerprint or f"{SIM_FINGERPRINT}{self.seed}_drift"

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] += 1

    # The judgement -------------------------------------------------------------------------

    def _reply(
        self, fmt: str, prompt: str, item: str, model: str, draw: Draw, malformed: bool, rng: random.Random,
        shift: float = 0.0,
    ) -> tuple[str, str]:
        profile = self.profiles.get(model, self.default)
        if shift:
            profile = Profile(bias=profile.bias + shift, noise=profile.noise)
        if fmt == "verdict":
            text = self._verdict(item, prompt, profile, draw)
        elif fmt == "synthetic":
            text = self._synthetic(prompt, rng)
        elif fmt in ("scores", "cot"):
            text = self._scores(item, prompt, profile, draw, fmt, model)
        elif fmt == "coding":
            text = sim_reasoning.coding_reply(prompt)
        elif fmt == "total":
            text = self._total(item, prompt, profile, draw)
        else:
            text = "I am a simulated judge and could not tell which answer format this prompt asks for."
        if malformed:
            return _malform(_MARK.sub(r"\1", text), fmt, rng)
        return text, "stop"

    def _levels(self, item: str, categories: list[tuple[str, int, int]]) -> dict[str, int]:
        names = [c[0] for c in categories]
        low, high = min(c[1] for c in categories), max(c[2] for c in categories)
        known = self.truth.get(text_key(item))
        if known is not None:
            if "total" in known and not any(n in known or _snake(n) in known for n in names):
                return split_total(int(known["total"]), names, low, high, key=text_key(item))
            levels = latent_scores(item, names, low, high)
            levels.update({n: int(known.get(n, known.get(_snake(n), levels[n]))) for n in names})
            return levels
        levels = latent_scores(item, names, low, high)
        for name in names:  # lines this simulator planted in a synthetic transcript
            for level, line in _bank().get(name, {}).items():
                if line and f"Patient: {line}\n" in item + "\n":
                    levels[name] = level
        return levels

    def _scores(self, item: str, prompt: str, profile: Profile, draw: Draw, fmt: str, model: str = "") -> str:
        categories = _categories(prompt)
        levels = self._levels(item, categories)
        spread = profile.noise * FORMAT_NOISE[fmt]
        scores = {name: draw.score(levels[name] + profile.bias, spread, lo, hi) for name, lo, hi in categories}
        block = "\n".join(f"{name}: {_mark(s)}" for name, s in scores.items())
        block += f"\nTotal Score: {sum(scores.values())}"
        if fmt == "scores":
            return block
        steps = []
        quote = next((ln.strip() for ln in item.splitlines() if ln.strip().lower().startswith("patient")), item[:80])
        quote = " ".join(quote.split()[:COT_QUOTE_WORDS])  # a fixed-size quote: the reply's length hardly varies by item
        for number, (name, s) in enumerate(scores.items(), start=1):
            # The segment's codes come from the model's reasoning style (the truth of Experiment 4).
            codes = sim_reasoning.draw_codes(model, draw.rng)
            reasoning = sim_reasoning.segment_text(codes, category=name, level=s, quote=quote)
            steps.append(f"{number}. {name}\nReasoning: {reasoning}\nScore: {s}")
        return "Step-by-step Analysis and Scoring:\n" + "\n\n".join(steps) + "\n\nFinal Scores Output:\n" + block

    def _total(self, item: str, prompt: str, profile: Profile, draw: Draw) -> str:
        m = _TOTAL_RANGE.search(prompt)
        low, high = (int(m.group(3) or m.group(1)), int(m.group(4) or m.group(2))) if m else (5, 20)
        # The prompt names no categories: on the 5-20 scale the item's truth is its Rubric v5.0
        # levels (the same truth the rubric prompts see); on another scale, one latent total.
        categories = [(name, 1, 4) for name in _QUESTIONS] if (low, high) == (5, 20) else [("total", low, high)]
        latent = sum(self._levels(item, categories).values())
        n = len(categories)
        mean = 0.5 * latent + 0.5 * (low + high) / 2 + n * profile.bias
        return _mark(draw.score(mean, profile.noise * math.sqrt(n) * FORMAT_NOISE["total"], low, high))

    def _verdict(self, item: str, prompt: str, profile: Profile, draw: Draw) -> str:
        known = self.truth.get(text_key(item), {})
        q = unit("verdict", text_key(item))
        if "pass" in known:
            q = 0.85 if known["pass"] else 0.15
        p_pass = 1 / (1 + math.exp(-8 * (q - 0.5 + profile.bias) / max(profile.noise, 1e-3)))
        verdict = draw.pick({"true": p_pass, "false": 1 - p_pass}) == "true"
        certainty = max(p_pass, 1 - p_pass)
        confidence = "high" if certainty > 0.9 else "medium" if certainty > 0.7 else "low"
        reason = (
            "All conditions are met by the candidate output."
            if verdict
            else "At least one pass condition is not met by the candidate output."
        )
        answer: dict[str, Any] = {"pass": verdict, "reason": reason, "score": 1.0 if verdict else 0.0}
        if "confidence" in prompt:
            answer["confidence"] = confidence
        if "uncertain" in prompt:
            answer["uncertain"] = confidence == "low"
        return json.dumps(answer).replace(f'"pass": {json.dumps(verdict)}', f'"pass": {_mark(json.dumps(verdict))}', 1)

    def _synthetic(self, prompt: str, rng: random.Random) -> str:
        target = int(_TARGET.search(prompt).group(1))
        names = list(_QUESTIONS)
        levels = split_total(max(5, min(20, target)), names, 1, 4, key=rng.random())
        outline = [f"- {name}: the patient answers at level {lvl}." for name, lvl in levels.items()]
        lines = ["Doctor: Good morning. Thanks for coming in."]
        for name in names:
            lines += [f"Doctor: {_QUESTIONS[name]}", f"Patient: {_bank()[name][levels[name]]}"]
        lines.append("Doctor: Thank you. Let's go over the plan together.")
        return "Outline:\n" + "\n".join(outline) + "\n\nTranscript:\n" + "\n".join(lines)

    # The HTTP body ---------------------------------------------------------------------------

    def _completion(
        self, model: str, prompt: str, cache_key: str | None, choices: list[tuple[list[str], str, list[dict] | None]]
    ) -> dict[str, Any]:
        """The chat.completion body: one choice per ``(tokens, finish_reason, logprobs)``; the prompt is
        billed once and each choice's tokens are added up (OpenAI's ``n``), cache hits per :mod:`hce.collect.sim_cache`."""
        prompt_tokens = _count_tokens(prompt)
        cached, written = self.prefix_cache.use(model, cache_key, prompt)
        completion_tokens = sum(len(tokens) for tokens, _, _ in choices)
        out = []
        for index, (tokens, finish, logprobs) in enumerate(choices):
            out.append({
                "index": index,
                "message": {"role": "assistant", "content": "".join(tokens), "refusal": None},
                "finish_reason": finish,
                "logprobs": None if logprobs is None else {"content": logprobs},
            })  # fmt: skip
        return {
            "id": f"chatcmpl-sim{int(unit(prompt, *choices[0][0]) * 1e12):012d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": ALIASES.get(model, model),
            "system_fingerprint": f"{SIM_FINGERPRINT}{self.seed}",
            "choices": out,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                # cache writes as the newer API reports them; billed only where a model has a write rate
                "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        }


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "hce-sim"}


def _malform(text: str, fmt: str, rng: random.Random) -> tuple[str, str]:
    """A reply that breaks the asked format: cut short, words for numbers, or a refusal."""
    kind = rng.randrange(3)
    if kind == 0:
        return text[: max(1, len(text) // 3)], "length"
    if kind == 1 and fmt in ("scores", "cot", "total"):
        return re.sub(r"\d+", "good", text), "stop"
    return "I'm sorry, but I can't assess this transcript.", "stop"


def _logprobs(
    tokens: list[str], draws: list[int | None], dists: list[tuple[str, dict[str, float]]], top: int
) -> list[dict[str, Any]]:
    """Per-token logprobs: drawn tokens carry their distribution, other tokens are near-certain."""
    out = []
    for token, index in zip(tokens, draws):
        if index is not None:
            chosen, dist = dists[index]
            ranked = sorted(((k, v) for k, v in dist.items() if v > 0), key=lambda kv: -kv[1])[:top]
            out.append(
                {
                    "token": token,
                    "logprob": math.log(max(dist[chosen], _TINY)),  # 0 only where the reported power underflowed
                    "bytes": list(token.encode()),
                    "top_logprobs": [{"token": k, "logprob": math.log(v), "bytes": list(k.encode())} for k, v in ranked],
                }
            )
        else:
            entry = {"token": token, "logprob": -1e-4, "bytes": list(token.encode())}
            entry["top_logprobs"] = [{"token": token, "logprob": -1e-4, "bytes": list(token.encode())}][:top]
            out.append(entry)
    return out


# --- the HTTP server -----------------------------------------------------------------------

_REASONS = {200: "OK", 307: "Temporary Redirect", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _multipart(raw: bytes, content_type: str) -> dict[str, Any]:
    """The fields of a ``multipart/form-data`` body: text as str, a file as ``(filename, bytes)``."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if found is None:
        raise ValueError("multipart body without a boundary")
    fields: dict[str, Any] = {}
    for part in raw.split(b"--" + found.group(1).encode("latin-1"))[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        data = data.removesuffix(b"\r\n")
        names = re.search(rb'name="([^"]*)"(?:; filename="([^"]*)")?', head)
        if names is None:
            raise ValueError("multipart part without a name")
        name = names.group(1).decode("utf-8")
        fields[name] = (names.group(2).decode("utf-8"), data) if names.group(2) is not None else data.decode("utf-8")
    return fields


class SimServer:
    """Serve a :class:`SimJudge` over HTTP/1.1 (keep-alive) on 127.0.0.1.

    ``start()`` runs it in a background thread (for tests and notebooks) and returns
    itself; ``url`` is the ``base_url`` to give a client. ``serve()`` runs it in the
    current event loop (the CLI). Port 0 picks a free port. With ``api_key`` set, a request
    without that bearer key gets a 401 whose message quotes the key it got, as a careless
    server might: a test that the client keeps keys out of what it records. ``keys_seen``
    counts the bearer keys presented (tests check that a key reached only its own server).

    Parameters
    ----------
    judge : SimJudge, optional
        The judge served (default ``SimJudge()``).
    port : int
        The port; 0 picks a free one.
    host : str
        Loopback only.
    api_key : str, optional
        The bearer key requests must present.

    Examples
    --------
    >>> with SimServer(SimJudge(seed=0)).start() as server:
    ...     server.url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(self, judge: SimJudge | None = None, *, port: int = 0, host: str = LOOPBACK, api_key: str | None = None):
        if host not in (LOOPBACK, "localhost", "::1"):
            raise HceError(f"the simulated judge serves on loopback only; host {host!r} is not allowed")
        self.judge = judge or SimJudge()
        self.host = host
        self.port = port
        self.api_key = api_key
        self.keys_seen: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The ``base_url`` to give a client."""
        return f"http://{self.host}:{self.port}/v1"

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve(self, on_ready: Callable[[SimServer], None] | None = None) -> None:
        """Serve until cancelled, in the current event loop (the CLI).

        Parameters
        ----------
        on_ready : callable, optional
            Called with the server once the port is bound.
        """
        await self._open()
        if on_ready is not None:
            on_ready(self)
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> SimServer:
        """Serve in a background thread (tests, notebooks) until :meth:`stop`.

        Returns
        -------
        SimServer
            Itself, bound (its ``url`` is ready), and a context manager that stops it.
        """
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._open())
            except OSError as exc:  # the port is taken, say
                failed.append(exc)
                loop.close()
                return
            finally:
                ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="hce-sim-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise HceError("the simulated judge did not start within 10 s")
        if failed:
            raise HceError(f"the simulated judge cannot serve on {self.host}:{self.port}: {failed[0]}")
        self._loop = self._server.get_loop()
        return self

    def stop(self) -> None:
        """Stop serving and join the background thread (a no-op when not started)."""
        if self._loop is None:
            return
        loop = self._loop

        async def close() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0)  # let the closed transports finish closing

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        loop.close()
        self._loop = None

    def __enter__(self) -> SimServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line.strip():
                    break
                method, target, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", 0) or 0))
                presented = headers.get("authorization", "").removeprefix("Bearer ")
                self.keys_seen[presented] += 1
                content_type = headers.get("content-type", "")
                try:
                    if content_type.startswith("multipart/form-data"):
                        body = _multipart(raw, content_type)
                    else:
                        body = json.loads(raw) if raw else None
                except ValueError:
                    reply = error_reply(400, "the request body is not valid JSON or multipart", "invalid_request_error")
                else:
                    if self.api_key is not None and presented != self.api_key:
                        reply = error_reply(401, f"Incorrect API key provided: {presented}", "invalid_request_error")
                    else:
                        reply = self.judge.respond(method, target, body, request_id=headers.get("x-client-request-id"))
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode("utf-8")
                head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}"]
                head += [f"Content-Type: {reply.content_type}", f"Content-Length: {len(data)}"]
                head += [f"{k}: {v}" for k, v in reply.headers.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away (a timed-out try) or sent garbage
        finally:
            writer.close()
