"""What both worked examples share: where the data and the outputs live, and how warnings are kept.

Not part of the hce package: the examples use only hce's public API, and this module only
handles paths, the command line and the report folder.
"""

from __future__ import annotations

import argparse
import ast
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from hce.report.document import Report
from hce.report.tables import Table

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / ".." / "shared" / "data"


def arguments(name: str) -> argparse.Namespace:
    """``out`` (default ``reports/examples/<name>``) and ``--data`` (default ``../shared/data``).

    The description is the first sentence under the script's title, read from its file:
    sphinx-gallery runs a script without its docstring, so ``__doc__`` is not there.
    """
    doc = ast.get_docstring(ast.parse((Path(__file__).parent / f"{name}.py").read_text(encoding="utf-8")))
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[1].splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=REPO / "reports" / "examples" / name,
                        help=f"output folder (default: reports/examples/{name}/)")
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default: ../shared/data)")
    return parser.parse_args()


def data_folder(root: Path, *folders: str) -> Path:
    """The shared data folder, or exit with a message naming what is missing."""
    missing = [f for f in folders if not (root / f).is_dir()]
    if missing:
        sys.exit(
            f"error: {root.resolve()} lacks {', '.join(missing)}. These examples read the public data "
            "described in ../shared/data/README.md (next to the repository root); "
            "give its location with --data."
        )
    return root


def table(data: pd.DataFrame, name: str, caption: str, *notes: str, inline: bool = True, digits: int = 3) -> Table:
    """A report table: full precision in CSV, rounded in Markdown."""
    return Table(data.reset_index(drop=True), caption=caption, name=name, notes=list(notes), inline=inline, digits=digits)


@contextmanager
def kept_warnings(report: Report) -> Iterator[None]:
    """Record the warnings hce emits (dropped blocks, undefined SDs) and list them in the report."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    if messages:
        report.section("Warnings raised by hce").add(*messages)
        print(f"{len(messages)} distinct warning(s); see the report's last section", file=sys.stderr)


def finish(report: Report, out: Path, rows: list[dict]) -> None:
    """Write the report and a one-table headline summary (``headline.csv``, printed too)."""
    headline = pd.DataFrame(rows).reindex(columns=["dataset", "quantity", "estimate", "ci_low", "ci_high", "p_value", "n"])
    report.write(out)
    headline.to_csv(out / "headline.csv", index=False, float_format="%.17g", lineterminator="\n")
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_colwidth", 60):
        print(headline.to_string(index=False))
    print(f"\nwrote {out}/report.md, report.html, headline.csv, tables/ and figures/")


def run(name: str, folders: list[str], title: str, *parts: Callable[[Report, Path], list[dict]]) -> Report:
    """The command line of an example: each part adds its sections and returns headline rows.

    The report is returned: its figures are the example's on the gallery page and card.
    """
    args = arguments(name)
    root = data_folder(args.data, *folders)
    report = Report(title)
    with kept_warnings(report):
        rows = [row for part in parts for row in part(report, root)]
    finish(report, args.out, rows)
    return report
