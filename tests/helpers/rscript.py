"""R as a live oracle in slow tests: find ``Rscript`` with the packages a test needs, else skip."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest


def rscript_or_skip(packages: tuple[str, ...], install: str) -> str:
    """Path of ``Rscript`` when it loads every package in ``packages``; otherwise skip with ``install``."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip(f"Rscript not found; install R and {', '.join(packages)} with: {install}")
    load = "; ".join(f"library({p})" for p in packages)
    probe = subprocess.run([rscript, "-e", load], check=False, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"R lacks one of {', '.join(packages)} ({probe.stderr.strip()[-200:]}); {install}")
    return rscript


def run_r_script(rscript: str, script: str, listing: Path, tmp_path: Path) -> dict:
    """Run ``script`` (R source) on the input listing ``listing``; it writes JSON, returned parsed."""
    source, out = tmp_path / "oracle.R", tmp_path / "oracle.json"
    source.write_text(script)
    subprocess.run([rscript, str(source), str(listing), str(out)], check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def fit_designs(rscript: str, script: str, designs: dict, tmp_path: Path) -> dict:
    """Write each ``seed: (formula, data)`` design to CSV, list them in ``todo.csv`` (columns
    seed, formula, path) and run ``script`` on that listing; its JSON, parsed."""
    import pandas as pd

    rows = []
    for seed, (formula, data) in designs.items():
        path = tmp_path / f"design_{seed}.csv"
        data.to_csv(path, index=False)
        rows.append({"seed": seed, "formula": formula, "path": str(path)})
    pd.DataFrame(rows).to_csv(tmp_path / "todo.csv", index=False)
    return run_r_script(rscript, script, tmp_path / "todo.csv", tmp_path)
