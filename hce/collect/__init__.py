"""The collection layer: designs -> OpenAI-compatible calls -> the attempt log."""

from hce.collect.batch import BatchSummary, CancelSummary, cancel_batches, cancel_batches_async, run_batch, run_batch_async
from hce.collect.client import CallResult, FatalCallError, JudgeClient
from hce.collect.design import CustomPrompt, Design, Endpoint, load_design
from hce.collect.runner import RunSummary, estimate, run, run_async
from hce.collect.schema import SchemaError
from hce.collect.sim import Faults, Profile, SimJudge, SimServer
from hce.collect.sim_batch import BatchSettings

__all__ = [
    "BatchSettings",
    "BatchSummary",
    "CallResult",
    "CancelSummary",
    "CustomPrompt",
    "Design",
    "Endpoint",
    "FatalCallError",
    "Faults",
    "JudgeClient",
    "Profile",
    "RunSummary",
    "SchemaError",
    "SimJudge",
    "SimServer",
    "cancel_batches",
    "cancel_batches_async",
    "estimate",
    "load_design",
    "run",
    "run_async",
    "run_batch",
    "run_batch_async",
]

# The PRD study (configuration, partition, corpus loading, synthetic targets, the run) is the
# study layer's (hce.study); the collection layer does not know the study exists.
_MOVED_TO_STUDY = {"load_study", "plan", "run_study", "status", "draw_targets", "partition", "load_transcripts",
                   "study", "synthetic", "reasoning"}  # fmt: skip


def __getattr__(name: str):
    if name in _MOVED_TO_STUDY:
        raise AttributeError(f"hce.collect.{name} moved to hce.study.{name}")
    raise AttributeError(f"module 'hce.collect' has no attribute {name!r}")
