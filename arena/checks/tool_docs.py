"""Every tool parameter is typed and documented: its schema is what a model reads to call it.

A parameter's type comes from its annotation and its description from the ``Args:`` section of the tool's Google
docstring; a parameter without either leaves a model guessing what to pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from arena.checks.results import CheckResult
from arena.core.toolkit import ToolSpec

_TYPED = ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const")
"""Schema keys that give a parameter a type."""


def tool_checks(tools: Iterable[ToolSpec]) -> list[CheckResult]:
    """One ``tool_parameters`` result per tool: each parameter has a type and a description."""
    results = []
    for spec in tools:
        problems = []
        for name, schema in spec.parameters.get("properties", {}).items():
            if not any(key in schema for key in _TYPED):
                problems.append(f"parameter {name!r} has no type: annotate it (e.g. `{name}: str`), not `Any`")
            if not str(schema.get("description") or "").strip():
                problems.append(f"parameter {name!r} is not described: add `{name}: what it is` to the Args: "
                                "section of the tool's docstring")
        results.append(CheckResult(task_id="", check=f"tool_parameters:{spec.name}", passed=not problems,
                                   detail=f"tool {spec.name}: " + "; ".join(problems) if problems else ""))
    return results
