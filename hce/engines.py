"""Attempt logs larger than memory: a lazy log in the engine that reads the files.

:func:`scan_log` (``hce.read_log(path, engine=...)``) opens a Parquet or JSONL log, one file
or a directory of them (Hive-partitioned folders such as ``condition_id=A/part-0.parquet``
included), as a lazy frame of DuckDB (the embedded default), Polars, PySpark or Dask.
Nothing is loaded: the statistics of :mod:`hce.stats` that reduce to per-cell summaries run their
grouped pass in that engine (see :mod:`hce.stats._frames`). The log's own checks run in
the engine too, once: the required columns are present, ``error_flag`` is boolean (a
missing column is no attempt flagged; text ``"true"``/``"false"`` is read as booleans),
and no ``attempt_id`` appears twice.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from hce.errors import HceError, LogFormatError
from hce.log_drift import Schema, reconcile
from hce.log_partitions import check_layout, check_partitions, partition_values
from hce.log_schema import SUFFIX_FORMATS

Engine = Literal["duckdb", "polars", "spark", "dask", "pandas", "auto"]
ENGINES = ("duckdb", "polars", "spark", "dask", "pandas", "auto")
#: ``engine="auto"`` reads logs up to this many bytes on disk into pandas, larger ones with
#: DuckDB. A 1,000,000-attempt Parquet log without prompts is about 30 MB and reports in
#: pandas in half a minute within 1 GB; at 10,000,000 attempts (300 MB) pandas needs 6 GB.
AUTO_BYTES = 256 * 2**20
_INSTALL = {
    "duckdb": 'pip install "hce[engines]"  (DuckDB)',
    "polars": 'pip install "hce[engines]"  (Polars)',
    "spark": 'pip install "hce[spark]"  (PySpark; it needs Java: apt-get install -y openjdk-17-jre-headless)',
    "dask": 'pip install "hce[dask]"  (Dask)',
}
_REQUIRED = ("attempt_id", "item_id", "attempt")
#: DuckDB's memory for one lazy log (its own connection): past it, DuckDB spills to the temp
#: folder instead of growing (its default is 80% of the machine's memory).
DUCKDB_MEMORY = "2GB"
#: What was found of lazy frames, by identity and fact: ``("unique", *keys)`` (see
#: :func:`known_unique`) or ``("clean", probe)`` (see :func:`known_clean`).
_KNOWN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


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


#: A memory size both DuckDB's ``memory_limit`` and Spark's ``spark.driver.memory`` (after the
#: rewrite in :func:`spark_session`) read.
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])i?b\s*$", re.IGNORECASE)


def _open_remote(engine: str, url: str, memory: str, spark: dict):
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
        raise LogFormatError(f"engine={engine!r} is not installed: {_INSTALL[engine]}") from err


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
    if memory is not None and not _SIZE.match(str(memory)):
        raise LogFormatError(f"memory limit {memory!r} is not a size; give a number and a unit, e.g. '2GB', '500MB' or '1.5GiB'")
    if chosen == "pandas":  # the pandas reader is hce.read_log's, which calls this module: not called from here
        raise LogFormatError(f"{path} is small enough for pandas (engine={engine!r}): read it with "
                             f"hce.read_log(path, engine={engine!r}), which returns the pandas DataFrame")  # fmt: skip
    spark = {"master": spark_master, "conf": dict(spark_conf or {}), "memory": memory}
    if is_remote(path):  # the engine lists and reads the bucket itself (its own credentials)
        with _read_errors(chosen, path):
            native = _open_remote(chosen, str(path), memory or DUCKDB_MEMORY, spark)
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
    with _read_errors(chosen, path):
        native = _open(chosen, Path(path), files, fmt, memory or DUCKDB_MEMORY, in_files, spark, union)
        return checked(native, str(path)) if check else native


@contextlib.contextmanager
def _read_errors(engine: str, path: object):
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


def _open(engine: str, root: Path, files: list[Path], fmt: str, memory: str, in_files: bool, spark: dict, union: bool = False):
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
        raise LogFormatError(f"engine={engine!r} is not installed: {_INSTALL[engine]}") from err


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
        settings.setdefault("spark.driver.memory", _spark_size(memory))
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


def _spark_size(memory: str) -> str:
    """A size as Spark writes it: ``"2GB"`` as ``"2g"``, ``"1.5GB"`` (no whole number of a unit) as ``"1536m"``."""
    found = _SIZE.match(memory)
    if found is None:  # a size hce did not check (set in the session's own settings): Spark's to read
        return memory
    number, unit = float(found[1]), found[2].lower()
    if number.is_integer():
        return f"{int(number)}{unit}"
    return f"{round(number * {'k': 1 / 1024, 'm': 1, 'g': 1024, 't': 1024**2}[unit])}m"


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
    # one pass: blank ids, and infinite scores, which pandas' reader refuses in any float column
    floats = [c for c, t in schema.items() if t in (nw.Float64, nw.Float32)]
    found = frame.select(nw.col("attempt_id").is_null().cast(nw.Int64).sum().alias("blank"),
                         *[(nw.col(c).abs() == float("inf")).cast(nw.Int64).sum().alias(f"inf:{c}") for c in floats]
                         ).collect().to_pandas().iloc[0]  # fmt: skip
    if int(found["blank"]):
        raise LogFormatError(f"{source}: column 'attempt_id' is blank in {int(found['blank']):,} row(s); "
                             "every attempt needs its own id (hce.log.make_attempt_id makes them)")  # fmt: skip
    infinite = {c: int(n) for c in floats if (n := found[f"inf:{c}"]) and n == n}  # a sum of nulls: null (or NaN)
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
