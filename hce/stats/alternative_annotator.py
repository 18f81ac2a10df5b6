"""Can the judge replace the human raters? The alternative annotator test (alt-test) of
Calderon, Reichart & Dror (2025).

Each human is left out in turn; on every item that human rated, the judge and the left-out
human are each scored against the remaining humans, and a one-sided paired t-test asks
whether the human's advantage falls short of the cost-benefit margin epsilon. The
Benjamini-Yekutieli procedure controls the false discovery rate over the humans; the judge
passes when it wins against at least half of them. The procedure follows the authors'
reference implementation (the ``alt_test`` function of the nitaytech/AltTest repository,
commit 18428b1) step by step, so the two give the same winning rate, advantage
probability and verdict on the same annotations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import _label, check_choice, plain, require_columns
from hce.errors import DataError
from hce.stats._validate import statistic
from hce.stats.result import AnalysisResult

Scoring = Literal["accuracy", "neg_rmse"] | Callable[[object, list], float]

HUMAN_COLUMNS = ["judge", "human", "n", "rho", "rho_human", "statistic", "df", "p_value", "rejected", "epsilon"]
SUMMARY_COLUMNS = ["judge", "winning_rate", "advantage_probability", "passed", "n_humans", "n_skipped",
                   "n_items", "epsilon", "alpha", "scoring", "method"]  # fmt: skip
METHOD = "alt-test (Calderon, Reichart & Dror 2025), Benjamini-Yekutieli"


def _accuracy(pred: object, annotations: list) -> float:
    """Share of the remaining humans' labels equal to ``pred`` (the authors' ``accuracy``)."""
    return float(np.mean([pred == ann for ann in annotations]))


def _neg_rmse(pred: float, annotations: list) -> float:
    """Minus the root mean squared difference from the remaining humans' scores (``neg_rmse``)."""
    return -float(np.sqrt(np.mean([(pred - ann) ** 2 for ann in annotations])))


_SCORINGS = {"accuracy": _accuracy, "neg_rmse": _neg_rmse}


def paired_t_less(diff: np.ndarray, epsilon: float) -> tuple[float, float]:
    """One-sided one-sample t-test of ``mean(diff) < epsilon``: (t, p), as SciPy's
    ``ttest_1samp(diff, epsilon, alternative="less")`` (t = -inf, p = 0 for constant
    differences below epsilon; NaN when they equal it or fewer than 2 remain), without its
    precision warning on constant data."""
    n = len(diff)
    if n < 2:
        return np.nan, np.nan
    gap = float(np.mean(diff)) - epsilon
    sd = float(np.std(diff, ddof=1))
    if sd == 0:
        t = np.nan if gap == 0 else np.copysign(np.inf, gap)
    else:
        t = gap / (sd / np.sqrt(n))
    return float(t), float(stats.t.cdf(t, n - 1)) if not np.isnan(t) else np.nan


def by_rejected(p_values: Sequence[float], alpha: float) -> np.ndarray:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at FDR ``alpha``.

    As the authors' ``by_procedure``: thresholds ``i / m * alpha / H_m`` with ``H_m`` the
    m-th harmonic number; a NaN p-value counts in m and is never rejected.

    Examples
    --------
    >>> by_rejected([0.001, 0.2, 0.004], 0.05).tolist()
    [True, False, True]
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    rejected = np.zeros(m, dtype=bool)
    if m == 0:
        return rejected
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    thresholds = np.arange(1, m + 1) / m * alpha / np.sum(1.0 / np.arange(1, m + 1))
    below = np.flatnonzero(p[order] <= thresholds)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected


def _one_judge(
    judge: object, llm: dict, humans: dict[object, dict], score_of: Callable, epsilon: float, alpha: float,
    min_humans: int, min_items: int,
) -> tuple[list[dict], dict, list[str]]:  # fmt: skip
    """Per-human rows, the summary row and the notes of one judge (the authors' steps)."""
    raters_of: dict[object, list] = {}
    for human, annotations in humans.items():
        for i in annotations:
            raters_of.setdefault(i, []).append(human)
    keep = {i for i, who in raters_of.items() if len(who) >= min_humans and i in llm}
    notes = []
    if len(keep) < len(raters_of):
        notes.append(f"judge {judge!r}: dropped {len(raters_of) - len(keep)} item(s) with fewer than {min_humans} "
                     "humans or no score of the judge")  # fmt: skip
    rows = []
    skipped = 0
    for left_out, annotations in humans.items():
        items = [i for i in annotations if i in keep]
        if len(items) < min_items:
            notes.append(f"judge {judge!r}: human {left_out!r} skipped, {len(items)} item(s) < {min_items}")
            skipped += 1
            continue
        judge_wins, human_wins = np.empty(len(items)), np.empty(len(items))
        for k, i in enumerate(items):
            # The left-out human's peers include humans skipped as too sparse, as in the authors' code.
            rest = [humans[h][i] for h in raters_of[i] if h != left_out]
            human_score, judge_score = score_of(annotations[i], rest), score_of(llm[i], rest)
            judge_wins[k] = judge_score >= human_score
            human_wins[k] = human_score >= judge_score
        t, p = paired_t_less(human_wins - judge_wins, epsilon)
        rows.append({"judge": judge, "human": left_out, "n": len(items), "rho": float(judge_wins.mean()),
                     "rho_human": float(human_wins.mean()), "statistic": t, "df": len(items) - 1, "p_value": p,
                     "epsilon": epsilon})  # fmt: skip
    for row, rejected in zip(rows, by_rejected([r["p_value"] for r in rows], alpha)):
        row["rejected"] = bool(rejected)
    if rows:
        winning = sum(r["rejected"] for r in rows) / len(rows)
        advantage = float(np.mean([r["rho"] for r in rows]))
    else:
        winning = advantage = np.nan
        notes.append(f"judge {judge!r}: no human has {min_items} items; the alt-test cannot run")
    summary = {"judge": judge, "winning_rate": winning, "advantage_probability": advantage,
               "passed": bool(winning >= 0.5), "n_humans": len(rows), "n_skipped": skipped, "n_items": len(keep),
               "epsilon": epsilon, "alpha": alpha}  # fmt: skip
    return rows, summary, notes


def _annotations(data: pd.DataFrame, item: str, rater: str, score: str) -> dict[object, dict]:
    """{rater: {item: score}} in the order raters and items first appear; a rater scoring an
    item twice is refused, naming both rows."""
    twice = data.duplicated([item, rater], keep=False).to_numpy()
    if twice.any():
        first, second = np.flatnonzero(twice)[:2]
        who, what = plain(data[rater].iloc[first]), plain(data[item].iloc[first])
        raise DataError(f"alt_test: rater {who!r} scored {item} {what!r} "
                        f"twice (rows {_label(data.index[first])} and {_label(data.index[second])}); "
                        "keep one score per item and rater (average repeated attempts first)")  # fmt: skip
    out: dict[object, dict] = {}
    for i, r, s in zip(data[item].tolist(), data[rater].tolist(), data[score].tolist()):
        out.setdefault(r, {})[i] = s
    return out


@statistic(keys=("item", "rater"), labels=("score",))
def alt_test(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    rater: str,
    score: str,
    judge: object | Sequence[object] = None,
    epsilon: float = 0.2,
    alpha: float = 0.05,
    scoring: Scoring = "accuracy",
    min_humans_per_item: int = 2,
    min_items_per_human: int = 30,
) -> AnalysisResult:
    """Alternative annotator test: can the judge stand in for the human raters?

    Parameters
    ----------
    data : DataFrame
        Long format, one row per score: the humans' and the judge's rows stacked, ``rater``
        telling them apart. Rows with a missing score are left out.
    item, rater, score : str
        Columns of the rated unit, of who scored (human ids and the judge's name) and of
        the score (labels for ``"accuracy"``, numbers for ``"neg_rmse"``). ``item``
        defaults to ``"item_id"`` (the attempt log's); ``rater`` and ``score`` are required.
    judge : value or list of values
        The ``rater`` value(s) that are judges (LLMs); every other rater is a human. With
        several judges each is tested on its own against the same humans (one
        Benjamini-Yekutieli correction per judge, as the authors run one call per LLM).
        Required.
    epsilon : float
        Cost-benefit margin, default 0.2: how much the humans may win by before the judge
        loses. The authors suggest 0.2 for experts, 0.15 for skilled annotators, 0.1 for
        crowd workers, and less when the humans agree little among themselves.
    alpha : float
        False discovery rate of the Benjamini-Yekutieli procedure, default 0.05.
    scoring : {"accuracy", "neg_rmse"} or callable
        How well one score represents the remaining humans' scores: ``"accuracy"`` (default,
        share of equal labels), ``"neg_rmse"`` (minus the root mean squared difference), or
        ``f(score, [remaining scores]) -> float``, higher is better.
    min_humans_per_item : int
        Items with fewer humans are dropped, default 2 (the authors' default).
    min_items_per_human : int
        Humans with fewer remaining items are not tested (noted), default 30 (the authors'
        default: the t-test's normal approximation).

    Returns
    -------
    AnalysisResult
        ``"humans"``: one row per judge and tested human: ``judge``, ``human``, ``n``
        (items), ``rho`` (share of items where the judge scores at least as well as the
        human against the others: the judge's advantage probability over this human),
        ``rho_human`` (the human's, the other way round), ``statistic``, ``df`` and
        ``p_value`` of the one-sided t-test, ``rejected`` (after Benjamini-Yekutieli:
        the judge wins against this human), ``epsilon``.
        ``"summary"``: one row per judge: ``winning_rate`` (share of tested humans the
        judge wins against; NaN when none could be tested), ``advantage_probability``
        (mean ``rho``: compare judges with it, higher is better), ``passed``
        (``winning_rate >= 0.5``), ``n_humans`` tested, ``n_skipped``, ``n_items`` kept,
        ``epsilon``, ``alpha``, ``scoring``, ``method``.
        Notes list the items dropped and the humans skipped.

    Notes
    -----
    For judge f and left-out human j, on each item i that j rated, with ``S`` the scoring
    against the remaining humans' scores ``H_{-j}[i]``: ``W^f_i = 1[S(f_i) >= S(h_ji)]``
    and ``W^h_i = 1[S(h_ji) >= S(f_i)]``. ``rho_j = mean(W^f)``; the test of
    ``H0: mean(W^h - W^f) >= epsilon`` against ``H1: < epsilon`` is the one-sided
    one-sample t-test of the differences ``W^h_i - W^f_i``. The winning rate is the share
    of humans whose H0 Benjamini-Yekutieli rejects at ``alpha``; the judge passes at 0.5.
    Items the judge did not score are dropped, and humans skipped for too few items still
    count among the remaining humans of the others, both as in the authors' code. Where no
    human can be tested the authors' code divides by zero; here the winning rate is NaN and
    the judge does not pass. The authors recommend at least three humans and 50-100 items.

    References
    ----------
    .. [1] Calderon, N., Reichart, R., & Dror, R. (2025). The alternative annotator test for
       LLM-as-a-judge: how to statistically justify replacing human annotators with LLMs.
       ACL 2025, 16051-16081. arXiv:2501.10970.
    .. [2] Benjamini, Y., & Yekutieli, D. (2001). The control of the false discovery rate in
       multiple testing under dependency. Ann. Statist. 29, 1165-1188.

    Examples
    --------
    >>> import pandas as pd
    >>> labels = {"h1": "aabbaabbab" * 4, "h2": "aabbaabbaa" * 4, "h3": "aabbabbbab" * 4,
    ...           "llm": "aabbaabbab" * 4}
    >>> df = pd.DataFrame([{"item_id": i, "rater": r, "score": s}
    ...                    for r, text in labels.items() for i, s in enumerate(text)])
    >>> out = alt_test(df, rater="rater", score="score", judge="llm")
    >>> out["summary"][["judge", "winning_rate", "advantage_probability", "passed"]]
      judge  winning_rate  advantage_probability  passed
    0   llm           1.0                    1.0    True
    """
    check_choice("scoring", scoring if isinstance(scoring, str) else "callable", [*_SCORINGS, "callable"])
    score_of = _SCORINGS[scoring] if isinstance(scoring, str) else scoring
    if not 0 < alpha < 1:
        raise DataError(f"alpha={alpha!r} must lie strictly between 0 and 1")
    require_columns(data, [item, rater, score])
    present = data.loc[data[score].notna()]
    if scoring == "neg_rmse" and not pd.api.types.is_numeric_dtype(present[score]):
        raise DataError(f"alt_test: scoring='neg_rmse' needs numeric scores; column {score!r} holds "
                        f"{present[score].dtype} values")  # fmt: skip
    known = list(dict.fromkeys(present[rater].tolist()))
    judges = [judge] if isinstance(judge, str) or not isinstance(judge, Sequence) else list(judge)
    if judge is None or not judges:
        raise DataError(f"alt_test: name the judge(s) with judge=, a value of column {rater!r}: {known[:10]}")
    missing = [j for j in judges if j not in known]
    if missing:
        raise DataError(f"alt_test: judge {missing[0]!r} has no score in column {rater!r}; raters: {known[:10]}")
    annotations = _annotations(present, item, rater, score)
    humans = {h: a for h, a in annotations.items() if h not in judges}
    if len(humans) < 2:
        raise DataError(f"alt_test needs at least 2 human raters besides the judge(s); found {list(humans)}")
    rows, summaries, notes = [], [], []
    for j in judges:
        got = _one_judge(j, annotations[j], humans, score_of, epsilon, alpha, min_humans_per_item,
                         min_items_per_human)  # fmt: skip
        rows += got[0]
        summaries.append({**got[1], "scoring": scoring if isinstance(scoring, str) else getattr(
            scoring, "__name__", "callable"), "method": METHOD})  # fmt: skip
        notes += got[2]
    return AnalysisResult(
        "alt-test: can the judge replace the human raters?",
        {"humans": pd.DataFrame(rows, columns=HUMAN_COLUMNS), "summary": pd.DataFrame(summaries, columns=SUMMARY_COLUMNS)},
        notes,
    )
