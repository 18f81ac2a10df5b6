"""Judge confidence from an attempt log: token logprobs, repeated votes or verbal levels.

Each function turns an attempt log into one tidy table with a ``prob`` column (the judge's
probability that its own prediction is right, or of the event);
:mod:`hce.stats.calibration.metrics` compares it with a 0/1 outcome (golden label,
agreement with a human score, or with the modal score or a repeat: :mod:`~hce.stats.calibration.outcomes`).
:func:`~hce.stats.logprob_confidence` is the one reader of score-token probabilities in hce: the
score scale is always passed in (a rubric or the score tokens), never assumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.rubric import Rubric
from hce.stats._validate import warn_undefined_sd, statistic
from hce.stats.calibration._logprobs import (
    ScoreTokens,
    read_logprobs,
    score_map,
    score_tokens,
)
from hce.stats.effects import CorrelationMethod, correlation

ID_COLUMNS = ("item_id", "condition_id", "prompt_id", "model", "attempt")
VERBAL_DEFAULT = {"high": 0.9, "medium": 0.7, "low": 0.5}

#: What a provider's returned logprobs are the log of (see :func:`~hce.stats.logprob_confidence`).
LogprobsAre = Literal["raw", "sampled", "raw_at_zero"]
LOGPROBS_ARE = ("raw", "sampled", "raw_at_zero")

#: What ``scores=`` takes: a rubric (its categories' scores), score values, or token -> value.
ScoreScale = Rubric | Iterable[float] | Mapping[str, float]


# ----------------------------------------------------------------------------- confidence
@statistic(texts=("logprobs",))
def logprob_confidence(
    data: pd.DataFrame,
    *,
    scores: ScoreScale,
    logprobs: str = "logprobs",
    occurrence: int | Sequence[int] = -1,
    id_columns: Sequence[str] = ID_COLUMNS,
    temperature: str | float | None = None,
    logprobs_are: LogprobsAre | None = None,
) -> pd.DataFrame:
    """Score probabilities from token logprobs, one row per attempt (and occurrence).

    Parameters
    ----------
    data : DataFrame
        Attempt log with a ``logprobs`` column: per attempt a list of token entries as the
        OpenAI API returns them (``token``, ``logprob``, ``top_logprobs`` = list of
        ``{token, logprob}``), a dict with that list under ``"content"``, or either as JSON
        text (as the attempt log stores them).
    scores : Rubric, sequence of numbers, or mapping token -> value
        The score scale; required, because a token is a score only on its scale. A
        ``hce.rubric.Rubric`` stands for the scores its categories allow (for a
        reply's total, pass ``rubric.total_levels``). Numbers are matched against tokens
        as text (``3`` matches ``"3"`` and ``" 3"``); a mapping such as
        ``{"true": 1, "false": 0}`` serves boolean judges.
    logprobs : str, default "logprobs"
        Column holding the logprob lists.
    occurrence : int or sequence of int
        Which score-like token of the reply holds the score: ``-1`` (default) the last,
        ``0`` the first, ``k`` the k-th. A sequence (e.g. ``range(-5, 0)`` for a score
        block of five criteria that closes the reply) reads each from one parse and
        returns them stacked with an ``occurrence`` column.
    id_columns : sequence of str, default ('item_id', 'condition_id', 'prompt_id', 'model', 'attempt')
        Identifier columns copied to the output when present.
    temperature : str or float, optional
        The temperature each reply was sampled at: a column name (the log's
        ``temperature``; a missing value is a temperature not sent, the API default 1) or
        one number. Default None: no temperature is known and the logprobs are read as
        they are (``prob`` equals ``raw_prob``), which is right only when they are already
        the sampling distribution.
    logprobs_are : {"raw", "sampled", "raw_at_zero"}, optional
        What the provider's logprobs are the log of (needs ``temperature``): ``"raw"`` the
        model's distribution at temperature 1 whatever the temperature (the default when
        ``temperature`` is given; OpenAI, Ollama: see docs/guide/calibration.md and
        ``hce.sim``); ``"sampled"`` the distribution the reply was sampled from
        (no adjustment is made); ``"raw_at_zero"`` sampled, except raw at temperature 0.

    Returns
    -------
    DataFrame
        Same index as ``data`` (repeated per occurrence when several are asked for).
        Identifier columns; ``prob_<s>`` for each score ``s``: its probability under the
        sampling distribution (see Notes); ``chosen_score``: the sampled score; ``prob``:
        the sampling probability of the chosen score, i.e. the chance that an independent
        repeat writes the same score (:func:`~hce.stats.agrees_with_repeat` is the outcome it is
        calibrated for); ``raw_prob``: the chosen score's probability as the logprobs give
        it, renormalised over the scale, unadjusted; ``expected_score``: sum of s * prob_s;
        ``entropy``: Shannon entropy in nats; ``coverage``: probability mass of score
        tokens before renormalising (low values mean ``top_logprobs`` was too short);
        ``temperature`` and ``logprobs_are``: what was assumed (``<NA>`` without
        ``temperature``; also in ``attrs["logprobs_are"]``); ``source``: ``"logprobs"``;
        ``error_flag``: True where no score token was found (other columns NaN).

    Raises
    ------
    DataError
        A temperature that is negative or not a number (the row is named), an unknown
        ``logprobs_are``, or ``logprobs_are`` without ``temperature``.

    Notes
    -----
    With ``q_s = sum over tokens t mapping to s of exp(logprob_t)``, ``coverage = sum q_s``
    and ``r_s = q_s / coverage`` (``raw_prob`` is ``r`` of the chosen score). The
    sampling distribution at temperature ``T`` is ``prob_s = r_s^(1/T) / sum_u r_u^(1/T)``
    when the logprobs are raw (at ``T = 0``: 1 for the most probable score, the smallest
    of ties, and 0 for the others: greedy decoding), and ``prob_s = r_s`` when they are
    sampled (``raw_at_zero``: as raw at ``T = 0``, as sampled above). Both renormalise over
    the score tokens found, so a short ``top_logprobs`` (low ``coverage``) leaves the
    temperature's effect on the missing scores out. ``entropy = -sum prob_s log prob_s``.
    JSON text is parsed by Arrow's reader and every step after it is vectorised: a million
    attempts take a few seconds (``python bench/calibration.py``).

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
    >>> out = logprob_confidence(pd.DataFrame({"logprobs": [[entry]]}), scores=range(1, 5))
    >>> round(float(out.loc[0, "prob"]), 3), float(out.loc[0, "chosen_score"])
    (0.9, 3.0)

    With a rubric, the scale is its categories' scores (1-4 for the packaged v5):

    >>> import hce
    >>> out = logprob_confidence(pd.DataFrame({"logprobs": [[entry]]}), scores=hce.load_rubric("v5"))
    >>> list(out.filter(like="prob_"))
    ['prob_1', 'prob_2', 'prob_3', 'prob_4']

    Sampled at temperature 0.5 from an endpoint whose logprobs are raw (OpenAI's), the
    chosen score's chance of being written again is 0.9^2 / (0.9^2 + 0.1^2):

    >>> out = logprob_confidence(pd.DataFrame({"logprobs": [[entry]]}), scores=range(1, 5),
    ...                          temperature=0.5, logprobs_are="raw")
    >>> round(float(out.loc[0, "prob"]), 3), round(float(out.loc[0, "raw_prob"]), 3), out.loc[0, "logprobs_are"]
    (0.988, 0.9, 'raw')
    """
    require_columns(data, [logprobs])
    temperatures, assumed = _sampling(data, temperature, logprobs_are)
    occurrences = [occurrence] if isinstance(occurrence, (int, np.integer)) else [int(k) for k in occurrence]
    levels, found = score_tokens(read_logprobs(data[logprobs].to_numpy()), score_map(_scale(scores)))
    ids = data[[c for c in id_columns if c in data.columns]]
    frames = [_logprob_frame(ids, levels, found, k, temperatures, assumed) for k in occurrences]
    if isinstance(occurrence, (int, np.integer)):
        out = frames[0]
    else:
        for frame, k in zip(frames, occurrences, strict=True):
            frame.insert(len(ids.columns), "occurrence", k)
        out = pd.concat(frames)
    out.attrs["logprobs_are"] = assumed
    return out


def _sampling(
    data: pd.DataFrame, temperature: str | float | None, logprobs_are: str | None
) -> tuple[np.ndarray | None, str | None]:
    """Each row's sampling temperature (None: not known) and the assumed logprob behaviour."""
    if temperature is None:
        if logprobs_are is not None:
            raise DataError(f"logprobs_are={logprobs_are!r} needs temperature= (a column name or a number): "
                            "without the temperature the logprobs cannot be adjusted")  # fmt: skip
        return None, None
    assumed = "raw" if logprobs_are is None else logprobs_are
    check_choice("logprobs_are", assumed, list(LOGPROBS_ARE))
    if isinstance(temperature, str):
        require_columns(data, [temperature])
        values = numeric_column(data, temperature)
        # The log records a temperature not sent as missing: the API's default, 1.
        values = np.where(np.isnan(values), 1.0, values)
    elif isinstance(temperature, (int, float, np.integer, np.floating)) and not isinstance(temperature, bool):
        values = np.full(len(data), float(temperature))
    else:
        raise DataError(f"temperature={temperature!r} must be a column name or a number")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        at = int(np.argmax(bad))
        where = f"column {temperature!r} row {data.index[at]!r} holds" if isinstance(temperature, str) else "temperature is"
        raise DataError(f"{where} {float(values[at])!r}; a sampling temperature is a finite number >= 0")
    return values, assumed


def sampling_distribution(raw: np.ndarray, temperature: np.ndarray, logprobs_are: str) -> np.ndarray:
    """Rows of score probabilities as sampled at ``temperature``, from rows as the logprobs give them.

    ``raw`` (n x scores) is renormalised over the scale; see :func:`~hce.stats.logprob_confidence`,
    Notes. NaN rows stay NaN.

    Examples
    --------
    >>> sampling_distribution(np.array([[0.1, 0.9], [0.5, 0.5]]), np.array([0.5, 0.0]), "raw").round(4).tolist()
    [[0.0122, 0.9878], [1.0, 0.0]]
    """
    raw = np.asarray(raw, dtype=float)
    temperature = np.broadcast_to(np.asarray(temperature, dtype=float), raw.shape[:1])
    adjust = np.ones(len(raw), dtype=bool) if logprobs_are == "raw" else temperature == 0
    if logprobs_are == "sampled" or not adjust.any():
        return raw.copy()
    out = raw.copy()
    greedy = adjust & (temperature == 0)
    if greedy.any():
        rows = np.flatnonzero(greedy & ~np.isnan(raw).any(axis=1))
        top = np.argmax(raw[rows], axis=1)  # the first of ties: the smallest score
        out[greedy] = np.where(np.isnan(raw[greedy]), np.nan, 0.0)
        out[rows, top] = 1.0
    power = np.flatnonzero(adjust & (temperature > 0))
    if power.size:
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(raw[power]) / temperature[power, None]  # log scale: small T does not underflow
            peak = np.max(np.where(np.isnan(logs), -np.inf, logs), axis=1, keepdims=True)
            weights = np.exp(logs - peak)
            out[power] = weights / weights.sum(axis=1, keepdims=True)
    return out


def _scale(scores: ScoreScale) -> Sequence[float] | Mapping[str, float]:
    """The score values (or token -> value mapping) that ``scores=`` stands for."""
    if isinstance(scores, Rubric):
        return sorted({s for category in scores.categories for s in category.scores})
    if isinstance(scores, Mapping):
        return scores
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
        raise DataError(f"scores={scores!r} must be a rubric, a sequence of score values or a token -> value mapping")
    values = list(scores)
    if not values:
        raise DataError("scores= is empty: pass the rubric or the score values its tokens can take")
    return values


def _logprob_frame(
    ids: pd.DataFrame,
    levels: np.ndarray,
    found: ScoreTokens,
    occurrence: int,
    temperatures: np.ndarray | None,
    assumed: str | None,
) -> pd.DataFrame:
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
        raw = mass / coverage[:, None]
    probs = raw if temperatures is None else sampling_distribution(raw, temperatures, assumed)
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.where(probs > 0, np.log(np.where(probs > 0, probs, 1.0)), 0.0)
    entropy = np.where(hit, -(probs * logs).sum(axis=1), np.nan)
    out = ids.copy()
    for j, level in enumerate(levels):
        out[f"prob_{_label(level)}"] = probs[:, j]
    chosen = np.maximum(chosen_index, 0)
    out["chosen_score"] = np.where(hit, levels[chosen], np.nan)
    out["prob"] = np.where(hit, probs[np.arange(n), chosen], np.nan)
    out["raw_prob"] = np.where(hit, raw[np.arange(n), chosen], np.nan)
    out["expected_score"] = probs @ levels
    out["entropy"] = entropy
    out["coverage"] = coverage
    out["temperature"] = np.nan if temperatures is None else temperatures
    out["logprobs_are"] = pd.Series(assumed, index=out.index, dtype="string")
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


@statistic(keys=("item", "by"), labels=("score",))
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
    item : str, default "item_id"
        Item identifier column.
    score : str
        Score column (a criterion, ``total``, or a 0/1 verdict).
    by : sequence of str, default ()
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
    """The table of :func:`~hce.stats.vote_confidence`, for callers that need its shares, not its SDs."""
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


@statistic(texts=("verbal",))
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
        Attempt log of a boolean judge (the boolean judge specification's verdict).
    verbal : str
        Column with the verbal confidence (the log's ``confidence_level``); case and
        surrounding spaces are ignored.
    mapping : mapping, optional
        Level -> probability. Default ``{"high": 0.9, "medium": 0.7, "low": 0.5}``, a
        convention, not an estimate: the reliability table of the result shows what each
        level is actually worth.
    id_columns : sequence of str, default ('item_id', 'condition_id', 'prompt_id', 'model', 'attempt')
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

    References
    ----------
    .. [1] Tian, K., Mitchell, E., Zhou, A., et al. (2023). Just ask for calibration:
       strategies for eliciting calibrated confidence scores from language models fine-tuned
       with human feedback. EMNLP, 5433-5442.
    .. [2] Xiong, M., Hu, Z., Lu, X., et al. (2024). Can LLMs express their uncertainty? An
       empirical evaluation of confidence elicitation in LLMs. ICLR.

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


@statistic(keys=("item", "by"), optional=("score", "numeric"))
def confidence_table(
    data: pd.DataFrame,
    *,
    source: Literal["auto", "logprobs", "numeric", "verbal", "votes"] = "auto",
    item: str = "item_id",
    score: str = "total",
    logprobs: str = "logprobs",
    numeric: str = "confidence",
    verbal: str = "confidence_level",
    scores: ScoreScale | None = None,
    level: Literal["attempt", "item"] = "attempt",
    by: Sequence[str] = (),
    levels: Sequence[float] | None = None,
    temperature: str | float | None = None,
    logprobs_are: LogprobsAre | None = None,
) -> pd.DataFrame:
    """One tidy table of confidences from whichever source the log holds.

    The sources' own functions (:func:`~hce.stats.logprob_confidence`,
    :func:`~hce.stats.vote_confidence`, the numeric and verbal columns) give one table shape.

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
        Defaults: ``item="item_id"``, ``score="total"``, ``logprobs="logprobs"``, ``numeric="confidence"``, ``verbal="confidence_level"``.
    scores : Rubric, sequence or mapping, optional
        Score scale for logprobs (see :func:`~hce.stats.logprob_confidence`); required when the
        confidence comes from logprobs.
    level : {"attempt", "item"}
        ``"attempt"`` (default): one row per attempt (votes give every attempt its item's
        vote share for its own score). ``"item"``: one row per item (x ``by``), ``prob``
        averaged over attempts (for votes: the modal share).
    by : sequence of str, default ()
        Further grouping for ``level="item"`` and for votes.
    levels : sequence of float, optional
        The scale's possible scores, for votes (see :func:`~hce.stats.vote_confidence`): a score
        outside it raises :class:`~hce.DataError`. Default None: no check.
    temperature, logprobs_are : optional
        For logprobs: the sampling temperature (column name or number) and what the
        provider's logprobs are, as in :func:`~hce.stats.logprob_confidence`; ``prob`` is then the
        probability at the temperature used.

    Returns
    -------
    DataFrame
        Identifier columns; ``prediction``: the score the confidence refers to;
        ``prob``; ``source``; and at item level ``n`` (attempts). From logprobs also
        ``raw_prob`` (the chosen score's probability as the logprobs give it) and
        ``logprobs_are`` (the behaviour assumed, ``<NA>`` without ``temperature``),
        averaged (``raw_prob``) and kept at item level.

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
        if scores is None:
            raise DataError("confidence from logprobs needs scores= (the rubric or the score values); "
                            "the log's logprobs cannot say which tokens are scores")
        table = logprob_confidence(data, logprobs=logprobs, scores=scores, temperature=temperature,
                                   logprobs_are=logprobs_are)  # fmt: skip
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
    extra = ["raw_prob", "logprobs_are"] if source == "logprobs" else []
    table = table[[*cols, "prediction", "prob", *extra, "source"]]
    if level == "attempt":
        return table
    sums = {"n": ("prob", "size"), "prob": ("prob", "mean")}
    if extra:
        sums |= {"raw_prob": ("raw_prob", "mean"), "logprobs_are": ("logprobs_are", "first")}
    out = table.groupby(keys, sort=True, dropna=False, observed=True).agg(**sums)
    # Modal prediction per item, the smallest of tied modes.
    tally = table.groupby([*keys, "prediction"], observed=True).size().rename("k").reset_index()
    tally = tally.sort_values([*keys, "k", "prediction"], ascending=[*([True] * len(keys)), False, True])
    modes = tally.drop_duplicates(keys)[[*keys, "prediction"]]
    out = out.reset_index().merge(modes, on=keys, how="left")
    return out[[*keys, "n", "prediction", "prob", *extra]].assign(source=source)


@statistic(keys=("item",), numbers=("score", "prob"))
def confidence_spread(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "total",
    prob: str = "prob",
    method: CorrelationMethod = "spearman",
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
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
        Defaults: ``item="item_id"``, ``score="total"``, ``prob="prob"``.
    method : {"spearman", "kendall", "pearson"}, default "spearman"
        Coefficient, as in :func:`~hce.stats.correlation`. Per-item SDs of short
        scales tie often (many are 0); ``"kendall"`` (tau-b) handles the ties explicitly.
        Spearman's P is a permutation P on 30 items or fewer or with heavy ties.
    %(confidence)s
    %(random_state)s
        It seeds Spearman's Monte Carlo permutation P.

    Returns
    -------
    DataFrame
        :func:`~hce.stats.correlation` output over items (``x = "mean_prob"``,
        ``y = "sd"``): ``estimate`` (Spearman rho, or Kendall tau-b), ``ci_low``,
        ``ci_high`` (Bonett-Wright; Fieller for Kendall), ``statistic``, ``df1``,
        ``p_value``, ``n`` (items with an SD), ``method``.

    References
    ----------
    .. [1] Spearman, C. (1904). The proof and measurement of association between two things.
       American Journal of Psychology 15, 72-101.
    .. [2] Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33,
       239-251.

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
    return correlation(per_item, x="mean_prob", y="sd", method=method, confidence=confidence, random_state=random_state)
