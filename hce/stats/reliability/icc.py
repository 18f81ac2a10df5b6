"""Intraclass correlations: the six Shrout-Fleiss forms, complete or incomplete designs."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Literal, TypeVar

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, plain, require_columns
from hce.errors import DataError
from hce.stats.mixed.formula import check_identifiable
from hce.stats.reliability._common import COUNT_COLUMNS, counts, long_ratings
from hce.stats.reliability._engine import rated
from hce.stats.reliability.icc_reml import (
    DesignSums,
    KRule,
    design_sums,
    oneway_mean_squares,
    oneway_sums,
    reml_mean_squares,
)
from hce.stats._frames import EngineFrame
from hce.stats._validate import ratings_statistic

Method = Literal["auto", "anova", "reml"]
Forms = Literal["all", "oneway"]
#: The forms ``forms="oneway"`` keeps: those of exchangeable raters (a judge's repeated attempts).
ONEWAY = ("ICC1", "ICC1k")
T = TypeVar("T")

#: Shrout-Fleiss name, McGraw-Wong name, description, for the six forms in output order.
FORMS = [
    ("ICC1", "ICC(1)", "one-way random, single rater"),
    ("ICC2", "ICC(A,1)", "two-way random, absolute agreement, single rater"),
    ("ICC3", "ICC(C,1)", "two-way mixed, consistency, single rater"),
    ("ICC1k", "ICC(k)", "one-way random, mean of k raters"),
    ("ICC2k", "ICC(A,k)", "two-way random, absolute agreement, mean of k raters"),
    ("ICC3k", "ICC(C,k)", "two-way mixed, consistency, mean of k raters"),
]

EXACT_CI = "exact F (Shrout & Fleiss 1979; McGraw & Wong 1996)"

COLUMNS = [
    "metric", "mcgraw_wong", "description", "estimate", "ci_low", "ci_high", "statistic",
    "df1", "df2", "p_value", "k", "method", "ci_method", *COUNT_COLUMNS,
]  # fmt: skip


def mean_squares(y: np.ndarray) -> dict[str, float]:
    """Two-way ANOVA mean squares of a complete targets x raters matrix.

    Returns ``msr`` (targets), ``msc`` (raters), ``mse`` (residual) and ``msw`` (within
    targets, the one-way error) with their degrees of freedom ``df_r, df_c, df_e, df_w``.
    """
    grand = y.mean()
    return mean_squares_of_means(y.mean(axis=1), y.mean(axis=0), grand, ((y - grand) ** 2).sum())


def mean_squares_of_means(row_means: np.ndarray, column_means: np.ndarray, grand: float, ss_t: float) -> dict[str, float]:
    """:func:`mean_squares` of a complete n x k matrix from its row means, column means,
    grand mean and total sum of squared deviations (what an engine's grouped pass gives)."""
    n, k = len(row_means), len(column_means)
    ss_r = k * ((row_means - grand) ** 2).sum()
    ss_c = n * ((column_means - grand) ** 2).sum()
    ss_w = ss_t - ss_r
    ss_e = ss_w - ss_c
    df_r, df_c, df_e, df_w = n - 1, k - 1, (n - 1) * (k - 1), n * (k - 1)
    return dict(
        msr=ss_r / df_r, msc=ss_c / df_c, mse=ss_e / df_e, msw=ss_w / df_w,
        df_r=df_r, df_c=df_c, df_e=df_e, df_w=df_w,
    )  # fmt: skip


def icc_core(
    ms: dict[str, float], n: float, k: float, confidence: float = 0.95
) -> list[dict[str, float]]:
    """The six ICCs with F tests and F-based intervals from mean squares.

    ``ms`` is the output of :func:`mean_squares` (or pseudo mean squares rebuilt from variance
    components); ``n`` targets, ``k`` raters. Formulas of Shrout & Fleiss (1979) and McGraw &
    Wong (1996); the ICC(A,1) interval uses Satterthwaite's degrees of freedom as in
    ``psych::ICC``. Each row holds estimate, ci_low, ci_high, statistic, df1, df2, p_value.
    """
    msr, msc, mse, msw = ms["msr"], ms["msc"], ms["mse"], ms["msw"]
    df_r, df_e, df_w = ms["df_r"], ms["df_e"], ms["df_w"]
    tail = (1 + confidence) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        f1, f3 = msr / msw, msr / mse
        f1_lo = f1 / stats.f.ppf(tail, df_r, df_w)
        f1_hi = f1 * stats.f.ppf(tail, df_w, df_r)
        f3_lo = f3 / stats.f.ppf(tail, df_r, df_e)
        f3_hi = f3 * stats.f.ppf(tail, df_e, df_r)
        icc1 = (msr - msw) / (msr + (k - 1) * msw)
        icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icc3 = (msr - mse) / (msr + (k - 1) * mse)
        # Satterthwaite df for the ICC(A,1) interval (McGraw & Wong 1996, Table 7)
        fj = msc / mse
        vn = (k - 1) * (n - 1) * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = (n - 1) * (k * icc2 * fj) ** 2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        fu, fl = stats.f.ppf(tail, df_r, v), stats.f.ppf(tail, v, df_r)
        denom = k * msc + (k * n - k - n) * mse
        icc2_lo = n * (msr - fu * mse) / (fu * denom + n * msr)
        icc2_hi = n * (fl * msr - mse) / (denom + n * fl * msr)

    def mean_of_k(r: float) -> float:
        return k * r / (1 + (k - 1) * r)  # Spearman-Brown

    p1, p3 = stats.f.sf(f1, df_r, df_w), stats.f.sf(f3, df_r, df_e)
    single = [
        (icc1, (f1_lo - 1) / (f1_lo + k - 1), (f1_hi - 1) / (f1_hi + k - 1), f1, df_w, p1),
        (icc2, icc2_lo, icc2_hi, f3, df_e, p3),
        (icc3, (f3_lo - 1) / (f3_lo + k - 1), (f3_hi - 1) / (f3_hi + k - 1), f3, df_e, p3),
    ]
    average = [
        ((msr - msw) / msr, 1 - 1 / f1_lo, 1 - 1 / f1_hi, f1, df_w, p1),
        (mean_of_k(icc2), mean_of_k(icc2_lo), mean_of_k(icc2_hi), f3, df_e, p3),
        ((msr - mse) / msr, 1 - 1 / f3_lo, 1 - 1 / f3_hi, f3, df_e, p3),
    ]
    keys = ["estimate", "ci_low", "ci_high", "statistic", "df2", "p_value"]
    rows = [dict(zip(keys, map(float, row)), df1=float(df_r)) for row in single + average]
    return rows


def _icc_in_engine(frame: EngineFrame, *, item: str, rater: str, score: str, confidence: float, method: Method,
                   k: KRule, forms: Forms = "all") -> pd.DataFrame:  # fmt: skip
    """:func:`icc` of a frame of another engine, from grouped sums.

    ANOVA: the means of each target and rater and the total sum of squares (targets not
    rated by every rater left out by a join, as in pandas). REML: the :class:`DesignSums`,
    from grouped passes over the ratings joined with their target's count and total (per
    class of targets and rater, and per class and pair of raters): numbers of the order of
    classes x raters^2, never the ratings. ``forms="oneway"`` skips what only the two-way forms
    read: the rater means (ANOVA) and the rater and rater-pair sums (REML, ``k="harmonic"``).
    """
    import narwhals as nw

    check_options(confidence, method, k, forms)
    oneway = forms == "oneway"
    ratings = rated(frame, item, rater, score, numeric=True)
    f, y = ratings.frame, nw.col(score).cast(nw.Float64)
    targets = f.frame.with_columns(y.alias("_y")).group_by(item).agg(nw.len().alias("_ni"), nw.col("_y").sum().alias("_ty"))
    per_target = targets.collect().to_pandas().sort_values(item, kind="stable")
    n_targets, n_raters = len(per_target), ratings.n_raters
    if n_raters < 2 or n_targets < 2:
        raise DataError(f"ICC needs at least 2 targets and 2 raters; got {n_targets} targets ({item!r}) and "
                        f"{n_raters} raters ({rater!r})")  # fmt: skip
    # one pass for the extremes and the sums the REML design sums read, of the ratings less their
    # mean (see hce.stats.reliability.icc_reml.DesignSums)
    shift = float(per_target["_ty"].sum() / per_target["_ni"].sum())
    total = f.frame.with_columns(y.alias("_y"), ((y - shift) ** 2).alias("_yy")).select(
        nw.len().alias("n"), nw.col("_y").min().alias("low"), nw.col("_y").max().alias("high"),
        nw.col("_y").sum().alias("sy"), nw.col("_yy").sum().alias("yy")).collect().to_pandas().iloc[0]  # fmt: skip
    nobs = int(total["n"])
    if total["low"] == total["high"]:
        raise DataError(f"all {nobs} ratings in {score!r} equal {total['low']:g}, so the ICC is undefined (0/0)")
    if method == "auto":
        method = "anova" if nobs == n_targets * n_raters else "reml"
    if method == "anova":
        full = per_target["_ni"].to_numpy() == n_raters
        if not full.all():
            warnings.warn(f"icc(method='anova') dropped {int((~full).sum())} of {n_targets} targets not rated by all "
                          f"{n_raters} raters ({int(per_target.loc[~full, '_ni'].sum())} ratings); method='reml' uses "
                          "every rating", UserWarning, stacklevel=2)  # fmt: skip
        if full.sum() < 2:
            raise DataError("fewer than 2 targets are rated by every rater; use method='reml'")
        kept = f if full.all() else EngineFrame(f.frame.join(
            targets.filter(nw.col("_ni") == n_raters).select(item), on=item))  # fmt: skip
        rows = kept.cell_moments([item], score)
        # the one-way forms do not read the rater means: NaN leaves the two-way mean squares NaN
        column_means = np.full(n_raters, np.nan) if oneway else kept.cell_moments([rater], score)["mean"].to_numpy(float)
        grand = float(kept.frame.select(y.mean().alias("m")).collect().to_pandas()["m"].iloc[0])
        n_kept = int(full.sum())
        # The total sum of squares as between plus within targets, the within part from each target's
        # own deviations: targets whose ratings all agree give a within part of exactly 0, as pandas'
        # matrix does, where the engine's total variance minus the between part leaves rounding noise.
        target_means = rows["mean"].to_numpy(float)
        ss_t = n_raters * float(((target_means - grand) ** 2).sum()) + float(rows["ss"].sum())
        ms = mean_squares_of_means(target_means, column_means, grand, ss_t)
        n_count = counts(n_kept, n_raters, n_kept * n_raters, ratings.n_missing + nobs - n_kept * n_raters)
        return _icc_table(ms, n_kept, float(n_raters), method, k, confidence, n_count, forms)
    # identical partitions need as many levels as ratings, which the level counts refuse first
    check_identifiable([(f"(1 | {item})", item, None, n_targets, 1), (f"(1 | {rater})", rater, None, n_raters, 1)], nobs)
    crossed = not (oneway and k == "harmonic")
    sums = _engine_design_sums(f, targets, per_target, total, item, rater, score, shift, crossed=crossed)
    ms, k_used = reml_mean_squares(sums, n_targets, n_raters, k) if crossed else oneway_mean_squares(sums, n_targets)
    return _icc_table(ms, n_targets, k_used, method, k, confidence, counts(n_targets, n_raters, nobs, ratings.n_missing),
                      forms)  # fmt: skip


def _engine_design_sums(f: EngineFrame, targets, per_target: pd.DataFrame, totals: pd.Series, item: str, rater: str,
                        score: str, shift: float, *, crossed: bool = True) -> DesignSums:  # fmt: skip
    """:class:`DesignSums` of the ratings less ``shift`` (their mean) in an engine (see
    :func:`_icc_in_engine`; ``totals``: the ratings' ``n``, sum ``sy`` and sum of squares about
    ``shift``, ``yy``); not ``crossed``: the one-way model's, without the rater sums. Sums of the
    targets' totals are shifted after they are taken (``n shift`` off a sum of ``n`` ratings):
    only a sum of squares cancels."""
    import narwhals as nw

    y = nw.col(score).cast(nw.Float64) - shift
    nt = per_target["_ni"].to_numpy()
    ty = per_target["_ty"].to_numpy(float) - nt * shift
    d = oneway_sums(int(totals["n"]), float(totals["yy"]), float(totals["sy"]) - totals["n"] * shift, nt, ty)
    if not crossed:
        return d
    sizes = d.sizes
    by_rater = f.frame.with_columns(y.alias("_y")).group_by(rater).agg(nw.len().alias("_n"), nw.col("_y").sum().alias("_s"))
    by_rater = by_rater.collect().to_pandas().sort_values(rater, kind="stable")
    raters = pd.Index(by_rater[rater])
    k, c = len(raters), len(sizes)
    pairs = f.frame.select(nw.col(item), nw.col(rater)).join(targets, on=item)
    per_cls = pairs.group_by("_ni", rater).agg(nw.len().alias("_w"), nw.col("_ty").sum().alias("_wty"))
    per_cls = per_cls.collect().to_pandas()
    at = np.searchsorted(sizes, per_cls["_ni"].to_numpy()) * k + raters.get_indexer(per_cls[rater])
    w_cls = np.bincount(at, weights=per_cls["_w"].to_numpy(float), minlength=c * k).reshape(c, k)
    wty_cls = np.bincount(at, weights=per_cls["_wty"].to_numpy(float), minlength=c * k).reshape(c, k)
    wty_cls -= shift * sizes[:, None] * w_cls  # each target of class c has sizes[c] ratings
    ww_cls = _rater_pairs(f, pairs, targets, nt, raters, sizes, w_cls, item, rater)
    return replace(d, nr=by_rater["_n"].to_numpy(float), ry=by_rater["_s"].to_numpy(float), w_cls=w_cls, wty_cls=wty_cls,
                   ww_cls=ww_cls)  # fmt: skip


def _rater_pairs(f: EngineFrame, pairs, targets, nt: np.ndarray, raters: pd.Index, sizes: np.ndarray,
                 w_cls: np.ndarray, item: str, rater: str) -> np.ndarray:  # fmt: skip
    """Per class of targets and pair of raters, how many targets both raters rated.

    Joining each target's ratings to themselves costs the sum of squared ratings per target:
    250 attempts of 100,000 items make 6 billion rows. When most targets miss few raters,
    the pairs are counted from what is missing instead: a target's pairs are all pairs,
    less those touching a rater it lacks, plus the pairs of two it lacks (inclusion and
    exclusion), so only the missing cells are joined. The cheaper of the two is taken;
    both give the same integers.
    """
    import narwhals as nw

    k, c = len(raters), len(sizes)
    cls = np.searchsorted(sizes, nt)
    missing = (k - nt).astype(float)
    if (nt.astype(float) ** 2).sum() <= (nt < k).sum() * k + (missing**2).sum():
        both = pairs.select(nw.col(item), nw.col(rater), nw.col("_ni")).join(
            f.frame.select(nw.col(item), nw.col(rater).alias("_r2")), on=item)  # fmt: skip
        return _pair_counts(both, sizes, raters, rater)
    every_rater = f.frame.select(nw.col(rater)).unique()
    short = targets.filter(nw.col("_ni") < k).select(nw.col(item), nw.col("_ni"))
    lacking = short.join(every_rater, how="cross").join(f.frame.select(nw.col(item), nw.col(rater)),
                                                        on=[item, rater], how="anti")  # fmt: skip
    both = lacking.join(lacking.select(nw.col(item), nw.col(rater).alias("_r2")), on=item)
    n_cls = np.bincount(cls, minlength=c).astype(float)
    lacks = n_cls[:, None] - w_cls  # per class and rater, the targets that rater did not rate
    return (n_cls[:, None, None] * np.ones((c, k, k)) - lacks[:, None, :] - lacks[:, :, None]
            + _pair_counts(both, sizes, raters, rater))  # fmt: skip


def _pair_counts(both, sizes: np.ndarray, raters: pd.Index, rater: str) -> np.ndarray:
    """Classes x raters x raters counts of the rows of ``both`` (columns ``_ni``, ``rater``, ``_r2``)."""
    import narwhals as nw

    k, c = len(raters), len(sizes)
    both = both.group_by("_ni", rater, "_r2").agg(nw.len().alias("_ww")).collect().to_pandas()
    at = (np.searchsorted(sizes, both["_ni"].to_numpy()) * k + raters.get_indexer(both[rater])) * k
    at += raters.get_indexer(both["_r2"])
    return np.bincount(at, weights=both["_ww"].to_numpy(float), minlength=c * k * k).reshape(c, k, k)


@ratings_statistic(numbers=("score",), varying=("score",), engine=_icc_in_engine, spread=True)
def icc(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    confidence: float = 0.95,
    method: Method = "auto",
    k: KRule = "harmonic",
    forms: Forms = "all",
) -> pd.DataFrame:
    """Intraclass correlation coefficients: all six Shrout-Fleiss forms, with F tests and CIs.

    Parameters
    ----------
    data : DataFrame
        Long format: one row per rating.
    item, rater, score : str
        Columns naming the rated target (item), the rater (a person, a model, or a judge's
        repeated attempt) and the numeric rating. Missing ratings (NaN) are allowed.
    %(confidence)s
    method : {"auto", "anova", "reml"}, default "auto"
        ``"anova"``: the classical mean squares; targets lacking a rating are dropped
        (listwise, with a warning). ``"reml"``: variance components by REML from every
        rating, no target dropped. ``"auto"``: ANOVA when every target has exactly one
        rating from every rater, else REML.
    k : {"harmonic", "raters"}, default "harmonic"
        Under REML, the number of ratings the mean forms (ICC1k, ICC2k, ICC3k) average:
        the harmonic mean of ratings per item, or the number of raters (see Notes). A
        complete design gives the same k either way.
    forms : {"all", "oneway"}, default "all"
        ``"oneway"``: only ICC1 and ICC1k, the forms for exchangeable raters (a judge's
        repeated attempts, which have no identity to agree on), with the same numbers as
        their rows under ``"all"``. It skips the two-way model: under REML with
        ``k="harmonic"`` the crossed fit and, in an engine, its per-rater and rater-pair
        sums (the costliest passes over a large log).

    Returns
    -------
    DataFrame
        One row per form: ``metric`` (Shrout-Fleiss name: ICC1, ICC2, ICC3, ICC1k, ICC2k,
        ICC3k), ``mcgraw_wong`` (McGraw-Wong name), ``description``, ``estimate``,
        ``ci_low``, ``ci_high``, ``statistic`` (F for H0: ICC = 0), ``df1``, ``df2``,
        ``p_value``, ``k`` (ratings averaged: 1, or k for the mean forms; under REML the
        harmonic mean of ratings per target, or the number of raters with ``k="raters"``),
        ``method`` (how the variance components were
        estimated), ``ci_method``, ``n_items``, ``n_raters``, ``n_scores`` (used) and
        ``n_dropped`` (rows not used: missing ratings, plus targets dropped by ANOVA).

    Raises
    ------
    DataError
        Fewer than 2 targets or raters; under REML, ratings that cannot identify the crossed
        model, such as one rating per target (lme4's checks, see
        ``hce.stats.mixed.formula.check_identifiable``).

    Notes
    -----
    With mean squares for targets (MSR), raters (MSC), residual (MSE) and within targets
    (MSW), for n targets and k raters:

    - ICC1 = (MSR - MSW) / (MSR + (k-1) MSW), F = MSR / MSW on (n-1, n(k-1)) df
    - ICC2 = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n), F = MSR / MSE
    - ICC3 = (MSR - MSE) / (MSR + (k-1) MSE), F = MSR / MSE on (n-1, (n-1)(k-1)) df
    - ICC1k = (MSR - MSW) / MSR, ICC2k = Spearman-Brown of ICC2, ICC3k = (MSR - MSE) / MSR

    Intervals are the exact F intervals of Shrout & Fleiss (1979) for ICC1 and ICC3 (and
    their means) and the Satterthwaite interval of McGraw & Wong (1996) for ICC2, as in
    ``psych::ICC`` and ``pingouin.intraclass_corr``.

    Incomplete designs (a failed attempt, a skipped item) are fitted by REML: the crossed
    model ``rating = mu + target + rater + error`` gives variances s2_t, s2_r, s2_e, and the
    one-way model ``rating = mu + target + error`` gives s2_t1, s2_w. Tests and intervals apply
    the formulas above to pseudo mean squares MSR = s2_e + k s2_t, MSC = s2_e + n s2_r,
    MSE = s2_e: exact in a complete design, an approximation otherwise (its coverage is
    checked by simulation in the test suite). REML truncates negative variances at zero, so
    an ICC below zero is reported as 0. Two conventions differ in which model gives ICC1 and
    which k the mean forms use (in R, ``d`` holds the long ratings and ``wide`` the targets x
    raters matrix with NA for a missing rating):

    ``k="harmonic"`` (default): k = the harmonic mean of ratings per target; MSW = s2_w,
    MSR of the ICC1 rows = s2_w + k s2_t1; the degrees of freedom of the data (N - n for MSW
    and N - n - k + 1 for MSE, with N ratings).

    - ICC1 = s2_t1 / (s2_t1 + s2_w), ICC1k = k s2_t1 / (k s2_t1 + s2_w), from
      ``lme4::lmer(rating ~ 1 + (1 | target), d)``;
    - ICC2 = s2_t / (s2_t + s2_r + s2_e), ICC3 = s2_t / (s2_t + s2_e), ICC2k = k s2_t /
      (k s2_t + s2_r + s2_e), ICC3k = k s2_t / (k s2_t + s2_e), from
      ``lme4::lmer(rating ~ 1 + (1 | target) + (1 | rater), d)``. ICC2 and ICC3 equal
      psych's; the mean forms and ICC1 do not.

    ``k="raters"``: R psych 2.2.9's ``psych::ICC(wide, lmer = TRUE)``, all six forms, F tests
    and bounds: every form from the crossed fit, k = the number of raters, MSW = s2_e + s2_r,
    and the degrees of freedom of the complete n x k design. So ICC1 = (k s2_t - s2_r) /
    (k s2_t + k s2_e + (k - 1) s2_r), ICC1k = (k s2_t - s2_r) / (k s2_t + s2_e), and the
    mean forms describe the mean of k ratings although most targets have fewer: a reviewer
    who checks in R gets these numbers.

    References
    ----------
    .. [1] Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing
       rater reliability. Psychological Bulletin, 86(2), 420-428.
    .. [2] McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass
       correlation coefficients. Psychological Methods, 1(1), 30-46.
    .. [3] Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear
       mixed-effects models using lme4. Journal of Statistical Software, 67(1).

    Examples
    --------
    Shrout & Fleiss (1979), 6 targets x 4 judges:

    >>> import pandas as pd
    >>> from hce.stats import icc
    >>> wide = pd.DataFrame({"J1": [9, 6, 8, 7, 10, 6], "J2": [2, 1, 4, 1, 5, 2],
    ...                      "J3": [5, 3, 6, 2, 6, 4], "J4": [8, 2, 8, 6, 9, 7]})
    >>> long = wide.rename_axis("target").reset_index().melt("target", var_name="judge")
    >>> out = icc(long, item="target", rater="judge", score="value")
    >>> out[["metric", "mcgraw_wong", "estimate", "ci_low", "ci_high"]].round(2)
      metric mcgraw_wong  estimate  ci_low  ci_high
    0   ICC1      ICC(1)      0.17   -0.13     0.72
    1   ICC2    ICC(A,1)      0.29    0.02     0.76
    2   ICC3    ICC(C,1)      0.71    0.34     0.95
    3  ICC1k      ICC(k)      0.44   -0.88     0.91
    4  ICC2k    ICC(A,k)      0.62    0.07     0.93
    5  ICC3k    ICC(C,k)      0.91    0.68     0.99

    A judge's repeated attempts are exchangeable raters: ``forms="oneway"`` gives their two
    forms, the same rows, without fitting the two-way model:

    >>> icc(long, item="target", rater="judge", score="value", forms="oneway")[["metric", "estimate"]].round(2)
      metric  estimate
    0   ICC1      0.17
    1  ICC1k      0.44
    """
    check_options(confidence, method, k, forms)
    k_rule = k
    r = long_ratings(data, item, rater, score)
    if r.n_raters < 2 or r.n_targets < 2:
        raise DataError(
            f"ICC needs at least 2 targets and 2 raters; got {r.n_targets} targets "
            f"({item!r}) and {r.n_raters} raters ({rater!r})"
        )
    if np.ptp(r.value) == 0:  # no variance to split: every ICC is 0/0, not a numpy warning
        raise DataError(f"all {len(r.value)} ratings in {score!r} equal {r.value[0]:g}, so the ICC is undefined (0/0)")
    complete = len(r.value) == r.n_targets * r.n_raters
    if method == "auto":
        method = "anova" if complete else "reml"
    if method == "anova":
        y = r.wide()
        rated_by_all = ~np.isnan(y).any(axis=1)
        n_lost = int((~rated_by_all).sum())
        if n_lost:
            warnings.warn(
                f"icc(method='anova') dropped {n_lost} of {r.n_targets} targets not rated by "
                f"all {r.n_raters} raters ({int(np.isfinite(y[~rated_by_all]).sum())} "
                f"ratings); method='reml' uses every rating",
                UserWarning,
                stacklevel=2,
            )
        y = y[rated_by_all]
        if len(y) < 2:
            raise DataError("fewer than 2 targets are rated by every rater; use method='reml'")
        ms, k, n = mean_squares(y), float(r.n_raters), len(y)
        n_used = y.size
    else:
        # the crossed model rating ~ 1 + (1 | target) + (1 | rater) must be identifiable
        check_identifiable(
            [(f"(1 | {item})", item, r.target, r.n_targets, 1),
             (f"(1 | {rater})", rater, r.rater, r.n_raters, 1)],
            len(r.value),
        )  # fmt: skip
        if forms == "oneway" and k_rule == "harmonic":
            sums = design_sums(r.target, None, r.value, r.n_targets, r.n_raters)
            ms, k = oneway_mean_squares(sums, r.n_targets)
        else:
            sums = design_sums(r.target, r.rater, r.value, r.n_targets, r.n_raters)
            ms, k = reml_mean_squares(sums, r.n_targets, r.n_raters, k_rule)
        n, n_used = r.n_targets, len(r.value)
    n_count = counts(n, r.n_raters, n_used, r.n_missing + len(r.value) - n_used)
    return _icc_table(ms, n, k, method, k_rule, confidence, n_count, forms)


def check_options(confidence: float, method: str, k: str, forms: str) -> None:
    """Refuse an option :func:`icc` does not know, naming it."""
    check_confidence(confidence)
    check_choice("method", method, ["auto", "anova", "reml"])
    check_choice("k", k, ["harmonic", "raters"])
    check_choice("forms", forms, ["all", "oneway"])


def _icc_table(ms: dict[str, float], n: int, k: float, method: str, k_rule: KRule, confidence: float,
               n_count: dict[str, int], forms: Forms = "all") -> pd.DataFrame:  # fmt: skip
    """icc's table of the six forms (or the one-way two) from the mean squares (ANOVA's, or
    REML's pseudo ones)."""
    if method == "anova":
        label, ci_label = "ANOVA mean squares", EXACT_CI
    else:
        label = "REML variance components"
        # equal to the exact intervals only when the design is complete and no variance
        # component is truncated at zero
        ci_label = (
            "F approximation at REML components (harmonic-mean k)"
            if k_rule == "harmonic"
            else "F approximation at REML components (k = raters, psych::ICC(lmer=TRUE))"
        )
    rows = icc_core(ms, n, k, confidence)
    if method == "reml" and k_rule == "harmonic":
        _oneway_rows(rows, ms, k, confidence)
    out = pd.DataFrame(
        [
            dict(
                metric=sf, mcgraw_wong=mw, description=desc, **row,
                k=1.0 if i < 3 else float(k), method=label, ci_method=ci_label, **n_count,
            )  # fmt: skip
            for i, ((sf, mw, desc), row) in enumerate(zip(FORMS, rows))
        ]
    )
    if forms == "oneway":
        out = out[out["metric"].isin(ONEWAY)].reset_index(drop=True)
    return out[COLUMNS]


def _oneway_rows(rows: list[dict], ms: dict[str, float], k: float, confidence: float) -> None:
    """Replace the one-way rows with those of the one-way REML fit (its own MSR*)."""
    oneway = icc_core({**ms, "msr": ms["msr_oneway"]}, 1.0, k, confidence)
    rows[0], rows[3] = oneway[0], oneway[3]


def _refuse_rater_in_two_groups(label: object, condition: str) -> None:
    raise DataError(f"rater {label!r} appears in more than one {condition!r}; each rater must belong to one group")


def _groups_table(names: list, part: Callable[[list], T], means: Callable[[T], T], run: Callable[[T, str], pd.DataFrame],
                  *, rater: str, condition: str, between: str) -> pd.DataFrame:  # fmt: skip
    """:func:`icc_groups`' table, on pandas rows or in an engine: ``part(names)`` the rows of
    those groups, ``means(rows)`` each target's mean per group, ``run(rows, rater)`` the ICCs."""
    parts = [run(part([name]), rater).assign(comparison="within", group=str(name)) for name in names]
    for a, b in itertools.combinations(names, 2):
        pair = part([a, b])
        got = run(means(pair), condition) if between == "means" else run(pair, rater)
        parts.append(got.assign(comparison="between", group=f"{a} vs {b}"))
    out = pd.concat(parts, ignore_index=True)
    return out[["comparison", "group", *COLUMNS]]


def _icc_groups_in_engine(frame: EngineFrame, *, item: str, rater: str, score: str, condition: str, between: str,
                          confidence: float, method: Method, k: KRule) -> pd.DataFrame:  # fmt: skip
    """:func:`icc_groups` of a frame of another engine: :func:`icc`'s grouped passes on the
    rows of each group and pair of groups (for ``between="means"``, on the targets' group
    means, a grouped mean in the engine). An engine's frame has no row order (a Parquet
    scan reads its files in parallel), so the groups come in sorted order, not in order of
    first appearance as in pandas."""
    import narwhals as nw

    check_choice("between", between, ["means", "pooled"])
    mixed = (
        # distinct pairs counted, not a grouped n_unique: Dask's (through narwhals 2.29) adds up its partitions'
        frame.frame.select(rater, condition).unique().group_by(rater).agg(nw.len().alias("_groups"))
        .filter(nw.col("_groups") > 1)
        .select(nw.col(rater).min().alias("first"), nw.len().alias("n")).collect().to_pandas().iloc[0]
    )  # fmt: skip
    if mixed["n"]:
        _refuse_rater_in_two_groups(plain(mixed["first"]), condition)
    names = sorted(frame.frame.select(nw.col(condition)).unique().collect().to_pandas()[condition].map(plain))

    def run(part: EngineFrame, raters: str) -> pd.DataFrame:
        return _icc_in_engine(part, item=item, rater=raters, score=score, confidence=confidence, method=method, k=k)

    def means(pair: EngineFrame) -> EngineFrame:
        # the mean of the non-blank ratings, blank (as pandas' NaN) where a group left a target unrated
        rating = nw.when(~pair.blank(score)).then(nw.col(score).cast(nw.Float64))
        return EngineFrame(pair.frame.with_columns(rating.alias("_rating")).group_by(item, condition)
                           .agg(nw.col("_rating").mean().alias(score)))  # fmt: skip

    return _groups_table(names, lambda chosen: frame.where(nw.col(condition).is_in(chosen)), means, run, rater=rater,
                         condition=condition, between=between)  # fmt: skip


@ratings_statistic(
    keys=("item", "rater", "condition"), numbers=("score",), varying=("score",), engine=_icc_groups_in_engine, spread=True,
    retired={"groups": "condition"},
)
def icc_groups(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    condition: str,
    between: Literal["means", "pooled"] = "means",
    confidence: float = 0.95,
    method: Method = "auto",
    k: KRule = "harmonic",
) -> pd.DataFrame:
    """ICCs within each rater group and between every pair of groups.

    The raters fall into groups (``condition``): each group's ICCs are :func:`icc` of its
    own raters, and each pair of groups is compared as ``between`` says.

    Parameters
    ----------
    data : DataFrame
        Long format, one row per rating.
    item, rater, score : str
        As in :func:`icc`.
    condition : str
        Column naming each rater's group (e.g. expert, non-expert, LLM); every rater must
        belong to exactly one group.
    between : {"means", "pooled"}, default "means"
        How two groups are compared. ``"means"``: each group's mean rating of a target acts
        as one rater, so the ICC measures agreement between the groups' consensus ratings.
        ``"pooled"``: the raters of both groups are pooled into one panel.
    %(confidence)s
    method : {"auto", "anova", "reml"}, default "auto"
        As in :func:`icc`.
    k : {"harmonic", "raters"}, default "harmonic"
        As in :func:`icc`.

    Returns
    -------
    DataFrame
        The columns of :func:`icc` preceded by ``comparison`` ("within" or "between") and
        ``group`` (the group, or ``"A vs B"``): six rows per group and per pair of groups.

    Notes
    -----
    The Adaptive Precise Boolean rubrics paper (Mallinar et al. 2025) reports ICC3 within expert, non-expert and
    automatic raters and between those groups; with ``between="means"`` a group's
    ratings of a target are averaged over the raters who rated it before the ICC is taken.

    A frame of another engine (Polars, DuckDB, PySpark, ...) is reduced there, as in
    :func:`icc`; such a frame keeps no row order, so its groups come in sorted order (in
    pandas, in order of first appearance).

    References
    ----------
    .. [1] Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing
       rater reliability. Psychological Bulletin 86, 420-428.
    .. [2] Mallinar, N., Heydari, A. A., Liu, X., et al. (2025). A scalable framework for
       evaluating health language models (Adaptive Precise Boolean rubrics).

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import icc_groups
    >>> d = pd.DataFrame({"item": [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3],
    ...                   "rater": ["e1", "e2", "m1", "m2"] * 3,
    ...                   "group": ["expert", "expert", "llm", "llm"] * 3,
    ...                   "score": [4, 5, 4, 4, 2, 2, 3, 2, 5, 4, 5, 5]})
    >>> out = icc_groups(d, item="item", rater="rater", score="score", condition="group")
    >>> out.loc[out.metric == "ICC3", ["comparison", "group", "estimate"]].round(3)
       comparison          group  estimate
    2      within         expert     0.786
    8      within            llm     0.900
    14    between  expert vs llm     0.909
    """
    check_choice("between", between, ["means", "pooled"])
    require_columns(data, [item, rater, score, condition])
    per_rater = data.groupby(rater, sort=False)[condition].nunique(dropna=False)
    if (per_rater > 1).any():
        _refuse_rater_in_two_groups(per_rater.index[per_rater > 1][0], condition)

    def run(part: pd.DataFrame, raters: str) -> pd.DataFrame:
        return icc(part, item=item, rater=raters, score=score, confidence=confidence, method=method, k=k)

    def means(pair: pd.DataFrame) -> pd.DataFrame:
        return pair.groupby([item, condition], as_index=False, sort=False)[score].mean()

    return _groups_table(list(pd.unique(data[condition])), lambda names: data[data[condition].isin(names)], means, run,
                         rater=rater, condition=condition, between=between)  # fmt: skip

