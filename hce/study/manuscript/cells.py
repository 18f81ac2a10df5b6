"""The study report's saved tables, cited cell by cell: every number in the draft comes from here.

A cell's key is ``tables/<file>.csv#row=<key>;col=<column>``: ``<key>`` is the text of the
row's first column (``EXP2_PromptOptimization``), or ``column=value`` pairs joined by ``&``
(``round=3&dimension=specificity``), or the row's position ``[i]`` (1-based), matched on the
CSV's text. Numbers are formatted by the report's own rule (:mod:`hce.report.numbers`: JAMA's
decimals per statistic type, intervals as ``0.76 (95% CI, 0.60-0.88)``), so the draft prints
what the report's tables print.

Example
-------
>>> import tempfile, pathlib, pandas as pd
>>> root = pathlib.Path(tempfile.mkdtemp()); (root / "tables").mkdir()
>>> pd.DataFrame({"comparison": ["H2"], "p_value": [0.0656], "effect_size": [0.3405],
...               "effect_ci_low": [0.0292], "effect_ci_high": [0.8167]}).to_csv(root / "tables" / "key.csv", index=False)
>>> cells = Cells(root)
>>> cells.p("key", "H2")
Number(text='.07', source='tables/key.csv#row=H2;col=p_value')
>>> [str(getattr(n, "text", n)) for n in cells.interval("key", "H2", estimate="effect_size")]  # an effect size: 2 decimals
['0.34', ' (95% CI, ', '0.03', '-', '0.82', ')']
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path

import pandas as pd

from hce.errors import HceError
from hce.report.manuscript.model import Inline, Number
from hce.report.numbers import (
    decimals_needed,
    fixed,
    format_number,
    format_p,
    interval_decimals,
    joiner,
    not_estimable_reason,
    statistic_kind,
)
from hce.report.tables import INTERVALS, LABEL_COLUMNS

TABLES = "tables"
#: Characters a key cannot hold: they separate its parts or the source's.
_UNSAFE = re.compile(r"[;&=#]")


class Cells:
    """The CSV tables of one study report folder (``<root>/tables``), read once each."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._read = cache(self._load)

    def _load(self, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        path = self.root / TABLES / f"{name}.csv"
        if not path.is_file():
            raise HceError(f"{path}: the study report has no table {name!r}; rerun `hce report` on the study folder")
        # The key is matched on the CSV's text; values parse as pandas reads them (exactly: shortest round-trip floats).
        return pd.read_csv(path, dtype=str, keep_default_na=False), pd.read_csv(path)

    def has(self, name: str) -> bool:
        """Whether the report wrote table ``name`` (``tables/<name>.csv``)."""
        return (self.root / TABLES / f"{name}.csv").is_file()

    def frame(self, name: str) -> pd.DataFrame:
        """The table's values (a copy)."""
        return self._read(name)[1].copy()

    def value(self, name: str, key: str, column: str) -> object:
        """The raw value of one cell; an error names the table, key and column when it is missing."""
        text, values = self._read(name)
        if column not in values.columns:
            raise HceError(f"tables/{name}.csv has no column {column!r}; columns: {', '.join(values.columns)}")
        position = re.fullmatch(r"\[(\d+)\]", str(key))
        if position:
            if not 1 <= int(position[1]) <= len(values):
                raise HceError(f"tables/{name}.csv has no data row {key} ({len(values)} rows)")
            return values.iloc[int(position[1]) - 1][column]
        pairs = [part.split("=", 1) for part in str(key).split("&")] if "=" in str(key) else [[text.columns[0], str(key)]]
        matches = pd.Series(True, index=text.index)
        for name_, wanted in pairs:
            if name_ not in text.columns:
                raise HceError(f"tables/{name}.csv has no column {name_!r} (row key {key!r})")
            matches &= text[name_] == wanted
        if int(matches.sum()) != 1:
            raise HceError(f"tables/{name}.csv: {int(matches.sum())} rows have key {key!r}; a key names one row")
        return values.loc[matches.idxmax(), column]

    def find(self, name: str, **equals: object) -> str:
        """The key of the one row whose columns equal ``equals`` (a callable value is a test of the cell).

        The key is the row's first column when that is text naming the row alone
        (``EXP2_PromptOptimization``), else the ``column=value`` pairs of ``equals`` joined by
        ``&`` (``round=3&dimension=specificity``) when they name it and fit a key (no ``;&=#``),
        else its position, ``[i]`` (1-based, the data row under the header).
        """
        keys = self.rows(name, **equals)
        if len(keys) != 1:
            raise HceError(f"tables/{name}.csv: {len(keys)} rows match {equals}; expected one")
        return keys[0]

    def rows(self, name: str, **equals: object) -> list[str]:
        """The keys (as :meth:`find` gives them) of every row matching ``equals``, in table order."""
        text, values = self._read(name)
        keep = pd.Series(True, index=values.index)
        for column, wanted in equals.items():
            if column not in values.columns:
                raise HceError(f"tables/{name}.csv has no column {column!r}; columns: {', '.join(values.columns)}")
            keep &= values[column].map(wanted).astype(bool) if callable(wanted) else text[column] == str(wanted)
        first = text.iloc[:, 0]
        named = not pd.api.types.is_numeric_dtype(values.iloc[:, 0])
        plain = [c for c in equals if not callable(equals[c])]
        out = []
        for i in values.index[keep]:
            same = pd.Series(True, index=text.index)
            for column in plain:
                same &= text[column] == text.at[i, column]
            if named and (first == first[i]).sum() == 1 and first[i] and not _UNSAFE.search(first[i]):
                out.append(first[i])
            elif plain and len(plain) == len(equals) and same.sum() == 1 and not any(_UNSAFE.search(c + text.at[i, c]) for c in plain):
                out.append("&".join(f"{c}={text.at[i, c]}" for c in plain))
            else:
                out.append(f"[{i + 1}]")
        return out

    @staticmethod
    def source(name: str, key: str, column: str) -> str:
        return f"{TABLES}/{name}.csv#row={key};col={column}"

    def number(self, name: str, key: str, column: str) -> Number:
        """A cell as the report prints a number (integers with separators, floats to the decimals they need)."""
        value = self.value(name, key, column)
        if isinstance(value, float) and value.is_integer() and column.startswith("n"):
            value = int(value)  # a count read as float because of a missing cell elsewhere in the column
        return Number(format_number(value, kind=self.kind(name, key, column)), self.source(name, key, column))

    def statistic(self, name: str, key: str, column: str = "statistic") -> Number:
        """A test statistic (chi-squared, F, H) to 2 decimals, as JAMA prints them, whatever its size."""
        return Number(f"{float(self.value(name, key, column)):.2f}", self.source(name, key, column))

    def p(self, name: str, key: str, column: str = "p_value") -> Number:
        """A p-value in journal style (``.012``, ``< .001``)."""
        return Number(format_p(float(self.value(name, key, column))), self.source(name, key, column))

    def percent(self, name: str, key: str, column: str = "estimate") -> Number:
        """A share (0-1) as a percentage with one decimal, as the report's scorecard prints shares."""
        return Number(f"{100 * float(self.value(name, key, column)):.1f}%", self.source(name, key, column))

    def aligned(self, refs: list[tuple[str, str, str]]) -> list[Number]:
        """Cells ``(name, key, column)`` of one statistic in one sentence, all to the decimals the most demanding needs.

        JAMA prints one statistic with one number of decimals in a sentence: "0 (IQR 0-0.32)"
        becomes "0.00 (IQR 0.00-0.32)".
        """
        values = [float(self.value(*ref)) for ref in refs]
        decimals = decimals_needed(values)
        return [Number(fixed(v, decimals), self.source(*ref)) for v, ref in zip(values, refs)]

    def kind(self, name: str, key: str, column: str) -> str | None:
        """The statistic type of a cell (:func:`hce.report.numbers.statistic_kind`): its column's name,
        else for a generic point column (``estimate``) the row's label and method, as the report's tables find it."""
        own = statistic_kind(column)
        if own is not None or column not in INTERVALS:
            return own
        labels = [c for c in LABEL_COLUMNS if c in self._read(name)[1].columns]
        return statistic_kind(*(self.value(name, key, c) for c in labels))

    def interval_decimals(self, name: str, keys: list[str], *, estimate: str = "estimate") -> int | None:
        """The decimals that show every one of these rows' intervals faithfully (one count for a sentence listing them)."""
        low, high = INTERVALS.get(estimate, INTERVALS["estimate"])
        needed = [interval_decimals(*(float(self.value(name, key, c)) for c in (estimate, low, high)),
                                    kind=self.kind(name, key, estimate)) for key in keys]  # fmt: skip
        return None if None in needed else max(needed, default=2)

    def interval(self, name: str, key: str, *, estimate: str = "estimate", low: str | None = None, high: str | None = None,
                 level: float = 0.95, percent: bool = False, decimals: int | None = None) -> list[Inline]:
        """``estimate (95% CI, low-high)`` with the decimals the report's tables give the interval.

        ``low`` and ``high`` default to the interval columns of ``estimate`` (``ci_low``,
        ``ci_high``; ``effect_ci_low``, ``effect_ci_high`` for ``effect_size``). ``decimals``
        (:meth:`interval_decimals`) gives every interval of a sentence the same decimals. A
        negative limit is joined by "to" (``-0.98 to -0.30``); a missing one makes the interval
        "not estimable" with its reason.
        """
        ends = INTERVALS.get(estimate, INTERVALS["estimate"])
        low, high = low or ends[0], high or ends[1]
        values = [float(self.value(name, key, c)) * (100 if percent else 1) for c in (estimate, low, high)]
        kind = self.kind(name, key, estimate)
        if percent:
            decimals = 1
        elif decimals is None:
            decimals = interval_decimals(*values, kind=kind)
        unit = "%" if percent else ""
        e, lo, hi = (Number(fixed(v, decimals) + unit, self.source(name, key, c)) for v, c in zip(values, (estimate, low, high)))
        named = f"{level * 100:g}% CI"
        if math.isnan(values[1]) or math.isnan(values[2]):
            method = self.value(name, key, "method") if "method" in self._read(name)[1].columns else None
            return [e, f" ({named} not estimable: {not_estimable_reason(values[0], kind=kind, method=method)})"]
        return [e, f" ({named}, ", lo, joiner(lo.text, hi.text), hi, ")"]

    def claim(self, claim_id: str, *, rule: bool = True) -> str:
        """A claim's verdict from the hypotheses or scorecard table: ``H1a was supported by ...``.

        The verdict word is the table's, never the text's own: "supported" and "met" appear only where the
        pre-specified rule (:mod:`hce.study.rules`) says so; Methods 2.5 states each rule. ``rule=False``
        leaves the pointer out (the abstract's word budget).
        """
        for name in ("hypotheses", "scorecard"):
            if self.has(name):
                frame = self.frame(name)
                row = frame[frame["id"].astype(str) == claim_id]
                if len(row):
                    row = row.iloc[0]
                    said = f"{claim_id} was {row['verdict']}"
                    return f"{said} by its pre-specified rule (Methods 2.5)" if rule else said
        return f"{claim_id} was not assessed (no verdict in the study report)"


def p_phrase(number: Number) -> list[Inline]:
    """``P = .012`` or ``P < .001`` (the sign is part of the formatted p-value when it is a bound).

    Examples
    --------
    >>> [p_phrase(Number(t, "t.csv#row=a;col=p_value"))[0] for t in (".012", "< .001")]
    ['P = ', 'P ']
    """
    return ["P ", number] if number.text[:1] in "<>" else ["P = ", number]
