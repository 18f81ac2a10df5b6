"""The report section "Judge biases" (issue 47): written when a log carries probe rows
(``probe_id``, the twins of ``hce.collect.design.probes``), texts with their ``author_model``
or a golden-set history (``golden_run``, ``hce collect --golden``); absent otherwise.

Per probe and criterion: the paired effect (perturbed minus original) with its interval and
the equivalence verdict at ``margin`` (:func:`hce.stats.probe_effect`); the observational
length slope when a length column is given (:func:`hce.stats.length_bias`); per criterion of
a golden history the drift table and chart (:func:`hce.stats.drift`,
:func:`hce.report.figures.drift_chart`). The probe and drift models are fitted in memory: a
log of another engine (DuckDB, Polars, Spark, Dask) gives only the columns they read
(:data:`READ`, plus the criteria). The generic report (:func:`hce.report.report`), the
study report and ``hce audit`` all build it here; every number comes from :mod:`hce.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

import hce.stats as hs
from hce.report import figures
from hce.report.document import Figure, Report, Section
from hce.report.log_frame import log_frame, rows
from hce.report.sections import _attempt, _Context
from hce.report.tables import Table

TITLE = "Judge biases"
PROBE = "probe_id"
AUTHOR = "author_model"
GOLDEN = "golden_run"
#: The equivalence margin of the report's probe tests, in score points.
MARGIN = 0.25
#: The columns the section reads besides the criteria (those a log has).
READ = ("item_id", "condition_id", "error_flag", "model", PROBE, "base_condition_id", AUTHOR, GOLDEN,
        "first_criterion", "base_first_criterion")  # fmt: skip


def has_bias_rows(log: pd.DataFrame) -> bool:
    """Whether a log holds what the section reads: probe twins, authored texts or a golden history.

    Examples
    --------
    >>> has_bias_rows(pd.DataFrame({"item_id": ["a"], "probe_id": [None]}))
    False
    >>> has_bias_rows(pd.DataFrame({"item_id": ["a", "a"], "golden_run": [1, 2]}))
    True
    """
    view = log_frame(log)  # counted in the log's engine: a lazy log is not read for this
    total = view.count_rows()
    return bool(any(c in view.columns and view.count_blank(c) < total for c in (PROBE, AUTHOR))
                or (GOLDEN in view.columns and view.count_distinct(GOLDEN) > 1))  # fmt: skip


def bias_tables(log: pd.DataFrame, criteria: Sequence[str], *, margin: float = MARGIN, length: str | None = None,
                period: str | None = None, confidence: float = 0.95) -> dict[str, pd.DataFrame]:  # fmt: skip
    """The section's tables from a log: ``probes``, ``length_bias`` and ``drift``, each when the log holds it.

    Parameters
    ----------
    log : DataFrame
        Attempt rows (flagged attempts are left out here).
    criteria : list of str
        The score columns.
    margin : float
        The equivalence margin in score points (default 0.25).
    length : str, optional
        A column of the judged text's length in characters: the length slope of the original
        (unprobed) attempts. Default None: no length table.
    period : str, optional
        The drift's period column (default None: ``golden_run`` when the log has it); no drift
        table with fewer than two periods.
    confidence : float
        Level of every interval (default 0.95).

    Returns
    -------
    dict of str -> DataFrame

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> log = pd.DataFrame([{"item_id": i, "golden_run": t, "accuracy": rng.normal(3)} for t in (1, 2, 3) for i in range(10)])
    >>> list(bias_tables(log, ["accuracy"]))
    ['drift']
    """
    ok = log[~log["error_flag"].fillna(False).astype(bool)] if "error_flag" in log else log
    tables: dict[str, pd.DataFrame] = {}
    results = [hs.probe_effect(ok, probe=probe, score=list(criteria), margin=margin, confidence=confidence).assign(probe=probe)
               for probe in (ok[PROBE].dropna().unique() if PROBE in ok else [])]  # fmt: skip
    if AUTHOR in ok and ok[AUTHOR].notna().any():
        results.append(hs.probe_effect(ok, probe="author", score=list(criteria), margin=margin, confidence=confidence))
    if results:
        tables["probes"] = pd.concat(results, ignore_index=True)
    originals = ok[ok[PROBE].isna()] if PROBE in ok else ok
    if length is not None and originals[length].nunique() > 1:
        tables["length_bias"] = hs.length_bias(originals, length=length, score=list(criteria), confidence=confidence)
    period = period or (GOLDEN if GOLDEN in originals else None)
    if period is not None and period in originals and originals[period].nunique() > 1:
        tables["drift"] = hs.drift(originals, period=period, score=list(criteria), confidence=confidence)
    return tables


def add_bias_blocks(section: Section, tables: dict[str, pd.DataFrame], *, confidence: float = 0.95, prefix: str = "") -> Section:
    """Add the tables of :func:`bias_tables` to ``section``, with one drift chart per criterion.

    Parameters
    ----------
    section : Section
        The report section written into.
    tables : dict of str -> DataFrame
        From :func:`bias_tables`.
    confidence : float
        The intervals' level (default 0.95).
    prefix : str
        Prepended to the file stems (default ""), so two experiments' sections do not collide.

    Returns
    -------
    Section
    """
    level = f"{confidence:.0%}"
    if "probes" in tables:
        section.add(f"Each probe's effect: perturbed minus original score on the same items (items random; {level} CI), "
                    "with the equivalence test (TOST: 'equivalent' only when both one-sided tests reject at the margin).",
                    Table(tables["probes"], "Probe effects and equivalence verdicts", f"{prefix}bias_probes", confidence))  # fmt: skip
    if "length_bias" in tables:
        section.add(Table(tables["length_bias"], "Length bias: score slope per 1,000 characters of text (item-clustered SE; "
                          "observational)", f"{prefix}bias_length", confidence))  # fmt: skip
    if "drift" in tables:
        drift = tables["drift"]
        alarms = drift.loc[drift["first_alarm"].fillna(False).astype(bool), ["criterion", "period"]]
        verdict = ("; ".join(f"{r.criterion} alarms first at period {r.period}" for r in alarms.itertuples())
                   or "no criterion alarms")  # fmt: skip
        section.add(f"Golden-set drift: per period the paired shift from the baseline period on the same items and a "
                    f"control chart (in-control average run length 370 periods): {verdict}.",
                    Table(drift, "Drift on the golden set, per criterion and period", f"{prefix}bias_drift", confidence))  # fmt: skip
        for criterion, rows in drift.groupby("criterion", sort=False):
            chart = "CUSUM" if "CUSUM" in str(rows["method"].iloc[-1]) else "EWMA"
            section.add(Figure(figures.drift_chart(rows), f"{prefix}drift_{criterion}",
                               f"Drift of {criterion} on the golden set: above, each period's mean paired shift from the "
                               f"baseline ({level} CI); below, the {chart} statistic and its control limits (dashed), "
                               "alarms filled."))  # fmt: skip
    return section


def judge_bias_section(document: Report, context: _Context) -> None:
    """Write the section into a report when the log holds probe, author or golden rows; nothing otherwise."""
    if not has_bias_rows(context.log):
        return
    section = document.section(TITLE)
    criteria = [c.column for c in context.criteria if c.column in log_frame(context.log).columns]

    def build() -> None:
        log = rows(log_frame(context.log), [*READ, *criteria])
        add_bias_blocks(section, bias_tables(log, criteria, confidence=context.confidence), confidence=context.confidence)

    _attempt(context, section, "judge's biases", build)
