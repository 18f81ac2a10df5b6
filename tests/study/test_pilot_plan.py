"""``hce plan PILOT_LOG`` and hce.study.plan_from_pilot (issue 48, item 4): one page from a pilot.

Each part is the statistic it reports, so the page is checked against those: the MDE grid is
:func:`hce.stats.mde` at the pilot's own cost per attempt, the attempts are
:meth:`~hce.stats.VarianceComponents.solve`, the saving is :mod:`hce.collect.running.stopping`'s.
"""

import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

import hce
import hce.stats as hs
from hce.cli import app
from hce.log import make_attempt_id
from hce.stats.mixed import SingularFitWarning
from hce.study import plan_from_pilot
from hce.study.pilot_plan import cost_per_attempt


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
