"""Linear mixed models with lme4 syntax: ``lmer``, variance components (G theory), spread.

Modules, from the user's entry points down to the engines:

* :mod:`~hce.stats.mixed.lmer_fit`: :func:`lmer`, which picks the engine, and
  :mod:`~hce.stats.mixed.lmer_result`: the :class:`LmerResult` it returns, whose tests of
  fixed effects are :mod:`~hce.stats.mixed.lmer_tests` (t, F and likelihood-ratio tests),
  :mod:`~hce.stats.mixed.ddf` (lmerTest's Satterthwaite and pbkrtest's Kenward-Roger df) and
  :mod:`~hce.stats.mixed.type3` (Type III hypotheses);
* :mod:`~hce.stats.mixed.glmer_fit`: :func:`glmer` (0/1 verdicts, proportions, counts) and
  :mod:`~hce.stats.mixed.glmer_result`: the :class:`GlmerResult` it returns, on
  :mod:`~hce.stats.mixed.pirls` (PIRLS, Laplace and adaptive Gauss-Hermite deviances);
* :mod:`~hce.stats.mixed.clmm_fit`: :func:`clmm`, cumulative link mixed models for ordinal
  scores (:mod:`~hce.stats.mixed.clmm_laplace` its likelihood, :class:`ClmmResult` its fit);
* :mod:`~hce.stats.mixed.g_study`: :func:`variance_components` and
  :class:`VarianceComponents` (G theory);
* :mod:`~hce.stats.mixed.spread_models`: :func:`spread_model`, lmer on the SDs of cells;
* :mod:`~hce.stats.mixed.formula`: lme4 formulas and their design matrices;
* :mod:`~hce.stats.mixed.balanced`: the ANOVA (closed-form or exact REML) engine for
  balanced crossed designs;
* :mod:`~hce.stats.mixed.pls`: lme4's penalised least squares engine for everything else,
  with :mod:`~hce.stats.mixed.sparse_chol` (its factorisation) and
  :mod:`~hce.stats.mixed.theta_search` (its optimiser);
* :mod:`~hce.stats.mixed.crossed_cells`: the same REML deviance of two crossed factors
  from their cell table in O(cells), for large item x condition tables;
* :mod:`~hce.stats.mixed.component_intervals`: standard errors and intervals of variance
  components and of G and Phi.
"""

from hce.stats.mixed.clmm_fit import clmm
from hce.stats.mixed.clmm_result import ClmmResult
from hce.stats.mixed.formula import build_design, parse_formula
from hce.stats.mixed.g_study import VarianceComponents, variance_components
from hce.stats.mixed.glmer_fit import glmer
from hce.stats.mixed.glmer_result import GlmerResult
from hce.stats.mixed.lmer_fit import lmer
from hce.stats.mixed.lmer_result import ConvergenceWarning, LmerResult, SingularFitWarning
from hce.stats.mixed.spread_models import spread_model

__all__ = [
    "ClmmResult", "ConvergenceWarning", "GlmerResult", "LmerResult", "SingularFitWarning", "VarianceComponents",
    "build_design", "clmm", "glmer", "lmer", "parse_formula", "spread_model", "variance_components",
]  # fmt: skip
