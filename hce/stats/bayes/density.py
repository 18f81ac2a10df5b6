"""The log density and gradient of :func:`hce.stats.bayes.models.build_model`'s logit
models with random intercepts, written out by hand for nutpie.

nutpie samples a PyMC model by compiling its log density and gradient with PyTensor's
numba backend: about 110 Ops, each compiled by numba on its own, 42 s of CPU the first
time on a machine (PyTensor's numba cache empty) and 12 s in every later process
(``bench/bayes.py``). The same function written as one numba loop over the model's cells
compiles in a few seconds once and is then loaded from numba's cache, at about the same
cost per gradient. The PyMC model stays the definition of record:
``tests/stats/test_bayes_density.py`` checks this density and gradient against
``model.compile_logp()`` and ``model.compile_dlogp()`` (Jacobians of the transforms
included) at random points to 1e-10; models outside its scope (probit link, random
slopes) are sampled from the PyMC model itself.

The unconstrained vector follows ``model.free_RVs`` and PyMC's default transforms: ``b``;
per term ``log(sd_k)`` and ``z_k`` in PyMC's zero-sum coordinates (levels - 1 values);
then ``intercept`` (Bernoulli) or the cutpoints in PyMC's ordered coordinates
(``c_0``, ``log(c_j - c_{j-1})``) and ``log_noise``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np
from scipy import special

from hce.stats.bayes.models import ModelArrays

_NU = 3.0  # HalfStudentT degrees of freedom of the random-effect SDs (build_model)


def supported(family: str, link: str, arrays: ModelArrays) -> bool:
    """True when this module writes the model's density: logit link, random intercepts only."""
    return link == "logit" and family in ("ordinal", "bernoulli") and not any(z is not None for z in arrays.Z)


@dataclass(frozen=True)
class Layout:
    """Sizes of the model's parts in the unconstrained vector (see the module docstring)."""

    n_fixed: int
    n_levels: tuple[int, ...]
    n_cut: int  # free cutpoints (0 for Bernoulli, which has an intercept instead)
    n_noise: int

    @property
    def n_dim(self) -> int:
        return self.n_fixed + sum(self.n_levels) + (self.n_cut or 1) + self.n_noise

    def names(self) -> list[tuple[str, tuple[int, ...]]]:
        """Model variables (constrained) and their shapes, as in the PyMC model."""
        out = [("b", (self.n_fixed,))] if self.n_fixed else []
        for k, n in enumerate(self.n_levels):
            out += [(f"sd_{k}", ()), (f"z_{k}", (n,))]
        out.append(("cutpoints", (self.n_cut,)) if self.n_cut else ("intercept", ()))
        return out + ([("log_noise", (self.n_noise,))] if self.n_noise else [])


@dataclass(frozen=True)
class Density:
    """The log density of one model on its data, as nutpie's ``from_pyfunc`` calls it."""

    layout: Layout
    data: dict[str, np.ndarray]
    priors: dict[str, float]

    @classmethod
    def of(cls, family: str, arrays: ModelArrays, priors: dict[str, float]) -> Density:
        n_cut = arrays.n_categories - 1 if family == "ordinal" else 0
        layout = Layout(arrays.X.shape[1], tuple(arrays.n_levels), n_cut, 0 if arrays.S is None else arrays.S.shape[1])
        values = arrays.data()
        n_cells = len(values["counts"])
        data = {
            "X": np.ascontiguousarray(values["X"], dtype=float),
            "codes": np.ascontiguousarray(np.array([values[f"g{k}"] for k in range(len(arrays.n_levels))],
                                                   dtype=np.int64).reshape(len(arrays.n_levels), n_cells)),
            "n_levels": np.array(arrays.n_levels, dtype=np.int64),
            "counts": np.ascontiguousarray(values["counts"], dtype=float),
            "S": np.ascontiguousarray(values.get("S", np.zeros((n_cells, 0))), dtype=float),
            "S_noise": np.ascontiguousarray(values.get("S_noise", np.zeros((1, 0))), dtype=float),
            "noise_counts": np.ascontiguousarray(values["noise_counts"], dtype=float),
        }
        return cls(layout, data, dict(priors))

    @cached_property
    def _kernel_args(self) -> tuple:
        """The kernel's arguments after ``x`` (computed once: the sampler calls it per step)."""
        p, d = self.priors, self.data
        scales = np.array([p.get("b", 1.0), p["sd"], p["cutpoints"] if self.layout.n_cut else p["intercept"],
                           p.get("noise", 1.0), _NU])
        hst_const = float(np.log(2.0) + special.gammaln((_NU + 1) / 2) - special.gammaln(_NU / 2)
                          - 0.5 * np.log(_NU * np.pi * p["sd"] ** 2))
        return (d["X"], d["codes"], d["n_levels"], d["counts"], d["S"], d["S_noise"], d["noise_counts"],
                self.layout.n_cut, scales, hst_const)

    def logp_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Log density (PyMC's ``model.logp()``, Jacobians included) and its gradient."""
        return self._bound()(np.ascontiguousarray(x, dtype=float))

    def _bound(self) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
        """:meth:`logp_grad` with the kernel and its arguments bound once (the sampler calls it
        per leapfrog step, on a contiguous float vector)."""
        from hce.stats.bayes._kernel import logp_grad

        args, n_dim = self._kernel_args, self.layout.n_dim

        def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
            grad = np.empty(n_dim)
            return float(logp_grad(x, *args, grad)), grad

        return value_and_grad

    def expand(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The model's variables (constrained) at ``x``, named as in the PyMC model."""
        out, pos = {}, 0
        lay = self.layout
        if lay.n_fixed:
            out["b"], pos = x[: lay.n_fixed].copy(), lay.n_fixed
        for k, n in enumerate(lay.n_levels):
            out[f"sd_{k}"] = np.asarray(np.exp(x[pos]))
            y = x[pos + 1 : pos + n]
            total, root = y.sum(), np.sqrt(n)
            out[f"z_{k}"] = np.append(y, total / (root + n) - total / root) - total / (root + n)
            pos += n
        if lay.n_cut:
            y = x[pos : pos + lay.n_cut]
            out["cutpoints"] = np.cumsum(np.concatenate([y[:1], np.exp(y[1:])]))
            pos += lay.n_cut
        else:
            out["intercept"] = np.asarray(x[pos])
            pos += 1
        if lay.n_noise:
            out["log_noise"] = x[pos : pos + lay.n_noise].copy()
        return out

    def initial_point(self, seed: int) -> np.ndarray:
        """Start of a chain: the prior's centre in the unconstrained coordinates (sd at its
        prior scale, cutpoints spread over -2..2 as the PyMC model's initval) with a
        uniform(-1, 1) jitter on every coordinate, as nutpie does for a PyMC model."""
        lay = self.layout
        x = np.zeros(lay.n_dim)
        pos = lay.n_fixed
        for n in lay.n_levels:
            x[pos] = np.log(self.priors["sd"])
            pos += n
        if lay.n_cut > 1:
            x[pos + 1 : pos + lay.n_cut] = np.log(4.0 / (lay.n_cut - 1))
            x[pos] = -2.0
        return x + np.random.default_rng(seed).uniform(-1.0, 1.0, lay.n_dim)

    def nutpie_model(self):
        """A nutpie model (``nutpie.compiled_pyfunc.from_pyfunc``) of this density."""
        from nutpie.compiled_pyfunc import from_pyfunc

        names = self.layout.names()
        self.logp_grad(self.initial_point(0))  # compile or load the kernel before sampling

        def make_expand(seed1, seed2, chain):
            return self.expand

        return from_pyfunc(
            ndim=self.layout.n_dim, make_logp_fn=self._bound, make_expand_fn=make_expand,
            expanded_dtypes=[np.dtype("float64")] * len(names), expanded_shapes=[s for _, s in names],
            expanded_names=[n for n, _ in names], make_initial_point_fn=partial(Density.initial_point, self),
        )
