"""Benchmark: the study report and the generic report, from 20,000 to 1,000,000 attempts.

Run: python bench/report.py --quick --baseline DIR   (pilot, demo and study-20k, each beside the
                                 same case run from DIR, e.g. `git archive main | tar -x -C DIR`)
     python bench/report.py            (the pilot, the demo, the 20k study report, then the 1M cases)
     python bench/report.py --pilot-only --baseline DIR   (the pilot against another tree)
     python bench/report.py --case study-1m   (one case; also generic-1m, study-20k)

The study logs hold Experiments 1, 2, 3 and 5 at the PRD's proportions from hce's simulated
log: 20k is 50 items (577 for Exp 5) as in the PRD; 1M is 10,000 items judged in every
experiment, 2 x 14 + 3 x 7 + 4 x 5 + 1 x 31 attempts per item (280k / 210k / 200k / 310k).
The generic case is a non-PRD log of the same size: 10,000 items x 4 conditions x 25 attempts,
1% failed calls. Each case runs in a child process so its peak RSS (getrusage of the
children) is its own. No other library writes these reports: the peer of the pilot, the demo
and study-20k is the same case from the ``--baseline`` tree in the same run; each line prints
wall and CPU seconds (the machine is shared: CPU is what a change moves, wall what the load
adds). The 1M lines print the time against the issue's target (60 s and 4 GB).

Profiles (issue 35, 2026-11-26, load 7-16 on 2 cores; CPU seconds from time.process_time
around each function, which unlike cProfile does not inflate matplotlib's many small calls;
cProfile and pyinstrument for the call trees; ``-X importtime`` for the imports):

* study-20k took 46 s of CPU (main: 40.8 s wall idle): 22 s in the REML Hessian of the
  variance decomposition (``component_intervals.reml_covariance``: 4k^2 + 1 deviance
  evaluations per model, ~900 in all, 27-54 ms of CPU each where 0.9 ms sufficed), because
  OpenBLAS (NumPy's and SciPy's, two threads each) woke its threads for every LAPACK call on a
  150-250-row matrix and left them spinning; the same spin inflated every other BLAS call
  outside the few loops that already ran on one thread (lmer 3.2 s, profile limits 2.8 s).
  With ``OPENBLAS_NUM_THREADS=1`` the whole report took 20 s. Now every public statistic runs
  on one BLAS thread (``hce.stats._blas``, entered by the ``reads_frame`` door): 20 s of CPU,
  of which the variance decomposition 4.4 s, figures 5.4 s (28 figures: build 1.3 s, PNG 2.3 s,
  SVG 1.8 s), reliability 2.3 s (ICC's REML Newton steps 1.7 s), per-condition settings
  check 2.0 s (a string key joined per row: now only for a condition with two settings,
  0.03 s), tables 0.9 s, imports and logs 2.8 s.
* The pilot (270 rows, 9 criteria, 3 conditions), first pass (2026-11-26): 6.5 s of CPU in
  a fresh process: imports 1.8 s (scipy.stats 0.6 s, matplotlib and seaborn 0.5 s, pandas
  0.3 s; statsmodels' Holm adjustment, now hce's p_adjust), the criterion sections 2.9 s
  (variance decomposition 1.2 s: profile intervals 0.4 s, G/Phi pivot draws 0.34 s; spread
  figure 0.5 s; tests 0.4 s; reliability 0.55 s, the Krippendorff bootstrap now vectorised),
  writing 1.7 s (18 savefig calls 1.4 s; the tight box now measured once per figure).
* The pilot, second pass (2026-11-27; the machine at load 5-9 on 2 cores all along, so CPU
  seconds, best of 5 runs taking turns with main's, phases timed in one interpreter:
  ``PYTHONPATH=TREE python`` timing the imports, ``report()`` and ``write()``): main 7.6 s of
  CPU (imports 2.0, sections 3.1, writing 2.4) -> 6.7 s on one core (1.6, 2.7, 1.9):
  - G/Phi: chi-square quantiles of uniforms (``chi2.ppf(norm.cdf(z))``, gammaincinv: 60 ms of
    CPU a call, one call a criterion) -> chi-square variates drawn directly
    (``rng.chisquare``), each column sorted into the ranks of its correlated normal scores
    (the Gaussian copula by ranks): 8 ms, the same joint law up to Monte Carlo error. The
    draws stay 20,000: a 2.5% percentile's probability level then has Monte Carlo SE 0.0011,
    well inside the 0.005 a second decimal rounds away; fewer would show in the table.
  - Profile intervals of a balanced fit: searched from the crossing of the cheap bound (the
    other variances held) and each inner fit started from the nearest optimum profiled so
    far: the pilot's 9 variance decompositions 1.0 -> 0.7 s, limits equal to 1e-14.
  - seaborn imported only by the figure it draws (0.2 s); each table formatted once for
    LaTeX, Markdown and HTML, not three times (0.3 s).
  - The second core (``hce.report._beside``): with an idle second core (1-minute load below
    1.5 on 2 cores) the first criterion runs, then a forked child computes 4 of the other 8
    while the parent computes 4, and in writing a forked child writes the tables and half of
    the figures (PNG and SVG, its PNGs handed back for the HTML) while the parent writes the
    other half and the Markdown. Each criterion draws from its own
    spawned stream, so both ways give the same bytes (tests/report/test_generic.py). On a
    busy machine it stays on one core: the scheduler gives a session's processes one share,
    so a child only takes turns with its parent, and forking made writing slower (at load 9:
    7.2 s wall against 4.4 s).
  - ``hce report`` ends with ``os._exit`` once its files are written (after the atexit
    handlers and a flush): the interpreter's teardown took 0.5-0.8 s after the pilot.
  As ``hce report`` in a fresh process: ``python bench/report.py --pilot-only --baseline DIR
  --runs 3`` at load 6 on 2 cores (no idle core, so no fork): hce 17.1 s wall (8.2 s of CPU)
  against main's 18.7 s (9.2 s). To see what an idle machine gives, the same commands with
  this session's CPU share raised over the others' (``echo -15 > /proc/self/autogroup``,
  then 0 again; load 6 from the others) and the fork forced (``_beside.can_fork = lambda:
  True`` before ``main()``, as the load test would decide on an idle machine), 3 runs taking
  turns: main 6.5 / 7.2 / 7.6 s wall (6.5-7.6 s of CPU), hce forked 4.6 / 4.8 / 5.3 s (5.8-6.9 s
  of CPU in both processes), hce on one core 5.6 / 6.0 / 6.0 s. So under 5 s on an idle
  2-core machine (best 4.6 s, median 4.8 s), 5.6 s on one core.
  Left: matplotlib, ~150 ms of CPU a figure (build with tight_layout 50 ms, PNG 67 ms of
  which zlib 20 ms, SVG 51 ms: the text layout, FreeType's set_text and a font-table
  lookup per text per draw); imports 1.2-1.6 s (scipy.stats 0.6 s, matplotlib 0.4 s, pandas
  0.4 s), which the pilot needs (rank tests, chi-square and studentized-range laws, the figures).
* ``hce demo`` (issue 35 item 4; 2026-11-27, the machine at load 2-7 all session, never idle).
  Before, in one process (main; CPU per phase from time.process_time around each, load 4-5):
  21-27 s of CPU: imports 2.6 s; collection 5.5 s (860 calls, ~4.5 ms of client CPU a call:
  openai's request transform and its pydantic parse of the reply, heaviest for Exp 5's
  logprobs, ~600 tokens x 5 alternatives a reply; of the 5.5 s, 1.4 s was the judge's server
  thread, which took turns with the client on one interpreter lock); Exp 4 1.0 s; logs read
  1.0 s; the study report's build 8.7 s (the report of any log per experiment 6.6 s: 24
  criterion sections, each with its spread figure, variance decomposition, reliability and
  tests); writing 6.8 s (29 figures: PNG 3.2 s, SVG 1.9 s; 214 tables in four formats 1.5 s).
  Nothing per attempt was per run: no fsync per row (the write-ahead record is a pwrite, the
  log an append), prompts rendered once per item x condition, settings and design read once
  per experiment (one openai client per experiment: 6 TLS contexts, 0.2 s). Now: the judge is
  served from a forked process (``SimServer.start(process=True)``); the client reads each reply's raw JSON instead of the
  openai SDK's objects (80 P2.3 calls with top_logprobs 5: 0.76 s of client CPU, was 1.70 s;
  0.20 s, was 0.34 s, for score blocks); the figures were rendered by one forked worker per
  spare core while the tables were written (in the merge this gave way to the pilot's
  ``hce.report._beside``: a forked child writes the tables and half of the figures; same
  bytes, one-process fallback). Every table but cost/latency and every figure is byte-identical to main's; the
  logs differ from main's only where two runs of main differ (latency, timestamp, and cached
  tokens, which fill in arrival order). Final runs, taking turns with main, 4 each, load 2.2-2.7
  (``cd TREE && python -c "from hce.cli import main; main()" demo --out OUT``, wall by the
  clock, CPU by getrusage at exit): hce 20.3, 20.5, 21.0, 23.2 s wall, its process 15.7-18.9 s
  of CPU and its children (judge, figure worker) 3.6-4.2 s; main 21.0, 22.6, 23.1, 23.7 s,
  19.9-22.3 s. Earlier in the session (before the client and one-worker changes, load 4-6) the
  two trees' walls overlapped (hce 69-78 s, main 72-87 s): with no free core the split work
  only helps as far as it cuts CPU. Left: the spread figure's two tight_layout passes
  (hce.report.figures.sd_by_condition, a third of building a figure), the G/Phi pivot draws'
  chi-square quantiles (1.3 s), the openai package's import (0.6 s), tables in four formats (1.5 s).
* study-20k, same run: hce 16.4 s wall (15.3 s of CPU) against main's 37.7 s (30.4 s): target met.
* All three on the idle machine after this session's merge (2026-11-27 04:00 UTC, load 0.9-1.0,
  ``python bench/waits.py --baseline DIR`` with DIR = ``git archive`` of the previous main,
  10327e1): pilot hce 3.8 s wall (5.4 s of CPU in both processes) against 5.7 s (5.9 s); demo
  13.8 s (18.1 s) against 18.9 s (19.3 s); study-20k 8.2 s (8.3 s) against 12.5 s (12.5 s). The
  pilot on one core (``taskset -c 0``, so no fork), 3 runs each: hce 4.4-4.6 s, previous
  main 5.4-5.8 s.
* Repeated grouping is not where the time goes: pandas' groupby code is 0.06 of the pilot's
  12.5 s and 0.2 of study-20k's 111 s under cProfile (DataFrame.groupby calls 0.08 s and 0.27 s).

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

ROOT = Path(__file__).resolve().parents[1]

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
    """Build one case's log, write its report, print wall and CPU seconds and the attempts (child process)."""
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
        start, cpu = time.perf_counter(), time.process_time()
        build(Path(tmp) / "report")
        print(f"{time.perf_counter() - start:.3f} {time.process_time() - cpu:.3f} {sum(map(len, logs))}")


def measure(case: str, timeout: float, source: Path = ROOT) -> tuple[float, float, int, float] | None:
    """Seconds (wall and CPU), attempts and peak RSS (GB) of the case in a child process that
    imports hce from ``source``; None past ``timeout``.

    ``os.wait4`` returns the child's own resource usage, so each case's peak RSS is its own
    (``RUSAGE_CHILDREN`` would keep the largest child so far).
    """
    env = {**os.environ, "PYTHONPATH": str(source)}  # before the editable install of this tree
    child = subprocess.Popen([sys.executable, __file__, "--case", case], stdout=subprocess.PIPE, text=True, env=env)
    killer = threading.Timer(timeout, child.kill)
    killer.start()
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    killer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if child.returncode != 0:
        return None
    seconds, cpu, attempts = output.split()[-3:]
    return float(seconds), float(cpu), int(attempts), usage.ru_maxrss / 1e6  # kB on Linux


def time_command(sources: list[Path], runs: int, arguments: list[str], made: str) -> list[tuple[float, float]]:
    """Best wall time of ``hce ARGUMENTS --out OUT`` in a fresh process (imports included, as a
    user waits), with the CPU time of that run, for each tree in ``sources``; the trees take
    turns, run by run, so a change in the machine's load falls on each alike. ``made`` is the
    file the command must have written into OUT."""
    best = [(float("inf"), float("inf"))] * len(sources)
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(runs):
            for i, source in enumerate(sources):
                out = Path(tmp) / f"r{k}-{i}"
                command = [sys.executable, "-c", "from hce.cli import main; main()", *arguments, "--out", str(out)]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                # cwd=source puts that tree first on sys.path ('' for -c), whatever hce is installed
                subprocess.run(command, cwd=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                best[i] = min(best[i], (wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
                if not (out / made).is_file():
                    raise SystemExit(f"hce {arguments[0]} from {source} wrote no {made}")
    return best


def side_by_side(label: str, ours: tuple[float, float] | None, peer: tuple[float, float] | None, baseline: Path | None,
                 target: str) -> str:
    """``label: hce W s (cpu C s), PEER ...`` with the baseline tree's run as the peer."""
    hce_part = f"hce {ours[0]:.1f} s (cpu {ours[1]:.1f} s)" if ours else "hce did not finish"
    if baseline is None:
        peer_part = "PEER n/a (pass --baseline DIR)"
    elif peer is None:
        peer_part = f"PEER hce at {baseline} did not finish"
    else:
        ratio = f", ratio {peer[0] / ours[0]:.2f} (cpu {peer[1] / ours[1]:.2f})" if ours else ""
        peer_part = f"PEER hce at {baseline} {peer[0]:.1f} s (cpu {peer[1]:.1f} s){ratio}"
    return f"{label}: {hce_part}, {peer_part} (target {target}); load average now {os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=["study-20k", "study-1m", "generic-1m", "generic-10m-parquet"])
    parser.add_argument("--10m", dest="ten_million", action="store_true",
                        help="also the 10,000,000-attempt Parquet log (minutes; target 10 min, 8 GB)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--baseline", type=Path, help="a source tree of hce (e.g. `git archive main | tar -x -C DIR`) "
                        "whose pilot report, demo and study-20k report are timed in the same run, as the PEER")
    parser.add_argument("--runs", type=int, default=3, help="fresh runs of the pilot report and of the demo; the best is printed")
    parser.add_argument("--pilot-only", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the pilot, the demo and study-20k only (no 1M cases)")
    args = parser.parse_args()
    if args.case:
        run_case(args.case)
        return
    baseline = args.baseline.resolve() if args.baseline else None
    print(f"# cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pilot.jsonl"
        hce.write_log(pilot_log(), path)
        ours, *peer = time_command([ROOT, *([baseline] if baseline else [])], args.runs, ["report", str(path)], "report.html")
        print(side_by_side("pilot (270 rows, 9 criteria, 3 conditions; hce report in a fresh process)",
                           ours, peer[0] if peer else None, baseline, "5 s"), flush=True)  # fmt: skip
    if args.pilot_only:
        return
    ours, *peer = time_command([ROOT, *([baseline] if baseline else [])], args.runs, ["demo"], "report.html")
    print(side_by_side("hce demo (fresh process: collection through the simulated judge, then the study report)",
                       ours, peer[0] if peer else None, baseline, "30 s"), flush=True)  # fmt: skip
    peer = measure("study-20k", args.timeout, baseline) if baseline else None
    ours = measure("study-20k", args.timeout)
    print(side_by_side(f"study-20k ({ours[2] if ours else 0:,} attempts, study_report(logs).write(), all formats)",
                       ours and ours[:2], peer and peer[:2], baseline, "30 s"), flush=True)  # fmt: skip
    if args.quick:
        return
    cases = [("study-1m", 60, 4), ("generic-1m", 60, 4)]
    cases += [("generic-10m-parquet", 600, 8)] if args.ten_million else []
    for case, target, memory in cases:
        if case == "generic-10m-parquet":
            parquet_log()  # made before the clock starts
        result = measure(case, max(args.timeout, 2 * target))
        if result is None:
            print(f"{case}: hce did not finish (killed after {args.timeout:.0f} s, or failed), PEER n/a (target {target} s)")
            continue
        seconds, cpu, attempts, gb = result
        print(f"{case} ({attempts:,} attempts, write all formats): hce {seconds:.1f} s (cpu {cpu:.1f} s), peak RSS {gb:.2f} GB, "
              f"PEER n/a (target {target} s, {memory} GB), ratio {seconds / target:.2f} of target")  # fmt: skip


if __name__ == "__main__":
    main()
