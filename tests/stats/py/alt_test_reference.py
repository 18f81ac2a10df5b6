"""Reference values for hce.stats.alt_test from the authors' own code (tests/stats/test_alt_test.py).

The alt-test's reference implementation is the ``alt_test`` function (with ``by_procedure``,
``ttest``, ``accuracy``, ``neg_rmse``) of the example notebook of the nitaytech/AltTest
repository (Calderon, Reichart & Dror 2025, arXiv:2501.10970), commit 18428b1. This script
runs that code as published, read from the notebook at run time (none of it is copied into
hce), in a virtual environment with only NumPy and SciPy:

    python -m venv /work/venvs/alttest && /work/venvs/alttest/bin/pip install numpy scipy
    /work/venvs/alttest/bin/python tests/stats/py/alt_test_reference.py ALTTEST_DIR ../shared/data \
        tests/stats/data/alt_test_reference.json

ALTTEST_DIR holds the repository's ``alt_test_example.ipynb`` and ``data/``. The authors'
functions return only the winning rate and the advantage probability; the per-human p-values
and the rejected humans are recorded by wrapping their ``ttest`` and ``by_procedure`` (the
values they return are passed on unchanged). Written, per case: the inputs when they are
ours (synthetic designs drawn here from fixed seeds) or where they come from (the authors'
published annotation sets, the K-QA and HealthBench sets of ../shared/data), the arguments,
and the authors' outputs. Only derived numbers are stored, never the authors' data.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import scipy

# The notebook's per-dataset scoring and epsilon (its "Example (paper's data)" cell).
PUBLISHED = {
    "wax": ("accuracy", 0.1), "lgbteen": ("accuracy", 0.2), "mtbench": ("accuracy", 0.2),
    "framing": ("accuracy", 0.15), "cebab_aspects": ("accuracy", 0.1), "summeval": ("neg_rmse", 0.2),
    "10k_prompts": ("neg_rmse", 0.15), "cebab_stars": ("neg_rmse", 0.1), "lesion": ("neg_rmse", 0.15),
}


def within_one(pred, annotations):
    """A custom alignment score (ours, also defined in the test): share of remaining humans within 1 point."""
    return float(np.mean([abs(pred - a) <= 1 for a in annotations]))


def authors_code(notebook: Path) -> dict:
    """The namespace of the notebook's function cell, with recorders around ttest and by_procedure."""
    cells = json.loads(notebook.read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and "def alt_test(" in "".join(c["source"]))
    namespace: dict = {}
    exec("import json, os\nimport numpy as np\nfrom scipy.stats import ttest_1samp\n"
         "from typing import Any, Optional, List, Tuple, Dict, Union, Callable\n" + source, namespace)
    record: dict = {"p": [], "rejected": None}
    ttest, by_procedure = namespace["ttest"], namespace["by_procedure"]

    def recorded_ttest(indicators, epsilon):
        p = ttest(indicators, epsilon)
        record["p"].append(float(p))
        return p

    def recorded_by(p_values, q):
        out = by_procedure(p_values, q)
        record["rejected"] = [int(i) for i in out]
        return out

    namespace["ttest"], namespace["by_procedure"], namespace["record"] = recorded_ttest, recorded_by, record
    return namespace


def run(ns: dict, llm: dict, humans: dict, scoring, epsilon: float, **kwargs) -> dict:
    """The authors' alt_test on one judge, with the recorded p-values and printed notes."""
    ns["record"]["p"], ns["record"]["rejected"] = [], None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            wr, ap = ns["alt_test"](llm, humans, scoring, epsilon, **kwargs)
        except ZeroDivisionError:
            wr = ap = None
    lines = printed.getvalue().splitlines()
    skipped = [line.split()[2] for line in lines if line.startswith("Skipping annotator")]
    tested = [h for h in humans if h not in skipped]
    return {"winning_rate": wr, "advantage_prob": ap, "passed": None if wr is None else wr >= 0.5,
            "p_values": dict(zip(tested, ns["record"]["p"])),
            "rejected": [tested[i] for i in ns["record"]["rejected"] or []], "printed": lines}


def synthetic(seed: int) -> dict:
    """One random design of ours: 3-5 humans, 40-90 items, some humans sparse, one or two judges."""
    rng = np.random.default_rng(seed)
    n_items, n_humans = int(rng.integers(40, 91)), int(rng.integers(3, 6))
    numeric = seed % 2 == 1
    truth = rng.integers(1, 6, n_items) if numeric else rng.choice(list("abcd"), n_items)
    rows = []
    for h in range(n_humans):
        keep = rng.random(n_items) < (0.35 if h == n_humans - 1 else 0.9)
        noisy = rng.random(n_items) < 0.3
        for i in np.flatnonzero(keep):
            if numeric:
                value = int(np.clip(truth[i] + (rng.integers(-1, 2) if noisy[i] else 0), 1, 5))
            else:
                value = str(rng.choice(list("abcd"))) if noisy[i] else str(truth[i])
            rows.append({"item": f"i{i}", "rater": f"h{h}", "score": value})
    for j, noise in (("judge_good", 0.15), ("judge_poor", 0.6)):
        flip = rng.random(n_items) < noise
        answered = rng.random(n_items) < 0.95
        for i in np.flatnonzero(answered):
            if numeric:
                value = int(np.clip(truth[i] + (rng.integers(-2, 3) if flip[i] else 0), 1, 5))
            else:
                value = str(rng.choice(list("abcd"))) if flip[i] else str(truth[i])
            rows.append({"item": f"i{i}", "rater": j, "score": value})
    return {"seed": seed, "rows": {k: [r[k] for r in rows] for k in ("item", "rater", "score")}, "scoring": ["accuracy", "neg_rmse", "within_one"][seed % 3] if numeric
            else "accuracy", "epsilon": [0.2, 0.1, 0.15, 0.0][seed % 4]}  # fmt: skip


def as_dicts(rows: dict, judges: list[str]) -> tuple[dict, dict]:
    """Long rows (columns item, rater, score) -> the authors' {judge: {item: score}} and
    {human: {item: score}}, in first-seen order."""
    llms, humans = {}, {}
    for i, r, s in zip(rows["item"], rows["rater"], rows["score"]):
        (llms if r in judges else humans).setdefault(r, {})[i] = s
    return llms, humans


def main(alttest_dir: Path, shared_data: Path, out: Path) -> None:
    ns = authors_code(alttest_dir / "alt_test_example.ipynb")
    result: dict = {
        "source": "nitaytech/AltTest @18428b1, alt_test_example.ipynb (Calderon, Reichart & Dror 2025)",
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__},
        "synthetic": [], "published": {}, "kqa": [], "healthbench": [],
    }
    for seed in range(12):
        case = synthetic(seed)
        llms, humans = as_dicts(case["rows"], ["judge_good", "judge_poor"])
        scoring = within_one if case["scoring"] == "within_one" else case["scoring"]
        case["results"] = {j: run(ns, llm, humans, scoring, case["epsilon"]) for j, llm in llms.items()}
        result["synthetic"].append(case)
    for name, (scoring, epsilon) in PUBLISHED.items():
        folder = alttest_dir / "data" / name
        if not folder.is_dir():
            continue
        humans = json.loads((folder / "human_annotations.json").read_text())
        llms = json.loads((folder / "llm_annotations.json").read_text())
        result["published"][name] = {"scoring": scoring, "epsilon": epsilon,
                                     "results": {j: run(ns, llm, humans, scoring, epsilon) for j, llm in llms.items()}}
    kqa = shared_data / "kqa" / "NLI_medical_annotator.csv"
    if kqa.is_file():
        import csv

        with kqa.open(newline="") as f:
            table = list(csv.DictReader(f))
        # Three physicians label each claim; no LLM labels ship with K-QA, so each physician in turn
        # stands in for the judge against the other two.
        for judge in ("label_0", "label_1", "label_2"):
            humans = {c: {r[""]: r[c] for r in table} for c in ("label_0", "label_1", "label_2") if c != judge}
            llm = {r[""]: r[judge] for r in table}
            result["kqa"].append({"judge": judge, "epsilon": 0.2, **run(ns, llm, humans, "accuracy", 0.2)})
    gold = shared_data / "healthbench_meta_subset" / "healthbench_meta_gold.jsonl"
    if gold.is_file():
        humans: dict = {}
        for line in gold.read_text().splitlines():
            r = json.loads(line)
            for who, label in zip(r["anonymized_physician_ids"], r["binary_labels"]):
                humans.setdefault(who, {})[r["item_id"]] = label
        llm = {r["item_id"]: r["criteria_met"] for r in map(json.loads, (gold.parent / "healthbench_meta_strongmodel_labels.jsonl").read_text().splitlines())}
        for min_items in (30, 5):
            result["healthbench"].append({"min_instances_per_human": min_items, "epsilon": 0.2,
                                          **run(ns, llm, humans, "accuracy", 0.2, min_instances_per_human=min_items)})
    out.write_text(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
