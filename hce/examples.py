"""Example inputs that ship with hce, for trying a guide before your own transcripts are ready.

The dialogues are hce's demo corpus (``hce/data/demo_corpus.jsonl``): short doctor-patient
conversations written for hce, the same that ``hce demo`` judges.
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path

from hce._paths import output_folder
from hce.errors import DataError


def write_example_inputs(folder: str | os.PathLike, *, n: int | None = None) -> list[Path]:
    """Write hce's demo dialogues as a design's inputs: ``transcripts/*.txt`` and ``summaries.jsonl``.

    The two forms a design's ``items:`` reads: a folder of ``.txt`` files (the item id is the
    file name) and a JSONL file of ``{"id", "text"}`` rows. Existing files of the same names are
    replaced; nothing else in ``folder`` is touched.

    Parameters
    ----------
    folder : str or path-like
        Where to write (created if missing).
    n : int, optional
        The first ``n`` dialogues only (default: all 24). Six are enough to try every page of
        the guide quickly with the simulated judge.

    Returns
    -------
    list of Path
        The files written: the transcripts, then ``summaries.jsonl``.

    Examples
    --------
    >>> import tempfile
    >>> written = write_example_inputs(tempfile.mkdtemp(), n=2)
    >>> [p.name for p in written]
    ['DEMO01.txt', 'DEMO02.txt', 'summaries.jsonl']
    """
    corpus = [json.loads(line) for line in files("hce").joinpath("data/demo_corpus.jsonl").read_text("utf-8").splitlines()]
    if n is not None and not 1 <= n <= len(corpus):
        raise DataError(f"n must be between 1 and {len(corpus)} (the demo dialogues hce ships); got {n}")
    rows = corpus[:n]
    root = Path(folder)
    output_folder(root, "folder")
    (root / "transcripts").mkdir(parents=True, exist_ok=True)
    written = []
    for row in rows:
        path = root / "transcripts" / f"{row['transcript_id']}.txt"
        path.write_text(row["text"], encoding="utf-8")
        written.append(path)
    summaries = root / "summaries.jsonl"
    summaries.write_text("".join(json.dumps({"id": r["transcript_id"], "text": r["text"]}) + "\n" for r in rows),
                         encoding="utf-8")
    return [*written, summaries]


def example_design(attempts: int = 3) -> dict:
    """A one-item, one-condition design to try a run on the simulated judge in a few lines.

    Parameters
    ----------
    attempts : int, default 3
        Repeats of the one judgement.

    Returns
    -------
    dict
        A design mapping, as a design YAML file would hold it.

    Examples
    --------
    >>> example_design(2)["attempts"], example_design()["conditions"]
    (2, [{'prompt': 'P1.2', 'model': 'gpt-4.1-mini'}])
    """
    return {"attempts": attempts, "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}],
            "items": [{"id": "T1", "text": "Doctor: How are you?\nPatient: I walk sometimes."}]}

