"""Benchmark: every wait issue 35 names, side by side in one run, with its target.

Run: python bench/waits.py [--baseline DIR] [--runs 3] [--skip bayes]

The cases come from the benchmarks that own them, each run in its own process one after the
other so that no two compete for the two cores: ``bench/startup.py`` (``hce --help`` and every
subcommand's help, ``hce sim-server`` until it answers), ``bench/report.py --quick`` (the
270-row pilot report, ``hce demo``, the 20,000-attempt study report; ``--baseline DIR``, a
``git archive`` of another commit, runs beside each as the peer), ``bench/reliability.py
--quick`` (Krippendorff's alpha from long data against pivot + ``krippendorff``) and
``bench/bayes.py --cases exp5`` (the Experiment-5 ordinal fit, from an empty compile cache and
a filled one, against plain ``pm.sample()``). Their own lines are printed as they come; the
summary at the end reads the figures back from them and prints one line per target::

    TARGET: measured X, target Y, met|NOT met

so the whole issue is checked by one command on one machine state. The peers, margins and
profiles are documented in each benchmark's own docstring.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NUMBER = r"([0-9][0-9,]*\.?[0-9]*)"


def run(script: str, *arguments: str) -> str:
    """Run ``bench/SCRIPT ARGUMENTS`` in a fresh interpreter, echoing and returning its stdout."""
    print(f"\n## python bench/{script} {' '.join(arguments)}", flush=True)
    child = subprocess.Popen(
        [sys.executable, str(HERE / script), *arguments],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in child.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    if child.wait() != 0:
        print(f"# bench/{script} exited with {child.returncode}", flush=True)
    return "".join(lines)


#: Each issue-35 target: its label, the benchmark that prints it, the pattern of its figure
#: (the first group), the target, the unit, and whether the figure must reach it (a ratio)
#: rather than stay under it (a time).
TARGETS = [
    ("pilot report (270 rows, 9 criteria)", "report", rf"^pilot .*?: hce {NUMBER} s", 5, " s", False),
    ("hce --help, slowest command", "startup", rf"--help: hce {NUMBER} s", 0.5, " s", False),
    ("hce sim-server ready", "startup", rf"sim-server printed its URL and answered: hce {NUMBER} s", 1.5, " s", False),
    ("hce demo", "report", rf"^hce demo .*?: hce {NUMBER} s", 30, " s", False),
    ("study report, 20,000 attempts", "report", rf"^study-20k .*?: hce {NUMBER} s", 30, " s", False),
    ("Bayesian Exp-5 fit, empty compile cache", "bayes", rf"^EXP5: hce {NUMBER} s", 60, " s", False),
    ("Bayesian Exp-5 min-ESS/s over plain PyMC", "bayes", rf"min-ESS/s ratio {NUMBER}", 2, "x", True),
    ("alpha from long data, 20 x 10,000", "reliability", rf"alpha long 20 x 10,000 .*?: {NUMBER}x", 5, "x", True),
]  # fmt: skip


def verdict(label: str, text: str | None, pattern: str, target: float, unit: str, at_least: bool) -> str:
    """One summary line: the worst figure ``pattern`` finds in ``text`` against ``target``
    (``text`` is ``None`` when its benchmark was skipped)."""
    if text is None:
        return f"{label}: skipped (--skip)"
    values = [float(m.group(1).replace(",", "")) for m in re.finditer(pattern, text, re.MULTILINE)]
    if not values:
        return f"{label}: not measured (its benchmark printed no figure), target {target:g}{unit}, NOT met"
    worst = min(values) if at_least else max(values)
    met = worst >= target if at_least else worst < target
    sign = ">=" if at_least else "<"
    return f"{label}: measured {worst:.2f}{unit}, target {sign} {target:g}{unit}, {'met' if met else 'NOT met'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="another hce tree, the peer of the report cases (bench/report.py --baseline)")
    parser.add_argument("--runs", type=int, default=3, help="fresh runs of each start-up case and of the pilot report")
    parser.add_argument("--skip", action="append", default=[], choices=["startup", "report", "reliability", "bayes"])
    args = parser.parse_args()
    print(f"# cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    benchmarks = {
        "startup": ["startup.py", "--runs", str(args.runs)],
        "report": ["report.py", "--quick", "--runs", str(args.runs), *(["--baseline", args.baseline] if args.baseline else [])],
        "reliability": ["reliability.py", "--quick"],
        "bayes": ["bayes.py", "--cases", "exp5"],
    }  # fmt: skip
    out = {name: None if name in args.skip else run(*command) for name, command in benchmarks.items()}
    lines = [verdict(label, out[source], *rest) for label, source, *rest in TARGETS]
    converged = re.search(r"hce cold and converged: (\w+)", out["bayes"] or "")
    if converged and converged.group(1) != "True":
        lines.append("Bayesian Exp-5 fit: did not converge (R-hat <= 1.01, bulk ESS >= 400, no divergences), NOT met")
    print(f"\n# issue 35 targets (load average now {os.getloadavg()[0]:.1f})")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
