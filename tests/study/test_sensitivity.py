"""The sensitivity analyses of Success Metrics 1 and 2 and JAMA P values in every table (issue 45, items 2 and 6)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from hce._pvalues import format_p, p_text
from hce.report.tables import Table
from hce.stats.repeated_measures import assumption_text
from hce.stats.result import AnalysisResult
from hce.stats.tests import friedman
from hce.study.sensitivity import (
    SM1_TIE_COLUMNS,
    friedman_uncorrected,
    sm1_tie_sensitivity,
    sm2_threshold_note,
    tie_notes,
)

#: The demo's Experiment 2 SDs (8 transcripts x prompts P2.1-P2.3) as their within-transcript order: Friedman's
#: test reads ranks only, so 0 < 1 < ... stand for the SDs 0, 0.289, 0.389, 0.452, 0.492, 0.515, 0.577, 0.669.
DEMO_H2 = np.array([[1, 6, 1], [1, 7, 1], [2, 5, 0], [7, 3, 1], [2, 1, 0], [6, 7, 3], [1, 2, 5], [3, 4, 0]], float)
# R 4.2.2 Patched (2022-11-10 r83330): friedman.test(m) with m the matrix above (tie-corrected)
#   -> Friedman chi-squared = 6.66666666667, p-value = 0.0356739933473
# and the uncorrected formula in R: rk <- t(apply(m, 1, rank)); R <- colSums(rk)
#   12 / (n * k * (k + 1)) * sum(R^2) - 3 * n * (k + 1) -> 6.25; pchisq(6.25, 2, lower.tail = FALSE) -> 0.0439369336234
R_CORRECTED = (6.66666666667, 0.0356739933473)
R_UNCORRECTED = (6.25, 0.0439369336234)
JAMA_P = re.compile(r"^(?:< \.001|> \.99|\.\d\d\d?|—)$")


def _long(matrix: np.ndarray, condition: str = "prompt_id") -> pd.DataFrame:
    n, k = matrix.shape
    return pd.DataFrame({"item_id": np.repeat([f"T{i}" for i in range(n)], k),
                         condition: np.tile([f"P2.{j + 1}" for j in range(k)], n), "sd": matrix.ravel()})  # fmt: skip


def _experiment(matrix: np.ndarray, condition: str = "prompt_id") -> AnalysisResult:
    spread = _long(matrix, condition)
    tables = {"sd": spread, "friedman": friedman(spread, condition=condition, random_state=0),
              "winner": pd.DataFrame({condition: sorted(spread[condition].unique())})}  # fmt: skip
    return AnalysisResult(title="EXP2_PromptOptimization", tables=tables)


def test_friedman_with_and_without_the_tie_correction_match_r():
    plain = friedman_uncorrected(_long(DEMO_H2), item="item_id", condition="prompt_id")
    assert (plain["statistic"], plain["p_value"]) == pytest.approx(R_UNCORRECTED, abs=1e-11)
    assert plain["n_tied_blocks"] == 2 and (plain["n"], plain["k"], plain["df1"]) == (8, 3, 2)
    table = sm1_tie_sensitivity({"EXP2_PromptOptimization": _experiment(DEMO_H2)}, alpha=0.05)
    assert list(table.columns) == SM1_TIE_COLUMNS and table["id"].tolist() == ["H2"]
    row = table.iloc[0]
    assert (row["statistic_tie_corrected"], row["p_tie_corrected"]) == pytest.approx(R_CORRECTED, abs=1e-11)
    assert (row["statistic_uncorrected"], row["p_uncorrected"]) == pytest.approx(R_UNCORRECTED, abs=1e-11)
    # the demo's H2: 6.67, P = .036 corrected vs 6.25, P = .044 uncorrected; the latter within 0.01 of alpha
    assert row["sensitivity"] == ("below alpha = 0.05 with and without the tie correction; the uncorrected P within "
                                  "0.01 of alpha: a verdict on the edge")
    (note,) = tie_notes(table)
    assert "chi-squared 6.67, P = .04; without the correction (2 of 8 transcripts hold tied SDs) chi-squared 6.25" in note
    assert note.endswith(f"P = .04: {row['sensitivity']} (table sm1_tie_sensitivity)")


def test_a_tie_correction_that_moves_p_across_alpha_is_named():
    table = sm1_tie_sensitivity({"EXP2_PromptOptimization": _experiment(DEMO_H2)}, alpha=0.04)
    row = table.iloc[0]
    assert row["sensitivity"].startswith("the tie correction moves P across alpha = 0.04 (below it with the correction, "
                                         "not below it without)")  # fmt: skip
    assert "the tie correction moves P across alpha = 0.04" in tie_notes(table)[0]
    # far from alpha, no note: the table alone
    far = sm1_tie_sensitivity({"EXP2_PromptOptimization": _experiment(DEMO_H2)}, alpha=0.2)
    assert tie_notes(far) == [] and far["sensitivity"].iloc[0] == "below alpha = 0.2 with and without the tie correction"


def test_sm1_tie_sensitivity_reads_only_analysed_friedman_tests():
    assert sm1_tie_sensitivity({}).empty
    no_ties = np.array([[1, 2, 3], [1, 3, 2], [2, 1, 3], [1, 2, 3]], float)
    table = sm1_tie_sensitivity({"EXP3_ModelComparison": _experiment(no_ties, "model")})
    row = table.iloc[0]
    assert row["id"] == "H3" and row["n_tied_blocks"] == 0
    assert row["statistic_uncorrected"] == pytest.approx(row["statistic_tie_corrected"], rel=1e-12)  # no ties: one test


def test_the_threshold_sensitivity_note_is_in_words():
    # the demo's Exp 5 table (tables/exp5_success_metric_2_sensitivity.csv): the mean rule inconclusive at 0.30-0.50;
    # every category SD at 0.30 passes 5 of 8 (not met)
    table = pd.DataFrame({"category_rule": ["mean"] * 3 + ["each"] * 3, "category_max": [0.3, 0.4, 0.5] * 2,
                          "total_max": [1.0] * 6, "n_items": [8] * 6, "n_below": [8, 8, 8, 5, 8, 8],
                          "prespecified": [False, True, False, False, False, False],
                          "verdict": ["inconclusive"] * 3 + ["not met", "inconclusive", "inconclusive"]})  # fmt: skip
    note = sm2_threshold_note(table)
    assert not re.search(r"<=|>=|≤|≥|<|>", note)
    assert "category SD at most 0.40 on the mean of a transcript's category SDs, total SD at most 1.0) 8 of 8" in note
    assert "the verdict is the same at every threshold tried (category SD at most 0.30 or 0.40 or 0.50)" in note
    assert "it is another at category SD at most 0.30 (5 of 8), the same at category SD at most 0.40 (8 of 8)" in note
    # one verdict word only, the pre-specified thresholds' (the scorecard's): the table names the others
    assert re.findall(r"\b(?:not met|met|inconclusive)\b", note) == ["inconclusive"]
    assert note.endswith("The verdict turns only with the threshold on every category SD instead of the mean of a "
                         "transcript's category SDs: it rests on that reading of the rule, not on the thresholds")
    turning = table.assign(verdict=["not met", "inconclusive", "inconclusive"] * 2)
    assert sm2_threshold_note(turning).endswith("The verdict turns with the thresholds: it rests on their choice")
    same = sm2_threshold_note(table[table["category_rule"] == "mean"])
    assert same.endswith("The verdict is the same at every threshold tried: it does not rest on their choice")


def test_every_p_value_column_of_the_audit_rm_anova_and_drift_prints_as_jama():
    # on main the audit's TOST P and the RM-ANOVA's checks printed as 0.000010 / 0.0041 (no P-value column to the table)
    frame = pd.DataFrame({"p_equivalence": [0.00001, 0.0412], "normality_p": [0.0041, 0.3], "sphericity_p": [0.049, 1.0],
                          "p_value": [3e-12, 0.5], "p_tie_corrected": [0.0357, 0.2], "p_uncorrected": [0.0439, 0.9951]})
    text = Table(frame, "P values", "p_values", 0.95).to_markdown()
    cells = [c.strip() for line in text.splitlines()[4:] for c in line.strip("|").split("|")]
    assert cells and all(JAMA_P.match(c) for c in cells), cells
    assert "Equivalence P value (TOST)" in text and "Sphericity P value (Mauchly)" in text


def test_the_rm_anova_assumption_text_uses_the_shared_formatter():
    # one formatter (hce._pvalues, the base layer) for the statistics' own sentences and the report's tables
    text = assumption_text(0.0041, 0.04916, 0.48, ["M2"], "model")
    assert "Shapiro-Wilk P = .004" in text and "Mauchly P = .049" in text
    assert not re.search(r"P = 0\.|e-\d", text)
    assert format_p(0.0041) == ".004" and p_text(0.04916) == "P = .049"
    from hce.report.numbers import format_p as report_format_p
    from hce.study.claims import p_text as claims_p_text

    assert report_format_p is format_p and claims_p_text is p_text
