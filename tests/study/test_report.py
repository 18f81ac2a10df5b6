import re
import warnings

import numpy as np
import pandas as pd
import pytest

import hce.stats as hs
from hce.errors import HceWarning
from hce.stats._simulate import simulated_log
from hce.stats.result import AnalysisResult
from hce.study import experiment2
from hce.study.claims import scorecard
from hce.study.report import StudyResults, study_report
from hce.study.rules import NOT_MEASURABLE


def with_conditions(log, model="gpt-4.1-2025-04-14"):
    """The study's conditions: one per prompt, on one model (hce.study.designs.condition names them so)."""
    return log.assign(model=model, condition_id=log["prompt_id"] + f"|{model}|t0.1")


@pytest.fixture(scope="module")
def exp2_log():
    return with_conditions(simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                                         noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=30, n_attempts=8))


@pytest.fixture(scope="module")
def exp2_report(exp2_log):
    # Built once: with errored attempts the design is unbalanced and every criterion's variance
    # components are fitted by penalised least squares, with profile intervals (seconds each).
    return study_report(exp2_log, random_state=0)


@pytest.fixture(scope="module")
def balanced_log():
    """No errored attempts: variance components in closed form, a report in a second or two."""
    return with_conditions(simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", error_rate=0,
                                         noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=12, n_attempts=4))


def test_report_tables_equal_direct_statistics(exp2_log, exp2_report, tmp_path):
    out = exp2_report.write(tmp_path / "r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        direct = experiment2(exp2_log, random_state=0)
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
    numbers = [int(n) for n in re.findall(r"^\*Figure (\d+)\. ", markdown, flags=re.MULTILINE)]
    assert numbers == list(range(1, len(numbers) + 1))  # every figure, numbered as it appears (JAMA)
    assert re.search(r"\*Figure \d+\. Per-item SD of total scores for the prompt strategies\*", markdown)
    assert "tables/exp2_sd.csv" in markdown  # the long per-item table is a file, not printed


def test_report_is_deterministic_given_a_seed(balanced_log, tmp_path):
    a = study_report(balanced_log, random_state=0).write(tmp_path / "a")
    b = study_report(balanced_log, random_state=0).write(tmp_path / "b")
    for path in sorted((a / "tables").iterdir()):
        assert path.read_bytes() == (b / "tables" / path.name).read_bytes(), path.name
    assert (a / "report.md").read_bytes() == (b / "report.md").read_bytes()


def test_simulated_judge_says_so_in_title(balanced_log, exp2_report):
    log = balanced_log.assign(system_fingerprint="fp_hce_sim_0")
    assert "SIMULATED JUDGE" in study_report(log).title
    assert "SIMULATED" not in exp2_report.title


def fake(tables):
    return AnalysisResult("x", {k: pd.DataFrame(v) for k, v in tables.items()})


def card_of(results: StudyResults) -> pd.DataFrame:
    coded = results.reasoning.coded if results.reasoning else None
    return scorecard(results.experiments, log=results.log, coded=coded).set_index("id")


def test_scorecard_hand_computed_cases():
    sm2 = {"metric": ["both"], "estimate": [0.99], "ci_low": [0.96], "ci_high": [1.0], "n_items": [100],
           "target_share": [0.95], "meets": [True]}
    results = StudyResults(
        log=pd.DataFrame({"experiment_id": ["EXP1_BaselineRubricUtility", "EXP2_PromptOptimization",
                                            "EXP3_ModelComparison", "EXP5_FinalToolValidation"]}),
        simulated=False,
        experiments={
            "EXP1_BaselineRubricUtility": fake({"h1a": {"p_value": [0.001]}}),
            "EXP2_PromptOptimization": fake({"friedman": {"p_value": [0.20]}}),
            "EXP3_ModelComparison": fake({"friedman": {"p_value": [0.01]}}),
            "EXP5_FinalToolValidation": fake({
                "success_metric_2": sm2,
                "uncertainty": {"method": []},
                "fairness_verdict": {"any_detrimental": [False], "alpha": [0.05], "adjustment": ["holm"], "passes": [True]},
            }),
        },
    )
    card = card_of(results)
    # SM1 needs every pre-specified comparison significant: Experiment 2's P = .20 fails it (issue 33).
    assert card.loc["SM1", "verdict"] == "not met"
    assert card.loc["SM1", "value"] == "H1a P = .001; H2 P = .20; H3 P = .01"  # JAMA P values
    # SM2 is decided by the interval: the Wilson lower limit 96% >= the 95% target.
    assert card.loc["SM2", "verdict"] == "met" and card.loc["SM2", "value"] == "99.0% (95% CI, 96.0%-100.0%) of 100"
    assert card.loc["SM2", "decides"] == "interval"
    assert card.loc["SM3", "verdict"] == NOT_MEASURABLE  # no hypotheses table from Experiment 1
    assert card.loc["SM5", "verdict"] == NOT_MEASURABLE  # empty uncertainty table
    assert card.loc["SM6", "verdict"] == "met"
    results.experiments["EXP2_PromptOptimization"] = fake({"friedman": {"p_value": [0.04]}})
    assert card_of(results).loc["SM1", "verdict"] == "met"
    # The point estimate above the target with the interval holding it: inconclusive, never "met" (8/8, issue 33).
    sm2.update(estimate=[1.0], ci_low=[0.676], ci_high=[1.0], n_items=[8])
    results.experiments["EXP5_FinalToolValidation"].tables["success_metric_2"] = pd.DataFrame(sm2)
    assert card_of(results).loc["SM2", "verdict"] == "inconclusive"
    sm2.update(estimate=[0.5], ci_low=[0.4], ci_high=[0.6])
    results.experiments["EXP5_FinalToolValidation"].tables["success_metric_2"] = pd.DataFrame(sm2)
    assert card_of(results).loc["SM2", "verdict"] == "not met"
    del results.experiments["EXP1_BaselineRubricUtility"]
    card = card_of(results)
    assert card.loc["SM1", "verdict"] == NOT_MEASURABLE + " (no test of H1a)"
    assert card.loc["SM7", "verdict"] == "not met" and card.loc["SM7", "value"].startswith("3 of 4")
    # a log without an experiment's rows cannot say whether it ran: not measurable, as every other metric (issue 45)
    results.log = results.log.iloc[1:]
    assert card_of(results).loc["SM7", "verdict"] == NOT_MEASURABLE + " (no rows of EXP1)"


def test_an_experiment_that_cannot_be_analysed_is_reported_not_fatal():
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=10, n_attempts=4)
    markdown = study_report(log).to_markdown()
    assert "The analysis plan could not be run on this log: Friedman's test needs >= 2 complete blocks and >= 2 groups" in markdown


def test_reliability_is_the_generic_report_of_each_experiment():
    # The study report's per-condition sections are hce.report.report's, on each experiment's rows.
    from hce.report.generic import reliability_by_condition

    log = simulated_log(n_items=25, n_attempts=6)
    report = study_report(log)
    tables = {t.name: t.data for t in report.tables()}
    table = tables["exp5_total_reliability"]
    valid = log[~log["error_flag"]]
    direct = hs.icc(valid, item="item_id", rater="attempt", score="total").set_index("metric")
    assert table["estimate"].iloc[0] == direct.loc["ICC1", "estimate"]
    assert table["ci_high"].iloc[1] == direct.loc["ICC1k", "ci_high"]
    expected, skipped = reliability_by_condition(log, "total", random_state=0)
    assert not skipped and table["estimate"].tolist() == expected["estimate"].tolist()
    titles = [s.title for s in report.sections]
    for title in ("Experiment 5: Attempts and errors by condition", "Experiment 5: Criterion: Total",
                  "Experiment 5: Criterion: Clarity of Language (clarity_of_language)"):
        assert title in titles
    assert not any(t.startswith("Reliability across repeated attempts") for t in titles)  # no copy of its own


def test_exp5_without_confidence_column():
    log = simulated_log(n_items=12, n_attempts=4).drop(columns=["confidence"])
    from hce.study.report import analyse

    card = card_of(analyse(log))
    assert card.loc["SM5", "verdict"] == NOT_MEASURABLE


def test_variance_decomposition_is_per_condition_and_criterion(exp2_log, exp2_report):
    tables = {t.name: t.data for t in exp2_report.tables()}
    valid = exp2_log[~exp2_log["error_flag"]]
    for criterion in ("total", "clarity_of_language"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            direct = hs.variance_components(valid, score=criterion, facets=["item_id", "condition_id"], n_attempts=8)
        pd.testing.assert_frame_equal(tables[f"exp2_{criterion}_variance_components"], direct.components)
        # G and Phi intervals come from draws of the report's one generator; the estimates do not.
        np.testing.assert_array_equal(tables[f"exp2_{criterion}_g_coefficients"]["estimate"], direct.coefficients["estimate"])


def test_bayesian_section_is_announced_as_skipped_by_default(exp2_report):
    assert "Skipped: MCMC takes minutes. Run `hce report ... --bayes`" in exp2_report.to_markdown()


@pytest.mark.slow
def test_bayesian_section_with_mcmc():
    from hce.study.report import bayes_section

    log = with_conditions(simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                                        noise={"P2.1": 0.8, "P2.2": 0.3}, n_items=15, n_attempts=5))
    markdown = study_report(log, extra_sections=[bayes_section]).to_markdown()
    assert "P(one condition is more consistent than another)" in markdown
    assert "Skipped" not in markdown


def test_sm5_met_by_logprob_confidence_without_confidence_column():
    from hce.study.report import analyse

    log = simulated_log(n_items=12, n_attempts=4).drop(columns=["confidence"])
    log["logprobs"] = '[{"token": "3", "logprob": -0.1, "top_logprobs": []}]'
    card = card_of(analyse(log))
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


def test_the_study_report_prints_no_snake_case_header(balanced_log):
    from hce.study import study_report

    log = balanced_log
    report = study_report(log)
    shown = {cell.strip() for table in report.tables() if table.inline for cell in table.display_frame().columns}
    assert shown and not [h for h in shown if "_" in h], shown


def _shared_prompt_log():
    """Issue #21's case: three conditions, two sharing prompt P2.1 (different models and temperatures)."""
    rng = np.random.default_rng(21)
    conditions = {"a": ("P2.1", "m1", 0.1, 0.3), "b": ("P2.1", "m2", 1.0, 1.2), "c": ("P2.3", "m1", 0.1, 0.7)}
    rows = []
    for i in range(15):
        level = rng.uniform(5, 15)
        for cond, (prompt, model, temperature, noise) in conditions.items():
            for a in range(1, 7):
                rows.append({"attempt_id": f"{i}-{cond}-{a}", "experiment_id": "EXP2_PromptOptimization",
                             "item_id": f"T{i:02d}", "condition_id": cond, "prompt_id": prompt, "model": model,
                             "temperature": temperature, "attempt": a,
                             "total": float(np.clip(np.rint(level + rng.normal(0, 2 * noise)), 4, 20)), "error_flag": False})
    return pd.DataFrame(rows)


def test_exp2_with_two_conditions_sharing_a_prompt_compares_condition_ids():
    # Issue #21: grouped by prompt_id, conditions a and b (P2.1 on two models and temperatures) were pooled
    # into one group and Friedman reported k = 2. The study's own design has one condition per prompt
    # (hce.study.designs.exp_design); a log that has not is compared by condition_id, as scipy does here.
    import scipy.stats

    from hce.errors import DataError

    log = _shared_prompt_log()
    with pytest.raises(DataError, match=r"prompt_id 'P2.1' covers 2 conditions \(a, b\).*condition='condition_id'"):
        experiment2(log)
    report = study_report(log)
    tables = {t.name: t.data for t in report.tables()}
    friedman = tables["exp2_friedman"].iloc[0]
    sd = log.groupby(["item_id", "condition_id"])["total"].std(ddof=1).round(12).unstack()
    expected = scipy.stats.friedmanchisquare(*(sd[c].to_numpy() for c in ["a", "b", "c"]))
    assert friedman["k"] == 3 and friedman["n"] == 15
    assert friedman["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
    assert friedman["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert tables["exp2_winner"]["condition_id"].tolist() == sorted("abc", key=lambda c: sd[c].median())
    markdown = report.to_markdown()
    assert "Compared by condition_id, not by prompt_id: in this log prompt_id P2.1 covers conditions a, b" in markdown
    # The generic sections of the same rows agree: the same test over the three condition_ids.
    generic = tables["exp2_total_sd_test"].iloc[0]
    assert generic["k"] == 3 and generic["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
    assert tables["exp2_total_reliability"]["condition_id"].unique().tolist() == ["a", "b", "c"]


def test_one_configuration_and_two_named_prompts_refuse_to_pool():
    from hce.errors import DataError
    from hce.study import experiment1, experiment5

    log = simulated_log(n_items=6, n_attempts=3, noise={"C1": 0.3, "C2": 0.5})
    with pytest.raises(DataError, match=r"EXP5_FinalToolValidation: the rows hold 2 conditions \(C1, C2\)"):
        experiment5(log)
    exp1 = simulated_log(experiment_id="EXP1_BaselineRubricUtility", condition="prompt_id",
                         noise={"P1.1": 0.5, "P1.2": 0.3}, n_items=6, n_attempts=3)
    exp1["condition_id"] = exp1["prompt_id"] + np.where(exp1["attempt"] % 2 == 0, "|m1", "|m2")
    with pytest.raises(DataError, match="prompt_id 'P1.1' covers 2 conditions"):
        experiment1(exp1)
    markdown = study_report(exp1).to_markdown()  # the report says why, and still writes the rest
    assert "The analysis plan could not be run on this log: EXP1_BaselineRubricUtility: prompt_id 'P1.1' covers 2" in markdown


def test_handoffs_and_cost_sections(balanced_log, exp2_report):
    log = balanced_log.assign(input_tokens=1200, cached_tokens=1024, output_tokens=40)
    report = study_report(log, decisions={"prompt": {"choice": "P2.3", "source": "rule", "rule": "lowest median SD"}})
    tables = {t.name: t.data for t in report.tables()}
    handoffs = tables["handoffs"]
    assert handoffs[["decision", "choice", "source"]].values.tolist() == [["prompt", "P2.3", "rule"]]
    cost = tables["cost_by_experiment"].set_index("experiment_id")
    assert cost.loc["EXP2_PromptOptimization", "cost_usd"] == pytest.approx(log["cost_usd"].sum(), rel=1e-12)
    assert cost.loc["(all)", "cached_share"] == pytest.approx(1024 / 1200)
    per_condition = tables["exp2_cost"].set_index("condition_id")
    assert per_condition.loc["P2.1|gpt-4.1-2025-04-14|t0.1", "attempts"] == 12 * 4
    # Without token counts the cost is not reported, and the reason is given.
    markdown = exp2_report.to_markdown()
    assert "Not reported: the logs record no cost or token counts" not in markdown  # cost_usd alone is logged
    assert "cost_summary: the log has no column(s)" in markdown


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
    document = study_report(log.assign(condition_id=log["prompt_id"]))
    assert [e["section"] for e in document.not_reported][:1] == ["Experiment 2: prompt strategy optimisation"]
    assert "Friedman's test needs" in document.not_reported[0]["reason"]
    assert "## Not reported" in document.to_markdown()


def test_one_condition_with_equal_totals_leaves_the_other_conditions_reliability():
    # Issue #22: one condition whose totals are all identical made the whole report fail.
    log = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", n_items=10, n_attempts=3,
                        noise={"P2.1": 0.5, "P2.2": 0.5})
    log = log.assign(condition_id=log["prompt_id"])
    log.loc[log["prompt_id"] == "P2.2", "total"] = 12.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        document = study_report(log)
    table = {t.name: t.data for t in document.tables()}["exp2_total_reliability"]
    assert set(table["condition_id"]) == {"P2.1"}
    named = [e for e in document.not_reported if "reliability of P2.2" in e["section"]]
    assert len(named) == 1 and "equal" in named[0]["reason"]


def test_text_in_a_criterion_column_names_the_experiment_it_stops():
    # Issue #22: a value "three" in a criterion column dropped Experiment 5 with exit code 0.
    log = simulated_log(n_items=12, n_attempts=3).astype({"clarity_of_language": object})
    log.loc[5, "clarity_of_language"] = "three"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)
        document = study_report(log)
    entry, *criterion = [e for e in document.not_reported if e["status"] == "not computed"]
    assert entry["section"].startswith("Experiment 5") and "row 5 holds 'three'" in entry["reason"]
    assert criterion and all("clarity_of_language" in e["section"] for e in criterion)  # named where it stops


def test_a_one_condition_log_is_not_applicable_and_a_family_of_one_has_no_holm_p():
    # Issue 45: a one-condition log counted the impossible Friedman test as a section the log supports (exit 1),
    # and H3's P alone was labelled Holm-adjusted.
    from hce.report.sections import NOT_COMPUTED

    one = simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id", noise={"P2.1": 0.6},
                        n_items=8, n_attempts=4, random_state=0)
    report = study_report(one.assign(condition_id=one["prompt_id"]), random_state=0)
    assert [e for e in report.not_reported if e["status"] == NOT_COMPUTED] == []
    exp3 = simulated_log(experiment_id="EXP3_ModelComparison", condition="model", noise={"m1": 0.5, "m2": 0.3, "m3": 0.6},
                         n_items=8, n_attempts=4, random_state=0).assign(condition_id=lambda f: f["model"])
    table = next(b.data for s in study_report(exp3, random_state=0).sections for b in s.blocks
                 if getattr(b, "name", "") == "hypotheses")
    assert table["p_value"].notna().sum() == 1 and table["p_holm"].isna().all()
