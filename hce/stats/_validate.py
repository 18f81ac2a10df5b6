"""The one door every public ``hce.stats`` function that reads a frame goes through.

:func:`reads_frame` wraps a statistic and, before it runs, checks the columns the caller
named: they exist (else :class:`~hce.errors.DataError` listing the columns present);
numeric columns hold finite numbers (``inf``/``-inf`` refused, naming the column and the
count; ``NaN`` is a missing rating the statistic drops and counts); id columns are filled;
a column mixing numbers and text (``1`` and ``"1"``) is read as numbers when every value
parses as one, with an :class:`~hce.errors.HceWarning`, and refused naming the row and
value otherwise. Attempts flagged in the error column (``error=``, default
``"error_flag"``; absent column = nothing flagged) are left out before the check and
counted in a warning, so one log gives one answer whichever statistic reads it.

Keeping the checks here, rather than in each function, means a new statistic gets them by
declaring which of its keywords name columns.
"""

from __future__ import annotations

import functools
import inspect
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hce._checks import _label, flag_values, plain, require_columns
from hce._docstrings import add_parameter, fill_doc
from hce._vocabulary import check_keywords, renamed
from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._blas import one_blas_thread
from hce.stats._resample import bootstrapped
from hce.stats._frames import (  # noqa: F401 (re-exported)
    ATTEMPT_ID, ATTEMPT_KEY, LONG_CRITERION, WITHIN_MIN, EngineFrame, engine_frame, first_min_message, refuse_rows,
)  # fmt: skip

ERROR_DEFAULT = "error_flag"
_UNSET = object()


@dataclass(frozen=True)
class FrameSpec:
    """Which keywords of a statistic name columns, and what those columns must hold.

    ``keys`` name id or grouping columns (checked for presence and for numbers stored as
    text next to numbers); ``texts`` name columns only checked for presence; ``numbers``
    name columns that must be numeric and finite; ``labels`` name rating columns that may
    hold numbers or text, but not both (the columns one keyword names are checked
    together, so a wide table with ``1`` in one rater column and ``"1"`` in another is
    caught); ``ratings_or_key`` names a keyword that is a rater-id column in long layout
    (a string) and the rating columns in wide layout (a list, which then replaces
    ``labels``); ``wide`` names a keyword
    listing numeric item columns where ``None`` means every column (read only when the call
    names no ``keys``: a statistic taking both layouts is long when its keys are given); ``mapping`` names a
    keyword whose mapping values list numeric columns (a CFA model); ``formula`` names a
    formula keyword whose referenced columns are checked as numbers (its response also when
    it is text that reads as numbers, as a ``numbers`` column is read).
    ``varying`` name the scores a statistic measures the variation of (a model's response,
    when the keyword is the formula; an agreement coefficient's ratings): refused when every
    value is missing or all are one value; ``scored`` name scores refused only when every
    value is missing (percent agreement is defined on constant ratings).
    ``blank_keys`` name grouping keywords whose columns may be blank (a stratum left out
    of its own tests); every other id column must be filled and finite.
    ``optional`` name numeric columns checked only when the frame has them; ``fixed``
    are numeric columns with fixed names (the ``sd`` of a spread table).
    ``NaN`` stays a missing value for the statistic to drop and count (every statistic
    here handles missing ratings or refuses them itself). ``log=False`` for tables that are not attempt logs
    (item-by-respondent matrices, spread tables), which get no ``error=`` keyword.
    ``engine`` says how a frame of another engine (Polars, DuckDB, PySpark, ...) is read:
    see :mod:`hce.stats._frames`; ``None`` refuses one, naming the alternatives.
    ``spread=True`` marks a statistic of the spread of repeated attempts: on a log collected
    under a stopping rule (a ``within_min`` column, ``hce.collect.running.stopping``) it reads only
    the attempts within the rule's ``min`` (:func:`first_min_attempts`).
    """

    frame: str = "data"
    keys: tuple[str, ...] = ()
    blank_keys: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    ratings_or_key: str | None = None
    wide: str | None = None
    mapping: str | None = None
    formula: str | None = None
    varying: tuple[str, ...] = ()
    scored: tuple[str, ...] = ()
    log: bool = True
    engine: object = None
    spread: bool = False  # a spread statistic: of a log with a stopping rule, only the attempts within its min


def reads_frame(**spec: object) -> Callable[[Callable], Callable]:
    """Decorate a public statistic so its frame is checked (see the module docstring).

    Keywords are the fields of :class:`FrameSpec`. A function that has no ``error``
    parameter of its own gains a keyword-only ``error: str | None = "error_flag"``, and its
    docstring the shared text of ``error`` (:data:`hce._docstrings.FRAGMENTS`).

    Examples
    --------
    >>> @reads_frame(keys=("item",), numbers=("score",))
    ... def mean_score(data, *, item="item_id", score="total"):
    ...     return data.groupby(item)[score].mean()
    >>> mean_score(pd.DataFrame({"item_id": [1, 2], "total": [3.0, np.inf]}))
    Traceback (most recent call last):
    ...
    hce.errors.DataError: mean_score: column 'total' holds 1 non-finite value(s) (inf or -inf), first in row 1; scores must be finite numbers
    """
    frame_spec = FrameSpec(**spec)  # type: ignore[arg-type]

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func)
        owns_error = "error" in signature.parameters
        inject = frame_spec.log and not owns_error

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            check_keywords(func.__name__, wrapper.__signature__.parameters, kwargs)
            error = kwargs.pop("error", _UNSET) if inject else _UNSET
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments
            if "kwargs" in arguments and isinstance(arguments["kwargs"], dict):
                arguments = {**arguments, **arguments["kwargs"]}
            data = arguments[frame_spec.frame]
            if not isinstance(data, pd.DataFrame):
                other = engine_frame(data)
                if other is None:
                    raise DataError(f"{func.__name__}: {frame_spec.frame} must be a pandas DataFrame or a frame "
                                    "narwhals reads (Polars, PyArrow, DuckDB, PySpark, Dask), "
                                    f"got {type(data).__name__}")  # fmt: skip
                return in_engine(wrapper, func.__name__, frame_spec, bound, other, error, inject)
            if frame_spec.log:
                refuse_repeated_attempts(data, key_columns(frame_spec, arguments), func.__name__)
            if frame_spec.spread:
                data = first_min_attempts(data, func.__name__)
            # Flagged attempts are out before the check: a failed reply's garbage is no error.
            flagged = np.zeros(len(data), dtype=bool)
            if inject:
                flagged = flagged_rows(data, error, func.__name__, required=error is not _UNSET)
            elif owns_error:
                flagged = flagged_rows(data, arguments["error"], func.__name__, required=False)
            valid = data.loc[~flagged] if flagged.any() else data
            checked, changed = check_frame(valid, frame_spec, arguments, func.__name__)
            if inject and flagged.any():
                report_flagged(data, flagged, error, func.__name__)
            bound.arguments[frame_spec.frame] = checked if inject else merge_checked(data, checked, changed)
            with one_blas_thread():  # small factorisations by the thousand: see hce.stats._blas
                return func(*bound.args, **bound.kwargs)

        if inject:
            params = list(signature.parameters.values())
            extra = inspect.Parameter(
                "error", inspect.Parameter.KEYWORD_ONLY, default=ERROR_DEFAULT, annotation="str | None"
            )
            at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
            params.insert(at, extra)
            wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
            before = params[at + 1].name if at + 1 < len(params) else None
            wrapper.__doc__ = add_parameter(wrapper.__doc__ or "", "error", before=before and f"**{before}")
        else:
            wrapper.__signature__ = signature  # type: ignore[attr-defined]
        wrapper.frame_spec = frame_spec  # type: ignore[attr-defined]
        return wrapper

    return decorate




def statistic(*, retired: Mapping[str, str] | None = None, **spec: object) -> Callable[[Callable], Callable]:
    """The one door of a public statistic: every decorator it needs, in their order.

    From the outside in: retired argument names refused, saying what to write
    (:func:`hce._vocabulary.renamed`, with ``retired``, name -> canonical name); the frame
    check (:func:`reads_frame`, with the remaining keywords, the fields of
    :class:`FrameSpec`); the docstring's shared fragments
    (:func:`hce._docstrings.fill_doc`); and, for a function with a ``boot`` parameter, the
    bootstrap keywords in its place (:func:`hce.stats._resample.bootstrapped`).

    Examples
    --------
    >>> @statistic(keys=("item",), numbers=("score",), retired={"targets": "item"})
    ... def mean_score(data, *, item="item_id", score="total"):
    ...     return data.groupby(item)[score].mean()
    >>> mean_score(pd.DataFrame({"item_id": [1, 1], "total": [3.0, 5.0]})).tolist()
    [4.0]
    >>> mean_score(pd.DataFrame({"item_id": [1], "total": [3.0]}), targets="item_id")
    Traceback (most recent call last):
    ...
    TypeError: mean_score() no longer takes 'targets': use item='item_id' (hce 0.x vocabulary, see the glossary)
    """

    def decorate(func: Callable) -> Callable:
        if "boot" in inspect.signature(func).parameters:
            func = bootstrapped(func)
        func = reads_frame(**spec)(fill_doc(func))
        return renamed(**retired)(func) if retired else func

    return decorate


#: The names the long-ratings statistics took in hce 0.x, and what replaced them.
RATINGS_RETIRED = {"targets": "item", "raters": "rater", "ratings": "score"}


def ratings_statistic(*, keys: tuple[str, ...] = ("item", "rater"), retired: Mapping[str, str] | None = None,
                      **spec: object) -> Callable[[Callable], Callable]:  # fmt: skip
    """:func:`statistic` of long ratings, one row per score of an ``item`` by a ``rater``.

    The keys default to ``("item", "rater")`` and the 0.x names ``targets=``, ``raters=`` and
    ``ratings=`` are refused (:data:`RATINGS_RETIRED`, with any ``retired`` of the function's own).
    """
    return statistic(keys=keys, retired={**RATINGS_RETIRED, **(retired or {})}, **spec)


def first_min_attempts(data: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows a spread statistic may read: of a log with a stopping rule, the attempts within its ``min``.

    A collection that stops repeating an item once its scores agree (``hce.collect.running.stopping``)
    biases every later attempt's spread: a cell stops early exactly when its first scores
    happen to agree. The first ``min`` attempts of every cell were taken whatever the scores,
    so their spread is unbiased. Rows of a log without the rule (no ``within_min`` column,
    or a missing value there) are kept.
    """
    if WITHIN_MIN not in data.columns:
        return data
    later = data[WITHIN_MIN].astype("boolean").fillna(True).eq(False).to_numpy()
    if not later.any():
        return data
    warn(first_min_message(name, int(later.sum())), HceWarning)
    return data.loc[~later]


#: Immutable ``attempt_id`` storage found unique, by identity (hashing a million ids takes
#: a second, and a report hands one log to dozens of statistics). Weak: storage that goes
#: away leaves, so a reused ``id()`` never stands for it.
_UNIQUE_IDS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
#: The same, for long views (ids repeated once per criterion) found free of one attempt under two ids.
_PAIRS_CHECKED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def refuse_repeated_attempts(data: pd.DataFrame, named: Sequence[str], name: str) -> None:
    """An attempt log holding one ``attempt_id`` twice counts that attempt twice: refuse it.

    Checked only where the frame has an ``attempt_id`` column that the call does not name
    as a key itself (a table of ratings *of* attempts, ``item="attempt_id"``). A long
    table has an attempt in several rows, one per criterion, rater or other key the call
    names in ``named`` (and one per ``criterion``, :func:`hce.log.to_long`'s column):
    there the id must be unique within each combination of those columns.
    """
    if data.empty or ATTEMPT_ID in named:
        return
    # A key the call names besides the attempt's own (a rater column stacking a judge's rows
    # with the humans' ratings of the same attempts) tells rows of one attempt apart.
    extra = [c for c in dict.fromkeys(named) if c in data.columns and c not in ATTEMPT_KEY and c != ATTEMPT_ID]
    if ATTEMPT_ID not in data.columns:
        refuse_repeated_pairs(data, name, extra)
        return
    # Arrow-backed text (pandas' default) is immutable: a column set anew gets new storage,
    # so the storage's identity says this very column passed already. Others: no memo.
    ids = getattr(data[ATTEMPT_ID].array, "_pa_array", None)
    if ids is not None and _UNIQUE_IDS.get(id(ids)) is ids:
        return
    if not data[ATTEMPT_ID].duplicated().any():
        refuse_repeated_pairs(data, name, extra)
        if ids is not None and not extra:  # a pass that leant on the extra keys holds for this call only
            _UNIQUE_IDS[id(ids)] = ids
        return
    within = [c for c in dict.fromkeys([*named, LONG_CRITERION]) if c in data.columns]
    keys = data[[ATTEMPT_ID, *within]]
    repeated = keys.duplicated(keep=False).to_numpy()
    if not repeated.any():
        # A long view: each attempt once per criterion; one attempt under two ids is still caught, once per view.
        if ids is None or _PAIRS_CHECKED.get(id(ids)) is not ids:
            refuse_repeated_pairs(data, name, extra)
            if ids is not None and not extra:
                _PAIRS_CHECKED[id(ids)] = ids
        return
    first = int(np.flatnonzero(repeated)[0])
    same = (keys == keys.iloc[first]).all(axis=1).to_numpy()
    second = int(np.flatnonzero(repeated & same)[1])
    n_ids = int(keys[repeated].drop_duplicates().shape[0])
    raise DataError(
        f"{name}: attempt_id {data[ATTEMPT_ID].iloc[first]!r} appears in rows {_label(data.index[first])} and "
        f"{_label(data.index[second])} (positions {first} and {second}); {n_ids:,} attempt id(s) appear more than once, "
        "which would count those attempts twice (a log concatenated with itself, or with an overlapping log?); "
        "drop the repeats, or combine overlapping logs with hce.log.merge_logs (`hce log merge`)"
    )


def refuse_repeated_pairs(data: pd.DataFrame, name: str, extra: Sequence[str] = ()) -> None:
    """One attempt (experiment, item, condition, attempt number; and criterion in the long
    view) logged twice under two ``attempt_id`` values counts one score twice: refuse it,
    naming the pair and both ids. Checked where the frame has a log's ``item_id``,
    ``condition_id`` and ``attempt`` (without ``condition_id``, other columns may tell the
    conditions apart: a table of prompt x model, say). ``extra`` are further key columns
    the call names (``rater=``): rows that differ there are not the same attempt twice.
    """
    if not {"item_id", "condition_id", "attempt"} <= set(data.columns):
        return
    key = [c for c in ATTEMPT_KEY if c in data.columns] + list(extra)
    repeated = data.duplicated(key, keep=False).to_numpy()
    if not repeated.any():
        return
    first = int(np.flatnonzero(repeated)[0])
    values = data[key].iloc[first]
    same = (data[key] == values).all(axis=1).to_numpy()
    second = int(np.flatnonzero(same)[1])
    pair = ", ".join(f"{c}={plain(values[c])!r}" for c in key)
    ids = (f"attempt_id {data[ATTEMPT_ID].iloc[first]!r} and {data[ATTEMPT_ID].iloc[second]!r}"
           if ATTEMPT_ID in data.columns else f"rows {_label(data.index[first])} and {_label(data.index[second])}")
    n = int(data.loc[repeated, key].drop_duplicates().shape[0])
    raise DataError(
        f"{name}: the attempt ({pair}) is logged twice, as {ids}; {n:,} attempt(s) are logged more than once, "
        "which would count one score twice: keep one row per attempt (hce.log.merge_logs picks one)"
    )


def columns_of(value: object) -> list[str]:
    """A column keyword's value as a list: ``None`` -> [], ``"a"`` -> ["a"]."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        return [v for v in value if isinstance(v, str)]
    return []


def key_columns(spec: FrameSpec, arguments: Mapping) -> list[str]:
    """The id and grouping columns a call names (a rater column in long layout among them)."""
    keys = [c for k in spec.keys for c in columns_of(arguments.get(k))]
    if spec.ratings_or_key is not None and isinstance(arguments.get(spec.ratings_or_key), str):
        keys.append(arguments[spec.ratings_or_key])
    return keys


def check_frame(
    data: pd.DataFrame, spec: FrameSpec, arguments: dict, name: str
) -> tuple[pd.DataFrame, list[str]]:
    """Check ``data`` against ``spec`` with the call's ``arguments``.

    Returns the frame to use and the columns read anew (numbers stored as text). The
    caller's frame is never modified: a coerced column is replaced in a shallow copy.
    """
    keys, texts, numbers, labels, present = named_columns(spec, arguments, list(data.columns))
    response = None
    if spec.formula is not None and isinstance(arguments.get(spec.formula), str):
        numbers += formula_columns(arguments[spec.formula], data)
        response = formula_response(arguments[spec.formula], data)
        if response is not None and _textlike(data[response]) and _parse(data[response].dropna()).notna().any():
            # scores stored as text are numbers, as every statistic reads them (a value that
            # is not one is refused, naming its row); two labels ("pass"/"fail") stay labels
            numbers.append(response)
    named = keys + texts + numbers + [c for group in labels for c in group]
    require_columns(data, dict.fromkeys(named), what=f"{name}: {spec.frame}")
    rewritten: dict[str, pd.Series] = {}
    for column in dict.fromkeys(numbers):
        rewritten[column] = numeric_values(data, column, name)
    for column in dict.fromkeys(present):
        rewritten[column] = numeric_values(data, column, name)
    for group in labels:
        rewritten.update(label_values(data, group, name))
    blank_ok = {c for k in spec.blank_keys for c in columns_of(arguments.get(k))}
    for column in dict.fromkeys(keys):
        rewritten[column] = key_values(data, column, name, blank_ok=column in blank_ok)
    rewritten = {c: v for c, v in rewritten.items() if v is not None}
    for keyword, constant_ok in [(k, False) for k in spec.varying] + [(k, True) for k in spec.scored]:
        columns = [response] if keyword == spec.formula else columns_of(arguments.get(keyword))
        for column in columns:
            if column is not None and column in data.columns:
                refuse_no_variation(rewritten.get(column, data[column]), column, name, constant_ok=constant_ok)
    if not rewritten:
        return data, []
    return data.assign(**rewritten), list(rewritten)


def refuse_no_variation(values: pd.Series, column: str, name: str, *, constant_ok: bool = False) -> None:
    """The one refusal of scores that cannot be analysed: every value missing, or (unless
    ``constant_ok``) one value in every row, where a variance, a kappa, an alpha or an ICC
    is 0/0 and a model has nothing to explain."""
    present = values.dropna()
    distinct = present.unique()[:2]
    refuse_unvaried(name, column, len(values), len(present), distinct[0] if len(distinct) == 1 else None,
                    constant_ok=constant_ok)  # fmt: skip


def refuse_unvaried(name: str, column: str, n_rows: int, n_present: int, only: object, *, constant_ok: bool) -> None:
    """:func:`refuse_no_variation` from counts: ``n_rows`` rows, ``n_present`` with a score,
    ``only`` the one value they all hold (``None`` when they differ), as an engine's pass finds them."""
    if not n_present:
        raise DataError(
            f"{name}: column {column!r} has no scores: all {n_rows} row(s) are missing "
            "(NaN); check the column name and that the replies were parsed"
        )
    if not constant_ok and only is not None:
        raise DataError(
            f"{name}: column {column!r} holds one value ({plain(only)!r}) in all "
            f"{n_present} row(s) with a score, all scores equal: there is no variation to "
            "analyse (a judge that always gives the same score); check the scores, or report "
            "the constant"
        )


def formula_response(formula: str, data: pd.DataFrame) -> str | None:
    """The response column of ``formula`` (its left-hand side when that is a column name)."""
    lhs = formula.partition("~")[0].strip()
    return lhs if lhs in data.columns else None


def named_columns(
    spec: FrameSpec, arguments: Mapping, columns: list[str]
) -> tuple[list[str], list[str], list[str], list[list[str]], list[str]]:
    """The columns a call names, by role: keys, texts, numbers, label groups, optional
    numbers present among ``columns`` (formula columns aside: they need the data)."""
    keys = key_columns(spec, arguments)
    texts = [c for k in spec.texts for c in columns_of(arguments.get(k))]
    numbers = [c for k in spec.numbers for c in columns_of(arguments.get(k))] + list(spec.fixed)
    labels = [columns_of(arguments.get(k)) for k in spec.labels]
    present = [c for k in spec.optional for c in columns_of(arguments.get(k)) if c in columns]
    if spec.ratings_or_key is not None:
        value = arguments.get(spec.ratings_or_key)
        if not isinstance(value, str) and value is not None:
            labels = [columns_of(value)]  # wide layout: the function checks the rest
    if spec.mapping is not None and isinstance(arguments.get(spec.mapping), Mapping):
        numbers += [c for group in arguments[spec.mapping].values() for c in columns_of(group)]
    if spec.wide is not None and not keys:  # a statistic reading both layouts names keys only in the long one
        named = arguments.get(spec.wide)
        numbers += columns_of(named) if named is not None else [
            c for c in columns if c not in keys and c != arguments.get("error", ERROR_DEFAULT)
        ]
    return keys, texts, numbers, labels, present


def in_engine(wrapper: Callable, name: str, spec: FrameSpec, bound: inspect.BoundArguments,
              frame: EngineFrame, error: object, inject: bool) -> object:
    """Run a statistic on a frame of another engine (see :mod:`hce.stats._frames`)."""
    if spec.engine is None or spec.formula is not None:
        raise refuse_rows(name, frame.engine)
    arguments = dict(bound.arguments)
    if "kwargs" in arguments and isinstance(arguments["kwargs"], dict):
        arguments = {**arguments, **arguments.pop("kwargs")}
    keys, texts, numbers, labels, present = named_columns(spec, arguments, frame.columns)
    named = keys + texts + numbers + present + [c for group in labels for c in group]
    missing = [c for c in dict.fromkeys(named) if c not in frame.columns]
    if missing:
        raise DataError(f"{name}: {spec.frame} has no column(s) {missing}; columns present: {frame.columns}")
    column = arguments.get("error") if not inject else (ERROR_DEFAULT if error is _UNSET else error)
    if inject and error is not _UNSET and isinstance(column, str) and column not in frame.columns:
        raise DataError(f"{name}: data has no column(s) {[column]}; columns present: {frame.columns}")
    if spec.log:
        frame.refuse_repeated_attempts(keys, name)
    if spec.spread:
        frame = frame.first_min_attempts(name)
    # flagged attempts out before the check, as in pandas' door: a failed reply's garbage is no error
    if inject and isinstance(column, str) and column in frame.columns:
        if not frame.is_numeric(column):
            raise DataError(f"{name}: column {column!r} (error flag) must be boolean, got {frame.schema[column]}")
        flagged = frame.count_flagged(column)
        if flagged:  # none flagged: the frame stays the caller's, whose checks are remembered
            warn(f"{name}: left out {flagged} attempt(s) flagged in {column!r}", HceWarning)
            frame = frame.valid(column)
    blank_ok = [c for k in spec.blank_keys for c in columns_of(arguments.get(k))]
    scores = {c: constant_ok for k, constant_ok in [(k, False) for k in spec.varying] + [(k, True) for k in spec.scored]
              for c in columns_of(arguments.get(k)) if c in frame.columns}  # fmt: skip
    found = frame.check(name, keys=keys, blank_keys=blank_ok, numbers=numbers + present,
                        labels=[c for group in labels for c in group], scores=scores)  # fmt: skip
    for score, (n_rows, n_present, only) in found.items():  # the refusal pandas' door makes, from one pass
        refuse_unvaried(name, score, n_rows, n_present, only, constant_ok=scores[score])
    arguments.pop(spec.frame)
    return spec.engine(frame, **arguments)


def formula_columns(formula: str, data: pd.DataFrame) -> list[str]:
    """Numeric columns of ``data`` a model formula refers to (response and predictors)."""
    names = set(re.findall(r"[A-Za-z_.][\w.]*", formula))
    return [c for c in data.columns if c in names and _is_numberlike(data[c])]


def _is_numberlike(series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_numeric_dtype(series):
        return True
    if not _textlike(series) or _all_text(series):
        return False
    kinds = {_kind(v) for v in series.dropna()}
    return "number" in kinds


def _all_text(series: pd.Series) -> bool:
    """Every non-missing value is a str: pandas' C type inference, not a Python call per row
    (the common id column, a million rows of it in a large log)."""
    return pd.api.types.infer_dtype(series, skipna=True) == "string"


def _kind(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "number"
    if isinstance(value, str):
        return "text"
    return "other"


def _parse(values: pd.Series) -> pd.Series:
    """Text read as numbers (``" 3 "`` -> 3.0); NaN where a value does not parse."""
    return pd.to_numeric(values.map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce")


def _numbers_or_refuse(series: pd.Series, column: str, name: str, problem: str) -> pd.Series:
    """``series`` read as numbers; the first value that is not one is named by row."""
    parsed = _parse(series)
    bad = parsed.isna() & series.notna()
    if bad.any():
        row = bad.idxmax()
        raise DataError(
            f"{name}: column {column!r} {problem}; row {_label(row)} holds {series[row]!r}, "
            f"which is not a number ({int(bad.sum())} such value(s)); give every value as a number"
        )
    return parsed


def numeric_values(
    data: pd.DataFrame, column: str, name: str
) -> pd.Series | None:
    """Check a numeric column; return the coerced column, or ``None`` when it is fine as is."""
    series = data[column]
    coerced = None
    if pd.api.types.is_bool_dtype(series):
        return None
    if not pd.api.types.is_numeric_dtype(series):
        parsed = _numbers_or_refuse(series, column, name, "must be numeric")
        text = series.map(lambda v: isinstance(v, str))
        if text.any():
            warn(
                f"{name}: column {column!r} holds numbers stored as text "
                f"({int(text.sum())} value(s), e.g. {series[text].iloc[0]!r}); read as numbers",
                HceWarning,
            )
        coerced = series = parsed.astype(float)
    values = series.to_numpy(dtype=float, na_value=np.nan)
    check_finite(values, column, name, data.index)
    return coerced


def check_finite(values: np.ndarray, column: str, name: str, index: pd.Index) -> None:
    """``inf``/``-inf`` raise a DataError naming the column, the count and the first row."""
    infinite = np.isinf(values)
    if infinite.any():
        raise DataError(
            f"{name}: column {column!r} holds {int(infinite.sum())} non-finite value(s) "
            f"(inf or -inf), first in row {_label(index[np.flatnonzero(infinite)[0]])}; "
            "scores must be finite numbers"
        )


def label_values(data: pd.DataFrame, columns: list[str], name: str) -> dict[str, pd.Series]:
    """Ratings that may be numbers or text, but not both: coerce or refuse a mix.

    ``columns`` are checked together (the rater columns of a wide table form one set of
    ratings). Returns the columns to replace, each read as numbers.
    """
    kinds = {c: data[c].dropna().map(_kind) for c in columns if _textlike(data[c])}
    numeric = [c for c in columns if _numeric_dtype(data[c])]
    has_number = bool(numeric) or any((k == "number").any() for k in kinds.values())
    has_text = any((k == "text").any() for k in kinds.values())
    for column in numeric:
        check_finite(data[column].to_numpy(dtype=float, na_value=np.nan), column, name, data.index)
    for column, kind in kinds.items():
        numbers = pd.to_numeric(data[column][kind.index[kind == "number"]], errors="coerce")
        check_finite(numbers.to_numpy(dtype=float), column, name, numbers.index)
    if not (has_number and has_text):
        return {}
    out = {}
    for column in kinds:
        parsed = _numbers_or_refuse(
            data[column], column, name, f"mixes numbers and text with the other ratings in {columns}"
        )
        check_finite(parsed.to_numpy(dtype=float), column, name, data.index)
        out[column] = parsed
    text = {c: int((k == "text").sum()) for c, k in kinds.items() if (k == "text").any()}
    warn(
        f"{name}: ratings in {columns} mix numbers and numbers stored as text "
        f"({sum(text.values())} value(s) in column(s) {list(text)}); all read as numbers",
        HceWarning,
    )
    return out


def _textlike(series: pd.Series) -> bool:
    """Object or string dtype (pandas 3 stores text as ``str``), so it may hold text."""
    return pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series)


def _numeric_dtype(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def key_values(data: pd.DataFrame, column: str, name: str, *, blank_ok: bool = False) -> pd.Series | None:
    """Check an id or grouping column; ``1`` next to ``"1"`` is read as one id.

    A blank id (unless ``blank_ok``) or an infinite one cannot be grouped honestly, so it
    is refused with its row; ids mixing ``1`` and ``"1"`` would split one item in two.
    """
    series = data[column]
    blank = series.isna().to_numpy()
    if blank.any() and not blank_ok:
        raise DataError(
            f"{name}: id column {column!r} is blank in {int(blank.sum())} row(s), first in row "
            f"{_label(data.index[np.flatnonzero(blank)[0]])}; label every row or drop those rows"
        )
    if _numeric_dtype(series) and not pd.api.types.is_integer_dtype(series):  # an integer is never infinite
        check_finite(series.to_numpy(dtype=float, na_value=np.nan), column, name, data.index)
    if not _textlike(series) or _all_text(series):
        return None
    kinds = series.dropna().map(_kind)
    if (kinds == "number").any():
        numbers = pd.to_numeric(series[kinds.index[kinds == "number"]], errors="coerce")
        check_finite(numbers.to_numpy(dtype=float), column, name, numbers.index)
    if not ((kinds == "number").any() and (kinds == "text").any()):
        return None
    parsed = _parse(series)
    if (parsed.isna() & series.notna()).any():
        return None  # text ids next to numeric ones: distinct labels, nothing to merge
    warn(
        f"{name}: id column {column!r} mixes numbers and numbers stored as text "
        f"(e.g. {series[kinds[kinds == 'text'].index[0]]!r}); all read as numbers",
        HceWarning,
    )
    return parsed


def flagged_rows(data: pd.DataFrame, error: object, name: str, *, required: bool) -> np.ndarray:
    """True for the attempts flagged in column ``error`` (``_UNSET``: the default column).

    An absent column flags nothing unless ``required`` (the caller named it); the flags are
    read by :func:`hce._checks.flag_values`, the one rule for every statistic and importer.
    """
    column = ERROR_DEFAULT if error is _UNSET else error
    none = np.zeros(len(data), dtype=bool)
    if column is None or not isinstance(column, str):
        return none
    if column not in data.columns:
        if required:
            require_columns(data, [column], what=f"{name}: data")
        return none
    return flag_values(data[column], column, name)


def report_flagged(data: pd.DataFrame, flagged: np.ndarray, error: object, name: str) -> None:
    """Say how many flagged attempts a statistic left out, and which rows."""
    column = ERROR_DEFAULT if error is _UNSET else error
    rows = data.index[flagged][:5]
    warn(
        f"{name}: left out {int(flagged.sum())} attempt(s) flagged in {column!r} "
        f"(rows {', '.join(_label(r) for r in rows)}{', ...' if flagged.sum() > 5 else ''})",
        HceWarning,
    )


def merge_checked(data: pd.DataFrame, checked: pd.DataFrame, changed: list[str]) -> pd.DataFrame:
    """The full frame with the columns the check rewrote; flagged rows get NaN there.

    For functions that count flagged attempts themselves: they see every row, while the
    values the check read as numbers (and whatever a failed reply left) are cleared.
    """
    if not changed:
        return data
    out = data.copy(deep=False)
    for column in changed:
        out[column] = checked[column].reindex(data.index)
    return out


def warn_undefined_sd(n: np.ndarray, name: str) -> None:
    """Say when items with fewer than two scores leave an SD undefined (NaN)."""
    short = int((np.asarray(n) < 2).sum())
    if short:
        warn(f"{name}: {short} item(s) have fewer than 2 scores, so their sd is NaN", HceWarning)
