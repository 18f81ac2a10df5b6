"""REML/ML for linear mixed models of any balance and size: lme4's penalised least squares.

For ``y = X beta + Z b + e`` with ``b = Lambda u``, ``u ~ N(0, sigma^2 I)`` and ``e ~ N(0,
sigma^2 I)``, lme4 (Bates et al. 2015, sec. 3) profiles ``beta`` and ``sigma`` out of the
likelihood. ``Lambda`` is block diagonal: for each random term and each of its levels a
copy of the term's lower-triangular relative Cholesky factor ``T`` (``q x q`` for ``q``
columns: intercept and slopes), whose entries are ``theta``. With

    L L' = Lambda' Z'Z Lambda + I,     R_X' R_X = X'X - C_X' C_X,   L C_X = Lambda' Z'X,

the profiled deviances are

    REML: log|L|^2 + log|R_X|^2 + (n - p) (1 + log(2 pi r^2 / (n - p)))
    ML:   log|L|^2 + n (1 + log(2 pi r^2 / n)),

with ``r^2`` the penalised residual sum of squares. Everything is computed from the
sparse cross products ``Z'Z``, ``Z'X``, ``X'X``; ``A = L L'`` is factored by block
elimination in an order found once (:mod:`hce.stats.mixed.sparse_chol`), so the cost of an
evaluation does not grow with the number of rows, and nested terms cost nothing beyond
their levels. ``theta`` is searched by :func:`hce.stats.mixed.theta_search.minimise_theta`
from moment estimates. :meth:`PlsProblem.deviance` gives the same deviance, not profiled,
as a function of the variances themselves, for their observed information
(:mod:`hce.stats.mixed.component_intervals`).

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48, eqs. 34-42.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse

from hce.stats._blas import one_blas_thread
from hce.stats.mixed.sparse_chol import BlockElimination, ScalarElimination
from hce.stats.mixed.theta_search import minimise_theta

# up to this many random-effect columns a model of scalar terms factors A densely: below it
# scipy.sparse's per-call overhead outweighs the q^3 / 3 of a dense Cholesky (measured in
# the notes of PlsProblem.solve)
_DENSE_UP_TO = 300


@dataclass(frozen=True)
class RandomBlock:
    """One random term as the engine sees it.

    Attributes
    ----------
    codes : ndarray of int
        Level ``0 .. levels - 1`` of every row (its grouping factor; several terms may
        share one).
    z : ndarray, shape (n, q)
        The term's model-matrix columns (intercept and/or slopes).
    correlated : bool
        One lower-triangular factor for the ``q`` columns (``(x | g)``), or independent
        columns (``(x || g)``: a diagonal factor).
    """

    codes: np.ndarray
    z: np.ndarray
    correlated: bool = True

    @property
    def q(self) -> int:
        return self.z.shape[1]

    @property
    def levels(self) -> int:
        return int(self.codes.max()) + 1

    def theta_pattern(self) -> list[tuple[int, int]]:
        """(row, column) of each ``theta`` entry in ``T``: lme4's column-major lower triangle."""
        q = self.q
        if not self.correlated:
            return [(i, i) for i in range(q)]
        return [(i, j) for j in range(q) for i in range(j, q)]


@dataclass
class PlsFit:
    """Estimates: ``theta``, ``covariances`` (per term, ``q x q``), ``sigma2``, ``beta``,
    ``cov_beta``, ``b`` (conditional modes, terms stacked, level-major), ``loglik``,
    ``converged`` and ``message``; ``problem`` evaluates the deviance elsewhere."""

    theta: np.ndarray
    covariances: list[np.ndarray]
    sigma2: float
    beta: np.ndarray
    cov_beta: np.ndarray
    b: np.ndarray
    loglik: float
    converged: bool
    message: str
    problem: PlsProblem

    @property
    def variances(self) -> np.ndarray:
        """Variances of every random-effect column, terms in order."""
        return np.concatenate([np.diag(c) for c in self.covariances])


@dataclass
class _Solution:
    """Penalised least squares at one ``theta``: the pieces of both deviances."""

    logdet: float
    rhs_y: np.ndarray
    rhs_x: np.ndarray
    rxtrx: np.ndarray
    beta: np.ndarray  # of y minus its least-squares fit (add PlsProblem.beta0)
    r2: float
    a_y: np.ndarray  # A^-1 rhs_y
    a_x: np.ndarray  # A^-1 rhs_x


class PlsProblem:
    """The sparse cross products of one mixed model and its deviances.

    Parameters
    ----------
    y : ndarray, shape (n,)
    x : ndarray, shape (n, p)
        Fixed-effects design, full column rank.
    terms : list of RandomBlock
    reml : bool, default True
    weights : ndarray, shape (n,), optional
        Rows are cells: ``y`` their means and ``weights`` their numbers of observations,
        when every column of ``x`` and of the terms is constant within a cell. The cross
        products are then weighted sums over cells, ``n`` is the number of observations and
        ``within`` (their sum of squared deviations from the cell means) joins ``y'y``: the
        same deviances as on the observations themselves.
    within : float, default 0
        See ``weights``.

    Attributes
    ----------
    dense : bool
        Whether :meth:`solve` factors ``A`` densely (scalar terms, at most ``_DENSE_UP_TO``
        random-effect columns).
    label : str
        The method, as a table of variance components names it.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(np.arange(10), 4)
    >>> y = rng.normal(size=10)[g] + rng.normal(size=40)
    >>> problem = PlsProblem(y, np.ones((40, 1)), [RandomBlock(g, np.ones((40, 1)))])
    >>> round(problem.profiled_deviance(np.array([1.0])), 4) > 0
    True
    """

    label = "penalised least squares"

    def __init__(
        self,
        y: np.ndarray,
        x: np.ndarray,
        terms: list[RandomBlock],
        reml: bool = True,
        *,
        weights: np.ndarray | None = None,
        within: float = 0.0,
    ):
        n_rows, p = x.shape
        self.weights = np.ones(n_rows) if weights is None else np.asarray(weights, dtype=float)
        self.within = float(within)
        root = np.sqrt(self.weights)
        n = n_rows if weights is None else float(self.weights.sum())
        # y minus its least-squares fit on X: the same model (beta shifts by beta0), and the
        # penalised residual sum of squares no longer cancels against y'y
        self.beta0 = np.linalg.lstsq(x if weights is None else root[:, None] * x,
                                     y if weights is None else root * y, rcond=None)[0]  # fmt: skip
        y = y - x @ self.beta0
        self.terms = list(terms)
        self.reml = reml
        self.dof = n - p if reml else n
        z, self.offsets, self.system = random_effects_matrix(terms, n_rows)
        perm = self.system.perm
        self.inverse_perm = np.argsort(perm)
        z = z[:, perm]
        self._z, self._x, self._y = z.tocsr(), x, y  # for r^2 from the residuals (solve)
        if weights is None:
            self.ztz = (z.T @ z).tocsr()
            self.ztx, self.zty = np.asarray(z.T @ x), np.asarray(z.T @ y)
            self.xtx, self.xty = x.T @ x, x.T @ y
        else:
            wz = sparse.diags(self.weights) @ z
            self.ztz = (z.T @ wz).tocsr()
            self.ztx, self.zty = np.asarray(wz.T @ x), np.asarray(wz.T @ y)
            wx = self.weights[:, None] * x
            self.xtx, self.xty = x.T @ wx, wx.T @ y
        lam_rows, lam_cols, self._lam_param, self.lower, self.scalar = lambda_pattern(
            terms, self.offsets
        )
        self.n_theta = len(self.lower)
        self._lam_rows = self.inverse_perm[lam_rows]
        self._lam_cols = self.inverse_perm[lam_cols]
        self._eye = sparse.eye(self.offsets[-1], format="csr")
        # with one column per term Lambda is diagonal: A = I + diag(lam) Z'Z diag(lam)
        # scales the stored entries of Z'Z, no sparse products needed
        self._diagonal = all(t.q == 1 for t in terms)
        if self._diagonal:
            # Z'Z + I: every diagonal entry stored, also for a level without rows
            self._a_pattern = (self.ztz + self._eye).tocsr()
            rows = np.repeat(np.arange(self._a_pattern.shape[0]), np.diff(self._a_pattern.indptr))
            self._a_cols = self._a_pattern.indices
            self._a_diag = rows == self._a_cols
            self._a_data = self._a_pattern.data - self._a_diag
            self._column_param = np.empty(self.offsets[-1], dtype=np.int64)
            self._column_param[self._lam_cols] = self._lam_param
            # each entry of A scales by theta_s theta_t of its row's and column's terms: one
            # gather from the n_theta^2 products instead of two from the columns
            self._a_pair = self._column_param[rows] * self.n_theta + self._column_param[self._a_cols]
        self.dense = self._diagonal and self.offsets[-1] <= _DENSE_UP_TO
        if self.dense:
            self._ztz_dense = self.ztz.toarray()
        # larger models of scalar terms: the same eliminations on a pattern fixed once, on
        # A's lower triangle
        self._scalar = None
        if self._diagonal and not self.dense and not self.system.sparse_remainder:
            lower = rows >= self._a_cols
            self._a_data, self._a_diag, self._a_pair = (a[lower] for a in (self._a_data, self._a_diag, self._a_pair))
            self._scalar = ScalarElimination(self.system, rows[lower], self._a_cols[lower])

    def lam(self, theta: np.ndarray) -> sparse.csr_matrix:
        """``Lambda`` at ``theta``, in the factorisation's column order."""
        q = self.offsets[-1]
        return sparse.csr_matrix(
            (theta[self._lam_param], (self._lam_rows, self._lam_cols)), shape=(q, q)
        )

    def solve(self, theta: np.ndarray) -> _Solution:
        """Factor ``A`` at ``theta`` and solve for ``beta`` and ``r^2``.

        Scalar terms with few columns in all (:attr:`dense`) take ``A = Z'Z * s s' + I``
        (``s`` each column's relative SD) as a dense array and LAPACK's Cholesky; otherwise
        the sparse block elimination. Same formulas, so the deviances agree to rounding
        (within 3e-16 relative on random designs; ``tests/stats/test_pls.py`` allows 1e-10).
        Per evaluation, dense against sparse: 0.12 against 1.3 ms at 83 columns (item x
        rater x item:rater), 0.8 against 1.7 ms at 254, even near 350-400; at 600-900 dense
        is 5-8 times slower, as its q^3 / 3 grows and block elimination keeps nested terms
        cheap (one BLAS thread, a busy machine: rough).
        """
        theta = np.asarray(theta, dtype=float)
        if self.dense:
            scale = theta[self._column_param]
            a = self._ztz_dense * np.outer(scale, scale)
            a.flat[:: a.shape[0] + 1] += 1.0
            self._chol = linalg.cho_factor(a, lower=True, overwrite_a=True)
            logdet = 2.0 * float(np.sum(np.log(np.diag(self._chol[0]))))
            rhs_y, rhs_x = scale * self.zty, scale[:, None] * self.ztx
        elif self._scalar is not None:
            scale = theta[self._column_param]
            logdet = self._scalar.factor(self._a_values(theta))
            rhs_y, rhs_x = scale * self.zty, scale[:, None] * self.ztx
        else:
            lam = self.lam(theta)
            if self._diagonal:
                a = self._a_pattern
                a.data = self._a_values(theta)
            else:
                a = lam.T @ self.ztz @ lam + self._eye
            logdet = self.system.factor(a)
            rhs_y, rhs_x = lam.T @ self.zty, lam.T @ self.ztx
        both = self.solve_a(np.column_stack([rhs_y, rhs_x]))
        a_y, a_x = both[:, 0], both[:, 1:]
        # R_X'R_X = X'X - rhs_x' A^-1 rhs_x is the penalised residual sum of squares of X's columns
        # on Z Lambda, summed as squares for the reason r^2 is (below): the difference lost four digits
        # when the random terms absorb the intercept (N = 2e5 less nearly as much leaves 22), and its
        # noise (1e-9) reached the observed information of a 2-level variance (issue 43)
        lam_a = scale[:, None] * a_x if self.dense or self._scalar is not None else lam @ a_x
        resid_x = self._x - self._z @ lam_a
        rxtrx = resid_x.T @ (self.weights[:, None] * resid_x) + a_x.T @ a_x
        rhs = self.xty - rhs_x.T @ a_y
        beta = np.linalg.solve(rxtrx, rhs)
        # r^2 as the penalised residual sum of squares at the solution, not as y'y - rhs' A^-1 rhs:
        # the difference cancels (1e-13 of y'y at 20M rows, which N log r^2 turns into a deviance
        # noise of 1e-6, more than a 4-level variance moves it), while the sum of squares is a sum
        # of positive terms, stationary in u, so the solve's rounding enters it only squared
        u = a_y - a_x @ beta
        random = self._z @ (scale * u if self.dense or self._scalar is not None else lam @ u)
        residual = self._y - self._x @ beta - random
        r2 = float(residual @ (self.weights * residual)) + float(u @ u) + self.within
        return _Solution(logdet, rhs_y, rhs_x, rxtrx, beta, r2, a_y, a_x)

    def _a_values(self, theta: np.ndarray) -> np.ndarray:
        """``A``'s stored entries at ``theta`` (scalar terms), in ``_a_pattern``'s order."""
        return self._a_data * np.outer(theta, theta).ravel()[self._a_pair] + self._a_diag

    def solve_a(self, rhs: np.ndarray) -> np.ndarray:
        """``A^-1 rhs`` for the ``A`` of the last :meth:`solve` (factorisation order)."""
        if self.dense:
            return linalg.cho_solve(self._chol, rhs, check_finite=False)
        if self._scalar is not None:
            return self._scalar.solve(rhs)
        return self.system.solve(rhs)

    def profiled_deviance(self, theta: np.ndarray) -> float:
        """lme4's deviance with ``beta`` and ``sigma`` profiled out (eqs. 34, 41)."""
        s = self.solve(theta)
        if not s.r2 > 0:
            return np.inf
        dev = s.logdet + self.dof * (1 + np.log(2 * np.pi * s.r2 / self.dof))
        return float(dev + (np.linalg.slogdet(s.rxtrx)[1] if self.reml else 0.0))

    @property
    def has_gradient(self) -> bool:
        """Whether :meth:`gradient` is analytic here: scalar terms, factored densely or by a
        single elimination stage before a dense remainder."""
        return self.dense or (self._scalar is not None and self._scalar.has_inverse_diagonal)

    def gradient(self, theta: np.ndarray) -> np.ndarray | None:
        """The gradient of :meth:`profiled_deviance` in the relative variances ``theta^2`` (the
        coordinates :func:`~hce.stats.mixed.theta_search.minimise_theta` searches), analytically;
        None where :attr:`has_gradient` is False or a ``theta`` is below 1e-2 (the formula
        divides by it).

        For scalar terms (``Lambda`` diagonal, ``theta_j`` on the columns of term ``j``), with
        ``u = A^-1 Lambda Z'(y - X beta)`` the conditional modes, ``a_x = A^-1 Lambda Z'X`` and
        ``M = R_X' R_X``: ``d log|A| / d theta_j = 2 (q_j - tr_j A^-1) / theta_j``, ``d r^2 /
        d theta_j = -2 sum_j u_i^2 / theta_j`` (the penalised least squares' normal equations
        give ``Z'e = u / theta``) and ``d log|M| / d theta_j = -2 sum_j a_x,i M^-1 a_x,i' /
        theta_j`` (``Lambda Z' V^-1 X = a_x``), ``tr_j`` and ``sum_j`` over term ``j``'s
        columns. The one costly piece is the diagonal of ``A^-1``
        (:meth:`ScalarElimination.inverse_diagonal`): about two evaluations' worth, where a
        central difference costs two per parameter and the extrapolated one four.
        """
        theta = np.asarray(theta, dtype=float)
        if not self.has_gradient or np.any(theta < 1e-2):
            return None
        parts = self._gradient_parts(theta)
        if parts is None:
            return None
        traces, squares, r2 = parts
        return (traces - self.dof / r2 * squares) / theta**2

    def _gradient_parts(self, theta: np.ndarray):
        """Per term, ``theta_j / 2`` times the derivative in ``theta_j`` of ``log|L|^2 (+
        log|R_X|^2)`` and of ``-r^2``, and ``r^2`` (see :meth:`gradient`); None where ``r^2 <= 0``."""
        s = self.solve(theta)
        if not s.r2 > 0:
            return None
        if self.dense:
            inverse = linalg.cho_solve(self._chol, np.eye(len(self._column_param)), check_finite=False)
            diag = np.diag(inverse)
        else:
            diag = self._scalar.inverse_diagonal()
        u = s.a_y - s.a_x @ s.beta
        traces, squares = (np.bincount(self._column_param, weights=v, minlength=self.n_theta) for v in (1.0 - diag, u**2))
        if self.reml:
            quad = np.einsum("ij,jk,ik->i", s.a_x, np.linalg.inv(s.rxtrx), s.a_x)
            traces = traces - np.bincount(self._column_param, weights=quad, minlength=self.n_theta)
        return traces, squares, s.r2

    def deviance_gradient(self, variances: np.ndarray) -> np.ndarray | None:
        """The gradient of :meth:`deviance` in the variances, analytically (None as
        :meth:`gradient`; NaN for a variance at 0).

        With ``v_j = theta_j^2 sigma^2`` and ``t_j``, ``s_j`` the parts of :meth:`gradient`
        (``d log|L|^2 / d theta_j (+ REML's term) = 2 t_j / theta_j``, ``d r^2 / d theta_j = -2
        s_j / theta_j``): ``d / d v_j = (t_j - s_j / sigma^2) / v_j`` and ``d / d sigma^2 = (dof
        - r^2 / sigma^2 - sum_j (t_j - s_j / sigma^2)) / sigma^2``. Differences of it give the
        observed information with the deviance's rounding divided by the step once, not
        squared (:func:`~hce.stats.mixed.component_intervals.reml_covariance`).
        """
        variances = np.asarray(variances, dtype=float)
        if self.n_theta != len(self.terms) or not self.has_gradient:
            return None
        sigma2 = variances[-1]
        theta = np.sqrt(np.maximum(variances[:-1], 0.0) / sigma2)
        parts = self._gradient_parts(theta)
        if parts is None:
            return None
        traces, squares, r2 = parts
        core = traces - squares / sigma2
        with np.errstate(divide="ignore", invalid="ignore"):
            components = core / variances[:-1]
        return np.r_[components, (self.dof - r2 / sigma2 - core.sum()) / sigma2]

    def deviance(self, variances: np.ndarray) -> float:
        """-2 log-likelihood at ``variances`` (scalar random terms, then the residual),
        not profiled.

        With ``theta = sqrt(v / sigma^2)``: ``log|L|^2 (+ log|R_X|^2) + dof log(2 pi sigma^2)
        + r^2 / sigma^2``, which equals :meth:`profiled_deviance` where ``sigma^2 = r^2 /
        dof``. A function of the variances themselves, for their observed information;
        defined for models whose random terms each have one column.
        """
        if self.n_theta != len(self.terms) or any(t.q != 1 for t in self.terms):
            raise ValueError("deviance(variances) needs one column per random term")
        sigma2 = variances[-1]
        return self.deviance_at(np.sqrt(np.maximum(variances[:-1], 0.0) / sigma2), sigma2)

    def deviance_at(self, theta: np.ndarray, sigma2: float) -> float:
        """-2 log-likelihood at relative factors ``theta`` and residual variance ``sigma2``,
        not profiled (lmerTest's ``devfun_vp``): ``log|L|^2 (+ log|R_X|^2) + dof log(2 pi
        sigma^2) + r^2 / sigma^2``."""
        s = self.solve(theta)
        dev = s.logdet + self.dof * np.log(2 * np.pi * sigma2) + s.r2 / sigma2
        return float(dev + (np.linalg.slogdet(s.rxtrx)[1] if self.reml else 0.0))

    def cov_beta_at(self, theta: np.ndarray, sigma2: float) -> np.ndarray:
        """``cov(beta) = sigma^2 (R_X' R_X)^-1`` at ``theta`` and ``sigma2`` (lmerTest's
        ``get_covbeta``)."""
        return sigma2 * np.linalg.inv(self.solve(theta).rxtrx)

    def start(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Start values: moment estimates for intercept columns, lme4's 1 for slopes, 0 off
        the diagonal (see :func:`moment_start`)."""
        intercepts = moment_start(y, x, [t.codes for t in self.terms], self.weights, self.within)
        theta = []
        for t, rel in zip(self.terms, intercepts):
            for i, j in t.theta_pattern():
                constant = np.all(t.z[:, j] == 1.0)
                theta.append(0.0 if i != j else rel if constant else 1.0)
        return np.array(theta)


def pls_fit(
    y: np.ndarray,
    x: np.ndarray,
    terms: list[RandomBlock],
    reml: bool = True,
    *,
    weights: np.ndarray | None = None,
    within: float = 0.0,
    max_iter: int | None = None,
    start: np.ndarray | None = None,
) -> PlsFit:
    """Fit a linear mixed model by profiled REML (or ML).

    Parameters
    ----------
    y, x, terms, reml, weights, within
        As for :class:`PlsProblem` (``weights``: ``y`` holds cell means).
    max_iter : int, optional
        Cap on the search's iterations (:func:`~hce.stats.mixed.theta_search.minimise_theta`).
    start : ndarray, optional
        ``theta`` to start the search from; default None: :meth:`PlsProblem.start`.

    Returns
    -------
    PlsFit

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> g = np.repeat(np.arange(30), 5)
    >>> y = 2 * rng.normal(size=30)[g] + rng.normal(size=150)
    >>> fit = pls_fit(y, np.ones((150, 1)), [RandomBlock(g, np.ones((150, 1)))])
    >>> fit.converged, round(float(fit.covariances[0][0, 0]), 2)
    (True, 2.9)
    """
    problem = PlsProblem(y, x, terms, reml, weights=weights, within=within)
    with one_blas_thread():  # many small factorisations (see one_blas_thread)
        search = minimise_theta(
            problem.profiled_deviance, problem.start(y, x) if start is None else start, problem.lower, problem.scalar,
            problem.gradient if problem.has_gradient else None, max_iter=max_iter,
        )  # fmt: skip
    theta = search.theta
    s = problem.solve(theta)
    sigma2 = s.r2 / problem.dof
    u = problem.solve_a(s.rhs_y - s.rhs_x @ s.beta)
    b = (problem.lam(theta) @ u)[problem.inverse_perm]
    covariances, start = [], 0
    for t in terms:
        factor = np.zeros((t.q, t.q))
        for k, (i, j) in enumerate(t.theta_pattern()):
            factor[i, j] = theta[start + k]
        start += len(t.theta_pattern())
        covariances.append(sigma2 * factor @ factor.T)
    return PlsFit(
        theta=theta,
        covariances=covariances,
        sigma2=float(sigma2),
        beta=s.beta + problem.beta0,
        cov_beta=sigma2 * np.linalg.inv(s.rxtrx),
        b=b,
        loglik=-0.5 * search.deviance,
        converged=search.converged,
        message=search.message,
        problem=problem,
    )


def moment_start(
    y: np.ndarray, x: np.ndarray, codes: list[np.ndarray], weights: np.ndarray | None = None, within: float = 0.0
) -> np.ndarray:
    """Relative SDs to start from: one-way ANOVA (moment) estimates on the OLS residuals.

    With ``weights`` (and ``within``) rows are cells, as in :class:`PlsProblem`: the same
    estimates as from the observations.

    For each term, ``(MSB - MSW) / n0`` with ``n0 = (N - sum n_l^2 / N) / (a - 1)`` (Searle
    et al. 1992, sec. 3.6) divided by the smallest within-level mean square of the terms
    (the residual variance where the finest term has replicates), floored at 0.05 so the
    search starts inside: each term's one-way estimate ignores the others, so it is only
    a start.
    """
    if weights is None:
        resid = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
        n, weighted, rss = len(y), resid, float(resid @ resid)
    else:
        root = np.sqrt(weights)
        resid = y - x @ np.linalg.lstsq(root[:, None] * x, root * y, rcond=None)[0]
        n, weighted = float(weights.sum()), weights * resid
        rss = float(resid @ weighted) + within
    between, within_ms = [], []
    for c in codes:
        counts = np.bincount(c).astype(float) if weights is None else np.bincount(c, weights=weights)
        sums = np.bincount(c, weights=weighted)
        levels = np.count_nonzero(counts)
        ss_within = float(rss - np.sum(sums[counts > 0] ** 2 / counts[counts > 0]))
        msb = (rss - ss_within - weighted.sum() ** 2 / n) / max(levels - 1, 1)
        msw = ss_within / (n - levels) if n > levels else np.nan
        n0 = (n - np.sum(counts**2) / n) / max(levels - 1, 1)
        between.append((msb, n0))
        within_ms.append(msw)
    sigma2 = np.nanmin(within_ms) if np.any(np.isfinite(within_ms)) else rss / n / 2
    sigma2 = max(sigma2, 1e-12 * rss / n, 1e-300)
    relative = np.array([(msb - sigma2) / n0 / sigma2 for msb, n0 in between])
    return np.sqrt(np.maximum(relative, 0.05))


def random_effects_matrix(
    terms: list[RandomBlock], n: int
) -> tuple[sparse.csc_matrix, np.ndarray, BlockElimination]:
    """``Z`` (``n x q``, terms stacked, level-major), each term's first column and the
    elimination plan of ``A`` (its order: :attr:`BlockElimination.perm`)."""
    sizes = [t.levels * t.q for t in terms]
    offsets = np.cumsum([0, *sizes])
    rows, cols, vals = [], [], []
    for t, off in zip(terms, offsets):
        for c in range(t.q):
            rows.append(np.arange(n))
            cols.append(off + t.codes * t.q + c)
            vals.append(t.z[:, c])
    z = sparse.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n, offsets[-1]),
    )
    structure = z.copy()
    structure.data[:] = 1.0  # the pattern, free of cancellation and of zero covariates
    groups = [(np.arange(off, off + size), t.q) for t, off, size in zip(terms, offsets, sizes)]
    return z, offsets, BlockElimination(structure.T @ structure, groups)


def lambda_pattern(terms: list[RandomBlock], offsets: np.ndarray):
    """``Lambda``'s entries in ``Z``'s column order: rows, columns, the ``theta`` index of
    each, and per ``theta`` its lower bound and whether it is a scalar term's only entry."""
    lam_rows, lam_cols, param, lower, scalar = [], [], [], [], []
    start = 0
    for t, off in zip(terms, offsets):
        pattern = t.theta_pattern()
        for k, (i, j) in enumerate(pattern):
            base = off + np.arange(t.levels) * t.q
            lam_rows.append(base + i)
            lam_cols.append(base + j)
            param.append(np.full(t.levels, start + k))
            lower.append(0.0 if i == j else -np.inf)
            # a diagonal entry alone in its column: the deviance is even in it
            scalar.append(i == j and not any(b == j and a != j for a, b in pattern))
        start += len(pattern)
    return (
        np.concatenate(lam_rows), np.concatenate(lam_cols), np.concatenate(param),
        np.array(lower), np.array(scalar),
    )  # fmt: skip
