"""``icc(..., k="raters")`` against R psych's ``ICC(x, lmer=TRUE)``, live, on random designs.

Needs ``Rscript`` with psych, lme4 and jsonlite (Debian: ``apt-get install r-base-core
r-cran-lme4 r-cran-psych``); skipped otherwise. One Rscript process runs psych on every design
(wide CSV files in ``tmp_path``). Designs: 10-40 targets x 3-6 raters, 10-25% of cells missing
(every target keeps a rating), target SD 0-2, rater SD 0-1, error SD 1.

Tolerances as in ``test_icc_psych.py`` (psych's lme4 fit uses lme4's default tolerances):
1e-4 on the estimates and bounds, 1e-4 relative on F, degrees of freedom exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rscript import rscript_or_skip, run_r_script

from hce.stats import icc

DESIGNS = 100
INSTALL = "apt-get install r-base-core r-cran-lme4 r-cran-psych"
R_ICC = r"""
suppressPackageStartupMessages({library(psych); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
files <- readLines(args[[1]])
out <- lapply(files, function(f) {
  res <- suppressMessages(psych::ICC(read.csv(f), lmer = TRUE))$results
  list(ICC = res$ICC, F = res$F, df1 = res$df1, df2 = res$df2,
       lower = res[["lower bound"]], upper = res[["upper bound"]])
})
writeLines(toJSON(list(psych = as.character(packageVersion("psych")), fits = out),
                  digits = NA, auto_unbox = TRUE), args[[2]])
"""


def random_wide(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n, k = rng.integers(10, 41), rng.integers(3, 7)
    wide = (
        3
        + rng.normal(0, rng.uniform(0, 2), (n, 1))
        + rng.normal(0, rng.uniform(0, 1), (1, k))
        + rng.normal(size=(n, k))
    ).round(2)
    missing = rng.random((n, k)) < rng.uniform(0.10, 0.25)
    missing[missing.all(axis=1), 0] = False  # every target keeps a rating
    wide[missing] = np.nan
    return pd.DataFrame(wide, columns=[f"r{j}" for j in range(k)])


@pytest.mark.slow
def test_k_raters_matches_live_psych(tmp_path):
    rscript = rscript_or_skip(("psych", "lme4", "jsonlite"), INSTALL)
    designs = {seed: random_wide(seed) for seed in range(DESIGNS)}
    paths = []
    for seed, wide in designs.items():
        paths.append(str(tmp_path / f"wide_{seed}.csv"))
        wide.to_csv(paths[-1], index=False, na_rep="NA")
    (tmp_path / "files.txt").write_text("\n".join(paths) + "\n")
    fits = run_r_script(rscript, R_ICC, tmp_path / "files.txt", tmp_path)["fits"]
    assert len(fits) == DESIGNS
    for (seed, wide), ref in zip(designs.items(), fits):
        long = wide.rename_axis("target").reset_index().melt("target", var_name="rater")
        got = icc(long, item="target", rater="rater", score="value", method="reml", k="raters")
        where = f"design {seed}"
        np.testing.assert_allclose(got["estimate"], ref["ICC"], atol=1e-4, err_msg=where)
        np.testing.assert_allclose(got["statistic"], ref["F"], rtol=1e-4, err_msg=where)
        np.testing.assert_array_equal(got["df2"], ref["df2"], err_msg=where)
        np.testing.assert_allclose(got["ci_low"], ref["lower"], atol=1e-4, err_msg=where)
        np.testing.assert_allclose(got["ci_high"], ref["upper"], atol=1e-4, err_msg=where)
