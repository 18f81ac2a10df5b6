"""Experiment 4 in the study report: the coded reasoning of a study folder, Table 3, its tests and the kappas.

Split from :mod:`hce.study.report` (one module per part of the report): the codes and the
coders' agreement a study folder holds (``exp4/``), read back and tested with the settings the
run saved, and the section that shows them.
"""

from __future__ import annotations

import os
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from hce.errors import HceError
from hce.report.document import Report
from hce.report.tables import Table
from hce.study.analyses import experiment4
from hce.study.human_ratings import ALL_CODES_FILE, coder_section
from hce.study.reasoning import SEGMENT_KEY, kappa_verdicts
from hce.study.results import ReasoningCodes, StudyResults
from hce.study.settings import SETTINGS_FILE, describe, read_settings

EXP4_ID = "EXP4_ReasoningAnalysis"
EXP4_TITLE = "Experiment 4: qualitative reasoning analysis"


def reasoning_codes(folder: str | os.PathLike) -> ReasoningCodes | None:
    """Read Experiment 4 from a study's output folder and run its frequency tests (None: not coded).

    The tests are :func:`hce.study.analyses.experiment4` with the settings the study saved
    (``analysis_settings.json``), so the report's numbers are the run's.
    """
    folder = Path(folder)
    path = folder / "exp4" / "codes.csv"
    if not path.is_file():
        return None
    codes = pd.read_csv(path, dtype=str, keep_default_na=False).replace("", np.nan)

    def table(name: str) -> pd.DataFrame:
        file = folder / "exp4" / name
        frame = pd.read_csv(file) if file.is_file() else pd.DataFrame()
        # the kappa target's verdict is the rule's on the limits, whatever an older run wrote beside them
        return kappa_verdicts(frame) if {"target", "ci_low", "ci_high"} <= set(frame.columns) else frame

    settings = dict(read_settings(folder).get(EXP4_ID, {}).get("settings", {}))
    # Without saved settings, the coding dimensions are the CSV's columns beyond the segment and coder.
    settings.setdefault("dimensions", [c for c in codes.columns if c not in (*SEGMENT_KEY, "coder")])
    data = ReasoningCodes(codes, table("kappa.csv"), table("kappa_rounds.csv"), table("kappa_llm_vs_human.csv"), settings)
    every = folder / "exp4" / ALL_CODES_FILE
    if every.is_file():  # every coder's codes: the researchers' are the LLM coder's human labels
        data.all_codes = pd.read_csv(every, dtype=str, keep_default_na=False).replace("", np.nan)
    try:
        data.result = experiment4(codes.dropna(subset=settings["dimensions"]), **settings)
    except HceError as exc:  # e.g. codes of a single model: nothing to compare
        data.failure = str(exc)
    return data


def count_and_percent(count: int, n: int) -> str:
    """``count/n (percent%)``, the percent to one decimal with halves rounded up, from the exact fraction.

    A share printed alone hides its denominator, and a float rounded half-to-even prints 5/40
    as 0.12 but 15/40 as 0.38; the count and n beside it, and one rounding rule on the exact
    ratio, leave nothing to guess.

    Examples
    --------
    >>> [count_and_percent(k, 40) for k in (1, 5, 15)], count_and_percent(1, 3), count_and_percent(0, 0)
    (['1/40 (2.5%)', '5/40 (12.5%)', '15/40 (37.5%)'], '1/3 (33.3%)', '0/0 (—)')
    """
    if n == 0:
        return "0/0 (—)"
    percent = (Decimal(int(count)) * 100 / Decimal(int(n))).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{int(count)}/{int(n)} ({percent}%)"


def code_table(frequencies: pd.DataFrame) -> pd.DataFrame:
    """Table 3: segments per code (rows) and model (columns) as ``count/n (percent%)``, from the long frequency table."""
    condition = frequencies.columns[1]  # code_frequencies: code, then the condition column (the model)
    cells = frequencies.assign(cell=[count_and_percent(k, n) for k, n in zip(frequencies["count"], frequencies["n"])])
    wide = cells.pivot(index=["code", "level"], columns=condition, values="cell")
    wide = wide.reindex(index=cells.set_index(["code", "level"]).index.unique(), columns=cells[condition].unique())
    wide.columns = [f"count/n (%): {model}" for model in wide.columns]  # a model name stays as written in the header
    return wide.reset_index().rename(columns={"code": "dimension", "level": "code"})


def reasoning_section(report: Report, results: StudyResults, confidence: float) -> None:
    """Experiment 4's section: Table 3, the chi-squared/Fisher tests and the coders' kappa; then the LLM coder
    against the researchers (``hce.study.human_ratings.coder_section``)."""
    data = results.reasoning
    if data is None:
        return
    section = report.section(EXP4_TITLE)
    n = data.coded
    section.add(f"{n['segments']:,} reasoning segments coded: {n['transcripts']} transcripts x {n['models']} models "
                f"({n['replies']} replies), one segment per rubric category (7.4.6).")  # fmt: skip
    if data.settings:
        section.add(f"Analysis settings, as the study analysed this experiment ({SETTINGS_FILE}): {describe(data.settings)}.")
    if data.result is None:
        section.add(f"The frequency tests could not be run: {data.failure}")
    else:
        frequencies, tests = data.result["frequencies"], data.result["tests"]
        section.add(Table(code_table(frequencies), "Table 3: Reasoning codes per model: segments with the code / segments "
                          "coded for the model (percent; Wilson CIs in tables/exp4_frequencies.csv)", "table3_reasoning_codes", confidence,
                          readable=("dimension", "code")),
                    Table(tests, "Code distributions compared across models (chi-squared or Fisher's exact test, 7.4.7, segments as "
                          "independent; p_cluster: the models permuted among whole replies, which decides since segments "
                          "are nested in replies)",
                          "exp4_tests", confidence))  # fmt: skip
        section.blocks.append(Table(frequencies, "Reasoning code frequencies (long)", "exp4_frequencies", confidence, inline=False))
        for note in data.result.notes:
            section.add(f"Note: {note}")
    wanted = ["dimension", "coder_a", "coder_b", "estimate", "ci_low", "ci_high", "ci_method", "n", "n_replies",
              "n_transcripts", "percent_agreement", "verdict"]  # fmt: skip

    def kappa_columns(frame: pd.DataFrame) -> list[str]:  # a study folder written before ci_method has fewer
        return [c for c in wanted if c in frame]

    if len(data.rounds):
        last = data.rounds[data.rounds["round"] == data.rounds["round"].max()]
        verdict = "every dimension reached" if last["meets_target"].all() else "NOT every dimension reached"
        section.add(Table(data.rounds[["round", "agreement", "expected_kappa", *kappa_columns(data.rounds)]],
                          f"Inter-coder reliability: refinement rounds until the lower limit of the 95% CI of Cohen's kappa is at least "
                          f"{last['target'].iloc[0]:g} ({verdict} it in round {int(last['round'].iloc[0])})",
                          "exp4_kappa_rounds", confidence))  # fmt: skip
        section.add("The researchers are simulated (hce.study.sim_coders): coder_1 reads the codes the simulated "
                        "judge planted; coder_2 agrees with coder_1 at the round's agreement, whose expected kappa is shown.")
    elif len(data.kappa):
        section.add(Table(data.kappa[kappa_columns(data.kappa)], "Inter-coder reliability of the two researchers (Cohen's kappa)",
                          "exp4_kappa", confidence))  # fmt: skip
    if len(data.llm_vs_human):
        section.add(Table(data.llm_vs_human[kappa_columns(data.llm_vs_human)], "Agreement of the LLM's coding with a researcher's (Cohen's kappa)",
                          "exp4_kappa_llm_vs_human", confidence))  # fmt: skip
    coder_section(report, results, confidence)  # can the LLM coder replace the researchers?
