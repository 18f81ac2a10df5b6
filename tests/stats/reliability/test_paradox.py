"""The kappa-paradox columns (prevalence_index, bias_index, pabak) on every kappa result.

Reference: Feinstein & Cicchetti (1990), "High agreement but low kappa: I. The problems of two
paradoxes", J Clin Epidemiol 43, 543-549: two 2x2 tables with the same 85% agreement and kappa
0.70 and 0.32. Byrt, Bishop & Carlin (1993), J Clin Epidemiol 46, 423-429: PI = (a - d)/n,
BI = (b - c)/n, PABAK = 2 p_o - 1 (0.70 for both tables).
"""

import numpy as np
import pandas as pd
import pytest

from hce.stats import cohen_kappa, fleiss_kappa, gwet_ac


def long_from_table(table):
    rows, item = [], 0
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            for _ in range(count):
                rows += [{"item": item, "rater": "A", "label": ["yes", "no"][i]},
                         {"item": item, "rater": "B", "label": ["yes", "no"][j]}]
                item += 1
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("table", "kappa", "pi", "bi"), [
    ([[40, 9], [6, 45]], 0.70, 0.05, 0.03),
    ([[80, 10], [5, 5]], 0.32, 0.75, 0.05),
])
def test_feinstein_cicchetti_tables(table, kappa, pi, bi):
    # Categories sorted "no" < "yes": the table's a and d swap, which |a - d| ignores.
    out = cohen_kappa(long_from_table(table), item="item", rater="rater", score="label").iloc[0]
    assert round(out.estimate, 2) == kappa
    assert out.prevalence_index == pytest.approx(pi)
    assert out.bias_index == pytest.approx(bi)
    assert out.pabak == pytest.approx(0.70)


def test_pabak_for_more_categories_and_raters():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 60)
    rows = [{"item": i, "rater": r, "label": int(t if rng.random() < 0.8 else rng.integers(0, 3))}
            for r in ("a", "b", "c") for i, t in enumerate(truth)]
    df = pd.DataFrame(rows)
    fleiss = fleiss_kappa(df, item="item", rater="rater", score="label").iloc[0]
    assert fleiss.pabak == pytest.approx((3 * fleiss.pa - 1) / 2)
    assert np.isnan(fleiss.prevalence_index) and np.isnan(fleiss.bias_index)
    two = cohen_kappa(df[df.rater != "c"], item="item", rater="rater", score="label").iloc[0]
    assert two.pabak == pytest.approx((3 * two.pa - 1) / 2) and np.isnan(two.prevalence_index)
    weighted = gwet_ac(df, item="item", rater="rater", score="label", weights="quadratic").iloc[0]
    assert np.isnan(weighted.pabak)
