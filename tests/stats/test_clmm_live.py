"""Differential test against R ``ordinal::clmm``, live: random unbalanced ordinal designs fitted
by both.

Needs ``Rscript`` with ordinal and jsonlite on the PATH (Debian: ``apt-get install r-base-core
r-cran-ordinal``); skipped otherwise. One Rscript process fits every design (data passed as
CSV files in ``tmp_path``) with ordinal's defaults (Laplace, nlminb).

Designs (``DESIGNS`` of them, seeds 0..DESIGNS-1): 15-50 items x 2-3 conditions x 2-6
attempts, about 10% of scores missing, scores on a 3- to 5-level scale cut from a latent
logistic (or normal) variable, so outer levels are sometimes empty; one of
``(1 | item)``, ``(1 | item)`` with a numeric covariate, and crossed ``(1 | item) + (1 | rater)``
(4-8 raters); logit or probit; each standard deviation 0, small (up to 0.3) or large
(0.5-2), so boundary fits occur. cloglog is left out: ordinal's one-term code swaps it with
loglog (see tests/stats/r/clmm_reference.R).

Pass criteria per design (issue 32): hce's log-likelihood at least ordinal's - 1e-4, and the
thresholds, fixed effects and standard deviations within 2e-3. Where estimates differ by more
while the log-likelihoods agree to 1e-4, the likelihood is flat there and either optimum is
as good; where hce's log-likelihood is higher by more than 1e-4, ordinal's nlminb stopped
short of the optimum (seen with probit fits: seed 2, 0.017 higher, sd 1.0059 where ordinal
stops at 1.0013, and ordinal's own general code, ``useMatrix = TRUE``, reaches hce's 1.0059).
Such designs pass and are counted in the report line.

ordinal runs with its inner Newton tightened (``clmm.control(gradTol = 1e-10)``): with the
default 1e-4 the log-likelihood it reports is not the Laplace value at its estimates (seed
59: -764.82907 reported, -764.82927 at its estimates, hce -764.82925 and ordinal with tight
modes -764.8293), so no fit could be held to it at 1e-4.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rscript import rscript_or_skip, run_r_script

from hce.stats import clmm

DESIGNS = 120
INSTALL = "apt-get install r-base-core r-cran-ordinal"
STRUCTURES = [
    "score ~ condition + (1 | item)",
    "score ~ condition + x + (1 | item)",
    "score ~ condition + (1 | item) + (1 | rater)",
]

R_FIT = r"""
suppressPackageStartupMessages({library(ordinal); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
todo <- read.csv(args[[1]], stringsAsFactors = FALSE)
out <- lapply(seq_len(nrow(todo)), function(i) {
  d <- read.csv(todo$path[i], colClasses = c(item = "character", condition = "character",
                                             rater = "character"))
  d$score <- factor(d$score, ordered = TRUE)
  # inner Newton to 1e-10 (default 1e-4): with the default, the Laplace value ordinal reports
  # can exceed the one at its own estimates by 1e-4 to 2e-2 (inexact modes); steps that cannot
  # improve at that precision warn, harmlessly
  m <- suppressWarnings(clmm(as.formula(todo$formula[i]), data = d, link = todo$link[i],
                             control = clmm.control(gradTol = 1e-10)))
  list(seed = todo$seed[i], loglik = as.numeric(logLik(m)), estimate = unname(coef(m)),
       sd = unname(sapply(m$ST, function(st) st[1, 1])), sd_group = names(m$ST))
})
writeLines(toJSON(list(ordinal = as.character(packageVersion("ordinal")), r = R.version.string,
                       fits = out), digits = NA, auto_unbox = TRUE), args[[2]])
"""


def random_design(seed: int) -> tuple[str, str, pd.DataFrame]:
    """One random unbalanced ordinal design, its formula and link."""
    rng = np.random.default_rng(seed)
    n_items, n_cond, n_att = rng.integers(15, 51), rng.integers(2, 4), rng.integers(2, 7)
    n_raters = rng.integers(4, 9)
    formula = STRUCTURES[rng.integers(len(STRUCTURES))]
    link = ["logit", "probit"][rng.integers(2)]

    def sd() -> float:
        return [0.0, rng.uniform(0, 0.3), rng.uniform(0.5, 2)][rng.integers(3)]

    s_item, s_rater = sd(), sd()
    log = pd.MultiIndex.from_product(
        [range(n_items), range(n_cond), range(n_att)], names=["item", "cond", "attempt"]
    ).to_frame(index=False)
    i, c = log["item"].to_numpy(), log["cond"].to_numpy()
    rater = rng.integers(n_raters, size=len(log))
    x = np.round(rng.normal(size=len(log)), 3)
    noise = rng.logistic(size=len(log)) if link == "logit" else rng.normal(size=len(log))
    latent = (
        0.5 * c + 0.4 * x * ("x" in formula)
        + rng.normal(0, s_item, n_items)[i]
        + rng.normal(0, s_rater, n_raters)[rater] * ("rater" in formula)
        + noise
    )  # fmt: skip
    n_levels = rng.integers(3, 6)
    cuts = np.sort(rng.uniform(-2.5, 2.5, n_levels - 1))
    data = pd.DataFrame(
        {
            "item": [f"i{k:02d}" for k in i],
            "condition": [f"c{k}" for k in c],
            "rater": [f"r{k}" for k in rater],
            "x": x,
            "score": np.digitize(latent, cuts) + 1,
        }
    )
    return formula, link, data[rng.random(len(data)) >= 0.1].reset_index(drop=True)


def ordinal_fits(tmp_path: Path, designs: dict[int, tuple[str, str, pd.DataFrame]]) -> dict:
    rscript = rscript_or_skip(("ordinal", "jsonlite"), INSTALL)
    rows = []
    for seed, (formula, link, data) in designs.items():
        path = tmp_path / f"design_{seed}.csv"
        data.to_csv(path, index=False)
        rows.append({"seed": seed, "formula": formula, "link": link, "path": str(path)})
    pd.DataFrame(rows).to_csv(tmp_path / "todo.csv", index=False)
    return run_r_script(rscript, R_FIT, tmp_path / "todo.csv", tmp_path)


def compare(seed: int, formula: str, link: str, data: pd.DataFrame, ref: dict) -> str | None:
    """None when hce reproduces ordinal's fit; otherwise what differs. 'flat' when only the
    estimates differ and the log-likelihoods agree."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")  # boundary fits may warn; results are compared
        m = clmm(formula, data, link=link)
    if m.loglik < ref["loglik"] - 1e-4:
        return f"seed {seed}: logLik {m.loglik:.6f} < ordinal {ref['loglik']:.6f}"
    ours = np.r_[m.thresholds()["estimate"], m.fixef()["estimate"]]
    theirs = np.asarray(ref["estimate"], dtype=float).ravel()
    sd = m.varcorr().set_index("group")["sdcor"][np.atleast_1d(ref["sd_group"])].to_numpy()
    if len(ours) == len(theirs) and np.all(np.abs(ours - theirs) <= 2e-3) and np.all(
        np.abs(sd - np.atleast_1d(ref["sd"])) <= 2e-3
    ):
        return None
    if abs(m.loglik - ref["loglik"]) <= 1e-4:
        return "flat"
    if m.loglik > ref["loglik"] + 1e-4:
        return "short"
    return f"seed {seed}: estimates {ours} sd {sd} vs ordinal {theirs} sd {ref['sd']}"


@pytest.mark.slow
def test_random_unbalanced_designs_match_live_ordinal(tmp_path):
    designs = {seed: random_design(seed) for seed in range(DESIGNS)}
    fitted = ordinal_fits(tmp_path, designs)
    outcomes = {
        ref["seed"]: compare(ref["seed"], *designs[ref["seed"]], ref) for ref in fitted["fits"]
    }
    assert len(outcomes) == DESIGNS
    failures = [o for o in outcomes.values() if o not in (None, "flat", "short")]
    flat = sum(o == "flat" for o in outcomes.values())
    short = sum(o == "short" for o in outcomes.values())
    print(
        f"{DESIGNS} designs vs ordinal {fitted['ordinal']} ({fitted['r']}): "
        f"{DESIGNS - len(failures)} match ({flat} on a flat likelihood, {short} where ordinal "
        f"stopped below hce's optimum), {len(failures)} differ"
    )
    assert not failures, failures[:10]
