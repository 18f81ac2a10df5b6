"""Token-probability confidence of the study's judges, on the rubric's own score scale.

The one reader of scores from logprobs is :func:`hce.stats.logprob_confidence`; this module
says which tokens of a study reply carry the scores (the rubric's range, the reply format of
the prompt) for the run (Exp 5) and for the report's calibration section.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hce.collect.prompts import REPLY_FORMAT
from hce.rubric import Rubric, load_rubric
from hce.stats import logprob_confidence as token_confidence


def score_range(rubric: Rubric) -> tuple[int, int]:
    """The lowest and highest category score of the rubric (1 and 4 for v5)."""
    return min(c.min_score for c in rubric.categories), max(c.max_score for c in rubric.categories)


def logprob_confidence(log: pd.DataFrame, *, rubric: Rubric | None = None) -> pd.Series:
    """Per attempt, the judge's mean token probability of the category scores it wrote.

    Exp 5's uncertainty method (7.5.7 step 5, "output token probabilities"): the token
    carrying each score and its ``top_logprobs`` give a distribution over the possible
    scores (:func:`hce.stats.logprob_confidence`). The score block closes the
    reply, so its n category scores are the last n score-like tokens (the total line is
    passed over: it is the sum of the categories and carries no uncertainty of its own).
    The attempt's confidence is the mean of the chosen scores' probabilities; for a bare
    total (P1.1) it is that total's probability. Missing when the attempt errored or its
    logprobs hold no score.
    """
    rubric = rubric or load_rubric("v5")
    low, high = score_range(rubric)
    n = len(rubric.categories)
    # The total is score-like only when its range reaches into the categories' (not in v5).
    last = -1 if rubric.total_range[0] <= high else 0
    confidence = pd.Series(np.nan, index=log.index, name="confidence", dtype=float)
    usable = log[~log["error_flag"].astype(bool) & log["logprobs"].notna()]
    for prompt_id, part in usable.groupby("prompt_id", sort=False):
        fmt = REPLY_FORMAT.get(prompt_id)
        if fmt in ("scores", "cot"):
            found = token_confidence(part, scores=range(low, high + 1), occurrence=range(last - n, last), id_columns=())
            confidence[part.index] = found["prob"].groupby(level=0).mean()
        elif fmt == "total":
            totals = range(rubric.total_range[0], rubric.total_range[1] + 1)
            confidence[part.index] = token_confidence(part, scores=totals, id_columns=())["prob"]
    return confidence


