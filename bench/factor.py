"""Benchmark hce.stats.factor against factor_analyzer, in one run, on the same data.

Run: ``python bench/factor.py``. Prints one line per case,
``CASE: hce X s, factor_analyzer Y s, ratio Z`` (ratio = peer / hce; above 1: hce is
faster), each the best of several warm runs. hce does more work than the peer in every case
(pairwise correlations, psych's fit statistics, the exact-gradient CFA finish), so a ratio
below 1 is the price of those numbers. Data: psych ``bfi`` (2,800 x 25) and
Holzinger-Swineford 1939 (301 x 9) from ``../shared/data/factor_analysis``.

Bootstrap cases (``efa(n_boot=200)``): the peer has no bootstrap, so it refits
``FactorAnalyzer`` on the same 200 row resamples in a loop; it neither matches factors nor
takes percentiles, so it is a lower bound on the peer's cost of the same intervals.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from factor_analyzer import ConfirmatoryFactorAnalyzer, FactorAnalyzer
from factor_analyzer.confirmatory_factor_analyzer import ModelSpecification
from factor_analyzer.factor_analyzer import calculate_kmo

from hce.stats import cfa, efa, kmo

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "factor_analysis"


def best_time(fn, repeat: int = 5) -> float:
    fn()  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(case: str, ours: float, peer: float) -> None:
    print(f"{case}: hce {ours:.4f} s, factor_analyzer {peer:.4f} s, ratio {peer / ours:.2f}",
          flush=True)


def main() -> None:
    warnings.filterwarnings("ignore", category=FutureWarning)  # sklearn rename, peer only
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    bfi = pd.read_csv(DATA / "psych_bfi.csv")
    items = [f"{t}{i}" for t in "ACENO" for i in range(1, 6)]
    complete = bfi[items].dropna()
    hs = pd.read_csv(DATA / "HolzingerSwineford1939.csv")
    x9 = [f"x{i}" for i in range(1, 10)]

    def peer_efa(rotation: str) -> None:
        FactorAnalyzer(n_factors=5, rotation=rotation, method="minres").fit(complete.to_numpy())

    for rotation in ("oblimin", "varimax"):
        report(f"efa bfi 2436x25 5 factors minres {rotation}",
               best_time(lambda r=rotation: efa(complete, n_factors=5, columns=items, rotation=r)),
               best_time(lambda r=rotation: peer_efa(r)))
    report("kmo bfi 2436x25", best_time(lambda: kmo(complete, columns=items)),
           best_time(lambda: calculate_kmo(complete)))
    model = {"visual": ["x1", "x2", "x3"], "textual": ["x4", "x5", "x6"],
             "speed": ["x7", "x8", "x9"]}
    pattern = np.array([[1.0 if v in model[f] else 0.0 for f in model] for v in x9])

    def peer_cfa() -> None:
        spec = ModelSpecification(loadings=pattern.copy(), n_variables=9, n_factors=3,
                                  factor_names=list(model), variable_names=x9)
        ConfirmatoryFactorAnalyzer(spec, disp=False).fit(hs[x9].to_numpy())

    report("cfa HS1939 301x9 3 factors", best_time(lambda: cfa(hs, model=model), 3),
           best_time(peer_cfa, 3))

    def peer_bootstrap(x: np.ndarray, n_factors: int) -> None:
        rng = np.random.default_rng(1)
        for _ in range(200):
            rows = x[rng.integers(0, len(x), size=len(x))]
            FactorAnalyzer(n_factors=n_factors, rotation="oblimin", method="minres").fit(rows)

    for case, data, cols, k in [("HS1939 301x9 3 factors", hs, x9, 3),
                                ("bfi 2436x25 5 factors", complete, items, 5)]:
        report(f"efa bootstrap n_boot=200 {case} minres oblimin",
               best_time(lambda d=data, c=cols, k=k: efa(d, n_factors=k, columns=c, n_boot=200, random_state=1), 2),
               best_time(lambda d=data, c=cols, k=k: peer_bootstrap(d[c].to_numpy(), k), 2))


if __name__ == "__main__":
    main()
