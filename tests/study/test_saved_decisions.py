"""The report shows what the study decided: the study's saved analysis settings, not the defaults.

Issue 20: ``run_study`` analysed Exp 2/3 with the study's own winner rule, but ``hce report``
and ``hce demo`` recomputed every experiment with the defaults (Bonferroni, alpha 0.05), so a
study configured with Holm got a report built on Bonferroni that could name another winner.
"""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd
import pytest
from typer.testing import CliRunner

import hce
import hce.study as st
from hce.cli import app
from hce.study.report import study_folder_report, study_report

DEMO = str(resources.files("hce.data").joinpath("demo_corpus.jsonl"))
RULE = {"posthoc": "wilcoxon", "p_adjust": "holm", "alpha": 0.01, "require": "all", "on_no_winner": "lowest_sd"}


@pytest.fixture(scope="module")
def holm_study(tmp_path_factory):
    """Exp 2 and 3 of the reduced study (demo corpus, simulated judge) under Holm at alpha 0.01."""
    out = tmp_path_factory.mktemp("holm") / "out"
    config = {
        "output": str(out),
        "corpus": {"paths": [DEMO]},
        "partition": {"n_a": 10, "n_b": 8},
        "defaults": {"temperature": 1.0},
        "model_settings": {},
        "experiments": {
            "exp1": {"enabled": False},
            "exp2": {"attempts": 8, "winner": RULE},
            "exp3": {"models": ["gpt-4o", "o4-mini", "gpt-4.1-mini"], "attempts": 6, "winner": RULE},
            "exp4": {"enabled": False},
            "exp5": {"enabled": False},
        },
        "simulation": {"profiles": {"gpt-4o": {"noise": 0.4}, "o4-mini": {"bias": 0.3, "noise": 1.0},
                                    "gpt-4.1-mini": {"bias": -0.2, "noise": 1.0}}},  # fmt: skip
    }
    result = st.run_study(st.load_study(config), simulate=True)
    return out, result


def test_the_study_saves_each_analysis_with_its_settings(holm_study):
    out, _ = holm_study
    saved = json.loads((out / "analysis_settings.json").read_text())
    for experiment_id, log in (("EXP2_PromptOptimization", "exp2.jsonl"), ("EXP3_ModelComparison", "exp3.jsonl")):
        record = saved[experiment_id]
        assert record["log"] == log and record["function"] == f"experiment{experiment_id[3]}"
        settings = record["settings"]
        assert (settings["p_adjust_method"], settings["alpha"], settings["posthoc_method"], settings["require"]) == ("holm", 0.01, "wilcoxon", "all")
        assert settings["random_state"] == 0  # the seed of the bootstrap intervals, default included


@pytest.mark.parametrize("key", ["exp2", "exp3"])
def test_the_report_of_the_study_folder_shows_the_studys_rule_and_winner(holm_study, tmp_path, key):
    out, result = holm_study
    folder = study_folder_report(out).write(tmp_path / "report")
    for table in ("posthoc", "winner", "friedman"):
        reported = pd.read_csv(folder / "tables" / f"{key}_{table}.csv")
        studied = pd.read_csv(out / "analysis" / key / f"{table}.csv")
        # The study's own analysis; the report's CSV writes whole numbers without a decimal point.
        pd.testing.assert_frame_equal(reported, studied, check_dtype=False, rtol=1e-12)
    assert set(pd.read_csv(folder / "tables" / f"{key}_posthoc.csv")["adjustment"]) == {"holm"}
    decisions = json.loads((out / "decisions.json").read_text())
    kind = "prompt" if key == "exp2" else "model"
    text = (folder / "report.md").read_text()
    assert f"Handed on by the study (decisions.json): {kind} {decisions[kind]['choice']} (source: {decisions[kind]['source']})." in text
    winners = result.analyses[key]["winner"]
    if decisions[kind]["source"] == "rule":  # the rule's winner is the one the report's table flags
        assert winners.loc[winners["winner"], winners.columns[0]].tolist() == [decisions[kind]["choice"]]
    assert text.count("as the study analysed this experiment (analysis_settings.json): ") == 2
    assert "p_adjust_method = holm, require = all, alpha = 0.01" in text


def test_a_report_from_bare_logs_says_it_used_the_defaults(holm_study):
    out, _ = holm_study
    report = study_report([hce.read_log(out / "exp2.jsonl")])
    text = report.to_markdown()
    assert "the defaults of hce.study.experiment2" in text
    assert "p_adjust_method = bonferroni, require = all, alpha = 0.05" in text


def test_cli_report_on_the_study_folder(holm_study, tmp_path):
    out, _ = holm_study
    result = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "p_adjust_method = holm" in (tmp_path / "r" / "report.md").read_text()
    result = CliRunner().invoke(app, ["report", str(out), str(out / "exp2.jsonl"), "--out", str(tmp_path / "r2")])
    assert result.exit_code != 0 and "one study folder" in result.output


def test_settings_file_errors_name_the_file(tmp_path):
    from hce.errors import DataError
    from hce.study.analyses import experiment2
    from hce.study.settings import effective_settings, read_settings

    assert read_settings(tmp_path) == {}  # bare logs: no settings, the defaults apply
    (tmp_path / "analysis_settings.json").write_text("{not json")
    with pytest.raises(DataError, match=r"analysis_settings.json: not valid JSON"):
        read_settings(tmp_path)
    (tmp_path / "analysis_settings.json").write_text('{"EXP2_PromptOptimization": {"settings": 3}}')
    with pytest.raises(DataError, match="expected experiment id"):
        read_settings(tmp_path)
    with pytest.raises(DataError, match=r"experiment2 has no setting\(s\) \['adjust'\]"):
        effective_settings(experiment2, adjust="holm")
