"""Issue 47's "done when": planted biases recovered by probe_effect, drift's alarms, the charts' ARL by simulation.

Every study is run through the simulated judge in-process (``tests/helpers/bias_studies.py``:
the design with its probes, the rendered prompts, SimJudge with the planted biases, the reply
parser), 100 seeded studies per case. Margins, with reasons:

* coverage of the planted B = 0.5 by the 95% interval in >= 93 of 100 studies (the issue's
  bar); a correct interval covers 95 on average, so 93 is two binomial SDs below;
* TOST at margin 0.25 says "equivalent" in >= 90 of 100 studies without a planted bias: with
  150 items (250 for self-preference) the SE is about 0.07, so the power is about 95%;
* drift: no alarm in >= 90 of 100 stable 30-period histories (arl0 = 370: about 8% expected),
  an alarm within 5 periods of a planted 1-point shift in >= 90 of 100 (20 items, noise SD 1);
* the in-control ARL by simulation within 10% of arl0 = 100 (4,000 runs: the run length's SD
  is about the ARL, so the mean's SE is 1.6%).
"""

from __future__ import annotations

import numpy as np
import pytest
from bias_studies import CRITERIA, golden_history, study

import hce.stats as hs
from hce.sim.biases import PlantedBiases
from hce.stats.control_charts import run_chart

pytestmark = pytest.mark.slow
SEEDS = range(100)
PAD = [{"id": "pad", "kind": "pad_neutral", "chars": 1000}]
SHUFFLE = [{"id": "shuffle", "kind": "shuffle_criteria"}]
# 250 items: self-preference is estimated from a different (judge x author) split of each item's
# attempts than a paired twin, and at 150 items the TOST said "equivalent" in 89 of 100 (measured).
AUTHOR = dict(probes=[{"id": "self", "kind": "author"}], models=("gpt-4.1-mini", "claude-3-haiku"),
              authors=("gpt-4o", "claude-3-5-sonnet"), n_items=250)  # fmt: skip
CASES = {
    # probe, study keywords, the planted bias, the row of the answer
    "length": ("pad", dict(probes=PAD), lambda b: PlantedBiases(length=b), CRITERIA[0]),
    "order": ("shuffle", dict(probes=SHUFFLE), lambda b: PlantedBiases(order=b), "(first position)"),
    "self-preference": ("author", AUTHOR, lambda b: PlantedBiases(self_preference=b), CRITERIA[0]),
}


def _effects(case: str, planted: float) -> list:
    probe, keywords, biases, row = CASES[case]
    out = []
    for seed in SEEDS:
        log = study(int(1000 * planted) + seed, attempts=1, biases=biases(planted), **{"n_items": 150, **keywords})
        score = CRITERIA if row == "(first position)" else row
        result = hs.probe_effect(log, probe=probe, score=score, margin=0.25)
        out.append(result.set_index("criterion").loc[row])
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_a_planted_bias_of_half_a_point_is_covered_in_93_of_100_studies(case):
    rows = _effects(case, 0.5)
    covered = sum(r["ci_low"] < 0.5 < r["ci_high"] for r in rows)
    assert covered >= 93, f"{case}: covered in {covered} of 100; mean estimate {np.mean([r['estimate'] for r in rows]):.3f}"


@pytest.mark.parametrize("case", list(CASES))
def test_without_a_planted_bias_tost_says_equivalent_in_90_of_100_studies(case):
    rows = _effects(case, 0.0)
    equivalent = sum(bool(r["equivalent"]) for r in rows)
    assert equivalent >= 90, f"{case}: equivalent in {equivalent} of 100"


@pytest.mark.parametrize("chart", ["ewma", "cusum"])
def test_a_stable_judge_raises_no_alarm_in_90_of_100_histories(chart):
    alarms = sum(hs.drift(golden_history(seed), period="period", chart=chart)["alarm"].any() for seed in SEEDS)
    assert alarms <= 10, f"{chart}: {alarms} of 100 stable histories alarmed"


@pytest.mark.parametrize("chart", ["ewma", "cusum"])
def test_a_one_point_shift_alarms_within_5_periods_in_90_of_100_histories(chart):
    hits = 0
    for seed in SEEDS:
        at = 5 + seed % 20
        out = hs.drift(golden_history(10_000 + seed, shift_at=at), period="period", chart=chart)
        first = out.loc[out["alarm"], "period"]
        hits += bool(len(first)) and at <= first.iloc[0] < at + 5
    assert hits >= 90, f"{chart}: {hits} of 100 shifts found within 5 periods"


@pytest.mark.parametrize("chart", ["ewma", "cusum"])
def test_the_in_control_arl_by_simulation_is_arl0(chart):
    limits = hs.control_limits(chart, arl0=100)
    rng = np.random.default_rng(47)
    lengths = []
    for _ in range(4000):  # 1,500 periods each: a run with ARL 100 outlasts them with probability e^-15
        hit = np.flatnonzero(run_chart(rng.standard_normal(1500), limits)[1])
        lengths.append(hit[0] + 1 if hit.size else 1500)
    # Siegmund's approximation is an approximation: the CUSUM within 10%, the Markov-chain EWMA within 5%.
    assert np.mean(lengths) == pytest.approx(100, rel=0.05 if chart == "ewma" else 0.10)
