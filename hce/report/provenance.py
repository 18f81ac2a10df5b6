"""What the logs a report reads are: complete or torn, and which settings made each condition.

A condition is its ``condition_id`` *and* the settings that made it (model, prompt, sampling,
endpoint: the ``settings_hash`` fingerprint the runner logs). Two logs may use one id for
different settings (a ``plain`` condition run against two servers with two ``max_tokens``);
pooling them would mix two judges into one. :func:`separate_settings` keeps them apart under
ids that name the differing settings, and the report says it did. :func:`read_with_notes` reads logs and turns a
torn last line (a run stopped mid-write) into a note the report prints, not only a warning on
stderr.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from hce.errors import DataError
from hce.log import TruncatedLogWarning
from hce.log_schema import served_as_requested
from hce.report.log_frame import log_frame
from hce.stats._frames import EngineFrame

#: Columns that fingerprint a condition's settings, where the log has them.
SETTINGS = ("settings_hash", "model", "prompt_id", "temperature", "max_tokens", "top_p", "seed", "endpoint")


def separate_settings(
    log: pd.DataFrame, *, condition: str = "condition_id", within: Sequence[str] = (),
    fingerprints: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """The log with each ``condition`` value run under different settings split into one id per settings.

    Returns the log (a copy when an id was split: ``plain`` becomes ``plain [max_tokens 1000]``
    and ``plain [max_tokens 500]``, labelled by the settings that differ, or by the settings'
    digest, ``plain [settings 3f2a1c]``, when only the fingerprint does) and one note per id
    split, naming the settings that differ and the rows of each. A log whose conditions each
    have one set of settings is returned as it is, with no note. ``fingerprints`` (per
    ``settings_hash``, the parts hce collect recorded in ``<log>.settings.json``) names what
    differs when only the fingerprint does (the rubric, the prompt template, ...). ``within``:
    columns whose values are analysed apart anyway (a study's ``experiment_id``): one id with
    other settings in another experiment is another analysis, not a pooled condition.

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": ["plain"] * 4, "max_tokens": [1000, 1000, 500, 500]})
    >>> out, notes = separate_settings(log)
    >>> sorted(out["condition_id"].unique())
    ['plain [max_tokens 1000]', 'plain [max_tokens 500]']
    >>> notes[0][:80]
    "Condition 'plain' was run with 2 different settings (max_tokens 1000 / 500): kep"
    """
    if condition not in log:
        return log, []
    columns = [c for c in SETTINGS if c in log]
    if not columns:
        return log, []
    text = log[columns].astype("string").fillna("")
    notes, renamed = [], None
    keys_of = [log[c] for c in within if c in log]
    for group, rows in text.groupby([*keys_of, log[condition]], sort=True):
        cid = group[-1]
        used = [c for c in columns if not (c == "settings_hash" and (rows[c] == "").any())]  # old rows lack the hash
        if not used or len(rows[used].drop_duplicates()) < 2:  # one set of settings: no key per row (2 s at 20,000 rows)
            continue
        keys = rows[used].agg("\x1f".join, axis=1)
        renamed = log[condition].astype(object).copy() if renamed is None else renamed
        differing = [c for c in used if c != "settings_hash" and rows[c].nunique() > 1]
        # Labelled by what differs, so a reader sees which is which; by the digest where that is not unique.
        tags = {key: "; ".join(f"{c} {rows.loc[keys == key, c].iloc[0]}" for c in differing) for key in keys.unique()}
        if len(set(tags.values())) < len(tags):
            tags = {key: f"settings {hashlib.sha256(key.encode()).hexdigest()[:6]}" for key in tags}
        tags = {key: f"{cid} [{tag}]" for key, tag in tags.items()}
        for key, tag in tags.items():
            renamed.loc[keys.index[keys == key]] = tag
        what = "; ".join(f"{c} {' / '.join(rows[c].unique())}" for c in differing) or _parts_differing(rows, fingerprints or {})
        parts = ", ".join(f"'{tags[key]}' ({int((keys == key).sum())} rows)" for key in keys.unique())
        notes.append(f"Condition {cid!r} was run with {len(tags)} different settings ({what}): kept apart as {parts}. "
                     "A condition is its condition_id and its settings; rows of different settings are never pooled.")  # fmt: skip
    if renamed is None:
        return log, []
    return log.assign(**{condition: renamed}), notes


def separate_runs(log: pd.DataFrame, *, condition: str = "condition_id") -> tuple[pd.DataFrame, list[str]]:
    """The log with a ``condition`` value whose experiments repeat one item's attempt numbers split
    into one id per experiment (``plain [experiment_id E2]``), and a note for each.

    One condition id in two experiments is one condition when their attempts are other attempts
    (a second run numbered on from the first); when both hold attempt 1 of an item they are two
    runs of one plan, which no statistic can pool (each would see that attempt twice): they are
    kept apart, and the note says how to pool them.

    Examples
    --------
    >>> log = pd.DataFrame({"experiment_id": ["E1", "E2"], "condition_id": "plain", "item_id": "T1", "attempt": 1})
    >>> sorted(separate_runs(log)[0]["condition_id"])
    ['plain [experiment_id E1]', 'plain [experiment_id E2]']
    >>> separate_runs(log.assign(attempt=[1, 2]))[1]
    []
    """
    keys = ["experiment_id", condition, "item_id", "attempt"]
    if not set(keys) <= set(log.columns):
        return log, []
    cells = log[keys].drop_duplicates()
    shared = cells[cells.duplicated(keys[1:], keep=False)][condition].unique()
    if not len(shared):
        return log, []
    notes, renamed = [], log[condition].astype(object).copy()
    for cid in sorted(shared, key=str):
        rows = log[condition] == cid
        renamed[rows] = [f"{cid} [experiment_id {e}]" for e in log.loc[rows, "experiment_id"]]
        runs = ", ".join(map(str, sorted(log.loc[rows, "experiment_id"].unique(), key=str)))
        notes.append(f"Condition {cid!r} holds the same item and attempt numbers in experiments {runs}: two runs of one plan, "
                     "kept apart as one condition per experiment. To pool them, number the attempts of a later run on from "
                     "the first (hce collect does when it resumes a log).")  # fmt: skip
    return log.assign(**{condition: renamed}), notes


def refuse_mixed_settings(view: EngineFrame, condition: str = "condition_id") -> None:
    """Refuse a lazy log in which one ``condition`` value was run under different settings, naming
    it: an engine's report does not relabel rows as :func:`separate_settings` does in memory, and
    pooling them would mix two judges into one. One grouped pass."""
    import narwhals as nw

    columns = [c for c in SETTINGS if c in view.columns]
    if not columns or condition not in view.columns:
        return
    # as text, a blank as "" (another value, as in pandas), but a blank settings_hash as none (rows
    # older than the hash); compared by least and greatest, which every engine groups
    text = {c: nw.col(c).cast(nw.String) if c == "settings_hash" else nw.col(c).cast(nw.String).fill_null("")
            for c in columns}  # fmt: skip
    found = (view.frame.select(nw.col(condition), *[v.alias(f"_{c}") for c, v in text.items()]).group_by(condition)
             .agg(*[e for c in columns for e in (nw.col(f"_{c}").min().alias(f"lo{c}"), nw.col(f"_{c}").max().alias(f"hi{c}"))])
             .collect().to_pandas().sort_values(condition, kind="stable"))  # fmt: skip
    differs = pd.DataFrame({c: found[f"lo{c}"].notna() & (found[f"lo{c}"] != found[f"hi{c}"]) for c in columns})
    mixed = differs.any(axis=1).to_numpy()
    if mixed.any():
        first = int(mixed.argmax())
        differing = ", ".join(c for c in columns if differs[c].iloc[first])
        others = f" (as were {int(mixed.sum()) - 1} other condition id(s))" if mixed.sum() > 1 else ""
        raise DataError(f"condition {found[condition].iloc[first]!r} was run with different {differing}{others}: an engine's "
                        "report keeps one condition_id as one condition; give each settings its own condition_id, or read "
                        "the log in pandas (hce report --engine pandas), which keeps them apart")  # fmt: skip


def _parts_differing(rows: pd.DataFrame, fingerprints: Mapping[str, Mapping[str, Any]]) -> str:
    """Which recorded parts of the fingerprints differ (``rubric 'A' / 'B'``), or "settings_hash only"."""
    hashes = rows["settings_hash"].unique() if "settings_hash" in rows else []
    recorded = [fingerprints[h] for h in hashes if h in fingerprints]
    if len(recorded) < 2:
        return "settings_hash only"
    names = [n for n in dict.fromkeys(k for r in recorded for k in r) if len({str(r.get(n)) for r in recorded}) > 1]
    return "; ".join(f"{n} {' / '.join(dict.fromkeys(str(r.get(n)) for r in recorded))}" for n in names) or "settings_hash only"


#: Where a log read by :func:`read_with_notes` keeps its notes, so they reach the report with it.
NOTES = "hce_log_notes"


def read_with_notes(read: Callable[[Any], pd.DataFrame], logs: Any) -> tuple[pd.DataFrame, list[str]]:
    """``read(logs)`` with a torn last line turned into a note for the report (and still warned).

    The notes are also kept in the frame's ``attrs[NOTES]``, which :func:`log_notes` reads: a
    report built from the frame prints them.

    Examples
    --------
    >>> def torn(_):
    ...     warnings.warn("log.jsonl: line 9 is incomplete", TruncatedLogWarning)
    ...     return pd.DataFrame({"item_id": ["a"]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     frame, notes = read_with_notes(torn, "log.jsonl")
    >>> notes
    ['Incomplete log: log.jsonl: line 9 is incomplete. The attempts of that line are not in this report.']
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TruncatedLogWarning)
        frame = read(logs)
    notes = []
    for w in caught:
        if issubclass(w.category, TruncatedLogWarning):
            notes.append(f"Incomplete log: {str(w.message).rstrip('.')}. The attempts of that line are not in this report.")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)  # still on stderr, as before
    notes = [*frame.attrs.get(NOTES, []), *notes]  # a frame given may carry the notes of its own reading
    frame.attrs[NOTES] = notes
    return frame, notes


def log_notes(*logs: pd.DataFrame) -> list[str]:
    """The notes :func:`read_with_notes` kept with these frames (none for a frame read otherwise)."""
    return [note for log in logs for note in log.attrs.get(NOTES, [])]


def served_models(log: Any) -> list[str]:
    """One note per condition whose replies name another model than the one asked for (a local server's file).

    Examples
    --------
    >>> log = pd.DataFrame({"condition_id": "local", "model": "gpt-4o-mini-2024-07-18",
    ...                     "model_version": ["gemma-3-270m-it-Q4_K_M.gguf"] * 3})
    >>> served_models(log)[0][:98]
    "Condition 'local' asked for model 'gpt-4o-mini-2024-07-18'; 'gemma-3-270m-it-Q4_K_M.gguf' answered"
    """
    keys = ["condition_id", "model", "model_version"]
    view = log_frame(log)
    if not set(keys) <= set(view.columns):
        return []
    import narwhals as nw

    answered = view.frame.filter(*[~nw.col(c).is_null() for c in keys]).select(*[nw.col(c).cast(nw.String) for c in keys])
    notes = []
    for condition, requested, served, n in EngineFrame(answered).counts(keys).itertuples(index=False):
        if not served_as_requested(requested, served):
            notes.append(f"Condition {condition!r} asked for model {requested!r}; {served!r} answered ({n:,} rows, the "
                         "reply's own model): the judge of this condition is the served model, and its calls are not "
                         "priced as the requested one.")
    return notes
