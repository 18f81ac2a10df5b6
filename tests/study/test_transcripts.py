import json
import warnings

import pytest
import yaml

from hce.collect.design.design import load_design
from hce.collect.design.transcripts import EncodingWarning, normalize_text, read_text_file
from hce.study.transcripts import StripRules, load_transcripts, write_transcripts
from hce.errors import DataError


def test_folder_of_txt_files_ids_from_file_names(tmp_path):
    (tmp_path / "T002.txt").write_text("Doctor: Hi.\nPatient: Hello there.\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "T001.txt").write_bytes("\ufeffDoctor: Ça va?\r\nPatient: Oui.\r\n".encode("utf-8"))
    corpus = load_transcripts(tmp_path)
    assert corpus["transcript_id"].tolist() == ["T002", "T001"]  # sorted by path: sub/ after T002.txt
    assert corpus.loc[1, "text"] == "Doctor: Ça va?\nPatient: Oui."  # BOM and CRLF gone
    assert corpus["n_words"].tolist() == [5, 5]
    assert corpus.columns[:6].tolist() == ["transcript_id", "text", "source", "n_words", "n_chars", "stripped_lines"]


def test_csv_and_jsonl_keep_metadata_and_sources(tmp_path):
    csv = tmp_path / "nature.csv"
    csv.write_text('id,text,age_band\nN1,"Doctor: Hi.\nPatient: Hello.",30-44\nN2,Patient: Fine.,65-79\n', encoding="utf-8")
    jsonl = tmp_path / "dova.jsonl"
    jsonl.write_text(json.dumps({"transcript_id": 7, "text": "Patient: Yes.", "source": "DoVA"}) + "\n", encoding="utf-8")
    corpus = load_transcripts([csv, jsonl])
    assert corpus["transcript_id"].tolist() == ["N1", "N2", "7"]
    assert corpus["source"].tolist() == [str(csv), str(csv), "DoVA"]
    assert corpus["age_band"].tolist()[:2] == ["30-44", "65-79"]
    assert load_transcripts(csv, source="Nature")["source"].unique().tolist() == ["Nature"]


def test_roundtrip_through_jsonl(tmp_path):
    (tmp_path / "a.txt").write_text("Patient: One two.", encoding="utf-8")
    corpus = load_transcripts(tmp_path)
    write_transcripts(corpus, tmp_path / "c.jsonl")
    again = load_transcripts(tmp_path / "c.jsonl")
    assert again[["transcript_id", "text", "source"]].equals(corpus[["transcript_id", "text", "source"]])


def test_strip_rules_remove_headers_and_footers(tmp_path):
    text = "VA TRANSCRIPT 0042\nDate: 2019-03-01\n\nDoctor: Hi.\nPatient: Hello.\n\n-- end of recording --\nPage 1 of 1\n"
    (tmp_path / "x.txt").write_text(text, encoding="utf-8")
    rules = {"header": [r"^VA TRANSCRIPT", r"^Date:"], "footer": [r"^-- end", r"^Page \d+ of \d+"]}
    corpus = load_transcripts(tmp_path, strip=rules)
    assert corpus.loc[0, "text"] == "Doctor: Hi.\nPatient: Hello."
    assert corpus.loc[0, "stripped_lines"] == 6
    cut = StripRules(header_until=r"^={3,}$", footer_from=r"^\[END")
    assert cut.apply("Title\n===\nDoctor: Hi.\n[END]\ntrailer") == ("Doctor: Hi.", 4)
    with pytest.raises(DataError, match="no line matches header_until"):
        cut.apply("Doctor: Hi.", where="x.txt")
    with pytest.raises(DataError, match="not a valid regular expression"):
        StripRules(header=["(unclosed"])
    with pytest.raises(DataError, match="unknown strip rule"):
        StripRules.from_dict({"headers": ["x"]})


def test_normalize_text():
    assert normalize_text("a\u00a0b\x0c\tc  \n\n") == "a b\tc"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.txt": b"Patient: caf\xe9"}, r"a\.txt: line 1 \(byte offset 12\): b'\\xe9' is not valid utf-8"),
        ({"a.txt": b"   \n\n"}, r"a\.txt: transcript 'a' is empty"),
        ({"a.txt": b"x", "sub/a.txt": b"y"}, r"TranscriptID 'a' is duplicated \(first seen at .*a\.txt\)"),
        ({"c.csv": b"id,text\nT1,hello\nT1,again\n"}, r"c\.csv: line 3: TranscriptID 'T1' is duplicated \(first seen at .*line 2\)"),
        ({"c.csv": b"id,text\nT1,\n"}, r"c\.csv: line 2: transcript 'T1' is empty"),
        ({"c.csv": b"id,text\n,hello\n"}, r"c\.csv: line 2: TranscriptID is empty"),
        ({"c.csv": b"key,body\nT1,hello\n"}, r"no TranscriptID column \['transcript_id', 'id'\]"),
        ({"c.jsonl": b'{"id": "T1", "text": "x"}\n{"id": "T2", "text": \n'}, r"c\.jsonl: line 2: not valid JSON"),
        ({"c.jsonl": b'{"id": "T1", "text": 5}\n'}, r"c\.jsonl: line 1: column 'text' must be text"),
    ],
)
def test_errors_name_the_file_and_row(tmp_path, files, message):
    for name, raw in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(raw)
    target = tmp_path / next(iter(files)) if len(files) == 1 and not next(iter(files)).endswith(".txt") else tmp_path
    with pytest.raises(DataError, match=message):
        load_transcripts(target)


def test_other_encodings_only_when_declared(tmp_path):
    (tmp_path / "a.txt").write_bytes("Patient: café".encode("cp1252"))
    assert load_transcripts(tmp_path, encoding="cp1252").loc[0, "text"] == "Patient: café"
    with pytest.raises(DataError, match="not a known text encoding"):
        load_transcripts(tmp_path, encoding="no-such-codec")


def test_empty_after_stripping_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("Header\n", encoding="utf-8")
    with pytest.raises(DataError, match="empty after stripping"):
        load_transcripts(tmp_path, strip={"header": ["^Header"]})


# --- issue 18: files from real life ---------------------------------------------------------

TEXT = "Doctor: Café at 9?\nPatient: Sí, gracias."


@pytest.mark.parametrize("codec", ["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_auto_encoding_reads_utf_and_byte_order_marks_silently(tmp_path, codec):
    raw = TEXT.encode(codec)
    if codec == "utf-16-be":
        raw = b"\xfe\xff" + raw  # the big-endian mark, as Windows tools write it
    (tmp_path / "T1.txt").write_bytes(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_text_file(tmp_path / "T1.txt") == TEXT
        assert load_transcripts(tmp_path, encoding="auto").loc[0, "text"] == TEXT


def test_auto_encoding_reads_latin1_with_a_notice_naming_file_and_byte(tmp_path):
    path = tmp_path / "T1.txt"
    path.write_bytes(TEXT.encode("cp1252"))
    with pytest.warns(EncodingWarning, match=r"T1.txt: not UTF-8 \(byte b'\\xe9' at line 1, byte offset 11\); read as cp1252"):
        assert read_text_file(path) == TEXT
    path.write_bytes(b"Patient: \x81 odd byte")  # undefined in cp1252: Latin-1 reads every byte
    with pytest.warns(EncodingWarning, match="read as Latin-1"):
        assert read_text_file(path) == "Patient: \x81 odd byte"
    path.write_bytes("Doctor: Hi.".encode("utf-16-le"))  # UTF-16 without its mark
    with pytest.raises(DataError, match=r"T1.txt: byte offset 1 is a NUL byte: a binary file, or UTF-16 without a byte-order mark"):
        read_text_file(path)


def test_design_items_folder_with_a_latin1_transcript(tmp_path):
    # Before: a 65-line UnicodeDecodeError that named no file.
    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "A1.txt").write_bytes(TEXT.encode("utf-8"))
    (folder / "B2.txt").write_bytes(TEXT.encode("latin-1"))
    (tmp_path / "items.csv").write_bytes(f"id,text\nC3,\"{TEXT}\"\n".encode("cp1252"))
    spec = {"experiment_id": "T", "defaults": {"model": "gpt-4o-mini"}, "conditions": [{"prompt": "P2.1"}], "items": "transcripts"}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(spec))
    with pytest.warns(EncodingWarning, match=r"B2.txt: not UTF-8"):
        design = load_design(tmp_path / "study.yaml")
    assert [item.text for item in design.items] == [TEXT, TEXT]
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({**spec, "items": "items.csv"}))
    with pytest.warns(EncodingWarning, match=r"items.csv: not UTF-8"):
        assert load_design(tmp_path / "study.yaml").items[0].text == TEXT
