"""The smallest difference between two conditions' mean scores a study can detect, and its power.

A judge study compares conditions (prompts, models) by their mean scores over items, each item
judged ``n_attempts`` times under each condition. Its precision depends on three variance
components, which a pilot estimates (the lmer fit ``score ~ condition + (1 | item) + (1 |
item:condition)``): the items' spread (``item``), how differently items respond to the
conditions (``item:condition``), and the attempt-to-attempt noise (``residual``).
:func:`mde` gives the minimum detectable difference of a design, :func:`power_difference` the
power of a design against a given difference, each over a grid of ``n_items`` x ``n_attempts``
with each cell's calls and cost, the cheapest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._validate import statistic

__all__ = ["mde", "planning_components", "power_difference"]

_LOGISTIC = np.pi**2 / 3  # variance of the standard logistic: the latent residual of a logit GLMM
_KEYS = ("item", "item:condition", "residual")


@dataclass(frozen=True)
class _Components:
    """Variances of the planning model, and for 0/1 verdicts the reference proportion."""

    item: float
    interaction: float
    residual: float
    binary: bool
    baseline: float | None  # proportion of the reference condition (0/1 verdicts)
    source: str


@statistic(keys=("condition", "item"), numbers=("score",))
def planning_components(
    data: pd.DataFrame,
    *,
    condition: str = "condition_id",
    score: str = "total",
    item: str = "item_id",
    binary: bool | None = None,
) -> pd.DataFrame:
    """The variance components a pilot gives the planning of a two-condition comparison.

    Parameters
    ----------
    data : DataFrame
        A pilot attempt log (:func:`hce.read_log`), long format, >= 2 conditions and >= 2
        attempts per item and condition.
    condition : str, default "condition_id"
        Condition column.
    score : str, default "total"
        Score column, or a 0/1 verdict.
    item : str, default "item_id"
        Item column.
    binary : bool, optional
        Whether the score is a 0/1 verdict; default: True when it holds only 0 and 1.

    Returns
    -------
    DataFrame
        ``component`` (``item``, ``item:condition``, ``residual``; for 0/1 verdicts also
        ``p_reference``, the proportion of a typical item at the conditions' mean log-odds),
        ``estimate``, ``scale`` (``score`` or ``log-odds``), ``method``.

    Notes
    -----
    The REML fit of ``score ~ condition + (1 | item) + (1 | item:condition)``
    (:func:`hce.stats.lmer`); for 0/1 verdicts the logit GLMM (:func:`hce.stats.glmer`),
    whose latent residual is the logistic variance pi^2/3.

    References
    ----------
    .. [1] Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
       models using lme4. Journal of Statistical Software 67(1).
    .. [2] Nakagawa, S., & Schielzeth, H. (2010). Repeatability for Gaussian and non-Gaussian
       data. Biological Reviews 85, 935-956.

    Examples
    --------
    >>> from hce.stats import planning_components, simulated_log
    >>> log = simulated_log(n_items=12, n_attempts=3, noise={"A": 0.5, "B": 1.0}, error_rate=0,
    ...                     random_state=3)
    >>> planning_components(log)[["component", "estimate"]].round(3)
            component  estimate
    0            item     0.845
    1  item:condition     0.172
    2        residual     1.667
    """
    from hce.stats.mixed import glmer, lmer  # the mixed models load only when a pilot is fitted

    data = data.dropna(subset=[score, condition, item])
    if binary is None:
        binary = bool(data[score].isin([0, 1]).all())
    n_conditions = data[condition].nunique()
    if n_conditions < 2:
        raise DataError(f"column {condition!r}: the pilot has {n_conditions} condition(s); the item x condition "
                        "variance needs at least 2 (or give components=)")  # fmt: skip
    if data.groupby([item, condition], observed=True).size().max() < 2:
        raise DataError(f"the pilot has one attempt per {item} x {condition} cell, so the attempt noise cannot be told "
                        "from the item x condition variance; a pilot needs >= 2 attempts per cell (or give components=)")
    frame = data[[score, condition, item]].astype({condition: str, score: float})
    formula = f"{score} ~ {condition} + (1 | {item}) + (1 | {item}:{condition})"
    if binary:
        if not frame[score].isin([0, 1]).all():
            raise DataError(f"column {score!r}: binary=True needs 0/1 verdicts, found {sorted(set(frame[score]) - {0, 1})[:3]}")
        fit = glmer(formula, frame)
        beta = fit.fixef()["estimate"].to_numpy()
        # conditional proportion of a typical item (random effects 0) at the conditions' mean log-odds
        extra = [("p_reference", float(special.expit(beta[0] + beta[1:].sum() / len(beta))))]
        method = f"glmer {formula} (logit); residual pi^2/3"
    else:
        fit, extra, method = lmer(formula, frame), [], f"lmer {formula} (REML)"
    vc = fit.varcorr().set_index("group")["vcov"]
    residual = _LOGISTIC if binary else float(vc["Residual"])
    rows = [("item", float(vc[item])), ("item:condition", float(vc[f"{item}:{condition}"])), ("residual", residual),
            *extra]  # fmt: skip
    out = pd.DataFrame(rows, columns=["component", "estimate"])
    out["scale"], out["method"] = "log-odds" if binary else "score", method
    return out


def _from_pilot(pilot: pd.DataFrame, condition: str, score: str, item: str, binary: bool | None) -> _Components:
    table = planning_components(pilot, condition=condition, score=score, item=item, binary=binary)
    est = table.set_index("component")["estimate"]
    binary = table["scale"].iloc[0] == "log-odds"
    return _Components(est["item"], est["item:condition"], est["residual"], binary,
                       est["p_reference"] if binary else None, f"pilot {table['method'].iloc[0]}")  # fmt: skip


def _given(components: Mapping[str, float], binary: bool | None, baseline: float | None) -> _Components:
    unknown = set(components) - set(_KEYS)
    if unknown:
        raise DataError(f"components: unknown keys {sorted(unknown)}; give {list(_KEYS)}")
    binary = bool(binary)
    needed = _KEYS[:2] if binary else _KEYS
    missing = [k for k in needed if k not in components]
    if missing:
        raise DataError(f"components: missing {missing} (variances of {list(needed)})")
    values = {k: components.get(k, _LOGISTIC) for k in _KEYS}
    for key, value in values.items():
        if not (np.isfinite(value) and value >= 0):
            raise DataError(f"components[{key!r}]={value!r} must be a variance >= 0")
    if binary and baseline is None:
        baseline = 0.5
    return _Components(values["item"], values["item:condition"], values["residual"], binary, baseline,
                       "given components")  # fmt: skip


def _ints(name: str, values: int | Sequence[int], minimum: int) -> list[int]:
    seq = [values] if np.isscalar(values) else list(values)
    if not seq or any(not isinstance(v, (int, np.integer)) or v < minimum for v in seq):
        raise DataError(f"{name}={values!r} must be integers >= {minimum}")
    return [int(v) for v in seq]


def _error(c: _Components, n: int, m: int, paired: bool) -> tuple[float, int]:
    """Standard error of the difference of two conditions' means, and its t test's df.

    Paired: item i's difference of its two condition means has variance 2 (s2_ic + s2_e / m),
    and the t test of the n differences has n - 1 df. Unpaired (n other items per condition):
    each item mean has variance s2_i + s2_ic + s2_e / m, the two-sample t test 2n - 2 df.
    """
    if paired:
        return float(np.sqrt(2 * (c.interaction + c.residual / m) / n)), n - 1
    return float(np.sqrt(2 * (c.item + c.interaction + c.residual / m) / n)), 2 * n - 2


def _power(delta: float, se: float, df: int, alpha: float) -> float:
    """Two-sided power of the t test: both tails of the noncentral t with ncp delta / se."""
    crit = stats.t.ppf(1 - alpha / 2, df)
    ncp = delta / se
    # far in the upper tail SciPy's noncentral t cdf can return NaN for what is 0
    return float(np.nan_to_num(stats.nct.sf(crit, df, ncp)) + np.nan_to_num(stats.nct.cdf(-crit, df, ncp)))


def _detectable(se: float, df: int, alpha: float, power: float) -> float:
    """The difference whose two-sided power is ``power``: the root of :func:`_power`."""
    if se == 0:
        return 0.0
    # at ncp = t_crit + 2 z_power + 2 the power is above ``power`` for any df >= 1
    high = se * (stats.t.ppf(1 - alpha / 2, df) + 2 * stats.norm.ppf(power) + 2)
    return float(optimize.brentq(lambda d: _power(d, se, df, alpha) - power, 0.0, high, xtol=1e-12 * se))


def _grid(
    pilot, condition, score, item, n_items, n_attempts, alpha, paired, components, binary, baseline, cost_per_attempt
):
    """The components and each cell's standard error, df, calls and cost: the two functions' common part."""
    if not 0 < alpha < 1:
        raise DataError(f"alpha={alpha!r} must be strictly between 0 and 1")
    if (pilot is None) == (components is None):
        raise DataError("give a pilot log or components=, not both and not neither")
    if cost_per_attempt is not None and not (np.isfinite(cost_per_attempt) and cost_per_attempt >= 0):
        raise DataError(f"cost_per_attempt={cost_per_attempt!r} must be a number >= 0 (USD per attempt)")
    if baseline is not None and not 0 < baseline < 1:
        raise DataError(f"baseline={baseline!r} must be a proportion strictly between 0 and 1")
    comps = (_given(components, binary, baseline) if components is not None
             else _from_pilot(pilot, condition, score, item, binary))  # fmt: skip
    if baseline is not None and comps.binary:
        comps = _Components(comps.item, comps.interaction, comps.residual, True, baseline, comps.source)
    rows = []
    for n, m in product(_ints("n_items", n_items, 2), _ints("n_attempts", n_attempts, 1)):
        se, df = _error(comps, n, m, paired)
        calls = 2 * n * m  # both conditions; unpaired: n items under each
        rows.append({"n_items": n, "n_attempts": m, "se": se, "df": df, "calls": calls,
                     "cost_usd": calls * cost_per_attempt if cost_per_attempt is not None else np.nan})
    scale = "log-odds (GLMM latent scale)" if comps.binary else "score"
    method = (f"{'paired' if paired else 'unpaired'} t test on item means, noncentral t; {comps.source}; "
              f"s2_item={comps.item:.4g}, s2_item:condition={comps.interaction:.4g}, s2_residual={comps.residual:.4g}; "
              f"difference on the {scale} scale")  # fmt: skip
    return comps, pd.DataFrame(rows), method


def _proportions(frame: pd.DataFrame, comps: _Components, column: str) -> pd.DataFrame:
    """For 0/1 verdicts: the reference proportion and the one a difference of ``column`` log-odds implies."""
    if comps.binary:
        frame["p_reference"] = comps.baseline
        frame["p_detectable"] = special.expit(special.logit(comps.baseline) + frame[column])
    return frame


@keywords_checked
def mde(
    pilot: pd.DataFrame | None = None,
    *,
    condition: str = "condition_id",
    score: str = "total",
    item: str = "item_id",
    n_items: int | Sequence[int],
    n_attempts: int | Sequence[int],
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    components: Mapping[str, float] | None = None,
    binary: bool | None = None,
    baseline: float | None = None,
    cost_per_attempt: float | None = None,
) -> pd.DataFrame:
    """Minimum detectable difference between two conditions' mean scores, over a design grid.

    Parameters
    ----------
    pilot : DataFrame, optional
        A pilot attempt log (:func:`hce.read_log`), long format, >= 2 conditions and >= 2
        attempts per item and condition; rows flagged in ``error_flag`` are left out. Or give
        ``components``.
    condition : str, default "condition_id"
        Condition column of the pilot.
    score : str, default "total"
        Score column: a score, or a 0/1 verdict (then the difference is in log-odds).
    item : str, default "item_id"
        Item column of the pilot.
    n_items : int or list of int
        Items per condition of the planned study; a list gives one row per value.
    n_attempts : int or list of int
        Attempts per item and condition; a list gives one row per value.
    alpha : float, default 0.05
        Two-sided significance level.
    power : float, default 0.8
        Power the difference is detected with.
    paired : bool, default True
        The same items under both conditions (a paired t test on the items' differences);
        False: other items under each (a two-sample t test on item means).
    components : mapping, optional
        Variances instead of a pilot: ``{"item": .., "item:condition": .., "residual": ..}``
        (for 0/1 verdicts the latent-scale ``item`` and ``item:condition``; the residual is
        the logistic pi^2/3).
    binary : bool, optional
        Whether the score is a 0/1 verdict; default: read from the pilot (only 0 and 1), and
        False with ``components``.
    baseline : float, optional
        0/1 verdicts: the reference proportion at which the implied proportions are stated;
        default the pilot's (a typical item at the conditions' mean log-odds), 0.5 with
        ``components``.
    cost_per_attempt : float, optional
        USD per attempt (e.g. the pilot's mean ``cost_usd``): each row's ``cost_usd``.

    Returns
    -------
    DataFrame
        One row per (n_items, n_attempts), the cheapest first (fewest calls without a cost):
        ``n_items, n_attempts, estimate`` (the minimum detectable difference), ``se`` (of
        the difference), ``df, calls`` (both conditions), ``cost_usd``, ``power, alpha``,
        ``method``; for 0/1 verdicts also ``p_reference, p_detectable`` (the proportions the
        log-odds difference implies).

    Notes
    -----
    Model: y_ijk = mu + c_j + a_i + (ac)_ij + e_ijk (item i, condition j, attempt k), with
    variances s2_item, s2_item:condition, s2_residual: the REML fit of ``score ~ condition +
    (1 | item) + (1 | item:condition)`` (:func:`hce.stats.lmer`). The difference of the two
    conditions' means has SE sqrt(2 (s2_ic + s2_e / m) / n) paired, on n - 1 df, and
    sqrt(2 (s2_i + s2_ic + s2_e / m) / n) unpaired, on 2n - 2 df; in a balanced design the
    paired SE is lmer's SE of the condition coefficient. The MDE is the delta at which the
    two-sided t test has the asked power: P(abs(T) > t_(1 - alpha/2, df)) = power with T
    noncentral t with ncp delta / SE (both tails, as statsmodels' ``TTestPower``; R's
    ``power.t.test(strict = TRUE)``).

    0/1 verdicts: the same on the latent scale of the logit GLMM (``glmer``), with residual
    variance pi^2/3 per attempt (the threshold model), so the MDE is a log-odds difference
    and ``p_detectable`` the proportion it implies from ``p_reference``; an approximation,
    since the mean of 0/1 verdicts is not linear in the log-odds.

    References
    ----------
    .. [1] Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences (2nd ed.).
       Erlbaum, ch. 2.
    .. [2] Brennan, R. L. (2001). Generalizability Theory. Springer, ch. 4 (the error
       variance of a mean over items and attempts).
    .. [3] Nakagawa, S., & Schielzeth, H. (2010). Repeatability for Gaussian and non-Gaussian
       data. Biological Reviews 85, 935-956 (the latent scale, pi^2/3).

    Examples
    --------
    >>> from hce.stats import mde
    >>> res = mde(components={"item": 1.0, "item:condition": 0.1, "residual": 0.8},
    ...           n_items=[30, 60], n_attempts=[1, 5], cost_per_attempt=0.002)
    >>> res[["n_items", "n_attempts", "estimate", "calls", "cost_usd"]].round(3)
       n_items  n_attempts  estimate  calls  cost_usd
    0       30           1     0.710     60      0.12
    1       60           1     0.493    120      0.24
    2       30           5     0.382    300      0.60
    3       60           5     0.265    600      1.20
    """
    if not 0 < power < 1:
        raise DataError(f"power={power!r} must be strictly between 0 and 1")
    comps, grid, method = _grid(pilot, condition, score, item, n_items, n_attempts, alpha, paired, components, binary,
                                baseline, cost_per_attempt)  # fmt: skip
    grid.insert(2, "estimate", [_detectable(se, df, alpha, power) for se, df in zip(grid["se"], grid["df"])])
    grid["power"], grid["alpha"], grid["method"] = power, alpha, method
    grid = _proportions(grid, comps, "estimate")
    return grid.sort_values(["calls", "estimate"], kind="stable").reset_index(drop=True)


@keywords_checked
def power_difference(
    pilot: pd.DataFrame | None = None,
    *,
    delta: float,
    condition: str = "condition_id",
    score: str = "total",
    item: str = "item_id",
    n_items: int | Sequence[int],
    n_attempts: int | Sequence[int],
    alpha: float = 0.05,
    target_power: float = 0.8,
    paired: bool = True,
    components: Mapping[str, float] | None = None,
    binary: bool | None = None,
    baseline: float | None = None,
    cost_per_attempt: float | None = None,
) -> pd.DataFrame:
    """Power to detect a given difference between two conditions' mean scores, over a design grid.

    Parameters
    ----------
    pilot : DataFrame, optional
        A pilot attempt log, as in :func:`mde`; or give ``components``.
    delta : float
        The difference of the two conditions' mean scores to detect (log-odds for 0/1
        verdicts).
    condition, score, item : str
        Columns of the pilot, as in :func:`mde` (defaults ``condition_id``, ``total``,
        ``item_id``).
    n_items, n_attempts : int or list of int
        The design grid, as in :func:`mde`.
    alpha : float, default 0.05
        Two-sided significance level.
    target_power : float, default 0.8
        Power a design must reach to be listed first (column ``reached``).
    paired, components, binary, baseline, cost_per_attempt
        As in :func:`mde` (defaults True, None, None, None, None).

    Returns
    -------
    DataFrame
        One row per (n_items, n_attempts): the designs reaching ``target_power`` first,
        cheapest first (so the first row is the cheapest design that reaches it), then the
        others: ``n_items, n_attempts, estimate`` (power), ``reached, delta, se, df, calls,
        cost_usd, alpha, method``; for 0/1 verdicts ``p_reference, p_detectable``.

    Notes
    -----
    Power of the two-sided t test, P(abs(T) > t_(1 - alpha/2, df)), T noncentral t with ncp
    delta / SE; the SE and df as in :func:`mde`, whose MDE is the delta where this power
    equals ``power``.

    References
    ----------
    .. [1] Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences (2nd ed.).
       Erlbaum, ch. 2.

    Examples
    --------
    >>> from hce.stats import power_difference
    >>> res = power_difference(components={"item": 1.0, "item:condition": 0.1, "residual": 0.8},
    ...                        delta=0.4, n_items=[30, 60], n_attempts=[1, 5])
    >>> res[["n_items", "n_attempts", "estimate", "reached", "calls"]].round(3)
       n_items  n_attempts  estimate  reached  calls
    0       30           5     0.836     True    300
    1       60           5     0.988     True    600
    2       30           1     0.352    False     60
    3       60           1     0.622    False    120
    """
    if not (isinstance(delta, (int, float)) and np.isfinite(delta)):
        raise DataError(f"delta={delta!r} must be a finite number")
    if not 0 < target_power < 1:
        raise DataError(f"target_power={target_power!r} must be strictly between 0 and 1")
    comps, grid, method = _grid(pilot, condition, score, item, n_items, n_attempts, alpha, paired, components, binary,
                                baseline, cost_per_attempt)  # fmt: skip
    grid.insert(2, "estimate", [_power(abs(delta), se, df, alpha) if se > 0 else 1.0
                                for se, df in zip(grid["se"], grid["df"])])  # fmt: skip
    grid.insert(3, "reached", grid["estimate"] >= target_power)
    grid.insert(4, "delta", float(delta))
    grid["alpha"], grid["method"] = alpha, method
    grid = _proportions(grid, comps, "delta")
    if not grid["reached"].any():
        warn(f"no design of the grid reaches power {target_power} against a difference of {delta}; "
             "add items or attempts", HceWarning)  # fmt: skip
    return grid.sort_values(["reached", "calls"], ascending=[False, True], kind="stable").reset_index(drop=True)
