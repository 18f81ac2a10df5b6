"""Issue 34: a reply that was paid for is never lost, whatever stops the run, and never paid for twice.

Each run goes through a counting proxy in front of the simulated judge: the replies it
answered (HTTP 200, billed by a real provider) must equal the rows logged, across the
failure and the resume.
"""

import errno
import os
import subprocess
import sys
import warnings

import pytest
import yaml
from collect_helpers import MODEL, TRANSCRIPTS, design
from recording_proxy import RecordingProxy

import hce
from hce.collect.call.client import FatalCallError
from hce.log_writer import wal_path
from hce.collect.running.runner import run
from hce.sim import SimJudge
from hce.errors import CollectError
from hce.log import LogWriter, WaitingRepliesWarning


@pytest.fixture
def proxy():
    made = []

    def start(server):
        made.append(RecordingProxy(server.url).start())
        return made[-1]

    yield start
    for p in made:
        p.stop()


def disk_full_after(writes: int, monkeypatch):
    """Make every log write after the first ``writes`` fail as on a full disk (ENOSPC); the real writer, to put back."""
    real = LogWriter.write_lines
    done = []

    def write_lines(self, data):
        done.append(len(data))
        if len(done) > writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, data)

    monkeypatch.setattr(LogWriter, "write_lines", write_lines)
    return real


def two_endpoints(good_url, bad_url, attempts=6):
    spec = design(prompts=("P1.2",), attempts=attempts)
    spec["endpoints"] = {"good": {"base_url": good_url, "api_key_env": "GOOD_KEY", "max_retries": 0},
                         "bad": {"base_url": bad_url, "api_key_env": "BAD_KEY", "max_retries": 0}}
    spec["conditions"] = [{"prompt": "P1.2", "endpoint": "good"}, {"prompt": "P1.2", "endpoint": "bad", "id": "other"}]
    spec["run"] = {"concurrency": 4}
    return spec


def test_a_wrong_key_on_one_endpoint_keeps_what_the_other_answered(serve, proxy, tmp_path, monkeypatch):
    # Issue 34: the fatal stop threw away two replies the other endpoint had already answered (0 rows logged).
    good = proxy(serve(SimJudge(seed=0, latency=0.3)))
    bad = proxy(serve(SimJudge(seed=1), api_key="sk-right"))
    monkeypatch.setenv("GOOD_KEY", "sk-good")
    monkeypatch.setenv("BAD_KEY", "sk-wrong")
    log = tmp_path / "two.jsonl"
    spec = two_endpoints(good.url, bad.url)
    with pytest.raises(FatalCallError, match=r"refused the API key .*calls in flight to every endpoint were finished "
                                             r"and logged: set the right key") as caught:
        run(spec, log)
    assert "refused model" not in str(caught.value) and "sk-wrong" not in str(caught.value)
    rows = hce.read_log(log)
    assert good.answered[200] >= 1, "no call of the good endpoint was in flight: the case is not tested"
    assert len(rows) == good.answered[200] and set(rows["endpoint"]) == {"good"}
    # The key fixed, the resume sends the rest: every attempt answered once, logged once.
    monkeypatch.setenv("BAD_KEY", "sk-right")
    run(spec, log)
    rows = hce.read_log(log)
    assert len(rows) == 36 and rows["attempt_id"].is_unique
    assert good.answered[200] + bad.answered[200] == 36


def test_a_log_that_cannot_be_written_stops_in_one_line_and_the_resume_pays_nothing_twice(serve, proxy, tmp_path,
                                                                                          monkeypatch):
    # A file object raising ENOSPC after a few writes (a full disk), in process.
    judge = SimJudge(seed=0, latency=0.05)
    recorder = proxy(serve(judge))
    spec = design(prompts=("P1.2",), attempts=10, endpoint={"base_url": recorder.url, "api_key_env": "K"},
                  run={"concurrency": 4})
    monkeypatch.setenv("K", "sk-test")
    log = tmp_path / "full.jsonl"
    real = disk_full_after(5, monkeypatch)
    with pytest.raises(CollectError, match=rf"cannot write {log}: No space left on device \(ENOSPC\)\. The run stopped"):
        run(spec, log)
    answered = recorder.answered[200]
    with pytest.warns(WaitingRepliesWarning, match=rf"{answered - 5} replies received by a run that stopped wait in "):
        assert len(hce.read_log(log)) == 5 and wal_path(log).exists()  # a report now would miss them: it says so
    assert answered > 5, "no reply arrived after the disk filled: the case is not tested"
    monkeypatch.setattr(LogWriter, "write_lines", real)
    summary = run(spec, log)
    rows = hce.read_log(log)
    assert len(rows) == 30 and rows["attempt_id"].is_unique and recorder.answered[200] == 30
    assert summary.done == 30 - answered and not wal_path(log).exists()


def test_a_file_size_limit_stops_the_cli_in_one_line_and_the_resume_logs_what_was_received(serve, proxy, tmp_path,
                                                                                          monkeypatch):
    # Issue 34: `ulimit -f` lost 7 of 31 paid replies, with a traceback of two chained OSErrors; the resume paid again.
    recorder = proxy(serve(SimJudge(seed=0, latency=0.02)))
    items = {f"T{i}": text for i, text in enumerate(list(TRANSCRIPTS.values()) * 4)}
    spec = design(prompts=("P1.2",), attempts=3, items=items, endpoint={"base_url": recorder.url, "api_key_env": "K"},
                  run={"concurrency": 3})
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "limited.jsonl"
    limit = 40_000  # bytes: about a third of the 36 rows

    def limit_file_size():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    monkeypatch.setenv("K", "sk-test")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", "from hce.cli import main; main()", "collect", str(path), "--log", str(log)],
                          env=env, capture_output=True, text=True, preexec_fn=limit_file_size, timeout=120)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, output
    assert f"error: cannot write {log}: File too large (EFBIG)" in output and "Traceback" not in output
    assert 0 < log.stat().st_size <= limit
    answered = recorder.answered[200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hce.log.TruncatedLogWarning)  # a torn last line is set aside, its reply recorded
        summary = run(spec, log)
    rows = hce.read_log(log)
    assert len(rows) == 36 and rows["attempt_id"].is_unique
    assert recorder.answered[200] == 36 and summary.done == 36 - answered
    assert (rows["model"] == MODEL).all()


def test_a_full_disk_while_a_batch_is_logged_keeps_it_open_and_the_next_run_logs_the_rest(serve, tmp_path, monkeypatch):
    from collect_helpers import fast_client

    from hce.collect.running.batch import run_batch
    from hce.sim.batch import BatchSettings

    judge = SimJudge(seed=0, batch=BatchSettings(polls=1))
    server = serve(judge)
    spec = design(attempts=2)
    log = tmp_path / "batch.jsonl"
    real = disk_full_after(5, monkeypatch)
    with pytest.raises(CollectError, match=rf"cannot write {log}: No space left on device \(ENOSPC\)\. The batch \S+ "
                                           "stays open"):
        run_batch(spec, log, client=fast_client(server), poll_interval=0.001, max_poll_interval=0.005)
    # The reply the log refused is in the crash-safety record, as an online run's would be (one pipeline).
    with pytest.warns(hce.log.WaitingRepliesWarning, match="1 replies received by a run that stopped"):
        assert len(hce.read_log(log)) == 5
    monkeypatch.setattr(LogWriter, "write_lines", real)
    summary = run_batch(spec, log, client=fast_client(server), poll_interval=0.001, max_poll_interval=0.005)
    rows = hce.read_log(log)
    # 5 + the recorded one, logged first + the batch's other 6; nothing submitted twice.
    assert len(rows) == 12 and rows["attempt_id"].is_unique and judge.batches.created == 1 and summary.done == 6


def test_an_unexpected_error_in_one_call_lets_the_others_in_flight_finish_and_log(serve, proxy, tmp_path, monkeypatch):
    import hce.collect.running.pipeline as pipeline_module

    recorder = proxy(serve(SimJudge(seed=0, latency=0.2)))
    spec = design(prompts=("P1.2",), attempts=4, endpoint={"base_url": recorder.url, "api_key_env": "K"},
                  run={"concurrency": 4})
    monkeypatch.setenv("K", "sk-test")
    real, built = pipeline_module.request_rows, []

    def third_fails(*args, **kwargs):
        built.append(1)
        if len(built) == 3:
            raise RuntimeError("a bug while building a row")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "request_rows", third_fails)
    with pytest.raises(RuntimeError, match="a bug while building a row"):
        run(spec, tmp_path / "log.jsonl")
    # Every reply answered is logged but the one whose row could not be built; none was cancelled in flight.
    assert len(hce.read_log(tmp_path / "log.jsonl")) == recorder.answered[200] - 1 >= 3


def test_a_disk_without_room_for_the_crash_record_is_refused_before_anything_is_sent(serve, proxy, tmp_path, monkeypatch):
    # Issue 44: on a 1 MB file system the record got 24 KB of its 1 MB; "3 replies could be written nowhere".
    import hce.collect.running.journal as journal

    def no_room(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal.os, "posix_fallocate", no_room)
    recorder = proxy(serve(SimJudge(seed=0)))
    spec = design(prompts=("P1.2",), attempts=2, endpoint={"base_url": recorder.url, "api_key_env": "K"})
    monkeypatch.setenv("K", "sk-test")
    log = tmp_path / "run.jsonl"
    with pytest.raises(CollectError, match=r"cannot reserve 1,024 KiB for the crash-safety record .*run\.jsonl\.wal "
                                           r"\(No space left on device \(ENOSPC\); [\d,]+ KiB free on its file system\).*"
                                           r"nothing was sent"):
        run(spec, log)
    assert recorder.answered[200] == 0 and not wal_path(log).exists() and (not log.exists() or not log.read_text())


def test_a_real_nearly_full_file_system_is_refused_at_start(serve, proxy, tmp_path, monkeypatch):
    """The same on a real 1 MB tmpfs (needs root and mount; skipped elsewhere)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 1 MB tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        recorder = proxy(serve(SimJudge(seed=0)))
        spec = design(prompts=("P1.2",), attempts=2, endpoint={"base_url": recorder.url, "api_key_env": "K"})
        monkeypatch.setenv("K", "sk-test")
        (mount / "filler").write_bytes(b"x" * 200_000)
        with pytest.raises(CollectError, match=r"cannot reserve 1,024 KiB .* KiB free on its file system"):
            run(spec, mount / "run.jsonl")
        assert recorder.answered[200] == 0
    finally:
        subprocess.run(["umount", str(mount)], check=True)
