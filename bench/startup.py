"""Benchmark: start-up time of ``import hce``, ``import hce.stats`` and ``hce --help``.

Run: python bench/startup.py [--runs 5]
Each case runs in a fresh interpreter (``python -c``) from this tree's root, best of
``--runs``; the wall time is printed with the CPU time of that run (user + system), which
a machine shared with other jobs inflates much less than the wall time.

Peer: there is no other package that does what hce does, so the peer is the floor under
each case: the same interpreter importing only the third-party packages the case cannot
do without (pandas for ``hce``; pandas and scipy.stats for ``hce.stats``; pandas and
typer for the CLI). The ratio says how much hce adds on top of its dependencies. The last
line is what the first Bayesian call pays on top of ``import hce.stats`` (PyMC and ArviZ
load then, issue #20), for scale.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"# cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}; best of {args.runs} fresh runs")
    for case, (ours, floor) in CASES.items():
        (t_hce, c_hce), (t_peer, c_peer) = best_run(ours, args.runs), best_run(floor, args.runs)
        print(f"{case}: hce {t_hce:.2f} s (cpu {c_hce:.2f} s), PEER {floor} {t_peer:.2f} s (cpu {c_peer:.2f} s), "
              f"ratio {t_hce / t_peer:.2f}")
    print(f"# load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
