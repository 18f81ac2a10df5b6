"""Benchmark: the write-ahead record's cost per reply (hce.collect.running.journal), against writing the log alone.

Run: python bench/journal.py [--rows 2000]

Each reply of a run is written twice, to ``<log>.wal`` and to the log, so a reply paid
for survives a log that cannot be written (issue 34). The peer is the log writer alone,
as runs wrote before. Rows are 13 kB, a P2.1 request with Rubric v5.0 embedded. Best of 3.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from hce.collect.running.journal import Journal
from hce.log import LogWriter

ROW = {"attempt_id": "x", "item_id": "T1", "attempt": 1, "request": [{"role": "user", "content": "y" * 13_000}],
       "response_text": "z" * 300, "error_flag": False}


def best_of(make, rows: int, write) -> float:
    best = float("inf")
    for _ in range(3):
        writer = make(os.path.join(tempfile.mkdtemp(), "log.jsonl"))
        started = time.perf_counter()
        for i in range(rows):
            write(writer, [dict(ROW, attempt_id=f"a{i}")])
        best = min(best, time.perf_counter() - started)
        writer.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    rows = parser.parse_args().rows
    hce = best_of(Journal, rows, Journal.write)
    peer = best_of(LogWriter, rows, LogWriter.append_many)
    print(f"journal, {rows:,} rows of 13 kB: hce {hce:.3f} s, PEER (log alone) {peer:.3f} s, ratio {hce / peer:.2f}")


if __name__ == "__main__":
    main()
