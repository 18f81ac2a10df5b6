"""What the simulated endpoint does for each family of models (:mod:`hce.sim`'s notes,
"Provider behaviours"): what its logprobs are the log of, which parameters it refuses with the
API's 400, the hidden reasoning tokens it bills, and model versions that drift mid-run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hce.model_names import REASONING_MODEL
from hce.sim.reply import SimReply, error_reply
from hce.errors import HceError

LogprobsAre = Literal["raw", "sampled", "raw_at_zero"]
LOGPROBS_ARE: tuple[str, ...] = ("raw", "sampled", "raw_at_zero")


@dataclass(frozen=True)
class Family:
    """What the endpoint does for one family of models (module notes, "Provider behaviours").

    ``logprobs_are``: what returned logprobs are the log of: ``"raw"`` the judge's
    distribution at temperature 1 whatever the request's temperature; ``"sampled"`` the
    distribution the reply was sampled from (tempered; greedy at 0); ``"raw_at_zero"``
    sampled, except raw at temperature 0. ``reasoning``: an OpenAI reasoning model: a
    temperature other than 1 and ``logprobs`` are answered with the API's 400, and usage
    counts ``reasoning_tokens`` hidden tokens per reply (in ``completion_tokens``, as
    OpenAI bills them). ``n`` / ``seed``: whether the parameter is accepted (a 400
    ``unsupported_parameter`` when not).

    Examples
    --------
    >>> Family(logprobs_are="sampled").logprobs_are
    'sampled'
    """

    logprobs_are: LogprobsAre = "raw"
    reasoning: bool = False
    n: bool = True
    seed: bool = True
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        if self.logprobs_are not in LOGPROBS_ARE:
            raise HceError(f"logprobs_are must be one of {LOGPROBS_ARE}, got {self.logprobs_are!r}")
        if self.reasoning_tokens < 0:
            raise HceError(f"reasoning_tokens must be >= 0, got {self.reasoning_tokens!r}")


#: Model-name pattern (``re.fullmatch``) -> its family; the first match applies. A judge's
#: ``families=`` are looked at before these.
FAMILIES: dict[str, Family] = {
    REASONING_MODEL.pattern: Family(reasoning=True, reasoning_tokens=192),
    r".*": Family(),  # OpenAI's chat models, and any other name: OpenAI's behaviour
}


@dataclass(frozen=True)
class Drift:
    """A model version that changes mid-run: after ``after`` completions of the model, replies
    name ``model`` (``model_version`` in the log) and carry ``fingerprint`` as
    ``system_fingerprint`` (default: the simulator's with ``_drift`` appended).

    Examples
    --------
    >>> Drift(after=10, model="gpt-4o-2024-11-20").after
    10
    """

    after: int
    model: str
    fingerprint: str | None = None

    def __post_init__(self) -> None:
        if self.after < 0:
            raise HceError(f"Drift.after must be >= 0, got {self.after!r}")


def _unsupported(param: str, message: str, code: str) -> SimReply:
    reply = error_reply(400, message, "invalid_request_error", code)
    reply.body["error"]["param"] = param
    return reply


def refusal(family: Family, body: Mapping[str, Any]) -> SimReply | None:
    """The 400 the family's endpoint answers ``body`` with, or None when it takes the request.

    Examples
    --------
    >>> refusal(Family(reasoning=True), {"temperature": 0.1}).body["error"]["message"]
    "Unsupported value: 'temperature' does not support 0.1 with this model. Only the default (1) value is supported."
    >>> refusal(Family(), {"temperature": 0.1, "logprobs": True}) is None
    True
    """
    temperature = body.get("temperature")
    if family.reasoning and temperature is not None and float(temperature) != 1:
        return _unsupported(
            "temperature",
            f"Unsupported value: 'temperature' does not support {float(temperature):g} with this model. "
            "Only the default (1) value is supported.",
            "unsupported_value",
        )
    asked = {"logprobs": bool(body.get("logprobs")), "n": body.get("n") not in (None, 1), "seed": body.get("seed") is not None}
    refused = {"logprobs": family.reasoning, "n": not family.n, "seed": not family.seed}
    for name in asked:
        if asked[name] and refused[name]:
            return _unsupported(name, f"Unsupported parameter: '{name}' is not supported with this model.",
                                "unsupported_parameter")  # fmt: skip
    return None
