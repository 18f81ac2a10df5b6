"""Issue 34: messages that say the right thing, at the user's line."""

import warnings

from collect_helpers import design, fast_client

from hce.collect.pricing import UnpricedModelWarning, cost_usd
from hce.collect.runner import run
from hce.collect.sim import SimJudge


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
