"""A simulated reply as tokens, with the logprobs of the tokens its judge drew.

The judge marks each drawn token (a score, a verdict) in the reply text, so its distribution
lands on that occurrence even where the reply repeats the token.
"""

from __future__ import annotations

import math
import re
from typing import Any

_TINY = 1e-300  # the smallest probability a logprob is taken of
MARK = re.compile("\x02([^\x03]*)\x03")
_WORDS = re.compile(r"\d+|[A-Za-z]+|\s+|[^\sA-Za-z\d]")  # the simulator's tokens


def mark(token: object) -> str:
    """Wrap a drawn token so its logprobs land on this occurrence (the reply may repeat it)."""
    return f"\x02{token}\x03"


def reply_tokens(text: str) -> tuple[list[str], list[int | None]]:
    """Tokens of a marked reply, and for each the index of its draw (None: not drawn)."""
    tokens: list[str] = []
    draws: list[int | None] = []
    at = 0
    for n, m in enumerate(MARK.finditer(text)):
        plain = _WORDS.findall(text, at, m.start())
        tokens += [*plain, m.group(1)]
        draws += [None] * len(plain) + [n]
        at = m.end()
    plain = _WORDS.findall(text, at)
    return tokens + plain, draws + [None] * len(plain)


def count_tokens(text: str) -> int:
    """The tokens of a prompt as the simulator bills them: about 4 characters a token."""
    return max(1, math.ceil(len(text) / 4))


def token_logprobs(
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
