"""Judge confidence and its calibration: confidences from logprobs, votes or words; ECE, MCE,
Brier score with the Murphy decomposition, log loss, reliability tables and diagrams.

Confidence functions turn an attempt log into one tidy table with a ``prob`` column (the
judge's probability that its own prediction is right, or of the event). Calibration
functions compare ``prob`` with a 0/1 ``outcome`` column (golden label, agreement with a
human score, agreement with the modal score): see :func:`agrees_with_mode`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._intervals import proportion_ci
from hce.stats._logprobs import ScoreTokens, read_logprobs, score_map, score_tokens
from hce.stats._resample import (
    bootstrap_row_sums,
    bootstrap_sums,
    check_n_boot,
    percentile_interval,
    unit_sums,
)
from hce.stats.effects import CorrelationMethod, correlation
from hce.stats._validate import reads_frame, warn_undefined_sd

Strategy = Literal["uniform", "quantile", "unique"]
STRATEGIES = ("uniform", "quantile", "unique")
ID_COLUMNS = ("item_id", "condition_id", "prompt_id", "model", "attempt")
VERBAL_DEFAULT = {"high": 0.9, "medium": 0.7, "low": 0.5}
_CELLS = 5  # per bin: n, sum p, sum y, sum p^2, sum p*y


# ----------------------------------------------------------------------------- confidence
@reads_frame(texts=("logprobs",))
def logprob_confidence(
    data: pd.DataFrame,
    *,
    logprobs: str = "logprobs",
    scores: Sequence | Mapping = (1, 2, 3, 4),
    occurrence: int | Sequence[int] = -1,
    id_columns: Sequence[str] = ID_COLUMNS,
) -> pd.DataFrame:
    """Score probabilities from token logprobs, one row per attempt (and occurrence).

    Parameters
    ----------
    data : DataFrame
        Attempt log with a ``logprobs`` column: per attempt a list of token entries as the
        OpenAI API returns them (``token``, ``logprob``, ``top_logprobs`` = list of
        ``{token, logprob}``), a dict with that list under ``"content"``, or either as JSON
        text (as the attempt log stores them).
    logprobs : str
        Column holding the logprob lists.
    scores : sequence of numbers or mapping token -> value
        The score scale. Numbers are matched against tokens as text (``3`` matches ``"3"``
        and ``" 3"``); a mapping such as ``{"true": 1, "false": 0}`` serves boolean judges.
    occurrence : int or sequence of int
        Which score-like token of the reply holds the score: ``-1`` (default) the last,
        ``0`` the first, ``k`` the k-th. A sequence (e.g. ``range(-5, 0)`` for a score
        block of five criteria that closes the reply) reads each from one parse and
        returns them stacked with an ``occurrence`` column.
    id_columns : sequence of str
        Identifier columns copied to the output when present.

    Returns
    -------
    DataFrame
        Same index as ``data`` (repeated per occurrence when several are asked for).
        Identifier columns; ``prob_<s>`` for each score ``s``: its
        probability renormalised over the score tokens found in ``top_logprobs``;
        ``chosen_score``: the sampled score; ``prob``: probability of the chosen score;
        ``expected_score``: sum of s * prob_s; ``entropy``: Shannon entropy in nats;
        ``coverage``: probability mass of score tokens before renormalising (low values
        mean ``top_logprobs`` was too short); ``source``: ``"logprobs"``; ``error_flag``:
        True where no score token was found (other columns NaN).

    Notes
    -----
    With ``q_s = sum over tokens t mapping to s of exp(logprob_t)``, ``coverage = sum q_s``
    and ``prob_s = q_s / coverage``; ``entropy = -sum prob_s log prob_s``. JSON text is
    parsed by Arrow's reader and every step after it is vectorised: a million attempts
    take a few seconds (``python bench/calibration.py``).

    References
    ----------
    .. [1] Kadavath, S. et al. (2022). Language models (mostly) know what they know.
       arXiv:2207.05221.

    Examples
    --------
    >>> import pandas as pd
    >>> entry = {"token": "3", "logprob": -0.105,
    ...          "top_logprobs": [{"token": "3", "logprob": -0.105},
    ...                           {"token": "4", "logprob": -2.303}]}
    >>> out = logprob_confidence(pd.DataFrame({"logprobs": [[entry]]}))
    >>> round(float(out.loc[0, "prob"]), 3), float(out.loc[0, "chosen_score"])
    (0.9, 3.0)
    """
    require_columns(data, [logprobs])
    occurrences = [occurrence] if isinstance(occurrence, (int, np.integer)) else [int(k) for k in occurrence]
    levels, found = score_tokens(read_logprobs(data[logprobs].to_numpy()), score_map(scores))
    ids = data[[c for c in id_columns if c in data.columns]]
    frames = [_logprob_frame(ids, levels, found, k) for k in occurrences]
    if isinstance(occurrence, (int, np.integer)):
        return frames[0]
    for frame, k in zip(frames, occurrences, strict=True):
        frame.insert(len(ids.columns), "occurrence", k)
    return pd.concat(frames)


def _logprob_frame(ids: pd.DataFrame, levels: np.ndarray, found: ScoreTokens, occurrence: int) -> pd.DataFrame:
    n = len(ids)
    pick = found.select(occurrence)
    hit = pick >= 0
    mass = np.full((n, len(levels)), np.nan)
    mass[hit] = found.mass[pick[hit]]
    coverage = mass.sum(axis=1)
    hit &= coverage > 0
    coverage[~hit] = np.nan
    chosen_index = np.full(n, -1)
    chosen_index[hit] = found.level[pick[hit]]
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = mass / coverage[:, None]
        logs = np.where(probs > 0, np.log(np.where(probs > 0, probs, 1.0)), 0.0)
    entropy = np.where(hit, -(probs * logs).sum(axis=1), np.nan)
    out = ids.copy()
    for j, level in enumerate(levels):
        out[f"prob_{_label(level)}"] = probs[:, j]
    out["chosen_score"] = np.where(hit, levels[np.maximum(chosen_index, 0)], np.nan)
    out["prob"] = np.where(hit, probs[np.arange(n), np.maximum(chosen_index, 0)], np.nan)
    out["expected_score"] = probs @ levels
    out["entropy"] = entropy
    out["coverage"] = coverage
    out["source"] = "logprobs"
    out["error_flag"] = ~hit
    return out


def _label(level: float) -> str:
    return str(int(level)) if float(level).is_integer() else str(level)


def _group_codes(data: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Integer code per row and the frame of distinct key combinations, in code order."""
    grouped = data.groupby(keys, sort=True, dropna=False, observed=True)
    return grouped.ngroup().to_numpy(), grouped.size().index.to_frame(index=False)


def _scale_codes(
    data: pd.DataFrame, score: str, values: np.ndarray, keep: np.ndarray, levels: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``levels`` and the position of each kept score among them."""
    scale = np.unique(np.asarray(list(levels), dtype=float))
    if scale.size == 0 or np.isnan(scale).any():
        raise DataError(f"levels={list(levels)!r} must be a non-empty sequence of numbers")
    outside = keep & ~np.isin(values, scale)
    if outside.any():
        row = data.index[np.argmax(outside)]
        raise DataError(f"column {score!r} row {row!r} holds {values[np.argmax(outside)]:g}, "
                        f"not one of levels {[_label(s) for s in scale]}")  # fmt: skip
    return scale, np.searchsorted(scale, values[keep])


@reads_frame(keys=("item", "by"), labels=("score",))
def vote_confidence(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "total",
    by: Sequence[str] = (),
    levels: Sequence[float] | None = None,
) -> pd.DataFrame:
    """Confidence from repeated attempts: agreement with the modal score, one row per item.

    Parameters
    ----------
    data : DataFrame
        Attempt log, one row per attempt; missing scores are ignored.
    item : str
        Item identifier column.
    score : str
        Score column (a criterion, ``total``, or a 0/1 verdict).
    by : sequence of str
        Further grouping columns (e.g. ``["condition_id"]``).
    levels : sequence of float, optional
        Every score the scale allows (e.g. ``range(1, 5)``, or ``range(5, 21)`` for
        totals). Each level then gets a ``prob_<s>`` column, 0 where no attempt chose it,
        so tables from different runs have the same columns. Default None: columns for the
        scores observed anywhere in ``data`` only.

    Returns
    -------
    DataFrame
        One row per item (x ``by``): the keys; ``n``: attempts with a score;
        ``modal_score``: the most frequent score (the smallest of tied modes);
        ``n_modes``: number of tied modes; ``prob``: share of attempts giving the modal
        score; ``prob_<s>``: empirical share of each score ``s`` (each of ``levels`` when
        given, in increasing order, else each score observed in ``data``);
        ``expected_score``: mean score; ``sd``: standard deviation (ddof=1);
        ``entropy``: entropy of the empirical distribution (nats); ``source``: ``"votes"``.

    Raises
    ------
    DataError
        When ``levels`` is given and a score outside it appears (the row and value are named).

    Notes
    -----
    ``prob = max_s n_s / n``: the self-consistency confidence of Wang et al. (2023).

    References
    ----------
    .. [1] Wang, X. et al. (2023). Self-consistency improves chain of thought reasoning in
       language models. ICLR.

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item_id": [1, 1, 1, 1], "total": [12, 12, 13, 12]})
    >>> vote_confidence(log)[["modal_score", "prob"]].to_dict("records")
    [{'modal_score': 12.0, 'prob': 0.75}]
    >>> list(vote_confidence(log, levels=range(11, 15)).filter(like="prob_"))
    ['prob_11', 'prob_12', 'prob_13', 'prob_14']
    """
    out = vote_table(data, item=item, score=score, by=by, levels=levels)
    warn_undefined_sd(out["n"], "vote_confidence")
    return out


def vote_table(
    data: pd.DataFrame, *, item: str, score: str, by: Sequence[str], levels: Sequence[float] | None
) -> pd.DataFrame:
    """The table of :func:`vote_confidence`, for callers that need its shares, not its SDs."""
    keys = [*by, item]
    require_columns(data, [*keys, score])
    values = numeric_column(data, score)
    keep = ~np.isnan(values)
    sub = data.loc[keep, keys]
    if sub.empty:
        raise DataError(f"column {score!r} has no non-missing scores")
    codes, groups = _group_codes(sub, keys)
    if levels is None:
        levels, level_codes = np.unique(values[keep], return_inverse=True)
    else:
        levels, level_codes = _scale_codes(data, score, values, keep, levels)
    counts = np.bincount(
        codes * len(levels) + level_codes, minlength=len(groups) * len(levels)
    ).reshape(len(groups), len(levels))
    n = counts.sum(axis=1)
    top = counts.max(axis=1)
    shares = counts / n[:, None]
    x = values[keep]
    sums = np.bincount(codes, weights=x)
    mean = sums / n
    ss = np.bincount(codes, weights=(x - mean[codes]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(ss / (n - 1))
        logs = np.where(shares > 0, np.log(np.where(shares > 0, shares, 1.0)), 0.0)
    out = groups.copy()
    out["n"] = n
    out["modal_score"] = levels[np.argmax(counts, axis=1)]
    out["n_modes"] = (counts == top[:, None]).sum(axis=1)
    out["prob"] = top / n
    for j, level in enumerate(levels):
        out[f"prob_{_label(level)}"] = shares[:, j]
    out["expected_score"] = mean
    out["sd"] = np.where(n > 1, sd, np.nan)
    out["entropy"] = -(shares * logs).sum(axis=1)
    out["source"] = "votes"
    return out


@reads_frame(texts=("verbal",))
def verbal_confidence(
    data: pd.DataFrame,
    *,
    verbal: str = "confidence_level",
    mapping: Mapping[str, float] | None = None,
    id_columns: Sequence[str] = ID_COLUMNS,
) -> pd.DataFrame:
    """Numeric confidence from a verbalised ``high``/``medium``/``low`` field, per attempt.

    Parameters
    ----------
    data : DataFrame
        Attempt log of a boolean judge (seed 001 schema).
    verbal : str
        Column with the verbal confidence (the log's ``confidence_level``); case and
        surrounding spaces are ignored.
    mapping : mapping, optional
        Level -> probability. Default ``{"high": 0.9, "medium": 0.7, "low": 0.5}``, a
        convention, not an estimate: the reliability table of the result shows what each
        level is actually worth.
    id_columns : sequence of str
        Identifier columns copied to the output when present.

    Returns
    -------
    DataFrame
        Same index as ``data``: identifier columns; ``level``: the normalised word;
        ``prob``: its mapped probability (NaN when missing); ``source``: ``"verbal"``.

    Raises
    ------
    DataError
        When a non-missing value is not a key of ``mapping`` (the row is named).

    Examples
    --------
    >>> import pandas as pd
    >>> verbal_confidence(pd.DataFrame({"confidence_level": ["High", "low"]}))["prob"].tolist()
    [0.9, 0.5]
    """
    require_columns(data, [verbal])
    mapping = {str(k).lower(): float(v) for k, v in (mapping or VERBAL_DEFAULT).items()}
    level = data[verbal].astype("string").str.strip().str.lower()
    bad = level.notna() & ~level.isin(list(mapping))
    if bad.any():
        row = bad.idxmax()
        raise DataError(
            f"column {verbal!r} row {row!r} holds {data.loc[row, verbal]!r}; "
            f"expected one of {sorted(mapping)}"
        )
    out = data[[c for c in id_columns if c in data.columns]].copy()
    out["level"] = level
    out["prob"] = level.map(mapping).astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    out["source"] = "verbal"
    return out


@reads_frame(keys=("item", "by"), optional=("score", "numeric"))
def confidence_table(
    data: pd.DataFrame,
    *,
    source: Literal["auto", "logprobs", "numeric", "verbal", "votes"] = "auto",
    item: str = "item_id",
    score: str = "total",
    logprobs: str = "logprobs",
    numeric: str = "confidence",
    verbal: str = "confidence_level",
    scores: Sequence | Mapping = (1, 2, 3, 4),
    level: Literal["attempt", "item"] = "attempt",
    by: Sequence[str] = (),
    levels: Sequence[float] | None = None,
) -> pd.DataFrame:
    """One tidy table of confidences from whichever source the log holds.

    Parameters
    ----------
    data : DataFrame
        Attempt log.
    source : {"auto", "logprobs", "numeric", "verbal", "votes"}
        ``"auto"`` (default) takes the first source with any value: token logprobs, the
        log's numeric ``confidence`` (0-1), its verbal ``confidence_level``, else votes over
        repeated attempts.
    item, score, logprobs, numeric, verbal : str
        Column names.
    scores : sequence or mapping
        Score scale for logprobs (see :func:`logprob_confidence`).
    level : {"attempt", "item"}
        ``"attempt"`` (default): one row per attempt (votes give every attempt its item's
        vote share for its own score). ``"item"``: one row per item (x ``by``), ``prob``
        averaged over attempts (for votes: the modal share).
    by : sequence of str
        Further grouping for ``level="item"`` and for votes.
    levels : sequence of float, optional
        The scale's possible scores, for votes (see :func:`vote_confidence`): a score
        outside it raises :class:`DataError`. Default None: no check.

    Returns
    -------
    DataFrame
        Identifier columns; ``prediction``: the score the confidence refers to;
        ``prob``; ``source``; and at item level ``n`` (attempts).

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item_id": [1, 1, 2, 2], "total": [3, 3, 2, 4]})
    >>> confidence_table(log, level="item")[["prediction", "prob"]].values.tolist()
    [[3.0, 1.0], [2.0, 0.5]]
    """
    check_choice("source", source, ["auto", "logprobs", "numeric", "verbal", "votes"])
    check_choice("level", level, ["attempt", "item"])
    if source == "auto":
        present = {name: column in data.columns and data[column].notna().any()
                   for name, column in (("logprobs", logprobs), ("numeric", numeric), ("verbal", verbal))}
        source = next((name for name, has in present.items() if has), "votes")
    keys = [*by, item]
    if source == "votes":
        votes = vote_table(data, item=item, score=score, by=by, levels=levels)
        if level == "item":
            return votes[[*keys, "n", "modal_score", "prob", "source"]].rename(
                columns={"modal_score": "prediction"}
            )
        per_level = votes.melt(id_vars=keys, value_vars=[c for c in votes if c.startswith("prob_")])
        per_level["prediction"] = per_level.pop("variable").str[5:].astype(float)
        ids = [c for c in ID_COLUMNS if c in data.columns and c not in keys]
        attempts = data[[*keys, *ids]].assign(prediction=numeric_column(data, score))
        merged = attempts.merge(per_level, on=[*keys, "prediction"], how="left")
        return merged.rename(columns={"value": "prob"}).assign(source="votes")
    if source == "logprobs":
        table = logprob_confidence(data, logprobs=logprobs, scores=scores)
        table["prediction"] = table["chosen_score"]
    else:
        if source == "verbal":
            table = verbal_confidence(data, verbal=verbal)
        else:
            require_columns(data, [numeric])
            table = data[[c for c in ID_COLUMNS if c in data.columns]].assign(
                prob=numeric_column(data, numeric), source="numeric")
        table["prediction"] = numeric_column(data, score) if score in data.columns else np.nan
    for key in keys:
        if key not in table.columns:
            require_columns(data, [key])
            table[key] = data[key]
    cols = [c for c in table.columns if c in (*ID_COLUMNS, *keys)]
    table = table[[*cols, "prediction", "prob", "source"]]
    if level == "attempt":
        return table
    out = table.groupby(keys, sort=True, dropna=False, observed=True).agg(n=("prob", "size"), prob=("prob", "mean"))
    # Modal prediction per item, the smallest of tied modes.
    tally = table.groupby([*keys, "prediction"], observed=True).size().rename("k").reset_index()
    tally = tally.sort_values([*keys, "k", "prediction"], ascending=[*([True] * len(keys)), False, True])
    modes = tally.drop_duplicates(keys)[[*keys, "prediction"]]
    out = out.reset_index().merge(modes, on=keys, how="left")
    return out[[*keys, "n", "prediction", "prob"]].assign(source=source)


@reads_frame(keys=("item",), labels=("score",))
def agrees_with_mode(data: pd.DataFrame, *, item: str = "item_id", score: str = "total") -> pd.Series:
    """Boolean Series: does each attempt's score equal its item's modal score (smallest mode)?

    The outcome for calibrating attempt-level confidence against self-consistency.
    Missing scores give ``<NA>``.

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


# ----------------------------------------------------------------------------- binning core
def _bins(p: np.ndarray, n_bins: int, strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin index per forecast and each bin's (low, high) limits.

    ``uniform``: (k/M, (k+1)/M] with 0 in the first bin (Guo et al. 2017; the same rule as
    scikit-learn's ``calibration_curve``). ``quantile``: the same rule on edges at the
    empirical quantiles (``np.percentile``, linear interpolation), so tied forecasts always
    share a bin. ``unique``: one bin per distinct forecast value (Murphy 1973).
    """
    if strategy == "unique":
        values, index = np.unique(p, return_inverse=True)
        return index, values, values
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        edges = np.percentile(p, np.linspace(0, 100, n_bins + 1))
    index = np.searchsorted(edges[1:-1], p)
    return index, edges[:-1], edges[1:]


def _check_binary(data, prob, outcome):
    require_columns(data, [prob, outcome])
    p = numeric_column(data, prob)
    y = numeric_column(data, outcome)
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {prob!r} must hold probabilities in [0, 1]; row {row!r} holds {p[bad][0]!r}")
    bad = ~np.isnan(y) & (y != 0) & (y != 1)
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {outcome!r} must be 0/1 or boolean; row {row!r} holds {y[bad][0]!r}")
    return p, y


def _units(data: pd.DataFrame, item: str, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """Cluster code of each kept row and the number of clusters."""
    codes, uniques = pd.factorize(data[item].to_numpy()[keep], use_na_sentinel=False)
    return codes, len(uniques)


def _decompose(sums: np.ndarray, n_bins: int) -> dict[str, np.ndarray]:
    """Calibration statistics from per-bin sums, vectorised over leading replicate axes.

    ``sums[..., 5*b + j]`` holds cell j of bin b (n, sum p, sum y, sum p^2, sum p*y).
    """
    s = sums[..., : _CELLS * n_bins].reshape(*sums.shape[:-1], n_bins, _CELLS)
    n_b, sp, sy, spp, spy = (s[..., j] for j in range(_CELLS))
    total = n_b.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fbar = sp / n_b
        obar = sy / n_b
        gap = np.where(n_b > 0, np.abs(obar - fbar), np.nan)
        o_all = sy.sum(-1) / total
        filled = np.where(n_b > 0, 1.0, 0.0)
        rel = np.nansum(filled * n_b * (fbar - obar) ** 2, axis=-1) / total
        res = np.nansum(filled * n_b * (obar - o_all[..., None]) ** 2, axis=-1) / total
        wbv = np.nansum(filled * (spp - n_b * fbar**2), axis=-1) / total
        wbc = 2 * np.nansum(filled * (spy - n_b * fbar * obar), axis=-1) / total
        brier = (spp.sum(-1) - 2 * spy.sum(-1) + sy.sum(-1)) / total
        ece = np.nansum(filled * n_b * np.nan_to_num(gap), axis=-1) / total
        mce = np.nanmax(np.where(n_b > 0, gap, -np.inf), axis=-1)
    return {
        "ece": ece,
        "mce": mce,
        "brier": brier,
        "reliability": rel,
        "resolution": res,
        "uncertainty": o_all * (1 - o_all),
        "within_bin_variance": wbv,
        "within_bin_covariance": wbc,
    }


def _class_probs(data: pd.DataFrame, prob: Sequence[str], outcome: str, labels):
    """(N, C) probability matrix and integer class of each outcome, rows complete."""
    prob = list(prob)
    require_columns(data, [*prob, outcome])
    labels = list(labels) if labels is not None else [c.removeprefix("prob_") for c in prob]
    if len(labels) != len(prob):
        raise DataError(f"labels has {len(labels)} entries but prob names {len(prob)} columns")
    P = np.column_stack([numeric_column(data, c) for c in prob])
    keep = ~np.isnan(P).any(axis=1) & data[outcome].notna().to_numpy()
    P = P[keep]
    if ((P < 0) | (P > 1)).any():
        raise DataError(f"columns {prob} must hold probabilities in [0, 1]")
    off = np.abs(P.sum(axis=1) - 1) > 1e-6
    if off.any():
        row = data.index[keep][np.argmax(off)]
        raise DataError(f"probabilities in {prob} must sum to 1 per row; row {row!r} sums to {P[off][0].sum():.6g}")
    codes, uniques = pd.factorize(data[outcome].to_numpy()[keep])
    lookup = {str(lab): j for j, lab in enumerate(labels)}
    position = []
    for value in uniques:  # map each distinct outcome once: 3, 3.0, "3" all name class "3"
        key = _label(float(value)) if isinstance(value, (int, float, np.number)) else str(value)
        if key not in lookup:
            raise DataError(f"column {outcome!r} holds {value!r}, not among labels {labels}")
        position.append(lookup[key])
    return P, np.asarray(position, dtype=int)[codes], keep


def _metric_table(estimates, replicates, confidence, n, extra) -> pd.DataFrame:
    rows = []
    for name, est in estimates.items():
        if replicates is not None:
            low, high = percentile_interval(np.asarray(replicates[name])[:, None], confidence)
            low, high, method = float(low[0]), float(high[0]), "percentile bootstrap"
        else:
            low = high = np.nan
            method = "point estimate"
        rows.append({"metric": name, "estimate": float(est), "ci_low": low, "ci_high": high, "n": n, **extra, "method": method})
    return pd.DataFrame(rows)


@reads_frame(keys=("item",), numbers=("prob",), labels=("outcome",))
def calibration_metrics(
    data: pd.DataFrame,
    *,
    prob: str | Sequence[str] = "prob",
    outcome: str = "outcome",
    labels: Sequence | None = None,
    item: str | None = None,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    confidence: float = 0.95,
    n_boot: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """ECE, MCE, Brier score with its decomposition, and log loss, with bootstrap CIs.

    Parameters
    ----------
    data : DataFrame
        One row per forecast; rows with a missing probability or outcome are dropped.
    prob : str or sequence of str
        Binary case: one column with the probability of ``outcome == 1``, or of the judge
        being right when ``outcome`` is correctness. Multi-class case: one column per class
        (rows must sum to 1), e.g. ``prob_1 .. prob_4`` from :func:`logprob_confidence`.
    outcome : str
        Binary: 0/1 or boolean. Multi-class: the observed class (e.g. the human score).
    labels : sequence, optional
        Class label of each ``prob`` column; default: the column names without ``prob_``.
    item : str, optional
        Cluster for the bootstrap (attempts of one item are resampled together, the right
        unit for repeated attempts). Default None resamples rows: exactly through the
        distinct (forecast, outcome) pairs when the forecasts take few values (verbal,
        votes); row by row for continuous forecasts up to 100,000 rows; beyond that, bin x
        outcome counts are drawn exactly and each group's sum from its normal limit (a
        million rows and ``n_boot=1000`` take under a second; the limits agree with the
        row-by-row bootstrap to within Monte Carlo error, see the tests).
    n_bins : int
        Number of bins (ignored by ``strategy="unique"``).
    strategy : {"uniform", "quantile", "unique"}
        Equal-width bins (default), equal-mass bins, or one bin per distinct forecast.
    confidence : float
        Level of the percentile bootstrap intervals.
    n_boot : int
        Bootstrap replicates; 0 gives point estimates only.
    random_state : int or Generator, optional
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
        One row per metric: ``ece``, ``mce``, ``brier``, ``reliability``, ``resolution``,
        ``uncertainty``, ``within_bin_variance``, ``within_bin_covariance``, ``log_loss``.
        Columns ``metric, estimate, ci_low, ci_high, n`` (forecasts), ``n_bins`` (non-empty
        bins), ``strategy``, ``method``. Multi-class: ECE and MCE are top-label (confidence
        = largest probability, outcome = it is the observed class); the Brier score and its
        components are sums over classes.

    Notes
    -----
    With bins b holding n_b forecasts of mean f_b and observed rate o_b, o the overall rate
    and N forecasts: ``ECE = sum_b n_b/N |o_b - f_b|``, ``MCE = max_b |o_b - f_b|``,
    ``Brier = mean (p - y)^2`` (multi-class: ``mean sum_c (p_c - y_c)^2``, Brier 1950),
    ``log loss = -mean(y log p + (1 - y) log(1 - p))`` with p clipped to [eps, 1 - eps]
    (scikit-learn's rule). The Murphy (1973) decomposition with the within-bin terms of
    Stephenson et al. (2008) holds exactly:
    ``Brier = REL - RES + UNC + WBV - WBC`` with ``REL = sum_b n_b (f_b - o_b)^2 / N``,
    ``RES = sum_b n_b (o_b - o)^2 / N``, ``UNC = o (1 - o)``,
    ``WBV = sum_i (p_i - f_b(i))^2 / N``, ``WBC = 2 sum_i (p_i - f_b(i))(y_i - o_b(i)) / N``;
    WBV and WBC vanish with ``strategy="unique"``. The bootstrap resamples units (rows or
    ``item`` clusters) and keeps the bin edges found on the full sample.

    References
    ----------
    .. [1] Naeini, M. P., Cooper, G., & Hauskrecht, M. (2015). Obtaining well calibrated
       probabilities using Bayesian binning. AAAI.
    .. [2] Guo, C. et al. (2017). On calibration of modern neural networks. ICML.
    .. [3] Murphy, A. H. (1973). A new vector partition of the probability score.
       J. Appl. Meteorol. 12, 595-600.
    .. [4] Stephenson, D. B., Coelho, C. A. S., & Jolliffe, I. T. (2008). Two extra
       components in the Brier score decomposition. Weather Forecast. 23, 752-757.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> out = calibration_metrics(df, n_boot=0).set_index("metric")
    >>> round(float(out.loc["ece", "estimate"]), 3), round(float(out.loc["brier", "estimate"]), 3)
    (0.1, 0.135)
    """
    check_choice("strategy", strategy, STRATEGIES)
    check_confidence(confidence)
    check_n_boot(n_boot)
    if strategy != "unique" and (not isinstance(n_bins, (int, np.integer)) or n_bins < 1):
        raise DataError(f"n_bins={n_bins!r} must be a positive integer")
    rng = np.random.default_rng(random_state)
    if item is not None:
        require_columns(data, [item])
    if isinstance(prob, str):
        p, y = _check_binary(data, prob, outcome)
        keep = ~np.isnan(p) & ~np.isnan(y)
        p, y = p[keep], y[keep]
        P = None
    else:
        P, yc, keep = _class_probs(data, prob, outcome, labels)
        p = P.max(axis=1)
        y = (P.argmax(axis=1) == yc).astype(float)
    if len(p) == 0:
        raise DataError("no rows with both a probability and an outcome")
    # Blocks of per-bin cells: top-label (binary: the forecast itself), then one per class.
    blocks = [(p, y)]
    if P is not None:
        blocks += [(P[:, c], (yc == c).astype(float)) for c in range(P.shape[1])]
    binned = [(bp, by, *_bins(bp, n_bins, strategy)[:2]) for bp, by in blocks]
    sizes = [len(low) for *_, low in binned]
    eps = np.finfo(float).eps
    if P is None:
        pc = np.clip(p, eps, 1 - eps)
        loss = -(y * np.log(pc) + (1 - y) * np.log(1 - pc))
    else:
        loss = -np.log(np.clip(P[np.arange(len(yc)), yc], eps, 1 - eps))
    n_cells = _CELLS * sum(sizes) + 1

    def cell_values():
        """Per row: the cell each of its values adds to (bins x 5 cells per block, then loss)."""
        cells, values, offset = [], [], 0
        for (bp, by, index, _), size in zip(binned, sizes, strict=True):
            cells.append(index[:, None] * _CELLS + np.arange(_CELLS) + offset)
            values.append(np.stack([np.ones_like(bp), bp, by, bp * bp, bp * by], axis=1))
            offset += _CELLS * size
        cells.append(np.full((len(p), 1), offset))
        values.append(loss[:, None])
        return np.concatenate(cells, axis=1), np.concatenate(values, axis=1)

    def evaluate(sums):
        top = _decompose(sums[..., : _CELLS * sizes[0]], sizes[0])
        out = {"ece": top["ece"], "mce": top["mce"]}
        if P is None:
            parts = top
        else:
            start = _CELLS * sizes[0]
            parts = None
            for size in sizes[1:]:
                part = _decompose(sums[..., start : start + _CELLS * size], size)
                parts = part if parts is None else {k: parts[k] + part[k] for k in part}
                start += _CELLS * size
        for key in ("brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance"):
            out[key] = parts[key]
        if strategy == "unique":  # zero by construction; avoid reporting rounding residue
            out["within_bin_variance"] = out["within_bin_covariance"] = np.zeros_like(out["brier"])
        out["log_loss"] = sums[..., -1] / (sums[..., 0 : _CELLS * sizes[0] : _CELLS].sum(-1))
        return out

    point = [
        np.bincount(index, weights=w, minlength=size)
        for (bp, by, index, _), size in zip(binned, sizes, strict=True)
        for w in (None, bp, by, bp * bp, bp * by)
    ]
    # point[5k + j] is cell j of block k over bins; interleave to bin-major like cell_values()
    sums = [np.stack(point[5 * k : 5 * k + 5], axis=1).ravel() for k in range(len(binned))]
    estimates = evaluate(np.concatenate([*sums, [loss.sum()]]))
    replicates = None
    if n_boot:
        cell_idx, values = cell_values()
        if item is None and P is None:
            # Rows sharing (prob, outcome) are exchangeable: resample the distinct pairs with
            # multinomial counts (exact, and fast for verbal or vote confidences).
            types = pd.factorize(p + 2 * y)[0]
            first = np.unique(types, return_index=True)[1]
            if len(first) <= len(p) // 2:
                S = unit_sums(np.repeat(np.arange(len(first)), cell_idx.shape[1]), cell_idx[first].ravel(),
                              values[first].ravel(), len(first), n_cells)
                multiplicity = np.bincount(types, minlength=len(first))
                replicates = evaluate(bootstrap_sums(S, n_boot, rng, multiplicity=multiplicity))
            else:
                replicates = evaluate(bootstrap_row_sums(cell_idx, values, n_cells, n_boot, rng))
        elif item is None:
            replicates = evaluate(bootstrap_row_sums(cell_idx, values, n_cells, n_boot, rng))
        else:
            units, n_units = _units(data, item, keep)
            rows = np.repeat(units, cell_idx.shape[1])
            S = unit_sums(rows, cell_idx.ravel(), values.ravel(), n_units, n_cells)
            replicates = evaluate(bootstrap_sums(S, n_boot, rng))
    n_filled = int((np.bincount(binned[0][2], minlength=sizes[0]) > 0).sum())
    extra = {"n_bins": n_filled, "strategy": strategy}
    return _metric_table(estimates, replicates, confidence, int(len(p)), extra)


def expected_calibration_error(data: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """ECE and MCE rows of :func:`calibration_metrics` (same parameters).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> expected_calibration_error(df, n_boot=0)["estimate"].round(3).tolist()
    [0.1, 0.1]
    """
    out = calibration_metrics(data, **kwargs)
    return out[out["metric"].isin(["ece", "mce"])].reset_index(drop=True)


def brier_score(data: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """Brier score and its Murphy decomposition: rows of :func:`calibration_metrics`.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> brier_score(df, n_boot=0, strategy="unique")["estimate"].round(4).tolist()
    [0.135, 0.01, 0.0625, 0.1875, 0.0, 0.0]
    """
    out = calibration_metrics(data, **kwargs)
    keep = ["brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance"]
    return out[out["metric"].isin(keep)].reset_index(drop=True)


@reads_frame(numbers=("prob",), labels=("outcome",))
def reliability_table(
    data: pd.DataFrame,
    *,
    prob: str = "prob",
    outcome: str = "outcome",
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Observed rate against mean forecast per bin, with Wilson intervals: a reliability table.

    Parameters
    ----------
    data : DataFrame
        One row per forecast.
    prob, outcome : str
        Probability column and 0/1 outcome column (binary or top-label).
    n_bins : int
        Number of bins (ignored by ``strategy="unique"``).
    strategy : {"uniform", "quantile", "unique"}
        Binning rule (see :func:`calibration_metrics`).
    confidence : float
        Level of the Wilson intervals for the observed rate.

    Returns
    -------
    DataFrame
        One row per non-empty bin: ``bin`` (0-based), ``bin_low``, ``bin_high`` (limits;
        both the value itself for ``unique``), ``n``, ``mean_prob``, ``observed`` (rate of
        outcome 1), ``gap`` (observed - mean_prob), ``ci_low``, ``ci_high`` (Wilson
        interval of ``observed``), ``strategy``, ``method``.

    Notes
    -----
    ``mean_prob`` and ``observed`` equal ``prob_pred`` and ``prob_true`` of
    ``sklearn.calibration.calibration_curve`` with the same ``n_bins`` and strategy.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> reliability_table(df)[["n", "mean_prob", "observed"]].values.tolist()
    [[2.0, 0.6, 0.5], [2.0, 0.9, 1.0]]
    """
    check_choice("strategy", strategy, STRATEGIES)
    check_confidence(confidence)
    p, y = _check_binary(data, prob, outcome)
    keep = ~np.isnan(p) & ~np.isnan(y)
    p, y = p[keep], y[keep]
    index, low, high = _bins(p, n_bins, strategy)
    n = np.bincount(index, minlength=len(low)).astype(float)
    sp = np.bincount(index, weights=p, minlength=len(low))
    sy = np.bincount(index, weights=y, minlength=len(low))
    filled = n > 0
    ci_low, ci_high = proportion_ci(sy[filled], n[filled], confidence, "wilson")
    mean_prob = sp[filled] / n[filled]
    observed = sy[filled] / n[filled]
    return pd.DataFrame(
        {
            "bin": np.flatnonzero(filled),
            "bin_low": low[filled],
            "bin_high": high[filled],
            "n": n[filled],
            "mean_prob": mean_prob,
            "observed": observed,
            "gap": observed - mean_prob,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "strategy": strategy,
            "method": "wilson",
        }
    )


def reliability_diagram(table: pd.DataFrame, *, ax=None, label: str | None = None):
    """Seaborn reliability diagram from :func:`reliability_table` output.

    Points at (mean forecast, observed rate) sized by bin count, Wilson error bars, and the
    diagonal of perfect calibration. Returns the matplotlib ``Axes``.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`reliability_table`.
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure otherwise.
    label : str, optional
        Legend label of the points.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    require_columns(table, ["mean_prob", "observed", "n", "ci_low", "ci_high"], what="table")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    ax.errorbar(
        table["mean_prob"],
        table["observed"],
        # Clipped at 0: a Wilson bound can sit a rounding error inside an observed 0 or 1.
        yerr=np.clip([table["observed"] - table["ci_low"], table["ci_high"] - table["observed"]], 0, None),
        fmt="none",
        ecolor="black",
        elinewidth=0.8,
    )
    # Greyscale, so the figure reads the same printed in black and white.
    sns.lineplot(data=table, x="mean_prob", y="observed", ax=ax, marker=None, label=label, sort=True, color="0.2")
    sns.scatterplot(data=table, x="mean_prob", y="observed", size="n", ax=ax, legend=False, color="0.2")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="Mean confidence", ylabel="Observed rate")
    ax.set_aspect("equal")
    return ax


@reads_frame(keys=("item",), numbers=("score", "prob"))
def confidence_spread(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "total",
    prob: str = "prob",
    method: CorrelationMethod = "spearman",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Rank correlation between an item's mean confidence and the SD of its scores.

    Experiment 5 asks whether lower-confidence scores belong to items whose repeated scores
    spread more; a negative ``estimate`` says they do.

    Parameters
    ----------
    data : DataFrame
        Attempt-level table with ``item``, ``score`` and ``prob`` (e.g. the log joined with
        :func:`confidence_table`, or the log's numeric ``confidence`` column).
    item, score, prob : str
        Column names.
    method : {"spearman", "kendall", "pearson"}, default "spearman"
        Coefficient, as in :func:`hce.stats.effects.correlation`. Per-item SDs of short
        scales tie often (many are 0); ``"kendall"`` (tau-b) handles the ties explicitly.
    confidence : float
        Interval level.

    Returns
    -------
    DataFrame
        :func:`hce.stats.effects.correlation` output over items (``x = "mean_prob"``,
        ``y = "sd"``): ``estimate`` (Spearman rho, or Kendall tau-b), ``ci_low``,
        ``ci_high`` (Bonett-Wright; Fieller for Kendall), ``statistic``, ``df1``,
        ``p_value``, ``n`` (items with an SD), ``method``.

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3, 4, 4, 5, 5],
    ...                     "total": [3, 3, 3, 4, 2, 4, 1, 4, 1, 5],
    ...                     "prob": [.9, .9, .8, .8, .7, .7, .6, .6, .5, .5]})
    >>> round(float(confidence_spread(log)["estimate"].iloc[0]), 6)
    -1.0
    """
    check_confidence(confidence)
    require_columns(data, [item, score, prob])
    frame = pd.DataFrame({"item": data[item].to_numpy(), "s": numeric_column(data, score), "p": numeric_column(data, prob)})
    per_item = frame.groupby("item", sort=True).agg(sd=("s", "std"), mean_prob=("p", "mean")).dropna()
    if len(per_item) < 4:
        raise DataError(f"need at least 4 items with an SD and a confidence, got {len(per_item)}")
    return correlation(per_item, x="mean_prob", y="sd", method=method, confidence=confidence)
