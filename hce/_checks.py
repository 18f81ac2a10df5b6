"""Input checks shared by every module: each failure names what is wrong and where."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections.abc import Iterable, Sequence

from hce.errors import DataError

if TYPE_CHECKING:  # loaded where used: a dry run never needs them (issue 44)
    import numpy as np
    import pandas as pd


def require_columns(data: pd.DataFrame, columns: Iterable[str], *, what: str = "data") -> None:
    """Raise :class:`DataError` naming every missing column and the ones present."""
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise DataError(f"{what} must be a pandas DataFrame, got {type(data).__name__}")
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise DataError(
            f"{what} has no column(s) {missing}; columns present: {list(data.columns)}"
        )


def check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    """Raise ``ValueError`` listing the valid choices when ``value`` is not one of them."""
    if value not in choices:
        raise DataError(f"{name}={value!r} is not valid; choose one of {list(choices)}")


#: How other tools write a missing value in a CSV cell (R's write.csv: NA; pandas: NaN; JSON habits: null), lower-cased.
MISSING_TEXT = frozenset({"", "na", "nan", "null"})


def is_missing_text(value: object) -> bool:
    """Whether a cell is text another tool writes for a missing value (``NA``, ``NaN``, ``null``, blank).

    Examples
    --------
    >>> [is_missing_text(v) for v in ("NA", " null ", "", "N", 3)]
    [True, True, True, False, False]
    """
    return isinstance(value, str) and value.strip().lower() in MISSING_TEXT


#: The text a CSV round trip makes of a flag (R's write.csv, pandas, spreadsheets), lower-cased.
FLAG_TEXT = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False, "": False}


def flag_values(flags: pd.Series, column: str, name: str) -> np.ndarray:
    """An error-flag column as booleans, read the same way by every statistic and importer.

    Accepted: booleans, the numbers 0 and 1, the text a CSV round trip writes (``true`` /
    ``false`` in any case, ``1`` / ``0``), and blank or missing (not flagged). Anything else
    is refused, naming the values, rather than guessed.

    Examples
    --------
    >>> import pandas as pd
    >>> flag_values(pd.Series(["false", "True", "", None]), "error_flag", "icc").tolist()
    [False, True, False, False]
    >>> flag_values(pd.Series(["no", "yes"]), "error_flag", "icc")
    Traceback (most recent call last):
    ...
    hce.errors.DataError: icc: column 'error_flag' (error flag) holds 'no', 'yes'; a flag is true/false, 1/0 or blank (not flagged)
    """
    import numpy as np
    import pandas as pd

    if pd.api.types.is_bool_dtype(flags):
        return flags.fillna(False).to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(flags):
        values = flags.to_numpy(dtype=float, na_value=np.nan)
        bad = ~(np.isnan(values) | (values == 0) | (values == 1))
        if bad.any():
            shown = ", ".join(f"{v:g}" for v in pd.unique(values[bad])[:5])
            raise DataError(f"{name}: column {column!r} (error flag) holds {shown}; a flag is true/false, 1/0 or blank "
                            "(not flagged)")
        return values == 1
    read = [read_flag(v) for v in flags.to_numpy(dtype=object)]
    bad_values = [v for v, r in zip(flags, read) if r is None]
    if bad_values:
        shown = ", ".join(repr(v) for v in list(dict.fromkeys(map(str, bad_values)))[:5])
        raise DataError(f"{name}: column {column!r} (error flag) holds {shown}; a flag is true/false, 1/0 or blank "
                        "(not flagged)")
    return np.array(read, dtype=bool)


def read_flag(value: object) -> bool | None:
    """One flag by :data:`FLAG_TEXT`'s rule (missing: False); None when it is not a flag."""
    import numpy as np
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return False
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return bool(value) if value in (0, 1) else None
    if isinstance(value, str):
        return FLAG_TEXT.get(value.strip().lower())
    return None


def check_confidence(confidence: float) -> None:
    """Confidence levels live strictly between 0 and 1."""
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise DataError(f"confidence={confidence!r} must be a number strictly between 0 and 1")


def numeric_column(data: pd.DataFrame, column: str, *, what: str = "data") -> np.ndarray:
    """Column as float64; a value that is neither a number nor missing is named by row.

    Missing values (None, NaN) stay NaN; strings such as ``"3"`` are not coerced, because
    a score stored as text usually means the wrong column was passed.
    """
    import numpy as np
    import pandas as pd

    series = data[column]
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)
    values = pd.to_numeric(series, errors="coerce")
    bad = values.isna() & series.notna()
    if bad.any():
        row = bad.idxmax()
        raise DataError(
            f"{what}: column {column!r} must be numeric; row {_label(row)} holds {series[row]!r}"
        )
    return values.to_numpy(dtype=float, na_value=np.nan)


def plain(value: object) -> object:
    """NumPy scalars as Python ones, so messages read ``12``, not ``np.int64(12)``."""
    import numpy as np

    return value.item() if isinstance(value, np.generic) else value


def _label(row: object) -> str:
    return repr(plain(row))
