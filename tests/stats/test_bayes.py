"""Bayesian ordinal and Bernoulli models (hce.stats.bayes).

Reference values: the NumPy core is checked against scipy's distributions and ArviZ's
HDI; the fitted models against the parameters that simulated the data (parameter
recovery, Talts et al. 2018 style coverage in the slow test) and against maximum
likelihood from statsmodels (``OrderedModel``, ``Logit``), which a posterior under
weakly-informative priors approaches with many observations.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from seeds import other_seeds

from hce.errors import DataError, FormulaError
from hce.stats.bayes import MCMCDiagnosticsWarning, _core, bayes_binary, bayes_ordinal
from hce.stats.bayes.simulate import simulate_ordinal

# Early in warm-up NUTS can step to a point where the gradient of the ordered cutpoints adds
# inf and -inf (PyTensor's Python CumOp); numpy warns "invalid value encountered in
# accumulate", PyMC rejects the step and sampling goes on. pytest's warnings-as-errors reaches
# the forked chains and turned that warning into a failed chain (location-scale fit, seed 4,
# here): the warning is numpy's and harmless, so it is ignored for this module's fits.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in accumulate:RuntimeWarning")

# PyMC's own NUTS: its compiled C code is cached on disk, so the fast suite pays the
# compilation once per machine (nutpie recompiles with numba in every new process).
# 2 x 2000 draws: at 2 x 1000 the location-scale fit's bulk ESS of sd(item_id) was 503 here
# and 383 on another CPU (threshold 400) and the slopes fit's largest R-hat 1.0099 (threshold
# 1.01); ESS grows about linearly with draws, so 2 x 2000 puts every fit near twice the bounds.
FAST = {"sampler": "pymc", "draws": 2000, "tune": 500, "chains": 2}


# ---- NumPy core against scipy ------------------------------------------------------------
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_ordinal_loglik_matches_scipy(link):
    rng = np.random.default_rng(0)
    cut = np.sort(rng.normal(0, 3, (5, 3)), axis=1)
    eta = rng.normal(0, 4, (5, 40)) * np.r_[1, 1, 1, 1, 10][:, None]  # last draw: far tails
    scale = np.exp(rng.normal(0, 0.5, (5, 40)))
    y = rng.integers(0, 4, 40)
    dist = stats.logistic if link == "logit" else stats.norm
    padded = np.c_[np.full(5, -np.inf), cut, np.full(5, np.inf)]
    hi = (padded[:, y + 1] - eta) / scale
    lo = (padded[:, y] - eta) / scale
    # scipy's cdf difference, or its sf difference in the upper tail (no cancellation)
    direct = np.where(hi + lo > 0, dist.sf(lo) - dist.sf(hi), dist.cdf(hi) - dist.cdf(lo))
    ours = _core.ordinal_loglik(cut, eta, scale, y, link)
    finite = direct > 1e-300
    assert finite.mean() > 0.8
    # atol: near P = 1 the log of the direct difference carries its cancellation error
    np.testing.assert_allclose(ours[finite], np.log(direct[finite]), rtol=1e-9, atol=1e-12)
    # far in a tail the direct difference underflows to 0 but the log is still finite
    assert np.isfinite(ours).all()
    probs = _core.category_probs(cut, eta, scale, link)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        np.take_along_axis(probs, np.broadcast_to(y[None, :, None], (5, 40, 1)), -1)[..., 0][finite],
        direct[finite],
        rtol=1e-6,
        atol=1e-15,
    )


def test_bernoulli_loglik_matches_scipy():
    eta = np.linspace(-40, 40, 81)[None, :]
    y = (np.arange(81) % 2).astype(np.int64)
    for link, dist in (("logit", stats.logistic), ("probit", stats.norm)):
        expected = np.where(y == 1, dist.logcdf(eta), dist.logsf(eta))
        np.testing.assert_allclose(_core.bernoulli_loglik(eta, y, link), expected, rtol=1e-9)


def test_hdi_matches_arviz():
    import arviz as az

    draws = np.random.default_rng(1).gamma(2.0, size=(4001, 3))
    low, high = _core.hdi(draws, 0.9)
    for k in range(3):
        np.testing.assert_allclose([low[k], high[k]], az.hdi(draws[:, k], hdi_prob=0.9), rtol=1e-12)


# ---- input checks (no sampling) ------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"formula": "score ~ 1 + (1 + attempt | item_id)"}, FormulaError, "not in the fixed part"),
        ({"formula": "score ~ condition + (1 | item_id) + (0 + condition | item_id)"}, FormulaError, "one correlated term"),
        ({"formula": "score ~ condition + (1 + condition || item_id)"}, FormulaError, r"uncorrelated terms \('\|\|'\)"),
        ({"formula": "score ~ 0 + condition + (1 | item_id)"}, FormulaError, "keep the intercept"),
        ({"formula": "np.log(score) ~ 1 + (1 | item_id)"}, FormulaError, "column name"),
        ({"formula": "score ~ 1 + (1 | item_id)", "link": "cauchit"}, DataError, "link"),
        ({"formula": "score ~ 1 + (1 | item_id)", "priors": {"slope": 1.0}}, DataError, "unknown key"),
        ({"formula": "score ~ 1 + (1 | item_id)", "priors": {"sd": -1}}, DataError, "positive"),
        ({"formula": "score ~ 1 + (1 | item_id)", "levels": [1, 2, 3]}, DataError, "not one of the levels"),
        ({"formula": "score ~ 1 + (1 | item_id)", "noise": "nonexistent"}, FormulaError, "names no column"),
        ({"formula": "score ~ 1 + (1 | item_id)", "sampler": "stan"}, DataError, "sampler"),
        ({"formula": "score ~ 1 + (1 | item_id)", "draws": 0}, DataError, "draws"),
    ],
)
def test_invalid_input_is_named(kwargs, error, match):
    data = simulate_ordinal(5, 2, random_state=0).assign(x=1.0)
    with pytest.raises(error, match=match):
        bayes_ordinal(data=data, **kwargs)


def test_binary_response_must_be_boolean():
    data = simulate_ordinal(5, 2, random_state=0)
    with pytest.raises(DataError, match="True/False"):
        bayes_binary("score ~ 1 + (1 | item_id)", data)


# ---- fast MCMC fits: each a function of one seed ------------------------------------------
# Each fast MCMC test is ``check(*fit_case(seed))``: the fast suite runs FAST_SEED and
# test_fast_mcmc_fits_hold_under_other_seeds (slow) runs the same fits and checks under
# five other seeds (seed -> simulated data and sampler), so a fixed seed cannot hide a coin toss.
# Margins: every check below holds with room at every seed measured (numbers in the check's
# comments), and the fits' diagnostics sit at about twice the MCMCDiagnosticsWarning bounds.
FAST_SEED = 0


def _assert_within_sds(table: pd.DataFrame, truth: dict, k: float = 4.0) -> None:
    """Posterior mean of each term within ``k`` posterior SDs of its true value: a normal
    posterior misses by more than 4 SD with probability 6e-5, so recovery checks of
    several terms over several seeds do not fail by chance (a 95% interval would miss
    one of six terms in a quarter of the data sets)."""
    z = (table.loc[list(truth), "estimate"] - pd.Series(truth)).abs() / table.loc[list(truth), "sd"]
    assert (z < k).all(), z.round(2).to_dict()


# ---- the likelihood on cell counts is the row-by-row likelihood ---------------------------
@pytest.mark.parametrize(
    "family, link, noise",
    [("ordinal", "logit", "condition"), ("ordinal", "logit", None), ("ordinal", "probit", "condition"),
     ("bernoulli", "logit", None), ("bernoulli", "probit", None)],
)
def test_cell_count_likelihood_equals_the_sum_over_rows(family, link, noise):
    """Issue 35: the models sum ``n_ck log P_c(k)`` over distinct design rows (cells), and
    the logit models collect those terms by cutpoint; at random parameter values (the
    last far in the tails) that must equal ``sum_i log P(y_i)`` over the rows, computed by
    the NumPy core (itself checked against scipy above) from each row's own design."""
    from hce.stats.bayes.fit import model_inputs
    from hce.stats.bayes.models import build_model, resolve_priors

    data = simulate_ordinal(30, 5, random_state=3, **TRUTH).assign(ok=lambda d: d["score"] > 2)
    formula = "score ~ condition + (1 | item_id)" if family == "ordinal" else "ok ~ condition + (1 | item_id)"
    inputs = model_inputs(formula, data, family=family, noise=noise)
    arrays = inputs.arrays
    assert arrays.data()["counts"].shape == (60, arrays.n_categories)  # 30 items x 2 conditions
    model = build_model(family, link, arrays, resolve_priors(family, None))
    # the potential is written on the random variables: evaluate it at the value variables
    obs = model.compile_fn(model.replace_rvs_by_values([model.potentials[0]])[0], inputs=model.value_vars,
                           on_unused_input="ignore")
    rng = np.random.default_rng(5)
    for spread in (0.8, 0.8, 2.5):
        point = {v.name: rng.normal(0, spread, model.initial_point()[v.name].shape) for v in model.value_vars}
        values = model.compile_fn(model.unobserved_value_vars, inputs=model.value_vars, on_unused_input="ignore")(point)
        named = dict(zip([v.name for v in model.unobserved_value_vars], values))
        eta = arrays.X @ named["b"] + named["sd_0"] * named["z_0"][arrays.codes[0]]
        if family == "ordinal":
            scale = np.exp(arrays.S @ named["log_noise"]) if noise else np.ones(len(arrays.y))
            rows = _core.ordinal_loglik(named["cutpoints"][None], eta[None], scale[None], arrays.y, link)
        else:
            rows = _core.bernoulli_loglik((eta + named["intercept"])[None], arrays.y, link)
        # 1e-8: PyMC's normal log CDF (probit) agrees with scipy's to about 1e-9 relative here
        np.testing.assert_allclose(obs(point), rows.sum(), rtol=1e-8)


# ---- one small location-scale fit, several checks ------------------------------------------
TRUTH = {"cutpoints": (-2.0, 0.0, 2.0), "condition_effects": (0.0, 1.0), "log_noise": (0.0, 0.7), "sd_item": 2.0}


def fit_location_scale(seed: int):
    data = simulate_ordinal(40, 4, random_state=seed, **TRUTH)
    fit = bayes_ordinal("score ~ condition + (1 | item_id)", data, noise="condition", random_state=seed, **FAST)
    return data, fit


@pytest.fixture(scope="module")
def ls_fit():
    return fit_location_scale(FAST_SEED)


def check_recovery(data, fit):
    assert fit.converged, fit.flags
    table = fit.summary().set_index("term")
    truth = {
        "cutpoint[1|2]": -2.0,
        "cutpoint[2|3]": 0.0,
        "cutpoint[3|4]": 2.0,
        "condition[T.c1]": 1.0,
        "sd(item_id)": 2.0,
        "log_noise:condition[T.c1]": 0.7,
    }
    assert list(table.index) == list(truth)
    _assert_within_sds(table, truth)
    assert (table["r_hat"] <= 1.01).all() and (table["ess_bulk"] >= 400).all()


def check_noise_by_condition(data, fit):
    noise = fit.noise(confidence=0.999)  # 99.9%: one interval, checked over six seeds
    latent = noise[noise["quantity"] == "latent_sd"].set_index("condition")
    # reference condition fixed at the standard logistic SD pi / sqrt(3)
    assert latent.loc["c0", "estimate"] == pytest.approx(np.pi / np.sqrt(3), rel=1e-12)
    assert latent.loc["c1", "ci_low"] < np.pi / np.sqrt(3) * np.exp(0.7) < latent.loc["c1", "ci_high"]
    pairs = fit.noise_pairs()
    assert list(pairs.columns) == ["a", "b", "estimate", "ci_low", "ci_high", "prob_more_consistent"]
    # truth: c1's noise is twice c0's; 160 attempts per condition make that clear (0.9992 or
    # more at seeds 0-11)
    assert pairs.loc[0, "prob_more_consistent"] > 0.95
    score_sd = noise[noise["quantity"] == "score_sd"].set_index("condition")["estimate"]
    assert score_sd["c0"] < score_sd["c1"]


def check_items_and_attempts(data, fit):
    items = fit.items(confidence=0.9)
    assert set(items["quantity"]) == {"latent", "expected", "next_attempt", "attempt_sd"}
    expected = items[items["quantity"] == "expected"].set_index(["item_id", "condition"])["estimate"]
    observed = data.groupby(["item_id", "condition"])["score"].mean()
    # posterior expected score of each cell tracks its observed mean (4 attempts each,
    # shrunk toward the condition mean, and more so in the noisier condition): correlation,
    # not equality; 0.85-0.94 at seeds 0-11
    assert np.corrcoef(expected.loc[observed.index], observed)[0, 1] > 0.75
    latent = items[items["quantity"] == "latent"].set_index(["item_id", "condition"])
    truth = data.groupby(["item_id", "condition"])["latent"].first()
    inside = (latent["ci_low"] < truth) & (truth < latent["ci_high"])
    # 90% intervals for 80 latent locations: 0.79-0.96 inside at seeds 0-11; 0.7 is 6 binomial
    # SDs below 0.9 (the intervals share hyperparameters, so their misses are not independent)
    assert 0.7 <= inside.mean() <= 1.0
    dist = fit.score_distribution(sum_over="condition")
    np.testing.assert_allclose(dist.groupby("item_id")["probability"].sum(), 1.0, rtol=1e-12)
    assert dist["score"].between(2, 8).all()  # totals of two 1-4 scores
    att = fit.attempts(target_sd=0.25, n=4)
    assert (att["n_needed"] >= 1).all() and (att["n_needed_high"] >= att["n_needed"]).all()
    assert (att["mean_sd"] > att["attempt_sd"] / 2 - 1e-12).all()  # sqrt(E s^2 / 4) at least
    totals = fit.items(sum_over="condition")
    assert "latent" not in set(totals["quantity"]) and totals["item_id"].nunique() == 40
    t = totals[totals["quantity"] == "expected"].set_index("item_id")["estimate"]
    per_cell = expected.groupby(level="item_id").sum()
    np.testing.assert_allclose(t.loc[per_cell.index], per_cell, rtol=1e-12)


def check_ppc_and_loo(data, fit):
    table = fit.ppc(by="condition")
    assert list(table.columns) == ["condition", "score", "observed", "estimate", "ci_low", "ci_high", "p_value"]
    counts = data.groupby("condition")["score"].value_counts().sort_index()
    np.testing.assert_array_equal(table.set_index(["condition", "score"])["observed"].loc[counts.index], counts)
    assert (table["p_value"] > 0.01).all()  # the model generated these data (min 0.32 at seeds 0-11)
    np.testing.assert_allclose(table.groupby("condition")["estimate"].sum(), 160, rtol=1e-12)
    fig = fit.plot_ppc(by="condition")
    assert len(fig.axes) == 2
    loo = fit.loo()
    assert loo.loc[0, "n"] == len(data) and np.isfinite(loo.loc[0, "elpd_loo"])
    assert "log_likelihood" in fit.idata.groups()


def check_short_chains_are_flagged(data, fit):
    # 2 x 30 draws: bulk ESS cannot approach 400 whatever the seed or machine
    with pytest.warns(MCMCDiagnosticsWarning, match="bulk ESS"):
        short = bayes_ordinal(
            "score ~ condition + (1 | item_id)", data, noise="condition", random_state=fit.settings.seed,
            sampler="pymc", draws=30, tune=100, chains=2,
        )
    assert not short.converged
    assert any("Remedy" in f for f in short.flags)
    assert "NOT CONVERGED" in repr(short)
    assert not short.summary()["ok"].all()
    # LOO ranking of two models of the same rows: the machinery, not a verdict
    with pytest.warns(UserWarning, match="Pareto"):  # ArviZ: the 60-draw fit gives high k
        ranking = short.compare(fit)
    assert list(ranking.columns) == ["model", "rank", "elpd_loo", "se", "elpd_diff", "dse", "p_loo", "weight", "warning"]
    assert sorted(ranking["rank"]) == [0, 1] and ranking["weight"].sum() == pytest.approx(1.0)


def test_recovers_parameters(ls_fit):
    check_recovery(*ls_fit)


def test_noise_by_condition(ls_fit):
    check_noise_by_condition(*ls_fit)


def test_items_and_attempts(ls_fit):
    check_items_and_attempts(*ls_fit)


def test_ppc_and_loo(ls_fit):
    check_ppc_and_loo(*ls_fit)


def test_short_chains_are_flagged(ls_fit):
    check_short_chains_are_flagged(*ls_fit)


def test_nutpie_samples_the_same_posterior_as_pymc(ls_fit):
    """Issue 35: nutpie samples hce's hand-written density of this model (equal to the PyMC
    model's at random points: tests/stats/test_bayes_density.py). Its posterior means agree
    with PyMC's NUTS on the PyMC graph within 0.3 posterior SD: the difference of two
    means with bulk ESS >= 400 each has an SD of at most 0.07 posterior SD, so 0.3 is over
    4 of those; the variables stored are the PyMC model's own."""
    pytest.importorskip("nutpie", reason="the default sampler: pip install nutpie")
    data, fit = ls_fit
    ours = bayes_ordinal("score ~ condition + (1 | item_id)", data, noise="condition", random_state=FAST_SEED,
                         sampler="nutpie")
    assert ours.converged, ours.flags
    pymc_vars = {v for v in fit.idata.posterior.data_vars if not str(v).endswith("__")}
    assert set(ours.idata.posterior.data_vars) == pymc_vars
    a, b = ours.summary().set_index("term"), fit.summary().set_index("term")
    gap = (a["estimate"] - b["estimate"]).abs() / b["sd"]
    assert (gap < 0.3).all(), gap.round(3).to_dict()


def fit_binary(seed: int):
    """Small boolean-judge fit: 30 items x 2 conditions x 6 verdicts."""
    rng = np.random.default_rng(seed)
    frame = pd.MultiIndex.from_product([range(30), ["a", "b"], range(6)], names=["item_id", "condition", "rep"]).to_frame(index=False)
    eta = -0.3 + 1.0 * (frame["condition"] == "b") + rng.normal(0, 1.0, 30)[frame["item_id"]]
    frame["passed"] = rng.random(len(frame)) < 1 / (1 + np.exp(-eta))
    fit = bayes_binary("passed ~ condition + (1 | item_id)", frame, random_state=seed, **FAST)
    return frame, fit


def check_binary_pass_rates(frame, fit):
    assert fit.converged, fit.flags
    table = fit.summary().set_index("term")
    assert list(table.index) == ["(Intercept)", "condition[T.b]", "sd(item_id)"]
    _assert_within_sds(table, {"condition[T.b]": 1.0, "sd(item_id)": 1.0})
    rates = fit.expected(by="condition").set_index("condition")
    observed = frame.groupby("condition")["passed"].mean()
    # posterior mean pass rate over the observed items against the observed rate (180
    # verdicts each): within two binomial standard errors
    np.testing.assert_allclose(rates["estimate"], observed.loc[rates.index], atol=2 * np.sqrt(0.25 / 180))
    # the effect, 1.0, is about four posterior SDs (see the summary's sd) above 0
    assert fit.expected_pairs(by="condition").loc[0, "prob_greater"] < 0.05
    ppc = fit.ppc()
    assert list(ppc["score"]) == [False, True] and ppc["observed"].sum() == len(frame)


def test_binary_pass_rates():
    check_binary_pass_rates(*fit_binary(FAST_SEED))


# ---- slow: coverage, references from maximum likelihood, Bernoulli -------------------------
def _sampler():
    import importlib.util

    return "nutpie" if importlib.util.find_spec("nutpie") else "pymc"


@pytest.mark.slow
def test_coverage_of_90_percent_intervals():
    """90% HDIs cover the simulating parameters in 80-97% of 50 data sets (every
    parameter pooled: 6 per data set, 300 intervals); nearly every fit must converge."""
    import warnings

    truth = np.array([-2.0, 0.0, 2.0, 1.0, 2.0, 0.7])
    hits, converged = [], []
    for seed in range(50):
        data = simulate_ordinal(30, 3, random_state=100 + seed, **TRUTH)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCMCDiagnosticsWarning)  # counted below
            fit = bayes_ordinal(
                "score ~ condition + (1 | item_id)", data, noise="condition", random_state=seed,
                sampler=_sampler(), draws=1000, tune=1000, chains=4,
            )
        converged.append(fit.converged)
        table = fit.summary(confidence=0.9)
        hits.append(((table["ci_low"] < truth) & (truth < table["ci_high"])).to_numpy())
    hits = np.array(hits)
    coverage = hits.mean()
    assert np.mean(converged) >= 0.9, np.mean(converged)
    assert 0.80 <= coverage <= 0.97, (coverage, hits.mean(axis=0))
    assert (hits.mean(axis=0) >= 0.7).all(), hits.mean(axis=0)  # no parameter badly off


@pytest.mark.slow
def test_fixed_effects_match_statsmodels_ordered_model():
    """Without random effects and with 2,000 rows the posterior mean is within a tenth
    of a posterior SD of the maximum-likelihood estimate (statsmodels OrderedModel)."""
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    rng = np.random.default_rng(5)
    x = rng.normal(size=2000)
    g = rng.integers(0, 2, 2000)
    latent = 0.8 * x - 0.5 * g + rng.logistic(size=2000)
    data = pd.DataFrame({"score": 1 + np.digitize(latent, [-1.5, 0.0, 1.0]), "x": x, "g": g})
    fit = bayes_ordinal("score ~ x + g", data, sampler=_sampler(), random_state=1)
    ml = OrderedModel(data["score"], data[["x", "g"]], distr="logit").fit(method="bfgs", disp=False, maxiter=2000)
    cut = np.cumsum(np.r_[ml.params.iloc[2], np.exp(ml.params.iloc[3:])])
    expected = np.r_[cut, ml.params.iloc[:2]]
    table = fit.summary()
    assert fit.converged
    np.testing.assert_allclose(table["estimate"], expected, atol=0.1 * table["sd"].max())
    # posterior SD against the ML standard errors (Bernstein-von Mises), 10%
    np.testing.assert_allclose(table["sd"].iloc[3:], ml.bse.iloc[:2], rtol=0.1)


@pytest.mark.slow
def test_bernoulli_judges_and_compare():
    """pass ~ condition + (1|item) + (1|behavior): recovery of the simulating values,
    pass rates by condition and a LOO comparison that prefers the true model."""
    rng = np.random.default_rng(7)
    items, behaviors, reps = 40, 6, 3
    frame = pd.MultiIndex.from_product(
        [range(items), range(behaviors), ["a", "b"], range(reps)], names=["item_id", "behavior", "condition", "rep"]
    ).to_frame(index=False)
    u_item = rng.normal(0, 1.0, items)
    u_beh = rng.normal(0, 1.5, behaviors)
    eta = 0.5 + 1.2 * (frame["condition"] == "b") + u_item[frame["item_id"]] + u_beh[frame["behavior"]]
    frame["passed"] = rng.random(len(frame)) < 1 / (1 + np.exp(-eta))
    # six behaviours: an SD from few levels, so a smaller step size (target_accept)
    options = {"sampler": _sampler(), "random_state": 2, "target_accept": 0.99, "draws": 2000}
    # the same geometry leaves the odd divergent transition in this model too: nutpie on
    # hce's density, seeds 1-5, left 0, 1, 0, 1, 0 of 8000 (bulk ESS >= 1,322, R-hat <=
    # 1.0037, posterior means within 0.03 of each other); at most 4 are allowed
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=MCMCDiagnosticsWarning, message=".*diverged")
        fit = bayes_binary("passed ~ condition + (1 | item_id) + (1 | behavior)", frame, **options)
    assert fit.diagnostics()["ok"].all() and fit.divergences <= 4, fit.flags
    table = fit.summary().set_index("term")
    assert table.loc["condition[T.b]", "ci_low"] < 1.2 < table.loc["condition[T.b]", "ci_high"]
    assert table.loc["sd(item_id)", "ci_low"] < 1.0 < table.loc["sd(item_id)", "ci_high"]
    rates = fit.expected(by="condition").set_index("condition")
    observed = frame.groupby("condition")["passed"].mean()
    np.testing.assert_allclose(rates["estimate"], observed.loc[rates.index], atol=0.03)
    assert fit.expected_pairs(by="condition").loc[0, "prob_greater"] < 0.01
    # the intercept-only model may leave a few divergent transitions (six behaviours with 240
    # verdicts each suit a centred parameterisation, which hce does not offer yet): whether it
    # does depends on the CPU's floating point (it did on one machine, not on another), so the
    # test neither requires nor forbids the warning; this model serves only as the worse one
    # in the LOO comparison
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=MCMCDiagnosticsWarning, message=".*diverged")
        smaller = bayes_binary("passed ~ 1 + (1 | item_id) + (1 | behavior)", frame, **options)
    ranking = fit.compare(smaller)
    assert ranking.loc[0, "model"] == fit.title and ranking.loc[0, "rank"] == 0


@pytest.mark.slow
def test_nutpie_refits_a_compiled_bernoulli_graph_on_new_data():
    """A model outside the hand-written density (probit) is compiled from the PyMC graph once
    per process and refitted on new data of the same shape with ``with_data``: the data
    the graph does not read (a Bernoulli model's ``noise_counts``) must not be passed, which
    raised nutpie's KeyError on the second fit."""
    pytest.importorskip("nutpie", reason="the default sampler: pip install nutpie")
    options = {"sampler": "nutpie", "link": "probit", "draws": 200, "chains": 2}
    rates = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        frame = pd.DataFrame({"item_id": np.repeat(np.arange(20), 6), "condition": np.tile(["a", "b"], 60)})
        frame["passed"] = rng.random(len(frame)) < np.where(frame["condition"] == "b", 0.8, 0.4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCMCDiagnosticsWarning)  # 2 x 200 draws: the machinery only
            fit = bayes_binary("passed ~ condition + (1 | item_id)", frame, random_state=seed, **options)
        rates.append(fit.expected(by="condition").set_index("condition")["estimate"])
        np.testing.assert_allclose(rates[-1], frame.groupby("condition")["passed"].mean(), atol=0.08)


def test_response_encodings():
    """Ordered Categorical responses are scored by rank; levels= adds unobserved scores."""
    from hce.stats.bayes.fit import model_inputs

    data = pd.DataFrame({"item_id": list("aabbcc"), "score": [2, 3, 3, 5, 2, 5]})
    inputs = model_inputs("score ~ 1 + (1 | item_id)", data, family="ordinal", levels=[1, 2, 3, 4, 5])
    assert inputs.labels == [1, 2, 3, 4, 5] and inputs.arrays.n_categories == 5
    np.testing.assert_array_equal(inputs.arrays.y, [1, 2, 2, 4, 1, 4])
    rating = pd.Categorical(["low", "high", "mid", "mid", "low", "high"], categories=["low", "mid", "high"], ordered=True)
    inputs = model_inputs("rating ~ 1 + (1 | item_id)", data.assign(rating=rating), family="ordinal")
    assert inputs.labels == ["low", "mid", "high"]
    np.testing.assert_array_equal(inputs.arrays.y, [0, 2, 1, 1, 0, 2])
    np.testing.assert_array_equal(inputs.values, [1.0, 2.0, 3.0])
    passed = model_inputs("ok ~ 1 + (1 | item_id)", data.assign(ok=[True, False, True, True, False, True]), family="bernoulli")
    np.testing.assert_array_equal(passed.arrays.y, [1, 0, 1, 1, 0, 1])


# ---- random slopes ------------------------------------------------------------------------
def test_slope_design_matrices():
    """(1 + x | g), (0 + x | g) and (1 | g): each term's own columns, exactly."""
    from hce.stats.bayes.fit import model_inputs

    data = pd.DataFrame(
        {"item_id": list("aabbcc"), "cond": list("xyxyxy"), "t": [0.5, 1.0, 2.0, 0.0, 1.5, 3.0], "score": [1, 2, 2, 3, 1, 3]}
    )
    inputs = model_inputs("score ~ cond + (1 + cond | item_id)", data, family="ordinal")
    grouping = inputs.design.groupings["item_id"]
    assert grouping.z_names == ["(Intercept)", "cond[T.y]"]
    np.testing.assert_array_equal(inputs.arrays.Z[0], [[1, 0], [1, 1], [1, 0], [1, 1], [1, 0], [1, 1]])
    np.testing.assert_array_equal(inputs.arrays.codes[0], [0, 0, 1, 1, 2, 2])
    assert inputs.arrays.n_effects(0) == 2 and set(inputs.arrays.data()) == {"counts", "noise_counts", "X", "g0", "Z0"}
    # (0 + cond | g): lme4 gives one effect per level of cond (no reference level)
    inputs = model_inputs("score ~ cond + (0 + cond | item_id)", data, family="ordinal")
    assert inputs.design.groupings["item_id"].z_names == ["cond[x]", "cond[y]"]
    np.testing.assert_array_equal(inputs.arrays.Z[0], [[1, 0], [0, 1]] * 3)
    inputs = model_inputs("score ~ t + (0 + t | item_id) + (1 | cond)", data, family="ordinal")
    np.testing.assert_array_equal(inputs.arrays.Z[0], data[["t"]].to_numpy())
    assert inputs.arrays.Z[1] is None and inputs.arrays.n_effects(1) == 1
    # the binary model builds the same terms; (0 + t | g) is one SD without a Cholesky factor
    from hce.stats.bayes.models import build_model, resolve_priors

    binary = model_inputs("ok ~ t + (0 + t | item_id)", data.assign(ok=[0, 1, 1, 0, 1, 1]), family="bernoulli")
    model = build_model("bernoulli", "logit", binary.arrays, resolve_priors("bernoulli", None))
    assert {v.name for v in model.free_RVs} == {"b", "sd_0", "z_0", "intercept"}
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    model = build_model("bernoulli", "probit", model_inputs(
        "ok ~ cond + (1 + cond | item_id)", data.assign(ok=[0, 1, 1, 0, 1, 1]), family="bernoulli").arrays,
        resolve_priors("bernoulli", {"lkj": 1.0}))
    assert {v.name for v in model.free_RVs} == {"b", "chol_0", "z_0", "intercept"}
    assert np.isfinite(model.compile_logp()(model.initial_point()))


SLOPES = {"cutpoints": (-2.0, 0.0, 2.0), "condition_effects": (0.0, 1.0), "sd_item": 1.5, "sd_slope": 1.5, "cor_slope": 0.5}


def fit_slopes(seed: int):
    """score ~ condition + (1 + condition | item_id) on 40 items x 2 conditions x 6 attempts."""
    data = simulate_ordinal(40, 6, random_state=seed, **SLOPES)
    fit = bayes_ordinal("score ~ condition + (1 + condition | item_id)", data, random_state=seed, target_accept=0.9, **FAST)
    return data, fit


def check_random_slopes(data, fit):
    """The posterior means of the two SDs and the correlation lie within 4 posterior SDs
    of the realised values (the SDs and correlation of the 40 simulated item effects,
    which is what the data can tell; 40 items leave the population values about +-0.4
    uncertain), the fixed effect within 4 SDs of the truth, and every diagnostic passes."""
    assert fit.converged, fit.flags
    table = fit.summary().set_index("term")
    assert list(table.index[3:]) == [
        "condition[T.c1]", "sd_(Intercept)|item_id", "sd_condition[T.c1]|item_id", "cor_(Intercept).condition[T.c1]|item_id",
    ]
    cells = data.groupby(["item_id", "condition"])["latent"].first().unstack()
    u0, u1 = cells["c0"], cells["c1"] - 1.0 - cells["c0"]
    _assert_within_sds(table, {
        "condition[T.c1]": 1.0,
        "sd_(Intercept)|item_id": u0.std(),
        "sd_condition[T.c1]|item_id": u1.std(),
        "cor_(Intercept).condition[T.c1]|item_id": np.corrcoef(u0, u1)[0, 1],
    })
    assert table["ok"].all()
    # the linear predictor rebuilds u = L z from the packed Cholesky factor: its SDs are
    # PyMC's own chol_0_stds, and each effect sums to zero over the items
    u = fit._effects(0)
    np.testing.assert_allclose(np.sqrt((fit._draws("chol_0")[:, [0, 1, 2]] ** 2 @ [[1, 0], [0, 1], [0, 1]])),
                               fit._draws("chol_0_stds"), rtol=1e-12)
    np.testing.assert_allclose(u.sum(axis=2), 0.0, atol=1e-9)
    # item x condition latent locations follow the simulated ones (slopes included)
    latent = fit.items().query("quantity == 'latent'").set_index(["item_id", "condition"])["estimate"]
    truth = data.groupby(["item_id", "condition"])["latent"].first()
    assert np.corrcoef(latent.loc[truth.index], truth)[0, 1] > 0.9


def test_recovers_random_slopes():
    check_random_slopes(*fit_slopes(FAST_SEED))


# ---- slow: every fast MCMC fit above under other seeds ------------------------------------
FAST_FITS = {
    "location_scale": (fit_location_scale, (check_recovery, check_noise_by_condition, check_items_and_attempts,
                                            check_ppc_and_loo, check_short_chains_are_flagged)),
    "binary": (fit_binary, (check_binary_pass_rates,)),
    "slopes": (fit_slopes, (check_random_slopes,)),
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", other_seeds(FAST_SEED))
@pytest.mark.parametrize("case", list(FAST_FITS))
def test_fast_mcmc_fits_hold_under_other_seeds(case, seed):
    """The fast suite's MCMC fits and all their checks, under seeds the fast suite does not
    use; an MCMCDiagnosticsWarning is an error here as everywhere (pytest's filterwarnings)."""
    fit_case, checks = FAST_FITS[case]
    result = fit_case(seed)
    diagnostics = result[1].diagnostics()  # the margin, shown with pytest -s or on failure
    print(f"{case} seed {seed}: min bulk ESS {diagnostics['ess_bulk'].min():.0f}, max R-hat {diagnostics['r_hat'].max():.4f}")
    for check in checks:
        check(*result)


@pytest.mark.slow
def test_slopes_agree_with_lmer_on_finely_scored_gaussian_data():
    """Reference: hce's lmer (statsmodels MixedLM route, itself checked against lme4 on
    sleepstudy in test_mixed.py). A cumulative-probit model has no residual SD to compare,
    so the data are a Gaussian linear mixed model ``y* = cond + u0 + u1 cond + e``,
    ``e ~ N(0, 1)``, scored on 14 categories 0.75 apart (0.6% of rows censored at the
    ends): the probit model of the scores and lmer of the scores estimate the same latent
    quantities, lmer's divided by its residual SD. Tolerances are in posterior SDs and
    wide, for stated reasons: the posterior mean of an SD sits above the REML mode (right
    skew, 40 items), lmer's residual SD carries the binning (Sheppard) and censoring, and
    the probit model carries neither. Measured (2-core machine, 216 s): probit ``cond``
    1.182 (SD 0.091) vs lmer 1.145; slope SD 0.647 (0.136) vs 0.605; intercept SD 0.972
    (0.141) vs 0.872. PyMC's NUTS at the default target_accept leaves a few divergent
    transitions on this posterior, which the fit flags."""
    from hce.stats.mixed import lmer

    rng = np.random.default_rng(21)
    items, reps = 40, 8
    frame = pd.MultiIndex.from_product([range(items), [0, 1], range(reps)], names=["item_id", "cond", "rep"]).to_frame(index=False)
    u = rng.multivariate_normal([0, 0], [[1.0, 0.3 * 0.7], [0.3 * 0.7, 0.49]], items)
    c = frame["cond"].to_numpy()
    latent = 1.0 * c + u[frame["item_id"], 0] + u[frame["item_id"], 1] * c + rng.normal(size=len(frame))
    cut = np.arange(-4.0, 5.01, 0.75)
    frame["score"] = np.digitize(latent, cut)
    formula = "score ~ cond + (1 + cond | item_id)"
    with pytest.warns(MCMCDiagnosticsWarning, match="diverged"):
        fit = bayes_ordinal(formula, frame, link="probit", sampler="pymc", random_state=4, draws=1000, tune=1000, chains=2)
    assert fit.summary()["ok"].all()  # R-hat and ESS pass; only the divergences are flagged
    ref = lmer(formula, frame)
    sigma = np.sqrt(ref.sigma2)
    vc = ref.varcorr().query("group == 'item_id' and var2 != var2").set_index("var1")["sdcor"] / sigma
    expected = {
        "cond": ref.fixef().set_index("term").loc["cond", "estimate"] / sigma,
        "sd_cond|item_id": vc["cond"],
        "sd_(Intercept)|item_id": vc["(Intercept)"],
    }
    table = fit.summary().set_index("term")
    for term, value, within in zip(expected, expected.values(), (0.5, 0.5, 1.0)):
        row = table.loc[term]
        assert abs(row["estimate"] - value) < within * row["sd"], (term, row["estimate"], value)


# ---- slow: the Experiment-5-size fit with the defaults (issue 35 item 3) ------------------
EXP5 = {"n_items": 577, "n_attempts": 5, "condition_effects": (0.0, 0.3), "log_noise": (0.0, -0.4), "sd_item": 2.5}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_experiment5_size_fit_converges_with_the_defaults(seed):
    """bench/bayes.py's exp5 case with every default (nutpie, 4 chains x 1000 draws after
    nutpie's 300 warm-up steps; nutpie samples hce's hand-written density of the model,
    hce.stats.bayes.density): converged, and the truth inside the posterior. Margins
    measured at seeds 1-6 on that density: minimum bulk ESS 1,419-1,721 (asserted >= 800,
    twice the bound), largest R-hat 1.0063-1.0076 over the 577 item effects (checked by
    ``converged`` at the bound 1.01: the thinnest margin here), no divergence; the truth
    within 2.41 posterior SD at seeds 4-6 (asserted 4). On the compiled PyMC graph before
    (seeds 1-4): ESS 1,394-1,605, R-hat 1.0057-1.0083."""
    pytest.importorskip("nutpie", reason="the default sampler: pip install nutpie")
    data = simulate_ordinal(random_state=seed, **EXP5)
    fit = bayes_ordinal("score ~ condition + (1 | item_id)", data, noise="condition", random_state=seed)
    diagnostics = fit.diagnostics()
    print(f"exp5 seed {seed}: min bulk ESS {diagnostics['ess_bulk'].min():.0f}, max R-hat {diagnostics['r_hat'].max():.4f}")
    assert fit.sampler == "nutpie" and fit.settings.tune == 300
    assert fit.converged and fit.divergences == 0
    assert diagnostics["ess_bulk"].min() >= 800
    table = fit.summary().set_index("term")
    _assert_within_sds(table, {"condition[T.c1]": 0.3, "log_noise:condition[T.c1]": -0.4, "sd(item_id)": 2.5})
