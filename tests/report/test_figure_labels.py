"""Figures a reader reads without a key (issue 45, item 6): legends as the captions name the groups,
model names instead of codes, paired data drawn with a line per item."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hce.report import figures
from hce.study.report import _experiment_figures

MODELS = ["gpt-4.1-mini-2025-04-14", "gpt-4o-2024-08-06", "o3-2025-04-16", "o4-mini-2025-04-16"]


def spread(models=MODELS, items=8) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame([{"item_id": f"T{i}", "model": m, "sd": float(rng.uniform(0, 2))} for m in models for i in range(items)])


def test_model_names_are_the_ticks_not_codes_with_a_key():
    fig = figures.sd_by_condition(spread(), condition="model", item="item_id")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == MODELS  # were C1-C4 with a key under the axes
    assert not [t for t in fig.texts if t.get_text().startswith("Key:")]


def test_paired_sds_are_joined_by_a_line_per_item():
    data = spread()
    lines = figures.sd_by_condition(data, condition="model", item="item_id").axes[0].lines
    joined = [line for line in lines if len(line.get_xdata()) == len(MODELS)]
    assert len(joined) == data["item_id"].nunique()  # one line per transcript, through its 4 SDs
    first = data[data["item_id"] == "T0"].set_index("model").loc[sorted(MODELS), "sd"].to_numpy()
    assert any(np.allclose(line.get_ydata(), first) for line in joined)
    # not paired (an item missing in one condition): points only, as before
    unpaired = figures.sd_by_condition(data.iloc[1:], condition="model", item="item_id").axes[0].lines
    assert not [line for line in unpaired if len(line.get_xdata()) == len(MODELS)]


def test_figure_1_legend_names_the_groups_as_its_caption_does():
    distribution = pd.DataFrame({"source": ["P1.1", "P1.1", "P1.2", "P1.2", "target"], "total": [10, 12, 11, 13, 12],
                                 "count": [2, 1, 1, 2, 3], "share": [0.67, 0.33, 0.33, 0.67, 1.0]})  # fmt: skip
    (figure,) = _experiment_figures("EXP1_BaselineRubricUtility", {"distribution": distribution}, "exp1",
                                    {"non_rubric": "P1.1", "rubric": "P1.2"})  # fmt: skip
    legend = [t.get_text() for t in figure.figure.axes[0].get_legend().get_texts()]
    assert legend == ["G1 (P1.1)", "G2 (P1.2)", "target"]  # was P1.1/P1.2 beside a caption saying G1/G2
    assert "G1" in figure.caption and "G2" in figure.caption


def test_a_reliability_panel_with_one_bin_says_why_it_is_one_point():
    # Figure 5's adjusted panel: 397 of 400 forecasts in one bin, drawn as a lone point without a word.
    table = pd.DataFrame({"mean_prob": [0.55, 0.998], "estimate": [0.67, 0.99], "n": [3, 397], "ci_low": [0.2, 0.97],
                          "ci_high": [0.94, 1.0]})  # fmt: skip
    ax = figures.reliability_diagram(table)
    (note,) = [t.get_text() for t in ax.texts if t.get_text().startswith("One bin")]
    assert "397 of 400 forecasts" in note and "0.998" in note
    two = figures.reliability_diagram(table.assign(n=[30, 370]))
    assert not [t for t in two.texts if t.get_text().startswith("One bin")]
