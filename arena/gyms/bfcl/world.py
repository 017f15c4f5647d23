"""The BFCL world: every task's starting world in one SQLite database, keyed by task.

Each BFCL entry starts from its own configuration of its classes, so the world holds one copy per task (the rows of
task ``base-007`` carry ``task = 'base-007'``) and a task's tools only touch its own rows. The classes' random
generators are part of the world (``rng_states``). :func:`class_state` reads a class's state back as BFCL's
instance would hold it, and :func:`state_digest` digests it the way BFCL's state check compares (dictionaries
without order, ``1 == 1.0 == True``).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable
from typing import Any

from arena.core.toolkit import Tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.data import BfclEntry, long_context_data
from arena.gyms.bfcl.file_system import FILE_SYSTEM
from arena.gyms.bfcl.mathematics import MATH
from arena.gyms.bfcl.messaging import MESSAGING
from arena.gyms.bfcl.posting import POSTING
from arena.gyms.bfcl.ticketing import TICKETING
from arena.gyms.bfcl.trading import TRADING
from arena.gyms.bfcl.travel import TRAVEL
from arena.gyms.bfcl.vehicle import VEHICLE

CLASSES: dict[str, FunctionClass] = {c.name: c for c in (FILE_SYSTEM, MATH, MESSAGING, POSTING, TICKETING, TRADING,
                                                          TRAVEL, VEHICLE)}
"""BFCL's multi-turn function classes by BFCL's name."""

TOOLS: dict[str, Tool] = dict(sorted((name, t) for c in CLASSES.values() for name, t in c.tools.items()))
"""Every tool of every class, by name (the classes share no function name)."""

CLASS_OF: dict[str, str] = {name: c.name for c in CLASSES.values() for name in c.tools}
"""The class each tool belongs to."""

SCHEMA = """
CREATE TABLE scenarios (id TEXT PRIMARY KEY, bfcl_id TEXT NOT NULL, category TEXT NOT NULL, classes TEXT NOT NULL);
CREATE TABLE rng_states (id TEXT PRIMARY KEY, task TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL);
""" + "".join(c.schema for c in CLASSES.values())


def build_world(entries: Iterable[tuple[str, BfclEntry]]) -> sqlite3.Connection:
    """A world holding the starting world of every ``(task id, entry)``.

    Raises:
        ValueError: An entry names a class the gym does not have (names the entry and the class).
    """
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    for task, entry in entries:
        unknown = [c for c in entry.involved_classes if c not in CLASSES]
        if unknown:
            raise ValueError(f"BFCL entry {entry.id}: unknown class(es) {unknown}")
        extra = long_context_data() if entry.category == "long_context" else None
        conn.execute("INSERT INTO scenarios VALUES (?, ?, ?, ?)",
                     (task, entry.id, entry.category, json.dumps(entry.involved_classes)))
        for name in entry.involved_classes:
            CLASSES[name].load(conn, task, dict(entry.initial_config.get(name, {})), extra)
    conn.commit()
    return conn


def class_state(query: Query, task: str, name: str) -> dict[str, Any]:
    """A class's public attributes in a task, as BFCL's instance would hold them (``query``: ``Gym.query``)."""
    return CLASSES[name].state(query, task)


def canonical(value: Any) -> str:
    """``value`` written so that two values are written alike exactly when they are equal as BFCL compares them.

    Dictionaries and sets lose their order, numbers their type (``1 == 1.0 == True``), strings stay apart from
    numbers.
    """
    if isinstance(value, bool | int):
        return f"n{int(value)}"
    if isinstance(value, float):
        return f"n{int(value)}" if math.isfinite(value) and value.is_integer() else f"n{value!r}"
    if isinstance(value, str):
        return "s" + json.dumps(value)
    if value is None:
        return "z"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, set | frozenset):
        return "{" + ",".join(sorted(canonical(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "<" + ",".join(sorted(f"{canonical(k)}:{canonical(v)}" for k, v in value.items())) + ">"
    return "o" + json.dumps(repr(value))


def state_digest(value: Any) -> str:
    """A short digest of ``canonical(value)``."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:12]
