"""The simulated judge: a request body of the OpenAI protocol in, a reply out (model: :mod:`hce.sim`)."""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from hce.sim import reasoning as sim_reasoning
from hce.model_names import ALIASES
from hce.sim.batch import BatchSettings, SimBatches
from hce.sim.biases import PlantedBiases, canonical_text
from hce.prompt_cache import PrefixCache
from hce.sim.draws import Draw
from hce.sim.families import FAMILIES, Drift, Family, refusal
from hce.sim.prompt import (
    TARGET,
    TOTAL_RANGE,
    detect_format,
    item_text,
    score_categories,
)
from hce.sim.reply import SimReply, error_reply, unit
from hce.sim.settings import Faults, Profile
from hce.sim.tokens import (
    MARK,
    count_tokens,
    mark,
    reply_tokens,
    token_logprobs,
)
from hce.sim.truth import (
    QUESTIONS,
    latent_scores,
    planted_lines,
    split_total,
    text_key,
)
from hce.rubric import _snake

PRD_MODELS = ("gpt-4o-2024-08-06", "o4-mini-2025-04-16", "o3-2025-04-16", "gpt-4.1-mini-2025-04-14")
SIM_FINGERPRINT = "fp_hce_sim_"  # logged with every attempt: reports can tell simulated runs apart
FORMAT_NOISE = {"total": 2.0, "scores": 1.0, "cot": 0.85}
# A step-by-step reply (P2.3) quotes 14 words of the patient's first line: about 450 of this simulator's
# tokens when that line is that long (its usage counts each word, space and punctuation mark: ~2 a word, where
# a real tokenizer counts ~1.3), near the 450 hce's estimates assume (hce.collect.estimates.TYPICAL_OUTPUT_TOKENS);
# a score block (P2.1) is 51.
COT_QUOTE_WORDS = 14
MAX_CHOICES = 128  # the most choices (``n``) one chat completion may ask for (OpenAI's API reference)


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
        How the simulated Batch API behaves (``hce.sim.batch``): polls before
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
    biases : PlantedBiases, optional
        Length, order and self-preference biases and a score drift of known size
        (``hce.sim.biases``); default none.

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
        biases: PlantedBiases | None = None,
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
        self.biases = biases if biases is not None else PlantedBiases()  # hce.sim.biases
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
        schema = structured_schema(body)  # a structured reply: answered as JSON in the schema asked for
        fmt = detect_format(prompt)
        if schema is not None and fmt not in ("scores", "cot", "total"):
            fmt = "cot" if "reasoning" in schema else "scores" if set(schema) - {"total"} else "total"
        _, item = item_text(prompt, fmt)
        profile = self.profiles.get(model, self.default)
        shift = rng.gauss(0.0, profile.request_sd) if profile.request_sd > 0 else 0.0  # shared by the choices
        served = self.biases.count()  # the planted drift starts after drift_after completions
        choices = []
        for index in range(n):  # each choice its own draws from the request's stream (n = 1: as before n existed)
            bad = malformed if index == 0 else unit(self.seed, "malformed", *attempt, occurrence, index) < f.rate_malformed
            draw = Draw(rng, temperature, family.logprobs_are, profile.overconfidence)
            # a schema only when asked: subclasses that answer text of their own keep their signature
            marked, finish = self._reply(fmt, prompt, item, model, draw, bad, rng, shift=shift, served=served,
                                         **({"schema": schema} if schema is not None else {}))  # fmt: skip
            tokens, draws = reply_tokens(marked)
            cap = body.get("max_completion_tokens") or body.get("max_tokens")
            if cap is not None and len(tokens) > int(cap):
                tokens, draws, finish = tokens[: int(cap)], draws[: int(cap)], "length"
            choices.append((tokens, finish, draws, draw.dists))
        self._count("ok")
        if malformed and rng.random() < 0.25:  # a quarter of malformed replies break the HTTP body itself
            return SimReply(200, {}, delay=delay, raw=b'{"id": "chatcmpl-broken", "choices": [{"message": ')
        top = int(body.get("top_logprobs") or 0)
        choices = [(t, fin, token_logprobs(t, d, dists, top) if body.get("logprobs") else None) for t, fin, d, dists in choices]
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
        shift: float = 0.0, served: int = 0, schema: Mapping[str, Any] | None = None,
    ) -> tuple[str, str]:
        profile = self.profiles.get(model, self.default)
        if shift:
            profile = Profile(bias=profile.bias + shift, noise=profile.noise)
        if fmt == "verdict":
            text = self._verdict(item, prompt, profile, draw)
        elif fmt == "synthetic":
            text = self._synthetic(prompt, rng)
        elif fmt in ("scores", "cot"):
            text = self._scores(item, prompt, profile, draw, fmt, model, served, schema)
        elif fmt == "coding":
            text = sim_reasoning.coding_reply(prompt)
        elif fmt == "total":
            text = self._total(item, prompt, profile, draw, model, served)
            text = json_reply({"total": text}) if schema is not None else text
        else:
            text = "I am a simulated judge and could not tell which answer format this prompt asks for."
        if malformed:
            return _malform(MARK.sub(r"\1", text), fmt, rng)
        return text, "stop"

    def _levels(self, item: str, categories: list[tuple[str, int, int]]) -> dict[str, int]:
        item = canonical_text(item)  # a probe's transformed text has its original's truth (hce.sim.biases)
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
            for level, line in planted_lines().get(name, {}).items():
                if line and f"Patient: {line}\n" in item + "\n":
                    levels[name] = level
        return levels

    def _scores(self, item: str, prompt: str, profile: Profile, draw: Draw, fmt: str, model: str = "", served: int = 0,
                schema: Mapping[str, Any] | None = None) -> str:
        categories = score_categories(prompt) if schema is None else schema_categories(schema, score_categories(prompt))
        levels = self._levels(item, categories)
        spread = profile.noise * FORMAT_NOISE[fmt]
        planted = self.biases.shift
        scores = {name: draw.score(levels[name] + profile.bias + planted(item, model, first=i == 0, served=served), spread, lo, hi)
                  for i, (name, lo, hi) in enumerate(categories)}  # fmt: skip
        block = "\n".join(f"{name}: {mark(s)}" for name, s in scores.items())
        if TOTAL_RANGE.search(prompt):  # the total only when the prompt asks for it
            block += f"\nTotal Score: {sum(scores.values())}"
        answer = {_snake(name): mark(s) for name, s in scores.items()}  # a structured reply: the schema's keys
        if schema is not None and "total" in schema:
            answer["total"] = str(sum(scores.values()))
        if fmt == "scores":
            return block if schema is None else json_reply(answer)
        steps = []
        quote = next((ln.strip() for ln in item.splitlines() if ln.strip().lower().startswith("patient")), item[:80])
        quote = " ".join(quote.split()[:COT_QUOTE_WORDS])  # a fixed-size quote: the reply's length hardly varies by item
        for number, (name, s) in enumerate(scores.items(), start=1):
            # The segment's codes come from the model's reasoning style (the truth of Experiment 4).
            codes = sim_reasoning.draw_codes(model, draw.rng)
            reasoning = sim_reasoning.segment_text(codes, category=name, level=s, quote=quote)
            steps.append(f"{number}. {name}\nReasoning: {reasoning}\nScore: {s}")
        if schema is not None:  # the reasoning first, as the schema orders it
            return json_reply({"reasoning": json.dumps("\n\n".join(steps)), **answer})
        return "Step-by-step Analysis and Scoring:\n" + "\n\n".join(steps) + "\n\nFinal Scores Output:\n" + block

    def _total(self, item: str, prompt: str, profile: Profile, draw: Draw, model: str = "", served: int = 0) -> str:
        m = TOTAL_RANGE.search(prompt)
        low, high = (int(m.group(3) or m.group(1)), int(m.group(4) or m.group(2))) if m else (5, 20)
        # The prompt names no categories: on the 5-20 scale the item's truth is its Rubric v5.0
        # levels (the same truth the rubric prompts see); on another scale, one latent total.
        categories = [(name, 1, 4) for name in QUESTIONS] if (low, high) == (5, 20) else [("total", low, high)]
        latent = sum(self._levels(item, categories).values())
        n = len(categories)
        mean = 0.5 * latent + 0.5 * (low + high) / 2 + n * profile.bias
        mean += n * self.biases.shift(item, model, first=False, served=served)  # no category is presented first here
        return mark(draw.score(mean, profile.noise * math.sqrt(n) * FORMAT_NOISE["total"], low, high))

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
        return json.dumps(answer).replace(f'"pass": {json.dumps(verdict)}', f'"pass": {mark(json.dumps(verdict))}', 1)

    def _synthetic(self, prompt: str, rng: random.Random) -> str:
        target = int(TARGET.search(prompt).group(1))
        names = list(QUESTIONS)
        levels = split_total(max(5, min(20, target)), names, 1, 4, key=rng.random())
        outline = [f"- {name}: the patient answers at level {lvl}." for name, lvl in levels.items()]
        lines = ["Doctor: Good morning. Thanks for coming in."]
        for name in names:
            lines += [f"Doctor: {QUESTIONS[name]}", f"Patient: {planted_lines()[name][levels[name]]}"]
        lines.append("Doctor: Thank you. Let's go over the plan together.")
        return "Outline:\n" + "\n".join(outline) + "\n\nTranscript:\n" + "\n".join(lines)

    # The HTTP body ---------------------------------------------------------------------------

    def _completion(
        self, model: str, prompt: str, cache_key: str | None, choices: list[tuple[list[str], str, list[dict] | None]]
    ) -> dict[str, Any]:
        """The chat.completion body: one choice per ``(tokens, finish_reason, logprobs)``; the prompt is
        billed once and each choice's tokens are added up (OpenAI's ``n``), cache hits per :mod:`hce.prompt_cache`."""
        prompt_tokens = count_tokens(prompt)
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


def structured_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The properties of the JSON schema a request asks its reply in (``response_format: json_schema``), or None.

    Examples
    --------
    >>> structured_schema({"response_format": {"type": "json_schema", "json_schema": {"schema": {
    ...     "type": "object", "properties": {"clarity": {"type": "integer", "enum": [1, 2, 3]}}}}}})
    {'clarity': {'type': 'integer', 'enum': [1, 2, 3]}}
    >>> structured_schema({}) is None
    True
    """
    asked = body.get("response_format")
    if not isinstance(asked, Mapping) or asked.get("type") != "json_schema":
        return None
    schema = (asked.get("json_schema") or {}).get("schema") or {}
    return dict(schema.get("properties") or {})


def schema_categories(schema: Mapping[str, Any], named: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """``(name, low, high)`` of each scored property of a schema, named as the prompt names it where it does.

    The prompt's names keep a structured reply's truth that of a text reply to the same prompt.
    """
    by_key = {_snake(name): (name, low, high) for name, low, high in named}
    out = []
    for key, spec in schema.items():
        if key in ("reasoning", "total"):
            continue
        levels = [v for part in (spec.get("anyOf") or [spec]) for v in part.get("enum") or ()
                  if isinstance(v, int) and not isinstance(v, bool)]  # fmt: skip
        out.append(by_key.get(key, (key, min(levels, default=1), max(levels, default=5))))
    return out


def json_reply(fields: Mapping[str, str]) -> str:
    """A JSON object of already-written values (a marked score stays marked: ``json.dumps`` would escape the marks)."""
    return "{" + ", ".join(f"{json.dumps(key)}: {value}" for key, value in fields.items()) + "}"


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
