"""Boolean judges: pass rates, agreement with a golden set, ensembles, routing of uncertain
cases, adaptive criteria filtering (seed 003 Table 2), the discrepancy score D (seed 003
eq. 1) and Likert normalisation / binarisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce.errors import DataError
from hce.stats._intervals import proportion_ci
from hce.stats._resample import Bootstrap, as_generator, bootstrap_sums, check_n_boot, percentile_interval, unit_sums
from hce.stats.reliability.agreement import FISHER_Z_KAPPA, kappa_core, kappa_z_interval
from hce.stats._validate import warn_undefined_sd, statistic

AGREEMENT_METRICS = ("accuracy", "precision", "recall", "specificity", "f1", "cohen_kappa", "mcc")


def _as_bool(data: pd.DataFrame, column: str) -> np.ndarray:
    """0/1/NaN floats from a boolean, 0/1 or ``"true"/"false"`` column (row named if not)."""
    series = data[column]
    if series.dtype == object:
        try:  # True/False/None objects, the common case, without going through text
            return series.astype("boolean").to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            pass
    if series.dtype == object or pd.api.types.is_string_dtype(series):
        text = series.astype("string").str.strip().str.lower()
        mapped = text.map({"true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0, "yes": 1.0, "no": 0.0})
        bad = text.notna() & mapped.isna()
        if bad.any():
            row = bad.idxmax()
            raise DataError(f"column {column!r} must be boolean; row {row!r} holds {series[row]!r}")
        return mapped.to_numpy(dtype=float, na_value=np.nan)
    values = numeric_column(data, column)
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {column!r} must be boolean or 0/1; row {row!r} holds {values[bad][0]!r}")
    return values


def _groups(data: pd.DataFrame, by: Sequence[str]):
    """Iterate ``(key dict, row mask)`` over groups, one all-rows group when ``by`` is empty."""
    by = list(by)
    if not by:
        yield {}, np.ones(len(data), dtype=bool)
        return
    require_columns(data, by)
    codes = data.groupby(by, sort=True, dropna=False, observed=True).ngroup().to_numpy()
    keys = data.groupby(by, sort=True, dropna=False, observed=True).size().index
    for code, key in enumerate(keys):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key, strict=True)), codes == code


# ------------------------------------------------------------------------------ pass rates
@statistic(keys=("by",), labels=("score",), retired={"verdict": "score"})
def pass_rates(
    data: pd.DataFrame,
    *,
    score: str = "verdict",
    by: Sequence[str] = (),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Share of passing verdicts per group, with Wilson score intervals.

    Parameters
    ----------
    data : DataFrame
        One row per verdict (attempt); missing verdicts are counted, not used.
    score : str
        Boolean (nullable) verdict column.
    by : sequence of str, default ()
        Grouping columns, e.g. ``["behavior_id", "condition_id"]``; empty for one row.
    %(confidence)s

    Returns
    -------
    DataFrame
        One row per group: the ``by`` keys; ``n`` (verdicts), ``passes``, ``n_missing``,
        ``estimate`` (passes / n), ``ci_low``, ``ci_high``, ``method`` (``"wilson"``).

    Notes
    -----
    Wilson interval: ``(p + z^2/2n +/- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``.
    Repeated attempts of one item are not independent; for a per-item rate aggregate first
    (:func:`majority_vote`).

    References
    ----------
    .. [1] Newcombe, R. G. (1998). Two-sided confidence intervals for the single
       proportion: comparison of seven methods. Stat. Med. 17, 857-872.

    Examples
    --------
    >>> import pandas as pd
    >>> out = pass_rates(pd.DataFrame({"verdict": [True] * 81 + [False] * 182}))
    >>> out[["estimate", "ci_low", "ci_high"]].round(4).values.tolist()
    [[0.308, 0.2553, 0.3662]]
    """
    check_confidence(confidence)
    require_columns(data, [score])
    values = _as_bool(data, score)
    rows = []
    for key, mask in _groups(data, by):
        v = values[mask]
        n = int((~np.isnan(v)).sum())
        passes = int(np.nansum(v))
        low, high = proportion_ci(passes, n, confidence, "wilson")
        rows.append({**key, "n": n, "passes": passes, "n_missing": int(np.isnan(v).sum()),
                     "estimate": passes / n if n else np.nan, "ci_low": float(low), "ci_high": float(high),
                     "method": "wilson"})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ agreement
def _agreement_from_counts(c: np.ndarray) -> dict[str, np.ndarray]:
    """Agreement statistics from ``[..., (tp, fp, fn, tn)]`` counts, vectorised."""
    tp, fp, fn, tn = (c[..., j].astype(float) for j in range(4))
    n = tp + fp + fn + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        po = (tp + tn) / n
        pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
        mcc_den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return {
            "accuracy": po,
            "precision": tp / (tp + fp),
            "recall": tp / (tp + fn),
            "specificity": tn / (tn + fp),
            "f1": 2 * tp / (2 * tp + fp + fn),
            "cohen_kappa": (po - pe) / (1 - pe),
            "mcc": (tp * tn - fp * fn) / mcc_den,
        }


def _confusion(pred: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Cell index 0..3 = tp, fp, fn, tn per row."""
    return np.where(pred == 1, np.where(truth == 1, 0, 1), np.where(truth == 1, 2, 3))


def _agreement_rows(pred, truth, units, confidence, n_boot, rng) -> list[dict]:
    cells = _confusion(pred, truth)
    counts = np.bincount(cells, minlength=4)
    est = _agreement_from_counts(counts)
    n = int(counts.sum())
    reps = None
    if n_boot:
        if units is None:  # i.i.d. rows: a resampled 2x2 table is Multinomial(n, observed shares)
            reps = _agreement_from_counts(rng.multinomial(n, counts / n, size=n_boot))
        else:
            codes, uniq = pd.factorize(units)
            S = unit_sums(codes, cells, np.ones(n), len(uniq), 4)
            reps = _agreement_from_counts(bootstrap_sums(S, n_boot, rng, collapse=True))
    denominators = {"accuracy": n, "precision": counts[0] + counts[1], "recall": counts[0] + counts[2],
                    "specificity": counts[3] + counts[1]}
    successes = {"accuracy": counts[0] + counts[3], "precision": counts[0], "recall": counts[0],
                 "specificity": counts[3]}
    rows = []
    for metric in AGREEMENT_METRICS:
        if units is None and metric in denominators:
            low, high = (float(x) for x in proportion_ci(successes[metric], denominators[metric], confidence, "wilson"))
            method, m = "wilson", int(denominators[metric])
        elif units is None and metric == "cohen_kappa":
            # rows: prediction, columns: truth; the same core as cohen_kappa(rater=[prediction, truth])
            se = kappa_core(counts.reshape(2, 2), np.eye(2))["se"] if n else np.nan
            low, high = kappa_z_interval(est[metric], se, confidence)
            method, m = FISHER_Z_KAPPA, n
        elif reps is not None:
            low, high = (float(x[0]) for x in percentile_interval(reps[metric][:, None], confidence))
            method = "percentile bootstrap" if units is None else "cluster percentile bootstrap"
            m = n
        else:
            low = high = np.nan
            method, m = "point estimate", n
        rows.append({"metric": metric, "estimate": float(est[metric]), "ci_low": float(low),
                     "ci_high": float(high), "n": m, "method": method})
    return rows


@statistic(keys=("by", "item"), labels=("score", "truth"), retired={"prediction": "score"})
def golden_agreement(
    data: pd.DataFrame,
    *,
    score: str = "verdict",
    truth: str = "golden",
    by: Sequence[str] = (),
    item: str | None = None,
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """Agreement of a boolean judge with golden (human) labels, each metric with a CI.

    Parameters
    ----------
    data : DataFrame
        One row per judged case with the judge's verdict and the golden label; rows missing
        either are dropped.
    score, truth : str
        Boolean (or 0/1) columns: judge verdict and golden label. ``True`` is the positive.
    by : sequence of str, default ()
        Grouping columns (e.g. behaviour); empty for one table.
    item : str, optional
        When given (several attempts per golden item), every interval comes from a cluster
        bootstrap over items instead of the formulas below.
    %(confidence)s
    %(n_boot)s
        Here: resamples for F1 and MCC (and all metrics with ``item``).
    %(random_state)s

    Returns
    -------
    DataFrame
        One row per group x metric (``accuracy``, ``precision``, ``recall`` = sensitivity,
        ``specificity``, ``f1``, ``cohen_kappa``, ``mcc``): the keys, ``metric``,
        ``estimate``, ``ci_low``, ``ci_high``, ``n`` (the metric's denominator), ``method``.

    Notes
    -----
    With counts TP, FP, FN, TN: precision = TP/(TP+FP), recall = TP/(TP+FN),
    F1 = 2TP/(2TP+FP+FN), kappa = (po - pe)/(1 - pe),
    MCC = (TP TN - FP FN)/sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) (NaN where a margin is 0).
    Proportions get Wilson intervals; kappa the large-sample SE of Fleiss, Cohen & Everitt
    (1969), as ``statsmodels.stats.inter_rater.cohens_kappa``; F1 and MCC a percentile
    bootstrap in which the resampled 2x2 table is Multinomial(n, observed cell shares).

    See Also
    --------
    hce.stats.cohen_kappa : kappa alone, for any categories, weighted or not, with its z
        test; ``cohen_kappa(data, raters=[prediction, truth])`` takes this same two-column
        shape and gives the same kappa and interval (here without ``item``, whose
        cluster bootstrap gives a different interval).

    References
    ----------
    .. [1] Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors
       of kappa and weighted kappa. Psychol. Bull. 72, 323-327.
    .. [2] Chicco, D., & Jurman, G. (2020). The advantages of the Matthews correlation
       coefficient (MCC) over F1 score and accuracy. BMC Genomics 21, 6.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"verdict": [1] * 9 + [1] * 2 + [0] * 3 + [0] * 6,
    ...                    "golden": [1] * 9 + [0] * 2 + [1] * 3 + [0] * 6})
    >>> out = golden_agreement(df, random_state=1).set_index("metric")
    >>> out.loc[["accuracy", "precision", "recall", "f1"], "estimate"].round(4).tolist()
    [0.75, 0.8182, 0.75, 0.7826]
    """
    confidence, n_boot, random_state = boot
    check_confidence(confidence)
    check_n_boot(n_boot)
    require_columns(data, [score, truth])
    rng = as_generator(random_state)
    pred, gold = _as_bool(data, score), _as_bool(data, truth)
    complete = ~np.isnan(pred) & ~np.isnan(gold)
    if item is not None:
        require_columns(data, [item])
    rows = []
    for key, mask in _groups(data, by):
        use = mask & complete
        if not use.any():
            continue
        units = data[item].to_numpy()[use] if item is not None else None
        for row in _agreement_rows(pred[use], gold[use], units, confidence, n_boot, rng):
            rows.append({**key, **row})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ ensembles
@statistic(keys=("item",), labels=("score",), retired={"verdict": "score"})
def majority_vote(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "verdict",
    tie: Literal["fail", "pass", "missing"] = "fail",
) -> pd.DataFrame:
    """Majority-vote ensemble of several judges' (or attempts') verdicts, one row per item.

    Parameters
    ----------
    data : DataFrame
        One row per judge x item; missing verdicts are ignored.
    item, score : str
        Column names.
        Defaults: ``item="item_id"``, ``score="verdict"``.
    tie : {"fail", "pass", "missing"}
        Verdict on a tie: ``"fail"`` (default; the boolean judge specification fails what it cannot decide),
        ``"pass"``, or ``<NA>``.

    Returns
    -------
    DataFrame
        ``item``, ``n`` (votes), ``n_pass``, ``share_pass``, ``tie`` (bool), ``score``
        (nullable boolean).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": [1, 1, 1, 2, 2], "verdict": [1, 1, 0, 1, 0]})
    >>> majority_vote(df)["verdict"].tolist()
    [True, False]
    """
    check_choice("tie", tie, ["fail", "pass", "missing"])
    require_columns(data, [item, score])
    values = _as_bool(data, score)
    keep = ~np.isnan(values)
    frame = pd.DataFrame({item: data[item].to_numpy()[keep], "v": values[keep]})
    out = frame.groupby(item, sort=True).agg(n=("v", "size"), n_pass=("v", "sum")).reset_index()
    out["n_pass"] = out["n_pass"].astype(int)
    out["share_pass"] = out["n_pass"] / out["n"]
    out["tie"] = 2 * out["n_pass"] == out["n"]
    result = pd.array(2 * out["n_pass"] > out["n"], dtype="boolean")
    if tie == "pass":
        result[out["tie"].to_numpy()] = True
    elif tie == "missing":
        result[out["tie"].to_numpy()] = pd.NA
    out["verdict"] = result
    return out


@statistic(keys=("item",), numbers=("score",))
def mean_score_ensemble(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    score: str = "score",
    aggregate: Literal["mean", "median"] = "mean",
) -> pd.DataFrame:
    """Mean (or median) of several judges' scores per item (the boolean judge specification's ensembles).

    Parameters
    ----------
    data : DataFrame
        One row per judge x item.
    item : str, default "item_id"
        Item column.
    score : str
        Score column (0/1 verdicts or normalised scores).
    aggregate : {"mean", "median"}
        How the judges' scores are combined.

    Returns
    -------
    DataFrame
        ``item``, ``n`` (scores), ``estimate`` (mean or median), ``sd`` (ddof=1),
        ``method``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": [1, 1, 1], "score": [1.0, 0.0, 1.0]})
    >>> round(float(mean_score_ensemble(df)["estimate"].iloc[0]), 4)
    0.6667
    """
    check_choice("aggregate", aggregate, ["mean", "median"])
    require_columns(data, [item, score])
    frame = pd.DataFrame({item: data[item].to_numpy(), "s": numeric_column(data, score)}).dropna(subset=["s"])
    out = frame.groupby(item, sort=True)["s"].agg(["size", aggregate, "std"]).reset_index()
    out.columns = [item, "n", "estimate", "sd"]
    out["method"] = aggregate
    warn_undefined_sd(out["n"], "mean_score_ensemble")
    return out


@statistic(keys=("by",), labels=("uncertain", "score", "truth"), retired={"verdict": "score"})
def uncertain_routing(
    data: pd.DataFrame,
    *,
    uncertain: str = "uncertain",
    score: str = "verdict",
    truth: str | None = None,
    by: Sequence[str] = (),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """How often ``uncertain`` routes a case to human review, and how those cases fare.

    A case is routed when its ``uncertain`` flag is set; each share reported comes with its
    Wilson interval.

    Parameters
    ----------
    data : DataFrame
        Verdicts with the boolean judge specification's ``uncertain`` flag.
    uncertain, score : str
        Boolean columns.
        Defaults: ``uncertain="uncertain"``, ``score="verdict"``.
    truth : str, optional
        Golden label column; adds the golden pass rate among routed cases and the judge's
        accuracy among routed and non-routed cases.
    by : sequence of str, default ()
        Grouping columns.
    %(confidence)s
        Here: the Wilson intervals.

    Returns
    -------
    DataFrame
        One row per group x metric: ``routed_share`` (uncertain / all),
        and with ``truth``: ``golden_pass_routed``, ``accuracy_routed``,
        ``accuracy_not_routed``; columns ``metric, estimate, ci_low, ci_high, n, method``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"uncertain": [True, False, False, False], "verdict": [False, True, True, False]})
    >>> float(uncertain_routing(df)["estimate"].iloc[0])
    0.25
    """
    check_confidence(confidence)
    require_columns(data, [uncertain, score])
    flag = _as_bool(data, uncertain)
    pred = _as_bool(data, score)
    gold = _as_bool(data, truth) if truth is not None else None
    rows = []
    for key, mask in _groups(data, by):
        f = flag[mask]
        parts = [("routed_share", f[~np.isnan(f)])]
        if gold is not None:
            g, p = gold[mask], pred[mask]
            ok = ~np.isnan(g) & ~np.isnan(p) & ~np.isnan(f)
            parts += [
                ("golden_pass_routed", g[ok & (f == 1)]),
                ("accuracy_routed", (p == g)[ok & (f == 1)].astype(float)),
                ("accuracy_not_routed", (p == g)[ok & (f == 0)].astype(float)),
            ]
        for metric, x in parts:
            n, s = len(x), float(np.sum(x))
            low, high = proportion_ci(s, n, confidence, "wilson")
            rows.append({**key, "metric": metric, "estimate": s / n if n else np.nan,
                         "ci_low": float(low), "ci_high": float(high), "n": n, "method": "wilson"})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ seed 003
@statistic(keys=("item", "element", "rater"), labels=("label",), retired={"unit": "item"})
def adaptive_filter_agreement(
    data: pd.DataFrame,
    *,
    item: str = "query_id",
    element: str = "element",
    rater: str = "rater",
    label: str = "relevant",
    classifier: str = "auto",
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """A relevance classifier against the expert majority vote, per rubric element (Mallinar et al.
    2025, Table 2), with a pooled ``"All"`` row.

    Parameters
    ----------
    data : DataFrame
        Long format, one row per unit (query) x element x rater with a 0/1 relevance label.
        Rows whose ``rater`` equals ``classifier`` are the classifier's; all other raters
        are experts.
    item, element, rater, label : str
        Column names.
        Defaults: ``item="query_id"``, ``element="element"``, ``rater="rater"``, ``label="relevant"``.
    classifier : str, default "auto"
        The classifier's rater name.
    confidence, n_boot, random_state
        As :func:`golden_agreement`.
        Defaults: ``confidence=0.95``, ``n_boot=1000``.

    Returns
    -------
    DataFrame
        :func:`golden_agreement` rows per ``element`` plus ``element == "All"`` (pooled over
        elements), and one ``expert_unanimity`` metric per element: the share of units on
        which all experts gave the same label (Wilson interval).

    Notes
    -----
    The expert majority is ``share of experts saying relevant > 1/2``; a tie (even number
    of experts) raises, because Mallinar et al. (2025) used three experts and no tie rule.

    References
    ----------
    .. [1] Mallinar, N., Heydari, A. A., Liu, X., et al. (2025). A scalable framework for
       evaluating health language models (Adaptive Precise Boolean rubrics).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(q, "bmi", r, lab) for q, labs in enumerate([(1, 1, 0, 1), (0, 0, 0, 1)])
    ...         for r, lab in zip(["e1", "e2", "e3", "auto"], labs)]
    >>> df = pd.DataFrame(rows, columns=["query_id", "element", "rater", "relevant"])
    >>> out = adaptive_filter_agreement(df, n_boot=0)
    >>> out.query("element == 'bmi' and metric == 'accuracy'")["estimate"].tolist()
    [0.5]
    """
    confidence, n_boot, random_state = boot
    require_columns(data, [item, element, rater, label])
    values = _as_bool(data, label)
    frame = pd.DataFrame({"unit": data[item].to_numpy(), "element": data[element].to_numpy(),
                          "rater": data[rater].to_numpy(), "v": values}).dropna(subset=["v"])
    is_clf = frame["rater"] == classifier
    if not is_clf.any():
        raise DataError(f"no rows with {rater} == {classifier!r}; raters present: {sorted(frame['rater'].unique().tolist())}")
    experts = frame[~is_clf].groupby(["unit", "element"]).agg(share=("v", "mean"), n=("v", "size"))
    if (experts["share"] == 0.5).any():
        raise DataError("the expert vote is tied for some unit x element; use an odd number of experts")
    experts["majority"] = (experts["share"] > 0.5).astype(float)
    experts["unanimous"] = experts["share"].isin([0.0, 1.0])
    clf = frame[is_clf].groupby(["unit", "element"])["v"].first().rename("prediction")
    both = experts.join(clf, how="inner").reset_index()
    per_element = golden_agreement(both, score="prediction", truth="majority", by=["element"],
                                   confidence=confidence, n_boot=n_boot, random_state=random_state)
    pooled = golden_agreement(both, score="prediction", truth="majority", confidence=confidence,
                              n_boot=n_boot, random_state=random_state).assign(element="All")
    unanimity = pass_rates(both.assign(u=both["unanimous"]), score="u", by=["element"], confidence=confidence)
    unanimity = unanimity.assign(metric="expert_unanimity")[["element", "metric", "estimate", "ci_low", "ci_high", "n", "method"]]
    return pd.concat([per_element, pooled, unanimity], ignore_index=True)


@statistic(keys=("item", "criterion", "version", "by"), numbers=("score",), retired={"unit": "item"})
def discrepancy(
    data: pd.DataFrame,
    *,
    item: str = "participant_id",
    criterion: str = "criterion",
    version: str = "prompt_version",
    score: str = "score",
    unaltered: object = "unaltered",
    altered: object = "altered",
    by: Sequence[str] = (),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Discrepancy score D of Mallinar et al. (2025), equation 1: mean over rubric criteria of the judge's score
    for the response to the unaltered prompt minus that for the altered prompt.

    Parameters
    ----------
    data : DataFrame
        One row per unit x criterion x prompt version with the judge's score (boolean 0/1,
        or Likert normalised by :func:`normalize_likert` so both scales compare).
    item : str, default "participant_id"
        The (participant, query) pair the responses answer; D is computed per unit.
    criterion : str
        Rubric criterion column (the K criteria R_i).
    version : str, default "prompt_version"
        Column naming the prompt version; ``unaltered`` and ``altered`` are its values.
    score : str
        Judge score column.
    unaltered, altered : object
        The values of ``version`` naming the unaltered and the altered prompt.
    by : sequence of str, default ()
        When given (e.g. ``["query_id"]``), D is averaged over the units of each group with
        a t interval, as Mallinar et al. (2025), Fig. 5D, averages over participants per query.
    %(confidence)s
        Used with ``by`` only.

    Returns
    -------
    DataFrame
        Without ``by``: one row per unit: ``item``, ``estimate`` (D), ``n`` (criteria
        scored under both versions). With ``by``: one row per group: keys, ``estimate``
        (mean D), ``ci_low``, ``ci_high``, ``n`` (units), ``method``.

    Notes
    -----
    ``D(Q, U, U~) = (1/K) sum_i [AE(Q, R_i, LLM(U)) - AE(Q, R_i, LLM(U~))]``; only criteria
    scored under both versions enter. Positive D: the altered prompt scored worse.

    References
    ----------
    .. [1] Mallinar, N., Heydari, A. A., Liu, X., et al. (2025). A scalable framework for
       evaluating health language models (Adaptive Precise Boolean rubrics), Methods, equation 1.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"participant_id": [1] * 4, "criterion": ["a", "b", "a", "b"],
    ...                    "prompt_version": ["unaltered"] * 2 + ["altered"] * 2,
    ...                    "score": [1, 1, 0, 1]})
    >>> float(discrepancy(df)["estimate"].iloc[0])
    0.5
    """
    check_confidence(confidence)
    keys = [*by, item]
    require_columns(data, [*keys, criterion, version, score])
    frame = data[[*keys, criterion, version]].assign(_s=numeric_column(data, score)).dropna(subset=["_s"])
    wide = frame.pivot_table(index=[*keys, criterion], columns=version, values="_s", aggfunc="mean", observed=True)
    for level in (unaltered, altered):
        if level not in wide.columns:
            raise DataError(f"column {version!r} has no value {level!r}; values: {list(wide.columns)}")
    diff = (wide[unaltered] - wide[altered]).dropna().rename("d").reset_index()
    per_unit = diff.groupby(keys, sort=True)["d"].agg(estimate="mean", n="size").reset_index()
    if not by:
        return per_unit
    rows = []
    z_conf = confidence
    for key, mask in _groups(per_unit, by):
        d = per_unit.loc[mask, "estimate"].to_numpy()
        n = len(d)
        mean = float(d.mean())
        if n > 1:
            half = stats.t.ppf(0.5 + z_conf / 2, n - 1) * d.std(ddof=1) / np.sqrt(n)
        else:
            half = np.nan
        rows.append({**key, "estimate": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n, "method": "t"})
    return pd.DataFrame(rows)


@statistic(numbers=("score",), log=False)
def normalize_likert(
    data: pd.DataFrame,
    *,
    score: str = "score",
    low: float = 1,
    high: float = 5,
    method: Literal["divide", "minmax"] = "divide",
) -> pd.Series:
    """Likert scores on [0, 1]: ``score / high`` (Mallinar et al. 2025; the default) or min-max.

    Parameters
    ----------
    data : DataFrame
    score : str, default "score"
        Likert column.
    low, high : float
        Scale limits; values outside raise.
        Defaults: ``low=1``, ``high=5``.
    method : {"divide", "minmax"}
        ``"divide"``: ``score / high``, as Mallinar et al. (2025) divide the 1-5 average by 5 (so the
        scale starts at ``low/high``, 0.2). ``"minmax"``: ``(score - low)/(high - low)``.

    Returns
    -------
    Series
        Float, aligned with ``data``, named ``<score>_normalized``.

    Examples
    --------
    >>> import pandas as pd
    >>> normalize_likert(pd.DataFrame({"score": [1, 5]})).tolist()
    [0.2, 1.0]
    """
    check_choice("method", method, ["divide", "minmax"])
    values = _likert(data, score, low, high)
    out = values / high if method == "divide" else (values - low) / (high - low)
    return pd.Series(out, index=data.index, name=f"{score}_normalized")


@statistic(numbers=("score",), log=False)
def binarize_likert(data: pd.DataFrame, *, score: str = "score", threshold: float = 4,
                    low: float = 1, high: float = 5) -> pd.Series:
    """Likert score -> boolean ``score >= threshold``: Mallinar et al. (2025)'s "Binarized @ 4" and "@ 5".

    Parameters
    ----------
    data : DataFrame
        One row per judgement.
    score : str
        Likert score column.
    threshold : float, default 4
        Scores at or above it are True.
    low, high : float
        The scale's ends; a score outside them is refused.
        Defaults: ``low=1``, ``high=5``.

    Returns
    -------
    Series
        Nullable boolean aligned with ``data`` (``<NA>`` where the score is missing), named
        ``<score>_at_<threshold>``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"score": [3, 4, 5]})
    >>> binarize_likert(df, threshold=4).tolist(), binarize_likert(df, threshold=5).tolist()
    ([False, True, True], [False, False, True])
    """
    values = _likert(data, score, low, high)
    out = pd.array(values >= threshold, dtype="boolean")
    out[np.isnan(values)] = pd.NA
    return pd.Series(out, index=data.index, name=f"{score}_at_{threshold:g}")


def _likert(data, score, low, high):
    require_columns(data, [score])
    values = numeric_column(data, score)
    bad = ~np.isnan(values) & ((values < low) | (values > high))
    if bad.any():
        row = data.index[np.argmax(bad)]
        raise DataError(f"column {score!r} row {row!r} holds {values[bad][0]!r}, outside the scale [{low}, {high}]")
    return values
