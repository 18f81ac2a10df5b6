"""REML variance components of the ICC models, from sums of the ratings.

The crossed model ``rating = mu + target + rater + error`` and the one-way model ``rating =
mu + target + error`` are fitted from a handful of sums (:class:`DesignSums`), which one
grouped pass gives in any engine, and turned into the pseudo mean squares the ICC formulas
read (:func:`reml_mean_squares`, :func:`oneway_mean_squares`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from hce.stats._numdiff import central_differences

KRule = Literal["harmonic", "raters"]


def reml_components(
    target: np.ndarray, rater: np.ndarray | None, y: np.ndarray, n: int, k: int
) -> tuple[float, float, float]:
    """REML variance components of ``y = mu + target + rater + error``, all random and crossed.

    ``rater=None`` fits the one-way model ``y = mu + target + error`` (rater variance 0).
    Returns ``(var_target, var_rater, var_error)``.

    Notes
    -----
    With relative standard deviations ``theta = sd_effect / sd_error`` the profiled REML
    deviance is ``(N - 1) log(q / (N - 1)) + log|M|``, where ``M`` is Henderson's mixed-model
    matrix in the scaled form of Bates et al. (2015), ``[X'X, X'Z L; L Z'X, L Z'Z L + I]``, and
    ``q`` the penalised residual sum of squares. The target block of ``M`` is diagonal and is
    eliminated analytically; targets with equal numbers of ratings share its entries, so
    one evaluation costs O(c k^2) for c distinct counts, whatever the number of targets.
    The deviance is even in each theta, so it is minimised without bounds by
    :func:`newton_even` and |theta| taken (theta = 0, a zero variance, is allowed).
    """
    return reml_of_sums(design_sums(target, rater, y, n, k), crossed=rater is not None)


@dataclass(frozen=True)
class DesignSums:
    """What the REML deviance of the ICC models reads from the ratings (see :func:`reml_components`).

    Targets rated the same number of times (a class) share their diagonal entry of the
    eliminated block, so besides the totals (``nobs``, ``yy`` = sum y^2, ``sy`` = sum y) the
    deviance needs, per class c of ``sizes[c]`` ratings: how many targets (``n_cls``), the sum
    of their totals and of their squared totals (``ty_cls``, ``tyty_cls``); per rater, the
    ratings and their sum (``nr``, ``ry``); per class and rater(s), how many targets the rater
    rated (``w_cls``), the sum of their totals (``wty_cls``), and how many both raters rated
    (``ww_cls``). ``per_target`` holds the ratings of each target.

    The sums are of the ratings less their mean: the deviance's residual sum of squares is
    ``yy`` less the fitted part, which cancels ``log10(mean^2 / variance)`` digits of raw sums
    (ratings of 1e5 +- 1 lost all of them: ICC 22% off its value on the same ratings at 0).
    The model has an intercept, so the shift changes no component.
    """

    nobs: int
    yy: float
    sy: float
    sizes: np.ndarray
    n_cls: np.ndarray
    ty_cls: np.ndarray
    tyty_cls: np.ndarray
    nr: np.ndarray
    ry: np.ndarray
    w_cls: np.ndarray
    wty_cls: np.ndarray
    ww_cls: np.ndarray
    per_target: np.ndarray


def oneway_sums(nobs: int, yy: float, sy: float, nt: np.ndarray, ty: np.ndarray) -> DesignSums:
    """:class:`DesignSums` of the one-way model (no rater sums) from the totals and, per target,
    the number of ratings ``nt`` and their sum ``ty``; :func:`dataclasses.replace` adds the
    rater sums of the crossed model."""
    sizes, cls = np.unique(nt, return_inverse=True)
    c = len(sizes)
    return DesignSums(nobs, yy, sy, sizes.astype(float), np.bincount(cls, minlength=c).astype(float),
                      np.bincount(cls, weights=ty, minlength=c), np.bincount(cls, weights=ty**2, minlength=c),
                      np.zeros(0), np.zeros(0), np.zeros((c, 0)), np.zeros((c, 0)), np.zeros((c, 0, 0)), nt)  # fmt: skip


def design_sums(target: np.ndarray, rater: np.ndarray | None, y: np.ndarray, n: int, k: int) -> DesignSums:
    """:class:`DesignSums` of ratings ``y`` of targets ``target`` (codes 0..n-1) by raters
    ``rater`` (codes 0..k-1; None: the one-way model, no rater sums), taken about their mean
    (see :class:`DesignSums`)."""
    y = y - y.mean()
    nt = np.bincount(target, minlength=n)
    ty = np.bincount(target, weights=y, minlength=n)
    d = oneway_sums(len(y), float(y @ y), float(y.sum()), nt, ty)
    if rater is None:
        return d
    cls = np.searchsorted(d.sizes, nt)
    w = np.zeros((n, k))
    np.add.at(w, (target, rater), 1.0)
    classes = range(len(d.sizes))
    return replace(d, nr=np.bincount(rater, minlength=k).astype(float), ry=np.bincount(rater, weights=y, minlength=k),
                   w_cls=np.stack([w[cls == c].sum(axis=0) for c in classes]),
                   wty_cls=np.stack([ty[cls == c] @ w[cls == c] for c in classes]),
                   ww_cls=np.stack([w[cls == c].T @ w[cls == c] for c in classes]))  # fmt: skip


def reml_of_sums(d: DesignSums, *, crossed: bool) -> tuple[float, float, float]:
    """REML ``(var_target, var_rater, var_error)`` of the crossed model (``crossed``) or of
    the one-way model from the design's sums (see :func:`reml_components`)."""
    nobs, yy, sy, sizes, n_cls = d.nobs, d.yy, d.sy, d.sizes, d.n_cls
    ty_cls, tyty_cls, nr, ry, w_cls, wty_cls, ww_cls = d.ty_cls, d.tyty_cls, d.nr, d.ry, d.w_cls, d.wty_cls, d.ww_cls
    k = len(nr)

    def deviance_parts(theta: np.ndarray) -> tuple[float, float]:
        tt2 = theta[0] ** 2
        inv_d = 1.0 / (tt2 * sizes + 1.0)
        # fixed-effect row: g_i = n_i for the intercept
        s00 = nobs - tt2 * (inv_d * n_cls * sizes**2).sum()
        r0 = sy - tt2 * (inv_d * sizes * ty_cls).sum()
        if not crossed:
            s, r = np.array([[s00]]), np.array([r0])
        else:
            tr = theta[1]
            # rater rows: g_i = theta_r w_i
            s = np.empty((k + 1, k + 1))
            s[0, 0] = s00
            s[0, 1:] = s[1:, 0] = tr * (nr - tt2 * (inv_d * sizes) @ w_cls)
            s[1:, 1:] = tr**2 * (np.diag(nr) - tt2 * np.tensordot(inv_d, ww_cls, 1))
            s[1:, 1:] += np.eye(k)
            r = np.concatenate([[r0], tr * (ry - tt2 * inv_d @ wty_cls)])
        chol = np.linalg.cholesky(s)
        z = np.linalg.solve(chol, r)
        logdet = -(n_cls * np.log(inv_d)).sum() + 2 * np.log(np.diag(chol)).sum()
        q = yy - tt2 * (inv_d * tyty_cls).sum() - z @ z
        return logdet, q

    def deviance(theta: np.ndarray) -> float:
        logdet, q = deviance_parts(theta)
        return (nobs - 1) * np.log(q / (nobs - 1)) + logdet

    npar = 2 if crossed else 1
    fits = [newton_even(deviance, np.full(npar, x0)) for x0 in (1.0, 0.2)]
    theta = min(fits, key=deviance)
    var_e = deviance_parts(theta)[1] / (nobs - 1)
    var_r = var_e * theta[1] ** 2 if crossed else 0.0
    return var_e * theta[0] ** 2, var_r, var_e


def newton_even(f, x: np.ndarray, *, max_iter: int = 100) -> np.ndarray:
    """Minimise a smooth function of a few parameters, even in each, by damped Newton.

    Gradient and Hessian come from central differences; the Hessian's eigenvalues are
    made positive so every step descends, and steps are halved until the value drops.
    Returns ``|x|`` at the minimum. Used instead of scipy's bounded quasi-Newton because
    REML surfaces are flat along a variance with few levels (say 4 raters), where
    quasi-Newton stops early, and because a few exact Newton steps are cheaper.
    """
    x = np.asarray(x, dtype=float)
    fx = f(x)
    for _ in range(max_iter):
        grad, hess = central_differences(f, x, 1e-4 * np.maximum(np.abs(x), 0.1), fx)
        w, v = np.linalg.eigh(hess)
        w = np.maximum(np.abs(w), 1e-8 * max(1.0, np.abs(w).max()))
        step = -(v / w) @ (v.T @ grad)
        t = 1.0
        # within rounding of f (a few ulps of its value) a step's drop is noise: accepted, so
        # the search ends where the gradient vanishes, not where the values stop telling
        # (sqrt(eps) from the optimum: 6e-8 apart on sums that differed in the 16th digit)
        noise = 1e-13 * max(1.0, abs(fx))
        while t > 1e-12:
            f_new = f(x + t * step)
            if f_new <= fx + noise:
                break
            t /= 2
        else:
            break  # no descent along the Newton direction: at the minimum
        moved = np.abs(t * step).max()
        x, fx = x + t * step, f_new
        if moved < 1e-11 * (1 + np.abs(x).max()):
            break
    return np.abs(x)


def reml_mean_squares(d: DesignSums, n: int, k: int, k_rule: KRule = "harmonic") -> tuple[dict[str, float], float]:
    """Pseudo mean squares rebuilt from REML components, and the k they refer to.

    ``d`` holds the sums of ratings of ``n`` targets by ``k`` raters (:func:`design_sums`).
    ``k_rule="harmonic"``: ``k`` is the harmonic mean of ratings per target, the degrees of
    freedom are the design's own, and ``msr_oneway`` carries the one-way fit for ICC1.
    ``k_rule="raters"``: psych's ``ICC(x, lmer=TRUE)``: ``k`` is the number of raters, MSW is
    ``s2_e + s2_r`` from the crossed fit, and the degrees of freedom are those of the complete
    design. In a complete design with interior REML estimates both equal the ANOVA mean
    squares exactly, so :func:`icc_core` gives the classical answer.
    """
    nobs = d.nobs
    vt, vr, ve = reml_of_sums(d, crossed=True)
    if k_rule == "raters":
        ms = dict(
            msr=ve + k * vt, msc=ve + n * vr, mse=ve, msw=ve + vr,
            df_r=n - 1, df_c=k - 1, df_e=(n - 1) * (k - 1), df_w=n * (k - 1),
        )  # fmt: skip
        return ms, float(k)
    oneway, k_bar = oneway_mean_squares(d, n)
    ms = dict(
        msr=ve + k_bar * vt, msc=ve + n * vr, mse=ve, msw=oneway["msw"],
        df_r=n - 1, df_c=k - 1, df_e=nobs - n - k + 1, df_w=nobs - n,
    )  # fmt: skip
    # the one-way F uses its own fit: MSR* = MSW* + k * var_target(one-way)
    ms["msr_oneway"] = oneway["msr"]
    return ms, k_bar


def oneway_mean_squares(d: DesignSums, n: int) -> tuple[dict[str, float], float]:
    """Pseudo mean squares of the one-way REML fit alone (ICC1, ICC1k under ``k="harmonic"``),
    and the harmonic-mean k: ``msr = s2_w + k s2_t1``, ``msw = s2_w``; the two-way mean
    squares are NaN (their rows are not asked for). ``d`` needs no rater sums."""
    k_bar = len(d.per_target) / (1.0 / d.per_target).sum()
    vt1, _, vw = reml_of_sums(d, crossed=False)
    msr = vw + k_bar * vt1
    nan = float("nan")
    ms = dict(msr=msr, msr_oneway=msr, msw=vw, msc=nan, mse=nan, df_r=n - 1, df_c=nan, df_e=nan, df_w=d.nobs - n)
    return ms, k_bar
