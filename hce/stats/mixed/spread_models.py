"""Mixed models of the spread of repeated scores: :func:`spread_model`."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import patsy

from hce._checks import check_choice, numeric_column, require_columns
from hce._warnings import warn
from hce.errors import DataError, FormulaError
from hce.stats._validate import statistic
from hce.stats.mixed.formula import parse_formula
from hce.stats.mixed.lmer_fit import lmer
from hce.stats.mixed.emmeans import _factor_column
from hce.stats.mixed.lmer_result import LmerResult, Method


@statistic(formula="formula", numbers=("score",), spread=True)
def spread_model(
    formula: str,
    data: pd.DataFrame,
    *,
    score: str = "total",
    zero_sd: Literal["half_min", "drop"] = "half_min",
    method: Method = "auto",
) -> LmerResult:
    """Mixed model of the spread of repeated scores: which conditions make the judge consistent.

    The repeated attempts of each cell (every combination of the columns the formula
    names, e.g. item x prompt x model) are reduced to their standard deviation, which is
    then modelled with :func:`lmer`.

    Parameters
    ----------
    formula : str
        lme4 formula whose response is ``log_sd`` (natural log of the SD) or ``sd``, e.g.
        ``"log_sd ~ prompt_id * model + (1 | item_id)"``.
    data : pandas.DataFrame
        The attempt log, one row per attempt.
    score : str, default "total"
        Score column whose spread is modelled.
    zero_sd : {"half_min", "drop"}, default "half_min"
        For ``log_sd``, cells whose attempts all agree (SD = 0, log undefined):
        ``"half_min"`` replaces their SD by half the smallest positive SD in the data (a
        common convention for logs of zeros; it keeps perfectly consistent cells as the
        most consistent); ``"drop"`` removes them. Either way a warning says how many.
    method : {"auto", "anova", "pls"}
        As in :func:`lmer`.

    Returns
    -------
    LmerResult
        Its ``design.data`` holds the per-cell table: the cell columns, ``n`` (attempts),
        ``sd`` (ddof = 1) and ``log_sd``.

    Warns
    -----
    UserWarning
        Cells with fewer than two attempts (no SD) are dropped; zero-SD cells handled.

    References
    ----------
    .. [1] Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear
       mixed-effects models using lme4. Journal of Statistical Software 67(1), 1-48.
    .. [2] Bartlett, M. S., & Kendall, D. G. (1946). The statistical analysis of variance-
       heterogeneity and the logarithmic transformation. JRSS Supplement 8, 128-138.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> log = pd.DataFrame([(i, p, a) for i in range(200) for p in ("p1", "p2") for a in range(5)],
    ...                    columns=["item_id", "prompt_id", "attempt"])
    >>> log["total"] = rng.normal(10, np.where(log["prompt_id"] == "p1", 1.0, 2.0))
    >>> m = spread_model("log_sd ~ prompt_id + (1 | item_id)", log)
    >>> fe = m.fixef().set_index("term")["estimate"]
    >>> round(float(fe["prompt_id[T.p2]"]), 2)  # truth: log 2 = 0.69
    0.66

    """
    check_choice("zero_sd", zero_sd, ["half_min", "drop"])
    parsed = parse_formula(formula)
    check_choice("response of a spread model", parsed.response, ["log_sd", "sd"])
    require_columns(data, [score])
    columns = list(parsed.grouping_factors)
    for term in patsy.ModelDesc.from_formula(parsed.fixed).rhs_termlist:
        for factor in term.factors:
            column = _factor_column(factor.code, data)
            if column is None:
                raise FormulaError(
                    f"spread_model: fixed term {factor.code!r} must be a column or C(column)"
                )
            columns.append(column)
    columns = list(dict.fromkeys(columns))
    require_columns(data, columns)
    scores = pd.Series(numeric_column(data, score), index=data.index)
    cells = (
        scores.groupby([data[c] for c in columns], observed=True)
        .agg(n="count", sd="std")
        .reset_index()
    )
    few = cells["n"] < 2
    if few.any():
        warn(f"spread_model: dropped {int(few.sum())} cells with fewer than 2 attempts")
        cells = cells[~few]
    if parsed.response == "log_sd":
        zero = cells["sd"] == 0
        if zero.all():
            raise DataError(
                "spread_model: every cell has SD 0; log_sd is undefined (model 'sd' instead)"
            )
        if zero.any():
            if zero_sd == "drop":
                cells = cells[~zero]
                what = "dropped"
            else:
                cells = cells.assign(sd=cells["sd"].where(~zero, cells.loc[~zero, "sd"].min() / 2))
                what = "set to half the smallest positive SD"
            warn(f"spread_model: {int(zero.sum())} cells with SD 0 {what}")
        cells = cells.assign(log_sd=np.log(cells["sd"]))
    return lmer(formula, cells.reset_index(drop=True), method=method)
