"""Imports inside functions in flows/ each say why they are not at the top of the file.

An import belongs at the top of its file; one left inside a function (a heavy library the command line must not
load at start-up, an optional extra) carries a comment saying why: on its own line, or on the line above the run of
imports it opens.
"""

from __future__ import annotations

import ast
from pathlib import Path

FLOWS = Path(__file__).resolve().parents[2] / "flows"


def _says_why(line: str) -> bool:
    """Whether a source line holds a comment other than a checker's directive."""
    comment = line.partition("#")[2].strip()
    return bool(comment) and not comment.startswith(("type:", "noqa"))


def unexplained_imports(source: str) -> list[int]:
    """Lines of the imports inside functions of ``source`` with no comment saying why.

    A comment line just above an import explains it and the imports that follow it without other statements
    between; any other import needs its own comment on one of its lines.
    """
    lines = source.splitlines()
    out: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in _bodies(node):
            run: list[ast.stmt] = []
            for stmt in [*body, None]:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                explained = False
                for s in run:
                    explained = explained or lines[s.lineno - 2].strip().startswith("#")
                    if not explained and not any(_says_why(line) for line in lines[s.lineno - 1:s.end_lineno]):
                        out.append(s.lineno)
                run = []
    return sorted(out)


def _bodies(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list[ast.stmt]]:
    """Every statement list inside a function (its body, and those of its if/try/with/for blocks), not nested defs."""
    bodies: list[list[ast.stmt]] = []
    todo: list[ast.AST] = [function]
    while todo:
        node = todo.pop()
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                bodies.append(block)
            for child in block or []:
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    todo.append(child)
    return bodies


def test_every_import_inside_a_function_in_flows_says_why() -> None:
    missing = [f"flows/{path.name}:{line}" for path in sorted(FLOWS.glob("*.py"))
               for line in unexplained_imports(path.read_text(encoding="utf-8"))]
    assert missing == [], "imports inside functions without a comment saying why (move them to the top, or say " \
                          "why they must stay):\n" + "\n".join(missing)


def test_an_import_is_explained_by_its_own_comment_or_by_one_above_its_run() -> None:
    source = (
        "def f():\n"
        "    import json  # the reason is on the line itself\n"
        "    # mlflow is heavy: loaded when a run is tracked\n"
        "    import mlflow\n"
        "    from mlflow import tracking\n"
        "    x = 1\n"
        "    import csv\n"
        "    if x:\n"
        "        from pathlib import Path  # type: ignore[misc]\n"
        "    def g():\n"
        "        import os\n"
    )
    assert unexplained_imports(source) == [7, 9, 11]
