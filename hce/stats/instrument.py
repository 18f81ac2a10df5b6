"""Validate a rating instrument in one call: the PDSQI-9 analysis set on a ratings table.

The PDSQI-9 validation (seeds/002) reported, for raters x summaries x attributes: score
distributions, internal consistency (Cronbach's alpha with a Feldt interval), inter-rater
reliability (ICC(3,k) with its F interval, Krippendorff's alpha with a bootstrap interval),
the factor structure (MSA, eigenvalues, scree, a minres EFA with varimax rotation and its
fit indices) and validity tests (discriminant, substantive, rater expertise).
:func:`instrument_report` computes all of it; every coefficient comes from the module that
owns it (:mod:`hce.stats.reliability`, :mod:`hce.stats.factor`, :mod:`hce.stats.validity`).
One generator made from ``random_state`` feeds every bootstrap and the parallel analysis in
turn, so their draws continue one stream instead of restarting from the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hce._checks import check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._resample import as_generator, check_n_boot
from hce.stats._validate import statistic
from hce.stats.factor import (
    CFAResult,
    Correlation,
    FactorResult,
    Method,
    ParallelResult,
    Rotation,
    bartlett_sphericity,
    cfa,
    efa,
    efa_intervals,
    eigenvalues,
    kmo,
    max_identified_factors,
    parallel_analysis,
)
from hce.stats.factor.correlation import item_matrix
from hce.stats.reliability import (
    cronbach_alpha,
    icc,
    krippendorff_alpha,
    mcdonald_omega,
    omega_hierarchical,
    ordinal_alpha,
)
from hce.stats.validity import (
    discriminant_validity,
    rater_expertise,
    substantive_validity,
)

__all__ = ["InstrumentReport", "instrument_report", "item_statistics"]


@statistic(wide="columns", log=False, retired={"items": "columns"})
def item_statistics(
    data: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    reverse: Sequence[str] = (),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Item-total correlations and alpha if each item is dropped (R ``psych::alpha``).

    %(wide_parameters)s
    reverse : list of str, default ()
        Items to reverse-score first, as max + min - x with the minimum and maximum over all
        items (psych's ``keys``).
    %(confidence)s
        Here: the Feldt interval of each alpha-if-dropped.

    Returns
    -------
    DataFrame
        One row per item: ``item, n, mean, sd, r_total`` (correlation with the total score,
        psych ``raw.r``), ``r_drop`` (with the total of the other items, ``r.drop``),
        ``alpha_if_dropped, ci_low, ci_high`` (Cronbach's alpha of the other items with its
        Feldt interval, from :func:`~hce.stats.cronbach_alpha`), ``method``.

    Notes
    -----
    From the pairwise-complete item covariance matrix C (as ``psych::alpha``):
    r_total_j = (C1)_j / sqrt(C_jj 1'C1) and
    r_drop_j = ((C1)_j - C_jj) / sqrt(C_jj (1'C1 - 2 (C1)_j + C_jj)). An item whose
    ``r_drop`` is low, or whose removal raises alpha, measures something else than the rest
    of the scale.

    References
    ----------
    .. [1] Cronbach, L. J. (1951). Coefficient alpha and the internal structure of tests.
       Psychometrika 16, 297-334.
    .. [2] Revelle, W. ``psych::alpha`` (item statistics ``r.drop`` and ``alpha.drop``), R
       package psych.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 2, 3, 4, 5, 3], "b": [2, 2, 3, 5, 4, 3],
    ...                   "c": [1, 3, 3, 4, 5, 2], "d": [5, 1, 2, 2, 1, 4]})
    >>> item_statistics(d, reverse=["d"])[["item", "r_drop", "alpha_if_dropped"]].round(2)
      item  r_drop  alpha_if_dropped
    0    a    0.87              0.84
    1    b    0.68              0.91
    2    c    0.98              0.80
    3    d    0.66              0.93
    """
    check_confidence(confidence)
    x, names = item_matrix(data, columns)
    unknown = [r for r in reverse if r not in names]
    if unknown:
        raise DataError(f"reverse items {unknown} are not among the items {names}")
    lo, hi = np.nanmin(x), np.nanmax(x)
    for r in reverse:
        j = names.index(r)
        x[:, j] = hi + lo - x[:, j]
    wide = pd.DataFrame(x, columns=names)
    cov = wide.cov().to_numpy()  # pairwise complete, as psych::alpha
    with_total = cov.sum(1)
    total_var = cov.sum()
    var = np.diag(cov)
    r_total = with_total / np.sqrt(var * total_var)
    r_drop = (with_total - var) / np.sqrt(var * (total_var - 2 * with_total + var))
    rows = []
    for j, item in enumerate(names):
        rest = wide.drop(columns=item)
        dropped = cronbach_alpha(rest, columns=list(rest.columns), confidence=confidence)
        col = wide[item]
        rows.append({
            "item": item, "n": int(col.notna().sum()), "mean": col.mean(), "sd": col.std(),
            "r_total": r_total[j], "r_drop": r_drop[j],
            "alpha_if_dropped": float(dropped["estimate"].iloc[0]),
            "ci_low": float(dropped["ci_low"].iloc[0]),
            "ci_high": float(dropped["ci_high"].iloc[0]),
            "method": "item-total Pearson r; Cronbach's alpha without the item (Feldt CI)"
            + (f"; reversed {list(reverse)}" if reverse else "")})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class InstrumentReport:
    """Everything :func:`instrument_report` computed; each table is a tidy DataFrame.

    Attributes
    ----------
    descriptives : DataFrame
        ``attribute, n, mean, sd, median, min, max``.
    distributions : DataFrame
        ``attribute, score, count, proportion``.
    internal_consistency : DataFrame
        Cronbach's alpha (Feldt interval) and McDonald's omega of the attributes as a scale;
        with ``factor_boot``, also ordinal alpha, omega hierarchical and omega total
        (Schmid-Leiman) with bootstrap intervals and ``n_failed``.
    item_statistics : DataFrame
        See :func:`item_statistics`.
    reliability : DataFrame
        Per attribute and ``"all"``: ICC(3,k) and Krippendorff's alpha with intervals.
    adequacy : DataFrame
        Per-attribute MSA, overall KMO and Bartlett's test (``test, item, estimate,
        statistic, df1, p_value``).
    eigenvalues : DataFrame
        Scree data, see :func:`hce.stats.factor.eigenvalues`.
    parallel : ParallelResult or None
        Parallel analysis (when the number of factors was not given).
    factors : FactorResult or None
        The EFA (None when it cannot be fitted, e.g. fewer than 3 attributes); its
        ``intervals`` hold the bootstrap intervals when ``factor_boot`` was given.
    confirmatory : CFAResult or None
        The CFA of ``structure`` when one was given.
    validity : dict of str to DataFrame
        ``"discriminant"``, ``"substantive"``, ``"rater_expertise"`` when requested.
    notes : list of str
        What was skipped and why.
    """

    descriptives: pd.DataFrame
    distributions: pd.DataFrame
    internal_consistency: pd.DataFrame
    item_statistics: pd.DataFrame
    reliability: pd.DataFrame
    adequacy: pd.DataFrame
    eigenvalues: pd.DataFrame
    parallel: ParallelResult | None
    factors: FactorResult | None
    confirmatory: CFAResult | None = None
    validity: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def summary(self, digits: int = 3) -> str:
        """A plain-text report, one section per analysis."""

        def block(title: str, table: pd.DataFrame) -> list[str]:
            return [title, "-" * len(title), table.round(digits).to_string(index=False), ""]

        rel_cols = ["attribute", "metric", "estimate", "ci_low", "ci_high", "n_items",
                    "n_raters"]
        out = ["Instrument validation report", "=" * 29, ""]
        out += block("Score descriptives", self.descriptives)
        out += block("Internal consistency", self.internal_consistency[
            ["metric", "estimate", "ci_low", "ci_high", "ci_method"]])
        out += block("Item statistics", self.item_statistics.drop(columns="method"))
        out += block("Inter-rater reliability", self.reliability[rel_cols])
        out += block("Sampling adequacy", self.adequacy)
        out += block("Eigenvalues", self.eigenvalues)
        if self.parallel is not None:
            out += [self.parallel.summary().splitlines()[0], ""]
        if self.factors is not None:
            out += [self.factors.summary(), ""]
        if self.confirmatory is not None:
            out += [self.confirmatory.summary(), ""]
        for name, table in self.validity.items():
            out += block(f"Validity: {name.replace('_', ' ')}", table.drop(columns="method"))
        out += [f"Note: {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"

    def __repr__(self) -> str:
        return self.summary()


def _distributions(data, attribute, score):
    y = data.assign(_y=numeric_column(data, score)).dropna(subset=["_y"])
    desc = (y.groupby(attribute, observed=True)["_y"]
            .agg(n="count", mean="mean", sd="std", median="median", min="min", max="max")
            .reset_index().rename(columns={attribute: "attribute"}))
    counts = (y.groupby([attribute, "_y"], observed=True).size().rename("count").reset_index()
              .rename(columns={attribute: "attribute", "_y": "score"}))
    counts["proportion"] = counts["count"] / counts.groupby("attribute")["count"].transform("sum")
    return desc, counts


def _reliability(data, target, rater, attribute, score, level, confidence, n_boot, rng):
    parts = [(a, rows, target) for a, rows in data.groupby(attribute, observed=True)]
    # "all": every (text, attribute) pair is a unit rated by the raters
    unit = data[target].astype(str) + " | " + data[attribute].astype(str)
    parts.append(("all", data.assign(_unit=unit), "_unit"))
    tables = []
    for label, rows, unit_col in parts:
        i = icc(rows, item=unit_col, rater=rater, score=score, confidence=confidence)
        i = i[i["metric"].isin(["ICC3k"])]
        k = krippendorff_alpha(rows, item=unit_col, rater=rater, score=score, level=level,
                               confidence=confidence, n_boot=n_boot, random_state=rng)
        for t in (i, k):
            tables.append(t.assign(attribute=label))
    out = pd.concat(tables, ignore_index=True)
    first = ["attribute", "metric", "estimate", "ci_low", "ci_high"]
    return out[first + [c for c in out.columns if c not in first]]


def _adequacy(wide: pd.DataFrame, cor: str) -> pd.DataFrame:
    k = kmo(wide, cor=cor)
    b = bartlett_sphericity(wide, cor=cor)
    rows = [{"test": "KMO", "item": i, "estimate": m, "statistic": np.nan, "df1": np.nan,
             "p_value": np.nan} for i, m in zip(k["item"], k["msa"])]
    rows.append({"test": "Bartlett sphericity", "item": "all", "estimate": np.nan,
                 "statistic": b["statistic"].iloc[0], "df1": b["df1"].iloc[0],
                 "p_value": b["p_value"].iloc[0]})
    return pd.DataFrame(rows)


def _factor_intervals(wide, items, efa_result, n_boot, confidence, rng, notes):
    """The EFA with bootstrap intervals, and ordinal alpha and omega rows with theirs.

    The EFA's intervals are added to the fitted result, so its RMSEA interval keeps psych's
    90% while the bootstrap intervals take the report's ``confidence``.
    """
    bootstrapped = efa_intervals(wide, efa_result, items, n_boot=n_boot, confidence=confidence,
                                 random_state=rng)
    rows = []
    try:
        a = ordinal_alpha(wide, columns=items, n_boot=n_boot, confidence=confidence,
                          random_state=rng).iloc[0]
        rows.append({"metric": "ordinal alpha", "estimate": a["estimate"],
                     "ci_low": a["ci_low"], "ci_high": a["ci_high"], "method": a["method"],
                     "ci_method": a["ci_method"], "n_failed": a["n_failed"]})
    except DataError as err:  # e.g. averaged scores with too many distinct values
        notes.append(f"ordinal alpha skipped: {err}")
    k = efa_result.loadings.shape[1]
    if k >= 2:
        om = omega_hierarchical(wide, columns=items, n_factors=k, method=efa_result.method,
                                cor=efa_result.cor, n_boot=n_boot, confidence=confidence,
                                random_state=rng).estimates
        names = {"omega_hierarchical": "omega hierarchical",
                 "omega_total": "omega total (Schmid-Leiman)"}
        for _, o in om[om["metric"].isin(list(names))].iterrows():
            rows.append({"metric": names[o["metric"]], "estimate": o["estimate"],
                         "ci_low": o["ci_low"], "ci_high": o["ci_high"], "method": o["method"],
                         "ci_method": o["ci_method"], "n_failed": o["n_failed"]})
    else:
        notes.append("omega hierarchical skipped: it needs at least 2 group factors and the "
                     "EFA kept 1")
    extra = pd.DataFrame(rows).assign(n_items=len(wide), n_raters=len(items))
    return bootstrapped, extra


@statistic(
    keys=("item", "rater", "attribute", "condition"), numbers=("score",),
    retired={"target": "item", "rater_group": "condition", "groups": "levels"},
)
def instrument_report(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    attribute: str,
    score: str,
    n_factors: int | None = None,
    method: Method = "minres",
    rotation: Rotation = "varimax",
    cor: Correlation = "pearson",
    level: str = "interval",
    structure: Mapping[str, Sequence[str]] | None = None,
    quality: str | None = None,
    high: object | None = None,
    low: object | None = None,
    predictor: str | None = None,
    condition: str | None = None,
    levels: Sequence[object] = ("junior", "senior"),
    confidence: float = 0.95,
    n_boot: int = 1000,
    factor_boot: int = 0,
    random_state: int | np.random.Generator | None = None,
) -> InstrumentReport:
    """The PDSQI-9 validation analyses on one ratings table (raters x texts x attributes).

    Parameters
    ----------
    data : DataFrame
        Long ratings: one row per (text, rater, attribute) score.
    item, rater, attribute, score : str
        Columns naming the rated text, the rater (person or model attempt), the rubric
        attribute and the numeric score.
    n_factors : int, optional
        Factors to extract; default the parallel-analysis suggestion (at least 1).
    method, rotation, cor : str
        EFA extraction, rotation and correlation (defaults: minres with varimax on Pearson
        correlations, as PDSQI-9's Appendix B).
        Default: ``cor="pearson"``.
    level : str, default "interval"
        Krippendorff's alpha level of measurement (``"ordinal"`` for Likert scores that are
        not equally spaced).
    structure : mapping of str to list of str, optional
        A hypothesised factor structure (factor -> attributes) to test by CFA, e.g. the
        structure the EFA of a pilot suggested.
    quality, high, low : optional
        Discriminant validity: a column of known text quality and its high and low values.
    predictor : str, optional
        Substantive validity: a numeric text characteristic (e.g. source length in words),
        constant within a text.
    condition, levels : optional
        Rater expertise: a column of rater group and the two groups compared.
        Default: ``levels=('junior', 'senior')``.
    %(confidence)s
        Every interval but the RMSEA interval, which stays at psych's 90%.
    %(n_boot)s
        Here: resamples of Krippendorff's alpha.
    factor_boot : int, default 0
        Bootstrap replicates (row resamples, each refitted) for intervals of the EFA
        loadings, communalities and factor correlations (``factors.intervals``, printed by
        ``summary()``), and, added to ``internal_consistency``, of ordinal alpha and of
        omega hierarchical and omega total (Schmid-Leiman, one group factor per EFA factor,
        when the EFA keeps at least 2). 0 (the default) skips all of these. Each replicate
        refits the EFA (200 replicates of 9 items x 301 rows, 3 factors: about 2 s with one
        BLAS thread, ``OPENBLAS_NUM_THREADS=1``; 4x that with OpenBLAS's default threads on a
        busy 2-core machine), and polychoric replicates cost more.
    %(random_state)s
        One generator is drawn from by each statistic in turn (McDonald's omega, Krippendorff's
        alpha per attribute, parallel analysis, then the ``factor_boot`` intervals).

    Returns
    -------
    InstrumentReport
        Tidy tables for each analysis and ``summary()``.

    Notes
    -----
    Internal consistency and the factor analysis treat each (text, rater) pair as an
    observation and the attributes as the items of the scale, as PDSQI-9 did. ICC(3,k) is the
    two-way mixed, consistency, average-measures form the seed reports (Shrout & Fleiss
    interval); Krippendorff's alpha uses a unit bootstrap. The ``"all"`` reliability row
    treats every (text, attribute) pair as a unit.

    References
    ----------
    .. [1] Croxford E et al. (2025). Development and validation of the Provider
       Documentation Summarization Quality Instrument for large language models (PDSQI-9).
       (seeds/002)

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> rows = []
    >>> for t in range(40):
    ...     quality = rng.normal()
    ...     for r in range(3):
    ...         for a in ["accurate", "thorough", "useful", "organized"]:
    ...             s = np.clip(np.rint(3 + quality + rng.normal(0, .7)), 1, 5)
    ...             rows.append((t, f"r{r}", a, s))
    >>> d = pd.DataFrame(rows, columns=["text", "rater", "attribute", "score"])
    >>> rep = instrument_report(d, item="text", rater="rater", attribute="attribute",
    ...                         score="score", n_factors=1, n_boot=200, random_state=1)
    >>> rep.reliability.query("attribute == 'all'")[["metric", "estimate"]].round(2)
                     metric  estimate
    8                 ICC3k      0.86
    9  Krippendorff's alpha      0.67
    """
    check_confidence(confidence)
    check_n_boot(factor_boot, "factor_boot")
    require_columns(data, [item, rater, attribute, score]
                    + [c for c in (quality, predictor, condition) if c])
    rng = as_generator(random_state)
    notes: list[str] = []
    desc, dist = _distributions(data, attribute, score)
    scored = data.assign(**{score: numeric_column(data, score)})
    wide = scored.pivot_table(index=[item, rater], columns=attribute, values=score,
                              aggfunc="mean", observed=True)
    wide.columns = [str(c) for c in wide.columns]
    items = list(wide.columns)
    alpha = cronbach_alpha(wide, columns=items, confidence=confidence)
    omega = mcdonald_omega(wide, columns=items, confidence=confidence, n_boot=min(n_boot, 500), random_state=rng)
    consistency = pd.concat([alpha, omega], ignore_index=True)
    reliability = _reliability(scored, item, rater, attribute, score, level, confidence,
                               n_boot, rng)
    parallel, efa_result = None, None
    if len(items) >= 3:
        stats_table = item_statistics(wide.reset_index(drop=True), columns=items, confidence=confidence)
        adequacy = _adequacy(wide, cor)
        eig = eigenvalues(wide, columns=items, cor=cor)
        if n_factors is None:
            parallel = parallel_analysis(wide, columns=items, random_state=rng)
            n_factors = max(parallel.n_factors, 1)
            notes.append(f"number of factors {n_factors} chosen by parallel analysis")
            most = max_identified_factors(len(items))
            if n_factors > most:
                notes.append(f"reduced to {most}: more factors leave {len(items)} attributes "
                             "with negative degrees of freedom")
                n_factors = most
        efa_result = efa(wide, n_factors=n_factors, columns=items, method=method, rotation=rotation, cor=cor)
        if factor_boot:
            efa_result, extra = _factor_intervals(wide, items, efa_result, factor_boot,
                                                  confidence, rng, notes)
            consistency = pd.concat([consistency, extra], ignore_index=True)
    else:
        notes.append("item statistics and factor analysis skipped: they need at least 3 "
                     "attributes")
        stats_table = pd.DataFrame(columns=["item", "n", "mean", "sd", "r_total", "r_drop",
                                            "alpha_if_dropped", "ci_low", "ci_high", "method"])
        adequacy = pd.DataFrame(columns=["test", "item", "estimate", "statistic", "df1",
                                         "p_value"])
        eig = pd.DataFrame(columns=["factor", "eigenvalue", "proportion", "cumulative",
                                    "kaiser"])
    cfa_result = cfa(wide, model=structure) if structure is not None else None
    validity: dict[str, pd.DataFrame] = {}
    if quality is not None:
        if high is None or low is None:
            raise DataError("discriminant validity needs both high= and low= values of "
                            f"column {quality!r}")
        validity["discriminant"] = discriminant_validity(
            scored, condition=quality, score=score, high=high, low=low, attribute=attribute,
            confidence=confidence)
    if predictor is not None:
        validity["substantive"] = substantive_validity(
            scored, predictor=predictor, score=score, attribute=attribute, item=item,
            confidence=confidence)
    if condition is not None:
        validity["rater_expertise"] = rater_expertise(
            scored, item=item, condition=condition, score=score, levels=levels,
            attribute=attribute, confidence=confidence)
    return InstrumentReport(
        descriptives=desc, distributions=dist, internal_consistency=consistency,
        item_statistics=stats_table, reliability=reliability, adequacy=adequacy,
        eigenvalues=eig, parallel=parallel, factors=efa_result, confirmatory=cfa_result,
        validity=validity,
        notes=notes)
