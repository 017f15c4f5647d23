"""Records, one way for every gym: generated rows written, a query's rows read as dicts, a record by id.

:func:`insert_rows` writes a generated world's rows (a generator may gather them in :class:`WorldRows`),
:func:`select` reads a query's rows as dicts and :func:`fetch` a record by its id, or raises ``NotFound`` naming it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arena.core.toolkit import NotFound, ToolContext, query_rows


def select(source: ToolContext | sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query on a tool's world (or any world) and return its rows as dicts."""
    return query_rows(source.conn if isinstance(source, ToolContext) else source, sql, params)


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


class WorldRows:
    """A world generator's rows, gathered table by table for :func:`insert_rows`, and its next record numbers."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[Any, ...]]] = {}
        self.counters: dict[str, int] = {}

    def add(self, table: str, *row: Any) -> None:
        """Add a row to ``table``, its values in the table's column order."""
        self.rows.setdefault(table, []).append(row)

    def next_id(self, prefix: str, start: int, width: int = 0) -> str:
        """The next id of ``prefix``: ``PREFIX-<n>`` counting from ``start``, ``n`` zero-padded to ``width`` digits."""
        n = self.counters.get(prefix, start)
        self.counters[prefix] = n + 1
        return f"{prefix}-{n:0{width}d}"
