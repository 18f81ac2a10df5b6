"""A named bundle of tidy tables: what the study helpers and :func:`fairness` return."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pandas as pd


@dataclass
class AnalysisResult(Mapping[str, pd.DataFrame]):
    """Tables of one analysis, by name; behaves as a read-only dict of DataFrames.

    Attributes
    ----------
    title : str
        What was analysed (e.g. ``"EXP2_PromptOptimization"``).
    tables : dict of str -> DataFrame
        The tidy tables, in the order of the analysis plan; values keep full precision.
    notes : list of str
        Decisions taken on the data (rows dropped, tests skipped, the winner and why).

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import AnalysisResult
    >>> result = AnalysisResult("demo", {"counts": pd.DataFrame({"n": [3, 4]})}, ["one item dropped"])
    >>> list(result), result["counts"]["n"].sum()
    (['counts'], np.int64(7))
    >>> result
    demo: 1 tables
      counts: 2 rows x 1 columns
      note: one item dropped
    """

    title: str
    tables: dict[str, pd.DataFrame]
    notes: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> pd.DataFrame:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no table {name!r}; tables: {list(self.tables)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def __repr__(self) -> str:
        lines = [f"{self.title}: {len(self.tables)} tables"]
        lines += [f"  {name}: {t.shape[0]} rows x {t.shape[1]} columns" for name, t in self.tables.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def summary(self) -> str:
        """Every table as Markdown-like text, rounded for reading only (tables stay exact).

        Returns
        -------
        str
        """
        parts = [f"# {self.title}"]
        for name, table in self.tables.items():
            parts.append(f"\n## {name}\n{table.to_string(index=False, float_format=lambda v: f'{v:.4g}')}")
        if self.notes:
            parts.append("\n## notes\n" + "\n".join(f"- {n}" for n in self.notes))
        return "\n".join(parts)
