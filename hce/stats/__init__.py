"""Statistics on attempt logs and rating tables: pure functions, DataFrames in and out."""

import importlib
import warnings

from hce._lazy import import_public

# Every public name and the module that defines it. A module is imported at the first use of
# one of its names (PEP 562), so `import hce.stats` costs what `import hce` does and a script
# pays for SciPy, statsmodels or PyMC only when it calls what needs them.
_EXPORTS = {
    "hce.stats.agreement_humans": ("bland_altman", "concordance", "mcnemar"),
    "hce.stats.alternative_annotator": ("alt_test",),
    "hce.stats.bayes": ("BayesResult", "MCMCDiagnosticsWarning", "bayes_binary", "bayes_ordinal"),
    "hce.stats.biases": ("length_bias", "model_family", "probe_effect"),
    "hce.stats.control_charts": ("control_limits",),
    "hce.stats.golden_drift": ("drift",),
    "hce.stats.boolean": (
        "adaptive_filter_agreement", "binarize_likert", "discrepancy", "golden_agreement", "majority_vote",
        "mean_score_ensemble", "normalize_likert", "pass_rates", "uncertain_routing",
    ),
    "hce.stats.calibrate_humans": ("calibrate_to_humans",),
    "hce.stats.calibration": (
        "agrees_with_mode", "agrees_with_repeat", "brier_score", "calibration_metrics", "confidence_spread",
        "confidence_table", "expected_calibration_error", "logprob_confidence", "reliability_table",
        "verbal_confidence", "vote_confidence",
    ),
    "hce.stats.detectable": ("mde", "planning_components", "power_difference"),
    "hce.stats.dif": ("dif_ordinal",),
    "hce.stats.editf1": (
        "annotator_pairs", "count_sentences", "edit_counts", "edit_counts_from_matches",
        "edit_counts_table", "edit_f1", "inter_annotator_predictability", "sentence_table",
        "split_sentences", "theme_f1", "theme_inclusion_agreement",
    ),
    "hce.stats.effects": ("cohens_d", "correlation", "kl_difference", "kl_divergence", "mae_vs_target"),
    "hce.stats.factor": (
        "bartlett_sphericity", "cfa", "correlation_matrix", "efa", "eigenvalues", "kmo",
        "parallel_analysis", "polychoric",
    ),
    "hce.stats.subgroup_fairness": ("fairness",),
    "hce.stats.instrument": ("instrument_report", "item_statistics"),
    "hce.stats.mixed": (
        "ClmmResult", "GlmerResult", "LmerResult", "VarianceComponents", "build_design", "clmm", "glmer", "lmer",
        "parse_formula", "spread_model",
        "variance_components",
    ),
    "hce.stats.power": (
        "attempts_needed", "bonett_icc_items", "reliability_items", "sd_difference_power",
        "sd_difference_power_analytic",
    ),
    "hce.stats.ppi": ("ppi_budget", "ppi_mean", "rogan_gladen"),
    "hce.stats.ppi_comparisons": ("ppi_compare",),
    "hce.stats._simulate": ("simulated_log",),
    "hce.stats.reliability": (
        "cohen_kappa", "cronbach_alpha", "fleiss_kappa", "gwet_ac", "icc", "icc_groups",
        "krippendorff_alpha", "mcdonald_omega", "omega_hierarchical", "ordinal_alpha", "percent_agreement",
        "strict_agreement",
    ),
    "hce.stats.request_effect": ("request_variance",),
    "hce.stats.repeated_measures": ("rm_anova",),
    "hce.stats.result": ("AnalysisResult",),
    "hce.stats.stopped_means": ("stopped_item_means",),
    "hce.stats.spread": (
        "item_spread", "share_below", "spread_summary", "success_metric_2", "vote_stability",
    ),
    "hce.stats.contingency": ("cluster_permutation_test", "code_frequencies", "contingency_test"),
    "hce.stats.tests": (
        "friedman", "kruskal_wallis", "mann_whitney", "p_adjust", "posthoc", "wilcoxon_paired",
    ),
    "hce.stats.validity": ("discriminant_validity", "rater_expertise", "substantive_validity"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

# The public API, discovered by the dirty-input test (tests/stats/test_dirty_input.py).
__all__ = [
    "request_variance",
    "AnalysisResult", "BayesResult", "ClmmResult", "GlmerResult", "LmerResult", "MCMCDiagnosticsWarning",
    "VarianceComponents", "clmm",
    "adaptive_filter_agreement", "agrees_with_mode", "alt_test", "agrees_with_repeat", "annotator_pairs", "attempts_needed",
    "bartlett_sphericity", "bayes_binary", "bayes_ordinal", "binarize_likert", "bland_altman", "bonett_icc_items",
    "brier_score", "build_design", "calibrate_to_humans", "calibration_metrics", "cfa", "cluster_permutation_test", "code_frequencies", "cohen_kappa",
    "cohens_d", "concordance", "confidence_spread", "confidence_table", "contingency_test", "control_limits", "correlation",
    "drift",
    "correlation_matrix", "count_sentences", "cronbach_alpha", "dif_ordinal", "discrepancy",
    "discriminant_validity", "edit_counts", "edit_counts_from_matches", "edit_counts_table",
    "edit_f1", "efa", "eigenvalues", "expected_calibration_error", "fairness", "fleiss_kappa", "friedman",
    "glmer", "golden_agreement", "gwet_ac", "icc", "icc_groups", "instrument_report",
    "inter_annotator_predictability", "item_spread", "item_statistics", "kl_difference", "kl_divergence", "kmo", "length_bias",
    "krippendorff_alpha", "kruskal_wallis", "lmer", "logprob_confidence", "mae_vs_target",
    "majority_vote", "mann_whitney", "mcnemar", "mcdonald_omega", "mde", "mean_score_ensemble", "model_family",
    "normalize_likert", "omega_hierarchical", "ordinal_alpha", "p_adjust", "parallel_analysis", "parse_formula",
    "planning_components", "power_difference", "pass_rates", "percent_agreement", "polychoric", "posthoc",
    "ppi_budget", "ppi_compare", "ppi_mean", "probe_effect", "rater_expertise",
    "reliability_items", "reliability_table", "rm_anova", "rogan_gladen",
    "sd_difference_power", "sd_difference_power_analytic", "sentence_table", "share_below", "simulated_log",
    "split_sentences", "spread_model", "spread_summary", "stopped_item_means", "strict_agreement", "substantive_validity",
    "success_metric_2", "theme_f1", "theme_inclusion_agreement", "uncertain_routing",
    "variance_components", "verbal_confidence", "vote_confidence", "vote_stability",
    "wilcoxon_paired",
]  # fmt: skip

# Names that moved out of hce.stats. The report layer's names warn and still work; the PRD
# study's per-experiment analyses are the study layer's (hce.study), which statistics do not know.
_MOVED = {"reliability_diagram": "hce.report.figures"}
_MOVED_TO_STUDY = {"experiment1", "experiment2", "experiment3", "experiment4", "experiment5", "experiments"}


def _moved(name: str, old_module: str):
    """The object ``name`` from its new module, with a DeprecationWarning naming the new path."""
    new = f"{_MOVED[name]}.{name}"
    warnings.warn(f"{old_module}.{name} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
    # The one arrow from hce.stats up to hce.report, for this alias only and lazily: importing
    # hce.stats never loads the report layer. Goes when the alias does.
    return getattr(importlib.import_module(_MOVED[name]), name)


def __getattr__(name: str):
    if name in _HOME:
        return import_public(globals(), _HOME, name)
    if name in _MOVED:
        return _moved(name, __name__)
    if name in _MOVED_TO_STUDY:
        raise AttributeError(f"hce.stats.{name} moved to hce.study.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
