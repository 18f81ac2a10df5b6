"""Benchmark: the study report and the generic report, from 20,000 to 1,000,000 attempts.

Run: python bench/report.py            (the pilot, the 20k study report, then the 1M cases)
     python bench/report.py --pilot-only --baseline DIR   (the pilot against another tree, e.g. main's)
     python bench/report.py --case study-1m   (one case; also generic-1m, study-20k)

The study logs hold Experiments 1, 2, 3 and 5 at the PRD's proportions from hce's simulated
log: 20k is 50 items (577 for Exp 5) as in the PRD; 1M is 10,000 items judged in every
experiment, 2 x 14 + 3 x 7 + 4 x 5 + 1 x 31 attempts per item (280k / 210k / 200k / 310k).
The generic case is a non-PRD log of the same size: 10,000 items x 4 conditions x 25 attempts,
1% failed calls. Each 1M case runs in a child process so its peak RSS (getrusage of the
children) is its own. There is no peer library that writes these reports, so each line prints
the time against the issue's target (30 s for 20k; 60 s and 4 GB for 1M).

Pilot (issue 35: 10.4 s idle, 34 s under load; target < 5 s): profiled in CPU seconds
(cProfile with process_time, load 15-19 on 2 cores), 37 s of CPU: the variance decomposition's
profile-likelihood intervals 17.7 s (294 L-BFGS-B fits of 3-4 variances, each 50-80 ms of CPU
because OpenBLAS woke its threads for LAPACK calls on 4 x 4 matrices; 1 ms on one thread),
imports 7.4 s (seaborn and scipy.stats, which parses its distributions' docstrings),
writing 6.4 s (12 savefig calls: an SVG and a PNG of 6 figures), the rest of the
criterion sections ~6 s (spread, tests, reliability with its bootstrap). The fits now run
on one BLAS thread: 23 s of CPU, the variance part 2.8 s. The nine-criterion pilot in a
fresh process: 7.5 s of CPU against main's 21.6 s in the same run (load 17); at load 5-7,
best of 2-3: hce 7.7-8.7 s (cpu 6.9-7.6 s), main 7.7-16.7 s (cpu 9.2-17.1 s): main's cost swings
with the load (its OpenBLAS threads), ours does not. The 5 s target is not met yet.

study-20k and ``hce demo`` (issue 35: 40.8 s and 35 s idle; target 30 s each), profiled the same
way at load 12-16: study-20k took 54.1 s of CPU against main's 64.7 s in the same session
(``/usr/bin/time python bench/report.py --case study-20k`` on each tree). The demo's 106 s of CPU:
the study report 33 s (the generic sections 26 s: figures, spread, variance decomposition 6.5 s
with its profile intervals 3 s after the one-thread fix, reliability 5.6 s), collection
through the simulated judge ~21 s (the openai client's request building and JSON parsing in
the same process as the server), imports ~12 s. cProfile inflates matplotlib (many small
Python calls): one box plot costs 40 ms to build, 75 ms as PNG and 55 ms as SVG (process
time, one figure, best of 5), ~5 s for the demo's 29 figures, not the 20 s cProfile shows.
Not done: the figures and the demo's collection were left as they are.

Run: python bench/report.py --10m   (adds the 10,000,000-attempt Parquet log: 100,000 items x 4
conditions x 25 attempts, made once into the temp folder, read by the report as `hce report` does)

Measured 2026-11-24 on an idle 2-core machine: study-20k 10.2 s / 0.41 GB; study-1m 37.1 s /
1.14 GB; generic-1m 27.7 s / 0.92 GB; generic-10m-parquet 324.8 s / 6.32 GB (peak RSS of the
child; 7.83 GB before a criterion's sections copied only the columns they read). What made the
difference since the first 1M runs (97 s and 57 s), mostly in the variance decomposition
(hce.stats.variance_components): scalar-term models factor on a pattern fixed once
(ScalarElimination); profile-likelihood limits start from the crossing of the deviance with the
other variances held (half the inner minimisations); Friedman's block bootstrap over distinct
rank patterns; CSVs by pyarrow's writer.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import hce
from hce.rubric import load_rubric
from hce.stats._simulate import simulated_log

STUDY = (  # experiment, condition column, noise per condition
    ("EXP1_BaselineRubricUtility", "prompt_id", {"P1.1": 1.5, "P1.2": 0.5}),
    ("EXP2_PromptOptimization", "prompt_id", {"P2.1": 0.5, "P2.2": 0.45, "P2.3": 0.35}),
    ("EXP3_ModelComparison", "model", {"gpt-4o": 0.4, "o4-mini": 0.5, "o3": 0.35, "gpt-4.1-mini": 0.6}),
    ("EXP5_FinalToolValidation", "condition_id", {"C1": 0.3}),
)


def study_logs(items: tuple[int, ...], attempts: tuple[int, ...]) -> list[pd.DataFrame]:
    """Every row names its prompt and model, as a collected log does (a blank id stops an experiment)."""
    logs = [simulated_log(experiment_id=e, condition=c, noise=noise, n_items=n, n_attempts=a, random_state=k + 1)
            for k, ((e, c, noise), n, a) in enumerate(zip(STUDY, items, attempts))]  # fmt: skip
    logs = [log.assign(**{c: v for c, v in (("prompt_id", "P2.3"), ("model", "gpt-4o")) if c not in log}) for log in logs]
    # ... and its condition: one per prompt (Exp 1, 2) or model (Exp 3), as the study's designs make them
    return [log if "condition_id" in log else log.assign(condition_id=log["prompt_id"] + "|" + log["model"]) for log in logs]


def generic_log(n_items: int, n_conditions: int, n_attempts: int) -> pd.DataFrame:
    noise = {f"C{i}": 0.3 + 0.1 * i for i in range(n_conditions)}
    log = simulated_log(experiment_id="my_eval", n_items=n_items, n_attempts=n_attempts, noise=noise, error_rate=0.01)
    return log.assign(attempt_id=[f"a{i}" for i in range(len(log))])


PILOT_CRITERIA = ("citation", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct",
                  "synthesized", "stigmatizing")  # PDSQI-9's nine attributes, scored 1-5


def pilot_log() -> pd.DataFrame:
    """A pilot: 30 items x 3 conditions x 3 attempts = 270 rows, nine 1-5 criteria, no rubric named."""
    log = simulated_log(experiment_id="PDSQI_pilot", n_items=30, n_attempts=3, noise={"A": 0.3, "B": 0.5, "C": 0.8},
                        error_rate=0)  # fmt: skip
    rng = np.random.default_rng(35)
    latent = rng.uniform(1, 5, size=(30, len(PILOT_CRITERIA)))[log["item_id"].factorize()[0]]
    sd = log["condition_id"].map({"A": 0.3, "B": 0.5, "C": 0.8}).to_numpy()[:, None]
    scores = np.clip(np.rint(latent + rng.normal(size=latent.shape) * sd), 1, 5).astype(int)
    log = log.drop(columns=[*load_rubric("v5").criteria, "total", "target_total", "transcript_words"])
    return log.assign(attempt_id=[f"a{i}" for i in range(len(log))], **dict(zip(PILOT_CRITERIA, scores.T)))


def parquet_log() -> Path:
    """100,000 items x 4 conditions x 25 attempts as Parquet, made once (~2 min) and kept in the temp folder."""
    path = Path(tempfile.gettempdir()) / "hce-bench-generic-10m.parquet"
    if not path.exists():
        generic_log(100_000, 4, 25).to_parquet(path.with_suffix(".part"), index=False)
        path.with_suffix(".part").rename(path)
    return path


def _written(document):
    """The report, refused when a section was not computed: a bench of a half report measures nothing."""
    failed = [e for e in document.not_reported if e["status"] == "not computed"]
    if failed:
        raise SystemExit(f"not reported: {failed}")
    return document


def run_case(case: str) -> None:
    """Build one case's log, write its report, print seconds and the attempts (child process)."""
    warnings.simplefilter("ignore")
    if case == "generic-1m":
        from hce.report import report

        logs = [generic_log(10_000, 4, 25)]
        build = lambda out: report(logs[0], out=out)  # noqa: E731  (its Not reported: the variance fit's, see Notes)
    elif case == "generic-10m-parquet":
        from hce.report import report

        path = parquet_log()
        logs = [range(pq.ParquetFile(path).metadata.num_rows)]  # counted, not loaded: the report reads it
        build = lambda out: _written(report(path, out=out))  # noqa: E731  (read_log included, as hce report)
    else:
        from hce.study.report import study_report

        logs = study_logs((10_000,) * 4, (14, 7, 5, 31)) if case == "study-1m" else study_logs((50, 50, 50, 577), (54, 27, 22, 11))
        build = lambda out: _written(study_report(logs)).write(out)  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        build(Path(tmp) / "report")
        print(f"{time.perf_counter() - start:.3f} {sum(map(len, logs))}")


def measure(case: str, timeout: float) -> tuple[float, int, float] | None:
    """Seconds, attempts and peak RSS (GB) of the case in a child process; None past ``timeout``.

    ``os.wait4`` returns the child's own resource usage, so each case's peak RSS is its own
    (``RUSAGE_CHILDREN`` would keep the largest child so far).
    """
    child = subprocess.Popen([sys.executable, __file__, "--case", case], stdout=subprocess.PIPE, text=True)
    killer = threading.Timer(timeout, child.kill)
    killer.start()
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    killer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if child.returncode != 0:
        return None
    seconds, attempts = output.split()[-2:]
    return float(seconds), int(attempts), usage.ru_maxrss / 1e6  # kB on Linux


def time_pilot(source: Path, runs: int) -> tuple[float, float]:
    """Best wall time of ``hce report`` on the pilot log in a fresh process (imports included, as a
    user waits), with the CPU time of that run; ``source`` is the tree whose hce runs."""
    best = (float("inf"), float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pilot.jsonl"
        hce.write_log(pilot_log(), path)
        for k in range(runs):
            command = [sys.executable, "-c", "from hce.cli import main; main()", "report", str(path), "--out", str(Path(tmp) / f"r{k}")]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            # cwd=source puts that tree first on sys.path ('' for -c), whatever hce is installed
            subprocess.run(command, cwd=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            best = min(best, (wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
            if not (Path(tmp) / f"r{k}" / "report.html").is_file():
                raise SystemExit(f"the pilot report from {source} wrote no report.html")
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=["study-20k", "study-1m", "generic-1m", "generic-10m-parquet"])
    parser.add_argument("--10m", dest="ten_million", action="store_true",
                        help="also the 10,000,000-attempt Parquet log (minutes; target 10 min, 8 GB)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--baseline", type=Path, help="a source tree of hce (e.g. `git archive main | tar -x -C DIR`) "
                        "whose pilot report is timed in the same run, as the PEER")
    parser.add_argument("--runs", type=int, default=3, help="fresh runs of the pilot report; the best is printed")
    parser.add_argument("--pilot-only", action="store_true")
    args = parser.parse_args()
    if args.case:
        run_case(args.case)
        return
    print(f"# cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    (wall, cpu) = time_pilot(Path(__file__).resolve().parents[1], args.runs)
    if args.baseline:
        (b_wall, b_cpu) = time_pilot(args.baseline.resolve(), args.runs)
        peer = f"PEER hce at {args.baseline} {b_wall:.1f} s (cpu {b_cpu:.1f} s), ratio {b_wall / wall:.2f}"
    else:
        peer = "PEER n/a (pass --baseline DIR)"
    print(f"pilot (270 rows, 9 criteria, 3 conditions; hce report in a fresh process): hce {wall:.1f} s "
          f"(cpu {cpu:.1f} s), {peer} (target 5 s); load average now {os.getloadavg()[0]:.1f}", flush=True)
    if args.pilot_only:
        return
    cases = [("study-20k", 30, 4), ("study-1m", 60, 4), ("generic-1m", 60, 4)]
    cases += [("generic-10m-parquet", 600, 8)] if args.ten_million else []
    for case, target, memory in cases:
        if case == "generic-10m-parquet":
            parquet_log()  # made before the clock starts
        result = measure(case, max(args.timeout, 2 * target))
        if result is None:
            print(f"{case}: hce did not finish (killed after {args.timeout:.0f} s, or failed), PEER n/a (target {target} s)")
            continue
        seconds, attempts, gb = result
        print(f"{case} ({attempts:,} attempts, write all formats): hce {seconds:.1f} s, peak RSS {gb:.2f} GB, "
              f"PEER n/a (target {target} s, {memory} GB), ratio {seconds / target:.2f} of target")  # fmt: skip


if __name__ == "__main__":
    main()
