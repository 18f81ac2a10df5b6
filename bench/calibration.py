"""Benchmark: calibration, boolean-judge, PPI and Edit-F1 statistics on 1,000,000 attempts.

Run: ``python bench/calibration.py`` (add ``--quick`` for 100,000 rows). Prints one line per
case, ``CASE: hce X s, PEER Y s, ratio Z`` (best of 3 runs after a warm-up); ``PEER n/a``
where no library computes the same thing. The target is under 5 s per function.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.calibration import calibration_curve  # noqa: E402
from sklearn.metrics import (  # noqa: E402
    brier_score_loss,
    cohen_kappa_score,
    f1_score,
    log_loss,
    matthews_corrcoef,
)

from hce.stats import boolean, calibration, editf1, ppi  # noqa: E402

N = 100_000 if "--quick" in sys.argv else 1_000_000
ATTEMPTS = 10  # attempts per item: N / 10 items


def best(fn, repeat=3):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(case, fn, peer=None):
    ours = best(fn)
    if peer is None:
        print(f"{case}: hce {ours:.3f} s, PEER n/a")
    else:
        theirs = best(peer)
        print(f"{case}: hce {ours:.3f} s, PEER {theirs:.3f} s, ratio {ours / theirs:.2f}")


def make_log(rng):
    items = np.repeat(np.arange(N // ATTEMPTS), ATTEMPTS)
    latent = rng.integers(5, 21, N // ATTEMPTS)[items]
    total = np.clip(latent + rng.integers(-1, 2, N), 5, 20)
    prob = rng.beta(5, 2, N)
    golden = rng.random(N) < 0.7
    verdict = np.where(rng.random(N) < 0.85, golden, ~golden)
    return pd.DataFrame({
        "item_id": items,
        "condition_id": rng.integers(0, 8, N),
        "attempt": np.tile(np.arange(ATTEMPTS), N // ATTEMPTS),
        "total": total.astype(float),
        "score": rng.integers(1, 6, N).astype(float),
        "prob": prob,
        "outcome": (rng.random(N) < prob).astype(int),
        "verdict": verdict,
        "golden": golden,
        "uncertain": rng.random(N) < 0.1,
        "confidence_level": rng.choice(["high", "medium", "low"], N),
    })


def make_logprobs(rng, n):
    levels = ["1", "2", "3", "4"]
    logp = np.log(rng.dirichlet([1, 2, 4, 2], n))
    chosen = logp.argmax(axis=1)
    out = np.empty(n, dtype=object)
    for i in range(n):
        top = [{"token": t, "logprob": float(v)} for t, v in zip(levels, logp[i], strict=True)]
        out[i] = [{"token": "Score", "logprob": -0.01, "top_logprobs": []},
                  {"token": levels[chosen[i]], "logprob": float(logp[i, chosen[i]]), "top_logprobs": top}]
    return out


def main():
    warnings.simplefilter("ignore", UserWarning)
    rng = np.random.default_rng(0)
    log = make_log(rng)
    print(f"# {N:,} attempts, {N // ATTEMPTS:,} items; best of 3 after warm-up")

    lp = pd.DataFrame({"item_id": log.item_id, "logprobs": make_logprobs(rng, N)})
    report("logprob_confidence[parsed lists]", lambda: calibration.logprob_confidence(lp, scores=range(1, 5)))
    as_text = pd.DataFrame({"logprobs": [json.dumps(x) for x in lp.logprobs]})
    report("logprob_confidence[JSON text, as logged]", lambda: calibration.logprob_confidence(as_text, scores=range(1, 5)))
    report("vote_confidence", lambda: calibration.vote_confidence(log),
           lambda: log.groupby("item_id")["total"].agg(lambda s: s.value_counts().iloc[0]) if N <= 100_000 else
           log.groupby(["item_id", "total"]).size().groupby(level=0).max())
    report("verbal_confidence", lambda: calibration.verbal_confidence(log))
    report("confidence_table[votes, attempt]", lambda: calibration.confidence_table(log.drop(columns="confidence_level")))
    report("confidence_table[verbal, item]", lambda: calibration.confidence_table(log, level="item"))
    report("agrees_with_mode", lambda: calibration.agrees_with_mode(log))

    y, p = log.outcome.to_numpy(), log.prob.to_numpy()
    report("calibration_metrics[n_boot=0] vs sklearn brier+log_loss",
           lambda: calibration.calibration_metrics(log, n_boot=0),
           lambda: (brier_score_loss(y, p), log_loss(y, p)))
    report("calibration_metrics[quantile, n_boot=0]", lambda: calibration.calibration_metrics(log, strategy="quantile", n_boot=0))
    report("calibration_metrics[n_boot=1000, item clusters]",
           lambda: calibration.calibration_metrics(log, item="item_id", n_boot=1000, random_state=1))
    verbal = calibration.confidence_table(log[["item_id", "confidence_level"]], source="verbal").assign(outcome=log.outcome)
    report("calibration_metrics[verbal prob, n_boot=1000, rows]",
           lambda: calibration.calibration_metrics(verbal, strategy="unique", n_boot=1000, random_state=1))
    report("calibration_metrics[continuous prob, n_boot=1000, rows]",
           lambda: calibration.calibration_metrics(log, n_boot=1000, random_state=1))
    P = rng.dirichlet([1, 2, 3, 2], N)
    mc = pd.DataFrame(P, columns=["prob_1", "prob_2", "prob_3", "prob_4"]).assign(human=rng.integers(1, 5, N))
    report("calibration_metrics[4 classes, n_boot=0] vs sklearn",
           lambda: calibration.calibration_metrics(mc, prob=["prob_1", "prob_2", "prob_3", "prob_4"], truth="human", n_boot=0),
           lambda: (brier_score_loss(mc.human, P, labels=[1, 2, 3, 4]), log_loss(mc.human, P, labels=[1, 2, 3, 4])))
    report("reliability_table vs sklearn calibration_curve", lambda: calibration.reliability_table(log),
           lambda: calibration_curve(y, p, n_bins=10))
    report("confidence_spread", lambda: calibration.confidence_spread(log))

    report("pass_rates[by condition]", lambda: boolean.pass_rates(log, by=["condition_id"]))
    g, v = log.golden.to_numpy(), log.verdict.to_numpy()
    report("golden_agreement[n_boot=2000] vs sklearn f1+kappa+mcc",
           lambda: boolean.golden_agreement(log, random_state=1),
           lambda: (f1_score(g, v), cohen_kappa_score(g, v), matthews_corrcoef(g, v)))
    report("golden_agreement[item clusters, n_boot=1000]",
           lambda: boolean.golden_agreement(log, item="item_id", n_boot=1000, random_state=1))
    report("majority_vote", lambda: boolean.majority_vote(log))
    report("mean_score_ensemble", lambda: boolean.mean_score_ensemble(log))
    report("uncertain_routing", lambda: boolean.uncertain_routing(log, truth="golden"))
    n_q = N // (16 * 4)
    filt = pd.DataFrame({
        "query_id": np.repeat(np.arange(n_q), 16 * 4),
        "element": np.tile(np.repeat(np.arange(16), 4), n_q),
        "rater": np.tile(["e1", "e2", "e3", "auto"], n_q * 16),
        "relevant": rng.random(n_q * 64) < 0.6,
    })
    report("adaptive_filter_agreement", lambda: boolean.adaptive_filter_agreement(filt, n_boot=1000, random_state=1))
    n_u = N // 20
    disc = pd.DataFrame({
        "participant_id": np.repeat(np.arange(n_u), 20),
        "query_id": np.repeat(np.arange(n_u), 20) % 10,
        "criterion": np.tile(np.repeat(np.arange(10), 2), n_u),
        "prompt_version": np.tile(["unaltered", "altered"], n_u * 10),
        "score": rng.integers(0, 2, N).astype(float),
    })
    report("discrepancy[by query]", lambda: boolean.discrepancy(disc, by=["query_id"]))
    report("normalize_likert + binarize_likert",
           lambda: (boolean.normalize_likert(log), boolean.binarize_likert(log, threshold=4)))

    human = np.where(rng.random(N) < 0.01, log.total + rng.normal(0, 1, N), np.nan)
    ppi_df = pd.DataFrame({"judge_score": log.total, "human_score": human})
    report("ppi_mean[power]", lambda: ppi.ppi_mean(ppi_df, tuning="power"))
    rg = log[["verdict"]].assign(golden=np.where(rng.random(N) < 0.01, log.golden, None))
    report("rogan_gladen", lambda: ppi.rogan_gladen(rg))

    counts = pd.DataFrame({"em": rng.integers(0, 5, N), "ea": rng.integers(0, 5, N), "ed": rng.integers(0, 5, N),
                           "model": rng.integers(0, 6, N)})
    report("edit_f1[by model, n_boot=1000]", lambda: editf1.edit_f1(counts, by=["model"], n_boot=1000, random_state=1))
    themes = pd.DataFrame({"pair_id": rng.integers(0, N // 8, N), "side": rng.choice(["reference", "draft"], N),
                           "theme": rng.choice(["Emp", "SymQ", "MedQ", "Asse", "Plan", "Log", "Coord", "Cont"], N)})
    report("theme_f1[n_boot=1000]", lambda: editf1.theme_f1(themes, n_boot=1000, random_state=1))
    n_iaa = N - N % 9
    iaa = pd.DataFrame({"message_id": np.arange(n_iaa) // 9, "annotator": np.tile(list("AAABBBCCC"), n_iaa // 9),
                        "theme": themes.theme.to_numpy()[:n_iaa]})
    report("theme_inclusion_agreement", lambda: editf1.theme_inclusion_agreement(iaa))
    iap = counts.assign(message_id=np.arange(N) // 6, reference_annotator=np.tile(list("AABBCC"), N // 6 + 1)[:N],
                        draft_annotator=np.tile(list("BCACAB"), N // 6 + 1)[:N])
    report("inter_annotator_predictability[n_boot=1000]",
           lambda: editf1.inter_annotator_predictability(iap, n_boot=1000, random_state=1))
    n_pairs = N // 10
    ref = "I'm sorry to hear that. Have you eaten anything unusual? Please call the office."
    drafts = ["I'm sorry you feel unwell. Any fever? Have you changed your diet? Rest well."] * n_pairs

    def matcher(sentence, draft):
        return "Have you changed your diet?" if sentence.startswith("Have") else None

    # One call per pair, a Python matcher per sentence: the cost of an in-process matcher.
    report(f"edit_counts[{n_pairs:,} pairs x 3 sentences, matcher callable]",
           lambda: [editf1.edit_counts(ref, d, matcher) for d in drafts])
    # The same matcher over a table: 1,000,000 reference sentences, one matcher call each.
    n_refs = N // 3
    refs = pd.DataFrame({"pair_id": np.arange(n_refs), "draft": drafts[:1] * n_refs,
                         "reference": [f"I'm sorry to hear that {i}. Have you eaten anything unusual? Please call the office."
                                       for i in range(n_refs)]})
    report(f"sentence_table(matcher) + edit_counts_table[{3 * n_refs:,} sentences, {n_refs:,} pairs]",
           lambda: editf1.edit_counts_table(editf1.sentence_table(refs, matcher=matcher)))
    # Matches computed elsewhere (an LLM matcher's log): one row per matcher attempt.
    sentences = np.array(["I'm sorry you feel unwell.", "Any fever?", "Have you changed your diet?", "Rest well."])
    pair = np.arange(N) // 3
    drafts = np.array([f"Hello {i}. " + " ".join(sentences) for i in range(pair[-1] + 1)], dtype=object)
    matches = pd.DataFrame({"pair_id": pair, "draft": drafts[pair],
                            "match": np.where(rng.random(N) < 0.5, rng.choice(sentences, N), None)})
    report(f"edit_counts_table[{N:,} matcher attempts, {pair[-1] + 1:,} pairs]", lambda: editf1.edit_counts_table(matches))

if __name__ == "__main__":
    main()
