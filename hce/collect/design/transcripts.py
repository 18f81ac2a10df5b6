"""Transcript text as a judge is sent it: decoding files and cleaning what a reader does not see.

:func:`read_text_file` / :func:`decode_bytes` turn bytes into text, strictly in a declared
encoding or, with ``encoding="auto"`` (what a design's items folder uses), detecting UTF-8,
UTF-8/UTF-16/UTF-32 with a byte-order mark, and otherwise reading Windows-1252 (or Latin-1)
with an :class:`EncodingWarning` naming the file and the first non-UTF-8 byte.
:func:`clean_text` is the one cleaning before a transcript enters a prompt (the runner, and
any corpus loader built on this module).
"""

from __future__ import annotations

import functools
import os
import re
import types
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hce._warnings import warn
from hce.errors import DataError, HceWarning

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
    ``hce study`` (:func:`hce.study.load_transcripts`), each step counted in characters of the input:

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
    warn(
        f"{where}: not UTF-8 (byte {raw[first:first + 1]!r} at line {line}, byte offset {first}); read as {codec}: "
        f"that line now reads {text.split(chr(10))[line - 1].strip()[:60]!r}. If the accents look wrong, save the "
        "file as UTF-8",
        EncodingWarning)
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


def is_missing(value: Any) -> bool:
    """True for None, NaN and pandas' missing markers; False for any other value (lists too)."""
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
