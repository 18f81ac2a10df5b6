"""The worked examples in docs/examples run on the real data and their headline numbers hold.

Each script runs once, in a subprocess, as a user would run it. Its numbers are checked
against independent computations on the same public files (scipy, statsmodels, pingouin,
scikit-learn, the ``krippendorff`` package, or counts from the raw JSON), never against
hce itself. Data: ../shared/data (see its README for sources and licences).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import linalg, sparse, stats

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / ".." / "shared" / "data"
EXAMPLES = REPO / "docs" / "examples"
TOPICAL = DATA / "topicalchat_gpt35_repeated"
SUMMEVAL = DATA / "summeval_gpt4o_repeated"
KQA = DATA / "kqa" / "NLI_medical_annotator.csv"
HEALTHBENCH = DATA / "healthbench_meta_subset"
Z = stats.norm.ppf(0.975)


def run_example(name: str, out: Path, *needs: Path) -> Path:
    missing = [p for p in needs if not p.exists()]
    if missing:
        pytest.skip(f"shared data absent ({missing[0]}): the worked examples read ../shared/data")
    # One BLAS thread, as conftest.py sets for the tests themselves: the example runs in its own
    # process, where oversubscribed OpenBLAS pools made L-BFGS-B (profile intervals) up to ~7x slower
    # on a shared 2-core machine.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), str(out)], cwd=REPO,
                          check=False, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        pytest.fail(f"{name}.py failed:\n{done.stderr[-3000:]}")
    return out


@pytest.fixture(scope="module")
def repeated(tmp_path_factory) -> Path:
    return run_example("reanalyse_repeated_judges", tmp_path_factory.mktemp("repeated"), TOPICAL, SUMMEVAL)


@pytest.fixture(scope="module")
def health(tmp_path_factory) -> Path:
    return run_example("health_rating_agreement", tmp_path_factory.mktemp("health"), KQA, HEALTHBENCH)


def headline(out: Path) -> pd.Series:
    return pd.read_csv(out / "headline.csv").set_index("quantity")


def tables(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "tables" / f"{name}.csv")


@pytest.fixture(scope="module")
def coherence_geval() -> pd.DataFrame:
    """Topical-Chat coherence under the G-Eval prompt: in-scale scores (1-3) only."""
    if not TOPICAL.exists():
        pytest.skip("shared data absent")
    scores = pd.read_csv(TOPICAL / "judge_scores_long.csv")
    part = scores[(scores["attribute"] == "coherence") & (scores["prompt_variant"] == "geval")]
    return part[part["score"].between(1, 3)]


def summeval_wide() -> tuple[np.ndarray, pd.DataFrame]:
    scores = pd.read_csv(SUMMEVAL / "judge_scores_long.csv")
    wide = scores.pivot(index="item_id", columns="sample_idx", values="score")
    items = pd.read_csv(SUMMEVAL / "items.csv").set_index("item_id").loc[wide.index]
    return wide.to_numpy(), items


# ---- reanalyse_repeated_judges -------------------------------------------------------------
def test_topical_pearson_with_humans(repeated, coherence_geval):
    # scipy.stats.pearsonr on the per-item mean of the samples; Fisher z interval by hand
    means = coherence_geval.groupby("item_id")["score"].mean()
    human = pd.read_csv(TOPICAL / "items.csv").set_index("item_id")["human_coherence"].loc[means.index]
    r = stats.pearsonr(means, human).statistic
    n = len(means)
    low, high = np.tanh(np.arctanh(r) + np.array([-Z, Z]) / np.sqrt(n - 3))
    row = headline(repeated).loc["Pearson r, judge mean vs human, coherence (geval)"]
    np.testing.assert_allclose([row.estimate, row.ci_low, row.ci_high, row.n], [r, low, high, n], rtol=1e-9)


def test_topical_friedman_on_item_sds(repeated):
    # scipy.stats.friedmanchisquare (tie-corrected) on the per-item SDs of the items rated under
    # all 7 variants. SDs rounded to 12 decimals so that equal SDs tie, as hce documents.
    scores = pd.read_csv(TOPICAL / "judge_scores_long.csv")
    part = scores[(scores["attribute"] == "coherence") & scores["score"].between(1, 3)]
    sd = part.groupby(["item_id", "prompt_variant"])["score"].std().round(12).unstack().dropna()
    chi2, p = stats.friedmanchisquare(*sd.to_numpy().T)
    row = headline(repeated).loc["Friedman chi2 of per-item SD across prompts, coherence"]
    np.testing.assert_allclose([row.estimate, row.p_value, row.n], [chi2, p, len(sd)], rtol=1e-9)


def dense_reml_deviance(y: np.ndarray, columns: list[pd.Series]):
    """-2 REML log-likelihood of y ~ 1 + random intercepts, as a function of the variances,
    from Henderson's mixed model equations with dense matrices (Searle, Casella & McCulloch
    1992, sec. 6.6): log|V| + log|X'V^-1 X| = n log s2 + log|G| + log|C| and y'Py = y'y / s2 -
    b' C^-1 b, with C = W'W / s2 + diag(0, G^-1), W = [1, Z], b = W'y / s2. Written
    independently of hce.
    """
    zs = [sparse.csr_matrix(pd.get_dummies(c).to_numpy(float)) for c in columns]
    w = sparse.hstack([sparse.csr_matrix(np.ones((len(y), 1))), *zs]).tocsr()
    wtw, wty, yty, n = (w.T @ w).toarray(), w.T @ y, y @ y, len(y)
    diagonal = np.arange(1, len(wtw))

    def deviance(variances: np.ndarray) -> float:
        s2 = variances[-1]
        g = np.concatenate([np.full(z.shape[1], v) for z, v in zip(zs, variances[:-1])])
        c = wtw / s2
        c[diagonal, diagonal] += 1 / g
        chol = linalg.cho_factor(c, lower=True)
        ypy = yty / s2 - wty @ linalg.cho_solve(chol, wty) / s2**2
        logdet_c = 2 * np.sum(np.log(np.diag(chol[0])))
        return n * np.log(s2) + np.sum(np.log(g)) + logdet_c + ypy + (n - 1) * np.log(2 * np.pi)

    return deviance


def test_topical_variance_components_use_every_valid_reply(repeated):
    # Coherence: every in-scale reply (unbalanced). The table's components must maximise the
    # REML likelihood computed densely above (central-difference gradient ~0 on the scale of
    # the curvature), and their standard errors must be sqrt(diag(2 H^-1)) of that likelihood
    # (rtol 1e-3: a plain O(h^2) difference quotient with 1% steps here; the gradient takes
    # 0.1% steps, since its O(h^2) error at 1% is 0.02 SE for the residual).
    scores = pd.read_csv(TOPICAL / "judge_scores_long.csv")
    part = scores[(scores["attribute"] == "coherence") & scores["score"].between(1, 3)]
    vc = tables(repeated, "topical_variance_components")
    got = vc[vc["attribute"] == "coherence"].set_index("component")
    assert (got["n_rows"] == len(part)).all() and (got["n_items"] == 360).all()
    cells = part.groupby(["item_id", "prompt_variant"]).size()
    assert (got["n_cells_short"] == (cells < 20).sum()).all() and (cells < 20).any()
    names = ["item_id", "prompt_variant", "item_id:prompt_variant", "residual"]
    est = got.loc[names, "estimate"].to_numpy()
    item = part["item_id"].astype(str)
    columns = [item, part["prompt_variant"], item + ":" + part["prompt_variant"]]
    f = dense_reml_deviance(part["score"].to_numpy(float), columns)
    h, f0 = 1e-2 * est, f(est)
    eye = np.eye(4)
    grad = np.array([f(est + v / 10) - f(est - v / 10) for v in h * eye]) / (h / 5)
    hess = np.empty((4, 4))
    for i in range(4):
        hess[i, i] = (f(est + h[i] * eye[i]) - 2 * f0 + f(est - h[i] * eye[i])) / h[i] ** 2
        for j in range(i):
            a, b = h[i] * eye[i], h[j] * eye[j]
            cross = f(est + a + b) - f(est + a - b) - f(est - a + b) + f(est - a - b)
            hess[i, j] = hess[j, i] = cross / (4 * h[i] * h[j])
    se = np.sqrt(np.diag(2 * np.linalg.inv(hess)))
    # the score times the SE: the change of -2 l over one SE, ~0 at the maximum
    np.testing.assert_allclose(grad * se, 0, atol=1e-3)
    np.testing.assert_allclose(got.loc[names, "std_error"], se, rtol=1e-3)
    df = 2 * (est / got.loc[names, "std_error"].to_numpy()) ** 2
    np.testing.assert_allclose(got.loc[names, "df"], df, rtol=1e-9)
    np.testing.assert_allclose(
        got.loc[names, ["ci_low", "ci_high"]].to_numpy(),
        np.c_[df * est / stats.chi2.ppf(0.975, df), df * est / stats.chi2.ppf(0.025, df)],
        rtol=1e-9,
    )
    # G and Phi for 20 samples under one variant (Brennan 2001, ch. 4), inside their intervals
    coef = tables(repeated, "topical_g_coefficients")
    coef = coef[coef["attribute"] == "coherence"].set_index("metric")
    rel = est[2] + est[3] / 20
    want = [est[0] / (est[0] + rel), est[0] / (est[0] + rel + est[1])]
    np.testing.assert_allclose(coef.loc[["G", "Phi"], "estimate"], want, rtol=1e-9)
    assert (coef["ci_low"] < coef["estimate"]).all() and (coef["estimate"] < coef["ci_high"]).all()


def test_topical_krippendorff_ordinal(repeated, coherence_geval):
    # The `krippendorff` package (Castro), samples as coders x items
    import krippendorff

    matrix = coherence_geval.pivot(index="sample_idx", columns="item_id", values="score").to_numpy()
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    rel = tables(repeated, "topical_sample_reliability")
    row = rel[(rel["attribute"] == "coherence") & (rel["prompt_variant"] == "geval")
              & (rel["metric"] == "alpha (ordinal)")]
    np.testing.assert_allclose(row["estimate"], expected, rtol=1e-9)


def test_summeval_icc_matches_pingouin(repeated):
    # pingouin.intraclass_corr on the complete 497 x 10 design: ICC1 and ICC1k with their F intervals
    import pingouin

    values, _ = summeval_wide()
    long = pd.DataFrame({"item": np.repeat(np.arange(len(values)), values.shape[1]),
                         "sample": np.tile(np.arange(values.shape[1]), len(values)), "score": values.ravel()})
    ref = pingouin.intraclass_corr(long, targets="item", raters="sample", ratings="score").set_index("Type")
    got = headline(repeated)
    for ours, theirs in (("ICC1 of the samples", "ICC(1,1)"), ("ICC1k of the samples", "ICC(1,k)")):
        np.testing.assert_allclose(got.loc[ours, "estimate"], ref.loc[theirs, "ICC"], rtol=1e-9)
        # pingouin rounds its CI to 2 decimals
        np.testing.assert_allclose(got.loc[ours, ["ci_low", "ci_high"]].astype(float), ref.loc[theirs, "CI95"], atol=0.005)


def test_summeval_correlations_with_experts(repeated):
    values, items = summeval_wide()
    mean = values.mean(axis=1)
    got = headline(repeated)
    np.testing.assert_allclose(got.loc["Pearson r, 10 sample(s) vs experts", "estimate"],
                               stats.pearsonr(mean, items["expert_consistency"]).statistic, rtol=1e-9)
    np.testing.assert_allclose(got.loc["Spearman rho, 1 sample(s) vs experts", "estimate"],
                               stats.spearmanr(values[:, 0], items["expert_consistency"]).statistic, rtol=1e-9)
    np.testing.assert_allclose(got.loc["MAE of the judge mean, 10 sample(s) vs experts", "estimate"],
                               np.abs(mean - items["expert_consistency"]).mean(), rtol=1e-9)


def test_calibration_numbers(repeated, coherence_geval):
    got = headline(repeated)
    from sklearn.metrics import brier_score_loss

    values, items = summeval_wide()
    prob = (values >= 4.5).mean(axis=1)
    outcome = (items["expert_consistency"] == 5).astype(int)
    np.testing.assert_allclose(got.loc["brier of P(fully consistent)", "estimate"],
                               brier_score_loss(outcome, prob), rtol=1e-9)
    # Top-label ECE of the vote shares (Guo et al. 2017): bins (k/10, (k+1)/10], from integer
    # counts so that no float rounding moves a share across an edge.
    counts = coherence_geval.groupby(["item_id", "score"]).size().unstack(fill_value=0)
    n, top = counts.sum(axis=1), counts.max(axis=1)
    modal = counts.idxmax(axis=1)  # the smallest of tied modes
    human = pd.read_csv(TOPICAL / "items.csv").set_index("item_id")["human_coherence"].loc[counts.index]
    correct = (modal == np.rint(human)).astype(float)
    bins = -(-10 * top // n) - 1
    frame = pd.DataFrame({"p": top / n, "y": correct, "bin": bins})
    per_bin = frame.groupby("bin").agg(size=("p", "size"), p=("p", "mean"), y=("y", "mean"))
    ece = (per_bin["size"] * (per_bin["p"] - per_bin["y"]).abs()).sum() / len(frame)
    np.testing.assert_allclose(got.loc["top-label ECE of vote shares, coherence (geval)", "estimate"], ece, rtol=1e-9)


# ---- health_rating_agreement ---------------------------------------------------------------
def test_kqa_fleiss_alpha_ac1(health):
    import krippendorff
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    labels = pd.read_csv(KQA)[["label_0", "label_1", "label_2"]]
    codes = labels.apply(lambda c: c.map({"Contradiction": 0, "Entailment": 1, "Neutral": 2})).to_numpy()
    counts, _ = aggregate_raters(codes)
    got = headline(health)
    np.testing.assert_allclose(got.loc["Fleiss' kappa, physicians, all claims", "estimate"],
                               fleiss_kappa(counts, method="fleiss"), rtol=1e-9)
    np.testing.assert_allclose(got.loc["Krippendorff's alpha, physicians, all claims", "estimate"],
                               krippendorff.alpha(reliability_data=codes.T.astype(float), level_of_measurement="nominal"),
                               rtol=1e-9)
    # Gwet (2008) AC1 and percent agreement, by hand from the category counts
    pa = (counts * (counts - 1)).sum(axis=1).mean() / 6
    pi = counts.mean(axis=0) / 3
    pe = (pi * (1 - pi)).sum() / 2
    np.testing.assert_allclose(got.loc["percent agreement, physicians, all claims", "estimate"], pa, rtol=1e-9)
    np.testing.assert_allclose(got.loc["Gwet's AC1, physicians, all claims", "estimate"], (pa - pe) / (1 - pe), rtol=1e-9)


def healthbench_items() -> pd.DataFrame:
    gold = [json.loads(line) for line in (HEALTHBENCH / "healthbench_meta_gold.jsonl").read_text().splitlines()]
    lines = (HEALTHBENCH / "healthbench_meta_strongmodel_labels.jsonl").read_text().splitlines()
    grader = {r["item_id"]: r["criteria_met"] for r in map(json.loads, lines)}
    return pd.DataFrame({"item_id": [g["item_id"] for g in gold],
                         "share": [np.mean(g["binary_labels"]) for g in gold],
                         "labels": [g["binary_labels"] for g in gold],
                         "physicians": [g["anonymized_physician_ids"] for g in gold],
                         "judge": [grader[g["item_id"]] for g in gold]})


def test_healthbench_physician_alpha(health):
    # `krippendorff` on the 107 physicians x 120 items matrix (most cells missing)
    import krippendorff

    items = healthbench_items()
    who = sorted({p for ps in items["physicians"] for p in ps})
    matrix = np.full((len(who), len(items)), np.nan)
    for j, (ps, labels) in enumerate(zip(items["physicians"], items["labels"])):
        for p, label in zip(ps, labels):
            matrix[who.index(p), j] = float(label)
    np.testing.assert_allclose(headline(health).loc["Krippendorff's alpha, physicians only", "estimate"],
                               krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), rtol=1e-9)


def test_healthbench_judge_kappa(health):
    # statsmodels' cohens_kappa (Fleiss, Cohen & Everitt 1969 SE) on the 2 x 2 table of the grader
    # against the physician majority, ties (1 of 2) left out
    from statsmodels.stats.inter_rater import cohens_kappa

    items = healthbench_items()
    items = items[items["share"] != 0.5]
    table = pd.crosstab(items["judge"], items["share"] > 0.5).to_numpy()
    ref = cohens_kappa(table)
    row = headline(health).loc["Cohen's kappa, LLM grader vs physician majority"]
    np.testing.assert_allclose([row.estimate, row.n], [ref.kappa, len(items)], rtol=1e-9)
    # hce's default interval is Wald on Fisher's z scale with the delta-method SE (inside [-1, 1])
    half = stats.norm.ppf(0.975) * ref.std_kappa / (1 - ref.kappa**2)
    np.testing.assert_allclose([row.ci_low, row.ci_high], np.tanh(np.arctanh(ref.kappa) + np.array([-half, half])),
                               rtol=1e-6)


def test_healthbench_pass_rates(health):
    got = headline(health)
    items = healthbench_items()
    # Counted from the raw JSON: 67 of 120 items have a physician majority for "met" (ties fail),
    # the grader says "met" for 85.
    assert (items["share"] > 0.5).sum() == 67 and items["judge"].sum() == 85
    np.testing.assert_allclose(got.loc["physician-majority pass rate, all items (target)", "estimate"], 67 / 120)
    np.testing.assert_allclose(got.loc["pass rate: judge_only", "estimate"], 85 / 120)
    # Rogan-Gladen from the script's own sensitivity and specificity rows
    rates = tables(health, "healthbench_corrected_pass_rate").set_index("method")["estimate"]
    se, sp = rates["sensitivity"], rates["specificity"]
    np.testing.assert_allclose(rates["rogan_gladen"], np.clip((85 / 120 + sp - 1) / (se + sp - 1), 0, 1), rtol=1e-12)


def test_missing_data_exits_with_a_message(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "health_rating_agreement.py"), str(tmp_path / "out"),
                           "--data", str(tmp_path)], cwd=REPO, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "lacks kqa, healthbench_meta_subset" in done.stderr


PDSQI9 = DATA / "pdsqi9_rubric" / "pdsqi9_rubric_set.txt"
PRIMOCK = DATA / "primock57" / "consultations.csv"


def test_pdsqi9_example_reports_every_criterion_per_condition(tmp_path):
    # Issue #21: PDSQI-9 (epic-open-source/evaluation-instruments, Apache-2.0) as an hce rubric, two own
    # prompts, 18 primock57 consultations (CC BY 4.0) x 3 conditions x 5 attempts on the simulated judge.
    out = run_example("pdsqi9", tmp_path / "pdsqi9", PDSQI9, PRIMOCK)
    import yaml

    rubric = yaml.safe_load((out / "pdsqi9.yaml").read_text())
    criteria = [c["id"] for c in rubric["categories"]]
    # The instrument's eleven tagged blocks, each a criterion; "synthesized" keeps grades 1-5 (NA is no score).
    assert criteria == ["citation", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct",
                        "abstraction", "synthesized", "voice_summ", "voice_note"]
    assert rubric["total_meaningful"] is False
    sections = [line[3:] for line in (out / "report" / "report.md").read_text().splitlines() if line.startswith("## ")]
    shown = [f"Criterion: {c['name']}" + ("" if c["name"].lower() == c["id"] else f" ({c['id']})") for c in rubric["categories"]]
    assert [s for s in sections if s.startswith("Criterion: ")] == shown
    assert "Criterion: Total" not in sections
    produced = {p.stem for p in (out / "report" / "tables").glob("*.csv")}
    for category in rubric["categories"]:
        c = category["id"]
        if len(category["levels"]) == 2:  # a yes/no block (abstraction) is analysed as binary (issue 33)
            assert {f"{c}_binary", f"{c}_condition_test", f"{c}_agreement"} <= produced  # the binomial GLMM
            assert not {f"{c}_spread", f"{c}_reliability"} & produced
        else:
            assert {f"{c}_spread", f"{c}_sd_test", f"{c}_variance_components", f"{c}_reliability"} <= produced
    # Independent check: Friedman over the three condition_ids (two share the few-shot prompt) with scipy.
    log = pd.read_json(out / "pdsqi.jsonl", lines=True)
    assert log["condition_id"].nunique() == 3 and log["prompt_id"].nunique() == 2
    valid = log[~log["error_flag"].astype(bool)]
    sd = valid.groupby(["item_id", "condition_id"])["accurate"].std(ddof=1).round(12).unstack().dropna()
    expected = stats.friedmanchisquare(*(sd[c].to_numpy() for c in sd.columns))
    got = tables(out / "report", "accurate_sd_test").iloc[0]
    assert got["k"] == 3 and got["n"] == len(sd)
    np.testing.assert_allclose(got["statistic"], expected.statistic, rtol=1e-12)


def test_pdsqi9_example_without_data_says_it_skipped(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "pdsqi9.py"), str(tmp_path / "out"), "--data", str(tmp_path)],
                          cwd=REPO, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "skipped:" in done.stderr and "pdsqi9_rubric" in done.stderr
    assert not (tmp_path / "out").exists()
