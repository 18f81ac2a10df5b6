"""The software environment of an analysis: Python, hce and the packages it runs on, with versions.

Example
-------
>>> table = environment_table()
>>> table.columns.tolist(), table["package"].iloc[:2].tolist()
(['package', 'version'], ['python', 'hce'])
"""

from __future__ import annotations

import platform
import re
from importlib import metadata

import pandas as pd

import hce

#: Named first, in this order; then whatever else hce's install_requires lists.
CORE = ("numpy", "scipy", "pandas", "statsmodels", "pymc", "arviz", "openai")
#: What a package that is not installed shows as its version.
NOT_INSTALLED = "not installed"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: "Python_Docx" is "python-docx"


def _required() -> list[str]:
    """hce's install_requires (not its extras), as installed: empty when hce is not installed."""
    try:
        requires = metadata.requires("hce") or []
    except metadata.PackageNotFoundError:
        return []
    return [m.group(1) for r in requires if "extra ==" not in r and (m := _NAME.match(r))]


def environment_table() -> pd.DataFrame:
    """``package, version`` of Python, hce and the packages an hce analysis runs on.

    Returns
    -------
    DataFrame
        One row a package: ``python`` (the interpreter's version), ``hce``, then numpy, scipy,
        pandas, statsmodels, pymc, arviz and openai, then the rest of hce's ``install_requires``
        in its order (as the installed hce's metadata lists them), each once. ``version`` is
        the installed distribution's, or ``"not installed"``.

    Examples
    --------
    >>> table = environment_table()
    >>> table.set_index("package").loc["numpy", "version"] == metadata.version("numpy")
    True
    """
    rows = [("python", platform.python_version()), ("hce", hce.__version__)]
    seen = {"python", "hce"}
    for name in (*CORE, *_required()):
        if _normal(name) in seen:
            continue
        seen.add(_normal(name))
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = NOT_INSTALLED
        rows.append((name, version))
    return pd.DataFrame(rows, columns=["package", "version"])
