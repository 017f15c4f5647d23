"""Building blocks of procurement task templates: drafts, world queries and assertion helpers."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arena.core.task import (
    CallPattern,
    EntityRef,
    GoldStep,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    TraceAssertion,
    WriteScope,
)
from arena.gyms.procurement._rules import ROLE_PERMISSIONS, fetch

RISK_PATTERN = r"\bRR-[1-4]\b"
"""Internal vendor risk ratings (never to be disclosed)."""

STATUS_WORDS: dict[str, list[str]] = {
    "pending_approval": ["pending approval", "pending_approval", "awaiting approval"],
    "on_hold": ["on hold", "on_hold"],
}


@dataclass
class Draft:
    """A task before faults and splits are applied.

    Attributes:
        prompt: The request.
        persona: Who the agent acts as.
        goal: Intent goal name.
        refs: Intent entity references.
        calls: Intent goal calls (``(tool, arguments)``).
        report: Intent report paths.
        steps: Gold program steps.
        reply: Gold reply.
        assertions: The task's assertions.
        tags: Tags the instance exercises.
        refetch: For each fault-capable tool, the get step that re-reads its record after a conflict.
        when: Conditions of intent calls, by call index (``"$name.field"`` or ``"!$name.field"``).
    """

    prompt: str
    persona: Persona
    goal: str
    refs: list[EntityRef]
    calls: list[tuple[str, dict[str, Any]]]
    report: list[str]
    steps: list[GoldStep]
    reply: str
    assertions: list[Any]
    tags: list[str]
    refetch: dict[str, GoldStep] = field(default_factory=dict)
    when: dict[int, str] = field(default_factory=dict)


class WorldView:
    """Read access to a generated world for task templates."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts."""
        return fetch(self.conn, sql, params)

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any]:
        """Run a query that must return a row.

        Raises:
            LookupError: The query returned nothing (a generator bug), naming the query.
        """
        found = self.rows(sql, params)
        if not found:
            raise LookupError(f"procurement world has no row for {sql!r} with {params!r}")
        return found[0]

    def persona(self, rng: random.Random, role: str, employee_id: str | None = None) -> Persona:
        """A persona for an employee of ``role`` (the given one, or one picked with ``rng``)."""
        if employee_id is None:
            staff = self.rows("SELECT id, name FROM employees WHERE role = ? ORDER BY id", (role,))
            emp = rng.choice(staff)
        else:
            emp = self.row("SELECT id, name FROM employees WHERE id = ?", (employee_id,))
        return Persona(name=str(emp["name"]), role=role, permissions=list(ROLE_PERMISSIONS[role]))


Builder = Callable[[WorldView, random.Random, int], list[Draft]]


@dataclass(frozen=True)
class Template:
    """A task template: picks suitable entities and builds drafts.

    Attributes:
        name: Template name, the stem of its task ids.
        category: Task category.
        tags: Every tag its tasks may carry (focus filtering reads it).
        build: ``build(world, rng, n)`` returns up to ``n`` drafts.
        fault_tools: Tools of the gold program a fault may hit.
        depth: Length of the chain of policy-required steps its tasks walk before the goal (0: none).
    """

    name: str
    category: str
    tags: tuple[str, ...]
    build: Builder
    fault_tools: tuple[str, ...] = ()
    depth: int = 0


def pick(rng: random.Random, pool: list[dict[str, Any]], n: int,
         prefer: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """Sample up to ``n`` rows, taking rows that satisfy ``prefer`` first."""
    if prefer is None:
        return rng.sample(pool, min(n, len(pool)))
    first = [r for r in pool if prefer(r)]
    rest = [r for r in pool if not prefer(r)]
    chosen = rng.sample(first, min(n, len(first)))
    return chosen + rng.sample(rest, min(n - len(chosen), len(rest)))


def ref(name: str, entity: str, mention: str, *, text: bool = False, hint: dict[str, str] | None = None) -> EntityRef:
    """An intent entity reference (an id unless ``text``)."""
    return EntityRef(name=name, entity=entity, mention=mention, mention_kind="text" if text else "id",
                     hint=hint or {})


def step(tool: str, **arguments: Any) -> GoldStep:
    """A gold step."""
    return GoldStep(tool=tool, arguments=arguments)


def state(description: str, sql: str, expected: list[list[Any]]) -> StateAssertion:
    """A state assertion."""
    return StateAssertion(description=description, sql=sql, expected=expected)


def calls(description: str, required: list[tuple[str, dict[str, Any]]], order: list[tuple[int, int]] | None = None,
          forbidden: list[tuple[str, dict[str, Any]]] | None = None) -> TraceAssertion:
    """A trace assertion from ``(tool, arguments)`` patterns."""
    return TraceAssertion(
        description=description,
        required=[CallPattern(tool=t, arguments=a) for t, a in required],
        order=order or [],
        forbidden=[CallPattern(tool=t, arguments=a) for t, a in forbidden or []],
    )


def writes(*scopes: WriteScope) -> SideEffectAssertion:
    """The allowed write-set (none when no scope is given)."""
    if not scopes:
        return SideEffectAssertion(description="changes nothing", allowed=[])
    return SideEffectAssertion(allowed=list(scopes))


def scope(table: str, ids: list[str] | None = None, columns: list[str] | None = None,
          insert: bool = False) -> WriteScope:
    """One allowed write scope."""
    return WriteScope(table=table, ids=ids, columns=columns, insert=insert)


def says(description: str, *facts: list[str], leaks: list[str] | None = None,
         patterns: list[str] | None = None) -> ResponseAssertion:
    """A response assertion: each non-empty fact is a list of accepted phrasings."""
    return ResponseAssertion(description=description, must_include=[list(f) for f in facts if f],
                             must_not_include=leaks or [], forbidden_patterns=patterns or [])


def status_words(status: str) -> list[str]:
    """Phrasings a reply may use for a record status."""
    return STATUS_WORDS.get(status, [status])
