"""Benchmark: `hce report --engine duckdb` on a partitioned Parquet log of 100,000,000 attempts,
and the 10,000,000-attempt log side by side with today's pandas path (issue 37).

Run: python bench/scale.py             (the 10M log, pandas then DuckDB; then the 100M log)
     python bench/scale.py --only 100m  (or 10m)
     python bench/scale.py --only 10m --engines dask,duckdb  (the 10M log in Dask, DuckDB its peer)

The 10M log is bench/report.py's (100,000 items x 4 conditions x 25 attempts, 1% failed calls,
one Parquet file, made once into the temp folder). The 100M log has the same items and
conditions with 250 attempts per cell, written once as Hive-partitioned Parquet
(``condition_id=C0/part-00.parquet``, ...) in chunks of 5,000 items, so making it never holds
more than a chunk (8 minutes under a load of 16, 680 MB of disk under /tmp, kept for the next run).
The engine returns tables of item x condition cells, so both logs give the report the same
400,000 cells: what grows is the engine's pass over the attempts. The cell-table REML fit
grows with the cells instead: 46-60 s per criterion at 200,000 cells (50,000 items x 4
conditions x 25 attempts) under a load of 13 on this 2-core machine, so a log of 1,000,000
items would spend its time there, not in the engine. Each report runs as `hce report` in a child
process; the peak RSS is the child's own (``os.wait4``). The issue's target for the 100M log:
< 300 s and < 4 GB peak RSS, with per-condition spread and variance-component sections. The
peer is hce's own pandas path (no other library writes these reports).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from report import parquet_log  # noqa: E402  (bench/report.py: the 10M log)

from hce.rubric import load_rubric  # noqa: E402

BIG = Path(tempfile.gettempdir()) / "hce-bench-generic-100m"
BIG_ITEMS, CHUNK, ATTEMPTS = 100_000, 5_000, 250


def big_log(attempts: int = ATTEMPTS, root: Path = BIG) -> Path:
    """100,000 items x 4 conditions x ``attempts`` (250) as partitioned Parquet in ``root``, made once
    (bench/engines.py makes its smaller logs here too).

    The generative model of hce.stats._simulate.simulated_log (latent 1-4 category scores per
    item, normal noise of SD 0.3 + 0.1 c in condition c, rounded and clipped to 1-4, 1% failed
    calls without scores), written straight from NumPy arrays with the log's identifiers and
    the columns the report reads.
    """
    done = root / "_complete.txt"
    if done.exists():
        return root
    criteria = list(load_rubric("v5").criteria)
    for k, start in enumerate(range(0, BIG_ITEMS, CHUNK)):
        rng = np.random.default_rng(k + 1)
        latent = rng.uniform(1, 4, size=(CHUNK, len(criteria)))
        for c in range(4):
            item = np.repeat(np.arange(CHUNK), attempts)
            scores = np.clip(np.rint(latent[item] + rng.normal(size=(item.size, len(criteria))) * (0.3 + 0.1 * c)), 1, 4)
            errored = rng.random(item.size) < 0.01
            scores[errored] = np.nan
            number = pa.array(item + start).cast(pa.string())
            attempt = np.tile(np.arange(1, attempts + 1), CHUNK)
            columns = {
                "attempt_id": pc.binary_join_element_wise(f"C{c}-", number, "-", pa.array(attempt).cast(pa.string()), ""),
                "experiment_id": pa.array(np.full(item.size, "my_eval")),
                "item_id": pc.binary_join_element_wise("T", pc.utf8_lpad(number, 7, "0"), ""),
                "attempt": pa.array(attempt),
                **{name: pa.array(scores[:, j]) for j, name in enumerate(criteria)},
                "total": pa.array(scores.sum(axis=1)),
                "error_flag": pa.array(errored),
            }
            folder = root / f"condition_id=C{c}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table(columns), folder / f"part-{k:02d}.parquet")
        print(f"  made {start + CHUNK:,} of {BIG_ITEMS:,} items", flush=True)
    done.touch()
    return root


def measure(path: Path, engine: str, timeout: float) -> tuple[float, float, float] | None:
    """Seconds, peak RSS (GB) and the machine's 5-minute load at the end of `hce report PATH
    --engine ENGINE` in a child process; None past ``timeout`` or when it fails. ``os.wait4``
    gives the child's own peak RSS; the load says what the shared machine was doing meanwhile."""
    with tempfile.TemporaryDirectory() as out:
        command = [str(Path(sys.executable).parent / "hce"), "report", str(path), "--engine", engine,
                   "--out", str(Path(out) / "report")]  # fmt: skip
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        killer = threading.Timer(timeout, child.kill)
        killer.start()
        stderr = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        killer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        written = (Path(out) / "report" / "report.md").exists()
    if child.returncode not in (0, 1) or not written:  # 1 and written: a section not computed, listed there
        print(f"  hce report --engine {engine} failed ({child.returncode}): {stderr[-1500:]}")
        return None
    return seconds, usage.ru_maxrss / 1e6, os.getloadavg()[1]  # kB on Linux; the 5-minute load at the end


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["10m", "100m"])
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--engines", default="duckdb,pandas",
                        help="the 10M log's engines: the one measured, then its peer (duckdb, pandas, polars, dask)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    if args.only in (None, "10m"):
        path = parquet_log()
        engine, peer = args.engines.split(",")
        results = {name: measure(path, name, args.timeout) for name in (engine, peer)}
        ours, theirs = results[engine], results[peer]
        text = lambda r: "did not finish" if r is None else f"{r[0]:.1f} s, peak RSS {r[1]:.2f} GB (load {r[2]:.1f})"  # noqa: E731
        ratio = f"{theirs[0] / ours[0]:.2f}" if ours and theirs else "n/a"
        print(f"generic-10m-parquet (10,000,000 attempts): hce --engine {engine} {text(ours)}, "
              f"PEER hce --engine {peer} {text(theirs)}, ratio {ratio} (load {load:.1f} at the start)")  # fmt: skip
    if args.only in (None, "100m"):
        path = big_log()
        result = measure(path, "duckdb", args.timeout)
        text = "did not finish" if result is None else f"{result[0]:.1f} s, peak RSS {result[1]:.2f} GB (load {result[2]:.1f})"
        print(f"generic-100m-partitioned (100,000,000 attempts): hce --engine duckdb {text}, PEER n/a "
              f"(pandas needs ~60 GB), target 300 s and 4 GB (load {load:.1f} at the start)")  # fmt: skip


if __name__ == "__main__":
    main()
