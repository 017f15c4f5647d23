"""No import cycle in gymloop: every import counts, at the top of a file, inside a function or for type checking.

An import moved into a function or under ``TYPE_CHECKING`` still makes the two modules depend on each other; the
graph below holds them all, so a cycle hidden that way fails here like one at the top of the files.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arena", "bench", "curriculum", "diagnosis", "factory_client", "flows", "registry", "trainers")


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the packages by dotted name, with its file and whether it is a package's ``__init__``."""
    modules: dict[str, tuple[Path, bool]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_init = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return modules


def _target(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The project module an import of ``name`` loads (its nearest enclosing module), or None outside gymloop."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path) -> nx.DiGraph:
    """The project's imports: an edge from each module to each project module it imports, with the line."""
    modules = _modules(root)
    graph = nx.DiGraph()
    for name, (path, is_init) in modules.items():
        package = name if is_init else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_target(alias.name, modules) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _target(base, modules)
                           for alias in node.names]
            for target in targets:
                if target is not None and target != name:
                    graph.add_edge(name, target, where=f"{path.relative_to(root)}:{node.lineno}")
    return graph


def _cycles(graph: nx.DiGraph) -> list[str]:
    """One cycle of each group of modules that import each other, each import with its file and line."""
    found = []
    for group in nx.strongly_connected_components(graph):
        if len(group) > 1:
            edges = nx.find_cycle(graph.subgraph(group), source=min(group))
            found.append(" -> ".join(f"{a} ({graph.edges[a, b]['where']})" for a, b, *_ in edges)
                         + f" -> {edges[0][0]}")
    return sorted(found)


def test_no_module_of_gymloop_imports_itself_through_others() -> None:
    graph = import_graph(ROOT)
    assert graph.number_of_edges() > 500, "the import graph lost the project's imports"
    assert _cycles(graph) == []


def test_a_cycle_through_a_function_or_type_checking_import_is_found(tmp_path: Path) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "__init__.py").write_text("")
    (tmp_path / "flows" / "a.py").write_text("from flows.b import thing\n")
    (tmp_path / "flows" / "b.py").write_text("def thing():\n    from . import c\n")
    (tmp_path / "flows" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flows.a\n")
    (tmp_path / "flows" / "d.py").write_text("from flows import a, b\n")

    assert _cycles(import_graph(tmp_path)) == [
        "flows.a (flows/a.py:1) -> flows.b (flows/b.py:2) -> flows.c (flows/c.py:3) -> flows.a"]
