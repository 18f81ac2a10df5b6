"""Agreement on categories: Cohen's and Fleiss' kappa, Gwet's AC1/AC2, percent, strict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, require_columns
from hce.errors import DataError
from hce.stats._resample import (
    as_generator,
    bootstrap_sums,
    check_n_boot,
    distinct_rows,
    percentile_interval,
    unit_sums,
)
from hce.stats._frames import EngineFrame
from hce.stats._intervals import fisher_z_ci
from hce.stats._validate import ratings_statistic
from hce.stats.reliability._common import COUNT_COLUMNS, Ratings, counts, long_ratings
from hce.stats.reliability._engine import count_matrix, rated, unit_counts
from hce.stats.reliability.paradox import NO_PARADOX, PARADOX_COLUMNS, pabak, paradox_of_table

Weights = Literal["unweighted", "linear", "quadratic"]
KappaInterval = Literal["fisher-z", "wald", "bootstrap"]
#: The bounded interval of :func:`cohen_kappa` by default, as its ``ci_method`` column names it.
FISHER_Z_KAPPA = "Wald on the Fisher z (atanh) scale, SE of Fleiss, Cohen & Everitt (1969) by the delta method"

COLUMNS = [
    "metric", "weights", "estimate", "se", "ci_low", "ci_high", "statistic", "p_value",
    "pa", "pe", *PARADOX_COLUMNS, "method", "ci_method", *COUNT_COLUMNS,
]  # fmt: skip


def agreement_weights(q: int, weights: Weights) -> np.ndarray:
    """Agreement weights between category positions 0..q-1 (1 on the diagonal).

    ``linear``: ``1 - |i - j| / (q - 1)`` (Cicchetti-Allison); ``quadratic``:
    ``1 - (i - j)^2 / (q - 1)^2`` (Fleiss-Cohen). Positions, not values, are used: for an
    evenly spaced scale (1-5, 5-20) the two agree.
    """
    if weights == "unweighted" or q < 2:
        return np.eye(q)
    gap = np.abs(np.subtract.outer(np.arange(q), np.arange(q))) / (q - 1)
    return 1.0 - (gap if weights == "linear" else gap**2)


def _categories(
    r: Ratings, categories: Sequence | None, weights: Weights = "unweighted"
) -> tuple[np.ndarray, list]:
    """Category position of every rating, and the ordered categories.

    Weighted agreement uses category positions, so text labels need their order given:
    sorted text is alphabetical ("mild" < "moderate" < "none" < "severe"), which is not
    a scale. Numbers and booleans order themselves.
    """
    cats = category_order(pd.unique(r.value), categories, weights)
    position = pd.Index(cats).get_indexer(r.value)
    return position, cats


def category_order(observed: np.ndarray, categories: Sequence | None, weights: Weights = "unweighted") -> list:
    """The ordered categories of the distinct ratings ``observed`` (see :func:`_categories`)."""
    if categories is None and weights != "unweighted":
        text = [v for v in observed if not isinstance(v, (bool, int, float, np.bool_, np.number))]
        if text:
            raise DataError(
                f"weights={weights!r} on text labels (e.g. {text[0]!r}) needs their order: pass "
                f"categories=[...] from lowest to highest (observed: {sorted(map(str, observed))[:10]}); "
                "sorting text would order them alphabetically"
            )
    if categories is None:
        try:
            cats = sorted(observed.tolist())
        except TypeError:
            cats = list(observed)
    else:
        cats = list(categories)
        unknown = [v for v in observed if v not in set(cats)]
        if unknown:
            raise DataError(f"ratings {unknown[:5]} are not among categories={cats}")
    return cats


def _check_options(weights: str, confidence: float) -> None:
    check_confidence(confidence)
    check_choice("weights", weights, ["unweighted", "linear", "quadratic"])


def _check_chance(pe: float) -> None:
    if pe >= 1 - 1e-12:
        raise DataError(
            "chance agreement is 1 (every rating in one category), so the coefficient is "
            "undefined; report percent agreement, or pass all possible categories"
        )


def _row(metric: str, weights: str, **values) -> dict:
    return {"metric": metric, "weights": weights, **NO_PARADOX, **values}


def kappa_core(table: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """Weighted kappa of a q x q count table (rows: rater A, columns: rater B) with its
    large-sample SE and null SE (Fleiss, Cohen & Everitt 1969); NaN when pe = 1.

    Shared by :func:`cohen_kappa` and :func:`hce.stats.golden_agreement`, so both shapes
    of the same question give the same numbers.
    """
    n = table.sum()
    p = table / n
    row, col = p.sum(axis=1), p.sum(axis=0)
    pa, pe = float((w * p).sum()), float(row @ w @ col)
    if pe >= 1 - 1e-12:
        return {"kappa": np.nan, "se": np.nan, "se0": np.nan, "pa": pa, "pe": pe}
    kappa = (pa - pe) / (1 - pe)
    cross = (w @ col)[:, None] + (row @ w)[None, :]
    var = ((p * (w - cross * (1 - kappa)) ** 2).sum() - (kappa - pe * (1 - kappa)) ** 2) / (
        n * (1 - pe) ** 2
    )
    var0 = ((np.outer(row, col) * (w - cross) ** 2).sum() - pe**2) / (n * (1 - pe) ** 2)
    # Both variances are sums of squares minus a square; at perfect agreement (kappa = 1) the
    # large-sample one is 0 in exact arithmetic and can come out as -1e-19 in floating point.
    var, var0 = max(var, 0.0), max(var0, 0.0)
    return {"kappa": float(kappa), "se": float(np.sqrt(var)), "se0": float(np.sqrt(var0)),
            "pa": pa, "pe": pe}  # fmt: skip


def kappa_z_interval(kappa: float, se: float, confidence: float) -> tuple[float, float]:
    """The :data:`FISHER_Z_KAPPA` interval: ``tanh(atanh(kappa) -/+ z se / (1 - kappa^2))``.

    atanh maps (-1, 1) onto the line, so the back-transformed limits stay inside it; at
    kappa = +-1 the SE is 0 and atanh infinite: no interval (NaN, not estimable).
    """
    if not abs(kappa) < 1:
        return np.nan, np.nan
    return fisher_z_ci(kappa, se / (1 - kappa**2), confidence)


def kappa_replicates(tables: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted kappa of each of ``(B, q, q)`` count tables at once (NaN where pe = 1)."""
    n = tables.sum(axis=(1, 2))
    p = tables / n[:, None, None]
    row, col = p.sum(axis=2), p.sum(axis=1)
    pa = (p * w).sum(axis=(1, 2))
    pe = np.einsum("bi,ij,bj->b", row, w, col)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1 - 1e-12, (pa - pe) / (1 - pe), np.nan)


def _unit_tables(a: np.ndarray, b: np.ndarray, units: np.ndarray, q: int) -> np.ndarray:
    """Each unit's (target's, or cluster's) cross table of the positions ``a``, ``b``, flattened."""
    _, unit = np.unique(units, return_inverse=True)
    return unit_sums(unit, a * q + b, np.ones(len(a)), int(unit.max()) + 1, q * q)


def _kappa_bootstrap(per_unit: np.ndarray, multiplicity: np.ndarray | None, q, w, n_boot, confidence,
                     rng) -> tuple[float, float]:  # fmt: skip
    """Percentile interval of kappa over resamples of the units (:func:`_unit_tables`; with
    ``multiplicity``, row k stands for that many identical units)."""
    tables = bootstrap_sums(per_unit, n_boot, rng, collapse=True, multiplicity=multiplicity).reshape(n_boot, q, q)
    low, high = percentile_interval(kappa_replicates(tables, w)[:, None], confidence)
    return float(low[0]), float(high[0])


def _two_columns(data: pd.DataFrame, targets: str | None, columns: Sequence[str]) -> pd.DataFrame:
    """Wide ratings (one column per rater, one row per target) in the long form."""
    columns = list(columns)
    if len(columns) != 2 or columns[0] == columns[1]:
        raise DataError(f"rater={columns!r}: Cohen's kappa takes two distinct rating columns")
    require_columns(data, columns + ([targets] if targets is not None else []))
    ids = data[targets].to_numpy() if targets is not None else np.arange(len(data))
    return pd.DataFrame({"target": np.tile(ids, 2), "rater": np.repeat(columns, len(data)),
                         "rating": pd.concat([data[columns[0]], data[columns[1]]], ignore_index=True)})  # fmt: skip


def _cohen_in_engine(frame: EngineFrame, *, item: str | None, rater: str | Sequence[str] | None, score: str | None,
                     weights: Weights, categories: Sequence | None, confidence: float, ci_method: KappaInterval,
                     cluster: str | None, n_boot: int, random_state) -> pd.DataFrame:  # fmt: skip
    """:func:`cohen_kappa` of long ratings in a frame of another engine: the cross table of
    the two raters' ratings of the targets both rated, from a join and a grouped count in
    the engine. The bootstrap over targets reads it too, as pandas' does when identical
    targets (one per occupied cell) are fewer than half the targets; otherwise there are
    at most twice as many targets as cells, and their pairs come back, in target order."""
    import narwhals as nw

    _check_options(weights, confidence)
    check_choice("ci_method", ci_method, ("fisher-z", "wald", "bootstrap"))
    check_n_boot(n_boot)
    if ci_method == "bootstrap" and n_boot == 0:
        raise DataError("ci_method='bootstrap' needs n_boot >= 1")
    if item is None or not isinstance(rater, str) or score is None or cluster is not None:
        raise DataError(f"cohen_kappa on a {frame.engine} frame takes long ratings (item=, rater=, score=) without "
                        "cluster=; for wide ratings or clusters collect the columns to pandas first")  # fmt: skip
    ratings = rated(frame, item, rater, score, numeric=False)
    raters = ratings.frame.frame.select(nw.col(rater)).unique().collect().to_pandas()[rater]
    if len(raters) != 2:
        raise DataError(f"Cohen's kappa needs exactly 2 raters in {rater!r}; found {len(raters)}: "
                        f"{sorted(raters.tolist())[:10]}. Use fleiss_kappa or gwet_ac for more.")  # fmt: skip
    first, second = sorted(raters.tolist())
    side = [ratings.frame.frame.filter(nw.col(rater) == who).select(nw.col(item), nw.col(score).alias(f"_{k}"))
            for k, who in (("a", first), ("b", second))]  # fmt: skip
    pairs = side[0].join(side[1], on=item)
    cells = pairs.group_by("_a", "_b").agg(nw.len().alias("_n")).collect().to_pandas()
    values = ratings.frame.frame.select(nw.col(score)).unique().collect().to_pandas()[score]
    cats = pd.Index(category_order(values.to_numpy(), categories, weights))
    q, n = len(cats), int(cells["_n"].sum())
    if n < 2:
        raise DataError("fewer than 2 targets are rated by both raters")
    cell = cats.get_indexer(cells["_a"]) * q + cats.get_indexer(cells["_b"])
    cross = np.bincount(cell, weights=cells["_n"].to_numpy(float), minlength=q * q).reshape(q, q)

    def per_unit() -> tuple[np.ndarray, np.ndarray | None]:
        if len(cell) < n // 2:  # pandas' bootstrap_sums collapses the targets into these rows, in this order
            rows = np.eye(q * q)[cell]
            first, _ = distinct_rows(rows)
            return rows[first], cells["_n"].to_numpy()[first]
        found = pairs.sort(item).collect().to_pandas()
        return _unit_tables(cats.get_indexer(found["_a"]), cats.get_indexer(found["_b"]), np.arange(n), q), None

    return _cohen_table(cross, per_unit, ratings.frame.count_rows(), ratings.n_missing, weights, confidence, ci_method,
                        None, n_boot, random_state)  # fmt: skip


@ratings_statistic(
    keys=("item",), ratings_or_key="rater", labels=("score",), varying=("score",), engine=_cohen_in_engine,
)
def cohen_kappa(
    data: pd.DataFrame,
    *,
    item: str | None = None,
    rater: str | Sequence[str] | None = None,
    score: str | None = None,
    weights: Weights = "unweighted",
    categories: Sequence | None = None,
    confidence: float = 0.95,
    ci_method: KappaInterval = "fisher-z",
    cluster: str | None = None,
    n_boot: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Cohen's kappa for two raters, unweighted or weighted, with SE, CI and z test.

    Parameters
    ----------
    data : DataFrame
        Long format, one row per rating, exactly two distinct raters; or wide, one row per
        target with the two raters' ratings in two columns (``rater=[a, b]``).
    item, rater, score : str
        Long format: columns naming the target, the rater and the category given.
        Wide format: ``rater`` lists the two rating columns (e.g. ``["judge", "golden"]``,
        the shape :func:`hce.stats.golden_agreement` takes), ``score`` is left out and
        ``item`` is optional (default: each row is a target).
    weights : {"unweighted", "linear", "quadratic"}, default "unweighted"
        Agreement weights on category positions (see :func:`~hce.stats.reliability.agreement_weights`).
    categories : sequence, optional
        All categories in order; defaults to the sorted observed ones. Give it when a
        category is possible but unused, since weighted kappa depends on the positions.
    %(confidence)s
    ci_method : {"fisher-z", "wald", "bootstrap"}, default "fisher-z"
        ``"fisher-z"``: the Wald interval on the Fisher z scale, ``tanh(atanh(kappa) +- z se
        / (1 - kappa^2))`` (the delta-method SE of ``atanh(kappa)``), inside (-1, 1) by
        construction and not estimable (NaN) at kappa = +-1; ``"wald"``: estimate +- z se
        (R's ``psych::cohen.kappa``, SAS, statsmodels), which leaves [-1, 1] near perfect
        agreement or with few targets; ``"bootstrap"``: the percentile
        interval over ``n_boot`` resamples of the targets (of the clusters with ``cluster``),
        inside [-1, 1] by construction.
    cluster : str, optional
        Long data: a column constant within a target naming the unit the bootstrap
        resamples (e.g. the reply that several coded segments come from), for targets that
        are not independent. Only with ``ci_method="bootstrap"``.
    %(n_boot)s
        Here: resamples (``ci_method="bootstrap"``).
    %(random_state)s

    Returns
    -------
    DataFrame
        One row: ``metric`` ("Cohen's kappa"), ``weights``, ``estimate``, ``se``
        (large-sample, non-null), ``ci_low``, ``ci_high`` (``ci_method``'s), ``statistic``
        (z = kappa / se0 with the null SE), ``p_value`` (two-sided, normal), ``pa``
        (weighted observed agreement), ``pe`` (chance agreement), the kappa-paradox
        diagnostics ``prevalence_index`` = ``|a - d|/n`` and ``bias_index`` = ``|b - c|/n`` (two
        categories; NaN for more) and ``pabak`` = ``(q p_o - 1)/(q - 1)`` with p_o the unweighted
        observed agreement (Byrt, Bishop & Carlin 1993), ``method``,
        ``ci_method``, ``n_items`` (rated by both), ``n_raters``, ``n_scores``,
        ``n_dropped`` (missing ratings and ratings of targets rated only once).

    See Also
    --------
    hce.stats.golden_agreement : a boolean judge against golden labels in two columns:
        the same kappa and interval (unweighted), next to accuracy, precision, recall, F1
        and MCC.

    Notes
    -----
    With ``p_ij`` the share of targets put in category i by rater A and j by B, margins
    ``p_i.``, ``p_.j`` and weights ``w_ij`` (Fleiss, Cohen & Everitt 1969)::

        pa = sum w_ij p_ij,  pe = sum w_ij p_i. p_.j,  kappa = (pa - pe) / (1 - pe)
        wa_i = sum_j p_.j w_ij,  wb_j = sum_i p_i. w_ij
        Var = [sum p_ij (w_ij - (wa_i + wb_j)(1 - kappa))^2 - (kappa - pe (1 - kappa))^2]
              / (n (1 - pe)^2)
        Var0 = [sum p_i. p_.j (w_ij - (wa_i + wb_j))^2 - pe^2] / (n (1 - pe)^2)   (under H0)

    References
    ----------
    .. [1] Cohen, J. (1968). Weighted kappa. Psychological Bulletin, 70(4), 213-220.
    .. [2] Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors
       of kappa and weighted kappa. Psychological Bulletin, 72(5), 323-327.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import cohen_kappa
    >>> d = pd.DataFrame({"item": [1, 2, 3, 4, 5, 6] * 2, "rater": ["a"] * 6 + ["b"] * 6,
    ...                   "label": [1, 1, 2, 2, 3, 3, 1, 2, 2, 2, 3, 1]})
    >>> cohen_kappa(d, item="item", rater="rater", score="label")[["estimate", "se", "ci_low", "ci_high"]].round(3)
       estimate     se  ci_low  ci_high
    0       0.5  0.273  -0.163    0.852

    The default interval is bounded; the plain Wald interval (psych, SAS) passes 1 here:

    >>> cohen_kappa(d, item="item", rater="rater", score="label", ci_method="wald")[["ci_low", "ci_high"]].round(3)
       ci_low  ci_high
    0  -0.036    1.036

    The bootstrap percentile interval stays inside [-1, 1] too:

    >>> k = cohen_kappa(d, item="item", rater="rater", score="label", ci_method="bootstrap", random_state=1)
    >>> bool(-1 <= k["ci_low"].iloc[0] <= k["estimate"].iloc[0] <= k["ci_high"].iloc[0] <= 1), k["ci_method"].iloc[0]
    (True, 'percentile bootstrap over targets (B=1000)')

    The same ratings side by side, one column per rater:

    >>> wide = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3], "b": [1, 2, 2, 2, 3, 1]})
    >>> cohen_kappa(wide, rater=["a", "b"])[["estimate", "se"]].round(3)
       estimate     se
    0       0.5  0.273
    """
    _check_options(weights, confidence)
    check_choice("ci_method", ci_method, ("fisher-z", "wald", "bootstrap"))
    check_n_boot(n_boot)
    if cluster is not None and ci_method != "bootstrap":
        raise DataError(f"cluster={cluster!r} is used by the bootstrap interval only; pass ci_method='bootstrap'")
    if ci_method == "bootstrap" and n_boot == 0:
        raise DataError("ci_method='bootstrap' needs n_boot >= 1")
    if rater is not None and not isinstance(rater, str):
        if score is not None:
            raise DataError(f"rater={list(rater)!r} names two rating columns (wide data); "
                            f"leave score={score!r} out, or give one rater column for long data")  # fmt: skip
        if cluster is not None:
            raise DataError(f"cluster={cluster!r} takes long data (item=, rater=, score=): one row per rating")
        data = _two_columns(data, item, rater)
        item, rater, score = "target", "rater", "rating"
    elif item is None or rater is None or score is None:
        raise DataError("give item=, rater= and score= columns (long data), or "
                        "rater=[column_a, column_b] (wide data: one row per target)")  # fmt: skip
    r = long_ratings(data, item, rater, score, numeric=False)
    if r.n_raters != 2:
        raise DataError(
            f"Cohen's kappa needs exactly 2 raters in {rater!r}; found {r.n_raters}: "
            f"{list(r.rater_labels[:10])}. Use fleiss_kappa or gwet_ac for more."
        )
    position, cats = _categories(r, categories, weights)
    both = np.bincount(r.target, minlength=r.n_targets)[r.target] == 2
    if int(both.sum() // 2) < 2:
        raise DataError("fewer than 2 targets are rated by both raters")
    order = np.argsort(r.target[both & (r.rater == 0)])
    a = position[both & (r.rater == 0)][order]
    b = position[both & (r.rater == 1)][np.argsort(r.target[both & (r.rater == 1)])]
    targets = np.sort(r.target[both & (r.rater == 0)])
    units = targets if cluster is None else _clusters(data, item, cluster, r, targets)
    q = len(cats)
    cross = np.bincount(a * q + b, minlength=q * q).reshape(q, q)
    return _cohen_table(cross, lambda: (_unit_tables(a, b, units, q), None), len(r.value), r.n_missing, weights,
                        confidence, ci_method, cluster, n_boot, random_state)  # fmt: skip


def _cohen_table(cross: np.ndarray, per_unit: Callable[[], tuple[np.ndarray, np.ndarray | None]], n_rated: int,
                 n_missing: int, weights: Weights, confidence: float, ci_method: KappaInterval, cluster: str | None,
                 n_boot: int, random_state) -> pd.DataFrame:  # fmt: skip
    """Cohen's kappa table of the two raters' cross table ``cross`` (category positions, of
    the targets rated by both); ``per_unit()`` gives :func:`_kappa_bootstrap` its units."""
    n, q = int(cross.sum()), len(cross)
    w = agreement_weights(q, weights)
    core = kappa_core(cross, w)
    _check_chance(core["pe"])
    kappa, se = core["kappa"], core["se"]
    z = kappa / core["se0"]
    if ci_method == "wald":
        half = stats.norm.ppf((1 + confidence) / 2) * se
        low, high, how = kappa - half, kappa + half, "Wald, SE of Fleiss, Cohen & Everitt (1969)"
    elif ci_method == "fisher-z":
        (low, high), how = kappa_z_interval(kappa, se, confidence), FISHER_Z_KAPPA
    else:
        low, high = _kappa_bootstrap(*per_unit(), q, w, n_boot, confidence, as_generator(random_state))
        how = f"percentile bootstrap over {'targets' if cluster is None else cluster} (B={n_boot})"
    return pd.DataFrame(
        [
            _row(
                "Cohen's kappa", weights, estimate=kappa, se=se,
                ci_low=low, ci_high=high, statistic=float(z),
                p_value=float(2 * stats.norm.sf(abs(z))), pa=core["pa"], pe=core["pe"],
                **paradox_of_table(cross), method="Cohen (1960, 1968)", ci_method=how,
                **counts(n, 2, 2 * n, n_missing + n_rated - 2 * n),
            )  # fmt: skip
        ],
        columns=COLUMNS,
    )


def _clusters(data: pd.DataFrame, item: str, cluster: str, r: Ratings, targets: np.ndarray) -> np.ndarray:
    """The ``cluster`` of each target (codes in ``targets`` order), refusing a target in two clusters."""
    require_columns(data, [cluster])
    pairs = data[[item, cluster]].dropna().drop_duplicates()
    split = pairs[item].duplicated(keep=False)
    if split.any():
        raise DataError(f"cluster={cluster!r} must be constant within each {item}; {item} "
                        f"{pairs.loc[split, item].iloc[0]!r} lies in several clusters")  # fmt: skip
    of = dict(zip(pairs[item], pairs[cluster]))
    labels = r.target_labels[targets]
    missing = [t for t in labels if t not in of]
    if missing:
        raise DataError(f"cluster={cluster!r} is missing for {item} {missing[:5]}")
    return pd.factorize(pd.Series([of[t] for t in labels]))[0]


def _category_counts(
    r: Ratings, categories: Sequence | None, weights: Weights = "unweighted"
) -> np.ndarray:
    """Targets x categories matrix: how many raters put each target in each category."""
    position, cats = _categories(r, categories, weights)
    q = len(cats)
    return np.bincount(r.target * q + position, minlength=r.n_targets * q).reshape(-1, q)


def _chance_corrected_in_engine(kind: Literal["fleiss", "gwet", "pa"]) -> Callable[..., pd.DataFrame]:
    """Fleiss' kappa, Gwet's AC or percent agreement of a frame of another engine: the
    targets x categories counts come back from one grouped pass, nothing else."""

    def run(frame: EngineFrame, *, item: str, rater: str, score: str, categories: Sequence | None = None,
            confidence: float = 0.95, weights: Weights = "unweighted") -> pd.DataFrame:  # fmt: skip
        _check_options(weights, confidence)
        ratings = rated(frame, item, rater, score, numeric=False)
        units, values, n = unit_counts(ratings.frame, item, score)
        cats = category_order(pd.unique(values), categories, weights)
        agree = count_matrix(units, values, n, cats)
        return _chance_corrected(agree, ratings.n_raters, ratings.n_missing, kind, weights, confidence)

    return run


def _chance_corrected(
    agree: np.ndarray,
    n_raters: int,
    n_missing: int,
    kind: Literal["fleiss", "gwet", "pa"],
    weights: Weights,
    confidence: float,
) -> pd.DataFrame:
    """Fleiss' kappa, Gwet's AC1/AC2 or percent agreement with Gwet's (2014) variance.

    Follows irrCAC (``fleiss.kappa.raw``, ``gwet.ac1.raw``, ``pa.coeff.raw``): targets with a
    single rating enter the chance term but not observed agreement; the variance is the
    linearisation of Gwet (2008, 2014) with an infinite population, and the interval uses
    Student's t on n - 1 df, its upper limit capped at 1. ``agree`` is the targets x
    categories table of :func:`_category_counts` (every target with a rating; a frame of
    another engine counts it there); ``n_missing`` the rows without a rating.
    """
    agree = agree.astype(float)
    n, q = agree.shape
    w = agreement_weights(q, weights)
    r_i = agree.sum(axis=1)
    two_plus = r_i >= 2
    n2 = int(two_plus.sum())
    if n2 < 2:
        raise DataError("fewer than 2 targets have two or more ratings")
    pairs = r_i * (r_i - 1)
    agreeing = (agree * (agree @ w.T - 1)).sum(axis=1)
    pa_i = np.where(two_plus, agreeing / np.where(two_plus, pairs, 1), 0.0)
    pa = pa_i[two_plus].mean()
    pi = (agree / r_i[:, None]).mean(axis=0)
    if kind == "fleiss":
        pe = float(pi @ w @ pi)
        pe_i = agree @ ((w @ pi + w.T @ pi) / 2) / r_i
    elif kind == "gwet":
        scale = w.sum() / (q * (q - 1)) if q > 1 else 0.0
        pe = float(scale * (pi * (1 - pi)).sum())
        pe_i = scale * (agree @ (1 - pi)) / r_i
    else:
        pe, pe_i = 0.0, np.zeros(n)
    _check_chance(pe)
    estimate = (pa - pe) / (1 - pe)
    coef_i = (n / n2) * (pa_i - pe * two_plus) / (1 - pe)
    coef_i -= 2 * (1 - estimate) * (pe_i - pe) / (1 - pe)
    se = float(np.sqrt(((coef_i - estimate) ** 2).sum() / (n * (n - 1))))
    t_crit = stats.t.ppf((1 + confidence) / 2, n - 1)
    with np.errstate(divide="ignore"):
        t = estimate / se
    name, method = {
        "fleiss": ("Fleiss' kappa", "Fleiss (1971), generalised to missing ratings (Gwet 2014)"),
        "gwet": ("Gwet's AC1" if weights == "unweighted" else "Gwet's AC2", "Gwet (2008, 2014)"),
        "pa": ("percent agreement", "share of agreeing rater pairs per target (Gwet 2014)"),
    }[kind]
    n_used = int(agree.sum())
    return pd.DataFrame(
        [
            _row(
                name, weights, estimate=float(estimate), se=se,
                ci_low=float(estimate - t_crit * se),
                ci_high=float(min(1.0, estimate + t_crit * se)),
                statistic=float(t), p_value=float(2 * stats.t.sf(abs(t), n - 1)),
                pa=float(pa), pe=pe, method=method,
                **({**NO_PARADOX, "pabak": pabak(pa, q)} if weights == "unweighted" else NO_PARADOX),
                ci_method="t on n-1 df, linearised variance of Gwet (2008)",
                **counts(n, n_raters, n_used, n_missing),
            )  # fmt: skip
        ],
        columns=COLUMNS,
    )


def _weighted_coefficient(metric: str) -> Callable[[Callable], Callable]:
    """The public agreement coefficient ``metric`` (``"gwet"``, ``"pa"``) of long ratings.

    Gwet's AC and percent agreement take the same arguments and differ only in the chance
    term: one signature, check and computation serve both, and the decorated function,
    which has no body, gives the statistic its name and docstring.
    """

    def decorate(stub: Callable) -> Callable:
        def public(data: pd.DataFrame, *, item: str, rater: str, score: str, weights: Weights = "unweighted",
                   categories: Sequence | None = None, confidence: float = 0.95) -> pd.DataFrame:  # fmt: skip
            _check_options(weights, confidence)
            r = long_ratings(data, item, rater, score, numeric=False)
            agree = _category_counts(r, categories, weights)
            return _chance_corrected(agree, r.n_raters, r.n_missing, metric, weights, confidence)

        public.__name__, public.__qualname__, public.__doc__ = stub.__name__, stub.__qualname__, stub.__doc__
        return ratings_statistic(labels=("score",), scored=("score",), engine=_chance_corrected_in_engine(metric))(public)

    return decorate


@ratings_statistic(labels=("score",), varying=("score",), engine=_chance_corrected_in_engine("fleiss"))
def fleiss_kappa(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    categories: Sequence | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Fleiss' kappa for any number of raters, with missing ratings, SE and CI.

    %(agreement_columns)s
    %(agreement_rest)s

    Notes
    -----
    With r_ik the raters putting target i in category k, r_i = sum_k r_ik, and targets
    with r_i >= 2 for observed agreement:
    pa = mean_i sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)), pi_k = mean_i r_ik / r_i,
    pe = sum_k pi_k^2, kappa = (pa - pe) / (1 - pe). Equal to Fleiss (1971) when every
    target has the same number of ratings. SE: Gwet (2014), as ``irrCAC::fleiss.kappa.raw``.

    References
    ----------
    .. [1] Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
       Psychological Bulletin, 76(5), 378-382.
    .. [2] Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.). Advanced
       Analytics.

    %(three_rater_example)s
    >>> from hce.stats import fleiss_kappa
    >>> fleiss_kappa(d, item="item", rater="rater", score="label")[["estimate", "se", "pa", "pe"]].round(3)
       estimate     se     pa     pe
    0     0.314  0.429  0.667  0.514
    """
    check_confidence(confidence)
    r = long_ratings(data, item, rater, score, numeric=False)
    agree = _category_counts(r, categories, "unweighted")
    return _chance_corrected(agree, r.n_raters, r.n_missing, "fleiss", "unweighted", confidence)


@_weighted_coefficient("gwet")
def gwet_ac() -> pd.DataFrame:
    """Gwet's AC1 (unweighted) or AC2 (weighted) agreement coefficient, with variance.

    %(agreement_columns)s
    %(agreement_weights)s
    %(agreement_rest)s

    Notes
    -----
    pa as for Fleiss' kappa with weighted agreement (r*_ik = sum_l w_kl r_il replaces r_ik
    in the second factor); pe = T_w / (q (q - 1)) sum_k pi_k (1 - pi_k), with T_w the sum
    of the q x q weights; AC = (pa - pe) / (1 - pe). The chance term stays small when
    prevalence is extreme, which is why AC1 is preferred to kappa for rare behaviours.
    SE: Gwet (2008), as ``irrCAC::gwet.ac1.raw``.

    References
    ----------
    .. [1] Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the
       presence of high agreement. British Journal of Mathematical and Statistical
       Psychology, 61(1), 29-48.
    .. [2] Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.).

    %(three_rater_example)s
    >>> from hce.stats import gwet_ac
    >>> gwet_ac(d, item="item", rater="rater", score="label")[["metric", "estimate", "pa", "pe"]].round(3)
           metric  estimate     pa     pe
    0  Gwet's AC1     0.351  0.667  0.486
    """


@_weighted_coefficient("pa")
def percent_agreement() -> pd.DataFrame:
    """Percent agreement: the share of rater pairs that agree on a target, averaged.

    %(agreement_columns)s
    %(agreement_weights)s
    %(agreement_rest)s

    Notes
    -----
    pa = mean over targets with 2+ ratings of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)):
    for two raters, the share of targets on which they agree. No chance correction.
    SE: Gwet (2014), as ``irrCAC::pa.coeff.raw``.

    References
    ----------
    .. [1] Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.).

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import percent_agreement
    >>> d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "rater": ["a", "b"] * 4,
    ...                   "label": [1, 1, 0, 0, 1, 0, 0, 0]})
    >>> float(percent_agreement(d, item="item", rater="rater", score="label").estimate[0])
    0.75
    """


def _refuse_non_binary(score: str, value: object) -> None:
    raise DataError(f"column {score!r} must hold 0/1 or booleans; found {value!r}")


def _strict_in_engine(frame: EngineFrame, *, item: str, rater: str, score: str, confidence: float) -> pd.DataFrame:
    """:func:`strict_agreement` of a frame of another engine: per target, its ratings and
    ones, reduced in the engine to four counts (targets rated by every rater, and among
    them those all 1, all 0; the ratings)."""
    import narwhals as nw

    check_confidence(confidence)
    ratings = rated(frame, item, rater, score, numeric=True)
    y = nw.col(score).cast(nw.Float64)
    rows = ratings.frame.frame.with_columns(y.alias("_y"))
    bad = rows.filter(~nw.col("_y").is_in([0.0, 1.0])).select(nw.len().alias("n"), nw.col("_y").min().alias("value"))
    bad = bad.collect().to_pandas().iloc[0]
    if bad["n"]:
        _refuse_non_binary(score, float(bad["value"]))
    full = nw.col("_n") == ratings.n_raters
    found = (
        rows.group_by(item).agg(nw.len().alias("_n"), nw.col("_y").sum().alias("_ones"))
        .select(nw.col("_n").sum().alias("ratings"), full.cast(nw.Int64).sum().alias("full"),
                (full & (nw.col("_ones") == ratings.n_raters)).cast(nw.Int64).sum().alias("strict inclusion"),
                (full & (nw.col("_ones") == 0)).cast(nw.Int64).sum().alias("strict exclusion"))
        .collect().to_pandas().iloc[0]
    )  # fmt: skip
    hits = {name: int(found[name]) for name in ("strict inclusion", "strict exclusion")}
    return _strict_table(hits, int(found["full"]), ratings.n_raters, int(found["ratings"]), ratings.n_missing, confidence)


def _strict_table(hits: dict[str, int], n: int, n_raters: int, n_ratings: int, n_missing: int,
                  confidence: float) -> pd.DataFrame:  # fmt: skip
    """:func:`strict_agreement`'s rows from the counts: ``hits`` (targets all 1, all 0) among
    the ``n`` targets rated by every one of ``n_raters``; ``n_ratings`` ratings in all."""
    if n == 0:
        raise DataError("no target is rated by every rater")
    hits = {**hits, "strict agreement": hits["strict inclusion"] + hits["strict exclusion"]}
    z = stats.norm.ppf((1 + confidence) / 2)
    n_used = n * n_raters
    rows = []
    for name, x in hits.items():
        p = x / n
        centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z / (1 + z**2 / n) * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
        rows.append(
            _row(
                name, None, estimate=p, se=float(np.sqrt(p * (1 - p) / n)),
                ci_low=float(centre - half), ci_high=float(centre + half),
                statistic=np.nan, p_value=np.nan, pa=np.nan, pe=np.nan,
                method="share of targets with unanimous raters (strict agreement, the EditJudge paper's)",
                ci_method="Wilson score",
                **counts(n, n_raters, n_used, n_missing + n_ratings - n_used),
            )  # fmt: skip
        )
    return pd.DataFrame(rows, columns=COLUMNS)


@ratings_statistic(labels=("score",), scored=("score",), engine=_strict_in_engine)
def strict_agreement(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Strict inclusion, exclusion and agreement of binary judgements (Seegmiller et al. 2025, Table 3).

    Parameters
    ----------
    data : DataFrame
        Long format, one row per (target, rater) judgement.
    item, rater, score : str
        Columns naming the target (e.g. a patient message), the rater (annotator) and the
        binary judgement (1/True: the theme is included; 0/False: excluded).
    %(confidence)s
        Here: the Wilson intervals.

    Returns
    -------
    DataFrame
        Three rows, ``metric`` = "strict inclusion" (share of targets every rater
        marked 1), "strict exclusion" (every rater marked 0) and "strict agreement" (their
        sum); ``weights`` (None), ``estimate``, ``se`` (binomial), ``ci_low``, ``ci_high``
        (Wilson score), ``statistic``, ``p_value``, ``pa``, ``pe`` (NaN: no test),
        ``method``, ``ci_method``, ``n_items`` (targets rated by every rater),
        ``n_raters``, ``n_scores``, ``n_dropped`` (missing ratings and the ratings of
        targets some rater did not rate).

    Notes
    -----
    EditJudge's theme-level inter-annotator agreement (Seegmiller et al. 2025) counts, per theme, the messages
    whose three clinician responses all include it (strict inclusion) or all omit it
    (strict exclusion). Only targets rated by every rater count, since unanimity among
    fewer raters is a weaker event. Run once per theme, e.g. with ``groupby``.

    References
    ----------
    .. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
       statistical inference. JASA, 22(158), 209-212.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import strict_agreement
    >>> d = pd.DataFrame({"message": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4],
    ...                   "clinician": ["a", "b", "c"] * 4,
    ...                   "includes_theme": [1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0]})
    >>> strict_agreement(d, item="message", rater="clinician", score="includes_theme")[["metric", "estimate"]]
                 metric  estimate
    0  strict inclusion      0.25
    1  strict exclusion      0.50
    2  strict agreement      0.75
    """
    check_confidence(confidence)
    r = long_ratings(data, item, rater, score)
    if not np.isin(r.value, [0.0, 1.0]).all():
        _refuse_non_binary(score, r.value[~np.isin(r.value, [0.0, 1.0])][0])
    per_target = np.bincount(r.target, minlength=r.n_targets)
    full = per_target == r.n_raters
    ones = np.bincount(r.target, weights=r.value, minlength=r.n_targets)[full]
    hits = {"strict inclusion": int((ones == r.n_raters).sum()), "strict exclusion": int((ones == 0).sum())}
    return _strict_table(hits, int(full.sum()), r.n_raters, len(r.value), r.n_missing, confidence)

