"""Every public hce.stats function on dirty frames: a finite answer or an HceError, nothing else.

Issue 18, "Done when": a hypothesis test feeds frames with NaN, inf, numbers stored as text,
words in numeric columns and missing columns to every function in ``hce.stats.__all__``,
and requires either a finite result or an :class:`~hce.errors.HceError`: no other exception
type, and no NaN in the result unless an :class:`~hce.errors.HceWarning` says why. The
registry below says how to call each function on a clean frame and which columns it reads;
functions that take no frame are listed in ``EXEMPT`` with the reason. A second test runs
every function that reads an attempt log on a log with flagged attempts and requires the
same answer as on the log without them (issue 18, item 4).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hce.stats as hs
import hce.study as hst
from hce.errors import HceError, HceWarning

CRITERIA = ["clarity_of_language", "lexical_diversity", "conciseness_and_completeness",
            "engagement_with_health_information", "health_literacy_indicator"]  # fmt: skip


def attempt_log(rng: np.random.Generator, n_items: int = 8, n_attempts: int = 3) -> pd.DataFrame:
    """A judge log: items x two conditions x attempts, with every column a statistic reads."""
    n = n_items * 2 * n_attempts
    item = np.repeat(np.arange(n_items), 2 * n_attempts)
    condition = np.tile(np.repeat(["a", "b"], n_attempts), n_items)
    log = pd.DataFrame({
        "item_id": item,
        "condition_id": condition,
        "prompt_id": np.where(condition == "a", "P1.1", "P1.2"),
        "model": np.where(condition == "a", "m1", "m2"),
        "attempt": np.tile(np.arange(1, n_attempts + 1), 2 * n_items),
        # items differ (so mixed models are not singular) and attempts vary within an item
        "total": np.clip(np.rint(rng.uniform(7, 18, n_items)[item] + (condition == "b") + rng.normal(0, 2, n)), 5, 20),
        "target_total": np.repeat(rng.integers(5, 21, n_items), 2 * n_attempts).astype(float),
        "score": rng.integers(1, 6, n),
        "verdict": rng.random(n) < 0.6,
        "golden": np.zeros(n, dtype=bool),  # set below: the verdict, wrong 15% of the time
        "uncertain": rng.random(n) < 0.2,
        "prob": rng.uniform(0.05, 0.95, n),
        "outcome": rng.random(n) < 0.5,
        "judge_score": rng.normal(3, 1, n),
        "human_score": np.where(np.arange(n) % 2 == 0, rng.normal(3, 1, n), np.nan),  # half unlabelled
        "stratum": np.repeat(np.where(np.arange(n_items) % 2 == 0, "s1", "s2"), 2 * n_attempts),
        "confidence_level": rng.choice(["high", "medium", "low"], n),
        "error_flag": False,
    })  # fmt: skip
    log["golden"] = log["verdict"] ^ (rng.random(n) < 0.15)
    for c in CRITERIA:
        log[c] = rng.integers(1, 5, n).astype(float)
    return log


def one_condition(rng):
    return attempt_log(rng).query("condition_id == 'a'").reset_index(drop=True)


def rater_table(rng, n_targets=10):
    """Long ratings: targets x three raters on a 1-5 scale, correlated through the target."""
    quality = rng.normal(3, 1, n_targets)
    rows = [(t, f"r{r}", int(np.clip(np.rint(quality[t] + rng.normal(0, 0.7)), 1, 5)))
            for t in range(n_targets) for r in range(4)]  # fmt: skip
    out = pd.DataFrame(rows, columns=["item", "rater", "rating"])
    out["group"] = np.where(out["rater"].isin(["r0", "r1"]), "expert", "llm")
    return out


def item_matrix(rng, n=120, k=6):
    """Respondents x items on 1-5, one common factor."""
    theta = rng.normal(size=n)
    cut = lambda z: np.digitize(z, [-1, -0.3, 0.3, 1]) + 1  # noqa: E731
    out = pd.DataFrame({f"i{j}": cut(theta + rng.normal(0, 0.8, n)) for j in range(k)})
    out["group"] = np.where(rng.random(n) < 0.5, "a", "b")
    return out


def spread_table(rng):
    return hs.item_spread(attempt_log(rng), score=[*CRITERIA, "total"])


def instrument_table(rng):
    rows = []
    for t in range(30):
        quality = rng.normal()
        for r in range(3):
            for a in ["accurate", "thorough", "useful", "organized"]:
                rows.append((t, f"r{r}", a, float(np.clip(np.rint(3 + quality + rng.normal(0, 0.7)), 1, 5)),
                             "junior" if r == 0 else "senior"))  # fmt: skip
    return pd.DataFrame(rows, columns=["text", "rater", "attribute", "score", "level"])


def edits(rng, n=12):
    return pd.DataFrame({"pair_id": range(n), "em": rng.integers(0, 5, n), "ea": rng.integers(0, 3, n),
                         "ed": rng.integers(0, 3, n)})  # fmt: skip


def annotated(rng, n=8):
    return pd.DataFrame({"message_id": np.repeat(range(n), 2), "reference_annotator": ["A", "B"] * n,
                         "draft_annotator": ["B", "A"] * n, "em": rng.integers(0, 5, 2 * n),
                         "ea": rng.integers(0, 3, 2 * n), "ed": rng.integers(0, 3, 2 * n)})  # fmt: skip


def themes(rng, n=8):
    rows = [(p, side, t) for p in range(n) for side in ("reference", "draft")
            for t in ("Emp", "SymQ", "Plan") if rng.random() < 0.6]  # fmt: skip
    return pd.DataFrame(rows, columns=["pair_id", "side", "theme"])


def theme_marks(rng, n=8):
    rows = [(m, a, t) for m in range(n) for a in ("A", "B", "C") for t in ("Emp", "Plan")
            if t == "Emp" or rng.random() < 0.6]  # fmt: skip
    return pd.DataFrame(rows, columns=["message_id", "annotator", "theme"])


def relevance(rng, n=10):
    rows = [(q, e, r, int(rng.random() < 0.6)) for q in range(n) for e in ("bmi", "age")
            for r in ("e1", "e2", "e3", "auto")]  # fmt: skip
    return pd.DataFrame(rows, columns=["query_id", "element", "rater", "relevant"])


def versions(rng, n=10):
    rows = [(p, c, v, int(rng.random() < 0.6)) for p in range(n) for c in ("a", "b")
            for v in ("unaltered", "altered")]  # fmt: skip
    return pd.DataFrame(rows, columns=["participant_id", "criterion", "prompt_version", "score"])


def codes(rng, n=40):
    dims = ["evidence_type", "rubric_alignment", "specificity", "reasoning_depth", "strengths_weaknesses"]
    out = pd.DataFrame({d: rng.choice(["x", "y", "z"], n) for d in dims})
    out["model"] = np.repeat(["m1", "m2"], n // 2)
    out["code"] = out["evidence_type"]
    return out


def nested_codes(rng, n=40):
    """Codes of 10 replies (4 segments each), each transcript answered by both models."""
    out = codes(rng, n)
    out["reply"] = np.arange(n) // 4
    out["item"] = out["reply"] % 5
    return out


def texts(rng, n=4):
    draft = "Hi Sarah, thank you for reaching out. Please book a visit. Any fever?"
    return pd.DataFrame({"pair_id": np.repeat(range(n), 2), "draft": draft,
                         "match": ["Any fever?", "NO MATCH"] * n, "reference": "Any fever? Book a visit."})


def messages(rng, n=4):
    return pd.DataFrame({"message_id": np.repeat(range(n), 2), "annotator": ["A", "B"] * n,
                         "response": ["Book a visit. Any fever?", "Any fever? Rest."] * n})


def logprob_log(rng, n=6):
    def entry(p):
        return [{"token": "3", "logprob": float(np.log(p)),
                 "top_logprobs": [{"token": "3", "logprob": float(np.log(p))},
                                  {"token": "4", "logprob": float(np.log(1 - p))}]}]  # fmt: skip
    return pd.DataFrame({"item_id": range(n), "attempt": 1, "logprobs": [entry(p) for p in rng.uniform(0.5, 0.95, n)]})


def binary_log(rng):
    log = attempt_log(rng)
    log["passed"] = (log["total"] > 12).astype(int)
    return log


def verdict_pairs(rng):
    """Two raters' 0/1 verdicts of the same queries (McNemar's paired verdicts)."""
    out = relevance(rng, n=20)
    return out[(out["element"] == "bmi") & out["rater"].isin(["e1", "auto"])].reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class Case:
    """How to call one statistic: a clean frame, the call, and the columns it reads."""

    build: Callable[[np.random.Generator], pd.DataFrame]
    call: Callable[[pd.DataFrame], object]
    columns: tuple[str, ...]
    log: bool = True  # reads an attempt log, so flagged attempts must be left out
    #: One output row per input row, a missing input giving a missing output in its row by
    #: contract (documented in the function), so a NaN there needs no warning.
    rowwise: bool = False


def probe_log(rng: np.random.Generator) -> pd.DataFrame:
    """A log whose condition b is condition a's pad_neutral twin (hce.collect.design.probes' columns)."""
    log = attempt_log(rng)
    twin = log["condition_id"] == "b"
    return log.assign(probe_id=np.where(twin, "pad", None), base_condition_id=np.where(twin, "a", None))


LOG_SCORE = ("item_id", "condition_id", "total")
LONG = ("item", "rater", "rating")
BY_LONG = dict(zip(("item", "rater", "score"), LONG))
PAIRED = ("judge_score", "human_score")
CASES: dict[str, Case] = {
    "alt_test": Case(rater_table, lambda d: hs.alt_test(d, item="item", rater="rater", score="rating", judge="r3",
                                                        scoring="neg_rmse", min_items_per_human=5), LONG, log=False),
    "bland_altman": Case(attempt_log, lambda d: hs.bland_altman(d, item=None, a="judge_score", b="human_score"), PAIRED),
    "calibrate_to_humans": Case(attempt_log, lambda d: hs.calibrate_to_humans(d, random_state=0), PAIRED, rowwise=True),
    "concordance": Case(attempt_log, lambda d: hs.concordance(d, item=None, a="judge_score", b="human_score"), PAIRED),
    "mcnemar": Case(verdict_pairs, lambda d: hs.mcnemar(d, item="query_id", rater="rater", score="relevant"),
                    ("query_id", "rater", "relevant"), log=False),
    "ppi_budget": Case(attempt_log, lambda d: hs.ppi_budget(d, cost_label=1.0, cost_judge=0.1, effective_n=50), PAIRED),
    "ppi_compare": Case(attempt_log, lambda d: hs.ppi_compare(d), ("condition_id", *PAIRED)),
    "adaptive_filter_agreement": Case(relevance, lambda d: hs.adaptive_filter_agreement(d, n_boot=0),
                                      ("query_id", "element", "rater", "relevant")),
    "agrees_with_mode": Case(attempt_log, lambda d: hs.agrees_with_mode(d), ("item_id", "total"), rowwise=True),
    "agrees_with_repeat": Case(attempt_log, lambda d: hs.agrees_with_repeat(d, random_state=0), ("item_id", "condition_id", "total"), rowwise=True),
    "annotator_pairs": Case(messages, lambda d: hs.annotator_pairs(d), ("message_id", "annotator", "response")),
    "bartlett_sphericity": Case(item_matrix, lambda d: hs.bartlett_sphericity(d, columns=[f"i{j}" for j in range(6)]),
                                ("i0", "i1"), log=False),
    "binarize_likert": Case(attempt_log, lambda d: hs.binarize_likert(d), ("score",), log=False, rowwise=True),
    "brier_score": Case(attempt_log, lambda d: hs.brier_score(d, random_state=0), ("prob", "outcome")),
    "calibration_metrics": Case(attempt_log, lambda d: hs.calibration_metrics(d, n_boot=0), ("prob", "outcome")),
    "cfa": Case(item_matrix, lambda d: hs.cfa(d, model={"F": [f"i{j}" for j in range(6)]}), ("i0", "i3"), log=False),
    "code_frequencies": Case(codes, lambda d: hs.code_frequencies(d), ("model", "code")),
    "cohen_kappa": Case(attempt_log, lambda d: hs.cohen_kappa(d, rater=["verdict", "golden"]), ("verdict", "golden")),
    "cohens_d": Case(attempt_log, lambda d: hs.cohens_d(d, score="total"), ("condition_id", "total")),
    "confidence_spread": Case(attempt_log, lambda d: hs.confidence_spread(d), ("item_id", "total", "prob")),
    "confidence_table": Case(attempt_log, lambda d: hs.confidence_table(d, source="votes"), ("item_id", "total"), rowwise=True),
    "contingency_test": Case(codes, lambda d: hs.contingency_test(d, method="chi2"), ("model", "code")),
    "cluster_permutation_test": Case(nested_codes, lambda d: hs.cluster_permutation_test(
        d, codes="code", cluster=["reply"], strata="item", n_sim=200, random_state=0), ("model", "code", "reply"), log=False),
    "correlation": Case(attempt_log, lambda d: hs.correlation(d, x="judge_score", y="total"), ("judge_score", "total")),
    "correlation_matrix": Case(item_matrix, lambda d: hs.correlation_matrix(d, columns=[f"i{j}" for j in range(6)]),
                               ("i0", "i1"), log=False),
    "cronbach_alpha": Case(rater_table, lambda d: hs.cronbach_alpha(d, **BY_LONG), LONG),
    "dif_ordinal": Case(lambda r: item_matrix(r, n=120), lambda d: hs.dif_ordinal(d, columns=[f"i{j}" for j in range(4)], condition="group"),
                        ("i0", "group"), log=False),
    "discrepancy": Case(versions, lambda d: hs.discrepancy(d), ("participant_id", "criterion", "prompt_version", "score")),
    "discriminant_validity": Case(attempt_log, lambda d: hs.discriminant_validity(d, condition="condition_id", score="total", high="a", low="b"),
                                  ("condition_id", "total")),
    "edit_counts_table": Case(texts, lambda d: hs.edit_counts_table(d), ("pair_id", "draft", "match")),
    "edit_f1": Case(edits, lambda d: hs.edit_f1(d, n_boot=0), ("em", "ea", "ed")),
    "efa": Case(item_matrix, lambda d: hs.efa(d, n_factors=1, columns=[f"i{j}" for j in range(6)]), ("i0", "i2"), log=False),
    "eigenvalues": Case(item_matrix, lambda d: hs.eigenvalues(d, columns=[f"i{j}" for j in range(6)]), ("i0", "i1"), log=False),
    "expected_calibration_error": Case(attempt_log, lambda d: hs.expected_calibration_error(d, random_state=0), ("prob", "outcome")),
    "experiment1": Case(attempt_log, lambda d: hst.experiment1(d, experiment=None, random_state=0), ("item_id", "prompt_id", "total", "target_total")),
    "experiment2": Case(attempt_log, lambda d: hst.experiment2(d, experiment=None, random_state=0), ("item_id", "prompt_id", "total")),
    "experiment3": Case(attempt_log, lambda d: hst.experiment3(d, experiment=None, latency=None, cost=None, random_state=0), ("item_id", "model", "total")),
    "experiment4": Case(codes, lambda d: hst.experiment4(d, method="chi2", random_state=0), ("model", "evidence_type"), log=False),
    "experiment5": Case(one_condition, lambda d: hst.experiment5(d, experiment=None, confidence_column=None, random_state=0),
                        ("item_id", "total", CRITERIA[0])),
    "fairness": Case(attempt_log, lambda d: hs.fairness(d, strata="stratum", condition="condition_id", n_boot=50, random_state=0),
                     ("item_id", "stratum", "total")),
    "fleiss_kappa": Case(rater_table, lambda d: hs.fleiss_kappa(d, **BY_LONG), LONG),
    "friedman": Case(spread_table, lambda d: hs.friedman(d.query("criterion == 'total'"), n_boot=200, random_state=0), ("item_id", "condition_id", "sd"), log=False),
    "glmer": Case(attempt_log, lambda d: hs.glmer("verdict ~ condition_id + (1 | item_id)", d), ("verdict", "condition_id", "item_id")),
    "golden_agreement": Case(attempt_log, lambda d: hs.golden_agreement(d, n_boot=0), ("verdict", "golden")),
    "gwet_ac": Case(rater_table, lambda d: hs.gwet_ac(d, **BY_LONG), LONG),
    "icc": Case(rater_table, lambda d: hs.icc(d, **BY_LONG), LONG),
    "icc_groups": Case(rater_table, lambda d: hs.icc_groups(d, **BY_LONG, condition="group"), (*LONG, "group")),
    "instrument_report": Case(instrument_table, lambda d: hs.instrument_report(d, item="text", rater="rater", attribute="attribute",
                                                                             score="score", n_factors=1, n_boot=0),
                              ("text", "rater", "attribute", "score")),
    "inter_annotator_predictability": Case(annotated, lambda d: hs.inter_annotator_predictability(d, n_boot=0), ("message_id", "em", "ea")),
    "item_spread": Case(attempt_log, lambda d: hs.item_spread(d), LOG_SCORE),
    "stopped_item_means": Case(attempt_log, lambda d: hs.stopped_item_means(d), LOG_SCORE),
    "item_statistics": Case(item_matrix, lambda d: hs.item_statistics(d, columns=[f"i{j}" for j in range(6)]), ("i0", "i1"), log=False),
    "kl_difference": Case(attempt_log, lambda d: hs.kl_difference(d, a="a", b="b", support=range(5, 21), n_boot=50, random_state=0),
                          ("item_id", "condition_id", "total", "target_total")),
    "kl_divergence": Case(attempt_log, lambda d: hs.kl_divergence(d, reference="a", support=range(5, 21)), ("condition_id", "total")),
    "kmo": Case(item_matrix, lambda d: hs.kmo(d, columns=[f"i{j}" for j in range(6)]), ("i0", "i1"), log=False),
    "krippendorff_alpha": Case(rater_table, lambda d: hs.krippendorff_alpha(d, **BY_LONG, n_boot=0), LONG),
    "kruskal_wallis": Case(attempt_log, lambda d: hs.kruskal_wallis(d, n_boot=200, random_state=0), ("condition_id", "total")),
    "lmer": Case(attempt_log, lambda d: hs.lmer("total ~ condition_id + (1 | item_id)", d), LOG_SCORE),
    "length_bias": Case(attempt_log, lambda d: hs.length_bias(d, length="target_total", score="total"),
                        ("item_id", "total", "target_total")),
    "drift": Case(attempt_log, lambda d: hs.drift(d, period="condition_id", score="total"), LOG_SCORE),
    "probe_effect": Case(probe_log, lambda d: hs.probe_effect(d, probe="pad", score="total"), LOG_SCORE),
    "mde": Case(attempt_log, lambda d: hs.mde(d, n_items=[8, 16], n_attempts=3), LOG_SCORE),
    "planning_components": Case(attempt_log, lambda d: hs.planning_components(d), LOG_SCORE),
    "power_difference": Case(attempt_log, lambda d: hs.power_difference(d, delta=3.0, n_items=[8, 16], n_attempts=3),
                             LOG_SCORE),
    "clmm": Case(attempt_log, lambda d: hs.clmm("score ~ condition_id + (1 | item_id)", d), ("score", "condition_id", "item_id")),
    "logprob_confidence": Case(logprob_log, lambda d: hs.logprob_confidence(d, scores=range(1, 5)), ("logprobs",), rowwise=True),
    "mae_vs_target": Case(attempt_log, lambda d: hs.mae_vs_target(d), (*LOG_SCORE, "target_total")),
    "majority_vote": Case(attempt_log, lambda d: hs.majority_vote(d), ("item_id", "verdict")),
    "mann_whitney": Case(attempt_log, lambda d: hs.mann_whitney(d, score="total"), ("condition_id", "total")),
    "mcdonald_omega": Case(rater_table, lambda d: hs.mcdonald_omega(d, **BY_LONG, n_boot=0), LONG),
    "mean_score_ensemble": Case(attempt_log, lambda d: hs.mean_score_ensemble(d), ("item_id", "score")),
    "normalize_likert": Case(attempt_log, lambda d: hs.normalize_likert(d), ("score",), log=False, rowwise=True),
    "omega_hierarchical": Case(item_matrix, lambda d: hs.omega_hierarchical(d, columns=[f"i{j}" for j in range(6)], n_factors=2),
                               ("i0", "i1"), log=False),
    "ordinal_alpha": Case(item_matrix, lambda d: hs.ordinal_alpha(d, columns=[f"i{j}" for j in range(6)]), ("i0", "i1"), log=False),
    "parallel_analysis": Case(item_matrix, lambda d: hs.parallel_analysis(d, columns=[f"i{j}" for j in range(6)], n_sim=5, random_state=0),
                              ("i0", "i1"), log=False),
    "pass_rates": Case(attempt_log, lambda d: hs.pass_rates(d), ("verdict",)),
    "percent_agreement": Case(rater_table, lambda d: hs.percent_agreement(d, **BY_LONG), LONG),
    "polychoric": Case(item_matrix, lambda d: hs.polychoric(d, columns=[f"i{j}" for j in range(4)]), ("i0", "i1"), log=False),
    "posthoc": Case(spread_table, lambda d: hs.posthoc(d.query("criterion == 'total'")), ("item_id", "condition_id", "sd"), log=False),
    "ppi_mean": Case(attempt_log, lambda d: hs.ppi_mean(d), ("judge_score", "human_score")),
    "rater_expertise": Case(lambda r: instrument_table(r).query("attribute == 'useful' and rater != 'r2'").reset_index(drop=True),
                            lambda d: hs.rater_expertise(d, item="text", condition="level", score="score"),
                            ("text", "level", "score")),
    "reliability_table": Case(attempt_log, lambda d: hs.reliability_table(d), ("prob", "outcome")),
    "rm_anova": Case(spread_table, lambda d: hs.rm_anova(d.query("criterion == 'total'")), ("item_id", "condition_id", "sd"), log=False),
    "rogan_gladen": Case(attempt_log, lambda d: hs.rogan_gladen(d), ("verdict", "golden")),
    "sentence_table": Case(lambda r: texts(r).drop_duplicates("pair_id").reset_index(drop=True),
                           lambda d: hs.sentence_table(d, matcher=lambda s, r: r if "fever" in s else None),
                           ("pair_id", "reference", "draft")),
    "share_below": Case(spread_table, lambda d: hs.share_below(d, threshold=3.0), ("item_id", "sd"), log=False),
    "spread_model": Case(attempt_log, lambda d: hs.spread_model("sd ~ condition_id + (1 | item_id)", d), LOG_SCORE),
    "spread_summary": Case(spread_table, lambda d: hs.spread_summary(d), ("item_id", "sd"), log=False),
    "strict_agreement": Case(lambda r: rater_table(r).assign(rating=lambda d: d["rating"] > 3),
                             lambda d: hs.strict_agreement(d, **BY_LONG), LONG),
    "substantive_validity": Case(attempt_log, lambda d: hs.substantive_validity(d, predictor="judge_score", score="total"),
                                 ("judge_score", "total")),
    "success_metric_2": Case(spread_table, lambda d: hs.success_metric_2(d, categories=CRITERIA), ("item_id", "sd", "criterion"), log=False),
    "theme_f1": Case(themes, lambda d: hs.theme_f1(d, n_boot=0), ("pair_id", "side", "theme")),
    "theme_inclusion_agreement": Case(theme_marks, lambda d: hs.theme_inclusion_agreement(d), ("message_id", "annotator", "theme")),
    "uncertain_routing": Case(attempt_log, lambda d: hs.uncertain_routing(d), ("uncertain", "verdict")),
    "request_variance": Case(lambda r: attempt_log(r).assign(request_id=lambda d: d["item_id"].astype(str) + d["condition_id"]),
                             lambda d: hs.request_variance(d), ("item_id", "request_id", "total")),
    "variance_components": Case(attempt_log, lambda d: hs.variance_components(d, score="total", facets=["item_id", "condition_id"], random_state=0), LOG_SCORE),
    "verbal_confidence": Case(attempt_log, lambda d: hs.verbal_confidence(d), ("confidence_level",), rowwise=True),
    "vote_confidence": Case(attempt_log, lambda d: hs.vote_confidence(d), ("item_id", "total")),
    "vote_stability": Case(attempt_log, lambda d: hs.vote_stability(d), ("item_id", "condition_id", "verdict")),
    "wilcoxon_paired": Case(spread_table, lambda d: hs.wilcoxon_paired(d.query("criterion == 'total'"), score="sd"),
                            ("item_id", "condition_id", "sd"), log=False),
}  # fmt: skip

#: Bayesian models: only their door is tested fast (dirty input is refused before sampling).
BAYES: dict[str, Case] = {
    "bayes_binary": Case(binary_log, lambda d: hs.bayes_binary("passed ~ condition_id + (1 | item_id)", d, draws=0),
                         ("passed", "condition_id", "item_id")),
    "bayes_ordinal": Case(attempt_log, lambda d: hs.bayes_ordinal("score ~ condition_id + (1 | item_id)", d, draws=0),
                          ("score", "condition_id", "item_id")),
}  # fmt: skip

EXEMPT = {
    "AnalysisResult": "result class", "BayesResult": "result class", "GlmerResult": "result class",
    "LmerResult": "result class",
    "MCMCDiagnosticsWarning": "warning class", "VarianceComponents": "result class",
    "ClmmResult": "result class",
    "attempts_needed": "power calculation from numbers, no frame",
    "bonett_icc_items": "sample-size formula from numbers, no frame",
    "reliability_items": "simulation-based sample size from numbers, no frame",
    "sd_difference_power": "simulation-based power from numbers, no frame",
    "sd_difference_power_analytic": "power formula from numbers, no frame",
    "p_adjust": "takes an array of p-values, no frame (NaN p-values are its own contract)",
    "parse_formula": "formula string only, no frame",
    "simulated_log": "makes a log from numbers, no frame",
    "build_design": "formula layer under lmer/bayes_*, reached through them",
    "split_sentences": "one string in, sentences out",
    "count_sentences": "a list of strings in",
    "edit_counts": "two strings and a matcher in",
    "edit_counts_from_matches": "strings in",
    "control_limits": "a control chart's limit from numbers, no frame",
    "model_family": "one model name in, its family out",
}  # fmt: skip


def test_registry_covers_every_public_function():
    listed = set(CASES) | set(BAYES) | set(EXEMPT)
    # The study's per-experiment analyses (hce.study, built on hce.stats) are held to the same standard.
    public = set(hs.__all__) | {f"experiment{k}" for k in range(1, 6)}
    assert public == listed, (public - listed, listed - public)


# ------------------------------------------------------------------------------- result checks
def numbers_in(result: object, path: str = "", depth: int = 0) -> dict[str, np.ndarray]:
    """Every numeric array inside a result by path: frame columns, arrays, dataclass fields."""
    if depth > 3 or result is None or isinstance(result, (str, bytes, type)) or callable(result):
        return {}
    if isinstance(result, pd.DataFrame):
        frame = result.select_dtypes(include=["number", "boolean"])
        return {f"{path}.{c}": frame[c].to_numpy(dtype=float, na_value=np.nan) for c in frame.columns}
    if isinstance(result, pd.Series):
        return numbers_in(result.to_frame(), path, depth)
    if isinstance(result, np.ndarray):
        return {path: result.astype(float).ravel()} if result.dtype.kind in "biuf" else {}
    if isinstance(result, (bool, int, float, np.number)):
        return {path: np.array([float(result)])}
    if isinstance(result, Mapping):
        items = result.items()
    elif isinstance(result, (list, tuple)):
        items = enumerate(result)
    elif hasattr(result, "__dict__"):
        items = ((k, v) for k, v in vars(result).items() if not k.startswith("_"))
    else:
        return {}
    return {p: a for k, v in items for p, a in numbers_in(v, f"{path}/{k}", depth + 1).items()}


def nan_places(result: object) -> set[str]:
    return {path for path, a in numbers_in(result).items() if np.isnan(a).any()}


def outcome(case_call: Callable[[], object]) -> tuple[str, object, list[warnings.WarningMessage]]:
    """Run a call: ("error", exc) for an HceError, ("result", value) otherwise, and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = case_call()
        except HceError as exc:
            return "error", exc, caught
    return "result", value, caught


def check_sound(name: str, call: Callable[[], object], clean_nan: frozenset[str] = frozenset()) -> None:
    """An HceError, or a result without inf and whose new NaNs an HceWarning explains.

    NaN where the clean frame's answer has NaN too is by design (no bootstrap asked for, a
    p-value a test does not give); NaN in a new place needs a warning saying why. A raw
    numpy RuntimeWarning is never the explanation.
    """
    kind, value, caught = outcome(call)
    raw = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not raw, f"{name}: raw numpy warning {raw[0].message}"
    if kind == "error":
        return
    arrays = numbers_in(value)
    infinite = [p for p, a in arrays.items() if np.isinf(a).any()]
    assert not infinite, f"{name}: infinite value in the result at {infinite}"
    new_nan = nan_places(value) - set(clean_nan)
    flagged_rows = isinstance(value, pd.DataFrame) and value.get("error_flag", pd.Series(False)).any()
    if new_nan and not flagged_rows:  # a row the result itself flags as failed explains its NaN
        reasons = [str(w.message) for w in caught if issubclass(w.category, HceWarning)]
        assert reasons, f"{name}: NaN at {sorted(new_nan)} without an HceWarning saying why"


# ------------------------------------------------------------------------------- dirtying frames
Corruption = tuple[str, str, tuple[int, ...]]


def dirty(frame: pd.DataFrame, how: str, column: str, rows: tuple[int, ...]) -> pd.DataFrame:
    """``frame`` with ``column`` dirtied at ``rows`` (positions, folded into range)."""
    out = frame.copy()
    if how == "drop":
        return out.drop(columns=column)
    at = out.index[[r % len(out) for r in rows]]
    if how in ("nan", "inf", "-inf"):
        value = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}[how]
        out[column] = out[column].astype(object) if not pd.api.types.is_float_dtype(out[column]) else out[column]
        out.loc[at, column] = value
    elif how == "as_text":  # numbers stored as text next to numbers: 1 and "1"
        out[column] = out[column].astype(object)
        out.loc[at, column] = [str(v) for v in out.loc[at, column]]
    elif how == "word":
        out[column] = out[column].astype(object)
        out.loc[at, column] = "three"
    return out


DIRT = st.sampled_from(["nan", "inf", "-inf", "as_text", "word", "drop"])
ROWS = st.lists(st.integers(0, 10_000), min_size=1, max_size=4).map(tuple)
SEEDS = st.sampled_from([0, 1, 2])  # few clean frames, so their baseline answers are cached

#: Several seconds a call on a loaded 2-core machine: one example each in the fast test.
HEAVY = {"dif_ordinal", "variance_components", "request_variance", "instrument_report", "experiment1", "experiment2",
         "experiment3", "experiment4", "experiment5", "parallel_analysis", "cfa", "omega_hierarchical",
         "spread_model", "fairness", "share_below", "adaptive_filter_agreement"}  # fmt: skip


@functools.lru_cache(maxsize=None)
def clean_nan_places(name: str, seed: int) -> frozenset[str]:
    case = CASES[name]
    kind, baseline, _ = outcome(lambda: case.call(case.build(np.random.default_rng(seed))))
    return frozenset(nan_places(baseline)) if kind == "result" else frozenset()


def run_dirty(name: str, case: Case, seed: int, how: str, column_pick: int, rows: tuple[int, ...]) -> None:
    if case.rowwise and how == "nan":
        return  # NaN in, NaN out in that row: the documented contract
    clean = case.build(np.random.default_rng(seed))
    column = case.columns[column_pick % len(case.columns)]
    frame = dirty(clean, how, column, rows)
    check_sound(f"{name} with {how} in {column!r} rows {rows}", lambda: case.call(frame),
                clean_nan_places(name, seed))


def dirty_examples(name: str, max_examples: int, derandomize: bool) -> None:
    @settings(max_examples=max_examples, deadline=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(seed=SEEDS, how=DIRT, column_pick=st.integers(0, 10), rows=ROWS)
    def examples(seed, how, column_pick, rows):
        run_dirty(name, CASES[name], seed, how, column_pick, rows)

    examples()


@pytest.mark.parametrize("name", sorted(CASES))
def test_dirty_frames_give_a_finite_answer_or_an_hce_error(name):
    # Derandomized, so CI sees the same examples every run; the slow variant explores.
    dirty_examples(name, 1 if name in HEAVY else 3, derandomize=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_dirty_frames_many_examples(name):
    dirty_examples(name, 10 if name in HEAVY else 40, derandomize=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_clean_frames_give_a_sound_answer(name):
    """The registry's clean call works, so the dirty test tests the dirt, not the registry."""
    case = CASES[name]
    frame = case.build(np.random.default_rng(1))
    kind, value, _ = outcome(lambda: case.call(frame))
    assert kind == "result", f"{name}: {value}"
    assert not [p for p, a in numbers_in(value).items() if np.isinf(a).any()]


@pytest.mark.parametrize("name", sorted(BAYES))
@pytest.mark.parametrize("how", ["inf", "-inf", "word", "drop"])
def test_bayesian_models_refuse_dirty_input_before_sampling(name, how):
    case = BAYES[name]
    clean = case.build(np.random.default_rng(0))
    for column in case.columns:
        if how != "drop" and column != case.columns[0]:
            continue  # non-finite and words matter in the response; ids may be text
        with pytest.raises(HceError):
            case.call(dirty(clean, how, column, (0, 5)))


# --------------------------------------------------------------------------- flagged attempts
def comparable(result: object) -> dict[str, np.ndarray]:
    """Numbers of a result rounded to 10 places (the same rows in another order of summation)."""
    return {p: np.round(a, 10) for p, a in numbers_in(result).items()}


def owns_error_keyword(name: str) -> bool:
    """Had ``error=`` before issue 18 and counts flagged attempts in its tables (``n_errors``)."""
    function = getattr(hst if name.startswith("experiment") else hs, name)
    return "error" in inspect.signature(inspect.unwrap(function)).parameters


#: Columns where the flagged attempts are counted; every other number must equal the
#: answer on the log without them.
COUNTS_OF_FLAGGED = {"n_errors", "n_attempts"}
#: Columns a flagged attempt's parser may have filled (issue 18: "January 26, 1982" -> 26).
SCORES = {"total", "score", "rating", "judge_score", "prob", "sd", "em", "relevant"}


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.log))
def test_flagged_attempts_are_left_out_of_every_statistic(name):
    """A log with flagged attempts gives the answer of the same log without them (issue 18, item 4)."""
    case = CASES[name]
    clean = case.build(np.random.default_rng(2))
    if "error_flag" not in clean.columns:
        clean = clean.assign(error_flag=False)
    flagged = clean.index[[1, len(clean) // 2]]
    dirty_log = clean.copy()
    dirty_log.loc[flagged, "error_flag"] = True
    for column in SCORES.intersection(case.columns):
        if pd.api.types.is_numeric_dtype(dirty_log[column]) and not pd.api.types.is_bool_dtype(dirty_log[column]):
            dirty_log.loc[flagged, column] = 99
    kind, got, caught = outcome(lambda: case.call(dirty_log))
    expected_kind, expected, _ = outcome(lambda: case.call(clean.drop(index=flagged)))
    assert kind == expected_kind, f"{name}: {got!r} with flagged rows, {expected!r} without"
    got_arrays = comparable(got) if kind == "result" else {}
    if owns_error_keyword(name):
        counted = [a for p, a in got_arrays.items() if p.rpartition(".")[2] in COUNTS_OF_FLAGGED]
        assert kind == "error" or sum(np.nansum(a) for a in counted) >= 2, f"{name}: flagged rows not counted"
    else:
        said = [str(w.message) for w in caught if issubclass(w.category, HceWarning)]
        assert any("left out 2 attempt(s) flagged in 'error_flag'" in s for s in said), said
    if kind == "error":
        assert str(got) == str(expected)
        return
    expected_arrays = comparable(expected)
    assert got_arrays.keys() == expected_arrays.keys()
    for path, a in got_arrays.items():
        if path.rpartition(".")[2] not in COUNTS_OF_FLAGGED:
            np.testing.assert_array_equal(a, expected_arrays[path], err_msg=f"{name}: {path}")


# --------------------------------------------------------------------------- repeated attempts
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.log))
def test_a_repeated_attempt_id_is_refused_by_every_statistic_that_reads_a_log(name):
    """Issue 22, item 2: ``pd.concat([log, log])`` counted every attempt twice (smaller SDs, more power)."""
    case = CASES[name]
    clean = case.build(np.random.default_rng(0))
    clean = clean.assign(attempt_id=[f"att{i}" for i in range(len(clean))])
    kind, _, _ = outcome(lambda: case.call(clean))
    assert kind == "result", f"{name}: unique attempt ids must not be refused"
    repeated = pd.concat([clean, clean.iloc[[len(clean) // 2]]])
    with pytest.raises(HceError, match=rf": attempt_id 'att{len(clean) // 2}' appears in rows"):
        case.call(repeated)
