"""Human ratings in a study: the ``humans:`` keys of the study file, Exp 1's targets as a rater, Exp 4's coders.

Three sources give the study report its sections "Agreement with human raters"
(:mod:`hce.report.humans` builds them, every number from :mod:`hce.stats`):

- a CSV of human ratings (``item_id``, ``rater``, one column per criterion or ``total``;
  optionally ``condition_id`` for ratings of each condition's output), named study-wide by
  the study file's ``humans:`` key or per experiment by ``experiments.expN.humans`` (which
  replaces the study-wide file for that experiment), or a study folder's ``humans.csv``.
  :func:`check_ratings_keys` checks them when the study file is loaded; the run writes
  their absolute paths into ``study.resolved.yaml`` (:func:`absolute_ratings`), where
  :func:`ratings_of_folder` finds them for the report of the study folder;
- Experiment 1's target totals (:func:`target_ratings`): the synthetic transcripts were
  written to a known score, so the targets act as a rater ``target`` (``rater_role``
  ``"target"``: free to have, so no label budget), unless Exp 1 has human ratings;
- Experiment 4's coders (:func:`coder_section`): the researchers' codes of the reasoning
  segments (``exp4/all_codes.csv``) are the human labels against which the LLM coder is
  tested: the alt-test by accuracy and unweighted Cohen's kappa per coding dimension.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import hce.stats as hs
from hce.errors import CollectError
from hce.report.document import Report
from hce.report.humans import RATER, ROLE, TARGET, TITLE
from hce.report.sections import ITEM
from hce.report.tables import Table
from hce.study.results import StudyResults

#: A study folder's human ratings of its items (item_id, rater, one column per criterion).
HUMANS_FILE = "humans.csv"
#: All coders' codes of Experiment 4 (the researchers' and the LLM's), one row per segment and coder.
ALL_CODES_FILE = "all_codes.csv"
#: The experiments whose items human ratings may rate (Exp 4 has its coders: ``human_codes``).
RATED = ("exp1", "exp2", "exp3", "exp5")
#: The key of the study-wide ratings in a mapping of ratings per experiment.
STUDY_WIDE = "*"
EXP1_ID = "EXP1_BaselineRubricUtility"


def read_ratings(path: str | os.PathLike, what: str, scores: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read a CSV of human ratings and check it, naming ``what`` (the study file's key) in every error.

    Item ids stay text (``001`` is not ``1``, as in the log). The ratings need ``item_id`` and
    ``rater`` on every row and, when ``scores`` (the rubric's criteria and ``total``) are
    given, at least one of them as a column, each cell a number or blank.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "humans.csv"
    >>> _ = path.write_text("item_id,rater,total\\n001,dr1,12\\n002,dr1,twelve\\n")
    >>> read_ratings(path, "experiments.exp2.humans", ("total",))
    Traceback (most recent call last):
    ...
    hce.errors.CollectError: experiments.exp2.humans: row 2 (line 3 of the CSV), column 'total': 'twelve' is not a number
    """
    path = Path(path)
    if not path.is_file():
        raise CollectError(f"{what}: {path} does not exist (a CSV of human ratings: item_id, rater, one column per criterion)")
    try:
        frame = pd.read_csv(path, dtype={ITEM: str, RATER: str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CollectError(f"{what}: {path} is not a readable CSV: {exc}") from None
    missing = [c for c in (ITEM, RATER) if c not in frame]
    if missing:
        raise CollectError(f"{what}: the human ratings need columns {ITEM!r} and {RATER!r}; missing {missing}; "
                           f"columns: {list(frame.columns)}")  # fmt: skip
    for column in (ITEM, RATER):
        blank = np.flatnonzero(frame[column].isna().to_numpy())
        if blank.size:
            raise CollectError(f"{what}: row {blank[0] + 1} (line {blank[0] + 2} of the CSV) has no {column}")
    if not scores:  # read for a report: the section names a criterion it cannot read
        return frame
    named = [c for c in scores if c in frame]
    if not named:
        raise CollectError(f"{what}: no score column in the human ratings; name them as the rubric's criteria or total "
                           f"({', '.join(scores)}); columns: {list(frame.columns)}")  # fmt: skip
    for column in named:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = np.flatnonzero((values.isna() & frame[column].notna()).to_numpy())
        if bad.size:
            raise CollectError(f"{what}: row {bad[0] + 1} (line {bad[0] + 2} of the CSV), column {column!r}: "
                               f"{frame[column].iloc[bad[0]]!r} is not a number")  # fmt: skip
        frame[column] = values
    return frame


def ratings_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """The study file's ratings keys and their values: ``humans`` and ``experiments.expN.humans``."""
    keys = {"humans": config.get("humans")}
    keys.update({f"experiments.{key}.humans": config["experiments"][key].get("humans") for key in RATED})
    return keys


def check_ratings_keys(config: Mapping[str, Any], base: Path, source: str, scores: tuple[str, ...]) -> None:
    """Refuse, at load, a ratings key that is not a path of a readable CSV of human ratings (naming the key).

    Examples
    --------
    >>> from hce.study import load_study
    >>> load_study({"experiments": {"exp2": {"humans": 3}}})
    Traceback (most recent call last):
    ...
    hce.errors.CollectError: study: experiments.exp2.humans must be the path of a CSV of human ratings, or null; got 3
    """
    for key, value in ratings_keys(config).items():
        if value is None:
            continue
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            raise CollectError(f"{source}: {key} must be the path of a CSV of human ratings, or null; got {value!r}")
        read_ratings(base / value, f"{source}: {key}", scores)


def absolute_ratings(config: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The configuration with its ratings paths made absolute (what ``study.resolved.yaml`` records).

    Examples
    --------
    >>> from pathlib import Path
    >>> config = {"humans": "ratings.csv", "experiments": {k: {"humans": None} for k in RATED}}
    >>> absolute_ratings(config, Path("/studies/one"))["humans"]
    '/studies/one/ratings.csv'
    """
    out = {**config, "experiments": {k: dict(v) for k, v in config["experiments"].items()}}
    if out.get("humans") is not None:
        out["humans"] = str((base / out["humans"]).resolve())
    for key in RATED:
        if out["experiments"][key].get("humans") is not None:
            out["experiments"][key]["humans"] = str((base / out["experiments"][key]["humans"]).resolve())
    return out


def ratings_of_folder(folder: Path, config: Mapping[str, Any] | None) -> dict[str, Path]:
    """The human ratings a study folder's report reads: experiment id (or ``"*"``, study-wide) -> CSV.

    From the run's ``study.resolved.yaml`` (``config``, absolute paths); the folder's own
    ``humans.csv`` is the study-wide file when the study file names none.
    """
    found: dict[str, Path] = {}
    config = config or {}

    def recorded(key: str, value: str) -> Path:
        path = Path(value)
        if not path.is_file():
            raise CollectError(f"{folder / 'study.resolved.yaml'}: {key}: {path} does not exist (moved since the run?); "
                               "put it back, or give the ratings with --humans FILE (study_report(..., humans=...))")  # fmt: skip
        return path

    if config.get("humans"):
        found[STUDY_WIDE] = recorded("humans", config["humans"])
    elif (folder / HUMANS_FILE).is_file():
        found[STUDY_WIDE] = folder / HUMANS_FILE
    for key, exp in (config.get("experiments") or {}).items():
        if key in RATED and (exp or {}).get("humans") and (exp or {}).get("id"):
            found[exp["id"]] = recorded(f"experiments.{key}.humans", exp["humans"])
    return found


Ratings = pd.DataFrame | str | os.PathLike


def ratings_by_experiment(humans: Ratings | Mapping[str, Ratings] | None) -> dict[str, pd.DataFrame]:
    """``study_report``'s ``humans=`` as a mapping experiment id (or ``"*"``) -> ratings, each CSV read once.

    Examples
    --------
    >>> frame = pd.DataFrame({"item_id": ["a"], "rater": ["dr1"], "total": [3]})
    >>> sorted(ratings_by_experiment(frame)), sorted(ratings_by_experiment({"EXP2_PromptOptimization": frame}))
    (['*'], ['EXP2_PromptOptimization'])
    """
    if humans is None:
        return {}
    given = humans if isinstance(humans, Mapping) else {STUDY_WIDE: humans}
    return {str(key): value if isinstance(value, pd.DataFrame) else read_ratings(value, f"human ratings {value}")
            for key, value in given.items()}  # fmt: skip


def ratings_for(humans: Mapping[str, pd.DataFrame], experiment_id: object, rows: pd.DataFrame) -> pd.DataFrame | None:
    """The ratings an experiment's report section reads: its own, else the study-wide ones of its items,
    else for Experiment 1 its targets (:func:`target_ratings`); None without any.

    Examples
    --------
    >>> rows = pd.DataFrame({"item_id": ["SYN-001", "SYN-001", "SYN-002"], "target_total": [12, 12, 18]})
    >>> ratings_for({}, "EXP1_BaselineRubricUtility", rows)
       item_id   rater rater_role  total
    0  SYN-001  target     target   12.0
    1  SYN-002  target     target   18.0
    """
    ratings = humans.get(str(experiment_id), humans.get(STUDY_WIDE))
    if ratings is not None and ITEM in rows and not ratings[ITEM].astype(str).isin(rows[ITEM].astype(str)).any():
        ratings = None  # ratings of another experiment's items
    if ratings is None and experiment_id == EXP1_ID:
        return target_ratings(rows)
    return ratings


def unmatched_ratings(humans: Mapping[str, pd.DataFrame], experiment_id: object, rows: pd.DataFrame,
                      label: str) -> list[dict[str, str]]:  # fmt: skip
    """A "Not reported" entry when the ratings given for this experiment itself rate none of its items.

    Study-wide ratings that miss one experiment's items rate another's; ratings named for an
    experiment that miss all of its items are a mistake the report must not pass over.

    Examples
    --------
    >>> rows = pd.DataFrame({"item_id": ["A1", "A2"]})
    >>> ratings = {"EXP2_PromptOptimization": pd.DataFrame({"item_id": ["B1"], "rater": ["dr1"], "total": [3]})}
    >>> unmatched_ratings(ratings, "EXP2_PromptOptimization", rows, "Experiment 2")[0]["reason"]
    "the human ratings given for this experiment rate none of its 2 items (their item ids, e.g. 'B1', are not the log's, e.g. 'A1')"
    """
    own = humans.get(str(experiment_id))
    if own is None or ITEM not in rows or own[ITEM].astype(str).isin(rows[ITEM].astype(str)).any():
        return []
    theirs, ours = own[ITEM].astype(str).iloc[0] if len(own) else "none", rows[ITEM].astype(str).iloc[0] if len(rows) else "none"
    return [{"section": f"{label}: {TITLE}", "reason": f"the human ratings given for this experiment rate none of its "
             f"{rows[ITEM].nunique()} items (their item ids, e.g. {theirs!r}, are not the log's, e.g. {ours!r})",
             "fix": "check the ratings' item_id column against the experiment's log"}]  # fmt: skip


def target_ratings(rows: pd.DataFrame) -> pd.DataFrame | None:
    """Experiment 1's targets as ratings of the rater ``target``: each synthetic transcript's ``target_total``
    (and ``target_<criterion>`` where the log has them), with ``rater_role`` ``"target"``; None without targets."""
    columns = {c: c.removeprefix("target_") for c in rows.columns if c.startswith("target_") and rows[c].notna().any()}
    if ITEM not in rows or not columns:
        return None
    targets = rows[[ITEM, *columns]].drop_duplicates(ITEM).rename(columns=columns)
    targets = targets.astype({c: float for c in columns.values()})
    targets.insert(1, RATER, TARGET)
    targets.insert(2, ROLE, TARGET)
    return targets.reset_index(drop=True)


# --- Experiment 4: the researchers' codes as the human labels of the LLM coder ----------------


def coder_tables(codes: pd.DataFrame, dimensions: list[str], *, confidence: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The alt-test (by accuracy) of each LLM coder against the researchers, and its unweighted kappa with each.

    Parameters
    ----------
    codes : DataFrame
        All coders' codes (``exp4/all_codes.csv``): the segment key (``item_id``, ``model``,
        ``attempt_id``, ``criterion``), ``coder`` (``llm:<model>`` for an LLM, any other
        name a researcher) and one column per coding dimension.
    dimensions : list of str
        The coding dimensions.
    confidence : float
        The kappa interval's level.

    Returns
    -------
    (alt, kappa, notes)
        ``alt``: one row per dimension and LLM coder (:func:`hce.stats.alt_test`'s summary,
        ``scoring="accuracy"``, its default epsilon 0.2); ``kappa``: one row per dimension,
        LLM coder and researcher (:func:`hce.stats.cohen_kappa`, unweighted: the codes are
        categories); ``notes``: the alt-test's notes and why a dimension had none.
    """
    segment = codes["item_id"].astype(str) + "|" + codes["model"].astype(str) + "|" + codes["criterion"].astype(str)
    codes = codes.assign(segment=segment.to_numpy())
    llms = sorted(c for c in codes["coder"].unique() if str(c).startswith("llm:"))
    humans = sorted(c for c in codes["coder"].unique() if not str(c).startswith("llm:"))
    alt, kappa, notes = [], [], []
    for dimension in dimensions:
        part = codes.dropna(subset=[dimension])
        if len(humans) >= 2 and llms:
            result = hs.alt_test(part, item="segment", rater="coder", score=dimension, judge=llms, scoring="accuracy")
            alt.append(result["summary"].assign(dimension=dimension))
            notes += [(dimension, note) for note in result.notes]
        for llm in llms:
            for human in humans:
                pair = part[part["coder"].isin([llm, human])]
                if pair.groupby("segment")["coder"].nunique().eq(2).sum() < 2:
                    continue
                wide = pair.pivot_table(index="segment", columns="coder", values=dimension, aggfunc="first").dropna()
                row = hs.cohen_kappa(wide.reset_index(), item="segment", rater=[llm, human], confidence=confidence)
                kappa.append(row.assign(dimension=dimension, llm=llm, human=human))
    notes = _by_dimension(notes, dimensions)
    if len(humans) < 2:
        notes.append(f"no alt-test: it needs at least two researchers' codes of a segment; the codes have "
                     f"{len(humans)} researcher{'s' * (len(humans) != 1)} ({', '.join(humans) or 'none'})")  # fmt: skip
    alt_table = pd.concat(alt, ignore_index=True) if alt else pd.DataFrame()
    if len(alt_table):
        alt_table = alt_table.rename(columns={"judge": "llm"})
        alt_table = alt_table[["dimension", "llm", *[c for c in alt_table.columns if c not in ("dimension", "llm")]]]
    kappa_table = pd.concat(kappa, ignore_index=True) if kappa else pd.DataFrame()
    if len(kappa_table):
        kappa_table = kappa_table[["dimension", "llm", "human", *[c for c in kappa_table.columns
                                                                 if c not in ("dimension", "llm", "human")]]]
    return alt_table, kappa_table, notes


def _by_dimension(notes: list[tuple[str, str]], dimensions: list[str]) -> list[str]:
    """The alt-test's notes, once for the dimensions they share (five dimensions, one dropped-items note).

    Examples
    --------
    >>> _by_dimension([("a", "dropped 3"), ("b", "dropped 3"), ("b", "skipped h1")], ["a", "b"])
    ['every dimension: dropped 3', 'b: skipped h1']
    """
    shared = {}
    for dimension, note in notes:
        shared.setdefault(note, []).append(dimension)
    return [f"every dimension: {note}" if len(dimensions) > 1 and sorted(set(found)) == sorted(dimensions)
            else f"{', '.join(dict.fromkeys(found))}: {note}" for note, found in shared.items()]  # fmt: skip


def coder_section(report: Report, results: StudyResults, confidence: float) -> None:
    """Experiment 4's "Agreement with human raters": can the LLM coder replace the researchers?

    Written when the study folder holds every coder's codes (``exp4/all_codes.csv``) with an
    LLM coder and at least one researcher.
    """
    data = results.reasoning
    codes = getattr(data, "all_codes", None)
    if codes is None or not len(codes) or "coder" not in codes:
        return
    coders = codes["coder"].astype(str)
    if not coders.str.startswith("llm:").any() or coders.str.startswith("llm:").all():
        return
    dimensions = [d for d in data.settings.get("dimensions", []) if d in codes]
    alt, kappa, notes = coder_tables(codes, dimensions, confidence=confidence)
    section = report.section(f"Experiment 4: {TITLE}")
    section.add("The researchers' codes of the reasoning segments are the human labels; the LLM coder is the judge. "
                "Alt-test (Calderon, Reichart & Dror 2025), on the segments two or more researchers coded: each "
                "researcher left out in turn, the LLM's code of a segment against the remaining researchers' by accuracy (the share of equal codes), epsilon = 0.2, "
                "Benjamini-Yekutieli at 0.05; the LLM passes at a winning rate of 0.5. Kappa: Cohen's, unweighted "
                "(the codes are categories), of the LLM with each researcher on the segments both coded.")  # fmt: skip
    if len(alt):
        section.add(Table(alt, "Experiment 4: can the LLM coder replace the researchers? Alt-test per coding dimension",
                          "exp4_alt_test", confidence))  # fmt: skip
    if len(kappa):
        section.add(Table(kappa, "Experiment 4: Cohen's kappa (unweighted) of the LLM coder with each researcher, per "
                          "coding dimension", "exp4_human_kappa", confidence))  # fmt: skip
    section.add(*(f"Note: {note}." for note in dict.fromkeys(notes)))
