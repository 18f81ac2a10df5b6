"""Penalised iteratively reweighted least squares and the deviances of a GLMM, as lme4's glmer.

For ``eta = offset + X beta + Z Lambda u`` with ``u ~ N(0, I)`` and a response from an
exponential family with mean ``mu = g^-1(eta)``, lme4 (Bates et al. 2015, sec. 5; lme4's
``src/external.cpp``: ``pwrssUpdate``, ``glmerLaplace``, ``glmerAGQ``) finds the conditional
mode ``u~`` of ``u`` by PIRLS: Fisher scoring on the penalised deviance
``sum d_i(y_i, mu_i) + |u|^2`` (``d_i`` the deviance residuals), each step solving

    (Lambda' Z' W Z Lambda + I) du = Lambda' Z' W (y - mu) / mu_eta - u,

``W = diag(w_i mu_eta_i^2 / V(mu_i))`` (prior weights ``w_i``). With ``L L'`` that matrix at
``u~``, the Laplace approximation of ``-2 log`` of the marginal likelihood is

    log|L|^2 + |u~|^2 - 2 sum log p(y_i | u~)            (lme4: ldL2 + sqrL + aic())

and with one scalar random term, ``A`` is diagonal and adaptive Gauss-Hermite quadrature
integrates each level's ``u_j`` on nodes ``u~_j + z_k / L_jj``:

    sum_j devc0_j + log|L|^2 - 2 sum_j log sum_k w_k exp(z_k^2 / 2 - (devc_jk - devc0_j) / 2),

``devc_jk`` the level's deviance residuals plus ``u_jk^2`` at node ``k`` (``devc0_j`` at the
mode) and ``(z_k, w_k)`` the Gauss-Hermite rule for the standard normal density. As in lme4
this sum uses the deviance residuals, not the full log density: for 0/1 data the two are
equal; for Poisson counts or binomial proportions the nAGQ > 1 log-likelihood lacks the
constant ``-2 sum log p(y | saturated)`` that the Laplace value has (lme4 prints the same).

``A`` keeps one sparsity pattern for every ``theta`` and weight vector, so it is factored
by the block elimination of :mod:`hce.stats.mixed.sparse_chol`, planned once; for scalar
random terms the weighted cross products ``Z'WZ`` are one ``bincount`` into that pattern.

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48.
Pinheiro, J. C., & Bates, D. M. (1995). Approximations to the log-likelihood function in
the nonlinear mixed-effects model. Journal of Computational and Graphical Statistics,
4(1), 12-35.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse, special, stats

from hce.stats.mixed.pls import RandomBlock, lambda_pattern, random_effects_matrix
from hce.stats.mixed.sparse_chol import ScalarElimination

_EPS = np.finfo(float).eps
_TOL = 1e-10  # PIRLS stops when no u moves more than this: the deviance is then exact to
# rounding, as the finite-difference Hessian of the outer search needs. With a canonical link
# (logit, log) a step is Newton's, whose error squares: after a full step below 1e-6 the
# mode is within ~1e-12, so it stops there
_NEWTON_TOL = 1e-6
_CANONICAL = ("logit", "log")
_MAX_ITER = 200

class PirlsFailure(ArithmeticError):
    """PIRLS found no conditional mode at these parameters (the outer search steps back)."""


LINKS = {"binomial": ("logit", "probit", "cloglog"), "poisson": ("log",)}


@dataclass(frozen=True)
class Family:
    """An exponential family and its link, as R's ``family`` objects compute them.

    Examples
    --------
    >>> fam = Family("binomial", "logit")
    >>> [round(float(v), 4) for v in fam.mean(np.array([0.0, 2.0]))]
    [0.5, 0.8808]
    """

    family: str
    link: str

    def mean(self, eta: np.ndarray) -> np.ndarray:
        """``mu = g^-1(eta)``, kept off 0 and 1 by R's thresholds."""
        if self.link == "logit":
            return np.clip(special.expit(eta), _EPS, 1 - _EPS)
        if self.link == "probit":
            thresh = -stats.norm.ppf(_EPS)
            return special.ndtr(np.clip(eta, -thresh, thresh))
        if self.link == "cloglog":
            return np.clip(-np.expm1(-np.exp(eta)), _EPS, 1 - _EPS)
        return np.maximum(np.exp(eta), _EPS)

    def mu_eta(self, eta: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """``d mu / d eta``."""
        if self.link == "logit":
            return np.maximum(mu * (1 - mu), _EPS)
        if self.link == "probit":
            return np.maximum(np.exp(-0.5 * eta**2) / np.sqrt(2 * np.pi), _EPS)
        if self.link == "cloglog":
            e = np.minimum(eta, 700.0)
            return np.maximum(np.exp(e) * np.exp(-np.exp(e)), _EPS)
        return mu

    def variance(self, mu: np.ndarray) -> np.ndarray:
        return mu * (1 - mu) if self.family == "binomial" else mu

    def deviance_residuals(self, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> np.ndarray:
        """R's ``dev.resids``: twice the log-likelihood ratio of the saturated model, per row."""
        return self.residuals_from(self.saturated_terms(y), y, mu, wt)

    def saturated_terms(self, y: np.ndarray) -> np.ndarray:
        """The part of each deviance residual free of ``mu`` (computed once per fit)."""
        if self.family == "binomial":
            return special.xlogy(y, y) + special.xlogy(1 - y, 1 - y)
        return special.xlogy(y, y) - y

    def residuals_from(self, terms: np.ndarray, y, mu, wt) -> np.ndarray:
        """Deviance residuals given :meth:`saturated_terms` (a PIRLS step's hot loop)."""
        if self.family == "binomial":
            return 2 * wt * (terms - y * np.log(mu) - (1 - y) * np.log1p(-mu))
        return 2 * wt * (terms - y * np.log(mu) + mu)

    def saturated(self, y: np.ndarray, wt: np.ndarray) -> float:
        """``-2 log-likelihood - sum(deviance residuals)``: 0 for 0/1 data."""
        if self.family == "binomial":
            k, m = wt * y, wt
            return float(
                -2 * np.sum(
                    special.gammaln(m + 1) - special.gammaln(k + 1) - special.gammaln(m - k + 1)
                    + special.xlogy(k, np.where(m > 0, y, 1)) + special.xlogy(m - k, 1 - y)
                )
            )  # fmt: skip
        return float(2 * np.sum(wt * (special.gammaln(y + 1) - special.xlogy(y, y) + y)))


class GlmmSystem:
    """``Z Lambda`` of one model and the factorisation of ``A = Lambda' Z' W Z Lambda + I``.

    Parameters
    ----------
    terms : list of RandomBlock
    n : int
        Rows.

    Attributes
    ----------
    lower, scalar : ndarray
        Per ``theta`` entry: its lower bound, and whether it is a scalar term's only entry.

    Examples
    --------
    >>> g = np.repeat(np.arange(5), 4)
    >>> system = GlmmSystem([RandomBlock(g, np.ones((20, 1)))], 20)
    >>> system.set_theta(np.array([2.0]))
    >>> round(system.factor(np.full(20, 0.25)), 4)  # 5 levels of 1 + 4 * 0.25 * 4
    8.0472
    """

    def __init__(self, terms: list[RandomBlock], n: int):
        z, self._offsets, self.plan = random_effects_matrix(terms, n)
        self.inverse_perm = np.argsort(self.plan.perm)
        self.z = z[:, self.plan.perm].tocsr()
        self.z_t = self.z.T.tocsr()
        self.q = z.shape[1]
        rows, cols, self._param, self.lower, self.scalar = lambda_pattern(terms, self._offsets)
        self._lam_rows, self._lam_cols = self.inverse_perm[rows], self.inverse_perm[cols]
        self._eye = sparse.eye(self.q, format="csr")
        self._scalar = None
        if all(t.q == 1 for t in terms) and not self.plan.sparse_remainder:
            self._plan_scalar(terms, n)

    def _plan_scalar(self, terms: list[RandomBlock], n: int) -> None:
        """Where each row's weight lands in the lower triangle of ``Z'WZ``, found once."""
        cols = [self.inverse_perm[off + t.codes] for t, off in zip(terms, self._offsets)]
        keys, products = [], []
        for s in range(len(terms)):
            for t in range(s + 1):
                hi, lo = np.maximum(cols[s], cols[t]), np.minimum(cols[s], cols[t])
                keys.append(hi * self.q + lo)
                products.append(terms[s].z[:, 0] * terms[t].z[:, 0])
        diagonal = np.arange(self.q) * (self.q + 1)  # every diagonal entry, also of empty levels
        unique, target = np.unique(np.concatenate([*keys, diagonal]), return_inverse=True)
        self._target = target[: -self.q]
        self._pairs = len(keys)
        self._products = np.concatenate(products)
        if np.all(self._products == 1.0):
            self._products = None  # random intercepts: Z'WZ sums the weights alone
        self._nnz = len(unique)
        entry_rows, entry_cols = unique // self.q, unique % self.q
        column_param = np.empty(self.q, dtype=np.int64)
        column_param[self._lam_cols] = self._param
        self._column_param = column_param
        self._entry_params = (column_param[entry_rows], column_param[entry_cols])
        self._entry_diag = (entry_rows == entry_cols).astype(float)
        self._scalar = ScalarElimination(self.plan, entry_rows, entry_cols)

    def set_theta(self, theta: np.ndarray) -> None:
        """``Lambda`` at ``theta`` (and ``Z Lambda`` unless ``Lambda`` is diagonal)."""
        self.theta = np.asarray(theta, dtype=float)
        self.lam = sparse.csr_matrix(
            (self.theta[self._param], (self._lam_rows, self._lam_cols)), shape=(self.q, self.q)
        )
        if self._scalar is None:
            self._zlam = (self.z @ self.lam).tocsr()
            self._zlam_t = self._zlam.T.tocsr()
        else:  # scalar terms: Lambda scales Z's columns
            self._scale = self.theta[self._column_param]

    def zlam(self, u: np.ndarray) -> np.ndarray:
        """``Z Lambda u``."""
        return self.z @ (self._scale * u) if self._scalar is not None else self._zlam @ u

    def zlam_t(self, v: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v`` (``v`` a vector or a matrix of rows)."""
        if self._scalar is None:
            return self._zlam_t @ v
        out = self.z_t @ v
        return self._scale * out if out.ndim == 1 else self._scale[:, None] * out

    def factor(self, w: np.ndarray) -> float:
        """Factor ``A`` for the weights ``w`` (at the last ``theta``); returns ``log|A|``."""
        if self._scalar is not None:
            weights = np.tile(w, self._pairs)
            if self._products is not None:
                weights *= self._products
            ztwz = np.bincount(self._target, weights=weights, minlength=self._nnz)
            p, q = self._entry_params
            return self._scalar.factor(ztwz * self.theta[p] * self.theta[q] + self._entry_diag)
        a = self._zlam_t @ self._zlam.multiply(w[:, None]).tocsc() + self._eye
        return self.plan.factor(a)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``A^-1 rhs`` for the last factored ``A``."""
        return self._scalar.solve(rhs) if self._scalar is not None else self.plan.solve(rhs)

    def b(self, u: np.ndarray) -> np.ndarray:
        """Random effects ``Lambda u`` in ``Z``'s original column order (terms, level-major)."""
        return (self.lam @ u)[self.inverse_perm]


@dataclass
class Mode:
    """The conditional mode at one ``(theta, beta)`` and the pieces of the deviances."""

    u: np.ndarray
    beta: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    w: np.ndarray
    dev_resid: np.ndarray
    logdet: float

    @property
    def penalised(self) -> float:
        return float(self.dev_resid.sum() + self.u @ self.u)


class Glmm:
    """A GLMM's data and its deviance functions.

    Parameters
    ----------
    y, x : ndarray
        Response (0/1, a proportion, a count) and fixed-effects design.
    terms : list of RandomBlock
    family : Family
    weights : ndarray
        Prior weights (binomial trials for a proportion).
    offset : ndarray

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(np.arange(20), 10)
    >>> y = (rng.normal(size=20)[g] + rng.logistic(size=200) > 0).astype(float)
    >>> model = Glmm(y, np.ones((200, 1)), [RandomBlock(g, np.ones((200, 1)))],
    ...              Family("binomial", "logit"), np.ones(200), np.zeros(200))
    >>> round(model.laplace(np.array([1.0, 0.0])), 3) > 0
    True
    """

    def __init__(self, y, x, terms, family: Family, weights, offset):
        self.y, self.x, self.family, self.wt, self.offset = y, x, family, weights, offset
        self.terms = terms
        self.system = GlmmSystem(terms, len(y))
        self.n_theta = len(self.system.lower)
        self.saturated = family.saturated(y, weights)
        self._sat_terms = family.saturated_terms(y)
        self._newton_tol = _NEWTON_TOL if family.link in _CANONICAL else _TOL
        self._u = np.zeros(self.system.q)
        mustart = (weights * y + 0.5) / (weights + 1) if family.family == "binomial" else y + 0.1
        eta = {
            "logit": special.logit, "probit": special.ndtri,
            "cloglog": lambda m: np.log(-np.log1p(-m)), "log": np.log,
        }[family.link](mustart)  # fmt: skip
        #: fixed effects to start from: least squares of the linked start means on ``X``
        self.start_beta = np.linalg.lstsq(x, eta - offset, rcond=None)[0]
        self._beta = self.start_beta.copy()

    def _state(self, u, beta, fixed_eta=None) -> Mode:
        fixed = self.offset + self.x @ beta if fixed_eta is None else fixed_eta
        eta = fixed + self.system.zlam(u)
        mu = self.family.mean(eta)
        mu_eta = self.family.mu_eta(eta, mu)
        w = self.wt * mu_eta**2 / self.family.variance(mu)
        dev_resid = self.family.residuals_from(self._sat_terms, self.y, mu, self.wt)
        return Mode(u, beta, eta, mu, w, dev_resid, 0.0)

    def mode(self, theta: np.ndarray, beta: np.ndarray | None = None) -> Mode:
        """PIRLS at ``theta``: over ``u`` with ``beta`` fixed, or over both when ``beta`` is
        None (lme4's nAGQ = 0 stage). Step-halving as lme4's ``pwrssUpdate``."""
        self.system.set_theta(theta)
        joint = beta is None
        beta = self._beta if joint else np.asarray(beta, float)
        fixed = None if joint else self.offset + self.x @ beta
        state = self._state(self._u, beta, fixed)
        for _ in range(_MAX_ITER):
            self.system.factor(state.w)
            resid = state.w * (self.y - state.mu) / self.family.mu_eta(state.eta, state.mu)
            rhs_u = self.system.zlam_t(resid) - state.u
            if joint:
                cu = self.system.zlam_t(state.w[:, None] * self.x)
                a_cu = self.system.solve(cu)
                a_rhs = self.system.solve(rhs_u)
                rx = self.x.T @ (state.w[:, None] * self.x) - cu.T @ a_cu
                del_b = np.linalg.solve(rx, self.x.T @ resid - cu.T @ a_rhs)
                del_u = a_rhs - a_cu @ del_b
            else:
                del_b = np.zeros_like(state.beta)
                del_u = self.system.solve(rhs_u)
            step, old = 1.0, state.penalised
            for _ in range(30):
                trial = self._state(state.u + step * del_u, state.beta + step * del_b, fixed)
                if trial.penalised <= old * (1 + 1e-15) + 1e-300:
                    break
                step /= 2
            else:
                self._u = np.zeros_like(self._u)  # the next search starts afresh
                raise PirlsFailure("step-halving failed to reduce the penalised deviance")
            state = trial
            moved = step * max(np.max(np.abs(del_u), initial=0.0), np.max(np.abs(del_b)))
            if moved < _TOL or (step == 1.0 and moved < self._newton_tol):
                break
        else:
            self._u = np.zeros_like(self._u)
            raise PirlsFailure(f"PIRLS did not converge in {_MAX_ITER} iterations")
        state.logdet = self.system.factor(state.w)
        self._u, self._beta = state.u, state.beta
        return state

    def laplace(self, par: np.ndarray) -> float:
        """lme4's Laplace deviance at ``par = (theta, beta)``."""
        theta, beta = par[: self.n_theta], par[self.n_theta :]
        s = self.mode(theta, beta)
        return s.logdet + float(s.u @ s.u) + float(s.dev_resid.sum()) + self.saturated

    def laplace_joint(self, theta: np.ndarray) -> float:
        """lme4's nAGQ = 0 deviance: the Laplace deviance with ``beta`` in PIRLS."""
        s = self.mode(theta)
        return s.logdet + float(s.u @ s.u) + float(s.dev_resid.sum()) + self.saturated

    def agq(self, par: np.ndarray, nodes: np.ndarray, weights: np.ndarray) -> float:
        """lme4's adaptive Gauss-Hermite deviance (one scalar random term)."""
        theta, beta = par[: self.n_theta], par[self.n_theta :]
        s = self.mode(theta, beta)
        codes, z = self.terms[0].codes, self.terms[0].z[:, 0]
        q = self.system.q
        # one term: Z's columns keep their order and A is diagonal
        a_diag = 1.0 + theta[0] ** 2 * np.bincount(codes, weights=s.w * z**2, minlength=q)
        sd = 1.0 / np.sqrt(a_diag)
        devc0 = np.bincount(codes, weights=s.dev_resid, minlength=q) + s.u**2
        total = np.zeros(q)
        for zk, wk in zip(nodes, weights):
            if zk == 0:
                total += wk
                continue
            u = s.u + zk * sd
            mu = self.family.mean(s.eta + theta[0] * z * (zk * sd)[codes])
            resid = self.family.residuals_from(self._sat_terms, self.y, mu, self.wt)
            devc = np.bincount(codes, weights=resid, minlength=q) + u**2
            total += wk * np.exp(0.5 * zk**2 - 0.5 * (devc - devc0))
        return float(devc0.sum() + np.sum(np.log(a_diag)) - 2 * np.sum(np.log(total)))

    def unscaled_cov(self, theta: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """``(X'WX - C' A^-1 C)^-1`` at the mode: lme4's ``RX``-based covariance of ``beta``."""
        s = self.mode(theta, beta)
        self.system.factor(s.w)
        cu = self.system.zlam_t(s.w[:, None] * self.x)
        rx = self.x.T @ (s.w[:, None] * self.x) - cu.T @ self.system.solve(cu)
        return np.linalg.inv(rx)


def gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the ``n``-point Gauss-Hermite rule for the standard normal
    density (weights sum to 1), symmetrised as lme4's ``GHrule``.

    Examples
    --------
    >>> z, w = gauss_hermite(3)
    >>> np.round(z, 4).tolist(), np.round(w, 4).tolist()
    ([-1.7321, 0.0, 1.7321], [0.1667, 0.6667, 0.1667])
    """
    z, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    return (z - z[::-1]) / 2, (w + w[::-1]) / 2
