"""Each study helper on a 20,000-attempt simulated log (target: under 2 s each).

Run: python bench/stats_helpers.py

The peer is the core of the same plan written directly with pandas, scipy, scikit-posthocs
and pingouin (what a researcher would otherwise script): per-item SDs, then the plan's main
tests. hce does more (errors counted, effect sizes with intervals, winner selection), so a
ratio above 1 is the price of those extras.
"""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np
import pandas as pd
import scikit_posthocs as sp
from scipy import stats

from hce.errors import HceWarning
from hce.stats._simulate import simulated_log
from hce.study import experiment1, experiment2, experiment3, experiment4, experiment5
from hce.study.analyses import EXP4_CODES, RUBRIC_V5_CATEGORIES


def best_of(fn, repeats: int = 3) -> float:
    fn()  # warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _sds(log, condition, score="total"):
    valid = log[~log["error_flag"]]
    return valid.groupby(["item_id", condition])[score].std().unstack()


def peer_exp1(log):
    sd = _sds(log, "prompt_id")
    stats.mannwhitneyu(sd["P1.2"], sd["P1.1"])
    valid = log[~log["error_flag"]]
    means = valid.groupby(["item_id", "prompt_id"])["total"].mean().unstack()
    target = valid.groupby("item_id")["target_total"].first()
    mae = means.sub(target, axis=0).abs()
    stats.wilcoxon(mae["P1.2"], mae["P1.1"])
    stats.pearsonr(means["P1.2"], target)


def peer_sd_plan(log, condition):
    sd = _sds(log, condition).dropna()
    stats.friedmanchisquare(*sd.to_numpy().T)
    sp.posthoc_nemenyi_friedman(sd.to_numpy())
    for a, b in itertools.combinations(sd.columns, 2):
        stats.wilcoxon(sd[a], sd[b])


def peer_exp4(codes):
    for code in EXP4_CODES:
        stats.chi2_contingency(pd.crosstab(codes["model"], codes[code]))


def peer_exp5(log):
    valid = log[~log["error_flag"]]
    sd = valid.groupby("item_id")[[*RUBRIC_V5_CATEGORIES, "total"]].std()
    sd.describe()
    (sd["total"] <= 1.0).mean()
    per_item = sd["total"].to_frame().join(valid.groupby("item_id")["sex"].first())
    stats.kruskal(*[g["total"].dropna() for _, g in per_item.groupby("sex")])


def main() -> None:
    warnings.simplefilter("ignore", HceWarning)  # NaN-SD notices are expected in random logs
    logs = {
        "experiment1": simulated_log(experiment_id="EXP1_BaselineRubricUtility", condition="prompt_id",
                                     noise={"P1.1": 1.0, "P1.2": 0.3}, n_items=200, n_attempts=50),
        "experiment2": simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                                     noise={"P2.1": 0.5, "P2.2": 0.45, "P2.3": 0.3}, n_items=267, n_attempts=25),
        "experiment3": simulated_log(experiment_id="EXP3_ModelComparison", condition="model",
                                     noise={"gpt-4o": 0.5, "o3": 0.45, "o4-mini": 0.3, "gpt-4.1-mini": 0.6},
                                     n_items=250, n_attempts=20),
        "experiment5": simulated_log(n_items=2000, n_attempts=10),
    }
    rng = np.random.default_rng(0)
    codes = pd.DataFrame({"model": rng.choice(["gpt-4o", "o3", "o4-mini", "gpt-4.1-mini"], 20_000),
                          **{c: rng.choice(["a", "b", "c", "d"], 20_000) for c in EXP4_CODES}})
    cases = [
        ("experiment1", lambda: experiment1(logs["experiment1"]), lambda: peer_exp1(logs["experiment1"]),
         len(logs["experiment1"])),
        ("experiment2", lambda: experiment2(logs["experiment2"]),
         lambda: peer_sd_plan(logs["experiment2"], "prompt_id"), len(logs["experiment2"])),
        ("experiment3", lambda: experiment3(logs["experiment3"]),
         lambda: peer_sd_plan(logs["experiment3"], "model"), len(logs["experiment3"])),
        ("experiment4", lambda: experiment4(codes), lambda: peer_exp4(codes), len(codes)),
        ("experiment5", lambda: experiment5(logs["experiment5"], metadata=["transcript_words"], strata=["sex"]),
         lambda: peer_exp5(logs["experiment5"]), len(logs["experiment5"])),
    ]
    for name, ours, peer, rows in cases:
        t_hce, t_peer = best_of(ours), best_of(peer)
        print(f"{name} ({rows:,} rows): hce {t_hce:.3f} s, PEER {t_peer:.3f} s, ratio {t_hce / t_peer:.1f}")


if __name__ == "__main__":
    main()
