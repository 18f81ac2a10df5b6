"""Reanalyse repeated judges
==========================

Reanalyse two published LLM-judge logs with repeated samples per item, without a new call.

* gpt-3.5-turbo-0613 on Topical-Chat (Chiang & Lee 2023): 360 responses x 4 attributes x 7
  prompt variants x 20 samples at temperature 1, with the mean of three annotators per item.
* gpt-4o-2024-08-06 on SummEval consistency (G-Eval fork): 497 summaries x 10 samples at
  temperature 2, each sample a logprob-weighted expected score, with the experts' mean.

For each: the spread of the repeated scores per item, whether the prompt variant changes
that spread (Friedman, Nemenyi post-hoc, G-study variance components), the reliability of
the samples (ICC, Krippendorff's alpha), correlation and agreement of the mean judge score
with the human ratings, and the calibration of the sampled score distribution.

Run from the repository root (the data live in ../shared/data, see its README)::

    python docs/examples/reanalyse_repeated_judges.py [OUT]

OUT defaults to reports/examples/reanalyse_repeated_judges/.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import run, table

import hce.stats as hs
from hce.report.document import Figure, Report
from hce.report.figures import sd_by_condition

TOPICAL = "topicalchat_gpt35_repeated"
SUMMEVAL = "summeval_gpt4o_repeated"
# Scale of each Topical-Chat attribute (UniEval's annotation); other replies are unparseable.
SCALES = {"naturalness": (1, 3), "coherence": (1, 3), "engagingness": (1, 3), "groundedness": (0, 1)}
SEED = 20231207


def load_topical(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Judge scores (out-of-scale replies set to NaN), human scores, and what was set aside."""
    scores = pd.read_csv(root / TOPICAL / "judge_scores_long.csv")
    items = pd.read_csv(root / TOPICAL / "items.csv")
    low = scores["attribute"].map(lambda a: SCALES[a][0])
    high = scores["attribute"].map(lambda a: SCALES[a][1])
    out_of_scale = scores["score"].notna() & ~scores["score"].between(low, high)
    excluded = (
        scores.assign(unparseable=scores["score"].isna(), out_of_scale=out_of_scale)
        .groupby("attribute")[["unparseable", "out_of_scale"]].sum().reset_index()
    )
    scores["score"] = scores["score"].where(~out_of_scale)
    human = items.melt(id_vars="item_id", value_vars=[f"human_{a}" for a in SCALES],
                       var_name="attribute", value_name="human")
    human["attribute"] = human["attribute"].str.removeprefix("human_")
    return scores, human, excluded


def spread_tables(section, spread: pd.DataFrame, keys: list[str], name: str, label: str) -> pd.DataFrame:
    summary = hs.spread_summary(spread, by=keys) if keys else hs.spread_summary(spread)
    zero = hs.share_below(spread, threshold=0.0, by=keys or None)
    section.add(
        table(summary, f"{name}_spread_summary", f"{label}: per-item SD of the repeated scores, across items"),
        table(zero, f"{name}_share_sd0", f"{label}: share of items whose repeated scores never vary (SD = 0), Wilson CI"),
        table(spread, f"{name}_item_spread", f"{label}: spread per item", inline=False),
    )
    return summary


def prompt_effect(section, spread: pd.DataFrame) -> pd.DataFrame:
    """Friedman across the 7 prompt variants of the per-item SD, per attribute, then Nemenyi."""
    tests, pairs = [], []
    for attribute, part in spread.groupby("attribute"):
        tests.append(hs.friedman(part, item="item_id", condition="prompt_variant", score="sd",
                                 random_state=SEED).assign(attribute=attribute))
        pairs.append(hs.posthoc(part, item="item_id", condition="prompt_variant", score="sd",
                                method="nemenyi").assign(attribute=attribute))
    tests, pairs = pd.concat(tests), pd.concat(pairs)
    section.add(
        table(tests[["attribute", "statistic", "df1", "p_value", "effect_size", "effect_ci_low", "effect_ci_high", "n", "n_dropped"]],
              "topical_friedman", "Friedman test of the per-item SD across the 7 prompt variants",
              "effect_size: Kendall's W with a bootstrap CI over items; n: items rated under every variant."),
        table(pairs[["attribute", "a", "b", "mean_rank_a", "mean_rank_b", "median_a", "median_b", "statistic",
                     "p_adjusted", "effect_size", "effect_ci_low", "effect_ci_high"]],
              "topical_posthoc", "Nemenyi post-hoc comparisons of the per-item SD between prompt variants",
              "effect_size: matched-pairs rank-biserial r (positive when a has the larger SDs).", inline=False),
    )
    return tests


def g_study(section, scores: pd.DataFrame) -> pd.DataFrame:
    """Item x prompt variant G study per attribute, on every valid reply.

    Unparseable and out-of-scale replies leave some item x variant cells with fewer than 20
    samples, so the design is unbalanced: the components are REML estimates (lme4's penalised
    least squares), their standard errors come from the observed REML information, their
    intervals are Satterthwaite's (df = 2 (estimate / SE)^2). G and Phi are for the mean of 20
    samples under one variant drawn at random, with intervals from joint draws of the
    components. No item is left out.
    """
    components, coefficients = [], []
    for attribute, part in scores.groupby("attribute"):
        valid = part.dropna(subset=["score"])
        g = hs.variance_components(valid, score="score", facets=["item_id", "prompt_variant"], random_state=SEED)
        # the caption's design: 20 samples under one variant drawn at random (item x variant is error)
        one_variant = g.d_study(n_attempts=20, n_levels={"prompt_variant": 1}, random_state=SEED)
        cells = valid.groupby(["item_id", "prompt_variant"]).size()
        extra = {"attribute": attribute, "n_rows": len(valid), "n_items": valid["item_id"].nunique(),
                 "n_cells_short": int((cells < 20).sum())}
        components.append(g.components.assign(**extra))
        coefficients.append(one_variant.assign(**extra))
    components, coefficients = pd.concat(components), pd.concat(coefficients)
    section.add(
        table(components[["attribute", "component", "estimate", "share", "std_error", "ci_low", "ci_high", "df",
                          "n_rows", "n_items", "n_cells_short"]],
              "topical_variance_components",
              "Variance components (G study: item, prompt variant, item x variant, sample-to-sample residual)",
              f"All valid replies (n_rows); n_cells_short: item x variant cells with fewer than 20 valid samples. "
              f"Method: {'; '.join(components['method'].unique())}."),
        table(coefficients[["attribute", "metric", "estimate", "ci_low", "ci_high", "error_variance",
                            "n_attempts", "n_items"]],
              "topical_g_coefficients",
              "G (relative) and Phi (absolute) coefficients of the mean of 20 samples under one prompt variant",
              f"Intervals: {coefficients['method'].iloc[0]}."),
    )
    return components


def sample_reliability(data: pd.DataFrame, keys: list[str], level: str) -> pd.DataFrame:
    """ICC(1) and ICC(k) with the samples as exchangeable raters, and Krippendorff's alpha."""
    rows = []
    groups = data.groupby(keys) if keys else [((), data)]
    for key, part in groups:
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        icc = hs.icc(part, item="item_id", rater="sample_idx", score="score").set_index("metric").loc[["ICC1", "ICC1k"]]
        alpha = hs.krippendorff_alpha(part, item="item_id", rater="sample_idx", score="score", level=level, random_state=SEED)
        for estimator, row in [*icc.iterrows(), (f"alpha ({level})", alpha.iloc[0])]:
            rows.append({**label, "metric": estimator, "estimate": row["estimate"], "ci_low": row["ci_low"],
                         "ci_high": row["ci_high"], "n_items": row["n_items"], "n_scores": row["n_scores"],
                         "method": row["method"]})
    return pd.DataFrame(rows)


def human_agreement(data: pd.DataFrame, keys: list[str], human: str) -> pd.DataFrame:
    """Pearson and Spearman of the mean judge score with the human score; MAE; ICC(A,1)."""
    rows = []
    groups = data.groupby(keys) if keys else [((), data)]
    for key, part in groups:
        label = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        means = hs.mae_vs_target(part, condition=None, score="score", truth=human, error=None)
        for method, name in (("pearson", "Pearson r"), ("spearman", "Spearman rho")):
            r = hs.correlation(means, x="mean_score", y="target", method=method).iloc[0]
            rows.append({**label, "measure": name, "estimate": r["estimate"], "ci_low": r["ci_low"],
                         "ci_high": r["ci_high"], "p_value": r["p_value"], "n": r["n"]})
        pairs = means.melt(id_vars="item_id", value_vars=["mean_score", "target"], var_name="rater", value_name="score")
        icc = hs.icc(pairs, item="item_id", rater="rater", score="score").set_index("metric").loc["ICC2"]
        rows.append({**label, "measure": "ICC(A,1) judge mean vs human", "estimate": icc["estimate"],
                     "ci_low": icc["ci_low"], "ci_high": icc["ci_high"], "p_value": icc["p_value"], "n": icc["n_items"]})
        rows.append({**label, "measure": "MAE of the judge mean", "estimate": means["mae"].mean(), "ci_low": np.nan,
                     "ci_high": np.nan, "p_value": np.nan, "n": int(means["mae"].notna().sum())})
    return pd.DataFrame(rows)


def topical_calibration(scores: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """Top-label ECE and multi-class Brier score of the 20-sample vote shares, against the
    annotators' mean rounded to the scale (x/3 means never tie at .5)."""
    rows = []
    for attribute, part in scores.groupby("attribute"):
        low, high = SCALES[attribute]
        votes = hs.vote_confidence(part, score="score", by=["prompt_variant"])
        labels = list(range(low, high + 1))
        probs = [f"prob_{v}" for v in labels]
        votes = votes.reindex(columns=[*votes.columns.difference(probs), *probs], fill_value=0.0)
        truth = human[human["attribute"] == attribute][["item_id", "human"]]
        votes = votes.merge(truth, on="item_id")
        votes["human_class"] = np.rint(votes["human"])
        for variant, cell in votes.groupby("prompt_variant"):
            metrics = hs.calibration_metrics(cell, prob=probs, truth="human_class", labels=labels, n_bins=10,
                                             n_boot=500, random_state=SEED)
            rows.append(metrics.assign(attribute=attribute, prompt_variant=variant))
    out = pd.concat(rows)
    return out[out["metric"].isin(["ece", "brier", "log_loss"])]


def topical(report: Report, root: Path) -> list[dict]:
    scores, human, excluded = load_topical(root)
    keys = ["attribute", "prompt_variant"]
    section = report.section("Topical-Chat, gpt-3.5-turbo-0613, 20 samples x 7 prompt variants")
    section.add(
        "360 responses x 4 attributes x 7 prompt variants, 20 samples each at temperature 1 (Chiang & Lee 2023). "
        "Unparseable replies are missing in the published log; replies outside the attribute's scale are set to "
        "missing here.",
        table(excluded, "topical_excluded", "Replies without a usable score, per attribute"),
    )
    spread = hs.item_spread(scores, condition=keys, score="score", error=None)
    summary = spread_tables(section, spread, keys, "topical", "Topical-Chat")
    section.add(Figure(sd_by_condition(spread[spread["attribute"] == "coherence"], condition="prompt_variant",
                                       title="Topical-Chat coherence"),
                       "topical_coherence_sd", "Per-item SD of 20 coherence scores, by prompt variant"))
    friedman = prompt_effect(section, spread)
    components = g_study(section, scores)
    reliability = sample_reliability(scores, keys, "ordinal")
    section.add(table(reliability, "topical_sample_reliability",
                      "Reliability of the 20 samples (samples as exchangeable raters)",
                      "ICC1: one sample; ICC1k: the mean of 20. alpha: ordinal, bootstrap CI over items."))
    with_human = scores.merge(human, on=["item_id", "attribute"])
    agreement = human_agreement(with_human, keys, "human")
    section.add(table(agreement, "topical_human_agreement",
                      "Mean of the 20 samples against the annotators' mean score (n = items)"))
    headline = [
        {"dataset": "topical_chat", "quantity": f"median per-item SD, {a} (geval prompt)", "estimate": v}
        for a, v in summary[summary["prompt_variant"] == "geval"].set_index("attribute")["median"].items()
    ]
    headline += [{"dataset": "topical_chat", "quantity": f"Friedman chi2 of per-item SD across prompts, {r.attribute}",
                  "estimate": r.statistic, "ci_low": np.nan, "ci_high": np.nan, "p_value": r.p_value, "n": r.n}
                 for r in friedman.itertuples()]
    share = components.set_index(["attribute", "component"])["share"]
    headline += [{"dataset": "topical_chat", "quantity": f"share of variance: prompt variant, {a}",
                  "estimate": share[(a, "prompt_variant")]} for a in SCALES]
    headline += [{"dataset": "topical_chat", "quantity": f"share of variance: sample residual, {a}",
                  "estimate": share[(a, "residual")]} for a in SCALES]
    pick = reliability[(reliability["prompt_variant"] == "geval") & (reliability["metric"] == "ICC1")]
    headline += [{"dataset": "topical_chat", "quantity": f"ICC(1) of one sample, {r.attribute} (geval)",
                  "estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n_items}
                 for r in pick.itertuples()]
    pick = agreement[(agreement["prompt_variant"] == "geval") & (agreement["measure"] == "Pearson r")]
    headline += [{"dataset": "topical_chat", "quantity": f"Pearson r, judge mean vs human, {r.attribute} (geval)",
                  "estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value, "n": r.n}
                 for r in pick.itertuples()]
    calibration = topical_calibration(scores, human)
    section.add(table(calibration[["attribute", "prompt_variant", "metric", "estimate", "ci_low", "ci_high", "n"]],
                      "topical_calibration",
                      "Calibration of the 20-sample vote shares against the annotators' rounded mean",
                      "ece: top-label (confidence = share of the modal score; correct = it equals the rounded "
                      "human score), 10 equal-width bins; brier: multi-class; bootstrap CIs over items (B = 500)."))
    pick = calibration[(calibration["prompt_variant"] == "geval") & (calibration["metric"] == "ece")]
    headline += [{"dataset": "topical_chat", "quantity": f"top-label ECE of vote shares, {r.attribute} (geval)",
                  "estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n}
                 for r in pick.itertuples()]
    return headline


def summeval(report: Report, root: Path) -> list[dict]:
    scores = pd.read_csv(root / SUMMEVAL / "judge_scores_long.csv")
    items = pd.read_csv(root / SUMMEVAL / "items.csv")
    data = scores.merge(items[["item_id", "expert_consistency"]], on="item_id")
    section = report.section("SummEval consistency, gpt-4o-2024-08-06, 10 samples")
    section.add("497 summaries, 10 samples each at temperature 2; every sample is already a logprob-weighted "
                "expected score (continuous, 1-5). Human: the mean of three experts.")
    spread = hs.item_spread(data, condition=None, score="score", error=None)
    summary = spread_tables(section, spread, [], "summeval", "SummEval")
    reliability = sample_reliability(data, [], "interval")
    section.add(table(reliability, "summeval_sample_reliability", "Reliability of the 10 samples",
                      "alpha: interval level, bootstrap CI over items."))
    agreement = human_agreement(data, [], "expert_consistency")
    one = human_agreement(data[data["sample_idx"] == 0], [], "expert_consistency")
    agreement = pd.concat([agreement.assign(samples=10), one.assign(samples=1)])
    section.add(table(agreement, "summeval_human_agreement",
                      "Judge score (mean of 10 samples, or the first sample alone) against the experts' mean",
                      "Dataset-level correlations over 497 summaries; G-Eval's paper reports summary-level ones "
                      "(per document, then averaged), which hce.stats.correlation does not compute."))
    headline = [
        {"dataset": "summeval", "quantity": "median per-item SD of 10 samples", "estimate": summary["median"].iloc[0]},
        *[{"dataset": "summeval", "quantity": f"{r.metric} of the samples", "estimate": r.estimate,
           "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n_items} for r in reliability.itertuples()],
        *[{"dataset": "summeval", "quantity": f"{r.measure}, {r.samples} sample(s) vs experts", "estimate": r.estimate,
           "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value, "n": r.n} for r in agreement.itertuples()],
    ]
    # A binary event both sides can speak to: "fully consistent" (experts' mean 5 of 5) against the
    # share of the 10 samples scoring at least 4.5.
    binary = pd.DataFrame({
        "prob": (data["score"] >= 4.5).groupby(data["item_id"]).mean(),
        "outcome": (items.set_index("item_id")["expert_consistency"] == 5).astype(float),
    })
    metrics = hs.calibration_metrics(binary, prob="prob", truth="outcome", n_bins=10, n_boot=1000, random_state=SEED)
    curve = hs.reliability_table(binary, prob="prob", truth="outcome", n_bins=10)
    section.add(
        table(metrics, "summeval_calibration", "Calibration of P(fully consistent) = share of samples >= 4.5",
              "Outcome: the three experts' mean is 5. Bootstrap CIs over summaries (B = 1000)."),
        table(curve, "summeval_reliability_table", "Reliability table of that forecast (Wilson CIs)"),
    )
    m = metrics.set_index("metric")
    headline += [{"dataset": "summeval", "quantity": f"{k} of P(fully consistent)", "estimate": m.loc[k, "estimate"],
                  "ci_low": m.loc[k, "ci_low"], "ci_high": m.loc[k, "ci_high"], "n": m.loc[k, "n"]}
                 for k in ("ece", "brier")]
    return headline


if __name__ == "__main__":
    report = run("reanalyse_repeated_judges", [TOPICAL, SUMMEVAL],
        "Reanalysis of published repeated-sample LLM-judge logs", topical, summeval)
