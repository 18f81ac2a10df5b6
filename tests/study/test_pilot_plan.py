"""``hce plan PILOT_LOG`` and hce.study.plan_from_pilot (issue 48, item 4): one page from a pilot.

Each part is the statistic it reports, so the page is checked against those: the MDE grid is
:func:`hce.stats.mde` at the pilot's own cost per attempt, the attempts are
:meth:`~hce.stats.VarianceComponents.solve`, the saving is :mod:`hce.collect.running.stopping`'s,
the human labels are :func:`hce.stats.ppi_budget`'s, itself equal to ppi_py's ``ppi_mean_power``
(ppi-python 0.2.3, tests/stats/data/ppi_reference.json, written by tests/stats/py/ppi_reference.py).
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import hce
import hce.stats as hs
from hce.cli import app
from hce.log import make_attempt_id
from hce.stats.mixed import SingularFitWarning
from hce.study import plan_from_pilot
from hce.errors import DataError
from hce.study.pilot_plan import cost_per_attempt, label_budget

PPI_REFERENCE = json.loads((Path(__file__).parents[1] / "stats" / "data" / "ppi_reference.json").read_text())


def pilot_log():
    d = hs.simulated_log(n_items=12, n_attempts=4, noise={"A": 0.5, "B": 1.0}, error_rate=0, random_state=3)
    d.insert(0, "attempt_id", [make_attempt_id(*key) for key in zip(d.experiment_id, d.item_id, d.condition_id, d.attempt)])
    return d


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingularFitWarning)
        return fn(*args, **kwargs)


def test_plan_parts_are_the_statistics_they_report():
    pilot = pilot_log()
    plan = quiet(plan_from_pilot, pilot, n_items=[20, 40], n_attempts=[1, 5], delta=1.0, random_state=0)
    price = pilot["cost_usd"].mean()
    assert plan.cost_per_attempt == pytest.approx(price)
    grid = hs.mde(pilot, n_items=[20, 40], n_attempts=[1, 5], cost_per_attempt=price)
    np.testing.assert_allclose(plan.grid["estimate"], grid["estimate"])
    np.testing.assert_allclose(plan.grid["cost_usd"], grid["calls"] * price)
    assert plan.power["reached"].iloc[0] and plan.power["calls"].iloc[0] == plan.power.loc[plan.power["reached"], "calls"].min()
    g = quiet(hs.variance_components, pilot, score="total", facets=["item_id", "condition_id"], random_state=0)
    want = g.solve(target=0.8, coefficient="G", n_levels={"condition_id": 1}, random_state=0)
    assert plan.d_study["estimate"].iloc[0] == want["estimate"].iloc[0]
    assert list(plan.stopping["condition_id"]) == ["A", "B"]
    assert ((plan.stopping["expected_attempts"] >= 3) & (plan.stopping["expected_attempts"] <= 15)).all()


def test_cost_per_attempt_from_tokens_when_the_log_has_no_cost():
    from hce.collect.call.pricing import cost_usd

    pilot = hce.stats.simulated_log(n_items=2, n_attempts=2, random_state=0).drop(columns="cost_usd")
    assert np.isnan(cost_per_attempt(pilot))
    pilot = pilot.assign(model="gpt-4o-mini", input_tokens=1000, output_tokens=50)
    assert cost_per_attempt(pilot) == pytest.approx(cost_usd("gpt-4o-mini", 1000, 50))


def test_hce_plan_prints_one_page(tmp_path):
    path = tmp_path / "pilot.jsonl"
    hce.write_log(pilot_log(), path)
    result = quiet(CliRunner().invoke, app, ["plan", str(path), "--items", "20,40", "--attempts", "1,5", "--delta", "1"],
                                env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    for words in ("variance components", "detectable difference", "the cheapest design reaching power 0.8",
                  "for an item's score under one condition", "stopping rule on A", "stopping rule on B"):
        assert words in result.output
    bad = CliRunner().invoke(app, ["plan", str(path), "--items", "twenty"])
    assert bad.exit_code != 0 and "whole numbers" in bad.output


def humans_of(pilot, seed=7):
    """Two human raters per item: the item's true level (its mean over conditions) plus rater noise."""
    rng = np.random.default_rng(seed)
    level = pilot.groupby("item_id")["total"].mean()
    return pd.DataFrame([{"item_id": i, "rater": r, "total": float(np.round(v + rng.normal(0, 1.0)))}
                         for i, v in level.items() for r in ("dr1", "dr2")])  # fmt: skip


def test_label_budget_is_ppi_budget_on_item_scores_and_ppi_py_on_a_reference_case():
    pilot = pilot_log()
    humans = humans_of(pilot)
    got = label_budget(pilot, humans, label_cost=4.0, half_width=0.5)
    assert list(got["condition_id"]) == ["A", "B"]
    human = humans.groupby("item_id")["total"].mean()
    effective_n = (stats.norm.ppf(0.975) * human.std(ddof=1) / 0.5) ** 2
    for row in got.itertuples():
        part = pilot[pilot["condition_id"] == row.condition_id]
        pairs = pd.DataFrame({"judge_score": part.groupby("item_id")["total"].mean(), "human_score": human})
        per_item = part["cost_usd"].mean() * 4  # 4 attempts an item and condition
        want = hs.ppi_budget(pairs, cost_label=4.0, cost_judge=per_item, effective_n=effective_n).iloc[0]
        assert (row.n_labelled, row.n_unlabelled, row.effective_n) == (want.n_labelled, want.n_unlabelled, want.effective_n)
        assert row.cost == pytest.approx(want.cost) and row.label_cost_usd == pytest.approx(4.0 * want.n_labelled)
        assert row.judge_cost_usd == pytest.approx(want.cost - 4.0 * want.n_labelled)
        assert row.classical_n == round(effective_n) and row.classical_cost_usd == pytest.approx(4.0 * row.classical_n)
        assert row.ppi_corr == want.ppi_corr
    # the same arithmetic as ppi_py's ppi_mean_power (ppi-python 0.2.3, tests/stats/data/ppi_reference.json)
    case = PPI_REFERENCE["cases"][0]
    rows = [(i, j, h) for i, (j, h) in enumerate(zip(case["judge"], case["human"])) if h is not None]
    ref_pilot = pd.DataFrame({"item_id": [f"i{i}" for i, _, _ in rows], "condition_id": "J", "total": [j for _, j, _ in rows]})
    ref_humans = pd.DataFrame({"item_id": [f"i{i}" for i, _, _ in rows], "total": [h for _, _, h in rows]})
    expected = case["results"]["mean_power"]["effective_n"]  # effective_n=120 at cost_Y 2, cost_Yhat 0.05
    sd = ref_humans["total"].std(ddof=1)
    width = stats.norm.ppf(0.975) * sd / np.sqrt(120)  # the half-width whose classical n is 120
    ref = label_budget(ref_pilot, ref_humans, label_cost=2.0, judge_cost=0.05, half_width=width).iloc[0]
    assert ref.ppi_corr == pytest.approx(expected["ppi_corr"], rel=1e-10)
    assert (ref.n_labelled, ref.n_unlabelled, ref.effective_n) == (expected["n"], expected["N"], expected["effective_n"])
    assert ref.cost == pytest.approx(expected["cost"], rel=1e-9)
    with pytest.raises(DataError, match="missing \\['total'\\]"):
        label_budget(pilot, humans.drop(columns="total"), label_cost=4.0, half_width=0.5)


def test_hce_plan_with_humans_prints_the_label_budget_beside_the_judge_cost(tmp_path):
    pilot = pilot_log()
    path, ratings = tmp_path / "pilot.jsonl", tmp_path / "humans.csv"
    hce.write_log(pilot, path)
    humans_of(pilot).to_csv(ratings, index=False)
    args = ["plan", str(path), "--items", "20", "--attempts", "1", "--humans", str(ratings), "--label-cost", "4",
            "--label-half-width", "0.5"]  # fmt: skip
    result = quiet(CliRunner().invoke, app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    want = label_budget(pilot, humans_of(pilot), label_cost=4.0, half_width=0.5)
    assert "items humans score for a 95% interval of the mean total of +-0.5" in result.output
    for row in want.itertuples():
        line = next(x for x in result.output.splitlines() if x.strip().startswith(f"│ {row.condition_id} ")
                    or x.strip().startswith(f"{row.condition_id} "))  # fmt: skip
        for shown in (f"{row.n_labelled:,}", f"{row.n_unlabelled:,}", f"{row.label_cost_usd:,.4f}",
                      f"{row.judge_cost_usd:,.4f}", f"{row.cost:,.4f}"):  # fmt: skip
            assert shown in line, (shown, line)
    bad = CliRunner().invoke(app, ["plan", str(path), "--humans", str(ratings)])
    assert bad.exit_code != 0 and "--label-cost" in bad.output
