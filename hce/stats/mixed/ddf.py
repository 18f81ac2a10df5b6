"""Denominator degrees of freedom for fixed-effect tests: Satterthwaite and Kenward-Roger.

NumPy core of :meth:`LmerResult.fixef`, :meth:`~LmerResult.contrasts` and
:meth:`~LmerResult.anova`, the same for every engine that fitted the model.

**Satterthwaite** (lmerTest's method, Kuznetsova et al. 2017, sec. 3.2). The variance
parameters are lme4's relative Cholesky factors and the residual SD, ``varpar = (theta,
sigma)``. Their asymptotic covariance is ``A = 2 H^-1``, ``H`` the Hessian of the deviance
``-2 l(varpar)`` (REML or ML, not profiled) at the estimates; ``J_i = d cov(beta) / d varpar_i``.
For a contrast ``L``, with ``v = L' C L``, ``g_i = L' J_i L``:

    df = 2 v^2 / (g' A g).

For a q-row hypothesis ``L`` (an F test), ``L C L' = P D P'``; each of the q rotated
contrasts ``P' L`` gets its own ``nu_m``, ``F = sum_m (P'L beta)_m^2 / d_m / q``, and ``df =
2 E / (E - q)`` with ``E = sum_m nu_m / (nu_m - 2)`` (2 when any ``nu_m <= 2``; the common
value when all are equal). As lmerTest, ``H`` and ``J`` are taken by Richardson-extrapolated
central differences (numDeriv's ``hessian`` and ``jacobian``: 4 step halvings from 10% and
0.01% of each parameter, 1e-4 for one at 0), and ``H`` is inverted on its eigenvalues above
1e-8. On ``theta`` a random term at 0 has zero gradient and drops out, as in lmerTest;
that is why the parameters are ``(theta, sigma)`` rather than the variances.

**Kenward-Roger** (pbkrtest's ``vcovAdj`` and ``Lb_ddf``/``KRmodcomp``; Kenward & Roger
1997, Halekoh & Hojsgaard 2014). With the covariance ``V = sum_r gamma_r G_r`` linear in the
variances and covariances ``gamma`` (``G_r = Z E_r Z'``, the residual's ``I``),
``P_r = -X'V^-1 G_r V^-1 X``, ``Q_rs = X'V^-1 G_r V^-1 G_s V^-1 X`` and the expected
information ``I_rs = tr(V^-1 G_r V^-1 G_s) - 2 tr(Phi Q_rs) + tr(Phi P_r Phi P_s)`` (times 2),
``W = 2 I^-1``, the adjusted covariance is ``Phi_A = Phi + 2 Phi U Phi`` with ``U = sum_rs
W_rs (Q_rs - P_r Phi P_s)``, ``Phi = (X'V^-1 X)^-1``. pbkrtest forms ``V`` (n x n); here every
piece is reduced to the random-effect space by Woodbury's identity, ``V^-1 = (I - Z M Z') /
sigma^2`` with ``M = Lambda (Lambda'Z'Z Lambda + I)^-1 Lambda'``: q x q matrices, q the
number of random effects.

References
----------
Kuznetsova, A., Brockhoff, P. B., & Christensen, R. H. B. (2017). lmerTest package: Tests in
linear mixed effects models. Journal of Statistical Software, 82(13), 1-26.
Kenward, M. G., & Roger, J. H. (1997). Small sample inference for fixed effects from
restricted maximum likelihood. Biometrics, 53(3), 983-997.
Halekoh, U., & Hojsgaard, S. (2014). A Kenward-Roger approximation and parametric bootstrap
methods for tests in linear mixed models: the R package pbkrtest. J Stat Softw, 59(9), 1-32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse

from hce.stats._blas import one_blas_thread

# numDeriv's defaults (lmerTest calls hessian() and jacobian() with them)
_ZERO_TOL = np.sqrt(np.finfo(float).eps / 7e-7)
_EPS = 1e-4
_HALVINGS = 4
_EIGEN_TOL = 1e-8  # lmerTest's tolerance on the eigenvalues of H


def _steps(x: np.ndarray, d: float) -> np.ndarray:
    return np.abs(d * x) + _EPS * (np.abs(x) < _ZERO_TOL)


def _richardson(levels: list[np.ndarray]) -> np.ndarray:
    """Extrapolate central differences taken with steps h, h/2, h/4, ... (error O(h^2) each)."""
    for m in range(1, len(levels)):
        levels = [(levels[i + 1] * 4**m - levels[i]) / (4**m - 1) for i in range(len(levels) - 1)]
    return levels[0]


def jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, d: float = 1e-4) -> np.ndarray:
    """``d f / d x_i`` stacked on the first axis (numDeriv's ``jacobian``, Richardson)."""
    h = _steps(x, d)
    eye = np.eye(len(x))
    levels = []
    for _ in range(_HALVINGS):
        levels.append(
            np.stack([(f(x + h[i] * eye[i]) - f(x - h[i] * eye[i])) / (2 * h[i]) for i in range(len(x))])
        )
        h = h / 2
    return _richardson(levels)


def hessian(f: Callable[[np.ndarray], float], x: np.ndarray, d: float = 0.1) -> np.ndarray:
    """Hessian of ``f`` at ``x`` (numDeriv's ``genD``: Richardson on second differences)."""
    k = len(x)
    fx = f(x)
    eye = np.eye(k)
    h = _steps(x, d)
    diag_levels, cross_levels = [], []
    for _ in range(_HALVINGS):
        diag = np.array(
            [(f(x + h[i] * eye[i]) - 2 * fx + f(x - h[i] * eye[i])) / h[i] ** 2 for i in range(k)]
        )
        cross = np.zeros((k, k))
        for i in range(k):
            for j in range(i):
                step = h[i] * eye[i] + h[j] * eye[j]
                second = f(x + step) - 2 * fx + f(x - step)
                # the pure second derivatives of this level are subtracted after extrapolation
                cross[i, j] = cross[j, i] = second / (2 * h[i] * h[j])
        diag_levels.append(diag)
        cross_levels.append((cross, h.copy()))
        h = h / 2
    d2 = _richardson(diag_levels)
    # (f(x+s) - 2 f + f(x-s)) / (2 hi hj) = D_ij + (hi^2 D_ii + hj^2 D_jj) / (2 hi hj) + O(h^2):
    # remove the known part at each level, then extrapolate
    adjusted = []
    for cross, hl in cross_levels:
        ratio = np.outer(hl, 1 / hl)  # hi / hj
        adjusted.append(cross - 0.5 * (ratio * d2[:, None] + ratio.T * d2[None, :]))
    out = _richardson(adjusted)
    out[np.diag_indices(k)] = d2
    return out


@dataclass(frozen=True)
class VarparModel:
    """What Satterthwaite's method needs from an engine, as functions of ``(theta, sigma)``.

    Attributes
    ----------
    varpar : ndarray
        Estimates: lme4's ``theta`` (relative Cholesky factors), then the residual SD.
    deviance : callable
        ``-2 l`` (REML or ML, not profiled) at ``varpar``, up to a constant.
    cov_beta : callable
        ``cov(beta)`` at ``varpar``.
    """

    varpar: np.ndarray
    deviance: Callable[[np.ndarray], float]
    cov_beta: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Satterthwaite:
    """``A = 2 H^-1`` (``vcov_varpar``) and ``J`` (``jac``, shape ``(k, p, p)``), as lmerTest's
    ``as_lmerModLmerTest`` stores them."""

    vcov_varpar: np.ndarray
    jac: np.ndarray

    @classmethod
    def of(cls, model: VarparModel) -> Satterthwaite:
        with one_blas_thread():  # a hundred small factorisations
            h = hessian(model.deviance, model.varpar)
            jac = jacobian(model.cov_beta, model.varpar)
        values, vectors = np.linalg.eigh((h + h.T) / 2)
        pos = values > _EIGEN_TOL
        inv = (vectors[:, pos] / values[pos]) @ vectors[:, pos].T
        return cls(2 * inv, jac)

    def df(self, contrast: np.ndarray, cov_beta: np.ndarray) -> float:
        """``2 v^2 / (g' A g)`` for one contrast (lmerTest's ``contest1D``)."""
        var = float(contrast @ cov_beta @ contrast)
        grad = np.einsum("i,kij,j->k", contrast, self.jac, contrast)
        denom = float(grad @ self.vcov_varpar @ grad)
        return 2 * var**2 / denom if denom > 0 else np.inf

    def f_test(
        self, hypothesis: np.ndarray, beta: np.ndarray, cov_beta: np.ndarray
    ) -> tuple[float, int, float]:
        """F, numerator and denominator df of ``hypothesis @ beta = 0`` (``contestMD``)."""
        values, vectors = np.linalg.eigh(hypothesis @ cov_beta @ hypothesis.T)
        values, vectors = values[::-1], vectors[:, ::-1]  # decreasing, as R's eigen()
        pos = values > max(np.sqrt(np.finfo(float).eps) * values[0], 0)
        q = int(pos.sum())
        if q == 0:
            return np.nan, 0, np.nan
        rotated = (vectors.T @ hypothesis)[:q]
        t2 = (rotated @ beta) ** 2 / values[:q]
        nu = np.array([self.df(r, cov_beta) for r in rotated])
        return float(t2.sum() / q), q, f_denominator_df(nu)


def f_denominator_df(nu: np.ndarray) -> float:
    """lmerTest's ``get_Fstat_ddf``: one df for the F from the df of its q t statistics."""
    if len(nu) == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < 1e-8):
        return float(np.mean(nu))
    if np.any(nu <= 2):
        return 2.0
    e = float(np.sum(nu / (nu - 2)))
    return 2 * e / (e - len(nu))


@dataclass(frozen=True)
class KenwardRoger:
    """pbkrtest's adjusted covariance ``phi_a`` with its ``P`` (list of p x p) and ``W``."""

    phi: np.ndarray
    phi_a: np.ndarray
    p: list[np.ndarray]
    w: np.ndarray

    @classmethod
    def of(
        cls,
        x: np.ndarray,
        terms: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
        sigma2: float,
    ) -> KenwardRoger:
        """From the fixed design and, per random term, its level codes, its ``Z`` columns
        (n x q_t) and its covariance (q_t x q_t); ``sigma2`` the residual variance."""
        n, _ = x.shape
        z, lam, patterns = _random_space(terms, sigma2)
        ztz = (z.T @ z).tocsr()
        kzx = np.asarray(z.T @ x)
        # M = Lambda (Lambda'Z'Z Lambda + I)^-1 Lambda', the one dense q^3 step (Cholesky and
        # its inverse); every other product has a sparse factor (Z'Z, Lambda, E_r)
        inner = (lam.T @ ztz @ lam).toarray()
        inner[np.diag_indices_from(inner)] += 1.0
        factor, info_chol = linalg.lapack.dpotrf(inner, lower=1)
        inverse, info_inv = linalg.lapack.dpotri(factor, lower=1)
        if info_chol or info_inv:
            raise np.linalg.LinAlgError("Lambda'Z'Z Lambda + I is not positive definite")
        inverse = np.tril(inverse) + np.tril(inverse, -1).T
        m = lam @ (lam @ inverse).T
        ms = (ztz @ m).T  # M Z'Z
        b = (ztz.toarray() - ztz @ ms) / sigma2  # Z'V^-1 Z
        f = m @ kzx
        c = (kzx - ztz @ f) / sigma2  # Z'V^-1 X
        xv = (x.T @ x - kzx.T @ f) / sigma2  # X'V^-1 X
        c2 = (c - b @ f) / sigma2  # Z'V^-2 X
        x2 = (xv - c.T @ f) / sigma2  # X'V^-2 X
        x3 = (xv - f.T @ c - c.T @ f + f.T @ b @ f) / sigma2**2  # X'V^-3 X
        tr2 = (n - 2 * np.trace(ms) + np.sum(ms * ms.T)) / sigma2**2  # tr V^-2
        k = len(patterns) + 1
        # O_r = X'V^-1 G_r V^-1 (to the left of V^-1 X): E_r c for a random term, c2 for the residual
        left = [e @ c for e in patterns]
        p_list = [-(c.T @ lr) for lr in left] + [-x2]
        q = {}
        trace = np.empty((k, k))
        for r in range(k):
            for s in range(r, k):
                if s < k - 1:
                    q[r, s] = left[r].T @ b @ left[s]
                    trace[r, s] = np.sum((patterns[r] @ b) * (patterns[s] @ b).T)
                elif r < k - 1:
                    q[r, s] = left[r].T @ c2
                    # tr(E_r Z'V^-2 Z), Z'V^-2 Z = B (I - M Z'Z) / sigma^2: only E_r's entries
                    rows, cols = patterns[r].nonzero()
                    entries = b[cols, rows] - np.einsum("ij,ji->i", b[cols], ms[:, rows])
                    trace[r, s] = float(np.asarray(patterns[r][rows, cols]).ravel() @ entries) / sigma2
                else:
                    q[r, s] = x3
                    trace[r, s] = tr2
                trace[s, r] = trace[r, s]
        phi = np.linalg.inv(xv)
        info = np.empty((k, k))
        for r in range(k):
            for s in range(r, k):
                info[r, s] = info[s, r] = (
                    trace[r, s] - 2 * np.sum(phi * q[r, s]) + np.sum((phi @ p_list[r]) * (p_list[s] @ phi))
                )
        regular = np.min(np.abs(np.linalg.eigvalsh(info))) > 1e-10
        w = 2 * (np.linalg.inv(info) if regular else np.linalg.pinv(info))
        u = np.zeros_like(phi)
        for r in range(k):
            for s in range(r + 1, k):
                u += w[r, s] * (q[r, s] - p_list[r] @ phi @ p_list[s])
        u = u + u.T
        for r in range(k):
            u += w[r, r] * (q[r, r] - p_list[r] @ phi @ p_list[r])
        return cls(phi, phi + 2 * phi @ u @ phi, p_list, w)

    def _a1_a2(self, hypothesis: np.ndarray) -> tuple[float, float]:
        phi = self.phi
        theta = hypothesis.T @ np.linalg.solve(hypothesis @ phi @ hypothesis.T, hypothesis)
        u = [theta @ phi @ p @ phi for p in self.p]
        a1 = a2 = 0.0
        k = len(u)
        for i in range(k):
            for j in range(i, k):
                e = 1 if i == j else 2
                a1 += e * self.w[i, j] * np.trace(u[i]) * np.trace(u[j])
                a2 += e * self.w[i, j] * np.sum(u[i] * u[j].T)
        return a1, a2

    def df_and_scale(self, hypothesis: np.ndarray) -> tuple[float, float]:
        """Denominator df and F scaling of a hypothesis of full row rank (pbkrtest's
        ``.KR_adjust``; its ``Lb_ddf`` gives the same df for one row)."""
        q = hypothesis.shape[0]
        a1, a2 = self._a1_a2(hypothesis)
        big_b = (a1 + 6 * a2) / (2 * q)
        g = ((q + 1) * a1 - (q + 4) * a2) / ((q + 2) * a2)
        denom = 3 * q + 2 * (1 - g)
        c1, c2, c3 = g / denom, (q - g) / denom, (q + 2 - g) / denom
        v0 = 1 + c1 * big_b
        v0 = 0.0 if abs(v0) < 1e-10 else v0
        v1, v2 = 1 - c2 * big_b, 1 - c3 * big_b
        ratio = 0.0 if v1 == 0 else (1 - a2 / q) / v1  # pbkrtest's .divZero
        rho = ratio**2 * v0 / v2 / q
        df2 = 4 + (q + 2) / (q * rho - 1)
        scale = 1.0 if abs(df2 - 2) < 1e-2 else df2 * (1 - a2 / q) / (df2 - 2)
        return float(df2), float(scale)

    def f_test(self, hypothesis: np.ndarray, beta: np.ndarray) -> tuple[float, int, float]:
        """Scaled F, numerator and denominator df (lmerTest's ``contestMD`` through
        ``KRmodcomp``: the Wald statistic on ``phi_a`` over q, times the F scaling)."""
        rank = np.linalg.matrix_rank(hypothesis)
        df2, scale = self.df_and_scale(hypothesis)
        lb = hypothesis @ beta
        wald = float(lb @ np.linalg.pinv(hypothesis @ self.phi_a @ hypothesis.T) @ lb)
        return scale * wald / rank, rank, df2


def _random_space(terms, sigma2):
    """Sparse Z (n x q, level-major within each term), Lambda (relative Cholesky factors) and each covariance parameter's pattern E_r (q x q sparse), pbkrtest's order:
    per term the lower triangle by columns."""
    blocks, lam_blocks, patterns, offset = [], [], [], 0
    total = sum((int(codes.max()) + 1) * zt.shape[1] for codes, zt, _ in terms)
    for codes, zt, cov in terms:
        n, qt = zt.shape
        levels = int(codes.max()) + 1
        rows = np.repeat(np.arange(n), qt)
        cols = (codes[:, None] * qt + np.arange(qt)).ravel()
        blocks.append(sparse.csc_matrix((zt.ravel(), (rows, cols)), shape=(n, levels * qt)))
        chol = _relative_factor(cov / sigma2)
        lam_blocks.append(sparse.kron(sparse.identity(levels), chol))
        eye = sparse.identity(levels, format="csr")
        for j in range(qt):
            for i in range(j, qt):
                e = np.zeros((qt, qt))
                e[i, j] = e[j, i] = 1.0
                block = sparse.kron(eye, e, format="coo")
                shape = (total, total)
                patterns.append(
                    sparse.csr_matrix((block.data, (block.row + offset, block.col + offset)), shape=shape)
                )
        offset += levels * qt
    return sparse.hstack(blocks, format="csr"), sparse.block_diag(lam_blocks, format="csr"), patterns


def _relative_factor(cov: np.ndarray) -> np.ndarray:
    """A lower factor ``T`` with ``T T' = cov`` (positive semi-definite, possibly singular)."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0, None))
    # any square root gives the same Lambda M Lambda' products; QR makes it triangular
    _, r = np.linalg.qr(root.T)
    return r.T
