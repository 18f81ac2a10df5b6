import warnings

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.study import experiment2
from hce.errors import HceWarning
from hce.study.report import NOT_MEASURABLE, StudyResults, scorecard, study_report
from hce.stats._simulate import simulated_log
from hce.stats.result import AnalysisResult


@pytest.fixture(scope="module")
def exp2_log():
    return simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                         noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=30, n_attempts=8)


def test_report_tables_equal_direct_statistics(exp2_log, tmp_path):
    out = study_report(exp2_log).write(tmp_path / "r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        direct = experiment2(exp2_log)
    for name in ("friedman", "posthoc", "winner", "sd"):
        written = pd.read_csv(out / "tables" / f"exp2_{name}.csv")
        expected = direct[name].reset_index(drop=True)
        assert written.columns.tolist() == expected.columns.tolist()
        for column in expected.columns:
            if pd.api.types.is_numeric_dtype(expected[column]) and not pd.api.types.is_bool_dtype(expected[column]):
                # %.17g round-trips every float exactly.
                np.testing.assert_array_equal(written[column].to_numpy(float), expected[column].to_numpy(float))
            else:  # CSV cannot tell an empty string from a missing one
                assert written[column].fillna("").astype(str).tolist() == expected[column].fillna("").astype(str).tolist()
    markdown = (out / "report.md").read_text()
    assert "Figure 1: Per-item SD of total scores for the prompt strategies" in markdown
    assert "tables/exp2_sd.csv" in markdown  # the long per-item table is a file, not printed


def test_report_is_deterministic(exp2_log, tmp_path):
    a = study_report(exp2_log).write(tmp_path / "a")
    b = study_report(exp2_log).write(tmp_path / "b")
    for path in sorted((a / "tables").iterdir()):
        assert path.read_bytes() == (b / "tables" / path.name).read_bytes(), path.name
    assert (a / "report.md").read_bytes() == (b / "report.md").read_bytes()


def test_simulated_judge_says_so_in_title(exp2_log):
    log = exp2_log.assign(system_fingerprint="fp_hce_sim_0")
    assert "SIMULATED JUDGE" in study_report(log).title
    assert "SIMULATED" not in study_report(exp2_log).title


def fake(tables):
    return AnalysisResult("x", {k: pd.DataFrame(v) for k, v in tables.items()})


def test_scorecard_hand_computed_cases():
    results = StudyResults(
        log=pd.DataFrame(),
        simulated=False,
        experiments={
            "EXP2_PromptOptimization": fake({"friedman": {"p_value": [0.20]}}),
            "EXP3_ModelComparison": fake({"friedman": {"p_value": [0.01]}}),
            "EXP5_FinalToolValidation": fake({
                "success_metric_2": {"metric": ["both"], "estimate": [0.96], "ci_low": [0.9], "ci_high": [0.99],
                                     "n_items": [100], "target_share": [0.95], "meets": [True]},
                "uncertainty": {"method": []},
                "fairness_verdict": {"any_detrimental": [False], "alpha": [0.05], "adjustment": ["holm"], "passes": [True]},
            }),
        },
    )
    card = scorecard(results).set_index("metric")
    assert card.loc["SM1", "verdict"] == "met"  # 0.01 < 0.05 (one significant comparison suffices)
    assert card.loc["SM1", "value"] == "EXP2 friedman p .200; EXP3 friedman p .010"
    assert card.loc["SM2", "verdict"] == "met" and card.loc["SM2", "value"] == "96.0% [90.0%, 99.0%] of 100"
    assert card.loc["SM3", "verdict"] == NOT_MEASURABLE  # no Experiment 1
    assert card.loc["SM5", "verdict"] == NOT_MEASURABLE  # empty uncertainty table
    assert card.loc["SM6", "verdict"] == "met"
    assert card.loc["SM7", "verdict"] == "not met" and card.loc["SM7", "value"].startswith("3 of 4")
    results.experiments["EXP3_ModelComparison"] = fake({"friedman": {"p_value": [0.051]}})
    results.experiments["EXP5_FinalToolValidation"].tables["success_metric_2"]["meets"] = [False]
    card = scorecard(results).set_index("metric")
    assert card.loc["SM1", "verdict"] == "not met" and card.loc["SM2", "verdict"] == "not met"


def test_an_experiment_that_cannot_be_analysed_is_reported_not_fatal():
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=10, n_attempts=4)
    markdown = study_report(log).to_markdown()
    assert "The analysis plan could not be run on this log: Friedman's test needs >= 2 complete blocks and >= 2 groups" in markdown


def test_reliability_section_matches_reliability_functions():
    from hce.study.report import reliability_table

    log = simulated_log(n_items=25, n_attempts=6)
    table = reliability_table(log)
    valid = log[~log["error_flag"]]
    direct = hs.icc(valid, targets="item_id", raters="attempt", ratings="total").set_index("estimator")
    assert table["estimate"].iloc[0] == direct.loc["ICC1", "estimate"]
    assert table["ci_high"].iloc[1] == direct.loc["ICC1k", "ci_high"]
    alpha = hs.krippendorff_alpha(valid, targets="item_id", raters="attempt", ratings="total", random_state=0)
    assert table["estimate"].iloc[2] == alpha["estimate"].iloc[0] and table["ci_low"].iloc[2] == alpha["ci_low"].iloc[0]
    assert "Reliability across repeated attempts" in study_report(log).to_markdown()


def test_exp5_without_confidence_column():
    log = simulated_log(n_items=12, n_attempts=4).drop(columns=["confidence"])
    from hce.study.report import analyse

    card = scorecard(analyse(log)).set_index("metric")
    assert card.loc["SM5", "verdict"] == NOT_MEASURABLE


def test_variance_decomposition_matches_variance_components(exp2_log):
    report = study_report(exp2_log)
    tables = {t.name: t.data for t in report.tables()}
    valid = exp2_log[~exp2_log["error_flag"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = hs.variance_components(valid, score="total", facets=["item_id", "prompt_id"], n_attempts=8)
    pd.testing.assert_frame_equal(tables["exp2_variance_components"], direct.components)
    pd.testing.assert_frame_equal(tables["exp2_g_coefficients"], direct.coefficients)



def test_bayesian_section_is_announced_as_skipped_by_default(exp2_log):
    assert "Skipped: MCMC takes minutes. Run `hce report ... --bayes`" in study_report(exp2_log).to_markdown()


@pytest.mark.slow
def test_bayesian_section_with_mcmc():
    from hce.study.report import bayes_section

    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                        noise={"P2.1": 0.8, "P2.2": 0.3}, n_items=15, n_attempts=5)
    markdown = study_report(log, extra_sections=[bayes_section]).to_markdown()
    assert "P(one condition is more consistent than another)" in markdown
    assert "Skipped" not in markdown


def test_sm5_met_by_logprob_confidence_without_confidence_column():
    from hce.study.report import analyse

    log = simulated_log(n_items=12, n_attempts=4).drop(columns=["confidence"])
    log["logprobs"] = '[{"token": "3", "logprob": -0.1, "top_logprobs": []}]'
    card = scorecard(analyse(log)).set_index("metric")
    assert card.loc["SM5", "verdict"] == "met"
    assert card.loc["SM5", "value"].startswith("token-probability confidence")


def test_exp5_confidence_from_logprobs_when_the_log_has_none():
    # The study keeps Exp 5's token-probability confidence beside the log; a report built
    # from the log alone computes it again, so step 5 (confidence vs per-item SD) still runs.
    # P1.1 replies are a bare total: the chosen total has probability q and the next total
    # (1 - q) / 2, so the confidence renormalised over valid totals is 2q / (1 + q).
    import json
    import math

    from hce.study.report import analyse

    log = simulated_log(n_items=12, n_attempts=4).drop(columns=["confidence"])
    log = log[log["total"].notna()].reset_index(drop=True)
    q = np.random.default_rng(3).uniform(0.4, 0.95, len(log))
    log["prompt_id"] = "P1.1"
    log["logprobs"] = [json.dumps([{"token": str(int(t)), "logprob": math.log(p), "top_logprobs": [
        {"token": str(int(t)), "logprob": math.log(p)}, {"token": str(int(t) + 1 if t < 20 else int(t) - 1),
                                                         "logprob": math.log((1 - p) / 2)}]}])
                       for t, p in zip(log["total"], q, strict=True)]
    result = analyse(log).experiments["EXP5_FinalToolValidation"]
    valid = log.assign(c=2 * q / (1 + q))[~log["error_flag"].astype(bool)]
    # SDs rounded as item_spread rounds them, so that equal SDs tie (pandas' own std breaks
    # some of those ties in the last bits, which moves Spearman's rho).
    by_hand = valid.groupby("item_id").agg(c=("c", "mean"), sd=("total", "std")).round({"sd": 12})
    expected = hs.correlation(by_hand, x="c", y="sd", method="spearman")["estimate"].iloc[0]
    assert result.tables["uncertainty"]["estimate"].iloc[0] == pytest.approx(expected, rel=1e-12)


def test_the_study_report_prints_no_snake_case_header():
    from hce.study import study_report
    from hce.stats._simulate import simulated_log

    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                        noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=12, n_attempts=4)  # fmt: skip
    report = study_report(log)
    shown = {cell.strip() for table in report.tables() if table.inline for cell in table.display_frame().columns}
    assert shown and not [h for h in shown if "_" in h], shown


def test_a_strata_column_the_log_lacks_is_an_error_naming_the_columns():
    # Issue #22: --strata sex on a log with gender dropped Experiment 5 silently (SM6 "no strata given").
    from hce.errors import DataError

    log = simulated_log(n_items=10, n_attempts=3).rename(columns={"sex": "gender"})
    with pytest.raises(DataError, match=r"--strata sex: no such column; columns: .*gender"):
        study_report(log, strata=["sex"])
    with pytest.raises(DataError, match=r"--metadata words: no such column; columns: .*transcript_words"):
        study_report(log, metadata=["words"])


def test_an_experiment_that_cannot_be_analysed_is_listed_under_not_reported():
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=10, n_attempts=4)
    document = study_report(log)
    assert [e["section"] for e in document.not_reported] == ["Experiment 2: prompt strategy optimisation"]
    assert "Friedman's test needs" in document.not_reported[0]["reason"]
    assert "## Not reported" in document.to_markdown()


def test_one_condition_with_equal_totals_leaves_the_other_conditions_reliability():
    # Issue #22: one condition whose totals are all identical made the whole report fail.
    from hce.study.report import reliability_table

    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=10, n_attempts=3,
                        noise={"P2.1": 0.5, "P2.2": 0.5})
    log.loc[log["prompt_id"] == "P2.2", "total"] = 12.0
    table = reliability_table(log)
    assert set(table.loc[table["estimator"] != "not reported", "prompt_id"]) == {"P2.1"}
    assert "equal 12, so the ICC is undefined" in table.loc[table["prompt_id"] == "P2.2", "method"].iloc[-1]


def test_text_in_a_criterion_column_names_the_experiment_it_stops():
    # Issue #22: a value "three" in a criterion column dropped Experiment 5 with exit code 0.
    log = simulated_log(n_items=12, n_attempts=3).astype({"clarity_of_language": object})
    log.loc[5, "clarity_of_language"] = "three"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        document = study_report(log)
    (entry,) = document.not_reported
    assert entry["section"].startswith("Experiment 5") and entry["status"] == "not computed"
    assert "row 5 holds 'three'" in entry["reason"]
