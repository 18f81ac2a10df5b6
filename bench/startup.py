"""Benchmark: start-up time of ``import hce``, ``import hce.stats``, every ``hce ... --help`` and ``hce sim-server``.

Run: python bench/startup.py [--runs 5] [--only collect]
Each case runs in a fresh interpreter (``python -c``) from this tree's root, best of
``--runs``; the wall time is printed with the CPU time of that run (user + system), which
a machine shared with other jobs inflates much less than the wall time.

Peer: there is no other package that does what hce does, so the peer is the floor under
each case: the same interpreter importing only the third-party packages the case cannot
do without (pandas for ``hce``; pandas and scipy.stats for ``hce.stats``; pandas and
typer for the CLI). The ratio says how much hce adds on top of its dependencies. The
Bayesian line is what the first Bayesian call pays on top of ``import hce.stats`` (PyMC and
ArviZ load then, issue #20), for scale.

Every command's ``--help`` (issue 35: each must parse in < 0.5 s) is compared with a
one-command Typer app's ``--help``, the floor any Typer CLI pays. ``hce sim-server`` is timed
from launch until the URL it prints has answered ``GET /v1/models`` (issue 35: < 1.5 s, and
the line comes the moment the port listens, so scripts read it instead of sleeping); its
peer is ``python -u -m http.server 0`` timed to its "Serving HTTP" line and one ``GET /``.

``hce collect --dry-run`` and ``hce collect`` on a 20-item, 2-condition design (issue 44: < 1 s to
the estimate, and to the first request) are compared with ``hce --help`` (the CLI's own floor:
Typer, Rich and hce.cli) and with ``python -c pass`` (the interpreter's floor); the first request
is timed from launch until a listening socket of this script accepts the run's connection.
Profile (issue 44, ``python -X importtime``, load 14-20): the dry run imported the openai client
(4.8 s of its 9.4 s of imports there: openai.types' pydantic models) although it sends nothing;
``hce.collect.call.client`` now imports ``openai`` at its first use. pandas (4.2 s there, ~0.35 s
idle) still loads: the estimate is a DataFrame and the design reads the log schema.

Issue 44, second step (2-core machine shared with a compile and four other sessions): ``hce collect`` moved to
``hce._cli_collect``, which imports only what the branch it takes needs; the dry run's estimate and projection are
plain rows (``estimate_rows``, ``project_rows``); keys are read by ``hce.collect.call.keys`` without the HTTP client;
the base modules a design reads through (``log_schema``, ``log_files``, ``log_writer``, ``_checks``,
``stop_interval``) import pandas and NumPy inside the functions that use them. The dry run now imports none of
pandas, NumPy, PyArrow, asyncio, SciPy, httpx or openai (``tests/test_import_cost.py``), and prints byte for byte
what it printed before: best of 3, before 4.25 s wall (1.04 s CPU) at load 8.2, after 1.86 s wall (0.59 s CPU) at
load 13.3; the CPU time is the fair comparison on this machine (``hce --help`` itself took 0.65 s wall, 0.26 s CPU).
At load 3.4 (best of 3): the dry run 0.43 s wall (0.37 s CPU; ``hce --help`` 0.24 s), under the issue's 1 s.
``hce collect`` to its first request still loads pandas (the log writer and the run's pipeline) and asyncio: 1.44 s
at load 3.4, not yet under 1 s.

Issue 44, third step (2026-12-02, load 0.5, best of 5, bytecode compiled as an installed package has it): the run
no longer loads pandas, NumPy or PyArrow before its first request (the resume check reads ``hce.log_files``; the
score parser tests for a NumPy bool only when NumPy is loaded; ``tests/test_import_cost.py`` stops the child at
its first connect). To the first request: 1.09 s; the dry run 0.45 s. The floor under the first request is the
official client itself: ``python -c "import openai"`` takes 0.68 s here (its package imports every API type,
``openai.types``, 93% of it), and the CLI's own floor (``hce --help``) 0.25 s, together 0.93 s before hce reads the
design; what hce adds on top of both is about 0.16 s (the design, the rubric's templates, the lock, the loop).

Profile (issue 35, ``python -X importtime``, 2-core machine, load 1.2): ``hce --help`` and
every subcommand's help already took 0.18-0.36 s idle: hce.cli imports only typer and rich
(66 ms of imports) and each command imports its layer inside its body. ``hce sim-server``
took 1.3 s of imports before it listened: ``hce.collect/__init__`` imported every module of
the layer, so the simulator loaded the openai client (0.5 s) and, through the price table,
pandas (0.3 s). ``hce.collect`` now loads its names on first use (PEP 562) and pandas loads
only where a price table is built: the simulator imports in 0.08 s and answers in ~0.25 s.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELP = "import sys; sys.argv = ['hce', '--help']; from hce.cli import main; main()"
CASES = {
    "import hce": ("import hce", "import pandas"),
    "import hce.stats": ("import hce.stats", "import pandas, scipy.stats"),
    "hce --help": (HELP, "import pandas, typer"),
    "first Bayesian call (pymc + arviz after hce.stats)": (
        "import hce.stats, pymc, arviz", "import hce.stats",
    ),
}
# the floor of any Typer command line: one command, its --help
TYPER_HELP = ("import sys, typer; sys.argv = ['x', '--help']; app = typer.Typer(); "
              "app.command()(lambda name: None); app()")  # fmt: skip
SIM_SERVER = "import sys; sys.argv = ['hce', 'sim-server', '--port', '0']; from hce.cli import main; main()"
URL = re.compile(r"http://127\.0\.0\.1:\d+(/v1)?|port (\d+)")


def commands() -> list[list[str]]:
    """Every command path of the ``hce`` CLI, e.g. ``["log", "validate"]``."""
    import typer.main

    from hce.cli import app

    def walk(command, path):
        if hasattr(command, "commands"):  # a group
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield path

    return list(walk(typer.main.get_command(app), []))


def best_run(statement: str, runs: int) -> tuple[float, float]:
    """Best wall time of ``python -c statement`` over ``runs`` fresh runs, with its CPU time."""
    best = (float("inf"), float("inf"))
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # cwd=ROOT puts this tree first on sys.path ('' for -c), whatever hce is installed
        subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (wall, cpu))
    return best


def first_answer(argv: list[str], path: str, runs: int) -> float:
    """Best time over ``runs`` from launching ``argv`` until the address in its first stdout
    line answers ``GET path``."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            found = URL.search(process.stdout.readline())
            origin = (f"http://127.0.0.1:{found.group(2)}" if found.group(2) else found.group(0).removesuffix("/v1"))
            with urllib.request.urlopen(origin + path, timeout=30) as response:
                response.read()
            best = min(best, time.perf_counter() - start)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return best


def collect_design(folder: Path) -> Path:
    """A 20-item, 2-condition design whose endpoint is ``HCE_BENCH_URL`` (filled in per run)."""
    import yaml

    spec = {"experiment_id": "BENCH", "attempts": 3, "defaults": {"model": "gpt-4.1-mini", "max_tokens": 50},
            "endpoint": {"base_url": "http://127.0.0.1:9/v1", "needs_key": False, "pricing": "none", "timeout": 5,
                         "max_retries": 0},
            "conditions": [{"prompt": "P1.2"}, {"prompt": "P2.1"}],
            "items": [{"id": f"T{i}", "text": f"Doctor: How are you {i}?\nPatient: I walk sometimes."} for i in range(20)]}
    path = folder / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def first_request(design: Path, log: Path, runs: int) -> float:
    """Best time over ``runs`` from launching ``hce collect`` until its first request reaches a socket here."""
    import socket

    import yaml

    best = float("inf")
    for _ in range(runs):
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(16)
            spec = yaml.safe_load(design.read_text())
            spec["endpoint"]["base_url"] = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
            design.write_text(yaml.safe_dump(spec))
            log.unlink(missing_ok=True)
            argv = ["hce", "collect", str(design), "--log", str(log)]
            statement = f"import sys; sys.argv = {argv!r}; from hce.cli import main; main()"
            start = time.perf_counter()
            process = subprocess.Popen([sys.executable, "-c", statement], cwd=ROOT, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
            listener.settimeout(60)
            connection, _ = listener.accept()
            best = min(best, time.perf_counter() - start)
            connection.close()
            process.kill()
            process.wait(timeout=30)
    return best


def collect_cases(runs: int) -> None:
    """``hce collect --dry-run`` and ``hce collect`` to its first request, against both floors."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        design, log = collect_design(Path(folder)), Path(folder) / "log.jsonl"
        argv = ["hce", "collect", str(design), "--log", str(log), "--dry-run"]
        t_dry, c_dry = best_run(f"import sys; sys.argv = {argv!r}; from hce.cli import main; main()", runs)
        t_run = first_request(design, log, runs)
    (t_help, c_help), (t_pass, c_pass) = best_run(HELP, runs), best_run("pass", runs)
    # the floor of any run through the official client: importing it (its package imports every API type)
    t_client, c_client = best_run("import openai", runs)
    for case, wall, cpu in (("hce collect --dry-run (20 items x 2 conditions)", t_dry, c_dry),
                            ("hce collect to its first request (20 items x 2 conditions)", t_run, None)):
        shown = f"hce {wall:.2f} s" + (f" (cpu {cpu:.2f} s)" if cpu is not None else "")
        print(f"{case}: {shown}, PEER hce --help {t_help:.2f} s (cpu {c_help:.2f} s), ratio {wall / t_help:.2f}; "
              f"PEER python -c pass {t_pass:.2f} s (cpu {c_pass:.2f} s), ratio {wall / t_pass:.2f}; "
              f"PEER import openai {t_client:.2f} s (cpu {c_client:.2f} s), ratio {wall / t_client:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["collect"], help="only the hce collect cases (issue 44)")
    args = parser.parse_args()
    # an installed hce has its bytecode (pip compiles on install); an editable tree under
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module in every run and time the compiler
    compileall.compile_dir(ROOT / "hce", quiet=1)
    print(f"# cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}; best of {args.runs} fresh runs")
    collect_cases(args.runs)
    if args.only == "collect":
        print(f"# load average at end: {os.getloadavg()[0]:.1f}")
        return
    for case, (ours, floor) in CASES.items():
        (t_hce, c_hce), (t_peer, c_peer) = best_run(ours, args.runs), best_run(floor, args.runs)
        print(f"{case}: hce {t_hce:.2f} s (cpu {c_hce:.2f} s), PEER {floor} {t_peer:.2f} s (cpu {c_peer:.2f} s), "
              f"ratio {t_hce / t_peer:.2f}")
    t_floor, c_floor = best_run(TYPER_HELP, args.runs)
    for path in commands():
        statement = f"import sys; sys.argv = ['hce', *{path!r}, '--help']; from hce.cli import main; main()"
        t_hce, c_hce = best_run(statement, args.runs)
        print(f"hce {' '.join(path)} --help: hce {t_hce:.2f} s (cpu {c_hce:.2f} s), PEER one-command typer --help "
              f"{t_floor:.2f} s (cpu {c_floor:.2f} s), ratio {t_hce / t_floor:.2f}")
    t_hce = first_answer([sys.executable, "-c", SIM_SERVER], "/v1/models", args.runs)
    t_peer = first_answer([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"], "/", args.runs)
    print(f"hce sim-server printed its URL and answered: hce {t_hce:.2f} s, PEER python -m http.server {t_peer:.2f} s, "
          f"ratio {t_hce / t_peer:.2f}")
    print(f"# load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
