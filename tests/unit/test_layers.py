"""Imports run one way, cli → evals → graph → nodes → agent → memora, with no import cycles."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("cli", "evals", "graph", "nodes", "agent", "memora")
"""Top floor first: a package may import only packages below it."""


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in (root / package).rglob("*.py"):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other project modules (every import, lazy ones included)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Imports that reach up (or sideways into a higher floor)."""
    rank = {package: floor for floor, package in enumerate(LAYERS)}
    return sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if rank[target.split(".")[0]] < rank[source.split(".")[0]]
    )


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in list(edges):
        if node not in index:
            visit(node)
    return cycles


def test_the_project_has_no_layer_violation_and_no_cycle() -> None:
    edges = _imports(_modules(ROOT))
    assert edges, "no imports found: the scan itself is broken"
    assert layer_violations(edges) == []
    assert import_cycles(edges) == []


@pytest.mark.parametrize(
    ("files", "violations", "cycles"),
    [
        ({"memora/a.py": "from cli.b import x\n", "cli/b.py": ""}, ["memora.a -> cli.b"], []),
        ({"nodes/a.py": "import graph.b\n", "graph/b.py": ""}, ["nodes.a -> graph.b"], []),
        (
            {
                "memora/a.py": "def f():\n    from memora import b\n",
                "memora/b.py": "from . import a\n",
            },
            [],
            [["memora.a", "memora.b"]],
        ),
        ({"cli/a.py": "from evals.b import y\n", "evals/b.py": "import memora.c\n"}, [], []),
        ({"memora/a.py": "import agent.b\n", "agent/b.py": ""}, ["memora.a -> agent.b"], []),
        ({"agent/a.py": "from nodes.b import z\n", "nodes/b.py": ""}, ["agent.a -> nodes.b"], []),
        ({"nodes/a.py": "from agent.b import z\n", "agent/b.py": "import memora.c\n"}, [], []),
    ],
)
def test_the_check_catches_a_planted_violation(
    tmp_path: Path, files: dict[str, str], violations: list[str], cycles: list[list[str]]
) -> None:
    for package in LAYERS:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "memora" / "c.py").write_text("")
    for relative, text in files.items():
        (tmp_path / relative).write_text(text)
    edges = _imports(_modules(tmp_path))
    assert layer_violations(edges) == violations
    assert import_cycles(edges) == cycles
