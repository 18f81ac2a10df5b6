"""Factor structure of a rating instrument: correlations, adequacy, retention, EFA, CFA.

Factor analysis works on an observations x items matrix, so these functions take a *wide*
DataFrame: one row per observation (a rated text, or a text x rater pair) and one column per
item (rubric attribute), chosen with ``items=``. :func:`hce.stats.instrument.instrument_report`
builds that matrix from a long ratings table.

The numbers follow R's ``psych`` package, which the validation literature (e.g. PDSQI-9,
Appendix B) reports: ``psych::fa`` for the EFA and its fit indices, ``psych::KMO``,
``psych::cortest.bartlett``, ``psych::fa.parallel`` and ``psych::polychoric``; the CFA fit
indices follow ``lavaan``. One module per topic:

- :mod:`~hce.stats.factor.correlation`: the item matrix, Pearson/Spearman/polychoric
  correlations and their smoothing;
- :mod:`~hce.stats.factor.adequacy`: KMO, Bartlett's test, eigenvalues, parallel analysis;
- :mod:`~hce.stats.factor.exploratory`: extraction, rotation, the EFA, its fit statistics
  and bootstrap intervals (:func:`efa_intervals`), the Schmid-Leiman transformation;
- :mod:`~hce.stats.factor.confirmatory`: the CFA;
- :mod:`~hce.stats.factor.bootstrap`: row resampling with factor alignment.

Ordinal alpha and omega hierarchical are reliability coefficients and live in
:mod:`hce.stats.reliability`; ``hce.stats.factor.ordinal_alpha`` and
``hce.stats.factor.omega_hierarchical`` still resolve to them.
"""

import importlib

from hce.stats.factor.adequacy import (
    ParallelResult,
    bartlett_sphericity,
    eigenvalues,
    kmo,
    parallel_analysis,
)
from hce.stats.factor.confirmatory import CFAResult, cfa
from hce.stats.factor.correlation import Correlation, correlation_matrix, polychoric
from hce.stats.factor.exploratory import (
    FactorResult,
    Method,
    Rotation,
    efa,
    efa_intervals,
    max_identified_factors,
)

# Moved to hce.stats.reliability, which imports this package: resolved on first use so that
# neither package needs the other half-imported.
_RELIABILITY = ("OmegaResult", "omega_hierarchical", "ordinal_alpha")

__all__ = [
    "CFAResult",
    "Correlation",
    "FactorResult",
    "Method",
    "OmegaResult",
    "ParallelResult",
    "Rotation",
    "bartlett_sphericity",
    "cfa",
    "correlation_matrix",
    "efa",
    "efa_intervals",
    "eigenvalues",
    "kmo",
    "max_identified_factors",
    "omega_hierarchical",
    "ordinal_alpha",
    "parallel_analysis",
    "polychoric",
]


def __getattr__(name: str):
    if name in _RELIABILITY:
        return getattr(importlib.import_module("hce.stats.reliability.consistency"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
