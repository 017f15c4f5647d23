"""One search convention for every gym: a search index of short summaries, matched word by word.

A world holds one table ``search_index`` (:data:`SEARCH_INDEX`): a row per searchable record, with the record's id,
its entity type, the text a search matches (names, titles, emails: never ids, so a search for an id finds nothing
and the right move is the direct ``get_E``) and the summary a search returns (a JSON object whose first field is the
id; its other fields are cached and may be stale: the record is the truth). The world writes the rows with
:func:`write_index` (:func:`index_row` makes one); a ``search_E`` tool returns :func:`search`: the summaries of its
entity whose text holds every word of the query (case-insensitive), in the order the index was written, at most
:data:`SEARCH_LIMIT`; a tool that creates a searchable record adds its row with :func:`add_to_index`. A template
asks :func:`finds_only` whether a search for a name it writes in a prompt finds its record alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from arena.core.toolkit import InvalidArgument, ToolContext

SEARCH_LIMIT = 20
"""Most summaries a search returns."""

SEARCH_INDEX = """
CREATE TABLE search_index (id TEXT PRIMARY KEY, entity TEXT NOT NULL, text TEXT NOT NULL, summary TEXT NOT NULL);
CREATE INDEX ix_search_index_entity ON search_index(entity);
"""
"""The search index's schema: the record's id, its entity type, the matched text (case-folded), the summary."""

IndexRow = tuple[str, str, str, str]
"""One row of the search index: id, entity, matched text, summary (JSON)."""


def index_row(entity: str, summary: Mapping[str, Any], text: str) -> IndexRow:
    """The index row of one record: ``summary`` (its ``id`` first) is what a search returns, ``text`` what it matches.

    Raises:
        ValueError: The summary has no ``id``.
    """
    if "id" not in summary:
        raise ValueError(f"a {entity} summary needs its record's id: {dict(summary)!r}")
    shown = {"id": summary["id"], **{k: v for k, v in summary.items() if k != "id"}}
    return str(summary["id"]), entity, text.casefold(), json.dumps(shown)


def write_index(conn: sqlite3.Connection, rows: Iterable[IndexRow]) -> None:
    """Create the search index in a world and write ``rows`` in the order searches will return them."""
    conn.executescript(SEARCH_INDEX)
    conn.executemany("INSERT INTO search_index VALUES (?, ?, ?, ?)", list(rows))


def add_to_index(ctx: ToolContext, entity: str, summary: Mapping[str, Any], text: str) -> None:
    """Index a record a tool created, so later searches find it."""
    ctx.conn.execute("INSERT INTO search_index VALUES (?, ?, ?, ?)", index_row(entity, summary, text))


def query_words(query: str) -> list[str]:
    """The words of a search query, case-folded.

    Raises:
        InvalidArgument: The query holds no word.
    """
    words = query.casefold().split()
    if not words:
        raise InvalidArgument(f"query {query!r} holds no word: give part of a name, a title or an email")
    return words


def search(source: ToolContext | sqlite3.Connection, entity: str, query: str, *,
           where: Mapping[str, Any] | None = None, limit: int = SEARCH_LIMIT) -> list[dict[str, Any]]:
    """The summaries of ``entity`` whose text holds every word of ``query``, in index order, at most ``limit``.

    Args:
        source: A tool's context, or a world (a template asking what a search would find).
        entity: The entity type.
        query: The words to find.
        where: Summary fields that must equal these values (e.g. a project to search within).
        limit: Most summaries returned.

    Raises:
        InvalidArgument: The query holds no word.
    """
    words = query_words(query)
    conn = source.conn if isinstance(source, ToolContext) else source
    clauses = " AND ".join("instr(text, ?) > 0" for _ in words)
    rows = conn.execute(f"SELECT summary FROM search_index WHERE entity = ? AND {clauses} ORDER BY rowid",
                        (entity, *words))
    found: list[dict[str, Any]] = []
    for (raw,) in rows:
        summary: dict[str, Any] = json.loads(raw)
        if where and any(summary.get(k) != v for k, v in where.items()):
            continue
        found.append(summary)
        if len(found) >= limit:
            break
    return found


def finds_only(source: ToolContext | sqlite3.Connection, entity: str, query: str, record_id: str) -> bool:
    """Whether a search of ``entity`` for ``query`` finds the record ``record_id`` and no other.

    Args:
        source: A tool's context, or a world.
        entity: The entity type.
        query: The words a prompt names the record by.
        record_id: The record the prompt means.
    """
    return [hit["id"] for hit in search(source, entity, query, limit=2)] == [record_id]
