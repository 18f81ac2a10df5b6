"""Helpers for the collection tests: a fast-retrying client, small designs, test transcripts."""

from __future__ import annotations

from hce.collect.call.client import JudgeClient
from hce.sim import SimServer

# Short, distinct transcripts written for these tests (none quotes a Rubric v5.0 example).
TRANSCRIPTS = {
    "T1": "Doctor: What brings you in?\nPatient: My belly is sore.\nDoctor: Since when?\nPatient: Dunno. A while.",
    "T2": "Doctor: How is your diet?\nPatient: Mostly rice and chicken, some fruit, and coffee twice a day.",
    "T3": "Doctor: Any exercise?\nPatient: I cycle to work daily, about 40 minutes. Is swimming better for my back?",
}
MODEL = "gpt-4.1-mini-2025-04-14"


def fast_client(server: SimServer, **kwargs) -> JudgeClient:
    """A client with millisecond backoff, so retry tests take no time."""
    options = dict(base_url=server.url, api_key="sk-test", backoff_base=0.001, backoff_max=0.01, random_state=0)
    options.update(kwargs)
    return JudgeClient(**options)


def design(prompts=("P1.2", "P2.3"), attempts=3, items=TRANSCRIPTS, **extra) -> dict:
    """A design mapping: items x one condition per prompt x attempts."""
    spec = {
        "experiment_id": "TEST",
        "attempts": attempts,
        "defaults": {"model": MODEL, "temperature": 0.1, "max_tokens": 1000},
        "conditions": [{"prompt": p} for p in prompts],
        "items": [{"id": k, "text": v} for k, v in items.items()],
    }
    spec.update(extra)
    return spec



def kill_mid_run(design_path, log, *, at_least: int, env: dict | None = None) -> int:
    """Run ``hce collect`` in a subprocess, SIGKILL it once ``log`` has ``at_least`` lines; the lines then logged."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    command = [sys.executable, "-c", "from hce.cli import main; main()", "collect", str(design_path), "--log", str(log)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or log.read_bytes().count(b"\n") < at_least):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return log.read_bytes().count(b"\n")
