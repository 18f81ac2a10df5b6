"""``lmer`` against stored R lme4 fits (R as an oracle, statsmodels-style).

``tests/stats/r/lme4_reference.R`` generates the designs (``tests/stats/data/lme4_reference/``:
balanced, unbalanced one-term including statsmodels' ``lme03``/``lme05``, crossed, nested,
correlated and uncorrelated slopes, boundary fits, and 24 random unbalanced judge designs drawn
as the live test draws them) and fits each with R lme4 at tolerances
tightened to 1e-12; ``tests/stats/data/lme4_reference.json`` holds the results with the R and
lme4 versions (R 4.2.2, lme4 1.1-31 when written). No R is needed to run these tests.

Tolerances, with reasons:

* criterion: hce's REML criterion (or ML deviance) may not exceed lme4's by more than 1e-6
  (the stored optimum is converged to ~1e-12, so anything worse is a worse fit), and it may
  not be lower by more than 1e-6 either (that would mean a different likelihood);
* variances, correlations, fixed effects, standard errors and conditional modes: relative
  1e-5 (lme4 prints 4-5 significant digits; the issue's bar is 1e-4), with an absolute floor of
  1e-5 times the scale of the quantity so that values near 0 are compared sensibly. A
  variance lme4 puts on the boundary (0) must be below 1e-8 times the residual variance.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.stats import lmer
from hce.stats.mixed import SingularFitWarning

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = json.loads((DATA / "lme4_reference.json").read_text())

def _columns(table: dict) -> dict:
    """R's JSON writes a length-1 vector as a scalar: make every column a list."""
    return {k: v if isinstance(v, list) else [v] for k, v in table.items()}

FITS = [
    {**f, **{k: _columns(f[k]) for k in ("fixef", "varcorr", "ranef")}}
    for f in REFERENCE["fits"]
]
RTOL = 1e-5

def _case_id(fit: dict) -> str:
    return f"{fit['design']}|{fit['formula']}|{'REML' if fit['reml'] else 'ML'}"

CASES = [pytest.param(fit, id=_case_id(fit)) for fit in FITS]

def _fit(ref: dict):
    data = pd.read_csv(DATA / "lme4_reference" / f"{ref['design']}.csv")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = lmer(ref["formula"], data, REML=ref["reml"])
    singular = [w for w in caught if issubclass(w.category, SingularFitWarning)]
    others = [str(w.message) for w in caught if not issubclass(w.category, SingularFitWarning)]
    assert not others, others  # lme4 converged on every stored fit: so must hce, silently
    assert bool(singular) == ref["singular"] == m.singular
    return m

def _group_key(name: str) -> tuple[frozenset, int]:
    """lme4 names a nested term ``item_id:site`` where hce writes ``site:item_id``, and a
    second term on one factor ``g.1``: compare sets of factors plus the term's index."""
    match = re.fullmatch(r"(.*?)(?:\.(\d+))?", name)
    return frozenset(match.group(1).split(":")), int(match.group(2) or 0)

def _close(actual, desired, scale, what):
    actual, desired = np.asarray(actual, float), np.asarray(desired, float)
    bound = RTOL * (np.abs(desired) + np.asarray(scale, float))
    assert np.all(np.abs(actual - desired) <= bound), (what, actual, desired)

@pytest.mark.parametrize("ref", CASES)
def test_fit_matches_lme4(ref):
    m = _fit(ref)
    _check_criterion(m, ref)
    _check_varcorr(m, ref)
    _check_fixef(m, ref)
    _check_ranef(m, ref)

def _check_criterion(m, ref):
    criterion = -2 * m.loglik
    assert criterion <= ref["criterion"] + 1e-6, (criterion, ref["criterion"])
    assert criterion >= ref["criterion"] - 1e-6, (criterion, ref["criterion"])
    assert m.n == ref["n"]
    # levels per grouping factor, as lme4's ngrps: one entry per factor, however many terms
    ours = {_group_key(g)[0]: k for g, k in m.ngroups.items()}
    assert ours == {_group_key(g)[0]: k for g, k in ref["ngroups"].items()}

def _check_varcorr(m, ref):
    ours = m.varcorr()
    theirs = pd.DataFrame(ref["varcorr"]).fillna("")
    assert len(ours) == len(theirs)
    sigma2 = ref["sigma"] ** 2
    for row in theirs.itertuples():
        key = _group_key(row.grp)
        same = ours[
            (ours["group"].map(_group_key) == key)
            & (ours["var1"].fillna("") == row.var1)
            & (ours["var2"].fillna("") == row.var2)
        ]
        assert len(same) == 1, (row, ours)
        what = f"{row.grp} {row.var1} {row.var2}"
        if not row.var2:
            if row.vcov == 0:
                assert abs(same["vcov"].iloc[0]) < 1e-8 * sigma2, what
            else:
                _close(same["vcov"].iloc[0], row.vcov, sigma2, what)
        else:  # a correlation
            _close(same["sdcor"].iloc[0], row.sdcor, 1.0, what)

def _check_fixef(m, ref):
    fe = m.fixef()
    theirs = ref["fixef"]
    assert len(fe) == len(theirs["term"])  # same columns in the same order (treatment coding)
    se = np.asarray(theirs["std_error"])
    _close(fe["estimate"], theirs["estimate"], se, "fixed effects")
    _close(fe["std_error"], se, se, "standard errors")

def _check_ranef(m, ref):
    ours = m.ranef()
    ours = ours.assign(key=ours["group"].map(lambda g: _group_key(g)[0]))
    theirs = pd.DataFrame(ref["ranef"])
    assert len(ours) == len(theirs)
    for (grpvar, term), block in theirs.groupby(["grpvar", "term"], sort=False):
        key = _group_key(grpvar)[0]
        mine = ours[(ours["key"] == key) & (ours["term"] == term)]
        group = mine["group"].iloc[0]
        labels = block["grp"].astype(str)
        if group.split(":") != grpvar.split(":"):  # nested: lme4 writes "i1:s1" for "s1:i1"
            labels = labels.map(lambda s: ":".join(reversed(s.split(":"))))
        got = mine.set_index(mine["level"].astype(str))["estimate"].reindex(labels)
        assert got.notna().all(), (grpvar, term)
        scale = max(float(np.abs(block["condval"]).max()), 1e-3 * ref["sigma"])
        _close(got.to_numpy(), block["condval"].to_numpy(), scale, f"ranef {grpvar} {term}")

def test_reference_file_records_its_provenance():
    assert REFERENCE["r_version"].startswith("R version")
    assert re.fullmatch(r"\d+\.\d+\.\d+", REFERENCE["lme4_version"])
    designs = {f["design"] for f in FITS}
    assert {"balanced_crossed", "unbalanced_one_term", "lme03", "lme05", "crossed_three",
            "nested", "slopes", "lme06", "lme08", "boundary_one_term", "boundary_crossed"} <= designs
    assert all((DATA / "lme4_reference" / f"{d}.csv").exists() for d in designs)
