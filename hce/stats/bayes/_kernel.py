"""The numba kernel of :mod:`hce.stats.bayes.density` (imports numba: loaded on first use).

Compiled once per machine and then loaded from numba's on-disk cache (``cache=True``:
``__pycache__`` beside this file, or ``NUMBA_CACHE_DIR``); module-level functions, since
numba does not reuse the cache of closures. ``error_model="numpy"``: a division by zero far
out in the tails (a cutpoint gap that underflows to 0) gives inf or nan, as in PyTensor,
which the sampler rejects as a divergent step, not Python's ZeroDivisionError, which would
stop it.
"""

import numba
import numpy as np

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def log1mexp(x):  # log(1 - exp(x)), x < 0
    if x < np.log(0.5):
        return np.log1p(-np.exp(x))
    return np.log(-np.expm1(x))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def normal_logp(value, scale):
    return -0.5 * (value / scale) ** 2 - np.log(scale) - _HALF_LOG_2PI


@numba.njit(cache=True, nogil=True, error_model="numpy")
def inverse_scale(row, gamma):
    """exp(-row . gamma): 1 / the latent noise scale of a noise-design row."""
    lin = 0.0
    for j in range(len(row)):
        lin += row[j] * gamma[j]
    return np.exp(-lin)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def logp_grad(x, X, codes, n_levels, counts, S, S_noise, noise_counts, n_cut, scales, hst_const, grad):
    """Log density at ``x`` (returned) and its gradient (written to ``grad``).

    ``scales``: prior scales of b, sd, cutpoints (or intercept), log_noise, then the
    degrees of freedom of the SDs' HalfStudentT; ``hst_const``: its log-density constant,
    log 2 included.
    """
    n_cells, n_cat = counts.shape
    p = X.shape[1]
    q = S.shape[1]
    grad[:] = 0.0
    logp = 0.0
    # fixed effects
    eta = np.zeros(n_cells)
    for j in range(p):
        b = x[j]
        logp += normal_logp(b, scales[0])
        grad[j] = -b / scales[0] ** 2
        for c in range(n_cells):
            eta[c] += X[c, j] * b
    # random intercepts: u = sd * z, z in zero-sum coordinates
    pos = p
    n_terms = codes.shape[0]
    zfull = np.zeros(n_levels.sum())
    sds = np.zeros(n_terms)
    start = 0
    for t in range(n_terms):
        n = n_levels[t]
        s = x[pos]
        sd = np.exp(s)
        sds[t] = sd
        v = scales[4] * scales[1] ** 2
        logp += hst_const - 0.5 * (scales[4] + 1.0) * np.log1p(sd * sd / v) + s
        grad[pos] = -(scales[4] + 1.0) * sd * sd / (v + sd * sd) + 1.0
        total = 0.0
        for i in range(n - 1):
            total += x[pos + 1 + i]
        root = np.sqrt(float(n))
        norm = total / (root + n)
        for i in range(n - 1):
            zfull[start + i] = x[pos + 1 + i] - norm
        zfull[start + n - 1] = norm - total / root - norm
        for i in range(n):
            logp += -0.5 * zfull[start + i] ** 2
        logp -= _HALF_LOG_2PI * (n - 1)
        for c in range(n_cells):
            eta[c] += sd * zfull[start + codes[t, c]]
        pos += n
        start += n
    # cutpoints (ordered coordinates) or the Bernoulli intercept (cutpoint fixed at 0)
    cut = np.zeros(max(n_cut, 1))
    if n_cut:
        cut[0] = x[pos]
        for j in range(1, n_cut):
            cut[j] = cut[j - 1] + np.exp(x[pos + j])
            logp += x[pos + j]  # log |Jacobian|
        for j in range(n_cut):
            logp += normal_logp(cut[j], scales[2])
    else:
        a = x[pos]
        logp += normal_logp(a, scales[2])
        for c in range(n_cells):
            eta[c] += a
    cut_pos = pos
    pos += max(n_cut, 1)
    gamma = x[pos : pos + q]
    for j in range(q):
        logp += normal_logp(x[pos + j], scales[3])
        grad[pos + j] = -x[pos + j] / scales[3] ** 2
    # likelihood by cell and cutpoint: -(n_j + n_j+1) softplus(-z_j) - n_j+1 z_j
    n_bound = n_cat - 1
    g_cut = np.zeros(n_bound)
    g_eta = np.zeros(n_cells)
    for c in range(n_cells):
        inv_s = inverse_scale(S[c], gamma)
        g_e = 0.0
        g_zz = 0.0
        for j in range(n_bound):
            z = (cut[j] - eta[c]) * inv_s
            both = counts[c, j] + counts[c, j + 1]
            # softplus(-z) = max(-z, 0) + log1p(e) and sigmoid(-z) from one e = exp(-|z|)
            e = np.exp(-abs(z))
            logp += -both * (max(-z, 0.0) + np.log1p(e)) - counts[c, j + 1] * z
            w = both * (e if z > 0 else 1.0) / (1.0 + e) - counts[c, j + 1]  # d/dz
            g_cut[j] += w * inv_s
            g_e += w
            g_zz += w * z
        g_eta[c] = -inv_s * g_e
        for j in range(q):
            grad[pos + j] -= S[c, j] * g_zz
    # middle categories: n_m log(1 - exp(-(c_m - c_m-1) / s)) per distinct noise row
    for r in range(noise_counts.shape[0]):
        inv_s = inverse_scale(S_noise[r], gamma)
        acc = 0.0
        for m in range(1, n_bound):
            gap = (cut[m] - cut[m - 1]) * inv_s
            nc = noise_counts[r, m]
            logp += nc * log1mexp(-gap)
            d = nc / np.expm1(gap)
            g_cut[m] += d * inv_s
            g_cut[m - 1] -= d * inv_s
            acc += d * gap
        for j in range(q):
            grad[pos + j] -= S_noise[r, j] * acc
    # back to the unconstrained cutpoints or intercept
    if n_cut:
        for j in range(n_cut):
            g_cut[j] -= cut[j] / scales[2] ** 2
        tail = 0.0
        for j in range(n_cut - 1, 0, -1):
            tail += g_cut[j]
            grad[cut_pos + j] = (cut[j] - cut[j - 1]) * tail + 1.0
        grad[cut_pos] = tail + g_cut[0]
    else:
        total = 0.0
        for c in range(n_cells):
            total += g_eta[c]
        grad[cut_pos] = total - x[cut_pos] / scales[2] ** 2
    for j in range(p):
        for c in range(n_cells):
            grad[j] += X[c, j] * g_eta[c]
    # back to each term's sd and zero-sum coordinates
    pos = p
    start = 0
    for t in range(n_terms):
        n = n_levels[t]
        g_z = np.zeros(n)
        for c in range(n_cells):
            g_z[codes[t, c]] += g_eta[c]
        g_sd = 0.0
        for i in range(n):
            g_sd += zfull[start + i] * g_z[i]
            g_z[i] = sds[t] * g_z[i] - zfull[start + i]  # likelihood and prior
        grad[pos] += sds[t] * g_sd
        head = 0.0
        for i in range(n - 1):
            head += g_z[i]
        root = np.sqrt(float(n))
        for i in range(n - 1):
            grad[pos + 1 + i] = g_z[i] - head / (root + n) - g_z[n - 1] / root
        pos += n
        start += n
    return logp
