"""Calibration of a judge's confidence: ECE, MCE, Brier score with the Murphy decomposition,
log loss and reliability tables, with percentile-bootstrap intervals over rows or clusters.

Every function compares a probability column ``prob`` (from
:mod:`hce.stats.calibration.confidence` or any forecaster) with a 0/1 ``outcome`` column;
the multi-class form of :func:`calibration_metrics` takes one probability column per class.
The reliability diagram that draws :func:`reliability_table` lives in
:func:`hce.report.figures.reliability_diagram`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce._docstrings import FRAGMENTS, fill_doc, section
from hce._vocabulary import renamed
from hce.errors import DataError
from hce.stats._intervals import proportion_ci
from hce.stats._resample import (
    Bootstrap,
    as_generator,
    bootstrap_row_sums,
    bootstrap_sums,
    check_n_boot,
    percentile_interval,
    unit_sums,
)
from hce.stats._frames import EngineFrame, refuse_rows
from hce.stats._validate import reads_frame, statistic
from hce.stats.calibration.confidence import _label

Strategy = Literal["uniform", "quantile", "unique"]
STRATEGIES = ("uniform", "quantile", "unique")
F = TypeVar("F", bound=Callable)
_CELLS = 5  # per bin: n, sum p, sum y, sum p^2, sum p*y


def _bins(p: np.ndarray, n_bins: int, strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin index per forecast and each bin's (low, high) limits.

    ``uniform``: (k/M, (k+1)/M] with 0 in the first bin (Guo et al. 2017; the same rule as
    scikit-learn's ``calibration_curve``). ``quantile``: the same rule on edges at the
    empirical quantiles (``np.percentile``, linear interpolation), so tied forecasts always
    share a bin. ``unique``: one bin per distinct forecast value (Murphy 1973).
    """
    if strategy == "unique":
        values, index = np.unique(p, return_inverse=True)
        return index, values, values
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        edges = np.percentile(p, np.linspace(0, 100, n_bins + 1))
    index = np.searchsorted(edges[1:-1], p)
    return index, edges[:-1], edges[1:]


def _check_binary(data, prob, outcome):
    require_columns(data, [prob, outcome])
    p = numeric_column(data, prob)
    y = numeric_column(data, outcome)
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {prob!r} must hold probabilities in [0, 1]; row {row!r} holds {p[bad][0]!r}")
    bad = ~np.isnan(y) & (y != 0) & (y != 1)
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {outcome!r} must be 0/1 or boolean; row {row!r} holds {y[bad][0]!r}")
    return p, y


def _units(data: pd.DataFrame, item: str, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """Cluster code of each kept row and the number of clusters."""
    # sorted, so the clusters are drawn in the order a frame of another engine gives them
    codes, uniques = pd.factorize(data[item].to_numpy()[keep], use_na_sentinel=False, sort=True)
    return codes, len(uniques)


def _decompose(sums: np.ndarray, n_bins: int) -> dict[str, np.ndarray]:
    """Calibration statistics from per-bin sums, vectorised over leading replicate axes.

    ``sums[..., 5*b + j]`` holds cell j of bin b (n, sum p, sum y, sum p^2, sum p*y).
    """
    s = sums[..., : _CELLS * n_bins].reshape(*sums.shape[:-1], n_bins, _CELLS)
    n_b, sp, sy, spp, spy = (s[..., j] for j in range(_CELLS))
    total = n_b.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fbar = sp / n_b
        obar = sy / n_b
        gap = np.where(n_b > 0, np.abs(obar - fbar), np.nan)
        o_all = sy.sum(-1) / total
        filled = np.where(n_b > 0, 1.0, 0.0)
        rel = np.nansum(filled * n_b * (fbar - obar) ** 2, axis=-1) / total
        res = np.nansum(filled * n_b * (obar - o_all[..., None]) ** 2, axis=-1) / total
        wbv = np.nansum(filled * (spp - n_b * fbar**2), axis=-1) / total
        # A sum of squared deviations computed as sum p^2 - n fbar^2: cancellation leaves +-1e-15
        # where every p of a bin is equal. The variance is >= 0; residue below 1e-12 of E[p^2] is 0.
        wbv = np.where(wbv < 1e-12 * spp.sum(-1) / total, 0.0, wbv)
        wbc = 2 * np.nansum(filled * (spy - n_b * fbar * obar), axis=-1) / total
        brier = (spp.sum(-1) - 2 * spy.sum(-1) + sy.sum(-1)) / total
        ece = np.nansum(filled * n_b * np.nan_to_num(gap), axis=-1) / total
        mce = np.nanmax(np.where(n_b > 0, gap, -np.inf), axis=-1)
    return {
        "ece": ece,
        "mce": mce,
        "brier": brier,
        "reliability": rel,
        "resolution": res,
        "uncertainty": o_all * (1 - o_all),
        "within_bin_variance": wbv,
        "within_bin_covariance": wbc,
    }


def _class_probs(data: pd.DataFrame, prob: Sequence[str], outcome: str, labels):
    """(N, C) probability matrix and integer class of each outcome, rows complete."""
    prob = list(prob)
    require_columns(data, [*prob, outcome])
    labels = list(labels) if labels is not None else [c.removeprefix("prob_") for c in prob]
    if len(labels) != len(prob):
        raise DataError(f"labels has {len(labels)} entries but prob names {len(prob)} columns")
    P = np.column_stack([numeric_column(data, c) for c in prob])
    keep = ~np.isnan(P).any(axis=1) & data[outcome].notna().to_numpy()
    P = P[keep]
    if ((P < 0) | (P > 1)).any():
        raise DataError(f"columns {prob} must hold probabilities in [0, 1]")
    off = np.abs(P.sum(axis=1) - 1) > 1e-6
    if off.any():
        row = data.index[keep][np.argmax(off)]
        raise DataError(f"probabilities in {prob} must sum to 1 per row; row {row!r} sums to {P[off][0].sum():.6g}")
    codes, uniques = pd.factorize(data[outcome].to_numpy()[keep])
    lookup = {str(lab): j for j, lab in enumerate(labels)}
    position = []
    for value in uniques:  # map each distinct outcome once: 3, 3.0, "3" all name class "3"
        key = _label(float(value)) if isinstance(value, (int, float, np.number)) else str(value)
        if key not in lookup:
            raise DataError(f"column {outcome!r} holds {value!r}, not among labels {labels}")
        position.append(lookup[key])
    return P, np.asarray(position, dtype=int)[codes], keep


def _evaluate(sums: np.ndarray, *, sizes: list[int], strategy: str, multiclass: bool) -> dict[str, np.ndarray]:
    """The metrics of per-cell sums (bins x 5 cells per block, then the log loss), over
    leading replicate axes: the top-label block gives ECE and MCE, the class blocks (or the
    top-label block of a binary forecast) the Brier score and its parts."""
    top = _decompose(sums[..., : _CELLS * sizes[0]], sizes[0])
    out = {"ece": top["ece"], "mce": top["mce"]}
    if not multiclass:
        parts = top
    else:
        start = _CELLS * sizes[0]
        parts = None
        for size in sizes[1:]:
            part = _decompose(sums[..., start : start + _CELLS * size], size)
            parts = part if parts is None else {k: parts[k] + part[k] for k in part}
            start += _CELLS * size
    for key in ("brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance"):
        out[key] = parts[key]
    if strategy == "unique":  # zero by construction; avoid reporting rounding residue
        out["within_bin_variance"] = out["within_bin_covariance"] = np.zeros_like(out["brier"])
    out["log_loss"] = sums[..., -1] / (sums[..., 0 : _CELLS * sizes[0] : _CELLS].sum(-1))
    return out


def _metric_table(estimates, replicates, confidence, n, extra) -> pd.DataFrame:
    rows = []
    for name, est in estimates.items():
        if replicates is not None:
            low, high = percentile_interval(np.asarray(replicates[name])[:, None], confidence)
            low, high, method = float(low[0]), float(high[0]), "percentile bootstrap"
        else:
            low = high = np.nan
            method = "point estimate"
        rows.append({"metric": name, "estimate": float(est), "ci_low": low, "ci_high": high, "n": n, **extra, "method": method})
    return pd.DataFrame(rows)


def _calibration_in_engine(frame: EngineFrame, *, prob: str | Sequence[str], truth: str, labels: Sequence | None,
                           item: str | None, n_bins: int, strategy: Strategy, confidence: float, n_boot: int,
                           random_state, **_: object) -> pd.DataFrame:  # fmt: skip
    """:func:`calibration_metrics` of a binary forecast in a frame of another engine.

    One grouped pass returns the five sums of each bin (of each cluster x bin for the
    cluster bootstrap; of each distinct forecast x outcome pair for the row bootstrap of
    few-valued forecasts) and the log loss; the bins, the metrics and the bootstrap follow
    in NumPy from those sums exactly as from the rows. A bootstrap over the rows of
    continuous forecasts needs the rows, and is refused naming the alternatives.
    """
    import narwhals as nw

    _check_calibration_options(strategy, confidence, n_boot, n_bins)
    if not isinstance(prob, str):
        raise DataError(f"calibration_metrics on a {frame.engine} frame takes one probability column (binary); "
                        f"collect the columns {list(prob)} and {truth!r} to pandas for the multi-class form")  # fmt: skip
    kept, n_rows = _forecasts_in_engine(frame, prob, truth)
    p, y = nw.col(prob).cast(nw.Float64), nw.col(truth).cast(nw.Float64)
    eps = np.finfo(float).eps
    clipped = p.clip(eps, 1 - eps)
    terms = {"_sp": p, "_sy": y, "_spp": p * p, "_spy": p * y, "_loss": -(y * clipped.log() + (1 - y) * (1 - clipped).log())}
    units = [item] if item is not None else []
    table, edges, index = _bin_sums_in_engine(kept, p, strategy, n_bins, units, terms)
    size = len(edges) if strategy == "unique" else len(edges) - 1
    n_cells = _CELLS * size + 1
    per_cell = table[["_n", "_sp", "_sy", "_spp", "_spy"]].to_numpy(float)
    cell = index[:, None] * _CELLS + np.arange(_CELLS)
    sums = np.bincount(cell.ravel(), weights=per_cell.ravel(), minlength=n_cells - 1)
    sums = np.concatenate([sums, [table["_loss"].sum()]])
    evaluate = functools.partial(_evaluate, sizes=[size], strategy=strategy, multiclass=False)
    replicates = None
    rng = as_generator(random_state)
    if n_boot and item is not None:
        unit, n_units = pd.factorize(table[item], sort=True)[0], table[item].nunique()
        S = unit_sums(np.repeat(unit, _CELLS), cell.ravel(), per_cell.ravel(), n_units, n_cells)
        S[:, -1] = np.bincount(unit, weights=table["_loss"].to_numpy(float), minlength=n_units)
        replicates = evaluate(bootstrap_sums(S, n_boot, rng))
    elif n_boot:
        pairs = kept.frame.group_by(prob, truth).agg(nw.len().alias("_n")).collect().to_pandas()
        if len(pairs) > n_rows // 2:
            raise refuse_rows("calibration_metrics(item=None, n_boot > 0) of continuous forecasts (it resamples rows)",
                              frame.engine)  # fmt: skip
        pp, py = pairs[prob].to_numpy(float), pairs[truth].to_numpy(float)
        order = np.argsort(pp + 2 * py)
        pp, py, multiplicity = pp[order], py[order], pairs["_n"].to_numpy()[order]
        at = np.searchsorted(edges, pp) if strategy == "unique" else np.searchsorted(edges[1:-1], pp)
        pc = np.clip(pp, eps, 1 - eps)
        loss = -(py * np.log(pc) + (1 - py) * np.log(1 - pc))
        cell_idx = np.column_stack([at[:, None] * _CELLS + np.arange(_CELLS), np.full(len(pp), n_cells - 1)])
        values_ = np.column_stack([np.ones_like(pp), pp, py, pp * pp, pp * py, loss])
        S = unit_sums(np.repeat(np.arange(len(pp)), _CELLS + 1), cell_idx.ravel(), values_.ravel(), len(pp), n_cells)
        replicates = evaluate(bootstrap_sums(S, n_boot, rng, multiplicity=multiplicity))
    n_filled = int((sums[0 : _CELLS * size : _CELLS] > 0).sum())
    return _metric_table(evaluate(sums), replicates, confidence, n_rows, {"n_bins": n_filled, "strategy": strategy})


def _forecasts_in_engine(frame: EngineFrame, prob: str, truth: str) -> tuple[EngineFrame, int]:
    """The rows of a frame of another engine holding both a forecast and an outcome, and how
    many, after checking in the engine that they are probabilities and 0/1 outcomes."""
    import narwhals as nw

    for column in (prob, truth):
        if not frame.is_numeric(column):
            raise DataError(f"column {column!r} must be numeric, got {frame.schema[column]} in the {frame.engine} frame")
    kept = frame.where(~frame.blank(prob) & ~frame.blank(truth))
    p, y = nw.col(prob).cast(nw.Float64), nw.col(truth).cast(nw.Float64)
    found = kept.frame.select(nw.len().alias("n"), p.min().alias("p0"), p.max().alias("p1"),
                              ((y != 0) & (y != 1)).cast(nw.Int64).sum().alias("bad_y"),
                              nw.when((y != 0) & (y != 1)).then(y).min().alias("y")).collect().to_pandas().iloc[0]  # fmt: skip
    if not found["n"]:
        raise DataError("no rows with both a probability and an outcome")
    if found["p0"] < 0 or found["p1"] > 1:
        raise DataError(f"column {prob!r} must hold probabilities in [0, 1]; it holds "
                        f"{found['p0'] if found['p0'] < 0 else found['p1']!r}")  # fmt: skip
    if found["bad_y"]:
        raise DataError(f"column {truth!r} must be 0/1 or boolean; it holds {found['y']!r}")
    return kept, int(found["n"])


def _bin_sums_in_engine(kept: EngineFrame, p, strategy: str, n_bins: int, units: list[str],
                        terms: dict) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:  # fmt: skip
    """Per ``units`` x bin (:func:`_bins`' rule, in the engine): ``_n`` and the sum of each
    expression in ``terms``; the edges (``unique``: the distinct forecasts) and each row's bin."""
    import narwhals as nw

    if strategy == "unique":
        key = p.alias("_bin")
    else:
        edges = (np.linspace(0.0, 1.0, n_bins + 1) if strategy == "uniform" else _engine_quantiles(kept, p, n_bins))
        # searchsorted(inner edges, p, side="left"): how many inner edges lie below p
        key = nw.sum_horizontal(*[(p > float(e)).cast(nw.Int64) for e in edges[1:-1]]) if len(edges) > 2 else nw.lit(0)
        key = key.alias("_bin")
    # per row first, then plain sums: every engine groups elementary aggregations (PyArrow only those)
    table = (kept.frame.with_columns(key, *[expr.alias(name) for name, expr in terms.items()])
             .group_by([*units, "_bin"]).agg(nw.len().alias("_n"), *[nw.col(name).sum() for name in terms])
             .collect().to_pandas())  # fmt: skip
    if strategy == "unique":
        edges = np.sort(pd.unique(table["_bin"].to_numpy(float)))
        return table, edges, np.searchsorted(edges, table["_bin"].to_numpy(float))
    return table, edges, table["_bin"].to_numpy(int)


def _engine_quantiles(frame: EngineFrame, p, n_bins: int) -> np.ndarray:
    """``np.percentile``'s edges (linear interpolation), computed by an engine that has it."""
    if not frame.exact_quantiles:
        raise DataError(f"strategy='quantile' needs exact quantiles, which the {frame.engine} engine does not give; "
                        "use strategy='uniform' or 'unique', or collect the columns to pandas")  # fmt: skip
    qs = np.linspace(0, 1, n_bins + 1)
    row = frame.frame.select(*[p.quantile(float(q), interpolation="linear").alias(f"q{i}") for i, q in enumerate(qs)])
    return row.collect().to_pandas().iloc[0].to_numpy(float)


def _check_calibration_options(strategy: str, confidence: float, n_boot: int, n_bins: int) -> None:
    check_choice("strategy", strategy, STRATEGIES)
    check_confidence(confidence)
    check_n_boot(n_boot)
    if strategy != "unique" and (not isinstance(n_bins, (int, np.integer)) or n_bins < 1):
        raise DataError(f"n_bins={n_bins!r} must be a positive integer")


@statistic(
    keys=("item",), numbers=("prob",), labels=("truth",), engine=_calibration_in_engine, retired={"outcome": "truth"}
)
def calibration_metrics(
    data: pd.DataFrame,
    *,
    prob: str | Sequence[str] = "prob",
    truth: str = "outcome",
    labels: Sequence | None = None,
    item: str | None = None,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """ECE, MCE, Brier score with its decomposition, and log loss, with bootstrap CIs.

    Parameters
    ----------
    data : DataFrame
        One row per forecast; rows with a missing probability or outcome are dropped.
    prob : str or sequence of str
        Binary case: one column with the probability of ``outcome == 1``, or of the judge
        being right when ``truth`` is correctness. Multi-class case: one column per class
        (rows must sum to 1), e.g. ``prob_1 .. prob_4`` from :func:`logprob_confidence`.
    truth : str, default "outcome"
        Binary: 0/1 or boolean. Multi-class: the observed class (e.g. the human score).
    labels : sequence, optional
        Class label of each ``prob`` column; default: the column names without ``prob_``.
    item : str, optional
        Cluster for the bootstrap (attempts of one item are resampled together, the right
        unit for repeated attempts). Default None resamples rows: exactly through the
        distinct (forecast, outcome) pairs when the forecasts take few values (verbal,
        votes); row by row for continuous forecasts up to 100,000 rows; beyond that, bin x
        outcome counts are drawn exactly and each group's sum from its normal limit (a
        million rows and ``n_boot=1000`` take under a second; the limits agree with the
        row-by-row bootstrap to within Monte Carlo error, see the tests).
    n_bins : int, default 10
        Number of bins (ignored by ``strategy="unique"``).
    strategy : {"uniform", "quantile", "unique"}
        Equal-width bins (default), equal-mass bins, or one bin per distinct forecast.
    %(confidence)s
        Here: the percentile bootstrap intervals.
    %(n_boot)s
        0 gives point estimates only.
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per metric: ``ece``, ``mce``, ``brier``, ``reliability``, ``resolution``,
        ``uncertainty``, ``within_bin_variance``, ``within_bin_covariance``, ``log_loss``.
        Columns ``metric, estimate, ci_low, ci_high, n`` (forecasts), ``n_bins`` (non-empty
        bins), ``strategy``, ``method``. Multi-class: ECE and MCE are top-label (confidence
        = largest probability, outcome = it is the observed class); the Brier score and its
        components are sums over classes.

    Notes
    -----
    With bins b holding n_b forecasts of mean f_b and observed rate o_b, o the overall rate
    and N forecasts: ``ECE = sum_b n_b/N |o_b - f_b|``, ``MCE = max_b |o_b - f_b|``,
    ``Brier = mean (p - y)^2`` (multi-class: ``mean sum_c (p_c - y_c)^2``, Brier 1950),
    ``log loss = -mean(y log p + (1 - y) log(1 - p))`` with p clipped to [eps, 1 - eps]
    (scikit-learn's rule). The Murphy (1973) decomposition with the within-bin terms of
    Stephenson et al. (2008) holds exactly:
    ``Brier = REL - RES + UNC + WBV - WBC`` with ``REL = sum_b n_b (f_b - o_b)^2 / N``,
    ``RES = sum_b n_b (o_b - o)^2 / N``, ``UNC = o (1 - o)``,
    ``WBV = sum_i (p_i - f_b(i))^2 / N``, ``WBC = 2 sum_i (p_i - f_b(i))(y_i - o_b(i)) / N``;
    WBV and WBC vanish with ``strategy="unique"``. The bootstrap resamples units (rows or
    ``item`` clusters) and keeps the bin edges found on the full sample.

    References
    ----------
    .. [1] Naeini, M. P., Cooper, G., & Hauskrecht, M. (2015). Obtaining well calibrated
       probabilities using Bayesian binning. AAAI.
    .. [2] Guo, C. et al. (2017). On calibration of modern neural networks. ICML.
    .. [3] Murphy, A. H. (1973). A new vector partition of the probability score.
       J. Appl. Meteorol. 12, 595-600.
    .. [4] Stephenson, D. B., Coelho, C. A. S., & Jolliffe, I. T. (2008). Two extra
       components in the Brier score decomposition. Weather Forecast. 23, 752-757.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> out = calibration_metrics(df, n_boot=0).set_index("metric")
    >>> round(float(out.loc["ece", "estimate"]), 3), round(float(out.loc["brier", "estimate"]), 3)
    (0.1, 0.135)
    """
    confidence, n_boot, random_state = boot
    _check_calibration_options(strategy, confidence, n_boot, n_bins)
    rng = as_generator(random_state)
    if item is not None:
        require_columns(data, [item])
    if isinstance(prob, str):
        p, y = _check_binary(data, prob, truth)
        keep = ~np.isnan(p) & ~np.isnan(y)
        p, y = p[keep], y[keep]
        P = None
    else:
        P, yc, keep = _class_probs(data, prob, truth, labels)
        p = P.max(axis=1)
        y = (P.argmax(axis=1) == yc).astype(float)
    if len(p) == 0:
        raise DataError("no rows with both a probability and an outcome")
    # Blocks of per-bin cells: top-label (binary: the forecast itself), then one per class.
    blocks = [(p, y)]
    if P is not None:
        blocks += [(P[:, c], (yc == c).astype(float)) for c in range(P.shape[1])]
    binned = [(bp, by, *_bins(bp, n_bins, strategy)[:2]) for bp, by in blocks]
    sizes = [len(low) for *_, low in binned]
    eps = np.finfo(float).eps
    if P is None:
        pc = np.clip(p, eps, 1 - eps)
        loss = -(y * np.log(pc) + (1 - y) * np.log(1 - pc))
    else:
        loss = -np.log(np.clip(P[np.arange(len(yc)), yc], eps, 1 - eps))
    n_cells = _CELLS * sum(sizes) + 1

    def cell_values():
        """Per row: the cell each of its values adds to (bins x 5 cells per block, then loss)."""
        cells, values, offset = [], [], 0
        for (bp, by, index, _), size in zip(binned, sizes, strict=True):
            cells.append(index[:, None] * _CELLS + np.arange(_CELLS) + offset)
            values.append(np.stack([np.ones_like(bp), bp, by, bp * bp, bp * by], axis=1))
            offset += _CELLS * size
        cells.append(np.full((len(p), 1), offset))
        values.append(loss[:, None])
        return np.concatenate(cells, axis=1), np.concatenate(values, axis=1)

    evaluate = functools.partial(_evaluate, sizes=sizes, strategy=strategy, multiclass=P is not None)

    point = [
        np.bincount(index, weights=w, minlength=size)
        for (bp, by, index, _), size in zip(binned, sizes, strict=True)
        for w in (None, bp, by, bp * bp, bp * by)
    ]
    # point[5k + j] is cell j of block k over bins; interleave to bin-major like cell_values()
    sums = [np.stack(point[5 * k : 5 * k + 5], axis=1).ravel() for k in range(len(binned))]
    estimates = evaluate(np.concatenate([*sums, [loss.sum()]]))
    replicates = None
    if n_boot:
        cell_idx, values = cell_values()
        if item is None and P is None:
            # Rows sharing (prob, outcome) are exchangeable: resample the distinct pairs with
            # multinomial counts (exact, and fast for verbal or vote confidences).
            types = pd.factorize(p + 2 * y, sort=True)[0]  # sorted: as another engine's grouped pairs
            first = np.unique(types, return_index=True)[1]
            if len(first) <= len(p) // 2:
                S = unit_sums(np.repeat(np.arange(len(first)), cell_idx.shape[1]), cell_idx[first].ravel(),
                              values[first].ravel(), len(first), n_cells)
                multiplicity = np.bincount(types, minlength=len(first))
                replicates = evaluate(bootstrap_sums(S, n_boot, rng, multiplicity=multiplicity))
            else:
                replicates = evaluate(bootstrap_row_sums(cell_idx, values, n_cells, n_boot, rng))
        elif item is None:
            replicates = evaluate(bootstrap_row_sums(cell_idx, values, n_cells, n_boot, rng))
        else:
            units, n_units = _units(data, item, keep)
            rows = np.repeat(units, cell_idx.shape[1])
            S = unit_sums(rows, cell_idx.ravel(), values.ravel(), n_units, n_cells)
            replicates = evaluate(bootstrap_sums(S, n_boot, rng))
    n_filled = int((np.bincount(binned[0][2], minlength=sizes[0]) > 0).sum())
    extra = {"n_bins": n_filled, "strategy": strategy}
    return _metric_table(estimates, replicates, confidence, int(len(p)), extra)


# The calibration functions below take calibration_metrics' arguments, documented with its text.
FRAGMENTS["calibration_parameters"] = section(calibration_metrics.__doc__, "Parameters")


def _calibration_arguments(func: F) -> F:
    """Give ``func(data, **kwargs)``, which passes its keywords on, calibration_metrics' signature.

    ``help()``, the API pages and the frame check (which binds the call to it) then see every
    keyword; ``error`` stays the frame check's to add, as on calibration_metrics.
    """
    public = inspect.signature(calibration_metrics)
    func.__signature__ = public.replace(parameters=[p for p in public.parameters.values() if p.name != "error"])  # type: ignore[attr-defined]
    return func


def _rows_in_engine(metrics: Sequence[str]) -> Callable[..., pd.DataFrame]:
    """The rows ``metrics`` of :func:`calibration_metrics` of a frame of another engine."""

    def run(frame: EngineFrame, **arguments: object) -> pd.DataFrame:
        out = _calibration_in_engine(frame, **arguments)
        return out[out["metric"].isin(metrics)].reset_index(drop=True)

    return run


_BRIER = ["brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance"]


@renamed(outcome="truth")
@reads_frame(keys=("item",), numbers=("prob",), labels=("truth",), engine=_rows_in_engine(["ece", "mce"]))
@fill_doc
@_calibration_arguments
def expected_calibration_error(data: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """ECE and MCE rows of :func:`calibration_metrics`.

    %(calibration_parameters)s

    Returns
    -------
    DataFrame
        Rows ``ece`` and ``mce`` of :func:`calibration_metrics`' table.

    References
    ----------
    .. [1] Naeini, M. P., Cooper, G., & Hauskrecht, M. (2015). Obtaining well calibrated
       probabilities using Bayesian binning. AAAI 29, 2901-2907.
    .. [2] Guo, C., Pleiss, G., Sun, Y., & Weinberger, K. Q. (2017). On calibration of modern
       neural networks. ICML, 1321-1330.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> expected_calibration_error(df, n_boot=0)["estimate"].round(3).tolist()
    [0.1, 0.1]
    """
    out = calibration_metrics(data, **kwargs)
    return out[out["metric"].isin(["ece", "mce"])].reset_index(drop=True)


@renamed(outcome="truth")
@reads_frame(keys=("item",), numbers=("prob",), labels=("truth",), engine=_rows_in_engine(_BRIER))
@fill_doc
@_calibration_arguments
def brier_score(data: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """Brier score and its Murphy decomposition: rows of :func:`calibration_metrics`.

    %(calibration_parameters)s

    Returns
    -------
    DataFrame
        Rows ``brier``, ``reliability``, ``resolution``, ``uncertainty``,
        ``within_bin_variance`` and ``within_bin_covariance`` of :func:`calibration_metrics`'
        table.

    References
    ----------
    .. [1] Brier, G. W. (1950). Verification of forecasts expressed in terms of probability.
       Monthly Weather Review 78, 1-3.
    .. [2] Murphy, A. H. (1973). A new vector partition of the probability score. Journal of
       Applied Meteorology 12, 595-600.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> brier_score(df, n_boot=0, strategy="unique")["estimate"].round(4).tolist()
    [0.135, 0.01, 0.0625, 0.1875, 0.0, 0.0]
    """
    out = calibration_metrics(data, **kwargs)
    return out[out["metric"].isin(_BRIER)].reset_index(drop=True)


def _reliability_rows(n: np.ndarray, sp: np.ndarray, sy: np.ndarray, low: np.ndarray, high: np.ndarray, strategy: str,
                      confidence: float) -> pd.DataFrame:  # fmt: skip
    """:func:`reliability_table` from each bin's forecasts ``n``, their sum ``sp`` and their
    outcomes' sum ``sy``, and its limits."""
    filled = n > 0
    ci_low, ci_high = proportion_ci(sy[filled], n[filled], confidence, "wilson")
    mean_prob = sp[filled] / n[filled]
    observed = sy[filled] / n[filled]
    return pd.DataFrame(
        {
            "bin": np.flatnonzero(filled),
            "bin_low": low[filled],
            "bin_high": high[filled],
            "n": n[filled],
            "mean_prob": mean_prob,
            "estimate": observed,
            "gap": observed - mean_prob,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "strategy": strategy,
            "method": "wilson",
        }
    )


def _reliability_in_engine(frame: EngineFrame, *, prob: str, truth: str, n_bins: int, strategy: Strategy,
                           confidence: float) -> pd.DataFrame:  # fmt: skip
    """:func:`reliability_table` of a frame of another engine: each bin's count and sums, one
    grouped pass (:func:`_bin_sums_in_engine`)."""
    import narwhals as nw

    check_choice("strategy", strategy, STRATEGIES)
    check_confidence(confidence)
    kept, _ = _forecasts_in_engine(frame, prob, truth)
    p = nw.col(prob).cast(nw.Float64)
    table, edges, index = _bin_sums_in_engine(kept, p, strategy, n_bins, [], {"_sp": p, "_sy": nw.col(truth).cast(nw.Float64)})
    size = len(edges) if strategy == "unique" else len(edges) - 1
    n, sp, sy = (np.bincount(index, weights=table[c].to_numpy(float), minlength=size) for c in ("_n", "_sp", "_sy"))
    low, high = (edges, edges) if strategy == "unique" else (edges[:-1], edges[1:])
    return _reliability_rows(n, sp, sy, low, high, strategy, confidence)


@statistic(numbers=("prob",), labels=("truth",), engine=_reliability_in_engine, retired={"outcome": "truth"})
def reliability_table(
    data: pd.DataFrame,
    *,
    prob: str = "prob",
    truth: str = "outcome",
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Observed rate against mean forecast per bin, with Wilson intervals: a reliability table.

    Parameters
    ----------
    data : DataFrame
        One row per forecast.
    prob, truth : str
        Probability column and 0/1 outcome column (binary or top-label).
        Default: ``prob="prob"``.
    n_bins : int, default 10
        Number of bins (ignored by ``strategy="unique"``).
    strategy : {"uniform", "quantile", "unique"}
        Binning rule (see :func:`calibration_metrics`).
    %(confidence)s
        Here: the Wilson intervals for the observed rate.

    Returns
    -------
    DataFrame
        One row per non-empty bin: ``bin`` (0-based), ``bin_low``, ``bin_high`` (limits;
        both the value itself for ``unique``), ``n``, ``mean_prob``, ``estimate`` (the
        observed rate of outcome 1), ``gap`` (estimate - mean_prob), ``ci_low``, ``ci_high``
        (its Wilson interval), ``strategy``, ``method``.

    Notes
    -----
    ``mean_prob`` and ``estimate`` equal ``prob_pred`` and ``prob_true`` of
    ``sklearn.calibration.calibration_curve`` with the same ``n_bins`` and strategy.

    References
    ----------
    .. [1] DeGroot, M. H., & Fienberg, S. E. (1983). The comparison and evaluation of
       forecasters. The Statistician 32, 12-22.
    .. [2] Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
       inference. JASA 22, 209-212.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> reliability_table(df)[["n", "mean_prob", "estimate"]].values.tolist()
    [[2.0, 0.6, 0.5], [2.0, 0.9, 1.0]]
    """
    check_choice("strategy", strategy, STRATEGIES)
    check_confidence(confidence)
    p, y = _check_binary(data, prob, truth)
    keep = ~np.isnan(p) & ~np.isnan(y)
    p, y = p[keep], y[keep]
    if len(p) == 0:  # as every calibration statistic, and the engines' table (an empty table said nothing)
        raise DataError("no rows with both a probability and an outcome")
    index, low, high = _bins(p, n_bins, strategy)
    n = np.bincount(index, minlength=len(low)).astype(float)
    sp = np.bincount(index, weights=p, minlength=len(low))
    sy = np.bincount(index, weights=y, minlength=len(low))
    return _reliability_rows(n, sp, sy, low, high, strategy, confidence)
