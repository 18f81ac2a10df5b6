"""The PRD's analysis plans (seeds/000, section 6) as one call per experiment.

Each helper takes an attempt log (all experiments or one), keeps the rows of its
experiment, runs exactly the plan's steps and returns an :class:`AnalysisResult` of
named tidy tables plus notes on every decision taken (rows excluded, winner and why).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce._checks import require_columns
from hce._docstrings import fill_doc
from hce._pvalues import p_text
from hce._vocabulary import EFFECT_COLUMNS, ESTIMATE_COLUMNS, renamed
from hce.errors import DataError
from hce.stats._resample import as_generator
from hce.stats._validate import reads_frame
from hce.stats.contingency import (
    cluster_permutation_test,
    code_frequencies,
    contingency_test,
)
from hce.stats.effects import cohens_d, correlation, kl_difference, kl_divergence, mae_vs_target
from hce.stats.repeated_measures import Transform, rm_anova
from hce.stats.result import AnalysisResult
from hce.stats.spread import (
    as_list,
    item_spread,
    share_below,
    spread_summary,
    success_metric_2,
)
from hce.stats.subgroup_fairness import fairness
from hce.stats.tests import (
    Adjustment,
    PosthocMethod,
    friedman,
    kruskal_wallis,
    mann_whitney,
    p_adjust,
    posthoc,
    wilcoxon_paired,
)
from hce.study.claims import exp1_claims, with_sm2_verdict, with_sm3_verdict, with_sm6_verdict
from hce.study.rules import SM2_CATEGORY_MAX, SM2_TARGET, SM2_TOTAL_MAX
from hce.study.sensitivity import reachable_note, smallest_reachable_p, sm2_sensitivity, sm2_threshold_note

#: Rubric v5.0 categories as attempt-log columns (seeds/000, section 3).
RUBRIC_V5_CATEGORIES = (
    "clarity_of_language",
    "lexical_diversity",
    "conciseness_and_completeness",
    "engagement_with_health_information",
    "health_literacy_indicator",
)

#: Experiment 4's draft coding dimensions (seeds/000, 7.4.5), as column names.
EXP4_CODES = (
    "evidence_type",
    "rubric_alignment",
    "specificity",
    "reasoning_depth",
    "strengths_weaknesses",
)


def _rows_of(log: pd.DataFrame, experiment: str | None, experiment_id: str | None) -> pd.DataFrame:
    """The experiment's rows when the log names experiments; the whole log otherwise."""
    if not isinstance(log, pd.DataFrame):
        raise DataError(f"log must be a pandas DataFrame, got {type(log).__name__}")
    if experiment is None or experiment_id is None or experiment not in log.columns:
        return log
    rows = log[log[experiment] == experiment_id]
    if rows.empty:
        raise DataError(
            f"no row has {experiment}={experiment_id!r}; present: {sorted(map(str, log[experiment].unique()))}"
        )
    return rows


def conditions_per_level(log: pd.DataFrame, factor: str | None) -> dict[str, list[str]]:
    """The levels of ``factor`` that cover more than one ``condition_id`` of the log, with those conditions.

    The PRD's analyses compare the levels of one factor: Exp 1 and 2 the prompt, Exp 3 the
    model, Exp 5 none (``factor=None``: one configuration). The study's designs make each
    level one condition (:func:`hce.study.designs.exp_design`: one model and temperature for
    every Exp 2 prompt, one prompt for every Exp 3 model), so grouping by the factor equals
    grouping by condition. A log judged otherwise (two conditions sharing a prompt, say two
    models) has levels that would pool different conditions; they are returned here. A log
    without ``condition_id``, or analysed by ``condition_id`` itself, has none.

    Examples
    --------
    >>> log = pd.DataFrame({"prompt_id": ["P2.1", "P2.1", "P2.3"], "condition_id": ["a", "b", "c"]})
    >>> conditions_per_level(log, "prompt_id")
    {'P2.1': ['a', 'b']}
    >>> conditions_per_level(log, None)
    {'(every row)': ['a', 'b', 'c']}
    """
    if factor == "condition_id" or "condition_id" not in log.columns:
        return {}
    groups = [("(every row)", log)] if factor is None else log.groupby(factor, sort=True)
    found = {str(level): sorted(map(str, part["condition_id"].dropna().unique())) for level, part in groups}
    return {level: conditions for level, conditions in found.items() if len(conditions) > 1}


def _refuse_pooling(data: pd.DataFrame, factor: str | None, experiment_id: str | None) -> None:
    pooled = conditions_per_level(data, factor)
    if not pooled:
        return
    level, conditions = next(iter(pooled.items()))
    experiment_id = experiment_id or "the log"
    if factor is None:
        raise DataError(f"{experiment_id}: the rows hold {len(conditions)} conditions ({', '.join(conditions)}); this "
                        "analysis is of one configuration and would pool them. Keep one condition_id's rows.")  # fmt: skip
    raise DataError(f"{experiment_id}: {factor} {level!r} covers {len(conditions)} conditions ({', '.join(conditions)}), "
                    f"which this analysis would pool into one group (the PRD's design has one condition per {factor}). "
                    "Compare the conditions with condition='condition_id', or keep one condition per "
                    f"{factor}.")  # fmt: skip


def _attempt_counts(data, item, condition, error) -> pd.DataFrame:
    """Attempts, errored attempts and items with < 2 valid totals, per condition."""
    g = data.groupby(condition, sort=True)
    out = pd.DataFrame({"n_attempts": g.size()})
    out["n_errors"] = g[error].sum().astype(int) if error else 0
    out["n_items"] = g[item].nunique()
    return out.reset_index()


def _undefined_note(spread: pd.DataFrame, item: str) -> list[str]:
    short = spread[spread["n"] < 2]
    if short.empty:
        return []
    items = sorted(map(str, short[item].unique()))[:10]
    return [f"{len(short)} item x condition cell(s) have < 2 valid scores (SD = NaN), items {items}; "
            + "they drop out of paired tests"]


def _with_errors(counts: pd.DataFrame, spread: pd.DataFrame, condition: str) -> pd.DataFrame:
    short = spread[spread["n"] < 2].groupby(condition).size().rename("n_items_sd_undefined")
    out = counts.merge(short, left_on=condition, right_index=True, how="left")
    out["n_items_sd_undefined"] = out["n_items_sd_undefined"].fillna(0).astype(int)
    return out


# --------------------------------------------------------------------------- Experiment 1
@renamed(target="truth")
@reads_frame(frame="log", keys=("item", "condition"), numbers=("score", "truth"))
@fill_doc
def experiment1(
    log: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "prompt_id",
    non_rubric: object = "P1.1",
    rubric: object = "P1.2",
    score: str = "total",
    truth: str = "target_total",
    error: str | None = "error_flag",
    experiment: str | None = "experiment_id",
    experiment_id: str | None = "EXP1_BaselineRubricUtility",
    support: Sequence[float] = range(5, 21),
    smoothing: float = 0.5,
    r_threshold: float = 0.7,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 2000,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Experiment 1 (7.1.7): rubric (G2) vs non-rubric (G1) grading of synthetic transcripts.

    Parameters
    ----------
    log : DataFrame
        Attempt log; rows of other experiments are ignored when ``experiment`` is present.
    item, condition
        Column names; ``condition`` tells G1 from G2 (the PRD's prompts P1.1 and P1.2).
    non_rubric, rubric : object
        Levels of ``condition`` for G1 and G2.
    score, truth, error
        Columns of the score, the item's true total and the failed-attempt flag.
    experiment, experiment_id
        Column naming the experiment and the value kept (``None`` keeps every row).
    support : sequence of float
        Possible total scores (5-20) for the distributions of H1c.
    smoothing : float
        Pseudo-count per score bin for the KL divergence (see :func:`~hce.stats.kl_divergence`).
    r_threshold : float
        Success Metric 3's correlation threshold (Pearson r >= 0.7).
    alpha, confidence : float
        Significance level and interval level.
    %(n_boot)s
        Here: the cluster bootstrap over transcripts of H1c's KL difference.
    %(random_state)s
        It seeds the Monte Carlo permutation P of Success Metric 3's Spearman rho (12 to 30
        transcripts: too many arrangements to enumerate) and H1c's cluster bootstrap.

    Returns
    -------
    AnalysisResult
        ``attempts`` (attempts, errored attempts, undefined SDs per condition), ``sd``
        (step 1: SD per item x condition), ``sd_summary`` (medians, IQRs), ``h1a``
        (step 2: Mann-Whitney of SDs, G2 vs G1, the protocol's test), ``h1a_paired`` (its
        sensitivity analysis: Wilcoxon signed-rank of the SDs paired by item), ``mae`` and ``mae_summary`` (step 3),
        ``h1b`` (Wilcoxon signed-rank of MAEs paired by item, G2 vs G1), ``distribution``
        (step 4: counts of each total for G1, G2 and the targets), ``h1c`` (KL divergence of
        each condition from the target distribution), ``h1c_difference`` (G2's divergence minus
        G1's with its cluster-bootstrap interval over transcripts, which decides H1c;
        :func:`~hce.stats.kl_difference`), ``success_metric_3`` (Pearson and
        Spearman r between mean total and target per condition, ``verdict`` of the rule on
        the row the claim reads, G2's Pearson r) and ``hypotheses`` (H1a-c, SM3: each claim with its decision rule and
        verdict, ``hce.study.claims.exp1_claims``).

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> from hce.study import experiment1
    >>> log = simulated_log(experiment_id="EXP1_BaselineRubricUtility", condition="prompt_id",
    ...                     noise={"P1.1": 1.2, "P1.2": 0.3}, n_items=20, n_attempts=5, random_state=1)
    >>> experiment1(log, random_state=0)["hypotheses"][["id", "verdict"]]
        id       verdict
    0  H1a     supported
    1  H1b     supported
    2  H1c  inconclusive
    3  SM3           met

    H1c is inconclusive: with 20 transcripts the cluster bootstrap's interval of the KL
    difference (-0.36 to 0.14 nats) holds 0.
    """
    data = _rows_of(log, experiment, experiment_id)
    require_columns(data, [item, condition, score, truth] + as_list(error), what="log")
    _refuse_pooling(data, condition, experiment_id)
    data = data[data[condition].isin([non_rubric, rubric])]
    for name, level in (("non_rubric", non_rubric), ("rubric", rubric)):
        if not (data[condition] == level).any():
            raise DataError(f"{name}={level!r}: no attempt has {condition}={level!r}")
    spread = item_spread(data, item=item, condition=condition, score=score, error=error)
    h1a = mann_whitney(spread, condition=condition, score="sd", a=rubric, b=non_rubric,
                       confidence=confidence)  # fmt: skip
    # Both conditions score the same transcripts: the paired test is the sensitivity analysis of H1a.
    h1a_paired = wilcoxon_paired(spread, item=item, condition=condition, score="sd", a=rubric, b=non_rubric,
                                 confidence=confidence)  # fmt: skip
    mae = mae_vs_target(data, item=item, condition=condition, score=score, truth=truth, error=error)
    h1b = wilcoxon_paired(mae, item=item, condition=condition, score="mae", a=rubric, b=non_rubric,
                          confidence=confidence)  # fmt: skip
    valid = data if error is None else data[~data[error].fillna(False).astype(bool)]
    scores = pd.concat([
        pd.DataFrame({"source": valid[condition].to_numpy(), score: valid[score].to_numpy()}),
        pd.DataFrame({"source": "target", score: mae[mae[condition] == rubric]["target"].to_numpy()}),
    ], ignore_index=True)  # fmt: skip
    scores = scores.dropna()
    distribution = (scores.groupby(["source", score]).size().rename("count").reset_index())
    distribution["share"] = distribution["count"] / distribution.groupby("source")["count"].transform("sum")
    h1c = kl_divergence(scores, condition="source", score=score, reference="target", support=support,
                        smoothing=smoothing)  # fmt: skip
    rng = as_generator(random_state)
    h1c_difference = kl_difference(data, a=rubric, b=non_rubric, item=item, condition=condition, score=score, truth=truth,
                                   error=error, support=support,
                                   smoothing=smoothing, confidence=confidence, n_boot=n_boot, random_state=rng)  # fmt: skip
    sm3 = []
    for level in (non_rubric, rubric):
        cell = mae[mae[condition] == level]
        for method in ("pearson", "spearman"):
            r = correlation(cell, x="mean_score", y="target", method=method, confidence=confidence, random_state=rng)
            sm3.append(r.assign(**{condition: level}))
    sm3 = pd.concat(sm3, ignore_index=True)
    sm3.insert(0, condition, sm3.pop(condition))
    sm3 = with_sm3_verdict(sm3, rubric=rubric, condition=condition, r_threshold=r_threshold)
    hypotheses = exp1_claims(h1a, h1b, h1c_difference, sm3, rubric=rubric, non_rubric=non_rubric, condition=condition,
                             alpha=alpha, r_threshold=r_threshold)  # fmt: skip
    counts = _with_errors(_attempt_counts(data, item, condition, error), spread, condition)
    return AnalysisResult(
        title="EXP1_BaselineRubricUtility",
        tables={"attempts": counts, "sd": spread,
                "sd_summary": spread_summary(spread, item=item, by=condition),
                "h1a": h1a, "h1a_paired": h1a_paired, "mae": mae,
                "mae_summary": spread_summary(mae, item=item, score="mae", by=condition),
                "h1b": h1b, "distribution": distribution, "h1c": h1c, "h1c_difference": h1c_difference,
                "success_metric_3": sm3, "hypotheses": hypotheses},
        notes=_undefined_note(spread, item)
        + [("H1a follows the protocol: Mann-Whitney U on SDs (decides the verdict); both conditions score the same "
            "transcripts, so the Wilcoxon signed-rank test paired by transcript (h1a_paired) is reported as a "
            "sensitivity analysis"),
           _smoothing_note(h1c_difference.iloc[0])],
    )  # fmt: skip


def _smoothing_note(row: pd.Series) -> str:
    """How much of H1c's target distribution the smoothing supplies, and what decides H1c."""
    return (f"H1c: the KL divergences use additive smoothing of {row['smoothing']:g} per score over {row['n_bins']} scores, "
            f"which supplies {row['smoothing_share']:.0%} of the smoothed target distribution's mass ({row['n_items']} "
            "transcripts); the difference's interval resamples transcripts (cluster bootstrap, "
            f"{row['n_boot']} resamples) and decides the verdict")


# --------------------------------------------------------------------------- Experiments 2 and 3
def _select_winner(
    spread: pd.DataFrame,
    friedman_row: pd.Series,
    pairs: pd.DataFrame,
    condition: str,
    alpha: float,
    require: str,
) -> tuple[pd.DataFrame, str]:
    """The PRD's rule: the lowest-SD condition, if significantly lower than the others."""
    sd = spread.dropna(subset=["sd"]).groupby(condition)["sd"]
    table = pd.DataFrame({"median_sd": sd.median(), "mean_sd": sd.mean(), "n_items": sd.count()})
    table = table.sort_values(["median_sd", "mean_sd"]).reset_index()
    lower, higher = {c: [] for c in table[condition]}, {c: [] for c in table[condition]}
    for _, p in pairs[pairs["p_adjusted"] < alpha].iterrows():
        lo, hi = (p["a"], p["b"]) if p["effect_size"] < 0 else (p["b"], p["a"])
        if p["effect_size"] != 0:
            lower[lo].append(hi)
            higher[hi].append(lo)
    table["significantly_lower_than"] = [", ".join(map(str, lower[c])) for c in table[condition]]
    table["significantly_higher_than"] = [", ".join(map(str, higher[c])) for c in table[condition]]
    candidate = table[condition].iloc[0]
    others = len(table) - 1
    beaten = len(lower[candidate])
    omnibus = friedman_row["p_value"] < alpha
    wins = omnibus and (beaten == others if require == "all" else beaten > 0)
    table["winner"] = (table[condition] == candidate) & wins
    if wins:
        why = (f"winner {candidate!r}: lowest median SD and significantly lower than "
               f"{beaten} of {others} other condition(s) ({p_text(friedman_row['p_value'])}, Friedman)")
    elif not omnibus:
        why = (f"no winner: Friedman {p_text(friedman_row['p_value'])}, not below {alpha:g}; "
               f"{candidate!r} has the lowest median SD but no significant difference")
    else:
        why = (f"no winner: {candidate!r} has the lowest median SD but is significantly lower "
               f"than only {beaten} of {others} other condition(s) (rule: {require})")
    return table, why


def _compare_sds(
    data, *, item, condition, score, error, posthoc_method, p_adjust_method, alpha, require,
    confidence, random_state,
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    spread = item_spread(data, item=item, condition=condition, score=score, error=error)
    fr = friedman(spread, item=item, condition=condition, score="sd", confidence=confidence,
                  random_state=random_state)  # fmt: skip
    chosen = posthoc(spread, item=item, condition=condition, score="sd", method=posthoc_method,
                     p_adjust_method=p_adjust_method, confidence=confidence)  # fmt: skip
    others = [m for m in ("nemenyi", "wilcoxon") if m != posthoc_method]
    extra = {f"posthoc_{m}": posthoc(spread, item=item, condition=condition, score="sd", method=m,
                                     p_adjust_method=p_adjust_method, confidence=confidence)
             for m in others}  # fmt: skip
    levels = sorted(spread[condition].unique(), key=str)
    dz = pd.concat([cohens_d(spread, condition=condition, score="sd", a=a, b=b, paired=True, item=item,
                             confidence=confidence)
                    for a, b in itertools.combinations(levels, 2)], ignore_index=True)  # fmt: skip
    winner, why = _select_winner(spread, fr.iloc[0], chosen, condition, alpha, require)
    # what the post-hoc tests could reach at best, beside the rule they decide (cited where no condition won)
    reach = smallest_reachable_p(spread, item, condition, posthoc_method, p_adjust_method)
    winner = winner.assign(**dict(zip(("n_pairs", "n_comparisons", "smallest_reachable_p"), reach or (pd.NA, pd.NA, np.nan))))
    notes = _undefined_note(spread, item) + [why] + reachable_note(reach, p_adjust_method, alpha)
    if fr["p_value"].iloc[0] >= alpha:
        notes.append("Friedman's test is not significant: the PRD's plan stops before post-hoc "
                     "tests; they are reported for completeness only")
    tables = {"sd": spread, "sd_summary": spread_summary(spread, item=item, by=condition),
              "friedman": fr, "posthoc": chosen, **extra, "effect_sizes_dz": dz, "winner": winner}
    return tables, notes


@reads_frame(frame="log", keys=("item", "condition"), numbers=("score",))
@fill_doc
def experiment2(
    log: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "prompt_id",
    score: str = "total",
    error: str | None = "error_flag",
    experiment: str | None = "experiment_id",
    experiment_id: str | None = "EXP2_PromptOptimization",
    posthoc_method: PosthocMethod = "wilcoxon",
    p_adjust_method: Adjustment = "bonferroni",
    require: str = "all",
    alpha: float = 0.05,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Experiment 2 (7.2.7): SD of totals across prompt strategies; the winning prompt.

    %(experiment_log)s
    item, condition, score, error, experiment, experiment_id
        Column names (``condition``: the prompt strategy) and the experiment kept.
    posthoc_method : {"wilcoxon", "nemenyi", "conover"}
        Post-hoc test that decides the winner; the PRD names Wilcoxon signed-rank with
        Bonferroni correction or Nemenyi. The other of those two is reported too.
    p_adjust_method : {"bonferroni", "holm", "bh", "none"}
        Correction of the pairwise p-values (PRD: Bonferroni).
    require : {"all", "any"}
        The winner (lowest median SD) must be significantly lower than all (default) or at
        least one of the other strategies, after a significant Friedman test.
    alpha, confidence : float
        Significance level and interval level.
    %(random_state)s

    Returns
    -------
    AnalysisResult
        ``attempts``, ``sd`` (step 1), ``sd_summary``, ``friedman`` (step 2, with Kendall's
        W), ``posthoc`` (step 3, the chosen method), ``posthoc_nemenyi`` or
        ``posthoc_wilcoxon`` (the other), ``effect_sizes_dz`` (pairwise Cohen's d_z of SDs)
        and ``winner`` (per condition: median and mean SD, the conditions it is
        significantly lower/higher than, ``winner``). The notes say who won and why.

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> from hce.study import experiment2
    >>> log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
    ...                     noise={"P2.1": 0.6, "P2.2": 0.6, "P2.3": 0.2}, n_items=20, n_attempts=5)
    >>> experiment2(log, random_state=0)["winner"][["prompt_id", "winner"]]
      prompt_id  winner
    0      P2.3    True
    1      P2.2   False
    2      P2.1   False
    """
    result, _ = _sd_experiment(
        log, "EXP2_PromptOptimization", item=item, condition=condition, score=score, error=error,
        experiment=experiment, experiment_id=experiment_id, posthoc_method=posthoc_method,
        p_adjust_method=p_adjust_method, require=require, alpha=alpha, confidence=confidence,
        random_state=random_state,
    )  # fmt: skip
    return result


def _sd_experiment(log, title, *, item, condition, score, error, experiment, experiment_id,
                   posthoc_method, p_adjust_method, require, alpha, confidence, random_state):  # fmt: skip
    if require not in ("all", "any"):
        raise DataError(f"require={require!r} is not valid; choose one of ['all', 'any']")
    data = _rows_of(log, experiment, experiment_id)
    require_columns(data, [item, condition, score] + as_list(error), what="log")
    _refuse_pooling(data, condition, experiment_id)
    tables, notes = _compare_sds(
        data, item=item, condition=condition, score=score, error=error,
        posthoc_method=posthoc_method, p_adjust_method=p_adjust_method, alpha=alpha,
        require=require, confidence=confidence, random_state=random_state,
    )  # fmt: skip
    counts = _with_errors(_attempt_counts(data, item, condition, error), tables["sd"], condition)
    return AnalysisResult(title=title, tables={"attempts": counts, **tables}, notes=notes), data


@reads_frame(frame="log", keys=("item", "condition"), numbers=("score",), optional=("latency", "cost"))
@fill_doc
def experiment3(
    log: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "model",
    score: str = "total",
    error: str | None = "error_flag",
    latency: str | None = "latency_s",
    cost: str | None = "cost_usd",
    experiment: str | None = "experiment_id",
    experiment_id: str | None = "EXP3_ModelComparison",
    posthoc_method: PosthocMethod = "wilcoxon",
    p_adjust_method: Adjustment = "bonferroni",
    require: str = "all",
    transform: Transform = "sqrt",
    alpha: float = 0.05,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Experiment 3 (7.3.7): SD of totals across models, mean scores, latency and cost.

    %(experiment_log)s
    item, condition, score, error
        Column names (``condition``: the model).
    latency, cost : str or None
        Per-attempt latency (s) and cost (USD) columns; ``None`` or absent skips step 5.
    experiment, experiment_id
        Column naming the experiment and the value kept.
    posthoc_method, p_adjust_method, require
        As in :func:`experiment2`.
    transform : {"sqrt", "log", "log1p", "none"}
        Transform of the SDs for the repeated-measures ANOVA (step 2's alternative).
    alpha, confidence, random_state
        As in :func:`experiment2`.

    Returns
    -------
    AnalysisResult
        The tables of :func:`experiment2` (step 1-3, ``winner`` = winning model), plus
        ``rm_anova`` (on transformed SDs), ``mean_scores`` (step 4: mean total per item x
        model), ``mean_friedman`` and ``mean_posthoc`` (systematic scoring differences)
        and ``cost_latency`` (step 5: per model ``n_attempts``, ``mean_latency_s``,
        ``median_latency_s``, ``mean_cost_usd``, ``total_cost_usd``).

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> from hce.study import experiment3
    >>> log = simulated_log(experiment_id="EXP3_ModelComparison", condition="model",
    ...                     noise={"m1": 0.5, "m2": 0.3, "m3": 0.6}, n_items=10, n_attempts=5)
    >>> sorted(experiment3(log, random_state=0).tables)[:4]
    ['attempts', 'cost_latency', 'effect_sizes_dz', 'friedman']
    """
    result, data = _sd_experiment(
        log, "EXP3_ModelComparison", item=item, condition=condition, score=score, error=error,
        experiment=experiment, experiment_id=experiment_id, posthoc_method=posthoc_method,
        p_adjust_method=p_adjust_method, require=require, alpha=alpha, confidence=confidence,
        random_state=random_state,
    )  # fmt: skip
    spread = result.tables["sd"]
    tables = dict(result.tables)
    tables["rm_anova"] = rm_anova(spread, item=item, condition=condition, score="sd",
                                  transform=transform, confidence=confidence)  # fmt: skip
    means = spread[[item, condition, "n", "mean"]].rename(columns={"mean": "mean_score"})
    tables["mean_scores"] = means
    tables["mean_friedman"] = friedman(means, item=item, condition=condition, score="mean_score",
                                       confidence=confidence, random_state=random_state)  # fmt: skip
    tables["mean_posthoc"] = posthoc(means, item=item, condition=condition, score="mean_score",
                                     method=posthoc_method, p_adjust_method=p_adjust_method,
                                     confidence=confidence)  # fmt: skip
    notes = list(result.notes)
    # a parametric sensitivity analysis is read with its assumptions beside it (issue 45)
    notes.append(f"repeated-measures ANOVA (sensitivity analysis; Friedman decides): {tables['rm_anova']['assumptions'].iloc[0]}")
    # a column without a value (a simulated call's latency is left out) has nothing to summarise
    present = [c for c in (latency, cost) if c is not None and c in data.columns and data[c].notna().any()]
    if present:
        g = data.groupby(condition, sort=True)
        cl = pd.DataFrame({"n_attempts": g.size()})
        if latency in present:
            cl["mean_latency_s"] = g[latency].mean()
            cl["median_latency_s"] = g[latency].median()
        if cost in present:
            cl["mean_cost_usd"] = g[cost].mean()
            cl["total_cost_usd"] = g[cost].sum()
        tables["cost_latency"] = cl.reset_index()
    else:
        notes.append("no latency or cost column: step 5 skipped")
    return AnalysisResult(title=result.title, tables=tables, notes=notes)


# --------------------------------------------------------------------------- Experiment 4
@renamed(group="condition")
@reads_frame(frame="codes", keys=("condition", "dimensions"), log=False)
def experiment4(
    codes: pd.DataFrame,
    *,
    condition: str = "model",
    dimensions: Sequence[str] = EXP4_CODES,
    method: str = "auto",
    p_adjust_method: Adjustment = "holm",
    confidence: float = 0.95,
    n_sim: int = 10000,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Experiment 4 (7.4.7): code frequencies by model and their chi-squared/Fisher tests.

    Parameters
    ----------
    codes : DataFrame
        Coded reasoning segments, one row per segment, with the model in ``condition`` and one
        column per coding dimension (not the attempt log: codes come from human or AI coders).
    condition : str
        Model column.
    dimensions : sequence of str
        Coding-dimension columns (default: the PRD's five draft categories).
    method : {"auto", "chi2", "fisher"}
        See :func:`hce.stats.contingency_test`.
    p_adjust_method : {"bonferroni", "holm", "bh", "none"}
        Correction across the dimensions' tests (``p_adjusted``).
    confidence, n_sim, random_state
        As in :func:`hce.stats.contingency_test`.

    Returns
    -------
    AnalysisResult
        ``frequencies`` (step 1: counts and shares per dimension x model x code) and
        ``tests`` (step 2: one test per dimension with Cramer's V and ``p_adjusted``; with
        ``item_id`` and ``attempt_id`` columns, the segments are nested in replies and
        ``p_cluster``, ``p_cluster_adjusted``, ``n_replies``, ``cluster_method`` give the test
        that permutes the models among whole replies within each transcript).
        Step 3 (qualitative summary) is for the researchers.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from hce.study import experiment4
    >>> from hce.study.analyses import EXP4_CODES
    >>> rng = np.random.default_rng(0)
    >>> codes = pd.DataFrame({"model": np.repeat(["a", "b"], 30),
    ...                       **{c: rng.choice(["x", "y"], 60) for c in EXP4_CODES}})
    >>> codes["evidence_type"] = np.where(codes["model"] == "a", "quote", "gist")
    >>> experiment4(codes, random_state=0)["tests"][["code", "p_value"]].round(4)
                       code  p_value
    0         evidence_type   0.0000
    1      rubric_alignment   0.4376
    2           specificity   0.7958
    3       reasoning_depth   1.0000
    4  strengths_weaknesses   0.4376
    """
    dims = as_list(dimensions)
    require_columns(codes, [condition, *dims], what="codes")
    rng = as_generator(random_state)
    tests = contingency_test(codes, condition=condition, codes=dims, method=method, confidence=confidence,
                             n_sim=n_sim, random_state=rng)  # fmt: skip
    tests.insert(tests.columns.get_loc("p_value") + 1, "p_adjusted",
                 p_adjust(tests["p_value"].to_numpy(), p_adjust_method))  # fmt: skip
    notes = [f"{p_adjust_method} correction across {len(dims)} coding dimension(s)",
             "inter-coder reliability (Cohen's kappa) is computed by hce.stats reliability"]
    reply = [c for c in ("item_id", condition, "attempt_id") if c in codes]
    if len(reply) == 3:  # segments nested in replies: the cluster-aware test decides, the segment-level one is shown
        nested = cluster_permutation_test(codes, condition=condition, codes=dims, cluster=reply, strata="item_id",
                                          n_sim=n_sim, random_state=rng)  # fmt: skip
        tests["p_cluster"] = nested["p_value"].to_numpy()
        tests["p_cluster_adjusted"] = p_adjust(tests["p_cluster"].to_numpy(), p_adjust_method)
        tests["n_replies"] = nested["n_clusters"].to_numpy()
        tests["cluster_method"] = nested["method"].to_numpy()
        notes.append(f"each reply's segments share its model and transcript, so the {len(tests)} tests are also made "
                     "by permuting the models among the whole replies of each transcript (p_cluster, adjusted: "
                     "p_cluster_adjusted); the chi-squared and Fisher tests treat the segments as independent and are "
                     "too liberal")  # fmt: skip
    return AnalysisResult(
        title="EXP4_ReasoningAnalysis",
        tables={"frequencies": code_frequencies(codes, condition=condition, codes=dims, confidence=confidence), "tests": tests},
        notes=notes,
    )  # fmt: skip


# --------------------------------------------------------------------------- Experiment 5
@renamed(interval_method="ci_method")
@reads_frame(frame="log", keys=("item",), numbers=("categories", "total"))
def experiment5(
    log: pd.DataFrame,
    *,
    item: str = "item_id",
    categories: Sequence[str] = RUBRIC_V5_CATEGORIES,
    total: str = "total",
    error: str | None = "error_flag",
    experiment: str | None = "experiment_id",
    experiment_id: str | None = "EXP5_FinalToolValidation",
    category_thresholds: Sequence[float] = (0.3, 0.5),
    total_thresholds: Sequence[float] = (1.0,),
    sm2_category_max: float = SM2_CATEGORY_MAX,
    sm2_total_max: float = SM2_TOTAL_MAX,
    sm2_target: float = SM2_TARGET,
    confidence_column: str | None = "confidence",
    metadata: Sequence[str] = (),
    strata: Sequence[str] = (),
    ci_method: str = "wilson",
    alpha: float = 0.05,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Experiment 5 (7.5.7): spread of the final tool on Set C and Success Metric 2.

    Parameters
    ----------
    log : DataFrame
        Attempt log of the single optimised configuration.
    item, categories, total, error, experiment, experiment_id
        Column names and the experiment kept.
    category_thresholds, total_thresholds : sequence of float
        Step 3: shares of items with SD strictly below each threshold.
    sm2_category_max, sm2_total_max, sm2_target : float
        Success Metric 2's pre-specified rule (PRD: mean category SD <= 0.40, total SD <= 1.0,
        in at least 95% of transcripts); the verdict and every sentence read them from the
        ``success_metric_2`` table. ``success_metric_2_sensitivity`` recomputes the share at
        each of ``category_thresholds`` and ``total_thresholds`` as well.
    confidence_column : str or None
        Per-attempt judge confidence (step 5); skipped when absent or all missing.
    metadata : sequence of str
        Item-level columns for step 6 (numeric: Spearman with total SD; other:
        Kruskal-Wallis of total SD across levels).
    strata : sequence of str
        Demographic strata for Success Metric 6 (:func:`hce.stats.fairness`); empty skips it.
    ci_method : {"wilson", "clopper-pearson"}
        Interval for shares of items.
    alpha, confidence, random_state
        Significance level, interval level, bootstrap seed.

    Returns
    -------
    AnalysisResult
        ``attempts``, ``sd`` (step 1: SD per item and criterion), ``sd_summary`` (step 2:
        mean, median, IQR), ``sd_histogram`` (bins of width 0.1), ``success_metric_2`` (with
        the rule's ``verdict`` on the ``both`` row), ``success_metric_2_sensitivity`` (the same
        at the other thresholds), ``share_below`` (step 3), ``score_descriptives`` (step 4: mean, median, SD, min,
        max of the scores), ``uncertainty`` (step 5: Spearman between mean confidence and
        total SD per item), ``metadata`` (step 6), and ``fairness_omnibus``,
        ``fairness_pairwise``, ``fairness_verdict`` when ``strata`` are given.

    Examples
    --------
    >>> from hce.stats import simulated_log
    >>> from hce.study import experiment5
    >>> log = simulated_log(n_items=20, n_attempts=5, error_rate=0.0)
    >>> result = experiment5(log, random_state=0)
    >>> both = result["success_metric_2"].set_index("metric").loc["both"]
    >>> int(both["n_items"]), float(both["estimate"]), both["verdict"]
    (20, 0.65, 'not met')
    >>> result["success_metric_2_sensitivity"][["category_rule", "category_max", "estimate", "verdict"]].head(3)
      category_rule  category_max  estimate  verdict
    0          mean           0.3      0.35  not met
    1          mean           0.4      0.65  not met
    2          mean           0.5      0.80  not met
    """
    data = _rows_of(log, experiment, experiment_id)
    criteria = [*as_list(categories), total]
    require_columns(data, [item, *criteria, *metadata, *strata] + as_list(error), what="log")
    _refuse_pooling(data, None, experiment_id)
    spread = item_spread(data, item=item, condition=None, score=criteria, error=error)
    tables: dict[str, pd.DataFrame] = {}
    n_err = int(data[error].fillna(False).astype(bool).sum()) if error else 0
    tables["attempts"] = pd.DataFrame([{"n_attempts": len(data), "n_errors": n_err,
                                        "n_items": data[item].nunique(),
                                        "n_items_sd_undefined": spread.loc[spread["n"] < 2, item].nunique()}])  # fmt: skip
    tables["sd"] = spread
    tables["sd_summary"] = spread_summary(spread, item=item)
    tables["sd_histogram"] = _histogram(spread)
    sm2_at = dict(categories=categories, total=total, item=item, confidence=confidence, ci_method=ci_method,
                  target_share=sm2_target)  # fmt: skip
    tables["success_metric_2"] = with_sm2_verdict(success_metric_2(spread, category_max=sm2_category_max,
                                                                   total_max=sm2_total_max, **sm2_at))  # fmt: skip
    tables["success_metric_2_sensitivity"] = sm2_sensitivity(
        spread, sorted({*category_thresholds, sm2_category_max}), sorted({*total_thresholds, sm2_total_max}),
        (sm2_category_max, sm2_total_max), **sm2_at)  # fmt: skip
    thresholds = {c: list(category_thresholds) for c in as_list(categories)}
    thresholds[total] = list(total_thresholds)
    tables["share_below"] = share_below(spread, threshold=thresholds, item=item, strict=True,
                                        confidence=confidence, ci_method=ci_method)  # fmt: skip
    valid = data if error is None else data[~data[error].fillna(False).astype(bool)]
    long = valid[criteria].melt(var_name="criterion", value_name="score").dropna()
    g = long.groupby("criterion", sort=False)["score"]
    tables["score_descriptives"] = pd.DataFrame({"n": g.count(), "mean": g.mean(), "sd": g.std(ddof=1),
                                                 "median": g.median(), "min": g.min(),
                                                 "max": g.max()}).reset_index()  # fmt: skip
    notes = _undefined_note(spread, item)
    per_item = spread[spread["criterion"] == total][[item, "sd"]].rename(columns={"sd": "sd_total"})
    if confidence_column and confidence_column in data.columns and valid[confidence_column].notna().any():
        conf = valid.groupby(item)[confidence_column].mean().rename("mean_confidence")
        joined = per_item.merge(conf, left_on=item, right_index=True)
        random_state = as_generator(random_state)  # the permutation P and the strata's bootstrap: one stream
        tables["uncertainty"] = correlation(joined, x="mean_confidence", y="sd_total",
                                            method="spearman", confidence=confidence, random_state=random_state)  # fmt: skip
        notes.append("Step 5's predictor is not independent of its outcome: each item's mean confidence and its SD of "
                     "totals come from the same repeated attempts (confidence from the same replies' token "
                     "probabilities), so part of the correlation is built in; it describes, it does not validate")
    else:
        notes.append("no judge confidence recorded: step 5 (confidence vs SD) skipped")
    if metadata:
        tables["metadata"] = _metadata_tests(data, per_item, item, as_list(metadata), confidence,
                                             random_state)  # fmt: skip
    if strata:
        # errored attempts are counted in the attempts table already; fairness gets the rest
        valid = data if error is None else data[~data[error].fillna(False).astype(bool)]
        fair = fairness(valid, strata=strata, item=item, score=total, error=None, alpha=alpha,
                        confidence=confidence, random_state=random_state)  # fmt: skip
        tables.update({f"fairness_{k}": v for k, v in fair.tables.items()})
        tables["fairness_verdict"] = with_sm6_verdict(tables["fairness_verdict"], tables.get("fairness_pairwise"))
    sm2 = tables["success_metric_2"].set_index("metric").loc["both"]
    notes.append(f"Success Metric 2: {sm2['n_below']} of {sm2['n_items']} items meet both thresholds "
                 f"({sm2['estimate']:.1%}, {ci_method} {confidence:.0%} CI {sm2['ci_low']:.1%} to {sm2['ci_high']:.1%}); "
                 f"verdict of the interval rule at the target {sm2['target_share']:.0%}: {sm2['verdict']}")  # fmt: skip
    notes.append(sm2_threshold_note(tables["success_metric_2_sensitivity"]))
    return AnalysisResult(title="EXP5_FinalToolValidation", tables=tables, notes=notes)


def _histogram(spread: pd.DataFrame, width: float = 0.1) -> pd.DataFrame:
    rows = []
    for criterion, cell in spread.groupby("criterion", sort=False):
        sd = cell["sd"].dropna().to_numpy()
        top = max(width, np.ceil((sd.max() if sd.size else 0) / width + 1e-9) * width)
        edges = np.round(np.arange(0, top + width / 2, width), 10)
        counts, _ = np.histogram(sd, bins=edges)
        rows.append(pd.DataFrame({"criterion": criterion, "bin_low": edges[:-1],
                                  "bin_high": edges[1:], "count": counts}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def _metadata_tests(data, per_item, item, metadata, confidence, random_state) -> pd.DataFrame:
    meta = data[[item, *metadata]].drop_duplicates(subset=item)
    joined = per_item.merge(meta, on=item)
    rows = []
    for column in metadata:
        if pd.api.types.is_numeric_dtype(joined[column]) and not pd.api.types.is_bool_dtype(joined[column]):
            r = correlation(joined, x=column, y="sd_total", method="spearman", confidence=confidence,
                            random_state=random_state)  # fmt: skip
            rows.append(r.rename(columns=dict(zip(ESTIMATE_COLUMNS, EFFECT_COLUMNS))).assign(variable=column))
        else:
            kw = kruskal_wallis(joined.dropna(subset=[column]), condition=column, score="sd_total",
                                confidence=confidence, random_state=random_state)  # fmt: skip
            rows.append(kw.assign(variable=column))
    out = pd.concat(rows, ignore_index=True)
    first = ["variable", "statistic", "df1", "p_value", *EFFECT_COLUMNS, "n"]
    return out[first + ["method"]]
