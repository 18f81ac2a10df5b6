"""Issue 34: rubric files are checked like design files; a criterion's description reaches the judge."""

import hashlib

import pytest
import yaml

import hce
from hce.collect.design.prompts import render
from hce.errors import RubricError

RUBRIC = {
    "name": "Two criteria",
    "categories": [
        {"name": "Accuracy", "description": "Whether each statement agrees with the transcript.",
         "levels": [{"score": 1, "label": "Poor", "descriptor": "Errors."}, {"score": 2, "label": "Good", "descriptor": "None."}]},
        {"name": "Tone", "levels": [{"score": 1, "label": "Cold", "descriptor": "Curt."},
                                    {"score": 2, "label": "Warm", "descriptor": "Kind."}]},
    ],
}


def write(tmp_path, doc):
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("where, key, near", [
    ((), "total_meaningfull", "total_meaningful"),
    (("categories", 0), "descriptr", "description"),
    (("categories", 1, "levels", 0), "exampel", "example"),
])
def test_an_unknown_key_is_refused_with_the_nearest_known_one(tmp_path, where, key, near):
    # Issue 34: `descriptr:` and `total_meaningfull: true` "validated", silently ignored.
    doc = yaml.safe_load(yaml.safe_dump(RUBRIC))
    target = doc
    for step in where:
        target = target[step]
    target[key] = True
    with pytest.raises(RubricError, match=rf"unknown field '[^']*{key}'; did you mean '{near}'\?"):
        hce.load_rubric(write(tmp_path, doc))


def test_a_criterions_description_reaches_the_judge_prompt_and_round_trips(tmp_path):
    # Issue 34: a category's description was dropped and never reached the judge prompt.
    rubric = hce.load_rubric(write(tmp_path, RUBRIC))
    assert rubric.categories[0].description == "Whether each statement agrees with the transcript."
    prompt = "\n".join(m["content"] for m in render("P1.2", rubric=rubric, transcript="Doctor: Hi. Patient: Hello."))
    assert "Criterion 1: Accuracy\nWhether each statement agrees with the transcript.\n- 1 (Poor): Errors." in prompt
    again = tmp_path / "again.yaml"
    again.write_text(hce.rubric.rubric_yaml(rubric))
    assert hce.load_rubric(again) == rubric


def test_the_packaged_rubric_v5_text_is_unchanged_byte_for_byte():
    text = hce.load_rubric("v5").render()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == (
        "6250c7d27b9548507a8f2254aeb773560de0a4ea7494c208e739d6fefb302bb7")  # as on main before issue 34
