"""One error hierarchy for hce: catch :class:`HceError` to catch them all."""


class HceError(Exception):
    """Root of every error hce raises on purpose."""


class DataError(HceError, ValueError):
    """User data is unusable: a missing column, a bad value in a named row."""


class LogFormatError(DataError):
    """An attempt log file or frame breaks the schema (names file, line/row, column)."""


class RubricError(HceError, ValueError):
    """A rubric or behaviour spec is malformed (names file, field and what was expected)."""


class FormulaError(HceError, ValueError):
    """A model formula uses syntax hce does not support (names the term)."""


class HceWarning(UserWarning):
    """Something the user must see but that does not stop the analysis (dropped rows, NaN SDs)."""


class PathError(HceError, ValueError):
    """A path given to read or write cannot serve (a device, a directory, read-only, no permission)."""


class CollectError(HceError):
    """A judge run cannot go on: a bad design, a missing API key, an unusable endpoint."""
