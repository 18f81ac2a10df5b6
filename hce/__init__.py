"""hce: LLM judges of patient health communication, with publication-grade statistics.

The top level holds what every script needs: the attempt log and rubrics.
Statistics live in :mod:`hce.stats`, collection in :mod:`hce.collect`.
"""

import importlib

from hce._lazy import import_public
from hce.errors import DataError, FormulaError, HceError, HceWarning, LogFormatError, RubricError

__version__ = "0.1.0"

# The attempt log (pandas, pyarrow) loads at the first use of one of its names (PEP 562), so
# `hce --help` and `import hce.errors` do not pay for it.
_HOME = {
    "read_log": "hce.log",
    "to_long": "hce.log",
    "write_log": "hce.log",
    "load_behavior": "hce.rubric",
    "load_rubric": "hce.rubric",
}
# Subpackages and modules reached as attributes (``hce.log.merge_logs``) after ``import hce``.
_SUBMODULES = {"collect", "importers", "log", "report", "rubric", "score_extraction", "stats", "study"}

__all__ = [
    "DataError",
    "FormulaError",
    "HceError",
    "HceWarning",
    "LogFormatError",
    "RubricError",
    "__version__",
    "load_behavior",
    "load_rubric",
    "read_log",
    "to_long",
    "write_log",
]


def __getattr__(name: str):
    if name in _HOME:
        return import_public(globals(), _HOME, name)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
