"""Benchmark: the study report (no Bayesian section) for a 20,000-attempt log.

Run: python bench/report.py
The log holds Experiments 1, 2, 3 and 5 at the PRD's proportions (5,000 / 3,750 / 4,000 /
5,770 attempts, scaled to 20,000 in all) from hce's simulated log. There is no peer library
that writes this report, so the line prints the time against the 30 s target.
"""

from __future__ import annotations

import tempfile
import time
import warnings

import pandas as pd

from hce.stats._simulate import simulated_log
from hce.study.report import study_report


def make_logs() -> list[pd.DataFrame]:
    logs = [
        simulated_log(experiment_id="EXP1_BaselineRubricUtility", condition="prompt_id", n_items=50, n_attempts=54,
                      noise={"P1.1": 1.5, "P1.2": 0.5}),
        simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=50, n_attempts=27,
                      noise={"P2.1": 0.5, "P2.2": 0.45, "P2.3": 0.35}),
        simulated_log(experiment_id="EXP3_ModelComparison", condition="model", n_items=50, n_attempts=22,
                      noise={"gpt-4o": 0.4, "o4-mini": 0.5, "o3": 0.35, "gpt-4.1-mini": 0.6}),
        simulated_log(n_items=577, n_attempts=11),
    ]
    return logs


def main() -> None:
    logs = make_logs()
    attempts = sum(len(log) for log in logs)
    times = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            study_report(logs).write(tmp)
            times.append(time.perf_counter() - start)
    print(f"study_report ({attempts:,} attempts, write all formats): hce {min(times):.2f} s, PEER n/a (target 30 s), ratio {min(times) / 30:.2f} of target")


if __name__ == "__main__":
    main()
