"""What a mixed-model fit that did not converge shows: its estimates, and in place of standard
errors, tests and intervals the words "did not converge", unless the caller asks for them.

A fit whose optimiser stopped before the convergence check passed (lme4's ``checkConv``,
ordinal's gradient check) sits at a point that is not the maximum likelihood: its standard
errors, p values and intervals describe that point, and would read as results. ``lmer``,
``glmer`` and ``clmm`` results therefore blank them in ``fixef()``, ``anova()``,
``contrasts()`` and ``summary()`` (``unconverged="hide"``, the default) and compute them
anyway with ``unconverged="show"``, the ``method`` column then saying so.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice
from hce.errors import DataError

Unconverged = Literal["hide", "show"]
NOT_CONVERGED = "did not converge"
_INFERENCE = ("std_error", "statistic", "df", "p_value", "p_adjusted", "ci_low", "ci_high",
              "den_df")  # fmt: skip
def check_max_iter(max_iter: int | None) -> int | None:
    """``max_iter`` as given (None: the optimiser's own limit), refused unless a positive integer."""
    if max_iter is None:
        return None
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise DataError(f"max_iter={max_iter!r} must be a positive integer or None (no cap)")
    return int(max_iter)


def shows_inference(converged: bool, unconverged: Unconverged) -> bool:
    """Whether a table of this fit carries standard errors, tests and intervals."""
    check_choice("unconverged", unconverged, ["hide", "show"])
    return converged or unconverged == "show"


def mark_inference(table: pd.DataFrame, converged: bool, unconverged: Unconverged) -> pd.DataFrame:
    """``table`` as the fit may show it: unchanged for a converged fit; else its inference
    columns blanked (``"hide"``) or kept with the ``method`` saying the fit did not converge."""
    if converged:
        check_choice("unconverged", unconverged, ["hide", "show"])
        return table
    out = table.copy()
    if shows_inference(converged, unconverged):
        if "method" in out:
            out["method"] = out["method"].astype(str) + " (fit did not converge)"
        return out
    for column in _INFERENCE:
        if column in out:
            out[column] = np.nan
    out["method"] = f"{NOT_CONVERGED}: estimates only (unconverged='show' gives tests)"
    return out
