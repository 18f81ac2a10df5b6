"""Benchmark: hce.stats.clmm against R's ordinal::clmm on a 20,000-row Likert design.

Run: python bench/mixed_clmm.py [--repeats N]   (also run by bench/mixed.py)

Design: 1,000 items x 2 conditions x 10 attempts, scores 1-5 cut from a latent logistic
variable with an item SD of 1 and a condition effect of 0.5; model
``score ~ condition + (1 | item)``, Laplace. hce is timed from the DataFrame to the fitted
result with its standard errors (best of N after a warm-up). R (``Rscript`` with ordinal;
Debian: ``apt-get install r-base-core r-cran-ordinal r-cran-jsonlite``) times ``clmm`` inside R with
``system.time`` (best of N after a warm-up), so R's start-up and CSV reading are not counted.
Prints the CASE line, then both log-likelihoods and the largest difference in estimates.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hce.stats import clmm

FORMULA = "score ~ condition + (1 | item)"

_R_SCRIPT = r"""
args <- commandArgs(TRUE)
suppressMessages(library(ordinal))
d <- read.csv(args[1], stringsAsFactors = TRUE)
d$score <- factor(d$score, ordered = TRUE)
d$item <- factor(d$item)
form <- as.formula(args[2])
m <- clmm(form, data = d)  # warm-up
times <- replicate(as.integer(args[3]), system.time(clmm(form, data = d))[["elapsed"]])
cat(jsonlite::toJSON(list(
  time = min(times), loglik = as.numeric(logLik(m)), coef = unname(coef(m)), sd = m$ST[[1]][1, 1],
  version = paste0(R.version.string, ", ordinal ", packageVersion("ordinal"))
), digits = NA, auto_unbox = TRUE))
"""


def likert_design(n_items: int = 1000, attempts: int = 10, random_state: int = 0) -> pd.DataFrame:
    """Items x 2 conditions x attempts, 1-5 scores with an item effect."""
    rng = np.random.default_rng(random_state)
    data = pd.MultiIndex.from_product(
        [[f"i{k:04d}" for k in range(n_items)], ["a", "b"], range(attempts)],
        names=["item", "condition", "attempt"],
    ).to_frame(index=False)
    item = rng.normal(0, 1.0, n_items)[np.repeat(np.arange(n_items), 2 * attempts)]
    latent = item + 0.5 * (data["condition"] == "b") + rng.logistic(size=len(data))
    data["score"] = np.digitize(latent, [-2.0, -0.7, 0.7, 2.0]) + 1
    return data


def ordinal_fit(data: pd.DataFrame, repeats: int) -> dict | None:
    """R's clmm timed inside R, with its estimates; None without R and ordinal."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        script, path = Path(tmp) / "clmm.R", Path(tmp) / "likert.csv"
        script.write_text(_R_SCRIPT)
        data.to_csv(path, index=False)
        run = subprocess.run([rscript, str(script), str(path), FORMULA, str(repeats)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if run.returncode != 0:
        print(f"  ordinal not run: {run.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(run.stdout)


def clmm_case(repeats: int) -> None:
    """Print the CASE line for clmm on the 20,000-row design, and the agreement with R."""
    data = likert_design()
    clmm(FORMULA, data)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit = clmm(FORMULA, data)
        times.append(time.perf_counter() - start)
    t_hce = min(times)
    case = f"clmm {len(data)} rows (1,000 items x 2 conditions x 10 attempts, 1-5, (1 | item))"
    ref = ordinal_fit(data, repeats)
    if ref is None:
        print(f"{case}: hce {t_hce:.2f} s, ordinal not run (Rscript with ordinal not found)")
        return
    print(f"{case}: hce {t_hce:.2f} s, R ordinal {ref['time']:.2f} s, ratio {ref['time'] / t_hce:.1f}")
    ours = np.r_[fit.thresholds()["estimate"], fit.fixef()["estimate"]]
    diff = max(np.max(np.abs(ours - ref["coef"])), abs(fit.varcorr()["sdcor"].iloc[0] - ref["sd"]))
    print(f"  {ref['version']}; logLik hce {fit.loglik:.6f}, ordinal {ref['loglik']:.6f}; "
          f"largest difference in estimates {diff:.1e}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    clmm_case(parser.parse_args().repeats)
