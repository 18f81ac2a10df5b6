"""``hce report``'s work: what the paths given are, where each is read, which report it gets.

A folder is one of two things: a study's output folder (``hce study run``: ``exp1.jsonl``,
``exp2.jsonl``, ... beside its settings), which gets the study report analysed as the study
analysed it, or a folder of attempt logs (Parquet, CSV or JSONL files, Hive-partitioned
``condition_id=A/part-0.parquet`` folders included), which is read as one log, its folder
names as columns, in the engine named. Anything else is refused, saying what was looked for.
Object-store URLs (``s3a://``, ``gs://``, ``abfss://``, ``hdfs://``) are read by the engine
given (pandas refuses them, naming the engines that read them). :mod:`hce.cli` holds the
command's options and help only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

from hce.errors import HceError

#: The suffixes of attempt-log files a log folder holds.
LOG_SUFFIXES = (".parquet", ".csv", ".jsonl", ".json")


def folder_kind(folder: Path) -> Literal["study", "log"]:
    """``"study"`` for a study's output folder (it holds a judged experiment's log, ``exp1.jsonl``
    ...), ``"log"`` for a folder of attempt-log files (searched through its subfolders, as Hive
    partitions are); refused otherwise, naming both.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "condition_id=A").mkdir()
    >>> _ = (folder / "condition_id=A" / "part-0.jsonl").write_text("")
    >>> folder_kind(folder)
    'log'
    >>> _ = (folder / "exp1.jsonl").write_text("")
    >>> folder_kind(folder)
    'study'
    """
    from hce.study.config import JUDGED_LOGS

    if any((folder / name).is_file() for name in JUDGED_LOGS):
        return "study"
    if any(p.is_file() and p.suffix in LOG_SUFFIXES for p in folder.rglob("*")):
        return "log"
    raise HceError(f"{folder}: neither a study's output folder (it holds none of {', '.join(JUDGED_LOGS)}) nor a "
                   f"folder of attempt logs (no {', '.join(LOG_SUFFIXES[:3])} file in it or its subfolders): give "
                   "a log file, a folder of log files or a study's output folder")  # fmt: skip


def as_url(path: Path | str) -> str:
    """The path as given: ``Path("s3a://bucket/log")`` made ``s3a:/bucket/log`` of it.

    >>> as_url(Path("s3a://bucket/log")), as_url(Path("logs/run-1"))
    ('s3a://bucket/log', 'logs/run-1')
    """
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*):/(?!/)", r"\1://", str(path))


def engine_options(engine: str, memory: str | None, master: str | None, conf: list[str]) -> dict:
    """``hce report``'s engine settings as :func:`hce.engines.scan_log`'s arguments, refusing
    those the engine named does not read.

    >>> engine_options("spark", "4GB", "local[2]", ["spark.sql.shuffle.partitions=8"])["spark_conf"]
    {'spark.sql.shuffle.partitions': '8'}
    """
    if (master or conf) and engine != "spark":
        raise HceError(f"--spark-master and --spark-conf set up Spark; they need --engine spark, got --engine {engine}")
    if memory and engine not in ("duckdb", "spark", "auto"):
        raise HceError(f"--memory-limit applies to --engine duckdb or spark, got --engine {engine}")
    settings = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise HceError(f"--spark-conf {item!r}: write KEY=VALUE, e.g. spark.executor.memory=8g")
        settings[key.strip()] = value.strip()
    return {"memory": memory, "spark_master": master, "spark_conf": settings}


def prd_study(log) -> bool:
    """Whether every row belongs to one of the PRD's experiments (ids EXP1_... to EXP5_...)."""
    if "experiment_id" not in log or log["experiment_id"].isna().any():
        return False
    return all(re.match(r"^EXP[1-5]_", str(i)) for i in log["experiment_id"].unique())


def read_report_log(logs: list[Path], engine: str, schema: str, conf: dict) -> tuple[Any, str | None]:
    """The log ``hce report`` reports and, for a study's output folder, the folder instead
    (``(None, folder)``): one lazy log in its engine, or the files (or one log folder) in pandas."""
    import hce

    if engine != "pandas" and len(logs) != 1:
        raise HceError(f"--engine {engine} reads one log file or one directory of log files; got {len(logs)} paths")
    urls = [as_url(p) for p in logs]
    remote = [u for u in urls if "://" in u]
    if engine == "pandas" and remote:
        raise HceError(f"{remote[0]}: an object-store path is read by the engine that reads it: add --engine spark, "
                       "duckdb, polars or dask")  # fmt: skip
    folders = [p for p in logs if not remote and p.is_dir()]
    if folders and len(logs) > 1:
        raise HceError("give one study folder or log folder, or attempt log files (not both)")
    if folders and folder_kind(folders[0]) == "study":
        if engine not in ("pandas", "auto"):
            raise HceError(f"{folders[0]} is a study's output folder: its report reads its logs in pandas; drop --engine {engine}")
        return None, str(folders[0])
    if engine != "pandas":  # a lazy log in its engine (auto: pandas when the files are small)
        from hce.engines import choose_engine, scan_log

        if choose_engine(urls[0], engine) != "pandas":
            return scan_log(urls[0], engine=engine, schema=schema, **conf), None
        return hce.read_log(logs[0], engine=engine, schema=schema), None
    from hce.report.provenance import read_with_notes

    if folders:  # a folder of log files, Hive partitions as columns
        return read_with_notes(partial(hce.read_log, schema=schema), folders[0])[0], None
    # An attempt in two files is refused here (unless made with other settings: hce.report.logs.read_logs);
    # a torn last line becomes a note of the report.
    from hce.report.logs import read_logs

    return read_with_notes(partial(read_logs, schema=schema), logs)[0], None


def write_report(
    logs: list[Path], out: Path, *, progress: Callable[[str], None], engine: str, schema: str, conf: dict,
    titled: dict, strata: list[str], metadata: list[str], bayes: bool, rubric: str | None, generic: bool,
    humans: Path | None, seed: int,
):
    """Read the paths, build the report that fits them and write it: ``(report, folder written)``."""
    from hce.engines import is_lazy_log
    from hce.log_drift import SCHEMAS
    from hce.report.generic import check_columns

    if schema not in SCHEMAS:
        raise HceError(f"--schema {schema!r}: choose strict or union")
    log, study_folder = read_report_log(logs, engine, schema, conf)
    if study_folder or not (generic or rubric is not None or is_lazy_log(log) or not prd_study(log)):
        from hce.study.report import bayes_section, study_folder_report, study_report

        extra = [bayes_section] if bayes else []
        options = {"strata": strata, "metadata": metadata, "extra_sections": extra, "random_state": seed,
                   **({"humans": humans} if humans is not None else {})}  # else a study folder's humans: keys or humans.csv
        progress("analysing the experiments")
        if study_folder:
            built = study_folder_report(study_folder, **options, **titled)
        else:  # the per-criterion sections use the rubric kept beside the logs, if any
            from hce.rubric import kept_rubric

            built = study_report(log, rubric=kept_rubric(logs), **options, **titled)
        return built, built.write(out, progress=progress)
    from hce.report import report as generic_report
    from hce.rubric import kept_rubric

    for option, names in (("--strata", strata), ("--metadata", metadata)):
        check_columns(log, option, names)
        if names:
            raise HceError(f"{option} applies to the study report's Experiment 5 (a log of the PRD's experiments); "
                           "the generic report has no fairness or metadata section: drop the option")  # fmt: skip
    built = generic_report(log, rubric=rubric if rubric is not None else kept_rubric(logs), out=out,
                           random_state=seed, progress=progress, humans=humans, **titled)
    return built, out


def say_not_reported(built, folder: Path, console, stderr) -> int:
    """Print what was written and what was not; the exit code (1 when a section the log supports is missing)."""
    from hce.report.sections import NOT_COMPUTED

    console.print(f"wrote {folder / 'report.html'} and {folder / 'report.md'}", highlight=False)
    missing = [e for e in built.not_reported if e.get("status", NOT_COMPUTED) == NOT_COMPUTED]
    for entry in built.not_reported:
        fix = f" — fix: {entry['fix']}" if entry.get("fix") else ""
        stderr.print(f"not reported ({entry.get('status', NOT_COMPUTED)}): {entry['section']}: {entry['reason']}{fix}",
                     highlight=False, markup=False)  # fmt: skip
    if missing:
        stderr.print(f"{len(missing)} section(s) the log supports were not reported (see \"Not reported\" in the report)",
                     highlight=False)  # fmt: skip
        return 1
    return 0
