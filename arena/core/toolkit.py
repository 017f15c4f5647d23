"""Tools as typed functions: schemas from signatures, metadata from a decorator.

A domain's tool is a plain function ``fn(ctx: ToolContext, **arguments)`` whose
typed parameters become its JSON schema and whose Google docstring gives the
descriptions. Tools raise ``ToolError`` subclasses for errors the agent should
see; anything else is a bug in the environment and ends the episode.
"""

from __future__ import annotations

import copy
import inspect
import random
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from arena.core.results import ErrorKind
from arena.core.task import Persona

ToolMode = Literal["read", "write"]
Operation = Literal["get", "search", "list", "create", "update", "delete", "action"]


class ToolSpec(BaseModel):
    """A tool as the agent and the pack see it.

    Attributes:
        name: Tool name.
        description: What the tool does.
        parameters: JSON schema of the arguments object.
        mode: ``read`` or ``write``.
        irreversible: Whether the effect cannot be undone (refunds, payments).
        permission: Permission the persona must hold, if any.
        entity: Entity type the tool is about, if any.
        operation: What it does to that entity (``get``, ``search``, ...).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    parameters: dict[str, Any]
    mode: ToolMode
    irreversible: bool = False
    permission: str | None = None
    entity: str | None = None
    operation: Operation = "action"

    def openai_schema(self) -> dict[str, Any]:
        """Return the OpenAI function-calling form of this tool, as a copy the caller may change.

        Model clients rewrite tool schemas in place for their provider (litellm drops
        ``additionalProperties`` for some); handing them the spec's own dict would change the pack's
        tools, and with them the content id of every pack built afterwards.
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
            },
        }


class ToolError(Exception):
    """An error the agent should see as a tool result.

    Args:
        message: Explanation naming the bad value.
        retryable: Whether repeating the call may succeed.
    """

    kind: ErrorKind = "validation"

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class InvalidArgument(ToolError):
    """An argument is well typed but not acceptable (format, range)."""

    kind: ErrorKind = "validation"


class NotFound(ToolError):
    """The referenced record does not exist."""

    kind: ErrorKind = "not_found"


class PolicyViolation(ToolError):
    """The system's business rules refuse the action."""

    kind: ErrorKind = "policy"


class Conflict(ToolError):
    """The record changed since the agent read it."""

    kind: ErrorKind = "conflict"


def query_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query on a world and return its rows as dicts, keyed by the query's column names."""
    cur = conn.execute(sql, tuple(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


@dataclass
class ToolContext:
    """What a tool implementation may use during one episode.

    Attributes:
        conn: The episode's world (SQLite, in memory).
        now: The episode clock; advances one second per call.
        rng: Randomness derived from (pack id, task id, seed).
        persona: Who the agent acts as.
        id_counter: Counter behind ``new_id``.
        task_id: The episode's task, for a world that keeps each task's own records apart (a benchmark whose
            tasks each start from their own world holds them all in one world, keyed by task).
    """

    conn: sqlite3.Connection
    now: datetime
    rng: random.Random
    persona: Persona
    id_counter: int = 0
    task_id: str = ""

    def new_id(self, prefix: str) -> str:
        """Return the episode's next generated id: ``RF-N00001``, ``RF-N00002``, ...

        Generated ids depend only on the order of creation, so a gold program
        can name the records it creates.
        """
        self.id_counter += 1
        return f"{prefix}-N{self.id_counter:05d}"

    def tick(self) -> None:
        """Advance the episode clock by one second."""
        self.now = self.now + timedelta(seconds=1)

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any] | None:
        """Run a query and return its first row as a dict, or ``None``."""
        cur = self.conn.execute(sql, params)
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Run a query and return every row as a dict."""
        return query_rows(self.conn, sql, params)

    def today(self) -> str:
        """The episode's date as ``YYYY-MM-DD``."""
        return self.now.date().isoformat()


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google docstring into its summary and its ``Args:`` descriptions."""
    lines = inspect.cleandoc(doc).splitlines()
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:"):
            in_args = True
            continue
        if in_args and stripped.endswith(":") and not line.startswith(" "):
            in_args = False
        if in_args:
            m = _ARG_LINE.match(line)
            if m:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and stripped:
                args[current] += " " + stripped
            continue
        if not args and not in_args:
            summary_lines.append(stripped)
    summary = " ".join(s for s in summary_lines if s).strip()
    return summary, args


class _StrictArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Tool:
    """A registered tool: its implementation, argument model and spec."""

    fn: Callable[..., Any]
    args_model: type[BaseModel]
    spec: ToolSpec

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name


def tool(
    *,
    mode: ToolMode,
    permission: str | None = None,
    irreversible: bool = False,
    entity: str | None = None,
    operation: Operation = "action",
) -> Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a ``Tool``.

    Args:
        mode: ``read`` or ``write``.
        permission: Permission the persona must hold to call it.
        irreversible: Whether its effect cannot be undone.
        entity: Entity type it concerns.
        operation: What it does to that entity.

    Returns:
        A decorator producing the ``Tool``.

    Raises:
        TypeError: A parameter has no type annotation, naming the tool and the parameter.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        hints = get_type_hints(fn, include_extras=True)
        sig = inspect.signature(fn)
        summary, arg_docs = _parse_docstring(fn.__doc__ or fn.__name__)
        fields: dict[str, Any] = {}
        for pname, param in list(sig.parameters.items())[1:]:
            if pname not in hints:
                raise TypeError(f"tool {fn.__name__}: parameter {pname!r} has no type annotation (write e.g. "
                                f"`{pname}: str`): a tool's parameters are typed, their types are its schema")
            annotation = hints[pname]
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
        model = create_model(f"{fn.__name__}_args", __base__=_StrictArgs, **fields)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        spec = ToolSpec(
            name=fn.__name__,
            description=summary,
            parameters=schema,
            mode=mode,
            irreversible=irreversible,
            permission=permission,
            entity=entity,
            operation=operation,
        )
        return Tool(fn=fn, args_model=model, spec=spec)

    return wrap


def collect_tools(module: object) -> dict[str, Tool]:
    """Return every ``Tool`` defined at the top level of a module, by name."""
    found = {t.name: t for t in vars(module).values() if isinstance(t, Tool)}
    return dict(sorted(found.items()))


def iter_specs(tools: dict[str, Tool]) -> Iterator[ToolSpec]:
    """Yield the specs of ``tools`` in name order."""
    for name in sorted(tools):
        yield tools[name].spec
