"""BayesResult: posterior summaries, diagnostics, predictive checks, LOO, noise by condition
and per-item uncertainty of a fitted :func:`bayes_ordinal` or :func:`bayes_binary` model."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hce._checks import check_confidence, require_columns
from hce.errors import DataError
from hce.stats._resample import as_generator, percentile_interval
from hce.stats.bayes import _core, sampling
from hce.stats.bayes.models import ModelArrays
from hce.stats.mixed.formula import Design

if TYPE_CHECKING:  # ArviZ (and its xarray) load only in the methods that call them
    import arviz as az

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_CHUNK = 250  # posterior draws per block when a (draws x rows x categories) array is built


@dataclass(frozen=True)
class NoiseDesign:
    """Location-scale part: ``log(noise SD) = S @ gamma``, one row of S per attempt."""

    formula: str
    columns: list[str]
    S: np.ndarray
    names: list[str]


@dataclass
class BayesResult:
    """A fitted Bayesian judge-score model; build with :func:`bayes_ordinal` or
    :func:`bayes_binary`.

    Attributes
    ----------
    family : {"ordinal", "bernoulli"}
    link : {"logit", "probit"}
    idata : arviz.InferenceData
        Posterior draws and sampler statistics (``log_likelihood`` is added by
        :meth:`~hce.stats.BayesResult.loo`).
    sampler : str
        ``"nutpie"`` or ``"pymc"``.
    seconds : float
        Wall time of compilation and sampling.
    design : Design
        The fixed- and random-effect design of the formula (``design.data``: rows used).
    values, labels : ndarray, list
        The scores as category indices and the category each index stands for.
    noise_design : NoiseDesign or None
        The design of the noise formula (``noise=``), None without one.
    arrays : ModelArrays
        The arrays the PyMC model was built from.
    priors : dict
        The priors used, by name.
    settings : SamplerSettings
        Chains, draws, tuning steps and target acceptance.
    groups, x_names : list of str
        Grouping factors of the random effects and names of the fixed-effect columns.

    Examples
    --------
    Sampling takes a minute (compilation included):

    >>> from hce.stats import bayes_ordinal, simulated_log
    >>> log = simulated_log(n_items=20, n_attempts=5, noise={"A": 0.3, "B": 0.8})
    >>> fit = bayes_ordinal("clarity_of_language ~ condition_id + (1 | item_id)", log,
    ...                     noise="condition_id", random_state=1)  # doctest: +SKIP
    >>> fit.converged  # doctest: +SKIP
    True
    >>> fit.noise_pairs()[["a", "b", "prob_more_consistent"]]  # doctest: +SKIP
    """

    family: str
    link: str
    design: Design = field(repr=False)
    values: np.ndarray = field(repr=False)
    labels: list = field(repr=False)
    noise_design: NoiseDesign | None = field(repr=False)
    arrays: ModelArrays = field(repr=False)
    priors: dict = field(repr=False)
    sampler: str = field(repr=False)
    settings: sampling.SamplerSettings = field(repr=False)
    idata: az.InferenceData = field(repr=False)
    groups: list[str] = field(repr=False)
    x_names: list[str] = field(repr=False)
    seconds: float = field(repr=False)

    # ---- header and diagnostics ------------------------------------------------------
    @property
    def n(self) -> int:
        """Observations used."""
        return len(self.arrays.y)

    @property
    def title(self) -> str:
        """The model in one line: formula, noise formula and family."""
        noise = f", noise ~ {self.noise_design.formula}" if self.noise_design else ""
        family = "cumulative " + self.link if self.family == "ordinal" else f"Bernoulli ({self.link})"
        return f"{self.design.formula.formula}{noise} [{family}]"

    @cached_property
    def _diagnostics(self) -> tuple[pd.DataFrame, list[str]]:
        # nutpie also stores the unconstrained twins (``sd_0_log__``); check the model's own.
        # Correlations are functions of the checked ``chol_k`` (and their diagonal, 1 in
        # every draw, has no R-hat); summary() checks each off-diagonal one.
        names = [v for v in self.idata.posterior.data_vars if not str(v).endswith(("__", "_corr"))]
        return sampling.diagnose(self.idata, names, self._var_labels())

    def _var_labels(self) -> dict[str, str]:
        labels = {"b": "fixed effects", "log_noise": "log noise", "obs": "obs"}
        for k, g in enumerate(self.groups):
            labels[f"sd_{k}"] = f"sd({g})"
            labels[f"z_{k}"] = f"effects({g})"
            labels[f"chol_{k}"] = f"cholesky({g})"
            labels[f"chol_{k}_stds"] = f"sd({g})"
        return labels

    def diagnostics(self) -> pd.DataFrame:
        """Convergence per model variable.

        Returns
        -------
        pandas.DataFrame
            ``variable``, ``size`` (number of scalars), ``r_hat`` (largest), ``ess_bulk``,
            ``ess_tail`` (smallest), ``ok`` (R-hat <= 1.01 and bulk ESS >= 400).
        """
        return self._diagnostics[0].copy()

    @property
    def flags(self) -> list[str]:
        """Failed checks (R-hat > 1.01, bulk ESS < 400, divergences), each with a remedy."""
        return list(self._diagnostics[1])

    @property
    def converged(self) -> bool:
        """R-hat <= 1.01 and bulk ESS >= 400 for every parameter, and no divergence."""
        return not self._diagnostics[1]

    @property
    def divergences(self) -> int:
        """Divergent transitions over all chains."""
        return int(np.asarray(self.idata.sample_stats["diverging"]).sum())

    def __repr__(self) -> str:
        s = self.settings
        lines = [
            f"Bayesian {self.title}",
            f"n = {self.n}, groups: "
            + (", ".join(f"{g} ({n})" for g, n in zip(self.groups, self.arrays.n_levels)) or "none"),
            f"{self.sampler} NUTS: {s.chains} chains x {s.draws} draws ({s.tune} tune), "
            f"{self.divergences} divergences, {self.seconds:.1f} s",
            "converged: R-hat <= 1.01, bulk ESS >= 400, no divergences" if self.converged else "NOT CONVERGED:",
        ]
        lines += [f"  ! {m}" for m in self.flags]
        return "\n".join(lines) + "\n" + self.summary().round(3).to_string(index=False)

    # ---- posterior draws -------------------------------------------------------------
    @property
    def _n_draws(self) -> int:
        return self.settings.chains * self.settings.draws

    def _draws(self, name: str, part: slice = slice(None)) -> np.ndarray:
        """Draws of a variable with chains and draws stacked, (S,) or (S, m); ``part``
        selects a block of them."""
        a = np.asarray(self.idata.posterior[name])
        return a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:])[part]

    def _chains(self, draws: np.ndarray) -> np.ndarray:
        """(S, ...) -> (chains, draws, ...) for ArviZ diagnostics."""
        return draws.reshape((self.settings.chains, -1) + draws.shape[1:])

    def _effects(self, k: int, part: slice = slice(None)) -> np.ndarray:
        """Random effects of term k, (S, effects, levels): ``sd z`` or ``chol z``."""
        z = self._draws(f"z_{k}", part)
        if f"chol_{k}" not in self.idata.posterior:
            return (self._draws(f"sd_{k}", part)[:, None] * z)[:, None, :]
        packed = self._draws(f"chol_{k}", part)
        p = z.shape[1]
        chol = np.zeros((len(packed), p, p))
        low_rows, low_cols = np.tril_indices(p)
        chol[:, low_rows, low_cols] = packed  # PyMC packs the lower triangle row by row
        return chol @ z

    def _eta(self, rows: np.ndarray, part: slice = slice(None)) -> np.ndarray:
        """Linear predictor (S, len(rows)): fixed part, random effects, Bernoulli intercept."""
        a = self.arrays
        eta = np.zeros((len(range(self._n_draws)[part]), len(rows)))
        if a.X.shape[1]:
            eta += self._draws("b", part) @ a.X[rows].T
        for k in range(len(a.n_levels)):
            u = self._effects(k, part)[:, :, a.codes[k][rows]]  # (S, effects, rows)
            z = a.Z[k] if a.Z else None
            eta += u[:, 0] if z is None else np.einsum("sjr,rj->sr", u, z[rows])
        if self.family == "bernoulli":
            eta += self._draws("intercept", part)[:, None]
        return eta

    def _scale(self, rows: np.ndarray, part: slice = slice(None)) -> np.ndarray | float:
        """Noise scale ``s`` (S, len(rows)), or 1.0 without a noise model."""
        if self.noise_design is None:
            return 1.0
        return np.exp(self._draws("log_noise", part) @ self.noise_design.S[rows].T)

    def _probs(self, rows: np.ndarray, part: slice = slice(None)) -> np.ndarray:
        """Category probabilities (S, len(rows), K)."""
        eta = self._eta(rows, part)
        if self.family == "bernoulli":
            p = _core.cdf(eta, self.link)
            return np.stack([1.0 - p, p], axis=-1)
        return _core.category_probs(self._draws("cutpoints", part), eta, self._scale(rows, part), self.link)

    def _parts(self):
        """Blocks of posterior draws small enough for (draws x rows x categories) arrays."""
        return [slice(i, i + _CHUNK) for i in range(0, self._n_draws, _CHUNK)]

    # ---- summary ---------------------------------------------------------------------
    def _parameters(self) -> dict[str, np.ndarray]:
        """Population-level parameters by display name, as (S,) draws."""
        out = {}
        if self.family == "bernoulli":
            out["(Intercept)"] = self._draws("intercept")
        else:
            cut = self._draws("cutpoints")
            for k in range(cut.shape[1]):
                out[f"cutpoint[{self.labels[k]}|{self.labels[k + 1]}]"] = cut[:, k]
        if self.x_names:
            b = self._draws("b")
            out.update({name: b[:, k] for k, name in enumerate(self.x_names)})
        for k, g in enumerate(self.groups):
            out.update(self._random_parameters(k, g))
        if self.noise_design is not None:
            gamma = self._draws("log_noise")
            out.update({f"log_noise:{n}": gamma[:, k] for k, n in enumerate(self.noise_design.names)})
        return out

    def _random_parameters(self, k: int, group: str) -> dict[str, np.ndarray]:
        """SDs (and correlations) of term k: ``sd(g)`` for a random intercept, lme4 VarCorr
        names (``sd_(Intercept)|g``, ``sd_x|g``, ``cor_(Intercept).x|g``) for a term with slopes."""
        if not self.arrays.Z or self.arrays.Z[k] is None:
            return {f"sd({group})": self._draws(f"sd_{k}")}
        names = self.design.groupings[group].z_names
        if len(names) == 1:
            return {f"sd_{names[0]}|{group}": self._draws(f"sd_{k}")}
        sds, corr = self._draws(f"chol_{k}_stds"), self._draws(f"chol_{k}_corr")
        out = {f"sd_{name}|{group}": sds[:, j] for j, name in enumerate(names)}
        for i, j in combinations(range(len(names)), 2):
            out[f"cor_{names[i]}.{names[j]}|{group}"] = corr[:, i, j]
        return out

    def summary(self, confidence: float = 0.95) -> pd.DataFrame:
        """Posterior summary of the population-level parameters.

        Parameters
        ----------
        confidence : float, default 0.95
            Probability mass of the highest-density interval.

        Returns
        -------
        pandas.DataFrame
            One row per parameter (cutpoints ``cutpoint[1|2]`` ... or ``(Intercept)``, fixed
            effects by patsy name, ``sd(group)`` per random intercept; for a term with
            slopes ``(1 + x | g)`` lme4's VarCorr names ``sd_(Intercept)|g``,
            ``sd_x[T.b]|g`` and ``cor_(Intercept).x[T.b]|g``; ``log_noise:<column>`` per
            noise coefficient): ``term``, ``estimate`` (posterior mean), ``sd``
            (posterior SD), ``ci_low``, ``ci_high`` (HDI), ``r_hat``, ``ess_bulk``,
            ``ess_tail``, ``ok`` (R-hat <= 1.01 and bulk ESS >= 400). The random effects
            themselves are checked too: see :meth:`diagnostics` and ``flags``.
        """
        import arviz as az

        check_confidence(confidence)
        rows = []
        for name, draws in self._parameters().items():
            low, high = _core.hdi(draws[:, None], confidence)
            chained = self._chains(draws)
            rows.append(
                {
                    "term": name,
                    "estimate": float(draws.mean()),
                    "sd": float(draws.std(ddof=1)),
                    "ci_low": float(low[0]),
                    "ci_high": float(high[0]),
                    "r_hat": float(az.rhat(chained)),
                    "ess_bulk": float(az.ess(chained, method="bulk")),
                    "ess_tail": float(az.ess(chained, method="tail")),
                }
            )
        out = pd.DataFrame(rows)
        out["ok"] = ~((out["r_hat"] > sampling.RHAT_MAX) | (out["ess_bulk"] < sampling.ESS_MIN))
        return out

    # ---- posterior predictive check --------------------------------------------------
    def ppc(self, by: str | None = None, confidence: float = 0.95, random_state=None) -> pd.DataFrame:
        """Observed against replicated score frequencies (posterior predictive check).

        Parameters
        ----------
        by : str, optional
            A column of the data: one block of rows per level.
        confidence : float, default 0.95
            Mass of the equal-tailed interval of the replicated counts.
        random_state : int or Generator, optional
            Seed of the replications (default: derived from the fit's seed).

        Returns
        -------
        pandas.DataFrame
            One row per score (and level of ``by``): [``by``], ``score``, ``observed``
            (count), ``estimate`` (mean replicated count), ``ci_low``, ``ci_high``
            (replicated count interval), ``p_value`` (two-sided posterior predictive p,
            ``min(1, 2 min(P(rep <= obs), P(rep >= obs)))``; near 0: the model misses
            this score's frequency).
        """
        check_confidence(confidence)
        rng = as_generator(self.settings.seed + 1 if random_state is None else random_state)
        blocks = self._blocks(by)
        K = len(self.values)
        reps = {level: [] for level in blocks}
        for part in self._parts():
            for level, rows in blocks.items():
                draws = _sample_categories(self._probs(rows, part), rng)
                reps[level].append(np.stack([(draws == k).sum(axis=1) for k in range(K)], axis=1))
        out = []
        for level, rows in blocks.items():
            rep = np.concatenate(reps[level])  # (S, K)
            observed = np.bincount(self.arrays.y[rows], minlength=K)
            low, high = percentile_interval(rep, confidence)
            p = np.minimum(1.0, 2 * np.minimum((rep <= observed).mean(0), (rep >= observed).mean(0)))
            frame = pd.DataFrame(
                {"score": self.labels, "observed": observed, "estimate": rep.mean(0), "ci_low": low, "ci_high": high, "p_value": p}
            )
            if by is not None:
                frame.insert(0, by, level)
            out.append(frame)
        return pd.concat(out, ignore_index=True)

    def plot_ppc(self, by: str | None = None, confidence: float = 0.95, ax=None, random_state=None):
        """Bar chart of observed score counts with the replicated means and intervals.

        Parameters
        ----------
        by, confidence
            As in :meth:`ppc`.
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure).
        random_state
            As in :meth:`ppc`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure  # outside pyplot, which keeps every figure until closed

        table = self.ppc(by=by, confidence=confidence, random_state=random_state)
        levels = [None] if by is None else list(dict.fromkeys(table[by]))
        if ax is None:
            fig = Figure(figsize=(3.2 * len(levels) + 1, 3))
            FigureCanvasAgg(fig)
            axes = fig.subplots(1, len(levels), squeeze=False, sharey=True)
            axes = axes[0]
        else:
            fig, axes = ax.figure, [ax]
        for a, level in zip(axes, levels):
            t = table if level is None else table[table[by] == level]
            x = np.arange(len(t))
            a.bar(x, t["observed"], color="0.8", label="observed")
            a.errorbar(
                x, t["estimate"], yerr=[t["estimate"] - t["ci_low"], t["ci_high"] - t["estimate"]],
                fmt="o", color="C0", label=f"replicated ({confidence:.0%})",
            )
            a.set_xticks(x, [str(s) for s in t["score"]])
            a.set_xlabel("score")
            a.set_title("" if level is None else f"{by} = {level}")
        axes[0].set_ylabel("count")
        axes[0].legend(frameon=False)
        fig.tight_layout()
        return fig

    def _blocks(self, by: str | None) -> dict:
        rows = np.arange(self.n)
        if by is None:
            return {"all": rows}
        require_columns(self.design.data, [by])
        column = self.design.data[by].to_numpy()
        return {level: rows[column == level] for level in pd.unique(column)}

    # ---- LOO -------------------------------------------------------------------------
    def _with_log_likelihood(self) -> az.InferenceData:
        import xarray as xr

        if "log_likelihood" not in self.idata.groups():
            rows, y = np.arange(self.n), self.arrays.y
            blocks = []
            for part in self._parts():
                eta = self._eta(rows, part)
                if self.family == "bernoulli":
                    blocks.append(_core.bernoulli_loglik(eta, y, self.link))
                else:
                    cut = self._draws("cutpoints", part)
                    blocks.append(_core.ordinal_loglik(cut, eta, self._scale(rows, part), y, self.link))
            ll = self._chains(np.concatenate(blocks))
            self.idata.add_groups(
                log_likelihood=xr.Dataset({"obs": (("chain", "draw", "obs_id"), ll)},
                                          coords={"chain": self.idata.posterior.chain, "draw": self.idata.posterior.draw})
            )
        return self.idata

    def loo(self) -> pd.DataFrame:
        """PSIS-LOO expected log predictive density (Vehtari, Gelman & Gabry 2017).

        Returns
        -------
        pandas.DataFrame
            One row: ``elpd_loo``, ``se``, ``p_loo`` (effective number of parameters),
            ``n``, ``n_bad_k`` (observations with Pareto k > 0.7, where LOO is unreliable).
        """
        import arviz as az

        res = az.loo(self._with_log_likelihood(), pointwise=True)
        return pd.DataFrame(
            [{"elpd_loo": float(res["elpd_loo"]), "se": float(res["se"]), "p_loo": float(res["p_loo"]),
              "n": self.n, "n_bad_k": int((np.asarray(res["pareto_k"]) > 0.7).sum())}]
        )

    def compare(self, other: BayesResult, *others: BayesResult) -> pd.DataFrame:
        """Rank models of the same rows by PSIS-LOO (``arviz.compare``).

        Parameters
        ----------
        other, *others : BayesResult
            The models compared with this one.

        Returns
        -------
        pandas.DataFrame
            One row per model, best first: ``model`` (title), ``rank``, ``elpd_loo``, ``se``,
            ``elpd_diff`` (difference to the best), ``dse`` (its standard error), ``p_loo``,
            ``weight`` (stacking weight), ``warning`` (True when Pareto k is high for some
            observation).
        """
        models = [self, other, *others]
        for m in models[1:]:
            if m.n != self.n or not m.design.data.index.equals(self.design.data.index):
                raise DataError(f"compare needs models fitted to the same rows ({self.n} vs {m.n})")
        names = [m.title for m in models]
        if len(set(names)) < len(names):
            names = [f"{k + 1}: {t}" for k, t in enumerate(names)]
        import arviz as az

        table = az.compare({name: m._with_log_likelihood() for name, m in zip(names, models)}, ic="loo")
        table = table.reset_index(names="model")
        return table[["model", "rank", "elpd_loo", "se", "elpd_diff", "dse", "p_loo", "weight", "warning"]]

    # ---- condition-level quantities --------------------------------------------------
    def _cells(self, columns: list[str] | None = None) -> tuple[pd.DataFrame, np.ndarray]:
        """Distinct covariate combinations (one per item x condition) and a row of each."""
        used = self._covariates() if columns is None else columns
        frame = self.design.data[used].reset_index(drop=True)
        first = ~frame.duplicated()
        return frame[first].reset_index(drop=True), np.flatnonzero(first.to_numpy())

    def _covariates(self) -> list[str]:
        """Data columns the model reads, response excluded."""
        text = self.design.formula.formula + (" " + self.noise_design.formula if self.noise_design else "")
        tokens = set(_IDENTIFIER.findall(text))
        response = self.design.formula.response
        return [c for c in self.design.data.columns if c in tokens and c != response]

    def _moments(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance (S, len(rows)) of one attempt's score given each draw."""
        probs = self._probs(rows)
        mean = probs @ self.values
        return mean, np.maximum(probs @ self.values**2 - mean**2, 0.0)

    def expected(self, by: str, confidence: float = 0.95) -> pd.DataFrame:
        """Expected score (ordinal) or pass rate (Bernoulli) per level of ``by``, averaged
        over that level's observed items and conditions.

        Parameters
        ----------
        by : str
            A column of the data.
        confidence : float, default 0.95
            Mass of the highest-density intervals of the levels' expected scores.

        Returns
        -------
        pandas.DataFrame
            ``by``, ``estimate`` (posterior mean), ``ci_low``, ``ci_high`` (HDI), ``n_cells``
            (distinct item x condition combinations averaged).
        """
        check_confidence(confidence)
        draws, sizes = self._by_level(by)
        rows = []
        for level, d in draws.items():
            low, high = _core.hdi(d[:, None], confidence)
            rows.append({by: level, "estimate": d.mean(), "ci_low": low[0], "ci_high": high[0], "n_cells": sizes[level]})
        return pd.DataFrame(rows)

    def expected_pairs(self, by: str, confidence: float = 0.95) -> pd.DataFrame:
        """Pairwise differences of :meth:`expected` between levels of ``by``.

        Parameters
        ----------
        by : str
            A column of the data.
        confidence : float, default 0.95
            Mass of the highest-density intervals of the differences.

        Returns
        -------
        pandas.DataFrame
            ``a``, ``b``, ``estimate`` (posterior mean of a - b), ``ci_low``, ``ci_high``
            (HDI), ``prob_greater`` (posterior probability that a > b).
        """
        check_confidence(confidence)
        draws, _ = self._by_level(by)
        return _pairs(draws, confidence, lambda x, y: x - y, "prob_greater", lambda x, y: x > y)

    def _by_level(self, by: str) -> tuple[dict, dict]:
        require_columns(self.design.data, [by])
        cells, rows = self._cells()
        mean, _ = self._moments(rows)
        out, sizes = {}, {}
        for level in pd.unique(cells[by]) if by in cells else []:
            mask = (cells[by] == level).to_numpy()
            out[level], sizes[level] = mean[:, mask].mean(axis=1), int(mask.sum())
        if not out:
            raise DataError(f"by={by!r} is not a column the model uses; choose one of {list(cells.columns)}")
        return out, sizes

    # ---- noise by condition (location-scale) -----------------------------------------
    def _noise_draws(self) -> tuple[pd.DataFrame, np.ndarray, dict]:
        """Conditions, latent noise SD draws (S, conditions) and score-SD draws by condition."""
        nd = self.noise_design
        if nd is None:
            raise DataError("this model has no noise model; fit bayes_ordinal(..., noise='condition')")
        conditions, first = self._cells(nd.columns)
        latent = _core.LATENT_SD[self.link] * np.exp(self._draws("log_noise") @ nd.S[first].T)
        cells, rows = self._cells()
        _, var = self._moments(rows)
        sd = np.sqrt(var)
        score_sd = {}
        keys = cells[nd.columns].astype(str).agg(":".join, axis=1).to_numpy()
        for label in conditions.astype(str).agg(":".join, axis=1):
            score_sd[label] = sd[:, keys == label].mean(axis=1)
        return conditions, latent, score_sd

    def noise(self, confidence: float = 0.95) -> pd.DataFrame:
        """Posterior of each condition's judge noise.

        Parameters
        ----------
        confidence : float, default 0.95
            Mass of the highest-density intervals of each condition's two noise SDs.

        Returns
        -------
        pandas.DataFrame
            Per condition (the noise columns) and ``quantity``: ``latent_sd`` (SD of the
            latent noise; the reference condition's is fixed at pi/sqrt(3) for logit and 1
            for probit, and the others are relative to it) and ``score_sd`` (expected SD of
            repeated scores on the rating scale, averaged over the condition's items):
            ``estimate`` (posterior mean), ``ci_low``, ``ci_high`` (HDI).
        """
        check_confidence(confidence)
        conditions, latent, score_sd = self._noise_draws()
        rows = []
        for k, (label, cond) in enumerate(zip(score_sd, conditions.itertuples(index=False))):
            for quantity, d in (("latent_sd", latent[:, k]), ("score_sd", score_sd[label])):
                low, high = _core.hdi(d[:, None], confidence)
                rows.append({**dict(zip(conditions.columns, cond)), "quantity": quantity, "estimate": d.mean(), "ci_low": low[0], "ci_high": high[0]})
        return pd.DataFrame(rows)

    def noise_pairs(self, confidence: float = 0.95) -> pd.DataFrame:
        """Which condition is the more consistent judge: pairwise noise ratios.

        Parameters
        ----------
        confidence : float, default 0.95
            Mass of the highest-density intervals of the SD ratios.

        Returns
        -------
        pandas.DataFrame
            ``a``, ``b`` (conditions), ``estimate`` (posterior mean of the latent noise SD
            ratio a / b), ``ci_low``, ``ci_high`` (HDI), ``prob_more_consistent`` (posterior
            probability that a's noise SD is smaller than b's).
        """
        check_confidence(confidence)
        conditions, latent, score_sd = self._noise_draws()
        draws = {label: latent[:, k] for k, label in enumerate(score_sd)}
        return _pairs(draws, confidence, lambda x, y: x / y, "prob_more_consistent", lambda x, y: x < y)

    # ---- per-item uncertainty --------------------------------------------------------
    def _item_draws(self, item: str | None, sum_over: str | None):
        """Per item (or item x other condition): draws of expected score, within-item
        variance, one future attempt's score, and latent location (None with sum_over)."""
        item = item or (self.groups[0] if self.groups else None)
        if item is None or item not in self.design.data:
            raise DataError(f"item={item!r} must be a column of the data; the model's columns: {self._covariates()}")
        cells, rows = self._cells()
        keys = [c for c in cells.columns if c != sum_over]
        if sum_over is not None and sum_over not in cells:
            raise DataError(f"sum_over={sum_over!r} is not a column the model uses; choose one of {list(cells.columns)}")
        keys = [item] + [c for c in keys if c != item and not self._nested_in(c, item)]
        probs = self._probs(rows)
        mean = probs @ self.values
        var = np.maximum(probs @ self.values**2 - mean**2, 0.0)
        rng = as_generator(self.settings.seed + 2)
        future = self.values[_sample_categories(probs, rng)]
        groups = cells.groupby(keys, sort=False, observed=True).indices
        index = pd.DataFrame(list(groups), columns=keys) if len(keys) > 1 else pd.DataFrame({item: list(groups)})
        cols = list(groups.values())
        total = lambda a: np.stack([a[:, c].sum(axis=1) for c in cols], axis=1)  # noqa: E731
        latent = None if sum_over is not None else self._eta(rows[[c[0] for c in cols]])
        return index, total(mean), total(var), total(future), latent

    def _nested_in(self, column: str, item: str) -> bool:
        """True when ``column`` takes one value per item (item metadata, not a condition)."""
        data = self.design.data
        return bool((data.groupby(item, observed=True)[column].nunique() <= 1).all())

    def items(self, item: str | None = None, sum_over: str | None = None, confidence: float = 0.95) -> pd.DataFrame:
        """Posterior uncertainty of each item's score.

        Parameters
        ----------
        item : str, optional
            Item column (default: the first grouping factor of the formula).
        sum_over : str, optional
            Column whose levels are added up into a total, e.g. ``"criterion"`` for a
            5-criterion rubric scored 1-4, giving the 5-20 total of each item.
        confidence : float, default 0.95

        Returns
        -------
        pandas.DataFrame
            One row per item (x condition, when the model has conditions that vary within
            item) and ``quantity``: ``latent`` (latent location ``eta``; not with
            ``sum_over``), ``expected`` (expected score or total of one attempt),
            ``next_attempt`` (predictive distribution of the score or total of one new
            attempt), ``attempt_sd`` (SD of repeated attempts' scores or totals); each with
            ``estimate`` (posterior or predictive mean), ``ci_low``, ``ci_high`` (HDI;
            equal-tailed for ``next_attempt``, whose values are discrete).
        """
        check_confidence(confidence)
        index, mean, var, future, latent = self._item_draws(item, sum_over)
        parts = [("expected", mean, _core.hdi), ("next_attempt", future, percentile_interval), ("attempt_sd", np.sqrt(var), _core.hdi)]
        if latent is not None:
            parts.insert(0, ("latent", latent, _core.hdi))
        frames = []
        for quantity, d, method in parts:
            low, high = method(d, confidence)
            frames.append(index.assign(quantity=quantity, estimate=d.mean(axis=0), ci_low=low, ci_high=high))
        return pd.concat(frames, ignore_index=True).sort_values(list(index.columns), kind="stable", ignore_index=True)

    def score_distribution(self, item: str | None = None, sum_over: str | None = None) -> pd.DataFrame:
        """Posterior predictive distribution of the score (or total) of one new attempt.

        Parameters
        ----------
        item, sum_over
            As in :meth:`items`.

        Returns
        -------
        pandas.DataFrame
            One row per item (x condition) and possible ``score`` value:
            ``probability`` (share of posterior predictive draws; the rows of an item sum
            to 1), ``cumulative`` (P(score <= value)).
        """
        index, _, _, future, _ = self._item_draws(item, sum_over)
        frames = []
        for j, key in enumerate(index.itertuples(index=False)):
            values, counts = np.unique(future[:, j], return_counts=True)
            p = counts / counts.sum()
            frame = pd.DataFrame({"score": values, "probability": p, "cumulative": np.cumsum(p)})
            for column, value in zip(index.columns, key):
                frame.insert(len(frame.columns) - 3, column, value)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def attempts(
        self, target_sd: float = 0.5, n: int = 10, item: str | None = None, sum_over: str | None = None, confidence: float = 0.95
    ) -> pd.DataFrame:
        """How many attempts each item needs: attempt-to-attempt SD and the predictive SD
        of the mean of ``n`` future attempts.

        Parameters
        ----------
        target_sd : float, default 0.5
            Wanted SD of an item's mean score over attempts (attempt-to-attempt part).
        n : int, default 10
            Number of future attempts for ``mean_sd``.
        item, sum_over, confidence
            As in :meth:`items`.

        Returns
        -------
        pandas.DataFrame
            One row per item (x condition): ``attempt_sd`` (posterior mean of the SD of one
            attempt's score, ``sigma``), ``ci_low``, ``ci_high`` (its HDI), ``mean_sd``
            (posterior predictive SD of the mean of ``n`` future attempts,
            ``sqrt(Var(mu) + E(sigma^2) / n)``: the item's remaining uncertainty plus the
            attempt noise), ``n_needed`` (smallest number of attempts whose mean has
            attempt-to-attempt SD at most ``target_sd``: ``ceil(E(sigma^2) / target_sd^2)``),
            ``n_needed_high`` (the same from the upper HDI bound of ``sigma``).
        """
        check_confidence(confidence)
        if not (isinstance(target_sd, (int, float)) and target_sd > 0):
            raise DataError(f"target_sd={target_sd!r} must be a positive number")
        if not (isinstance(n, (int, np.integer)) and n >= 1):
            raise DataError(f"n={n!r} must be a positive integer")
        index, mean, var, _, _ = self._item_draws(item, sum_over)
        sd = np.sqrt(var)
        low, high = _core.hdi(sd, confidence)
        ev = var.mean(axis=0)
        return index.assign(
            attempt_sd=sd.mean(axis=0),
            ci_low=low,
            ci_high=high,
            mean_sd=np.sqrt(mean.var(axis=0) + ev / n),
            n_needed=np.maximum(1, np.ceil(ev / target_sd**2 - 1e-9)).astype(int),
            n_needed_high=np.maximum(1, np.ceil(high**2 / target_sd**2 - 1e-9)).astype(int),
        )


def _sample_categories(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per (draw, row) from probabilities (S, n, K), by inverting the CDF."""
    u = rng.random(probs.shape[:-1] + (1,))
    return np.minimum((np.cumsum(probs, axis=-1) < u).sum(axis=-1), probs.shape[-1] - 1)


def _pairs(draws: dict, confidence: float, contrast, prob_name: str, prob) -> pd.DataFrame:
    rows = []
    for a, b in combinations(draws, 2):
        d = contrast(draws[a], draws[b])
        low, high = _core.hdi(d[:, None], confidence)
        rows.append({"a": a, "b": b, "estimate": d.mean(), "ci_low": low[0], "ci_high": high[0], prob_name: prob(draws[a], draws[b]).mean()})
    return pd.DataFrame(rows, columns=["a", "b", "estimate", "ci_low", "ci_high", prob_name])
