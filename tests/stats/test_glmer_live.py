"""Differential test against R lme4::glmer, live: random unbalanced binary designs fitted by both.

Needs ``Rscript`` with lme4 and jsonlite on the PATH (Debian: ``apt-get install r-base-core
r-cran-lme4``); skipped otherwise. One Rscript process fits every design twice: with PIRLS and
BOBYQA converged tightly (tolPwrss = 1e-13, rhoend = 1e-10: the optimum of the deviance itself)
and with lme4's defaults (what a user sees; its PIRLS stops at tolPwrss = 1e-7, ~1e-3 off).

Designs (``DESIGNS`` of them, seeds 0..DESIGNS-1): 20-80 items x 2-4 conditions x 3-10 attempts
of 0/1 verdicts, about 10% missing, an optional numeric covariate, and one of three random
structures: ``(1 | item_id)`` (fitted by Laplace or nAGQ = 10), nested ``(1 | item_id) +
(1 | item_id:condition)`` and crossed ``(1 | item_id) + (1 | condition)``; each SD 0, small or
large on the logit scale, so boundary fits occur.

Pass criteria per design (issue 32): hce's log-likelihood never lower by more than 1e-4 than the
converged lme4 fit's, nor than the log-likelihood of lme4's default estimates (the converged
deviance function evaluated at them); its fixed effects and random-effect SDs within 2e-3 of
the converged lme4 fit. Where the estimates differ by more while both log-likelihoods agree to
1e-6 the likelihood is flat there: such designs pass and are counted in the report line.

The log-likelihood lme4's default *prints* is not the deviance at its estimates: with PIRLS
stopped at tolPwrss = 1e-7 it is off by up to ~1e-3, either way. Seed 25 (Laplace, one item
term): lme4's default prints -326.535337, its own converged deviance at those estimates is
-326.536347, and the optimum (lme4 converged and hce alike) is -326.536207. Such designs are
counted in the report line, not failed.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rscript import rscript_or_skip, run_r_script

from hce.stats import glmer

DESIGNS = 120
INSTALL = "apt-get install r-base-core r-cran-lme4"
STRUCTURES = [
    "verdict ~ condition{cov} + (1 | item_id)",
    "verdict ~ condition{cov} + (1 | item_id) + (1 | item_id:condition)",
    "verdict ~ 1{cov} + (1 | item_id) + (1 | condition)",
]

R_FIT = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
todo <- read.csv(args[[1]], stringsAsFactors = FALSE)
tight <- glmerControl(tolPwrss = 1e-13, optimizer = c("bobyqa", "bobyqa"),
                      optCtrl = list(rhoend = 1e-10, maxfun = 1e5))
summarise <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  list(loglik = as.numeric(logLik(m)), grp = vc$grp, sdcor = vc$sdcor,
       term = names(fixef(m)), fixef = unname(fixef(m)))
}
out <- lapply(seq_len(nrow(todo)), function(i) {
  d <- read.csv(todo$path[i], colClasses = c(item_id = "character", condition = "character"))
  f <- as.formula(todo$formula[i])
  q <- todo$nAGQ[i]
  t <- suppressMessages(suppressWarnings(glmer(f, d, family = binomial, nAGQ = q, control = tight)))
  s <- suppressMessages(suppressWarnings(glmer(f, d, family = binomial, nAGQ = q)))
  exact <- glmer(f, d, family = binomial, nAGQ = q, devFunOnly = TRUE,
                 control = glmerControl(tolPwrss = 1e-13))
  list(seed = todo$seed[i], tight = summarise(t), default = summarise(s),
       default_exact = -exact(c(getME(s, "theta"), fixef(s))) / 2)
})
writeLines(toJSON(list(lme4 = as.character(packageVersion("lme4")), r = R.version.string,
                       fits = out), digits = NA, auto_unbox = TRUE), args[[2]])
"""


def random_design(seed: int) -> tuple[str, int, pd.DataFrame]:
    """One random unbalanced binary design, its formula and nAGQ."""
    rng = np.random.default_rng(seed)
    n_items, n_cond, n_att = rng.integers(20, 81), rng.integers(2, 5), rng.integers(3, 11)
    structure = int(rng.integers(len(STRUCTURES)))
    covariate = bool(rng.integers(2))
    formula = STRUCTURES[structure].format(cov=" + length_z" if covariate else "")
    n_agq = 10 if structure == 0 and rng.integers(2) else 1

    def sd() -> float:
        return [0.0, rng.uniform(0, 0.3), rng.uniform(0.3, 2)][rng.integers(3)]

    log = pd.MultiIndex.from_product(
        [range(n_items), range(n_cond), range(n_att)], names=["item", "cond", "attempt"]
    ).to_frame(index=False)
    i, c = log["item"].to_numpy(), log["cond"].to_numpy()
    length_z = np.round(rng.normal(size=len(log)), 3)
    eta = (
        rng.uniform(-1, 1)
        + 0.3 * c
        + 0.5 * covariate * length_z
        + rng.normal(0, sd(), n_items)[i]
        + rng.normal(0, sd(), n_cond)[c]
        + rng.normal(0, sd(), (n_items, n_cond))[i, c]
    )
    data = pd.DataFrame(
        {
            "item_id": [f"i{k:02d}" for k in i],
            "condition": [f"c{k}" for k in c],
            "length_z": length_z,
            "verdict": (rng.random(len(log)) < 1 / (1 + np.exp(-eta))).astype(int),
        }
    )
    return formula, n_agq, data[rng.random(len(data)) >= 0.1].reset_index(drop=True)


def lme4_fits(tmp_path: Path, designs: dict) -> dict:
    """lme4's converged and default fits of every design, from one Rscript process."""
    rscript = rscript_or_skip(("lme4", "jsonlite"), INSTALL)
    todo = pd.DataFrame(
        [{"seed": seed, "formula": f, "nAGQ": q, "path": str(tmp_path / f"design_{seed}.csv")}
         for seed, (f, q, _) in designs.items()]
    )  # fmt: skip
    for (_, _, data), path in zip(designs.values(), todo["path"]):
        data.to_csv(path, index=False)
    todo.to_csv(tmp_path / "todo.csv", index=False)
    return run_r_script(rscript, R_FIT, tmp_path / "todo.csv", tmp_path)


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def compare(seed: int, formula: str, n_agq: int, data: pd.DataFrame, ref: dict) -> str | None:
    """None when hce reproduces lme4's fit, 'flat' when only the estimates differ on a flat
    likelihood, otherwise what differs."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")  # boundary fits are expected; results are compared
        m = glmer(formula, data, nAGQ=n_agq)
    tight = ref["tight"]
    for label, loglik in (("converged", tight["loglik"]), ("default, exact", ref["default_exact"])):
        if m.loglik < loglik - 1e-4:
            return f"seed {seed}: logLik {m.loglik:.7f} < lme4 {label} {loglik:.7f}"
    fe = m.fixef().set_index(m.fixef()["term"].map(lambda t: re.sub(r"\[T\.([^\]]*)\]", r"\1", t)))
    theirs = pd.Series(_listed(tight["fixef"]), index=_listed(tight["term"]))
    fe_ok = np.all(np.abs(fe.loc[theirs.index, "estimate"].to_numpy() - theirs.to_numpy()) <= 2e-3)
    ours = m.varcorr()
    ours = pd.Series(ours["sdcor"].to_numpy(), index=ours["group"].map(lambda g: frozenset(g.split(":"))))
    sd_ok = all(
        abs(ours[frozenset(g.split(":"))] - s) <= 2e-3
        for g, s in zip(_listed(tight["grp"]), _listed(tight["sdcor"]))
    )
    if fe_ok and sd_ok:
        return "printed" if m.loglik < ref["default"]["loglik"] - 1e-4 else None
    if abs(m.loglik - tight["loglik"]) <= 1e-6:
        return "flat"
    return f"seed {seed}: estimates differ: hce {fe['estimate'].to_dict()} {ours.to_dict()}, lme4 {tight}"


@pytest.mark.slow
def test_random_unbalanced_binary_designs_match_live_lme4(tmp_path):
    designs = {seed: random_design(seed) for seed in range(DESIGNS)}
    fitted = lme4_fits(tmp_path, designs)
    outcomes = {ref["seed"]: compare(ref["seed"], *designs[ref["seed"]], ref) for ref in fitted["fits"]}
    assert len(outcomes) == DESIGNS
    failures = [o for o in outcomes.values() if o not in (None, "flat", "printed")]
    flat = sum(o == "flat" for o in outcomes.values())
    printed = sum(o == "printed" for o in outcomes.values())
    print(
        f"{DESIGNS} binary designs vs lme4 {fitted['lme4']} ({fitted['r']}): "
        f"{DESIGNS - len(failures)} match ({flat} on a flat likelihood; {printed} where lme4's "
        f"default prints a log-likelihood above its own deviance), {len(failures)} differ"
    )
    assert not failures, failures[:10]
