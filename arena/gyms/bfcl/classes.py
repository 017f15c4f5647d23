"""A BFCL function class as the gym holds it: its tables, how a configuration loads, its state, its tools."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.core.toolkit import Tool

Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
"""A read-only query over the world: ``query(sql, params) -> rows`` (``Gym.query``, or a connection's)."""

Loader = Callable[[sqlite3.Connection, str, dict[str, Any], dict[str, Any] | None], None]
"""``load(conn, task, config, long_context)``: insert a task's records from BFCL's initial configuration of the
class (``long_context``: BFCL's long-context constants when the task is of that category, else ``None``)."""

StateReader = Callable[[Query, str], dict[str, Any]]
"""``state(query, task)``: the class's public attributes as BFCL's instance would hold them (what BFCL's state
check compares)."""


@dataclass(frozen=True)
class FunctionClass:
    """One of BFCL's multi-turn function classes.

    Attributes:
        name: BFCL's class name (``GorillaFileSystem``).
        label: What it is, in a few words (``file system``).
        schema: The SQL creating its tables (each has ``id TEXT PRIMARY KEY`` and a ``task`` column).
        load: Loads a task's configuration (see :data:`Loader`).
        state: Reads a task's state (see :data:`StateReader`).
        tools: Its functions as gym tools, by name.
    """

    name: str
    label: str
    schema: str
    load: Loader
    state: StateReader
    tools: dict[str, Tool]
