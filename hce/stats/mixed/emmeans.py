"""Estimated marginal means and their pairwise contrasts, as R's emmeans computes them, for
:class:`~hce.stats.mixed.lmer_result.LmerResult`, :class:`~hce.stats.mixed.glmer_result.GlmerResult`
and :class:`~hce.stats.mixed.clmm_result.ClmmResult` (their ``emmeans`` methods).

The reference grid is every combination of the levels of the categorical fixed factors, numeric
covariates at their mean (emmeans' ``ref_grid``); a level's marginal mean averages the grid's
predictions over the other factors with equal weights, whatever the cell counts, so it is one
linear function ``l' beta`` per level. Each mean and each difference ``mean_i - mean_j`` is then
tested with the model's own standard error and df: lmerTest's Satterthwaite df or pbkrtest's
Kenward-Roger df and adjusted covariance for lmer (:mod:`hce.stats.mixed.ddf`), a Wald z
(df = inf) for glmer and clmm, as emmeans does. Family-wise adjustments are emmeans': Tukey's
studentized range for a family of ``k`` means (``ptukey(|t| sqrt 2, k, df)``, each contrast with
its own df), Bonferroni, Holm (intervals: Bonferroni, as emmeans substitutes it).

On the response scale (glmer) a mean is the inverse link of its link-scale mean, its SE by the
delta method and its interval the back-transformed link interval (``emmeans(m, ~ f, type =
"response")``); pairwise differences are of the probabilities themselves, tested with the
delta-method covariance (``pairs(regrid(emmeans(m, ~ f)))``). For clmm the means are on the
latent scale, emmeans' default ``mode = "latent"``: ``x' beta`` minus the mean threshold.

References
----------
Lenth, R. V. (2023). emmeans: Estimated Marginal Means, aka Least-Squares Means. R package
version 1.8.4 (``ref_grid``, ``emmeans``, ``pairs``, ``regrid``, ``summary.emmGrid``).
Searle, S. R., Speed, F. M., & Milliken, G. A. (1980). Population marginal means in the linear
model. The American Statistician, 34(4), 216-221.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
import patsy
from scipy import optimize, stats

from hce._checks import check_choice, check_confidence
from hce.errors import DataError, FormulaError
from hce.stats.mixed.formula import Design
from hce.stats.tests import p_adjust

Adjust = Literal["tukey", "holm", "bonferroni", "none"]
ADJUST_CHOICES = ["tukey", "holm", "bonferroni", "none"]
# emmeans' default option parens: a level holding one of these is wrapped in a contrast's name
_PARENS = re.compile(r"-|\+|/|\*")

# (standard error, df) of l' beta for a gradient l in the model's parameters
SeDf = Callable[[np.ndarray], tuple[float, float]]


def marginal_means(design: Design, factor: str) -> tuple[list, np.ndarray]:
    """The levels of ``factor`` and, per level, the row ``l`` of ``X``'s columns whose product
    with ``beta`` is its equally weighted marginal mean on the reference grid."""
    grid, levels = reference_grid(design, factor)
    x_grid = np.asarray(patsy.build_design_matrices([design.design_info], grid)[0])
    rows = np.array([x_grid[(grid[factor] == lev).to_numpy()].mean(axis=0) for lev in levels])
    return levels, rows


def reference_grid(design: Design, factor: str) -> tuple[pd.DataFrame, list]:
    """emmeans' reference grid: all level combinations of the categorical fixed factors,
    numeric covariates at their mean; and the levels of ``factor``."""
    data = design.data
    cats, numeric = {}, {}
    for f, info in design.design_info.factor_infos.items():
        column = _factor_column(f.code, data)
        if column is None:
            raise FormulaError(
                f"emmeans: fixed-effect expression {f.code!r} is not a plain column or C(column)"
            )
        if info.type == "categorical":
            cats[column] = list(info.categories)
        else:
            numeric[column] = float(data[column].mean())
    if factor not in cats:
        raise DataError(
            f"emmeans: {factor!r} is not a categorical fixed effect; choose one of {list(cats)}"
        )
    grid = pd.MultiIndex.from_product(list(cats.values()), names=list(cats)).to_frame(index=False)
    for column, value in numeric.items():
        grid[column] = value
    return grid, cats[factor]


def emmeans_table(
    factor: str,
    levels: list,
    estimates: np.ndarray,
    gradients: np.ndarray,
    se_df: SeDf,
    *,
    pairwise: bool,
    adjust: Adjust,
    confidence: float,
    method: str,
    inverse_link: tuple[Callable, Callable] | None = None,
) -> pd.DataFrame:
    """The means table or the pairwise contrasts table of one factor.

    Parameters
    ----------
    factor, levels
        The factor and its levels, in the order of ``estimates``.
    estimates : ndarray
        The marginal means on the model's (link) scale.
    gradients : ndarray
        One row per mean: its gradient in the parameters ``se_df`` takes.
    se_df : callable
        Standard error and df of a linear function of the parameters, from its gradient.
    pairwise, adjust, confidence
        As :meth:`LmerResult.emmeans`.
    method : str
        The test, for the ``method`` column.
    inverse_link : (callable, callable), optional
        ``mu(eta)`` and ``d mu / d eta``: the response scale (regridded for contrasts).
    """
    check_confidence(confidence)
    check_choice("adjust", adjust, ADJUST_CHOICES)
    if inverse_link is not None and pairwise:  # emmeans' regrid: a new linear basis
        mean, mu_eta = inverse_link
        slope = mu_eta(estimates)
        estimates, gradients = mean(estimates), slope[:, None] * gradients
    if not pairwise:
        return _means(factor, levels, estimates, gradients, se_df, confidence, method, inverse_link)
    rows = []
    for i, j in combinations(range(len(levels)), 2):
        se, df = se_df(gradients[i] - gradients[j])
        est = float(estimates[i] - estimates[j])
        rows.append({"contrast": f"{_label(levels[i])} - {_label(levels[j])}", "estimate": est,
                     "std_error": se, "df": df, "statistic": est / se if se > 0 else np.nan})  # fmt: skip
    out = pd.DataFrame(rows, columns=["contrast", "estimate", "std_error", "df", "statistic"])
    k, m = len(levels), len(out)
    t, df = out["statistic"].to_numpy(float), out["df"].to_numpy(float)
    p = 2 * np.array([_dist(d).sf(abs(s)) for s, d in zip(t, df)])
    if adjust == "tukey":
        p = np.array([stats.studentized_range.sf(abs(s) * np.sqrt(2), k, d) for s, d in zip(t, df)])
        crit = np.array([_tukey_quantile(confidence, k, float(f"{d:.7g}")) / np.sqrt(2) for d in df])
    else:
        # emmeans' intervals for Holm are Bonferroni's: Holm adjusts a set of P values only
        level = confidence if adjust == "none" else 1 - (1 - confidence) / m
        crit = np.array([_dist(d).ppf(0.5 + level / 2) for d in df])
        p = p if adjust == "none" else np.minimum(p * m, 1.0) if adjust == "bonferroni" else p_adjust(p, "holm")
    se = out["std_error"].to_numpy(float)
    out["p_value"] = np.clip(p, 0.0, 1.0) if m else []
    out["ci_low"], out["ci_high"] = out["estimate"] - crit * se, out["estimate"] + crit * se
    scale = "; differences of probabilities (regrid)" if inverse_link is not None else ""
    family = f"; {adjust} adjustment for {k} means" if adjust != "none" else ""
    out["method"] = method + scale + family
    return out


def _means(factor, levels, estimates, gradients, se_df, confidence, method, inverse_link) -> pd.DataFrame:
    se, df = np.array([se_df(g) for g in gradients], dtype=float).reshape(-1, 2).T
    crit = np.array([_dist(d).ppf(0.5 + confidence / 2) for d in df])
    low, high = estimates - crit * se, estimates + crit * se
    if inverse_link is not None:  # back-transformed: delta-method SE, transformed interval
        mean, mu_eta = inverse_link
        se = mu_eta(estimates) * se
        estimates, low, high = mean(estimates), mean(low), mean(high)
        method += "; back-transformed to the response scale"
    return pd.DataFrame({factor: levels, "estimate": estimates, "std_error": se, "df": df,
                         "ci_low": low, "ci_high": high, "method": method})  # fmt: skip


def wald_se_df(cov: np.ndarray) -> SeDf:
    """Standard error from ``cov`` and df = inf (a Wald z), as emmeans for glmer and clmm."""
    return lambda g: (float(np.sqrt(g @ cov @ g)), np.inf)


@lru_cache(maxsize=256)
def _tukey_quantile(confidence: float, k: int, df: float) -> float:
    """``qtukey(confidence, k, df)``: the secant method on the survival function from the
    df = inf quantile, about half the time of ``studentized_range.ppf`` (1.2 s a call here);
    cached, as the contrasts of a balanced design share their df (rounded to 7 digits, which
    moves the quantile by ~1e-9)."""
    q_inf = float(stats.studentized_range.ppf(confidence, k, np.inf))
    if np.isinf(df):
        return q_inf
    start = q_inf * (1 + 1 / df)  # the quantile grows as df falls
    root = optimize.root_scalar(lambda q: stats.studentized_range.sf(q, k, df) - (1 - confidence),
                                x0=start, x1=1.01 * start, method="secant", xtol=1e-10)  # fmt: skip
    return float(root.root)


def _dist(df: float):
    return stats.norm if np.isinf(df) else stats.t(df)


def _label(level) -> str:
    text = str(level)
    return f"({text})" if _PARENS.search(text) else text


def _factor_column(code: str, data: pd.DataFrame) -> str | None:
    """The data column behind a patsy factor ``x`` or ``C(x)``, else None."""
    match = re.fullmatch(r"C\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", code)
    column = match.group(1) if match else code
    return column if column in data.columns else None
