"""Transcript corpora: a folder of ``.txt`` files, or a CSV/JSONL table, as one clean table.

Seed 000 section 4 asks for plain UTF-8 text, no file headers or footers, and a unique
persistent TranscriptID per transcript. :func:`load_transcripts` does exactly that and
refuses, with the file and row named, anything it cannot do faithfully: bytes that are not
valid in the declared encoding, a missing or duplicated ID, a text that is empty (before
or after stripping). Nothing is skipped silently. ``encoding="auto"`` (what a design's
items folder uses, :func:`read_text_file`) detects UTF-8, UTF-8/UTF-16/UTF-32 with a
byte-order mark, and otherwise reads Windows-1252 (or Latin-1) with an
:class:`EncodingWarning` naming the file and the first non-UTF-8 byte.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import types
import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hce.errors import DataError, HceWarning

ID_COLUMNS = ("transcript_id", "id")
#: Columns every corpus table has; the rest of the source's columns follow as metadata.
CORE_COLUMNS = ("transcript_id", "text", "source", "n_words", "n_chars", "stripped_lines", "cleaned_chars")
# What clean_text removes, in this order (an escape sequence before the ESC it starts with).
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves (ECMA-48 section 5.4)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks, ended by BEL or ST
    r"|\x1b[@-Z\\-_]"  # the other two-character escapes
)
# Control characters but tab and newline: C0, DEL and C1 (debris of conversions: form feeds, NULs).
_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible format characters: soft hyphen, zero-width space/non-joiner/joiner, directional
# marks, embeddings and isolates, word joiner and invisible operators, BOM / zero-width no-break space.
_ZERO_WIDTH = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


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


@dataclass(frozen=True)
class Cleaned:
    """A text as :func:`clean_text` left it, and how many characters each step removed or rewrote."""

    text: str
    changes: Mapping[str, int]

    @property
    def count(self) -> int:
        """Characters removed or rewritten in all (the log's ``cleaned_chars``)."""
        return sum(self.changes.values())


@functools.lru_cache(maxsize=256)  # a run renders each transcript once per condition and logs it per attempt
def clean_text(text: str) -> Cleaned:
    """The text a judge is sent: what a reader of the transcript does not see taken out.

    The one cleaning of ``hce collect`` (the runner, before a transcript enters a prompt) and
    ``hce study`` (:func:`load_transcripts`), each step counted in characters of the input:

    ``bom``: a leading byte-order mark; ``line_ends``: each ``\\r`` (``\\r\\n`` and a lone
    ``\\r`` become ``\\n``); ``ansi``: terminal escape sequences (colours, cursor moves,
    titles); ``nul``: NUL bytes; ``control``: other control characters but tab and newline;
    ``zero_width``: invisible format characters (zero-width spaces and joiners, directional
    marks and isolates, soft hyphens, word joiners, a BOM inside the text); ``nfc``: code
    points that Unicode NFC rewrote (a letter and its combining accent become one; counted
    per letter-and-marks sequence, at least 1 when anything changed). Zero-width joiners
    and non-joiners go too: they shape emoji and Persian or Indic spelling, which patient
    transcripts in English do not carry; a study of such text should know they are removed.

    Examples
    --------
    >>> cleaned = clean_text("\\ufeffDoctor: \\x1b[1mHi\\x1b[0m\\x00.\\r\\nPatient: Cafe\\u0301\\u200b!")
    >>> cleaned.text
    'Doctor: Hi.\\nPatient: Café!'
    >>> dict(cleaned.changes), cleaned.count
    ({'bom': 1, 'line_ends': 1, 'ansi': 8, 'nul': 1, 'zero_width': 1, 'nfc': 2}, 14)
    """
    changes: dict[str, int] = {}

    def step(kind: str, new: str, before: str) -> str:
        if len(new) != len(before):
            changes[kind] = len(before) - len(new)
        return new

    text = step("bom", text.removeprefix("\ufeff"), text)
    if "\r" in text:
        changes["line_ends"] = text.count("\r")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = step("ansi", _ANSI.sub("", text), text)
    text = step("nul", text.replace("\x00", ""), text)
    text = step("control", _CONTROL.sub("", text), text)
    text = step("zero_width", _ZERO_WIDTH.sub("", text), text)
    if not unicodedata.is_normalized("NFC", text):
        rewritten = sum(len(seq) for seq in _mark_sequences(text) if not unicodedata.is_normalized("NFC", seq))
        changes["nfc"] = max(rewritten, 1)
        text = unicodedata.normalize("NFC", text)
    return Cleaned(text, types.MappingProxyType(changes))  # cached: shared, so read-only


def _mark_sequences(text: str) -> Iterable[str]:
    """A text cut before each character that is not a combining mark: a letter and its marks each."""
    start = 0
    for i in range(1, len(text)):
        if unicodedata.combining(text[i]) == 0:
            yield text[start:i]
            start = i
    yield text[start:]


def normalize_text(text: str) -> str:
    """Plain text: :func:`clean_text`, then no-break spaces as spaces, no trailing spaces or blank edges.

    Examples
    --------
    >>> normalize_text("Doctor: Caf\\u0065\\u0301?\\r\\nPatient: Yes.  \\r\\n\\r\\n")
    'Doctor: Café?\\nPatient: Yes.'
    """
    return _layout(clean_text(text).text)


def _layout(text: str) -> str:
    text = text.replace("\u00a0", " ")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


class EncodingWarning(HceWarning):
    """A text file was not UTF-8 and was read as Windows-1252 or Latin-1: check its accents."""


# Longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))  # fmt: skip


def _detect(raw: bytes, where: str) -> str:
    for mark, codec in _BOMS:
        if raw.startswith(mark):
            return decode_bytes(raw, encoding=codec, where=where)
    if b"\x00" in raw:
        # No text encoding but UTF-16/32 writes NUL bytes, and those carry a mark when detectable.
        nul = raw.index(b"\x00")
        raise DataError(
            f"{where}: byte offset {nul} is a NUL byte: a binary file, or UTF-16 without a "
            "byte-order mark; save it as UTF-8 text"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        first = exc.start
    try:
        text, codec = raw.decode("cp1252"), "cp1252 (Windows Western European)"
    except UnicodeDecodeError:
        text, codec = raw.decode("latin-1"), "Latin-1"
    line = raw[:first].count(b"\n") + 1
    warnings.warn(
        f"{where}: not UTF-8 (byte {raw[first:first + 1]!r} at line {line}, byte offset {first}); read as {codec}: "
        f"that line now reads {text.split(chr(10))[line - 1].strip()[:60]!r}. If the accents look wrong, save the "
        "file as UTF-8",
        EncodingWarning,
        stacklevel=4,
    )
    return text


def read_text_file(path: str | os.PathLike, *, encoding: str = "auto") -> str:
    """A text file's contents, its encoding detected (see :func:`decode_bytes`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "T1.txt"
    >>> _ = path.write_bytes("Patient: café".encode("utf-16"))
    >>> read_text_file(path)
    'Patient: café'
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})") from None
    return decode_bytes(raw, encoding=encoding, where=str(path))


def decode_bytes(raw: bytes, *, encoding: str = "utf-8", where: str = "file") -> str:
    """Bytes to text: a byte that is not valid ``encoding`` is an error naming its line and offset.

    A UTF-8 byte-order mark is dropped. ``encoding="auto"`` detects the encoding: a
    byte-order mark (UTF-8, UTF-16, UTF-32), else UTF-8, else Windows-1252 (Latin-1 for
    the five bytes cp1252 leaves undefined) with an :class:`EncodingWarning` naming the
    file and the first byte that is not UTF-8. NUL bytes without a byte-order mark
    (binary files, UTF-16 without its mark) are an error.
    """
    if encoding.lower() == "auto":
        return _detect(raw, where)
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(
            f"{where}: line {line} (byte offset {exc.start}): {raw[exc.start:exc.end]!r} is not valid {encoding} "
            f"({exc.reason}); convert the file to UTF-8 or pass encoding= (e.g. 'cp1252')"
        ) from None
    except LookupError:
        raise DataError(f"encoding={encoding!r} is not a known text encoding") from None


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
        Header and footer rules (see :class:`StripRules`); default none.
    encoding : str
        Encoding of the files; decoding is strict. ``"auto"`` detects it (see
        :func:`decode_bytes`).
    pattern : str
        Folders: glob pattern of transcript files.

    Returns
    -------
    DataFrame
        One row per transcript, in file order: ``transcript_id`` (str), ``text``
        (normalised, stripped), ``source``, ``n_words`` (whitespace-separated tokens),
        ``n_chars``, ``stripped_lines`` (lines removed by the strip rules), ``cleaned_chars``
        (characters :func:`clean_text` removed or rewrote), then the table's
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
    clean = _layout(cleaned.text)
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


def is_missing(value: Any) -> bool:
    """True for None, NaN and pandas' missing markers; False for any other value (lists too)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
