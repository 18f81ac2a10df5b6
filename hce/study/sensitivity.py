"""The sensitivity analyses a statistical reviewer asks of the study's verdicts (issue 45, item 2).

Two verdicts rest on a choice that a reader may want to see undone:

- Success Metric 1 reads the Friedman tests of H2 and H3, which are tie-corrected (as R's
  ``friedman.test``); per-item SDs of a few repeats tie often, so :func:`sm1_tie_sensitivity`
  gives each test with and without the correction, and :func:`tie_notes` says in words when
  either P lies within :data:`~hce.study.rules.NEAR_ALPHA` of alpha or the two fall on
  either side of it.
- Success Metric 2 reads pre-specified SD thresholds: :func:`sm2_sensitivity` recomputes its
  share and verdict at the other thresholds and :func:`sm2_threshold_note` says in words
  whether the verdict turns between them.

Nothing here decides a claim: the verdicts stay :mod:`hce.study.claims`'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pandas as pd
from scipy import stats

from hce._pvalues import format_p, p_text
from hce.stats.result import AnalysisResult
from hce.stats.spread import success_metric_2
from hce.stats.tests import block_matrix, tie_term
from hce.study.claims import OMNIBUS, with_sm2_verdict
from hce.study.rules import NEAR_ALPHA

#: The columns of :func:`sm1_tie_sensitivity`, in order.
SM1_TIE_COLUMNS = ["id", "experiment_id", "n", "k", "n_tied_blocks", "df1", "statistic_tie_corrected", "p_tie_corrected",
                   "statistic_uncorrected", "p_uncorrected", "alpha", "sensitivity"]  # fmt: skip


def friedman_uncorrected(data: pd.DataFrame, *, item: str, condition: str, score: str = "sd") -> dict[str, float]:
    """Friedman's chi-squared without the tie correction, and how many blocks hold ties.

    ``12 / (n k (k + 1)) * sum_j R_j^2 - 3 n (k + 1)`` on the within-block midranks (Friedman,
    1937): the statistic of textbooks and of software that ignores ties. R's ``friedman.test``
    (and :func:`hce.stats.friedman`) divides by the tie-corrected variance instead, which makes
    the statistic larger and P smaller when blocks hold ties.

    Examples
    --------
    >>> data = pd.DataFrame({"item_id": [1, 1, 1, 2, 2, 2, 3, 3, 3], "prompt_id": ["A", "B", "C"] * 3,
    ...                      "sd": [0.0, 0.5, 0.5, 0.0, 0.3, 0.6, 0.1, 0.4, 0.4]})
    >>> out = friedman_uncorrected(data, item="item_id", condition="prompt_id")
    >>> round(out["statistic"], 4), out["n_tied_blocks"]
    (4.6667, 2)
    """
    matrix, _, _ = block_matrix(data, item, condition, score)
    n, k = matrix.shape
    sums = stats.rankdata(matrix, axis=1).sum(axis=0)
    chi2 = float(12 / (n * k * (k + 1)) * (sums**2).sum() - 3 * n * (k + 1))
    return {"statistic": chi2, "df1": k - 1, "p_value": float(stats.chi2.sf(chi2, k - 1)), "n": n, "k": k,
            "n_tied_blocks": int((tie_term(matrix) > 0).sum())}  # fmt: skip


def sm1_tie_sensitivity(experiments: Mapping[str, AnalysisResult], *, alpha: float = 0.05) -> pd.DataFrame:
    """Success Metric 1's Friedman tests (H2, H3) tie-corrected, as they decide, and uncorrected, as a sensitivity check.

    The corrected statistic and P are the experiment's own ``friedman`` table (one source);
    the uncorrected ones are :func:`friedman_uncorrected` on the same per-item SDs. ``sensitivity``
    says in words whether the correction moves P across ``alpha`` or either P lies within
    :data:`~hce.study.rules.NEAR_ALPHA` of it. An experiment not analysed has no row.

    Examples
    --------
    >>> sm1_tie_sensitivity({})
    Empty DataFrame
    Columns: [id, experiment_id, n, k, n_tied_blocks, df1, statistic_tie_corrected, p_tie_corrected, statistic_uncorrected, p_uncorrected, alpha, sensitivity]
    Index: []
    """
    rows = []
    for experiment_id, name, claim_id in OMNIBUS:
        result = experiments.get(experiment_id)
        if result is None or name != "friedman" or not {"friedman", "sd", "winner"} <= set(result.tables):
            continue
        corrected = result["friedman"].iloc[0]
        spread = result["sd"]
        plain = friedman_uncorrected(spread, item=spread.columns[0], condition=result["winner"].columns[0])
        rows.append({"id": claim_id, "experiment_id": experiment_id, "n": plain["n"], "k": plain["k"],
                     "n_tied_blocks": plain["n_tied_blocks"], "df1": plain["df1"],
                     "statistic_tie_corrected": float(corrected["statistic"]),
                     "p_tie_corrected": float(corrected["p_value"]), "statistic_uncorrected": plain["statistic"],
                     "p_uncorrected": plain["p_value"], "alpha": alpha,
                     "sensitivity": _tie_words(float(corrected["p_value"]), plain["p_value"], alpha)})  # fmt: skip
    return pd.DataFrame(rows, columns=SM1_TIE_COLUMNS)


def _tie_words(corrected: float, uncorrected: float, alpha: float) -> str:
    side = {True: "below", False: "not below"}
    if (corrected < alpha) != (uncorrected < alpha):
        text = (f"the tie correction moves P across alpha = {alpha:g} ({side[corrected < alpha]} it with the correction, "
                f"{side[uncorrected < alpha]} it without): the verdict rests on the correction")
    else:
        text = f"{side[corrected < alpha]} alpha = {alpha:g} with and without the tie correction"
    near = [what for what, p in (("tie-corrected", corrected), ("uncorrected", uncorrected)) if abs(p - alpha) < NEAR_ALPHA]
    if near:
        text += f"; the {' and the '.join(near)} P within {NEAR_ALPHA:g} of alpha: a verdict on the edge"
    return text


def tie_notes(table: pd.DataFrame) -> list[str]:
    """A note for each Friedman test of :func:`sm1_tie_sensitivity` whose verdict could turn on the tie correction.

    A test gets a note when its two P values fall on either side of alpha or either lies within
    :data:`~hce.study.rules.NEAR_ALPHA` of it.

    Examples
    --------
    >>> table = pd.DataFrame({"id": ["H2"], "n_tied_blocks": [3], "n": [8], "statistic_tie_corrected": [6.667],
    ...                       "p_tie_corrected": [0.0357], "statistic_uncorrected": [6.25], "p_uncorrected": [0.0439],
    ...                       "alpha": [0.05]})
    >>> print(tie_notes(table)[0])
    Success Metric 1 reads H2's Friedman test, tie-corrected as R's friedman.test: chi-squared 6.67, P = .04; without the correction (3 of 8 transcripts hold tied SDs) chi-squared 6.25, P = .04: below alpha = 0.05 with and without the tie correction; the uncorrected P within 0.01 of alpha: a verdict on the edge (table sm1_tie_sensitivity)
    """
    notes = []
    for row in table.itertuples(index=False):
        across = (row.p_tie_corrected < row.alpha) != (row.p_uncorrected < row.alpha)
        near = min(abs(row.p_tie_corrected - row.alpha), abs(row.p_uncorrected - row.alpha)) < NEAR_ALPHA
        if not (across or near):
            continue
        words = _tie_words(row.p_tie_corrected, row.p_uncorrected, row.alpha)  # the table's words, the note's
        notes.append(f"Success Metric 1 reads {row.id}'s Friedman test, tie-corrected as R's friedman.test: chi-squared "
                     f"{row.statistic_tie_corrected:.2f}, {p_text(row.p_tie_corrected)}; without the correction "
                     f"({row.n_tied_blocks} of {row.n} transcripts hold tied SDs) chi-squared {row.statistic_uncorrected:.2f}, "
                     f"{p_text(row.p_uncorrected)}: {words} (table sm1_tie_sensitivity)")  # fmt: skip
    return notes


def sm2_sensitivity(spread: pd.DataFrame, category_maxima: Sequence[float], total_maxima: Sequence[float],
                    prespecified: tuple[float, float], **kwargs) -> pd.DataFrame:
    """Success Metric 2's share (``both``) and the rule's verdict at every pair of SD thresholds, the pre-specified pair marked.

    Each pair is applied to the mean of an item's category SDs (the PRD's wording, pre-specified)
    and to every category SD. A verdict that turns between neighbouring thresholds rests on the
    choice of threshold; the table shows whether it does.
    """
    rows = []
    for category_rule, category_max, total_max in itertools.product(("mean", "each"), category_maxima, total_maxima):
        both = with_sm2_verdict(success_metric_2(spread, category_max=category_max, total_max=total_max,
                                                 category_rule=category_rule, **kwargs))  # fmt: skip
        row = both[both["metric"] == "both"].iloc[0]
        rows.append({"category_rule": category_rule, "category_max": category_max, "total_max": total_max, "n_items": row["n_items"],
                     "n_below": row["n_below"], "estimate": row["estimate"], "ci_low": row["ci_low"],
                     "ci_high": row["ci_high"], "ci_method": row["ci_method"], "target_share": row["target_share"],
                     "prespecified": (category_rule, category_max, total_max) == ("mean", *prespecified),
                     "verdict": row["verdict"]})  # fmt: skip
    return pd.DataFrame(rows)


#: How each way of applying the category threshold reads in a sentence.
_CATEGORY_RULES = {"mean": "the mean of a transcript's category SDs", "each": "every category SD"}


def sm2_threshold_note(table: pd.DataFrame) -> str:
    """Success Metric 2's threshold sensitivity in words: whether its verdict turns between the thresholds tried.

    ``table`` is :func:`sm2_sensitivity`'s. Thresholds are written "at most 0.30", never with a
    symbol. The one verdict named is the pre-specified thresholds' (the claim's, as the scorecard
    gives it); the others are "the same" or "another" (the table's ``verdict`` column names them),
    so no sentence gives Success Metric 2 a second verdict.

    Examples
    --------
    >>> table = pd.DataFrame({"category_rule": ["mean", "mean", "each", "each"], "category_max": [0.3, 0.4, 0.3, 0.4],
    ...                       "total_max": [1.0] * 4, "n_items": [8] * 4, "n_below": [8, 8, 5, 8],
    ...                       "prespecified": [False, True, False, False],
    ...                       "verdict": ["inconclusive", "inconclusive", "not met", "inconclusive"]})
    >>> print(sm2_threshold_note(table))
    Success Metric 2 at other SD thresholds (threshold sensitivity): at the pre-specified thresholds (category SD at most 0.40 on the mean of a transcript's category SDs, total SD at most 1.0) 8 of 8 transcripts pass, and the verdict is inconclusive; with the threshold on the mean of a transcript's category SDs, the verdict is the same at every threshold tried (category SD at most 0.30 or 0.40); with the threshold on every category SD, it is another at category SD at most 0.30 (5 of 8) and the same at category SD at most 0.40 (8 of 8). The verdict turns only with the threshold on every category SD instead of the mean of a transcript's category SDs: it rests on that reading of the rule, not on the thresholds
    """
    pre = table[table["prespecified"].astype(bool)]
    parts = []
    reference = pre["verdict"].iloc[0] if len(pre) else None
    if len(pre):
        row = pre.iloc[0]
        parts.append(f"at the pre-specified thresholds (category SD at most {row['category_max']:.2f} on "
                     f"{_CATEGORY_RULES[row['category_rule']]}, total SD at most {row['total_max']:.1f}) "
                     f"{int(row['n_below'])} of {int(row['n_items'])} transcripts pass, and the verdict is {reference}")  # fmt: skip
    several_totals = table["total_max"].nunique() > 1
    for rule, rows in table.groupby("category_rule", sort=False):
        if reference is not None and (rows["verdict"] == reference).all():
            tried = "category SD at most " + " or ".join(f"{v:.2f}" for v in sorted(rows["category_max"].unique()))
            if several_totals:
                tried += ", total SD at most " + " or ".join(f"{v:.1f}" for v in sorted(rows["total_max"].unique()))
            parts.append(f"with the threshold on {_CATEGORY_RULES[rule]}, the verdict is the same at every threshold tried ({tried})")
        else:
            said = [f"{'the same' if r.verdict == reference else 'another'} at {_pair(r, several_totals)} "
                    f"({int(r.n_below)} of {int(r.n_items)})" for r in rows.itertuples(index=False)]  # fmt: skip
            parts.append(f"with the threshold on {_CATEGORY_RULES[rule]}, it is {', '.join(said[:-1])} and {said[-1]}")
    rule = pre["category_rule"].iloc[0] if len(pre) else "mean"
    if table.loc[table["category_rule"] == rule, "verdict"].nunique() > 1:
        ending = "The verdict turns with the thresholds: it rests on their choice"
    elif table["verdict"].nunique() > 1:
        ending = (f"The verdict turns only with the threshold on {_CATEGORY_RULES['each' if rule == 'mean' else 'mean']} "
                  f"instead of {_CATEGORY_RULES[rule]}: it rests on that reading of the rule, not on the thresholds")
    else:
        ending = "The verdict is the same at every threshold tried: it does not rest on their choice"
    return "Success Metric 2 at other SD thresholds (threshold sensitivity): " + "; ".join(parts) + ". " + ending


def _pair(row, several_totals: bool) -> str:
    text = f"category SD at most {row.category_max:.2f}"
    return text + f" and total SD at most {row.total_max:.1f}" if several_totals else text


def smallest_reachable_p(spread: pd.DataFrame, item: str, condition: str, posthoc_method: str,
                         p_adjust_method: str) -> tuple[int, int, float] | None:  # fmt: skip
    """Paired items, comparisons and the smallest adjusted P the post-hoc Wilcoxon tests can give.

    With ``n`` untied paired differences the exact signed-rank test's smallest P is ``2 / 2^n``
    (every difference of one sign; tied differences go to the normal approximation, which can go
    lower); Bonferroni's and Holm's first adjusted P multiply it by the comparisons. None for
    other post-hoc tests or adjustments.

    Examples
    --------
    >>> spread = pd.DataFrame({"item_id": [f"T{i}" for i in range(8) for _ in range(4)],
    ...                        "prompt_id": ["A", "B", "C", "D"] * 8, "sd": [1.0, 2.0, 3.0, 4.0] * 8})
    >>> smallest_reachable_p(spread, "item_id", "prompt_id", "wilcoxon", "bonferroni")
    (8, 6, 0.046875)
    """
    if posthoc_method != "wilcoxon" or p_adjust_method not in ("bonferroni", "holm"):
        return None
    wide = spread.pivot_table(index=item, columns=condition, values="sd", aggfunc="first")
    n, k = int(wide.dropna().shape[0]), wide.shape[1]
    comparisons = k * (k - 1) // 2
    if n == 0 or comparisons == 0:
        return None
    return n, comparisons, min(1.0, comparisons * 2.0 / 2**n)


def hardly_reachable(smallest: float, alpha: float) -> bool:
    """Whether the winner rule's smallest reachable P is near or above alpha (within a factor 5), so
    "no winner" says little (:func:`reachable_note`)."""
    return smallest >= alpha / 5


def reachable_note(found: tuple[int, int, float] | None, p_adjust_method: str, alpha: float) -> list[str]:
    """Say so when the winner rule can hardly be met: with few items the post-hoc tests'
    smallest reachable P (``found``, :func:`smallest_reachable_p`'s) is near or above alpha. A
    reader should not take "no winner" for evidence that the conditions are alike.

    Examples
    --------
    >>> spread = pd.DataFrame({"item_id": [f"T{i}" for i in range(8) for _ in range(4)],
    ...                        "prompt_id": ["A", "B", "C", "D"] * 8, "sd": [1.0, 2.0, 3.0, 4.0] * 8})
    >>> found = smallest_reachable_p(spread, "item_id", "prompt_id", "wilcoxon", "bonferroni")
    >>> reachable_note(found, "bonferroni", 0.05)[0][:60]
    'with 8 paired items, the exact Wilcoxon signed-rank test can'
    """
    if found is None or not hardly_reachable(found[2], alpha):
        return []
    n, comparisons, smallest = found
    verdict = (f"above alpha = {alpha:g}: the winner rule cannot be met with this many items" if smallest >= alpha
               else f"close to alpha = {alpha:g}: the winner rule can hardly be met with this many items")
    # P values as JAMA writes them (hce._pvalues), as every other P of the report
    return [f"with {n} paired items, the exact Wilcoxon signed-rank test cannot give a P below {format_p(2.0 / 2**n)} when the differences are untied; "
            f"after {ADJUSTMENTS[p_adjust_method]} adjustment over {comparisons} comparisons the smallest reachable P is "
            f"{format_p(smallest)}, {verdict} (no winner is then no evidence that the conditions are alike)"]


#: P-value adjustments by name, as a sentence writes them.
ADJUSTMENTS = {"bonferroni": "Bonferroni", "holm": "Holm"}


__all__ = ["friedman_uncorrected", "hardly_reachable", "reachable_note", "smallest_reachable_p", "sm1_tie_sensitivity", "sm2_sensitivity", "sm2_threshold_note", "tie_notes"]
