"""The keys and addresses of a design's endpoints, read before anything is sent.

The design is typed ``Any`` here: a ``Design`` (whose module, ``hce.collect.design.design``, imports this one for
``OPENAI_URL``). Apart from the HTTP client (``hce.collect.call.client``) so that a dry run, which reads every key as
a run would but sends nothing, never loads the client's machinery (asyncio, openai, httpx): issue 44.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from hce.errors import CollectError

OPENAI_URL = "https://api.openai.com/v1"


def is_openai(base_url: str | None) -> bool:
    """Whether an endpoint is OpenAI's own API (the host ``api.openai.com``, over https)."""
    parts = urllib.parse.urlsplit(base_url or OPENAI_URL)
    return parts.scheme == "https" and parts.hostname == "api.openai.com"


def endpoint_key(name: str, base_url: str | None, api_key_env: str | None, *, needs_key: bool = True) -> str:
    """The API key of an endpoint, read only from the variable it names.

    ``$OPENAI_API_KEY`` is read when no variable is named only if the endpoint is OpenAI's
    own: a key never goes to a host it was not meant for. An endpoint with
    ``needs_key=False`` (a local server that checks none) gets the placeholder ``"no-key"``,
    and must name its server (``base_url`` or ``$OPENAI_BASE_URL``): without one its calls
    would go to api.openai.com, so it is refused.

    Raises
    ------
    CollectError
        Naming the endpoint and the variable that is unset or empty (never a key).

    Examples
    --------
    >>> endpoint_key("local", "http://127.0.0.1:8000/v1", None, needs_key=False)
    'no-key'
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
    if not needs_key:
        if is_openai(url):  # a local endpoint missing its address: every transcript would go to a public API
            raise CollectError(
                f"endpoint {name!r} has needs_key: false (a local server) but its calls would go to {url}: "
                f"{'no base_url is set, so the default applies' if url == OPENAI_URL else 'that is OpenAI'}. Set the "
                "server's base_url (e.g. http://127.0.0.1:8080/v1 for llama-server); nothing was sent"
            )
        return "no-key"
    if api_key_env is None:
        if not is_openai(url):
            raise CollectError(
                f"endpoint {name!r} ({url}) names no api_key_env: name the environment variable that holds its key "
                "(OPENAI_API_KEY is sent only to api.openai.com), or set needs_key: false for a server that takes none"
            )
        api_key_env = "OPENAI_API_KEY"
    key = os.environ.get(api_key_env)
    if not key:
        raise CollectError(
            f"endpoint {name!r} ({url}): the environment variable {api_key_env} that should hold its API key is "
            f"{'empty' if key == '' else 'not set'}; set it (a local server accepts any string), nothing was sent"
        )
    return key


def used_endpoints(design: Any) -> list[Any]:
    """The endpoints the design's conditions go to, in the order the design names them."""
    names = {c.endpoint for c in design.conditions}
    return [e for name, e in design.endpoints.items() if name in names]


def check_keys(design: Any, base_url: str | None = None) -> None:
    """Read every used endpoint's key variable, as a run would before its first call (for ``--dry-run``).

    Raises
    ------
    CollectError
        Naming the endpoint and the variable that is unset or empty (never a key).
    """
    for endpoint in used_endpoints(design):
        endpoint_key(endpoint.name, base_url or endpoint.base_url, endpoint.api_key_env, needs_key=endpoint.needs_key)


def check_addresses(design: Any, base_url: str | None = None) -> None:
    """Refuse, before any plan is shown, a keyless (local) endpoint whose calls would go to api.openai.com.

    Raises
    ------
    CollectError
        Naming the endpoint and the address its calls would go to.
    """
    for endpoint in used_endpoints(design):
        if not endpoint.needs_key:
            endpoint_key(endpoint.name, base_url or endpoint.base_url, endpoint.api_key_env, needs_key=False)
