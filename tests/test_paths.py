"""Issue 34: a log, output or design path that cannot serve is refused before any work, in one line."""

import os
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.errors import PathError
from hce.log import LogWriter

runner = CliRunner()
DESIGN = {"attempts": 1, "conditions": [{"prompt": "P1.2", "model": "gpt-4o"}],
          "endpoint": {"base_url": "http://127.0.0.1:9/v1", "needs_key": False},
          "items": [{"id": "T1", "text": "Doctor: Hi. Patient: Hello."}]}


@pytest.fixture
def read_only(tmp_path):
    """A folder on a read-only file system (a read-only tmpfs as root, a folder without write permission otherwise)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a read-only tmpfs here (mount -t tmpfs -o ro is refused)")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def one_line_error(result, *said):
    output = result.output.strip()
    assert result.exit_code == 2 and "Traceback" not in output, output
    text = " ".join(output.split())
    assert text.startswith("error: ") and all(s in text for s in said), text


def write_design(tmp_path):
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(DESIGN))
    return path


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero"])
def test_collect_refuses_a_device_as_its_log_at_once(tmp_path, device):
    # Issue 34: --log /dev/full read zeros until a MemoryError after 17 s.
    started = time.monotonic()
    for extra in ([], ["--dry-run"]):
        result = runner.invoke(app, ["collect", str(write_design(tmp_path)), "--log", device, *extra])
        one_line_error(result, f"--log {device} is a character device, not a file")
    assert time.monotonic() - started < 10 and not os.path.exists(device + ".lock")


def test_collect_refuses_a_folder_or_a_read_only_place_as_its_log(tmp_path, read_only):
    result = runner.invoke(app, ["collect", str(write_design(tmp_path)), "--log", str(tmp_path)])
    one_line_error(result, f"--log {tmp_path} is a directory, not a file")
    log = read_only / "run.jsonl"
    result = runner.invoke(app, ["collect", str(write_design(tmp_path)), "--log", str(log)])
    one_line_error(result, f"--log {log} cannot be written")


def test_log_convert_merge_and_report_refuse_outputs_that_cannot_be_written(tmp_path, read_only):
    source = tmp_path / "log.jsonl"
    hce.write_log(pd.DataFrame({"attempt_id": ["a"], "item_id": ["T1"], "attempt": [1], "total": [3.0]}), source)
    # Issue 34: log convert to /dev/full printed a 15 KB traceback.
    one_line_error(runner.invoke(app, ["log", "convert", str(source), "-o", "/dev/full"]), "/dev/full is a character device")
    one_line_error(runner.invoke(app, ["log", "convert", str(source), "-o", str(read_only / "x.csv")]), "cannot be written")
    one_line_error(runner.invoke(app, ["log", "merge", str(source), "--out", str(tmp_path)]), "is a directory")
    # Issue 34: a read-only folder gave a 45-line traceback for report --out.
    one_line_error(runner.invoke(app, ["report", str(source), "--out", str(read_only / "report")]), "cannot be written")
    one_line_error(runner.invoke(app, ["report", str(source), "--out", "/dev/null"]), "is a character device, not a folder")


def test_the_python_api_refuses_the_same_paths():
    with pytest.raises(PathError, match="is a character device"):
        hce.read_log("/dev/zero", format="jsonl")
    with pytest.raises(PathError, match="is a character device"):
        LogWriter("/dev/full")
    with pytest.raises(PathError, match="is a character device"):
        hce.write_log(pd.DataFrame({"attempt_id": ["a"], "item_id": ["T1"], "attempt": [1]}), "/dev/full", format="jsonl")


def test_a_write_error_the_checks_cannot_foresee_is_one_line_too(tmp_path):
    # A file-size limit hit while the converted log is written: no traceback.
    source = tmp_path / "log.jsonl"
    hce.write_log(pd.DataFrame({"attempt_id": [f"a{i}" for i in range(500)], "item_id": "T1", "attempt": 1}), source)
    code = "from hce.cli import main; main()"

    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (2_000, 2_000))

    done = subprocess.run([sys.executable, "-c", code, "log", "convert", str(source), "-o", str(tmp_path / "out.csv")],
                          capture_output=True, text=True, preexec_fn=limit, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout, done.stderr
    assert f"error: cannot write {tmp_path / 'out.csv'}: File too large (EFBIG)" in " ".join(done.stderr.split())


def test_a_design_path_that_is_a_folder_or_a_device_is_refused_in_one_line(tmp_path):
    for path, said in ((tmp_path, "is a directory, not a file"), ("/dev/zero", "is a character device, not a file")):
        result = runner.invoke(app, ["collect", str(path), "--log", str(tmp_path / "log.jsonl"), "--dry-run"])
        one_line_error(result, f"design file {path} {said}")
