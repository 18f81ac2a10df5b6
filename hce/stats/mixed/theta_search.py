"""Minimise lme4's profiled deviance over ``theta`` without stopping at a symmetric point.

The profiled deviance of a linear mixed model is even in the relative SD of a scalar random
term: ``d(theta) = d(-theta)``, so ``theta = 0`` is always a stationary point and a
gradient method that steps there (L-BFGS-B projecting an overshoot onto the bound does)
reports convergence with a variance of exactly 0 where the maximum has a positive one.
Here a scalar term is searched on its relative *variance* ``phi = theta^2 >= 0``, where
the deviance has a non-zero one-sided slope at 0, so a zero is accepted only when the
deviance really rises into the interior (the Karush-Kuhn-Tucker condition ``d'(0) >= 0``).
Entries of a correlated block (random slopes) keep lme4's parametrisation, the
lower-triangular Cholesky factor with diagonals bounded below by 0.

The search is a projected Newton method on finite-difference derivatives (gradient by
central differences, Hessian from the same points plus one per pair), started from
moment estimates, with a backtracking line search; a few Newton steps from a moment
start need far fewer deviance evaluations than a quasi-Newton method, and the last
Hessian serves the convergence test. Before a zero component is accepted the deviance
is also evaluated at interior points of that component, and the search restarts from
any that is lower. If Newton stalls, L-BFGS-B takes over from the best point.

Convergence is judged as lme4's ``checkConv`` judges it (lme4 1.1, ``.makeCC``): on the
parameters not at a bound, the Hessian of the deviance must be positive definite and the
scaled gradient ``max|H^-1 g|`` (on lme4's ``theta`` scale) below 0.002; a parameter at
its bound must have a deviance that does not fall into the interior.

References
----------
Bates, D., Maechler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software, 67(1), 1-48, sec. 3.
Bertsekas, D. P. (1982). Projected Newton methods for optimization problems with simple
constraints. SIAM J. Control Optim., 20(2), 221-246.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize

GRAD_TOL = 0.002  # lme4's check.conv.grad tolerance on the scaled gradient
_STEP = 1e-3  # relative finite-difference step: the deviance carries ~1e-13 relative noise
_FLOOR = 1e-2  # finite-difference step scale for parameters near zero
_MAX_NEWTON = 60
_MAX_POLISH = 4


@dataclass
class ThetaFit:
    """The minimum of the profiled deviance.

    Attributes
    ----------
    theta : ndarray
        lme4's ``theta`` (relative Cholesky factors) at the minimum.
    deviance : float
        The profiled deviance there.
    converged : bool
        lme4's convergence checks passed.
    message : str
        Empty when converged, else what failed and what to try.
    scaled_gradient : float
        ``max|H^-1 g|`` over the parameters not at a bound, on the ``theta`` scale.
    evaluations : int
        Deviance evaluations used.
    stopped : bool
        ``max_iter`` ended the search.
    """

    theta: np.ndarray
    deviance: float
    converged: bool
    message: str
    scaled_gradient: float
    evaluations: int
    stopped: bool = False


class _Counted:
    """The deviance as a function of the search parameters, counting evaluations."""

    def __init__(
        self, deviance: Callable[[np.ndarray], float], squared: np.ndarray, gradient=None, max_iter: int | None = None
    ):
        self.deviance, self.squared, self.calls = deviance, squared, 0
        self._gradient, self._last = gradient, {}
        self.max_iter, self.left, self.stopped = max_iter, max_iter, False

    def take(self) -> bool:
        """One more iteration of the search, unless ``max_iter`` has run out."""
        if self.left is None:
            return True
        if self.left <= 0:
            self.stopped = True
            return False
        self.left -= 1
        return True

    def exact_gradient(self, x: np.ndarray) -> np.ndarray | None:
        """The deviance's analytic gradient in the search parameters, or None where it has none."""
        if self._gradient is None:
            return None
        key = np.asarray(x, dtype=float).tobytes()
        if key in self._last:
            return self._last[key]
        theta = self.theta(x)
        g = self._gradient(theta)
        # the few last points: a Hessian's steps come back to their centre (_from_gradient)
        self._last = {**dict(list(self._last.items())[-len(x) - 1 :]), key: g}
        return g

    def theta(self, x: np.ndarray) -> np.ndarray:
        return np.where(self.squared, np.sqrt(np.maximum(x, 0.0)), x)

    def __call__(self, x: np.ndarray) -> float:
        self.calls += 1
        value = float(self.deviance(self.theta(x)))
        return value if np.isfinite(value) else np.inf


def minimise_theta(
    deviance: Callable[[np.ndarray], float],
    theta0: np.ndarray,
    lower: np.ndarray,
    scalar: np.ndarray,
    gradient: Callable[[np.ndarray], np.ndarray | None] | None = None,
    *,
    max_iter: int | None = None,
) -> ThetaFit:
    """Minimise ``deviance(theta)`` subject to ``theta >= lower``.

    Parameters
    ----------
    deviance : callable
        lme4's profiled deviance as a function of ``theta``.
    theta0 : ndarray
        Start, inside the bounds (moment estimates).
    lower : ndarray
        Lower bounds: 0 for diagonal entries of the relative Cholesky factors, ``-inf``
        for off-diagonal ones.
    scalar : ndarray of bool
        Entries that are the only parameter of their term (a scalar random term), whose
        deviance is even: these are searched on ``theta^2``.
    gradient : callable, optional
        The analytic gradient of ``deviance`` as a function of ``theta``, in the search's
        parameters (``theta^2`` for the ``scalar`` entries, so that it may be finite at a
        zero variance, ``theta`` for the others), or None at points where it has none; the
        Newton steps then use it in place of finite differences (one call instead of ``4k``
        deviance evaluations).
    max_iter : int, optional
        Cap on the iterations of the search (Newton steps, then quasi-Newton ones), as
        lme4's ``maxfun``: reaching it ends the search with ``converged`` False. Default
        None: the search's own limits.

    Returns
    -------
    ThetaFit

    Examples
    --------
    >>> fit = minimise_theta(lambda t: (t[0] ** 2 - 1) ** 2, np.array([0.3]),
    ...                      np.array([0.0]), np.array([True]))
    >>> round(float(fit.theta[0]), 6), fit.converged
    (1.0, True)
    """
    scalar = np.asarray(scalar, dtype=bool)
    f = _Counted(deviance, scalar, gradient, max_iter)
    lo = np.where(scalar, 0.0, lower)
    x = np.where(scalar, np.asarray(theta0, float) ** 2, theta0)
    x = np.maximum(x, lo)
    x, fx, derivs = _newton(f, x, lo)
    # a zero component is accepted only if the deviance is higher inside
    for _ in range(len(x)):
        if f.stopped:
            break
        trial = _interior_better(f, x, fx, lo, np.where(scalar, theta0**2, theta0))
        if trial is None:
            break
        x, fx, derivs = _newton(f, trial, lo)
    if not f.stopped:
        x, fx, derivs = _polish(f, x, fx, derivs, lo)
    converged, message, scaled = _check(x, derivs, lo, scalar)
    if f.stopped:
        converged = False
        message = "; ".join(
            m for m in (f"the search stopped at max_iter={max_iter} iterations", message) if m
        )
    return ThetaFit(f.theta(x), fx, converged, message, scaled, f.calls, f.stopped)


def _polish(f: _Counted, x: np.ndarray, fx: float, derivs, lo: np.ndarray):
    """Newton steps on the extrapolated gradient, past the deviance's own precision.

    Along a variance with few levels (4 conditions, say) the deviance changes by less than
    its rounding (~1e-14 relative) over 1e-6 of ``theta``, so a search stopped on the
    deviance's decrease leaves ``theta`` known to about the square root of that precision:
    two fits of one likelihood (the rows', and the cell table's) then differ by 1e-7 to 1e-6.
    The gradient's zero is located to its noise over the curvature instead, ~1e-10. Steps
    use the last Hessian (they are ~1e-6 of theta, over which it barely changes) and stop
    once below 1e-10 of theta or when the deviance rises beyond its rounding; each costs
    4k + 1 evaluations for k parameters.
    """
    g, hess = derivs
    g = _precise_gradient(f, x, g, lo)
    for _ in range(_MAX_POLISH):
        free = ~((x <= lo) & (g > 0))
        if not free.any():
            break
        step = np.zeros_like(x)
        step[free] = -_solve_modified(hess[np.ix_(free, free)], g[free])
        trial = np.maximum(x + step, lo)
        if np.all(np.abs(trial - x) <= 1e-10 * np.maximum(np.abs(x), _FLOOR)):
            break  # at the gradient's zero, to the precision sought
        ft = f(trial)
        if ft > fx + 1e-13 * max(1.0, abs(fx)):
            break
        x, fx, g = trial, ft, _precise_gradient(f, trial, None, lo)
    return x, fx, (g, hess)


def _precise_gradient(f: _Counted, x: np.ndarray, g: np.ndarray | None, lo: np.ndarray) -> np.ndarray:
    """The analytic gradient where the deviance has one, else the extrapolated central
    difference (from ``g``, the step-h one, when given)."""
    exact = f.exact_gradient(x)
    if exact is not None:
        return exact
    return _extrapolated(f, x, _gradient(f, x, lo) if g is None else g, lo)


def _extrapolated(f: _Counted, x: np.ndarray, g: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """The central-difference gradient ``g`` (step h) Richardson-extrapolated with step h/2.

    ``(4 g(h/2) - g(h)) / 3`` cancels the error h^2 d3/6 of a central difference (d3 the
    third derivative), which otherwise moves the gradient's zero ~1e-7 of theta away from
    the optimum an analytic gradient finds (the balanced-design fit's). Coordinates next
    to a bound keep their one-sided difference.
    """
    h = _STEP * np.maximum(np.abs(x), _FLOOR) / 2
    out = g.copy()
    for i in range(len(x)):
        if x[i] - 2 * h[i] < lo[i]:
            continue
        e = np.zeros(len(x))
        e[i] = h[i]
        out[i] = (4 * (f(x + e) - f(x - e)) / (2 * h[i]) - g[i]) / 3
    return out


def _derivatives(f: _Counted, x: np.ndarray, fx: float, lo: np.ndarray):
    """Gradient and Hessian at ``x``: from the analytic gradient where the deviance has one
    (:func:`_from_gradient`), else finite differences of the deviance, one-sided at a bound."""
    exact = _from_gradient(f, x)
    if exact is not None:
        return exact
    k = len(x)
    h = _STEP * np.maximum(np.abs(x), _FLOOR)
    g, hess = np.empty(k), np.empty((k, k))
    plus = np.empty(k)
    for i in range(k):
        e = np.zeros(k)
        e[i] = h[i]
        f1 = f(x + e)
        plus[i] = f1
        if x[i] - h[i] >= lo[i]:
            f_1 = f(x - e)
            g[i] = (f1 - f_1) / (2 * h[i])
            hess[i, i] = (f1 - 2 * fx + f_1) / h[i] ** 2
        else:  # second-order one-sided differences into the feasible side
            f2 = f(x + 2 * e)
            g[i] = (-3 * fx + 4 * f1 - f2) / (2 * h[i])
            hess[i, i] = (fx - 2 * f1 + f2) / h[i] ** 2
    for i in range(k):
        for j in range(i):
            e = np.zeros(k)
            e[i], e[j] = h[i], h[j]
            hess[i, j] = hess[j, i] = (f(x + e) - plus[i] - plus[j] + fx) / (h[i] * h[j])
    return g, hess


def _from_gradient(f: _Counted, x: np.ndarray):
    """The analytic gradient at ``x`` and the Hessian from its forward differences, or None
    where the gradient is missing at ``x`` or at a step from it.

    Why: second differences of the deviance divide its rounding by ``h^2``; at a 20M-row cell
    table (a deviance of 4e7 with ~1e-7 of noise) a 4-level variance's curvature over a step
    of 1e-3 is ~1e-6, so the Hessian was noise and Newton gave way to L-BFGS-B (2,665
    evaluations, issue 43). Differences of the gradient divide its rounding by ``h`` once;
    forward ones (``k`` gradients, each about three evaluations) err by ``O(h)`` = 1e-4
    relative, which slows Newton's last step by as much and moves no optimum (the polish
    locates the gradient's zero).
    """
    g = f.exact_gradient(x)
    if g is None:
        return None
    h = 1e-4 * np.maximum(np.abs(x), _FLOOR)
    hess = np.empty((len(x), len(x)))
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h[i]
        gi = f.exact_gradient(x + e)
        if gi is None:
            return None
        hess[:, i] = (gi - g) / h[i]
    f.exact_gradient(x)  # leave x's gradient cached for the caller
    return g.copy(), (hess + hess.T) / 2


def _newton(f: _Counted, x: np.ndarray, lo: np.ndarray):
    """Projected Newton with backtracking; L-BFGS-B from the best point if it stalls."""
    fx = f(x)
    derivs = None
    for _ in range(_MAX_NEWTON):
        if not f.take():
            return x, fx, _derivatives(f, x, fx, lo)
        g, hess = _derivatives(f, x, fx, lo)
        derivs = (g, hess)
        active = (x <= lo) & (g > 0)
        free = ~active
        step = np.zeros_like(x)
        if free.any():
            step[free] = -_solve_modified(hess[np.ix_(free, free)], g[free])
        # predicted decrease of the deviance: below the threshold one more Newton step
        # (quadratic convergence) leaves the error far below the deviance's precision. The
        # step must be small too: a cell table of 20M rows has a deviance of ~1e8, whose 1e-11
        # is 1e-3, more than a whole step (2% of the condition variance) decreases it by
        # there, while its rounding is ~1e-6; the polish below takes steps under 1e-5
        decrement = -0.5 * float(g @ step)
        small = decrement < 1e-11 * max(1.0, abs(fx)) and bool(np.all(np.abs(step) <= 1e-5 * np.maximum(np.abs(x), _FLOOR)))
        t, accepted = 1.0, False
        for _ in range(40):
            trial = np.maximum(x + t * step, lo)
            ft = f(trial)
            if ft <= fx + 1e-4 * g @ (trial - x):
                accepted = True
                break
            if small:
                break  # the step is below the precision of the deviance
            t /= 2
        if accepted:
            x, fx = trial, ft
        if small:
            return x, fx, derivs
        # a full step from a decrement this small leaves ~its square: with an analytic
        # gradient the polish below finishes from here on this Hessian (k(k + 3) / 2
        # evaluations saved; 9 of InstEval's 64 evaluation's worth)
        if accepted and t == 1.0 and decrement < 1e-8 * max(1.0, abs(fx)) and f.exact_gradient(x) is not None:
            return x, fx, derivs
        if not accepted:
            if decrement < 1e-7 * max(1.0, abs(fx)):
                return x, fx, derivs  # no decrease left above the deviance's rounding
            break  # Newton is lost: L-BFGS-B below
    if f.left is not None and f.left <= 0:
        f.stopped = True
        return x, fx, _derivatives(f, x, fx, lo)
    best = optimize.minimize(
        f,
        x,
        method="L-BFGS-B",
        jac=lambda z: _gradient(f, z, lo),
        bounds=list(zip(lo, np.full_like(lo, np.inf))),
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 500 if f.left is None else f.left},
    )
    if f.left is not None:
        f.left -= best.nit
        f.stopped = f.left <= 0 and not best.success
    if best.fun < fx:
        x, fx = best.x, float(best.fun)
    return x, fx, _derivatives(f, x, fx, lo)


def _gradient(f: _Counted, x: np.ndarray, lo: np.ndarray) -> np.ndarray:
    h = _STEP * np.maximum(np.abs(x), _FLOOR)
    g = np.empty(len(x))
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h[i]
        if x[i] - h[i] >= lo[i]:
            g[i] = (f(x + e) - f(x - e)) / (2 * h[i])
        else:
            g[i] = (-3 * f(x) + 4 * f(x + e) - f(x + 2 * e)) / (2 * h[i])
    return g


def _solve_modified(hess: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H^-1 g`` with H's eigenvalues made positive (a descent direction far from the
    minimum, where the deviance need not be convex)."""
    values, vectors = np.linalg.eigh((hess + hess.T) / 2)
    floor = 1e-8 * max(np.max(np.abs(values)), 1e-300)
    values = np.maximum(np.abs(values), floor)
    return vectors @ ((vectors.T @ g) / values)


def _interior_better(f, x, fx, lo, start):
    """A point with one zero component moved inside where the deviance is lower, or None."""
    for i in np.flatnonzero((x <= lo) & (lo == 0)):
        for value in {max(start[i], 0.0), 0.01, 0.1, 1.0, 10.0}:
            if value <= 0:
                continue
            trial = x.copy()
            trial[i] = value
            if f(trial) < fx - 1e-10 * max(1.0, abs(fx)):
                return trial
    return None


def _check(x, derivs, lo, scalar):
    """lme4's checkConv on the final point: (converged, message, max scaled gradient)."""
    g, hess = derivs
    at_bound = x <= lo
    free = ~at_bound
    problems = []
    if np.any(g[at_bound] < -GRAD_TOL):
        problems.append(
            "the deviance still falls into the interior from a parameter at its bound"
        )
    scaled = 0.0
    if free.any():
        h = hess[np.ix_(free, free)]
        h = (h + h.T) / 2
        values = np.linalg.eigvalsh(h)
        if values.min() <= 1e-10 * max(values.max(), 1e-300):
            problems.append(
                "the Hessian of the deviance is not positive definite at the optimum "
                f"(smallest eigenvalue {values.min():.3g}): the model is nearly unidentifiable"
            )
        else:
            step = np.linalg.solve(h, g[free])
            # on lme4's theta scale: d theta = d phi / (2 theta) for searched-squared terms
            theta = np.where(scalar, np.sqrt(np.maximum(x, 0.0)), 1.0)[free]
            step = np.where(scalar[free], step / (2 * theta), step)
            grad = np.where(scalar[free], g[free] * 2 * theta, g[free])
            scaled = float(np.max(np.minimum(np.abs(step), np.abs(grad))))
            if scaled > GRAD_TOL:
                problems.append(
                    f"the scaled gradient max|H^-1 g| = {scaled:.3g} exceeds lme4's "
                    f"tolerance {GRAD_TOL}"
                )
    if not problems:
        return True, "", scaled
    advice = (
        "; try centring and scaling numeric covariates, removing a random term whose "
        "variance is near 0 or a correlation near +-1, or checking that every random term "
        "has several levels with several observations each"
    )
    return False, "; ".join(problems) + advice, scaled
