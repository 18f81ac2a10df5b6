"""The one-way repeated-measures ANOVA with the checks of its assumptions printed beside it.

:func:`rm_anova` is the PRD's parametric alternative to Friedman's test (the study reports it
as a sensitivity analysis). A parametric result is only as good as its assumptions, so the
same row carries them: Shapiro-Wilk of the residuals, Mauchly's test of sphericity with the
Greenhouse-Geisser epsilon, and the conditions whose scores do not vary at all.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from hce._checks import check_choice, check_confidence
from hce._pvalues import p_text
from hce.errors import DataError
from hce.stats._intervals import noncentrality_ci
from hce.stats._validate import statistic
from hce.stats.tests import block_matrix, ordered_columns

Transform = Literal["sqrt", "log", "log1p", "none"] | None


@statistic(
    keys=("item", "condition"), numbers=("score",),
    retired={"subject": "item", "within": "condition", "value": "score"},
)
def rm_anova(
    data: pd.DataFrame,
    *,
    item: str = "item_id",
    condition: str = "condition_id",
    score: str = "sd",
    transform: Transform = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    r"""One-way repeated-measures ANOVA of ``score`` (optionally transformed) with its assumption checks.

    Parameters
    ----------
    data : DataFrame
        One ``score`` per subject x condition (e.g. SD per item x model).
    item : str, default "item_id"
        Subject (block) column; incomplete subjects are dropped with a warning.
    condition : str, default "condition_id"
        Within-subject factor.
    score : str, default "sd"
        Numeric column.
    transform : {None, "sqrt", "log", "log1p", "none"}, default None
        Variance-stabilising transform applied first; ``None`` (the default, also spelled
        ``"none"``) analyses the scores as given, as pingouin's ``rm_anova`` and R's ``aov``
        do. ``"sqrt"`` accepts the zero SDs that repeated low-temperature scoring produces;
        ``"log"`` raises on zeros. The result's ``transform`` and ``method`` name it.
    %(confidence)s
        Here: the interval for partial eta squared, on the Greenhouse-Geisser df.

    Returns
    -------
    DataFrame
        One row: ``statistic`` (F), ``df1``, ``df2``, ``p_value`` (uncorrected),
        ``epsilon`` (Greenhouse-Geisser), ``df1_gg``, ``df2_gg`` (the corrected df),
        ``p_gg`` (p on the corrected df), ``effect_size`` (partial eta squared),
        ``effect_ci_low``, ``effect_ci_high`` (on the corrected df), ``eta2_generalized``,
        ``normality_p`` (Shapiro-Wilk of the residuals), ``sphericity_w`` and
        ``sphericity_p`` (Mauchly's test; W = 1, P = 1 with two conditions),
        ``zero_variance`` (the conditions whose scores are all equal, "" when none),
        ``assumptions`` (the checks in words), ``n`` (subjects), ``k``, ``transform``,
        ``method``.

    Notes
    -----
    :math:`F = MS_{cond}/MS_{error}` with :math:`df_1 = k-1`, :math:`df_2 = (n-1)(k-1)`;
    :math:`\eta_p^2 = SS_{cond}/(SS_{cond} + SS_{error})`. Its interval inverts the
    noncentral F (Steiger, 2004) on the Greenhouse-Geisser df :math:`\epsilon df_1`,
    :math:`\epsilon df_2` (the df the corrected P uses: an interval on the uncorrected df
    would claim the precision sphericity would give) and maps ``ncp`` to
    :math:`ncp/(ncp + df_2)`, as R's ``effectsize::F_to_eta2``. GG epsilon comes from the
    double-centred covariance matrix; Mauchly's W and P follow R's ``mauchly.test``.
    ``normality_p`` is the Shapiro-Wilk p of the residuals
    :math:`y_{ij} - \bar y_{i\cdot} - \bar y_{\cdot j} + \bar y` (NaN outside 3-5000
    residuals). A small ``normality_p`` or ``sphericity_p``, or a zero-variance condition,
    says to prefer :func:`friedman`; ``assumptions`` says which failed.

    References
    ----------
    .. [1] Greenhouse, S. W., & Geisser, S. (1959). Psychometrika 24, 95-112.
    .. [2] Mauchly, J. W. (1940). Significance test for sphericity of a normal n-variate
       distribution. Ann. Math. Statist. 11, 204-209.
    .. [3] Steiger, J. H. (2004). Psychological Methods 9, 164-182.

    Examples
    --------
    >>> from hce.stats import rm_anova, item_spread, simulated_log
    >>> log = simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    >>> spread = item_spread(log)  # one row per item x condition: its SD across attempts
    >>> rm_anova(spread)[["statistic", "df1", "df2", "p_value"]].round(4)
       statistic  df1  df2  p_value
    0     1.4555    1    7   0.2668
    """
    check_choice("transform", transform, [None, "sqrt", "log", "log1p", "none"])
    transform = transform or "none"
    check_confidence(confidence)
    matrix, levels, _ = block_matrix(data, item, condition, score)
    if transform != "none" and (matrix < 0).any():
        raise DataError(f"transform={transform!r} needs non-negative {score!r} values")
    if transform == "log" and (matrix == 0).any():
        raise DataError(f"transform='log' met zero {score!r} values; use 'sqrt' or 'log1p'")
    y = {"sqrt": np.sqrt, "log": np.log, "log1p": np.log1p, "none": np.asarray}[transform](matrix)
    n, k = y.shape
    if n < 2 or k < 2:
        raise DataError(f"RM-ANOVA needs >= 2 complete subjects and >= 2 conditions ({n} x {k})")
    grand = y.mean()
    ss_cond = n * ((y.mean(axis=0) - grand) ** 2).sum()
    ss_subj = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_err = ((y - grand) ** 2).sum() - ss_cond - ss_subj
    df1, df2 = k - 1, (n - 1) * (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (ss_cond / df1) / (ss_err / df2)
        cov = np.cov(y, rowvar=False)
        dc = cov - cov.mean(axis=0) - cov.mean(axis=1)[:, None] + cov.mean()
        eps = np.trace(dc) ** 2 / ((k - 1) * (dc**2).sum()) if k > 2 else 1.0
    gg1, gg2 = df1 * eps, df2 * eps
    ncp_low, ncp_high = noncentrality_ci(f * gg1, lambda x, nc: stats.ncf.cdf(x / gg1, gg1, gg2, nc),
                                         confidence, upper_start=f * gg1)  # fmt: skip
    w, p_sphericity = mauchly(y)
    flat = [str(level) for level, spread in zip(levels, np.ptp(y, axis=0)) if spread == 0]
    normality = _residual_normality(y)
    row = {"statistic": f, "df1": df1, "df2": df2, "p_value": float(stats.f.sf(f, df1, df2)),
           "epsilon": eps, "df1_gg": gg1, "df2_gg": gg2, "p_gg": float(stats.f.sf(f, gg1, gg2)),
           "effect_size": ss_cond / (ss_cond + ss_err),
           "effect_ci_low": ncp_low / (ncp_low + gg2), "effect_ci_high": ncp_high / (ncp_high + gg2),
           "eta2_generalized": ss_cond / (ss_cond + ss_subj + ss_err),
           "normality_p": normality, "sphericity_w": w, "sphericity_p": p_sphericity,
           "zero_variance": ", ".join(flat),
           "assumptions": assumption_text(normality, p_sphericity, eps, flat, condition),
           "n": n, "k": k, "transform": transform,
           "method": "one-way repeated-measures ANOVA" + ("" if transform == "none" else f" of {transform}({score})")
                     + "; partial eta squared, noncentral-F CI on the Greenhouse-Geisser df"}  # fmt: skip
    return ordered_columns(pd.DataFrame([row]))


def mauchly(y: np.ndarray) -> tuple[float, float]:
    """Mauchly's W and its P for a subjects x conditions matrix, as R's ``mauchly.test`` gives them.

    W compares the determinant of the orthonormal contrasts' covariance with its trace;
    P is Box's chi-squared approximation with R's second-order term. Two conditions have one
    contrast, which is always spherical (W = 1, P = 1); a singular covariance (a condition
    with no variance, fewer subjects than contrasts) gives W = 0 and P = 0.

    Examples
    --------
    >>> y = np.array([[1.0, 2.0, 4.0], [2.0, 2.5, 3.0], [3.0, 3.5, 6.0], [2.0, 4.0, 5.0], [1.5, 1.0, 2.0]])
    >>> [round(v, 4) for v in mauchly(y)]
    [0.7175, 0.6078]
    """
    n, k = y.shape
    d = k - 1
    if d == 1:
        return 1.0, 1.0
    # orthonormal contrasts: the columns of a QR basis orthogonal to the constant
    contrasts = np.linalg.qr(np.column_stack([np.ones(k), np.eye(k)[:, : k - 1]]))[0][:, 1:]
    m = contrasts.T @ np.cov(y, rowvar=False) @ contrasts
    sign, logdet = np.linalg.slogdet(m)
    if sign <= 0 or not np.isfinite(logdet):
        return 0.0, 0.0
    log_w = logdet - d * np.log(np.trace(m) / d)
    df = n - 1
    rho = 1 - (2 * d**2 + d + 2) / (6 * d * df)
    # R's second-order term uses the number of conditions (3 k), where Anderson (2003) has 3 d
    w2 = (d + 2) * (d - 1) * (d - 2) * (2 * d**3 + 6 * d**2 + 3 * k + 2) / (288 * (df * d * rho) ** 2)
    z = -df * rho * log_w
    ddf = d * (d + 1) / 2 - 1
    p1, p2 = stats.chi2.sf(z, ddf), stats.chi2.sf(z, ddf + 4)
    return float(np.exp(log_w)), float(min(1.0, max(0.0, p1 + w2 * (p2 - p1))))


def assumption_text(normality_p: float, sphericity_p: float, epsilon: float, zero_variance: list[str],
                    condition: str, alpha: float = 0.05) -> str:
    """The RM-ANOVA's assumption checks in words, each failed one named, for the table beside its result.

    Examples
    --------
    >>> assumption_text(0.004, 0.049, 0.62, ["M2"], "model")
    'residuals not normal (Shapiro-Wilk P = .004); sphericity rejected (Mauchly P = .049; Greenhouse-Geisser epsilon 0.62); no variance in model M2: the parametric sensitivity analysis rests on failed assumptions, the rank test decides'
    >>> assumption_text(0.6, 1.0, 1.0, [], "model")
    'residuals consistent with normality (Shapiro-Wilk P = .60); sphericity not rejected (Mauchly P > .99; Greenhouse-Geisser epsilon 1.00)'

    The P values are written as JAMA writes them (``hce._pvalues.p_text``, the formatter
    of every table and manuscript): no leading zero, no scientific notation.
    """
    spherical = f"Mauchly {p_text(sphericity_p)}; Greenhouse-Geisser epsilon {epsilon:.2f}"
    if np.isnan(normality_p):
        normal = (None, "normality not checkable (too few or constant residuals)")
    else:
        normal = (normality_p < alpha, f"residuals {'not normal' if normality_p < alpha else 'consistent with normality'} "
                                       f"(Shapiro-Wilk {p_text(normality_p)})")
    checks = [normal, (sphericity_p < alpha, f"sphericity {'rejected' if sphericity_p < alpha else 'not rejected'} ({spherical})")]
    if zero_variance:
        checks.append((True, f"no variance in {condition} {', '.join(zero_variance)}"))
    text = "; ".join(words for _, words in checks)
    if any(failed for failed, _ in checks):
        text += ": the parametric sensitivity analysis rests on failed assumptions, the rank test decides"
    return text


def _residual_normality(y: np.ndarray) -> float:
    resid = (y - y.mean(axis=1, keepdims=True) - y.mean(axis=0) + y.mean()).ravel()
    if not 3 <= resid.size <= 5000 or np.ptp(resid) < 1e-12 * max(1.0, np.abs(y).max()):
        return np.nan
    return float(stats.shapiro(resid).pvalue)
