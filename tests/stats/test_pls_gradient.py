"""The analytic gradient of lme4's profiled deviance (``PlsProblem.gradient``) and the search
that uses it (issue 42, item 5: InstEval at 5x lme4).

The gradient (in ``theta^2``, the search's coordinates) is checked against central differences
of the deviance itself (step 1e-5 of ``theta^2``: truncation error ~1e-10, rounding ~1e-8
relative), on the dense path (few random-effect columns) and on the one-stage elimination with a dense remainder that crossed designs as InstEval
take (students eliminated, lecturers left dense), REML and ML, rows and cell tables; a fit that
uses it must reach the same optimum as the finite-difference search, with fewer evaluations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hce.stats.mixed.formula import build_design
from hce.stats.mixed.pls import PlsProblem, RandomBlock
from hce.stats.mixed.theta_search import minimise_theta


def _crossed(n_students: int, n_lecturers: int, n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"s": rng.integers(0, n_students, n), "d": rng.integers(0, n_lecturers, n),
                      "dept": rng.integers(0, 4, n), "x": rng.normal(size=n)})  # fmt: skip
    d["y"] = (0.5 * rng.normal(size=n_students)[d["s"]] + 0.8 * rng.normal(size=n_lecturers)[d["d"]]
              + 0.3 * rng.normal(size=4)[d["dept"]] + 0.2 * d["x"] + rng.normal(size=n))  # fmt: skip
    return d.astype({"s": str, "d": str, "dept": str})


def _problem(formula: str, data: pd.DataFrame, reml: bool = True) -> tuple[PlsProblem, np.ndarray]:
    design = build_design(formula, data)
    terms = [RandomBlock(g.codes, g.Z) for g in design.groupings.values()]
    problem = PlsProblem(design.y, design.X, terms, reml)
    return problem, problem.start(design.y, design.X)


def _central(problem: PlsProblem, theta: np.ndarray) -> np.ndarray:
    """Central differences in the relative variances ``theta^2``, the coordinates of ``gradient``."""
    phi, out = theta**2, np.empty(len(theta))
    for j in range(len(theta)):
        e = np.zeros(len(theta))
        e[j] = 1e-5 * phi[j]
        out[j] = (problem.profiled_deviance(np.sqrt(phi + e)) - problem.profiled_deviance(np.sqrt(phi - e))) / (2 * e[j])
    return out


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize(
    ("formula", "shape", "engine"),
    [
        ("y ~ x + (1|s) + (1|d)", (30, 20, 600), "dense"),
        ("y ~ x + dept + (1|s) + (1|d) + (1|d:dept)", (260, 20, 1500), "eliminated"),
    ],
)
def test_gradient_equals_central_differences(formula, shape, engine, reml):
    problem, start = _problem(formula, _crossed(*shape), reml)
    assert problem.dense == (engine == "dense") and problem.has_gradient
    for theta in (start, 1.7 * start + 0.05):
        exact = problem.gradient(theta)
        np.testing.assert_allclose(exact, _central(problem, theta), rtol=1e-6, atol=1e-6 * np.abs(exact).max())


def test_no_gradient_for_slopes_or_near_zero():
    """Random slopes (non-diagonal Lambda) and a theta below 1e-2 (the formula divides by it)
    leave the search on finite differences."""
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"g": np.repeat(np.arange(20), 5).astype(str), "x": rng.normal(size=100)})
    d["y"] = d["x"] + rng.normal(size=100)
    slopes, theta = _problem("y ~ x + (x | g)", d)
    assert not slopes.has_gradient and slopes.gradient(theta) is None
    problem, theta = _problem("y ~ x + (1|s) + (1|d)", _crossed(30, 20, 600))
    assert problem.gradient(np.array([theta[0], 1e-3])) is None


def test_search_with_the_gradient_reaches_the_same_optimum_in_fewer_evaluations():
    """The one-stage elimination (InstEval's engine): the same theta as the finite-difference
    search to 1e-7 relative and the same deviance to 1e-9, in fewer deviance evaluations."""
    problem, start = _problem("y ~ x + (1|s) + (1|d) + (1|d:dept)", _crossed(260, 20, 1500, seed=3))
    assert not problem.dense
    plain = minimise_theta(problem.profiled_deviance, start, problem.lower, problem.scalar)
    fast = minimise_theta(problem.profiled_deviance, start, problem.lower, problem.scalar, problem.gradient)
    assert plain.converged and fast.converged
    np.testing.assert_allclose(fast.theta, plain.theta, rtol=1e-7)
    assert abs(fast.deviance - plain.deviance) <= 1e-9 * abs(plain.deviance)
    assert fast.evaluations < 0.7 * plain.evaluations
