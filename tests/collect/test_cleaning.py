"""What is sent is what was meant: one cleaning for `hce collect` and `hce study`, counted in the log."""

import json

import pytest
from collect_helpers import MODEL, fast_client

import hce
from hce.collect.design.design import Design, load_design
from hce.collect.running.runner import run
from hce.sim import SimJudge
from hce.collect.design.transcripts import clean_text
from hce.study.designs import corpus_items
from hce.study.transcripts import load_transcripts
from hce.errors import CollectError

# A transcript as it arrives from a terminal capture, a Windows export and a web form: BOM,
# ANSI colour codes, a NUL, CRLF line ends, a bell, zero-width spaces, a decomposed accent.
RAW = "\ufeffDoctor: \x1b[31mHow\x1b[0m are you?\x00\r\nPatient: Fi\u200bne, I drink cafe\u0301\u200d.\x07"
MEANT = "Doctor: How are you?\nPatient: Fine, I drink café."
CHANGES = {"bom": 1, "line_ends": 1, "ansi": 9, "nul": 1, "control": 1, "zero_width": 2, "nfc": 2}


class RecordingJudge(SimJudge):
    """The simulated judge, keeping every chat request body it receives."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.received = []

    def respond(self, method, target, body, **kwargs):
        if target.endswith("/chat/completions"):
            self.received.append(body)
        return super().respond(method, target, body, **kwargs)


@pytest.mark.parametrize(
    ("raw", "clean", "changes"),
    [
        (RAW, MEANT, CHANGES),
        ("plain text\twith a tab\n", "plain text\twith a tab\n", {}),
        ("\x1b]0;title\x07Doctor: hi", "Doctor: hi", {"ansi": 10}),  # an OSC window title, ended by BEL
        ("a\x0cb\x85c\x7fd", "abcd", {"control": 3}),  # form feed, C1 next-line, DEL
        ("\u212b and A\u030a", "\u00c5 and \u00c5", {"nfc": 3}),  # the angstrom sign and a decomposed Å
        ("left\u202eright\u2066x\u2069\u00ad", "leftrightx", {"zero_width": 4}),  # bidi controls, soft hyphen
        ("a\rb", "a\nb", {"line_ends": 1}),
    ],
)
def test_clean_text_removes_and_counts_each_kind(raw, clean, changes):
    cleaned = clean_text(raw)
    assert cleaned.text == clean and dict(cleaned.changes) == changes and cleaned.count == sum(changes.values())
    assert clean_text(cleaned.text).count == 0  # cleaning twice changes nothing


def test_a_transcript_with_control_characters_reaches_the_judge_cleaned(serve, tmp_path):
    judge = RecordingJudge(seed=0)
    server = serve(judge)
    spec = {"experiment_id": "TEST", "attempts": 2, "defaults": {"model": MODEL},
            "conditions": [{"prompt": "P1.2"}, {"prompt": "P1.1"}], "items": [{"id": "T1", "text": RAW}]}
    log = tmp_path / "clean.jsonl"
    run(spec, log, client=fast_client(server))
    assert len(judge.received) == 4
    for body in judge.received:
        content = body["messages"][0]["content"]
        assert f"\n{MEANT}\n" in content
        assert not any(ch in content for ch in "\ufeff\x1b\x00\r\x07\u200b\u200d\u0301")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["cleaned_chars"] for r in rows] == [sum(CHANGES.values())] * 4
    assert sorted(json.dumps(r["request"]) for r in rows) == sorted(json.dumps(b["messages"]) for b in judge.received)
    assert hce.read_log(log)["cleaned_chars"].dtype == "Int64"  # a schema column
    with pytest.raises(CollectError, match="item 'T2': the transcript is empty once control and zero-width"):
        run({**spec, "items": [{"id": "T2", "text": "\u200b\x00 \x1b[0m"}]}, tmp_path / "empty.jsonl", client=fast_client(server))


def test_hce_study_cleans_the_same_way_and_logs_the_count(serve, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "T1.txt").write_bytes(RAW.encode("utf-8"))
    corpus = load_transcripts(folder)
    # decode_bytes drops the file's byte-order mark as it decodes UTF-8; the rest is clean_text's.
    assert corpus.loc[0, "text"] == MEANT and corpus.loc[0, "cleaned_chars"] == sum(CHANGES.values()) - 1
    judge = RecordingJudge(seed=0)
    server = serve(judge)
    condition = load_design({"defaults": {"model": MODEL}, "conditions": [{"prompt": "P1.2"}],
                             "items": [{"id": "x", "text": "x"}]}).conditions[0]
    study_design = Design(experiment_id="STUDY", items=corpus_items(corpus), conditions=(condition,))
    log = tmp_path / "study.jsonl"
    run(study_design, log, client=fast_client(server))
    assert f"\n{MEANT}\n" in judge.received[0]["messages"][0]["content"]
    assert json.loads(log.read_text())["cleaned_chars"] == sum(CHANGES.values()) - 1
