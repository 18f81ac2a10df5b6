"""The draft manuscript of a study (seed 000 sections 9-11): every number traceable to a table cell.

``draft`` builds a :class:`~hce.report.manuscript.model.Manuscript` from a study's output
folder (configuration, logs, decisions) and its study report (the saved tables and figures);
:func:`manuscript` writes it as Markdown, Word and LaTeX with the supplement. The text is
assembled by :mod:`.front` (title, abstract, Key Points, Introduction), :mod:`.methods`,
:mod:`.results`, :mod:`.discussion` and :mod:`.statements`; numbers come through
:class:`.cells.Cells` and facts through :class:`.facts.StudyFacts`.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from hce._vocabulary import keywords_checked
from hce.errors import DataError, HceError, HceWarning
from hce.report.manuscript.model import Heading, Manuscript, Paragraph, Placeholder
from hce.study.manuscript.cells import TABLES, Cells
from hce.study.manuscript.discussion import discussion
from hce.study.manuscript.facts import StudyFacts
from hce.study.manuscript.front import (
    ABSTRACT_WORDS,
    abstract,
    introduction,
    key_points,
    title_of,
)
from hce.study.manuscript.methods import methods
from hce.study.manuscript.results import results
from hce.study.manuscript.statements import statements
from hce.study.manuscript.supplement import write_supplement

__all__ = ["draft", "find_study", "manuscript"]
#: Marks a folder :func:`manuscript` wrote, so a rerun may replace it.
MARKER = ".hce-manuscript"


def find_study(folder: str | os.PathLike) -> tuple[Path, Path | None]:
    """The study output folder in ``folder`` and the study report around it, if any.

    ``folder`` is a study's output folder (``study.resolved.yaml`` and its logs), or a folder
    holding one at ``study_output/`` or ``study/study_output/`` (``hce demo`` writes its report
    with the study at ``study/study_output``). The report is ``folder`` itself when it holds the
    study report's ``tables/table1_datasets.csv``.
    """
    folder = Path(folder)
    for candidate in (folder, folder / "study_output", folder / "study" / "study_output"):
        if (candidate / "study.resolved.yaml").is_file():
            report = folder if (folder / TABLES / "table1_datasets.csv").is_file() else None
            return candidate, report
    raise DataError(f"{folder}: no study here (study.resolved.yaml in it, in study_output/ or in study/study_output/); "
                    "give the folder `hce study run` wrote or `hce demo`'s report folder")  # fmt: skip


def _check_same_logs(facts: StudyFacts, cells: Cells, report_dir: Path) -> None:
    """Refuse a study report made from other logs than the study folder's (its Table 1 counts differ)."""
    table = cells.frame("table1_datasets")
    reported = {str(e): int(n) for e, n in zip(table["experiment_id"], table["n_attempts"])}
    logged = {str(e): int(n) for e, n in facts.log.groupby("experiment_id").size().items()}
    differ = [f"{e}: {reported.get(e, 0)} in the report, {logged.get(e, 0)} logged"
              for e in sorted(set(reported) | set(logged)) if reported.get(e) != logged.get(e)]
    if differ:
        raise HceError(f"{report_dir}: the study report's Table 1 counts attempts other than the logs of {facts.folder} "
                       f"({'; '.join(differ)}); rerun `hce report {facts.folder}` first")  # fmt: skip


def draft(study_dir: str | os.PathLike, report_dir: str | os.PathLike, *, title: str | None = None) -> Manuscript:
    """Build the draft manuscript of a study from its output folder and its study report.

    Parameters
    ----------
    study_dir : path
        The study's output folder (``hce study run`` writes it: ``study.resolved.yaml``, the logs).
    report_dir : path
        The study report of that folder (``hce report STUDY --out DIR``): its ``tables/*.csv``
        are cited cell by cell and its ``figures/*.png`` placed.
    title : str, optional
        Default: the study file's ``manuscript.title``, else the outline's title; a simulated
        study's title always says so.

    Returns
    -------
    Manuscript
        Blocks in JAMA order; every number a :class:`~hce.report.manuscript.model.Number`
        whose ``source`` is ``tables/<file>.csv#row=<key>;col=<column>``.

    Examples
    --------
    >>> doc = draft("reports/demo/study/study_output", "reports/demo")  # doctest: +SKIP
    >>> "Simulated" in doc.title  # doctest: +SKIP
    True
    """
    return _build(StudyFacts.read(study_dir), Path(report_dir), title)


def _build(facts: StudyFacts, report_dir: Path, title: str | None) -> Manuscript:
    cells = Cells(report_dir)
    _check_same_logs(facts, cells, report_dir)
    doc = Manuscript(title_of(title or facts.manuscript["title"], simulated=facts.simulated),
                     authors=[Placeholder("authors, affiliations and the corresponding author")])  # fmt: skip
    doc.blocks += key_points(facts, cells) + abstract(facts, cells) + introduction() + methods(facts, cells)
    doc.blocks += results(facts, cells, report_dir / "figures") + discussion(facts, cells) + statements(facts)
    doc.blocks += [Heading(1, "References"), Paragraph([Placeholder("references")], role="note")]
    return doc


def _fresh(out: Path) -> None:
    """Empty ``out`` for a new manuscript: only a folder this function wrote, or an empty one, is replaced."""
    if out.exists():
        if not (out / MARKER).is_file() and any(out.iterdir()):
            raise HceError(f"{out} exists and was not written by hce manuscript; choose another folder (-o)")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by hce manuscript; the folder is replaced as a whole on the next run\n", encoding="utf-8")


@keywords_checked
def manuscript(study_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None, *, title: str | None = None,
               report_dir: str | os.PathLike | None = None) -> dict:
    """Write the draft manuscript of a study: ``manuscript.md``, ``.docx``, ``.tex`` and ``supplement/``.

    Parameters
    ----------
    study_dir : path
        A study's output folder, or a folder holding one with its study report (``hce demo``'s).
    out_dir : path, optional
        Default ``<study_dir>/manuscript``. Replaced as a whole (only a folder this wrote, or an empty one).
    title : str, optional
        See ``draft``.
    report_dir : path, optional
        The study report to cite (default: the one in ``study_dir``; without one, the study
        report is written first to ``<out_dir>/report``).

    Returns
    -------
    dict
        ``abstract_words``, ``main_words`` (as the writers count them) and ``out`` (the folder).
        An abstract over ``hce.study.manuscript.front.ABSTRACT_WORDS`` (JAMA's 350) warns.
        The cited tables are copied to ``<out>/tables`` so every source key resolves beside the text.

    Examples
    --------
    >>> manuscript("reports/demo")["out"]  # doctest: +SKIP
    PosixPath('reports/demo/manuscript')
    """
    try:
        from hce.report.manuscript import (
            write_manuscript,  # the format writers, imported when used
        )
    except ImportError as exc:
        raise HceError(f"the manuscript writers are not available (hce.report.manuscript.write_manuscript): {exc}") from None

    output, found = find_study(study_dir)
    out = Path(out_dir) if out_dir is not None else Path(study_dir) / "manuscript"
    report = Path(report_dir) if report_dir is not None else found
    if report is not None and out.resolve() == report.resolve():
        raise HceError(f"{out}: the manuscript folder cannot be the study report's folder; choose another (-o)")
    _fresh(out)
    if report is None:
        from hce.study.report import study_folder_report

        report = study_folder_report(output).write(out / "report")
    facts = StudyFacts.read(output)
    doc = _build(facts, Path(report), title)
    (out / TABLES).mkdir()
    for table in Path(report, TABLES).glob("*.csv"):
        shutil.copy2(table, out / TABLES / table.name)
    write_supplement(facts, Path(report), out)
    counts = write_manuscript(doc, out)
    if counts["abstract_words"] > ABSTRACT_WORDS:
        warnings.warn(f"{out / 'manuscript.md'}: the abstract has {counts['abstract_words']} words, over the journal's "
                      f"{ABSTRACT_WORDS}; shorten its Results paragraph", HceWarning, stacklevel=2)  # fmt: skip
    return {**counts, "out": out}

