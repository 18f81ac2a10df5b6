"""Mapping a judge's scores to the human scale: an isotonic (monotone) fit of the human score
on the judge's, learned on the human-labelled items, with its effect on agreement measured by
cross-validation (so the improvement is not the fit's own optimism)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from scipy.optimize import isotonic_regression

from hce._checks import check_choice, require_columns
from hce.errors import DataError
from hce.stats._resample import as_generator
from hce.stats._validate import statistic
from hce.stats.ppi import _values
from hce.stats.result import AnalysisResult


def isotonic_map(f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knots (distinct judge scores, fitted human scores) of the non-decreasing least-squares
    fit of ``y`` on ``f``: tied judge scores pooled by their mean, weighted by their count, as
    scikit-learn's ``IsotonicRegression``."""
    knots, inverse, counts = np.unique(f, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    return knots, isotonic_regression(means, weights=counts.astype(float), increasing=True).x


def apply_map(knots: np.ndarray, fitted: np.ndarray, f: np.ndarray, levels: np.ndarray | None) -> np.ndarray:
    """The mapping at ``f``: linear between knots, constant beyond them (scikit-learn's
    ``out_of_bounds="clip"``); rounded to the nearest of ``levels`` for an ordinal scale."""
    out = np.interp(f, knots, fitted)
    if levels is not None:
        out = levels[np.argmin(np.abs(out[:, None] - levels[None, :]), axis=1)]
    return out


def _agreement(pred: np.ndarray, y: np.ndarray) -> dict[str, float]:
    exact = float(np.mean(pred == y))
    return {"mae": float(np.mean(np.abs(pred - y))), "rmse": float(np.sqrt(np.mean((pred - y) ** 2))),
            "bias": float(np.mean(pred - y)), "exact_agreement": exact}  # fmt: skip


@statistic(numbers=("score", "truth"))
def calibrate_to_humans(
    data: pd.DataFrame,
    *,
    score: str = "judge_score",
    truth: str = "human_score",
    method: Literal["isotonic", "ordinal"] = "isotonic",
    n_folds: int = 5,
    random_state: int | np.random.Generator | None = None,
) -> AnalysisResult:
    """Map the judge's scores to the human scale, and say how much agreement it buys.

    Parameters
    ----------
    data : DataFrame
        One row per judged item; rows with a human score are the labelled set the mapping
        is fitted on, every row with a judge score gets a calibrated score.
    score, truth : str
        Judge score and human score columns, defaults ``"judge_score"``, ``"human_score"``.
    method : {"isotonic", "ordinal"}
        ``"isotonic"`` (default): the non-decreasing least-squares fit, linear between the
        judge's observed scores. ``"ordinal"``: the same, rounded to the nearest human scale
        point seen in the labelled set (a 1-5 judge mapped to a 1-5 human scale).
    n_folds : int
        Folds of the cross-validation of agreement, default 5 (labelled rows assigned at
        random).
    %(random_state)s

    Returns
    -------
    AnalysisResult
        ``"mapping"``: ``judge_score`` -> ``calibrated`` at each distinct judge score of
        the labelled set (fitted on all of it). ``"agreement"``: rows ``"before"`` (the
        raw judge scores) and ``"after"`` (cross-validated: each fold's mapping fitted on
        the other folds), columns ``mae``, ``rmse``, ``bias``, ``exact_agreement``, ``n``.
        ``"calibrated"``: ``data`` with a ``calibrated_score`` column (NaN in the rows
        without a judge score).

    References
    ----------
    .. [1] Barlow, R. E., Bartholomew, D. J., Bremner, J. M., & Brunk, H. D. (1972).
       Statistical inference under order restrictions. Wiley.
    .. [2] Zadrozny, B., & Elkan, C. (2002). Transforming classifier scores into accurate
       multiclass probability estimates. KDD 2002, 694-699.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"judge_score": [4, 5, 5, 4, 3, 5, 4, 5, 3, 4],
    ...                    "human_score": [3, 4, 4, 3, 2, 5, 3, 4, 2, 3]})
    >>> out = calibrate_to_humans(df, random_state=0)
    >>> out["mapping"].to_dict("list")
    {'judge_score': [3.0, 4.0, 5.0], 'calibrated': [2.0, 3.0, 4.25]}
    """
    check_choice("method", method, ["isotonic", "ordinal"])
    if not isinstance(n_folds, int) or n_folds < 2:
        raise DataError(f"n_folds={n_folds!r} must be an integer >= 2")
    require_columns(data, [score, truth])
    f, y = _values(data, score), _values(data, truth)
    lab = ~np.isnan(f) & ~np.isnan(y)
    n = int(lab.sum())
    if n < 2 * n_folds:
        raise DataError(f"calibrate_to_humans: {n} rows have both {score!r} and {truth!r}; need at least {2 * n_folds} "
                        f"for {n_folds}-fold cross-validation")  # fmt: skip
    fl, yl = f[lab], y[lab]
    levels = np.unique(yl) if method == "ordinal" else None
    knots, fitted = isotonic_map(fl, yl)
    folds = as_generator(random_state).permutation(np.arange(n) % n_folds)
    cross = np.empty(n)
    for k in range(n_folds):
        held = folds == k
        cross[held] = apply_map(*isotonic_map(fl[~held], yl[~held]), fl[held], levels)
    agreement = pd.DataFrame([{"method": "before", **_agreement(fl, yl), "n": n},
                              {"method": "after", **_agreement(cross, yl), "n": n}])  # fmt: skip
    calibrated = data.assign(calibrated_score=np.where(np.isnan(f), np.nan, apply_map(knots, fitted, np.nan_to_num(f), levels)))
    mapping = pd.DataFrame({"judge_score": knots, "calibrated": apply_map(knots, fitted, knots, levels)})
    notes = [f"{method} mapping fitted on {n} labelled rows; agreement after: {n_folds}-fold cross-validated"]
    return AnalysisResult("judge scores mapped to the human scale", {"mapping": mapping, "agreement": agreement,
                                                                     "calibrated": calibrated}, notes)  # fmt: skip
