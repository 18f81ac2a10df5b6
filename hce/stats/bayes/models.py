"""PyMC models behind :func:`bayes_ordinal` and :func:`bayes_binary`, built from a Design.

Every array the likelihood reads is a ``pm.Data`` container, so a compiled sampler can be
reused on new data of the same shape (see :mod:`hce.stats.bayes.sampling`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from hce.errors import DataError

if TYPE_CHECKING:  # PyMC and PyTensor load only when a model is built (import hce.stats stays fast)
    import pymc as pm

#: Prior scales (and ``lkj``, the LKJ shape of correlations) by family; keys a user may
#: override through ``priors=``.
DEFAULT_PRIORS = {
    "ordinal": {"b": 5.0, "cutpoints": 5.0, "sd": 2.5, "noise": 1.0, "lkj": 2.0},
    "bernoulli": {"b": 2.5, "intercept": 2.5, "sd": 2.5, "lkj": 2.0},
}


def resolve_priors(family: str, priors: Mapping[str, float] | None) -> dict[str, float]:
    """Defaults of ``family`` updated with ``priors``; unknown keys and non-positive scales raise."""
    out = dict(DEFAULT_PRIORS[family])
    for key, value in (priors or {}).items():
        if key not in out:
            raise DataError(f"priors: unknown key {key!r} for the {family} model; valid keys: {list(out)}")
        if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
            raise DataError(f"priors[{key!r}]={value!r} must be a positive number (a prior scale)")
        out[key] = float(value)
    return out


@dataclass(frozen=True)
class ModelArrays:
    """Numeric inputs of one model.

    Attributes
    ----------
    y : ndarray of int64
        Category codes ``0 .. K-1`` (ordinal) or 0/1 (Bernoulli).
    X : ndarray
        Fixed-effects columns without the intercept.
    codes : tuple of ndarray
        Level index of each row, one array per random term.
    n_levels : tuple of int
        Number of levels of each term.
    Z : tuple of (ndarray or None)
        Per term, its own columns (``(Intercept)``, slopes) for a term with slopes; None
        for a random intercept ``(1 | g)``.
    S : ndarray or None
        Log-noise design without intercept (location-scale model), else None.
    n_categories : int
        K (2 for Bernoulli).
    """

    y: np.ndarray
    X: np.ndarray
    codes: tuple[np.ndarray, ...]
    n_levels: tuple[int, ...]
    S: np.ndarray | None
    n_categories: int
    Z: tuple[np.ndarray | None, ...] = ()

    def n_effects(self, k: int) -> int:
        """Random effects per level of term k (1 for a random intercept)."""
        z = self.Z[k] if self.Z else None
        return 1 if z is None else z.shape[1]

    @cached_property
    def _cells(self) -> tuple[np.ndarray, np.ndarray]:
        """First row of each distinct design row (cell) and its category counts (cells x K)."""
        design = np.column_stack([np.zeros(len(self.y)), self.X, *self.codes, *(z for z in self.Z if z is not None),
                                  *(() if self.S is None else (self.S,))])  # fmt: skip
        _, first, cell = np.unique(design, axis=0, return_index=True, return_inverse=True)
        K = self.n_categories
        counts = np.bincount(cell.ravel() * K + self.y, minlength=len(first) * K).reshape(len(first), K)
        return first, counts.astype(float)

    def data(self) -> dict[str, np.ndarray]:
        """The ``pm.Data`` values by name, as :func:`build_model` registers them: the design
        of each cell (distinct design row), ``counts``, its rows per category, and
        ``noise_counts``, the rows per category of each distinct noise row ``S_noise`` (one
        row of counts without a noise model)."""
        first, counts = self._cells
        out = {"counts": counts, "X": self.X[first]}
        out.update({f"g{k}": c[first] for k, c in enumerate(self.codes)})
        out.update({f"Z{k}": z[first] for k, z in enumerate(self.Z) if z is not None})
        if self.S is None:
            out["noise_counts"] = counts.sum(axis=0, keepdims=True)
            return out
        out["S"] = self.S[first]
        out["S_noise"], which = np.unique(out["S"], axis=0, return_inverse=True)
        noise_counts = np.zeros((len(out["S_noise"]), self.n_categories))
        np.add.at(noise_counts, which.ravel(), counts)
        out["noise_counts"] = noise_counts
        return out


def build_model(family: str, link: str, arrays: ModelArrays, priors: dict[str, float]) -> pm.Model:
    """The PyMC model; free variables ``b``, ``cutpoints`` or ``intercept``, ``sd_k``, ``z_k``
    (standardised zero-sum effects of term k, ``u_k = sd_k z_k``), ``log_noise``; a term
    with slopes has ``chol_k`` (packed Cholesky factor of its covariance, with
    ``chol_k_stds`` and ``chol_k_corr``) in place of ``sd_k`` and ``z_k`` of shape
    (effects, levels), ``u_k = chol_k z_k``.

    The likelihood is written on sufficient statistics: rows with the same design row (item,
    condition, ...) share their category probabilities, so ``sum_rows log P(y_i)`` equals
    ``sum_cells sum_k n_ck log P_c(k)`` with ``n_ck`` the cell's rows in category k, the
    same log density (the ``obs`` potential) at a cost set by the cells, not the rows:
    Experiment 5's 5,770 attempts are 1,154 item x condition cells (issue 35). With the
    logit link it is further collected by cutpoint (see :func:`_logit_boundary_terms`): one
    softplus per cell and cutpoint, plus a term per distinct noise row and middle category.

    Non-centred effects avoid the funnel between ``sd`` and ``u`` when the data say little
    about each level (Betancourt & Girolami 2015). In one probe on the Experiment-5 design
    (10 attempts per item, diagonal mass matrix) the centred form mixed ``sd`` better but
    the cutpoints worse, at about the same minimum ESS per second, so one form is kept.
    Few levels with many rows each (6 behaviours x 240 verdicts) would suit the centred
    form better: there the non-centred one leaves a few divergent transitions.
    """
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model() as model:
        data = {name: pm.Data(name, value) for name, value in arrays.data().items()}
        eta = 0.0
        if arrays.X.shape[1]:
            b = pm.Normal("b", 0.0, priors["b"], shape=arrays.X.shape[1])
            eta = pt.dot(data["X"], b)
        for k, n_levels in enumerate(arrays.n_levels):
            p = arrays.n_effects(k)
            if arrays.Z and arrays.Z[k] is not None:
                eta = eta + _correlated_effects(k, p, n_levels, data, priors)
                continue
            sd = pm.HalfStudentT(f"sd_{k}", nu=3, sigma=priors["sd"])
            # zero-sum effects: their mean is absorbed by the cutpoints (or intercept), which
            # removes the ridge that makes the common shift mix slowly (same likelihood)
            u = sd * pm.ZeroSumNormal(f"z_{k}", sigma=1.0, shape=n_levels)
            eta = eta + u[data[f"g{k}"]]
        counts = data["counts"]
        if family == "bernoulli":
            eta = eta + pm.Normal("intercept", 0.0, priors["intercept"])
            if link == "logit":  # P(y = 0) = F(-eta): the ordinal model with one cutpoint at 0
                pm.Potential("obs", _logit_boundary_terms(-eta[:, None], counts))
            else:
                pm.Potential("obs", (counts[:, 1] * _log_cdf(eta, link) + counts[:, 0] * _log_cdf(-eta, link)).sum())
            return model
        n_cut = arrays.n_categories - 1
        start = np.linspace(-2.0, 2.0, n_cut) if n_cut > 1 else np.zeros(1)
        cut = pm.Normal(
            "cutpoints",
            0.0,
            priors["cutpoints"],
            shape=n_cut,
            transform=pm.distributions.transforms.ordered,
            initval=start,
        )
        z = cut[None, :] - eta[:, None]  # (cells, K-1): P(y <= k) = F(z_k / scale)
        inverse_scale = 1.0  # of each distinct noise row
        if arrays.S is not None:
            log_noise = pm.Normal("log_noise", 0.0, priors["noise"], shape=arrays.S.shape[1])
            z = z * pt.exp(-pt.dot(data["S"], log_noise))[:, None]
            inverse_scale = pt.exp(-pt.dot(data["S_noise"], log_noise))[:, None]
        if link == "logit":
            obs = _logit_boundary_terms(z, counts)
            if n_cut > 1:  # middle categories: log(1 - exp(-(c_k - c_{k-1}) / s))
                gaps = (cut[1:] - cut[:-1])[None, :] * inverse_scale
                obs = obs + (data["noise_counts"][:, 1:-1] * pt.log1mexp(-gaps)).sum()
            pm.Potential("obs", obs)
        else:
            pm.Potential("obs", (counts * _ordinal_log_probs(z, link)).sum())
    return model


def _logit_boundary_terms(z, counts):
    """``sum_cj (n_cj + n_c,j+1) log F(z_cj) - n_c,j+1 z_cj`` for the logistic ``F``: the
    cumulative-logit log likelihood of the cell counts but for the middle categories'
    factor ``1 - exp(-(z_k - z_{k-1}))``, which depends on the cutpoints' gaps and the
    noise scale only.

    For the logistic CDF, ``F(a) - F(b) = F(a) (1 - F(b)) (1 - exp(b - a))`` and
    ``log(1 - F(z)) = log F(z) - z``, so category k between cutpoints k-1 and k has
    ``log P(k) = log F(z_k) + log F(z_{k-1}) - z_{k-1} + log(1 - exp(z_{k-1} - z_k))``; the
    end categories have the first two terms alone. Collected by cutpoint, each ``z_cj``
    enters through one softplus, ``log F(z) = -softplus(-z)`` (no cancellation in either
    tail), where the difference form evaluates two log CDFs and a ``log1mexp`` per middle
    category and cell: 2.4x less time per gradient on Experiment 5 (``bench/bayes.py``).
    """
    import pytensor.tensor as pt

    return -((counts[:, :-1] + counts[:, 1:]) * pt.softplus(-z)).sum() - (counts[:, 1:] * z).sum()


def _log_cdf(x, link: str):
    """log F(x) of the logistic or standard normal CDF, without underflow in either tail."""
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import normal_lcdf

    return -pt.softplus(-x) if link == "logit" else normal_lcdf(0.0, 1.0, x)


def _ordinal_log_probs(z, link: str):
    """``log P(y = k)`` (cells x K) from ``z`` (cells x K-1), ``P(y <= k) = F(z_k)``: the end
    categories are one tail each; a middle one is ``F(a) - F(b)`` (``b < a``), taken in the
    tail where both are small (``F(-b) - F(-a)`` when ``a + b > 0``) and written
    ``log F(hi) + log(1 - F(lo) / F(hi))``, so no difference of two near-equal numbers
    (the method of :func:`hce.stats.bayes._core.ordinal_loglik`)."""
    import pytensor.tensor as pt

    a, b = z[:, 1:], z[:, :-1]
    flip = (a + b) > 0
    hi, lo = pt.switch(flip, -b, a), pt.switch(flip, -a, b)
    log_hi = _log_cdf(hi, link)
    middle = log_hi + pt.log1mexp(_log_cdf(lo, link) - log_hi)
    return pt.concatenate([_log_cdf(z[:, :1], link), middle, _log_cdf(-z[:, -1:], link)], axis=1)


def _correlated_effects(k: int, p: int, n_levels: int, data: dict, priors: dict[str, float]):
    """``sum_j Z_ij u_{g[i], j}`` of a term with slopes: ``u = L z`` (non-centred), ``L`` the
    Cholesky factor of the effects' covariance with an LKJ prior on the correlations and the
    random-intercept SD prior on each SD; each row of ``z`` sums to zero over the levels, so
    each effect's mean is carried by the fixed part (checked when the model is built)."""
    import pymc as pm
    import pytensor.tensor as pt

    if p == 1:  # (0 + x | g): one SD, nothing to correlate
        sd = pm.HalfStudentT(f"sd_{k}", nu=3, sigma=priors["sd"])
        u = (sd * pm.ZeroSumNormal(f"z_{k}", sigma=1.0, shape=n_levels))[None, :]
    else:
        chol, _, _ = pm.LKJCholeskyCov(
            f"chol_{k}", eta=priors["lkj"], n=p,
            sd_dist=pm.HalfStudentT.dist(nu=3, sigma=priors["sd"], shape=p), compute_corr=True,
        )
        u = pt.dot(chol, pm.ZeroSumNormal(f"z_{k}", sigma=1.0, shape=(p, n_levels)))
    return pt.sum(data[f"Z{k}"] * u[:, data[f"g{k}"]].T, axis=1)
