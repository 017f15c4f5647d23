"""A pack's tool specs as typed Python methods with Google docstrings.

Trainers that discover tools by introspection (TRL's environments, transformers' ``get_json_schema``) read a
method's signature and docstring. This module rebuilds both from the JSON schema a ``ToolSpec`` carries, so the
model is offered exactly the schema the gym validates against: names, types, required and optional arguments and
their descriptions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from arena.core.toolkit import ToolSpec

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                               "object": dict[str, Any]}


class ToolSchemaError(ValueError):
    """A tool spec's schema cannot be expressed as a typed method (the message names the tool and argument)."""


def annotation(schema: dict[str, Any], where: str) -> Any:
    """The Python type a JSON-schema fragment describes (``str | None`` for a nullable string, ``list[str]``...).

    Raises:
        ToolSchemaError: The fragment has no type gymloop can express.
    """
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if len(options) != 1:
            raise ToolSchemaError(f"{where}: a union of {len(options)} non-null types is not supported")
        inner = annotation(options[0], where)
        return inner | None if len(options) < len(schema["anyOf"]) else inner
    kind = schema.get("type")
    if kind == "array":
        return list[annotation(schema.get("items", {"type": "string"}), where)]  # type: ignore[misc]
    if kind not in _JSON_TYPES:
        raise ToolSchemaError(f"{where}: JSON type {kind!r} has no Python counterpart")
    return _JSON_TYPES[kind]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def docstring(spec: ToolSpec) -> str:
    """A Google docstring for the tool: its description, each argument's description and what comes back."""
    properties: dict[str, Any] = spec.parameters.get("properties", {})
    lines = [_one_line(spec.description) or spec.name, ""]
    if properties:
        lines.append("Args:")
        for name, prop in properties.items():
            lines.append(f"    {name}: {_one_line(str(prop.get('description') or name))}")
        lines.append("")
    lines += ["Returns:", "    The tool's JSON result, or a JSON error naming what was wrong."]
    return "\n".join(lines)


def signature(spec: ToolSpec) -> inspect.Signature:
    """The method's signature: ``self`` then keyword-only arguments, required ones without a default.

    Raises:
        ToolSchemaError: An argument's type cannot be expressed.
    """
    properties: dict[str, Any] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, prop in properties.items():
        if not name.isidentifier():
            raise ToolSchemaError(f"tool {spec.name}: argument {name!r} is not a Python identifier")
        default = inspect.Parameter.empty if name in required else prop.get("default")
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation(prop, f"tool {spec.name}, argument {name!r}")))
    return inspect.Signature(params, return_annotation=str)


def tool_method(spec: ToolSpec, call: Callable[[Any, str, dict[str, Any]], str]) -> Callable[..., str]:
    """A method named after the tool whose keyword arguments go to ``call(self, tool_name, arguments)``.

    Arguments left at their default are not sent, so the gym applies its own defaults.

    Raises:
        ToolSchemaError: The spec's schema cannot be expressed (see ``signature``).
    """
    sig = signature(spec)
    name = spec.name

    def method(self: Any, **arguments: Any) -> str:
        return call(self, name, arguments)

    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = docstring(spec)
    method.__signature__ = sig  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: p.annotation for p in list(sig.parameters.values())[1:]} | {"return": str}
    return method
