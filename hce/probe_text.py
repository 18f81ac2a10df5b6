"""The text of perturbation probes: the neutral padding, the speaker labels, the separator.

The design's probes (``hce.collect.design.probes``) write these transforms and the simulated
judge (``hce.sim.biases``) reads them back to plant a bias of known size, so both sides share
this one definition of what a probe adds to a text.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from importlib import resources

import yaml

from hce.errors import CollectError

LABELS = {"Doctor": "Clinician", "Patient": "Person"}
SEPARATOR = "\n---\n"
PAD_SPEAKER = "Patient: "


def probe_key(*parts: object) -> int:
    """A stable integer from the parts: the same item gets the same pad and order in every run."""
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:16], 16)


@functools.cache
def neutral_pool() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The packaged content-free lines and filler words (``hce/data/neutral_dialogue.yaml``)."""
    doc = yaml.safe_load(resources.files("hce.data").joinpath("neutral_dialogue.yaml").read_text(encoding="utf-8"))
    return tuple(doc["lines"]), tuple(doc["fillers"])


def _filler(length: int) -> str:
    """Filler words (``Okay. Oh.``) of exactly ``length`` characters, ``length >= 3``."""
    fillers = {len(w): w for w in neutral_pool()[1]}
    words = []
    while length > 11:  # "Okay. " at a time, until one or two words finish it
        words.append(fillers[5])
        length -= 6
    words += [fillers[length]] if length <= 7 else [fillers[3], fillers[length - 4]]
    return " ".join(words)


def neutral_pad(chars: int, item_id: str) -> str:
    """Exactly ``chars`` characters of content-free dialogue lines, each ending in a newline.

    Examples
    --------
    >>> pad = neutral_pad(300, "T1")
    >>> len(pad), pad.endswith("\\n"), all(line.split(":")[0] in ("Doctor", "Patient") for line in pad.splitlines())
    (300, True, True)
    """
    lines, _ = neutral_pool()
    minimum = len(PAD_SPEAKER) + 3 + 1  # the shortest filler line
    if chars < minimum:
        raise CollectError(f"pad_neutral: chars must be at least {minimum}, got {chars}")
    order = sorted(range(len(lines)), key=lambda i: probe_key("pad", item_id, i))
    out, remaining = [], chars
    for _ in range(4 * chars // min(map(len, lines)) + 1):  # cycle the pool for a long pad
        fitted = False
        for i in order:
            cost = len(lines[i]) + 1
            if remaining - cost >= minimum:
                out.append(lines[i])
                remaining -= cost
                fitted = True
        if not fitted:
            break
    out.append(PAD_SPEAKER + _filler(remaining - len(PAD_SPEAKER) - 1))
    return "\n".join(out) + "\n"


def is_neutral_line(line: str) -> bool:
    """Whether a line is one :func:`neutral_pad` writes (a pool line or a filler line), under any speaker label.

    Examples
    --------
    >>> is_neutral_line("Patient: Okay. Oh."), is_neutral_line("Patient: My chest hurts.")
    (True, False)
    """
    fillers = neutral_pool()[1]
    said = line.partition(": ")[2]
    if said and said in _neutral_sayings():
        return True
    words = said.split(" ")
    return bool(said) and all(w in fillers for w in words)


@functools.cache
def _neutral_sayings() -> frozenset[str]:
    return frozenset(line.partition(": ")[2] for line in neutral_pool()[0])


def swap_labels(text: str, labels: Mapping[str, str]) -> str:
    """Speaker labels at the start of a line renamed (``Doctor:`` -> ``Clinician:``).

    Examples
    --------
    >>> swap_labels("Doctor: Hi.\\nPatient: Hello, Doctor.", {"Doctor": "Clinician", "Patient": "Person"})
    'Clinician: Hi.\\nPerson: Hello, Doctor.'
    """
    pattern = re.compile(r"^(\s*)(" + "|".join(map(re.escape, labels)) + r")(\s*:)", re.MULTILINE)
    return pattern.sub(lambda m: m.group(1) + labels[m.group(2)] + m.group(3), text)
