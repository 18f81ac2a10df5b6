"""Perturbation probes: a twin of every condition, judged on items transformed so the rubric's answer cannot change.

A design's ``probes:`` section lists probes (issue 47)::

    probes:
      - {id: pad1k, kind: pad_neutral, chars: 1000}   # 1,000 characters of small talk before the text
      - {id: shuffle, kind: shuffle_criteria}          # the rubric's criteria in another order, seeded per item
      - {id: labels, kind: swap_labels}                # Doctor/Patient -> Clinician/Person
      - {id: reversed, kind: position}                 # several texts in one item: their order reversed
      - {id: self, kind: author}                       # items carry author_model: self-preference

Each transforming probe adds, for every condition ``C``, a twin condition ``C~<probe id>``
with the same settings, judged on every item transformed; its rows carry ``probe_id`` and
``base_condition_id`` (``C``), so :func:`hce.stats.probe_effect` matches each perturbed
attempt with its original. The twins are conditions like any other: planned, priced by the dry
run, resumed and fingerprinted (the probe's settings are part of the twin's fingerprint).
The ``author`` probe adds no call: it checks that every item names its ``author_model``, and
the analysis compares the judge family's scores of its own family's texts with the others'.

The kinds:

* ``pad_neutral`` (``chars``, default 1000): lines of content-free clinic dialogue (greetings,
  scheduling, small talk: ``hce/data/neutral_dialogue.yaml``, documented there), chosen by a
  hash of the item id, inserted before the transcript; exactly ``chars`` characters are added.
* ``shuffle_criteria`` (``seed``, default 0): the rubric's criteria presented in an order drawn
  per item from the seed and the item id; the reply is parsed by criterion name as always.
* ``swap_labels`` (``labels``, default ``{Doctor: Clinician, Patient: Person}``): speaker labels
  at the start of a line renamed; what is said is unchanged.
* ``position`` (``separator``, default a line ``---``): an item holding several texts separated
  by the separator (pairwise or list judging) has their order reversed; an item with one text
  is refused when the design is loaded.
* ``author``: self-preference, from the items' ``author_model`` field.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hce.errors import CollectError
from hce.probe_text import LABELS, SEPARATOR, neutral_pad, probe_key, swap_labels
from hce.rubric import Rubric

KINDS = ("pad_neutral", "shuffle_criteria", "swap_labels", "position", "author")
TWIN = "~"  # a twin condition's id: "<base condition id>~<probe id>"


@dataclass(frozen=True)
class Probe:
    """One probe of a design (module notes): its id, kind and settings.

    Examples
    --------
    >>> from hce.collect.design.probes import Probe
    >>> Probe("pad", "pad_neutral", chars=200).transform_text("Doctor: Hi.", "T1").endswith("Doctor: Hi.")
    True
    """

    id: str
    kind: str
    chars: int = 1000
    seed: int = 0
    labels: Mapping[str, str] = field(default_factory=lambda: dict(LABELS))
    separator: str = SEPARATOR

    @property
    def twins(self) -> bool:
        """Whether the probe judges a transformed twin of every condition (all kinds but ``author``)."""
        return self.kind != "author"

    def spec(self) -> dict[str, Any]:
        """The settings that make the probe, as plain values (hashed into the twin's fingerprint)."""
        return {"id": self.id, "kind": self.kind, "chars": self.chars, "seed": self.seed,
                "labels": dict(self.labels), "separator": self.separator}  # fmt: skip

    def transform_text(self, text: str, item_id: str) -> str:
        """The item's text as the twin sees it (the criteria shuffle leaves it alone)."""
        if self.kind == "pad_neutral":
            return neutral_pad(self.chars, item_id) + text
        if self.kind == "swap_labels":
            return swap_labels(text, self.labels)
        if self.kind == "position":
            return self.separator.join(reversed(text.split(self.separator)))
        return text

    def transform_rubric(self, rubric: Rubric, item_id: str) -> Rubric:
        """The rubric as the twin presents it: its criteria shuffled for ``shuffle_criteria``."""
        if self.kind != "shuffle_criteria":
            return rubric
        order = list(rubric.categories)
        rng = random.Random(probe_key(self.seed, item_id))
        while len(order) > 1 and order == list(rubric.categories):  # another order, never the original
            rng.shuffle(order)
        return replace(rubric, categories=tuple(order))


def load_probes(spec: Any, name: str) -> tuple[Probe, ...]:
    """The design's ``probes:`` section, checked: a list of ``{id, kind, ...}`` with distinct ids."""
    if spec is None:
        return ()
    if not isinstance(spec, list):
        raise CollectError(f"{name}: field 'probes' must be a list of {{id, kind, ...}}")
    allowed = {"pad_neutral": {"chars"}, "shuffle_criteria": {"seed"}, "swap_labels": {"labels"},
               "position": {"separator"}, "author": set()}  # fmt: skip
    probes = []
    for i, entry in enumerate(spec):
        where = f"{name}: probes[{i}]"
        if not isinstance(entry, Mapping) or not entry.get("id") or entry.get("kind") not in KINDS:
            raise CollectError(f"{where} must be a mapping with an 'id' and a 'kind' (one of {list(KINDS)})")
        extra = set(entry) - {"id", "kind"} - allowed[entry["kind"]]
        if extra:
            raise CollectError(f"{where}: unknown key(s) {sorted(extra)} for kind {entry['kind']!r}; "
                               f"it takes {sorted(allowed[entry['kind']]) or 'none'}")  # fmt: skip
        if TWIN in str(entry["id"]):
            raise CollectError(f"{where}: a probe id may not contain {TWIN!r}")
        settings = {k: v for k, v in entry.items() if k not in ("id", "kind")}
        if "chars" in settings and (isinstance(settings["chars"], bool) or not isinstance(settings["chars"], int)):
            raise CollectError(f"{where}: chars must be a whole number of characters, got {settings['chars']!r}")
        if "labels" in settings and not (isinstance(settings["labels"], Mapping) and settings["labels"]):
            raise CollectError(f"{where}: labels must map old speaker labels to new ones, e.g. {{Doctor: Clinician}}")
        probe = Probe(str(entry["id"]), entry["kind"], **settings)
        if probe.kind == "pad_neutral":
            neutral_pad(probe.chars, "check")  # too short a pad: refused here, before any call
        probes.append(probe)
    ids = [p.id for p in probes]
    if len(set(ids)) != len(ids):
        raise CollectError(f"{name}: probe ids must be distinct, got {ids}")
    return tuple(probes)


def check_probe_items(probes: tuple[Probe, ...], items: tuple, name: str) -> None:
    """Refuse items a probe cannot be applied to: no ``author_model`` (author), one text only (position)."""
    for probe in probes:
        for item in items:
            if probe.kind == "author" and not str(item.metadata.get("author_model") or "").strip():
                raise CollectError(f"{name}: probe {probe.id!r} (author) needs every item's author_model; "
                                   f"item {item.id!r} has none")  # fmt: skip
            if probe.kind == "position" and probe.separator not in (item.text or ""):
                raise CollectError(f"{name}: probe {probe.id!r} (position) reverses the texts of an item, but item "
                                   f"{item.id!r} holds one text (no {probe.separator!r} separator)")  # fmt: skip


def twin_conditions(conditions: tuple, probes: tuple[Probe, ...]) -> tuple:
    """Every condition, then its twin for each transforming probe (``C~<probe id>``, ``probe`` set)."""
    twins = [replace(c, id=f"{c.id}{TWIN}{p.id}", probe=p) for p in probes if p.twins for c in conditions]
    return (*conditions, *twins)


def probe_columns(cond: Any, item_id: str, rubric: Rubric) -> dict[str, Any]:
    """The log columns of a twin's rows: ``probe_id`` and ``base_condition_id``; none for an original.

    A ``shuffle_criteria`` twin also logs ``first_criterion`` (the criterion it presented first)
    and ``base_first_criterion`` (the original's), from which
    :func:`hce.stats.probe_effect` estimates the effect of being presented first.
    """
    probe = getattr(cond, "probe", None)
    if probe is None:
        return {}
    columns = {"probe_id": probe.id, "base_condition_id": cond.id.rsplit(TWIN, 1)[0]}
    if probe.kind == "shuffle_criteria":
        columns["first_criterion"] = probe.transform_rubric(rubric, item_id).criteria[0]
        columns["base_first_criterion"] = rubric.criteria[0]
    return columns
