"""``bayes_ordinal`` and ``bayes_binary``: formulas and DataFrames in, a fitted BayesResult out."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import patsy

from hce._checks import _label, check_choice, require_columns
from hce.errors import DataError, FormulaError
from hce.stats._resample import as_generator
from hce.stats.bayes import density, sampling
from hce.stats.bayes.density import Density
from hce.stats.bayes.sampling import Sampling, sampled
from hce.stats.bayes.models import ModelArrays, build_model, resolve_priors
from hce.stats.bayes.result import BayesResult, NoiseDesign
from hce.stats.mixed.formula import Design, build_design, parse_formula
from hce.stats._validate import statistic

Link = Literal["logit", "probit"]
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


@statistic(formula="formula")
@sampled
def bayes_ordinal(
    formula: str,
    data: pd.DataFrame,
    *,
    noise: str | None = None,
    link: Link = "logit",
    levels: list | None = None,
    priors: Mapping[str, float] | None = None,
    sampling: Sampling = Sampling(),
) -> BayesResult:
    """Bayesian cumulative-link (ordinal) mixed model of scores, optionally location-scale.

    Parameters
    ----------
    formula : str
        lme4 syntax, e.g. ``"score ~ prompt + (1 | item_id)"``; random slopes such as
        ``(1 + prompt | item_id)`` (does the prompt's effect vary across transcripts?) or
        ``(0 + prompt | item_id)``, one term per grouping factor, with the slope's column
        also in the fixed part (the random slopes are deviations from it). The
        response is a column of ordered scores: numbers (any ordered scale, such as 1-4 or
        5-20) or an ordered ``pandas.Categorical``. The intercept is replaced by the
        cutpoints, so the formula must keep it (no ``0 +`` or ``- 1``).
    data : pandas.DataFrame
        Long format, one row per attempt. Rows with a missing value in a formula column are
        dropped with a warning.
    noise : str, optional
        Right-hand side of a model for the latent noise SD (location-scale model), e.g.
        ``"prompt"`` or ``"prompt + model"``: ``log(noise SD)`` is linear in these columns,
        with the first (reference) condition's noise fixed at the standard link scale.
    link : {"logit", "probit"}, default "logit"
        Latent noise distribution: logistic (cumulative logit, R's ``ordinal::clmm``
        default) or normal (cumulative probit).
    levels : list, optional
        The ordered score values of the scale, e.g. ``[1, 2, 3, 4]``; default the sorted
        values observed (for an ordered Categorical, its categories). Give the full scale
        when a score is never observed, so that predictions can use it.
    priors : dict, optional
        Prior scales overriding the defaults (see Notes): keys ``"b"``, ``"cutpoints"``,
        ``"sd"``, ``"noise"``, and ``"lkj"`` (the LKJ shape of random-effect correlations).
    draws, tune, chains : int, default 1000, None, 4
        Posterior draws kept per chain, warm-up iterations per chain, number of chains.
        ``tune=None`` takes each sampler's own default: 300 for nutpie, 1000 for PyMC
        (nutpie's warm-up steps, which adapt a low-rank mass matrix, cost about 4.5 kept
        draws each; at Experiment-5 size 300 gave a minimum bulk ESS of 1,605 against
        1,423 and a largest R-hat of 1.008 against 1.006 with 1000, in 43% of the sampling
        time: ``bench/bayes.py``).
    target_accept : float, default 0.8
        NUTS target acceptance rate; raise it (0.95, 0.99) when divergences are flagged.
    sampler : {"auto", "nutpie", "pymc"}, default "auto"
        "auto" takes nutpie (installed with hce) when it imports, else PyMC's NUTS.
    %(random_state)s

    Returns
    -------
    BayesResult
        ``.summary()`` (posterior mean, SD, HDI, R-hat, bulk/tail ESS per parameter),
        ``.diagnostics()``, ``.flags``, ``.converged``, ``.ppc()`` and ``.plot_ppc()``,
        ``.compare(other)`` (LOO), ``.noise()`` and ``.noise_pairs()`` (location-scale
        models), ``.items()`` and ``.attempts()`` (per-item uncertainty), ``.expected()``
        and ``.expected_pairs()``; ``.idata`` holds the ArviZ InferenceData.

    Warns
    -----
    MCMCDiagnosticsWarning
        When any R-hat exceeds 1.01, any bulk ESS is below 400 or any transition diverged;
        the same messages, with remedies, are on ``.flags`` and in the summary header.

    Notes
    -----
    For attempt i with category ``y_i`` in ``1..K``:

    .. math::

        P(y_i \\le k) = F\\left(\\frac{c_k - \\eta_i}{s_i}\\right), \\quad
        \\eta_i = x_i^\\top \\beta + \\sum_g z_{gi}^\\top u_{g[i]}, \\quad
        \\log s_i = w_i^\\top \\gamma

    with ``F`` the logistic or normal CDF, ordered cutpoints ``c_1 < ... < c_{K-1}``,
    ``x_i`` the fixed-effect row without intercept and ``w_i`` the noise row without
    intercept (``s_i = 1`` without ``noise``). The latent noise SD of a condition is
    ``s * pi / sqrt(3)`` (logit) or ``s`` (probit). Default priors (weakly informative on
    the latent scale, where the reference noise SD is 1.8 for logit and 1 for probit):

    * ``beta ~ Normal(0, 5)``, ``c ~ Normal(0, 5)`` constrained increasing;
    * random-effect SDs ``sd_g ~ HalfStudentT(3, 2.5)`` (brms's default for SDs), for
      intercepts and slopes alike;
    * correlations of a term with slopes: ``LKJ(2)`` (mildly favours small correlations
      over +-1, which few groups cannot rule out; brms's default is LKJ(1));
    * ``gamma ~ Normal(0, 1)``: a noise ratio between conditions within 1/7.4 .. 7.4 with
      95% prior probability.

    Random intercepts are non-centred, ``u_g = sd_g * z_g`` with ``z_g`` a zero-sum normal:
    their mean is carried by the cutpoints, which leaves the likelihood unchanged and
    removes the slow common-shift direction between cutpoints and intercepts. A term with
    slopes, ``(1 + x | g)``, has per level ``u_g = L_g z_g`` with ``L_g`` the Cholesky factor
    of its covariance (``pm.LKJCholeskyCov``) and each row of ``z_g`` a zero-sum normal (the
    mean slope is the fixed effect of ``x``); ``z_{gi}`` is row i of the term's own columns
    (``(Intercept)``, ``x``). The summary names its SDs and correlations as lme4's
    ``VarCorr``: ``sd_(Intercept)|g``, ``sd_x|g``, ``cor_(Intercept).x|g``.

    References
    ----------
    .. [1] Bürkner, P.-C., & Vuorre, M. (2019). Ordinal regression models in psychology: a
       tutorial. Advances in Methods and Practices in Psychological Science, 2(1), 77-101.
    .. [2] Christensen, R. H. B. (2019). ordinal: Regression models for ordinal data
       (R package; ``clmm`` with ``scale =``).
    .. [3] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B., & Bürkner, P.-C. (2021).
       Rank-normalization, folding, and localization: an improved R-hat. Bayesian
       Analysis, 16(2), 667-718.

    Examples
    --------
    >>> fit = bayes_ordinal("score ~ prompt + (1 | item_id)", log, noise="prompt",
    ...                     random_state=1)  # doctest: +SKIP
    >>> fit.noise_pairs()  # P(prompt a is more consistent than prompt b)  # doctest: +SKIP
    """
    check_choice("link", link, ("logit", "probit"))
    inputs = model_inputs(formula, data, family="ordinal", noise=noise, levels=levels)
    return _fit(inputs, link, resolve_priors("ordinal", priors), sampling)


@statistic(formula="formula")
@sampled
def bayes_binary(
    formula: str,
    data: pd.DataFrame,
    *,
    link: Link = "logit",
    priors: Mapping[str, float] | None = None,
    sampling: Sampling = Sampling(),
) -> BayesResult:
    """Hierarchical Bernoulli model of boolean judge verdicts, e.g.
    ``"passed ~ condition + (1 | item_id) + (1 | behavior)"``.

    Parameters
    ----------
    formula : str
        lme4 syntax with random intercepts and slopes as in :func:`bayes_ordinal`; the
        response column holds booleans or 0/1.
    data : pandas.DataFrame
        Long format, one row per verdict.
    link : {"logit", "probit"}, default "logit"
    priors : dict, optional
        Prior scales: ``"intercept"``, ``"b"``, ``"sd"``, ``"lkj"`` (see Notes).
    draws, tune, chains, target_accept, sampler, random_state
        As in :func:`bayes_ordinal`.
        Defaults: ``draws=1000``, ``chains=4``, ``target_accept=0.8``, ``sampler="auto"``.

    Returns
    -------
    BayesResult
        As for :func:`bayes_ordinal`; ``.expected(by="condition")`` gives each condition's
        pass rate and ``.expected_pairs(by="condition")`` the probability that one
        condition passes more often than another.

    Notes
    -----
    ``P(y_i = 1) = F(alpha + x_i' beta + sum_g u_g[i])`` with ``F`` the logistic or normal
    CDF. Default priors (rstanarm's weakly-informative scales for logistic regression):
    ``alpha ~ Normal(0, 2.5)``, ``beta ~ Normal(0, 2.5)``, ``sd_g ~ HalfStudentT(3, 2.5)``,
    correlations ``LKJ(2)``; random intercepts and slopes as in :func:`bayes_ordinal`
    (non-centred, zero-sum).

    References
    ----------
    .. [1] Gelman, A., Jakulin, A., Pittau, M. G., & Su, Y.-S. (2008). A weakly informative
       default prior distribution for logistic and other regression models. Annals of
       Applied Statistics, 2(4), 1360-1383.

    Examples
    --------
    >>> fit = bayes_binary("passed ~ condition + (1 | item_id) + (1 | behavior)", verdicts,
    ...                    random_state=1)  # doctest: +SKIP
    >>> fit.expected_pairs(by="condition")  # doctest: +SKIP
    """
    check_choice("link", link, ("logit", "probit"))
    inputs = model_inputs(formula, data, family="bernoulli")
    return _fit(inputs, link, resolve_priors("bernoulli", priors), sampling)


@dataclass(frozen=True)
class ModelInputs:
    """A formula and DataFrame turned into the model's arrays, with what reads them back."""

    family: str
    design: Design
    values: np.ndarray  # score of each category
    labels: list  # category labels as the user knows them
    noise: NoiseDesign | None
    arrays: ModelArrays
    groups: list[str]
    x_names: list[str]  # fixed effects without the intercept


def model_inputs(formula: str, data: pd.DataFrame, *, family: str, noise: str | None = None, levels: list | None = None) -> ModelInputs:
    """Validate and encode ``formula`` on ``data`` for :func:`build_model`."""
    design, values, labels, codes = _design(formula, data, family=family, levels=levels)
    noise_design = _noise_design(noise, design)
    groups = list(design.groupings)
    x_keep = [k for k, n in enumerate(design.x_names) if n != "(Intercept)"]
    slopes = {t.group: not t.intercept_only for t in design.formula.random}
    arrays = ModelArrays(
        y=codes,
        X=np.ascontiguousarray(design.X[:, x_keep]),
        codes=tuple(design.groupings[g].codes for g in groups),
        n_levels=tuple(len(design.groupings[g].levels) for g in groups),
        S=None if noise_design is None else np.ascontiguousarray(noise_design.S),
        n_categories=len(values),
        Z=tuple(_slope_columns(design, g) if slopes[g] else None for g in groups),
    )
    return ModelInputs(family, design, values, labels, noise_design, arrays, groups, [design.x_names[k] for k in x_keep])


def _design(formula: str, data: pd.DataFrame, *, family: str, levels: list | None):
    """Design, the scale's score values and labels, and each row's category code."""
    parsed = parse_formula(formula)
    if not _COLUMN.match(parsed.response):
        raise FormulaError(f"response {parsed.response!r} must be a column name, not an expression")
    require_columns(data, [parsed.response])
    seen = set()
    for term in parsed.random:
        if "||" in term.written:
            raise FormulaError(
                f"term {term.written!r}: the Bayesian models do not fit uncorrelated terms "
                f"('||'); write one correlated term such as (1 + x | {term.group})"
            )
        if term.group in seen:
            # one term per grouping factor, slopes correlated (the LKJ prior's block)
            raise FormulaError(
                f"term {str(term)!r}: {term.group!r} already has a random term; write its intercept "
                f"and slopes as one correlated term such as (1 + x | {term.group})"
            )
        seen.add(term.group)
    column = data[parsed.response]
    ordered = isinstance(column.dtype, pd.CategoricalDtype) and column.cat.ordered
    if ordered:
        labels = list(column.cat.categories)
        numeric = column.cat.codes.to_numpy(dtype=float)
        numeric[numeric < 0] = np.nan
        if levels is not None:
            raise DataError("levels= is taken from the categories of an ordered Categorical response")
    elif pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        numeric = column.to_numpy(dtype=float, na_value=np.nan)
    else:
        raise DataError(
            f"response column {parsed.response!r} must hold numbers, booleans or an ordered "
            f"Categorical; it has dtype {column.dtype}"
        )
    # ordinal and binary models have no residual variance: lme4's glmer checks (allow.n)
    design = build_design(parsed, data.assign(**{parsed.response: numeric}), residual=False)
    if "(Intercept)" not in design.x_names:
        raise FormulaError(
            f"formula {formula!r}: keep the intercept (no '0 +' or '- 1'); the "
            + ("cutpoints take its place" if family == "ordinal" else "model estimates it separately")
        )
    y = design.y
    if family == "bernoulli":
        values = np.array([0.0, 1.0])
        labels = [False, True]
    elif ordered:
        values = np.arange(1.0, len(labels) + 1)  # scored by rank
        y = y + 1
    else:
        values = np.unique(y) if levels is None else np.asarray(levels, dtype=float)
        if np.any(np.diff(values) <= 0):
            raise DataError(f"levels={levels!r} must be increasing")
        labels = [int(v) if float(v).is_integer() else float(v) for v in values]
    if len(values) < 2:
        raise DataError(f"response {parsed.response!r} takes a single value; nothing to model")
    bad = ~np.isin(y, values)
    if bad.any():
        row = design.data.index[np.argmax(bad)]
        raise DataError(
            f"response {parsed.response!r}: row {_label(row)} holds {y[np.argmax(bad)]:g}, which is "
            f"not one of the levels {labels}" + (" (a boolean judge needs True/False or 1/0)" if family == "bernoulli" else "")
        )
    return design, values, labels, np.searchsorted(values, y).astype(np.int64)


def _slope_columns(design: Design, group: str) -> np.ndarray:
    """The term's own columns, each checked to lie in the span of the fixed part: the
    effects of each column sum to zero over the levels (as random intercepts do), which
    leaves the likelihood unchanged only when the fixed part carries their mean."""
    grouping = design.groupings[group]
    Z = np.ascontiguousarray(grouping.Z, dtype=float)
    coef, *_ = np.linalg.lstsq(design.X, Z, rcond=None)
    residual = np.abs(Z - design.X @ coef).max(axis=0)
    for name, r, column in zip(grouping.z_names, residual, Z.T):
        if r > 1e-8 * max(1.0, np.abs(column).max()):
            raise FormulaError(
                f"random slope {name!r} of {group!r} is not in the fixed part; add it there too, "
                f"as in 'score ~ x + (1 + x | {group})': the random slopes are deviations from "
                "the fixed slope"
            )
    return Z


def _noise_design(noise: str | None, design: Design) -> NoiseDesign | None:
    """Log-noise columns (treatment coding, intercept dropped) and the condition of each row."""
    if noise is None:
        return None
    if not isinstance(noise, str) or "~" in noise or "|" in noise:
        raise FormulaError(f"noise={noise!r} must be a right-hand side such as 'prompt' or 'prompt + model'")
    columns = [c for c in dict.fromkeys(_IDENTIFIER.findall(noise)) if c in design.data.columns]
    if not columns:
        raise FormulaError(f"noise={noise!r} names no column of data")
    missing = design.data[columns].isna().any(axis=1)
    if missing.any():
        raise DataError(f"noise columns {columns}: row {_label(design.data.index[missing.argmax()])} has a missing value")
    try:
        matrix = patsy.dmatrix(noise, design.data, NA_action="raise", eval_env=2)
    except patsy.PatsyError as err:
        raise FormulaError(f"noise={noise!r}: {err}") from err
    names = list(matrix.design_info.column_names)
    if "Intercept" not in names:
        raise FormulaError(f"noise={noise!r}: keep the intercept (the reference condition's noise is fixed)")
    keep = [k for k, n in enumerate(names) if n != "Intercept"]
    if not keep:
        raise FormulaError(f"noise={noise!r} has no column besides the intercept")
    return NoiseDesign(noise, columns, np.asarray(matrix)[:, keep], [names[k] for k in keep])


def _fit(inputs: ModelInputs, link, priors, asked: Sampling) -> BayesResult:
    draws, tune, chains, target_accept, sampler, random_state = asked
    sampler = sampling.resolve_sampler(sampler)
    if tune is None:
        tune = sampling.DEFAULT_TUNE[sampler]
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise DataError(f"{name}={value!r} must be an integer >= {low}")
    if not 0 < target_accept < 1:
        raise DataError(f"target_accept={target_accept!r} must lie strictly between 0 and 1")
    seed = int(as_generator(random_state).integers(2**31 - 1))
    family, arrays = inputs.family, inputs.arrays
    # same key = same compiled model: structure, shapes and priors (the data may differ)
    key = (family, link, arrays.n_levels, tuple((name, v.shape) for name, v in arrays.data().items()),
           tuple(sorted(priors.items())))
    settings = sampling.SamplerSettings(int(draws), int(tune), int(chains), float(target_accept), seed)
    start = time.perf_counter()
    # nutpie samples the hand-written density of the same model where one exists (no
    # PyTensor graph to compile with numba: hce.stats.bayes.density)
    fast = Density.of(family, arrays, priors) if sampler == "nutpie" and density.supported(family, link, arrays) else None
    idata = sampling.run(sampler, lambda: build_model(family, link, arrays, priors), arrays.data(), key, settings, fast)
    result = BayesResult(
        family=family, link=link, design=inputs.design, values=inputs.values, labels=inputs.labels,
        noise_design=inputs.noise, arrays=arrays, priors=priors, sampler=sampler, settings=settings,
        idata=idata, groups=inputs.groups, x_names=inputs.x_names, seconds=time.perf_counter() - start,
    )
    if result.flags:
        warnings.warn(f"{result.title}: " + " | ".join(result.flags), sampling.MCMCDiagnosticsWarning, stacklevel=3)
    return result
