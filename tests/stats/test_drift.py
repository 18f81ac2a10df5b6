"""drift and control_limits (issue 47, item 3): the charts' ARL against the published tables, the shift against scipy.

References: Lucas & Saccucci (1990), the EWMA ARL table as reprinted in Montgomery (2013,
Table 9.11): ARL 500 in control at (lam, L) = (0.05, 2.615), (0.10, 2.814), (0.20, 2.962),
(0.25, 2.998), (0.40, 3.054), and 11.4, 10.3, 10.5, 11.1, 14.3 at a one-sigma shift.
Montgomery (2013, Table 9.3 and section 9.1.7): the two-sided CUSUM with k = 0.5 has ARL 168 at
h = 4 and 465 at h = 5 (exact); Siegmund's approximation, which hce uses, gives 169 and 469.
The simulation check of the in-control ARL is in the slow suite (test_biases_slow.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import hce.stats as hs
from hce.errors import DataError, HceError
from hce.stats.control_charts import cusum_arl, ewma_arl, run_chart

TABLE = [(0.05, 2.615, 11.4), (0.10, 2.814, 10.3), (0.20, 2.962, 10.5), (0.25, 2.998, 11.1), (0.40, 3.054, 14.3)]


@pytest.mark.parametrize("lam, big, shifted", TABLE)
def test_ewma_arl_reproduces_lucas_saccucci(lam, big, shifted):
    assert ewma_arl(lam, big) == pytest.approx(500, rel=2e-3)
    assert ewma_arl(lam, big, shift=1.0) == pytest.approx(shifted, abs=0.06)


def test_cusum_arl_is_siegmunds_and_near_the_exact_values():
    assert cusum_arl(0.5, 4.0) == pytest.approx(168, rel=0.01)
    assert cusum_arl(0.5, 5.0) == pytest.approx(465, rel=0.01)


def test_control_limits_solve_for_arl0():
    ewma = hs.control_limits("ewma", arl0=500, smoothing=0.1)
    assert ewma["L"] == pytest.approx(2.814, abs=2e-3)
    assert ewma["limit"] == pytest.approx(ewma["L"] * np.sqrt(0.1 / 1.9))
    cusum = hs.control_limits("cusum", arl0=370)
    assert cusum_arl(0.5, cusum["limit"]) == pytest.approx(370, rel=1e-6)
    with pytest.raises(HceError, match="chart"):
        hs.control_limits("shewhart")
    with pytest.raises(HceError, match="arl0"):
        hs.control_limits(arl0=0.5)


def test_run_chart_cusum_accumulates_and_ewma_smooths():
    limits = {"chart": "cusum", "reference": 0.5, "limit": 4.0}
    statistic, alarm = run_chart(np.array([1.0, 1.0, 3.0, 2.0, -1.0]), limits)
    assert list(statistic) == [0.5, 1.0, 3.5, 5.0, 3.5] and list(alarm) == [False, False, False, True, False]
    statistic, _ = run_chart(np.array([1.0, 0.0]), {"chart": "ewma", "smoothing": 0.2, "limit": 1.0})
    assert list(statistic) == pytest.approx([0.2, 0.16])


def history(seed: int = 0, shift_at: int | None = None, shift: float = 1.0, n: int = 20, periods: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    levels = rng.normal(12, 2, n)
    rows = [(p, f"G{i:02d}", levels[i] + (shift if shift_at is not None and p >= shift_at else 0.0) + rng.normal(0, 1))
            for p in range(periods) for i in range(n)]  # fmt: skip
    return pd.DataFrame(rows, columns=["batch", "item_id", "total"])


def test_drift_shift_is_the_paired_t_on_the_common_items():
    log = history(shift_at=6)
    out = hs.drift(log, period="batch", confidence=0.9)
    base = log[log["batch"] == 0].set_index("item_id")["total"]
    later = log[log["batch"] == 7].set_index("item_id")["total"]
    row = out[out["period"] == 7].iloc[0]
    test = stats.ttest_rel(later, base)
    d = later - base
    half = stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert row["estimate"] == pytest.approx(d.mean())
    assert row["p_value"] == pytest.approx(test.pvalue)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert out["first_alarm"].sum() == 1 and 6 <= out.loc[out["first_alarm"], "period"].iloc[0] <= 8


def test_drift_agreement_is_icc_a1_or_kappa():
    log = history()
    out = hs.drift(log, period="batch")
    pair = log[log["batch"].isin([0, 3])].assign(rater=lambda d: d["batch"].astype(str))
    icc2 = hs.icc(pair, item="item_id", rater="rater", score="total").set_index("metric").loc["ICC2", "estimate"]
    assert out.loc[out["period"] == 3, "agreement"].iloc[0] == pytest.approx(icc2)
    binary = log.assign(total=(log["total"] > 12).astype(int))
    out = hs.drift(binary, period="batch")
    pair = binary[binary["batch"].isin([0, 3])].pivot(index="item_id", columns="batch", values="total")
    pair.columns = ["base", "later"]
    kappa = hs.cohen_kappa(pair, rater=["base", "later"])["estimate"].iloc[0]
    assert out.loc[out["period"] == 3, "agreement"].iloc[0] == pytest.approx(kappa)
    assert out["agreement_method"].iloc[0] == "Cohen's kappa"


def test_drift_orders_text_periods_by_first_appearance_and_takes_a_named_baseline():
    log = history(periods=4)
    log["version"] = log["batch"].map({0: "v-new", 1: "v-a", 2: "v-b", 3: "v-c"})
    out = hs.drift(log, period="version", baseline="v-b")
    assert list(out["period"]) == ["v-b", "v-new", "v-a", "v-c"]
    assert out["estimate"].iloc[0] == 0 and np.isnan(out["chart_statistic"].iloc[0])


def test_drift_refuses_a_single_period_and_an_unknown_baseline():
    log = history(periods=2)
    with pytest.raises(DataError, match="at least two"):
        hs.drift(log[log["batch"] == 0], period="batch")
    with pytest.raises(DataError, match="baseline 9"):
        hs.drift(log, period="batch", baseline=9)


def test_drift_cusum_alarms_on_a_planted_shift():
    out = hs.drift(history(seed=4, shift_at=5), period="batch", chart="cusum")
    assert 5 <= out.loc[out["first_alarm"], "period"].iloc[0] <= 7
