"""Factor structure of a rating instrument (being split into one module per topic)."""

from hce.stats.factor.exploratory import (
    CFAResult,
    FactorResult,
    OmegaResult,
    ParallelResult,
    bartlett_sphericity,
    cfa,
    correlation_matrix,
    efa,
    eigenvalues,
    kmo,
    omega_hierarchical,
    ordinal_alpha,
    parallel_analysis,
    polychoric,
)

__all__ = [
    "CFAResult",
    "FactorResult",
    "OmegaResult",
    "ParallelResult",
    "bartlett_sphericity",
    "cfa",
    "correlation_matrix",
    "efa",
    "eigenvalues",
    "kmo",
    "omega_hierarchical",
    "ordinal_alpha",
    "parallel_analysis",
    "polychoric",
]
