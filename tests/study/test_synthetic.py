import numpy as np
import pandas as pd
import pytest

from hce.collect.call.parse import parse_synthetic
from hce.study.synthetic import draw_targets, synthetic_corpus
from hce.errors import DataError


def test_stratified_shares_within_sampling_error():
    n = 20000
    targets = draw_targets(n, random_state=7)
    shares = targets["stratum"].value_counts(normalize=True)
    for stratum, p in (("low", 0.2), ("medium", 0.4), ("high", 0.4)):
        se = np.sqrt(p * (1 - p) / n)  # binomial standard error of a share
        assert abs(shares[stratum] - p) < 4 * se
    # Uniform within a stratum: each total has probability share / width (width 6, 5, 5).
    counts = targets["target_total"].value_counts().reindex(range(5, 21), fill_value=0)
    expected = np.r_[np.full(6, 0.2 / 6), np.full(5, 0.4 / 5), np.full(5, 0.4 / 5)] * n
    assert np.all(np.abs(counts.to_numpy() - expected) < 4 * np.sqrt(expected))
    assert targets["target_total"].between(targets["stratum_low"], targets["stratum_high"]).all()


def test_fifty_targets_seeded_and_proportional_allocation():
    a, b = draw_targets(50, random_state=2024), draw_targets(50, random_state=2024)
    assert a.equals(b)
    assert a["transcript_id"].tolist()[:3] == ["SYN-001", "SYN-002", "SYN-003"]
    exact = draw_targets(50, allocation="proportional", random_state=3)
    assert exact["stratum"].value_counts().to_dict() == {"low": 10, "medium": 20, "high": 20}
    with pytest.raises(DataError, match="shares must sum to 1"):
        draw_targets(10, strata=[(5, 10, 0.5), (11, 20, 0.4)])
    custom = draw_targets(30, strata=[(5, 12, 0.5), (13, 20, 0.5)], random_state=1)
    assert set(custom["stratum"]) <= {"5-12", "13-20"}


def _log_row(item, attempt, reply, target):
    parsed = parse_synthetic(reply, target_total=target)
    return {"attempt_id": f"{item}-{attempt}", "item_id": item, "attempt": attempt, "model": "gpt-4.1",
            "model_version": "gpt-4.1-2025-04-14", **parsed}


def test_corpus_prefers_clean_generations_and_flags_leaks():
    targets = draw_targets(2, random_state=0)
    t1, t2 = targets["target_total"]
    clean = "Outline:\n- short\n\nTranscript:\nDoctor: Hi.\nPatient: I walk daily."
    leaky = f"Outline:\n- x\n\nTranscript:\nDoctor: Your score is {t2}/20.\nPatient: Great."
    log = pd.DataFrame([
        _log_row("SYN-001", 1, f"Outline:\nx\nTranscript:\nPatient: my Clarity of Language is good ({t1}/20)", t1),
        _log_row("SYN-001", 2, clean, t1),
        _log_row("SYN-002", 1, leaky, t2),
    ])
    corpus = synthetic_corpus(log, targets)
    first, second = corpus.iloc[0], corpus.iloc[1]
    assert first["text"] == "Doctor: Hi.\nPatient: I walk daily." and not first["leak_flag"]
    assert first["generation_attempts"] == 2 and first["generator_attempt_id"] == "SYN-001-2"
    assert second["leak_flag"] and "mentions 'score'" in second["leak_reason"]
    assert corpus["target_total"].tolist() == [t1, t2]
    with pytest.raises(DataError, match="SYN-002: every generation mentions the rubric or the score"):
        synthetic_corpus(log, targets, policy={"use_leaked": False})
    with pytest.raises(DataError, match="every generation of SYN-002 failed"):
        synthetic_corpus(pd.concat([log.iloc[:2], pd.DataFrame([_log_row("SYN-002", 1, "no sections", t2)])]), targets)
