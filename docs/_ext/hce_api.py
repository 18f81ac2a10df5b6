"""Sphinx extension: one API page for every public name of hce's public modules.

Public means the module's ``__all__`` (or, without one, its names not starting with ``_``).
When the configuration is read it writes ``api/<module>.rst`` with an autosummary of those names, and
autosummary writes a page per name under ``api/generated/``. A name that ``hce.stats`` exports
is documented there once; a subpackage's page lists only what no page before it has.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

# The modules whose public names get pages, in the order of the API index.
MODULES = ("hce", "hce.stats", "hce.sim", "hce.collect", "hce.report", "hce.study")
# Subpackages with an __all__ of their own: hce.stats' (partly beyond what hce.stats exports)
# and the manuscript writers of hce.report.
SUBPACKAGES = ("hce.stats.bayes", "hce.stats.calibration", "hce.stats.factor", "hce.stats.mixed",
               "hce.stats.reliability", "hce.report.manuscript")
# The shared-data folders each worked example reads; an example runs in the gallery only when
# they are all in ../shared/data (the demo-data examples need none).
EXAMPLE_DATA = {
    "reanalyse_repeated_judges": ("topicalchat_gpt35_repeated", "summeval_gpt4o_repeated"),
    "health_rating_agreement": ("kqa", "healthbench_meta_subset"),
    "pdsqi9": ("pdsqi9_rubric", "primock57"),
}


#: The topics of the ``hce.stats`` page, as statsmodels and ArviZ group theirs: a heading, its
#: purpose in one line, and the modules (``hce.stats._EXPORTS``' keys) whose names it lists.
STATS_TOPICS = (
    ("Spread of repeated judgements", "How far one item's scores vary across repeated attempts, and how many items "
     "meet a spread target.", ("hce.stats.spread", "hce.stats.request_effect")),
    ("Tests between conditions", "Paired, blocked and independent-group tests with effect sizes and their intervals, "
     "count tables, and P-value adjustment.", ("hce.stats.tests", "hce.stats.repeated_measures", "hce.stats.effects",
                                                       "hce.stats.contingency")),
    ("Mixed models and G theory", "lme4-style linear, generalised and ordinal mixed models from R formulas, "
     "variance components and G/D studies.", ("hce.stats.mixed",)),
    ("Reliability and agreement", "ICC, kappas, Gwet's AC, Krippendorff's alpha, percent agreement, and internal "
     "consistency (alpha, omega).", ("hce.stats.reliability",)),
    ("Factor analysis", "Correlations for ordinal items, adequacy checks, exploratory and confirmatory factor "
     "analysis.", ("hce.stats.factor",)),
    ("Instrument validation and fairness", "An instrument's whole validation, item statistics, validity tests, "
     "differential item functioning and subgroup fairness.",
     ("hce.stats.instrument", "hce.stats.validity", "hce.stats.dif", "hce.stats.subgroup_fairness")),
    ("Boolean judges", "Verdicts: pass rates, ensembles, golden-set agreement, binarised and normalised Likert "
     "scores.", ("hce.stats.boolean",)),
    ("Edit-F1", "Clinicians' edits of a generated note: content- and theme-level F1 and annotator agreement.",
     ("hce.stats.editf1",)),
    ("Calibration and confidence", "A judge's confidence from logprobs, votes or its own words, and how well it is "
     "calibrated (ECE, Brier).", ("hce.stats.calibration",)),
    ("Judges and humans", "Whether the judge can stand in for the human raters (the alternative annotator test), "
     "agreement with them (Bland-Altman, Lin's CCC, McNemar), its scores mapped to theirs, and means and "
     "comparisons corrected with a sample of human labels (prediction-powered inference, Rogan-Gladen).",
     ("hce.stats.alternative_annotator", "hce.stats.agreement_humans", "hce.stats.calibrate_humans",
      "hce.stats.ppi", "hce.stats.ppi_comparisons")),
    ("The judge's own biases and drift", "Perturbation probes' effects with equivalence tests, length bias, and "
     "golden-set drift with control charts.", ("hce.stats.biases", "hce.stats.golden_drift", "hce.stats.control_charts")),
    ("Bayesian models", "Hierarchical ordinal and binary models of judge scores in PyMC, with their diagnostics.",
     ("hce.stats.bayes",)),
    ("Planning", "Items and attempts a study needs for the precision or power it wants, the smallest difference "
     "it can detect, and the item means of a log whose repeats stopped when the score was known.",
     ("hce.stats.power", "hce.stats.detectable", "hce.stats.stopped_means")),
    ("Results and simulated logs", "The result object analyses return, and attempt logs with known truth.",
     ("hce.stats.result", "hce.stats._simulate")),
)


def stats_topics(names: list[str]) -> list[tuple[str, str, list[str]]]:
    """``names`` of the ``hce.stats`` page under :data:`STATS_TOPICS`; a name in no topic is an error."""
    from hce.stats import _HOME

    topics = [(title, purpose, [n for n in names if _HOME.get(n) in modules]) for title, purpose, modules in STATS_TOPICS]
    placed = {n for _, _, listed in topics for n in listed}
    homeless = [n for n in names if n not in placed]
    if homeless:
        raise ValueError(f"hce.stats names in no topic of docs/_ext/hce_api.py STATS_TOPICS: {homeless} "
                         f"(modules {sorted({_HOME.get(n, '?') for n in homeless})})")
    return [topic for topic in topics if topic[2]]


def public(module: str) -> list[str]:
    """The public names of ``module``: its ``__all__``, else the names without a leading ``_``."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    return sorted(n for n in names if not n.startswith("__"))


def api_names() -> dict[str, list[str]]:
    """Every module of the API reference and the names documented on its page."""
    pages, seen = {}, set()
    for module in (*MODULES, *SUBPACKAGES):
        mod = importlib.import_module(module)
        pages[module] = [n for n in public(module) if module in MODULES or id(getattr(mod, n)) not in seen]
        seen.update(id(getattr(mod, n)) for n in pages[module])
    return pages


def _summary(names: list[str]) -> list[str]:
    return [".. autosummary::", "   :toctree: generated", "   :nosignatures:", "", *(f"   {n}" for n in names), ""]


def page(module: str, names: list[str]) -> str:
    doc = (importlib.import_module(module).__doc__ or "").strip().split("\n\n")[0]
    lines = [f"``{module}``", "=" * (len(module) + 4), "", doc, "", f".. currentmodule:: {module}", ""]
    if module == "hce.stats":
        for title, purpose, listed in stats_topics(names):
            lines += [title, "-" * len(title), "", purpose, "", *_summary(listed)]
    elif names:
        lines += _summary(names)
    else:
        lines.append(f"Every public name of ``{module}`` is documented under :doc:`hce.stats`.")
    return "\n".join(lines) + "\n"


def write_pages(app, config) -> None:
    """Write ``api/<module>.rst`` for each module and the glossary's tables (when their text changed)."""
    folder = Path(app.srcdir) / "api"
    folder.mkdir(exist_ok=True)
    pages = api_names()
    # autosummary never removes a stub: one left from a name that moved would be an orphan page.
    wanted = {f"{module}.{name}" for module, names in pages.items() for name in names}
    for stub in (folder / "generated").glob("*.rst"):
        if stub.stem not in wanted:
            stub.unlink()
    written = {folder / f"{module}.rst": page(module, names) for module, names in pages.items()}
    written[Path(app.srcdir) / "_generated" / "vocabulary.md"] = vocabulary()
    for path, text in written.items():
        path.parent.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def vocabulary() -> str:
    """The glossary's tables, rendered by :mod:`hce._vocabulary` (which the tests hold every signature to)."""
    from hce._vocabulary import markdown

    return markdown()


def gallery_pattern(examples: Path, data: Path | None = None) -> str:
    """sphinx-gallery's ``filename_pattern``: the examples whose shared data are present."""
    data = data or examples.parents[2] / "shared" / "data"
    scripts = [p.stem for p in examples.glob("*.py") if not p.stem.startswith("_")]
    runnable = [s for s in scripts if all((data / d).is_dir() for d in EXAMPLE_DATA.get(s, ()))]
    return "|".join(rf"/{re.escape(s)}\.py$" for s in sorted(runnable)) or r"^$"


def figure_scraper(block, block_vars, gallery_conf, **kwargs) -> str:
    """sphinx-gallery image scraper: the figures an example holds, for its page and its card.

    hce draws with matplotlib's ``Figure`` objects, never pyplot's global state (a report must
    not change it), so sphinx-gallery's matplotlib scraper saw no figure and every gallery
    card showed the placeholder. This one takes, after each block, every matplotlib Figure
    the example's variables hold (alone, or in an hce Report's figures) that it has not shown.
    """
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    from hce.report.document import Report

    shown = block_vars.setdefault("hce_shown_figures", set())
    found = []
    for value in list(block_vars["example_globals"].values()):
        if isinstance(value, Figure):
            found.append(value)
        elif isinstance(value, Report):
            found += [f.figure for f in value.figures()]
    paths = []
    for figure in found:
        if id(figure) in shown:
            continue
        shown.add(id(figure))
        path = next(block_vars["image_path_iterator"])
        figure.savefig(path, dpi=100, bbox_inches="tight")
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"]) if paths else ""


def public_signature(app, what, name, obj, options, signature, return_annotation):
    """autodoc's ``autodoc-process-signature``: a class's signature without its private fields.

    A result class made by hce (``LmerResult``) keeps internal state in dataclass fields
    named ``_beta``, ``_pls``...; ``field(repr=False)`` hides them from ``repr`` but not
    from the constructor's signature, which the page would show. They are dropped, with
    the annotations (the docstring gives the types, as everywhere on the site).
    """
    if what != "class" or signature is None:
        return None
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    if not any(p.name.startswith("_") for p in parameters):
        return None
    shown = [p.replace(annotation=inspect.Parameter.empty) for p in parameters if not p.name.startswith("_")]
    return str(inspect.Signature(shown)), return_annotation


def setup(app):
    # Before Sphinx lists the source files, so autosummary sees the pages and writes their stubs.
    app.connect("config-inited", write_pages)
    app.connect("autodoc-process-signature", public_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
