"""Reliability and agreement: ICC, Krippendorff's alpha, kappas, Gwet's AC, alpha, omega.

Every function takes long-format ratings and returns a tidy DataFrame naming the estimator,
the interval method and the counts of targets, raters and ratings used and dropped; ordinal
alpha and omega hierarchical, which rest on a factor solution, read an observations x items
frame as :mod:`hce.stats.factor` does.
"""

from hce.stats.reliability.agreement import (
    agreement_weights,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac,
    percent_agreement,
    strict_agreement,
)
from hce.stats.reliability.consistency import (
    OmegaResult,
    cronbach_alpha,
    mcdonald_omega,
    omega_hierarchical,
    one_factor,
    ordinal_alpha,
)
from hce.stats.reliability.icc import icc, icc_groups
from hce.stats.reliability.krippendorff import krippendorff_alpha

__all__ = [
    "OmegaResult",
    "agreement_weights",
    "cohen_kappa",
    "cronbach_alpha",
    "fleiss_kappa",
    "gwet_ac",
    "icc",
    "icc_groups",
    "krippendorff_alpha",
    "mcdonald_omega",
    "omega_hierarchical",
    "one_factor",
    "ordinal_alpha",
    "percent_agreement",
    "strict_agreement",
]
