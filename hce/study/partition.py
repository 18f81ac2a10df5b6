"""The Set A / Set B / Set C partition of seed 000 section 4, reproducible outside hce.

The protocol: from the master list of TranscriptIDs draw 50 at random without replacement
(Set A, Experiment 2), then 50 from the remainder (Set B, Experiment 3); the rest is Set C
(Experiment 5); record the seed, ``SEED_DATA_PARTITION = 12345``.

The algorithm (a keyed-hash shuffle)
------------------------------------
1. Master list: the TranscriptIDs as text, unique.
2. Each ID gets the key ``SHA-256(UTF-8("<seed>:<id>"))`` as a 64-digit lower-case hex
   string, e.g. ``sha256("12345:T001")``.
3. Order the IDs by key (ties, which SHA-256 makes practically impossible, by ID).
4. Set A = the first 50 of that order, Set B = the next 50, Set C = the rest.

Ordering by a keyed hash is a uniformly random permutation that depends on nothing but the
seed and the IDs, so steps 3-4 are exactly "50 without replacement, then 50 from the
remainder". Unlike a pseudo-random generator's stream (NumPy documents that its
``Generator`` streams may change between versions; Python's ``random.sample`` is not
specified either) SHA-256 is fixed by a standard (FIPS 180-4): any language reproduces the
sets, and the order does not depend on how the IDs were listed. In R::

    key <- sapply(paste0("12345:", ids), digest::digest, algo = "sha256", serialize = FALSE)
    ordered <- ids[order(key, ids)]
    set_a <- ordered[1:50]; set_b <- ordered[51:100]; set_c <- ordered[-(1:100)]

(R's ``order`` on hex strings of equal length sorts them the same way in any locale.)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from hce._vocabulary import keywords_checked
from hce.errors import DataError

SEED_DATA_PARTITION = 12345
SET_NAMES = ("A", "B", "C")
#: Which experiment uses which set (seed 000 section 4).
SET_EXPERIMENTS = {"A": "EXP2_PromptOptimization", "B": "EXP3_ModelComparison", "C": "EXP5_FinalToolValidation"}
ALGORITHM = "sha256-keyed-shuffle-v1"
ALGORITHM_TEXT = (
    "Order TranscriptIDs by SHA-256(UTF-8('<seed>:<id>')) as lower-case hex (ties by ID); "
    "Set A takes the first IDs of that order, Set B the next, Set C the rest (the sizes below)."
)


def partition_key(transcript_id: str, seed: int = SEED_DATA_PARTITION) -> str:
    """The sort key of one ID: SHA-256 of ``"<seed>:<id>"`` in lower-case hex.

    Examples
    --------
    >>> partition_key("T001")[:16]
    '4903f2ca98edaca7'
    """
    return hashlib.sha256(f"{int(seed)}:{transcript_id}".encode("utf-8")).hexdigest()


@keywords_checked
def partition(
    ids: Iterable[Any],
    *,
    seed: int = SEED_DATA_PARTITION,
    n_a: int = 50,
    n_b: int = 50,
) -> dict[str, list[str]]:
    """Split TranscriptIDs into Set A, Set B and Set C (see the module notes for the algorithm).

    Parameters
    ----------
    ids : iterable
        The master list of TranscriptIDs (converted to text); must be unique.
    seed : int
        SEED_DATA_PARTITION (protocol: 12345).
    n_a, n_b : int
        Sizes of Set A and Set B (protocol: 50 each). Set C gets the rest and must not be
        empty.

    Returns
    -------
    dict
        ``{"A": [...], "B": [...], "C": [...]}``, each list in draw order.

    Examples
    --------
    >>> sets = partition([f"T{i:03d}" for i in range(1, 678)])
    >>> [len(sets[s]) for s in "ABC"]
    [50, 50, 577]
    """
    master = [str(i) for i in ids]
    if len(set(master)) != len(master):
        dup = pd.Series(master)[pd.Series(master).duplicated()].iloc[0]
        raise DataError(f"TranscriptID {dup!r} appears more than once in the master list")
    for name, n in (("n_a", n_a), ("n_b", n_b)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise DataError(f"{name}={n!r} must be a positive whole number")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DataError(f"seed={seed!r} must be a whole number")
    if len(master) < n_a + n_b + 1:
        raise DataError(
            f"the corpus has {len(master)} transcripts; the partition needs more than n_a + n_b = "
            f"{n_a + n_b} (Set A {n_a}, Set B {n_b}, Set C at least 1)"
        )
    ordered = sorted(master, key=lambda i: (partition_key(i, seed), i))
    return {"A": ordered[:n_a], "B": ordered[n_a : n_a + n_b], "C": ordered[n_a + n_b :]}


def partition_table(sets: Mapping[str, list[str]]) -> pd.DataFrame:
    """Sets as a table: ``transcript_id``, ``set``, ``experiment_id``, ``draw`` (1-based order)."""
    rows = [
        {"transcript_id": tid, "set": name, "experiment_id": SET_EXPERIMENTS.get(name), "draw": k}
        for name in SET_NAMES
        for k, tid in enumerate(sets.get(name, []), start=1)
    ]
    return pd.DataFrame(rows, columns=["transcript_id", "set", "experiment_id", "draw"])


def write_manifest(sets: Mapping[str, list[str]], path: str | os.PathLike, *, seed: int, extra: Mapping[str, Any] | None = None) -> None:
    """Write the partition manifest (JSON): seed, algorithm, sizes and the three ID lists."""
    manifest = {
        "seed": int(seed),
        "algorithm": ALGORITHM,
        "algorithm_text": ALGORITHM_TEXT,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "n_master": sum(len(v) for v in sets.values()),
        "sizes": {name: len(sets[name]) for name in SET_NAMES},
        "experiments": SET_EXPERIMENTS,
        **dict(extra or {}),
        "sets": {name: list(sets[name]) for name in SET_NAMES},
    }
    Path(path).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """Read a manifest and check that its sets are disjoint and match its recorded seed.

    Re-deriving the sets from the recorded seed guards against hand edits: a manifest whose
    sets the algorithm does not give is an error.
    """
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read the partition manifest ({exc})") from None
    sets = manifest.get("sets")
    if not isinstance(sets, dict) or set(sets) != set(SET_NAMES):
        raise DataError(f"{path}: 'sets' must hold A, B and C")
    ids = [i for name in SET_NAMES for i in sets[name]]
    again = partition(ids, seed=manifest["seed"], n_a=len(sets["A"]), n_b=len(sets["B"]))
    if again != sets:
        raise DataError(f"{path}: the sets are not those seed {manifest['seed']} gives ({ALGORITHM}); was the file edited?")
    return manifest
