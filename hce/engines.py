"""Attempt logs larger than memory: a lazy log in the engine that reads the files.

:func:`scan_log` (``hce.read_log(path, engine=...)``) opens a Parquet or JSONL log, one file
or a directory of them (Hive-partitioned folders such as ``condition_id=A/part-0.parquet``
included), as a lazy frame of DuckDB (the embedded default), Polars, PySpark or Dask.
Nothing is loaded: the statistics of :mod:`hce.stats` that reduce to per-cell summaries run their
grouped pass in that engine (see :mod:`hce.stats._frames`). The log's own checks run in
the engine too, once: the required columns are present, ``error_flag`` is boolean (a
missing column is no attempt flagged; text ``"true"``/``"false"`` is read as booleans),
and no ``attempt_id`` appears twice.

This module lists a log's files and chooses the engine; :mod:`hce.engine_readers` opens them
in it, and :mod:`hce.engine_checks` holds the checks and what they found of each frame.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from hce.engine_checks import checked
from hce.engine_readers import DUCKDB_MEMORY, SIZE, open_files, open_remote, read_errors, spark_session
from hce.errors import LogFormatError
from hce.log_drift import Schema, reconcile
from hce.log_partitions import check_layout, check_partitions, partition_values
from hce.log_schema import SUFFIX_FORMATS

__all__ = ["AUTO_BYTES", "ENGINES", "checked", "choose_engine", "column_kinds", "is_lazy_log", "is_remote", "log_files",
           "readable_parquet", "scan_log", "spark_session"]

Engine = Literal["duckdb", "polars", "spark", "dask", "pandas", "auto"]

ENGINES = ("duckdb", "polars", "spark", "dask", "pandas", "auto")

#: ``engine="auto"`` reads logs up to this many bytes on disk into pandas, larger ones with
#: DuckDB. A 1,000,000-attempt Parquet log without prompts is about 30 MB and reports in
#: pandas in half a minute within 1 GB; at 10,000,000 attempts (300 MB) pandas needs 6 GB.
AUTO_BYTES = 256 * 2**20

#: What a file's ending in a log folder says it holds (any case): a log file's endings, and ``.json`` for JSONL.
_FORMATS = {**SUFFIX_FORMATS, ".json": "jsonl"}


def log_files(path: str | os.PathLike, *, csv: bool = False) -> tuple[list[Path], str]:
    """The Parquet or JSONL files of a log (a file, or a directory searched recursively)
    and their format. ``csv``: CSV files too (pandas reads a folder of them; the lazy engines
    read Parquet and JSONL).

    A folder is refused, naming a file of each kind, where its files mix formats or endings
    (``.parquet`` beside ``.PARQUET`` or ``.pq``: each engine kept another subset, silently),
    hold CSV files a lazy engine would leave out, or sit under different ``column=value``
    folders (a Hive folder beside files at the top: some engines crashed, Spark read one part);
    see :func:`hce.log_partitions.check_layout`.
    """
    root = Path(path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in _FORMATS)
    else:
        raise LogFormatError(f"{root}: no such log file or directory")
    kinds = "Parquet (.parquet), CSV (.csv) or JSONL (.jsonl)" if csv else "Parquet (.parquet) or JSONL (.jsonl)"
    if not files or any(p.suffix.lower() not in _FORMATS for p in files):
        raise LogFormatError(f"{root}: a {'log folder' if csv else 'lazy log'} reads {kinds} files; "
                             f"found {sorted({p.suffix for p in files}) or 'none'}")  # fmt: skip
    endings = {p.suffix: p for p in files}
    formats = {_FORMATS[e.lower()] for e in endings}
    if "csv" in formats and not csv:
        raise LogFormatError(f"{root}: holds CSV files (e.g. {next(p for e, p in endings.items() if e.lower() == '.csv')}), which a "
                             "lazy engine does not read; read the folder with engine='pandas', or write the log as "
                             "Parquet or JSONL")  # fmt: skip
    if len(endings) > 1:
        shown = ", ".join(f"{e} ({p.relative_to(root)})" for e, p in sorted(endings.items()))
        raise LogFormatError(f"{root}: a log folder's files share one format and one file ending, found {shown}; "
                             "rename them to one ending, or move the others out of the folder")  # fmt: skip
    if root.is_dir():
        check_layout(root, files)
    return files, formats.pop()


#: Object-store and cluster file systems an engine reads by URL: Spark's s3a://, gs://, abfs(s)://, hdfs://, and others'.
_REMOTE = re.compile(r"^(s3a?|s3n|gs|gcs|abfss?|wasbs?|hdfs|az|adl)://", re.IGNORECASE)

#: Schemes only some engines read (DuckDB and Polars have no HDFS client), the first the one ``"auto"`` picks.
_REMOTE_READERS = {"hdfs": ("spark", "dask")}


def is_remote(path: object) -> bool:
    """Whether ``path`` is an object-store or HDFS URL (``s3a://bucket/log/``), read by the engine.

    Examples
    --------
    >>> is_remote("s3a://bucket/judge-logs/"), is_remote("logs/run-1")
    (True, False)
    """
    return isinstance(path, str) and bool(_REMOTE.match(path))


def readable_parquet(files: list[Path]) -> None:
    """Refuse an empty or damaged Parquet file by name, before an engine fails on it deep in its
    plan (a 100-line traceback; Polars' does not name the file). Reads each footer only."""
    import pyarrow.parquet as pq

    for file in files:
        try:
            pq.read_metadata(file)
        except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
            empty = "an empty file, " if file.stat().st_size == 0 else ""
            raise LogFormatError(f"{file}: not a readable Parquet file ({empty}{exc}); remove or rewrite it") from None


def choose_engine(path: str | os.PathLike, engine: Engine = "auto") -> str:
    """The engine ``engine`` stands for: ``"auto"`` is pandas up to :data:`AUTO_BYTES` on
    disk, DuckDB past it; an object-store URL, DuckDB (Spark for ``hdfs://``), and an engine
    named that cannot read its scheme is refused, naming those that can.

    >>> choose_engine("s3a://bucket/logs/"), choose_engine("hdfs://nn/logs")
    ('duckdb', 'spark')
    """
    if engine not in ENGINES:
        raise LogFormatError(f"engine={engine!r} is not valid; choose one of {list(ENGINES)}")
    if is_remote(path):  # no size to read: the embedded engine reads the bucket, unless one is named
        if engine == "pandas":
            raise LogFormatError(f"{path}: an object-store path is read by the engine that reads it: "
                                 "engine='spark', 'duckdb', 'polars' or 'dask', not 'pandas'")  # fmt: skip
        scheme = str(path).split("://", 1)[0].lower()
        readers = _REMOTE_READERS.get(scheme, ("duckdb", "polars", "spark", "dask"))
        if engine == "auto":
            return readers[0]
        if engine not in readers:
            raise LogFormatError(f"{path}: engine={engine!r} reads no {scheme}:// path; "
                                 f"{' or '.join(repr(e) for e in readers)} reads it")  # fmt: skip
        return engine
    if engine != "auto":
        return engine
    files, _ = log_files(path, csv=True)
    return "duckdb" if sum(p.stat().st_size for p in files) > AUTO_BYTES else "pandas"


def scan_log(path: str | os.PathLike, *, engine: Engine = "duckdb", check: bool = True, memory: str | None = None,
             spark_master: str | None = None, spark_conf: dict[str, str] | None = None, schema: Schema = "strict"):
    """A lazy attempt log over Parquet or JSONL files, in the engine named.

    Parameters
    ----------
    path : path
        A log file, or a directory of them (read recursively; Hive partition folders
        ``column=value`` become columns).
    engine : {"duckdb", "polars", "spark", "dask", "auto"}, default "duckdb"
        ``"auto"`` picks DuckDB past :data:`AUTO_BYTES` on disk; below it, and for
        ``"pandas"``, the pandas DataFrame comes from :func:`hce.read_log` (with the same
        ``engine=``), and this function refuses, saying so.
    check : bool, default True
        Check the log in the engine (one grouped pass over ``attempt_id``).
    memory : str, optional
        DuckDB: the memory its connection may hold before it spills to the temp folder
        (default :data:`DUCKDB_MEMORY`, "2GB"); Spark: the driver's memory
        (``spark.driver.memory``, "2GB" read as "2g"; default Spark's own), for a session
        this call starts.
    spark_master : str, optional
        Spark only: the master of a session this call starts (``local[2]``,
        ``spark://host:7077``, ``yarn``); default Spark's own (``local[*]``). An active
        session is used as it is.
    spark_conf : dict, optional
        Spark only: more settings of a session this call starts (``{"spark.executor.memory": "8g"}``).
    schema : {"strict", "union"}, default "strict"
        Files of a folder whose columns differ: refused, naming the file and the column
        (``"strict"``), or read by name with a missing column as null, saying so
        (``"union"``); see :mod:`hce.log_drift`. Local folders only: an object store's
        files are read as its engine reads them.

    Returns
    -------
    duckdb.DuckDBPyRelation, polars.LazyFrame, pyspark.sql.DataFrame or dask.dataframe.DataFrame
        The log, not loaded; pass it to the statistics of :mod:`hce.stats` or to
        ``hce.report.report``.

    Raises
    ------
    LogFormatError
        No such file, a required column missing, an ``error_flag`` that is not boolean, or
        an ``attempt_id`` twice (naming it).

    Examples
    --------
    >>> import hce, pandas as pd, tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> log = pd.DataFrame({"attempt_id": ["a1", "a2"], "item_id": "T1", "condition_id": "A",
    ...                     "attempt": [1, 2], "total": [3.0, 5.0], "error_flag": False})
    >>> log.to_parquet(os.path.join(folder, "part-0.parquet"))
    >>> lazy = scan_log(folder, engine="polars")
    >>> hce.stats.item_spread(lazy)[["item_id", "n", "sd"]].round(3)
      item_id  n     sd
    0      T1  2  1.414
    """
    if not isinstance(path, (str, os.PathLike)):
        raise LogFormatError(f"a lazy log reads one file or one directory of files, got {type(path).__name__}; "
                             "put the files in one directory")  # fmt: skip
    chosen = choose_engine(path, engine)
    if memory is not None and not SIZE.match(str(memory)):
        raise LogFormatError(f"memory limit {memory!r} is not a size; give a number and a unit, e.g. '2GB', '500MB' or '1.5GiB'")
    if chosen == "pandas":  # the pandas reader is hce.read_log's, which calls this module: not called from here
        raise LogFormatError(f"{path} is small enough for pandas (engine={engine!r}): read it with "
                             f"hce.read_log(path, engine={engine!r}), which returns the pandas DataFrame")  # fmt: skip
    spark = {"master": spark_master, "conf": dict(spark_conf or {}), "memory": memory}
    if is_remote(path):  # the engine lists and reads the bucket itself (its own credentials)
        with read_errors(chosen, path):
            native = open_remote(chosen, str(path), memory or DUCKDB_MEMORY, spark)
            return checked(native, str(path)) if check else native
    files, fmt = log_files(path)
    if fmt == "parquet":
        readable_parquet(files)
    else:  # an empty JSONL file holds no attempt (Polars and Dask stopped on one)
        files = [p for p in files if p.stat().st_size] or files
    # a column in the files and the folder names, equal in both: the files' (Dask cannot merge the two)
    in_files = Path(path).is_dir() and check_partitions(Path(path), files, fmt)
    folders = {k for p in files for k in partition_values(Path(path), p)}
    union = reconcile(files, fmt, schema, sorted(folders))
    with read_errors(chosen, path):
        native = open_files(chosen, Path(path), files, fmt, memory or DUCKDB_MEMORY, in_files, spark, union)
        return checked(native, str(path)) if check else native


def column_kinds(native: object) -> dict[str, str]:
    """Each column of a lazy log and what it holds: ``"number"``, ``"bool"`` or ``"other"``."""
    import narwhals as nw

    frame = nw.from_native(native)
    kinds = {}
    for name, dtype in frame.collect_schema().items():
        kinds[name] = "bool" if dtype == nw.Boolean else "number" if dtype.is_numeric() else "other"
    return kinds


def is_lazy_log(log: object) -> bool:
    """Whether ``log`` is a frame of another engine (not pandas, not a path or a list of them)."""
    import pandas as pd

    if isinstance(log, (pd.DataFrame, str, os.PathLike, list, tuple)):
        return False
    import narwhals as nw

    try:
        nw.from_native(log)
    except TypeError:
        return False
    return True
