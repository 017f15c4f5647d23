"""Records, one way for every gym: generated rows written, a query's rows read as dicts, a record by id.

:func:`insert_rows` writes a generated world's rows, :func:`select` reads a query's rows as dicts and :func:`fetch` a
record by its id, or raises ``NotFound`` naming it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
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


def insert_rows(conn: sqlite3.Connection, tables: Mapping[str, Iterable[Sequence[Any]]]) -> None:
    """Write a generated world's rows, table by table in the mapping's order, each row in its table's column order."""
    for table, rows in tables.items():
        batch = [tuple(row) for row in rows]
        if batch:
            marks = ", ".join("?" * len(batch[0]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', batch)
