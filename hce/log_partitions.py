"""Hive-partitioned log folders: the ``column=value`` folders above each file are columns.

A log written as ``log/condition_id=A/part-0.parquet`` holds ``condition_id`` only in its
path. Every reader of hce (pandas, DuckDB, Polars, Dask, Spark) keeps such columns; a
column both in a file and in its path is refused, naming both, unless every value in the
file equals the path's (engines would otherwise silently take one or the other: DuckDB,
Polars and Dask the path's).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pandas as pd

from hce.errors import LogFormatError


def partition_values(root: Path, file: Path) -> dict[str, str]:
    """The ``column=value`` folders between ``root`` and ``file``, outermost first.

    Examples
    --------
    >>> partition_values(Path("log"), Path("log/condition_id=A/model=m1/part-0.parquet"))
    {'condition_id': 'A', 'model': 'm1'}
    """
    parts = file.relative_to(root).parts[:-1] if root != file else ()
    # percent-decoded, as DuckDB, Polars, Dask and Spark read them (Spark writes "a b" as a%20b)
    return {key: unquote(value) for key, value in (part.split("=", 1) for part in parts if "=" in part and not part.startswith("="))}


#: The folder name Hive and Spark write for a row whose partition column is null.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def check_layout(root: Path, files: list[Path]) -> None:
    """Refuse a folder whose files sit under different ``column=value`` folders (one set of
    columns in one order for every file), or under a folder of null values, naming the files.

    Examples
    --------
    >>> check_layout(Path("log"), [Path("log/condition_id=A/p.parquet"), Path("log/p.parquet")])
    Traceback (most recent call last):
    ...
    hce.errors.LogFormatError: log: the files sit under different column=value folders: condition_id=A/p.parquet under ['condition_id'], p.parquet under none; write every file of a log under the same partition columns, in one order
    """
    first, keys = files[0], list(partition_values(root, files[0]))
    for file in files:
        values = partition_values(root, file)
        if list(values) != keys:
            raise LogFormatError(
                f"{root}: the files sit under different column=value folders: {first.relative_to(root)} under "
                f"{keys or 'none'}, {file.relative_to(root)} under {list(values) or 'none'}; write every file of a log "
                "under the same partition columns, in one order"
            )
        blank = [k for k, v in values.items() if v in (NULL_PARTITION, "")]
        if blank:
            raise LogFormatError(
                f"{file}: the folder {blank[0]}={values[blank[0]]} is how Hive and Spark write rows whose {blank[0]!r} "
                "is null, which the engines read differently (as null, as text, or not at all); rename the "
                "folder to the value its rows hold"
            )


def with_partitions(frame: pd.DataFrame, values: dict[str, str], file: Path) -> pd.DataFrame:
    """``frame`` (one file's rows) with its path's partition columns, refusing a column that is
    also in the file with another value."""
    for column, value in values.items():
        if column in frame.columns:
            refuse_conflict(file, column, value, frame[column])
            continue
        frame[column] = value
    return frame


def refuse_conflict(file: Path, column: str, value: str, found: pd.Series) -> None:
    """Refuse ``file`` whose ``column`` holds values other than its folder's ``column=value``."""
    text = found.astype("string")  # exactly: DuckDB, Polars and Spark keep the folder's, pandas and Dask the file's
    other = text[text.ne(value).fillna(True)]
    if len(other):
        named = other[other.notna()]  # a value that differs, before a blank one
        shown = found.loc[(named if len(named) else other).index[0]]
        shown = "a blank" if pd.isna(shown) else repr(shown)
        raise LogFormatError(
            f"{file}: column {column!r} is both in the file (e.g. {shown}, {len(other):,} row(s) differ) and in "
            f"its folder name ({column}={value}); the two disagree, so which condition a row belongs to is not "
            f"known: drop the column from the files, or rename the folders"
        )


def check_partitions(root: Path, files: list[Path], fmt: str) -> bool:
    """Before an engine reads a folder: every file's column that is also a partition of its
    path must hold the path's value (only those columns are read, only from those files).
    Returns whether any file holds such a column."""
    found = False
    for file in files:
        values = partition_values(root, file)
        if not values:
            continue
        frame = _shared_columns(file, fmt, list(values))
        found = found or not frame.columns.empty
        for column in frame.columns:
            refuse_conflict(file, column, values[column], frame[column])
    return found


def _shared_columns(file: Path, fmt: str, wanted: list[str]) -> pd.DataFrame:
    """The columns of ``file`` among ``wanted`` (none: a frame without columns): a Parquet file's
    schema says which; in a JSONL file, a key of any line (the first line alone missed a
    ``condition_id`` from line 2 on, which the engines then overwrote with the folder's,
    silently: an independent check)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(file).names
        except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
            raise LogFormatError(f"{file}: not a readable Parquet file ({exc}); expected a Parquet attempt log") from None
        shared = [c for c in wanted if c in names]
        return pq.read_table(file, columns=shared).to_pandas() if shared else pd.DataFrame()
    import json

    text = file.read_bytes()
    # a quoted key anywhere is a candidate (one in a prompt's text too): the file's records say
    if not any(json.dumps(c).encode() in text for c in wanted):
        return pd.DataFrame()
    frame = pd.read_json(file, lines=True, dtype=False)
    return frame[[c for c in wanted if c in frame.columns]]
