"""``hce audit DESIGN``: run a design's probes and write the judge's bias audit (issue 47, item 5).

The design's ``probes:`` (``hce.collect.design.probes``) are collected like any condition into
the attempt log (rerunning resumes), then :func:`audit_tables` measures, per probe and rubric
criterion, the paired effect with its interval and its equivalence verdict at ``margin``
(:func:`hce.stats.probe_effect`), the observational length slope of the original attempts
(:func:`hce.stats.length_bias`, the items' text lengths) and, when the log holds several
periods (``period`` column, default ``model_version``), the golden-set drift chart
(:func:`hce.stats.drift`). :func:`write_audit` writes them as ``audit.md`` and one CSV each.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

import hce.stats as hs
from hce.collect.design.design import Design, load_design

PROBE_COLUMNS = ["criterion", "probe", "estimate", "ci_low", "ci_high", "p_value", "margin", "equivalent", "n_items"]


def audit_tables(log: pd.DataFrame, design: Design, *, margin: float = 0.25, period: str = "model_version",
                 confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """The audit's tables from a collected log: ``probes``, ``length_bias`` and (with several periods) ``drift``.

    Parameters
    ----------
    log : DataFrame
        The attempt log of ``design``.
    design : Design
        The design with its probes.
    margin : float
        The equivalence margin in score points (default 0.25).
    period : str
        The drift's period column (default ``model_version``); no drift table with one period.
    confidence : float
        Level of every interval (default 0.95).

    Returns
    -------
    dict of str -> DataFrame
    """
    criteria = [c for c in design.rubric.criteria if c in log.columns]
    ok = log[~log["error_flag"].astype(bool)] if "error_flag" in log.columns else log
    tables: dict[str, pd.DataFrame] = {}
    results = []
    for probe in design.probes:
        if probe.kind == "author":
            results.append(hs.probe_effect(ok, probe="author", score=criteria, margin=margin, confidence=confidence))
        else:
            results.append(hs.probe_effect(ok, probe=probe.id, score=criteria, margin=margin, confidence=confidence)
                           .assign(probe=probe.id))  # fmt: skip
    if results:
        tables["probes"] = pd.concat(results, ignore_index=True)
    originals = ok[ok["probe_id"].isna()] if "probe_id" in ok.columns else ok
    lengths = {item.id: len(item.text or "") for item in design.items}
    with_length = originals.assign(text_chars=originals["item_id"].map(lengths))
    if with_length["text_chars"].nunique() > 1:
        tables["length_bias"] = hs.length_bias(with_length, length="text_chars", score=criteria, confidence=confidence)
    if period in originals.columns and originals[period].nunique() > 1:
        tables["drift"] = hs.drift(originals, period=period, score=criteria, confidence=confidence)
    return tables


def write_audit(tables: dict[str, pd.DataFrame], out: str | os.PathLike, *, title: str = "Judge bias audit") -> Path:
    """Write ``audit.md`` (and ``<table>.csv`` for each table) into ``out``; returns the Markdown file.

    Parameters
    ----------
    tables : dict of str -> DataFrame
        From :func:`audit_tables`.
    out : path
        The folder (created).
    title : str
        The report's title (default ``"Judge bias audit"``).

    Returns
    -------
    Path
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    lines += judge_bias_section(tables)
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    path = out / "audit.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def judge_bias_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The "Judge biases" section's Markdown lines: each probe's effect and verdict, the length slope, drift alarms."""
    lines = ["## Judge biases", ""]
    probes = tables.get("probes")
    if probes is not None:
        lines += ["Each probe's effect (perturbed minus original, score points; 95% CI) and the equivalence verdict "
                  "(TOST: 'equivalent' only when both one-sided tests reject).", ""]  # fmt: skip
        lines += ["| probe | criterion | effect | 95% CI | p | margin | verdict |", "|---|---|---|---|---|---|---|"]
        for r in probes.itertuples(index=False):
            verdict = "" if pd.isna(r.equivalent) else "equivalent" if r.equivalent else "not shown equivalent"
            lines.append(f"| {r.probe} | {r.criterion} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | "
                         f"{r.p_value:.3g} | {r.margin:g} | {verdict} |")  # fmt: skip
        lines.append("")
    length = tables.get("length_bias")
    if length is not None:
        lines += ["Length: the slope of each criterion's score on the text's length (points per 1,000 characters, "
                  "item-clustered SE; observational).", "", "| criterion | slope | 95% CI | p |", "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {r.criterion} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.p_value:.3g} |"
                  for r in length.itertuples(index=False)]  # fmt: skip
        lines.append("")
    drift = tables.get("drift")
    if drift is not None:
        lines += ["Drift: per period the paired shift from the baseline, agreement and the control chart "
                  "(alarm: the chart statistic outside its limit).", "",
                  "| criterion | period | shift | 95% CI | agreement | chart | limit | alarm |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        lines += [f"| {r.criterion} | {r.period} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | "
                  f"{r.agreement:.3f} | {r.chart_statistic:.3f} | {r.limit:.3f} | {'ALARM' if r.alarm else ''} |"
                  for r in drift.itertuples(index=False)]  # fmt: skip
        lines.append("")
    return lines


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
