import re
import subprocess
import sys
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.errors import RubricError
from hce.rubric import packaged_behaviors

PRD = "seeds/000_4d279bfdffb3ea61.txt"


def prd_levels(shared_dir):
    """(criterion name, score, label, descriptor, example) for every level in PRD section 3."""
    text = (shared_dir / PRD).read_text(encoding="utf-8")
    section = text[text.index("**Full Rubric Details:**") : text.index("**Statement of Finality:**")]
    rows, name = [], None
    for line in section.splitlines():
        header = re.match(r"\s*- \*\*Criterion \d: (.+)\*\*$", line)
        level = re.match(r"\s*- (\d) \((\w+)\): (.*) _Example: (.*)_$", line)
        if header:
            name = header.group(1)
        elif level:
            rows.append((name, int(level.group(1)), level.group(2), level.group(3), level.group(4)))
    return rows


def test_rubric_v5_matches_prd_word_for_word(shared_dir):
    # Source: the PRD (seed 000), section 3, "Categories & Scoring Criteria".
    expected = prd_levels(shared_dir)
    assert len(expected) == 20
    rubric = hce.load_rubric("v5")
    got = [
        (c.name, lv.score, lv.label, lv.descriptor, lv.example)
        for c in rubric.categories
        for lv in c.levels
    ]
    assert got == expected


def test_rubric_v5_structure_and_rendering():
    rubric = hce.load_rubric("v5")
    assert rubric.name == "Patient Health Communication Rubric v5.0"
    assert rubric.criteria == [
        "clarity_of_language",
        "lexical_diversity",
        "conciseness_and_completeness",
        "engagement_with_health_information",
        "health_literacy_indicator",
    ]
    assert rubric.total_range == (5, 20)
    assert all([lv.label for lv in c.levels] == ["Poor", "Fair", "Good", "Excellent"] for c in rubric.categories)
    text = rubric.render()
    assert text.splitlines()[0] == "Patient Health Communication Rubric v5.0"
    assert "Criterion 5: Health Literacy Indicator" in text
    # Every descriptor and example appears verbatim in the rendered prompt text.
    for c in rubric.categories:
        for lv in c.levels:
            assert f"- {lv.score} ({lv.label}): {lv.descriptor} Example: {lv.example}" in text
    assert hce.load_rubric("v5.0") == rubric


def write(tmp_path, body, name="rubric.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_custom_rubric_with_mixed_scales(tmp_path):
    # PDSQI-9 style: a 5-point item next to a binary one.
    path = write(
        tmp_path,
        """
        name: Mini PDSQI
        categories:
          - name: Accurate
            levels:
              - {score: 1, label: Poor, descriptor: Multiple errors}
              - {score: 2, label: Fair, descriptor: Some errors}
              - {score: 3, label: Good, descriptor: One error}
              - {score: 4, label: Very good, descriptor: Minor slip}
              - {score: 5, label: Excellent, descriptor: No errors}
          - name: Stigmatizing language
            id: stigmatizing
            levels:
              - {score: 1, label: "Yes", descriptor: Stigmatizing words present}
              - {score: 0, label: "No", descriptor: None present}
        """,
    )
    rubric = hce.load_rubric(path)
    assert rubric.criteria == ["accurate", "stigmatizing"]
    assert rubric.total_range == (1, 6)
    assert [lv.score for lv in rubric.category("stigmatizing").levels] == [0, 1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("name: X\n", r"field 'categories': expected a non-empty list, got nothing"),
        (
            "name: X\ncategories:\n  - name: A\n    levels:\n      - {score: one, label: P, descriptor: d}\n",
            r"field 'categories\[0\]\.levels\[0\]\.score': expected an integer, got str 'one'",
        ),
        (
            "name: X\ncategories:\n  - name: A\n    levels:\n      - {score: 1, label: P}\n",
            r"field 'categories\[0\]\.levels\[0\]\.descriptor': expected a non-empty string, got nothing",
        ),
        (
            "name: X\ncategories:\n  - name: A\n    levels: [{score: 1, label: P, descriptor: d}, {score: 1, label: Q, descriptor: e}]\n",
            r"field 'categories\[0\]\.levels': expected distinct scores, got list \[1, 1\]",
        ),
        ("name: [unclosed\n", r"not valid YAML at line \d+, column \d+"),
        ("- just\n- a list\n", r"field 'top level': expected a mapping"),
    ],
)
def test_malformed_rubric_names_file_field_and_expectation(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(RubricError, match=message) as info:
        hce.load_rubric(path)
    assert str(path) in str(info.value)


GAPPED = """
    name: Gapped
    {allow}categories:
      - name: Accuracy
        levels:
{levels}
      - name: Tone
        levels:
          - {{score: 1, label: Cold, descriptor: d}}
          - {{score: 2, label: Warm, descriptor: d}}
    """


def gapped(tmp_path, scores, allow=""):
    levels = "\n".join(f"          - {{score: {s}, label: L{s}, descriptor: d}}" for s in scores)
    return write(tmp_path, GAPPED.format(allow=allow, levels=levels))


@pytest.mark.parametrize(("scores", "missing"), [([1, 2, 4, 5], "[3]"), ([1, 5], "[2, 3, 4]")])
def test_scale_with_a_gap_is_refused_unless_intended(tmp_path, scores, missing):
    # Issue 18: levels 1, 2, 4, 5 (or only 1 and 5) passed, and a judge's 3 was logged as valid.
    path = gapped(tmp_path, scores)
    with pytest.raises(RubricError, match=rf"categories\[0\]\.levels': expected consecutive scores \(missing {re.escape(missing)}\); .*allow_gaps: true"):
        hce.load_rubric(path)
    result = CliRunner().invoke(app, ["rubric", "validate", str(path)])
    assert result.exit_code == 2 and "allow_gaps" in result.output
    rubric = hce.load_rubric(gapped(tmp_path, scores, allow="allow_gaps: true\n    "))
    assert rubric.category("Accuracy").scores == tuple(scores)
    assert rubric.total_range == (2, 7)
    result = CliRunner().invoke(app, ["rubric", "validate", str(tmp_path / "rubric.yaml")])
    assert result.exit_code == 0 and f"Accuracy scores only {scores}" in result.output


def test_allow_gaps_must_be_a_boolean(tmp_path):
    with pytest.raises(RubricError, match=r"field 'allow_gaps': expected true or false, got str 'yes please'"):
        hce.load_rubric(gapped(tmp_path, [1, 2, 4, 5], allow="allow_gaps: yes please\n    "))


def test_total_levels_are_the_reachable_sums():
    assert hce.load_rubric("v5").total_levels == tuple(range(5, 21))


def test_unknown_rubric_name():
    with pytest.raises(RubricError, match=r"neither a packaged name \(\['v5', 'v5.0'\]\) nor an existing file"):
        hce.load_rubric("v9")


def test_packaged_behavior_spec_matches_seed_001():
    # Source: seed 001 ("Medic Copilot - LLM-as-a-Judge Boolean Prompt Spec"), section 3.
    assert packaged_behaviors() == ["medications_extracted_correct"]
    spec = hce.load_behavior("medications_extracted_correct")
    assert spec.behavior_id == spec.field_name == "medications_extracted_correct"
    assert spec.description == (
        "Checks whether the AI correctly extracts all active medications administered "
        "during the encounter, with accurate name, dose, and route."
    )
    assert (spec.category, spec.severity, spec.uncertainty_policy) == ("extraction", "high", "fail_and_flag")
    assert spec.ground_truth_source == ("structured_medications_section",)
    assert spec.include == (
        "source clinical note or transcript for the encounter",
        "structured ground-truth medications for the same encounter",
    )
    assert spec.pass_conditions[1] == (
        "For each medication, name, dose, and route match the ground truth "
        "(allowing minor spelling and abbreviation differences that preserve meaning)."
    )
    assert len(spec.automatic_fail) == 3 and len(spec.acceptable_variations) == 3
    assert [(e.name, e.expected_pass) for e in spec.examples] == [
        ("simple_pass", True),
        ("simple_fail_missing_med", False),
    ]
    assert spec.examples[1].candidate == ["ASA 324mg PO"]


def test_behavior_spec_seed_text_present(shared_dir):
    seed = (shared_dir / "seeds/001_130cec490064d8e9.txt").read_text(encoding="utf-8")
    spec = hce.load_behavior("medications_extracted_correct")
    for line in (*spec.automatic_fail, spec.pass_conditions[0], *spec.acceptable_variations):
        assert line in seed


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"severity": "extreme"}, r"field 'severity': expected one of \['low', 'medium', 'high', 'critical'\]"),
        ({"pass_conditions": []}, r"field 'pass_conditions': expected a non-empty list of strings"),
        ({"uncertainty_policy": "guess"}, r"field 'uncertainty_policy': expected one of \['fail_and_flag', 'fail'\]"),
        (
            {"examples": [{"name": "x", "expected_pass": "yes"}]},
            r"field 'examples\[0\]\.expected_pass': expected true or false, got str 'yes'",
        ),
    ],
)
def test_malformed_behavior_spec(tmp_path, change, message):
    import yaml

    doc = {
        "behavior_id": "b",
        "description": "d",
        "category": "c",
        "severity": "low",
        "pass_conditions": ["p"],
    }
    doc.update(change)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(RubricError, match=message):
        hce.load_behavior(path)


@pytest.mark.parametrize("criterion", ["model", "error_flag", "reasoning", "confidence", "total", "attempt", "not_applicable"])
def test_a_criterion_named_like_a_log_column_is_refused(tmp_path, criterion):
    # Issue 44: with id 'model' the score overwrote the column; with 'error_flag' every score vanished unnoticed.
    path = tmp_path / "rubric.yaml"
    levels = [{"score": 1, "label": "a", "descriptor": "a"}, {"score": 2, "label": "b", "descriptor": "b"}]
    path.write_text(yaml.safe_dump({"name": "T", "categories": [{"name": "Fine", "levels": levels},
                                                                  {"name": "Other", "id": criterion, "levels": levels}]}))
    with pytest.raises(RubricError, match=rf"categories\[1\]\.id: the criterion id '{criterion}' is a column of the attempt log"):
        hce.load_rubric(path)
    result = subprocess.run([sys.executable, "-m", "hce.cli", "rubric", "validate", str(path)], capture_output=True, text=True)
    assert result.returncode == 2 and f"'{criterion}' is a column of the attempt log" in result.stderr


def test_a_category_whose_name_becomes_a_log_column_says_to_give_it_an_id(tmp_path):
    path = tmp_path / "rubric.yaml"
    levels = [{"score": 1, "label": "a", "descriptor": "a"}, {"score": 2, "label": "b", "descriptor": "b"}]
    path.write_text(yaml.safe_dump({"name": "T", "categories": [{"name": "Reasoning", "levels": levels}]}))
    with pytest.raises(RubricError, match=r"categories\[0\]\.name: .*'reasoning'.*'id: reasoning_score'"):
        hce.load_rubric(path)


def test_a_rubric_built_in_python_with_a_log_column_is_refused():
    from hce.rubric import Category, Level, Rubric
    levels = (Level(1, "a", "a"), Level(2, "b", "b"))
    with pytest.raises(RubricError, match=r"\['error_flag'\] are columns of the attempt log"):
        Rubric("T", (Category("error_flag", "Error flag", levels),))
