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

import os
import re
import tempfile
import weakref
from pathlib import Path
from typing import Literal

from hce.errors import LogFormatError
from hce.log_partitions import check_partitions, partition_values

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
#: Lazy logs whose ``attempt_id`` was found unique, by identity (see :func:`known_unique`).
_UNIQUE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def log_files(path: str | os.PathLike) -> tuple[list[Path], str]:
    """The Parquet or JSONL files of a log (a file, or a directory searched recursively)
    and their format; a directory mixing both is refused."""
    root = Path(path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".parquet", ".jsonl", ".json"))
    else:
        raise LogFormatError(f"{root}: no such log file or directory")
    formats = {"parquet" if p.suffix == ".parquet" else "jsonl" for p in files}
    if not files or len(formats) != 1 or any(p.suffix not in (".parquet", ".jsonl", ".json") for p in files):
        raise LogFormatError(f"{root}: a lazy log reads Parquet (.parquet) or JSONL (.jsonl) files of one format; "
                             f"found {sorted({p.suffix for p in files}) or 'none'}")  # fmt: skip
    return files, formats.pop()


#: Object-store and cluster file systems an engine reads by URL: Spark's s3a://, gs://, abfs(s)://, hdfs://, and others'.
_REMOTE = re.compile(r"^(s3a?|s3n|gs|gcs|abfss?|wasbs?|hdfs|az|adl)://", re.IGNORECASE)


def is_remote(path: object) -> bool:
    """Whether ``path`` is an object-store or HDFS URL (``s3a://bucket/log/``), read by the engine.

    Examples
    --------
    >>> is_remote("s3a://bucket/judge-logs/"), is_remote("logs/run-1")
    (True, False)
    """
    return isinstance(path, str) and bool(_REMOTE.match(path))


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
    disk, DuckDB past it."""
    if engine not in ENGINES:
        raise LogFormatError(f"engine={engine!r} is not valid; choose one of {list(ENGINES)}")
    if is_remote(path):  # no size to read: the embedded engine reads the bucket, unless one is named
        if engine == "pandas":
            raise LogFormatError(f"{path}: an object-store path is read by the engine that reads it: "
                                 "engine='spark', 'duckdb', 'polars' or 'dask', not 'pandas'")  # fmt: skip
        return "duckdb" if engine == "auto" else engine
    if engine != "auto":
        return engine
    files, _ = log_files(path)
    return "duckdb" if sum(p.stat().st_size for p in files) > AUTO_BYTES else "pandas"


def scan_log(path: str | os.PathLike, *, engine: Engine = "duckdb", check: bool = True, memory: str | None = None,
             spark_master: str | None = None, spark_conf: dict[str, str] | None = None):
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
    if chosen == "pandas":  # the pandas reader is hce.read_log's, which calls this module: not called from here
        raise LogFormatError(f"{path} is small enough for pandas (engine={engine!r}): read it with "
                             f"hce.read_log(path, engine={engine!r}), which returns the pandas DataFrame")  # fmt: skip
    if is_remote(path):  # the engine lists and reads the bucket itself (its own credentials)
        native = _open_remote(chosen, str(path), memory or DUCKDB_MEMORY, {"master": spark_master, "conf": dict(spark_conf or {}), "memory": memory})
        return checked(native, str(path)) if check else native
    files, fmt = log_files(path)
    if fmt == "parquet":
        readable_parquet(files)
    # a column in the files and the folder names, equal in both: the files' (Dask cannot merge the two)
    in_files = Path(path).is_dir() and check_partitions(Path(path), files, fmt)
    spark = {"master": spark_master, "conf": dict(spark_conf or {}), "memory": memory}
    native = _open(chosen, Path(path), files, fmt, memory or DUCKDB_MEMORY, in_files, spark)
    return checked(native, str(path)) if check else native


def _open(engine: str, root: Path, files: list[Path], fmt: str, memory: str, in_files: bool, spark: dict):
    hive = root.is_dir()
    pattern = str(root / "**" / f"*{files[0].suffix}") if hive else str(root)
    try:
        if engine == "duckdb":
            import duckdb

            spill = Path(tempfile.gettempdir()) / "hce-duckdb"
            connection = duckdb.connect(config={"memory_limit": memory, "temp_directory": str(spill)})
            if fmt == "parquet":
                return connection.read_parquet(pattern, hive_partitioning=hive)
            return connection.read_json(pattern, format="newline_delimited", hive_partitioning=hive)
        if engine == "polars":
            import polars as pl

            if fmt == "parquet":
                return pl.scan_parquet(pattern, hive_partitioning=hive)
            # scan_ndjson reads no Hive folders: each file with its folders' values as columns
            return pl.concat([pl.scan_ndjson(p).with_columns(*[pl.lit(v).alias(k) for k, v in partition_values(root, p).items()])
                              for p in files], how="diagonal_relaxed")
        if engine == "dask":
            return _open_dask(root, files, fmt, in_files)
        reader = spark_session(**spark).read
        if fmt == "parquet":
            return reader.parquet(str(root))
        return (reader.option("basePath", str(root)) if hive else reader).json([str(p) for p in files])
    except ImportError as err:
        raise LogFormatError(f"engine={engine!r} is not installed: {_INSTALL[engine]}") from err


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
        settings.setdefault("spark.driver.memory", re.sub(r"(?i)^(\d+)\s*([kmgt])i?b$", lambda m: m[1] + m[2].lower(), memory.strip()))
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _open_dask(root: Path, files: list[Path], fmt: str, in_files: bool):
    import dask.dataframe as dd
    import pandas as pd

    if fmt == "jsonl":
        if any(partition_values(root, p) for p in files):  # Dask reads no Hive folders of JSONL
            return dd.concat([dd.read_json(str(p), lines=True, blocksize=None).assign(**partition_values(root, p))
                              for p in files])  # fmt: skip
        return dd.read_json([str(p) for p in files], lines=True, blocksize=None)  # a partition per file
    # partitions of about 64 MiB: by default Dask read bench/scale.py's 10M log (one 320 MB file of
    # 10 row groups) as a single partition, the whole log in memory at once (5.5 GB peak RSS)
    frame = dd.read_parquet(str(root), blocksize="64MiB", **({"dataset": {"partitioning": None}} if in_files else {}))
    # Dask reads Hive folders (condition_id=C0) as categorical columns; DuckDB, Polars and Spark
    # as the values' own type, which the statistics group by as any other column
    parts = {c: t.categories.dtype for c, t in frame.dtypes.items() if isinstance(t, pd.CategoricalDtype)}
    return frame.astype(parts) if parts else frame


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
    blank = frame.filter(nw.col("attempt_id").is_null()).select(nw.len().alias("n")).collect().to_pandas()
    if int(blank["n"].iloc[0]):
        raise LogFormatError(f"{source}: column 'attempt_id' is blank in {int(blank['n'].iloc[0]):,} row(s); "
                             "every attempt needs its own id (hce.log.make_attempt_id makes them)")  # fmt: skip
    repeated = (
        frame.group_by("attempt_id").agg(nw.len().alias("_times")).filter(nw.col("_times") > 1)
        .select(nw.len().alias("n"), nw.col("attempt_id").min().alias("first")).collect().to_pandas()
    )  # fmt: skip
    if int(repeated["n"].iloc[0]):
        raise LogFormatError(f"{source}: attempt_id {repeated['first'].iloc[0]!r} appears more than once; "
                             f"{int(repeated['n'].iloc[0]):,} attempt id(s) repeat, which would count those attempts "
                             "twice; drop the repeats, or combine overlapping logs with `hce log merge`")  # fmt: skip
    out = frame.to_native()
    _UNIQUE[id(out)] = out
    return out


def known_unique(native: object) -> bool:
    """Whether ``native`` is a lazy log :func:`checked` found free of repeated attempts."""
    return _UNIQUE.get(id(native)) is native


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
