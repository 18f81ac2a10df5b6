"""Docstring text that several public functions share, written once (MNE-Python's ``fill_doc``).

A docstring holds ``%(name)s`` alone on a line where a shared fragment goes; :func:`fill_doc`
puts the fragment there, at that line's indentation, when the function is defined, so
``help()``, the API pages and the doctests all read the whole text. ``fill_doc`` goes below
every other decorator: the wrappers copy the docstring it filled. The arguments many functions
share (``error``, ``random_state``, ``confidence``, ``n_boot``) are written here once: :func:`add_parameter` puts one into a
docstring's Parameters section (``hce.stats``' frame check does so for the ``error`` keyword it
adds to every statistic of an attempt log), and ``tests/test_docstrings.py`` holds every public
docstring to this text.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

FRAGMENTS: dict[str, str] = {
    # the arguments shared by many public functions: one text each, wherever they appear
    "error": """\
error : str or None, default "error_flag"
    Boolean column flagging failed attempts, left out before the analysis and counted (an
    :class:`~hce.HceWarning` or the result's ``n_errors`` says how many). An absent
    default column flags nothing; None when no column flags failures.""",
    "random_state": """\
random_state : int, Generator or None, default None
    Seed (or NumPy ``Generator``) of every random draw the function makes: bootstrap
    resamples, simulations, the sampler. None draws fresh entropy; pass an int to reproduce
    the result. The command line spells it ``--seed``.""",
    # the runs of a design (hce.collect.running): the endpoint override, and the synchronous forms
    "endpoint_override": """\
base_url, api_key : str, optional
    The server and key of the design's one endpoint (default: the endpoint's
    ``base_url``, else ``$OPENAI_BASE_URL``, and the variable ``api_key_env`` names).""",
    "run_parameters": """\
Parameters
----------
design : Design, path of a design YAML, or mapping""",
    "sync_parameters": """\
%(run_parameters)s
log : path
    The JSONL attempt log.
**kwargs
    The keywords of the function's ``async`` form, named in the first line.""",
    "run_example_setup": """\
Examples
--------
>>> import asyncio, tempfile, os, hce
>>> from hce.examples import example_design
>>> from hce.sim import SimServer
>>> log = os.path.join(tempfile.mkdtemp(), "run.jsonl")""",
    # {default} is the function's own default, read from its signature by fill_doc
    "confidence": """\
confidence : float, default {default}
    Level of the intervals, a probability in (0, 1): 0.95 gives 95% intervals.""",
    # the mixed models' results (hce.stats.mixed.convergence)
    "unconverged": """\
unconverged : {"hide", "show"}, default "hide"
    What a fit that did not converge (``converged`` False) shows: ``"hide"`` gives the
    estimates with NaN standard errors, statistics, p values and intervals, ``method``
    saying "did not converge"; ``"show"`` computes them at the point the optimiser
    reached, ``method`` marked "(fit did not converge)". No effect on a converged fit.""",
    "n_boot": """\
n_boot : int, default {default}
    Bootstrap resamples behind the bootstrap intervals; more give steadier interval ends.""",
    # four groups of two: the LmerResult methods' examples
    "lmer_example": """\
Examples
--------
>>> import pandas as pd
>>> from hce.stats import lmer
>>> d = pd.DataFrame({"g": list("aabbccdd"), "x": [0, 1] * 4,
...                   "y": [1.0, 2.1, 2.0, 2.9, 0.5, 1.8, 1.4, 2.2]})""",
    # the emmeans methods of LmerResult, GlmerResult and ClmmResult
    "emmeans_grid": """\
A level's mean averages the model's linear predictor over emmeans' reference grid: all
levels of the other categorical fixed factors with equal weights, numeric covariates at
their mean. ``pairwise=True`` gives the differences of the means (R: ``pairs()`` of the
means, with ``confint()``'s intervals). See ``hce.stats.mixed.emmeans``.""",
    "emmeans_z_returns": """\
pandas.DataFrame
    The columns of :meth:`LmerResult.emmeans` (``df`` is ``inf``, ``statistic`` a z).""",
    "emmeans_factor": """\
factor : str
    A categorical fixed effect.
pairwise : bool, default False
    False: one row per level; True: one row per pair of levels.
adjust : {"tukey", "holm", "bonferroni", "none"}, default "tukey"
    Family-wise adjustment of the contrasts' p values and intervals (emmeans' default,
    Tukey's studentized range; the intervals of ``"holm"`` are Bonferroni's, as in
    emmeans). Ignored for the means.""",
    # hce.stats.factor and the scale statistics on a wide table of questionnaire items
    "wide_parameters": """\
Parameters
----------
data : DataFrame
    One row per observation, one column per item.
columns : list of str, optional
    Item columns; default every numeric column.""",
    # the statistics of the item correlation matrix (hce.stats.factor.adequacy)
    "correlation_parameters": """\
%(wide_parameters)s
cor : {"pearson", "spearman", "polychoric"}, default "pearson\"""",
    # the validity tests of seed 002, one row per rubric attribute
    "attribute_effect": """\
attribute : str, optional
    Column of rubric attributes; one row of output per attribute.
%(confidence)s
    Here: the effect-size interval.""",
    # the Wilson and Clopper-Pearson intervals of a share (hce.stats.spread)
    "proportion_references": """\
References
----------
.. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
   inference. JASA 22, 209-212.
.. [2] Clopper, C. J., & Pearson, E. S. (1934). The use of confidence or fiducial limits
   illustrated in the case of the binomial. Biometrika 26, 404-413.""",
    # prediction-powered inference (hce.stats.ppi, hce.stats.ppi_comparisons)
    "ppi_references": """\
References
----------
.. [1] Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023).
   Prediction-powered inference. Science 382, 669-674.
.. [2] Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient
   prediction-powered inference. arXiv:2311.01453.""",
    # two scores of the same items side by side (hce.stats.agreement_humans)
    "paired_parameters": """\
Parameters
----------
data : DataFrame
    One row per item with both scores side by side (as pingouin's ``plot_blandaltman``);
    rows missing either score are left out.
item : str or None
    Item column, default ``"item_id"``, checked for repeats; None to skip the check.
a, b : str
    The two score columns (e.g. the judge's and the humans' mean score). Required.""",
    # the self-consistency outcomes of hce.stats.calibration.outcomes
    "self_consistency_reference": """\
References
----------
.. [1] Wang, X., Wei, J., Schuurmans, D., et al. (2023). Self-consistency improves chain of
   thought reasoning in language models. ICLR.""",
    # power by simulation (hce.stats.power)
    "simulated_power_reference": """\
References
----------
.. [1] Arnold, B. F., Hogan, D. R., Colford, J. M., & Hubbard, A. E. (2011). Simulation
   methods to estimate design power: an overview for applied research. BMC Medical
   Research Methodology 11, 94.""",
    "bonett_reference": """\
References
----------
.. [1] Bonett DG (2002). Sample size requirements for estimating intraclass
   correlations with desired precision. Stat Med 21, 1331-1335.""",
    # the chance-corrected agreement coefficients of hce.stats.reliability (Gwet 2014)
    "agreement_columns": """\
Parameters
----------
data : DataFrame
    Long format, one row per rating; any number of raters, missing ratings allowed.
item, rater, score : str
    Columns naming the rated item, the rater and the category given.""",
    "agreement_weights": """\
weights : {"unweighted", "linear", "quadratic"}, default "unweighted"
    Agreement weights on category positions (see
    :func:`~hce.stats.reliability.agreement_weights`).""",
    "agreement_rest": """\
categories : sequence, optional
    All categories in order; defaults to the sorted observed ones.
%(confidence)s

Returns
-------
DataFrame
    One row: ``metric``, ``weights``, ``estimate``, ``se`` (Gwet's linearised SE),
    ``ci_low``, ``ci_high`` (estimate +- t(n-1) se, the upper limit
    capped at 1 as in irrCAC), ``statistic``
    (t = estimate / se), ``p_value`` (two-sided, t on n - 1 df), ``pa`` (observed
    agreement), ``pe`` (chance agreement), ``prevalence_index`` and ``bias_index`` (NaN:
    defined for two raters), ``pabak`` (``(q pa - 1)/(q - 1)``, unweighted only),
    ``method``, ``ci_method``, ``n_items`` (items with a rating), ``n_raters``,
    ``n_scores`` and ``n_dropped`` (missing).""",
    # three raters' labels of four items: the chance-corrected coefficients' examples
    "three_rater_example": """\
Examples
--------
>>> import pandas as pd
>>> d = pd.DataFrame({"item": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4],
...                   "rater": ["a", "b", "c"] * 4,
...                   "label": ["y", "y", "y", "n", "n", "y", "n", "n", "n", "y", "n", "n"]})""",
    # the manuscript writers: the file is given, its folder made
    "writer_parameters": """\
Parameters
----------
doc : Manuscript
path : str or Path""",
    "returns_path": """\
Returns
-------
Path
    ``path``.""",
    # the PRD's per-experiment analyses
    "experiment_log": """\
Parameters
----------
log : DataFrame
    Attempt log.""",
    # four items loading on one factor: the adequacy statistics' examples (hce.stats.factor.adequacy)
    "one_factor_example": """\
Examples
--------
>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(1)
>>> f = rng.normal(size=200)
>>> d = pd.DataFrame({f"i{j}": f + rng.normal(size=200) for j in range(4)})""",
    # six items loading on two factors, three each: the factor analyses' examples
    "two_factor_example": """\
Examples
--------
>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(3)
>>> f = rng.normal(size=(300, 2))
>>> d = pd.DataFrame({f"i{j}": f[:, j // 3] + rng.normal(size=300) for j in range(6)})""",
}

_MARK = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", flags=re.M)
_SECTION = re.compile(r"^([ \t]*)(\w[\w ]*)\n\1-{3,}[ \t]*$", flags=re.M)


def fill_doc(func: F) -> F:
    """Replace each ``%(name)s`` line of ``func``'s docstring with ``FRAGMENTS[name]``.

    Examples
    --------
    >>> @fill_doc
    ... def kmo(data, *, columns=None):
    ...     '''Sampling adequacy.
    ...
    ...     %(wide_parameters)s
    ...     '''
    >>> print(kmo.__doc__.splitlines()[5].strip())
    One row per observation, one column per item.
    """

    def put(mark: re.Match) -> str:
        indent, name = mark.groups()
        if name not in FRAGMENTS:
            raise KeyError(f"{func.__qualname__}: no shared docstring fragment {name!r}; known: {sorted(FRAGMENTS)}")
        text = FRAGMENTS[name]
        if "{default}" in text:  # the default the signature has, so the text cannot contradict it
            text = text.replace("{default}", str(inspect.signature(func).parameters[name].default))
        return "\n".join(indent + line if line else "" for line in text.splitlines())

    doc = func.__doc__ or ""
    while _MARK.search(doc):  # a fragment may hold marks of its own
        doc = _MARK.sub(put, doc)
    func.__doc__ = doc
    return func


def add_parameter(doc: str, name: str, *, before: str | None = None) -> str:
    r"""``doc`` with argument ``name``'s shared text (``FRAGMENTS[name]``) in its Parameters section.

    The entry goes before ``before``'s entry (a ``**kwargs`` that must stay last), else at the
    end of the section; a docstring without Parameters gains the section. A docstring that
    documents ``name`` already is returned as it is.

    Parameters
    ----------
    doc : str
        A numpydoc docstring, as ``__doc__`` holds it.
    name : str
        The argument: a key of ``FRAGMENTS``.
    before : str, optional
        The entry the new one goes before.

    Returns
    -------
    str

    Examples
    --------
    >>> doc = "Mean score.\n\n    Parameters\n    ----------\n    data : DataFrame\n\n    Returns\n    -------\n    float\n"
    >>> print(add_parameter(doc, "error").splitlines()[5])
        error : str or None, default "error_flag"
    """
    if re.search(rf"^[ \t]*{re.escape(name)} :", doc, flags=re.M):
        return doc
    sections = list(_SECTION.finditer(doc))
    indent = sections[0].group(1) if sections else "    "
    entry = "\n".join(indent + line if line else "" for line in FRAGMENTS[name].splitlines())
    parameters = next((m for m in sections if m.group(2) == "Parameters"), None)
    if parameters is None:
        block = f"{indent}Parameters\n{indent}----------\n{entry}\n"
        if sections:
            return doc[: sections[0].start()] + block + "\n" + doc[sections[0].start():]
        return doc.rstrip() + "\n\n" + block + indent
    end = next((m.start() for m in sections if m.start() > parameters.start()), len(doc))
    entries = doc[parameters.end():end]
    mark = re.search(rf"^{indent}{re.escape(before)} :", entries, flags=re.M) if before else None
    at = parameters.end() + (mark.start() if mark else len(entries.rstrip()))
    return doc[:at] + (entry + "\n" if mark else "\n" + entry) + doc[at:]


def section(doc: str, name: str) -> str:
    """Section ``name`` of a numpydoc docstring, heading included and indentation removed.

    So a function that takes another's arguments documents them with that function's text
    (``FRAGMENTS["calibration_parameters"] = section(calibration_metrics.__doc__,
    "Parameters")``).

    Parameters
    ----------
    doc : str
        A numpydoc docstring.
    name : str
        The section's heading.

    Returns
    -------
    str

    Examples
    --------
    >>> print(section(add_parameter.__doc__, "Returns"))
    Returns
    -------
    str
    """
    sections = list(_SECTION.finditer(doc))
    start = next(m for m in sections if m.group(2) == name)
    end = next((m.start() for m in sections if m.start() > start.start()), len(doc))
    return textwrap.dedent(doc[start.start():end]).strip()
