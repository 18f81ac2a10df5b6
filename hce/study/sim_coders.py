"""Simulated human coders of Experiment 4, for a rehearsal with the simulated judge.

The protocol's reliability step (7.4.5 "Refinement") has two researchers code the reasoning
of 3 transcripts with the draft scheme, computes Cohen's kappa per dimension, and refines the
scheme's definitions until kappa >= 0.70. With the simulated judge
(:mod:`hce.sim`) the truth of every segment is known: the codes its phrases carry
(:func:`hce.sim.reasoning.read_codes`). A rehearsal then has

- ``coder_1``, a researcher who reads every segment right (the truth), and
- ``coder_2``, who in refinement round ``r`` gives ``coder_1``'s code with probability
  ``a_r`` (``agreement``) and otherwise a code drawn uniformly from the dimension's codes
  (which may be the same one): the scheme's definitions get clearer round by round.

With ``coder_1``'s shares ``p_k`` over ``K`` codes, that second coder's expected kappa is
``a (1 - sum p_k^2) / (1 - a sum p_k^2 - (1 - a) / K)`` (``a`` exactly when the shares are
equal), the ``expected_kappa`` of :func:`refinement_rounds`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hce.sim.reasoning import read_codes
from hce.errors import DataError
from hce.stats._resample import as_generator
from hce.study.reasoning import SEGMENT_KEY, CodingScheme, intercoder_agreement


def true_codes(segments: pd.DataFrame, scheme: CodingScheme, coder: str = "coder_1") -> pd.DataFrame:
    """The codes each found segment carries (the simulated judge's truth), as a coder's codes."""
    found = segments[segments["segment_found"]]
    rows = []
    for record in found.to_dict(orient="records"):
        codes = read_codes(record["segment"])
        rows.append({**{k: record[k] for k in SEGMENT_KEY}, "coder": coder, **{d: codes.get(d) for d in scheme.ids}})
    return pd.DataFrame(rows, columns=[*SEGMENT_KEY, "coder", *scheme.ids])


def second_coder(codes: pd.DataFrame, scheme: CodingScheme, agreement: float, rng: np.random.Generator,
                 coder: str = "coder_2") -> pd.DataFrame:
    """``codes`` re-coded by a coder who agrees with probability ``agreement``, else picks uniformly."""
    if not 0 <= agreement <= 1:
        raise DataError(f"simulated coder agreement must be in [0, 1], got {agreement!r}")
    out = codes.assign(coder=coder)
    for d in scheme.dimensions:
        copy = rng.random(len(out)) < agreement
        drawn = np.asarray(d.codes, dtype=object)[rng.integers(0, len(d.codes), len(out))]
        out[d.id] = np.where(copy | out[d.id].isna(), out[d.id], drawn)
    return out


def expected_kappa(truth: pd.Series, codes: Sequence[str], agreement: float) -> float:
    """Cohen's kappa expected of the second coder at ``agreement`` against ``truth`` (module notes).

    Examples
    --------
    >>> expected_kappa(pd.Series(["a", "b", "a", "b"]), ["a", "b"], 0.8)
    0.8
    """
    p = truth.dropna().value_counts(normalize=True).reindex(list(codes), fill_value=0.0).to_numpy()
    concentration = float((p**2).sum())
    denominator = 1 - agreement * concentration - (1 - agreement) / len(codes)
    return float(agreement * (1 - concentration) / denominator) if denominator > 0 else float("nan")


def refinement_rounds(
    segments: pd.DataFrame,
    scheme: CodingScheme,
    *,
    agreement: Sequence[float] = (0.5, 0.8, 0.95),
    target: float = 0.70,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The refinement loop of 7.4.5 as data: rounds of double coding until every kappa >= ``target``.

    Parameters
    ----------
    segments : DataFrame
        The segments the two researchers double-code (the ICR transcripts), from
        :func:`hce.study.reasoning.reasoning_segments` of simulated replies.
    scheme : CodingScheme
    agreement : sequence of float
        ``coder_2``'s agreement with the truth in each round (module notes).
    target : float
        The kappa every dimension must reach to end the loop.
    random_state : int, Generator or None

    Returns
    -------
    (codes, rounds)
        ``codes``: both coders' codes of the last round (``coder_1`` the truth); ``rounds``:
        per round and dimension, :func:`hce.study.reasoning.intercoder_agreement`'s row
        with ``round``, ``agreement`` and ``expected_kappa`` (the known truth) in front.
        The loop stops at the first round where every dimension meets ``target``, or after
        the last round (then the last row's ``meets_target`` says it did not).
    """
    if not len(agreement):
        raise DataError("simulated coders need at least one refinement round (agreement: [...])")
    rng = as_generator(random_state)
    boot = rng.spawn(1)[0]  # the kappa intervals' own stream: the coders' draws stay as they were
    first = true_codes(segments, scheme)
    frames, codes = [], first
    for number, a in enumerate(agreement, start=1):
        codes = pd.concat([first, second_coder(first, scheme, float(a), rng)], ignore_index=True)
        kappa = intercoder_agreement(codes, scheme, coders=["coder_1", "coder_2"], target=target, random_state=boot)
        known = [expected_kappa(first[d.id], d.codes, float(a)) for d in scheme.dimensions]
        frames.append(kappa.assign(round=number, agreement=float(a), expected_kappa=known))
        if bool(kappa["meets_target"].all()):
            break
    rounds = pd.concat(frames, ignore_index=True)
    front = ["round", "agreement", "dimension", "expected_kappa"]
    return codes, rounds[front + [c for c in rounds.columns if c not in front]]
