"""Judge confidence and its calibration.

:mod:`~hce.stats.calibration.confidence` reads confidences from an attempt log (token
logprobs, repeated votes, verbal levels); :mod:`~hce.stats.calibration.metrics` scores them
against outcomes (:mod:`~hce.stats.calibration.outcomes`: agreement with the mode or a repeat; ECE, MCE, Brier score and its decomposition, log loss, reliability
tables). The reliability diagram is a figure: :func:`hce.report.figures.reliability_diagram`.
"""

from hce.stats.calibration.confidence import (
    ID_COLUMNS,
    LOGPROBS_ARE,
    VERBAL_DEFAULT,
    LogprobsAre,
    ScoreScale,
    confidence_spread,
    confidence_table,
    logprob_confidence,
    sampling_distribution,
    verbal_confidence,
    vote_confidence,
    vote_table,
)
from hce.stats.calibration.outcomes import agrees_with_mode, agrees_with_repeat
from hce.stats.calibration.metrics import (
    STRATEGIES,
    Strategy,
    brier_score,
    calibration_metrics,
    expected_calibration_error,
    reliability_table,
)

__all__ = [
    "ID_COLUMNS", "LOGPROBS_ARE", "STRATEGIES", "VERBAL_DEFAULT", "LogprobsAre", "ScoreScale", "Strategy",
    "agrees_with_mode", "agrees_with_repeat", "brier_score", "calibration_metrics", "confidence_spread",
    "confidence_table", "expected_calibration_error", "logprob_confidence", "reliability_table",
    "sampling_distribution", "verbal_confidence", "vote_confidence", "vote_table",
]  # fmt: skip


def __getattr__(name: str):
    """``reliability_diagram`` moved to :mod:`hce.report.figures` (deprecated alias)."""
    if name == "reliability_diagram":
        from hce.stats import _moved

        return _moved(name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
