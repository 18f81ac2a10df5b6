"""How each engine opens a log's files: DuckDB, Polars, Dask and Spark readers of a listed set
of local files (Hive folders read as text, files whose columns differ read by name), of an
object-store URL, and the Spark session they share.

:func:`hce.engines.scan_log` lists and checks the files (:func:`hce.engines.log_files`,
:mod:`hce.log_partitions`, :mod:`hce.log_drift`) and calls :func:`open_files` or
:func:`open_remote` here, inside :func:`read_errors`, which turns an engine's own read error into
a :class:`~hce.errors.LogFormatError` naming the log.
"""

from __future__ import annotations

import contextlib
import functools
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hce.errors import HceError, LogFormatError
from hce.log_partitions import partition_values

#: How to install each engine, for the error when it is missing.
INSTALL = {
    "duckdb": 'pip install "hce[engines]"  (DuckDB)',
    "polars": 'pip install "hce[engines]"  (Polars)',
    "spark": 'pip install "hce[spark]"  (PySpark; it needs Java: apt-get install -y openjdk-17-jre-headless)',
    "dask": 'pip install "hce[dask]"  (Dask)',
}

#: DuckDB's memory for one lazy log (its own connection): past it, DuckDB spills to the temp
#: folder instead of growing (its default is 80% of the machine's memory).
DUCKDB_MEMORY = "2GB"

#: A memory size both DuckDB's ``memory_limit`` and Spark's ``spark.driver.memory`` (after the
#: rewrite in :func:`spark_session`) read.
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])i?b\s*$", re.IGNORECASE)


def open_remote(engine: str, url: str, memory: str, spark: dict):
    """A lazy log at an object-store URL: a Parquet folder (Hive partitions kept), or a JSONL file
    or folder when the URL ends so."""
    jsonl = url.endswith((".jsonl", ".json"))
    folder = not url.rstrip("/").endswith((".parquet", ".jsonl", ".json"))
    pattern = url.rstrip("/") + "/**/*.parquet" if folder else url
    try:
        if engine == "spark":
            reader = spark_session(**spark).read
            return reader.json(url) if jsonl else reader.parquet(url)
        if engine == "duckdb":
            import duckdb

            connection = duckdb.connect(config={"memory_limit": memory})
            if jsonl:
                return connection.read_json(pattern, format="newline_delimited", hive_partitioning=folder)
            return connection.read_parquet(pattern, hive_partitioning=folder)
        if engine == "polars":
            import polars as pl

            return pl.scan_ndjson(pattern) if jsonl else pl.scan_parquet(pattern, hive_partitioning=folder)
        import dask.dataframe as dd

        return dd.read_json(pattern, lines=True, blocksize=None) if jsonl else dd.read_parquet(url, blocksize="64MiB")
    except ImportError as err:
        raise LogFormatError(f"engine={engine!r} is not installed: {INSTALL[engine]}") from err


@contextlib.contextmanager
def read_errors(engine: str, path: object):
    """An engine's own error while it reads and checks the files, as a :class:`LogFormatError`
    naming the log and the engine's first line (``hce report`` exits 2, not 1 with a traceback
    that cannot be told from a section not written). What hce checks itself is refused before,
    by name; this is what only the engine finds (a file's checksum, a type it cannot read)."""
    try:
        yield
    except LogFormatError:
        raise
    except Exception as err:  # each engine has its own error classes (and Dask raises pandas' and pyarrow's)
        if not _is_engine_error(err):
            raise
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise LogFormatError(f"{path}: {engine} could not read the log: {type(err).__name__}: {first}") from err


def _is_engine_error(err: Exception) -> bool:
    """Whether ``err`` comes from an engine or the file readers under it (by the module of its class)."""
    modules = {c.__module__.split(".")[0] for c in type(err).__mro__}
    return bool(modules & {"duckdb", "_duckdb", "polars", "pyarrow", "py4j", "pyspark", "dask", "fsspec"}) or (
        isinstance(err, (KeyError, ValueError, TypeError, OSError)) and not isinstance(err, HceError))


def open_files(engine: str, root: Path, files: list[Path], fmt: str, memory: str, in_files: bool, spark: dict, union: bool = False):
    """The engine's lazy frame of the files; ``union``: files whose columns differ (``schema="union"``)
    read by column name, a missing column null.

    Every engine reads exactly ``files`` (a glob or a folder took other files too: Spark and Dask
    read every file of the folder), and the ``column=value`` folders as text, as pandas does:
    Polars and Spark guessed numbers, so ``condition_id=01`` and ``condition_id=1`` became one
    condition (an independent check).
    """
    hive = root.is_dir()
    keys = list(partition_values(root, files[0])) if hive else []  # one set for every file (check_layout)
    paths = [str(p) for p in files]
    try:
        if engine == "duckdb":
            import duckdb

            spill = Path(tempfile.gettempdir()) / "hce-duckdb"
            connection = duckdb.connect(config={"memory_limit": memory, "temp_directory": str(spill)})
            listed = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
            options = [f"hive_partitioning = {str(hive).lower()}", f"union_by_name = {str(union).lower()}"]
            options += ["hive_types = {" + ", ".join(f"'{k}': 'VARCHAR'" for k in keys) + "}"] if keys and not in_files else []
            reader = "read_parquet" if fmt == "parquet" else "read_json"
            options += [] if fmt == "parquet" else ["format = 'newline_delimited'"]
            return connection.sql(f"SELECT * FROM {reader}({listed}, {', '.join(options)})")
        if engine == "polars":
            import polars as pl

            if fmt == "parquet" and not union:
                text = {k: pl.String for k in keys} if keys and not in_files else None
                return pl.scan_parquet(paths, hive_partitioning=hive, hive_schema=text)
            # scan_ndjson reads no Hive folders, and scan_parquet no differing files: each file with
            # its folders' values as columns, stacked by name
            # a JSONL key null on its first lines and text later: the whole file's types (Polars reads 100 lines)
            scan = pl.scan_parquet if fmt == "parquet" else functools.partial(pl.scan_ndjson, infer_schema_length=None)
            return pl.concat([scan(p).with_columns(*[pl.lit(v).alias(k) for k, v in partition_values(root, p).items()])
                              for p in files], how="diagonal_relaxed")
        if engine == "dask":
            return _open_dask(root, files, fmt, in_files, union, keys)
        session = spark_session(**spark)
        reader = session.read.option("basePath", str(root)) if hive else session.read
        read = reader.parquet if fmt == "parquet" else reader.json
        with _spark_text_partitions(session):
            if union:  # by name, widening integers to decimals where files differ
                # a column of nulls alone (Arrow's null type) Spark reads as integers, which then
                # refuse the other files' text: left out of that file, it is null there by name
                frames = [read(str(p)).drop(*_null_columns(p)) if fmt == "parquet" else read([str(p)]) for p in files]
                out = frames[0]
                for frame in frames[1:]:
                    out = out.unionByName(frame, allowMissingColumns=True)
                return out
            return read(*paths) if fmt == "parquet" else read(paths)  # json's second argument is a schema
    except ImportError as err:
        raise LogFormatError(f"engine={engine!r} is not installed: {INSTALL[engine]}") from err


def _null_columns(file: Path) -> list[str]:
    """The columns of a Parquet file written as Arrow's null type (every value null)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return [f.name for f in pq.read_schema(file) if pa.types.is_null(f.type)]


@contextlib.contextmanager
def _spark_text_partitions(session):
    """Spark reads ``column=value`` folders as text while the files are listed (its default
    guesses numbers and dates), then the session's own setting again."""
    key = "spark.sql.sources.partitionColumnTypeInference.enabled"
    before = session.conf.get(key, None)
    session.conf.set(key, "false")
    try:
        yield
    finally:
        session.conf.unset(key) if before is None else session.conf.set(key, before)


def spark_session(master: str | None = None, conf: dict[str, str] | None = None, memory: str | None = None):
    """The active Spark session, or a new one with ``master``, ``conf`` and the driver's ``memory``
    (``"2GB"`` as Spark's ``"2g"``)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder
    if master:
        builder = builder.master(master)
    settings = dict(conf or {})
    if memory:
        settings.setdefault("spark.driver.memory", spark_size(memory))
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _open_dask(root: Path, files: list[Path], fmt: str, in_files: bool, union: bool = False, keys: Sequence[str] = ()):
    import dask.dataframe as dd

    if union and fmt == "parquet":  # a frame per file, stacked by name (missing columns NaN)
        return dd.concat([_uncategorised(dd.read_parquet(str(p), blocksize="64MiB")).assign(**partition_values(root, p))
                          for p in files])  # fmt: skip
    if fmt == "jsonl":  # a frame per file, stacked by name: Dask reads no Hive folders of JSONL, and takes
        # the columns of the first file for all (a key another file lacks or adds was a KeyError)
        return dd.concat([dd.read_json(str(p), lines=True, blocksize=None).assign(**partition_values(root, p))
                          for p in files])  # fmt: skip
    if in_files:
        dataset = {"partitioning": None}  # the files' own column (equal to the folders': check_partitions)
    elif keys:  # the folders' values as text (pyarrow guesses numbers, and "01" and "1" collide)
        import pyarrow as pa
        import pyarrow.dataset as ds

        dataset = {"partitioning": ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")}
    else:
        dataset = {}
    # partitions of about 64 MiB: by default Dask read bench/scale.py's 10M log (one 320 MB file of
    # 10 row groups) as a single partition, the whole log in memory at once (5.5 GB peak RSS)
    return _uncategorised(dd.read_parquet([str(p) for p in files], blocksize="64MiB", dataset=dataset))


def _uncategorised(frame):
    """A Dask frame with its categorical columns (Hive folders, a pandas Categorical's file) as
    their values' type, as DuckDB, Polars and Spark read them; Dask cannot stack a categorical
    column on a plain one."""
    import pandas as pd

    parts = {c: t.categories.dtype for c, t in frame.dtypes.items() if isinstance(t, pd.CategoricalDtype)}
    return frame.astype(parts) if parts else frame


def spark_size(memory: str) -> str:
    """A size as Spark writes it: ``"2GB"`` as ``"2g"``, ``"1.5GB"`` (no whole number of a unit) as ``"1536m"``."""
    found = SIZE.match(memory)
    if found is None:  # a size hce did not check (set in the session's own settings): Spark's to read
        return memory
    number, unit = float(found[1]), found[2].lower()
    if number.is_integer():
        return f"{int(number)}{unit}"
    return f"{round(number * {'k': 1 / 1024, 'm': 1, 'g': 1024, 't': 1024**2}[unit])}m"
