"""The study's claims: every pre-specified hypothesis and success metric with its rule and verdict.

Each verdict is :func:`hce.study.rules.verdict` of the rule on the evidence table that the
report prints beside it, so a table, the report and the manuscript cannot disagree. Every
pre-specified hypothesis gets a row, supported or not; one that this log cannot decide says
why. Table 2 (:func:`key_results`) gathers the tests the hypotheses read.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from hce._pvalues import p_text
from hce._vocabulary import EFFECT_COLUMNS
from hce.report.numbers import fixed, format_ci, interval_decimals
from hce.report.tables import words
from hce.stats.result import AnalysisResult
from hce.stats.tests import p_adjust
from hce.study.rules import (
    INCONCLUSIVE,
    RULES,
    MIN_PER_LEVEL,
    NEAR_ALPHA,
    NEGATIVE,
    NOT_MEASURABLE,
    POSITIVE,
    rule,
    sm2_claim_text,
    verdict,
    verdict_row,
    verdicts_frame,
)

#: The experiments whose omnibus tests make Success Metric 1, with the hypothesis each tests.
OMNIBUS = (("EXP1_BaselineRubricUtility", "h1a", "H1a"), ("EXP2_PromptOptimization", "friedman", "H2"),
           ("EXP3_ModelComparison", "friedman", "H3"))  # fmt: skip
#: The chain-of-thought prompt of H2 (seed 000, 7.2.2: P2.3).
COT_PROMPT = "P2.3"
#: Corpus columns read as demographic strata for Success Metric 6 when present with two or more levels.
DEMOGRAPHIC_STRATA = ("gender", "sex", "age_band", "age_group", "race", "ethnicity")
#: The confirmatory family across which the Holm-adjusted P is reported (Methods: multiplicity).
FAMILY = ("H1a", "H1b", "H2", "H3")


def shown(estimate: float, low: float, high: float) -> str:
    """An estimate to the decimals its interval's table shows it with (one statistic, one rounding everywhere).

    Examples
    --------
    >>> shown(-0.9583, -0.9841, -0.8962), shown(-0.96, float("nan"), float("nan"))
    ('-0.96', '-0.96')
    """
    return fixed(estimate, interval_decimals(estimate, low, high, kind="effect"))


def exp1_claims(h1a: pd.DataFrame, h1b: pd.DataFrame, h1c: pd.DataFrame, sm3: pd.DataFrame, *, rubric: object,
                non_rubric: object, condition: str, alpha: float, r_threshold: float) -> pd.DataFrame:
    """Experiment 1's hypotheses H1a-c and Success Metric 3, each with its rule and verdict.

    ``h1a``/``h1b`` are the rubric-vs-non-rubric tests (effect < 0: G2 lower), ``h1c`` the
    difference of the KL divergences ``D(target || G2) - D(target || G1)`` with its
    cluster-bootstrap interval (:func:`hce.stats.kl_difference`), ``sm3`` the correlations of
    mean totals with the targets.
    """
    rows = []
    for rid, test, name in (("H1a", h1a, "Mann-Whitney U"), ("H1b", h1b, "Wilcoxon V")):
        t = test.iloc[0]
        r = rule(rid, alpha=alpha)
        word = verdict(r, p_value=t["p_value"], estimate=t["effect_size"])
        rows.append(verdict_row(r, f"{name} = {t['statistic']:g}, {p_text(t['p_value'])}, r = "
                                   f"{shown(t['effect_size'], t['effect_ci_low'], t['effect_ci_high'])}",
                                word, p_value=t["p_value"]))  # fmt: skip
    d = h1c.iloc[0]
    r = rule("H1c")
    rows.append(verdict_row(r, f"D(target || G2) = {d['estimate_a']:.2f}, D(target || G1) = {d['estimate_b']:.2f} nats; "
                               f"difference {format_ci(d['ci_low'], d['ci_high'], estimate=d['estimate'])} "
                               f"(smoothing {d['smoothing_share']:.0%} of the target mass)",
                            verdict(r, estimate=d["estimate"], ci_low=d["ci_low"], ci_high=d["ci_high"]), p_value=np.nan))  # fmt: skip
    pearson = sm3[sm3["verdict"] != ""].iloc[0]
    rows.append(verdict_row(rule("SM3", threshold=r_threshold), f"r = {format_ci(pearson['ci_low'], pearson['ci_high'], estimate=pearson['estimate'], kind='coefficient', level=0.95)}, "
                            f"n = {pearson['n']}", pearson["verdict"], p_value=np.nan))  # fmt: skip
    return _with_p(rows)


def with_sm3_verdict(sm3: pd.DataFrame, *, rubric: object, condition: str, r_threshold: float) -> pd.DataFrame:
    """Success Metric 3's correlations with the rule's verdict on the row the claim reads (G2's Pearson r).

    The other rows (G1, Spearman) are descriptive: their ``verdict`` is empty, so no table
    prints a verdict of its own beside the claim's.
    """
    r = rule("SM3", threshold=r_threshold)
    claim = (sm3[condition] == rubric) & sm3["method"].str.startswith("Pearson")
    words = [verdict(r, estimate=row.estimate, ci_low=row.ci_low, ci_high=row.ci_high) if is_claim else ""
             for row, is_claim in zip(sm3.itertuples(index=False), claim)]  # fmt: skip
    return sm3.assign(threshold=r_threshold, verdict=words)


def with_sm2_verdict(sm2: pd.DataFrame) -> pd.DataFrame:
    """Success Metric 2's table with the rule's verdict on the ``both`` row (the claim) in place of its own ``meets`` columns.

    The rule reads the thresholds and the target share from the table, which the analysis
    computed with the study's settings: one source for the numbers and the words.
    """
    out = sm2.drop(columns=["meets", "meets_with_confidence"], errors="ignore")
    words = [verdict(rule("SM2", threshold=float(row.target_share)), estimate=row.estimate, ci_low=row.ci_low,
                     ci_high=row.ci_high) if row.metric == "both" else "" for row in out.itertuples(index=False)]  # fmt: skip
    return out.assign(verdict=words)


def sm2_claim(sm2: pd.DataFrame) -> str:
    """Success Metric 2's claim with the thresholds its table was computed with."""
    if "threshold" not in sm2:
        return RULES["SM2"].claim
    rows = sm2.set_index("metric")["threshold"]
    return sm2_claim_text(rows["category_sd"], rows["total_sd"])


def with_sm6_verdict(fair_verdict: pd.DataFrame, pairwise: pd.DataFrame | None) -> pd.DataFrame:
    """Success Metric 6's table with the rule's verdict in place of the analysis's own ``passes``.

    "none found" on a stratum level with fewer than :data:`MIN_PER_LEVEL` transcripts is no
    evidence (no test can find a difference there): inconclusive, as the rule says.
    """
    small = _small_levels(pairwise)
    words = [NEGATIVE["metric"] if bool(row.any_detrimental) else INCONCLUSIVE if small else POSITIVE["metric"]
             for row in fair_verdict.itertuples(index=False)]  # fmt: skip
    return fair_verdict.drop(columns=["passes"], errors="ignore").assign(small_levels=small, verdict=words)


def near_alpha_notes(claims: pd.DataFrame) -> list[str]:
    """A note for each test-decided verdict whose P lies within :data:`NEAR_ALPHA` of its alpha.

    Such a verdict could turn on a tie correction, an exact instead of an asymptotic P or the
    threshold itself, so the reader is told which verdicts sit on the edge. ``claims`` is the
    hypotheses table (its ``p_value`` column); rows without a P are skipped.

    Examples
    --------
    >>> table = pd.DataFrame({"id": ["H2", "H3"], "decides": ["p", "p"], "alpha": [0.05, 0.05],
    ...                       "p_value": [0.043, 0.0001], "verdict": ["supported", "supported"]})
    >>> near_alpha_notes(table)
    ['H2 was supported on P = .04, within 0.01 of alpha = 0.05: a tie correction, an exact instead of an asymptotic P or another alpha could turn it (a verdict on the edge, not a robust one)']
    """
    return [f"{row.id} was {row.verdict} on {p_text(row.p_value)}, within {NEAR_ALPHA:g} of alpha = {row.alpha:g}: "
            f"{NEAR_ALPHA_WHY}" for row in near_alpha(claims).itertuples(index=False)]


#: Why a verdict within :data:`NEAR_ALPHA` of its alpha gets a note, in every output that states one.
NEAR_ALPHA_WHY = ("a tie correction, an exact instead of an asymptotic P or another alpha could turn it (a verdict on the "
                  "edge, not a robust one)")


def near_alpha(claims: pd.DataFrame) -> pd.DataFrame:
    """The rows of a hypotheses or scorecard table decided by a P within :data:`NEAR_ALPHA` of their alpha."""
    if "p_value" not in claims:
        return claims.iloc[0:0]
    return claims[(claims["decides"] == "p") & ((claims["p_value"] - claims["alpha"]).abs() < NEAR_ALPHA)]


def _with_p(rows: list[dict[str, object]]) -> pd.DataFrame:
    out = verdicts_frame(rows)
    out.insert(out.columns.get_loc("verdict"), "p_value", [row.get("p_value", np.nan) for row in rows])
    return out


def hypotheses(experiments: Mapping[str, AnalysisResult], *, alpha: float = 0.05) -> pd.DataFrame:
    """Every pre-specified hypothesis (H1a-c, H2, H3) with its rule, evidence and verdict.

    A hypothesis whose experiment is absent or could not be analysed is listed as
    :data:`NOT_MEASURABLE` with the reason. ``p_holm`` is the Holm-adjusted P across the
    confirmatory family :data:`FAMILY` (reported beside the protocol's per-hypothesis alpha),
    NaN throughout when fewer than two of its hypotheses were tested.
    """
    exp1 = experiments.get("EXP1_BaselineRubricUtility")
    rows: list[dict[str, object]] = []
    if exp1 is not None and "hypotheses" in exp1:
        claims = exp1["hypotheses"]
        rows += claims[claims["id"].str.startswith("H")].to_dict("records")
    else:
        rows += [verdict_row(rule(rid), "—", f"{NOT_MEASURABLE} (Experiment 1 not analysed)", p_value=np.nan)
                 for rid in ("H1a", "H1b", "H1c")]  # fmt: skip
    rows.append(_h2(experiments.get("EXP2_PromptOptimization"), alpha))
    rows.append(_h3(experiments.get("EXP3_ModelComparison"), alpha))
    out = _with_p(rows)
    family = out["id"].isin(FAMILY) & out["p_value"].notna()
    out["p_holm"] = np.nan
    if family.sum() >= 2:  # a family of one has nothing to adjust for: no "Holm-adjusted" label on its own P
        out.loc[family, "p_holm"] = p_adjust(out.loc[family, "p_value"].to_numpy(float), "holm")
    return out


def _h2(exp2: AnalysisResult | None, alpha: float) -> dict[str, object]:
    r = rule("H2", alpha=alpha)
    if exp2 is None or "winner" not in exp2:
        return verdict_row(r, "—", f"{NOT_MEASURABLE} (Experiment 2 not analysed)", p_value=np.nan)
    winner, fr = exp2["winner"], exp2["friedman"].iloc[0]
    factor = winner.columns[0]
    if COT_PROMPT not in set(winner[factor].astype(str)):
        return verdict_row(r, "—", f"{NOT_MEASURABLE} (no condition {COT_PROMPT}, the chain-of-thought prompt)", p_value=np.nan)
    cot = winner[winner[factor].astype(str) == COT_PROMPT].iloc[0]
    # The post hoc must find the CoT prompt lower than every other: the winner rule, with P2.3 the winner.
    word = POSITIVE["hypothesis"] if bool(cot["winner"]) else NEGATIVE["hypothesis"]
    beaten = cot["significantly_lower_than"] or "none"
    value = f"Friedman {p_text(fr['p_value'])}; {COT_PROMPT} significantly lower than: {beaten}"
    return verdict_row(r, value, word, p_value=fr["p_value"])


def _h3(exp3: AnalysisResult | None, alpha: float) -> dict[str, object]:
    r = rule("H3", alpha=alpha)
    if exp3 is None or "friedman" not in exp3:
        return verdict_row(r, "—", f"{NOT_MEASURABLE} (Experiment 3 not analysed)", p_value=np.nan)
    fr = exp3["friedman"].iloc[0]
    value = f"Friedman chi2({fr['df1']:g}) = {fr['statistic']:.2f}, {p_text(fr['p_value'])}"
    return verdict_row(r, value, verdict(r, p_value=fr["p_value"]), p_value=fr["p_value"])


def key_results(results: Mapping[str, AnalysisResult]) -> pd.DataFrame:
    """Table 2: the hypothesis tests of the prompt and model comparisons in one table."""
    picks = [
        ("EXP1_BaselineRubricUtility", "h1a", "H1a: SD, G2 vs G1"),
        ("EXP1_BaselineRubricUtility", "h1a_paired", "H1a sensitivity: SD, G2 vs G1, paired"),
        ("EXP1_BaselineRubricUtility", "h1b", "H1b: MAE, G2 vs G1"),
        ("EXP2_PromptOptimization", "friedman", "H2: SD across prompt strategies"),
        ("EXP3_ModelComparison", "friedman", "H3: SD across models"),
    ]
    rows = []
    for experiment_id, name, label in picks:
        if experiment_id in results and name in results[experiment_id]:
            row = results[experiment_id][name].iloc[0]
            n, unit = sample_size(row, results[experiment_id].tables.get("sd"))
            rows.append({"comparison": label, "method": row.get("method"), "statistic": row.get("statistic"),
                         "p_value": row.get("p_value"), "effect_size": row.get("effect_size"),
                         "effect_ci_low": row.get("effect_ci_low"), "effect_ci_high": row.get("effect_ci_high"),
                         "n": n, "n_unit": unit})  # fmt: skip
    columns = ["comparison", "method", "statistic", "p_value", *EFFECT_COLUMNS, "n", "n_unit"]
    return rank_sums_as_counts(pd.DataFrame(rows, columns=columns))


def sample_size(row: pd.Series, per_item: pd.DataFrame | None) -> tuple[int, str]:
    """A test's N in the units of its design: pairs where both conditions scored the same items, whatever the test.

    A two-group test (``a``, ``b``, ``n_a``, ``n_b``) whose groups are the same items under two
    conditions (``per_item``: the item x condition table it was computed from) has N = the
    items, as pairs: "24" would count each transcript twice. A paired test gives its pairs,
    a blocked one its blocks (items).

    Examples
    --------
    >>> per_item = pd.DataFrame({"item_id": ["T1", "T2", "T1", "T2"], "prompt_id": ["A", "A", "B", "B"]})
    >>> sample_size(pd.Series({"a": "A", "b": "B", "n_a": 2, "n_b": 2, "n": 4}), per_item)
    (2, 'pairs (the same transcripts under both conditions)')
    >>> sample_size(pd.Series({"n_pairs": 12, "n": 12}), None)
    (12, 'pairs')
    """
    if "n_pairs" in row:
        return int(row["n_pairs"]), "pairs"
    if {"a", "b", "n_a", "n_b"} <= set(row.index):
        if per_item is not None and len(per_item.columns) >= 2:
            item, condition = per_item.columns[:2]
            items = {level: set(per_item.loc[per_item[condition].astype(str) == str(level), item]) for level in (row["a"], row["b"])}
            if items[row["a"]] == items[row["b"]] and len(items[row["a"]]) == row["n_a"] == row["n_b"]:
                return int(row["n_a"]), "pairs (the same transcripts under both conditions)"
        return int(row["n_a"] + row["n_b"]), "independent observations"
    return int(row["n"]), "transcripts (blocks)"


#: The tests whose statistic is a rank sum (U, V, W): a whole one is a count.
RANK_SUM_TESTS = r"^(?:pairwise )?(?:Mann-Whitney|Wilcoxon)"


def rank_sums_as_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with each whole rank-sum statistic (Mann-Whitney U, Wilcoxon V) as an integer, so it prints as a count.

    A rank sum is a count or a half count (ties): "0" and "11", never "0.00" and "11.00", while
    another row's chi-squared keeps its decimals. A table without ``statistic`` and ``method``
    columns is returned as it is.

    Examples
    --------
    >>> frame = pd.DataFrame({"method": ["Mann-Whitney U", "Wilcoxon signed-rank", "Kruskal-Wallis H"],
    ...                       "statistic": [3.0, 1.5, 2.0]})
    >>> rank_sums_as_counts(frame)["statistic"].tolist()
    [3, 1.5, 2.0]
    """
    if not {"statistic", "method"} <= set(frame.columns):
        return frame
    values = pd.to_numeric(frame["statistic"], errors="coerce")
    whole = frame["method"].astype(str).str.contains(RANK_SUM_TESTS) & values.notna() & (values % 1 == 0)
    if not whole.any():
        return frame
    statistic = [int(v) if w else v for v, w in zip(values, whole)]
    return frame.assign(statistic=pd.Series(statistic, index=frame.index, dtype=object))


def scorecard(experiments: Mapping[str, AnalysisResult], *, log: pd.DataFrame, coded: Mapping[str, int] | None,
              alpha: float = 0.05) -> pd.DataFrame:
    """Each PRD success metric (seed 000 section 1) with its value, rule and verdict.

    ``coded`` is Experiment 4's count of coded transcripts, models and segments (None: not coded).

    Returns
    -------
    DataFrame
        ``id``, ``claim``, ``value``, the rule's ``test``, ``decides``, ``alpha``,
        ``direction``, ``threshold``, ``rule``, and ``verdict`` (``"met"``, ``"not met"``,
        ``"inconclusive"`` or ``"not measurable from this log ..."``).
    """
    exp = experiments
    rows: list[dict[str, object]] = []
    tests = [(k, n, h) for k, n, h in OMNIBUS if k in exp]
    r = rule("SM1", alpha=alpha)
    if len(tests) == len(OMNIBUS):
        ps = {h: float(exp[k][n]["p_value"].iloc[0]) for k, n, h in tests}
        value = "; ".join(f"{h} {p_text(p)}" for h, p in ps.items())
        rows.append(verdict_row(r, value, verdict(r, p_value=max(ps.values()))))  # every comparison must be significant
    else:
        missing = [h for k, _, h in OMNIBUS if k not in exp]
        rows.append(verdict_row(r, "—", f"{NOT_MEASURABLE} (no test of {', '.join(missing)})"))
    if "EXP5_FinalToolValidation" in exp:
        sm2 = with_sm2_verdict(exp["EXP5_FinalToolValidation"]["success_metric_2"])
        both = sm2.set_index("metric").loc["both"]
        r = rule("SM2", threshold=float(both["target_share"]), claim=sm2_claim(sm2))
        rows.append(verdict_row(r, f"{both['estimate']:.1%} (95% CI, {both['ci_low']:.1%}-{both['ci_high']:.1%}) of {int(both['n_items'])}",
                                both["verdict"]))  # fmt: skip
    else:
        rows.append(verdict_row(rule("SM2"), "—", NOT_MEASURABLE))
    exp1 = exp.get("EXP1_BaselineRubricUtility")
    if exp1 is not None and "hypotheses" in exp1:
        sm3 = exp1["hypotheses"].set_index("id").loc["SM3"]
        rows.append(verdict_row(rule("SM3", threshold=sm3["threshold"]), sm3["value"], sm3["verdict"]))
    else:
        rows.append(verdict_row(rule("SM3"), "—", NOT_MEASURABLE))
    r = rule("SM4")
    if coded is None:
        rows.append(verdict_row(r, "—", NOT_MEASURABLE + " (needs the coded reasoning table)"))
    else:
        rows.append(verdict_row(r, f"{coded['transcripts']} transcripts x {coded['models']} models coded "
                                f"({coded['segments']} segments)", verdict(r, estimate=coded["transcripts"])))  # fmt: skip
    rows.append(_sm5(exp.get("EXP5_FinalToolValidation"), log))
    fair = exp.get("EXP5_FinalToolValidation")
    r = rule("SM6", alpha=alpha)
    if fair is not None and "fairness_verdict" in fair:
        v = with_sm6_verdict(fair["fairness_verdict"], fair.tables.get("fairness_pairwise")).iloc[0]
        r = rule("SM6", alpha=float(v["alpha"]))
        small = v["small_levels"]
        rows.append(verdict_row(r, ("detrimental difference found" if bool(v["any_detrimental"]) else "none found")
                                + (f"; levels with fewer than {MIN_PER_LEVEL} transcripts: {small}" if small else ""),
                                v["verdict"]))  # fmt: skip
    else:
        rows.append(verdict_row(r, "—", NOT_MEASURABLE + f" ({_strata_reason(log)})"))
    rows.append(_sm7(exp, log))
    return verdicts_frame(rows)


def _sm7(exp: Mapping[str, AnalysisResult], log: pd.DataFrame) -> dict[str, object]:
    """Success Metric 7: every planned experiment analysable; a log without an experiment's rows cannot say whether it ran."""
    planned = ["EXP1_BaselineRubricUtility", "EXP2_PromptOptimization", "EXP3_ModelComparison", "EXP5_FinalToolValidation"]
    logged = set(log["experiment_id"].dropna()) if "experiment_id" in log else set()
    done = [p for p in planned if p in exp]
    r = rule("SM7", threshold=len(planned))
    value = f"{len(done)} of {len(planned)} analysable experiments in the log"
    absent = [p.split("_")[0] for p in planned if p not in logged]
    if absent:  # e.g. one experiment's log: the others may have run elsewhere
        return verdict_row(r, value, f"{NOT_MEASURABLE} (no rows of {', '.join(absent)})")
    return verdict_row(r, value, verdict(r, estimate=len(done)))


def _small_levels(pairs: pd.DataFrame | None) -> str:
    """The stratum levels Experiment 5 compared with fewer than :data:`MIN_PER_LEVEL` transcripts ("" when none)."""
    if pairs is None or not len(pairs):
        return ""
    sizes = pd.concat([pairs[["stratum", side, f"n_{side}"]].set_axis(["stratum", "level", "n"], axis=1) for side in ("a", "b")])
    order = {stratum: i for i, stratum in enumerate(pairs["stratum"].unique())}  # the strata in the analysis's order
    sizes = sizes.drop_duplicates(["stratum", "level"]).assign(order=lambda f: f["stratum"].map(order))
    small = sizes[sizes["n"] < MIN_PER_LEVEL].sort_values(["order", "level"], kind="stable")
    return ", ".join(f"{words(row.stratum)} {row.level} ({int(row.n)})" for row in small.itertuples(index=False))


def _strata_reason(log: pd.DataFrame) -> str:
    """Why Success Metric 6 was not assessed, from the log's own columns."""
    rows = log[log["experiment_id"] == "EXP5_FinalToolValidation"] if "experiment_id" in log else log
    present = [c for c in DEMOGRAPHIC_STRATA if c in rows and rows[c].nunique() >= 2]
    if present:
        return f"the log records strata {', '.join(present)}, but no stratum was analysed (pass strata)"
    return "the log records no demographic stratum"


def _sm5(exp5: AnalysisResult | None, log: pd.DataFrame) -> dict[str, object]:
    r = rule("SM5")
    logprobs = bool("logprobs" in log and "experiment_id" in log
                    and log.loc[log["experiment_id"] == "EXP5_FinalToolValidation", "logprobs"].notna().any())  # fmt: skip
    if exp5 is not None and "uncertainty" in exp5 and len(exp5["uncertainty"]) and pd.notna(exp5["uncertainty"]["estimate"].iloc[0]):
        unc = exp5["uncertainty"].iloc[0]
        return verdict_row(r, f"{unc['method']}: rho = {shown(unc['estimate'], unc['ci_low'], unc['ci_high'])}, {p_text(unc['p_value'])}", verdict(r, estimate=1))
    if exp5 is not None and logprobs:
        return verdict_row(r, "token-probability confidence and its calibration (section below)", verdict(r, estimate=1))
    return verdict_row(r, "—", NOT_MEASURABLE)
