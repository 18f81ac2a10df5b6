"""``hce collect --golden`` (issue 47): each run judges the golden design again as the next period of
its history, the rows tagged ``golden_run`` so that ``hs.drift(period="golden_run")`` reads them; a
planted drift of the simulator (``drift_after``/``drift_shift``) is the shift the chart sees."""

import yaml
from collect_helpers import design
from typer.testing import CliRunner

import hce
import hce.stats as hs
from hce.cli import app
from hce.collect import load_design
from hce.collect.running.golden import next_golden_run
from hce.sim import SimJudge
from hce.sim.biases import PlantedBiases

runner = CliRunner()
ITEMS = {f"G{i}": f"Doctor: Case {i}. How long have you had the cough?\nPatient: About {i + 2} days, worse at night."
         for i in range(8)}  # fmt: skip


def golden_design(tmp_path, server):
    path = tmp_path / "golden.yaml"
    spec = design(prompts=("P1.2",), attempts=1, items=ITEMS, experiment_id="GOLDEN",
                  endpoint={"base_url": server.url, "api_key_env": "OPENAI_API_KEY"})  # fmt: skip
    path.write_text(yaml.safe_dump(spec))
    return path


def test_each_golden_run_is_a_new_period_and_drift_reads_the_history(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # 3 periods of 8 items; from the 17th call on (period 3) every score moves by 2 points
    server = serve(SimJudge(seed=0, biases=PlantedBiases(drift_after=16, drift_shift=2.0)))
    path, log = golden_design(tmp_path, server), tmp_path / "history.jsonl"
    for period in (1, 2, 3):
        result = runner.invoke(app, ["collect", str(path), "--log", str(log), "--golden"])
        assert result.exit_code == 0, result.output
        assert f"golden run {period}" in result.output and "8 attempts run, 0 already logged" in result.output
    history = hce.read_log(log)
    assert history.groupby("golden_run")["item_id"].nunique().to_dict() == {1: 8, 2: 8, 3: 8}
    assert history["attempt_id"].is_unique
    drift = hs.drift(history, period="golden_run", score="total").set_index("period")
    assert abs(drift.loc[2, "estimate"]) < 0.5  # no drift yet: the sampling noise of 8 items only
    # 2 points on each criterion's latent score: the total of 5 criteria moves by up to 10 (7 here, clipped at the ends)
    assert drift.loc[3, "ci_low"] > 2 and drift.loc[3, "first_alarm"] and not drift.loc[2, "alarm"]


def test_an_unfinished_period_is_resumed_not_restarted(tmp_path):
    spec = load_design(design(prompts=("P1.2",), attempts=1, items=ITEMS))
    log = tmp_path / "history.jsonl"
    rows = [{"attempt_id": f"a{i}", "golden_run": 1} for i in range(8)] + [{"attempt_id": "b0", "golden_run": 2}]
    log.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    assert next_golden_run(spec, log) == 2  # 1 of 8 attempts of period 2 logged: resume it
    log.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows[:8]))
    assert next_golden_run(spec, log) == 2  # period 1 complete: the next
