"""Differential item functioning (DIF) by ordinal logistic regression.

Does an item (a rubric attribute) score one patient subgroup differently from another when
both have the same overall quality? That is the fairness question of the PRD's Success
Metric 6: an instrument should treat groups alike. Following Zumbo (1999) and ``lordif``,
each item's ordinal score is regressed on a matching score (by default the total over all
items) in three nested proportional-odds models:

* M1: item ~ matching
* M2: item ~ matching + group                 (uniform DIF: M2 vs M1)
* M3: item ~ matching + group + matching:group (non-uniform DIF: M3 vs M2; total: M3 vs M1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from hce._checks import numeric_column, require_columns
from hce.errors import DataError
from hce.stats._validate import statistic

__all__ = ["dif_ordinal"]

# Jodoin & Gierl (2001) bounds on the Nagelkerke R^2 change
_NEGLIGIBLE, _LARGE = 0.035, 0.070


def _fit_loglik(y: np.ndarray, exog: np.ndarray) -> tuple[float, np.ndarray]:
    """Log-likelihood and slopes of a proportional-odds logit model (statsmodels)."""
    # statsmodels' model layer (with formulaic) is imported here, not with hce.stats
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    model = OrderedModel(y, exog, distr="logit")
    res = model.fit(method="bfgs", disp=False, maxiter=2000)
    return float(res.llf), np.asarray(res.params[: exog.shape[1]])


def _null_loglik(y: np.ndarray) -> float:
    counts = np.bincount(y)
    counts = counts[counts > 0]
    return float(np.sum(counts * np.log(counts / counts.sum())))


def _nagelkerke(ll: float, ll0: float, n: int) -> float:
    return (1 - np.exp(2 * (ll0 - ll) / n)) / (1 - np.exp(2 * ll0 / n))


def _classify(delta: float, p: float, alpha: float) -> str:
    if not p < alpha or delta < _NEGLIGIBLE:
        return "negligible"
    return "moderate" if delta < _LARGE else "large"


@statistic(
    keys=("condition", "matching"), numbers=("columns",), log=False,
    retired={"items": "columns", "group": "condition"},
)
def dif_ordinal(
    data: pd.DataFrame,
    *,
    columns: Sequence[str],
    condition: str,
    matching: str | None = None,
    reference: object | None = None,
    tested: Sequence[str] | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Uniform and non-uniform DIF of each item across groups (ordinal logistic regression).

    Parameters
    ----------
    data : DataFrame
        One row per rated text (e.g. a patient's transcript), one column per item with its
        ordinal score, and the group column.
    columns : list of str
        Item columns tested.
    condition : str
        Column of the subgroup (sex, age band, language, ...); two or more levels.
    matching : str, optional
        Column holding the matching (ability) score. Default: the total over ``columns``
        (rows with a missing item are then dropped).
    reference : object, optional
        Reference level of ``condition``; default the first level in sorted order.
    tested : list of str, optional
        The items to test (each needs three model fits); default all ``columns``. The
        matching total still sums every item in ``columns``.
    alpha : float, default 0.05
        Level at which a DIF effect is classified as moderate or large.

    Returns
    -------
    DataFrame
        One row per item and test (``uniform``, ``non_uniform``, ``total``): ``item, test,
        statistic`` (likelihood-ratio chi-square), ``df1, p_value, p_adjusted`` (Holm across
        items within a test), ``effect_size`` (change in Nagelkerke R^2),
        ``delta_mcfadden`` (change in McFadden R^2), ``beta_change`` (uniform rows: relative
        change of the matching slope, Crane et al.), ``classification`` (Jodoin & Gierl:
        ``negligible``, ``moderate``, ``large``), ``n, method``.

    Notes
    -----
    With G groups, uniform DIF compares M2 with M1 on G - 1 df, non-uniform M3 with M2 on
    G - 1 df, total M3 with M1 on 2(G - 1) df; statistic = 2 (logL_big - logL_small).
    Nagelkerke R^2 = (1 - exp(2 (L0 - L)/n)) / (1 - exp(2 L0 / n)) with L0 the intercept-only
    log-likelihood. An effect is ``moderate`` when significant with 0.035 <= Delta R^2 <
    0.070 and ``large`` from 0.070 (Jodoin & Gierl 2001). Beta change
    ``|b1(M1) - b1(M2)| / |b1(M1)|`` above 0.10 also flags uniform DIF (Crane et al. 2004).
    The matching score is standardised before fitting; this changes no statistic.

    References
    ----------
    .. [1] Zumbo BD (1999). A Handbook on the Theory and Methods of Differential Item
       Functioning (DIF): Logistic Regression Modeling as a Unitary Framework for Binary and
       Likert-Type (Ordinal) Item Scores. Ottawa: Department of National Defense.
    .. [2] Jodoin MG, Gierl MJ (2001). Evaluating type I error and power rates using an
       effect size measure with the logistic regression procedure for DIF detection. Appl
       Meas Educ 14, 329-349.
    .. [3] Crane PK, van Belle G, Larson EB (2004). Test bias in a cognitive test:
       differential item functioning in the CASI. Stat Med 23, 241-256.
    .. [4] Choi SW, Gibbons LE, Crane PK (2011). lordif: An R package for detecting
       differential item functioning using iterative hybrid ordinal logistic regression/item
       response theory and Monte Carlo simulations. J Stat Softw 39(8).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> n = 400
    >>> g = rng.integers(0, 2, n); theta = rng.normal(size=n)
    >>> cut = lambda z: np.digitize(z, [-1, 0, 1]) + 1
    >>> d = pd.DataFrame({f"i{j}": cut(theta + rng.normal(0, .7, n)) for j in range(4)})
    >>> d["i4"] = cut(theta + 0.8 * g + rng.normal(0, .7, n))  # i4 favours group 1
    >>> d["group"] = np.where(g == 1, "b", "a")
    >>> res = dif_ordinal(d, columns=[f"i{j}" for j in range(5)], condition="group")
    >>> res.query("classification != 'negligible'")[["item", "test", "classification"]]
       item     test classification
    12   i4  uniform          large
    14   i4    total          large

    A DIF item inflates the matching total, so clean items can show small significant
    effects of the opposite sign; judge them by their effect size, or pass a purified
    ``matching`` score (the total without flagged items).
    """
    require_columns(data, [*columns, condition] + ([matching] if matching else []))
    if len(columns) < 1:
        raise DataError("items must name at least one item column")
    levels = sorted(data[condition].dropna().unique(), key=str)
    if len(levels) < 2:
        raise DataError(f"group column {condition!r} has {len(levels)} level(s); DIF needs two")
    if reference is None:
        reference = levels[0]
    elif reference not in levels:
        raise DataError(f"reference={reference!r} is not a level of {condition!r}; levels: {levels}")
    others = [lv for lv in levels if lv != reference]
    scores = {item: numeric_column(data, item) for item in columns}
    m_all = (numeric_column(data, matching) if matching
             else np.sum(np.column_stack(list(scores.values())), axis=1))
    g_all = data[condition].to_numpy()
    tested = list(columns) if tested is None else list(tested)
    unknown = [t for t in tested if t not in columns]
    if unknown:
        raise DataError(f"tested items {unknown} are not among items {list(columns)}")
    rows = []
    for item in tested:
        y_raw = scores[item]
        keep = np.isfinite(y_raw) & np.isfinite(m_all) & pd.notna(g_all)
        y_raw, m, g = y_raw[keep], m_all[keep], g_all[keep]
        n = y_raw.size
        categories = np.unique(y_raw)
        if categories.size < 2:
            raise DataError(f"item {item!r} has a single observed score; DIF is undefined")
        y = np.searchsorted(categories, y_raw)
        m = (m - m.mean()) / m.std() if m.std() > 0 else m - m.mean()
        dummies = np.column_stack([(g == lv).astype(float) for lv in others])
        ll1, b1 = _fit_loglik(y, m[:, None])
        ll2, b2 = _fit_loglik(y, np.column_stack([m, dummies]))
        ll3, _ = _fit_loglik(y, np.column_stack([m, dummies, dummies * m[:, None]]))
        ll0 = _null_loglik(y)
        r2 = {k: _nagelkerke(ll, ll0, n) for k, ll in (("1", ll1), ("2", ll2), ("3", ll3))}
        mcf = {k: 1 - ll / ll0 for k, ll in (("1", ll1), ("2", ll2), ("3", ll3))}
        df = len(others)
        for test, big, small, dfree in (("uniform", ll2, ll1, df), ("non_uniform", ll3, ll2, df),
                                        ("total", ll3, ll1, 2 * df)):
            keys = {"uniform": ("2", "1"), "non_uniform": ("3", "2"), "total": ("3", "1")}[test]
            stat = max(2 * (big - small), 0.0)
            rows.append({
                "item": item, "test": test, "statistic": stat, "df1": dfree,
                "p_value": float(stats.chi2.sf(stat, dfree)),
                "effect_size": r2[keys[0]] - r2[keys[1]],
                "delta_mcfadden": mcf[keys[0]] - mcf[keys[1]],
                "beta_change": (abs(b1[0] - b2[0]) / abs(b1[0]) if test == "uniform"
                                else np.nan),
                "n": n})
    out = pd.DataFrame(rows)
    out.insert(5, "p_adjusted", np.nan)
    for test, idx in out.groupby("test").groups.items():
        out.loc[idx, "p_adjusted"] = multipletests(out.loc[idx, "p_value"], method="holm")[1]
    out["classification"] = [_classify(e, p, alpha) for e, p in
                             zip(out["effect_size"], out["p_value"])]
    out["method"] = (f"ordinal logistic regression DIF, reference {reference!r}, matching "
                     f"{matching or 'total score'}")
    return out
