"""OpenAI's prompt cache as hce models it: exact prefixes, 1,024 tokens up, 128-token steps.

The simulated judge (:mod:`hce.sim`) answers with it, and the cost projection of a design
(``hce.collect.projection``) prices caching with it, so both live on one model of the cache.

What OpenAI documents (developers.openai.com/api/docs/guides/prompt-caching; the
announcement openai.com/index/api-prompt-caching, 2024-10-01): caching applies to prompts
of 1,024 tokens or more; "the API caches the longest prefix of a prompt that has been
previously computed, starting at 1,024 tokens and increasing in 128-token increments";
requests are routed by a hash of the prompt's first tokens combined with
``prompt_cache_key`` when given, so requests with different keys need not share a cache;
the hits are reported as ``usage.prompt_tokens_details.cached_tokens``.

The simulator's model of that: a prompt of ``P`` tokens (the simulator's ~4 characters a
token, so the first ``b`` tokens are the first ``4 b`` characters) has cacheable prefixes
at ``b = 1024, 1152, ...`` up to ``P``. A request's ``cached_tokens`` is the longest of its
prefixes already computed by an earlier request of the same model and the same
``prompt_cache_key`` (none counts as one key of its own); then all its prefixes count as
computed. So the first request with a prefix writes it and every later one hits it, at any
concurrency in arrival order. Not modelled: eviction (OpenAI keeps a prefix 5-10 minutes
idle, up to an hour), and the overflow OpenAI describes when one prefix and key get more
than about 15 requests a minute (some then go to other machines and miss): real hit rates
can only be lower than the simulator's.
"""

from __future__ import annotations

import hashlib
import threading

MIN_TOKENS = 1024
STEP_TOKENS = 128
CHARS_PER_TOKEN = 4  # the simulator's token count (hce.sim: ceil(characters / 4))


class PrefixCache:
    """Prefixes computed so far, per model and ``prompt_cache_key``; thread-safe.

    Examples
    --------
    >>> cache = PrefixCache()
    >>> rubric = "r" * 4 * 1300                  # 1,300 tokens shared by every item
    >>> cache.hit("gpt-4o", None, rubric + "item one " * 100)   # the first request writes
    0
    >>> cache.hit("gpt-4o", None, rubric + "item two " * 100)   # 1,300 shared -> 1,280 in 128-token steps
    1280
    >>> cache.hit("gpt-4o", "other-key", rubric + "item two " * 100)  # another key: another cache
    0
    """

    def __init__(self) -> None:
        self._computed: set[bytes] = set()
        self._lock = threading.Lock()

    def hit(self, model: str, key: str | None, prompt: str) -> int:
        """Cached tokens of a request with this prompt; its prefixes are computed from now on."""
        return self.use(model, key, prompt)[0]

    def use(self, model: str, key: str | None, prompt: str) -> tuple[int, int]:
        """``(cached, written)`` tokens of a request with this prompt: the longest prefix computed
        before, and what it adds to the cache (its longest cacheable prefix less that; 0 when
        that prefix was computed already).

        >>> cache = PrefixCache()
        >>> prompt = "r" * 4 * 1300
        >>> cache.use("gpt-4o", None, prompt), cache.use("gpt-4o", None, prompt)
        ((0, 1280), (1280, 0))
        """
        tokens = -(-len(prompt) // CHARS_PER_TOKEN)
        if tokens < MIN_TOKENS:
            return 0, 0
        digest = hashlib.sha256(f"{model}\x1f{key or ''}\x1f".encode())
        prefixes: list[tuple[int, bytes]] = []
        at = 0
        for size in range(MIN_TOKENS, tokens + 1, STEP_TOKENS):
            end = size * CHARS_PER_TOKEN
            digest.update(prompt[at:end].encode("utf-8"))  # a running hash: each prefix costs only its new part
            at = end
            prefixes.append((size, digest.copy().digest()))
        with self._lock:
            cached = max((size for size, h in prefixes if h in self._computed), default=0)
            self._computed.update(h for _, h in prefixes)
        return cached, prefixes[-1][0] - cached
