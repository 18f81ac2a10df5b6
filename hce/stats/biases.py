"""The judge's own biases measured as experiments: perturbation probes and the length slope.

A *probe* (issue 47; ``probes:`` in a design, ``hce.collect.design.probes``) judges every item a
second time in a transformed form that leaves the rubric's answer unchanged: neutral small talk
padded in, the criteria shuffled, the speaker labels renamed, the texts' order reversed. The log
keeps ``probe_id`` on the twin's rows and ``base_condition_id`` (the condition it is a twin of),
so each perturbed attempt meets its original on the same item and condition.
:func:`probe_effect` estimates the paired effect (perturbed minus original) with items as random
effects; with ``margin`` it runs Schuirmann's two one-sided tests, which call the judge free of a
bias larger than the margin only when both reject. The ``author`` probe compares instead the
judge family's scores of texts written by its own family with its scores of the others' texts
(self-preference), items as random effects and conditions as fixed effects.
:func:`length_bias` is the observational companion: the slope of the score (or of judge minus
human) on the text's length, per 1,000 characters, with item-clustered standard errors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import require_columns
from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.model_families import model_family
from hce.stats._validate import statistic
from hce.stats.mixed import SingularFitWarning, clmm, glmer, lmer

PROBE = "probe_id"
BASE_CONDITION = "base_condition_id"
AUTHOR = "author_model"
FIRST, BASE_FIRST = "first_criterion", "base_first_criterion"  # a shuffle_criteria twin's first criterion, and the original's
Model = Literal["auto", "lmer", "glmer", "clmm"]

def _columns(score: str | Sequence[str]) -> list[str]:
    return [score] if isinstance(score, str) else list(score)


def _is_binary(values: pd.Series) -> bool:
    present = pd.unique(values.dropna().astype(float))
    return len(present) > 0 and set(present) <= {0.0, 1.0}


def _fit(frame: pd.DataFrame, formula: str, model: str, confidence: float) -> pd.Series:
    """The ``effect`` row of the fitted model's fixed effects, with the model's name."""
    with warnings.catch_warnings():
        # A zero item-by-version variance is the answer "the probe moves every item alike", not a failure.
        warnings.simplefilter("ignore", SingularFitWarning)
        if model == "lmer":
            fit = lmer(formula, frame).fixef(confidence)
        elif model == "glmer":
            fit = glmer(formula, frame).fixef(confidence)
        else:
            fit = clmm(formula, frame).fixef(confidence)
    return fit.set_index("term").loc["effect"]


def _tost(estimate: float, se: float, df: float, margin: float) -> float:
    """Schuirmann's TOST p-value: the larger of the two one-sided p-values against -margin and +margin."""
    dist = stats.norm if not np.isfinite(df) else stats.t(df)
    p_low = dist.sf((estimate + margin) / se)  # H0: effect <= -margin
    p_high = dist.cdf((estimate - margin) / se)  # H0: effect >= +margin
    return float(max(p_low, p_high))


def _paired_frame(data: pd.DataFrame, probe: str, item: str, condition: str) -> pd.DataFrame:
    """The original and the perturbed rows of ``probe``, matched on item and base condition."""
    require_columns(data, [PROBE], what="probe_effect: data")
    probes = data[PROBE].astype("object").where(data[PROBE].notna(), "").astype(str).str.strip()
    perturbed = probes == probe
    if not perturbed.any():
        present = sorted(set(probes) - {""})
        raise DataError(f"probe_effect: no rows with {PROBE} == {probe!r}; probes in the log: {present}")
    base = data[condition].astype(str)
    if BASE_CONDITION in data.columns:
        named = data[BASE_CONDITION].astype("object")
        base = named.where(named.notna() & (named.astype(str) != ""), base).astype(str)
    frame = pd.DataFrame({"item": data[item].astype(str), "base": base, "effect": perturbed.astype(float)})
    keep = perturbed | (probes == "")
    frame = frame[keep.to_numpy()]
    # Only pairs: an item and base condition judged both ways.
    both = frame.groupby(["item", "base"])["effect"].transform(lambda e: e.nunique() == 2).astype(bool)
    return frame[both.to_numpy()]


def _author_frame(data: pd.DataFrame, item: str, rater: str, author: str, condition: str,
                  family: Callable[[object], str]) -> pd.DataFrame:
    """Original rows with ``effect`` = 1 where the judge's family wrote the judged text."""
    require_columns(data, [author, rater], what="probe_effect: data")
    rows = data
    if PROBE in data.columns:
        rows = data[data[PROBE].isna() | (data[PROBE].astype(str).str.strip() == "")]
    known = rows[author].notna() & (rows[author].astype(str).str.strip() != "")
    rows = rows[known]
    own = rows[rater].map(family) == rows[author].map(family)
    frame = pd.DataFrame({"item": rows[item].astype(str), "base": rows[condition].astype(str),
                          "effect": own.astype(float)}, index=rows.index)  # fmt: skip
    if frame.groupby("item").size().max() < 2:
        raise DataError("probe_effect: the author probe needs each item judged more than once (by judges of two "
                        "model families, or in several attempts): with one score per item its variance is not identified")
    if frame["effect"].nunique() < 2:
        raise DataError(f"probe_effect: the author probe needs texts by the judge's own family and by others; "
                        f"every {author!r} here is {'the' if frame['effect'].all() else 'not the'} judge's family")  # fmt: skip
    return frame


@statistic(keys=("item", "condition"), numbers=("score",))
def probe_effect(
    data: pd.DataFrame,
    *,
    probe: str,
    score: str | Sequence[str] = "total",
    margin: float | None = None,
    item: str = "item_id",
    condition: str = "condition_id",
    model: Model = "auto",
    rater: str = "model",
    author: str = AUTHOR,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """The effect of a perturbation probe on the judge's scores, per criterion, with an equivalence test.

    For a transforming probe (``pad_neutral``, ``shuffle_criteria``, ``swap_labels``,
    ``position``) the rows whose ``probe_id`` is ``probe`` are matched with the original rows
    (``probe_id`` empty) of the same item and base condition (``base_condition_id``, else
    ``condition``), and the model

        score ~ effect + base condition + (1 | item) [+ (1 | item:condition)] [+ (1 | item:version)]

    estimates ``effect``, the perturbed-minus-original shift. The item-by-condition term enters
    with several conditions, the item-by-version term (the probe's item-specific effect) when a
    cell has several attempts, so a study with repeated attempts is inferred at the item level.
    When a cell's repeats are identical in every cell (a judge at temperature 0), the model is
    fitted to the cell means without that term: the full model's limit, where its REML fit
    would run to a zero residual variance.
    For ``probe="author"`` the judged texts carry ``author_model``: ``effect`` is 1 where its
    family (:func:`model_family`) is the judge's (``rater`` column), and the model is the same
    on the original rows: self-preference, the judge family's score of its own family's texts
    against the others'.

    When the probe's rows carry ``first_criterion`` and ``base_first_criterion`` (a
    ``shuffle_criteria`` twin logs them) and several criteria are given, one more row,
    ``(first position)``, estimates the order bias: the score gained by the criterion the prompt
    presents first, from ``d ~ change + (1 | item)`` over items and criteria, ``d`` the paired
    difference of a criterion's mean score and ``change`` (-1, 0 or 1) how its being first changed.

    Parameters
    ----------
    data : DataFrame
        An attempt log with ``probe_id`` (and ``base_condition_id``) columns, as a design with
        ``probes:`` writes it.
    probe : str
        The probe's id in ``probe_id``, or ``"author"`` for self-preference.
    score : str or list of str
        The score column(s), one result row each (default ``total``): the rubric's criteria
        for a per-criterion answer.
    margin : float, optional
        The equivalence margin, on the effect's scale (points for ``lmer``, log odds for
        ``glmer``, the latent logit scale for ``clmm``). Default None: no equivalence test.
    item, condition : str
        The item and condition columns (default ``item_id``, ``condition_id``).
    model : {"auto", "lmer", "glmer", "clmm"}
        ``"auto"`` (default): ``glmer`` (binomial, logit) for a 0/1 score, else ``lmer``
        (REML, Satterthwaite df); ``"clmm"`` for an ordinal (Likert) model, on request.
    rater, author : str
        For the author probe: the judge's model column (default ``model``) and the texts'
        generating model (default ``author_model``).
    %(confidence)s
    alpha : float
        Level of each one-sided test of the TOST (default 0.05): "equivalent" is the
        ``1 - 2 alpha`` interval lying inside ``(-margin, margin)``.

    Returns
    -------
    DataFrame
        One row per score column: ``criterion``, ``probe``, ``estimate``, ``std_error``,
        ``df``, ``statistic``, ``p_value``, ``ci_low``, ``ci_high``, ``margin``,
        ``p_equivalence`` (the larger one-sided p), ``equivalent`` (True only when both
        one-sided tests reject; NA without a margin), ``scale``, ``n_items``, ``n``, ``method``.

    Raises
    ------
    DataError
        When no row carries the probe, or no item was judged both ways.

    References
    ----------
    Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power
    approach for assessing the equivalence of average bioavailability. J Pharmacokinet
    Biopharm, 15(6), 657-680. Panickssery, A., Bowman, S. R., & Feng, S. (2024). LLM evaluators
    recognize and favor their own generations. NeurIPS.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> rows = [{"item_id": f"T{i}", "condition_id": "c" + ("~pad" if p else ""), "probe_id": "pad" if p else "",
    ...          "base_condition_id": "c", "total": 10 + i % 4 + 0.5 * p + rng.normal(0, 0.5)}
    ...         for i in range(40) for p in (0, 1)]
    >>> out = probe_effect(pd.DataFrame(rows), probe="pad", margin=0.25)
    >>> bool(out["ci_low"].iloc[0] < 0.5 < out["ci_high"].iloc[0]), bool(out["equivalent"].iloc[0])
    (True, False)
    """
    if margin is not None and not margin > 0:
        raise DataError(f"probe_effect: margin must be a positive number, got {margin!r}")
    if probe == "author":
        frame = _author_frame(data, item, rater, author, condition, model_family)
    else:
        frame = _paired_frame(data, probe, item, condition)
    if frame.empty:
        raise DataError(f"probe_effect: no item and condition was judged both with and without probe {probe!r}")
    rows = []
    for column in _columns(score):
        sub = frame.assign(y=data.loc[frame.index, column].astype(float)).dropna(subset=["y"])
        kind = model if model != "auto" else "glmer" if _is_binary(sub["y"]) else "lmer"
        sub = sub.assign(ic=sub["item"] + "\x1f" + sub["base"],
                         cell=sub["item"] + "\x1f" + sub["base"] + "\x1f" + sub["effect"].astype(str))  # fmt: skip
        terms = ["effect"]
        if sub["base"].nunique() > 1:
            terms.append("base")
        random, fitted = ["(1 | item)"], sub
        if sub["base"].nunique() > 1 and probe != "author":
            random.append("(1 | ic)")
        if kind != "clmm" and probe != "author" and sub.groupby("cell").size().max() > 1:
            if kind == "lmer" and not sub.groupby("cell")["y"].var(ddof=0).any():
                # Repeats identical in every cell: the residual variance is 0, so the version term and the
                # residual cannot be told apart and REML runs to its boundary (lme4 too stops there, at a
                # wrong effect with df near 0). The fit's limit is the model of the cell means with the
                # version term as the residual: fitted directly, it is exact.
                fitted = sub.groupby("cell", sort=False)[["y", "effect", "item", "base", "ic"]].first()
            else:
                random.append("(1 | cell)")
        formula = f"y ~ {' + '.join(terms)} + {' + '.join(random)}"
        label = formula if fitted is sub else f"{formula} on the cell means (repeats identical in every cell)"
        rows.append(_result_row(column, probe, _fit(fitted, formula, kind, confidence), kind, label, sub, margin, alpha))
    twins = frame.index[frame["effect"] == 1]
    if probe != "author" and {FIRST, BASE_FIRST} <= set(data.columns) and len(_columns(score)) > 1 \
            and data.loc[twins, [FIRST, BASE_FIRST]].notna().all(axis=None):
        position = _position_frame(data, frame, _columns(score))
        formula = "y ~ effect + (1 | item)"
        rows.append(_result_row("(first position)", probe, _fit(position, formula, "lmer", confidence), "lmer",
                                formula, position, margin, alpha))  # fmt: skip
    out = pd.DataFrame(rows)
    out["equivalent"] = out["equivalent"].astype("boolean")
    return out


def _result_row(criterion: str, probe: str, row: pd.Series, kind: str, formula: str, sub: pd.DataFrame,
                margin: float | None, alpha: float) -> dict:
    p_eq = _tost(row["estimate"], row["std_error"], row["df"], margin) if margin is not None else np.nan
    return {
        "criterion": criterion, "probe": probe, "estimate": row["estimate"], "std_error": row["std_error"],
        "df": row["df"], "statistic": row["statistic"], "p_value": row["p_value"],
        "ci_low": row["ci_low"], "ci_high": row["ci_high"], "margin": margin if margin is not None else np.nan,
        "p_equivalence": p_eq,
        "equivalent": pd.NA if margin is None else bool(p_eq < alpha),
        "scale": {"lmer": "points", "glmer": "log odds", "clmm": "latent (logit)"}[kind],
        "n_items": int(sub["item"].nunique()), "n": len(sub),
        "method": f"{kind} {formula}" + (f"; TOST at margin {margin:g}, alpha {alpha:g}" if margin else ""),
    }  # fmt: skip


def _position_frame(data: pd.DataFrame, frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per item, base condition and criterion: the paired difference of the mean scores (twin minus
    original) as ``y``, and as ``effect`` how the criterion's presented-first indicator changed (-1, 0, 1)."""
    twin = frame[frame["effect"] == 1]
    firsts = pd.DataFrame({"item": twin["item"], "base": twin["base"], "first": data.loc[twin.index, FIRST].astype(str),
                           "base_first": data.loc[twin.index, BASE_FIRST].astype(str)})  # fmt: skip
    firsts = firsts.groupby(["item", "base"]).first()
    parts = []
    for column in columns:
        means = frame.assign(y=data.loc[frame.index, column].astype(float)).groupby(["item", "base", "effect"])["y"].mean()
        wide = means.unstack("effect").dropna()
        d = pd.DataFrame({"y": wide[1.0] - wide[0.0]}).join(firsts, how="inner")
        d["effect"] = (d["first"] == column).astype(float) - (d["base_first"] == column).astype(float)
        parts.append(d.reset_index()[["item", "base", "y", "effect"]])
    return pd.concat(parts, ignore_index=True)


@statistic(keys=("item",), numbers=("score",), optional=("truth",))
def length_bias(
    data: pd.DataFrame,
    *,
    length: str,
    score: str | Sequence[str] = "total",
    truth: str | None = None,
    item: str = "item_id",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The slope of the judge's score (or of judge minus human) on text length, per 1,000 characters.

    An ordinary least-squares fit of ``score ~ length / 1000`` (``score - truth`` with
    ``truth``), its standard errors clustered by item (CR1: the sandwich with the
    ``G/(G-1) (N-1)/(N-K)`` correction, Stata's and statsmodels' default), its interval and
    test from a t with ``G - 1`` degrees of freedom (``G`` items), as Cameron and Miller
    advise for few clusters. Observational: a longer text may also be a better one, which is
    why ``truth`` (a human score of the same text) is there, and why a ``pad_neutral`` probe
    (:func:`probe_effect`) is the experiment.

    Parameters
    ----------
    data : DataFrame
        One row per attempt (or per rated text).
    length : str
        A column of character counts, or of the texts themselves (their length is taken).
    score : str or list of str
        The score column(s), one result row each (default ``total``).
    truth : str, optional
        A reference score of the same text (a human's); the slope is then of ``score - truth``.
        Default None.
    item : str
        The cluster column (default ``item_id``).
    %(confidence)s

    Returns
    -------
    DataFrame
        One row per score column: ``criterion``, ``estimate`` (points per 1,000 characters),
        ``std_error``, ``df``, ``statistic``, ``p_value``, ``ci_low``, ``ci_high``,
        ``n_items``, ``n``, ``method``.

    References
    ----------
    Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to cluster-robust
    inference. J Human Resources, 50(2), 317-372. R: ``sandwich::vcovCL(type = "HC1")``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> chars = rng.integers(500, 4000, 60)
    >>> d = pd.DataFrame({"item_id": np.repeat(np.arange(30), 2), "chars": chars,
    ...                   "total": 10 + 0.5 * chars / 1000 + rng.normal(0, 1, 60)})
    >>> out = length_bias(d, length="chars")
    >>> bool(out["ci_low"].iloc[0] < 0.5 < out["ci_high"].iloc[0])
    True
    """
    require_columns(data, [length], what="length_bias: data")
    values = data[length]
    chars = values.astype(str).str.len().astype(float) if values.dtype == object or pd.api.types.is_string_dtype(values) \
        else values.astype(float)  # fmt: skip
    rows = []
    for column in _columns(score):
        y = data[column].astype(float) - (data[truth].astype(float) if truth is not None else 0.0)
        frame = pd.DataFrame({"y": y, "x": chars / 1000.0, "g": data[item].astype(str)}).dropna()
        dropped = len(data) - len(frame)
        if dropped:
            warn(f"length_bias: left out {dropped} of {len(data)} rows with no {column!r}, length or truth", HceWarning)
        n_items = frame["g"].nunique()
        if n_items < 2 or frame["x"].nunique() < 2:
            raise DataError(f"length_bias: {column!r} needs texts of at least two lengths in at least two items")
        x = np.column_stack([np.ones(len(frame)), frame["x"].to_numpy()])
        beta, *_ = np.linalg.lstsq(x, frame["y"].to_numpy(), rcond=None)
        resid = frame["y"].to_numpy() - x @ beta
        bread = np.linalg.inv(x.T @ x)
        scores = pd.DataFrame(x * resid[:, None]).groupby(frame["g"].to_numpy()).sum().to_numpy()
        n, k = x.shape
        scale = n_items / (n_items - 1) * (n - 1) / (n - k)
        cov = scale * bread @ (scores.T @ scores) @ bread
        se = float(np.sqrt(cov[1, 1]))
        df = n_items - 1
        crit = stats.t.ppf(0.5 + confidence / 2, df)
        t = beta[1] / se if se > 0 else np.nan
        rows.append({
            "criterion": column, "estimate": float(beta[1]), "std_error": se, "df": float(df), "statistic": t,
            "p_value": float(2 * stats.t.sf(abs(t), df)) if se > 0 else np.nan,
            "ci_low": beta[1] - crit * se, "ci_high": beta[1] + crit * se,
            "n_items": int(n_items), "n": n,
            "method": "OLS slope per 1,000 characters" + (f" of {column} - {truth}" if truth else "")
            + ", item-clustered CR1 SE, t(G - 1)",
        })  # fmt: skip
    return pd.DataFrame(rows)
