"""Run NUTS on a model with the fastest sampler installed, and check the result.

``sampler="auto"`` takes nutpie when it imports (installed with hce) and PyMC's own NUTS
otherwise: ``bench/bayes.py`` measured nutpie (with its low-rank mass matrix) at 5x the
minimum bulk ESS per CPU-second of plain ``pm.sample()`` on the Experiment-5-size
location-scale ordinal model, where PyMC did not converge. For logit models with random
intercepts nutpie samples the model's hand-written density (:mod:`hce.stats.bayes.density`,
one numba kernel cached on disk: 3 s of CPU the first time on a machine). Other models are
compiled from the PyMC graph with numba: 12 s of CPU, or 42 s while PyTensor's on-disk numba
cache is empty, so those compiled models are also kept in a small per-process cache keyed
by the model's structure and shapes and refitted on new data with ``with_data`` (a
simulation study then compiles once). PyMC's C backend caches its compiled code on disk by
itself.

Neither sampler refuses a bad chain (nutpie runs no convergence check; PyMC only logs
R-hat at INFO level), so :func:`diagnose` does it here.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from hce._checks import check_choice
from hce.errors import HceError, HceWarning
from hce.stats._resample import fields_in_place

if TYPE_CHECKING:  # ArviZ and PyMC load only when a model is sampled or checked
    import arviz as az
    import pymc as pm

    from hce.stats.bayes.density import Density

SAMPLERS = ("auto", "nutpie", "pymc")
RHAT_MAX = 1.01  # Vehtari et al. (2021)
#: Warm-up steps per chain when ``tune=None``: each sampler's own default (nutpie's 300
#: matched 1000 on Experiment 5 in 43% of the sampling time; bench/bayes.py)
DEFAULT_TUNE = {"nutpie": 300, "pymc": 1000}
ESS_MIN = 400  # bulk ESS, Vehtari et al. (2021): 100 per chain for 4 chains
_CACHE_SIZE = 8
_compiled: OrderedDict[Hashable, object] = OrderedDict()


class MCMCDiagnosticsWarning(HceWarning):
    """The sampler's output fails a convergence check (R-hat, bulk ESS or divergences)."""


def resolve_sampler(sampler: str) -> str:
    """``"auto"`` -> ``"nutpie"`` when installed, else ``"pymc"``; an explicit choice is kept."""
    check_choice("sampler", sampler, SAMPLERS)
    if sampler == "auto":
        return "nutpie" if importlib.util.find_spec("nutpie") is not None else "pymc"
    if sampler == "nutpie" and importlib.util.find_spec("nutpie") is None:
        raise HceError('sampler="nutpie" needs the package nutpie, installed with hce: pip install nutpie')
    return sampler


class Sampling(NamedTuple):
    """What a caller of a Bayesian model asks of the sampler, as its keywords (see :func:`sampled`)."""

    draws: int = 1000
    tune: int | None = None
    chains: int = 4
    target_accept: float = 0.8
    sampler: str = "auto"
    random_state: int | np.random.Generator | None = None


#: The sampler keywords' annotations, as the models' signatures spell them.
_SAMPLING_ANNOTATIONS = {
    "draws": "int", "tune": "int | None", "chains": "int", "target_accept": "float",
    "sampler": 'Literal["auto", "nutpie", "pymc"]', "random_state": "int | np.random.Generator | None",
}  # fmt: skip

#: Offer a model's ``sampling`` parameter (a :class:`Sampling`) as the keywords ``draws=``,
#: ``tune=``, ``chains=``, ``target_accept=``, ``sampler=`` and ``random_state=`` in its place.
sampled = fields_in_place("sampling", _SAMPLING_ANNOTATIONS)


@dataclass(frozen=True)
class SamplerSettings:
    """NUTS settings shared by both samplers."""

    draws: int
    tune: int
    chains: int
    target_accept: float
    seed: int

    @property
    def cores(self) -> int:
        return max(1, min(self.chains, os.cpu_count() or 1))

    def keywords(self) -> dict[str, int | float]:
        """The keywords nutpie's ``sample`` and PyMC's ``pm.sample`` both take, spelt alike
        (each names the seed its own way)."""
        return {"draws": self.draws, "tune": self.tune, "chains": self.chains, "cores": self.cores,
                "target_accept": self.target_accept}  # fmt: skip


def run(
    sampler: str,
    make_model: Callable[[], pm.Model],
    data: dict[str, np.ndarray],
    key: Hashable,
    settings: SamplerSettings,
    density: Density | None = None,
) -> az.InferenceData:
    """Sample ``make_model()`` with ``sampler`` (``"nutpie"`` or ``"pymc"``) and return the
    InferenceData (posterior and sample_stats with ``diverging``).

    ``data`` are the model's ``pm.Data`` values: with nutpie a cached compiled model of the
    same ``key`` is reused with these values instead of compiling again. ``density``, the
    same model's hand-written log density (:mod:`hce.stats.bayes.density`), is what
    nutpie samples when given: nothing to compile but one cached numba function.
    """
    if sampler == "nutpie":
        import nutpie

        if density is not None:
            compiled = density.nutpie_model()
        else:
            compiled = _compiled.pop(key, None)
            if compiled is None:
                compiled = nutpie.compile_pymc_model(make_model())
            else:  # only the data the compiled graph reads (a Bernoulli model has no noise_counts)
                compiled = compiled.with_data(**{k: v for k, v in data.items() if k in compiled.shared_data})
            _compiled[key] = compiled
            while len(_compiled) > _CACHE_SIZE:
                _compiled.popitem(last=False)
        return nutpie.sample(
            compiled,
            **settings.keywords(),
            seed=settings.seed,
            save_warmup=False,
            progress_bar=False,
            # a low-rank correction to the diagonal mass matrix follows the correlations
            # between cutpoints, noise and random-effect SDs: on small location-scale fits
            # it gave 2-5x the minimum bulk ESS at about the same cost per draw
            low_rank_modified_mass_matrix=True,
        )
    import pymc as pm

    # PyMC reports progress and R-hat through logging; hce checks convergence itself
    pymc_logger = logging.getLogger("pymc")
    level = pymc_logger.level
    pymc_logger.setLevel(logging.WARNING)
    try:
        with make_model():
            return pm.sample(**settings.keywords(), random_seed=settings.seed, progressbar=False,
                             compute_convergence_checks=False)
    finally:
        pymc_logger.setLevel(level)


def diagnose(idata: az.InferenceData, var_names: list[str], labels: dict[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """Convergence table per variable and the list of failed checks with their remedies.

    Returns
    -------
    table : pandas.DataFrame
        ``variable`` (readable name), ``size``, ``r_hat`` (largest), ``ess_bulk`` and
        ``ess_tail`` (smallest), ``ok`` (R-hat <= 1.01 and bulk ESS >= 400).
    flags : list of str
        One message per failed check, naming the variables and the remedy; empty when the
        fit passes (R-hat <= 1.01, bulk ESS >= 400 everywhere, no divergent transition).
    """
    import arviz as az

    rhat = az.rhat(idata, var_names=var_names)
    bulk = az.ess(idata, var_names=var_names, method="bulk")
    tail = az.ess(idata, var_names=var_names, method="tail")
    rows = []
    for name in var_names:
        r, eb, et = (np.asarray(ds[name]).ravel() for ds in (rhat, bulk, tail))
        rows.append(
            {
                "variable": labels.get(name, name),
                "size": r.size,
                "r_hat": float(np.nanmax(r)) if np.isfinite(r).any() else np.nan,
                "ess_bulk": float(np.nanmin(eb)) if np.isfinite(eb).any() else np.nan,
                "ess_tail": float(np.nanmin(et)) if np.isfinite(et).any() else np.nan,
            }
        )
    table = pd.DataFrame(rows)
    table["ok"] = ~((table["r_hat"] > RHAT_MAX) | (table["ess_bulk"] < ESS_MIN))
    flags = []
    bad_r = table[table["r_hat"] > RHAT_MAX]
    if len(bad_r):
        flags.append(
            f"R-hat up to {bad_r['r_hat'].max():.4f} > {RHAT_MAX} for {', '.join(bad_r['variable'])}: "
            "the chains disagree. Remedy: more tune= and draws=, or more chains; if it persists "
            "the model is weakly identified (sparse categories, a too-wide prior)."
        )
    bad_e = table[table["ess_bulk"] < ESS_MIN]
    if len(bad_e):
        flags.append(
            f"bulk ESS down to {bad_e['ess_bulk'].min():.0f} < {ESS_MIN} for {', '.join(bad_e['variable'])}: "
            "too few effective draws for stable means and intervals. Remedy: more draws= "
            "(ESS grows about linearly with draws) or more chains."
        )
    n_div = int(np.asarray(idata.sample_stats["diverging"]).sum())
    if n_div:
        n_total = int(np.asarray(idata.sample_stats["diverging"]).size)
        flags.append(
            f"{n_div} of {n_total} transitions diverged: the sampler missed part of the "
            "posterior and estimates may be biased. Remedy: target_accept=0.95 (or 0.99); if "
            "divergences remain, tighten the 'sd' prior or simplify the random effects."
        )
    return table, flags
