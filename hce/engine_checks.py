"""The checks of a lazy log in its engine, and what they found of each frame.

:func:`checked` runs the log's own checks once, in the engine: the required columns, a boolean
``error_flag``, no blank or repeated ``attempt_id``, no blank ``item_id``, attempts that count from
1 in whole numbers, no infinite score: what pandas' door (:func:`hce.log.validate_log`) refuses. What
a check finds is remembered by the frame's identity (``remember_*``; ``known_*`` asks), so a
report's statistics do not scan the log again, and a subset of the rows (one condition's) inherits it
(:func:`inherit_known`); :mod:`hce.stats._frames` is the statistics' door that asks.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from hce._checks import plain
from hce.errors import LogFormatError

_REQUIRED = ("attempt_id", "item_id", "attempt")

#: What was found of lazy frames, by identity and fact: ``("unique", *keys)`` (see
#: :func:`known_unique`) or ``("clean", probe)`` (see :func:`known_clean`).
_KNOWN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def checked(native, source: str = "log"):
    """The lazy log with ``error_flag`` boolean (added as False when absent), after the
    log's checks in its engine (see the module docstring)."""
    import narwhals as nw

    frame = nw.from_native(native)
    frame = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
    schema = dict(frame.collect_schema())
    missing = [c for c in _REQUIRED if c not in schema]
    if missing:
        raise LogFormatError(f"{source}: the log has no column(s) {missing}; columns present: {list(schema)}")
    flag = schema.get("error_flag")
    if flag is None:
        frame = frame.with_columns(nw.lit(False).alias("error_flag"))
    elif flag == nw.String:
        text = nw.col("error_flag").str.strip_chars().str.to_lowercase()
        bad = frame.filter(~text.is_in(["true", "false"]) & ~nw.col("error_flag").is_null())
        first = bad.select(nw.col("error_flag").min().alias("value"), nw.len().alias("n")).collect().to_pandas()
        if int(first["n"].iloc[0]):
            raise LogFormatError(f"{source}: column 'error_flag' holds {first['value'].iloc[0]!r} ({int(first['n'].iloc[0])} "
                                 "value(s) that are not true/false); give every flag as a boolean")  # fmt: skip
        frame = frame.with_columns((text == "true").fill_null(False).alias("error_flag"))
    elif not (flag.is_numeric() or flag == nw.Boolean):
        raise LogFormatError(f"{source}: column 'error_flag' must be boolean, got {flag}")
    kind = schema["attempt"]
    if kind == nw.String:  # as pandas' door reads "3" (text that is not a number fails in the engine, exit 2)
        frame, kind = frame.with_columns(nw.col("attempt").str.strip_chars().cast(nw.Float64)), nw.Float64
    elif not kind.is_numeric():
        raise LogFormatError(f"{source}: column 'attempt' must hold whole numbers >= 1, got {kind}")
    # one pass: blank ids, attempts that do not count from 1, and infinite scores, which pandas'
    # reader refuses in any float column
    floats = [c for c, t in schema.items() if t in (nw.Float64, nw.Float32)]
    wrong = {"low": nw.col("attempt") < 1}
    if kind.is_float():  # NaN is a missing attempt to pandas (and Spark counts NaN % 1 != 0 as true)
        wrong["part"] = (nw.col("attempt") % 1 != 0) & ~nw.col("attempt").is_nan()
    found = frame.select(nw.col("attempt_id").is_null().cast(nw.Int64).sum().alias("blank"),
                         nw.col("item_id").is_null().cast(nw.Int64).sum().alias("blank item"),
                         *[test.cast(nw.Int64).sum().alias(name) for name, test in wrong.items()],
                         *[(nw.col(c).abs() == float("inf")).cast(nw.Int64).sum().alias(f"inf:{c}") for c in floats]
                         ).collect().to_pandas().iloc[0]  # fmt: skip
    if n := _count(found["blank"]):
        raise LogFormatError(f"{source}: column 'attempt_id' is blank in {n:,} row(s); "
                             "every attempt needs its own id (hce.log.make_attempt_id makes them)")  # fmt: skip
    if n := _count(found["blank item"]):
        ident = _first(frame, nw.col("item_id").is_null())[0]
        raise LogFormatError(f"{source}: column 'item_id' is blank in {n:,} row(s) (attempt_id {ident!r}); "
                             "every attempt needs the item it judged")  # fmt: skip
    for name, test in wrong.items():
        if n := _count(found[name]):
            ident, value = _first(frame, test)
            raise LogFormatError(f"{source}: column 'attempt': expected a whole number >= 1 (attempts count from 1), got "
                                 f"{value!r} for attempt_id {ident!r} ({n:,} row(s) like it)")  # fmt: skip
    infinite = {c: n for c in floats if (n := _count(found[f"inf:{c}"]))}
    if infinite:
        column, n = next(iter(infinite.items()))
        raise LogFormatError(f"{source}: column {column!r} holds {n:,} infinite value(s) (inf or -inf): expected "
                             "a finite number (leave the cell empty, or null, for a missing value)")  # fmt: skip
    out = frame.to_native()
    for column in floats:  # the statistics' door does not scan these again
        remember_clean(out, f"inf:{column}")
    n_repeated, first = repeated_attempts(out, ["attempt_id"])
    if n_repeated:
        raise LogFormatError(f"{source}: attempt_id {first!r} appears more than once; "
                             f"{n_repeated:,} attempt id(s) repeat, which would count those attempts "
                             "twice; drop the repeats, or combine overlapping logs with `hce log merge`")  # fmt: skip
    remember_unique(out, ("attempt_id",))
    return out


def _count(total) -> int:
    """A count from a sum of 0/1 values: the sum of nulls alone is null (or NaN), a count of 0."""
    return int(total) if total == total and total is not None else 0


def _first(frame, test) -> tuple[object, object]:
    """The ``attempt_id`` and ``attempt`` of one row where ``test`` holds, to name in an error."""
    row = frame.filter(test).select("attempt_id", "attempt").head(1).collect().to_pandas().iloc[0]
    value = plain(row["attempt"])
    return plain(row["attempt_id"]), int(value) if isinstance(value, float) and value.is_integer() else value


def repeated_attempts(native, keys: list[str]) -> tuple[int, object]:
    """How many combinations of ``keys`` (``attempt_id`` and the keys within which it must be
    unique) occur more than once in a lazy frame, and the smallest of them (None if none):
    :func:`distinct_by_hash` first, the grouped count of the keys themselves only when it cannot
    prove them distinct.
    """
    if distinct_by_hash(native, keys):
        return 0, None
    return _grouped_repeats(native, keys)


def distinct_by_hash(native, keys: list[str]) -> bool:
    """Whether every combination of ``keys`` in a lazy frame is distinct, proved by a pass that
    holds 8 bytes a row: the rows against the distinct 64-bit hashes of ``keys`` (DuckDB's
    ``hash``, Polars' ``hash``, Spark's ``xxhash64``). Equal keys hash alike, so as many
    distinct hashes as rows proves every key distinct, exactly; False when fewer (a repeat, or
    a hash collision, about 1e-5 at 20M rows) or for another engine (Dask), where the caller
    runs the grouped count, which holds every key and its count. Why: at 20M attempts that
    grouped count was the one step of a DuckDB report that outgrew 2 GB, and a report's
    repeated-rating checks took 15 of its 170 s (issue 43); DuckDB's aggregates spill to its
    temp folder past its ``memory_limit`` either way.
    """
    rows = distinct = None
    kind = type(native).__module__.split(".")[0]
    if kind == "duckdb":
        listed = ", ".join(f'"{k}"' for k in keys)
        rows, distinct = native.aggregate(f"count(*), count(DISTINCT hash({listed}))").fetchall()[0]
    elif kind == "polars":
        import polars as pl

        hashed = pl.struct(keys).hash() if len(keys) > 1 else pl.col(keys[0]).hash()
        got = native.lazy().select(pl.len().alias("n"), hashed.n_unique().alias("h")).collect()
        rows, distinct = int(got["n"][0]), int(got["h"][0])
    elif kind == "pyspark":
        from pyspark.sql import functions as F

        got = native.agg(F.count(F.lit(1)).alias("n"), F.countDistinct(F.xxhash64(*keys)).alias("h")).collect()[0]
        rows, distinct = got["n"], got["h"]
    return rows is not None and rows == distinct


def _grouped_repeats(native, keys: list[str]) -> tuple[int, object]:
    """The grouped count of ``keys`` themselves: the repeated combinations and the smallest."""
    import narwhals as nw

    frame = nw.from_native(native)
    frame = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
    found = (
        frame.group_by(keys).agg(nw.len().alias("_times")).filter(nw.col("_times") > 1)
        .select(nw.len().alias("n"), nw.col(keys[0]).min().alias("first")).collect().to_pandas()
    )  # fmt: skip
    n = int(found["n"].iloc[0])
    return n, found["first"].iloc[0] if n else None


def remember_unique(native, keys: tuple[str, ...]) -> None:
    """Record that ``keys`` are unique in ``native`` (see :func:`known_unique`), so the check
    runs once per frame, not once per statistic (a full shuffle each on Spark: issue 43)."""
    _remember(native, ("unique", *sorted(keys)))  # in any order: (condition_id, item_id) is (item_id, condition_id)


def remember_clean(native, probe: str) -> None:
    """Record that a check of ``native`` found nothing for ``probe`` (``"inf:<column>"``: no
    infinite value, ``"blank:<column>"``: no blank one, ``"flagged:<column>"``: no row flagged
    in that error column), so no other statistic asks again."""
    _remember(native, ("clean", probe))


def remember_varied(native, column: str, *, constant_ok: bool) -> None:
    """Record that ``column`` of ``native`` holds a score (``constant_ok``) or two different ones
    (see :func:`known_varied`): a fact of this frame alone, which its subsets do not inherit (one
    condition's scores may all be equal)."""
    _remember(native, ("varied", column, "scored" if constant_ok else "varied"))


def known_varied(native: object, column: str, *, constant_ok: bool) -> bool:
    """Whether ``column`` of ``native`` was found to hold a score (``constant_ok``) or two different
    ones, as a statistic's door asks (:func:`hce.stats._validate.refuse_unvaried`)."""
    return _known(native, ("varied", column, "varied")) or (constant_ok and _known(native, ("varied", column, "scored")))


def _remember(native, fact: tuple[str, ...]) -> None:
    try:
        _KNOWN[(id(native), fact)] = native
    except TypeError:  # a frame that takes no weak reference is checked every time
        pass


def inherit_known(parent: object, child: object, fixed: Sequence[str] = ()) -> None:
    """Record for ``child``, a subset of ``parent``'s rows, everything found of ``parent``: its
    unique keys and clean columns hold in any subset. Where ``child`` holds one value of each
    column of ``fixed`` (one condition's rows), those columns also drop out of the key sets:
    ``(condition_id, item_id, attempt)`` unique in a log makes ``(item_id, attempt)`` unique in
    each condition's rows."""
    for (ident, fact), frame in list(_KNOWN.items()):
        if ident != id(parent) or frame is not parent or fact[0] == "varied":
            continue
        _remember(child, fact)
        if fact[0] == "unique":
            rest = tuple(k for k in fact[1:] if k not in fixed)
            if rest and len(rest) < len(fact) - 1:
                remember_unique(child, rest)


def settle_unique(native: object, keys: Sequence[str]) -> None:
    """Remember ``keys`` unique in a lazy frame when :func:`repeated_attempts` finds them so (one
    pass over hashes; on Dask, one grouped count instead of one per statistic and subset); else
    leave each statistic to check (and name the repeat) where it reads them."""
    if not known_unique(native, tuple(keys)) and not repeated_attempts(native, list(keys))[0]:
        remember_unique(native, tuple(keys))


def known_unique(native: object, keys: tuple[str, ...] = ("attempt_id",)) -> bool:
    """Whether ``native`` is a lazy frame found free of repeated ``keys`` (by :func:`checked`, or
    by a statistic's door): keys found unique are unique within any keys that hold them
    (``attempt_id`` alone within every key set; ``(condition_id, item_id, attempt)`` with
    ``experiment_id`` beside them)."""
    if native is None:
        return False
    wanted = set(keys)
    return any(ident == id(native) and frame is native and fact[0] == "unique" and set(fact[1:]) <= wanted
               for (ident, fact), frame in list(_KNOWN.items()))  # fmt: skip


def known_clean(native: object, probe: str) -> bool:
    """Whether a check of ``native`` (or of a frame it is a subset of) found nothing for ``probe``
    (see :func:`remember_clean`)."""
    return _known(native, ("clean", probe))


def _known(native: object, fact: tuple[str, ...]) -> bool:
    return native is not None and _KNOWN.get((id(native), fact)) is native
