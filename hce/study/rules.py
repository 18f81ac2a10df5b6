"""Decision rules of the study's pre-specified hypotheses and success metrics, as data.

A claim ("H1a supported", "Success Metric 2 met") is the verdict of one rule applied to one
row of evidence, and nothing else: the report's hypotheses table and scorecard and every
sentence of the manuscript print :func:`verdict`'s word. A rule says what decides:

- ``"p"``: a test at ``alpha``; with ``direction`` ``"less"`` (``"greater"``) the effect must
  also point that way (a significant difference the wrong way does not support the claim).
- ``"interval"``: the confidence interval against ``threshold``; ``direction`` ``"greater"``
  asks the whole interval at or above it (``ci_low >= threshold``: met), the whole interval
  below it is "not met", and an interval holding the threshold is "inconclusive".
- ``"point"``: the estimate against ``threshold`` (counts and descriptive comparisons, which
  have no sampling interval); the verdict says it rests on a point.

Examples
--------
>>> rule = RULES["SM2"]
>>> verdict(rule, estimate=1.0, ci_low=0.676, ci_high=1.0, threshold=0.95)
'inconclusive'
>>> verdict(RULES["H1a"], p_value=0.0001, estimate=-0.9, alpha=0.05)
'supported'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from decimal import Decimal
from typing import Literal

import pandas as pd

Decides = Literal["p", "interval", "point"]
Direction = Literal["less", "greater", "two-sided"]
#: The words a verdict may use; "met"/"supported" only where the rule's condition holds.
POSITIVE = {"hypothesis": "supported", "metric": "met"}
NEGATIVE = {"hypothesis": "not supported", "metric": "not met"}
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE = "not measurable from this log"
#: Success Metric 6: a stratum level with fewer transcripts cannot show a difference, so "none found" there is no evidence.
MIN_PER_LEVEL = 5
#: Success Metric 2's pre-specified thresholds (PRD section 1): mean category SD, total SD, share of transcripts.
#: :func:`hce.study.experiment5` takes them as settings; the rule and its claim read them from its table.
SM2_CATEGORY_MAX, SM2_TOTAL_MAX, SM2_TARGET = 0.40, 1.0, 0.95
#: A verdict whose P lies this close to alpha gets a note: a tie or a threshold could have turned it.
NEAR_ALPHA = 0.01
#: Columns a rule adds to a table of verdicts, in order.
RULE_COLUMNS = ["test", "decides", "alpha", "near_alpha", "direction", "threshold", "rule"]


def p_threshold(alpha: float | None) -> str:
    """A significance level as the threshold a P value is compared with, written as JAMA writes P (no leading zero).

    Examples
    --------
    >>> p_threshold(0.05), p_threshold(0.01), p_threshold(0.001), p_threshold(1e-7)
    ('.05', '.01', '.001', '.0000001')
    """
    if alpha is None:
        return "alpha"
    return format(Decimal(repr(float(alpha))), "f").lstrip("0") or "0"  # 1e-07 -> .0000001, never scientific


@dataclass(frozen=True)
class Rule:
    """One pre-specified claim and what decides it.

    Attributes
    ----------
    id : str
        ``"H1a"`` ... (hypotheses) or ``"SM1"`` ... (success metrics).
    claim : str
        The claim as the protocol states it.
    kind : {"hypothesis", "metric"}
        Hypotheses are "supported"/"not supported", metrics "met"/"not met".
    test : str
        The test or estimate the verdict reads (named as the Methods name it).
    decides : {"p", "interval", "point"}
        What decides (module docstring).
    direction : {"less", "greater", "two-sided"}
        The direction the claim needs (of the effect for ``"p"``; of the estimate against
        ``threshold`` otherwise).
    alpha : float or None
        Significance level of a ``"p"`` rule (the study's ``alpha`` replaces it).
    threshold : float or None
        Threshold of an ``"interval"`` or ``"point"`` rule.
    condition : str or None
        The rule in words where the generic wording of ``decides`` would not say it all
        (several tests, a post hoc step).
    """

    id: str
    claim: str
    kind: Literal["hypothesis", "metric"]
    test: str
    decides: Decides
    direction: Direction = "two-sided"
    alpha: float | None = None
    threshold: float | None = None
    condition: str | None = None

    def text(self) -> str:
        """The rule in words, as the report's table and the Methods print it.

        Examples
        --------
        >>> RULES["SM2"].text()
        'the lower limit of the 95% CI is at least 0.95 (interval decides; an upper limit below 0.95: not met; an interval holding it: inconclusive)'
        >>> RULES["H1a"].text()
        'P < .05 with the effect in the claimed direction (less) (test decides)'

        A threshold on P is written as JAMA writes P values, without the leading zero
        (``P < .05``); alpha itself, a level, is written ``alpha = 0.05``.
        """
        if self.condition is not None:
            return self.condition.format(alpha=p_threshold(self.alpha), threshold=self.threshold) + f" ({'test' if self.decides == 'p' else self.decides} decides)"
        if self.decides == "p":
            way = "" if self.direction == "two-sided" else f" with the effect in the claimed direction ({self.direction})"
            return f"P < {p_threshold(self.alpha)}{way} (test decides)"
        if self.decides == "interval":
            side = (("lower limit", "at least", "an upper limit below") if self.direction == "greater"
                    else ("upper limit", "at most", "a lower limit above"))  # fmt: skip
            return (f"the {side[0]} of the 95% CI is {side[1]} {self.threshold:g} (interval decides; {side[2]} "
                    f"{self.threshold:g}: {NEGATIVE[self.kind]}; an interval holding it: inconclusive)")
        relation = {"greater": "is at least", "less": "is below"}.get(self.direction, "equals")
        return f"the estimate {relation} the threshold (point decides: no sampling interval)"

    def columns(self) -> dict[str, object]:
        """The rule as the columns :data:`RULE_COLUMNS` of a verdicts table."""
        data = asdict(self)
        # near_alpha: how close to alpha a P gets a note (claims.near_alpha_notes), where a P decides
        return {"test": data["test"], "decides": data["decides"], "alpha": data["alpha"],
                "near_alpha": NEAR_ALPHA if self.decides == "p" else None, "direction": data["direction"],
                "threshold": data["threshold"], "rule": self.text()}  # fmt: skip



def sm2_claim_text(category_max: float, total_max: float) -> str:
    """Success Metric 2's claim at its two SD thresholds, in words (the one wording every output prints).

    >>> sm2_claim_text(0.4, 1.0)
    'items with a mean category SD of at most 0.40 and a total SD of at most 1.0 (Exp 5)'
    """
    return f"items with a mean category SD of at most {category_max:.2f} and a total SD of at most {total_max:.1f} (Exp 5)"

#: The PRD's pre-specified hypotheses (seed 000, 7.1.3-7.3.3) and success metrics (section 1).
RULES: dict[str, Rule] = {r.id: r for r in (
    Rule("H1a", "G2 (rubric) has a lower SD of repeated totals than G1 (non-rubric)", "hypothesis",
         "Mann-Whitney U (two-sided, protocol)", "p", "less", 0.05),
    Rule("H1b", "G2 has a lower MAE from the target total than G1", "hypothesis",
         "Wilcoxon signed-rank paired by transcript (two-sided)", "p", "less", 0.05),
    Rule("H1c", "G2's score distribution is closer to the targets' than G1's", "hypothesis",
         "KL divergence D(target || G2) minus D(target || G1), cluster-bootstrap 95% CI over transcripts", "interval",
         "less", None, 0.0),
    Rule("H2", "chain-of-thought prompting has a lower SD than zero-shot and few-shot", "hypothesis",
         "Friedman test, then the study's post hoc test and adjustment", "p", "less", 0.05, condition=
         "Friedman P < {alpha}, and the chain-of-thought prompt has the lowest median SD with an adjusted post hoc "
         "P < {alpha} against every other prompt"),
    Rule("H3", "the LLMs differ in the SD of repeated totals", "hypothesis",
         "Friedman test of per-transcript SDs", "p", "two-sided", 0.05),
    Rule("SM1", "significant differences between conditions (Exp 1, 2 and 3)", "metric",
         "H1a's, H2's and H3's omnibus tests", "p", "two-sided", 0.05, condition=
         "every one of the three tests P < {alpha}"),
    Rule("SM2", sm2_claim_text(SM2_CATEGORY_MAX, SM2_TOTAL_MAX), "metric",
         "share of transcripts, Wilson 95% CI", "interval", "greater", None, SM2_TARGET),
    Rule("SM3", "Pearson r of mean G2 total with target (Exp 1)", "metric",
         "Pearson r, Fisher z 95% CI", "interval", "greater", None, 0.7),
    Rule("SM4", "reasoning of at least 15 real transcripts reviewed (Exp 4)", "metric",
         "count of coded transcripts", "point", "greater", None, 15, condition="at least {threshold:g} transcripts coded"),
    Rule("SM5", "a method quantifying score uncertainty explored (Exp 5)", "metric",
         "an uncertainty analysis reported", "point", "greater", None, 1, condition=
         "at least one uncertainty analysis reported"),
    Rule("SM6", "no detrimental difference across demographic strata", "metric",
         "Kruskal-Wallis tests across each stratum's levels, Holm", "p", "two-sided", 0.05, condition=
         "no stratum level significantly worse at Holm-adjusted P < {alpha}, every level with at least "
         f"{MIN_PER_LEVEL} transcripts (fewer: inconclusive, as no test can show a difference there)"),
    Rule("KAPPA", "inter-coder Cohen's kappa of a coding dimension of at least 0.70 (Exp 4, 7.4.5)", "metric",
         "Cohen's kappa, 95% CI", "interval", "greater", None, 0.7),
    Rule("SM7", "all planned experiments completed", "metric",
         "count of analysable experiments", "point", "greater", None, 4, condition=
         "all {threshold:g} judged experiments analysable"),
)}  # fmt: skip


def rule(rule_id: str, **changes: object) -> Rule:
    """The rule ``rule_id`` with the study's own settings (``alpha``, ``threshold``) in place of the defaults."""
    return replace(RULES[rule_id], **{k: v for k, v in changes.items() if v is not None})


def verdict(rule: Rule, *, p_value: float | None = None, estimate: float | None = None, ci_low: float | None = None,
            ci_high: float | None = None, alpha: float | None = None, threshold: float | None = None) -> str:
    """The word the rule gives this evidence: supported/met, not supported/not met, or inconclusive.

    Missing evidence (NaN) gives :data:`NOT_MEASURABLE`. ``alpha`` and ``threshold`` override the rule's.

    Examples
    --------
    >>> verdict(RULES["H1a"], p_value=0.066, estimate=-0.5)
    'not supported'
    >>> verdict(RULES["SM3"], estimate=0.99, ci_low=0.98, ci_high=1.0)
    'met'
    >>> verdict(RULES["H1c"], estimate=-0.28, ci_low=-0.90, ci_high=0.34)
    'inconclusive'
    """
    alpha = rule.alpha if alpha is None else alpha
    threshold = rule.threshold if threshold is None else threshold
    yes, no = POSITIVE[rule.kind], NEGATIVE[rule.kind]

    def missing(*values: float | None) -> bool:
        return any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)

    if rule.decides == "p":
        if missing(p_value):
            return NOT_MEASURABLE
        pointing = (rule.direction == "two-sided" or (estimate is not None and not missing(estimate)
                    and (estimate < 0 if rule.direction == "less" else estimate > 0)))  # fmt: skip
        return yes if p_value < alpha and pointing else no
    if rule.decides == "interval":
        if missing(ci_low, ci_high):
            return NOT_MEASURABLE
        low, high = (ci_low, ci_high) if rule.direction == "greater" else (-ci_high, -ci_low)
        bound = threshold if rule.direction == "greater" else -threshold
        return yes if low >= bound else no if high < bound else INCONCLUSIVE
    if missing(estimate):
        return NOT_MEASURABLE
    ok = estimate >= threshold if rule.direction == "greater" else estimate < threshold if rule.direction == "less" else estimate == threshold
    return yes if ok else no


def verdict_row(rule: Rule, value: str, verdict_word: str, **extra: object) -> dict[str, object]:
    """One row of a verdicts table: the claim, the value shown, the rule's columns and the verdict."""
    return {"id": rule.id, "claim": rule.claim, "value": value, **rule.columns(), "verdict": verdict_word, **extra}


def verdicts_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows of :func:`verdict_row` as a table with the columns in one order."""
    return pd.DataFrame(rows, columns=["id", "claim", "value", *RULE_COLUMNS, "verdict"])
