"""Public names a package imports at their first use (PEP 562), so importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def import_public(namespace: dict[str, Any], home: Mapping[str, str], name: str) -> Any:
    """``name`` from the module ``home[name]``, kept in the package's ``namespace`` so that later
    lookups find it there and skip the package's ``__getattr__``."""
    value = getattr(importlib.import_module(home[name]), name)
    namespace[name] = value
    return value
