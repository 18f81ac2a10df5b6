"""The package's layers import downward only, read from the import graph of every module.

Issue 20: ``hce.collect`` (calls and the attempt log) and ``hce.stats`` (pure statistics) never
import each other; ``hce.report`` (generic document, tables, figures) imports ``hce.stats`` at
most, never ``hce.collect``; nothing below the study (``hce.study``) imports it, and the base
modules (``hce.log``, ``hce.rubric``, ``hce.errors``, ...) import none of the layers. The graph
is built from the syntax tree of every module, so imports inside functions count, and so do
``importlib.import_module("...")`` / ``__import__("...")`` calls with a literal name.

No two modules import each other, directly or round a loop (an import circle), beyond the
circles :data:`KNOWN_CIRCLES` lists for their owners to break; this replaced
``tests/collect/test_import_cycles.py``, which looked at ``hce.collect`` alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hce"

#: (importing layer, imported layer) pairs that are forbidden, with the rule in words.
FORBIDDEN = {
    ("collect", "stats"): "hce.collect and hce.stats never import each other",
    ("stats", "collect"): "hce.collect and hce.stats never import each other",
    ("collect", "report"): "hce.collect knows no report",
    ("stats", "report"): "hce.stats is pure statistics; plots and documents are hce.report's",
    ("report", "collect"): "hce.report imports hce.stats at most, never hce.collect",
    **{(layer, "study"): "nothing below hce.study imports it" for layer in ("collect", "sim", "stats", "report", "base")},
    **{("base", layer): "the base modules (log, rubric, errors, ...) import no layer" for layer in ("collect", "sim", "stats", "report")},
    # Issue 49: the simulator is a product of its own beside collect; the CLI, demo, tests and bench start it.
    **{(layer, "sim"): "only the study, the CLI and the tests start the simulator" for layer in ("collect", "stats", "report")},
    **{("sim", layer): "the simulator imports the base modules only" for layer in ("collect", "stats", "report")},
}

#: Exceptions, each with its reason: (importing module, imported module) -> (names allowed, reason).
ALLOWED = {
    ("hce.stats", "hce.report.figures"): (
        {"reliability_diagram"},
        "backward compatibility: hce.stats.reliability_diagram is a lazy alias of the plot, which lives in hce.report.figures",
    ),
}


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` module imports ``target`` module (the ``names`` taken from it) at path:line."""

    source: str
    target: str
    names: frozenset[str]
    path: str
    line: int


def modules(root: Path, package: str = "hce") -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name -> file (a package is its ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _absolute(name: str, level: int, source: str, is_package: bool) -> str:
    """A relative import's module as an absolute dotted name."""
    if level == 0:
        return name
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _literal_import(node: ast.Call) -> str | None:
    """The module named by ``importlib.import_module("x")``, ``import_module("x")`` or ``__import__("x")``."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def import_edges(files: dict[str, Path], package: str = "hce") -> list[Edge]:
    """Every import of a module of ``package`` by a module of ``files``, wherever it is written."""
    edges = []
    for source, path in files.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            found: list[tuple[str, frozenset[str]]] = []
            if isinstance(node, ast.Import):
                found = [(alias.name, frozenset()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(node.module or "", node.level, source, is_package)
                names = [alias.name for alias in node.names]
                # "from hce import stats" imports the module hce.stats, not a name of hce.
                subs = [n for n in names if f"{module}.{n}" in files]
                found = [(f"{module}.{n}", frozenset()) for n in subs]
                rest = frozenset(n for n in names if n not in subs)
                if rest or not subs:
                    found.append((module, rest))
            elif isinstance(node, ast.Call) and (name := _literal_import(node)) is not None:
                found = [(_absolute(name.lstrip("."), len(name) - len(name.lstrip(".")), source, is_package), frozenset())]
            for target, names in found:
                if target == package or target.startswith(package + "."):
                    edges.append(Edge(source, target, names, str(path), node.lineno))
    return edges


def layer(module: str, package: str = "hce") -> str:
    """``collect``, ``stats``, ``report``, ``study``, ``cli``, ``top`` (the package itself) or ``base``."""
    if module == package:
        return "top"
    part = module.split(".")[1]
    if part.startswith("_cli_"):  # the command line's own modules (hce._cli_collect, hce._cli_report) are its layer
        return "cli"
    return part if part in ("collect", "sim", "stats", "report", "study", "cli") else "base"


def violations(edges: list[Edge], package: str = "hce") -> list[str]:
    """The edges that break a rule, each as ``path:line: source imports target (rule)``."""
    out = []
    for edge in edges:
        rule = FORBIDDEN.get((layer(edge.source, package), layer(edge.target, package)))
        if rule is None:
            continue
        allowed = ALLOWED.get((edge.source, edge.target))
        if allowed is not None and edge.names <= allowed[0]:
            continue
        names = f" ({', '.join(sorted(edge.names))})" if edge.names else ""
        out.append(f"{edge.path}:{edge.line}: {edge.source} imports {edge.target}{names}: {rule}")
    return out


def test_the_package_imports_downward_only():
    found = violations(import_edges(modules(PACKAGE)))
    assert not found, "layer rules broken:\n" + "\n".join(found)


def test_the_graph_sees_the_study_layer_use_the_layers_below():
    # A sanity check of the reader: the edges the study layer is built on are found.
    edges = {(layer(e.source), layer(e.target)) for e in import_edges(modules(PACKAGE))}
    assert {("study", "collect"), ("study", "stats"), ("study", "report"), ("cli", "study")} <= edges


# --- no import circles among the package's modules --------------------------------------------

#: The circles the package has today, each with the imports that close it; the owner of those
#: files breaks it (and removes it here). A new circle fails the test, and so does a listed one
#: that is gone, so the list only shrinks.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}  # none left: a circle found is a new one


def import_graph(files: dict[str, Path], package: str = "hce") -> dict[str, set[str]]:
    """Module -> the modules it imports, imports inside functions and under ``if TYPE_CHECKING:``
    included: a typing-only import never runs, but it still says that each module needs the
    other's names, the tangle a circle is (issue 49: ``hce.study.report`` and ``report_exp4``).

    Left out: a module's imports of its own packages (Python runs a package's ``__init__``
    before any of its modules, so that arrow is Python's, not the code's).
    """
    graph: dict[str, set[str]] = {name: set() for name in files}
    for edge in import_edges(files, package):
        target = edge.target
        while target not in files and "." in target:  # "from hce.x import name": the module hce.x
            target = target.rsplit(".", 1)[0]
        own_packages = {edge.source.rsplit(".", depth)[0] for depth in range(1, edge.source.count(".") + 1)}
        if target in files and target != edge.source and target not in own_packages:
            graph[edge.source].add(target)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The modules that import each other, directly or round a longer loop: the strongly
    connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def enter(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(sorted(graph[node]))))

    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        enter(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    enter(target)
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:  # every target seen: close the node
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:  # the root of a component: pop it
                    members = set()
                    while node not in members:
                        members.add(stack.pop())
                    on_stack -= members
                    if len(members) > 1:
                        circles.append(frozenset(members))
    return circles


def test_no_import_circles_beyond_the_known_ones():
    graph = import_graph(modules(PACKAGE))
    found = set(import_circles(graph))
    new = [" <-> ".join(sorted(circle)) for circle in found - KNOWN_CIRCLES.keys()]
    assert not new, "import circles (the modules import each other; move what both need below both):\n" + "\n".join(new)
    gone = [" <-> ".join(sorted(circle)) for circle in KNOWN_CIRCLES.keys() - found]
    assert not gone, "these circles are broken now: remove them from KNOWN_CIRCLES\n" + "\n".join(gone)


def test_the_circle_finder_sees_imports_inside_functions_and_longer_loops(tmp_path):
    files = fake_package(tmp_path, {
        "collect/a.py": "from hce.collect.b import x\n",
        "collect/b.py": "def f():\n    from hce.collect import c\n",
        "collect/c.py": "import hce.collect.a\n",
        "collect/d.py": "from hce.collect import a\n",  # into the loop, not part of it
        "stats/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hce.stats.f import F\n",
        "stats/f.py": "from hce.stats.e import E\n",  # a typing-only import closes a circle too
        "stats/g.py": "from hce.stats import icc\n",  # its own package's __init__: Python's arrow
    })  # fmt: skip
    (tmp_path / "hce" / "stats" / "__init__.py").write_text("from hce.stats.g import x\n", encoding="utf-8")
    assert sorted(import_circles(import_graph(files)), key=sorted) == [
        frozenset({"hce.collect.a", "hce.collect.b", "hce.collect.c"}), frozenset({"hce.stats.e", "hce.stats.f"})]


# --- the checker on a synthetic package: every arrow the issue forbids is caught -------------


def fake_package(tmp_path: Path, sources: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / "hce"
    for name in ("", "collect", "sim", "stats", "report", "study"):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "__init__.py").write_text("", encoding="utf-8")
    for relative, text in sources.items():
        (root / relative).write_text(text, encoding="utf-8")
    return modules(root)


BROKEN = {
    "collect -> stats at the top": ("collect/runner.py", "from hce.stats import cohen_kappa\n", "hce.stats"),
    "collect -> stats inside a function": ("collect/runner.py", "def f():\n    from hce.stats import cohen_kappa\n", "hce.stats"),
    "collect -> stats as a module": ("collect/runner.py", "import hce.stats.tests as t\n", "hce.stats.tests"),
    "collect -> stats through 'from hce import'": ("collect/runner.py", "from hce import stats\n", "hce.stats"),
    "collect -> stats relatively": ("collect/runner.py", "from ..stats import icc\n", "hce.stats"),
    "collect -> stats by import_module": ("collect/runner.py", "import importlib\nm = importlib.import_module('hce.stats')\n", "hce.stats"),
    "collect -> stats by __import__": ("collect/runner.py", "m = __import__('hce.stats.tests')\n", "hce.stats.tests"),
    "stats -> collect": ("stats/tests.py", "def f():\n    from hce.collect.call.pricing import ALIASES\n", "hce.collect.call.pricing"),
    "report -> collect": ("report/tables.py", "from hce.collect.call.pricing import ALIASES\n", "hce.collect.call.pricing"),
    "report -> sim": ("report/tables.py", "from hce.sim import SIM_FINGERPRINT\n", "hce.sim"),
    "collect -> sim": ("collect/runner.py", "def f():\n    from hce.sim.server import SimServer\n", "hce.sim.server"),
    "sim -> collect": ("sim/judge.py", "from hce.collect.design.prompts import render\n", "hce.collect.design.prompts"),
    "report -> study": ("report/tables.py", "from hce.study import run_study\n", "hce.study"),
    "stats -> study": ("stats/tests.py", "from hce.study.analyses import experiment2\n", "hce.study.analyses"),
    "collect -> study": ("collect/runner.py", "from hce.study import load_study\n", "hce.study"),
    "base -> study": ("log.py", "def f():\n    import hce.study\n", "hce.study"),
    "stats -> report beyond the allowed alias": ("stats/__init__.py", "from hce.report.figures import sd_histogram\n", "hce.report.figures"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_checker_finds_each_forbidden_arrow_with_its_file_and_line(tmp_path, case):
    relative, text, target = BROKEN[case]
    files = fake_package(tmp_path, {"report/figures.py": "", "stats/tests.py": "", "study/analyses.py": "",
                                    "collect/sim.py": "", "log.py": "", relative: text})  # fmt: skip
    found = violations(import_edges(files))
    line = text.splitlines().index(next(s for s in text.splitlines() if "hce" in s or ".." in s)) + 1
    assert len(found) == 1 and f"hce/{relative}:{line}: " in found[0] and f"imports {target}" in found[0], found


def test_the_checker_passes_allowed_arrows(tmp_path):
    files = fake_package(tmp_path, {
        "report/figures.py": "from hce.stats import icc\n",
        "stats/__init__.py": "def __getattr__(name):\n    from hce.report.figures import reliability_diagram\n",
        "study/run.py": "from hce.collect import run\nfrom hce.sim import SimServer\nfrom hce.stats import icc\nfrom hce.report import figures\n",
        "cli.py": "def f():\n    import hce.study\n",
        "__init__.py": "from hce.log import read_log\n",
        "log.py": "from hce.errors import HceError\n",
        "errors.py": "",
    })  # fmt: skip
    assert violations(import_edges(files)) == []


# --- issue 49: collect in rooms, the simulator its own package -------------------------------


def test_collect_has_rooms_and_the_simulator_is_its_own_package():
    collect = PACKAGE / "collect"
    top = sorted(p.name for p in collect.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())
    assert len(top) <= 12, f"hce/collect/ has {len(top)} modules at its top level (at most 12): {top}"
    simulated = sorted(str(p.relative_to(PACKAGE)) for p in collect.rglob("sim*.py"))
    assert not simulated, f"the simulator lives in hce/sim/, not in collect: {simulated}"
    assert (PACKAGE / "sim" / "server.py").is_file()
