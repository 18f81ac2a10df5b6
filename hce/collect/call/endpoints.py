"""The endpoints a design sends to, and a client for each, its key read before anything is sent."""

from __future__ import annotations

import contextlib
from typing import Any

from hce.collect.call.client import JudgeClient
from hce.collect.call.keys import check_addresses, check_keys, endpoint_key, used_endpoints  # noqa: F401 (importable from here)
from hce.collect.design.design import Design, Endpoint
from hce.errors import CollectError


def client_for(
    design: Design,
    endpoint: Endpoint | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    random_state: int | None = None,
) -> JudgeClient:
    """The client of one endpoint (default: the design's only one); ``base_url``/``api_key`` override it.

    The key comes only from the variable the endpoint names (:func:`~hce.collect.call.client.endpoint_key`).
    An override is refused for a design whose conditions go to several endpoints: it
    would send every provider's calls, and one key, to one place.
    """
    if endpoint is None:
        used = used_endpoints(design)
        if len(used) > 1:
            raise CollectError(
                f"this design sends calls to {len(used)} endpoints ({', '.join(e.name for e in used)}); "
                "a single client, base_url or api_key cannot stand for them: set each under endpoints:"
            )
        endpoint = used[0]
    url = base_url or endpoint.base_url
    if api_key is None:
        api_key = endpoint_key(endpoint.name, url, endpoint.api_key_env, needs_key=endpoint.needs_key)
    return JudgeClient(
        base_url=url, api_key=api_key, timeout=endpoint.timeout, max_retries=endpoint.max_retries, random_state=random_state
    )


def check_batch(design: Design) -> Endpoint:
    """The one endpoint a batch run sends to, refused when its provider offers no OpenAI Batch API."""
    if design.stop_rule is not None:
        raise CollectError("--batch: this design's attempts stop when each item's score is known, which needs each "
                           "round's replies before the next is sent (a batch returns within 24 h); run it without "
                           "--batch, or give attempts as a number")  # fmt: skip
    used = used_endpoints(design)
    if len(used) > 1:
        raise CollectError(f"--batch sends a design to one endpoint; this one uses {len(used)} "
                           f"({', '.join(e.name for e in used)}): run a design per endpoint")  # fmt: skip
    if not used[0].supports_batch:
        raise CollectError(
            f"endpoint {used[0].name!r} ({used[0].kind}, {used[0].host}) has no OpenAI-compatible Batch API "
            "(hce.collect.call.providers); run without --batch, or set batch: true on the endpoint if it has one"
        )
    return used[0]


async def open_clients(
    design: Design, cleanup: contextlib.AsyncExitStack, client: JudgeClient | None, **overrides: Any
) -> dict[str, JudgeClient]:
    """A client per endpoint the design uses (a given ``client`` or override: the design must use one)."""
    used = used_endpoints(design)
    if client is not None or overrides.get("base_url") or overrides.get("api_key") is not None:
        if client is None:
            client = await cleanup.enter_async_context(client_for(design, **overrides))
        elif len(used) > 1:
            client_for(design)  # raises, naming the endpoints
        return {used[0].name: client}
    made = [client_for(design, e, random_state=overrides.get("random_state")) for e in used]  # every key, first
    return {e.name: await cleanup.enter_async_context(c) for e, c in zip(used, made, strict=True)}
