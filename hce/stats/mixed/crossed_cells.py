"""The REML deviance of two crossed random factors from their cell table, in O(cells).

A G study of items x conditions (``y ~ 1 + (1 | item) + (1 | condition) + (1 |
item:condition)``) at 20M attempts is a table of 400,000 cells. Penalised least squares
(:class:`~hce.stats.mixed.pls.PlsProblem`) solves it through a sparse elimination of half a
million random effects, about 0.12 s an evaluation, and a fit with its profile intervals
needs hundreds: 30 s per criterion of a report. Here the same deviance comes from the
marginal covariance of the cell means, with the factor of many levels (items, ``a``) in
blocks and the one of few (conditions, ``b``, ``J`` levels) by Woodbury's identity:

* cell ``c`` of item ``i`` has ``d_c = v_ab + sigma^2 / n_c`` and ``g_c = 1 / d_c``
  (``g = 0`` for an absent cell); item ``i``'s block ``A_i = D_i + v_a 11'`` has
  ``A_i^-1 = D_i^-1 - kappa_i g_i g_i'`` with ``kappa_i = v_a / (1 + v_a G_i)``, ``G_i =
  sum_c g_c`` (Sherman-Morrison), and ``log|A_i| = sum log d_c + log(1 + v_a G_i)``;
* ``V = A + v_b Z_b Z_b'`` with ``H = Z_b' A^-1 Z_b`` (``J x J``): ``V^-1 = A^-1 - P K P'``,
  ``P = A^-1 Z_b``, ``K = v_b (I + v_b H)^-1``, ``log|V| = log|A| + log|I + v_b H|``;
* ``-2 l_R = log|V| + log(1'V^-1 1) + Q + (C - 1) log 2 pi`` over the cell means (``Q``
  the generalised residual sum of squares), plus ``(N - C) log(2 pi sigma^2) + sum_c log
  n_c + W / sigma^2`` for the rows within cells (``W`` their sum of squared deviations),
  which is lme4's REML criterion on the rows (Searle, Casella & McCulloch 1992, sec. 6.2).

Every evaluation is a few passes over an ``items x J`` array, about 100 times faster at
400,000 cells; its gradient (traces of ``V^-1`` times each derivative of ``V``) costs
about as much again, and is finite at a zero variance. :func:`~hce.stats.mixed.cell_fit.fit_cells` takes this path for large
two-factor tables; ``tests/stats/test_crossed_cells.py`` checks it against the penalised
least squares deviance and gradient to 1e-10.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: a table this full of its items x conditions grid (or fuller) is held as a dense grid
DENSE_ENOUGH = 0.5
MAX_SHARED_LEVELS = 500


@dataclass
class _Solved:
    """The cell means' marginal likelihood at one set of variances."""

    logdet: float  # log|V|
    ones: float  # 1' V^-1 1
    quad: float  # Q, the generalised residual sum of squares
    o: np.ndarray  # V^-1 1 on the grid
    r: np.ndarray  # V^-1 (ybar - beta) on the grid
    g: np.ndarray
    kappa: np.ndarray
    den: np.ndarray  # 1 + v_a G_i
    hmat: np.ndarray
    k: np.ndarray


class CrossedCells:
    """REML deviances of ``(1 | a) + (1 | b) [+ (1 | a:b)]`` from a cell table (module docstring).

    Parameters
    ----------
    a, b : ndarray of int
        Each cell's level codes of the factor with many levels and of the one with few.
    n, mean : ndarray
        Each cell's observations and their mean.
    within : float
        Sum of squared deviations from the cell means.
    order : list of str
        The random terms in the caller's order, each ``"a"``, ``"b"`` or ``"ab"``; the
        variances passed and returned follow it, the residual last.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a, b = np.repeat(np.arange(30), 3), np.tile(np.arange(3), 30)
    >>> n = rng.integers(2, 6, 90).astype(float)
    >>> mean = rng.normal(size=30)[a] + rng.normal(size=90)
    >>> problem = CrossedCells(a, b, n, mean, within=80.0, order=["a", "b", "ab"])
    >>> round(float(problem.deviance(np.array([1.0, 0.1, 0.2, 1.0]))), 2)
    935.27
    """

    label = "two crossed factors' deviance from the cell table"

    def __init__(self, a: np.ndarray, b: np.ndarray, n: np.ndarray, mean: np.ndarray, within: float, order: list[str]):
        self.order = list(order)
        self.n_theta = len(self.order)
        # conditions x items, so that the sums over an item's few cells add whole rows (a reduction
        # along the short axis of items x conditions took 1.5 ms of each 2 ms pass at 400,000 cells)
        shape = (int(b.max()) + 1, int(a.max()) + 1)
        self.present = np.zeros(shape, dtype=bool)
        self.present[b, a] = True
        self.mask = self.present.astype(float)
        self.inv_n = np.zeros(shape)
        self.inv_n[b, a] = 1.0 / n
        # centred on the weighted mean: Q is unchanged (the intercept absorbs any shift) and its
        # sums no longer carry the mean's square
        centre = float(np.sum(n * mean) / np.sum(n))
        self.y = np.zeros(shape)
        self.y[b, a] = mean - centre
        self.all_present = bool(self.present.all())
        # every d_c depends on its cell's count alone: log|D| = sum over the distinct counts
        self.n_values, self.n_counts = np.unique(n, return_counts=True)
        self.cells = len(n)
        self.total = float(np.sum(n))
        self.within = float(within)
        self.log_n = float(np.sum(np.log(n)))
        self.lower = np.zeros(self.n_theta)
        self.scalar = np.ones(self.n_theta, dtype=bool)

    @staticmethod
    def applies(a: np.ndarray, b: np.ndarray) -> bool:
        """Whether a table with these level codes is held well as a dense grid."""
        rows, cols = int(a.max()) + 1, int(b.max()) + 1
        return cols <= MAX_SHARED_LEVELS and len(a) >= DENSE_ENOUGH * rows * cols

    def _variances(self, values: np.ndarray) -> tuple[float, float, float]:
        found = dict(zip(self.order, values))
        return found.get("a", 0.0), found.get("b", 0.0), found.get("ab", 0.0)

    def _solve(self, va: float, vb: float, vab: float, scale: float) -> _Solved:
        """``V = diag(v_ab + scale / n) + v_a Z_a Z_a' + v_b Z_b Z_b'`` on the cell means."""
        g = 1.0 / (vab + scale * self.inv_n) if self.all_present else self.mask / (vab + scale * self.inv_n + ~self.present)
        big_g = g.sum(axis=0)
        den = 1.0 + va * big_g
        kappa = va / den
        logdet_a = float(self.n_counts @ np.log(vab + scale / self.n_values)) + float(np.sum(np.log(den)))
        hmat = np.diag(g.sum(axis=1)) - (g * kappa) @ g.T
        eye = np.eye(len(hmat))
        logdet_b = float(np.linalg.slogdet(eye + vb * hmat)[1])
        k = vb * np.linalg.inv(eye + vb * hmat)
        k = (k + k.T) / 2

        def v_inv(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # A^-1 u = g (u - kappa_i sum_i g u); then Woodbury's correction A^-1 Z_b K t
            first = g * (u - kappa * (g * u).sum(axis=0))
            t = first.sum(axis=1)
            c = k @ t
            return first - g * (c[:, None] - kappa * (c @ g)), t

        o, _ = v_inv(self.mask)
        ones = float(o.sum())
        beta = float(np.sum(o * self.y)) / ones
        resid = self.mask * (self.y - beta)
        r, t = v_inv(resid)
        # r' A^-1 r as sums of squares around each item's weighted mean (positive terms), then
        # the conditions' correction: the direct difference would cancel most of its digits
        mean_i = (g * resid).sum(axis=0) / np.where(big_g > 0, big_g, 1.0)
        around = float(np.sum(g * (resid - mean_i) ** 2)) + float(np.sum(big_g * mean_i**2 / den))
        quad = around - float(t @ k @ t)
        return _Solved(logdet_a + logdet_b, ones, quad, o, r, g, kappa, den, hmat, k)

    def deviance(self, variances: np.ndarray) -> float:
        """-2 REML log-likelihood of the rows at ``variances`` (the terms in order, the residual last)."""
        variances = np.asarray(variances, dtype=float)
        sigma2 = variances[-1]
        s = self._solve(*self._variances(np.maximum(variances[:-1], 0.0)), sigma2)
        between = s.logdet + np.log(s.ones) + s.quad + (self.cells - 1) * np.log(2 * np.pi)
        return float(between + (self.total - self.cells) * np.log(2 * np.pi * sigma2) + self.log_n + self.within / sigma2)

    def sigma2(self, theta: np.ndarray) -> float:
        """The residual variance that minimises the deviance at relative SDs ``theta``."""
        s = self._solve(*self._variances(np.asarray(theta, dtype=float) ** 2), 1.0)
        return float((s.quad + self.within) / (self.total - 1))

    def profiled_deviance(self, theta: np.ndarray) -> float:
        """lme4's profiled REML deviance at relative SDs ``theta`` (the residual variance profiled out)."""
        theta = np.asarray(theta, dtype=float)
        s = self._solve(*self._variances(theta**2), 1.0)
        sigma2 = (s.quad + self.within) / (self.total - 1)
        if not sigma2 > 0:
            return np.inf
        return float(s.logdet + np.log(s.ones) + (self.total - 1) * (1 + np.log(2 * np.pi * sigma2)) + self.log_n)

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """The gradient of :meth:`profiled_deviance` in the relative variances ``theta^2`` (the
        coordinates :func:`~hce.stats.mixed.theta_search.minimise_theta` searches): ``sigma^2``
        times the deviance's derivative in each ``v_k`` at the profiled ``sigma^2`` (whose own
        derivative there is 0). Finite at a zero variance, so a fit at the boundary locates its
        optimum on the gradient rather than on differences of the deviance (which left two
        engines' equal tables 2e-8 apart there, issue 43)."""
        theta = np.asarray(theta, dtype=float)
        sigma2 = self.sigma2(theta)
        return sigma2 * self.deviance_gradient(np.r_[theta**2 * sigma2, sigma2])[:-1]

    def deviance_gradient(self, variances: np.ndarray) -> np.ndarray:
        """The gradient of :meth:`deviance` in the variances: for each derivative ``dV`` of the
        cell means' covariance, ``tr(V^-1 dV) - o' dV o / (1'V^-1 1) - r' dV r`` (``o = V^-1 1``,
        ``r = V^-1`` times the residuals), plus the within-cell rows' part for the residual."""
        variances = np.asarray(variances, dtype=float)
        sigma2 = variances[-1]
        s = self._solve(*self._variances(np.maximum(variances[:-1], 0.0)), sigma2)
        g, kappa, den, k = s.g, s.kappa, s.den, s.k
        kg = k @ g  # (K g_i)_j for each item i
        q = np.sum(kg * g, axis=0)
        # diagonal of V^-1: A^-1's minus P K P' (P's row of cell (i, j): g_ij (e_j - kappa_i g_i))
        diag = g - kappa * g**2 - g**2 * (np.diag(k)[:, None] - 2 * kappa * kg + kappa**2 * q)
        big_g = g.sum(axis=0)

        def part(trace: float, square) -> float:
            return trace - square(s.o) / s.ones - square(s.r)

        parts = {
            "a": part(float(np.sum(big_g / den - q / den**2)), lambda u: float(np.sum(u.sum(axis=0) ** 2))),
            "b": part(float(np.trace(s.hmat) - np.trace(s.hmat @ k @ s.hmat)), lambda u: float(np.sum(u.sum(axis=1) ** 2))),
            "ab": part(float(diag.sum()), lambda u: float(np.sum(u**2))),
        }
        residual = part(float(np.sum(diag * self.inv_n)), lambda u: float(np.sum(u**2 * self.inv_n)))
        residual += (self.total - self.cells) / sigma2 - self.within / sigma2**2
        return np.array([parts[t] for t in self.order] + [residual])
