"""Token-probability confidence of the study's judges, on the rubric's own score scale.

The one reader of scores from logprobs is :func:`hce.stats.logprob_confidence`; this module
says which tokens of a study reply carry the scores (the rubric's range, the reply format of
the prompt) for the run (Exp 5) and for the report's calibration section.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.collect.design.prompts import REPLY_FORMAT
from hce.sim import SIM_FINGERPRINT, SimJudge
from hce.rubric import Rubric, load_rubric
from hce.stats import logprob_confidence as token_confidence

#: What a real log's logprobs are assumed to be the log of when the study does not say
#: (``experiments.exp5.logprobs_are``): raw, OpenAI's behaviour (:mod:`hce.sim`, "Calibration truth").
DEFAULT_LOGPROBS_ARE = "raw"


def logprobs_behaviour(log: pd.DataFrame, setting: str | None = None) -> str:
    """What the log's logprobs are the log of: the study's setting; else, for a log of the simulated
    judge, its default family behaviour for the log's models (:data:`hce.sim.families.FAMILIES`);
    else :data:`DEFAULT_LOGPROBS_ARE`.

    Examples
    --------
    >>> logprobs_behaviour(pd.DataFrame({"model": ["gpt-4o"]}), "sampled")
    'sampled'
    >>> logprobs_behaviour(pd.DataFrame({"model": ["gpt-4o"], "system_fingerprint": ["fp_hce_sim_0"]}))
    'raw'
    """
    if setting is not None:
        return setting
    simulated = "system_fingerprint" in log and log["system_fingerprint"].astype(str).str.startswith(SIM_FINGERPRINT).any()
    if simulated and "model" in log:
        behaviours = {SimJudge().family(m).logprobs_are for m in log["model"].dropna().astype(str).unique()}
        if len(behaviours) == 1:
            return behaviours.pop()
    return DEFAULT_LOGPROBS_ARE


def score_range(rubric: Rubric) -> tuple[int, int]:
    """The lowest and highest category score of the rubric (1 and 4 for v5)."""
    return min(c.min_score for c in rubric.categories), max(c.max_score for c in rubric.categories)


@keywords_checked
def logprob_confidence(log: pd.DataFrame, *, rubric: Rubric | None = None, logprobs_are: str | None = None) -> pd.Series:
    """Per attempt, the judge's mean probability of the category scores it wrote, at the temperature used.

    Exp 5's uncertainty method (7.5.7 step 5, "output token probabilities"): the token
    carrying each score and its ``top_logprobs`` give a distribution over the possible
    scores (:func:`hce.stats.logprob_confidence`). The score block closes the
    reply, so its n category scores are the last n score-like tokens (the total line is
    passed over: it is the sum of the categories and carries no uncertainty of its own).
    The attempt's confidence is the mean of the chosen scores' probabilities; for a bare
    total (P1.1) it is that total's probability. Missing when the attempt errored or its
    logprobs hold no score. Each probability is that of the distribution the score was
    sampled from at the attempt's ``temperature`` (the chance a repeat writes it again),
    given what the logprobs are (``logprobs_are``, default ``logprobs_behaviour``).

    Parameters
    ----------
    log : DataFrame
        Attempt log with ``logprobs``, ``prompt_id``, ``error_flag`` and (for the
        adjustment) ``temperature``.
    rubric : Rubric, optional
        The rubric judged with (default Rubric v5.0): its score range and categories.
    logprobs_are : {"raw", "sampled", "raw_at_zero"}, optional
        What the logprobs are the log of (default ``logprobs_behaviour`` of the log).

    Returns
    -------
    Series
        ``confidence`` aligned with ``log``; NaN where none can be read.

    Examples
    --------
    On a log collected with ``logprobs: true`` (Experiment 5's does):

    >>> import hce
    >>> from hce.study import logprob_confidence
    >>> log = hce.read_log("my_study/exp5.jsonl")  # doctest: +SKIP
    >>> log["confidence"] = logprob_confidence(log)  # doctest: +SKIP
    """
    rubric = rubric or load_rubric("v5")
    low, high = score_range(rubric)
    n = len(rubric.categories)
    # The total is score-like only when its range reaches into the categories' (not in v5).
    last = -1 if rubric.total_range[0] <= high else 0
    confidence = pd.Series(np.nan, index=log.index, name="confidence", dtype=float)
    usable = log[~log["error_flag"].astype(bool) & log["logprobs"].notna()]
    sampling = {"temperature": "temperature", "logprobs_are": logprobs_behaviour(log, logprobs_are)} if "temperature" in log else {}
    for prompt_id, part in usable.groupby("prompt_id", sort=False):
        fmt = REPLY_FORMAT.get(prompt_id)
        if fmt in ("scores", "cot"):
            found = token_confidence(part, scores=range(low, high + 1), occurrence=range(last - n, last), id_columns=(), **sampling)
            confidence[part.index] = found["prob"].groupby(level=0).mean()
        elif fmt == "total":
            totals = range(rubric.total_range[0], rubric.total_range[1] + 1)
            confidence[part.index] = token_confidence(part, scores=totals, id_columns=(), **sampling)["prob"]
    return confidence


