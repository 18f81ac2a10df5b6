"""Every code block of the README and the documentation's Markdown pages runs (issue 26).

The blocks are the fenced code of README.md, docs/*.md and docs/guide/*.md. The first word of a
fence's info string is its language, as GitHub and MyST read it; words after it are tags read
only here:

- ``file=PATH``: the block is a file that commands on the pages use (a design, a rubric, a
  prompt). Every such block, from every page, is written into each page's folder first.
- ``exit=1``: its ``hce`` commands may exit 1 as well as 0 (``hce report``: written, but a
  section the log supports was not computed; see the report's "Not reported").
- ``slow``: the block runs only in the slow suite (``pytest -m slow``, with the page's other
  blocks before it): MCMC, long simulations.

Each page runs in a fresh folder, its blocks in order:

- ``python``: executed, the page's blocks in one namespace. A block with no language right after
  it is its printed output, compared line by line (trailing spaces aside).
- ``bash``: every ``hce ...`` line runs and must exit 0; ``export NAME=VALUE`` sets the
  environment of the lines after it, and ``$NAME`` in them is expanded. The install, test and docs lines are what CI runs, so they
  are checked against ``.ci/run`` instead of run here.
- ``yaml`` and ``text``: need ``file=`` (they are files, not commands); YAML must parse.
  Python blocks may warn (a reader sees the warning too), except hce's deprecation warnings:
  the docs use no deprecated name.

The folder holds what the pages take as given: ``reports/demo`` from one ``hce demo`` run (the
README's line, run once for all pages by the ``demo`` fixture, exactly as written). Nothing
else (a page that judges transcripts writes them first with ``hce example``): a block
that reads a file writes it first or names a file hce ships, so every block runs in a fresh
clone; none reads ``../shared/data`` (which a clone lacks) and none is skipped. ``OPENAI_BASE_URL`` points at hce's simulated judge on
loopback, so a design that names no ``base_url`` is judged by it, as in a rehearsal: nothing is
sent off this machine and no key is needed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "guide").glob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", flags=re.S | re.M)


@dataclass
class Block:
    page: Path
    line: int
    language: str
    tags: dict[str, str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        language, *words = m.group(1).split() or [""]
        if language.startswith("{"):
            continue  # a MyST directive (toctree, include), not code
        tags = dict(w.split("=", 1) if "=" in w else (w, "") for w in words)
        found.append(Block(page, text.count("\n", 0, m.start()) + 1, language, tags, m.group(2)))
    return found


ALL = {page: blocks(page) for page in PAGES}
FILES = [b for bs in ALL.values() for b in bs if "file" in b.tags]


def commands(code: str) -> list[str]:
    """The shell lines of a block: comments dropped, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.split(" #")[0].strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def checked_by_ci(command: str) -> bool:
    """An install, test or docs-build line: true when .ci/run runs the same thing."""
    for part in (p.strip() for p in command.split("&&")):
        if part.startswith(("python3.11 -m venv", ". .venv/bin/activate")):
            continue
        if part.startswith("pip install"):
            assert f"python -m pip install --quiet {part.split(' ', 2)[2]}" in CI, f"CI does not install {part!r}"
        elif part.startswith("python -m pytest"):
            assert re.search(rf"^{re.escape(part)}$", CI, flags=re.M), f"CI does not run {part!r}"
        elif part == "python -m hce.docs":
            from hce.docs import SPHINX_ARGS

            assert f"python -m sphinx {' '.join(SPHINX_ARGS)}" in CI, "CI does not build the docs as hce.docs does"
        else:
            return False
    return True


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Path:
    """The README's ``hce demo``, run once in a fresh folder: its report folder, for every page."""
    where = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "hce.cli", "demo"], cwd=where, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return where / "reports" / "demo"


@pytest.fixture(scope="session")
def sim_url():
    from hce.collect import SimJudge, SimServer

    with SimServer(SimJudge(seed=1)).start() as server:
        yield server.url


def prepare(folder: Path, demo: Path) -> None:
    """What the pages take as given (see the module docstring)."""
    (folder / "reports").mkdir()
    (folder / "reports" / "demo").symlink_to(demo)
    for block in FILES:
        path = folder / block.tags["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")


def expand(word: str, env: dict[str, str]) -> str:
    return re.sub(r"\$(\w+)", lambda m: env[m.group(1)], word)


def run_page(page: Path, tmp_path: Path, demo: Callable[[], Path], sim_url: str, slow: bool) -> int:
    """Run a page's blocks in a fresh folder; the number of python blocks and hce commands run."""
    folder = tmp_path / "page"
    folder.mkdir()
    prepare(folder, demo())
    env = {**os.environ, "OPENAI_BASE_URL": sim_url, "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)
    namespace: dict = {"__name__": "__docs__"}
    printed: str | None = None  # what the last python block printed; None when it did not run
    ran = 0
    os.chdir(folder)
    for block in ALL[page]:
        if "slow" in block.tags and not slow:
            printed = None
            continue
        if block.language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    exec(compile(block.code, block.where, "exec"), namespace)
                except Exception as e:
                    raise AssertionError(f"{block.where}: {type(e).__name__}: {e}") from e
            deprecated = [w for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))
                          and "hce" in str(w.message)]
            assert not deprecated, f"{block.where}: uses a deprecated name: {deprecated[0].message}"
            printed, ran = out.getvalue(), ran + 1
        elif block.language == "" and printed is not None:
            want = [line.rstrip() for line in block.code.strip("\n").splitlines()]
            got = [line.rstrip() for line in printed.strip("\n").splitlines()]
            assert got == want, f"{block.where}: the printed output differs:\n" + "\n".join(got)
        elif block.language == "bash":
            for command in commands(block.code):
                if command.startswith("export "):
                    name, value = command[len("export "):].split("=", 1)
                    env[name] = value
                elif command == "hce demo":
                    continue  # the demo fixture ran exactly this in a fresh folder; the page has its output
                elif command.startswith("hce "):
                    args = [expand(a, env) for a in shlex.split(command)[1:]]
                    done = subprocess.run([sys.executable, "-m", "hce.cli", *args], cwd=folder, env=env,
                                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
                    assert done.returncode in {0, int(block.tags.get("exit", 0))}, f"{block.where}: `{command}` exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                    ran += 1
                else:
                    assert checked_by_ci(command), f"{block.where}: `{command}` is neither an hce command nor a CI step"
        elif block.language:
            assert "file" in block.tags, f"{block.where}: a {block.language} block needs file=PATH"
            if block.language == "yaml":
                yaml.safe_load(block.code)
    return ran


@pytest.fixture
def in_folder():
    here = os.getcwd()
    yield
    os.chdir(here)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_page_blocks_run(page, tmp_path, request, sim_url, in_folder):
    run_page(page, tmp_path, lambda: request.getfixturevalue("demo"), sim_url, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p, bs in ALL.items() if any("slow" in b.tags for b in bs)],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_page_slow_blocks_run(page, tmp_path, request, sim_url, in_folder):
    run_page(page, tmp_path, lambda: request.getfixturevalue("demo"), sim_url, slow=True)


def test_every_file_block_has_one_path():
    paths = [b.tags["file"] for b in FILES]
    assert len(paths) == len(set(paths)), f"two blocks write the same file: {sorted(paths)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_pages_import_only_public_names(page):
    """Issue 36: a guide shows what a user may rely on; ``hce.stats._simulate`` is not that."""
    private = [f"{b.where}: {line.strip()}" for b in ALL[page] if b.language == "python"
               for line in b.code.splitlines()
               if re.match(r"\s*(from|import)\s+hce(\.\w+)*\._", line) or re.search(r"import .*\b_\w+", line)
               and "hce" in line]
    assert not private, "private imports in a guide:\n" + "\n".join(private)


def test_no_block_needs_files_a_clone_lacks():
    """Issue 36: a block reading the shared reference data ran only where that folder was, so a
    fresh clone skipped it."""
    reads_shared = [b.where for bs in ALL.values() for b in bs if "shared/data" in b.code]
    assert not reads_shared, reads_shared
