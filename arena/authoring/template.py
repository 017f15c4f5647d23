"""Task templates: what a template reads (:class:`WorldView`), what it returns (:class:`Draft`) and itself.

A template is a function ``build(world, rng, n) -> list[Draft]`` that picks up to ``n`` suitable sets of records
from the generated world with its own seeded ``rng`` and declares, for each, what the prompt says, the records it
refers to (the intent), what the reply must state and the checks. The kit turns drafts into tasks: ids, splits,
personas, faults with the gold program's recovery, and the gold program itself when the draft leaves it to the
expert policy.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from arena.authoring.knobs import FaultKindName, GymKnobs
from arena.core.task import Assertion, GoldStep, Intent, Persona
from arena.core.toolkit import query_rows

K = TypeVar("K", bound=GymKnobs)
T = TypeVar("T")


@dataclass
class WorldView(Generic[K]):
    """What a template may read: the generated world (read only), the parsed knobs and a cache.

    Attributes:
        conn: The generated world.
        knobs: The gym's parsed knobs.
        seed: The generator seed (templates draw from the ``rng`` they are given; the seed is for a template
            that must reproduce another generator's draws).
        write_tools: Names of the gym's write tools.
        cache: Values computed once per build and shared by the templates (see ``memo``).
    """

    conn: sqlite3.Connection
    knobs: K
    seed: int = 0
    write_tools: frozenset[str] = frozenset()
    cache: dict[str, Any] = field(default_factory=dict)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts."""
        return query_rows(self.conn, sql, params)

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any]:
        """Run a query that must return a row.

        Raises:
            LookupError: The query returned nothing (a template bug), naming the query.
        """
        found = self.rows(sql, params)
        if not found:
            raise LookupError(f"template query returned no row: {sql} {list(params)}")
        return found[0]

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """The value cached under ``key``, computed by ``make`` the first time a template asks."""
        if key not in self.cache:
            self.cache[key] = make()
        value: T = self.cache[key]
        return value


@dataclass(frozen=True)
class Fault:
    """A fault a draft asks for: the first call of ``tool`` fails with ``kind``; the kit adds the recovery.

    Attributes:
        kind: ``timeout``, ``rate_limit`` or ``data_conflict``.
        tool: The tool whose first gold call fails.
    """

    kind: FaultKindName
    tool: str


@dataclass
class Draft:
    """One task as a template declares it, before the kit gives it an id, a split and its faults.

    Attributes:
        prompt: The request as the agent receives it.
        intent: The prompt's structured reading: the records it refers to, the goal's calls, what to report.
        reply: A known-good reply (the reply rules are derived from it).
        assertions: The checks (3-12): state, trace, side effects, response.
        steps: The gold program without fault recovery; ``None`` lets the kit derive it by playing the careful
            reference policy on the intent.
        persona: Who the agent acts as (``None``: the gym's default persona).
        faults: Faults of this task; the kit inserts the gold program's recovery after each.
        tags: Tags this task exercises beyond its template's.
        depth: The chain of policy-required steps this task walks, when it differs from its template's (a template
            whose tasks walk chains of several lengths declares the longest).
    """

    prompt: str
    intent: Intent
    reply: str
    assertions: list[Assertion]
    steps: list[GoldStep] | None = None
    persona: Persona | None = None
    faults: list[Fault] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    depth: int | None = None


@dataclass(frozen=True)
class Template(Generic[K]):
    """A task template.

    Attributes:
        name: Template name, the stem of its task ids (``<name>-01``).
        category: Task category (``information_retrieval``, ``policy_reasoning``, ``multi_step_workflow``,
            ``customer_communication``).
        tags: Tags every task of the template carries.
        build: ``build(world, rng, n) -> drafts``: up to ``n`` drafts (fewer when the world has fewer fits).
        depth: Length of the chain of policy-required steps its tasks walk before the goal (0: none; the longest,
            when a draft declares its own); the ``prerequisite_depth`` knob leaves out tasks with a deeper chain.
    """

    name: str
    category: str
    tags: tuple[str, ...]
    build: Callable[[WorldView[K], random.Random, int], list[Draft]]
    depth: int = 0
