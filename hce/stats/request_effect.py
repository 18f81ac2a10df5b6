"""Do the choices of one request agree more than separate requests do? The check before adopting n-sampling.

Several choices from one request (OpenAI's ``n``; hce's ``samples_per_request``) share that
request: its server, its batch, its numerics. If that shared state moves the scores, the
choices of one request agree more than separate calls do, and the per-item SD measured from
them understates what the PRD measures (seed 000, Experiment 5: the SD of 10 separate
attempts). :func:`request_variance` measures it on a pilot log that has several requests per
item (some with several choices): a variance-components model

    score = mu + a_item + b_(item, request) + e,   a ~ N(0, s2_item), b ~ N(0, s2_request), e ~ N(0, s2_within)

fitted by REML (:func:`hce.stats.lmer`; an attempt without a ``request_id`` is a request of
its own). ``s2_within`` is the spread among the choices of one request; a separate call's
spread around its item's mean is ``s2_request + s2_within``. The test of ``s2_request = 0``
is the likelihood-ratio test of the model against the one without ``b`` (both by ML), its
p-value from the boundary mixture ``0.5 chi2_0 + 0.5 chi2_1`` (Self & Liang 1987;
Stram & Lee 1994), since a variance cannot be negative.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._validate import statistic
from hce.stats.mixed import SingularFitWarning, lmer


@statistic(keys=("item",), numbers=("score",))
def request_variance(
    data: pd.DataFrame, *, score: str = "total", item: str = "item_id", request: str = "request_id"
) -> pd.DataFrame:
    """Within-request against between-request variance of repeated scores, and the test that they agree.

    Parameters
    ----------
    data : DataFrame
        An attempt log (or any long table): one row per attempt. Flagged attempts
        (``error_flag``) and rows with a missing score are left out, with a warning.
    score : str
        The score column (default ``total``).
    item, request : str
        The item and request columns; a missing ``request`` value (or no such column) makes
        the attempt a request of its own.
        Defaults: ``item="item_id"``, ``request="request_id"``.

    Returns
    -------
    DataFrame
        One row: ``within_request_var`` (s2_within), ``between_request_var`` (s2_request),
        ``item_var``, ``request_icc`` (s2_request / (s2_request + s2_within): how much two
        choices of one request agree beyond their item), ``sd_separate`` (the per-item SD
        separate calls would show, sqrt(s2_request + s2_within)), ``sd_within_request``
        (sqrt(s2_within), what n-sampling shows), ``statistic`` (likelihood ratio),
        ``df`` (1), ``p_value`` (boundary mixture), ``n_items``, ``n_requests``,
        ``n_shared`` (requests with more than one attempt), ``n``, ``singular`` (a variance
        estimated at 0: lme4's boundary fit, which for ``between_request_var`` is the
        answer "no request effect", so it is reported here rather than warned), ``method``.

    Raises
    ------
    DataError
        When no request holds two attempts of an item (nothing measures the within-request
        spread) or no item has two requests (nothing measures the between-request spread).

    References
    ----------
    Self, S. G., & Liang, K.-Y. (1987). Asymptotic properties of maximum likelihood estimators
    and likelihood ratio tests under nonstandard conditions. JASA, 82, 605-610.
    Stram, D. O., & Lee, J. W. (1994). Variance components testing in the longitudinal mixed
    effects model. Biometrics, 50, 1171-1177.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rows = [(f"T{i}", f"R{i}-{r}", 12 + i % 5 + shift + rng.normal(0, 0.5))
    ...         for i in range(30) for r in range(4) for shift in [rng.normal(0, 1.0)] for _ in range(3)]
    >>> log = pd.DataFrame(rows, columns=["item_id", "request_id", "total"])
    >>> out = request_variance(log)
    >>> bool(out["p_value"].iloc[0] < 1e-6), bool(0.6 < out["request_icc"].iloc[0] < 0.95)
    (True, True)
    """
    frame = pd.DataFrame({"score": data[score].astype(float), "item": data[item].astype(str)})
    own = pd.Series([f"\x00{i}" for i in range(len(data))], index=data.index)
    frame["request"] = data[request].astype("object").where(data[request].notna(), own).astype(str) \
        if request in data.columns else own  # fmt: skip
    missing = int(frame["score"].isna().sum())
    if missing:
        warn(f"request_variance: left out {missing} of {len(frame)} attempts with no {score!r}", HceWarning)
        frame = frame.dropna(subset=["score"])
    sizes = frame.groupby(["item", "request"]).size()
    shared = int((sizes > 1).sum())
    per_item = sizes.groupby(level="item").size()
    if shared == 0:
        raise DataError("request_variance: no request holds two attempts of an item; a pilot needs n-sampled requests")
    if not (per_item > 1).any():
        raise DataError("request_variance: no item has two requests; a pilot needs several requests per item")
    with warnings.catch_warnings(record=True) as caught:
        # s2_request at 0 is what the test looks for, not a failure: the singular fit is reported in `singular`.
        warnings.simplefilter("always", SingularFitWarning)
        full = lmer("score ~ 1 + (1 | item) + (1 | item:request)", frame)
        reduced = lmer("score ~ 1 + (1 | item)", frame)
        lrt = full.anova(reduced)
    for other in caught:
        if not issubclass(other.category, SingularFitWarning):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    singular = any(issubclass(w.category, SingularFitWarning) for w in caught)
    statistic = float(lrt["statistic"].iloc[1])
    parts = full.varcorr().set_index("group")["vcov"]
    s2_request, s2_item, s2_within = (float(parts.get(g, 0.0)) for g in ("item:request", "item", "Residual"))
    return pd.DataFrame([{
        "within_request_var": s2_within,
        "between_request_var": s2_request,
        "item_var": s2_item,
        "request_icc": s2_request / (s2_request + s2_within) if s2_request + s2_within > 0 else np.nan,
        "sd_separate": np.sqrt(s2_request + s2_within),
        "sd_within_request": np.sqrt(s2_within),
        "statistic": statistic,
        "df": 1,
        "p_value": 0.5 * stats.chi2.sf(statistic, 1) if statistic > 0 else 1.0,
        "n_items": int(per_item.size),
        "n_requests": int(sizes.size),
        "n_shared": shared,
        "n": len(frame),
        "singular": singular,
        "method": "REML variance components (lmer); ML likelihood-ratio test, p from 0.5 chi2_0 + 0.5 chi2_1",
    }])  # fmt: skip
