"""The collection layer: designs -> OpenAI-compatible calls -> the attempt log."""

from hce.collect.batch import BatchSummary, CancelSummary, cancel_batches, cancel_batches_async, run_batch, run_batch_async
from hce.collect.client import CallResult, FatalCallError, JudgeClient
from hce.collect.design import Design, Endpoint, load_design
from hce.collect.partition import partition
from hce.collect.runner import RunSummary, estimate, run, run_async
from hce.collect.schema import SchemaError
from hce.collect.sim import Faults, Profile, SimJudge, SimServer
from hce.collect.sim_batch import BatchSettings
from hce.collect.study import load_study, plan, run_study, status
from hce.collect.synthetic import draw_targets
from hce.collect.transcripts import load_transcripts

__all__ = [
    "BatchSettings",
    "BatchSummary",
    "CallResult",
    "CancelSummary",
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
    "draw_targets",
    "estimate",
    "load_design",
    "load_study",
    "load_transcripts",
    "partition",
    "plan",
    "run",
    "run_async",
    "run_batch",
    "run_batch_async",
    "run_study",
    "status",
]
