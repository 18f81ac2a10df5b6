"""The guides' import and rubric examples run as written, and the importers on the real public files.

Issue 18: the README's K-QA example named a ``claim_id`` column the file does not have. Issue 36:
the guide's import block writes the small files it reads (so it runs in a fresh clone,
``tests/test_docs_blocks.py``); the same calls run here on the public files of ``../shared/data``
(``shared_dir`` fixture), checked against their known sizes.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd

import hce
from hce import importers

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide"


def section(page: str, title: str) -> str:
    text = (GUIDE / page).read_text(encoding="utf-8")
    start = text.index(f"# {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}[^\n]*\n(.*?)```", text, flags=re.S)


def test_the_guides_import_calls_run_on_the_real_files(shared_dir):
    """The guide's calls, on Topical-Chat (Chiang & Lee 2023: 359 responses x 20 G-Eval replies),
    K-QA (399 claims x 3 physicians) and HealthBench's meta-evaluation subset."""
    guide = "\n".join(blocks(section("reanalysing.md", "Importing other tools' logs and rating tables"), "python"))
    for call in ("from_geval(", "from_inspect(", "ratings_wide(", "ratings_lists(", "item_means("):
        assert f"importers.{call}" in guide, f"the guide no longer shows importers.{call}: update this test"
    data = shared_dir / "data"
    with warnings.catch_warnings():
        # K-QA and HealthBench map cleanly; a problem or a made-up id would be an error.
        warnings.simplefilter("error")
        items = pd.read_csv(data / "topicalchat_gpt35_repeated/items.csv")
        imp = importers.from_geval(data / "topicalchat_gpt35_repeated/raw_geval_json/gpt3.5_coh_geval.json",
                                   condition_id="geval", item_keys=("system_output",),
                                   ids=dict(zip(items["response"], items["item_id"])), low=1, high=3)
        kqa = pd.read_csv(data / "kqa/NLI_medical_annotator.csv", index_col=0)
        physicians = importers.ratings_wide(kqa.reset_index(names="claim_row"), item="claim_row",
                                            raters=["label_0", "label_1", "label_2"]).data
        healthbench = pd.read_json(data / "healthbench_meta_subset/healthbench_meta_gold.jsonl", lines=True)
        labels = importers.ratings_lists(healthbench, item="item_id", labels="binary_labels",
                                         raters="anonymized_physician_ids").data
        means = importers.item_means(items, item="item_id", columns={"human_coherence": "coherence"}).data
    assert len(imp.data) == 359 * 20 and imp.problems.empty
    assert len(physicians) == 3 * 399
    assert set(labels["score"]) <= {0.0, 1.0}
    assert means["criterion"].unique().tolist() == ["coherence"]


def test_rubric_examples_load(tmp_path):
    yaml_blocks = blocks(section("rubrics.md", "Rubrics and behaviour specs"), "yaml")
    assert yaml_blocks
    for i, text in enumerate(yaml_blocks):
        path = tmp_path / f"rubric{i}.yaml"
        path.write_text(text, encoding="utf-8")
        assert hce.load_rubric(path).categories
