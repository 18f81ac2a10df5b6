"""The hand-written log density nutpie samples (hce.stats.bayes.density) against the PyMC
model that defines it.

Reference: PyMC itself. ``build_model`` is the definition of record; its
``model.compile_logp()`` and ``model.compile_dlogp()`` (priors, the potential on cell
counts and the Jacobians of PyMC's log, zero-sum and ordered transforms) must equal the
kernel's log density and gradient at random unconstrained points, the last far in the
tails, to 1e-10 relative; and the variables the sampler stores must be PyMC's own
back-transformed values.

The log densities differ by a constant of about 1e-7: PyTensor stores a prior scale such as
5.0 as a float32 constant (exact in float32) and takes its log in float32 (``log(5)`` off
by 3e-8), in the normalising constants only. A constant does not change the posterior, so
the check is on ``log p(x) - log p(x_0)`` to 1e-10 and on the constant being below 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest

from hce.stats.bayes import density
from hce.stats.bayes.fit import model_inputs
from hce.stats.bayes.models import build_model, resolve_priors
from hce.stats.bayes.simulate import simulate_ordinal

TRUTH = {"cutpoints": (-2.0, 0.0, 2.0), "condition_effects": (0.0, 1.0), "log_noise": (0.0, 0.7), "sd_item": 2.0}
CASES = [
    ("ordinal", "score ~ condition + (1 | item_id)", "condition"),  # the Experiment-5 model
    ("ordinal", "score ~ condition + (1 | item_id)", None),
    ("ordinal", "score ~ condition + x + (1 | item_id) + (1 | rater)", "condition + x"),  # two terms and noise columns
    ("ordinal", "score ~ condition", "condition"),  # no random term
    ("ordinal", "top ~ condition + (1 | item_id)", "condition"),  # two categories: no middle one
    ("bernoulli", "ok ~ condition + (1 | item_id) + (1 | rater)", None),
    ("bernoulli", "ok ~ 1 + (1 | item_id)", None),  # no fixed effect
]


def _data():
    data = simulate_ordinal(30, 6, random_state=3, **TRUTH)
    rng = np.random.default_rng(4)
    return data.assign(ok=data["score"] > 2, top=(data["score"] > 3).astype(int) + 1,
                       rater=rng.choice(["r1", "r2", "r3", "r4"], len(data)), x=rng.normal(size=len(data)))


def _model_and_density(family, formula, noise, priors=None):
    inputs = model_inputs(formula, _data(), family=family, noise=noise)
    priors = resolve_priors(family, priors)
    assert density.supported(family, "logit", inputs.arrays)
    return build_model(family, "logit", inputs.arrays, priors), density.Density.of(family, inputs.arrays, priors)


def _check_equal(dens, model, points) -> None:
    """Equal up to PyMC's float32 constants: differences of log density and the gradient."""
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    offsets = []
    for x, point in points:
        value, grad = dens.logp_grad(x)
        expected = logp(point)
        offsets.append(value - expected)
        assert abs(offsets[-1] - offsets[0]) <= 1e-10 * abs(expected), (offsets, expected)
        expected = dlogp(point)
        np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    assert abs(offsets[0]) < 1e-6, offsets[0]


def _points(model, n_dim: int):
    """Random unconstrained points (flat, and as PyMC's value-variable dict), wider and wider."""
    rng = np.random.default_rng(7)
    shapes = [(v.name, model.initial_point()[v.name].shape) for v in model.value_vars]
    for k in range(12):
        x = rng.normal(0.0, 0.3 + 0.25 * k, n_dim)
        point, pos = {}, 0
        for name, shape in shapes:
            size = int(np.prod(shape))
            point[name] = x[pos : pos + size].reshape(shape)
            pos += size
        assert pos == n_dim
        yield x, point


@pytest.mark.parametrize("family, formula, noise", CASES)
def test_log_density_and_gradient_equal_pymc(family, formula, noise):
    model, dens = _model_and_density(family, formula, noise)
    _check_equal(dens, model, _points(model, dens.layout.n_dim))


def test_other_prior_scales_equal_pymc():
    model, dens = _model_and_density("ordinal", CASES[2][1], CASES[2][2],
                                     {"b": 2.0, "cutpoints": 3.0, "sd": 1.0, "noise": 0.5})
    _check_equal(dens, model, _points(model, dens.layout.n_dim))


@pytest.mark.parametrize("family, formula, noise", CASES)
def test_stored_variables_are_pymc_back_transforms(family, formula, noise):
    model, dens = _model_and_density(family, formula, noise)
    names = [v.name for v in model.unobserved_value_vars]
    values = model.compile_fn(model.unobserved_value_vars, inputs=model.value_vars, on_unused_input="ignore")
    for x, point in _points(model, dens.layout.n_dim):
        expected = dict(zip(names, values(point)))
        ours = dens.expand(x)
        assert [n for n, _ in dens.layout.names()] == list(ours)
        for name, value in ours.items():
            np.testing.assert_allclose(value, expected[name], rtol=1e-12, atol=1e-12)


def test_scope():
    """Probit and random slopes are sampled from the PyMC model itself."""
    inputs = model_inputs("score ~ condition + (1 + condition | item_id)", _data(), family="ordinal")
    assert not density.supported("ordinal", "logit", inputs.arrays)
    inputs = model_inputs("score ~ condition + (1 | item_id)", _data(), family="ordinal")
    assert density.supported("ordinal", "logit", inputs.arrays)
    assert not density.supported("ordinal", "probit", inputs.arrays)


def test_far_tails_give_minus_inf_not_an_error():
    """A cutpoint gap that underflows to 0 (log gap -800): PyMC's log density is -inf there,
    and so is the kernel's (numpy's division rules), which the sampler rejects as a
    divergent step; a Python ZeroDivisionError stopped nutpie's chains (issue 35)."""
    model, dens = _model_and_density(*CASES[0])
    x, point = next(_points(model, dens.layout.n_dim))
    start = dens.layout.n_fixed + sum(dens.layout.n_levels)
    x = x.copy()
    x[start + 1] = -800.0
    point["cutpoints_ordered__"] = x[start : start + dens.layout.n_cut]
    value, _ = dens.logp_grad(x)
    assert value == model.compile_logp()(point) == -np.inf
