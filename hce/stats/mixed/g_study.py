"""Variance components and generalizability coefficients (G theory) from a REML fit.

:func:`variance_components` fits the fully crossed random model of a G study, ``lmer``'s REML
likelihood computed from the facet-cell table (:mod:`hce.stats.mixed.cell_fit`: exact, and
the same table in pandas and in every engine), and reports each component with its standard error and
interval, and G and Phi for a chosen number of attempts, with the intervals of
``hce.stats.mixed.component_intervals``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from hce._checks import check_confidence, numeric_column, require_columns
from hce._docstrings import fill_doc
from hce.errors import DataError, HceWarning
from hce.stats._resample import as_generator
from hce._warnings import warn
from hce.stats._frames import EngineFrame
from hce.stats._validate import reads_frame
from hce.stats.mixed.balanced import profile_interval, strata_deviance
from hce.stats.mixed.cell_fit import CellFit, fit_cells
from hce.stats.mixed.component_intervals import (
    pivot_draws,
    profile_limits,
    ratio_interval,
    reml_covariance,
    satterthwaite_fails,
    satterthwaite_interval,
)
from hce.stats.mixed.lmer_result import _SINGULAR_TOL, LmerResult


@dataclass
class VarianceComponents:
    """A G study: variance of each facet and interaction; build with :func:`variance_components`.

    Attributes
    ----------
    components : pandas.DataFrame
        ``component`` (facet, ``a:b`` interaction or ``residual``), ``estimate`` (variance),
        ``share`` (of the total), ``std_error`` (asymptotic), ``ci_low``, ``ci_high``,
        ``df`` (Satterthwaite), ``method``.
    coefficients : pandas.DataFrame
        G and Phi for the ``n_attempts`` asked for (see :meth:`~hce.stats.VarianceComponents.d_study`).
    object : str
        The object of measurement (the first facet).
    covariance : pandas.DataFrame
        Asymptotic covariance of the estimates (component by component); rows and columns
        of components at zero are 0 (held there); all NaN when the engine gives none.
    fit : LmerResult or CellFit
        The underlying random-effects model (a ``CellFit`` (``hce.stats.mixed.cell_fit``)
        when the data were a frame of another engine, fitted from its cell table).
    facets : list of str
        The facets, the object of measurement first.
    levels : dict
        Levels of each facet other than the object, the D study's defaults.
    replicated : bool
        Whether cells hold several scores (repeated attempts), so the residual is separated
        from the highest interaction.

    Examples
    --------
    >>> from hce.stats import simulated_log, variance_components
    >>> log = simulated_log(n_items=10, n_attempts=3, noise={"A": 0.3, "B": 0.6}, random_state=1)
    >>> g = variance_components(log, score="total", facets=["item_id", "condition_id"], random_state=0)
    >>> g.components[["component", "estimate", "share"]].round(3)
                  component  estimate  share
    0               item_id     2.575  0.733
    1          condition_id     0.060  0.017
    2  item_id:condition_id     0.062  0.018
    3              residual     0.817  0.232
    >>> g.d_study(n_attempts=5, random_state=0)[["metric", "estimate"]].round(3)
      metric  estimate
    0      G     0.958
    1    Phi     0.947
    """

    components: pd.DataFrame
    coefficients: pd.DataFrame
    object: str
    facets: list[str]
    levels: dict[str, int]
    replicated: bool
    covariance: pd.DataFrame
    fit: LmerResult | CellFit = field(repr=False)
    _covariance_source: str = field(repr=False, default="")

    @fill_doc
    def d_study(
        self,
        n_attempts: int = 1,
        n_levels: dict[str, int] | None = None,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """G (relative) and Phi (absolute) coefficients for a chosen measurement design.

        Parameters
        ----------
        n_attempts : int, default 1
            Attempts averaged per condition.
        n_levels : dict, optional
            Levels averaged for each non-object facet; defaults to the numbers observed.
            ``{"prompt": 1, "model": 1}``: a score from one prompt and one model drawn at
            random (the facets are random, so item x prompt and item x model effects count
            as error).
        %(confidence)s
        %(random_state)s

        Returns
        -------
        pandas.DataFrame
            ``metric`` (``G``, ``Phi``), ``estimate``, ``ci_low``, ``ci_high``,
            ``error_variance`` (relative delta or absolute Delta), ``n_attempts``,
            ``method``.

        Notes
        -----
        With object ``p`` and component ``c`` divided by the product of ``n'_f`` over its
        facets other than ``p`` (the residual also by ``n_attempts``): relative error
        sigma2(delta) sums the components that contain ``p`` and another facet, absolute
        error sigma2(Delta) sums every component but ``p``; G = s2_p / (s2_p +
        sigma2(delta)), Phi = s2_p / (s2_p + sigma2(Delta)) (Brennan 2001, ch. 4).
        Intervals: percentiles of G and Phi over 20,000 joint draws of the components,
        each drawn from its Satterthwaite pivot ``v df / chi2_df`` (so its quantiles are its
        own interval's bounds), tied by a Gaussian copula with the correlation of
        ``covariance`` (see ``hce.stats.mixed.component_intervals``); components at 0 stay
        at 0, and those with Satterthwaite df below 1 are clamped into their profile-likelihood
        interval. NaN with the reason in ``method`` when G or Phi is fixed at 0 or 1 or no
        covariance exists.

        """
        if not isinstance(n_attempts, int) or n_attempts < 1:
            raise DataError(f"n_attempts={n_attempts!r} must be a positive integer")
        if n_attempts != 1 and not self.replicated:
            raise DataError(
                "n_attempts: the data hold one score per facet combination, so attempts are "
                "not a facet of this study; leave n_attempts=1"
            )
        check_confidence(confidence)
        relative, absolute = self._error_weights(n_attempts, n_levels)
        names = self.components["component"].tolist()
        variances = np.maximum(self.components["estimate"].to_numpy(), 0.0)
        obj = names.index(self.object)
        universe = variances[obj]
        cov = self.covariance.to_numpy()
        if not np.isnan(cov).any():
            rng = as_generator(random_state)
            limits = self.components[["ci_low", "ci_high"]].to_numpy()
            draws = pivot_draws(variances, cov, _N_DRAWS, rng, limits)
        rows = []
        for name, weights in (("G", relative), ("Phi", absolute)):
            error = float(weights @ variances)
            if np.isnan(cov).any():
                low, high, why = np.nan, np.nan, self._covariance_source
            else:
                low, high, why = ratio_interval(draws, obj, weights, confidence)
            method = f"no interval: {why}" if why else f"{_RATIO_METHOD}; {self._covariance_source}"
            rows.append(
                {
                    "metric": name,
                    "estimate": universe / (universe + error) if universe + error > 0 else np.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "error_variance": error,
                    "n_attempts": n_attempts,
                    "method": method,
                }
            )
        return pd.DataFrame(rows)

    def _error_weights(self, n_attempts: int, n_levels: dict[str, int] | None) -> tuple[np.ndarray, np.ndarray]:
        """Each component's weight in the relative and the absolute error variance of a design."""
        n_levels = {**self.levels, **(n_levels or {})}
        unknown = set(n_levels) - set(self.levels)
        if unknown:
            raise DataError(f"n_levels names {sorted(unknown)}; facets are {list(self.levels)}")
        names = self.components["component"].tolist()
        relative, absolute = np.zeros(len(names)), np.zeros(len(names))
        for c, comp in enumerate(names):
            facets = [f for f in comp.split(":") if f != self.object]
            if comp == "residual":
                relative[c] = absolute[c] = 1 / (np.prod(list(n_levels.values())) * n_attempts)
            elif facets:
                absolute[c] = 1 / np.prod([n_levels[f] for f in facets])
                relative[c] = absolute[c] if self.object in comp.split(":") else 0.0
        return relative, absolute

    @fill_doc
    def solve(
        self,
        target: float = 0.8,
        coefficient: str = "G",
        facet: str = "attempt",
        max_n: int = 50,
        n_levels: dict[str, int] | None = None,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """The smallest number of attempts (or levels of a facet) whose G or Phi reaches a target.

        Parameters
        ----------
        target : float, default 0.8
            Coefficient to reach, in (0, 1) (a number here; the retired column word ``target``
            for the object of measurement is ``item`` everywhere else).
        coefficient : {"G", "Phi"}, default "G"
            Relative (G) or absolute (Phi) coefficient, as :meth:`d_study` gives them.
        facet : str, default "attempt"
            What is varied: ``"attempt"`` (attempts averaged per cell) or a facet other than
            the object of measurement (its levels averaged: raters, prompts, items when items
            are not the object), the other facets at their observed numbers.
        max_n : int, default 50
            Largest number searched.
        n_levels : dict, optional
            Levels of the other facets, as in :meth:`d_study` (default the numbers observed);
            ``{"condition_id": 1}``: the score of an item under one condition.
        %(confidence)s
            Here: the interval of the number needed.
        %(random_state)s

        Returns
        -------
        pandas.DataFrame
            One row: ``coefficient, target, facet, estimate`` (the smallest n reaching the
            target; NaN beyond ``max_n``), ``value`` (the coefficient at that n),
            ``ci_low, ci_high`` (the interval of n; ``inf`` where the target is out of reach
            within ``max_n``), ``max_n, method``.

        Notes
        -----
        The point is the smallest n whose :meth:`d_study` coefficient (at n attempts, or
        ``n_levels={facet: n}``) is at least ``target``. Its interval comes from the same
        joint draws of the components as the coefficients' intervals (Satterthwaite pivots
        tied by a Gaussian copula, see :meth:`d_study`): for each draw the smallest n
        reaching the target, and the percentiles of those numbers (``inverted_cdf``, so
        the bounds are whole numbers). grader-variance's ``repeats_needed`` gives the point
        only.

        Examples
        --------
        >>> from hce.stats import simulated_log, variance_components
        >>> log = simulated_log(n_items=10, n_attempts=3, noise={"A": 0.3, "B": 0.6}, random_state=1)
        >>> g = variance_components(log, score="total", facets=["item_id", "condition_id"], random_state=0)
        >>> g.solve(target=0.95, random_state=0)[["coefficient", "estimate", "ci_low", "ci_high"]]  # 10 items: wide
          coefficient  estimate  ci_low  ci_high
        0           G         4     2.0      inf
        """
        if not (isinstance(target, (int, float)) and 0 < target < 1):
            raise DataError(f"target={target!r} must be strictly between 0 and 1")
        if coefficient not in ("G", "Phi"):
            raise DataError(f"coefficient={coefficient!r} must be 'G' or 'Phi'")
        if facet != "attempt" and facet not in self.levels:
            raise DataError(f"facet={facet!r} must be 'attempt' or a facet other than the object: {list(self.levels)}")
        if facet == "attempt" and not self.replicated:
            raise DataError("facet='attempt': the data hold one score per facet combination, so attempts are not a "
                            f"facet of this study; vary one of {list(self.levels)}")  # fmt: skip
        if not (isinstance(max_n, (int, np.integer)) and max_n >= 1):
            raise DataError(f"max_n={max_n!r} must be a positive integer")
        check_confidence(confidence)
        pick = 0 if coefficient == "G" else 1
        ns = range(1, int(max_n) + 1)

        def weight(n: int) -> np.ndarray:
            fixed = dict(n_levels or {})
            return (self._error_weights(n, fixed) if facet == "attempt"
                    else self._error_weights(1, {**fixed, facet: n}))[pick]  # fmt: skip

        weights = [weight(n) for n in ns]
        names = self.components["component"].tolist()
        variances = np.maximum(self.components["estimate"].to_numpy(), 0.0)
        obj = names.index(self.object)
        universe = variances[obj]
        # the same arithmetic as d_study, so the answer is the first n whose d_study estimate reaches the target
        values = [universe / (universe + float(w @ variances)) if universe + float(w @ variances) > 0 else np.nan
                  for w in weights]  # fmt: skip
        reached = [n for n, v in zip(ns, values) if v >= target]
        point = reached[0] if reached else np.nan
        value = values[point - 1] if reached else np.nan
        if not reached:
            warn(f"{coefficient} does not reach {target} with {max_n} {facet}(s); raise max_n or vary another facet",
                 HceWarning)
        cov = self.covariance.to_numpy()
        low = high = np.nan
        why = self._covariance_source
        if not np.isnan(cov).any():
            limits = self.components[["ci_low", "ci_high"]].to_numpy()
            draws = np.exp(pivot_draws(variances, cov, _N_DRAWS, as_generator(random_state), limits))
            # every weight is a + b / n in the n varied (b from the components that facet divides),
            # so each draw's smallest n is the ceiling of b v / (v_p (1 - target) / target - a v)
            per_n = 2 * (weights[0] - weight(2))
            fixed = weights[0] - per_n
            room = draws[:, obj] * (1 - target) / target - draws @ fixed
            with np.errstate(divide="ignore", invalid="ignore"):
                needed = np.maximum(np.ceil(draws @ per_n / room), 1.0)
            needed[(room <= 0) | (needed > max_n)] = np.inf
            alpha = 1 - confidence
            low, high = np.quantile(needed, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
            why = f"percentiles of the n each of {_N_DRAWS:,} joint draws of the components needs ({_RATIO_METHOD})"
        else:
            why = f"no interval: {why}"
        return pd.DataFrame([{"coefficient": coefficient, "target": target, "facet": facet, "estimate": point,
                              "value": value, "ci_low": float(low), "ci_high": float(high), "max_n": int(max_n),
                              "method": why}])  # fmt: skip

    def __repr__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        """Components and coefficients as text.

        Returns
        -------
        str
        """
        return (
            f"G study of {self.fit.formula.response!r}: object {self.object!r}, facets {self.facets[1:]}\n"
            f"{self.components.to_string(index=False)}\n\n{self.coefficients.to_string(index=False)}"
        )


def _variance_components_in_engine(
    frame: EngineFrame,
    *,
    score: str,
    facets: list[str],
    n_attempts: int = 1,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> VarianceComponents:
    """:func:`variance_components` on a frame of another engine: exact REML from the cell
    table (count, mean and within-cell sum of squares per facet combination, computed in
    the engine; see :mod:`hce.stats.mixed.cell_fit`)."""
    _check_facets(facets, confidence)
    blank = frame.count_blank(score)
    if blank:
        warn(f"dropped {blank} rows with missing values in {[score]}")
    return _from_cells(frame.cell_moments(facets, score), score, facets, n_attempts, confidence, random_state)


def _from_cells(cells: pd.DataFrame, score: str, facets: list[str], n_attempts: int, confidence: float,
                random_state: int | np.random.Generator | None) -> VarianceComponents:
    """The G study from the facet-cell table (``n``, ``mean``, ``ss``, ``min``, ``max`` per
    cell), which pandas and every engine compute alike: one fit of one table, so the same
    components and intervals wherever the rows are."""
    if cells.empty:
        raise DataError(f"no row has values in every formula column {[score, *facets]}")
    replicated = bool(cells["n"].max() > 1)
    subsets = _model(score, facets, replicated, varies=bool((cells["max"] > cells["min"]).any()))
    fit = fit_cells(cells, _formula(score, subsets))
    levels = {f: int(cells[f].nunique()) for f in facets[1:]}
    return _g_study(fit, subsets, facets, levels, replicated, n_attempts, confidence, random_state)


def _pandas_cells(data: pd.DataFrame, score: str, facets: list[str]) -> pd.DataFrame:
    """The facet-cell table of a pandas log, as :meth:`EngineFrame.cell_moments` makes it in an engine."""
    used = [score, *facets]
    keep = data[used].notna().all(axis=1).to_numpy()
    if not keep.all():
        warn(f"dropped {int((~keep).sum())} of {len(data)} rows with missing values in {used}")
    values = pd.to_numeric(data.loc[keep, score]).astype(float)
    groups = values.groupby([data.loc[keep, f] for f in facets], observed=True, sort=True)
    cells = groups.agg(["size", "mean", "var", "min", "max"]).rename(columns={"size": "n"}).reset_index()
    cells["ss"] = np.where(cells["n"] > 1, cells.pop("var").fillna(0.0) * (cells["n"] - 1), 0.0)
    return cells


def _check_facets(facets: list[str], confidence: float) -> None:
    if not facets:
        raise DataError("facets must name at least one column (the object of measurement first)")
    check_confidence(confidence)


def _model(score: str, facets: list[str], replicated: bool, *, varies: bool) -> list[tuple[str, ...]]:
    """The random terms of the G study: every facet and crossing of facets."""
    subsets = [c for k in range(1, len(facets) + 1) for c in combinations(facets, k)]
    if not replicated and len(facets) > 1:
        subsets = subsets[:-1]  # the top interaction is the residual
    # (one facet and one score per level: the term stays, for lmer to refuse it by name)
    if replicated and not varies:
        # the REML likelihood is unbounded at a residual variance of 0: profiles fail on log(0) and
        # penalised least squares stops anywhere along the ridge, with the other variances wrong
        raise DataError(
            f"{score!r} does not vary within any {' x '.join(facets)} cell (every attempt scored as the others "
            "of its cell): the residual variance is 0 and the REML likelihood unbounded, so there is no variance "
            "decomposition of the attempts; analyse one score per cell (the cell means) instead"
        )
    return subsets


def _formula(score: str, subsets: list[tuple[str, ...]]) -> str:
    return f"{score} ~ 1 + " + " + ".join(f"(1 | {':'.join(s)})" for s in subsets)


@reads_frame(keys=("facets",), numbers=("score",), engine=_variance_components_in_engine, spread=True)
@fill_doc
def variance_components(
    data: pd.DataFrame,
    *,
    score: str,
    facets: list[str],
    n_attempts: int = 1,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> VarianceComponents:
    """Variance decomposition of a judge study (generalizability theory G study).

    Every facet and every interaction of facets is a random effect; the residual is the
    attempt-to-attempt noise within a cell (with one score per cell it also holds the
    highest interaction).

    Parameters
    ----------
    data : pandas.DataFrame
        Long format, one row per attempt. A Polars, PyArrow, DuckDB, PySpark or Dask frame
        is reduced in its engine to the facet-cell table (count, mean, within-cell sum of
        squares), from which the REML fit is exact (``hce.stats.mixed.cell_fit``).
    score : str
        Score column.
    facets : list of str
        Facet columns, the object of measurement first, e.g. ``["item_id", "prompt_id",
        "model"]``.
    n_attempts : int, default 1
        Attempts averaged per condition for the G and Phi coefficients.
    %(confidence)s
    %(random_state)s

    Returns
    -------
    VarianceComponents
        ``.components`` (``component, estimate, share, std_error, ci_low, ci_high, df,
        method``), ``.coefficients`` (``metric, estimate, ci_low, ci_high,
        error_variance, n_attempts, method``), ``.covariance``, ``.d_study(...)`` for other
        designs.

    Notes
    -----
    Estimates are REML (:func:`lmer`'s likelihood, from the facet-cell table). Intervals, as ``method`` says row by row:

    * balanced design, non-negative ANOVA estimates (closed form): Satterthwaite's, with
      estimate v = sum_k a_k MS_k, df = v^2 / sum_k (a_k MS_k)^2 / df_k and [df v /
      chi2_(1-alpha/2), df v / chi2_(alpha/2)] (Brennan 2001, sec. 6.1.2; exact chi-square
      for the residual); std_error = sqrt(2 sum_k (a_k MS_k)^2 / df_k);
    * balanced design with a component at zero: profile-likelihood intervals (lme4's
      ``confint``), which reach down to 0;
    * unbalanced design (lme4's REML criterion, from the cell table of two crossed factors
      or by penalised least squares): standard errors from the
      observed information, the inverse Hessian of the REML deviance in the variances,
      and Satterthwaite intervals with df = 2 (v / SE)^2 (SAS PROC MIXED ``COVTEST CL``),
      which equal the ANOVA ones when the same formula meets balanced data. A component at
      the boundary (relative SD below 1e-4, lme4's ``isSingular``) has no standard error (the
      normal theory fails at 0): it is held at 0 for the others, and its interval runs from
      0 to where the profiled REML deviance rises by chi2_1(confidence) (lme4's profile).

    G and Phi intervals are percentiles over joint draws of the components from their
    Satterthwaite pivots (see :meth:`~hce.stats.VarianceComponents.d_study`).

    References
    ----------
    Brennan, R. L. (2001). Generalizability Theory. Springer.
    Satterthwaite, F. E. (1946). Biometrics Bulletin, 2(6), 110-114.
    Searle, S. R., Casella, G., & McCulloch, C. E. (1992). Variance Components. Wiley, ch. 6.
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations. Psychol Bull, 86, 420-428.

    Examples
    --------
    >>> sf = pd.DataFrame({"target": [t for t in range(1, 7) for _ in range(4)],
    ...                    "judge": list("ABCD") * 6,
    ...                    "rating": [9, 2, 5, 8, 6, 1, 3, 2, 8, 4, 6, 8,
    ...                               7, 1, 2, 6, 10, 5, 6, 9, 6, 2, 4, 7]})
    >>> g = variance_components(sf, score="rating", facets=["target", "judge"])
    >>> g.coefficients[["metric", "estimate"]].round(4)  # Shrout-Fleiss ICC(3,4), ICC(2,4)
      metric  estimate
    0      G    0.9093
    1    Phi    0.6201

    """
    _check_facets(facets, confidence)
    require_columns(data, [score, *facets])
    numeric_column(data, score)
    return _from_cells(_pandas_cells(data, score, list(facets)), score, list(facets), n_attempts, confidence, random_state)


def _g_study(
    fit: LmerResult | CellFit,
    subsets: list[tuple[str, ...]],
    facets: list[str],
    levels: dict[str, int],
    replicated: bool,
    n_attempts: int,
    confidence: float,
    random_state: int | np.random.Generator | None,
) -> VarianceComponents:
    """Components with their inference, and G and Phi, from a fitted random model."""
    estimates = fit.varcorr()["vcov"].to_numpy()
    names = [":".join(s) for s in subsets] + ["residual"]
    inference = _component_inference(fit, confidence)
    positive = np.maximum(estimates, 0)
    components = pd.DataFrame(
        {
            "component": names,
            "estimate": estimates,
            "share": positive / positive.sum(),
            "std_error": inference.std_error,
            "ci_low": inference.low,
            "ci_high": inference.high,
            "df": inference.df,
            "method": inference.method,
        }
    )
    result = VarianceComponents(
        components,
        pd.DataFrame(),
        facets[0],
        list(facets),
        levels,
        replicated,
        pd.DataFrame(inference.cov, index=names, columns=names),
        fit,
        inference.cov_source,
    )
    result.coefficients = result.d_study(
        n_attempts, confidence=confidence, random_state=random_state
    )
    return result


@dataclass
class _Inference:
    std_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    df: np.ndarray
    method: list[str]
    cov: np.ndarray
    cov_source: str  # where ``cov`` comes from, or why it is NaN


def _component_inference(fit: LmerResult, confidence: float) -> _Inference:
    """Standard errors, intervals and covariance of the components, by engine (see
    :func:`variance_components`, Notes)."""
    k = len(fit.formula.random) + 1
    nan, no_cov = np.full(k, np.nan), np.full((k, k), np.nan)
    strata = fit._strata
    if strata is not None and strata.closed_form:
        weights = np.linalg.inv(strata.design[strata.informative]) * strata.ms  # a_jk * MS_k
        est = weights.sum(axis=1)
        cov = 2 * (weights / strata.df) @ weights.T  # Var MS_k = 2 MS_k^2 / df_k
        df = est**2 / np.sum(weights**2 / strata.df, axis=1)
        low, high = satterthwaite_interval(est, df, confidence)
        method = ["REML = ANOVA (closed form); Satterthwaite interval"] * k
        for j in np.flatnonzero(satterthwaite_fails(df, low, high)):
            low[j], high[j] = profile_interval(strata, j, confidence)
            method[j] = f"REML = ANOVA (closed form); {_SMALL_DF.format(df=df[j])}"
        source = "component covariance from the mean squares"
        method = _state_no_upper(method, high)
        return _Inference(np.sqrt(np.diag(cov)), low, high, df, method, cov, source)
    if strata is not None:
        cov = reml_covariance(lambda t: strata_deviance(strata, t), strata.theta, strata.theta > 0)
        low, high = np.array([profile_interval(strata, j, confidence) for j in range(k)]).T
        method = _state_no_upper(["REML (boundary); profile-likelihood interval"] * k, high)
        if cov is None:
            return _Inference(nan, low, high, nan, method, no_cov, _NOT_MAX)
        se = np.where(strata.theta > 0, np.sqrt(np.diag(cov)), np.nan)
        return _Inference(se, low, high, nan, method, cov, _OBSERVED)
    est = fit.varcorr()["vcov"].to_numpy()
    free = np.sqrt(est / est[-1]) >= _SINGULAR_TOL
    cov = reml_covariance(fit._problem.deviance, est, free, fit._problem.deviance_gradient)
    engine = f"REML ({fit._problem.label})"
    if cov is None:
        method = [f"{engine}; no interval: {_NOT_MAX}"] * k
        return _Inference(nan, nan, nan, nan, method, no_cov, _NOT_MAX)
    se = np.where(free, np.sqrt(np.diag(cov)), np.nan)
    df = 2 * (est / se) ** 2
    low, high = satterthwaite_interval(est, df, confidence)
    method = [
        f"{engine}; Satterthwaite interval, df = 2 (estimate / std_error)^2 from the observed "
        "REML information"
    ] * k
    for j in np.flatnonzero(~free):
        low[j], high[j] = profile_limits(fit._problem.deviance, est, j, confidence, fit._problem.deviance_gradient)
        method[j] = (
            f"{engine}; at the boundary (relative SD < {_SINGULAR_TOL:g}): no standard error; "
            "profile-likelihood interval from 0"
        )
    # The residual always has many df; profile_limits profiles the components only.
    for j in np.flatnonzero(free[:-1] & satterthwaite_fails(df, low, high)[:-1]):
        low[j], high[j] = profile_limits(fit._problem.deviance, est, j, confidence, fit._problem.deviance_gradient)
        method[j] = f"{engine}; {_SMALL_DF.format(df=df[j])}"
    return _Inference(se, low, high, df, _state_no_upper(method, high), cov, _OBSERVED)


def _state_no_upper(method: list[str], high: np.ndarray) -> list[str]:
    """Say so where a profile interval has no upper limit (``inf``, :func:`profile_search`)."""
    return [m + _NO_UPPER if np.isposinf(h) else m for m, h in zip(method, high)]


_N_DRAWS = 20_000
_RATIO_METHOD = (
    f"percentiles over {_N_DRAWS:,} joint draws of the components from their Satterthwaite "
    "pivots (Gaussian copula)"
)
_OBSERVED = "component covariance from the observed REML information, zero components held at 0"
_NOT_MAX = "the observed REML information is not positive definite (not at a maximum)"
# Why not inf: below 1 df the Satterthwaite limits are not merely wide but meaningless (1e120
# times the estimate at df 0.03; near df 0 the lower one above the estimate, the upper one
# past the largest float), while the profile likelihood bounds the variance (lme4's answer).
_SMALL_DF = "Satterthwaite df = {df:.2g} < 1, too few for a chi-square interval: profile-likelihood interval"
_NO_UPPER = (
    "; no upper limit (inf): the profile deviance stays within the chi-square cutoff however "
    "large the variance, the data cannot tell it from infinity"
)
