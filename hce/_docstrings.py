"""Docstring text that several public functions share, written once (MNE-Python's ``fill_doc``).

A docstring holds ``%(name)s`` alone on a line where a shared fragment goes; :func:`fill_doc`
puts the fragment there, at that line's indentation, when the function is defined, so
``help()``, the API pages and the doctests all read the whole text. ``fill_doc`` goes below
every other decorator: the wrappers copy the docstring it filled.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

FRAGMENTS: dict[str, str] = {
    # hce.stats.factor and the scale statistics on a wide table of questionnaire items
    "wide_parameters": """\
Parameters
----------
data : DataFrame
    One row per observation, one column per item.
columns : list of str, optional
    Item columns; default every numeric column.""",
    # the validity tests of seed 002, one row per rubric attribute
    "attribute_effect": """\
attribute : str, optional
    Column of rubric attributes; one row of output per attribute.
confidence : float, default 0.95
    Level of the effect-size interval.""",
    "bonett_reference": """\
References
----------
.. [1] Bonett DG (2002). Sample size requirements for estimating intraclass
   correlations with desired precision. Stat Med 21, 1331-1335.""",
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
        return "\n".join(indent + line if line else "" for line in FRAGMENTS[name].splitlines())

    func.__doc__ = _MARK.sub(put, func.__doc__ or "")
    return func
