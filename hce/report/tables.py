"""Journal-style numbers and tables: full precision kept, rounding only for display.

Conventions (JAMA, one rule for every output in :mod:`hce.report.numbers`): P values without a
leading zero, two decimals (three below .01 or where two would round to .05), ``P < .001`` and
``P > .99`` at the ends; an estimate with its interval in one cell, ``0.41 (0.20-0.60)`` or
``-0.41 (-0.60 to -0.20)``, under a header naming the level (``Effect size (95% CI)``); an
interval that cannot be computed as "not estimable" with its reason; counts as integers with
thousands separators; column headers in words (``Items``, ``P value``). Each bounded statistic
type (coefficients, effect sizes, calibration errors) has its decimals, found from the column's
name or the row's label (:data:`LABEL_COLUMNS`); other numbers get the decimals they need. A
:class:`Table` keeps its raw DataFrame (written to CSV exactly, snake_case headers) and
formats only when rendered to Markdown, HTML or LaTeX.
"""

from __future__ import annotations

import csv
import html
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from hce._vocabulary import EFFECT_COLUMNS, ESTIMATE_COLUMNS
from hce.report.numbers import (
    DECIMALS,
    LARGE,
    decimals_needed,
    fixed,
    kind_decimals,
    format_ci,
    format_number,
    format_p,
    joiner,
    statistic_kind,
)

# Every P value prints journal-style: the adjusted ones, the Greenhouse-Geisser one, the cluster permutation's, the
# audit's equivalence (TOST) P, the RM-ANOVA's assumption checks and the Friedman tests with and without the tie correction.
P_COLUMNS = ("p_value", "p_adjusted", "p", "p_holm", "p_gg", "p_cluster", "p_cluster_adjusted",
             "p_equivalence", "normality_p", "sphericity_p", "p_tie_corrected", "p_uncorrected", "smallest_reachable_p")
INTEGER_HINTS = ("n", "n_items", "n_attempts", "n_valid", "n_errors", "df", "df1", "df2", "count", "attempts_per_item")
#: A method naming one of these makes ``statistic`` a rank sum (U, V, T): shown as the whole or half number it is.
RANK_SUMS = re.compile(r"Wilcoxon|Mann-Whitney|rank-sum|signed-rank", re.IGNORECASE)
#: Columns naming what a row's generic ``estimate`` is (its statistic type, :func:`hce.report.numbers.statistic_kind`).
LABEL_COLUMNS = ("metric", "measure", "quantity", "coefficient", "component", "method", "ci_method")
#: Each point column and the two columns of its interval (the vocabulary's result columns).
INTERVALS = {point: (low, high) for point, low, high in (ESTIMATE_COLUMNS, EFFECT_COLUMNS)}

#: Headers in words where the rule in :func:`header` does not find them.
HEADERS = {
    "n": "N", "p": "P value", "p_value": "P value", "p_adjusted": "Adjusted P value", "p_holm": "Holm-adjusted P value",
    "p_equivalence": "Equivalence P value (TOST)", "normality_p": "Normality P value (Shapiro-Wilk)",
    "sphericity_p": "Sphericity P value (Mauchly)", "p_tie_corrected": "P value, tie-corrected",
    "p_uncorrected": "P value, uncorrected", "statistic_tie_corrected": "Chi-squared, tie-corrected",
    "statistic_uncorrected": "Chi-squared, uncorrected", "n_tied_blocks": "Transcripts with tied SDs",
    "std_error": "Standard error", "df": "df", "df1": "df1", "df2": "df2", "ddof": "ddof",
    "n_below": "Items below", "n_undefined": "Items with undefined SD",
    "n_items_sd_undefined": "Items with undefined SD", "sd_total": "SD of total",
    "n_attempts_high": "Attempts at higher level", "n_items_high": "Items at higher level",
    "n_items_decided": "Items with a majority", "n_items_flipping": "Items flipping",
    "smallest_reachable_p": "Smallest reachable P value", "n_pairs": "Paired items",
}  # fmt: skip
#: Words written as abbreviations or in capitals inside headers.
_WORDS = {"sd": "SD", "iqr": "IQR", "ci": "CI", "mae": "MAE", "kl": "KL", "icc": "ICC", "q1": "Q1", "q3": "Q3",
          "id": "ID", "g": "G", "phi": "Phi", "x": "X", "y": "Y", "llm": "LLM"}  # fmt: skip


def header(column: object) -> str:
    """A column name as a reader's header: ``n_items`` -> ``Items``, ``p_value`` -> ``P value``.

    A leading ``n_`` (a count) and a trailing ``_id`` are dropped, underscores become spaces
    and abbreviations are capitalised; names in :data:`HEADERS` are looked up.

    Examples
    --------
    >>> [header(c) for c in ("n_items", "n_attempts", "p_value", "effect_size", "condition_id", "sd", "95% CI", "n_a")]
    ['Items', 'Attempts', 'P value', 'Effect size', 'Condition', 'SD', '95% CI', 'N a']
    """
    name = str(column)
    if name in HEADERS:
        return HEADERS[name]
    words = name.split("_")
    if len(words) > 1 and words[0] == "n" and len(words[1]) > 1:  # n_a stays "N a": "A" names the group itself
        words = words[1:]
    if len(words) > 1 and words[-1] == "id":
        words = words[:-1]
    text = " ".join(_WORDS.get(w, w) for w in words if w)
    return text[:1].upper() + text[1:]


def words(code: object) -> str:
    """A code a reader sees as words: a stratum, dimension or setting name (``age_band`` -> ``age band``).

    Text without underscores is returned as it is; anything else as its string.

    Examples
    --------
    >>> [words(c) for c in ("age_band", "evidence_type", "gender", "P2.3")]
    ['age band', 'evidence type', 'gender', 'P2.3']
    """
    return str(code).replace("_", " ")


def _column_decimals(digits: int, values: pd.Series, *limits: pd.Series) -> int | None:
    """One number of decimals for a whole column (each row's need, the most of them), so a column
    reads alike; None (each cell its own) when some row needs scientific notation."""
    needs = []
    for row in zip(values, *limits):
        finite = [float(v) for v in row if not pd.isna(v) and math.isfinite(float(v))]
        width = float(row[2]) - float(row[1]) if len(row) == 3 and len(finite) == 3 else None
        needed = decimals_needed(finite, digits, width=width)
        if needed is None or any(abs(v) >= LARGE for v in finite):
            return None
        needs.append(needed)
    return max(needs, default=digits)


def _looks_integer(column: str, values: pd.Series) -> bool:
    if pd.api.types.is_integer_dtype(values):
        return True
    if column in INTEGER_HINTS or column.startswith("n_"):
        finite = values.dropna()
        return pd.api.types.is_numeric_dtype(values) and bool(np.all(np.mod(finite, 1) == 0))
    return False


@dataclass
class Table:
    """A result table for a report.

    Parameters
    ----------
    data : DataFrame
        Raw values; written to CSV unrounded.
    caption : str
    name : str
        File stem for its CSV/LaTeX files.
    confidence : float
        Level named in the combined interval column.
    digits : int
        Decimals shown for non-integer numbers.
    notes : list of str
        Footnotes (method names, exclusions).
    inline : bool
        False for long tables that are only written to files (CSV, LaTeX), not printed.
    readable : tuple of str
        Text columns whose codes are shown in words (``evidence_type`` as "evidence type"); the
        CSV keeps the codes, which the manuscript's sources name.
    """

    data: pd.DataFrame
    caption: str
    name: str
    confidence: float = 0.95
    digits: int = 2
    notes: list[str] = field(default_factory=list)
    inline: bool = True
    readable: tuple[str, ...] = ()
    #: :meth:`display_columns`, held while :meth:`hce.report.document.Report.write` writes the
    #: table in three formats (formatting each cell is most of a small table's writing).
    _shown: list[tuple[str, list[str], bool]] | None = field(default=None, init=False, repr=False, compare=False)

    def display_frame(self) -> pd.DataFrame:
        """Strings as printed, under headers in words (:func:`header`).

        P-values journal-style; an interval merged with the estimate it belongs to
        (:data:`INTERVALS`: ``ci_low``/``ci_high`` with ``estimate``, ``effect_ci_low``/
        ``effect_ci_high`` with ``effect_size``) into one ``Estimate (95% CI)`` column, or
        into a ``95% CI`` column when the table has no such estimate.
        """
        columns = self.display_columns()
        frame = pd.DataFrame({k: cells for k, (_, cells, _) in enumerate(columns)})
        frame.columns = [name for name, _, _ in columns]
        return frame

    def display_columns(self) -> list[tuple[str, list[str], bool]]:
        """Each displayed column: header, cells as printed, and whether it holds text.

        Text columns are set left-aligned, numbers right-aligned (HTML, LaTeX, Word). Two
        columns that would get one header keep their own names instead, so neither hides the other.
        """
        if self._shown is not None:
            return self._shown
        out = self._display_columns()
        names = [name for name, _, _ in out]
        raw = [c for c in self.data.columns if c not in self._hidden()]
        return [(str(raw[k]) if names.count(name) > 1 else name, cells, text) for k, (name, cells, text) in enumerate(out)]

    def _hidden(self) -> set:
        """Interval limits shown inside another column."""
        columns = set(self.data.columns)
        intervals = {point: ends for point, ends in INTERVALS.items() if set(ends) <= columns}
        return {end for point, ends in intervals.items() for end in (ends if point in columns else ends[1:])}

    def _display_columns(self) -> list[tuple[str, list[str], bool]]:
        raw = self.data.reset_index(drop=True)
        out = []
        level = f"{self.confidence * 100:g}% CI"
        intervals = {point: ends for point, ends in INTERVALS.items() if set(ends) <= set(raw.columns)}
        merged = {point: ends for point, ends in intervals.items() if point in raw.columns}
        alone = {low: high for point, (low, high) in intervals.items() if point not in merged}
        hidden = {end for ends in merged.values() for end in ends} | set(alone.values())
        methods = raw["method"].astype(str) if "method" in raw else pd.Series("", index=raw.index)
        for column in raw.columns:
            values = raw[column]
            if column in hidden:
                continue
            if column in merged:
                low, high = merged[column]
                places = self._decimals(raw, column, values, raw[low], raw[high])
                cells = [format_ci(a, b, self.digits, estimate=e, decimals=d, kind=k, method=m)
                         for e, a, b, (d, k), m in zip(values, raw[low], raw[high], places, methods)]  # fmt: skip
                out.append((f"{header(column)} ({level})", cells, False))
            elif column in alone:
                places = self._decimals(raw, column, values, raw[alone[column]])
                out.append((level, [format_ci(a, b, self.digits, decimals=d, kind=k, method=m)
                                    for a, b, (d, k), m in zip(values, raw[alone[column]], places, methods)], False))  # fmt: skip
            elif column in P_COLUMNS:
                out.append((header(column), [format_p(v) for v in values], False))
            elif column == "statistic" and pd.api.types.is_numeric_dtype(values):
                out.append((header(column), [_statistic(v, m) for v, m in zip(values, methods)], False))
            elif _looks_integer(column, values):
                out.append((header(column), [format_number(None if pd.isna(v) else int(v)) for v in values], False))
            elif pd.api.types.is_float_dtype(values):
                places = self._decimals(raw, column, values)
                out.append((header(column), [format_number(v, self.digits) if d is None else fixed(float(v), d)
                                             for v, (d, _) in zip(values, places)], False))  # fmt: skip
            elif column in self.readable:
                out.append((header(column), [words(v) if isinstance(v, str) else format_number(v) for v in values], True))
            else:
                out.append((header(column), [format_number(v, self.digits) for v in values], _is_text(values)))
        return out

    def _kinds(self, raw: pd.DataFrame, column: str) -> list[str | None]:
        """Each row's statistic type (:func:`hce.report.numbers.statistic_kind`): the column's own
        name, else for a generic point column (``estimate``) the row's label, method and the caption."""
        own = statistic_kind(column)
        if own is not None or column not in INTERVALS and column not in {low for low, _ in INTERVALS.values()}:
            return [own] * len(raw)
        labels = [c for c in LABEL_COLUMNS if c in raw.columns]
        return [statistic_kind(*(raw.at[i, c] for c in labels), self.caption) for i in raw.index]

    def _decimals(self, raw: pd.DataFrame, column: str, *series: pd.Series) -> list[tuple[int | None, str | None]]:
        """Each row's decimals and statistic type: one count for every row of one type (JAMA's
        decimals for the bounded types, :data:`hce.report.numbers.DECIMALS`), so a column of one
        statistic reads alike; other rows the most any of them needs (None: each cell its own)."""
        kinds = self._kinds(raw, column)
        out: list[tuple[int | None, str | None]] = [(None, k) for k in kinds]
        for kind in set(kinds):
            rows = [i for i, k in enumerate(kinds) if k == kind]
            values = [float(v) for s in series for v in s.iloc[rows] if not pd.isna(v)]
            places = kind_decimals(values, kind) if kind in DECIMALS else _column_decimals(self.digits, *(s.iloc[rows] for s in series))
            for i in rows:
                out[i] = (places, kind)
        return out

    def to_markdown(self) -> str:
        columns = self.display_columns()
        header_line = "| " + " | ".join(_escape_md(name) for name, _, _ in columns) + " |"
        rule = "| " + " | ".join("---" for _ in columns) + " |"
        body = ["| " + " | ".join(_escape_md(cells[i]) for _, cells, _ in columns) + " |"
                for i in range(len(columns[0][1]) if columns else 0)]
        lines = [f"**{self.caption}**", "", header_line, rule, *body]
        lines += [""] + [f"*{note}*" for note in self.notes] if self.notes else []
        return "\n".join(lines)

    def to_html(self) -> str:
        columns = self.display_columns()
        # Text columns read left-aligned, numbers right-aligned; a number or an interval never
        # breaks across lines (class "n": white-space nowrap, and no-break spaces inside it).
        kinds = ['class="t"' if text else 'class="n"' for _, _, text in columns]
        head = "".join(f"<th {k}>{html.escape(name)}</th>" for (name, _, _), k in zip(columns, kinds))
        rows = "".join(
            "<tr>" + "".join(f"<td {k}>{_html_cell(cells[i], k)}</td>" for (_, cells, _), k in zip(columns, kinds)) + "</tr>"
            for i in range(len(self.data))
        )
        notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in self.notes)
        return f'<table><caption>{html.escape(self.caption)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}'

    def to_latex(self, *, booktabs: bool = False) -> str:
        """The table as a LaTeX ``table`` float, text columns left- and numbers right-aligned.

        ``booktabs=True`` rules it with ``\\toprule``, ``\\midrule`` and ``\\bottomrule`` (the
        document must load the booktabs package); by default with ``\\hline``.
        """
        columns = self.display_columns()
        spec = "".join("l" if text else "r" for _, _, text in columns)
        top, mid, bottom = (r"\toprule", r"\midrule", r"\bottomrule") if booktabs else (r"\hline",) * 3
        lines = [
            r"\begin{table}[ht]",
            r"\centering",
            rf"\caption{{{escape_tex(self.caption)}}}",
            rf"\label{{tab:{self.name}}}",
            rf"\begin{{tabular}}{{{spec}}}",
            top,
            _tex_row([name for name, _, _ in columns]),
            mid,
        ]
        lines += [_tex_row([cells[i] for _, cells, _ in columns]) for i in range(len(self.data))]
        lines += [bottom, r"\end{tabular}"]
        lines += [rf"\par\footnotesize {escape_tex(n)}" for n in self.notes]
        lines.append(r"\end{table}")
        return "\n".join(lines)

    def to_csv(self) -> str:
        """The table as CSV; every float reads back exactly.

        pyarrow's writer (floats in their shortest exact form, booleans ``true``/``false``, text
        quoted only when some value of the table needs it) is ten times faster
        than pandas' on the million-cell per-item tables of a large log; a frame pyarrow cannot
        type (mixed object columns, repeated column names) goes through pandas (``%.17g``).
        """
        try:
            table = pa.Table.from_pandas(self.data, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
            return self.data.to_csv(index=False, float_format="%.17g", lineterminator="\n")
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow([str(c) for c in self.data.columns])
        body = io.BytesIO()
        try:  # text unquoted, as pandas writes it, unless some value needs quotes
            pa_csv.write_csv(table, body, pa_csv.WriteOptions(include_header=False, quoting_style="none"))
        except pa.ArrowInvalid:
            body = io.BytesIO()
            pa_csv.write_csv(table, body, pa_csv.WriteOptions(include_header=False, quoting_style="needed"))
        return header.getvalue() + body.getvalue().decode()


def _statistic(value: float, method: str) -> str:
    """A test statistic to 2 decimals (JAMA); a rank sum (U, V) as its whole or half number, never "11.00".

    Examples
    --------
    >>> _statistic(11.0, "Mann-Whitney U"), _statistic(40.5, "Wilcoxon signed-rank"), _statistic(0.4554, "Wald z")
    ('11', '40.5', '0.46')
    """
    if pd.isna(value):
        return "—"
    if RANK_SUMS.search(method) and float(value) * 2 == round(float(value) * 2):
        return fixed(float(value), 0 if float(value) == round(float(value)) else 1)
    return fixed(float(value), 2)


#: An interval in text, ``(0.60-0.88)``, ``(95% CI, -0.98 to -0.30)`` (:func:`hce.report.numbers.format_ci`).
_INTERVAL = re.compile(r"\((?:\d+(?:\.\d+)?% CI, )?[-−]?[\d.,%∞]+(?:-| to )[-−]?[\d.,%∞]+\)")


def _html_cell(value: object, kind: str) -> str:
    """A cell's HTML: numbers whole, and in text an interval ``(a-b)`` kept on one line."""
    text = html.escape(str(value))
    if kind != 'class="t"':
        return text.replace(" ", "&nbsp;")
    return _INTERVAL.sub(lambda m: m.group(0).replace(" ", "&nbsp;"), text)


def _is_text(values: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)


def _escape_md(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


_TEX = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\^{}", "\\": r"\textbackslash{}", "<": r"$<$", ">": r"$>$", "—": "---", "−": "$-$", "∞": r"$\infty$",
        # what pdflatex's utf8 input does not know (it stops with "Unicode character not set up")
        "≤": r"$\leq$", "≥": r"$\geq$", "≠": r"$\neq$", "≈": r"$\approx$", "²": r"\textsuperscript{2}",
        "α": r"$\alpha$", "β": r"$\beta$", "κ": r"$\kappa$", "μ": r"$\mu$", "ρ": r"$\rho$", "σ": r"$\sigma$",
        "τ": r"$\tau$", "φ": r"$\phi$", "χ": r"$\chi$", "ω": r"$\omega$"}  # fmt: skip


def escape_tex(text: str) -> str:
    r"""Text as literal LaTeX (pdflatex, utf8 input): special characters and common symbols escaped.

    >>> print(escape_tex("50% & $5 #1 a_b {x} ~ ^ \\ p < .001, κ ≥ 0.8"))
    50\% \& \$5 \#1 a\_b \{x\} \textasciitilde{} \^{} \textbackslash{} p $<$ .001, $\kappa$ $\geq$ 0.8
    """
    return "".join(_TEX.get(ch, ch) for ch in text)


def _tex_row(cells: list[str]) -> str:
    """One tabular row; a row starting with "[" would be read as the optional argument of the
    preceding ``\\\\`` or rule, so it starts with an empty group."""
    row = " & ".join(escape_tex(str(c)) for c in cells)
    return ("{}" if row.startswith("[") else "") + row + r" \\"


def describe(values: Sequence[float] | pd.Series, *, digits: int = 2) -> str:
    """``median (IQR a-b)`` of finite values, as the PRD asks SDs to be summarised (JAMA's style).

    >>> describe([0.1, 0.2, 0.3, 0.4]), describe([-2, -1, 0])
    ('median 0.25 (IQR 0.18-0.33), n = 4', 'median -1.00 (IQR -1.50 to -0.50), n = 3')
    """
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    if array.size == 0:
        return "no finite values"
    q1, median, q3 = np.percentile(array, [25, 50, 75])
    low, high = format_number(q1, digits), format_number(q3, digits)
    return f"median {format_number(median, digits)} (IQR {low}{joiner(low, high)}{high}), n = {array.size:,}"

