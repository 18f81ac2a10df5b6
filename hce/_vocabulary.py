"""The one vocabulary of hce's public functions: argument names, retired names, result columns.

This module is the single source of truth: the glossary page of the documentation is written
from it and ``tests/test_vocabulary.py`` holds the signature of every public function of
:mod:`hce.stats`, :mod:`hce.study` and :mod:`hce.report` to it.

Why these names
---------------
Before issue 26 the rated unit was called ``item``, ``targets``, ``target``, ``unit``,
``block``, ``subject``, ``pair`` or ``message``. The names below are the ones most common in
hce's public signatures at the time (counts over hce.stats and hce.study), checked against
the libraries our users know:

* ``item`` (22 signatures, against 10 for ``targets``): the word of the study's logs
  (``item_id``). pingouin says ``targets`` in ``intraclass_corr`` but ``subject`` in
  ``rm_anova``, ``friedman`` and ``cronbach_alpha``; scikit-posthocs says ``block_col``: no
  outside name is shared, so ours wins.
* ``rater`` for whoever or whatever gives a score: a judge, an attempt, an annotator, a scale
  item in Cronbach's alpha (``raters``, 8 signatures, as pingouin's ``intraclass_corr``; made
  singular like every other column argument).
* ``score`` for the value column (22 signatures, against 10 for ``ratings`` and 10 for
  ``value``; pingouin's ``cronbach_alpha`` says ``scores``); ``truth`` for the reference the
  score is compared with (a golden verdict, a human score, an observed outcome, a true
  total), the word ``golden_agreement`` and ``rogan_gladen`` already used.
* ``condition`` for the column whose levels are compared (prompts, models, expert vs LLM
  raters). ``group`` was more common (12 against 8) but is also pandas' ``groupby``; the
  study's logs and designs speak of conditions (``condition_id``). ``by`` names extra columns
  that split an analysis into separate results (pandas ``groupby(by=...)``), a sequence
  defaulting to ``()``.
* ``columns`` for a list of wide columns (``factor.*``): ``items`` was both that and a
  long-format id column.
* ``confidence`` for the interval level (56 signatures; pingouin's ``confidence=0.95``);
  ``alpha`` stays the significance level of a test.
* ``n_boot`` for bootstrap resamples (16 signatures; pingouin's ``n_boot``), default 1000:
  1000 and 2000 were equally common defaults (6 each); 1000 is what Efron and Tibshirani
  (1993, ch. 19) ask of a percentile interval and halves the cost of the reports, which
  bootstrap per criterion and condition. ``n_sim`` counts Monte-Carlo simulations (power,
  simulated p-values, parallel analysis), which are not resamples of the data.
* ``random_state`` (SciPy, scikit-learn, 30 signatures), default ``None`` everywhere: a seed
  is the caller's decision; the study run and ``hce report`` pass one.
* ``method`` is the estimator or test (statsmodels' ``method``); ``ci_method`` is how the
  interval is built (``wilson``, ``clopper-pearson``), as the reliability results already
  reported it in their ``ci_method`` column.

Results follow the same rules: ``estimate, ci_low, ci_high`` bound an estimate;
``effect_size, effect_ci_low, effect_ci_high`` an effect size reported beside a test
statistic; ``statistic, p_value`` a test.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar

#: Canonical argument names and what they mean.
ARGUMENTS: dict[str, str] = {
    "data": "the input DataFrame (long format unless the function says wide); first, positional",
    "item": "column identifying the rated unit: a message, transcript, pair or query",
    "rater": "column identifying who or what scored: a judge, an attempt, an annotator, a scale item",
    "score": "column holding the value analysed: a score, a rating, a verdict",
    "truth": "column holding the reference the score is compared with: golden verdict, human score, outcome",
    "condition": "column whose levels are compared: prompt, model, rater group",
    "by": "columns splitting the analysis into separate results; a sequence, default ()",
    "columns": "list of wide-format columns (questionnaire items) to analyse",
    "levels": "values of a column: the two levels of condition compared, or a scale's possible scores",
    "confidence": "confidence level of every interval, default 0.95",
    "alpha": "significance level of a test, default 0.05",
    "n_boot": "bootstrap resamples, default 1000 (0 where the bootstrap is opt-in)",
    "n_sim": "Monte-Carlo simulations (power, simulated p-values, parallel analysis)",
    "random_state": "seed or numpy Generator; default None everywhere",
    "method": "the estimator or test",
    "ci_method": "how the confidence interval is built",
    "error": "column flagging failed attempts, excluded before the analysis",
}

#: Retired argument names and the name that replaced each. ``renamed`` raises a TypeError
#: naming the replacement when one is passed.
RETIRED: dict[str, str] = {
    "targets": "item",
    "target": "item",
    "unit": "item",
    "block": "item",
    "subject": "item",
    "pair": "item",
    "message": "item",
    "raters": "rater",
    "annotator": "rater",
    "ratings": "score",
    "value": "score",
    "verdict": "score",
    "prediction": "score",
    "judge": "score",
    "human": "truth",
    "outcome": "truth",
    "group": "condition",
    "within": "condition",
    "groups": "condition",
    "rater_group": "condition",
    "items": "columns",
    "interval_method": "ci_method",
    "n_sims": "n_sim",
    "n_iter": "n_sim",
}

#: Where a retired name became another word than its :data:`RETIRED` replacement, and the
#: names replaced that were never retired in general (function: old -> new).
RENAMED_ELSEWHERE: dict[str, str] = {
    "target": "`truth` in mae_vs_target and experiment1 (the true score)",
    "items": "`rater` in cronbach_alpha and mcdonald_omega (the scale items rate the respondents)",
    "groups": "`levels` in rater_expertise and instrument_report (the two levels of `condition` compared)",
    "spread": "`data` in share_below, spread_summary and success_metric_2",
    "method": "`ci_method` in share_below and success_metric_2 (it was the interval method)",
}

#: The only defaults of ``n_boot``: 1000, or 0 where the bootstrap is opt-in (each listed).
N_BOOT_DEFAULT = 1000
N_BOOT_OPT_IN: dict[str, str] = {
    "efa": "bootstrapped loadings refit the rotation: minutes",
    "omega_hierarchical": "each resample refits a bifactor model",
    "ordinal_alpha": "each resample re-estimates a polychoric matrix",
}
#: ``n_boot`` defaults that are neither, with the reason.
N_BOOT_OTHER: dict[str, tuple[int, str]] = {
    "reliability_items": (200, "a bootstrap inside each of n_sim simulated studies"),
}

#: ``n_sim`` counts simulations, whose cost and needed precision depend on what is simulated:
#: its default is stated per kind of simulation.
N_SIM_DEFAULTS: dict[str, tuple[int, str]] = {
    "attempts_needed": (1000, "power: a Monte-Carlo SE of 1.3 points at 80% power"),
    "sd_difference_power": (1000, "power: a Monte-Carlo SE of 1.3 points at 80% power"),
    "reliability_items": (200, "simulated studies per candidate sample size, each bootstrapped"),
    "contingency_test": (10000, "a simulated p-value: Monte-Carlo SE 0.002 at p = 0.05 (R's chisq.test uses B = 2000)"),
    "experiment4": (10000, "as contingency_test"),
    "cluster_permutation_test": (10000, "permutations: Monte-Carlo SE 0.002 at p = 0.05, as contingency_test"),
    "parallel_analysis": (20, "simulated eigenvalue sets, psych::fa.parallel's default"),
}

#: Bootstrap counts beside ``n_boot``, with the reason.
OTHER_BOOT_COUNTS: dict[str, tuple[str, ...]] = {
    "instrument_report": ("factor_boot",),  # the factor bootstrap is opt-in (minutes); n_boot serves the rest
}

#: ``by`` defaults to () (no split) except here.
BY_OTHER: dict[str, str] = {
    "share_below": "None: every key column of item_spread's table but the item",
    "spread_summary": "None: every key column of item_spread's table but the item",
    "success_metric_2": "None: every key column of item_spread's table but the item",
    "cost_summary": "'condition_id': a cost table is per condition unless told otherwise",
    "ppc": "one column or None: BayesResult's posterior predictive check splits by at most one column",
    "plot_ppc": "one column or None, as ppc",
}

#: ``confidence`` is 0.95 except here.
CONFIDENCE_DEFAULT = 0.95
CONFIDENCE_OTHER: dict[str, tuple[float | None, str]] = {
    "cfa": (0.90, "the RMSEA interval is a 90% interval by convention (lavaan, semopy)"),
    "efa": (None, "no interval unless n_boot > 0"),
}

#: Result columns: the row's label, an estimate with its interval, an effect size with its
#: own, a test, the counts. ``metric`` names what a row estimates (ICC3k, Cohen's kappa, F1,
#: G), where results used to say ``estimator``, ``measure`` or ``coefficient``; counts are
#: named after the arguments (reliability said ``n_targets`` and ``n_ratings``).
LABEL_COLUMN = "metric"
ESTIMATE_COLUMNS = ("estimate", "ci_low", "ci_high")
EFFECT_COLUMNS = ("effect_size", "effect_ci_low", "effect_ci_high")
TEST_COLUMNS = ("statistic", "p_value")
COUNT_COLUMNS = ("n_items", "n_raters", "n_scores")
RETIRED_LABELS = ("estimator", "measure", "coefficient")
RETIRED_COUNTS = ("n_targets", "n_ratings")
#: Results that keep another label column, with the reason.
LABEL_OTHER: dict[str, str] = {
    "fairness": "measure names the compared quantity (mean or sd), as its measures= argument does",
}
#: Results whose ``ci_low``/``ci_high`` bound a point not yet called ``estimate`` (function:
#: that column); to be renamed with their consumers (the report's figures and tables).
INTERVAL_OF: dict[str, str] = {
    "item_statistics": "alpha_if_dropped",
}
#: Column names results never use (their replacement in ESTIMATE_COLUMNS / EFFECT_COLUMNS).
RETIRED_COLUMNS = ("lower", "upper", "ci_lower", "ci_upper", "ci_lo", "ci_hi")

F = TypeVar("F", bound=Callable)


def markdown() -> str:
    """The vocabulary as Markdown tables, for the glossary page: the arguments, then old -> new.

    Examples
    --------
    >>> print(markdown().splitlines()[2])
    | `data` | the input DataFrame (long format unless the function says wide); first, positional |
    >>> "| `targets` | `item` |  |" in markdown()
    True
    """
    arguments = ["| argument | meaning |", "| --- | --- |", *(f"| `{k}` | {v} |" for k, v in ARGUMENTS.items())]
    retired = ["| retired | use | except |", "| --- | --- | --- |",
               *(f"| `{k}` | `{v}` | {RENAMED_ELSEWHERE.get(k, '')} |" for k, v in RETIRED.items()),
               *(f"| `{k}` | | {v} |" for k, v in RENAMED_ELSEWHERE.items() if k not in RETIRED)]
    results = ["| result columns | meaning |", "| --- | --- |",
               f"| `{LABEL_COLUMN}` | what the row estimates (ICC3k, Cohen's kappa, F1, G) |",
               f"| `{', '.join(ESTIMATE_COLUMNS)}` | an estimate and its interval at `confidence` |",
               f"| `{', '.join(EFFECT_COLUMNS)}` | an effect size beside a test, and its interval |",
               f"| `{', '.join(TEST_COLUMNS)}` | a test |",
               f"| `{', '.join(COUNT_COLUMNS)}` | what was counted |"]  # fmt: skip
    return "\n".join([*arguments, "", *retired, "", *results]) + "\n"


def renamed(**retired: str) -> Callable[[F], F]:
    """Refuse retired argument names, and arguments after ``data`` given by position.

    Each raises a TypeError that says what to write instead.

    Parameters
    ----------
    **retired : str
        Each retired name and the argument that replaced it in this function (usually as in
        :data:`RETIRED`; a function may map a name to another canonical one, as
        ``method="ci_method"`` where ``method`` used to be the interval method).

    Examples
    --------
    >>> @renamed(targets="item")
    ... def count(data, *, item="item_id"):
    ...     return data[item].nunique()
    >>> count({"item_id": [1, 1, 2]}, targets="item_id")
    Traceback (most recent call last):
    ...
    TypeError: count() no longer takes 'targets': use item='item_id' (hce 0.x vocabulary, see the glossary)
    >>> count({"item_id": [1, 1, 2]}, "item_id")
    Traceback (most recent call last):
    ...
    TypeError: count() takes data by position and the rest by keyword: count(data, item=...)
    """

    def decorate(func: F) -> F:
        parameters = inspect.signature(func).parameters.values()
        n_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
        keywords = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old in retired.keys() & kwargs.keys():
                raise TypeError(f"{func.__name__}() no longer takes {old!r}: use "
                                f"{retired[old]}={kwargs[old]!r} (hce 0.x vocabulary, see the glossary)")  # fmt: skip
            if len(args) > n_positional:
                moved = ", ".join(f"{k}=..." for k in keywords[: len(args) - n_positional])
                first = ", ".join(p.name for p in list(parameters)[:n_positional])
                raise TypeError(f"{func.__name__}() takes {first} by position and the rest by keyword: "
                                f"{func.__name__}({first}, {moved})")  # fmt: skip
            return func(*args, **kwargs)

        wrapper.__renamed__ = dict(retired)  # type: ignore[attr-defined]  # read by the glossary test
        return wrapper  # type: ignore[return-value]

    return decorate
