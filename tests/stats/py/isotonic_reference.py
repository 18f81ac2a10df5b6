"""Reference values for hce.stats.calibrate_to_humans's isotonic mapping from scikit-learn
(tests/stats/test_calibrate_humans.py).

Run in the venv of tests/stats/py/ppi_reference.py (ppi-python brings scikit-learn):

    /work/venvs/ppi/bin/python tests/stats/py/isotonic_reference.py tests/stats/data/isotonic_reference.json

Each case is a design of ours from a fixed seed (stored): judge scores (1-10, or continuous)
and human scores (1-5) of the labelled rows; ``IsotonicRegression(increasing=True,
out_of_bounds="clip")`` fitted on them and its predictions at the stored query points.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from sklearn.isotonic import IsotonicRegression


def main(out: Path) -> None:
    cases = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(20, 80))
        human = rng.integers(1, 6, n).astype(float)
        judge = np.clip(human * 2 + rng.normal(0, 1.5, n), 0, 11)
        if seed % 2 == 0:
            judge = np.round(judge)
        query = np.linspace(-1, 12, 27)
        fit = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(judge, human)
        cases.append({"seed": seed, "judge": judge.tolist(), "human": human.tolist(), "query": query.tolist(),
                      "predicted": fit.predict(query).tolist()})
    out.write_text(json.dumps({"versions": {p: version(p) for p in ("scikit-learn", "numpy")}, "cases": cases}) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
