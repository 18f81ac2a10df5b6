"""Transcript corpora of the study: a folder of ``.txt`` files, or a CSV/JSONL table, as one clean table.

Seed 000 section 4 asks for plain UTF-8 text, no file headers or footers, and a unique
persistent TranscriptID per transcript. :func:`load_transcripts` does exactly that and
refuses, with the file and row named, anything it cannot do faithfully: bytes that are not
valid in the declared encoding, a missing or duplicated ID, a text that is empty (before
or after stripping). Nothing is skipped silently. Decoding and cleaning are the collection
layer's (:mod:`hce.collect.design.transcripts`), the same a design's items go through.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hce._vocabulary import keywords_checked
from hce.collect.design.transcripts import clean_text, decode_bytes, is_missing, normalize_text
from hce.errors import DataError

ID_COLUMNS = ("transcript_id", "id")
#: Columns every corpus table has; the rest of the source's columns follow as metadata.
CORE_COLUMNS = ("transcript_id", "text", "source", "n_words", "n_chars", "stripped_lines", "cleaned_chars")


@dataclass(frozen=True)
class StripRules:
    """How to remove file headers and footers that are not part of the interaction.

    Parameters
    ----------
    header : sequence of str
        Regular expressions; leading lines matching any of them (and blank lines among
        them) are removed, stopping at the first line that matches none.
    footer : sequence of str
        The same for trailing lines, from the end upwards.
    header_until : str, optional
        A regular expression; when a line matches it, that line and everything above it is
        removed (e.g. ``"^-{3,}$"`` for a separator under a title block). A transcript with
        no such line is an error, since the rule then does not describe the file.
    footer_from : str, optional
        A regular expression; the last line matching it and everything below is removed.

    Examples
    --------
    >>> rules = StripRules(header=[r"^Transcript ID:", r"^Date:"], footer=[r"^\\[END"])
    >>> rules.apply("Transcript ID: 7\\nDate: 2020\\n\\nDoctor: Hi.\\nPatient: Hello.\\n[END OF FILE]")
    ('Doctor: Hi.\\nPatient: Hello.', 4)
    """

    header: Sequence[str] = ()
    footer: Sequence[str] = ()
    header_until: str | None = None
    footer_from: str | None = None
    _compiled: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def compile_(pattern: str, name: str) -> re.Pattern[str]:
            try:
                return re.compile(pattern)
            except re.error as exc:
                raise DataError(f"strip rule {name}={pattern!r} is not a valid regular expression: {exc}") from None

        self._compiled["header"] = [compile_(p, "header") for p in self.header]
        self._compiled["footer"] = [compile_(p, "footer") for p in self.footer]
        for name in ("header_until", "footer_from"):
            value = getattr(self, name)
            self._compiled[name] = compile_(value, name) if value else None

    @classmethod
    def from_dict(cls, rules: Mapping[str, Any] | None) -> StripRules:
        """Rules from a study file's ``strip:`` mapping (keys as the parameters)."""
        if not rules:
            return cls()
        unknown = sorted(set(rules) - {"header", "footer", "header_until", "footer_from"})
        if unknown:
            raise DataError(f"unknown strip rule(s) {unknown}; valid: ['header', 'footer', 'header_until', 'footer_from']")
        return cls(
            header=tuple(_as_list(rules.get("header"))),
            footer=tuple(_as_list(rules.get("footer"))),
            header_until=rules.get("header_until"),
            footer_from=rules.get("footer_from"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"header": list(self.header), "footer": list(self.footer),
                "header_until": self.header_until, "footer_from": self.footer_from}  # fmt: skip

    def apply(self, text: str, *, where: str = "text") -> tuple[str, int]:
        """The text without header and footer lines, and how many lines were removed."""
        lines = text.split("\n")
        n = len(lines)
        until, since = self._compiled["header_until"], self._compiled["footer_from"]
        if until is not None:
            hit = next((i for i, line in enumerate(lines) if until.search(line)), None)
            if hit is None:
                raise DataError(f"{where}: no line matches header_until={self.header_until!r}")
            lines = lines[hit + 1 :]
        if since is not None:
            hits = [i for i, line in enumerate(lines) if since.search(line)]
            if not hits:
                raise DataError(f"{where}: no line matches footer_from={self.footer_from!r}")
            lines = lines[: hits[-1]]
        lines = _drop_edge(lines, self._compiled["header"])
        lines = _drop_edge(lines[::-1], self._compiled["footer"])[::-1]
        kept = "\n".join(lines).strip("\n")
        return kept, n - len(lines)


def _drop_edge(lines: list[str], patterns: list[re.Pattern[str]]) -> list[str]:
    """Lines after the leading run of blank lines and lines matching a pattern."""
    if not patterns:
        return lines
    start = 0
    while start < len(lines) and (not lines[start].strip() or any(p.search(lines[start]) for p in patterns)):
        start += 1
    return lines[start:]


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


@keywords_checked
def load_transcripts(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    id_column: str | None = None,
    text_column: str = "text",
    source: str | None = None,
    strip: StripRules | Mapping[str, Any] | None = None,
    encoding: str = "utf-8",
    pattern: str = "*.txt",
) -> pd.DataFrame:
    """Load a transcript corpus: a folder of text files, or a CSV / JSONL table.

    Parameters
    ----------
    path : path or sequence of paths
        A folder (each file matching ``pattern`` is one transcript, its TranscriptID the
        file name without suffix; sub-folders are searched too), a ``.csv`` file or a
        ``.jsonl`` file (one JSON object per line). Several paths are concatenated; IDs
        must be unique across all of them.
    id_column : str, optional
        Tables: the TranscriptID column; default the first of ``transcript_id``, ``id``.
    text_column : str
        Tables: the column holding the transcript text.
    source : str, optional
        Value of the ``source`` column (e.g. ``"DoVA"``); default the table's own ``source``
        column when present, else the file name.
    strip : StripRules or mapping, optional
        Header and footer rules (see ``StripRules``); default none.
    encoding : str
        Encoding of the files; decoding is strict. ``"auto"`` detects it (see
        ``decode_bytes``).
    pattern : str
        Folders: glob pattern of transcript files.

    Returns
    -------
    DataFrame
        One row per transcript, in file order: ``transcript_id`` (str), ``text``
        (normalised, stripped), ``source``, ``n_words`` (whitespace-separated tokens),
        ``n_chars``, ``stripped_lines`` (lines removed by the strip rules), ``cleaned_chars``
        (characters ``clean_text`` removed or rewrote), then the table's
        other columns as metadata (demographics and the like), unchanged.

    Raises
    ------
    DataError
        Undecodable bytes, a malformed CSV/JSONL line, a missing ID or text column, a
        missing or duplicated ID, a text empty before or after stripping, an empty folder:
        each naming the file and the line or row.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "T001.txt").write_text("Doctor: How are you?\\nPatient: Fine.\\n")
    >>> load_transcripts(folder)[["transcript_id", "n_words", "stripped_lines"]]
      transcript_id  n_words  stripped_lines
    0          T001        6               0
    """
    rules = strip if isinstance(strip, StripRules) else StripRules.from_dict(strip)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise DataError("no corpus path given")
    records: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for p in map(Path, paths):
        for where, tid, text, meta in _read_any(p, id_column, text_column, encoding, pattern):
            if tid in seen:
                raise DataError(f"{where}: TranscriptID {tid!r} is duplicated (first seen at {seen[tid]}); IDs must be unique")
            seen[tid] = where
            records.append(_record(where, tid, text, meta, rules, source))
    frame = pd.DataFrame.from_records(records)
    extra = [c for c in frame.columns if c not in CORE_COLUMNS]
    return frame[list(CORE_COLUMNS) + extra]


def _record(where: str, tid: str, text: str, meta: dict[str, Any], rules: StripRules, source: str | None) -> dict[str, Any]:
    cleaned = clean_text(text)
    clean = normalize_text(text)  # clean_text (cached) and the layout: no-break spaces, trailing blanks
    if not clean.strip():
        raise DataError(f"{where}: transcript {tid!r} is empty")
    clean, removed = rules.apply(clean, where=f"{where} ({tid!r})")
    if not clean.strip():
        raise DataError(f"{where}: transcript {tid!r} is empty after stripping headers/footers ({removed} lines removed)")
    own_source = meta.pop("source", None)
    label = source if source is not None else (own_source if own_source not in (None, "") else where.split(":")[0])
    return {"transcript_id": tid, "text": clean, "source": str(label), "n_words": len(clean.split()),
            "n_chars": len(clean), "stripped_lines": removed, "cleaned_chars": cleaned.count, **meta}  # fmt: skip


def _read_any(path: Path, id_column, text_column, encoding, pattern) -> Iterable[tuple[str, str, str, dict]]:
    if path.is_dir():
        return _read_folder(path, encoding, pattern)
    if not path.is_file():
        raise DataError(f"corpus path {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_table(path, _csv_rows(path, encoding), id_column, text_column)
    if suffix in (".jsonl", ".ndjson"):
        return _read_table(path, _jsonl_rows(path, encoding), id_column, text_column)
    if suffix == ".txt":
        return [(str(path), _check_id(path.stem, str(path)), decode_bytes(path.read_bytes(), encoding=encoding, where=str(path)), {})]
    raise DataError(f"{path}: unsupported corpus file type {suffix!r}; use a folder of .txt files, .csv or .jsonl")


def _read_folder(folder: Path, encoding: str, pattern: str) -> list[tuple[str, str, str, dict]]:
    files = sorted(f for f in folder.rglob(pattern) if f.is_file())
    if not files:
        raise DataError(f"{folder}: no file matches {pattern!r}")
    return [(str(f), _check_id(f.stem, str(f)), decode_bytes(f.read_bytes(), encoding=encoding, where=str(f)), {}) for f in files]


def _check_id(value: Any, where: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        raise DataError(f"{where}: TranscriptID is missing")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{where}: TranscriptID must be text or a whole number, got {value!r}")
    tid = str(value).strip()
    if not tid:
        raise DataError(f"{where}: TranscriptID is empty")
    return tid


def _csv_rows(path: Path, encoding: str) -> Iterable[tuple[str, dict[str, Any]]]:
    text = decode_bytes(path.read_bytes(), encoding=encoding, where=str(path))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            if None in row:
                raise DataError(f"{path}: line {reader.line_num} has more fields than the header")
            yield f"{path}: line {reader.line_num}", dict(row)
    except csv.Error as exc:
        raise DataError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from None


def _jsonl_rows(path: Path, encoding: str) -> Iterable[tuple[str, dict[str, Any]]]:
    text = decode_bytes(path.read_bytes(), encoding=encoding, where=str(path))
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}: line {number}: expected a JSON object, got {type(obj).__name__}")
        yield f"{path}: line {number}", obj


def _read_table(path: Path, rows, id_column, text_column) -> list[tuple[str, str, str, dict]]:
    out = []
    for where, row in rows:
        column = id_column or next((c for c in ID_COLUMNS if c in row), None)
        if column is None or column not in row:
            wanted = [id_column] if id_column else list(ID_COLUMNS)
            raise DataError(f"{where}: no TranscriptID column {wanted}; columns present: {list(row)}")
        if text_column not in row:
            raise DataError(f"{where}: no text column {text_column!r}; columns present: {list(row)}")
        text = row.pop(text_column)
        if not isinstance(text, str):
            raise DataError(f"{where}: column {text_column!r} must be text, got {text!r}")
        tid = _check_id(row.pop(column), where)
        meta = {k: v for k, v in row.items() if k not in CORE_COLUMNS or k == "source"}
        out.append((where, tid, text, meta))
    if not out:
        raise DataError(f"{path}: no transcripts (the file has no data rows)")
    return out


def write_transcripts(corpus: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a corpus as JSONL (one object per transcript), readable by :func:`load_transcripts`."""
    missing = [c for c in ("transcript_id", "text") if c not in corpus.columns]
    if missing:
        raise DataError(f"corpus has no column(s) {missing}; columns present: {list(corpus.columns)}")
    keep = [c for c in corpus.columns if c not in ("n_words", "n_chars", "stripped_lines", "cleaned_chars")]
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in corpus[keep].to_dict(orient="records"):
            clean = {k: (None if is_missing(v) else v) for k, v in record.items()}
            handle.write(json.dumps(clean, ensure_ascii=False, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
