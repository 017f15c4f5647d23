"""τ²-bench's ``db.json`` as a SQLite world, and back.

Each top-level collection of ``db.json`` (a mapping from id to record) is a table keyed by that id, one column per
field: scalars as they are, nested values (names, addresses, lists, payment methods) as canonical JSON text (keys
sorted), so two worlds holding the same data hold the same text and a state check can compare rows as written.
A field τ²-bench's models leave optional is a column that is ``NULL`` when the record lacks it, and the record read
back lacks it again. :func:`to_db` reads a world back into ``db.json``'s shape, which is how the fidelity bench
compares it with another implementation's database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["text", "int", "real", "json"]
"""How a column holds its field."""

_SQL = {"text": "TEXT", "int": "INTEGER", "real": "REAL", "json": "TEXT"}


def dumps(value: Any) -> str:
    """Canonical JSON text of a nested value (sorted keys): the same data is always the same text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class Column:
    """One field of a record.

    Attributes:
        name: The field's name in ``db.json`` and the column's.
        kind: ``text``, ``int``, ``real`` or ``json``.
        optional: The record may lack the field (``NULL`` then).
    """

    name: str
    kind: Kind = "text"
    optional: bool = False


@dataclass(frozen=True)
class Table:
    """A collection of ``db.json`` as a table.

    Attributes:
        name: The table (and collection) name.
        key: The field holding each record's id (the primary key).
        columns: The fields, in ``db.json``'s order.
    """

    name: str
    key: str
    columns: tuple[Column, ...]

    def create(self, conn: sqlite3.Connection) -> None:
        """Create the table."""
        cols = ", ".join(f'"{c.name}" {_SQL[c.kind]}' + (" PRIMARY KEY" if c.name == self.key else "")
                         for c in self.columns)
        conn.execute(f'CREATE TABLE "{self.name}" ({cols})')

    def insert(self, conn: sqlite3.Connection, records: Iterable[Mapping[str, Any]]) -> None:
        """Insert records, in order.

        Raises:
            ValueError: A record lacks a required field or holds one the table does not know (naming both).
        """
        names = [c.name for c in self.columns]
        marks = ", ".join("?" * len(names))
        rows = [self.row(record) for record in records]
        conn.executemany(f'INSERT INTO "{self.name}" ({", ".join(repr(n) for n in names)}) VALUES ({marks})', rows)

    def row(self, record: Mapping[str, Any]) -> tuple[Any, ...]:
        """One record as the table's row.

        Raises:
            ValueError: The record lacks a required field or holds one the table does not know.
        """
        unknown = sorted(set(record) - {c.name for c in self.columns})
        if unknown:
            raise ValueError(f"{self.name} record {record.get(self.key)!r} has fields {unknown} the world does not "
                             "know")
        out: list[Any] = []
        for column in self.columns:
            if column.name not in record or record[column.name] is None:
                if not column.optional:
                    raise ValueError(f"{self.name} record {record.get(self.key)!r} lacks {column.name!r}")
                out.append(None)
                continue
            value = record[column.name]
            out.append(dumps(value) if column.kind == "json" else value)
        return tuple(out)

    def record(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A row read back as the record (optional fields left out when ``NULL``)."""
        out: dict[str, Any] = {}
        for column in self.columns:
            value = row[column.name]
            if value is None and column.optional:
                continue
            out[column.name] = json.loads(value) if column.kind == "json" and value is not None else value
        return out

    def records(self, conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
        """Every record of the table by id, in rowid order."""
        cur = conn.execute(f'SELECT * FROM "{self.name}" ORDER BY rowid')
        names = [d[0] for d in cur.description]
        return {str(r[names.index(self.key)]): self.record(dict(zip(names, r, strict=True))) for r in cur}


def rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """A query's rows as dicts."""
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]
