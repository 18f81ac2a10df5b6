"""A two-level criterion (0/1, pass/fail, any two scores) analysed as the binary outcome it is.

An SD, an ICC or an interval-level alpha of 0/1 scores describes nothing a reader can use
("ICC 1.0e+00 [1.0e+00, 1.0e+00]"). For two levels the report of any log gives instead, per
condition: the share of items whose repeated attempts mostly give the higher level (Wilson
interval over items, which are independent, unlike the attempts nested in them), the flip
rate of repeated attempts, and their agreement on the nominal level (Fleiss' kappa, each
attempt a rater). Conditions are compared by :func:`condition_effects`: a binomial GLMM of
the attempts with a random intercept per item (attempts are nested in items), or, where that
model cannot be fitted, a permutation test among whole item x condition clusters with
cluster-bootstrap intervals; the report says which ran and why.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import hce.stats as hs
from hce.errors import DataError, HceWarning
from hce.report.log_frame import conditions, log_frame, native, of_condition, replaced, rows, valid
from hce.stats._intervals import proportion_ci
from hce.stats._resample import as_generator, percentile_interval, resample_counts

ITEM, CONDITION = "item_id", "condition_id"


def binary_levels(values: pd.Series | None, scale: tuple | None) -> tuple | None:
    """The two levels of a criterion (low, high), from its scale or else its values (which a
    scale makes unneeded: None); None when it has more.

    Examples
    --------
    >>> binary_levels(pd.Series([0, 1, 1, None]), None)
    (0.0, 1.0)
    >>> binary_levels(pd.Series([1, 2, 3]), (1, 2, 3, 4)) is None
    True
    """
    if scale is not None:
        return tuple(scale) if len(scale) == 2 else None
    seen = tuple(sorted(pd.to_numeric(values, errors="coerce").dropna().unique().tolist()))
    return seen if len(seen) == 2 else None


def as_high(log: object, column: str, levels: tuple) -> object:
    """The log (in its engine) with ``column`` as 1.0 (the higher level), 0.0 (the lower) or blank.

    Examples
    --------
    >>> as_high(pd.DataFrame({"stigma": [0, 1, None]}), "stigma", (0, 1))["stigma"].tolist()
    [0.0, 1.0, nan]
    """
    import narwhals as nw

    value = nw.col(column).cast(nw.Float64)
    high = nw.when(~value.is_null()).then((value == float(levels[1])).cast(nw.Float64))  # no otherwise: blank stays blank
    return native(replaced(log_frame(log), column, high))


def binary_summary(log: Any, column: str, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per condition: the share of items at the higher level with its Wilson interval, and flips.

    ``log[column]`` holds 1/0/NaN (:func:`as_high`). Returns one row per condition:
    ``n_items``, ``n_attempts``, ``n_attempts_high`` and ``share_attempts`` (attempts at the
    higher level, descriptive), ``n_items_high`` of ``n_items_decided`` with ``estimate`` /
    ``ci_low`` / ``ci_high`` (share of items whose majority is the higher level, Wilson
    interval over items; tied items are left out and counted in ``n_ties``),
    ``mean_flip_rate`` (mean share of an item's attempts disagreeing with its majority),
    ``n_items_flipping`` and ``share_items_flipping`` (items whose attempts do not all agree).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HceWarning)  # ties are counted in n_ties below
        # the stability of votes is read per attempt: only the columns it needs
        attempts = rows(log_frame(log), ["attempt_id", ITEM, CONDITION, "attempt", "error_flag", column])
        votes = hs.vote_stability(attempts, item=ITEM, condition=CONDITION, score=column, error="error_flag", confidence=confidence)
    votes = votes[votes["n"] > 0]
    shares = []
    for condition, part in votes.groupby(CONDITION, sort=True):
        decided = part["majority"].dropna().astype(bool)
        k, n = int(decided.sum()), len(decided)
        low, high = proportion_ci(np.array([k]), np.array([n]), confidence, "wilson")
        flipping = int((part["flip_rate"] > 0).sum())
        shares.append({CONDITION: condition, "n_items": len(part), "n_attempts": int(part["n"].sum()),
                     "n_attempts_high": int(part["n_true"].sum()),
                     "share_attempts": float(part["n_true"].sum() / part["n"].sum()),
                     "n_items_high": k, "n_items_decided": n,
                     "estimate": k / n if n else np.nan, "ci_low": float(low[0]), "ci_high": float(high[0]),
                     "n_ties": len(part) - n, "mean_flip_rate": float(part["flip_rate"].mean()),
                     "n_items_flipping": flipping, "share_items_flipping": flipping / len(part),
                     "ci_method": "Wilson, over items (majority of each item's attempts)"})  # fmt: skip
    return pd.DataFrame(shares)


def nominal_agreement(log: Any, column: str, *, confidence: float = 0.95) -> tuple[pd.DataFrame, list[str]]:
    """Fleiss' kappa of repeated attempts per condition (each attempt a rater), on the nominal level.

    Returns the table and the reasons a condition has none (one level only, too few items).
    """
    view = log_frame(log)
    found, skipped = [], []
    for condition in conditions(view):
        try:
            out = hs.fleiss_kappa(native(valid(of_condition(view, condition), column)), item=ITEM, rater="attempt", score=column,
                                  confidence=confidence)  # fmt: skip
        except DataError as exc:
            skipped.append(f"agreement of condition {condition} is not reported: {exc}")
            continue
        found.append(out.assign(**{CONDITION: condition}))
    if not found:
        return pd.DataFrame(), skipped
    table = pd.concat(found, ignore_index=True)
    return table[[CONDITION, *[c for c in table.columns if c != CONDITION]]], skipped


#: Replicates of the cluster permutation test and the cluster bootstrap that stand in for the GLMM.
N_SIM = 2000
#: Permutations x clusters held at once by the permutation test (its tables are that many x groups x 8 bytes):
#: past 2,500 item x condition clusters the permutations shrink to fit, down to MIN_SIM.
PERMUTATION_CELLS, MIN_SIM = 5_000_000, 199


class _NoModel(Exception):
    """Why the binomial GLMM gives no usable answer on this log (the fallback then says so)."""


def condition_effects(
    log: pd.DataFrame, column: str, *, confidence: float = 0.95, random_state: int | np.random.Generator | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Conditions compared on a 0/1 criterion, attempts nested in items.

    First choice: the binomial GLMM ``cbind(high, low) ~ condition + (1 | item)`` (lme4's
    ``glmer``, Laplace; the attempts of an item x condition cell aggregated, which leaves the
    likelihood's dependence on the parameters unchanged): each condition's odds ratio
    against the first (Wald interval, z test), and the likelihood-ratio test of the condition
    term against the model without it. Where the GLMM cannot be fitted (a condition with
    all attempts at one level: separation, an infinite odds ratio; or no convergence), a
    permutation test of the condition x level table among whole item x condition clusters
    (within items when every condition judged every item) gives the P value, and each
    condition's difference in the share of attempts at the higher level against the first
    comes with a cluster-bootstrap percentile interval (items resampled).

    ``log[column]`` holds 1/0/NaN (:func:`as_high`). Returns the per-condition table
    (``condition_id``, ``reference``, ``n_items``, ``n_attempts``, ``n_attempts_high``,
    ``effect`` ("odds ratio" or "difference in share"), ``estimate``, ``ci_low``,
    ``ci_high``, ``statistic``, ``p_value``, ``method``), the omnibus test (``statistic``,
    ``df``, ``p_value``, ``n_items``, ``n_attempts``, ``method``) and a sentence saying which
    analysis ran and why.

    Raises
    ------
    DataError
        Fewer than two conditions with a valid score.
    """
    return cell_effects(binary_cells(log, column), confidence=confidence, random_state=random_state)


def binary_cells(log: Any, column: str) -> pd.DataFrame:
    """Per item x condition: ``high`` (valid attempts at the higher level) and ``n`` (valid attempts).

    ``log[column]`` holds 1/0/NaN (:func:`as_high`); flagged attempts are left out.
    """
    table = valid(log_frame(log), column).counts([ITEM, CONDITION], sums=[column])
    return table.rename(columns={column: "high"})[[ITEM, CONDITION, "high", "n"]].astype({"n": "int64"})


def cell_effects(
    cells: pd.DataFrame, *, confidence: float = 0.95, random_state: int | np.random.Generator | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """:func:`condition_effects` from its item x condition cells (``item_id``, ``condition_id``,
    ``high``: valid attempts at the higher level, ``n``: valid attempts), the table an engine
    returns for a log in any engine (:func:`binary_cells`).

    Examples
    --------
    >>> cells = pd.DataFrame({"item_id": [f"T{i}" for i in range(8) for _ in "ab"], "condition_id": list("ab") * 8,
    ...                       "high": [3, 1, 2, 0, 3, 1, 1, 1, 2, 0, 3, 2, 2, 1, 3, 0], "n": 3})
    >>> effects, omnibus, why = cell_effects(cells, random_state=0)
    >>> row = effects.iloc[0]
    >>> print(row["condition_id"], row["effect"], int(row["n_attempts_high"]), "of", int(row["n_attempts"]))
    b odds ratio 6 of 24
    """
    cells = cells.assign(low=cells["n"] - cells["high"])
    levels = sorted(cells[CONDITION].astype(str).unique())
    if len(levels) < 2:
        raise DataError(f"fewer than two conditions with a valid score ({levels})")
    data = pd.DataFrame({"item": cells[ITEM].astype(str), "condition": cells[CONDITION].astype(str),
                         "high": cells["high"].astype(int), "low": cells["low"].astype(int)})  # fmt: skip
    try:
        table, omnibus, why = _glmm(data, levels, confidence)
    except _NoModel as exc:
        table, omnibus, why = _cluster_fallback(data, levels, confidence, as_generator(random_state), str(exc))
    totals = data.assign(n=data["high"] + data["low"]).groupby("condition").agg(
        n_items=("item", "nunique"), n_attempts=("n", "sum"), n_attempts_high=("high", "sum"))
    table = table.join(totals, on=CONDITION)
    table = table[[CONDITION, "reference", "n_items", "n_attempts", "n_attempts_high", "effect", "estimate", "ci_low",
                   "ci_high", "statistic", "p_value", "method"]]  # fmt: skip
    omnibus = omnibus.assign(n_items=data["item"].nunique(), n_attempts=int((data["high"] + data["low"]).sum()))
    return table.reset_index(drop=True), omnibus[["statistic", "df", "p_value", "n_items", "n_attempts", "method"]], why


def _glmm(data: pd.DataFrame, levels: list[str], confidence: float) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    if data.groupby("condition")["high"].sum().isin([0]).any() or data.groupby("condition")["low"].sum().isin([0]).any():
        raise _NoModel("a condition has every attempt at one level, so its odds ratio is infinite (separation)")
    with warnings.catch_warnings():
        # A singular fit is said in the method below and a failed convergence check sends the
        # comparison to the fallback: no library text reaches the report.
        warnings.simplefilter("ignore")
        try:
            full = hs.glmer("cbind(high, low) ~ condition + (1 | item)", data)
            null = hs.glmer("cbind(high, low) ~ 1 + (1 | item)", data)
        except DataError as exc:  # e.g. quasi-complete separation
            raise _NoModel(f"the binomial GLMM cannot be fitted: {exc}") from None
    if not (full.converged and null.converged):
        raise _NoModel("the binomial GLMM did not converge (" + "; ".join(full.messages + null.messages) + ")")
    fixef = full.fixef(confidence).iloc[1:]
    singular = "; item variance estimated at 0 (boundary fit)" if full.singular else ""
    method = f"binomial GLMM, logit link, random intercept per item (Laplace), Wald z and interval{singular}"
    table = pd.DataFrame({CONDITION: [t.split("[T.", 1)[1][:-1] for t in fixef["term"]], "reference": levels[0],
                          "effect": "odds ratio", "estimate": np.exp(fixef["estimate"].to_numpy()),
                          "ci_low": np.exp(fixef["ci_low"].to_numpy()), "ci_high": np.exp(fixef["ci_high"].to_numpy()),
                          "statistic": fixef["statistic"].to_numpy(), "p_value": fixef["p_value"].to_numpy(),
                          "method": method})  # fmt: skip
    lr = max(2 * (full.loglik - null.loglik), 0.0)
    df = len(levels) - 1
    omnibus = pd.DataFrame([{"statistic": lr, "df": df, "p_value": float(stats.chi2.sf(lr, df)),
                             "method": f"likelihood-ratio test of the condition term (chi-square, {df} df), {method.split(',', 1)[0]}"}])  # fmt: skip
    why = ("Conditions are compared with a binomial generalised linear mixed model (glmer, cbind(high, low) ~ condition "
           "+ (1 | item)): the attempts of an item are not independent, and the random intercept per item accounts "
           f"for that; odds ratios are against condition {levels[0]}.")  # fmt: skip
    return table, omnibus, why


def _cluster_fallback(
    data: pd.DataFrame, levels: list[str], confidence: float, rng: np.random.Generator, reason: str
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    paired = data.groupby("condition")["item"].agg(frozenset).nunique() == 1
    attempts = data.loc[data.index.repeat(data["high"] + data["low"])].reset_index(drop=True)
    attempts["level"] = np.concatenate([np.r_[np.ones(h), np.zeros(lo)] for h, lo in zip(data["high"], data["low"])])
    n_perm = int(max(MIN_SIM, min(N_SIM, PERMUTATION_CELLS // max(len(data), 1))))
    perm = hs.cluster_permutation_test(attempts, condition="condition", codes="level", cluster=["item", "condition"],
                                       strata="item" if paired else None, n_sim=n_perm, random_state=rng)  # fmt: skip
    high = data.pivot_table(index="item", columns="condition", values="high", aggfunc="sum", fill_value=0)[levels]
    n = (data.assign(n=data["high"] + data["low"])
         .pivot_table(index="item", columns="condition", values="n", aggfunc="sum", fill_value=0))[levels]  # fmt: skip
    h, m = high.to_numpy(float), n.to_numpy(float)
    point = h.sum(0) / m.sum(0)
    replicates = []
    for _start, _stop, counts in resample_counts(len(h), N_SIM, rng):
        with np.errstate(divide="ignore", invalid="ignore"):
            share = (counts @ h) / (counts @ m)
        replicates.append(share[:, 1:] - share[:, :1])
    low, up = percentile_interval(np.vstack(replicates), confidence)
    within = "within items" if paired else "across items"
    method = f"difference in share of attempts at the higher level, cluster bootstrap over items ({N_SIM} replicates, percentile)"
    table = pd.DataFrame({CONDITION: levels[1:], "reference": levels[0], "effect": "difference in share",
                          "estimate": point[1:] - point[0], "ci_low": low, "ci_high": up, "statistic": np.nan,
                          "p_value": np.nan, "method": method})  # fmt: skip
    omnibus = pd.DataFrame([{"statistic": float(perm["statistic"].iloc[0]), "df": len(levels) - 1,
                             "p_value": float(perm["p_value"].iloc[0]),
                             "method": f"permutation test of condition x level among whole item x condition clusters, {within} "
                                       f"(Pearson X^2, {n_perm} permutations)"}])  # fmt: skip
    why = (f"The binomial GLMM (glmer, random intercept per item) is not used: {reason}. Conditions are instead compared "
           f"with a permutation test that moves whole item x condition clusters ({within}), and differences in share "
           f"against condition {levels[0]} get cluster-bootstrap intervals over items; both keep the item as the unit.")  # fmt: skip
    return table, omnibus, why
