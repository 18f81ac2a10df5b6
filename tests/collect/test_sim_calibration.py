"""The simulator's calibration truth, and hce's confidence at the temperature used (issue #23).

The simulated judge writes score ``x`` with probability ``s(x) = P(x)^(1/T)`` renormalised
(:func:`hce.sim.draws.tempered` of :func:`hce.sim.draws.score_distribution`); its
logprobs report ``P`` (``raw``), ``s`` (``sampled``) or either by temperature
(``raw_at_zero``), raised to the over-confidence factor ``f``. So every expectation below
is computed exactly from the known distributions, and the Monte Carlo checks draw scores
straight from them (no HTTP: 100,000 attempts in a few seconds); the first tests check
that the HTTP replies carry exactly those distributions.
"""

import math

import numpy as np
import pandas as pd
import pytest
from collect_helpers import MODEL
from seeds import fast_and_other_seeds

import hce
from hce.collect.design.prompts import render
from hce.sim import FORMAT_NOISE, Profile, SimJudge, latent_scores
from hce.sim.draws import reported, score_distribution, tempered
from hce.sim.families import Family
from hce.stats.calibration import (
    agrees_with_repeat,
    brier_score,
    expected_calibration_error,
    logprob_confidence,
    reliability_table,
)

RUBRIC = hce.load_rubric("v5")
NAMES = [c.name for c in RUBRIC.categories]
TEXT = "Doctor: How are you today?\nPatient: Fine, thanks. My knee aches when I climb the stairs at work."
LEVELS = (1, 2, 3, 4)


def score_block(judge, temperature, model=MODEL, **body):
    request = {"model": model, "messages": render("P2.1", rubric=RUBRIC, transcript=TEXT), "temperature": temperature,
               "logprobs": True, "top_logprobs": 4, **body}  # fmt: skip
    return judge.respond("POST", "/v1/chat/completions", request)


@pytest.mark.parametrize("mode", ["raw", "sampled", "raw_at_zero"])
@pytest.mark.parametrize("temperature", [0.0, 0.4, 1.0])
def test_reply_logprobs_are_what_the_family_reports_and_hce_recovers_the_sampling_distribution(mode, temperature):
    noise, f = 0.9, 1.3
    judge = SimJudge(seed=3, default=Profile(noise=noise, overconfidence=f), families={".*": Family(logprobs_are=mode)})
    reply = score_block(judge, temperature)
    assert reply.status == 200
    tokens = pd.DataFrame({"logprobs": [reply.body["choices"][0]["logprobs"]["content"]], "temperature": [temperature]})
    cats = logprob_confidence(tokens, scores=range(1, 5), occurrence=range(-5, 0), temperature="temperature",
                              logprobs_are=mode)  # fmt: skip
    truth = latent_scores(TEXT, NAMES)
    for (_, row), name in zip(cats.iterrows(), NAMES, strict=True):
        p = score_distribution(truth[name], noise * FORMAT_NOISE["scores"], 1, 4)
        shown = reported(p, temperature, mode, f)
        # What the reply reports (the chosen token's own logprob is one of its top_logprobs) ...
        assert row["raw_prob"] == pytest.approx(shown[int(row["chosen_score"])], rel=1e-9)
        # ... and hce's reading at the temperature used: p^(f/T) renormalised (one-hot at T = 0).
        expected = tempered(p, temperature, f)
        assert [row[f"prob_{x}"] for x in LEVELS] == pytest.approx([expected[x] for x in LEVELS], abs=1e-9)
        assert row["logprobs_are"] == mode and row["temperature"] == temperature


def test_greedy_reply_is_the_argmax_and_hce_gives_it_probability_one():
    judge = SimJudge(seed=0, default=Profile(noise=1.5))
    cats = logprob_confidence(
        pd.DataFrame({"logprobs": [score_block(judge, 0).body["choices"][0]["logprobs"]["content"]]}),
        scores=range(1, 5), occurrence=range(-5, 0), temperature=0, logprobs_are="raw",
    )
    assert (cats["prob"] == 1).all() and (cats["raw_prob"] < 1).all()  # raw logprobs still spread at T = 0


# --- Monte Carlo: 100,000 attempts per temperature, drawn from the judge's known distributions ----


def simulate(temperature, mode, f, seed, n_items=2_000, repeats=50):
    """A log of n_items x repeats attempts (item, temperature, the reply's logprobs, and the
    true chance ``s`` that a repeat writes the chosen score again) and each item's ``P``."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.6, 4.4, n_items)  # latent level + bias, spread over and beyond the scale
    spreads = rng.uniform(0.5, 1.5, n_items)  # the judge's noise, varying by item
    items, scores, truths, entries, ps = [], [], [], [], []
    for i, (mean, spread) in enumerate(zip(means, spreads, strict=True)):
        p = score_distribution(mean, spread, 1, 4)
        ps.append(p)
        s = tempered(p, temperature)
        shown = reported(p, temperature, mode, f)
        top = [{"token": str(x), "logprob": math.log(v)} for x, v in shown.items() if v > 0]
        drawn = rng.choice(LEVELS, size=repeats, p=[s[x] for x in LEVELS])
        items += [i] * repeats
        scores.append(drawn)
        truths += [s[x] for x in drawn.tolist()]
        reply = {x: [{"token": str(x), "logprob": math.log(v), "top_logprobs": top}] for x, v in shown.items() if v > 0}
        entries += [reply[x] for x in drawn.tolist()]
    log = pd.DataFrame({"item_id": items, "condition_id": "c", "temperature": temperature,
                        "total": np.concatenate(scores), "true_agreement": truths, "logprobs": entries})  # fmt: skip
    return log, ps


def read(log, mode, seed):
    out = logprob_confidence(log, scores=range(1, 5), temperature="temperature", logprobs_are=mode)
    assert (out["chosen_score"].to_numpy() == log["total"].to_numpy()).all()
    out["item_id"] = log["item_id"]
    out["true_agreement"] = log["true_agreement"]
    out["agree"] = agrees_with_repeat(log, random_state=seed).astype(float)
    return out


def mean_with_se(values, items):
    """Mean of per-attempt values and its standard error with items as independent clusters
    (the attempts of one item share their repeats)."""
    per_item = pd.Series(values).groupby(np.asarray(items)).mean()
    return float(per_item.mean()), float(per_item.std(ddof=1) / math.sqrt(len(per_item)))


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
@pytest.mark.parametrize("mode", ["raw", "sampled"])
def test_confidence_at_the_temperature_used_is_calibrated_for_agreement_with_a_repeat(mode, seed):
    for temperature in (0.1, 0.7, 1.0):
        out = read(simulate(temperature, mode, 1.0, seed)[0], mode, seed)
        # ECE over 10 equal-width bins of calibrated forecasts, 100,000 attempts: its sampling
        # bias is about sum_b w_b sqrt(2 p_b (1 - p_b) / (pi n_b)) ~ 0.002-0.004 here, doubled
        # at most by the pairing's shared repeats; 0.01 (the bar) leaves 2.5x or more.
        ece = expected_calibration_error(out, prob="prob", truth="agree", n_boot=0)
        assert ece.set_index("metric").loc["ece", "estimate"] < 0.01, (temperature, ece)
        # The adjusted probability is the exact truth, attempt by attempt.
        assert out["prob"].to_numpy() == pytest.approx(out["true_agreement"].to_numpy(), abs=1e-9)


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
def test_raw_confidence_shows_the_gap_the_temperature_implies(seed):
    for temperature in (0.1, 0.7, 1.0):
        log, ps = simulate(temperature, "raw", 1.0, seed)
        out = read(log, "raw", seed)
        # Exact: E[raw - agree] = mean over items of sum_x s(x) (P(x) - s(x)).
        exact = float(np.mean([sum(s[x] * (p[x] - s[x]) for x in LEVELS) for p in ps for s in [tempered(p, temperature)]]))
        measured, se = mean_with_se(out["raw_prob"] - out["agree"], out["item_id"])
        # 4 cluster SEs: a correct pipeline fails this about once in 16,000 runs.
        assert abs(measured - exact) < 4 * se, (temperature, measured, exact, se)
        if temperature == 1.0:
            assert abs(exact) < 1e-12 and out["raw_prob"].to_numpy() == pytest.approx(out["prob"].to_numpy())
        else:
            assert exact < -0.02  # raw logprobs under-state how often a low-temperature judge repeats itself


@pytest.mark.parametrize("seed", fast_and_other_seeds(0))
def test_a_known_overconfidence_is_recovered_by_ece_brier_and_the_reliability_table(seed):
    f, temperature = 1.8, 0.7
    out = read(simulate(temperature, "raw", f, seed)[0], "raw", seed)
    c, s, y = out["prob"].to_numpy(), out["true_agreement"].to_numpy(), out["agree"].to_numpy()
    # The adjusted confidence is P^(f/T) renormalised; repeats follow P^(1/T): E[c - y | attempt] = c - s.
    measured, se = mean_with_se(c - y, out["item_id"])
    exact = float(np.mean(c - s))
    assert exact > 0.03 and abs(measured - exact) < 4 * se
    brier = brier_score(out, prob="prob", truth="agree", n_boot=0).set_index("metric").loc["brier", "estimate"]
    brier_exact = float(np.mean(c**2 - 2 * c * s + s))  # E[(c - y)^2] with y ~ Bernoulli(s)
    _, brier_se = mean_with_se((c - y) ** 2, out["item_id"])
    assert abs(brier - brier_exact) < 4 * brier_se
    # Per bin, the rate of agreement is the bin's mean of s: the diagram draws the known gap.
    table = reliability_table(out, prob="prob", truth="agree")
    bins = np.minimum(np.searchsorted(np.linspace(0, 1, 11)[1:-1], c), 9)
    for _, row in table[table["n"] >= 200].iterrows():
        truth = s[bins == row["bin"]].mean()
        # 5 binomial SEs, widened by sqrt(3) for the pairing (each outcome shares an attempt
        # with two others): the rows of one bin are not independent.
        assert abs(row["estimate"] - truth) < 5 * math.sqrt(3 * truth * (1 - truth) / row["n"]) + 1e-9
    true_ece = sum(abs(c[bins == b].mean() - s[bins == b].mean()) * (bins == b).mean() for b in np.unique(bins))
    ece = expected_calibration_error(out, prob="prob", truth="agree", n_boot=0).set_index("metric").loc["ece", "estimate"]
    assert true_ece > 0.03 and abs(ece - true_ece) < 0.01  # the same sampling margin as the calibrated check


# --- agrees_with_repeat ----------------------------------------------------------------------------


def test_agrees_with_repeat_pairs_within_item_and_condition():
    log = pd.DataFrame({"item_id": [1, 1, 1, 1, 2, 2, 3], "condition_id": ["a", "a", "b", "b", "a", "a", "a"],
                        "total": [3, 3, 2, 4, 5, np.nan, 1]})  # fmt: skip
    out = agrees_with_repeat(log, random_state=1)
    assert out.tolist() == [True, True, False, False, pd.NA, pd.NA, pd.NA]
    assert agrees_with_repeat(log, condition=None, random_state=1).iloc[:4].notna().all()
    # A cycle: with three distinct scores no attempt agrees; each is compared exactly once.
    three = pd.DataFrame({"item_id": 1, "total": [1, 2, 3]})
    assert not agrees_with_repeat(three, condition=None, random_state=0).any()


def test_agreement_with_a_repeat_has_the_probability_the_distribution_gives():
    # One item, 40,000 attempts from s = (0.5, 0.3, 0.2): P(agree) = sum s^2 = 0.38, and
    # P(agree | x) = s(x). Each rate's SE is at most sqrt(3 * 0.25 / 8,000) = 0.01 (pairing
    # design effect at most 3); the margins are 4 SEs.
    rng = np.random.default_rng(7)
    log = pd.DataFrame({"item_id": 1, "condition_id": "c", "total": rng.choice([1, 2, 3], 40_000, p=[0.5, 0.3, 0.2])})
    agree = agrees_with_repeat(log, random_state=8).astype(float)
    assert agree.mean() == pytest.approx(0.38, abs=4 * math.sqrt(3 * 0.38 * 0.62 / 40_000))
    for score, share in ((1, 0.5), (2, 0.3), (3, 0.2)):
        assert agree[log["total"] == score].mean() == pytest.approx(share, abs=0.04)
