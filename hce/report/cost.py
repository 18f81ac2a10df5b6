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


#: The log's timing columns: how long a call took, which a simulated call says nothing about.
TIMINGS = ("latency_s", "latency_last_s")
#: The tables' latency columns (:func:`cost_summary`).
LATENCY_COLUMNS = ("latency_mean_s", "latency_median_s")


def without_simulated_timings(log: pd.DataFrame, fingerprint: str) -> tuple[pd.DataFrame, list[str]]:
    """The log with the timings of simulated calls removed, and a note saying so (none when no call was simulated).

    A call answered by hce's simulator (its ``system_fingerprint`` starts with ``fingerprint``)
    took the simulator's time, not a model's: reported beside the models' names it would read
    as their latency. Its ``latency_s`` and ``latency_last_s`` become NaN (real calls keep
    theirs), so no table or sentence reports them as a result.

    Examples
    --------
    >>> log = pd.DataFrame({"system_fingerprint": ["fp_hce_sim_0", "fp_abc"], "latency_s": [0.1, 1.4]})
    >>> kept, notes = without_simulated_timings(log, "fp_hce_sim_")
    >>> kept["latency_s"].tolist(), len(notes)
    ([nan, 1.4], 1)
    """
    if "system_fingerprint" not in log:
        return log, []
    simulated = log["system_fingerprint"].astype("string").str.startswith(fingerprint).fillna(False).to_numpy(bool)
    present = [c for c in TIMINGS if c in log]
    if not simulated.any() or not present:
        return log, []
    log = log.copy()
    log.loc[simulated, present] = np.nan
    return log, [f"Latency of the {int(simulated.sum()):,} simulated calls is left out: the simulator answered them, so their "
                 "timings describe the simulator, not a model."]


def without_empty_latency(table: pd.DataFrame) -> pd.DataFrame:
    """A cost table without latency columns that hold no value (every call simulated or batched)."""
    return table.drop(columns=[c for c in LATENCY_COLUMNS if c in table and table[c].isna().all()])
