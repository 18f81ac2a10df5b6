"""What the attempts of a log cost: per condition, per 1,000 attempts, cached and batch shares, latency.

A pure tabulation of the log's own columns (``cost_usd``, ``input_tokens``,
``cached_tokens``, ``output_tokens``, ``latency_s``, ``request_id``): no price table is read
here, so a report shows what the collection logged at the prices of its day.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce._vocabulary import keywords_checked
from hce.errors import HceError

_COUNTS = ("input_tokens", "cached_tokens", "output_tokens")


@keywords_checked
def cost_summary(data: pd.DataFrame, *, by: str | Sequence[str] = "condition_id", total: bool = True) -> pd.DataFrame:
    """Cost and tokens of a log's attempts per group, with a total row.

    Parameters
    ----------
    data : DataFrame
        An attempt log (:func:`hce.read_log`).
    by : str or list of str
        The grouping columns (default ``condition_id``).
    total : bool
        Append a row ``"(all)"`` over every attempt.

    Returns
    -------
    DataFrame
        One row per group: ``attempts``; ``requests`` (distinct ``request_id``, an attempt
        without one its own request); ``priced`` (attempts with a cost); ``cost_usd`` (the
        sum over priced attempts); ``cost_per_attempt`` and ``cost_per_1000_attempts`` (over
        priced attempts); ``input_tokens``, ``cached_tokens``, ``output_tokens`` (sums);
        ``cached_share`` (cached / input tokens); ``batch_share`` (attempts answered through
        the Batch API, which hce logs with usage but no latency); ``latency_mean_s`` and
        ``latency_median_s`` (online attempts).

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": ["a", "a", "b"], "cost_usd": [0.002, 0.004, np.nan],
    ...                     "input_tokens": [2000, 2000, 100], "cached_tokens": [0, 1920, 0],
    ...                     "output_tokens": [40, 44, 2], "latency_s": [1.0, 0.5, np.nan]})
    >>> table = cost_summary(log).set_index("condition_id")
    >>> table["cost_per_1000_attempts"].to_dict()
    {'a': 3.0, 'b': nan, '(all)': 3.0}
    >>> table["cached_share"].round(4).to_dict()  # a: 1920 / 4000; all: 1920 / 4100
    {'a': 0.48, 'b': 0.0, '(all)': 0.4683}
    """
    keys = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [*keys, "cost_usd", *_COUNTS] if c not in data.columns]
    if missing:
        raise HceError(f"cost_summary: the log has no column(s) {missing}; it needs {', '.join([*keys, 'cost_usd', *_COUNTS])}")
    frame = data[[c for c in {*keys, "cost_usd", *_COUNTS, "latency_s", "request_id", "attempt_id"} if c in data]].copy()
    for column in ("cost_usd", *_COUNTS, "latency_s"):
        frame[column] = pd.to_numeric(frame[column], errors="raise") if column in frame else np.nan
    # A row without a request_id was its own request.
    own = pd.Series(np.arange(len(frame)).astype(str), index=frame.index)
    frame["_request"] = frame["request_id"].astype("object").where(frame["request_id"].notna(), own) \
        if "request_id" in frame else own  # fmt: skip
    frame["_batch"] = frame["input_tokens"].notna() & frame["latency_s"].isna()
    parts = [_summarise(group) | dict(zip(keys, name if isinstance(name, tuple) else (name,))) for name, group in
             frame.groupby(keys, sort=True, dropna=False)]  # fmt: skip
    if total:
        parts.append(_summarise(frame) | {key: "(all)" for key in keys})
    table = pd.DataFrame(parts)
    return table[[*keys, *(c for c in table.columns if c not in keys)]]


def _summarise(group: pd.DataFrame) -> dict[str, float]:
    priced = int(group["cost_usd"].notna().sum())
    cost = float(group["cost_usd"].sum()) if priced else np.nan
    tokens = {c: int(group[c].fillna(0).sum()) for c in _COUNTS}
    online = group.loc[~group["_batch"], "latency_s"].dropna()
    return dict(
        attempts=len(group),
        requests=int(group["_request"].nunique()),
        priced=priced,
        cost_usd=cost,
        cost_per_attempt=cost / priced if priced else np.nan,
        cost_per_1000_attempts=1000 * cost / priced if priced else np.nan,
        **tokens,
        cached_share=tokens["cached_tokens"] / tokens["input_tokens"] if tokens["input_tokens"] else np.nan,
        batch_share=float(group["_batch"].mean()) if len(group) else np.nan,
        latency_mean_s=float(online.mean()) if len(online) else np.nan,
        latency_median_s=float(online.median()) if len(online) else np.nan,
    )
