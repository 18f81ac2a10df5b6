"""Variance decomposition (G study) and models of spread in hce.stats.mixed.

Reference: Shrout & Fleiss (1979), Psychol Bull 86:420, Table 2 data and Table 4 ICCs
(.29 ICC(2,1), .71 ICC(3,1), .62 ICC(2,4), .91 ICC(3,4), 2 decimals). In a targets x judges
G study, Phi and G for one judge are ICC(2,1) and ICC(3,1), and for four judges ICC(2,4)
and ICC(3,4) (Brennan 2001, sec. 4.4); pingouin.intraclass_corr gives the same ICCs to
full precision, so they are also compared at rtol=1e-6.
"""

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import optimize, stats

from hce.errors import DataError
from hce.stats import spread_model, variance_components
from hce.stats.mixed.balanced import _maximise
from hce.stats.mixed import SingularFitWarning

SF = pd.DataFrame(
    {
        "target": [t for t in range(1, 7) for _ in range(4)],
        "judge": list("ABCD") * 6,
        "rating": [9, 2, 5, 8, 6, 1, 3, 2, 8, 4, 6, 8, 7, 1, 2, 6, 10, 5, 6, 9, 6, 2, 4, 7],
    }
)


def test_g_and_phi_are_shrout_fleiss_iccs():
    g = variance_components(SF, score="rating", facets=["target", "judge"])
    icc = pg.intraclass_corr(SF, targets="target", raters="judge", ratings="rating").set_index(
        "Type"
    )["ICC"]
    four = g.coefficients.set_index("metric")["estimate"]
    one = g.d_study(n_levels={"judge": 1}).set_index("metric")["estimate"]
    np.testing.assert_allclose([four["G"], four["Phi"]], [0.91, 0.62], atol=0.005)
    np.testing.assert_allclose([one["G"], one["Phi"]], [0.71, 0.29], atol=0.005)
    np.testing.assert_allclose(
        [four["G"], four["Phi"], one["G"], one["Phi"]],
        icc[["ICC(C,k)", "ICC(A,k)", "ICC(C,1)", "ICC(A,1)"]],
        rtol=1e-6,
    )
    assert g.components["component"].tolist() == ["target", "judge", "residual"]
    np.testing.assert_allclose(g.components["share"].sum(), 1.0)


def test_satterthwaite_intervals_by_hand():
    # Mean squares of the 6 x 4 table; sigma2_target = (BMS - EMS) / 4 with Satterthwaite df
    # (Brennan 2001, eq. 6.5); the residual interval is the exact chi-square one on 15 df.
    wide = SF.pivot(index="target", columns="judge", values="rating").to_numpy(float)
    grand = wide.mean()
    bms = 4 * ((wide.mean(1) - grand) ** 2).sum() / 5
    res = wide - wide.mean(1, keepdims=True) - wide.mean(0, keepdims=True) + grand
    ems = (res**2).sum() / 15
    comp = variance_components(SF, score="rating", facets=["target", "judge"]).components.set_index("component")
    est = (bms - ems) / 4
    df = est**2 / ((bms / 4) ** 2 / 5 + (ems / 4) ** 2 / 15)
    np.testing.assert_allclose(
        comp.loc["target", ["estimate", "df"]].astype(float), [est, df], rtol=1e-10
    )
    np.testing.assert_allclose(
        comp.loc["target", ["ci_low", "ci_high"]].astype(float),
        [df * est / stats.chi2.ppf(0.975, df), df * est / stats.chi2.ppf(0.025, df)],
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        comp.loc["residual", ["ci_low", "ci_high"]].astype(float),
        [15 * ems / stats.chi2.ppf(0.975, 15), 15 * ems / stats.chi2.ppf(0.025, 15)],
        rtol=1e-10,
    )


def judge_log(seed=3, n_items=10, attempts=4):
    rng = np.random.default_rng(seed)
    d = pd.MultiIndex.from_product(
        [range(n_items), ["p1", "p2"], ["m1", "m2", "m3"], range(attempts)],
        names=["item_id", "prompt_id", "model", "attempt"],
    ).to_frame(index=False)
    i = d["item_id"].to_numpy()
    p = (d["prompt_id"] == "p2").to_numpy().astype(int)
    m = d["model"].str[1].astype(int).to_numpy() - 1
    sd = np.where(p == 1, 0.5, 1.0)
    d["total"] = (
        10
        + rng.normal(0, 2, n_items)[i]
        + rng.normal(0, 1, 2)[p]
        + rng.normal(0, 0.7, 3)[m]
        + rng.normal(0, 0.8, (n_items, 2))[i, p]
        + rng.normal(0, 0.6, (n_items, 3))[i, m]
        + rng.normal(0, sd)
    )
    return d


def test_three_facet_study_d_study_formula():
    with pytest.warns(SingularFitWarning):  # prompt:model and the triple interaction hit zero
        g = variance_components(
            judge_log(), score="total", facets=["item_id", "prompt_id", "model"], n_attempts=4
        )
    assert g.components["method"].str.contains("profile-likelihood").all()
    assert (g.components["ci_low"] <= g.components["estimate"]).all()
    assert (g.components["estimate"] < g.components["ci_high"]).all()
    comp = g.components.set_index("component")["estimate"].clip(lower=0)
    assert list(comp.index) == [
        "item_id",
        "prompt_id",
        "model",
        "item_id:prompt_id",
        "item_id:model",
        "prompt_id:model",
        "item_id:prompt_id:model",
        "residual",
    ]
    # Brennan 2001 eq. 4.1-4.3 with n'_prompt = 2, n'_model = 3, n'_attempt = 4
    rel = (
        comp["item_id:prompt_id"] / 2
        + comp["item_id:model"] / 3
        + comp["item_id:prompt_id:model"] / 6
        + comp["residual"] / 24
    )
    ab = rel + comp["prompt_id"] / 2 + comp["model"] / 3 + comp["prompt_id:model"] / 6
    want = [comp["item_id"] / (comp["item_id"] + rel), comp["item_id"] / (comp["item_id"] + ab)]
    np.testing.assert_allclose(g.coefficients["estimate"], want, rtol=1e-12)
    np.testing.assert_allclose(g.coefficients["error_variance"], [rel, ab], rtol=1e-12)
    assert "G study" in g.summary()


def test_d_study_checks_its_arguments():
    g = variance_components(SF, score="rating", facets=["target", "judge"])
    with pytest.raises(DataError, match="one score per facet combination"):
        g.d_study(n_attempts=3)
    with pytest.raises(DataError, match=r"\['rater'\]"):
        g.d_study(n_levels={"rater": 2})
    with pytest.raises(DataError, match="'score'"):
        variance_components(SF, score="score", facets=["target"])


def test_spread_model_on_per_cell_sds():
    log = judge_log()
    with pytest.warns(UserWarning) as record:  # the model's own boundary warning, if any, is fine
        m = spread_model("log_sd ~ prompt_id + model + (1 | item_id)", log)
    assert not [r for r in record if "SD" in str(r.message)]
    cells = m.design.data
    want = log.groupby(["item_id", "prompt_id", "model"])["total"].std(ddof=1).to_numpy()
    np.testing.assert_allclose(np.sort(cells["sd"]), np.sort(want), rtol=1e-12)
    assert (cells["n"] == 4).all()
    # balanced and additive: the prompt effect is the difference of mean log SDs
    mean_log = cells.groupby("prompt_id")["log_sd"].mean()
    fe = m.fixef().set_index("term")["estimate"]
    np.testing.assert_allclose(fe["prompt_id[T.p2]"], mean_log["p2"] - mean_log["p1"], rtol=1e-10)


def test_spread_model_zero_sd_and_single_attempt_cells():
    log = judge_log()
    one_value = (log["item_id"] == 0) & (log["prompt_id"] == "p1") & (log["model"] == "m1")
    log.loc[one_value, "total"] = 7.0
    lone = log[(log["item_id"] == 1) & (log["prompt_id"] == "p2") & (log["model"] == "m3")].index[
        1:
    ]
    log = log.drop(lone)
    with pytest.warns(UserWarning) as record:
        m = spread_model("log_sd ~ prompt_id * model + (1 | item_id)", log)
    said = [str(r.message) for r in record]
    assert "spread_model: dropped 1 cells with fewer than 2 attempts" in said
    assert "spread_model: 1 cells with SD 0 set to half the smallest positive SD" in said
    cells = m.design.data
    assert len(cells) == 59  # the one-attempt cell is dropped
    positive = (
        log.groupby(["item_id", "prompt_id", "model"])["total"].std().loc[lambda s: s > 0].min()
    )
    np.testing.assert_allclose(cells["sd"].min(), positive / 2)
    with pytest.warns(UserWarning) as record:
        dropped = spread_model("log_sd ~ prompt_id * model + (1 | item_id)", log, zero_sd="drop")
    assert "spread_model: 1 cells with SD 0 dropped" in [str(r.message) for r in record]
    assert len(dropped.design.data) == 58
    with pytest.raises(DataError, match="'sd', 'log_sd'|\\['log_sd', 'sd'\\]"):
        spread_model("total ~ prompt_id + (1 | item_id)", log)


def dense_reml_deviance(y, X, zs, theta):
    """-2 REML log-likelihood minus (n - p) log(2 pi), from the dense covariance matrix:
    log|V| + log|X' V^-1 X| + r' V^-1 r (Harville 1977) -- written independently of hce.
    """
    v = theta[-1] * np.eye(len(y)) + sum(t * z @ z.T for t, z in zip(theta[:-1], zs))
    vinv = np.linalg.inv(v)
    xvx = X.T @ vinv @ X
    beta = np.linalg.solve(xvx, X.T @ vinv @ y)
    r = y - X @ beta
    return np.linalg.slogdet(v)[1] + np.linalg.slogdet(xvx)[1] + r @ vinv @ r


def test_boundary_g_study_profile_intervals_match_dense_reml():
    data = judge_log(0, n_items=6, attempts=3)
    with pytest.warns(SingularFitWarning):
        g = variance_components(data, score="total", facets=["item_id", "prompt_id", "model"])
    comp = g.components
    assert comp["method"].str.contains("profile").all()
    y, X = data["total"].to_numpy(), np.ones((len(data), 1))
    facets = ["item_id", "prompt_id", "model"]
    zs = []
    for name in comp["component"][:-1]:
        key = data[name.split(":")].astype(str).agg(":".join, axis=1)
        zs.append(pd.get_dummies(key).to_numpy(float))
    theta = comp["estimate"].to_numpy()
    dev_hat = dense_reml_deviance(y, X, zs, theta)
    np.testing.assert_allclose(
        -2 * g.fit.loglik - (len(y) - 1) * np.log(2 * np.pi), dev_hat, rtol=1e-9
    )
    assert set(facets) <= set(comp["component"])
    # at a profile bound, the deviance minimised over the other variances is 3.841 above the minimum
    j = int(np.flatnonzero(comp["component"] == "item_id:model")[0])
    strata = g.fit._strata
    for bound in comp.loc[j, ["ci_low", "ci_high"]].astype(float):
        # start the dense optimiser from hce's profiled variances (speed); it must not find lower
        start, _ = _maximise(
            strata.design[strata.informative],
            strata.ms * strata.df,
            strata.df,
            strata.ms,
            start=theta.copy(),
            fix=(j, bound),
        )
        bounds = [(0, None)] * (len(theta) - 1) + [(1e-6, None)]
        bounds[j] = (bound, bound)
        best = optimize.minimize(
            lambda t: dense_reml_deviance(y, X, zs, t), start, method="L-BFGS-B", bounds=bounds
        )
        np.testing.assert_allclose(best.fun - dev_hat, stats.chi2.ppf(0.95, 1), atol=1e-4)
        np.testing.assert_allclose(
            dense_reml_deviance(y, X, zs, start) - dev_hat, stats.chi2.ppf(0.95, 1), atol=1e-6
        )
    zero = comp[comp["estimate"] == 0]
    assert len(zero) and (zero["ci_low"] == 0).all() and (zero["ci_high"] > 0).all()
