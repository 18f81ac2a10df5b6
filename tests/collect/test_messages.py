"""Issue 34: messages that say the right thing, at the user's line."""

import warnings

from collect_helpers import design, fast_client

from hce.collect.call.pricing import UnpricedModelWarning, cost_usd
from hce.collect.running.runner import run
from hce.sim import SimJudge


def test_a_misspelt_model_gets_a_did_you_mean_from_the_price_table():
    # Issue 34: `gpt-4o-2024-0806` got only an "unpriced" warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cost_usd("gpt-4o-2024-0806", 100, 10) is None
    assert "did you mean 'gpt-4o-2024-08-06'?" in str(caught[0].message)
    assert caught[0].filename == __file__  # the caller's line, not hce's


def test_the_runs_unpriced_warning_points_at_the_callers_line(serve, tmp_path):
    # Issue 34: the warning pointed into hce's own files (runner.py:227).
    server = serve(SimJudge(seed=0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(design(prompts=("P1.2",), attempts=1, defaults={"model": "my-local-model"}), tmp_path / "log.jsonl",
            client=fast_client(server))
    unpriced = [w for w in caught if issubclass(w.category, UnpricedModelWarning)]
    assert len(unpriced) == 1 and unpriced[0].filename == __file__, [(w.filename, w.lineno) for w in caught]


def test_dry_run_checks_every_key_variable_and_shows_where_max_cost_stops(serve, tmp_path, monkeypatch):
    # Issue 34: --dry-run passed with the key variable unset and projected the whole spend without saying that
    # --max-cost 0.05 stops after about 6 calls.
    import re

    import yaml
    from typer.testing import CliRunner

    from hce.cli import app

    server = serve(SimJudge(seed=0))
    spec = design(prompts=("P1.2",), attempts=20, endpoint={"base_url": server.url, "api_key_env": "HCE_TEST_KEY"})
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(spec))
    log = tmp_path / "log.jsonl"
    monkeypatch.delenv("HCE_TEST_KEY", raising=False)
    result = CliRunner().invoke(app, ["collect", str(path), "--log", str(log), "--dry-run", "--max-cost", "0.01"])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "the environment variable HCE_TEST_KEY that should hold its API key is not set" in output
    stop = re.search(r"with max_cost_usd=\$0\.0100: the log holds \$0\.0000; the run would stop after about (\d+) of 60 "
                     r"calls", output)
    assert stop, output
    monkeypatch.setenv("HCE_TEST_KEY", "sk-test")
    result = CliRunner().invoke(app, ["collect", str(path), "--log", str(log), "--max-cost", "0.01"])
    sent = len(log.read_text().splitlines())
    # The sim's replies are shorter than the estimates assume, so the run goes on a little past the projection.
    assert result.exit_code == 2 and int(stop.group(1)) <= sent < 60, (sent, stop.group(1))


def test_a_redirect_and_a_401_end_with_what_fixes_them(serve, tmp_path):
    # Issue 34: a redirect error ended "fix the key or the model"; a 401 read "refused model".
    import pytest

    from hce.collect.call.client import FatalCallError
    from hce.sim import Faults

    target = serve(SimJudge(seed=0))
    origin = f"http://127.0.0.1:{target.port}"
    redirecting = serve(SimJudge(seed=0, faults=Faults(redirect=origin)))
    with pytest.raises(FatalCallError) as caught:
        run(design(prompts=("P1.2",), attempts=1), tmp_path / "r.jsonl", client=fast_client(redirecting))
    message = str(caught.value)
    assert "a redirect to" in message and "set base_url to the address you mean, then run the same command" in message
    assert "fix the key" not in message and "refused model" not in message
    keyed = serve(SimJudge(seed=0), api_key="sk-right")
    with pytest.raises(FatalCallError) as caught:
        run(design(prompts=("P1.2",), attempts=1), tmp_path / "k.jsonl", client=fast_client(keyed, api_key="sk-wrong"))
    message = str(caught.value)
    assert "refused the API key (HTTP 401" in message and "set the right key in the variable" in message
    assert "refused model" not in message
