"""A small attempt log for the engine tests (tests/stats/test_engines*.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def attempt_log(seed: int = 1, n_items: int = 24, n_conditions: int = 3, n_attempts: int = 4, drop: float = 0.0) -> pd.DataFrame:
    """A small log: integer scores, an item x condition effect, some errors and blanks."""
    rng = np.random.default_rng(seed)
    item, cond = rng.normal(0, 1, n_items), rng.normal(0, 0.5, n_conditions)
    both = rng.normal(0, 0.7, (n_items, n_conditions))
    rows = []
    for i in range(n_items):
        for c in range(n_conditions):
            for a in range(n_attempts):
                if rng.random() < drop:
                    continue
                score = float(np.clip(np.round(5 + item[i] + cond[c] + both[i, c] + rng.normal(0, 1)), 0, 10))
                rows.append({"attempt_id": f"{i}-{c}-{a}", "item_id": f"T{i:02d}", "condition_id": f"C{c}",
                             "attempt": a + 1, "total": score, "accuracy": int(rng.integers(1, 6)),
                             "error_flag": False})  # fmt: skip
    return pd.DataFrame(rows)
