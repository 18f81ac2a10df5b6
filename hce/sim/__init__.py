"""A simulated OpenAI-compatible judge with known truth, served over HTTP on loopback.

No API key exists in development or CI, and a study should be rehearsed before it costs
money. :class:`SimServer` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on
127.0.0.1 (and the Files and Batch endpoints, ``hce.sim.batch``), so the real
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

*Planted biases* (:class:`~hce.sim.biases.PlantedBiases`, ``hce sim-server --length-bias
--order-bias --self-preference --drift-after --drift-shift``): a length bias per 1,000
characters, an order bias on the first-presented criterion, a self-preference for texts of the
judge's model family and a score drift after N completions, each added to every category's
mean; an item transformed by a probe keeps its original's levels (:func:`~hce.sim.biases.canonical_text`).

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
gpt-5-nano and their snapshots; the pattern of :data:`hce.collect.call.providers.REASONING_MODEL`)
answer a temperature other than 1 with HTTP 400 ``unsupported_value`` "Unsupported value:
'temperature' does not support 0.1 with this model. Only the default (1) value is
supported." (openai/openai-python#2104) and ``logprobs`` with 400 ``unsupported_parameter``
"Unsupported parameter: 'logprobs' is not supported with this model." (the shape of
BerriAI/litellm#38842; UKGovernmentBEIS/inspect_ai#2739: "logprobs are not supported for
reasoning models"); their usage counts hidden ``completion_tokens_details.reasoning_tokens``
(about 192 a reply here, uniform +-50%), included in ``completion_tokens``. A family with
``n=False`` or ``seed=False`` answers those parameters with the same ``unsupported_parameter``
400 (Anthropic's layer demands ``n`` = 1 and ignores ``seed``: :mod:`hce.collect.call.providers`,
where hce refuses such designs at load). A :class:`Drift` per model changes the returned
``model`` and ``system_fingerprint`` after a set number of completions.

*Reasoning styles (Experiment 4's truth).* Each category step of a step-by-step reply
carries one code per dimension of the PRD's reasoning coding scheme, drawn from the
model's style: per model, a distribution over each dimension's codes (``gpt-4o`` quotes the
patient directly in 55% of segments, ``o4-mini`` paraphrases in 50%, ``o3`` ties 80% to the
rubric's descriptor and reasons in depth in 60%, ``gpt-4.1-mini`` gives the general gist in
50% and generic statements in 60%; the tables and phrases are
:data:`hce.sim.reasoning.REASONING_STYLES`). A prompt asking to code reasoning
segments (hce's coding prompt, :func:`hce.study.reasoning.coding_messages`) is answered
with the codes each shown segment carries, read back exactly
(:func:`hce.sim.reasoning.coding_reply`).

*The call.* ``system_fingerprint`` is ``fp_hce_sim_<seed>`` (the runner logs it, so a
report can tell a simulated run). ``usage`` counts about 4 characters a prompt token;
``cached_tokens`` is the longest prefix an earlier request of the model and
``prompt_cache_key`` computed, from 1,024 tokens in 128-token steps, as OpenAI caches
(:mod:`hce.prompt_cache`). ``n`` asks for several choices, each drawn independently
from the same request: the prompt is billed once, ``completion_tokens`` adds up the
choices. ``model`` comes back as the dated snapshot for an undated alias.

*Faults*, on request (:class:`Faults`): 429 with ``Retry-After``, 500, slow replies and
malformed reply texts, each with its own probability; every reply waits ``latency``. A
*refusal* answers every completion (or every one for one model) with a 400 and a given
message, as the API refuses a setting a model does not take. A *redirect*
(``Faults(redirect="http://127.0.0.1:PORT")``, ``hce sim-server --redirect``) answers every
request with ``307 Temporary Redirect`` to the same path on another loopback server: a
test that an API key does not follow a redirect to another host or port.

Where the parts live: the condition and fault settings in :mod:`~hce.sim.settings`, the
truth in :mod:`~hce.sim.truth`, reading the prompt in :mod:`~hce.sim.prompt`, the
judge in :mod:`~hce.sim.judge` (its draws in :mod:`~hce.sim.draws`, its tokens and
logprobs in :mod:`~hce.sim.tokens`), and the HTTP server in :mod:`~hce.sim.server`.
Their public names are importable from here.
"""

from hce.sim.judge import (
    COT_QUOTE_WORDS,
    FORMAT_NOISE,
    MAX_CHOICES,
    PRD_MODELS,
    SIM_FINGERPRINT,
    SimJudge,
)
from hce.sim.batch import BatchSettings
from hce.sim.biases import PlantedBiases, canonical_text
from hce.sim.prompt import detect_format
from hce.sim.server import SimServer
from hce.sim.settings import LOOPBACK, Faults, Profile
from hce.sim.truth import latent_scores, split_total, text_key

# The simulator's public product (its API page); the constants and helpers above are importable
# from here for the study layer and the tests.
__all__ = ["BatchSettings", "Faults", "PlantedBiases", "Profile", "SimJudge", "SimServer"]
