"""Telling failed calls from unusable replies, and moving their rows out of a log crash-safely."""

import json

import pytest

from hce.collect.running import failed
from hce.collect.running.failed import call_failed, failed_attempt_ids, retried_path, set_aside_failed

# error_message of each kind of flagged row, as hce writes them (client.py, batch.py, runner.py, parse.py)
FAILED_CALLS = [
    "HTTP 500: Error code: 500 - {'error': {'message': 'The server had an error'}} (after 4 tries)",
    "HTTP 400: Error code: 400 - {'error': {'message': 'Unsupported value'}} (after 1 try)",
    "timeout: Request timed out. (after 4 tries)",
    "connection error: Connection error. (after 4 tries)",
    "batch request failed: HTTP 500: The server had an error",
    "batch request failed: batch_expired: This request could not be executed before the completion window",
]
REPLIES = [
    "unreadable response: APIResponseValidationError: Data returned by API invalid for expected schema.",
    "the reply has no message content (finish_reason='content_filter')",
    "the reply was cut off at max_tokens (finish_reason=length)",
    "no score block found in the reply",
]


@pytest.mark.parametrize("message", FAILED_CALLS)
def test_a_call_without_a_reply_is_a_failed_call(message):
    assert call_failed({"error_flag": True, "error_message": message})
    assert not call_failed({"error_flag": False, "error_message": message})  # a flag is what makes it an error


@pytest.mark.parametrize("message", [*REPLIES, None])
def test_an_unusable_reply_is_not(message):
    assert not call_failed({"error_flag": True, "error_message": message})


def row(attempt_id, message=None):
    return json.dumps({"attempt_id": attempt_id, "error_flag": message is not None, "error_message": message}) + "\n"


def test_rows_move_to_the_sidecar_and_the_rest_stays_in_order(tmp_path):
    log = tmp_path / "run.jsonl"
    lines = [row("a"), row("b", FAILED_CALLS[0]), row("c", REPLIES[0]), row("d", FAILED_CALLS[4]), row("e")]
    torn = row("f")[:25]  # a run killed mid-write: kept for the log writer to set aside
    log.write_text("".join(lines) + torn)
    assert failed_attempt_ids(log) == {"b", "d"}
    assert set_aside_failed(log) == 2
    assert log.read_text() == lines[0] + lines[2] + lines[4] + torn
    assert retried_path(log).read_text() == lines[1] + lines[3]
    assert retried_path(log).name == "run.jsonl.retried.jsonl"
    # Nothing left to move: the log is not rewritten.
    before = log.stat().st_mtime_ns
    assert set_aside_failed(log) == 0 and log.stat().st_mtime_ns == before
    assert set_aside_failed(tmp_path / "none.jsonl") == 0 and failed_attempt_ids(tmp_path / "none.jsonl") == set()


def test_a_kill_before_the_replace_leaves_the_old_log_and_loses_nothing(tmp_path, monkeypatch):
    log = tmp_path / "run.jsonl"
    original = row("a") + row("b", FAILED_CALLS[2]) + row("c")
    log.write_text(original)

    def killed(*args):
        raise KeyboardInterrupt  # stands for SIGKILL between writing the new log and replacing the old

    monkeypatch.setattr(failed.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        set_aside_failed(log)
    assert log.read_text() == original  # the old log, whole
    assert retried_path(log).read_text() == row("b", FAILED_CALLS[2])  # the rows were on disk first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run.jsonl.retried.jsonl"]  # no temp file left
    monkeypatch.undo()
    assert set_aside_failed(log) == 1  # the next retry moves them (the sidecar then holds them twice)
    assert log.read_text() == row("a") + row("c")
    assert retried_path(log).read_text() == 2 * row("b", FAILED_CALLS[2])


def test_a_torn_sidecar_line_does_not_swallow_the_next_row(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text(row("a", FAILED_CALLS[1]))
    retried_path(log).write_text(row("x", FAILED_CALLS[1])[:30])  # an append killed mid-line
    set_aside_failed(log)
    assert retried_path(log).read_text().splitlines()[1] == row("a", FAILED_CALLS[1]).strip()
