"""Benchmark hce.stats reliability against its peers, in one run, on the same data.

Run: ``python bench/reliability.py`` (add ``--quick`` to skip the 50 x 100,000 cases and the
10,000,000-rating bootstrap of issue 22).
Prints one line per case, ``CASE: hce X s, PEER Y s, ratio Z``, where ratio = PEER / hce
(above 1: hce is faster), each time the best of several warm runs, then the targets of
issue 6 and whether they were met.

Peers: ``krippendorff.alpha`` (PyPI ``krippendorff``, fast-krippendorff) and
``pingouin.intraclass_corr``.

Profile of alpha from long data, 20 raters x 10,000 units (issue 35, target >= 5x pivot +
``krippendorff``; it was 4.2-4.4x ordinal): ~7 ms, of which ~0.9 ms is the constant cost of
any call (argument binding, the frame checks, the one-row result frame) and the rest ~35
NumPy passes over the 180,000-200,000 ratings, none dominant: coding the unit, rater and
score columns (0.3-0.7 ms each), the duplicate-pair check (0.3 ms), dropping missing rows
(0.3 ms per column), then the count matrix. Cut: passes that did nothing in the common case
- copies of every column when no rating is missing, the rank lookup when the codes have no
gap (ids 0..n-1), the pairable-unit recoding when every unit is pairable, the infinity check
of integer id columns, the round() pass of whole-float scores. About 2 ms less; 6.9-12x
at load 6 (2 cores), where the peer's pivot dominates its time.
"""

from __future__ import annotations

import sys
import time
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg

from hce.stats import icc, krippendorff_alpha
from hce.stats.reliability.krippendorff import _Alpha, alpha_core


def best_time(fn, repeat: int) -> float:
    fn()  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(case: str, ours: float, peer_name: str, peer: float) -> float:
    ratio = peer / ours
    print(f"{case}: hce {ours:.4f} s, {peer_name} {peer:.4f} s, ratio {ratio:.1f}", flush=True)
    return ratio


def ratings_long(n_units: int, n_raters: int, missing: float, seed: int = 0) -> pd.DataFrame:
    """Long ratings on a 5-20 scale: unit truth plus rater noise, some cells missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(5, 21, n_units)
    y = np.clip(truth[:, None] + rng.integers(-3, 4, (n_units, n_raters)), 5, 20).astype(float)
    y[rng.random(y.shape) < missing] = np.nan
    return pd.DataFrame(
        {
            "unit": np.repeat(np.arange(n_units), n_raters),
            "rater": np.tile(np.arange(n_raters), n_units),
            "score": y.ravel(),
        }
    )


def bench_krippendorff_long(n_raters: int, n_units: int, level: str, repeat: int, absent: bool = False) -> dict:
    """Alpha from long data and from a matrix; ``absent``: missing ratings are absent rows, not NaN."""
    long = ratings_long(n_units, n_raters, missing=0.1)
    long = long.dropna() if absent else long
    matrix = long.pivot(index="rater", columns="unit", values="score").to_numpy()

    def ours_long():
        return krippendorff_alpha(long, item="unit", rater="rater", score="score", level=level, n_boot=0)

    def peer_long():
        m = long.pivot(index="rater", columns="unit", values="score").to_numpy()
        return krippendorff.alpha(reliability_data=m, level_of_measurement=level)

    def ours_matrix():
        unit, rater = np.nonzero(~np.isnan(matrix.T))  # unit-major, so units come sorted
        per_unit = np.bincount(unit, minlength=matrix.shape[1])
        keep = per_unit[unit] >= 2
        codes = (np.cumsum(per_unit >= 2) - 1)[unit[keep]]
        return alpha_core(codes, matrix[rater[keep], unit[keep]], level)[0]

    def peer_matrix():
        return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)

    a, b = ours_long().estimate[0], peer_long()
    if not np.isclose(a, b, rtol=1e-9):
        raise RuntimeError(f"alpha differs: hce {a}, krippendorff {b}")
    size = f"{n_raters} raters x {n_units:,} units, {level}, 10% missing{' as absent rows' if absent else ''}"
    return {
        "long": report(f"alpha from long data, {size}", best_time(ours_long, repeat),
                       "pivot+krippendorff", best_time(peer_long, repeat)),
        "matrix": report(f"alpha from a matrix, {size}", best_time(ours_matrix, repeat),
                         "krippendorff", best_time(peer_matrix, repeat)),
    }  # fmt: skip


def bench_bootstrap(repeat: int) -> float:
    n_raters, n_units, n_boot = 10, 1_000, 1_000
    long = ratings_long(n_units, n_raters, missing=0.0, seed=1)
    matrix = long.pivot(index="rater", columns="unit", values="score").to_numpy()

    def ours():
        return krippendorff_alpha(long, item="unit", rater="rater", score="score", level="interval",
                                  n_boot=n_boot, random_state=0)  # fmt: skip

    def peer():
        rng = np.random.default_rng(0)
        reps = [
            krippendorff.alpha(
                reliability_data=matrix[:, rng.integers(0, n_units, n_units)],
                level_of_measurement="interval",
            )
            for _ in range(n_boot)
        ]
        return np.quantile(reps, [0.025, 0.975])

    return report(f"alpha bootstrap CI, B={n_boot}, {n_raters} x {n_units:,}, 5-20 scale",
                  best_time(ours, repeat), "krippendorff per resample",
                  best_time(peer, 1))  # fmt: skip


def bench_bootstrap_at_scale(n_units: int = 500_000, n_raters: int = 20, n_boot: int = 1_000) -> float:
    """Issue 22: alpha with a 1,000-replicate CI on 10,000,000 ordinal 1-5 ratings, under 5 s."""
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 6, n_units)
    y = np.clip(truth[:, None] + rng.integers(-1, 2, (n_units, n_raters)), 1, 5).astype(float)
    long = pd.DataFrame({"unit": np.repeat(np.arange(n_units), n_raters),
                         "rater": np.tile(np.arange(n_raters), n_units), "score": y.ravel()})  # fmt: skip
    def timed(fn) -> tuple[float, object]:
        start = time.perf_counter()
        result = fn()
        return time.perf_counter() - start, result

    # best of two runs: a 10,000,000-row case takes too long for more
    (ours, out), _ = sorted([timed(lambda: krippendorff_alpha(long, item="unit", rater="rater", score="score", level="ordinal",
                                                              n_boot=n_boot, random_state=0)) for _ in range(2)],
                            key=lambda t: t[0])  # fmt: skip
    peer, point = timed(lambda: krippendorff.alpha(reliability_data=y.T, level_of_measurement="ordinal"))
    if not np.isclose(out.estimate[0], point, rtol=1e-9):
        raise RuntimeError(f"alpha differs: hce {out.estimate[0]}, krippendorff {point}")
    size = f"{n_units:,} units x {n_raters} raters, ordinal 1-5"
    report(f"alpha with B={n_boot} bootstrap CI, {size} (peer: point estimate only)", ours,
           "krippendorff", peer)  # fmt: skip
    # The path before issue 22: the point estimate, then multinomial weights on every unit.
    # Its replicates are timed on a few and scaled to n_boot (their cost is linear in them).
    estimate, _ = timed(lambda: krippendorff_alpha(long, item="unit", rater="rater", score="score", level="ordinal", n_boot=0))
    model, few = _Alpha(np.repeat(np.arange(n_units), n_raters), y.ravel(), "ordinal"), 20
    replicates, _ = timed(lambda: model.alphas(
        rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=few).astype(float)))
    report(f"alpha with B={n_boot} bootstrap CI, {size} (old path: {few} replicates timed, scaled x{n_boot // few})",
           ours, "hce before issue 22", estimate + replicates * n_boot / few)  # fmt: skip
    return ours


def bench_icc(n_targets: int, n_raters: int, repeat: int) -> float:
    long = ratings_long(n_targets, n_raters, missing=0.0, seed=2)

    def ours():
        return icc(long, item="unit", rater="rater", score="score")

    def peer():
        return pg.intraclass_corr(long, targets="unit", raters="rater", ratings="score")

    if not np.allclose(ours().estimate, peer().ICC, rtol=1e-9):
        raise RuntimeError("ICC differs from pingouin")
    return report(f"ICC with CIs, {n_targets:,} targets x {n_raters} raters",
                  best_time(ours, repeat), "pingouin", best_time(peer, repeat))  # fmt: skip


def bench_icc_incomplete(n_targets: int, n_raters: int, repeat: int) -> None:
    long = ratings_long(n_targets, n_raters, missing=0.1, seed=3)
    ours_time = best_time(lambda: icc(long, item="unit", rater="rater", score="score"), repeat)
    out = icc(long, item="unit", rater="rater", score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pingouin's pandas deprecations, not ours
        peer_time = best_time(
            lambda: pg.intraclass_corr(long, "unit", "rater", "score", nan_policy="omit"), repeat
        )
    kept = long.dropna().groupby("unit").size().eq(n_raters).sum()
    report(f"ICC, 10% missing, {n_targets:,} x {n_raters} (hce REML, all {out.n_items[0]:,} "
           f"targets; pingouin keeps {kept:,})", ours_time, "pingouin omit", peer_time)  # fmt: skip


def main(quick: bool = False) -> None:
    ratios = {}
    sizes = [(20, 10_000)] + ([] if quick else [(50, 100_000)])
    for n_raters, n_units in sizes:
        for level in ("ordinal", "interval"):
            repeat = 9 if n_units <= 10_000 else 3
            ratios[(n_raters, n_units, level)] = bench_krippendorff_long(
                n_raters, n_units, level, repeat
            )
            if n_units == 10_000:
                ratios[(n_raters, n_units, level, "absent")] = bench_krippendorff_long(
                    n_raters, n_units, level, repeat, absent=True
                )
    boot = bench_bootstrap(repeat=3)
    scale = None if quick else bench_bootstrap_at_scale()
    icc_small = bench_icc(1_000, 10, repeat=5)
    icc_large = bench_icc(10_000, 20, repeat=5)
    bench_icc_incomplete(1_000, 10, repeat=3)
    bench_icc_incomplete(10_000, 20, repeat=3)

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print("\nTargets (issue 6):")
    for (n_raters, n_units, level, *absent), r in ratios.items():
        if n_units == 10_000:
            print(f"  alpha long 20 x 10,000 {level}{' absent rows' if absent else ''} >= 5x (issue 35): "
                  f"{r['long']:.1f}x, {verdict(r['long'] >= 5)}")
        if n_units == 100_000:
            print(f"  alpha long 50 x 100,000 {level} >= 5x: {r['long']:.1f}x, "
                  f"{verdict(r['long'] >= 5)}")  # fmt: skip
        print(f"  alpha matrix {n_raters} x {n_units:,} {level} >= parity: {r['matrix']:.1f}x, "
              f"{verdict(r['matrix'] >= 1)}")  # fmt: skip
    print(f"  bootstrap >= 20x: {boot:.1f}x, {verdict(boot >= 20)}")
    if scale is not None:
        print(f"  alpha + 1,000-replicate CI on 10,000,000 ratings < 5 s (issue 22): {scale:.1f} s, {verdict(scale < 5)}")
    print(f"  ICC 10,000 x 20 >= 5x: {icc_large:.1f}x, {verdict(icc_large >= 5)} "
          f"(1,000 x 10: {icc_small:.1f}x)")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
