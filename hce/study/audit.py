"""``hce audit DESIGN``: run a design's probes and write the judge's bias audit (issue 47, item 5).

The design's ``probes:`` (``hce.collect.design.probes``) are collected like any condition into
the attempt log (rerunning resumes), then :func:`audit_tables` measures, per probe and rubric
criterion, the paired effect with its interval and its equivalence verdict at ``margin``
(:func:`hce.stats.probe_effect`), the observational length slope of the original attempts
(:func:`hce.stats.length_bias`, the items' text lengths) and, when the log holds several
periods (``period`` column, default ``model_version``, or a golden history's ``golden_run``),
the golden-set drift table and chart (:func:`hce.stats.drift`). The section is the reports'
"Judge biases" (:mod:`hce.report.biases`); :func:`write_audit` writes it as ``audit.md``, the
report's HTML, tables and figures, and one CSV each.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from hce.collect.design.design import Design, load_design
from hce.report.biases import AUTHOR, GOLDEN, TITLE, add_bias_blocks, bias_tables
from hce.report.document import Report


def audit_tables(log: pd.DataFrame, design: Design, *, margin: float = 0.25, period: str = "model_version",
                 confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """The audit's tables from a collected log: ``probes``, ``length_bias`` and (with several periods) ``drift``.

    The tables of the report section "Judge biases" (:func:`hce.report.biases.bias_tables`),
    with the items' text lengths from the design and the design's author probes.

    Parameters
    ----------
    log : DataFrame
        The attempt log of ``design``.
    design : Design
        The design with its probes.
    margin : float
        The equivalence margin in score points (default 0.25).
    period : str
        The drift's period column (default ``model_version``; a golden history's
        ``golden_run`` when the log has it); no drift table with one period.
    confidence : float
        Level of every interval (default 0.95).

    Returns
    -------
    dict of str -> DataFrame
    """
    criteria = [c for c in design.rubric.criteria if c in log.columns]
    lengths = {item.id: len(item.text or "") for item in design.items}
    if not any(probe.kind == "author" for probe in design.probes) and AUTHOR in log:
        log = log.drop(columns=AUTHOR)  # authored texts are a probe only when the design asks for one
    period = GOLDEN if GOLDEN in log and log[GOLDEN].nunique() > 1 else period
    return bias_tables(log.assign(text_chars=log["item_id"].map(lengths)), criteria, margin=margin, length="text_chars",
                       period=period, confidence=confidence)  # fmt: skip


def write_audit(tables: dict[str, pd.DataFrame], out: str | os.PathLike, *, title: str = "Judge bias audit") -> Path:
    """Write the audit into ``out``: ``audit.md``, the report's files (``report.html``, ``tables/``, the drift
    charts in ``figures/``) and ``<table>.csv`` for each table; returns the Markdown file.

    Parameters
    ----------
    tables : dict of str -> DataFrame
        From :func:`audit_tables`.
    out : path
        The folder (replaced as a whole, as :meth:`hce.report.Report.write` replaces a report's).
    title : str
        The report's title (default ``"Judge bias audit"``).

    Returns
    -------
    Path
    """
    document = Report(title)
    add_bias_blocks(document.section(TITLE), tables)
    out = document.write(out)
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    path = out / "audit.md"
    path.write_text(document.to_markdown(), encoding="utf-8")
    return path


def run_audit(design: str | os.PathLike, log: str | os.PathLike, out: str | os.PathLike, *, margin: float = 0.25,
              period: str = "model_version", **run_kwargs) -> Path:
    """Collect ``design`` (with its probes) into ``log``, then write the audit into ``out``; returns ``audit.md``.

    Parameters
    ----------
    design : path
        The design YAML, with a ``probes:`` section.
    log : path
        The attempt log (rerunning resumes it).
    out : path
        The report folder.
    margin : float
        The equivalence margin in score points (default 0.25).
    period : str
        The drift's period column (default ``model_version``).
    **run_kwargs
        Passed to :func:`hce.collect.run` (``base_url``, ``concurrency``, ``client``, ...).

    Returns
    -------
    Path
    """
    import hce
    from hce.collect.running.runner import run

    parsed = load_design(design)
    run(parsed, log, **run_kwargs)
    tables = audit_tables(hce.read_log(log), parsed, margin=margin, period=period)
    return write_audit(tables, out)
