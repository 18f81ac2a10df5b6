"""Benchmark: the engines of issue 43 on one partitioned Parquet log, with a size flag.

Run: python bench/engines.py --size 20m                       (every engine installed, hce report)
     python bench/engines.py --size 20m --cases dupcheck       (the log check alone: DuckDB, its memory limit)
     python bench/engines.py --size 100m --engines duckdb      (the 100M DuckDB target: < 300 s, < 4 GB)
     python bench/engines.py --size 20m --engines spark --spark-master "local[2]"

The log is 100,000 items x 4 conditions x (size / 400,000) attempts per cell, as
bench/scale.py writes it (Hive folders ``condition_id=C0/part-00.parquet``, chunks of 5,000
items, 1% failed calls), made once into the temp folder and kept: 20m is 50 attempts a cell, as
the issue's 20M log; 100m is 250, bench/scale.py's own log (the same folder, reused). Each run is
a child process under ``/usr/bin/time -v`` (its peak RSS, "Maximum resident set size"), and the
machine's load is printed beside every time: on the shared 2-core machine no number is an
idle-machine number unless its load says so.

Cases:

* ``report``: ``hce report LOG --engine E`` for each engine of ``--engines``; the peer is
  the first engine named (DuckDB by default), so the ratio is its time over this engine's.
* ``dupcheck``: ``hce.read_log(LOG, engine="duckdb")`` alone (the required columns, the flag, the
  repeated-attempt check), at ``--memory-limit`` (default 1GB); the peer is the plain DuckDB
  query it replaced, ``GROUP BY attempt_id HAVING count(*) > 1`` over the same files.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import ATTEMPTS, big_log  # noqa: E402  (bench/scale.py: the 100M log and its layout)

SIZES = {"1m": 2, "20m": 50, "100m": 250}  # attempts per item x condition cell of 100,000 items x 4 conditions


def partitioned_log(attempts: int) -> Path:
    """100,000 items x 4 conditions x ``attempts`` as Hive-partitioned Parquet, made once (bench/scale.py's layout)."""
    if attempts == ATTEMPTS:  # bench/scale.py's own 100M log, kept there
        return big_log()
    return big_log(attempts, Path(tempfile.gettempdir()) / f"hce-bench-engines-{attempts * 4 / 10:g}m-v5")  # 0.8m, 20m rows


def timed(command: list[str], timeout: float) -> tuple[float, float, int] | None:
    """Wall seconds, peak RSS (GB, ``/usr/bin/time -v``) and exit code of ``command``; None past ``timeout``."""
    start = time.perf_counter()
    try:
        done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    seconds = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if done.returncode not in (0, 1):
        print(f"  failed ({done.returncode}): {done.stderr[-1200:]}", flush=True)
    return seconds, int(peak[1]) / 1e6 if peak else float("nan"), done.returncode


def report_command(log: Path, engine: str, out: str, args) -> list[str]:
    command = [sys.executable, "-m", "hce.cli", "report", str(log), "--engine", engine, "--out", out]
    if engine in ("duckdb", "spark") and args.memory_limit:
        command += ["--memory-limit", args.memory_limit]
    if engine == "spark" and args.spark_master:
        command += ["--spark-master", args.spark_master]
    return command


def check_command(log: Path, memory: str, plain: bool) -> list[str]:
    """The log check through hce (``plain`` False), or the bare DuckDB query it replaced."""
    if plain:
        code = (f"import duckdb; c = duckdb.connect(config={{'memory_limit': {memory!r}, 'temp_directory': "
                f"{str(Path(tempfile.gettempdir()) / 'hce-duckdb')!r}}}); print(c.sql(\"select count(*) from (select "
                f"attempt_id from read_parquet('{log}/**/*.parquet', hive_partitioning=true) group by attempt_id having "
                "count(*) > 1)\").fetchall())")  # fmt: skip
    else:
        code = f"import hce.engines as e; e.scan_log({str(log)!r}, engine='duckdb', memory={memory!r}); print('checked')"
    return [sys.executable, "-c", code]


def line(case: str, ours, theirs, peer: str) -> str:
    text = lambda r: "did not finish" if r is None else f"{r[0]:.1f} s (peak RSS {r[1]:.2f} GB, exit {r[2]})"  # noqa: E731
    ratio = f"{theirs[0] / ours[0]:.2f}" if ours and theirs else "n/a"
    return f"{case}: hce {text(ours)}, PEER {peer} {text(theirs)}, ratio {ratio} (load {os.getloadavg()[0]:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=list(SIZES), default="20m")
    parser.add_argument("--cases", default="report", help="comma-separated: report, dupcheck")
    parser.add_argument("--engines", default="duckdb,polars,dask,spark", help="report: the first is the peer")
    parser.add_argument("--memory-limit", default=None, help="DuckDB and Spark (hce report --memory-limit); dupcheck: 1GB")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f} at the start; making or reusing the {args.size} log", flush=True)
    log = partitioned_log(SIZES[args.size])
    cases = args.cases.split(",")
    if "dupcheck" in cases:
        memory = args.memory_limit or "1GB"
        ours = timed(check_command(log, memory, plain=False), args.timeout)
        theirs = timed(check_command(log, memory, plain=True), args.timeout)
        print(line(f"dupcheck-{args.size}-duckdb-{memory}", ours, theirs, "bare DuckDB GROUP BY"), flush=True)
    if "report" in cases:
        engines = args.engines.split(",")
        results = {}
        for engine in engines:
            with tempfile.TemporaryDirectory() as out:
                results[engine] = timed(report_command(log, engine, str(Path(out) / "report"), args), args.timeout)
            print(line(f"report-{args.size}-{engine}", results[engine], results[engines[0]], f"--engine {engines[0]}"), flush=True)


if __name__ == "__main__":
    main()
