"""Fixtures for the collection tests (helpers shared with other tests live in tests/helpers)."""

from __future__ import annotations

import pytest

from hce.sim import SimJudge, SimServer


@pytest.fixture
def serve():
    """Start a SimServer on a free loopback port for a judge (and optional required key); stopped after the test."""
    servers = []

    def start(judge: SimJudge | None = None, **kwargs) -> SimServer:
        server = SimServer(judge or SimJudge(seed=0), **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
