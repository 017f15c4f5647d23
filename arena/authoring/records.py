"""Reading records, one way for tools and templates: a query's rows as dicts, a record by id or ``NotFound``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from arena.core.toolkit import NotFound, ToolContext


def select(source: ToolContext | sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query on a tool's world (or any world) and return its rows as dicts."""
    conn = source.conn if isinstance(source, ToolContext) else source
    cur = conn.execute(sql, tuple(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def fetch(source: ToolContext | sqlite3.Connection, table: str, record_id: str, entity: str | None = None
          ) -> dict[str, Any]:
    """The row of ``table`` whose id is ``record_id``.

    Args:
        source: A tool's context, or a world.
        table: The table.
        record_id: The id.
        entity: What the error calls the record (default: the table's name).

    Raises:
        NotFound: No such row, naming the record and the id (the agent sees it as a tool result).
    """
    found = select(source, f'SELECT * FROM "{table}" WHERE id = ?', (record_id,))
    if not found:
        raise NotFound(f"{entity or table} {record_id!r} not found")
    return found[0]
