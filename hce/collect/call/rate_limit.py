"""Client-side rate limits: token buckets of requests and tokens per minute, for a run and for each endpoint."""

from __future__ import annotations

import asyncio
import time

from hce.collect.design.design import Endpoint


class RateLimit:
    """A token bucket refilled at ``per_minute / 60`` units a second, holding one second's worth.

    One second's worth, not a minute's, because providers enforce per-minute limits over
    shorter windows. A call larger than the bucket waits for a full bucket and leaves a
    debt the next calls wait out, so the long-run rate is the limit exactly.
    """

    def __init__(self, per_minute: float):
        self.rate = float(per_minute) / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, amount: float) -> None:
        need = min(float(amount), self.capacity)
        async with self.lock:  # first come, first served
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.level >= need:
                    self.level -= float(amount)
                    return
                await asyncio.sleep((need - self.level) / self.rate)


def endpoint_limits(endpoint: Endpoint) -> tuple[RateLimit | None, RateLimit | None]:
    """An endpoint's own request and token buckets (None where it sets no limit)."""
    return rate_limits(endpoint.requests_per_minute, endpoint.tokens_per_minute)


def rate_limits(requests_per_minute: float | None, tokens_per_minute: float | None) -> tuple[RateLimit | None, RateLimit | None]:
    """A request bucket and a token bucket (None for a limit not set)."""
    return tuple(RateLimit(limit) if limit else None for limit in (requests_per_minute, tokens_per_minute))
