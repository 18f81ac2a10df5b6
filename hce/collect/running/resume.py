"""The attempts a run still has to send, and the checks that its log may be resumed with this design."""

from __future__ import annotations

import os

from hce.collect.design.design import Attempt, Design
from hce.collect.design.fingerprint import check_resume, keep_settings
from hce.collect.design.transcripts import clean_text
from hce.errors import CollectError
from hce.log_files import logged_attempt_ids
from hce.rubric import load_rubric, log_rubric_path, rubric_yaml


def pending(design: Design, log: str | os.PathLike) -> tuple[list[Attempt], list[Attempt]]:
    """(every planned attempt, those not yet in ``log``), in plan order.

    Raises :class:`CollectError` when the log holds rows of a condition made with other
    settings or of an item whose text changed (:func:`~hce.collect.design.fingerprint.check_resume`)
    or another rubric. What the rows are made of is kept beside the log
    (``<log>.settings.json``), and a rubric other than v5 (``<log>.rubric.yaml``) for the
    report to read.
    """
    check_resume(design, log)
    keep_settings(design, log)  # what the rows are made of, so a later change is named exactly
    keep_rubric(design, log)
    planned = design.plan()
    logged = logged_attempt_ids(log)
    return planned, [a for a in planned if a.attempt_id not in logged]


def keep_rubric(design: Design, log: str | os.PathLike) -> None:
    """Write the design's rubric beside the log, or stop if the log was judged with another one."""
    if design.rubric == load_rubric("v5"):
        return  # the PRD's rubric: the report knows it from the log's columns
    path, text = log_rubric_path(log), rubric_yaml(design.rubric)
    if path.exists() and load_rubric(path) != design.rubric:
        raise CollectError(f"{log} was judged with the rubric in {path} ({load_rubric(path).name!r}), not with this "
                           f"design's rubric {design.rubric.name!r}; write to a new log (or remove both files)")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def check_texts(design: Design) -> None:
    """Refuse, before any call, a transcript that is empty once cleaned (only control or zero-width characters)."""
    if {c.prompt_id for c in design.conditions} <= {"BOOL", "SYNTH", *design.prompts}:
        return
    for item in design.items:
        if not clean_text(item.text or "").text.strip():
            raise CollectError(f"item {item.id!r}: the transcript is empty once control and zero-width characters are removed")
