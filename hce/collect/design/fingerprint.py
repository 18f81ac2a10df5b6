"""A condition is its settings: each logged attempt carries a fingerprint of what made it.

Attempt ids hash experiment, item, condition id and attempt number, so a condition whose
temperature or model changed under the same ``id`` would resume into the old one: a log
with 30 rows at 0.7 and 60 at 1.0 under one ``condition_id``, pooled by every analysis.
Every row therefore carries ``settings_hash``: a digest of the condition's model, prompt
(the rendered template with its rubric, few-shot examples or behaviour spec), sampling
settings (temperature, max_tokens, top_p, seed, logprobs, top_logprobs) and endpoint (its
name and provider kind; not its address, so a local server on a new port is the same
judge). :func:`check_resume` compares a log with the design before any call and stops
naming the condition and the field that changed; :func:`set_aside_changed`
(``--new-settings``) instead moves the changed conditions' old rows to
``<log>.superseded.jsonl`` so they start afresh.

The fingerprint is one digest, so beside the log ``<log>.settings.json``
(:func:`keep_settings`) records, for each fingerprint, the parts it was made of (the
rubric, the prompt template, the few-shot examples, the behaviour spec, logprobs, the
endpoint kind), and a digest of each item's text. A resume then names exactly which part
changed, with its old and new value, and an item whose transcript changed under the same
id is caught as well (its attempts would otherwise resume into rows judged on the old
text).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hce.collect.design.design import Condition, Design
from hce.collect.running.failed import set_aside
from hce.collect.design.prompts import render
from hce.collect.design.transcripts import clean_text
from hce.errors import CollectError
from hce.log_writer import TruncatedLogWarning

if TYPE_CHECKING:  # a log is read only when there is one: a first dry run never loads pandas (issue 44)
    import pandas as pd

# Settings that are log columns of their own, compared one by one to name what changed.
COMPARED = ("model", "prompt_id", "endpoint", "temperature", "max_tokens", "top_p", "seed")
_PROBE = {"ground_truth": "\x00", "narrative": "\x00", "candidate": "\x00"}  # stands for any item


def settings_of(cond: Condition, design: Design) -> dict[str, Any]:
    """The settings that make a condition, as plain values (the prompt as a digest of its template)."""
    if cond.prompt_id in design.prompts:
        probe = design.prompts[cond.prompt_id].version
    elif cond.prompt_id == "BOOL":
        probe = render("BOOL", behavior=cond.behavior, case=_PROBE)
    elif cond.prompt_id == "SYNTH":
        probe = render("SYNTH", rubric=design.rubric, target_total=0)
    else:
        probe = render(cond.prompt_id, rubric=design.rubric, transcript="\x00", template=cond.template, examples=cond.examples)
    prompt = hashlib.sha256(json.dumps(probe, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return {
        "model": cond.model, "prompt_id": cond.prompt_id, "prompt": prompt, "endpoint": cond.endpoint,
        "kind": design.endpoint_of(cond).kind, "temperature": cond.temperature, "max_tokens": cond.max_tokens,
        "top_p": cond.top_p, "seed": cond.seed, "logprobs": cond.logprobs, "top_logprobs": cond.top_logprobs,
        # Choices of one request share it (docs/guide/cost.md: n-sampling), so k > 1 is another way of sampling;
        # k = 1 adds nothing, so the fingerprints of logs made before the setting existed hold.
        **({"samples_per_request": cond.samples_per_request} if cond.samples_per_request != 1 else {}),
        **({"probe": cond.probe.spec()} if cond.probe is not None else {}),  # a twin: its probe's settings too
        # A structured reply is another way of asking; unset adds nothing, so older logs' fingerprints hold.
        **({"response_format": cond.response_format} if cond.response_format is not None else {}),
    }  # fmt: skip


def settings_hash(cond: Condition, design: Design) -> str:
    """The fingerprint logged with each attempt of ``cond`` (16 hex digits).

    Examples
    --------
    >>> from hce.collect.design.design import load_design
    >>> spec = {"conditions": [{"prompt": "P1.2", "model": "gpt-4o"}], "items": [{"id": "T1", "text": "Hi."}]}
    >>> a = load_design(spec)
    >>> b = load_design({**spec, "defaults": {"temperature": 1.0}})
    >>> settings_hash(a.conditions[0], a) == settings_hash(b.conditions[0], b)
    False
    """
    known = design.fingerprints.get(cond.id)
    if known is None:  # rendering the prompt costs ~0.1 ms: once per condition, not per logged row
        text = json.dumps(settings_of(cond, design), sort_keys=True)
        known = design.fingerprints[cond.id] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return known


def _digest(value: Any) -> str:
    return "sha256 " + hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def parts_of(cond: Condition, design: Design) -> dict[str, Any]:
    """The parts of a condition's prompt and call that its one-digest fingerprint folds together, each named."""
    if cond.prompt_id in design.prompts:
        prompt = {"custom prompt": design.prompts[cond.prompt_id].version}
    elif cond.prompt_id == "BOOL":
        prompt = {"behaviour spec": _digest(render("BOOL", behavior=cond.behavior, case=_PROBE))}
    else:
        rubric = f"{design.rubric.name!r} ({_digest(design.rubric.render())})"
        template = cond.template.text if cond.template is not None else cond.prompt_id
        prompt = {"rubric": rubric, "prompt template": _digest(template)}
        if cond.prompt_id != "SYNTH":
            prompt["few-shot examples"] = "packaged" if cond.examples is None else _digest(list(cond.examples))
            # The whole rendered prompt last: a change in hce's own template wording shows here.
            probe = render(cond.prompt_id, rubric=design.rubric, transcript="\x00", template=cond.template,
                           examples=cond.examples)
            prompt["rendered prompt"] = _digest(probe)
    return {**prompt, "logprobs": cond.logprobs, "top_logprobs": cond.top_logprobs,
            "samples_per_request": cond.samples_per_request, "endpoint kind": design.endpoint_of(cond).kind,
            **({"response_format": cond.response_format} if cond.response_format is not None else {})}


def item_digest(item: Any) -> str:
    """A digest of an item's text as it enters the prompt (cleaned) and its metadata."""
    return _digest([clean_text(item.text or "").text, dict(item.metadata)])


def settings_path(log: str | os.PathLike) -> Path:
    """Where the parts of each fingerprint and the items' digests are kept: ``<log>.settings.json``."""
    log = Path(log)
    return log.with_name(log.name + ".settings.json")


def _kept(log: str | os.PathLike) -> dict[str, dict[str, Any]]:
    path = settings_path(log)
    if not path.is_file():
        return {"fingerprints": {}, "items": {}, "plan": {}}
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise CollectError(f"{path} is not valid JSON; it records what {log}'s rows were made with: restore it or "
                           "remove it (resumes then name changed parts less exactly)") from None
    return {"fingerprints": kept.get("fingerprints", {}), "items": kept.get("items", {}), "plan": kept.get("plan", {})}


def keep_settings(design: Design, log: str | os.PathLike) -> None:
    """Record beside the log the parts of this design's fingerprints, its items' digests and the attempts
    each condition plans (merged, atomically): a report then sees a run that stopped early, even a
    condition with no attempt logged."""
    kept = _kept(log)
    experiment = kept["items"].setdefault(design.experiment_id, {})
    plan = kept["plan"].setdefault(design.experiment_id, {})
    changed = False
    for cond in design.conditions:
        if plan.get(cond.id) != design.attempts:
            plan[cond.id] = design.attempts
            changed = True
    for cond in design.conditions:
        key = settings_hash(cond, design)
        if key not in kept["fingerprints"]:
            kept["fingerprints"][key] = parts_of(cond, design)
            changed = True
    for item in design.items:
        digest = item_digest(item)
        if experiment.get(item.id) != digest:
            experiment[item.id] = digest
            changed = True
    if changed:
        path = settings_path(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(path.name + ".part")
        part.write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(part, path)


@dataclass(frozen=True)
class Change:
    """A condition whose logged rows were made with other settings than the design's now
    (``item_id`` set: the text of that item changed, for the rows of every condition)."""

    condition_id: str
    field: str
    logged: Any
    now: Any
    rows: int
    item_id: str | None = None

    def __str__(self) -> str:
        if self.item_id is not None:
            return (f"item {self.item_id!r} has {self.rows} logged attempts (conditions {self.condition_id}) judged on "
                    f"another text ({self.logged}), but the design's text is now {self.now}")  # fmt: skip
        return (f"condition {self.condition_id!r} has {self.rows} logged attempts made with {self.field} {self.logged}, "
                f"but the design now says {self.field} {self.now}")  # fmt: skip


def changed_settings(design: Design, log: str | os.PathLike) -> list[Change]:
    """Conditions of ``design`` whose rows in ``log`` were made with other settings (see the module notes)."""
    path = Path(log)
    if not path.is_file() or path.stat().st_size == 0:
        return []
    from hce.log import read_log

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLogWarning)  # the writer sets a torn last line aside
        frame = read_log(path)
    if frame.empty:
        return []
    frame = frame[frame["experiment_id"].astype(str) == design.experiment_id]
    kept = _kept(log)
    changes = []
    for cond in design.conditions:
        rows = frame[frame["condition_id"].astype(str) == cond.id]
        change = _change(cond, design, rows, kept["fingerprints"]) if len(rows) else None
        if change is not None:
            changes.append(change)
    logged_items = kept["items"].get(design.experiment_id, {})
    planned = {c.id for c in design.conditions}
    for item in design.items:
        was = logged_items.get(item.id)
        if was is None or was == item_digest(item):
            continue
        rows = frame[(frame["item_id"].astype(str) == item.id) & frame["condition_id"].astype(str).isin(planned)]
        if len(rows):
            names = ", ".join(repr(c) for c in sorted(rows["condition_id"].astype(str).unique()))
            changes.append(Change(names, "item text", was, item_digest(item), len(rows), item_id=item.id))
    return changes


def _change(cond: Condition, design: Design, rows: pd.DataFrame, fingerprints: dict[str, Any]) -> Change | None:
    now = settings_of(cond, design)
    for name in COMPARED:
        if name not in rows:
            continue
        logged = list(rows[name].dropna().unique())
        if name in ("temperature", "top_p", "max_tokens", "seed"):
            changed = [v for v in logged if now[name] is None or float(v) != float(now[name])]
            changed += ["empty"] if now[name] is not None and rows[name].isna().any() else []
        else:
            changed = [v for v in logged if str(v) != str(now[name])]
        if changed:
            return Change(cond.id, name, changed[0], "empty" if now[name] is None else now[name], len(rows))
    if "settings_hash" in rows:
        other = sorted(set(rows["settings_hash"].dropna().astype(str)) - {settings_hash(cond, design)})
        if other:
            parts, now = fingerprints.get(other[0]) or {}, parts_of(cond, design)
            # The named parts first, in the design's order; the whole rendered prompt (hce's wording) last.
            for name in sorted(now, key=lambda n: n == "rendered prompt"):
                if name in parts and parts[name] != now[name]:
                    return Change(cond.id, name, parts[name], now[name], len(rows))
            sent = _prompt_change(cond, design, rows) if not parts else None
            if sent is not None:  # a log made before the parts were recorded: the prompt it sent says what changed
                return Change(cond.id, "prompt sent", sent[0], sent[1], len(rows))
            return Change(cond.id, "prompt template, rubric, logprobs, samples_per_request or endpoint kind", "other", "these", len(rows))
    return None


def _prompt_change(cond: Condition, design: Design, rows: pd.DataFrame) -> tuple[str, str] | None:
    """Where the prompt a logged row sent first differs from the one the design renders now for its item, quoted."""
    items = {item.id: item for item in design.items}
    if "request" not in rows or cond.prompt_id in ("BOOL", "SYNTH", *design.prompts):
        return None
    for item_id, request in zip(rows["item_id"].astype(str), rows["request"]):
        if item_id in items and isinstance(request, str):
            item = items[item_id]
            now = render(cond.prompt_id, rubric=design.rubric, transcript=clean_text(item.text).text,
                         template=cond.template, examples=cond.examples)
            old, new = "\n\n".join(m["content"] for m in json.loads(request)), "\n\n".join(m["content"] for m in now)
            at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            if old != new:
                return repr(old[max(0, at - 20): at + 40]), repr(new[max(0, at - 20): at + 40])
            return None
    return None


def check_resume(design: Design, log: str | os.PathLike) -> None:
    """Stop, before any call, when ``log`` holds rows of a condition made with other settings.

    Raises
    ------
    CollectError
        Naming the log, the condition, the changed field (old and new value) and the ways
        out: a new condition ``id`` (its attempts then start afresh), ``--new-settings``
        (``new_settings=True``: the old rows move to ``<log>.superseded.jsonl``), or
        another log.
    """
    changes = changed_settings(design, log)
    if changes:
        raise CollectError(
            f"{log}: {changes[0]}; resuming would pool two conditions under one id. A condition is its settings: "
            "give the changed condition a new id (its attempts then start afresh beside the old ones), run with "
            f"--new-settings to move its old rows to {superseded_path(log).name} and start it afresh, or write to a "
            "new --log. Nothing was sent."
        )


def superseded_path(log: str | os.PathLike) -> Path:
    """Where ``--new-settings`` keeps the rows of changed conditions: ``<log>.superseded.jsonl``."""
    log = Path(log)
    return log.with_name(log.name + ".superseded.jsonl")


def set_aside_changed(design: Design, log: str | os.PathLike) -> list[Change]:
    """Move the rows of conditions whose settings changed to :func:`superseded_path`; the changes moved.

    The conditions then start afresh in ``log`` with their current settings; their old
    rows stay whole, crash-safely, in the sidecar (:func:`hce.collect.running.failed.set_aside`).
    """
    changes = changed_settings(design, log)
    ids = {c.condition_id for c in changes if c.item_id is None}
    items = {c.item_id for c in changes if c.item_id is not None}
    planned = {c.id for c in design.conditions}

    def chosen(line: bytes) -> bool:
        try:
            record = json.loads(line)
        except ValueError:  # a torn last line stays for the log writer
            return False
        if not isinstance(record, dict) or str(record.get("experiment_id")) != design.experiment_id:
            return False
        condition = str(record.get("condition_id"))
        return condition in ids or (str(record.get("item_id")) in items and condition in planned)

    if changes:
        set_aside(log, chosen, superseded_path(log))
    return changes
