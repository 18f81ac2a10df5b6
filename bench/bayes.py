"""Benchmark: hce.stats.bayes_ordinal against plain ``pm.sample()`` on the same PyMC model.

Run: python bench/bayes.py [--cases exp5,exp2] [--no-warm]

Model: ``score ~ condition + (1 | item_id)`` with ``noise="condition"`` (random item
intercepts, condition-dependent latent noise), cumulative logit, on two simulated logs:

* exp5: Experiment-5 size, 577 items x 10 attempts (5,770 rows; the attempts split over
  two conditions, 5 each, so that the noise model has something to compare);
* exp2: Experiment-2 size, 50 items x 3 prompts x 25 attempts (3,750 rows).

hce runs with its defaults (``sampler="auto"``: nutpie when installed; 4 chains x 1000
draws after 1000 tuning steps). The peer is ``pm.sample()`` with PyMC's defaults (the
same 4 x 1000 + 1000, C backend) on the model hce builds, after its C code is compiled
once untimed. Both are timed from the start of sampling to the InferenceData; the "cold"
hce time includes nutpie's numba compilation, the "warm" one a second data set of the same
shape, which reuses the compiled model. MCMC runs are long, so each case runs once (no
best-of-N); on a shared machine the wall times carry the load of the other processes.

Prints per case: wall time, CPU time (load-independent: about twice the wall time on 2 idle
cores), minimum bulk ESS over all parameters (random effects
included), that ESS per second, convergence (R-hat <= 1.01, bulk ESS >= 400, no
divergences), and the line ``CASE: hce X s, PEER Y s, ratio Z`` where the ratio is
hce's minimum-ESS-per-second over PyMC's.

Profile of the exp5 cold fit with nutpie (issue 35; 114 s cold on an idle machine, goal
< 60 s; measured here in CPU seconds, the machine at load 8-18 on 2 cores): import of PyMC,
nutpie and ArviZ 3.3 s; numba compilation 60.8 s; sampling 4 x (1000 + 1000) 110.7 s; the
minimum bulk ESS 1,610 (sd(item_id)), four times the 400 needed. The likelihood had one
term per attempt (5,770 OrderedLogistic rows, each building all K category
probabilities). Rows of one item x condition cell share their probabilities, so the model
now sums ``n_ck log P_c(k)`` over 1,154 cells x 4 categories (the same log density: checked
to 1e-8 against the row-by-row NumPy likelihood in tests/stats/test_bayes.py, and the
fits' posterior means move only by MC error: the minimum ESS stayed 1,599-1,610):
compilation 36.7 s and sampling 73.1 s of CPU, in the same conditions.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time
import warnings

import arviz as az
import pymc as pm

from hce.stats.bayes import MCMCDiagnosticsWarning, bayes_ordinal
from hce.stats.bayes.fit import model_inputs
from hce.stats.bayes.models import build_model, resolve_priors
from hce.stats.bayes.sampling import diagnose
from hce.stats.bayes.simulate import simulate_ordinal

FORMULA = "score ~ condition + (1 | item_id)"
CASES = {
    # 577 items x 2 conditions x 5 attempts = 577 x 10 attempts
    "exp5": {"n_items": 577, "n_attempts": 5, "condition_effects": (0.0, 0.3), "log_noise": (0.0, -0.4), "sd_item": 2.5},
    # 50 items x 3 prompts x 25 attempts
    "exp2": {"n_items": 50, "n_attempts": 25, "condition_effects": (0.0, 0.5, 1.0), "log_noise": (0.0, 0.3, -0.3), "sd_item": 2.0},
}


def min_ess(idata) -> tuple[float, bool]:
    names = [v for v in idata.posterior.data_vars if not str(v).endswith("__")]
    table, flags = diagnose(idata, names, {})
    return float(table["ess_bulk"].min()), not flags


def cpu_seconds() -> float:
    """CPU time of this process's threads (nutpie) and of its finished children (PyMC's
    chain processes): on a shared machine, wall time on 2 idle cores is about cpu / 2."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_hce(data, seed) -> tuple[float, float, float, bool, str]:
    start, cpu = time.perf_counter(), cpu_seconds()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCMCDiagnosticsWarning)  # reported below instead
        fit = bayes_ordinal(FORMULA, data, noise="condition", random_state=seed)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    ess, _ = min_ess(fit.idata)
    return seconds, cpu, ess, fit.converged, fit.sampler


def run_pymc(fit_data, seed) -> tuple[float, float, float, bool]:
    # the exact model hce builds, sampled with PyMC's defaults
    inputs = model_inputs(FORMULA, fit_data, family="ordinal", noise="condition")
    model = build_model("ordinal", "logit", inputs.arrays, resolve_priors("ordinal", None))
    model.compile_logp()
    model.compile_dlogp()  # fills PyTensor's C cache before timing
    logging.getLogger("pymc").setLevel(logging.ERROR)
    start, cpu = time.perf_counter(), cpu_seconds()
    with model:
        idata = pm.sample(random_seed=seed, progressbar=False)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    ess, ok = min_ess(idata)
    return seconds, cpu, ess, ok


def main(cases: list[str], warm: bool) -> None:
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}; arviz {az.__version__}, pymc {pm.__version__}")
    for case in cases:
        spec = CASES[case]
        data = simulate_ordinal(random_state=1, **spec)
        t_hce, c_hce, ess_hce, ok_hce, sampler = run_hce(data, seed=1)
        report(f"{case} hce ({sampler}, cold)", t_hce, c_hce, ess_hce, ok_hce)
        if warm:
            t_w, c_w, ess_w, ok_w, _ = run_hce(simulate_ordinal(random_state=2, **spec), seed=2)
            report(f"{case} hce ({sampler}, warm)", t_w, c_w, ess_w, ok_w)
        t_pm, c_pm, ess_pm, ok_pm = run_pymc(data, seed=1)
        report(f"{case} pm.sample() defaults", t_pm, c_pm, ess_pm, ok_pm)
        ratio = (ess_hce / t_hce) / (ess_pm / t_pm)
        cpu_ratio = (ess_hce / c_hce) / (ess_pm / c_pm)
        print(f"{case.upper()} (min-ESS/s, cold): hce {t_hce:.1f} s, PYMC {t_pm:.1f} s, ratio {ratio:.2f} (per CPU-second: {cpu_ratio:.2f})")
        print(f"load average now: {os.getloadavg()[0]:.1f}")


def report(label, seconds, cpu, ess, converged) -> None:
    print(
        f"{label}: {seconds:.1f} s wall, {cpu:.1f} s CPU (~{cpu / 2:.0f} s on 2 idle cores), "
        f"min bulk ESS {ess:.0f}, {ess / seconds:.2f} ESS/s, converged {converged}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="exp5,exp2")
    parser.add_argument("--no-warm", action="store_true")
    args = parser.parse_args()
    main(args.cases.split(","), warm=not args.no_warm)
