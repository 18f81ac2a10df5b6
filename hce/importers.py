"""Bring other tools' judge logs and rating tables into hce, reporting what could not be mapped.

Two targets:

* the **attempt log** (:mod:`hce.log`): judge outputs with repeated samples per item, from
  G-Eval-style JSON (:func:`from_geval`) or Inspect AI evaluation logs (:func:`from_inspect`);
* the **ratings table**: one row per item x rater x criterion with columns
  ``item_id, rater_id, criterion, score`` (:data:`RATINGS_COLUMNS`), from long or wide
  tables (:func:`ratings_long`, :func:`ratings_wide`), per-item label lists
  (:func:`ratings_lists`) and per-item mean ratings (:func:`item_means`).

Every importer returns an :class:`Imported`: the data plus a ``problems`` table naming each
record that could not be mapped (``record``, ``field``, ``problem``). Problems never vanish:
a record that fails becomes a flagged row (attempt logs) or a problem line (ratings), and a
:class:`ImportProblemWarning` says how many there were.

Judge replies are scored by the rule of :mod:`hce.score_extraction`; a flagged reply keeps
no score. A rating in a ratings table is the cell's value: a number, text that is wholly
one number (``"3"``), or a category label; one table's ratings are all numbers or all
labels, and a blank cell of a wide table is a missing rating.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hce._checks import is_missing_text, plain, require_columns
from hce._warnings import warn
from hce.errors import DataError, HceWarning, LogFormatError
from hce.log import make_attempt_id, validate_log
from hce.score_extraction import Extracted, extract_score

RATINGS_COLUMNS = ("item_id", "rater_id", "criterion", "score")
# Inspect AI's letter grades, mapped as its value_to_float() does.
INSPECT_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


class ImportProblemWarning(HceWarning):
    """Some records could not be mapped; see ``Imported.problems``."""


class MadeUpIdWarning(HceWarning):
    """An importer had to make item ids up (no key field, or a key that repeats); says how to give one."""


@dataclass
class Imported:
    """An imported table and the records that could not be mapped.

    Attributes
    ----------
    data : DataFrame
        An attempt log or a ratings table.
    problems : DataFrame
        One row per problem: ``record`` (its position or id in the source), ``field``, ``problem``.
    source : str
    missing : int
        Blank cells of a wide table: ratings a sparse design never asked for (not problems).
    """

    data: pd.DataFrame
    problems: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["record", "field", "problem"]))
    source: str = ""
    missing: int = 0

    def summary(self) -> str:
        """One line: rows imported, blank cells and problems found."""
        blank = f", {self.missing:,} blank cell(s) read as missing ratings" if self.missing else ""
        return f"{self.source}: {len(self.data):,} rows imported{blank}, {len(self.problems):,} problem(s)"


class _Problems:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, record: Any, field_name: str, problem: str) -> None:
        record = plain(record)
        self.rows.append({"record": record, "field": field_name, "problem": problem})

    def result(self, data: pd.DataFrame, source: str, missing: int = 0) -> Imported:
        problems = pd.DataFrame(self.rows, columns=["record", "field", "problem"])
        if len(problems):
            first = self.rows[0]
            warn(
                f"{source}: {len(problems)} record problem(s), e.g. record {first['record']!r} "
                f"field {first['field']!r}: {first['problem']}; see .problems",
                ImportProblemWarning)
        return Imported(data=data, problems=problems, source=source, missing=missing)


def _load_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (FileNotFoundError, IsADirectoryError):
        raise DataError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{path}: byte offset {exc.start} is not UTF-8 text; expected a JSON file") from None
    except json.JSONDecodeError as exc:
        raise LogFormatError(f"{path}: not valid JSON ({exc}); expected a JSON file") from None


def _attempt_log(rows: list[dict[str, Any]], source: str, labels: list[str]) -> pd.DataFrame:
    for row, label in zip(rows, labels):
        attempt = row["attempt"]
        if isinstance(attempt, bool) or not isinstance(attempt, (int, np.integer)) or attempt < 1:
            raise LogFormatError(f"{source}: {label}: expected a whole number >= 1 as the attempt (epoch), got {attempt!r}")
        row["attempt_id"] = make_attempt_id(row["experiment_id"], row["item_id"], row["condition_id"], row["attempt"])
    columns = ["attempt_id", *(k for k in rows[0] if k != "attempt_id")] if rows else ["attempt_id", "item_id", "attempt"]
    return validate_log(pd.DataFrame(rows, columns=columns), source=source, row_labels=labels)


def _whole(value: Any) -> bool:
    """Whether a scale bound was given as a whole number (an int, not a float): the scale is then an integer one."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _number_or_none(value: Any) -> float | None:
    """A human score field: a finite number, or text that holds exactly one number."""
    return extract_score(value).value


# --- attempt logs ------------------------------------------------------------------------


def from_geval(
    path: str | os.PathLike,
    *,
    condition_id: str,
    model: str | None = None,
    experiment_id: str = "imported",
    item_keys: Sequence[str] = ("doc_id", "system_id"),
    score: Callable[[Any], float | None] | None = None,
    low: float | None = None,
    high: float | None = None,
    levels: Collection[float] | None = None,
    ids: Mapping[str, Any] | None = None,
    n_items: int | None = None,
) -> Imported:
    """Import a G-Eval-style JSON file: one record per item with its sampled judge replies.

    Each record's ``all_responses`` become attempts 1..n of the item. A numeric reply is its
    own score; a text reply is read by the rule of :mod:`hce.score_extraction`: the
    number after a score label (``Rating: 2``), else the only number within
    ``[low, high]`` once scale statements (``1-5``, ``out of 5``) are set aside. A reply
    with no such number, with conflicting ones, outside ``[low, high]`` or off ``levels``
    is kept as an attempt with ``error_flag`` set, ``total`` empty and the reply in
    ``response_text`` (for audit). The record's human ``scores`` dict becomes
    ``human_<name>`` columns; ``source``/``system_output`` are not copied.

    Parameters
    ----------
    path : path
        A JSON list of records (G-Eval, Liu et al. 2023; Chiang & Lee 2023).
    condition_id : str
        The prompt variant / condition the file holds (one file, one condition).
    model : str, optional
        The judge model, logged in ``model``.
    experiment_id : str
    item_keys : sequence of str
        Record fields that together identify the item. When a record has none of them,
        or two records share a key, the item id is made up (the record's position,
        or ``<key>#<position>``) and a :class:`MadeUpIdWarning` says so; ``item_keys=()``
        asks for position ids on purpose.
    score : callable, optional
        Reply -> score or None, replacing the rule above (the range is still checked).
    low, high : float, optional
        The valid score range; replies outside it are flagged. Given as whole numbers
        (``low=1, high=3``) they make an integer scale: a text reply off its levels
        (``"1.3"``) is flagged with the reason (a number in the JSON is a computed score,
        kept); give floats (``1.0, 3.0``) for a continuous scale.
    levels : collection of float, optional
        The scale's levels when it has gaps (a rubric with ``allow_gaps``); other values are flagged.
    ids : mapping, optional
        Your item id for each record key (the ``item_keys`` fields joined by ``|``): the
        join to a companion table on a real key, e.g. the response text to ``items.csv``'s
        ``item_id``. A record whose key it lacks is named in ``.problems`` and left out.
        An attempt log's ``item_id`` is text (the log schema): ids given as numbers are
        stored as their text (``10`` as ``"10"``): join them back with
        ``items.astype({"item_id": str})``.
    n_items : int, optional
        With ``item_keys=()`` (position ids): the number of items of the companion file
        the positions stand for. A file of another length has a gap or an extra record,
        so every position after it names the wrong item: a :class:`MadeUpIdWarning` says so.

    Returns
    -------
    Imported
        ``.data`` is an attempt log; ``.problems`` lists malformed records.

    Examples
    --------
    >>> import json, tempfile, os
    >>> from pathlib import Path
    >>> from hce.importers import from_geval
    >>> path = os.path.join(tempfile.mkdtemp(), "geval.json")
    >>> records = [{"doc_id": "d1", "system_id": "M1", "scores": {"coherence": 2.5},
    ...             "all_responses": ["3", "Coherence: 2", "n/a", "On a 1-3 scale, 2 or 3"]}]
    >>> _ = Path(path).write_text(json.dumps(records))
    >>> imp = from_geval(path, condition_id="geval", low=1, high=3)
    >>> imp.data[["item_id", "attempt", "total", "error_flag", "human_coherence"]]
      item_id  attempt  total  error_flag  human_coherence
    0   d1|M1        1    3.0       False              2.5
    1   d1|M1        2    2.0       False              2.5
    2   d1|M1        3    NaN        True              2.5
    3   d1|M1        4    NaN        True              2.5
    >>> imp.data["error_message"].iloc[3]
    'conflicting scores in the reply: 2, 3'
    """
    records = _load_json(path)
    problems = _Problems()
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    # Whole-number bounds make an integer scale: a judge's text reply "1.3" is no reply on it (a number
    # in the JSON, G-Eval's probability-weighted score say, is a computed score and may fall between levels).
    integer_levels = range(int(low), int(high) + 1) if levels is None and _whole(low) and _whole(high) else levels
    rows: list[dict[str, Any]] = []
    labels: list[str] = []
    seen: set[str] = set()
    made_up: list[str] = []
    for position, record in enumerate(records):
        if not isinstance(record, dict):
            problems.add(position, "", f"expected a JSON object, got {type(record).__name__}")
            continue
        parts = [str(record[k]) for k in item_keys if record.get(k) is not None]
        item_id = "|".join(parts) if parts else str(position)
        if ids is not None:
            if item_id not in ids:
                problems.add(position, "|".join(item_keys), f"no item id in ids= for the key {item_id[:60]!r}")
                continue
            item_id = str(ids[item_id])
        if item_keys and not parts:
            made_up.append(item_id)
        if item_id in seen:
            item_id = f"{item_id}#{position}"  # e.g. Topical-Chat repeats a context with two responses
            made_up.append(item_id)
        seen.add(item_id)
        replies = record.get("all_responses")
        if not isinstance(replies, list) or not replies:
            problems.add(item_id, "all_responses", "missing or empty: no judge replies to import")
            continue
        humans = record.get("scores") if isinstance(record.get("scores"), dict) else {}
        for attempt, reply in enumerate(replies, start=1):
            value = reply if score is None else score(reply)
            if value is None and score is not None:
                read = Extracted(None, f"the score function found no score in reply {reply!r}")
            else:
                read = extract_score(value, low=low, high=high, levels=integer_levels if isinstance(value, str) else levels)
            rows.append(
                {
                    "experiment_id": experiment_id,
                    "item_id": item_id,
                    "condition_id": condition_id,
                    "prompt_id": condition_id,
                    "model": model,
                    "attempt": attempt,
                    "response_text": reply if isinstance(reply, str) else json.dumps(reply),
                    "total": read.value,
                    "error_flag": read.problem is not None,
                    "error_message": read.problem,
                    **{f"human_{k}": _number_or_none(v) for k, v in humans.items()},
                }
            )
            labels.append(f"record {position}, reply {attempt}")
    if not item_keys and n_items is not None and n_items != len(records):
        warn(f"{path}: {len(records):,} records numbered by position stand for {n_items:,} items: a record is missing "
             "or extra, so every position after it names the wrong item. Join on a real key instead (item_keys= and "
             "ids=)", MadeUpIdWarning)
    if made_up:
        warn(
            f"{path}: {len(made_up):,} item id(s) were made up because records lack {list(item_keys)} or repeat them "
            f"(e.g. {made_up[0]!r}); they cannot be joined back to your items. Pass item_keys= naming the record "
            "fields that identify an item (or item_keys=() for position ids on purpose)",
            MadeUpIdWarning)
    return problems.result(_attempt_log(rows, str(path), labels), str(path))


def from_inspect(
    path: str | os.PathLike,
    *,
    score: str | None = None,
    experiment_id: str | None = None,
) -> Imported:
    """Import an Inspect AI evaluation log (``.json``): one attempt per sample and epoch.

    Mapping: ``item_id`` = sample id, ``attempt`` = epoch, ``condition_id`` =
    ``task|model``, ``model`` = the eval's model, ``model_version`` = the output's model,
    ``response_text`` = the first choice's text, tokens and time from the output's usage.
    Every scorer becomes a column ``score_<name>`` (dict values: ``score_<name>_<key>``);
    letter grades C/I/P/N map to 1/0/0.5/0 as in Inspect's ``value_to_float``. The scorer
    named by ``score`` (default: the only one) is also ``total``, and its explanation
    ``reasoning``. A sample with an error is kept with ``error_flag`` set.

    Parameters
    ----------
    path : path
        An Inspect log written with ``--log-format json``.
    score : str, optional
        Which scorer's value is ``total`` (needed when there are several).
    experiment_id : str, optional
        Default: the eval's task name.

    Returns
    -------
    Imported
    """
    log = _load_json(path)
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise DataError(f"{path}: not an Inspect AI evaluation log (no 'eval' header)")
    problems = _Problems()
    spec = log["eval"]
    task = str(spec.get("task", "task"))
    model = spec.get("model")
    config = spec.get("model_generate_config") or spec.get("config") or {}
    samples = log.get("samples")
    if not isinstance(samples, list) or not samples:
        raise DataError(f"{path}: the log holds no samples (was it written with log_samples=False?)")
    rows = []
    labels = []
    for position, sample in enumerate(samples):
        record = sample.get("id", position) if isinstance(sample, dict) else position
        if not isinstance(sample, dict) or "id" not in sample:
            problems.add(record, "id", "sample without an id")
            continue
        where = f"{path}: samples[{position}] (id {record!r})"
        output = _mapping(sample, "output", where)
        usage = _mapping(output, "usage", f"{where}.output")
        scores = _mapping(sample, "scores", where)
        choices = output.get("choices") or []
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise LogFormatError(f"{where}: field 'output.choices': expected a list of objects, got {choices!r:.60}")
        row: dict[str, Any] = {
            "experiment_id": experiment_id or task,
            "item_id": str(sample["id"]),
            "condition_id": f"{task}|{model}",
            "model": model,
            "model_version": output.get("model"),
            "attempt": sample.get("epoch", 1),
            "temperature": config.get("temperature"),
            "max_tokens": config.get("max_tokens"),
            "top_p": config.get("top_p"),
            "seed": config.get("seed"),
            "response_text": _choice_text(output, choices, where),
            "finish_reason": (choices or [{}])[0].get("stop_reason"),
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cached_tokens": usage.get("input_tokens_cache_read"),
            "latency_s": output.get("time"),
            "error_flag": False,
            "error_message": None,
        }
        chosen = score or (next(iter(scores)) if len(scores) == 1 else None)
        for name, entry in scores.items():
            value = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(value, dict):
                for key, sub in value.items():
                    row[f"score_{name}_{key}"] = _score_value(sub, record, f"scores.{name}.{key}", problems)
            else:
                row[f"score_{name}"] = _score_value(value, record, f"scores.{name}", problems)
        if chosen is not None:
            if chosen not in scores:
                problems.add(record, f"scores.{chosen}", f"no scorer {chosen!r}; scorers: {sorted(scores)}")
            else:
                row["total"] = row.get(f"score_{chosen}")
                explanation = scores[chosen].get("explanation") if isinstance(scores[chosen], dict) else None
                row["reasoning"] = explanation if isinstance(explanation, str) else None
        error = sample.get("error")
        if error:
            row["error_flag"] = True
            row["error_message"] = error.get("message") if isinstance(error, dict) else str(error)
            row["total"] = None  # a failed sample has no score, whatever the scorer wrote
        elif chosen is not None and row.get("total") is None:
            row["error_flag"] = True
            row["error_message"] = f"scorer {chosen!r} gave no numeric value"
        rows.append(row)
        labels.append(f"samples[{position}] (id {record!r})")
    if score is None and rows and "total" not in rows[0]:
        problems.add("*", "scores", "several scorers and score= not given: no 'total' column made")
    return problems.result(_attempt_log(rows, str(path), labels), str(path))


def _mapping(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """A sub-object of an Inspect log; absent is empty, anything but an object is refused."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LogFormatError(f"{where}: field {key!r}: expected an object, got {type(value).__name__} {value!r:.60}")
    return value


def _choice_text(output: Mapping[str, Any], choices: list[dict], where: str) -> str | None:
    if not choices:
        return output.get("completion")
    content = _mapping(choices[0], "message", f"{where}.output.choices[0]").get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def _score_value(value: Any, record: Any, field_name: str, problems: _Problems) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in INSPECT_GRADES:
        return INSPECT_GRADES[value]
    number = extract_score(value).value if isinstance(value, str) else None
    if number is None and value is not None:
        problems.add(record, field_name, f"score value {value!r} is not numeric or a C/I/P/N grade")
    return number


# --- ratings tables ----------------------------------------------------------------------


def _is_blank(value: Any) -> bool:
    if isinstance(value, str):
        return is_missing_text(value)  # blank, or NA / NaN / null as R and pandas write a missing rating
    return value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and np.isnan(value))


def _as_number(value: Any) -> float | None:
    """A rating as a number: numbers as they are, text only when it is wholly one number."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*", value):
        return float(value)
    return None


def _ratings(frame: pd.DataFrame, problems: _Problems, source: str) -> pd.DataFrame:
    """The ratings table; scores are all numbers or all labels, never a mix (1 and "1" differ).

    ``frame`` carries, besides the ratings columns, ``_column`` and ``_row``: where the
    user wrote each rating, so errors and reports name the user's own cells.
    """
    values = frame["score"].to_numpy(dtype=object)
    numbers = [_as_number(v) for v in values]
    for i, number in enumerate(numbers):
        if number is not None and not np.isfinite(number):
            raise DataError(f"{source}: column {frame['_column'].iloc[i]!r}, row {plain(frame['_row'].iloc[i])!r}: "
                            f"rating {plain(values[i])!r} is not a finite number")
    parsed = np.array([n is not None for n in numbers], dtype=bool)
    if parsed.any() and not parsed.all():
        i = int(np.flatnonzero(~parsed)[0])
        example = values[int(np.flatnonzero(parsed)[0])]
        raise DataError(
            f"{source}: column {frame['_column'].iloc[i]!r}, row {plain(frame['_row'].iloc[i])!r} holds "
            f"{plain(values[i])!r}, which is not a number, while other ratings are numbers (e.g. {plain(example)!r}); "
            "one scale's ratings must be all numbers or all labels: recode the labels, or blank the cells that hold no rating"
        )
    out = frame.loc[:, list(RATINGS_COLUMNS)].reset_index(drop=True)
    for column in ("item_id", "rater_id", "criterion"):
        out[column] = out[column].astype("str")
    if parsed.all() and len(values):
        text = np.array([isinstance(v, str) for v in values], dtype=bool)
        if text.any() and not text.all():
            # A column of text numbers next to real numbers (a CSV cell read as "1"): 1 and "1" are one rating.
            for column, count in pd.Series(frame["_column"].to_numpy()[text]).value_counts(sort=False).items():
                first = int(np.flatnonzero(text & (frame["_column"].to_numpy() == column))[0])
                problems.add(
                    f"column {column}", "score",
                    f"{count:,} text rating(s) such as {values[first]!r} (row {plain(frame['_row'].iloc[first])!r}) "
                    "read as numbers, as the other ratings are numbers",
                )
        out["score"] = np.array(numbers, dtype="float64")
    return out


def _check_scores(frame: pd.DataFrame, problems: _Problems, labels: pd.Series | None = None) -> pd.DataFrame:
    """Drop rows without a score, recording each in problems (nothing vanishes unreported)."""
    missing = frame["score"].map(_is_blank).to_numpy(dtype=bool)
    for i in np.flatnonzero(missing):
        record = labels.iloc[i] if labels is not None else frame.index[i]
        problems.add(record, "score", f"no rating from rater {frame['rater_id'].iloc[i]!r}")
    return frame.loc[~missing]


def _no_duplicates(frame: pd.DataFrame, source: str) -> None:
    duplicated = frame.duplicated(["item_id", "rater_id", "criterion"], keep=False).to_numpy()
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        same = duplicated & (frame[["item_id", "rater_id", "criterion"]] == first[["item_id", "rater_id", "criterion"]]).all(axis=1).to_numpy()
        rows = [plain(r) for r in frame["_row"].to_numpy()[same][:2]]
        raise DataError(
            f"{source}: rater {plain(first['rater_id'])!r} rated item {plain(first['item_id'])!r} on "
            f"{plain(first['criterion'])!r} more than once (rows {rows} of your table, column {first['_column']!r})"
        )


def ratings_long(
    data: pd.DataFrame,
    *,
    item: str,
    rater: str,
    score: str,
    criterion: str | None = None,
    criterion_name: str = "score",
    source: str = "data",
) -> Imported:
    """A long table (one row per rating) as a ratings table.

    Parameters
    ----------
    data : DataFrame
    item, rater, score : str
        Column names.
    criterion : str, optional
        Column naming the criterion; without it every rating belongs to ``criterion_name``.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.importers import ratings_long
    >>> df = pd.DataFrame({"q": [1, 1, 2], "who": ["a", "b", "a"], "grade": [3, 4, None]})
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     imp = ratings_long(df, item="q", rater="who", score="grade")
    >>> print(caught[0].message)
    data: 1 record problem(s), e.g. record 2 field 'score': no rating from rater 'a'; see .problems
    >>> imp.data
      item_id rater_id criterion  score
    0       1        a     score    3.0
    1       1        b     score    4.0
    >>> imp.problems
       record  field                   problem
    0       2  score  no rating from rater 'a'
    """
    require_columns(data, [c for c in (item, rater, score, criterion) if c])
    frame = pd.DataFrame(
        {
            "item_id": data[item].to_numpy(),
            "rater_id": data[rater].to_numpy(),
            "criterion": data[criterion].to_numpy() if criterion else criterion_name,
            "score": data[score].to_numpy(),
            "_column": score,
            "_row": data.index,
        },
        index=data.index,
    )
    problems = _Problems()
    frame = _check_scores(frame, problems, labels=data[item])
    _no_duplicates(frame, source)
    return problems.result(_ratings(frame, problems, source), source)


def ratings_wide(
    data: pd.DataFrame,
    *,
    item: str,
    raters: Sequence[str] | Mapping[str, str],
    criterion: str | None = None,
    criterion_name: str = "score",
    source: str = "data",
) -> Imported:
    """A wide table (one column per rater, e.g. three physicians per row) as a ratings table.

    Parameters
    ----------
    item : str
        Column identifying the item (rows may repeat an item only with distinct criteria).
    raters : list of str or mapping
        Rater columns; a mapping renames them (column -> rater id).

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.importers import ratings_wide
    >>> df = pd.DataFrame({"claim": ["c1", "c2"], "label_0": ["entail", "neutral"], "label_1": ["entail", "entail"]})
    >>> ratings_wide(df, item="claim", raters={"label_0": "md1", "label_1": "md2"}).data
      item_id rater_id criterion    score
    0      c1      md1     score   entail
    1      c1      md2     score   entail
    2      c2      md1     score  neutral
    3      c2      md2     score   entail
    """
    mapping = dict(raters) if isinstance(raters, Mapping) else {c: c for c in raters}
    require_columns(data, [item, *mapping, *([criterion] if criterion else [])])
    parts = [
        pd.DataFrame(
            {
                "item_id": data[item].to_numpy(),
                "rater_id": rater_id,
                "criterion": data[criterion].to_numpy() if criterion else criterion_name,
                "score": data[column].to_numpy(dtype=object),
                "_column": column,
                "_row": data.index,
            }
        )
        for column, rater_id in mapping.items()
    ]
    long = pd.concat(parts, ignore_index=True)
    # Row by row, raters in column order: the order a reader of the wide table expects.
    long = long.iloc[np.argsort(np.tile(np.arange(len(data)), len(mapping)), kind="stable")]
    # A blank cell is a rating the design never asked for (sparse crowd tables), not a problem.
    blank = long["score"].map(_is_blank).to_numpy(dtype=bool)
    long = long.loc[~blank]
    problems = _Problems()
    _no_duplicates(long, source)
    return problems.result(_ratings(long, problems, source), source, missing=int(blank.sum()))


def ratings_lists(
    data: pd.DataFrame,
    *,
    item: str,
    labels: str,
    raters: str | None = None,
    criterion_name: str = "score",
    source: str = "data",
) -> Imported:
    """Items with a list of labels each (and optionally a parallel list of rater ids).

    HealthBench's meta-evaluation stores ``binary_labels`` with ``anonymized_physician_ids``
    per item; without ``raters`` the position in the list is the rater id. A row whose two
    lists differ in length is reported and skipped.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.importers import ratings_lists
    >>> df = pd.DataFrame({"id": ["a", "b"], "labels": [[True, False], [True]], "who": [["p1", "p2"], ["p1", "p3"]]})
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     imp = ratings_lists(df, item="id", labels="labels", raters="who")
    >>> imp.data
      item_id rater_id criterion  score
    0       a       p1     score    1.0
    1       a       p2     score    0.0
    >>> imp.problems.iloc[0]["problem"]
    '1 labels but 2 rater ids'
    """
    require_columns(data, [item, labels, *([raters] if raters else [])])
    problems = _Problems()
    rows = []
    lists = (list, tuple, np.ndarray)
    for position in range(len(data)):
        item_id = data[item].iloc[position]
        values = data[labels].iloc[position]
        if not isinstance(values, lists):
            problems.add(item_id, labels, f"expected a list of labels, got {values!r:.40}")
            continue
        ids = data[raters].iloc[position] if raters else list(range(len(values)))
        if not isinstance(ids, lists):
            problems.add(item_id, raters, f"expected a list of rater ids, got {ids!r:.40}")
            continue
        if len(ids) != len(values):
            problems.add(item_id, raters, f"{len(values)} labels but {len(ids)} rater ids")
            continue
        rows += [
            {"item_id": item_id, "rater_id": r, "criterion": criterion_name, "score": v,
             "_column": f"{labels}[{k}]", "_row": data.index[position]}
            for k, (r, v) in enumerate(zip(ids, values))
        ]
    frame = pd.DataFrame(rows, columns=[*RATINGS_COLUMNS, "_column", "_row"])
    frame = _check_scores(frame, problems, labels=frame["item_id"])
    _no_duplicates(frame, source)
    return problems.result(_ratings(frame, problems, source), source)


def item_means(data: pd.DataFrame, *, item: str, columns: Sequence[str] | Mapping[str, str], rater: str = "mean") -> Imported:
    """Per-item mean ratings (one column per criterion) as a ratings table with one 'rater'.

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.importers import item_means
    >>> df = pd.DataFrame({"item": [0, 1], "human_coherence": [2.33, 3.0]})
    >>> item_means(df, item="item", columns={"human_coherence": "coherence"}).data
      item_id rater_id  criterion  score
    0       0     mean  coherence   2.33
    1       1     mean  coherence   3.00
    """
    mapping = dict(columns) if isinstance(columns, Mapping) else {c: c for c in columns}
    require_columns(data, [item, *mapping])
    long = data[[item, *mapping]].melt(id_vars=[item], var_name="_column", value_name="score", ignore_index=False)
    long["criterion"] = long["_column"].map(mapping)
    long["rater_id"] = rater
    long["_row"] = long.index
    problems = _Problems()
    frame = _check_scores(long.rename(columns={item: "item_id"}), problems, labels=long[item])
    _no_duplicates(frame, "item means")
    return problems.result(_ratings(frame, problems, "item means"), "item means")
