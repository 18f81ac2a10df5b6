"""Biases of known size planted in the simulated judge: the truth :func:`hce.stats.probe_effect` and :func:`hce.stats.drift` recover.

:class:`PlantedBiases` (``hce sim-server --length-bias B --order-bias B --self-preference B
--drift-after N --drift-shift D``) shifts the mean of the judge's score distribution (the
``L_k + b_c`` of :mod:`hce.sim`, "The judge") on every category of a score block or
step-by-step reply:

* ``length``: ``B`` points per 1,000 characters of the judged text (the item text the prompt
  shows), so away from the scale's ends a text 1,000 characters longer scores ``B`` higher;
* ``order``: ``B`` points on the category the prompt presents first;
* ``self_preference``: ``B`` points when the text's author (``authors``: item text ->
  ``author_model``, as the design's items give it) is of the judge's model family
  (:func:`hce.model_families.model_family`);
* ``drift_after`` / ``drift_shift``: after the first ``N`` completions every score moves by ``D``.

A bare holistic total moves by the sum over its ``n`` categories (``n`` times the shift).

What a probe changes is seen through the latent levels too: an item's levels (its truth) are
those of its *canonical* text (:func:`canonical_text`): the lines of content-free dialogue a
``pad_neutral`` probe adds are left out, speaker labels renamed by ``swap_labels`` are read back
and texts reversed by ``position`` are put in a fixed order, so a probe moves the scores by the
planted bias alone, as the probes assume of a fair judge.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hce.probe_text import LABELS, SEPARATOR, is_neutral_line
from hce.sim.truth import text_key
from hce.errors import HceError
from hce.model_families import model_family


@dataclass
class PlantedBiases:
    """The planted biases of a simulated judge (module notes); all 0 by default.

    Examples
    --------
    >>> from hce.sim.biases import PlantedBiases
    >>> b = PlantedBiases(length=0.5)
    >>> b.shift("Patient: hi." * 100, "gpt-4o", first=False)
    0.6
    """

    length: float = 0.0
    order: float = 0.0
    self_preference: float = 0.0
    drift_after: int | None = None
    drift_shift: float = 0.0
    authors: Mapping[str, str] = field(default_factory=dict)  # text_key(canonical text) -> author_model
    _served: int = field(default=0, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.drift_after is not None and self.drift_after < 0:
            raise HceError(f"drift_after must be a number of completions >= 0, got {self.drift_after!r}")
        self.authors = {text_key(canonical_text(text)): str(author) for text, author in dict(self.authors).items()}

    def count(self) -> int:
        """Count one completion; its number from 0 (the drift begins at ``drift_after``)."""
        with self._lock:
            served = self._served
            self._served += 1
        return served

    def shift(self, item: str, model: str, *, first: bool, served: int = 0) -> float:
        """Points added to one category's mean for this item, judge and position."""
        total = self.length * len(item) / 1000.0
        if first:
            total += self.order
        if self.self_preference:
            author = self.authors.get(text_key(canonical_text(item)))
            if author is not None and model_family(author) == model_family(model):
                total += self.self_preference
        if self.drift_after is not None and served >= self.drift_after:
            total += self.drift_shift
        return total


def read_authors(path: str | os.PathLike) -> dict[str, str]:
    """Item text -> ``author_model`` from a design's items file (``.jsonl`` or ``.csv`` with ``text`` and ``author_model``).

    Parameters
    ----------
    path : path
        The items file.

    Returns
    -------
    dict of str -> str
    """
    path = Path(path)
    if not path.is_file():
        raise HceError(f"authors file {path} does not exist")
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif path.suffix == ".csv":
        import pandas as pd  # only for a CSV of authors: the simulator starts without pandas

        rows = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
    else:
        raise HceError(f"authors file {path}: expected a .jsonl or .csv items file with text and author_model")
    authors = {}
    for i, row in enumerate(rows):
        metadata = {**(row.get("metadata") or {}), **row} if isinstance(row, dict) else {}
        if not metadata.get("text") or not metadata.get("author_model"):
            raise HceError(f"authors file {path}: row {i + 1} has no text or no author_model")
        authors[str(metadata["text"])] = str(metadata["author_model"])
    return authors


def canonical_text(item: str) -> str:
    """The item text a probe started from: neutral pad lines out, labels read back, several texts in a fixed order.

    Examples
    --------
    >>> canonical_text("Patient: Okay. Oh.\\nClinician: How are you?\\nPerson: Fine.")
    'Doctor: How are you?\\nPatient: Fine.'
    """
    lines = item.split("\n")
    while lines and is_neutral_line(lines[0]):
        lines.pop(0)
    text = "\n".join(lines)
    for old, new in LABELS.items():
        text = text.replace(f"\n{new}:", f"\n{old}:")
        if text.startswith(f"{new}:"):
            text = old + text[len(new):]
    if SEPARATOR in text:
        text = SEPARATOR.join(sorted(text.split(SEPARATOR)))
    return text
