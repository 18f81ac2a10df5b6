"""Physician agreement as a judge's ceiling
========================================

Physician agreement as the ceiling for an LLM judge, on two published health rating sets.

* K-QA (Manes et al. 2024): 399 (question, LLM answer, claim) rows, each labelled
  entailment / neutral / contradiction by three physicians.
* HealthBench meta-evaluation subset (OpenAI 2025, via Med-Bench-Arena): 120 items, each a
  binary "does the completion meet this rubric criterion" from 2-4 physicians (107 in all),
  and one LLM grader's label for the same item.

Physician-physician agreement (Fleiss' kappa, Krippendorff's nominal alpha, Gwet's AC1,
percent agreement, all with CIs) is the ceiling; the LLM grader's agreement with the
physician majority (Cohen's kappa, accuracy, sensitivity, specificity with CIs) is set
against it; and the grader's pass rate is corrected with physician labels on a random
subset (prediction-powered inference and the Rogan-Gladen estimator).

Run from the repository root (the data live in ../shared/data, see its README)::

    python docs/examples/health_rating_agreement.py [OUT]

OUT defaults to reports/examples/health_rating_agreement/.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import run, table

import hce.stats as hs
from hce.importers import ratings_lists, ratings_wide
from hce.report.document import Figure, Report
from hce.report.figures import bar_with_ci

KQA = "kqa"
HEALTHBENCH = "healthbench_meta_subset"
SEED = 20250512
N_LABELLED = 40  # physician-labelled items assumed for the bias correction (of 120)


def agreement(ratings: pd.DataFrame, **labels: object) -> pd.DataFrame:
    """The four nominal agreement coefficients of a ratings table, one row each."""
    columns = {"item": "item_id", "rater": "rater_id", "score": "score"}
    parts = [
        hs.fleiss_kappa(ratings, **columns),
        hs.krippendorff_alpha(ratings, **columns, level="nominal", random_state=SEED),
        hs.gwet_ac(ratings, **columns),
        hs.percent_agreement(ratings, **columns),
    ]
    columns = ["metric", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_raters", "n_scores"]
    return pd.concat([p.reindex(columns=columns) for p in parts]).assign(**labels)


def kqa(report: Report, root: Path) -> list[dict]:
    raw = pd.read_csv(root / KQA / "NLI_medical_annotator.csv").rename(columns={"Unnamed: 0": "row"})
    imported = ratings_wide(raw, item="row", raters=["label_0", "label_1", "label_2"], criterion_name="nli", source="K-QA")
    ratings = imported.data
    by_category = ratings.merge(raw[["row", "category_x"]].astype({"row": str}), left_on="item_id", right_on="row")
    table_ = pd.concat([
        agreement(ratings, subset="all claims"),
        *[agreement(part, subset=category) for category, part in by_category.groupby("category_x")],
    ])
    section = report.section("K-QA: three physicians per claim (entailment / neutral / contradiction)")
    section.add(
        imported.summary() + ". The three label columns are positions, not named physicians, so only "
        "coefficients that treat raters as exchangeable are reported.",
        table(table_[["subset", *table_.columns.drop("subset")]], "kqa_physician_agreement",
              "Physician-physician agreement on K-QA claims (nominal)",
              "Fleiss, Gwet and percent agreement: linearised variance of Gwet (2008), t interval; "
              "Krippendorff: percentile bootstrap over claims."),
        Figure(bar_with_ci(table_[table_["subset"] == "all claims"], label="metric", ylabel="agreement, all claims"),
               "kqa_physician_agreement", "Physician-physician agreement on all K-QA claims, with 95% intervals"),
    )
    return [{"dataset": "kqa", "quantity": f"{r.metric}, physicians, {r.subset}", "estimate": r.estimate,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n_items} for r in table_.itertuples()
            if r.subset == "all claims"]


def physician_majority(physicians: pd.DataFrame) -> pd.DataFrame:
    """Per item: the physicians' majority, NaN on a tie ("majority") or a fail ("majority_tie_fail")."""
    votes = hs.majority_vote(physicians, item="item_id", score="score", tie="missing")
    strict = hs.majority_vote(physicians, item="item_id", score="score", tie="fail")
    return pd.DataFrame({"item_id": votes["item_id"], "n_physicians": votes["n"],
                         "majority": votes["verdict"].astype("Float64").astype(float),
                         "majority_tie_fail": strict["verdict"].astype(float)})


def healthbench(report: Report, root: Path) -> list[dict]:
    gold = pd.read_json(root / HEALTHBENCH / "healthbench_meta_gold.jsonl", lines=True)
    grader = pd.read_json(root / HEALTHBENCH / "healthbench_meta_strongmodel_labels.jsonl", lines=True)
    imported = ratings_lists(gold, item="item_id", labels="binary_labels", raters="anonymized_physician_ids",
                             criterion_name="criteria_met", source="HealthBench")
    physicians = imported.data
    judge = pd.DataFrame({"item_id": grader["item_id"], "rater_id": "llm_grader", "criterion": "criteria_met",
                          "score": grader["criteria_met"].astype(float)})
    ceiling = pd.concat([
        agreement(physicians, raters="physicians only"),
        agreement(pd.concat([physicians, judge]), raters="physicians + LLM grader as one more rater"),
    ])
    items = physician_majority(physicians).merge(judge[["item_id", "score"]].rename(columns={"score": "judge"}), on="item_id")
    pairs = items.dropna(subset=["majority"]).melt(id_vars="item_id", value_vars=["judge", "majority"],
                                                   var_name="rater_id", value_name="score")
    kappa = hs.cohen_kappa(pairs, item="item_id", rater="rater_id", score="score")
    section = report.section("HealthBench meta-evaluation: physicians and one LLM grader (criterion met?)")
    section.add(
        imported.summary() + f"; {items['n_physicians'].value_counts().sort_index().to_dict()} items by number of "
        f"physicians. Physician majority: {int(items['majority'].isna().sum())} items are ties (1 of 2) and have none.",
        table(ceiling[["raters", *ceiling.columns.drop("raters")]], "healthbench_agreement",
              "Agreement among physicians (the ceiling), and with the LLM grader added as one more rater"),
        table(kappa[["metric", "estimate", "se", "ci_low", "ci_high", "statistic", "p_value", "pa", "pe", "n_items"]],
              "healthbench_judge_kappa", "Cohen's kappa: LLM grader vs the physician majority (ties left out)"),
    )
    headline = [{"dataset": "healthbench", "quantity": f"{r.metric}, {r.raters}", "estimate": r.estimate,
                 "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n_items} for r in ceiling.itertuples()]
    headline.append({"dataset": "healthbench", "quantity": "Cohen's kappa, LLM grader vs physician majority",
                     "estimate": kappa["estimate"].iloc[0], "ci_low": kappa["ci_low"].iloc[0],
                     "ci_high": kappa["ci_high"].iloc[0], "p_value": kappa["p_value"].iloc[0],
                     "n": kappa["n_items"].iloc[0]})
    return headline + corrected_pass_rate(section, items)


def corrected_pass_rate(section, items: pd.DataFrame) -> list[dict]:
    """Golden-set metrics of the grader, and its pass rate corrected with physician labels on
    a random N_LABELLED items (the others keep only the grader's label)."""
    metrics = hs.golden_agreement(items.dropna(subset=["majority"]), score="judge", truth="majority",
                                  random_state=SEED)
    rng = np.random.default_rng(SEED)
    labelled = np.zeros(len(items), dtype=bool)
    labelled[rng.choice(len(items), N_LABELLED, replace=False)] = True
    split = items.assign(golden=items["majority_tie_fail"].where(labelled))
    ppi = pd.concat([hs.ppi_mean(split, score="judge", truth="golden", tuning=t) for t in ("none", "power")])
    ppi = ppi.drop_duplicates("method")
    rogan = hs.rogan_gladen(split, score="judge", truth="golden")
    truth = items["majority_tie_fail"].mean()
    estimates = pd.concat([ppi, rogan]).reset_index(drop=True)
    section.add(
        table(metrics, "healthbench_judge_metrics", "LLM grader vs the physician majority (ties left out)",
              "Wilson CIs for proportions; kappa: Fleiss-Cohen-Everitt SE; F1 and MCC: bootstrap."),
        table(estimates, "healthbench_corrected_pass_rate",
              f"Physician pass rate estimated from the grader on all {len(items)} items and physician labels on "
              f"a random {N_LABELLED}",
              f"Target: the physician-majority pass rate (ties count as not met) on all {len(items)} items, "
              f"{truth:.3f}, known here because every item has physician labels.",
              "ppi / ppi++: prediction-powered inference (Angelopoulos et al. 2023); classical: the "
              f"{N_LABELLED} physician labels alone; judge_only: the grader's raw rate; rogan_gladen: the raw "
              "rate corrected with the sensitivity and specificity seen on the labelled items."),
    )
    m = metrics.set_index("metric")
    rows = [{"dataset": "healthbench", "quantity": f"{k} of the LLM grader vs physician majority",
             "estimate": m.loc[k, "estimate"], "ci_low": m.loc[k, "ci_low"], "ci_high": m.loc[k, "ci_high"],
             "n": m.loc[k, "n"]} for k in ("accuracy", "recall", "specificity")]
    rows.append({"dataset": "healthbench", "quantity": "physician-majority pass rate, all items (target)",
                 "estimate": truth, "n": len(items)})
    # n: the physician-labelled items behind each estimate (the grader's own rate uses all items)
    rows += [{"dataset": "healthbench", "quantity": f"pass rate: {r.method}", "estimate": r.estimate,
              "ci_low": r.ci_low, "ci_high": r.ci_high,
              "n": len(items) if r.method in ("judge_only", "apparent") else N_LABELLED}
             for r in estimates.itertuples() if r.method not in ("sensitivity", "specificity")]
    return rows


if __name__ == "__main__":
    report = run("health_rating_agreement", [KQA, HEALTHBENCH],
        "Physician agreement as the ceiling for an LLM judge (K-QA, HealthBench)", kqa, healthbench)
