"""Reference values for hce.stats.ppi_compare and ppi_budget from ppi_py, and for the
cluster-robust classical rows and McNemar's test from statsmodels (tests/stats/test_ppi_compare.py,
tests/stats/test_agreement_humans.py).

Run in a virtual environment of its own (ppi-python pulls numba and scikit-learn):

    python -m venv /work/venvs/ppi && /work/venvs/ppi/bin/pip install ppi-python statsmodels
    /work/venvs/ppi/bin/python tests/stats/py/ppi_reference.py tests/stats/data/ppi_reference.json

Each case is a design of ours drawn here from a fixed seed (stored with the results, so the
test needs neither ppi_py nor this script): a condition column, a judge score on every row and
a human score on a random subset. For each: ppi_py's ``ppi_ols_ci`` / ``ppi_logistic_ci`` with
``lam=1`` (PPI), ``lam=None`` (PPI++, its default tuning), ``lam=0`` (classical) and the
point estimates; for every case's labelled rows ``ppi_mean_power`` for a budget and for an
effective sample size; statsmodels' cluster-robust OLS covariance (``cov_type="cluster"``,
``use_correction=False``) of the classical fit; and ``statsmodels.stats.contingency_tables.mcnemar``
(exact and chi-square with continuity correction) on 2x2 tables.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import statsmodels.api as sm
from ppi_py import ppi_logistic_ci, ppi_logistic_pointestimate, ppi_mean_power, ppi_ols_ci, ppi_ols_pointestimate
from statsmodels.stats.contingency_tables import mcnemar

ALPHA = 0.05


def design(seed: int) -> dict:
    """Conditions A, B (, C), judge biased by condition, 15-30% of rows labelled, items repeated."""
    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    per = int(rng.integers(60, 140))
    condition = np.repeat(["A", "B", "C"][:k], per)
    shift = np.array([0.0, 0.4, -0.3])[:k]
    human = 3 + np.repeat(shift, per) + rng.normal(0, 1, k * per)
    judge = human + 0.4 + np.repeat(shift, per) * 0.5 + rng.normal(0, 0.6 + 0.2 * seed % 3, k * per)
    family = "binomial" if seed >= 4 else "gaussian"
    if family == "binomial":
        human = (human > 3.1).astype(float)
        judge = (judge > 3.4).astype(float) if seed % 2 == 0 else 1 / (1 + np.exp(-(judge - 3.4)))
    labelled = rng.random(k * per) < rng.uniform(0.15, 0.3)
    cluster = np.arange(k * per) // 3  # three attempts per item
    return {"seed": seed, "family": family, "condition": condition.tolist(), "judge": judge.tolist(),
            "human": [float(h) if lab else None for h, lab in zip(human, labelled)], "cluster": cluster.tolist()}


def x_matrix(condition: np.ndarray) -> np.ndarray:
    levels = sorted(set(condition))
    return np.column_stack([np.ones(len(condition))] + [(condition == lv).astype(float) for lv in levels[1:]])


def run(case: dict) -> dict:
    condition = np.array(case["condition"])
    X = x_matrix(condition)
    f = np.array(case["judge"])
    y = np.array([np.nan if h is None else h for h in case["human"]])
    lab = ~np.isnan(y)
    args = (X[lab], y[lab], f[lab], X[~lab], f[~lab])
    ci, point = (ppi_ols_ci, ppi_ols_pointestimate) if case["family"] == "gaussian" else (ppi_logistic_ci, ppi_logistic_pointestimate)
    out = {}
    for name, lam in (("ppi", 1.0), ("ppi++", None), ("classical", 0.0)):
        low, high = ci(*args, alpha=ALPHA, lam=lam)
        out[name] = {"estimate": np.asarray(point(*args, lam=lam)).tolist(), "ci_low": np.asarray(low).tolist(),
                     "ci_high": np.asarray(high).tolist()}
    if case["family"] == "gaussian":
        fit = sm.OLS(y[lab], X[lab]).fit(cov_type="cluster", cov_kwds={"groups": np.array(case["cluster"])[lab],
                                                                      "use_correction": False})
        out["classical_cluster_se"] = np.asarray(fit.bse).tolist()
    power = {}
    for key, kwargs in (("budget", {"budget": 500.0}), ("effective_n", {"effective_n": 120})):
        got = ppi_mean_power(y[lab], f[lab], cost_Y=2.0, cost_Yhat=0.05, **kwargs)
        power[key] = {k: float(v) for k, v in got.items()}
    out["mean_power"] = power
    return out


TABLES = [[[30, 9], [3, 58]], [[12, 1], [6, 20]], [[40, 25], [11, 30]], [[5, 0], [0, 7]], [[101, 121], [59, 33]]]


def main(out: Path) -> None:
    cases = []
    for seed in range(8):
        case = design(seed)
        case["results"] = run(case)
        cases.append(case)
    tests = []
    for table in TABLES:
        exact = mcnemar(np.array(table), exact=True)
        chi2 = mcnemar(np.array(table), exact=False, correction=True)
        plain = mcnemar(np.array(table), exact=False, correction=False)
        tests.append({"table": table, "exact_p": float(exact.pvalue), "exact_statistic": float(exact.statistic),
                      "chi2_cc": float(chi2.statistic), "chi2_cc_p": float(chi2.pvalue),
                      "chi2": float(plain.statistic), "chi2_p": float(plain.pvalue)})
    result = {"versions": {p: version(p) for p in ("ppi-python", "statsmodels", "numpy", "scipy")},
              "alpha": ALPHA, "cases": cases, "mcnemar": tests}
    out.write_text(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
