"""NumPy core of the Bayesian models: link functions, category probabilities, pointwise
log-likelihoods and posterior-draw summaries. Knows nothing of pandas or PyMC.

Conventions: ``cut`` has shape ``(S, K-1)`` (posterior draws x cutpoints), ``eta`` and
``scale`` have shape ``(S, n)``; the cumulative model is
``P(y <= k) = F((cut_k - eta) / scale)`` with ``F`` the logistic or normal CDF.
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: SD of the standard logistic and normal distributions (the latent noise at scale 1).
LATENT_SD = {"logit": np.pi / np.sqrt(3.0), "probit": 1.0}


def cdf(x: np.ndarray, link: str) -> np.ndarray:
    """Inverse link: logistic or standard normal CDF."""
    return special.expit(x) if link == "logit" else special.ndtr(x)


def _log_cdf(x: np.ndarray, link: str) -> np.ndarray:
    return special.log_expit(x) if link == "logit" else special.log_ndtr(x)


def category_probs(cut: np.ndarray, eta: np.ndarray, scale: np.ndarray | float, link: str) -> np.ndarray:
    """``P(y = k)`` for k = 0..K-1; ``cut`` (S, K-1), ``eta`` and ``scale`` (S, n) -> (S, n, K)."""
    scale = np.asarray(scale)
    z = (cut[:, None, :] - eta[..., None]) / (scale[..., None] if scale.ndim else scale)
    upper = np.concatenate([cdf(z, link), np.ones(z.shape[:-1] + (1,))], axis=-1)
    return np.diff(upper, axis=-1, prepend=0.0)


def ordinal_loglik(cut: np.ndarray, eta: np.ndarray, scale: np.ndarray | float, y: np.ndarray, link: str) -> np.ndarray:
    """Pointwise ``log P(y_i)`` (S, n) of category codes ``y`` (n,), computed without
    cancellation: ``P = F(a) - F(b)`` with ``a = (c_y - eta)/s``, ``b = (c_{y-1} - eta)/s``.

    By symmetry ``F(a) - F(b) = F(-b) - F(-a)``; the tail (sign) with the smaller
    probabilities is used, and ``log(F(a) - F(b)) = log F(a) + log1p(-exp(log F(b) - log F(a)))``.
    """
    padded = np.concatenate([np.full((len(cut), 1), -np.inf), cut, np.full((len(cut), 1), np.inf)], axis=1)
    a = (padded[:, y + 1] - eta) / scale
    b = (padded[:, y] - eta) / scale
    flip = (a + b) > 0  # both in the upper tail: use 1 - F, i.e. F(-x)
    lo = np.where(flip, -a, b)
    hi = np.where(flip, -b, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_hi, log_lo = _log_cdf(hi, link), _log_cdf(lo, link)
        return log_hi + np.log1p(-np.exp(log_lo - log_hi))


def bernoulli_loglik(eta: np.ndarray, y: np.ndarray, link: str) -> np.ndarray:
    """Pointwise ``log P(y_i)`` (S, n) for 0/1 outcomes: ``log F(eta)`` or ``log F(-eta)``."""
    sign = np.where(y > 0, 1.0, -1.0)
    return _log_cdf(sign * eta, link)


def hdi(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Highest-density interval of each column of ``draws`` (S, m): the shortest window
    holding ``ceil(confidence * S)`` sorted draws (the method of ``arviz.hdi``)."""
    x = np.sort(np.asarray(draws, dtype=float), axis=0)
    n = x.shape[0]
    keep = int(np.ceil(confidence * n))
    widths = x[keep - 1 :] - x[: n - keep + 1]
    start = np.argmin(widths, axis=0)
    cols = np.arange(x.shape[1])
    return x[start, cols], x[start + keep - 1, cols]
