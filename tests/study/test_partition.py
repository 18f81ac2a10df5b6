import hashlib
import json
import random

import pytest

from hce.study.partition import partition, partition_key, partition_table, read_manifest, write_manifest
from hce.errors import DataError

IDS = [f"T{i:03d}" for i in range(1, 678)]  # the protocol's 677 transcripts (405 DoVA + 272 Nature)


def test_677_ids_give_disjoint_50_50_577_pinned():
    sets = partition(IDS, seed=12345)
    assert [len(sets[s]) for s in "ABC"] == [50, 50, 577]
    assert set(sets["A"]).isdisjoint(sets["B"]) and set(sets["A"] + sets["B"]).isdisjoint(sets["C"])
    assert sorted(sets["A"] + sets["B"] + sets["C"]) == IDS
    # Reproduced outside Python with GNU coreutils (sha256sum 9.x) and sort:
    #   for i in $(seq -f "T%03g" 1 677); do printf "%s %s\n" \
    #     "$(printf '12345:%s' $i | sha256sum | cut -c1-64)" $i; done | sort | awk '{print $2}'
    # lines 1-3, 51-53 and 101-103 of that output:
    assert sets["A"][:3] == ["T029", "T612", "T374"]
    assert sets["B"][:3] == ["T473", "T460", "T647"]
    assert sets["C"][:3] == ["T575", "T147", "T632"]


def test_identical_across_runs_and_input_orders():
    shuffled = IDS[:]
    random.Random(1).shuffle(shuffled)
    assert partition(shuffled) == partition(IDS) == partition(tuple(IDS))


def test_key_is_plain_sha256():
    assert partition_key("T001", 12345) == hashlib.sha256(b"12345:T001").hexdigest()
    assert partition(IDS, seed=1)["A"] != partition(IDS, seed=12345)["A"]


def test_sizes_and_errors():
    sets = partition([str(i) for i in range(101)])
    assert [len(sets[s]) for s in "ABC"] == [50, 50, 1]
    with pytest.raises(DataError, match="the corpus has 100 transcripts; the partition needs more than n_a \\+ n_b = 100"):
        partition([str(i) for i in range(100)])
    with pytest.raises(DataError, match="'T1' appears more than once"):
        partition(["T1", "T1", *IDS])
    assert [len(v) for v in partition([str(i) for i in range(24)], n_a=8, n_b=8).values()] == [8, 8, 8]
    with pytest.raises(DataError, match="n_a=0 must be a positive whole number"):
        partition(IDS, n_a=0)


def test_manifest_roundtrip_and_tamper_check(tmp_path):
    sets = partition(IDS)
    path = tmp_path / "partition.json"
    write_manifest(sets, path, seed=12345)
    manifest = read_manifest(path)
    assert manifest["sets"] == sets and manifest["sizes"] == {"A": 50, "B": 50, "C": 577}
    assert manifest["seed"] == 12345 and manifest["algorithm"] == "sha256-keyed-shuffle-v1"
    doc = json.loads(path.read_text())
    doc["sets"]["A"][0], doc["sets"]["C"][0] = doc["sets"]["C"][0], doc["sets"]["A"][0]
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="not those seed 12345 gives"):
        read_manifest(path)
    table = partition_table(sets)
    assert table.groupby("set").size().to_dict() == {"A": 50, "B": 50, "C": 577}
    assert table.loc[0].to_dict() == {"transcript_id": "T029", "set": "A", "experiment_id": "EXP2_PromptOptimization", "draw": 1}
