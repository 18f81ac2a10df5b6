"""The NumPy core of :func:`~hce.stats.mixed.clmm_fit.clmm`: the cumulative-link likelihood of the
rows, the conditional modes of the random intercepts, and the Laplace and adaptive
Gauss-Hermite approximations of the marginal likelihood. Knows nothing of pandas.

Parameters are ordinal's (Christensen 2019): thresholds ``theta`` (one per adjacent pair of
response levels), fixed effects ``beta`` and one standard deviation ``tau`` per random
intercept term, with ``P(Y <= j | b) = F(theta_j - x'beta - z'b)`` and ``b = tau * u``,
``u ~ N(0, I)``. As in ordinal's ``nll.u``, ``update.u`` and ``getNLA``, the inner problem is
``g(u) = -sum log P(y | u) + u'u / 2``, minimised by Newton's method with step halving, and
the Laplace approximation of minus the log-likelihood is ``g(u_hat) + log|H| / 2`` with
``H = I + Lambda Z' W Z Lambda`` the Hessian of ``g`` at its mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np
from scipy import sparse, special

from hce.stats.mixed.sparse_chol import BlockElimination, ScalarElimination

_LN_2PI = np.log(2 * np.pi)
_INNER_TOL = 1e-10  # max |gradient| of g at the modes: tight, so the outer objective is smooth
_INNER_ITER = 100
_HALVINGS = 40
_QUADRATIC = 1e-12  # Newton decrement below which steps are taken without a line search
_LOG_P_FLOOR = -700.0  # exp(700) is finite: a row's 1/p stays finite far in a tail


def _inverse_p(log_p: np.ndarray) -> np.ndarray:
    """``1 / p`` per row, kept finite: a row with ``p < e^-700`` (a step far past the
    optimum) gets a huge finite weight, so the gradient says "back" instead of ``inf * 0``."""
    return np.exp(-np.maximum(log_p, _LOG_P_FLOOR))


@dataclass(frozen=True)
class Link:
    """A cumulative link: distribution ``F``, survival ``S = 1 - F`` (computed without
    cancellation), density ``f``, its first and second derivatives and the quantile function."""

    name: str
    cdf: Callable[[np.ndarray], np.ndarray]
    sf: Callable[[np.ndarray], np.ndarray]
    pdf: Callable[[np.ndarray], np.ndarray]
    dpdf: Callable[[np.ndarray], np.ndarray]
    d2pdf: Callable[[np.ndarray], np.ndarray]
    ppf: Callable[[np.ndarray], np.ndarray]


def _norm_pdf(x):
    return np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def _cloglog_pdf(x):
    x = np.minimum(x, 50.0)  # exp(50 - e^50) is 0 already; beyond, e^x overflows
    return np.exp(x - np.exp(x))


def _logistic_d2pdf(x):
    f, t = special.expit(x) * special.expit(-x), np.tanh(-x / 2)
    return f * (t * t - 2 * f)


def _cloglog_d2pdf(x):
    e = np.exp(np.minimum(x, 50.0))
    return _cloglog_pdf(x) * ((1 - e) ** 2 - e)


LINKS = {
    "logit": Link(
        "logit",
        special.expit,
        lambda x: special.expit(-x),
        lambda x: special.expit(x) * special.expit(-x),
        lambda x: special.expit(x) * special.expit(-x) * np.tanh(-x / 2),
        _logistic_d2pdf,
        special.logit,
    ),
    "probit": Link(
        "probit", special.ndtr, lambda x: special.ndtr(-x), _norm_pdf,
        lambda x: -x * _norm_pdf(x), lambda x: (x * x - 1) * _norm_pdf(x), special.ndtri,
    ),
    "cloglog": Link(
        "cloglog",
        lambda x: -np.expm1(-np.exp(np.minimum(x, 50.0))),
        lambda x: np.exp(-np.exp(np.minimum(x, 50.0))),
        _cloglog_pdf,
        lambda x: _cloglog_pdf(x) * -np.expm1(np.minimum(x, 50.0)),
        _cloglog_d2pdf,
        lambda p: np.log(-np.log1p(-p)),
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Rows:
    """The data of a cumulative-link mixed model as arrays.

    Attributes
    ----------
    y : ndarray of int
        Response level ``0 .. n_levels - 1`` of each row (levels with no rows removed).
    n_levels : int
    X : ndarray
        Fixed effects without an intercept (the thresholds play its part).
    codes : list of ndarray
        For each random-intercept term, the level of each row.
    n_groups : list of int
        Levels of each term.
    link : Link

    """

    y: np.ndarray
    n_levels: int
    X: np.ndarray
    codes: list[np.ndarray]
    n_groups: list[int]
    link: Link

    @property
    def n_par(self) -> int:
        """Thresholds, fixed effects and standard deviations."""
        return self.n_levels - 1 + self.X.shape[1] + len(self.codes)

    def split(self, par: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(theta, beta, tau)`` from the parameter vector."""
        k, p = self.n_levels - 1, self.X.shape[1]
        return par[:k], par[k : k + p], par[k + p :]


class Laplace:
    """Minus the approximate log-likelihood of a model, with its modes kept between calls.

    Parameters
    ----------
    rows : Rows
    n_agq : int, default 1
        1: the Laplace approximation; more (one term only): adaptive Gauss-Hermite
        quadrature with that many nodes, as ordinal's ``nAGQ``.

    Attributes
    ----------
    u : ndarray
        Spherical conditional modes at the last evaluation (``b = tau * u``), warm start of
        the next.
    hess_diag : ndarray
        Diagonal of ``H`` at the modes (one term: ``H`` itself).

    """

    def __init__(self, rows: Rows, n_agq: int = 1):
        self.rows = rows
        self.n_agq = n_agq
        self.offsets = np.cumsum([0, *rows.n_groups])
        self.u = np.zeros(self.offsets[-1])
        self.hess_diag = np.ones(self.offsets[-1])
        self._joint = _JointPattern(rows) if len(rows.codes) > 1 else None
        low, high = rows.y == 0, rows.y == rows.n_levels - 1
        self._low, self._high = low, high
        if n_agq > 1:
            nodes, weights = np.polynomial.hermite.hermgauss(n_agq)
            self._nodes, self._log_weights = nodes, np.log(weights) + nodes**2

    # ---- rows ----------------------------------------------------------------------------
    def _etas(self, theta: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``theta_y - shift`` and ``theta_{y-1} - shift`` (0 where infinite: masked later)."""
        ext = np.concatenate([[0.0], theta, [0.0]])
        return ext[self.rows.y + 1] - shift, ext[self.rows.y] - shift

    def _log_prob(self, eta1: np.ndarray, eta2: np.ndarray) -> np.ndarray:
        """log P(Y = y) per row, from whichever tail avoids cancellation."""
        link, low, high = self.rows.link, self._low, self._high
        upper = np.where(high, 1.0, link.cdf(eta1))
        lower = np.where(low, 0.0, link.cdf(eta2))
        s_upper = np.where(high, 0.0, link.sf(eta1))
        s_lower = np.where(low, 1.0, link.sf(eta2))
        right = (eta1 + eta2) > 0  # both probabilities near 1: subtract survivals
        p = np.where(right & ~low | high, s_lower - s_upper, upper - lower)
        with np.errstate(divide="ignore", invalid="ignore"):  # crossed thresholds: p <= 0
            return np.where(p > 0, np.log(p), -np.inf)

    def _row_derivatives(self, eta1, eta2, log_p):
        """Per row: ``d = (f1 - f2) / p`` (minus the derivative of log p in the shift) and
        ``w = d^2 - (f1' - f2') / p`` (its second derivative, ordinal's ``phi2``)."""
        link = self.rows.link
        f1 = np.where(self._high, 0.0, link.pdf(eta1))
        f2 = np.where(self._low, 0.0, link.pdf(eta2))
        g1 = np.where(self._high, 0.0, link.dpdf(eta1))
        g2 = np.where(self._low, 0.0, link.dpdf(eta2))
        inv_p = _inverse_p(log_p)
        d = (f1 - f2) * inv_p
        return d, d * d - (g1 - g2) * inv_p

    # ---- the approximation ---------------------------------------------------------------
    def __call__(self, par: np.ndarray) -> float:
        """Minus the log-likelihood (Laplace or AGQ) at ``par = (theta, beta, tau)``."""
        theta, beta, tau = self.rows.split(np.asarray(par, dtype=float))
        fixed = self.rows.X @ beta
        if not self._modes(theta, fixed, tau):
            return np.inf
        if self.n_agq > 1:
            return self._agq(theta, fixed, tau[0])
        shift = fixed + self._random_shift(tau, self.u)
        log_p = self._log_prob(*self._etas(theta, shift))
        value = float(-log_p.sum() + 0.5 * self.u @ self.u + 0.5 * self._logdet)
        return value if np.isfinite(value) else np.inf

    def gradient(self, par: np.ndarray) -> np.ndarray:
        """Gradient of the Laplace approximation in ``par``, one random term only.

        Differentiates through the modes: with ``D_i = 1 + tau^2 sum_r W_r`` the Hessian of
        group ``i``, ``dL/dphi = dg/dphi + sum_i (dD_i/dphi) / (2 D_i)``, where ``g``'s
        derivative is taken at fixed ``u`` (``u`` is its minimum), ``D_i`` moves with the
        linear predictor through ``W``'s derivative (the third derivative of ``log P``) and
        with the mode, ``du_i/dphi = -(d^2 g_i / du dphi) / D_i``.
        """
        theta, beta, tau = self.rows.split(np.asarray(par, dtype=float))
        if not np.isfinite(self(par)):
            return np.full(len(par), np.nan)
        rows, link, t = self.rows, self.rows.link, tau[0]
        codes, m, u = rows.codes[0], rows.n_groups[0], self.u
        eta1, eta2 = self._etas(theta, rows.X @ beta + t * u[codes])
        inv_p = _inverse_p(self._log_prob(eta1, eta2))
        hi, lo = self._high, self._low
        f1, g1, h1 = (np.where(hi, 0.0, fn(eta1)) for fn in (link.pdf, link.dpdf, link.d2pdf))
        f2, g2, h2 = (np.where(lo, 0.0, fn(eta2)) for fn in (link.pdf, link.dpdf, link.d2pdf))
        d = (f1 - f2) * inv_p
        w = d * d - (g1 - g2) * inv_p
        dd1, dd2 = (g1 - d * f1) * inv_p, (d * f2 - g2) * inv_p  # of d in eta1, eta2
        curv = (g1 - g2) * inv_p  # products of ratios: inv_p**2 alone overflows in a tail
        dw1 = 2 * d * dd1 - h1 * inv_p + curv * (f1 * inv_p)
        dw2 = 2 * d * dd2 + h2 * inv_p - curv * (f2 * inv_p)
        # derivatives of eta1, eta2 in (theta, beta, tau) at fixed u
        n, k = len(rows.y), rows.n_levels - 1
        e1, e2 = np.zeros((n, rows.n_par)), np.zeros((n, rows.n_par))
        at = np.arange(n)
        e1[at[~hi], rows.y[~hi]] = 1.0
        e2[at[~lo], rows.y[~lo] - 1] = 1.0
        e1[:, k:-1] = e2[:, k:-1] = -rows.X
        e1[:, -1] = e2[:, -1] = -u[codes]
        is_tau = np.zeros(rows.n_par)
        is_tau[-1] = 1.0
        grad = (f2 * inv_p) @ e2 - (f1 * inv_p) @ e1
        cross = dd1[:, None] * e1 + dd2[:, None] * e2
        per_group = np.stack([np.bincount(codes, c, minlength=m) for c in cross.T], axis=1)
        du = -(t * per_group + np.outer(np.bincount(codes, d, minlength=m), is_tau))
        du /= self.hess_diag[:, None]
        moved = t * du[codes]
        d_hess = dw1[:, None] * (e1 - moved) + dw2[:, None] * (e2 - moved)
        inv_d = 1.0 / self.hess_diag
        grad += 0.5 * t * t * (inv_d[codes] @ d_hess)
        grad += t * is_tau * float(np.bincount(codes, w, minlength=m) @ inv_d)
        return grad

    def _random_shift(self, tau: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = 0.0
        for k, codes in enumerate(self.rows.codes):
            out = out + tau[k] * u[self.offsets[k] + codes]
        return out

    def _objective(self, theta, fixed, tau, u) -> float:
        log_p = self._log_prob(*self._etas(theta, fixed + self._random_shift(tau, u)))
        return float(-log_p.sum() + 0.5 * u @ u)

    def _modes(self, theta: np.ndarray, fixed: np.ndarray, tau: np.ndarray) -> bool:
        """Newton's method with step halving for ``u`` (ordinal's ``update.u``), from the
        previous modes; leaves ``self.u``, ``self.hess_diag`` and ``self._logdet``."""
        u = self.u
        value = self._objective(theta, fixed, tau, u)
        if not np.isfinite(value):
            u = np.zeros_like(u)
            value = self._objective(theta, fixed, tau, u)
            if not np.isfinite(value):
                return False
        for _ in range(_INNER_ITER):
            grad, step = self._newton_step(theta, fixed, tau, u)
            if np.max(np.abs(grad)) < _INNER_TOL:
                break
            if grad @ step < _QUADRATIC:  # so close that the full step is right; the
                u = u - step  # objective cannot show a decrease below rounding
                value = self._objective(theta, fixed, tau, u)
                continue
            factor = 1.0
            for _ in range(_HALVINGS):
                trial = u - factor * step
                new = self._objective(theta, fixed, tau, trial)
                if new <= value:
                    break
                factor /= 2
            else:
                break  # no decrease along Newton's direction: at the mode to rounding
            u, value = trial, new
        else:
            grad, step = self._newton_step(theta, fixed, tau, u)
        self.u = u
        return bool(np.all(np.isfinite(u)))

    def _newton_step(self, theta, fixed, tau, u):
        """Gradient of ``g`` at ``u`` and the Newton step ``H^-1 grad``; factors ``H``."""
        eta1, eta2 = self._etas(theta, fixed + self._random_shift(tau, u))
        d, w = self._row_derivatives(eta1, eta2, self._log_prob(eta1, eta2))
        grad, diag = u.copy(), np.ones_like(u)
        for k, codes in enumerate(self.rows.codes):
            m = self.rows.n_groups[k]
            sl = slice(self.offsets[k], self.offsets[k] + m)
            grad[sl] += tau[k] * np.bincount(codes, d, minlength=m)
            diag[sl] += tau[k] ** 2 * np.bincount(codes, w, minlength=m)
        self.hess_diag = diag
        if self._joint is None:
            self._logdet = float(np.sum(np.log(diag)))
            return grad, grad / diag
        self._logdet, step = self._joint.solve(diag, w, tau, grad)
        return grad, step

    def _agq(self, theta: np.ndarray, fixed: np.ndarray, tau: float) -> float:
        """Adaptive Gauss-Hermite quadrature for one term: per group, nodes centred on the
        mode and scaled by ``H^-1/2`` (Pinheiro & Bates 1995), as ordinal's ``getNAGQ``."""
        codes, m = self.rows.codes[0], self.rows.n_groups[0]
        scale = np.sqrt(2.0 / self.hess_diag)
        log_terms = np.empty((m, len(self._nodes)))
        for k, (x, lw) in enumerate(zip(self._nodes, self._log_weights)):
            v = self.u + scale * x
            log_p = self._log_prob(*self._etas(theta, fixed + tau * v[codes]))
            log_terms[:, k] = lw + np.bincount(codes, log_p, minlength=m) - 0.5 * v**2
        log_int = special.logsumexp(log_terms, axis=1) + np.log(scale) - 0.5 * _LN_2PI
        value = float(-log_int.sum())
        return value if np.isfinite(value) else np.inf

    def conditional_variances(self, tau: np.ndarray) -> np.ndarray:
        """Conditional variances of ``b = tau * u`` at the modes: ``tau^2 diag(H^-1)``."""
        scale = np.repeat(tau, self.rows.n_groups) ** 2
        if self._joint is None:
            return scale / self.hess_diag
        return scale * self._joint.inverse_diagonal()


class _JointPattern:
    """``H = I + Lambda Z' W Z Lambda`` for crossed terms, factored by block elimination in
    the pattern of ``Z'Z`` (:mod:`~hce.stats.mixed.sparse_chol`), which is fixed: the
    positions of its diagonal and of each pair of terms' entries are found once."""

    def __init__(self, rows: Rows):
        offsets = np.cumsum([0, *rows.n_groups])
        q = offsets[-1]
        cols = np.stack([offsets[k] + c for k, c in enumerate(rows.codes)], axis=1)
        self.q = q
        # every off-diagonal pair of terms (k < l): each row adds to entry (col_k, col_l)
        self.pairs = [(k, l) for k in range(len(rows.codes)) for l in range(k + 1, len(rows.codes))]
        keys = np.concatenate([cols[:, k] * q + cols[:, l] for k, l in self.pairs])
        entries, self.target = np.unique(keys, return_inverse=True)
        self.n_entries = len(entries)
        self.pair_of = np.repeat(np.arange(len(self.pairs)), len(rows.y))
        r, c = entries // q, entries % q
        diag = np.arange(q)
        pattern = sparse.coo_matrix((np.ones(2 * len(r) + q), (np.r_[r, c, diag], np.r_[c, r, diag])), shape=(q, q))
        groups = [(np.arange(offsets[k], offsets[k + 1]), 1) for k in range(len(rows.codes))]
        plan = BlockElimination(pattern.tocsr(), groups)
        self.perm, self.inverse_perm = plan.perm, np.argsort(plan.perm)
        # the lower triangle in the plan's order, row-major, as ScalarElimination reads it
        pr, pc = self.inverse_perm[np.r_[r, diag]], self.inverse_perm[np.r_[c, diag]]
        lower = np.maximum(pr, pc) * q + np.minimum(pr, pc)
        order = np.unique(lower)
        self.off_at = np.searchsorted(order, lower[: len(r)])
        self.diag_at = np.searchsorted(order, lower[len(r) :])
        self.fast = ScalarElimination(plan, order // q, order % q)

    def solve(self, diag, w, tau, grad):
        """Factor ``H`` (diagonal ``diag``, off-diagonal from row weights ``w``); returns
        ``log|H|`` and ``H^-1 grad``."""
        scale = np.array([tau[k] * tau[l] for k, l in self.pairs])[self.pair_of]
        values = np.zeros(len(self.off_at) + len(self.diag_at))
        values[self.off_at] = np.bincount(
            self.target, np.tile(w, len(self.pairs)) * scale, minlength=self.n_entries
        )
        values[self.diag_at] = diag
        logdet = self.fast.factor(values)
        return logdet, self.fast.solve(grad[self.perm])[self.inverse_perm]

    def inverse_diagonal(self) -> np.ndarray:
        """``diag(H^-1)`` of the last factored ``H``."""
        return np.diag(self.fast.solve(np.eye(self.q)))[self.inverse_perm]
