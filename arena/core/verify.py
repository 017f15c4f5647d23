"""Verifiers: judge an episode's final world, trace and reply against its task."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from typing import Any

from arena.core import patterns
from arena.core.results import AssertionResult, RowChange, TraceStep, Verdict
from arena.core.task import (
    CallPattern,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    Task,
    TraceAssertion,
    WriteScope,
)

CHANGE_LOG = "_gymloop_changes"
"""Table the runtime's triggers fill with every changed row (never visible to tools' callers)."""

SIDE_EFFECT_STEP = 0.25
"""Penalty per unintended changed row; the total is capped at 1."""

_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}


class ReadOnlyGuard:
    """Makes a connection refuse anything but reads (no writes, ATTACH, PRAGMA or DDL) inside ``with``.

    The authorizer is installed once, when the guard is made, and only checks a flag: swapping authorizers
    per episode would make SQLite re-read the whole schema on the next query.

    Args:
        conn: The connection to guard.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._active = False
        conn.set_authorizer(self._authorize)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None) -> int:
        if not self._active or action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def __enter__(self) -> ReadOnlyGuard:
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False


def normalize(value: Any) -> Any:
    """Normalise a SQL or JSON value for comparison (floats to 6 decimals, tuples to lists)."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else value
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def check_state(conn: sqlite3.Connection, assertion: StateAssertion) -> tuple[bool, str]:
    """Run a state assertion's query and compare with its expected rows.

    Call it inside a ``ReadOnlyGuard`` of ``conn``: the query must not be able to write.
    """
    try:
        rows = conn.execute(assertion.sql).fetchall()
    except sqlite3.Error as exc:
        return False, f"query failed: {exc}"
    got = normalize([list(r) for r in rows])
    want = normalize(assertion.expected)
    if got == want:
        return True, ""
    shown = repr(got)
    return False, f"expected {want!r}, got {shown[:300]}"


def _matches(step: TraceStep, pattern: CallPattern) -> bool:
    if not step.ok or step.tool != pattern.tool:
        return False
    return all(normalize(step.arguments.get(k)) == normalize(v) for k, v in pattern.arguments.items())


def check_trace(trace: list[TraceStep], assertion: TraceAssertion) -> tuple[bool, str]:
    """Check required calls, their order and forbidden calls over the trace."""
    first: list[int | None] = []
    for pattern in assertion.required:
        idx = next((s.index for s in trace if _matches(s, pattern)), None)
        if idx is None:
            return False, f"missing call {pattern.tool}({pattern.arguments})"
        first.append(idx)
    for a, b in assertion.order:
        ia, ib = first[a], first[b]
        if ia is not None and ib is not None and ia > ib:
            return False, f"{assertion.required[a].tool} must come before {assertion.required[b].tool}"
    for pattern in assertion.forbidden:
        hit = next((s for s in trace if _matches(s, pattern)), None)
        if hit is not None:
            return False, f"forbidden call {hit.tool} at step {hit.index}"
    return True, ""


def check_response(
    reply: str, assertion: ResponseAssertion, own_ids: frozenset[str] = frozenset()
) -> tuple[bool, str]:
    """Check that the reply states every required fact, leaks nothing forbidden and names no other record.

    Args:
        reply: The agent's final reply.
        assertion: The response assertion.
        own_ids: Ids the episode itself produced (see ``episode_ids``).
    """
    text = reply.casefold()
    for alternatives in assertion.must_include:
        if not any(alt.casefold() in text for alt in alternatives):
            return False, f"reply does not state {alternatives[0]!r}"
    for leak in assertion.must_not_include:
        if leak.casefold() in text:
            return False, f"reply leaks {leak!r}"
    for pattern in assertion.forbidden_patterns:
        match = patterns.search(pattern, reply)  # pack patterns run without backtracking
        if match:
            return False, f"reply leaks internal data {match.group(0)!r}"
    if assertion.max_chars is not None and len(reply) > assertion.max_chars:
        return False, f"reply of {len(reply)} characters exceeds the limit of {assertion.max_chars}"
    if assertion.id_pattern is not None:
        allowed = {i.upper() for i in assertion.allowed_ids} | own_ids
        foreign = sorted({m.group(0).upper() for m in patterns.finditer(assertion.id_pattern, reply)} - allowed)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            return False, f"reply leaks records the request is not about: {shown}"
    return True, ""


def episode_ids(trace: list[TraceStep], pattern: str) -> frozenset[str]:
    """Ids the episode itself produced: in the outputs of its successful writes and in the system's refusals.

    A reply may name them: the records the agent wrote, and the records a refusal gave as its reason.
    """
    found: set[str] = set()
    for step in trace:
        if step.ok and step.write:
            text = _flat_text(step.output)
        elif step.error is not None and step.error.kind in ("policy", "permission"):
            text = step.error.message
        else:
            continue
        found.update(m.group(0).upper() for m in patterns.finditer(pattern, text))
    return frozenset(found)


def _flat_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_flat_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_flat_text(v) for v in value)
    return str(value)


class ChangeDiff:
    """Computes the rows an episode changed, against the template world.

    Args:
        base: Gives a read-only connection holding the template world; called only when a row changed.
        keys: Primary-key column of each table (``None`` to use the rowid).
        columns: Each table's column names, in the table's order.
    """

    def __init__(self, base: Callable[[], sqlite3.Connection], keys: dict[str, str | None],
                 columns: dict[str, list[str]]) -> None:
        self._base = base
        self._keys = keys
        self._columns = columns

    def changes(self, conn: sqlite3.Connection) -> list[tuple[RowChange, dict[str, Any] | None]]:
        """Return each changed row with the row's current values (``None`` when deleted)."""
        out: list[tuple[RowChange, dict[str, Any] | None]] = []
        logged = conn.execute(f"SELECT DISTINCT tbl, rid FROM {CHANGE_LOG} ORDER BY tbl, rid").fetchall()
        for table, rid in logged:
            cols = self._columns[table]
            select = f'SELECT * FROM "{table}" WHERE rowid = ?'
            before = self._base().execute(select, (rid,)).fetchone()
            after = conn.execute(select, (rid,)).fetchone()
            key_col = self._keys[table]
            row = after if after is not None else before
            if row is None:
                continue
            key = str(row[cols.index(key_col)]) if key_col else str(rid)
            current = dict(zip(cols, after, strict=True)) if after is not None else None
            if before is None:
                out.append((RowChange(table=table, key=key, op="insert"), current))
            elif after is None:
                out.append((RowChange(table=table, key=key, op="delete"), None))
            else:
                changed = [c for c, x, y in zip(cols, before, after, strict=True) if x != y]
                if changed:
                    out.append((RowChange(table=table, key=key, op="update", columns=changed), current))
        return out


def _allowed(change: RowChange, scopes: list[WriteScope]) -> bool:
    for scope in scopes:
        if scope.table != change.table:
            continue
        if change.op == "insert":
            if scope.insert:
                return True
            continue
        if change.op == "delete" and not scope.delete:
            continue
        if scope.ids is not None and change.key not in scope.ids:
            continue
        if change.op == "update" and scope.columns is not None and not set(change.columns) <= set(scope.columns):
            continue
        return True
    return False


def judge(
    task: Task,
    conn: sqlite3.Connection,
    trace: list[TraceStep],
    reply: str,
    diff: ChangeDiff,
    guard: ReadOnlyGuard,
) -> Verdict:
    """Evaluate every assertion of ``task`` and return the verdict.

    Args:
        task: The task judged.
        conn: The episode's final world; only read, with ``guard`` active.
        trace: The episode's tool calls.
        reply: The agent's final reply.
        diff: Change tracker against the template world.
        guard: The connection's read-only guard.
    """
    with guard:
        return _judge(task, conn, trace, reply, diff)


def _judge(
    task: Task,
    conn: sqlite3.Connection,
    trace: list[TraceStep],
    reply: str,
    diff: ChangeDiff,
) -> Verdict:
    results: list[AssertionResult] = []
    scopes = [s for a in task.assertions if isinstance(a, SideEffectAssertion) for s in a.allowed]
    changes = [c for c, _ in diff.changes(conn)]
    for change in changes:
        change.allowed = _allowed(change, scopes)
    unintended = [c for c in changes if not c.allowed]
    for i, assertion in enumerate(task.assertions):
        if isinstance(assertion, StateAssertion):
            ok, detail = check_state(conn, assertion)
        elif isinstance(assertion, TraceAssertion):
            ok, detail = check_trace(trace, assertion)
        elif isinstance(assertion, ResponseAssertion):
            own = episode_ids(trace, assertion.id_pattern) if assertion.id_pattern is not None else frozenset()
            ok, detail = check_response(reply, assertion, own)
        else:
            ok = not unintended
            detail = "; ".join(f"{c.op} {c.table}[{c.key}] {','.join(c.columns)}".strip() for c in unintended[:10])
        results.append(
            AssertionResult(index=i, kind=assertion.kind, description=assertion.description, passed=ok, detail=detail)
        )
    held = sum(r.passed for r in results)
    return Verdict(
        passed=held == len(results),
        score=held / len(results),
        side_effect_penalty=min(1.0, SIDE_EFFECT_STEP * len(unintended)),
        results=results,
        changes=changes,
    )
