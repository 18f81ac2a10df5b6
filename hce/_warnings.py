"""Warnings that point at the user's code, however deep inside hce they are raised."""

from __future__ import annotations

import sys
import warnings


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` attributed to the first calling frame outside the hce package."""
    frame, level = sys._getframe(1), 2  # level 1 is this function, 2 its caller
    # asyncio's frames too: a warning raised in a run's worker task belongs to the line that started the run.
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in ("hce", "asyncio"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
