"""The settings each experiment was analysed with, saved beside the study's logs and read back.

:func:`run_study` analyses each experiment with the study's own choices (the winner rule's
post-hoc test, adjustment and alpha; the seed of every bootstrap) and hands the winner on.
The report must show what the study decided, so the run writes every analysis's effective
keyword arguments (defaults filled in) to ``analysis_settings.json`` in the study folder,
and :func:`hce.study.report.study_report` reruns each analysis with exactly those. A report
from bare logs, with no study folder, uses the defaults of :mod:`hce.study.analyses` and
says so.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hce.errors import DataError

SETTINGS_FILE = "analysis_settings.json"
# Settings that decide a result (shown in the report); the rest name columns of the log.
DECIDING = ("non_rubric", "rubric", "smoothing", "n_boot", "posthoc_method", "p_adjust_method", "require", "alpha", "r_threshold",
            "transform", "category_thresholds", "total_thresholds", "sm2_category_max", "sm2_total_max", "sm2_target", "ci_method", "method", "metadata",
            "strata", "confidence", "random_state")  # fmt: skip


def effective_settings(function: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """Every keyword argument ``function`` runs with: ``kwargs`` over its defaults, as JSON values.

    Examples
    --------
    >>> from hce.study.analyses import experiment2
    >>> effective_settings(experiment2, p_adjust_method="holm", alpha=0.01)["p_adjust_method"]
    'holm'
    """
    parameters = list(inspect.signature(function).parameters.values())[1:]  # the first is the data
    settings = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    unknown = sorted(set(kwargs) - set(settings))
    if unknown:
        renamed = getattr(function, "__renamed__", {})  # settings saved before the names changed
        hints = "".join(f"; {old!r} is now {renamed[old]!r}" for old in unknown if old in renamed)
        raise DataError(f"{function.__name__} has no setting(s) {unknown}{hints}")
    settings.update(kwargs)
    return {name: _plain(value) for name, value in settings.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, (range, tuple, list)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value


def save_settings(folder: Path, experiment_id: str, function: Callable[..., Any], log: str | None, /, **kwargs: Any) -> dict[str, Any]:
    """Record (replacing an earlier record) how ``experiment_id`` is analysed (``kwargs`` of ``function``); return the settings."""
    path = Path(folder) / SETTINGS_FILE
    saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    settings = effective_settings(function, **kwargs)
    saved[experiment_id] = {"function": function.__name__, "log": log, "settings": settings}
    path.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
    return settings


def read_settings(folder: str | Path) -> dict[str, dict[str, Any]]:
    """``analysis_settings.json`` of a study folder: experiment id -> ``function``, ``log``, ``settings``."""
    path = Path(folder) / SETTINGS_FILE
    if not path.is_file():
        return {}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(saved, dict) or not all(isinstance(v, dict) and isinstance(v.get("settings"), dict) for v in saved.values()):
        raise DataError(f"{path}: expected experiment id -> {{function, log, settings}}")
    return saved


def describe(settings: Mapping[str, Any]) -> str:
    """The deciding settings in words, e.g. ``posthoc_method = wilcoxon, p_adjust_method = holm, alpha = 0.01``."""
    shown = [(k, settings[k]) for k in DECIDING if k in settings]
    return ", ".join(f"{k} = {'[' + ', '.join(map(str, v)) + ']' if isinstance(v, list) else v}" for k, v in shown)
