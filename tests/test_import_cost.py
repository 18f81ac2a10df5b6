"""``import hce.stats`` and the CLI stay light: heavy optional machinery loads only when used.

PyMC, PyTensor and ArviZ (with xarray, numba and matplotlib behind them) took ~5 of the ~6 s
of ``import hce.stats`` (issue #20); factor_analyzer (with scikit-learn) and statsmodels'
model layer (with formulaic) another ~0.15 s. Each is imported inside the functions that
fit with it. This test asserts the set of modules a fresh interpreter imports, not a time
(timings live in ``bench/startup.py``), so it cannot flake on a busy machine.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# top-level packages that must not load with the statement; the Bayesian stack and plotting
# for everything, and also the collection layer's HTTP clients for the CLI
BAYES_AND_PLOTS = {"pymc", "pytensor", "arviz", "xarray", "numba", "matplotlib", "seaborn"}
MODEL_FITTERS = {"factor_analyzer", "sklearn", "formulaic", "statsmodels.miscmodels"}
CLIENTS = {"openai", "httpx", "jinja2"}
CASES = {
    "import hce": BAYES_AND_PLOTS | MODEL_FITTERS | CLIENTS | {"scipy.stats"},
    "import hce.stats": BAYES_AND_PLOTS | MODEL_FITTERS | CLIENTS,
    "import hce.cli": BAYES_AND_PLOTS | MODEL_FITTERS | CLIENTS | {"scipy.stats", "hce.stats", "hce.collect"},
    # the Bayesian entry points and result type are importable without the Bayesian stack
    "from hce.stats import BayesResult, MCMCDiagnosticsWarning, bayes_binary, bayes_ordinal": BAYES_AND_PLOTS,
    # `hce sim-server` (issue 35): the simulator serves without the HTTP client or pandas
    "from hce.sim import SimServer": BAYES_AND_PLOTS | CLIENTS | {"pandas", "hce.stats"},
}


def imported_by(statement: str) -> list[tuple[str, str]]:
    """``(module, importer)`` for every module ``python -X importtime -c statement`` imports,
    where importer is the nearest ``hce`` module above it in the import tree ("" if none).

    ``-X importtime`` prints each import after its children, indented by depth, so a
    module's ancestors are the following lines of smaller depth.
    """
    # run from the repository root so the interpreter imports this tree's hce (sys.path[0] is '')
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and not line.rstrip().endswith("imported package"):
            name = line.split("|")[-1]
            rows.append((len(name) - len(name.lstrip()), name.strip()))
    out = []
    for i, (depth, name) in enumerate(rows):
        importer, level = "", depth
        for up_depth, up_name in rows[i + 1:]:
            if up_depth < level:
                level = up_depth
                if up_name.split(".")[0] == "hce":
                    importer = up_name
                    break
        out.append((name, importer))
    return out


def _matches(module: str, banned: set[str]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


@pytest.mark.parametrize("statement", sorted(CASES))
def test_heavy_modules_are_not_imported(statement):
    modules = imported_by(statement)
    assert any(name == "hce" for name, _ in modules), "importtime output not parsed"
    found = {}  # per banned package, its outermost module that loaded and who loaded it
    for name, importer in sorted(modules, key=lambda m: m[0].count(".")):
        if _matches(name, CASES[statement]):
            found.setdefault(name.split(".")[0], f"{name} (under {importer or 'a non-hce module'})")
    assert not found, f"{statement} imports: " + "; ".join(found.values())


def test_the_check_sees_a_heavy_import():
    """The parser finds a banned package and names the hce module that pulls it in."""
    modules = dict(imported_by("import hce.log; import xarray"))
    assert modules["pandas"] == "hce.log"
    assert _matches("xarray", BAYES_AND_PLOTS) and modules["xarray"] == ""


@pytest.mark.parametrize("package", ["hce.stats", "hce.collect"])
def test_every_public_name_has_a_home_and_resolves(package):
    # hce.stats and hce.collect load their modules on first use (PEP 562): the table of homes
    # and __all__ must name the same functions, and each must be found where the table says.
    hs = importlib.import_module(package)

    # hce.collect's simulator names are aliases of hce.sim's, resolved but documented there, not in __all__
    aliases = {n for n, home in hs._HOME.items() if home.startswith("hce.sim")}
    assert set(hs.__all__) == set(hs._HOME) - aliases
    for name in [*hs.__all__, *aliases]:
        assert getattr(hs, name) is getattr(importlib.import_module(hs._HOME[name]), name)
    assert set(hs.__all__) <= set(dir(hs))


def test_no_public_stats_name_is_also_a_module_name():
    # Importing hce.stats.<name> sets the package attribute <name> to the module, which would
    # hide a lazily loaded function of the same name (hs.fairness was once the module).
    import pkgutil

    import hce.stats as hs

    assert not {m.name for m in pkgutil.iter_modules(hs.__path__)} & set(hs.__all__)


def test_the_top_level_names_and_modules_load_on_first_use():
    # A fresh interpreter: `import hce` alone must still reach hce.log, hce.read_log, hce.stats.
    code = ("import hce, sys; assert 'pandas' not in sys.modules; "
            "assert hce.log.schema_table() is not None and hce.read_log is hce.log.read_log; "
            "assert hce.stats.icc is not None and hce.load_rubric('v5').criteria")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)


#: What a dry run never needs (issue 44: ``hce collect --dry-run`` took 7 s; at load ~8 on 2 cores pandas, NumPy and
#: PyArrow were 1.7 s of its 2.4 s of imports, the openai client 4.8 s before it loaded at its first use).
DRY_RUN_BANNED = CLIENTS | BAYES_AND_PLOTS | {"scipy", "pandas", "numpy", "pyarrow", "asyncio", "hce.collect.call.client",
                                              "hce.collect.running.runner", "hce.collect.running.batch", "hce.log"}


def _dry_run_design(tmp_path: Path, **extra) -> Path:
    import yaml

    spec = {"experiment_id": "D", "attempts": 3, "defaults": {"model": "gpt-4.1-mini"},
            "endpoint": {"base_url": "http://127.0.0.1:9/v1", "needs_key": False, "pricing": "none"},
            "conditions": [{"prompt": "P1.2"}, {"prompt": "P2.1", "response_format": "json_schema"}],
            "items": [{"id": f"T{i}", "text": f"Doctor: How are you {i}?\nPatient: I walk sometimes."} for i in range(20)],
            **extra}  # fmt: skip
    design = tmp_path / "d.yaml"
    design.write_text(yaml.safe_dump(spec))
    return design


def test_a_collect_dry_run_loads_neither_the_http_client_nor_pandas(tmp_path):
    # Issue 44: the dry run's estimate and projection are plain rows (estimate_rows, project_rows), its keys are read
    # by hce.collect.call.keys, the base modules it reads through (log_schema, log_files, log_writer, _checks) load
    # pandas and NumPy inside the functions that use them; hce.cli registers the command from hce._cli_collect.
    argv = ["hce", "collect", str(_dry_run_design(tmp_path)), "--log", str(tmp_path / "l.jsonl"), "--dry-run"]
    modules = imported_by(f"import sys; sys.argv = {argv!r}; from hce.cli import main; main()")
    assert any(name == "hce.collect.estimates" for name, _ in modules), "the dry run did not run"
    loaded = {name: importer for name, importer in modules if _matches(name, DRY_RUN_BANNED)}
    assert not loaded, loaded


def test_a_dry_run_reading_a_key_and_jsonl_items_keeps_out_of_pandas(tmp_path):
    # The other roads of a dry run: an endpoint that reads its key from the environment, items from a .jsonl file,
    # a spending limit; checked in the interpreter's sys.modules after the command has printed its plan.
    import json
    import os

    lines = [json.dumps({"id": f"T{i}", "text": f"Doctor: Hi {i}.\nPatient: Hello."}) for i in range(20)]
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    design = _dry_run_design(tmp_path, items="items.jsonl", run={"max_cost_usd": 5},
                             endpoint={"base_url": "http://127.0.0.1:9/v1", "api_key_env": "HCE_TEST_KEY"})
    argv = ["hce", "collect", str(design), "--log", str(tmp_path / "l.jsonl"), "--dry-run"]
    code = "\n".join([f"import sys; sys.argv = {argv!r}", "from hce.cli import main", "try:", "    main()",
                      "except SystemExit as e:", "    assert not e.code, e.code", f"banned = {sorted(DRY_RUN_BANNED)!r}",
                      "print(sorted({m.split('.')[0] for m in sys.modules if any(m == b or m.startswith(b + '.') for b in banned)}))"])
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "HCE_TEST_KEY": "sk-test"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "dry run: 120 calls" in done.stdout, done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout.strip().splitlines()[-1]


#: What ``hce collect`` does not need before its first request: the log's tables and the statistics.
FIRST_REQUEST_BANNED = BAYES_AND_PLOTS | {"scipy", "pandas", "numpy", "pyarrow", "hce.log", "hce.stats"}


def test_a_collect_run_sends_its_first_request_before_pandas_loads(tmp_path):
    # Issue 44: `hce collect` took 1.44 s to its first request (1 s wanted), pandas among its imports through
    # the resume check (hce.log) and NumPy through the score parser. The child stops at its first connect and
    # prints which banned packages had loaded by then.
    design = _dry_run_design(tmp_path, endpoint={"base_url": "http://127.0.0.1:9/v1", "needs_key": False,
                                                  "pricing": "none", "timeout": 5, "max_retries": 0})  # fmt: skip
    argv = ["hce", "collect", str(design), "--log", str(tmp_path / "l.jsonl")]
    code = "\n".join([
        "import os, socket, sys",
        f"banned = {sorted(FIRST_REQUEST_BANNED)!r}",
        "def stop(self, *args):",
        "    print(sorted({b for b in banned for m in sys.modules if m == b or m.startswith(b + '.')}), flush=True)",
        "    os._exit(0)",
        "socket.socket.connect = socket.socket.connect_ex = stop",
        f"sys.argv = {argv!r}",
        "from hce.cli import main",
        "main()",
    ])  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
