"""The reply of the simulated judge and the two helpers every simulated endpoint shares.

:mod:`hce.sim` (chat completions, models) and :mod:`hce.sim.batch` (Files
and Batch) both answer with a :class:`SimReply`, draw their deterministic numbers with
:func:`unit` and refuse with :func:`error_reply`; keeping them here lets ``sim`` import
``sim_batch`` without the two importing each other.

>>> error_reply(404, "No such File object: file-1", "invalid_request_error").status
404
>>> 0.0 <= unit("seed", "fault", 3) < 1.0
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SimReply", "error_reply", "unit"]


@dataclass
class SimReply:
    """One HTTP answer: status, extra headers, JSON body and how long to wait before sending."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None  # sent instead of the JSON body (a broken reply, a file's content)
    content_type: str = "application/json"


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from its parts."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def error_reply(status: int, message: str, kind: str, code: str | None = None) -> SimReply:
    """An OpenAI-shaped error body (``{"error": {"message", "type", "param", "code"}}``)."""
    return SimReply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})
