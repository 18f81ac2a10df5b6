"""Synthetic transcripts for Experiment 1: stratified target totals and the generated texts.

Seed 000, 7.1.5: for each of 50 iterations a target total score (TTS) is drawn from a
stratified distribution (20% of scores in 5-10, 40% in 11-15, 40% in 16-20, uniform within
the stratum); GPT-4.1 at temperature 0.7 writes an outline and a transcript for it; each
transcript is stored with its TTS under a unique SyntheticTranscriptID, and must not mention
the rubric or the score. :func:`draw_targets` makes the targets; the study runner sends the
SYNTH prompt through the collection layer; :func:`synthetic_corpus` turns the logged replies
into a corpus, flagging leaks and failed generations rather than dropping them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from hce._docstrings import fill_doc
from hce._vocabulary import keywords_checked
from hce.errors import DataError

#: (low, high, share) of each stratum of target totals (seed 000, 7.1.5).
PRD_STRATA: tuple[tuple[int, int, float], ...] = ((5, 10, 0.2), (11, 15, 0.4), (16, 20, 0.4))
STRATUM_NAMES = ("low", "medium", "high")


def synthetic_id(index: int, *, prefix: str = "SYN") -> str:
    """The SyntheticTranscriptID of the ``index``-th target (1-based), e.g. ``SYN-007``."""
    return f"{prefix}-{index:03d}"


def _check_strata(strata: Sequence[Sequence[float]]) -> list[tuple[int, int, float]]:
    out = []
    for k, stratum in enumerate(strata):
        if len(stratum) != 3:
            raise DataError(f"strata[{k}]={stratum!r} must be (low, high, share)")
        low, high, share = stratum
        if int(low) != low or int(high) != high or low > high:
            raise DataError(f"strata[{k}]: low={low!r} and high={high!r} must be whole numbers with low <= high")
        if not 0 <= share <= 1:
            raise DataError(f"strata[{k}]: share={share!r} must lie in [0, 1]")
        out.append((int(low), int(high), float(share)))
    total = sum(s[2] for s in out)
    if not out or abs(total - 1) > 1e-9:
        raise DataError(f"stratum shares must sum to 1, got {total:g}")
    return out


@keywords_checked
@fill_doc
def draw_targets(
    n: int = 50,
    *,
    strata: Sequence[Sequence[float]] = PRD_STRATA,
    allocation: Literal["random", "proportional"] = "random",
    random_state: int | np.random.Generator | None = None,
    prefix: str = "SYN",
) -> pd.DataFrame:
    """Target total scores for ``n`` synthetic transcripts, from a stratified distribution.

    Parameters
    ----------
    n : int
        Number of transcripts (protocol: 50).
    strata : sequence of (low, high, share)
        Score ranges and their shares (protocol: 5-10 20%, 11-15 40%, 16-20 40%).
    allocation : {"random", "proportional"}, default "random"
        ``"random"``: each iteration draws its stratum with the given shares, as the
        protocol describes ("for each of 50 iterations: randomly select..."), so the counts
        per stratum vary around ``n * share``. ``"proportional"``: exactly
        ``round(n * share)`` targets per stratum (largest remainders), in random order.
        Within a stratum the score is uniform over its whole numbers either way.
    %(random_state)s
        Record it: NumPy's PCG64 stream may change across NumPy versions, so the drawn
        targets are stored with the transcripts rather than redrawn.
    prefix : str
        Prefix of the SyntheticTranscriptIDs.

    Returns
    -------
    DataFrame
        One row per transcript: ``transcript_id`` (SyntheticTranscriptID), ``target_total``,
        ``stratum`` (low/medium/high for the protocol's strata, else ``"<low>-<high>"``),
        ``stratum_low``, ``stratum_high``.

    Notes
    -----
    With ``allocation="random"`` a target t in stratum s (of width w_s) has probability
    share_s / w_s; the stratum counts are Multinomial(n, shares).

    Examples
    --------
    >>> t = draw_targets(50, random_state=2024)
    >>> t["transcript_id"].iloc[0], int(t["target_total"].between(5, 20).sum())
    ('SYN-001', 50)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DataError(f"n={n!r} must be a positive whole number")
    if allocation not in ("random", "proportional"):
        raise DataError(f"allocation={allocation!r} is not valid; choose one of ['random', 'proportional']")
    checked = _check_strata(strata)
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    shares = np.array([s[2] for s in checked])
    if allocation == "random":
        which = rng.choice(len(checked), size=n, p=shares)
    else:
        exact = shares * n
        counts = np.floor(exact).astype(int)
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[: n - counts.sum()]] += 1
        which = rng.permutation(np.repeat(np.arange(len(checked)), counts))
    lows = np.array([s[0] for s in checked])[which]
    highs = np.array([s[1] for s in checked])[which]
    targets = rng.integers(lows, highs + 1)
    names = STRATUM_NAMES if [s[:2] for s in checked] == [s[:2] for s in PRD_STRATA] else [f"{s[0]}-{s[1]}" for s in checked]
    return pd.DataFrame({
        "transcript_id": [synthetic_id(i, prefix=prefix) for i in range(1, n + 1)],
        "target_total": targets.astype(int),
        "stratum": [names[k] for k in which],
        "stratum_low": lows.astype(int),
        "stratum_high": highs.astype(int),
    })  # fmt: skip


def synthetic_corpus(log: pd.DataFrame, targets: pd.DataFrame, *, policy: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The synthetic corpus from a generation log: one transcript per target.

    For every target the last logged generation is used (the study runner regenerates a
    transcript that failed or leaked, up to its limit, as further attempts). A target whose
    every generation failed is an error; one whose transcript still mentions the rubric or
    the score is kept with ``leak_flag`` set, so the researcher decides.

    Parameters
    ----------
    log : DataFrame
        Attempt log of the SYNTH prompt (``item_id``, ``attempt``, ``transcript``,
        ``outline``, ``leak_flag``, ``leak_reason``, ``error_flag``, ``error_message``,
        ``model``, ``model_version``, ``temperature``, ``attempt_id``).
    targets : DataFrame
        From :func:`draw_targets`.
    policy : mapping, optional
        ``{"use_leaked": bool}``; default ``True`` (keep flagged transcripts).

    Returns
    -------
    DataFrame
        A corpus (as :func:`hce.collect.design.transcripts.load_transcripts` gives) with
        ``transcript_id``, ``text``, ``source`` ("synthetic"), ``n_words``, ``n_chars``,
        ``stripped_lines`` (0), ``synthetic`` (True), ``target_total``, ``stratum``,
        ``outline``, ``leak_flag``, ``leak_reason``, ``generation_attempts``,
        ``generator_model``, ``generator_attempt_id``.
    """
    use_leaked = bool((policy or {}).get("use_leaked", True))
    rows = []
    for target in targets.itertuples(index=False):
        tries = log[log["item_id"] == target.transcript_id].sort_values("attempt")
        if tries.empty:
            raise DataError(f"no generation logged for {target.transcript_id} (target {target.target_total})")
        good = tries[~tries["error_flag"].astype(bool)]
        if good.empty:
            raise DataError(
                f"every generation of {target.transcript_id} failed ({len(tries)} tries); last error: "
                f"{tries['error_message'].iloc[-1]}"
            )
        clean = good[~good["leak_flag"].fillna(False).astype(bool)]
        pick = clean.iloc[-1] if not clean.empty else good.iloc[-1]
        leaked = bool(pick.get("leak_flag") or False)
        if leaked and not use_leaked:
            raise DataError(
                f"{target.transcript_id}: every generation mentions the rubric or the score "
                f"({pick['leak_reason']}); set use_leaked: true to keep it flagged, or regenerate"
            )
        text = str(pick["transcript"])
        rows.append({
            "transcript_id": target.transcript_id, "text": text, "source": "synthetic",
            "n_words": len(text.split()), "n_chars": len(text), "stripped_lines": 0, "synthetic": True,
            "target_total": int(target.target_total), "stratum": target.stratum,
            "outline": pick.get("outline"), "leak_flag": leaked,
            "leak_reason": pick.get("leak_reason") if leaked else None,
            "generation_attempts": len(tries), "generator_model": pick.get("model_version") or pick.get("model"),
            "generator_attempt_id": pick["attempt_id"],
        })  # fmt: skip
    return pd.DataFrame(rows)
