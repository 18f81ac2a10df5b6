"""A small Inspect AI evaluation log (``--log-format json``), as the docs' import example reads it."""

from __future__ import annotations


def inspect_log() -> dict:
    """One sample of task ``meds`` judged in two epochs, graded C (correct) both times."""
    sample = {
        "id": 1,
        "epoch": 1,
        "output": {"model": "gpt-4o-2024-08-06", "choices": [{"message": {"content": "ok"}, "stop_reason": "stop"}]},
        "scores": {"model_graded_qa": {"value": "C", "explanation": "correct"}},
    }
    return {"eval": {"task": "meds", "model": "openai/gpt-4o"}, "samples": [sample, {**sample, "epoch": 2}]}
