"""One `hce demo` + `hce manuscript` per test session, for the tests that read their outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hce.study.demo import run_demo
from hce.study.manuscript import manuscript


@pytest.fixture(scope="session")
def demo_outputs(tmp_path_factory) -> Path:
    """The demo's report folder (``report.md``, ``tables/``, ``figures/``) with ``manuscript/`` written into it (a minute)."""
    out = run_demo(tmp_path_factory.mktemp("demo_outputs") / "demo")
    manuscript(out)
    return out
