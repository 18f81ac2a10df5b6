"""``hce collect --golden``: judge a golden design again as the next period of its history (issue 47).

A golden set is a fixed design (items, conditions, attempts) judged again every period, so a
provider that ships a new version under the same model name shows up as a shift of the same
items' scores (seed 001, section 7.5). Each ``--golden`` run appends one period to the log:
its rows carry ``golden_run`` (1, 2, ...), which is part of their attempt ids, so the period's
attempts are new ones and not "already done". :func:`hce.stats.drift` reads the history with
``period="golden_run"``; the report and ``hce audit`` chart it.

Which period a run judges: the last period of the log while it is unfinished (an interrupted
run resumes it, nothing is judged twice), else the next one.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

from hce.collect.design.design import Design
from hce.log import TruncatedLogWarning, read_jsonl

COLUMN = "golden_run"


def next_golden_run(design: Design, log: str | os.PathLike) -> int:
    """The period a golden run of ``design`` into ``log`` judges: the last one if unfinished, else the next.

    Parameters
    ----------
    design : Design
        The golden design.
    log : path
        Its history (a JSONL attempt log; absent: period 1).

    Returns
    -------
    int

    Examples
    --------
    >>> from hce.collect import load_design
    >>> design = load_design({"experiment_id": "golden", "attempts": 1,
    ...                       "items": [{"id": "T1", "text": "Doctor: Hi."}],
    ...                       "conditions": [{"prompt": "P1.2", "model": "gpt-4.1-mini"}]})
    >>> next_golden_run(design, "no-such-history.jsonl")
    1
    """
    path = Path(log)
    runs = []
    if path.exists():
        with warnings.catch_warnings():  # a torn last line is the run's to report and repair (LogWriter)
            warnings.simplefilter("ignore", TruncatedLogWarning)
            records, _ = read_jsonl(path)
        runs = [int(r[COLUMN]) for r in records if r.get(COLUMN) is not None]
    if not runs:
        return 1
    last = max(runs)
    planned = len(golden_design(design, last).plan())
    return last if runs.count(last) < planned else last + 1


def golden_design(design: Design, run: int) -> Design:
    """``design`` as period ``run`` of its golden history: the same attempts under new ids, logged with ``golden_run``.

    Parameters
    ----------
    design : Design
        The golden design.
    run : int
        The period (1, 2, ...).

    Returns
    -------
    Design
    """
    return dataclasses.replace(design, golden_run=int(run))
