"""Benchmark: hce.stats.bayes_ordinal against plain ``pm.sample()`` on the same PyMC model.

Run: python bench/bayes.py [--cases exp5,exp2]

Model: ``score ~ condition + (1 | item_id)`` with ``noise="condition"`` (random item
intercepts, condition-dependent latent noise), cumulative logit, on two simulated logs:

* exp5: Experiment-5 size, 577 items x 10 attempts (5,770 rows; the attempts split over
  two conditions, 5 each, so that the noise model has something to compare);
* exp2: Experiment-2 size, 50 items x 3 prompts x 25 attempts (3,750 rows).

hce runs with its defaults (nutpie, 4 chains x 1000 draws; see ``bayes_ordinal`` for the
tuning steps), each fit in a fresh Python process timed from its start (imports,
compilation, sampling and hce's convergence diagnostics): "cold" means a new process twice:
once with every on-disk compile cache empty (PyTensor's ``base_compiledir``, holding the C
cache and numba's per-Op cache, and ``NUMBA_CACHE_DIR``, where hce's own numba kernel is
cached), the first fit ever on a machine, and once reusing the caches that run filled, every
later fresh process. The peer is ``pm.sample()`` with PyMC's defaults (4 x 1000 + 1000
tuning, C backend) on the PyMC model hce builds (the model of record), after its C code is
compiled once untimed, timed from the start of sampling to the InferenceData. MCMC runs are
long, so each case runs once per invocation; on a shared machine the wall times carry the
load of the other processes: the CPU seconds (children's included) do much less.

Prints per run: wall time, CPU time, minimum bulk ESS over all parameters (random effects
included), that ESS per second, convergence (R-hat <= 1.01, bulk ESS >= 400, no
divergences), and the line ``CASE: hce X s, PYMC Y s, ratio Z`` (Y / X, hce's time from an
empty cache) with hce's minimum-ESS-per-second over PyMC's.

Issue 35 item 3, second session. Before: nutpie compiled the PyMC model's log density and
gradient with PyTensor's numba backend. Measured in fresh processes with empty caches
(timers around the steps, CPU seconds, load 2-7 on the 2 cores): imports 3.1-3.4 s,
``nutpie.compile_pymc_model`` 38.6-42.3 s, sampling 17.5 s, diagnostics 2.0-2.4 s. Numba's
compile events (``numba.core.event``) put the compile in about 400 separate numba
compilations for the graph's 104 Ops (logp + gradient) and 16 (stored variables): 31
Elemwise kernels 6.8 s, 26 Subtensor 2.9 s, SpecifyShape and its error-message formatting
(string Ops) 4.8 s, the fgraph functions themselves 9 s; numba's typing and lowering, not
LLVM's optimisation: ``NUMBA_OPT=1`` left the compile at 38.6 s CPU (42.2 s at the default 3)
and sampling 13% slower; ``NUMBA_OPT=0`` sampled so slowly it was stopped after 4 min CPU.
``freeze_model=True`` (data as constants) fails on the cutpoints' initval and would have
lost ``with_data`` reuse. A smaller graph would have removed a part of 400 compilations.

After: for logit models with random intercepts (the Experiment-5 model among them) nutpie
samples ``hce.stats.bayes.density``: the same log density and gradient written as one numba
loop over the cells (``cache=True``), through nutpie's ``from_pyfunc``.
``tests/stats/test_bayes_density.py`` checks it against PyMC's ``compile_logp()`` and
``compile_dlogp()`` at random points to 1e-10 (up to PyMC's float32 constants, 1e-7), and
the stored variables against PyMC's back-transforms. Its compile: 2.9-3.2 s CPU with an
empty cache, 0.3 s from numba's cache; 72-76 us per log density + gradient against 107 us
for PyTensor's numba graph (thread CPU time, best of 15 blocks of 200, under load 4-7).
Probit and random slopes still go through ``compile_pymc_model``.

Measured end to end (``python bench/bayes.py --cases exp5``, 2026-11-27 03:04-03:08 UTC,
load average 5.1-5.9 from other sessions, so the wall times are about twice an idle
machine's): empty caches 54.3 s wall, 28.5 s CPU (before: 268 s wall, 74.5 s CPU at load
6-7; 61.0-61.4 s wall, 70 s CPU on the idle machine), filled caches 46.8 s wall, 22.8 s CPU
(before: 29.4 s wall, 37.9 s CPU idle), both converged with minimum bulk ESS 1,535 and no
divergence; plain ``pm.sample()`` 66.9 s wall of sampling alone (34.6 s CPU), minimum bulk
ESS 343, not converged:
``EXP5: hce 54.3 s, PYMC 66.9 s, ratio 1.23 (min-ESS/s ratio 5.51, per CPU-second 5.42)``.
Again at load 3.7-4.5 (03:13-03:16 UTC): empty caches 28.5 s wall (30.4 s CPU), filled
caches 35.6 s wall (26.0 s CPU; the load, not the cache), PyMC 70.5 s wall (43.4 s CPU),
``EXP5: hce 28.5 s, PYMC 70.5 s, ratio 2.47 (min-ESS/s ratio 11.04, per CPU-second 6.40)``.
Best run, at load 2.4-2.5 (03:40-03:41 UTC, after the kernel took numpy's division rules):
empty caches 23.0 s wall (25.6 s CPU; imports 1.5 s, kernel compile and sampling 18.3 s),
filled caches 20.8 s wall (22.2 s CPU), PyMC 25.1 s wall (24.8 s CPU), minimum bulk ESS 1,535
against 343: ``EXP5: hce 23.0 s, PYMC 25.1 s, ratio 1.09 (min-ESS/s ratio 4.87, per
CPU-second 4.32)``. Goal (< 60 s cold from empty caches, >= 2x PyMC's minimum ESS per
second): met in all three runs, at load 2.4 to 6.
On 2 idle cores the 28.5 s of CPU is about 2.8 s imports + 1.5 s data and design + 3 s
numba + 16 s sampling in two threads (8-9 s wall) + 2 s diagnostics: about 18-20 s wall
from empty caches. Confirmed on the idle machine after the merge (2026-11-27 04:00 UTC, load
1.0-1.2, ``python bench/waits.py``): empty caches 15.9 s wall (24.0 s CPU), filled 13.3 s
(21.0 s), PyMC 23.4 s, ``EXP5: hce 15.9 s, PYMC 23.4 s, ratio 1.47 (min-ESS/s ratio 6.57, per
CPU-second 4.37)``.

Earlier measurements that set the defaults: nutpie's tuning steps (it adapts a low-rank mass
matrix) cost about 4.5 kept draws each; its own 300 tuning steps against 1000 gave minimum
bulk ESS 1,605 against 1,423, no divergences, in 43% of the sampling time. The likelihood
collected by cutpoint (one softplus per cell and cutpoint,
``hce.stats.bayes.models._logit_boundary_terms``) took 2.4x less time per gradient than one
term per cell and category. Not measured: a centred parametrisation (the model's docstring
records one probe: about the same minimum ESS per second), and fewer chains than 4 (R-hat
needs several chains; nutpie runs 4 chains in 2 threads at no extra cost per draw).

nutpie in the default install: ``pip download "nutpie>=0.13,<1" --only-binary=:all:
--python-version 3.11 --platform P`` resolved nutpie 0.16.8 and every dependency as wheels
for manylinux_2_17 x86_64, manylinux aarch64 (arro3-core and obstore need glibc 2.24,
pyarrow 2.28 as hce's own pyarrow pin already does), macOS 11 arm64, macOS 10.12 x86_64 and
win_amd64; its new dependencies besides pyarrow, pandas, xarray and ArviZ (already
installed) are arro3-core, obstore and zarr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

FORMULA = "score ~ condition + (1 | item_id)"
CASES = {
    # 577 items x 2 conditions x 5 attempts = 577 x 10 attempts
    "exp5": {"n_items": 577, "n_attempts": 5, "condition_effects": (0.0, 0.3), "log_noise": (0.0, -0.4), "sd_item": 2.5},
    # 50 items x 3 prompts x 25 attempts
    "exp2": {"n_items": 50, "n_attempts": 25, "condition_effects": (0.0, 0.5, 1.0), "log_noise": (0.0, 0.3, -0.3), "sd_item": 2.0},
}


def min_ess(idata) -> tuple[float, bool]:
    from hce.stats.bayes.sampling import diagnose

    names = [v for v in idata.posterior.data_vars if not str(v).endswith("__")]
    table, flags = diagnose(idata, names, {})
    return float(table["ess_bulk"].min()), not flags


def cpu_seconds() -> float:
    """CPU time of this process's threads (nutpie) and of its finished children (PyMC's
    chain processes, the fresh processes of the cold fits): on a shared machine, wall time
    on 2 idle cores is about cpu / 2 for the sampling and cpu for the compilation."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def child(case: str, seed: int) -> None:
    """One hce fit in this (fresh) process, imports included; prints a JSON line."""
    start = time.perf_counter()
    from hce.stats.bayes import MCMCDiagnosticsWarning, bayes_ordinal
    from hce.stats.bayes.simulate import simulate_ordinal

    imported = time.perf_counter()
    data = simulate_ordinal(random_state=seed, **CASES[case])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCMCDiagnosticsWarning)  # reported below instead
        fit = bayes_ordinal(FORMULA, data, noise="condition", random_state=seed)
        converged = fit.converged  # the diagnostics hce computes on every fit
    seconds = time.perf_counter() - start
    ess = float(fit.diagnostics()["ess_bulk"].min())  # computed by fit.converged above: no second pass
    print(json.dumps({"seconds": seconds, "import": imported - start, "sampler_seconds": fit.seconds,
                      "ess": ess, "converged": converged, "sampler": fit.sampler,
                      "divergences": fit.divergences}))


def run_hce_fresh(case: str, seed: int, base_compiledir: str) -> dict:
    """``child`` in a new Python process with PyTensor's caches (C and numba) under
    ``base_compiledir``: empty for a truly cold start, reused for a second fresh process."""
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={base_compiledir}", NUMBA_CACHE_DIR=base_compiledir)
    cpu = cpu_seconds()
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", case, "--seed", str(seed)],
                         env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall"], result["cpu"] = time.perf_counter() - start, cpu_seconds() - cpu
    return result


def run_pymc(case: str, seed: int) -> tuple[float, float, float, bool]:
    """Plain ``pm.sample()`` (PyMC's defaults) on the model hce builds, its C code compiled
    once untimed; timed from the start of sampling to the InferenceData."""
    import pymc as pm

    from hce.stats.bayes.fit import model_inputs
    from hce.stats.bayes.models import build_model, resolve_priors
    from hce.stats.bayes.simulate import simulate_ordinal

    data = simulate_ordinal(random_state=seed, **CASES[case])
    inputs = model_inputs(FORMULA, data, family="ordinal", noise="condition")
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


def main(cases: list[str]) -> None:
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="hce-bench-pytensor-") as cache:
            empty = run_hce_fresh(case, 1, cache)
            report(f"{case} hce ({empty['sampler']}, fresh process, empty PyTensor cache)", empty)
            again = run_hce_fresh(case, 1, cache)
            report(f"{case} hce ({again['sampler']}, fresh process, PyTensor cache of the run above)", again)
        t_pm, c_pm, ess_pm, ok_pm = run_pymc(case, seed=1)
        report(f"{case} pm.sample() defaults, sampling only", {"wall": t_pm, "cpu": c_pm, "ess": ess_pm, "converged": ok_pm})
        ratio = (empty["ess"] / empty["wall"]) / (ess_pm / t_pm)
        cpu_ratio = (empty["ess"] / empty["cpu"]) / (ess_pm / c_pm)
        print(f"{case.upper()}: hce {empty['wall']:.1f} s, PYMC {t_pm:.1f} s, ratio {t_pm / empty['wall']:.2f} "
              f"(min-ESS/s ratio {ratio:.2f}, per CPU-second {cpu_ratio:.2f}; hce cold and converged: "
              f"{empty['converged']}, PyMC converged: {ok_pm})")
        print(f"load average now: {os.getloadavg()[0]:.1f}")


def report(label: str, r: dict) -> None:
    stages = f" (imports {r['import']:.1f} s, compile + sampling {r['sampler_seconds']:.1f} s)" if "import" in r else ""
    print(f"{label}: {r['wall']:.1f} s wall{stages}, {r['cpu']:.1f} s CPU, min bulk ESS {r['ess']:.0f}, "
          f"{r['ess'] / r['wall']:.2f} ESS/s, converged {r['converged']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="exp5,exp2")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed)
    else:
        main(args.cases.split(","))
