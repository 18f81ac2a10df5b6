"""The guides' import and rubric examples run as written, against the real public files.

Issue 18: the README's K-QA example named a ``claim_id`` column the file does not have.
Each code block of the importing section (docs/guide/reanalysing.md) is executed with ``DATA`` pointed at the shared
folder (``shared_dir`` fixture); the Inspect log the example names is written first, as
Inspect AI would (``--log-format json``), since no public Inspect log is in the folder.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import hce
from inspect_logs import inspect_log

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide"


def section(page: str, title: str) -> str:
    text = (GUIDE / page).read_text(encoding="utf-8")
    start = text.index(f"# {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}[^\n]*\n(.*?)```", text, flags=re.S)


def test_import_examples_run_on_the_real_files(shared_dir, tmp_path, monkeypatch):
    code = blocks(section("reanalysing.md", "Importing other tools' logs and rating tables"), "python")
    assert len(code) == 1
    source, n = re.subn(r'^DATA = ".*"$', f"DATA = {str(shared_dir / 'data')!r}", code[0], flags=re.M)
    assert n == 1, "the example must set DATA once, so it can be pointed at the shared folder"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "2026-11-21_meds.json").write_text(json.dumps(inspect_log()))
    scope: dict = {}
    with warnings.catch_warnings():
        # K-QA and HealthBench map cleanly; a problem or a made-up id would be an error in the guide.
        warnings.simplefilter("error")
        exec(compile(source, "docs/guide/reanalysing.md (importing)", "exec"), scope)
    assert len(scope["imp"].data) == 359 * 20 and scope["imp"].problems.empty
    assert scope["log"]["total"].tolist() == [1.0, 1.0]
    assert len(scope["physicians"]) == 3 * 399
    assert set(scope["labels"]["score"]) <= {0.0, 1.0}
    assert scope["means"]["criterion"].unique().tolist() == ["coherence"]


def test_rubric_examples_load(tmp_path):
    yaml_blocks = blocks(section("rubrics.md", "Rubrics and behaviour specs"), "yaml")
    assert yaml_blocks
    for i, text in enumerate(yaml_blocks):
        path = tmp_path / f"rubric{i}.yaml"
        path.write_text(text, encoding="utf-8")
        assert hce.load_rubric(path).categories
