"""The collection layer: designs -> OpenAI-compatible calls -> the attempt log."""

from hce._lazy import import_public

# Every public name and the module that defines it. The simulator's names are aliases kept for
# code written before it became its own package (hce.sim); collect itself never imports it. A module is imported at the first use of
# one of its names (PEP 562): `hce sim-server` needs the simulator, not the openai client
# (half a second of imports) that the runner and batch modules load.
_EXPORTS = {
    "hce.collect.running.batch": (
        "BatchSummary", "CancelSummary", "cancel_batches", "cancel_batches_async", "run_batch", "run_batch_async",
    ),
    "hce.collect.call.client": ("CallResult", "FatalCallError", "JudgeClient"),
    "hce.collect.design.design": ("CustomPrompt", "Design", "Endpoint", "load_design"),
    "hce.collect.estimates": ("estimate",),
    "hce.collect.running.run_summary": ("RunSummary",),
    "hce.collect.running.runner": ("run", "run_async"),
    "hce.collect.design.schema": ("SchemaError",),
    "hce.sim.batch": ("BatchSettings",),
    "hce.sim.judge": ("SimJudge",),
    "hce.sim.server": ("SimServer",),
    "hce.sim.settings": ("Faults", "Profile"),
}  # fmt: skip
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

# The simulator's aliases are left out: they are documented where they live, in hce.sim.
__all__ = [
    "BatchSummary",
    "CallResult",
    "CancelSummary",
    "CustomPrompt",
    "Design",
    "Endpoint",
    "FatalCallError",
    "JudgeClient",
    "RunSummary",
    "SchemaError",
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
