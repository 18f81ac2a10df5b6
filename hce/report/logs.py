"""Which attempt logs a report reads, and what they hold beyond their rows.

Attempt ids hash experiment, item, condition id and attempt number, not the settings, so two
runs of one condition id under different settings (another ``max_tokens``, model or endpoint)
into two logs repeat each other's ids: :func:`read_logs` reads them as the different attempts
they are, refusing only the same attempts twice (or the same settings answered by two
servers). :func:`kept_settings` reads what ``hce collect`` records beside each log (the items
the design planned, the parts of each settings fingerprint) and :func:`missing_attempts` turns
the plan into notes for a half-finished log.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hce.engine_checks import known_unique
from hce.errors import DataError, LogFormatError
from hce.log import combine_logs, read_log
from hce.report.log_frame import log_frame
from hce.report.provenance import NOTES, SETTINGS, log_notes

CONDITION, ITEM = "condition_id", "item_id"
#: Where a frame read by :func:`read_logs` keeps what hce collect recorded beside its logs (``<log>.settings.json``).
KEPT = "hce_kept_settings"


def read_any(log: Any) -> pd.DataFrame:
    """Log paths, frames or a list of them as one frame, with the notes of their reading in ``attrs``."""
    parts = list(log) if isinstance(log, Sequence) and not isinstance(log, str) else [log]
    if not parts:
        raise DataError("no attempt log given")
    if all(isinstance(p, (str, os.PathLike)) for p in parts):
        frame = read_logs(parts)
    else:
        frame = combine_logs([read_log(p) if isinstance(p, (str, os.PathLike)) else p for p in parts])
    notes = log_notes(*(p for p in parts if isinstance(p, pd.DataFrame)))  # a torn line of a log read before
    frame = frame.reset_index(drop=True)
    frame.attrs[NOTES] = notes
    if "error_flag" not in frame:
        frame = frame.assign(error_flag=False)
    return frame


def read_logs(paths: Sequence[str | os.PathLike], schema: str = "strict") -> pd.DataFrame:
    """Log files as one; an attempt id in two files is refused unless its rows were made with different settings.

    Attempt ids hash experiment, item, condition id and attempt number, not the settings, so
    a condition id run again with other settings (another ``max_tokens``, model or endpoint)
    into another log repeats the ids of the first run. Those rows are other attempts: their
    ids are qualified by their file's name and :func:`separate_settings` keeps the two
    conditions apart. Rows repeated with the same settings are the same attempts twice and
    stay refused (by :func:`hce.log.read_log`, naming files and lines). ``schema`` is
    :func:`hce.log.read_log`'s (default "strict": files whose columns differ are refused).
    """
    try:
        frame = read_log(paths, schema=schema)
    except LogFormatError as refused:
        frame = _apart(paths, refused)
    frame.attrs[KEPT] = kept_settings(paths)  # a report of this frame knows what was recorded beside the files
    return frame


def _apart(paths: Sequence[str | os.PathLike], refused: LogFormatError) -> pd.DataFrame:
    """The logs with attempt ids repeated under other settings qualified by file name, or ``refused`` raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first reading already warned (a torn line is noted from it)
        frames = [read_log(p) for p in paths]
    columns = [c for c in SETTINGS if all(c in f for f in frames)]
    if not columns:
        raise refused
    keys = [f[columns].astype("string").fillna("").agg("\x1f".join, axis=1) for f in frames]
    seen: dict[str, str] = {}
    qualified = False
    for k, frame in enumerate(frames):
        ids = frame["attempt_id"].astype(str)
        repeated = ids.isin(seen.keys())
        same = repeated & (ids.map(seen) == keys[k])
        if same.any():
            _refuse_other_server(frames[:k], paths[:k], frame.loc[same], paths[k])
            raise refused  # the same attempt, same settings, twice: counted once only
        if repeated.any():
            frames[k] = frame.assign(attempt_id=ids.where(~repeated, ids + "@" + Path(paths[k]).name))
            qualified = True
        seen.update(zip(frames[k]["attempt_id"].astype(str), keys[k]))
    if not qualified:
        raise refused  # refused for another reason than settings (a retry's sidecar with its log)
    return combine_logs(frames)


def kept_settings(log: Any) -> dict[str, dict]:
    """What hce collect keeps beside each log file (``<log>.settings.json``), merged over the files.

    ``items``: per experiment, the set of item ids the design planned; ``plan``: per experiment
    and condition id, the attempts per item the design planned (the most any file records);
    ``fingerprints``: per ``settings_hash``, the parts it was made of (rubric, prompt template,
    endpoint kind, ...). Empty for frames and for logs without the file.
    """
    parts = list(log) if isinstance(log, Sequence) and not isinstance(log, str) else [log]
    planned: dict[str, set[str]] = {}
    plan: dict[str, dict[str, int]] = {}
    fingerprints: dict[str, dict] = {}
    for part in parts:
        if not isinstance(part, (str, os.PathLike)):
            continue
        sidecar = Path(part).with_name(Path(part).name + ".settings.json")
        try:
            kept = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.is_file() else {}
        except ValueError:
            continue  # hce collect refuses it on the next resume; the report counts from the log alone
        for experiment, items in (kept.get("items") or {}).items():
            planned.setdefault(str(experiment), set()).update(map(str, items))
        for experiment, conditions in (kept.get("plan") or {}).items():
            known = plan.setdefault(str(experiment), {})
            for condition, attempts in conditions.items():
                known[str(condition)] = max(int(attempts), known.get(str(condition), 0))
        fingerprints.update(kept.get("fingerprints") or {})
    return {"items": planned, "plan": plan, "fingerprints": fingerprints}


def missing_attempts(log: Any, planned: dict[str, set[str]] | None = None,
                     plan: dict[str, dict[str, int]] | None = None) -> list[str]:
    """Notes for conditions with fewer attempts than planned, or planned and never run.

    The plan of a condition is each item of its experiment (those of ``planned``, the design's
    items hce collect recorded, and those in the log) times the attempts ``plan`` records for
    it (what the design asked, kept beside the log by hce collect); without a record, the most
    attempts of any item of the condition. An item x attempt number absent from the log is a
    planned attempt missing (a run stopped early, or a log cut short); a recorded condition
    with no row at all is named too.

    Examples
    --------
    >>> log = pd.DataFrame({"experiment_id": "E", "condition_id": "a", "item_id": ["T1", "T1", "T2"], "attempt": [1, 2, 1]})
    >>> missing_attempts(log, {})
    ['Incomplete log: condition a has 3 of 4 planned attempts (2 items x 2 attempts); 1 missing (T2: 1).']
    >>> missing_attempts(log, {}, {"E": {"a": 3, "b": 3}})  # doctest: +NORMALIZE_WHITESPACE
    ['Incomplete log: condition a has 3 of 6 planned attempts (2 items x 3 attempts); 3 missing (T1: 1, T2: 2).',
     'Incomplete log: condition b has 0 of 6 planned attempts (2 items x 3 attempts); no attempt of it is in the log.']
    """
    view = log_frame(log)
    if "attempt" not in view.columns or not view.count_rows():
        return []
    import narwhals as nw

    planned, plan = planned or {}, plan or {}
    experiment = nw.col("experiment_id").cast(nw.String).fill_null("nan") if "experiment_id" in view.columns else nw.lit("")
    keyed = view.frame.select(experiment.alias("_experiment"), nw.col(CONDITION), nw.col(ITEM).cast(nw.String),
                              nw.col("attempt").cast(nw.Float64))  # fmt: skip
    keys = ["_experiment", CONDITION]
    # grouped passes: items x conditions rows come back, not the attempts
    items = keyed.group_by([*keys, ITEM]).agg(nw.len().alias("n"), nw.col("attempt").max().alias("top")).collect().to_pandas()
    most = items.groupby(keys, sort=False)["top"].max().reset_index()
    attempts_of, bound = {}, nw.lit(0.0)
    for exp, condition, top in most.itertuples(index=False):
        planned_id = _planned_id(str(condition), plan.get(exp, {}))
        attempts_of[(exp, condition)] = planned_id, plan.get(exp, {}).get(planned_id) or (int(top) if pd.notna(top) else 0)
        bound = nw.when((nw.col("_experiment") == exp) & (nw.col(CONDITION) == condition)).then(
            nw.lit(float(attempts_of[(exp, condition)][1]))).otherwise(bound)  # fmt: skip
    attempt = nw.col("attempt")
    planned_numbers = keyed.filter((attempt >= 1) & (attempt <= bound) & (attempt == attempt.round(0)))
    # attempt numbers known unique within an item and condition (the report's one pass over hashes): count rows
    once = known_unique(log, (CONDITION, ITEM, "attempt"))
    done = (planned_numbers.group_by([*keys, ITEM]).agg((nw.len() if once else attempt.n_unique()).alias("done")).collect().to_pandas()
            .set_index([*keys, ITEM])["done"])  # fmt: skip
    notes = []
    seen: set[tuple[str, str]] = set()
    for (exp, condition), part in items.groupby(keys, sort=True):
        planned_id, attempts = attempts_of[(exp, condition)]
        seen.add((exp, planned_id))
        if not attempts:
            continue
        names = sorted(set(part[ITEM]) | planned.get(exp, set()))
        missing = {item: attempts - int(done.get((exp, condition, item), 0)) for item in names}
        missing = {item: n for item, n in missing.items() if n}
        if not missing:
            continue
        total = len(names) * attempts
        listed = ", ".join(f"{item}: {n}" for item, n in list(missing.items())[:10]) + (", ..." if len(missing) > 10 else "")
        notes.append(f"Incomplete log: condition {condition} has {total - sum(missing.values()):,} of {total:,} planned attempts "
                     f"({len(names)} items x {attempts} attempts); {sum(missing.values()):,} missing ({listed}).")  # fmt: skip
    for exp in sorted(set(items["_experiment"])):
        for condition, attempts in sorted(plan.get(exp, {}).items()):
            if (exp, condition) not in seen:
                names = planned.get(exp) or set(items.loc[items["_experiment"] == exp, ITEM])
                notes.append(f"Incomplete log: condition {condition} has 0 of {len(names) * attempts:,} planned attempts "
                             f"({len(names)} items x {attempts} attempts); no attempt of it is in the log.")  # fmt: skip
    return notes


def _planned_id(label: str, plan: dict[str, int]) -> str:
    """The condition id a design planned for ``label``: itself, or the id that
    :func:`~hce.report.provenance.separate_settings` labelled ``id [settings]`` (one id run under two settings)."""
    if label in plan:
        return label
    base = re.sub(r" \[[^\]]*\]$", "", label)
    return base if base in plan else label


def _refuse_other_server(earlier: Sequence[pd.DataFrame], names: Sequence[Any], rows: pd.DataFrame, name: Any) -> None:
    """Same ids, same settings, but another server answered (its ``system_fingerprint``): name it, never pool."""
    if "system_fingerprint" not in rows:
        return
    for frame, first in zip(earlier, names):
        if "system_fingerprint" not in frame:
            continue
        match = frame.set_index("attempt_id")["system_fingerprint"].reindex(rows["attempt_id"].astype(str))
        differ = rows["system_fingerprint"].astype(str).to_numpy() != match.astype(str).to_numpy()
        if match.notna().to_numpy().any() and differ.any():
            row = rows[differ].iloc[0]
            raise DataError(f"condition {row[CONDITION]!r} has the same settings in {first} and {name} but was answered by "
                            f"different servers (system_fingerprint {match[differ].iloc[0]} / {row['system_fingerprint']}), "
                            "and its attempts share ids: report the logs one at a time, or run one of them under another "
                            "condition id; rows of two servers are never pooled as one condition")  # fmt: skip
