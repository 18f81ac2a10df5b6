"""Watchable: without a terminal a run logs progress lines (online: at a steady interval; batch: each poll)."""

import re

from collect_helpers import design, fast_client

from hce.collect.running.batch import run_batch
from hce.collect.running.runner import run
from hce.sim import SimJudge
from hce.sim.batch import BatchSettings

LINE = re.compile(r"^progress: (\d+)/12 done \(\d+%\), (\d+) flagged replies, \d+ failed calls, \$\d+\.\d{4} spent, \d+:\d\d:\d\d elapsed, "
                  r"ETA (\d+:\d\d:\d\d|unknown)$")


def test_without_a_terminal_a_run_prints_progress_lines_at_a_steady_interval(serve, tmp_path, capfd):
    # Issue 19: with output redirected (nohup, CI) a run printed nothing between start and end.
    # stderr is captured here, so not a terminal. The simulator makes the run last >= 12 x 0.05 s,
    # twelve intervals of 0.05 s: at least 2 lines come before the last even if the loop is slow.
    server = serve(SimJudge(seed=0, latency=0.05))
    run(design(attempts=2), tmp_path / "run.jsonl", client=fast_client(server), concurrency=1,
        progress=True, progress_every=0.05)
    lines = capfd.readouterr().err.splitlines()
    matched = [LINE.match(line) for line in lines]
    assert all(matched) and len(lines) >= 3, lines
    done = [int(m.group(1)) for m in matched]
    assert done == sorted(done) and done[-1] == 12 and matched[-1].group(3) == "0:00:00"
    assert all(m.group(2) == "0" for m in matched)


def test_without_a_terminal_a_batch_run_prints_a_line_per_poll(serve, tmp_path, capfd):
    server = serve(SimJudge(seed=0, batch=BatchSettings(polls=2)))
    run_batch(design(attempts=2), tmp_path / "batch.jsonl", client=fast_client(server), poll_interval=0.001,
              progress=True)
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) >= 2 and all(re.match(r"^batch \S+: \w+, \d+/\d+ requests done, \d+ failed$", ln) for ln in lines)
    assert re.search(r": completed, 12/12 requests done, 0 failed$", lines[-1]), lines
