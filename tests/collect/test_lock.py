"""One writer per log: a second collector on the same log stops at once, naming the holder."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml
from collect_helpers import design, fast_client

import hce
from hce.collect.running.batch import cancel_batches, run_batch
from hce.collect.running.lock import LogLockedError, hold_log, lock_path
from hce.collect.running.runner import run
from hce.sim import SimJudge

CLI = [sys.executable, "-c", "from hce.cli import main; main()"]


def wait_for(condition, what, seconds=60, process=None):
    deadline = time.monotonic() + seconds
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended before {what}: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class GatedJudge(SimJudge):
    """A judge that answers nothing until the test opens its gate (it blocks the server's loop)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.gate = threading.Event()

    def respond(self, *args, **kwargs):
        self.gate.wait(60)
        return super().respond(*args, **kwargs)


def test_two_collectors_on_one_log_the_second_stops_and_nothing_is_sent_twice(serve, tmp_path):
    # Issue 19: the same `hce collect` run twice at once gave 240 lines, 120 attempt ids twice.
    judge = GatedJudge(seed=0)
    server = serve(judge)
    spec = design(attempts=10, endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"}, run={"concurrency": 4})  # 60 calls
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "run.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    command = [*CLI, "collect", str(path), "--log", str(log)]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The first collector holds the lock (its pid is in the file) and waits for its first reply.
        wait_for(lambda: b"pid" in (lock_path(log).read_bytes() if lock_path(log).exists() else b""), "the lock",
                 process=first)
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        judge.gate.set()
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, out + err
    message = " ".join((second.stdout + second.stderr).split())
    assert second.returncode == 2, message
    assert f"another collector is writing {log}" in message
    assert f"pid {first.pid} on host {socket.gethostname()}, since " in message
    assert "to run:" not in message  # issue 34: it printed "to run: 138 calls" before the lock error
    ids = [json.loads(line)["attempt_id"] for line in log.read_text().splitlines()]
    assert len(ids) == 60 and len(set(ids)) == 60  # 0 duplicated attempts
    assert judge.stats["requests"] == 60  # the second collector sent nothing
    assert not lock_path(log).exists()  # a finished run leaves no lock file


def test_a_lock_left_by_a_killed_process_is_released_by_the_os(serve, tmp_path):
    log = tmp_path / "run.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom hce.collect.running.lock import hold_log\n"
         "with hold_log(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(120)", str(log)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LogLockedError, match=f"pid {holder.pid} on host"):
            run(design(attempts=1), log, client=fast_client(serve()))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert lock_path(log).exists()  # kill -9 left the file, but not the lock
    summary = run(design(attempts=1), log, client=fast_client(serve()))
    assert summary.done == 6 and len(hce.read_log(log)) == 6


def test_batch_runs_and_cancels_take_the_same_lock(serve, tmp_path):
    server = serve()
    log = tmp_path / "run.jsonl"
    options = dict(client=fast_client(server), poll_interval=0.001)
    with hold_log(log):
        with pytest.raises(LogLockedError, match="another collector is writing"):
            run_batch(design(attempts=1), log, **options)
        with pytest.raises(LogLockedError, match="another collector is writing"):
            cancel_batches(design(attempts=1), log, client=fast_client(server), poll_interval=0.001)
        with pytest.raises(LogLockedError, match="another collector is writing"):
            run(design(attempts=1), log, client=fast_client(server))
    assert server.judge.stats["requests"] == 0 and not log.exists()
    assert run_batch(design(attempts=1), log, client=fast_client(server), poll_interval=0.001).done == 6


@pytest.mark.parametrize("other_name", ["symlink", "hard link in another folder", "dot-dot spelling"])
def test_every_name_of_one_log_takes_one_lock(tmp_path, other_name):
    # Issue 44: a collector on real.jsonl and one on a symlink to it paid 540 replies for 270 attempts.
    real = tmp_path / "runs" / "real.jsonl"
    real.parent.mkdir()
    real.write_text('{"attempt_id": "a1", "item_id": "T1", "attempt": 1, "error_flag": false}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if other_name == "symlink":
        other = elsewhere / "link.jsonl"
        other.symlink_to(real)
    elif other_name == "hard link in another folder":
        other = elsewhere / "same.jsonl"
        os.link(real, other)
    else:
        other = elsewhere / ".." / "runs" / "real.jsonl"
    with hold_log(real):
        with pytest.raises(LogLockedError, match="another collector is writing"):
            with hold_log(other):
                pass
    with hold_log(other):  # released: the other name runs once the first is done
        with pytest.raises(LogLockedError):
            with hold_log(real):
                pass
    assert not lock_path(real).exists() and not lock_path(other).exists()


def test_a_symlink_to_a_log_not_yet_written_takes_the_real_files_lock(tmp_path):
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)  # dangling until the first reply is logged
    assert lock_path(link) == lock_path(real)
    with hold_log(link), pytest.raises(LogLockedError):
        with hold_log(real):
            pass


@pytest.fixture
def bind_mount(tmp_path):
    """``(folder, mounted)``: ``mounted`` a bind mount of ``folder`` (needs root and mount(8); skips otherwise)."""
    import shutil
    import subprocess

    folder, mounted = tmp_path / "runs", tmp_path / "mounted"
    folder.mkdir()
    mounted.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) here")
    done = subprocess.run(["mount", "--bind", str(folder), str(mounted)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot bind-mount here (needs root or CAP_SYS_ADMIN): {done.stderr.strip()}")
    yield folder, mounted
    subprocess.run(["umount", str(mounted)], check=True)


@pytest.mark.parametrize("exists", [True, False], ids=["written log", "new log"])
def test_a_bind_mount_of_the_logs_folder_takes_the_same_lock(bind_mount, exists):
    # Issue 44: the lock is keyed on the file (its inode), not on a spelling; a bind mount is one more spelling
    folder, mounted = bind_mount
    if exists:
        (folder / "real.jsonl").write_text('{"attempt_id": "a1", "item_id": "T1", "attempt": 1, "error_flag": false}\n')
    with hold_log(folder / "real.jsonl"):
        with pytest.raises(LogLockedError, match="another collector is writing"):
            with hold_log(mounted / "real.jsonl"):
                pass
    with hold_log(mounted / "real.jsonl"), pytest.raises(LogLockedError):
        with hold_log(folder / "real.jsonl"):
            pass
