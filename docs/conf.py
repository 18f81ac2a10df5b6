"""Sphinx configuration of hce's documentation site (``python -m hce.docs`` builds it).

Sphinx with numpydoc, autosummary, sphinx-gallery and myst-parser: the stack of statsmodels,
PyMC, ArviZ and pingouin, whose users are ours, and numpydoc is already the docstrings' style.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "_ext"), str(HERE / "examples"), str(HERE.parent)]

import hce  # noqa: E402  (after the path: the checkout being documented, not an installed copy)
from hce_api import gallery_pattern  # noqa: E402

project = "hce"
author = "the hce authors"
copyright = "2026, the hce authors"
release = version = hce.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
    "hce_api",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated", "examples"]
templates_path = ["_templates"]
root_doc = "index"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters section already gives the types, in words
# No autodoc_default_options: {"members": False} there emptied every class page of its
# methods and properties (the class template asks for :members:).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    # Each worked example runs when its data are here (../shared/data), else it is shown unrun;
    # the demo-data example always runs. See hce_api.gallery_pattern.
    "filename_pattern": gallery_pattern(HERE / "examples"),
    "ignore_pattern": r"_common\.py",
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "min_reported_time": 1,
    # hce's figures are matplotlib Figure objects outside pyplot: hce_api.figure_scraper finds them
    "image_scrapers": ("matplotlib", "hce_api.figure_scraper"),
}

html_theme = "pydata_sphinx_theme"
html_title = f"hce {release}"
html_theme_options = {
    # Every task in the top bar (none under "More"): the root toctree is the list of tasks.
    "header_links_before_dropdown": 12,
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
# Pages without sub-pages or siblings get no left sidebar (it would read "Section Navigation" over nothing);
# a task's guides show their siblings there.
html_sidebars = {page: [] for page in ("index", "getting-started", "guide/reliability", "guide/mixed-models",
                                       "guide/bayesian", "guide/calibration")}
html_static_path: list[str] = []
html_show_sourcelink = False

intersphinx_mapping = {}  # offline: the site links nothing it would have to fetch
nitpicky = True  # every cross-reference must resolve (CI builds with -n -W)
