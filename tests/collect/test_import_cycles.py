"""The modules of ``hce.collect`` import each other without a cycle (issue #20).

``sim`` and ``sim_batch`` used to import each other (one of the two imports hidden inside a
function); their shared reply type and helpers now live in ``sim_reply``. The graph is read
from the syntax tree, so an import written inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

COLLECT = Path(__file__).resolve().parents[2] / "hce" / "collect"


def collect_graph(folder: Path = COLLECT) -> dict[str, set[str]]:
    """Module name -> the sibling modules it imports (the package ``__init__`` left out: every
    submodule runs it first, so that arrow is Python's, not the code's)."""
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name in names:
        targets = set()
        for node in ast.walk(ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets.add(node.module)  # from hce.collect.x import ...
                targets.update(f"{node.module}.{a.name}" for a in node.names)  # from hce.collect import x
        graph[name] = {t.split(".")[2] for t in targets if t.startswith("hce.collect.") and t.split(".")[2] in names}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as ``[a, b, ..., a]``, or ``[]`` when the graph has none."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt):], node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = "done"
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start, [])):
            return found
    return []


def test_collect_modules_import_each_other_without_a_cycle():
    cycle = find_cycle(collect_graph())
    assert not cycle, "import cycle in hce.collect: " + " -> ".join(cycle)


def test_the_reader_sees_imports_inside_functions(tmp_path):
    (tmp_path / "a.py").write_text("from hce.collect.b import x\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from hce.collect import a\n", encoding="utf-8")
    assert find_cycle(collect_graph(tmp_path)) == ["a", "b", "a"]
