"""Score tokens in logged token logprobs, vectorised with Arrow.

The ``logprobs`` column holds, per attempt, the OpenAI ``logprobs.content`` list: JSON text
as the attempt log stores it, lists of dicts, a dict with the list under ``"content"``, or
the openai client's objects. :func:`read_logprobs` turns any mix of these into one Arrow
list array (JSON text is parsed by Arrow's multithreaded reader, a million attempts in
about a second); :func:`score_tokens` finds every score-like token with its probability
mass over the score scale without a Python loop over attempts. Rows that cannot be read
become nulls: the caller flags them, nothing raises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

ALTERNATIVE = pa.struct([("token", pa.string()), ("logprob", pa.float64())])
ENTRY = pa.struct([("token", pa.string()), ("logprob", pa.float64()), ("top_logprobs", pa.list_(ALTERNATIVE))])
ENTRIES = pa.list_(ENTRY)
_WRAPPED = pa.schema([("v", ENTRIES)])
_CHUNK_BYTES = 1 << 26  # text parsed per read_json call: bounds the memory of huge logs
_HEAD, _TAIL, _NOTHING = (pa.scalar(s, pa.large_string()) for s in ('{"v":', "}\n", ""))
_ONE_BY_ONE = 256  # below this many rows, a chunk Arrow rejects is read row by row


def score_map(scores: Sequence | Mapping) -> dict[str, float]:
    """Normalised token text -> score value (``3`` matches ``"3"``; a mapping is used as given)."""
    if isinstance(scores, Mapping):
        return {str(k).strip().lower(): float(v) for k, v in scores.items()}
    return {str(int(s)) if float(s).is_integer() else str(s): float(s) for s in scores}


# ----------------------------------------------------------------------------- reading
def read_logprobs(values: Sequence) -> pa.ListArray:
    """One list of token entries per value (``token``, ``logprob``, ``top_logprobs``); null where unreadable."""
    values = list(values)
    try:  # the attempt log's column: JSON text and missing values only
        column = pa.array(values, pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        column = None
    if column is not None:
        blank = pc.fill_null(pc.match_substring_regex(column, r"^\s*$"), True).to_numpy(zero_copy_only=False)
        is_text = ~blank & ~_multiline(column)
        if is_text.all():
            return _read_texts(column)
    else:  # one-line JSON text goes to Arrow's reader; a raw newline would split its line
        is_text = np.fromiter((isinstance(v, str) and "\n" not in v and v.strip() != "" for v in values), bool, len(values))
    text, other = np.flatnonzero(is_text), np.flatnonzero(~is_text)
    parts = [_read_texts(pa.array([values[i] for i in text], pa.large_string()))] if len(text) else []
    if len(other):
        parts.append(_read_objects([None if isinstance(values[i], float) else values[i] for i in other]))
    if not parts:
        return pa.array([], ENTRIES)
    order = np.empty(len(values), dtype=np.int64)
    order[np.concatenate([text, other])] = np.arange(len(values))
    return pa.concat_arrays(parts).take(pa.array(order))


def _offsets(column: pa.Array) -> np.ndarray:
    return np.frombuffer(column.buffers()[1], dtype=np.int64)[column.offset : column.offset + len(column) + 1]


def _multiline(column: pa.Array) -> np.ndarray:
    """Which texts hold a raw newline (which would split read_json's one-value-per-line input)."""
    offsets = _offsets(column)
    if len(column) == 0 or column.buffers()[2] is None:
        return np.zeros(len(column), dtype=bool)
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    rows = np.searchsorted(offsets, np.flatnonzero(data == ord("\n")) + offsets[0], side="right") - 1
    flags = np.zeros(len(column), dtype=bool)
    flags[rows] = True
    return flags


def _read_texts(texts: pa.Array) -> pa.ListArray:
    """JSON texts in chunks of about ``_CHUNK_BYTES``."""
    ends = np.cumsum(pc.binary_length(texts).to_numpy())
    parts, start = [], 0
    while start < len(texts):
        base = ends[start - 1] if start else 0
        stop = max(int(np.searchsorted(ends, base + _CHUNK_BYTES, side="right")), start + 1)
        parts.append(_read_chunk(texts.slice(start, stop - start)))
        start = stop
    return pa.concat_arrays(parts)


def _read_chunk(texts: pa.Array) -> pa.ListArray:
    """One chunk through read_json; a chunk it rejects is halved until the bad rows are read one by one."""
    lines = pc.binary_join_element_wise(_HEAD, texts, _TAIL, _NOTHING)
    offsets = _offsets(lines)
    block = lines.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    try:
        table = pj.read_json(
            pa.BufferReader(block),
            read_options=pj.ReadOptions(block_size=max(1 << 20, 2 * int(np.diff(offsets).max()))),
            parse_options=pj.ParseOptions(explicit_schema=_WRAPPED, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        table = None
    if table is not None and table.num_rows == len(texts):
        return table.column("v").combine_chunks()
    if len(texts) <= _ONE_BY_ONE:
        return pa.array([_clean(t) for t in texts.to_pylist()], ENTRIES)
    middle = len(texts) // 2
    return pa.concat_arrays([_read_chunk(texts.slice(0, middle)), _read_chunk(texts.slice(middle))])


def _read_objects(values: list) -> pa.ListArray:
    """Lists of dicts straight into Arrow; anything else (objects, odd types) cleaned row by row."""
    try:
        return pa.array(values, ENTRIES)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return pa.array([_clean(v) for v in values], ENTRIES)


def _field(obj, key):
    """Field of a logprob entry given as a dict (JSON log) or an object (openai client)."""
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _token(value) -> str | None:
    return None if value is None else str(value)


def _clean(content) -> list[dict] | None:
    """One row as clean dicts, or None when it holds no list of entries."""
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return None
    if isinstance(content, Mapping):
        content = content.get("content")
    elif content is not None and not isinstance(content, (list, tuple)):
        content = getattr(content, "content", None)  # openai's ChoiceLogprobs
    if not isinstance(content, (list, tuple)):
        return None
    return [
        {
            "token": _token(_field(e, "token")),
            "logprob": _number(_field(e, "logprob")),
            "top_logprobs": [{"token": _token(_field(t, "token")), "logprob": _number(_field(t, "logprob"))}
                             for t in (_field(e, "top_logprobs") or [])],
        }
        for e in content
        if e is not None
    ]


# ----------------------------------------------------------------------------- score tokens
@dataclass(frozen=True)
class ScoreTokens:
    """Every score-like token of every row, in reply order.

    ``row``: the row each token belongs to (sorted); ``rank``: its position among the
    row's score-like tokens (0 = first); ``count``: score-like tokens per row;
    ``level``: index of the sampled score; ``mass``: (tokens x levels) probability mass of
    each score among the token's alternatives, not yet renormalised.
    """

    row: np.ndarray
    rank: np.ndarray
    count: np.ndarray
    level: np.ndarray
    mass: np.ndarray

    def select(self, occurrence: int) -> np.ndarray:
        """Index of the ``occurrence``-th score token of each row (negative: from the end), -1 where absent."""
        target = occurrence if occurrence >= 0 else self.count[self.row] + occurrence
        chosen = np.full(len(self.count), -1, dtype=np.int64)
        hit = np.flatnonzero(self.rank == target)
        chosen[self.row[hit]] = hit
        return chosen


def _levels(tokens: pa.Array, index: Mapping[str, int]) -> np.ndarray:
    """Score level of each token (-1 for other tokens and nulls), normalising each distinct token once."""
    encoded = pc.dictionary_encode(tokens)
    table = np.array([index.get(str(t).strip().lower(), -1) for t in encoded.dictionary.to_pylist()] + [-1])
    codes = pc.fill_null(encoded.indices, len(encoded.dictionary)).to_numpy()
    return table[codes]


def _floats(values: pa.Array) -> np.ndarray:
    return pc.fill_null(values, math.nan).to_numpy(zero_copy_only=False)


def score_tokens(lists: pa.ListArray, tokens: Mapping[str, float]) -> tuple[np.ndarray, ScoreTokens]:
    """The score levels (sorted values) and every score-like token of ``lists`` with its masses.

    A token counts when its text, stripped and lower-cased, is a key of ``tokens``. Its
    mass for score ``s`` sums ``exp(logprob)`` over the ``top_logprobs`` alternatives that
    map to ``s`` (``" 3"`` and ``"3"`` add up); the sampled token is added when the
    alternatives omit it.
    """
    levels = np.array(sorted(set(tokens.values())))
    index = {key: int(np.searchsorted(levels, value)) for key, value in tokens.items()}
    entries = lists.flatten()
    entry_row = pc.list_parent_indices(lists).to_numpy()
    entry_token = pc.struct_field(entries, "token")
    entry_level = _levels(entry_token, index)
    found = np.flatnonzero(entry_level >= 0)
    row = entry_row[found]
    count = np.bincount(row, minlength=len(lists))
    rank = np.arange(len(found)) - (np.cumsum(count) - count)[row]

    position = np.full(len(entries), -1, dtype=np.int64)
    position[found] = np.arange(len(found))
    alternatives = pc.struct_field(entries, "top_logprobs")
    owner = position[pc.list_parent_indices(alternatives).to_numpy()]
    keep = np.flatnonzero(owner >= 0)
    alts = alternatives.flatten().take(pa.array(keep))
    owner = owner[keep]
    alt_token = pc.struct_field(alts, "token")
    alt_level = _levels(alt_token, index)
    alt_prob = np.exp(_floats(pc.struct_field(alts, "logprob")))
    width = len(levels)
    use = (alt_level >= 0) & ~np.isnan(alt_prob)
    mass = np.bincount(owner[use] * width + alt_level[use], weights=alt_prob[use], minlength=len(found) * width)
    mass = mass.astype(float).reshape(len(found), width)  # bincount of nothing is int
    # The sampled token itself counts once: through its alternative when listed, else directly.
    listed = pc.fill_null(pc.equal(alt_token, entry_token.take(pa.array(found[owner]))), False).to_numpy(zero_copy_only=False)
    unlisted = np.bincount(owner[listed], minlength=len(found)) == 0
    own = np.exp(_floats(pc.struct_field(entries, "logprob").take(pa.array(found))))
    add = np.flatnonzero(unlisted & ~np.isnan(own))
    mass[add, entry_level[found][add]] += own[add]
    return levels, ScoreTokens(row=row, rank=rank, count=count, level=entry_level[found], mass=mass)
