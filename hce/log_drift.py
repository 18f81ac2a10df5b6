"""Schema drift across the files of one log: refused (``strict``) or reconciled (``union``).

A log folder written over weeks gains a column (``note``), loses one, or writes a score as
integers in one file and as decimals in the next. Left to themselves the readers disagree:
DuckDB stops at the first file that lacks a column, Polars raises a ``SchemaError`` whose
suggested option hce did not pass through, Dask raises a ``KeyError`` at compute time, and
pandas fills the gap with NaN without a word. :func:`reconcile` decides once, before any
engine reads the files, and every reader then does the same:

* ``"strict"`` (the default): every file has the columns of the first (in sorted order),
  of the same types; the first file that differs is refused, naming it and the column.
* ``"union"``: a column some files lack is read as null there, and the reader says so
  (one warning naming the columns and a file that lacks each); integer and floating-point
  versions of one column are read as floating point. Other type differences (text in one
  file, numbers in another) are refused in both modes: no reader can tell which is right.

A file's columns are its Parquet schema or its CSV header; the ``column=value`` folders of a
Hive layout are not compared (they are the path's). JSONL files are not compared: a JSONL
record names its own fields and may leave any out, so every reader (pandas, DuckDB, Polars,
Dask, Spark) already reads JSONL files by name with a missing field as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from hce._warnings import warn
from hce.errors import HceWarning, LogFormatError

Schema = Literal["strict", "union"]
SCHEMAS = ("strict", "union")
_FIX = "the files of one log must have the same columns (schema='strict', the default); pass --schema union (schema='union' in Python) to read a column missing from some files as null there"


def file_columns(file: Path, fmt: str) -> dict[str, str]:
    """Each column of one Parquet or CSV log file and its kind: ``"integer"``, ``"float"``,
    ``"bool"``, ``"text"`` or ``"other"`` (CSV: ``"any"``, its types are the reader's guess).

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "part-0.parquet")
    >>> pd.DataFrame({"attempt_id": ["a1"], "total": [3]}).to_parquet(path)
    >>> file_columns(Path(path), "parquet")
    {'attempt_id': 'text', 'total': 'integer'}
    """
    return {name: kind for name, (kind, _) in _fields(file, fmt).items()}


def _fields(file: Path, fmt: str) -> dict[str, tuple[str, str]]:
    """Each column's kind (:func:`file_columns`) and its exact type (Arrow's, ``""`` in CSV)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(file)
        except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
            raise LogFormatError(f"{file}: not a readable Parquet file ({exc}); remove or rewrite it") from None
        return {field.name: (_kind(field.type), str(field.type)) for field in schema}
    import csv

    with open(file, encoding="utf-8-sig", newline="") as f:
        return dict.fromkeys(next(csv.reader(f), []), ("any", ""))


def _kind(t) -> str:
    """The kind of a Parquet column's Arrow type; a column of nulls alone (a day without errors
    writes ``error_message`` so) is ``"null"``, which any other kind reads; a pandas Categorical's
    dictionary is its values' kind."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "text"
    return "time" if pa.types.is_timestamp(t) or pa.types.is_date(t) else "other"


def _refuse_case_twins(file: Path, names: Sequence[str], seen: dict[str, str]) -> None:
    """Refuse column names that differ only in case (``Total`` and ``total``), within ``file`` or
    against ``seen`` (the names of earlier files, by their lower case): DuckDB and Spark read them
    as one column, pandas, Polars and Dask as two."""
    own: dict[str, str] = {}
    for name in names:
        twin = own.get(name.lower()) or seen.get(name.lower())
        if twin is not None and twin != name:
            raise LogFormatError(f"{file}: columns {twin!r} and {name!r} differ only in case, which DuckDB and Spark read "
                                 "as one column and pandas, Polars and Dask as two; rename one of them")  # fmt: skip
        own[name.lower()] = name
    for lower, name in own.items():
        seen.setdefault(lower, name)


def reconcile(files: Sequence[Path], fmt: str | Sequence[str], schema: Schema = "strict", partitions: Sequence[str] = ()) -> bool:
    """Check the files of one log against each other (see the module docstring).

    Parameters
    ----------
    files : list of Path
        The log's files, in the order read.
    fmt : {"parquet", "jsonl", "csv"} or a list of them
        The files' format, or each file's.
    schema : {"strict", "union"}, default "strict"
    partitions : list of str, default ()
        Columns the folder names give (not compared).

    Returns
    -------
    bool
        Whether the files differ (only possible with ``"union"``): the reader must then read
        them by column name, filling the gaps with null.

    Raises
    ------
    LogFormatError
        Naming the first file that differs and the column.

    Warns
    -----
    HceWarning
        With ``"union"``, naming each column missing from some files and one such file.

    Examples
    --------
    >>> import pandas as pd, tempfile, os, warnings
    >>> folder = Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"attempt_id": ["a1"], "total": [3.0]}).to_parquet(folder / "part-0.parquet")
    >>> pd.DataFrame({"attempt_id": ["a2"]}).to_parquet(folder / "part-1.parquet")
    >>> files = sorted(folder.glob("*.parquet"))
    >>> try:
    ...     reconcile(files, "parquet")
    ... except LogFormatError as err:
    ...     print(str(err).split(";")[0].replace(str(folder), "log"))
    log/part-1.parquet: column 'total' is missing (log/part-0.parquet has it)
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     reconcile(files, "parquet", "union")
    True
    >>> print(str(said[0].message).split(" (e.g.")[0])
    the log's files have different columns (schema='union'): 'total'

    """
    if schema not in SCHEMAS:
        raise LogFormatError(f"schema={schema!r} is not valid; choose one of {list(SCHEMAS)}")
    formats = [fmt] * len(files) if isinstance(fmt, str) else list(fmt)
    files = [f for f, t in zip(files, formats) if t != "jsonl"]  # JSONL: read by name everywhere
    formats = [t for t in formats if t != "jsonl"]
    if not files:
        return False
    skip = set(partitions)
    fields = [{c: v for c, v in _fields(f, t).items() if c not in skip} for f, t in zip(files, formats)]
    columns = [{c: kind for c, (kind, _) in found.items()} for found in fields]
    names: dict[str, str] = {}
    for file, found in zip(files, columns):
        _refuse_case_twins(file, list(found), names)
    if len(files) < 2:
        return False
    first, reference = files[0], columns[0]
    seen = dict(reference)
    origin = dict.fromkeys(reference, first)  # the file each column's kind was read from
    missing: dict[str, Path] = {}
    for file, found in zip(files[1:], columns[1:]):
        for column, kind in found.items():
            known = seen.get(column)
            if known is not None and known != kind and not {"any", "null"} & {known, kind}:
                if {known, kind} <= {"integer", "float"} and schema == "union":
                    seen[column] = "float"
                    continue
                where = origin[column]
                raise LogFormatError(f"{file}: column {column!r} holds {kind} values where {where} holds {known}; "
                                     "write one type in every file (integers and decimals of one column are read "
                                     "as decimals with --schema union)")  # fmt: skip
            if known in (None, "null"):
                seen[column], origin[column] = kind, file
        if schema == "strict":
            for column in reference:
                if column not in found:
                    raise LogFormatError(f"{file}: column {column!r} is missing ({first} has it); {_FIX}")
            for column in found:
                if column not in reference:
                    raise LogFormatError(f"{file}: column {column!r} is not in {first}; {_FIX}")
    for column in seen:
        lacking = [file for file, found in zip(files, columns) if column not in found]
        if lacking:
            missing[column] = lacking[0]
    if missing:
        shown = "; ".join(f"{c!r} (e.g. {f})" for c, f in missing.items())
        warn(f"the log's files have different columns (schema='union'): {shown} read as null in the files that lack them",
             HceWarning)
    # a column of nulls in some files, or integers in some and decimals in others: read by name
    # (Polars stops on files whose types differ at all)
    kinds = {n: {c[n] for c in columns if n in c} for n in seen}
    # and a column of one kind in other Arrow types (int32 and int64, timestamps in other units)
    exact = {n: {found[n][1] for found in fields if n in found} - {""} for n in seen}
    return bool(missing) or any(len(k - {"any"}) > 1 for k in kinds.values()) or any(len(t) > 1 for t in exact.values())
