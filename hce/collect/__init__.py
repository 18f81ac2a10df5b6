"""The collection layer: designs -> OpenAI-compatible calls -> the attempt log."""

from hce._lazy import import_public

# Every public name and the module that defines it. A module is imported at the first use of
# one of its names (PEP 562): `hce sim-server` needs the simulator, not the openai client
# (half a second of imports) that the runner and batch modules load.
_EXPORTS = {
    "hce.collect.batch": (
        "BatchSummary", "CancelSummary", "cancel_batches", "cancel_batches_async", "run_batch", "run_batch_async",
    ),
    "hce.collect.client": ("CallResult", "FatalCallError", "JudgeClient"),
    "hce.collect.design": ("CustomPrompt", "Design", "Endpoint", "load_design"),
    "hce.collect.estimates": ("estimate",),
    "hce.collect.run_summary": ("RunSummary",),
    "hce.collect.runner": ("run", "run_async"),
    "hce.collect.schema": ("SchemaError",),
    "hce.collect.sim_batch": ("BatchSettings",),
    "hce.collect.sim_judge": ("SimJudge",),
    "hce.collect.sim_server": ("SimServer",),
    "hce.collect.sim_settings": ("Faults", "Profile"),
}  # fmt: skip
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

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
    if name in _HOME:
        return import_public(globals(), _HOME, name)
    if name in _MOVED_TO_STUDY:
        raise AttributeError(f"hce.collect.{name} moved to hce.study.{name}")
    raise AttributeError(f"module 'hce.collect' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
