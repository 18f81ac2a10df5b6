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

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
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

#: The rule for defaults. A column argument is required, unless the function reads a table hce
#: makes, whose column names are fixed: then its default is that table's name for the column,
#: the same in every function that reads the table. A function that reads several of these
#: tables defaults to None and takes the name of the table it is given (:func:`default_column`).
#: Each table, the columns that recognise it, and its name for each column argument.
TABLES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    # hce.stats.item_spread: one row per item x condition x criterion
    "item_spread": (("criterion", "n", "n_errors", "mean", "sd"), {"item": "item_id", "condition": "condition_id", "score": "sd"}),
    # hce.stats.mae_vs_target: one row per item x condition
    "mae_vs_target": (("target", "mean_score", "mae"), {"item": "item_id", "condition": "condition_id", "score": "mae"}),
    # hce.read_log: the attempt log (design.md, "The attempt log")
    "attempt log": (("item_id", "attempt"), {"item": "item_id", "condition": "condition_id", "score": "total",
                                              "truth": "target_total"}),
}
#: Defaults older than the rule, kept because callers rely on them: the function, its argument
#: and the table whose name the default is (a table of another tool, not one hce makes).
DEFAULTS_KEPT: dict[tuple[str, str], str] = {
    **{(f, "item"): "EditJudge's clinician responses (message_id)" for f in
       ("annotator_pairs", "inter_annotator_predictability", "theme_inclusion_agreement")},
    **{(f, "item"): "EditJudge's draft pairs (pair_id)" for f in ("edit_counts_table", "sentence_table", "theme_f1")},
    **{(f, "rater"): "EditJudge's annotators" for f in ("annotator_pairs", "theme_inclusion_agreement")},
    ("discrepancy", "item"): "the Adaptive Precise Boolean study's participants",
    ("adaptive_filter_agreement", "item"): "the Adaptive Precise Boolean study's queries",
    ("adaptive_filter_agreement", "rater"): "the Adaptive Precise Boolean study's raters",
    **{(f, "score"): "a boolean judge's verdict column (hce.log)" for f in
       ("golden_agreement", "majority_vote", "pass_rates", "rogan_gladen", "uncertain_routing", "vote_stability")},
    **{(f, "truth"): "a golden set's verdicts" for f in ("golden_agreement", "rogan_gladen")},
    **{(f, "score"): "a normalised judge score" for f in ("binarize_likert", "discrepancy", "mean_score_ensemble",
                                                          "normalize_likert")},
    **{(f, "score"): "prediction-powered inference's judge scores" for f in ("calibrate_to_humans", "ppi_budget", "ppi_compare", "ppi_mean")},
    **{(f, "truth"): "prediction-powered inference's human scores" for f in ("calibrate_to_humans", "ppi_budget", "ppi_compare", "ppi_mean")},
    ("probe_effect", "rater"): "the attempt log's model column (the judge whose family the author probe compares)",
    **{(f, "truth"): "a forecast table's outcome (calibration)" for f in
       ("brier_score", "calibration_metrics", "expected_calibration_error", "reliability_table")},
    **{(f, "condition"): "the attempt log's model column" for f in ("cluster_permutation_test", "code_frequencies",
                                                                     "contingency_test", "experiment3",
                                                                     "experiment4")},
    **{(f, "condition"): "the attempt log's prompt column" for f in ("experiment1", "experiment2")},
}


def default_column(data: object, argument: str) -> str:
    """The name the table ``data`` gives column argument ``argument`` (:data:`TABLES`).

    Parameters
    ----------
    data : DataFrame
        A table hce makes.
    argument : str
        A column argument (``item``, ``condition``, ``score``, ``truth``).

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> default_column(pd.DataFrame(columns=["item_id", "criterion", "n", "n_errors", "mean", "sd"]), "score")
    'sd'
    >>> default_column(pd.DataFrame(columns=["item_id", "attempt", "total"]), "score")
    'total'
    """
    columns = set(getattr(data, "columns", ()))
    for table, (marks, names) in TABLES.items():
        if set(marks) <= columns and argument in names:
            return names[argument]
    known = ", ".join(f"{t} ({names[argument]!r})" for t, (_, names) in TABLES.items() if argument in names)
    raise TypeError(f"{argument}= is required: the data is none of the tables whose {argument} column hce knows: {known}")


#: The rule for results: a statistic returns a tidy DataFrame; a model or a multi-table analysis
#: returns a result object (its tables are DataFrames, :data:`RESULT_CLASSES`); a per-row recoding
#: returns a Series aligned with the data. The exceptions, with the reason (tests/test_vocabulary.py).
RESULT_CLASSES = ("AnalysisResult", "BayesResult", "CFAResult", "ClmmResult", "FactorResult", "GlmerResult",
                  "InstrumentReport", "LmerResult", "OmegaResult", "ParallelResult", "VarianceComponents")
ROW_RECODERS = ("agrees_with_mode", "agrees_with_repeat", "binarize_likert", "normalize_likert")
RETURNS_OTHER: dict[str, str] = {
    "p_adjust": "an array of adjusted p-values, as R's p.adjust and statsmodels' multipletests",
    "count_sentences": "an array of counts, one per text",
    "split_sentences": "the sentences of one text",
    "edit_counts": "the counts of one reference/draft pair (edit_counts_table makes the frame)",
    "edit_counts_from_matches": "as edit_counts",
    "parse_formula": "the formula layer's objects, under lmer and bayes_*",
    "build_design": "the formula layer's objects, under lmer and bayes_*",
    "control_limits": "the settings of one control chart (its limit for the asked ARL)",
    "model_family": "the family name of one model name",
}

#: Argument names users bring from pingouin and statsmodels, and hce's word for each: a typo
#: message suggests it (``friedman(dv=...)``: did you mean ``score``?).
OUTSIDE: dict[str, str] = {
    "dv": "score",
    "between": "condition",
    "padjust": "p_adjust_method",
    "p_adjust": "p_adjust_method",
    "ci": "confidence",
    "conf_level": "confidence",
    "seed": "random_state",
    "nboot": "n_boot",
    "n_resamples": "n_boot",
    "tail": "alternative",
    "nan_policy": "error",
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

#: A retired word taken up again by one function in another sense than the column it named
#: (function, word): the sense. ``judge`` names a column no more, but the alt-test's judge is a
#: rater, the value of ``rater`` being tested, as in the authors' ``alt_test(llm_annotations, ...)``.
REUSED: dict[tuple[str, str], str] = {
    ("alt_test", "judge"): "the rater value(s) tested as the judge, not a column",
    ("solve", "target"): "the G or Phi coefficient a D study must reach (a number), not a column",
}

#: ``random_state`` defaults to None except here, with the reason.
RANDOM_STATE_OTHER: dict[str, tuple[int, str]] = {
    "simulated_log": (0, "example data: the same log on every call, so examples and guides print what they say"),
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
    "kl_difference": (2000, "H1c's verdict reads a percentile limit: 2000 resamples keep its Monte Carlo error near "
                            "0.03 bootstrap SDs (the limits, not a standard error, decide)"),
    "experiment1": (2000, "its n_boot is kl_difference's (H1c)"),
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
    """The vocabulary as Markdown tables, for the glossary page: the arguments, old -> new, the
    result columns and the tables whose column names give the defaults (:data:`TABLES`).

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
    defaults = ["| table hce makes | recognised by its columns | default column names |", "| --- | --- | --- |",
                *(f"| {t} | {', '.join(f'`{c}`' for c in marks)} | {', '.join(f'{a}=`{c}`' for a, c in names.items())} |"
                  for t, (marks, names) in TABLES.items())]  # fmt: skip
    return "\n".join([*arguments, "", *retired, "", *results, "", *defaults]) + "\n"


def check_keywords(name: str, parameters: Mapping[str, inspect.Parameter], given: Iterable[str]) -> None:
    """Refuse a keyword ``name()`` does not take, naming the function and the closest valid keyword.

    The closest keyword is the one hce uses for an outside name (:data:`OUTSIDE`, :data:`RETIRED`),
    else the nearest spelling; without one, the message lists every keyword.

    Parameters
    ----------
    name : str
        The function, as the message names it.
    parameters : mapping of str to inspect.Parameter
        Its signature's parameters.
    given : iterable of str
        The keywords of the call.

    Examples
    --------
    >>> def friedman(data, *, item="item_id", score="sd"): ...
    >>> check_keywords("friedman", inspect.signature(friedman).parameters, ["dv"])
    Traceback (most recent call last):
    ...
    TypeError: friedman() got an unexpected keyword argument 'dv'; did you mean score=? (it takes data, item, score)
    """
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return
    for word in given:
        if word in parameters:
            continue
        valid = [n for n, p in parameters.items() if p.kind is not p.POSITIONAL_ONLY]
        guess = next((g for g in (OUTSIDE.get(word), RETIRED.get(word)) if g in parameters), None)
        guess = guess or next(iter(difflib.get_close_matches(word, valid, n=1, cutoff=0.6)), None)
        hint = f"; did you mean {guess}=?" if guess else ""
        raise TypeError(f"{name}() got an unexpected keyword argument {word!r}{hint} (it takes {', '.join(valid)})")


def keywords_checked(func: F) -> F:
    """Make a typo in a keyword of ``func`` name ``func`` and the keyword meant (:func:`check_keywords`).

    :func:`renamed` and the statistics' frame check do this already; this is for the rest.

    Parameters
    ----------
    func : callable

    Returns
    -------
    callable
        ``func``, wrapped.

    Examples
    --------
    >>> @keywords_checked
    ... def share(values, *, confidence=0.95):
    ...     return confidence
    >>> share([1], confidense=0.9)
    Traceback (most recent call last):
    ...
    TypeError: share() got an unexpected keyword argument 'confidense'; did you mean confidence=? (it takes values, confidence)
    """
    parameters = inspect.signature(func).parameters
    if inspect.iscoroutinefunction(func):  # stays a coroutine function (hce.collect.run_async): awaited as before

        @functools.wraps(func)
        async def waiting(*args, **kwargs):
            check_keywords(func.__name__, parameters, kwargs)
            return await func(*args, **kwargs)

        return waiting  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        check_keywords(func.__name__, parameters, kwargs)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def keywords_of(target: Callable) -> Callable[[F], F]:
    """As :func:`keywords_checked`, for a function that passes its ``**kwargs`` on to ``target``.

    A typo is refused when the function is called, naming it and the keyword meant, rather than
    by ``target`` later (inside an event loop, say).

    Parameters
    ----------
    target : callable
        The function that receives the ``**kwargs``.

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> async def fetch_async(url, *, timeout=10.0): ...
    >>> @keywords_of(fetch_async)
    ... def fetch(url, **kwargs):
    ...     return kwargs
    >>> fetch("x", timeout=1.0)
    {'timeout': 1.0}
    >>> fetch("x", timout=1.0)
    Traceback (most recent call last):
    ...
    TypeError: fetch() got an unexpected keyword argument 'timout'; did you mean timeout=? (it takes url, timeout)
    """

    def decorate(func: F) -> F:
        own = {n: p for n, p in inspect.signature(func).parameters.items() if p.kind is not p.VAR_KEYWORD}
        parameters = {**own, **inspect.signature(target).parameters}

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            check_keywords(func.__name__, parameters, kwargs)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


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
        signature = inspect.signature(func)
        parameters = signature.parameters.values()
        n_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
        keywords = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old in retired.keys() & kwargs.keys():
                raise TypeError(f"{func.__name__}() no longer takes {old!r}: use "
                                f"{retired[old]}={kwargs[old]!r} (hce 0.x vocabulary, see the glossary)")  # fmt: skip
            check_keywords(func.__name__, signature.parameters, kwargs)
            if len(args) > n_positional:
                moved = ", ".join(f"{k}=..." for k in keywords[: len(args) - n_positional])
                first = ", ".join(p.name for p in list(parameters)[:n_positional])
                raise TypeError(f"{func.__name__}() takes {first} by position and the rest by keyword: "
                                f"{func.__name__}({first}, {moved})")  # fmt: skip
            return func(*args, **kwargs)

        wrapper.__renamed__ = dict(retired)  # type: ignore[attr-defined]  # read by the glossary test
        return wrapper  # type: ignore[return-value]

    return decorate
