"""BFCL's call strings: ``cd(folder='document')`` to a tool call and back.

BFCL writes its ground truth (and decodes a model's calls) as Python call expressions with literal arguments,
positional or by keyword. :func:`parse_call` reads one with :mod:`ast` (literals only, nothing is evaluated) and
names positional arguments after the tool's parameters; :func:`render_call` writes a call back the way BFCL's
function-calling handlers do (``name(k=repr(v),...)``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any


class CallSyntaxError(ValueError):
    """A call string is not a call of a named function with literal arguments; the message quotes it."""


def parse_call(text: str, parameters: Sequence[str] | None = None) -> tuple[str, dict[str, Any]]:
    """Read a BFCL call string into the tool name and its arguments by name.

    Args:
        text: The call, e.g. ``mv(source='a.txt', destination='b')`` or ``sort('a.txt')``.
        parameters: The tool's parameter names in order, to name positional arguments (``None``: positional
            arguments are refused).

    Raises:
        CallSyntaxError: Not a single call of a plain name, arguments that are not literals, or more positional
            arguments than parameters.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise CallSyntaxError(f"not a call: {text[:200]!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallSyntaxError(f"not a call of a named function: {text[:200]!r}")
    name = node.func.id
    arguments: dict[str, Any] = {}
    names = list(parameters or [])
    if len(node.args) > len(names):
        raise CallSyntaxError(f"{text[:200]!r}: {len(node.args)} positional arguments, {name} takes "
                              f"{len(names)} by position")
    try:
        for param, arg in zip(names, node.args, strict=False):
            arguments[param] = ast.literal_eval(arg)
        for kw in node.keywords:
            if kw.arg is None:
                raise CallSyntaxError(f"{text[:200]!r}: ** arguments are not literals")
            arguments[kw.arg] = ast.literal_eval(kw.value)
    except ValueError as exc:
        raise CallSyntaxError(f"{text[:200]!r}: an argument is not a literal ({exc})") from None
    return name, arguments


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """Write a call the way BFCL's function-calling handlers decode one: ``name(k=repr(v),...)``."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"
