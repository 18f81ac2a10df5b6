"""The D-study solver VarianceComponents.solve (issue 48, item 2).

References: the smallest n whose :meth:`d_study` coefficient reaches the target, on the
G-study references of ``tests/stats/test_gtheory.py`` (Shrout & Fleiss 1979 Table 2, the
three-facet judge log); and on the R designs of ``tests/stats/r/psych_icc_reference.R``, the
closed form from R's own components (lme4 via psych::ICC: target, rater, residual): with one
rater facet, G(n) = v_t / (v_t + v_e / n) and Phi(n) = v_t / (v_t + (v_r + v_e) / n)
(Brennan 2001, ch. 4), so n = ceil(t e / (v_t (1 - t))) for error e.
"""

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError, HceWarning
from hce.stats import variance_components
from hce.stats.mixed import SingularFitWarning

from .test_gtheory import SF, judge_log

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = json.loads((DATA / "psych_icc_reference.json").read_text())
DESIGNS = pd.read_csv(DATA / "psych_icc_designs.csv")


def smallest_by_loop(g, target, coefficient, facet, max_n):
    g = dataclasses.replace(g, covariance=g.covariance * np.nan)  # the estimates alone: no interval draws
    for n in range(1, max_n + 1):
        d = g.d_study(n_attempts=n) if facet == "attempt" else g.d_study(n_levels={facet: n})
        if d.set_index("metric").loc[coefficient, "estimate"] >= target:
            return n
    return None


@pytest.mark.parametrize("coefficient", ["G", "Phi"])
@pytest.mark.parametrize("target", [0.5, 0.8, 0.9, 0.95])
def test_solve_is_the_first_n_whose_d_study_reaches_the_target_shrout_fleiss(coefficient, target):
    g = variance_components(SF, score="rating", facets=["target", "judge"])
    res = g.solve(target=target, coefficient=coefficient, facet="judge", max_n=60, random_state=1).iloc[0]
    assert res["estimate"] == smallest_by_loop(g, target, coefficient, "judge", 60)
    assert res["value"] >= target and res["ci_low"] <= res["estimate"] <= res["ci_high"]


def test_solve_on_the_three_facet_judge_log():
    with pytest.warns(SingularFitWarning):
        g = variance_components(judge_log(), score="total", facets=["item_id", "prompt_id", "model"], n_attempts=4)
    for facet in ("attempt", "prompt_id", "model"):
        for coefficient in ("G", "Phi"):
            res = g.solve(target=0.85, coefficient=coefficient, facet=facet, max_n=40, random_state=0).iloc[0]
            want = smallest_by_loop(g, 0.85, coefficient, facet, 40)
            assert (res["estimate"] == want) if want else np.isnan(res["estimate"])


@pytest.mark.parametrize("name", sorted(REFERENCE["designs"]))
def test_solve_matches_the_closed_form_from_rs_components(name):
    v_t, v_r, v_e = REFERENCE["designs"][name]["psych"]["variance"]
    ratings = DESIGNS[DESIGNS["design"] == name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingularFitWarning)  # some designs have a rater variance at 0, in R too
        g = variance_components(ratings, score="rating", facets=["target", "rater"], random_state=0)
    for coefficient, error in (("G", v_e), ("Phi", v_r + v_e)):
        exact = 0.7 * error / (v_t * 0.3)
        if abs(exact - round(exact)) < 1e-3:  # R's components to ~1e-6: a tie at an integer is not decidable
            continue
        res = g.solve(target=0.7, coefficient=coefficient, facet="rater", max_n=500, random_state=0).iloc[0]
        assert res["estimate"] == max(1, math.ceil(exact)), (coefficient, exact)


def test_solve_out_of_reach_and_bad_arguments():
    g = variance_components(SF, score="rating", facets=["target", "judge"])
    with pytest.warns(HceWarning, match="does not reach"):
        res = g.solve(target=0.99, facet="judge", max_n=5, random_state=0).iloc[0]
    assert np.isnan(res["estimate"]) and res["ci_high"] == np.inf
    with pytest.raises(DataError, match="one score per facet combination"):
        g.solve()
    with pytest.raises(DataError, match="facet='rater'"):
        g.solve(facet="rater")
    with pytest.raises(DataError, match="target"):
        g.solve(target=1.5, facet="judge")
    with pytest.raises(DataError, match="coefficient"):
        g.solve(coefficient="ICC", facet="judge")
