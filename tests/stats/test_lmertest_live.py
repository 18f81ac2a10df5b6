"""Differential test against R lmerTest and pbkrtest, live: random unbalanced designs (issue 32).

Needs ``Rscript`` with lme4, lmerTest, pbkrtest and jsonlite (Debian: ``apt-get install
r-base-core r-cran-lme4 r-cran-lmertest r-cran-pbkrtest r-cran-jsonlite``); skipped otherwise.
One Rscript process fits every design (CSV files in ``tmp_path``) at lme4's tolerances
tightened to 1e-12 and stores ``summary(m, ddf = ...)`` and ``anova(m, ddf = ...)`` for
Satterthwaite and Kenward-Roger.

Designs (``DESIGNS``, seeds 0..DESIGNS-1): 8-30 items x 2-4 conditions (x 2 models for the
two-factor structure) x 2-6 attempts, 5-20% of rows missing, a row-level covariate ``x``, one
of six structures (random intercept, nested-in-item interaction, crossed, factor x covariate,
correlated random slope, two factors with their interaction); each SD 0, small or large.

Pass criteria per design (issue 32): ``fixef()``'s SE, df and p within 1e-3 relative of
lmerTest's Satterthwaite values, ``fixef(ddf="kenward-roger")``'s of pbkrtest's, ``anova()``'s
F, denominator df and p of lmerTest's Type III tables, both methods. p is compared on the log
scale to 1e-3 (a p of 1e-30 moves 70 times as fast as its t). Where the REML criteria agree
to 1e-6 but the variances do not (a flat likelihood, usually at a boundary), the df belong to
different points and the design is counted, not failed, as in ``test_lme4_live.py``; so is one
where only lme4's ``theta`` differs (a random slope whose intercept variance is 0: the other
entries of that Cholesky column turn freely on a circle of equal likelihood, and lmerTest's df
follow where lme4 stopped on it), and a
design where lme4 stops at a REML criterion above hce's (a random slope whose correlation
lme4 leaves inside while the optimum has it at -1).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rscript import fit_designs, rscript_or_skip

from hce.stats import lmer

DESIGNS = 120
RTOL = 1e-3
INSTALL = "apt-get install r-base-core r-cran-lme4 r-cran-lmertest r-cran-pbkrtest r-cran-jsonlite"
STRUCTURES = [
    "score ~ condition + (1 | item_id)",
    "score ~ condition + (1 | item_id) + (1 | item_id:condition)",
    "score ~ 1 + (1 | item_id) + (1 | condition) + (1 | item_id:condition)",
    "score ~ condition * x + (1 | item_id)",
    "score ~ x + (x | item_id)",
    "score ~ condition * model + (1 | item_id)",
]

R_FIT = r"""
suppressPackageStartupMessages({library(lmerTest); library(pbkrtest); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
todo <- read.csv(args[[1]], stringsAsFactors = FALSE)
tight <- lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14, xtol_rel = 1e-12,
                                    ftol_rel = 1e-14, maxeval = 1e5))
coefs <- function(m, ddf) {
  co <- summary(m, ddf = ddf)$coefficients
  list(se = unname(co[, "Std. Error"]), df = unname(co[, "df"]), p = unname(co[, "Pr(>|t|)"]))
}
tab <- function(m, ddf) {
  a <- anova(m, ddf = ddf)
  list(term = rownames(a), F = unname(a[["F value"]]), den_df = unname(a[["DenDF"]]),
       p = unname(a[["Pr(>F)"]]))
}
out <- lapply(seq_len(nrow(todo)), function(i) {
  d <- read.csv(todo$path[i], colClasses = c(item_id = "character", condition = "character"))
  m <- suppressMessages(suppressWarnings(lmer(as.formula(todo$formula[i]), data = d,
                                              control = tight)))
  w <- function(expr) suppressMessages(suppressWarnings(expr))
  list(seed = todo$seed[i], criterion = REMLcrit(m),
       vcov = as.data.frame(VarCorr(m))$vcov, theta = unname(getME(m, "theta")),
       satterthwaite = w(coefs(m, "Satterthwaite")), kenward_roger = w(coefs(m, "Kenward-Roger")),
       anova_satterthwaite = w(tab(m, "Satterthwaite")),
       anova_kenward_roger = w(tab(m, "Kenward-Roger")))
})
writeLines(toJSON(list(lmerTest = as.character(packageVersion("lmerTest")),
                       pbkrtest = as.character(packageVersion("pbkrtest")), r = R.version.string,
                       fits = out), digits = NA, auto_unbox = TRUE), args[[2]])
"""


def random_design(seed: int) -> tuple[str, pd.DataFrame]:
    """One random unbalanced design and its formula."""
    rng = np.random.default_rng(seed)
    n_items, n_cond, n_att = rng.integers(8, 31), rng.integers(2, 5), rng.integers(2, 7)
    formula = STRUCTURES[rng.integers(len(STRUCTURES))]

    def sd() -> float:
        return [0.0, rng.uniform(0, 0.3), rng.uniform(0.3, 2)][rng.integers(3)]

    s_item, s_cond, s_ic, s_slope, s_e = sd(), sd(), sd(), sd(), rng.uniform(0.5, 1.5)
    models = 2 if "model" in formula else 1
    log = pd.MultiIndex.from_product(
        [range(n_items), range(n_cond), range(models), range(n_att)], names=["item", "cond", "model", "attempt"]
    ).to_frame(index=False)
    i, c, k = log["item"].to_numpy(), log["cond"].to_numpy(), log["model"].to_numpy()
    x = np.round(rng.uniform(0, 3, len(log)), 2)
    score = (
        5 + 0.4 * c + 0.3 * k + 0.2 * x * (c == 1)
        + rng.normal(0, s_item, n_items)[i]
        + rng.normal(0, s_cond, n_cond)[c]
        + rng.normal(0, s_ic, (n_items, n_cond))[i, c]
        + rng.normal(0, s_slope, n_items)[i] * x
        + rng.normal(0, s_e, len(log))
    )  # fmt: skip
    data = pd.DataFrame(
        {
            "item_id": [f"i{v:02d}" for v in i],
            "condition": [f"c{v}" for v in c],
            "model": [f"m{v}" for v in k],
            "x": x,
            "score": np.round(score, 2),
        }
    )
    keep = rng.random(len(data)) >= rng.uniform(0.05, 0.2)
    return formula, data[keep].reset_index(drop=True)


def r_fits(tmp_path: Path, designs: dict[int, tuple[str, pd.DataFrame]]) -> dict:
    return fit_designs(rscript_or_skip(("lme4", "lmerTest", "pbkrtest", "jsonlite"), INSTALL), R_FIT, designs, tmp_path)


def _list(v) -> list:
    return v if isinstance(v, list) else [v]


def _differs(ours, theirs, log: bool = False) -> bool:
    ours, theirs = np.asarray(ours, float), np.asarray(_list(theirs), float)
    if log:  # p: relative on the log scale
        ours, theirs = np.log(np.maximum(ours, 1e-300)), np.log(np.maximum(theirs, 1e-300))
    return not np.allclose(ours, theirs, rtol=RTOL, atol=0)


def compare(seed: int, formula: str, data: pd.DataFrame, ref: dict) -> str | None:
    """None when hce reproduces lmerTest and pbkrtest; 'flat' when the fits differ on a flat
    likelihood, 'lower' when hce's REML criterion is below lme4's; otherwise what differs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary fits are expected; results are compared
        m = lmer(formula, data)
    problems = []
    for ddf, key in (("satterthwaite", "satterthwaite"), ("kenward-roger", "kenward_roger")):
        fe, r = m.fixef(ddf=ddf), ref[key]
        for col, rcol in (("std_error", "se"), ("df", "df")):
            if _differs(fe[col], r[rcol]):
                problems.append(f"{ddf} {col} {fe[col].tolist()} vs {r[rcol]}")
        if _differs(fe["p_value"], r["p"], log=True):
            problems.append(f"{ddf} p {fe['p_value'].tolist()} vs {r['p']}")
        table, ra = m.anova(ddf=ddf), ref[f"anova_{key}"]
        if table["term"].tolist() != _list(ra["term"]):
            problems.append(f"{ddf} anova terms {table['term'].tolist()} vs {ra['term']}")
            continue
        for col, rcol in (("statistic", "F"), ("den_df", "den_df")):
            if _differs(table[col], ra[rcol]):
                problems.append(f"{ddf} anova {col} {table[col].tolist()} vs {ra[rcol]}")
        if _differs(table["p_value"], ra["p"], log=True):
            problems.append(f"{ddf} anova p {table['p_value'].tolist()} vs {ra['p']}")
    if not problems:
        return None
    ours = m.varcorr()["vcov"].to_numpy()
    # lmerTest differentiates in theta: where a term's first diagonal is 0 the other entries of
    # its column can turn on a circle with the same covariance, and its df depend on where
    # lme4 stopped on that circle (lmerTest warns of a negative eigenvalue there)
    same_fit = np.allclose(ours, ref["vcov"], rtol=1e-4, atol=1e-4 * ref["vcov"][-1]) and np.allclose(
        m._varpar.varpar[:-1], _list(ref["theta"]), rtol=1e-3, atol=1e-4
    )
    if not same_fit and abs(-2 * m.loglik - ref["criterion"]) <= 1e-6:
        return "flat"
    if not same_fit and -2 * m.loglik < ref["criterion"] - 1e-6:
        return "lower"  # hce found a better optimum than lme4: the df belong to another point
    return f"seed {seed} {formula}: " + "; ".join(problems)


@pytest.mark.slow
def test_random_unbalanced_designs_match_live_lmertest(tmp_path):
    designs = {seed: random_design(seed) for seed in range(DESIGNS)}
    fitted = r_fits(tmp_path, designs)
    outcomes = {ref["seed"]: compare(ref["seed"], *designs[ref["seed"]], ref) for ref in fitted["fits"]}
    assert len(outcomes) == DESIGNS
    failures = [o for o in outcomes.values() if o not in (None, "flat", "lower")]
    flat = sum(o == "flat" for o in outcomes.values())
    lower = sum(o == "lower" for o in outcomes.values())
    print(
        f"{DESIGNS} designs vs lmerTest {fitted['lmerTest']}, pbkrtest {fitted['pbkrtest']} "
        f"({fitted['r']}): {DESIGNS - len(failures) - flat - lower} match, {flat} differ on a "
        f"flat likelihood, {lower} where lme4 stopped above hce's optimum, {len(failures)} differ"
    )
    assert not failures, failures[:10]
