"""Probes in the design (issue 47, item 1) and the simulator's planted biases (item 4)."""

from __future__ import annotations

import json

import pytest
from collect_helpers import MODEL, TRANSCRIPTS, design, fast_client

import hce
import hce.stats as hs
from hce.collect.design.design import load_design
from hce.collect.call.messages import item_messages
from hce.probe_text import is_neutral_line, neutral_pad, swap_labels
from hce.collect.running.runner import estimate, run
from hce.sim import Profile, SimJudge
from hce.sim.biases import PlantedBiases, canonical_text
from hce.sim.prompt import item_text, score_categories
from hce.errors import CollectError

PROBES = [{"id": "pad", "kind": "pad_neutral", "chars": 500}, {"id": "shuffle", "kind": "shuffle_criteria", "seed": 3},
          {"id": "labels", "kind": "swap_labels"}]  # fmt: skip


def _prompt(d, item_id: str, cond_id: str) -> str:
    item = next(i for i in d.items if i.id == item_id)
    cond = next(c for c in d.conditions if c.id == cond_id)
    return item_messages(item, cond, d)[0]["content"]


def test_each_probe_adds_a_twin_of_every_condition_and_the_plan_grows_with_it():
    d = load_design(design(prompts=("P2.1", "P2.3"), attempts=2, probes=PROBES))
    base = [c.id for c in d.conditions if c.probe is None]
    assert len(base) == 2 and len(d.conditions) == 8
    assert {c.id for c in d.conditions if c.probe is not None} == {f"{b}~{p['id']}" for b in base for p in PROBES}
    assert len(d.plan()) == 3 * 8 * 2


def test_pad_neutral_adds_exactly_chars_of_content_free_lines():
    d = load_design(design(prompts=("P2.1",), probes=PROBES))
    cond = d.conditions[0].id
    original = item_text(_prompt(d, "T1", cond), "scores")[1]
    padded = item_text(_prompt(d, "T1", f"{cond}~pad"), "scores")[1]
    assert padded.endswith(original) and len(padded) - len(original) == 500
    assert all(is_neutral_line(line) for line in padded[: -len(original)].splitlines())
    for chars in (13, 14, 99, 1000, 2500):
        assert len(neutral_pad(chars, "T9")) == chars
    assert neutral_pad(300, "T1") != neutral_pad(300, "T2")  # each item its own lines, reproducibly
    assert neutral_pad(300, "T1") == neutral_pad(300, "T1")


def test_shuffle_criteria_presents_another_order_seeded_per_item():
    d = load_design(design(prompts=("P2.1",), probes=PROBES))
    cond = d.conditions[0].id
    names = [c[0] for c in score_categories(_prompt(d, "T1", cond))]
    orders = {i: [c[0] for c in score_categories(_prompt(d, i, f"{cond}~shuffle"))] for i in TRANSCRIPTS}
    assert all(sorted(o) == sorted(names) and o != names for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) > 1
    again = load_design(design(prompts=("P2.1",), probes=PROBES))
    assert [c[0] for c in score_categories(_prompt(again, "T1", f"{cond}~shuffle"))] == orders["T1"]


def test_swap_labels_renames_speakers_only():
    assert swap_labels("Doctor: Hi, Patient.\n  Patient : Hello.", {"Doctor": "Clinician", "Patient": "Person"}) == \
        "Clinician: Hi, Patient.\n  Person : Hello."  # fmt: skip
    d = load_design(design(prompts=("P2.1",), probes=PROBES))
    text = item_text(_prompt(d, "T1", f"{d.conditions[0].id}~labels"), "scores")[1]
    assert text.startswith("Clinician: What brings you in?\nPerson: My belly is sore.")


def test_position_reverses_several_texts_and_refuses_an_item_with_one():
    items = {"P1": "Doctor: A?\nPatient: first.\n---\nDoctor: B?\nPatient: second."}
    d = load_design(design(prompts=("P2.1",), items=items, probes=[{"id": "rev", "kind": "position"}]))
    text = item_text(_prompt(d, "P1", f"{d.conditions[0].id}~rev"), "scores")[1]
    assert text == "Doctor: B?\nPatient: second.\n---\nDoctor: A?\nPatient: first."
    with pytest.raises(CollectError, match="item 'T1' holds one text"):
        load_design(design(prompts=("P2.1",), probes=[{"id": "rev", "kind": "position"}]))


def test_the_author_probe_adds_no_call_and_needs_every_author_model():
    with pytest.raises(CollectError, match="author_model; item 'T1' has none"):
        load_design(design(prompts=("P2.1",), probes=[{"id": "self", "kind": "author"}]))
    spec = design(prompts=("P2.1",), probes=[{"id": "self", "kind": "author"}])
    spec["items"] = [{**i, "author_model": "gpt-4o"} for i in spec["items"]]
    assert len(load_design(spec).conditions) == 1


@pytest.mark.parametrize("probes, message", [
    ({"id": "x"}, "must be a list"),
    ([{"id": "x", "kind": "pad"}], "one of"),
    ([{"id": "x", "kind": "pad_neutral", "char": 10}], r"unknown key\(s\) \['char'\]"),
    ([{"id": "x", "kind": "pad_neutral", "chars": 5}], "at least 13"),
    ([{"id": "x", "kind": "swap_labels"}, {"id": "x", "kind": "position"}], "distinct"),
    ([{"id": "a~b", "kind": "swap_labels"}], "may not contain"),
])  # fmt: skip
def test_bad_probes_are_refused_at_load(probes, message):
    with pytest.raises(CollectError, match=message):
        load_design(design(prompts=("P2.1",), probes=probes))


def test_the_dry_run_prices_the_twins_like_any_condition():
    plain = estimate(load_design(design(prompts=("P2.1",))))
    probed = estimate(load_design(design(prompts=("P2.1",), probes=PROBES)))
    assert probed["calls"].sum() == 4 * plain["calls"].sum()
    assert probed["input_tokens"].sum() > 4 * plain["input_tokens"].sum()  # the pad's tokens are priced too


def test_a_run_logs_probe_id_and_base_condition_and_probe_effect_reads_it(serve, tmp_path):
    server = serve(SimJudge(seed=1, biases=PlantedBiases(length=2.0), default=Profile(noise=0.6)))
    spec = design(prompts=("P2.1",), attempts=2, probes=[{"id": "pad", "kind": "pad_neutral", "chars": 1000}])
    run(spec, tmp_path / "log.jsonl", client=fast_client(server), concurrency=4)
    log = hce.read_log(tmp_path / "log.jsonl")
    twins = log[log["condition_id"].str.endswith("~pad")]
    assert set(twins["probe_id"]) == {"pad"} and set(twins["base_condition_id"]) == {f"P2.1|{MODEL}|t0.1"}
    assert log.loc[~log.index.isin(twins.index), "probe_id"].isna().all()
    assert len(set(log["settings_hash"])) == 2  # the twin's fingerprint holds its probe
    # At temperature 0.1 an item's two repeats agree: the fit is the cell means' (tests/stats/test_biases.py).
    out = hs.probe_effect(log, probe="pad", score="total")
    assert out["estimate"].iloc[0] > 2  # 2 points a criterion, clipped at the scale's ends: well above 0
    assert out["std_error"].iloc[0] > 0


def test_planted_biases_move_the_simulated_mean_by_their_size():
    b = PlantedBiases(length=0.5, order=0.3, self_preference=0.7, drift_after=2, drift_shift=-1.0,
                      authors={"Doctor: Hi.\nPatient: Fine.": "claude-3-5-sonnet"})  # fmt: skip
    text = "Doctor: Hi.\nPatient: Fine."
    assert b.shift("x" * 2000, "gpt-4o", first=False) == pytest.approx(1.0)
    assert b.shift("x" * 2000, "gpt-4o", first=True) == pytest.approx(1.3)
    assert b.shift(text, "claude-3-haiku", first=False) == pytest.approx(0.7 + 0.5 * len(text) / 1000)
    assert b.shift(text, "gpt-4o", first=False, served=2) == pytest.approx(-1.0 + 0.5 * len(text) / 1000)
    assert [b.count() for _ in range(3)] == [0, 1, 2]


def test_a_transformed_item_keeps_its_originals_truth():
    original = TRANSCRIPTS["T1"]
    for probe in PROBES:
        d = load_design(design(prompts=("P2.1",), probes=[probe]))
        shown = item_text(_prompt(d, "T1", d.conditions[1].id), "scores")[1]
        assert canonical_text(shown) == original
    judge = SimJudge(seed=0)
    cats = [(n, 1, 4) for n in ("Clarity of Language", "Lexical Diversity")]
    assert judge._levels(neutral_pad(400, "T1") + original, cats) == judge._levels(original, cats)


def test_sim_server_cli_takes_the_planted_biases(tmp_path):
    from typer.testing import CliRunner

    from hce.cli import app

    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "text": "Doctor: Hi.", "author_model": "gpt-4o"}) + "\n")
    result = CliRunner().invoke(app, ["sim-server", "--self-preference", "0.5", "--port", "1"])
    assert result.exit_code == 2 and "--authors" in result.output
    result = CliRunner().invoke(app, ["sim-server", "--authors", str(tmp_path / "none.jsonl"), "--port", "1"])
    assert result.exit_code == 2 and "does not exist" in result.output
