"""A first judge study on the demo data
=====================================

The packaged demo corpus (24 synthetic dialogues written for hce) judged by hce's simulated
judge under three prompts, five attempts each, through the real collection layer; then the
per-item spread of the repeated scores, a test of whether the prompt changes that spread,
the reliability of one attempt, and the report of the log. No API key, no cost, no shared
data: this example always runs.
"""

# %%
# Collect: 24 dialogues x 3 prompts x 5 attempts against the simulated judge on loopback.
import json
import tempfile
from importlib.resources import files
from pathlib import Path

import pandas as pd

import hce
import hce.stats as hs
from hce.collect import SimJudge, SimServer, run

lines = files("hce").joinpath("data/demo_corpus.jsonl").read_text(encoding="utf-8").splitlines()
items = [{"id": r["transcript_id"], "text": r["text"]} for r in map(json.loads, lines)]
design = {
    "experiment_id": "first_analysis",
    "attempts": 5,
    "defaults": {"model": "gpt-4.1-mini-2025-04-14", "temperature": 0.7},
    "conditions": [{"prompt": "P2.1"}, {"prompt": "P2.2"}, {"prompt": "P2.3"}],
    "items": items,
}
pd.set_option("display.width", 120, "display.max_columns", 12, "display.max_colwidth", 40)
out = Path(tempfile.mkdtemp(prefix="hce_first_analysis_"))
with SimServer(SimJudge(seed=1)).start() as server:
    print(run(design, out / "demo.jsonl", base_url=server.url, api_key="local"))
log = hce.read_log(out / "demo.jsonl")
print(log[["item_id", "condition_id", "attempt", "total"]].head())

# %%
# Spread: one row per item x condition; ``sd`` is the SD of the five attempts' totals.
spread = hs.item_spread(log)
print(hs.spread_summary(spread, by="condition_id"))

# %%
# Does the prompt change the spread? Friedman's test on the per-item SDs, then Nemenyi pairs.
print(hs.friedman(spread, random_state=1).T)  # one test: its row as a column
print(hs.posthoc(spread))

# %%
# How reliable is one attempt? ICC of the attempts of one prompt (attempts as raters).
p23 = log[log["prompt_id"] == "P2.3"]
print(hs.icc(p23, item="item_id", rater="attempt", score="total").iloc[:, :6])

# %%
# The report of any log: the same analyses for every criterion, as Markdown, HTML, CSV, LaTeX.
report = hce.report.report(log)
print(report.write(out / "report"))
