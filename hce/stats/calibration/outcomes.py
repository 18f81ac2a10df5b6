"""What a judge's confidence is checked against: agreement of each attempt's score with its
item's mode (self-consistency) or with an independent repeat of the same item and condition
(the event a sampling probability is calibrated for by construction).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce._checks import numeric_column, require_columns
from hce.stats._resample import as_generator
from hce.stats._validate import statistic
from hce.stats.calibration.confidence import _group_codes, vote_table


@statistic(keys=("item",), labels=("score",))
def agrees_with_mode(data: pd.DataFrame, *, item: str = "item_id", score: str = "total") -> pd.Series:
    """Boolean Series: does each attempt's score equal its item's modal score (smallest mode)?

    The outcome for calibrating attempt-level confidence against self-consistency.
    Missing scores give ``<NA>``.

    Parameters
    ----------
    data : DataFrame
        Attempt log, several attempts per item.
    item : str, default "item_id"
        Item column.
    score : str, default "total"
        Score column.

    Returns
    -------
    Series
        Nullable boolean aligned with ``data``.

    %(self_consistency_reference)s

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item_id": [1, 1, 1], "total": [3, 3, 4]})
    >>> agrees_with_mode(log).tolist()
    [True, True, False]
    """
    votes = vote_table(data, item=item, score=score, by=(), levels=None)
    modal = data[[item]].merge(votes[[item, "modal_score"]], on=item, how="left")["modal_score"]
    values = numeric_column(data, score)
    result = pd.Series(values == modal.to_numpy(), index=data.index, dtype="boolean")
    result[np.isnan(values)] = pd.NA
    return result.rename("agrees_with_mode")


@statistic(keys=("item", "condition"), labels=("score",))
def agrees_with_repeat(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str | Sequence[str] | None = "condition_id",
    score: str = "total",
    random_state: int | np.random.Generator | None = None,
) -> pd.Series:
    """Boolean Series: does each attempt's score equal that of another attempt of the same item and condition?

    The outcome a sampling probability is calibrated for by construction: if an attempt
    wrote score ``s`` with probability ``p_s`` at the temperature used, an independent
    repeat writes ``s`` again with probability ``p_s``, so ``prob`` of
    :func:`logprob_confidence` (given the temperature) has ECE near 0 against this outcome.
    Agreement with the item's mode (:func:`agrees_with_mode`) is a different event: at
    temperatures near 1 a calibrated probability need not match it.

    Parameters
    ----------
    data : DataFrame
        Attempt log, one row per attempt; missing scores are left out of the pairing.
    item : str, default "item_id"
        Item identifier column.
    condition : str, sequence of str, or None, default "condition_id"
        Condition column(s) (prompt, model, temperature, ... as one id); None: the item alone.
    score : str
        Score column (a criterion, ``total``, or a 0/1 verdict).
    %(random_state)s

    Returns
    -------
    Series of boolean
        Same index as ``data``, named ``agrees_with_repeat``; ``<NA>`` where the score is
        missing or the item x condition has no other scored attempt.

    Notes
    -----
    The pairing: within each item x condition, the scored attempts are put in a random
    order and each is compared with the next, the last with the first (a cycle). Every
    attempt is thus compared once and serves once as another's repeat, and its partner is
    a different attempt, independent of it when the attempts are independent draws. With
    two attempts the two comparisons are the same pair.

    %(self_consistency_reference)s

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item_id": [1, 1, 2, 2, 3], "condition_id": "a", "total": [3, 3, 2, 4, 5]})
    >>> agrees_with_repeat(log, random_state=0).tolist()
    [True, True, False, False, <NA>]
    """
    conditions = [] if condition is None else [condition] if isinstance(condition, str) else list(condition)
    keys = [item, *conditions]
    require_columns(data, [*keys, score])
    values = numeric_column(data, score)
    kept = np.flatnonzero(~np.isnan(values))
    result = pd.Series(pd.NA, index=data.index, dtype="boolean", name="agrees_with_repeat")
    if kept.size == 0:
        return result
    codes, _ = _group_codes(data.iloc[kept], keys)
    rng = as_generator(random_state)
    order = np.lexsort((rng.random(kept.size), codes))  # by group, randomly within it
    sorted_codes = codes[order]
    start = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    size = np.diff(np.r_[start, kept.size])
    first = np.repeat(start, size)
    length = np.repeat(size, size)
    position = np.arange(kept.size) - first
    partner = order[first + (position + 1) % length]
    agree = values[kept[order]] == values[kept[partner]]
    paired = length > 1
    result.iloc[kept[order[paired]]] = agree[paired]
    return result
