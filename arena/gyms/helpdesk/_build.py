"""Building blocks of the helpdesk task templates: personas, drafts, assertions, faults, splits."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arena.core.domain import FaultSpec
from arena.core.task import (
    Assertion,
    CallPattern,
    EntityRef,
    GoldProgram,
    GoldStep,
    Intent,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    Split,
    StateAssertion,
    Task,
    TraceAssertion,
    WriteScope,
)
from arena.gyms.helpdesk._rules import search_summaries

Row = TypeVar("Row")

AGENT = Persona(name="Sam Rivera", role="agent", permissions=["credit", "orders", "refunds", "tickets"])
"""Front-line support agent: every write permission except approvals."""

MANAGER = Persona(name="Dana Okafor", role="manager",
                  permissions=["approvals", "credit", "orders", "refunds", "tickets"])
"""Support manager: may also approve refunds above the approval limit."""

TOKEN_PATTERN = r"tok_[0-9a-f]{16}"
"""Payment tokens: never shown to customers."""

INTERNAL_PATTERNS = [TOKEN_PATTERN, r"(?i)risk[ _]score"]
"""Internal data that no reply may contain."""


@dataclass
class WorldView:
    """What a template may read: the generated world and the rules' knobs.

    Attributes:
        conn: The generated world (read only by templates).
        approval_limit: Refund amount above which approval is required.
        cache: Picker results shared by the templates of one build.
    """

    conn: sqlite3.Connection
    approval_limit: float
    cache: dict[str, Any] = field(default_factory=dict)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts."""
        cur = self.conn.execute(sql, tuple(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any]:
        """Run a query that must return a row.

        Raises:
            LookupError: The query returned nothing (a template bug), naming the query.
        """
        found = self.rows(sql, params)
        if not found:
            raise LookupError(f"template query returned no row: {sql} {list(params)}")
        return found[0]


def pick_where(rng: random.Random, rows: Sequence[Row], n: int, ok: Callable[[Row], bool]) -> list[Row]:
    """Up to ``n`` of ``rows`` in a random order, keeping only those ``ok`` accepts."""
    out: list[Row] = []
    for row in rng.sample(list(rows), len(rows)):
        if len(out) >= n:
            break
        if ok(row):
            out.append(row)
    return out


def singled_out(w: WorldView, entity: str, query: str, target: str, hint: dict[str, str]) -> bool:
    """Whether searching ``query`` finds ``target`` and ``hint`` tells it apart from every other hit.

    A hit matches the hint when each hinted field equals the hint's value (case-insensitive);
    without a hint, the target must be the only hit.
    """
    hits = search_summaries(w.conn, entity, query)

    def matches(hit: dict[str, object]) -> bool:
        return all(str(hit.get(k, "")).casefold() == v.casefold() for k, v in hint.items())

    if not any(h.get("id") == target for h in hits):
        return False
    if not hint:
        return len(hits) == 1
    return [h.get("id") for h in hits if matches(h)] == [target]


@dataclass
class Draft:
    """A task before its id, split and extra faults are assigned."""

    prompt: str
    intent: Intent
    steps: list[GoldStep]
    reply: str
    assertions: list[Assertion]
    persona: Persona = AGENT
    faults: list[FaultSpec] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


TemplateFn = Callable[[WorldView, random.Random, int], list[Draft]]


@dataclass(frozen=True)
class Template:
    """A task template: picks suitable entities and builds up to ``n`` drafts.

    Attributes:
        name: Template name, the stem of its task ids.
        category: Task category.
        tags: What its tasks exercise.
        build: ``build(world, rng, n) -> drafts``.
    """

    name: str
    category: str
    tags: tuple[str, ...]
    build: TemplateFn


def step(tool: str, **arguments: Any) -> GoldStep:
    """A gold step."""
    return GoldStep(tool=tool, arguments=arguments)


def ref(name: str, entity: str, mention: str, /, *, by_id: bool, **hint: str) -> EntityRef:
    """An entity reference as the prompt phrases it."""
    return EntityRef(name=name, entity=entity, mention=mention, mention_kind="id" if by_id else "text", hint=hint)


def state(description: str, sql: str, expected: list[list[Any]]) -> StateAssertion:
    """A state assertion."""
    return StateAssertion(description=description, sql=sql, expected=expected)


def calls(
    description: str,
    required: Sequence[tuple[str, dict[str, Any]]],
    *,
    order: Sequence[tuple[int, int]] = (),
    forbidden: Sequence[tuple[str, dict[str, Any]]] = (),
) -> TraceAssertion:
    """A trace assertion from ``(tool, arguments)`` pairs."""
    return TraceAssertion(
        description=description,
        required=[CallPattern(tool=t, arguments=a) for t, a in required],
        order=list(order),
        forbidden=[CallPattern(tool=t, arguments=a) for t, a in forbidden],
    )


def writes(*scopes: WriteScope) -> SideEffectAssertion:
    """The allowed write-set; no scopes means the task must change nothing."""
    if not scopes:
        return SideEffectAssertion(description="read-only task: nothing in the world changes", allowed=[])
    return SideEffectAssertion(allowed=list(scopes))


def says(
    description: str,
    include: Sequence[Sequence[str]],
    *,
    exclude: Sequence[str] = (),
    internal: bool = True,
) -> ResponseAssertion:
    """A response assertion; ``internal`` also forbids payment tokens and risk scores."""
    return ResponseAssertion(
        description=description,
        must_include=[list(alts) for alts in include],
        must_not_include=[e for e in exclude if e],
        forbidden_patterns=list(INTERNAL_PATTERNS) if internal else [],
    )


def amounts(value: float) -> list[str]:
    """The ways a reply may write an amount."""
    return sorted({f"{value:.2f}", f"{value:,.2f}"})


def quote(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


WRITE_TOOLS = ("reply_to_ticket", "update_ticket_status", "escalate_ticket", "add_internal_note", "issue_refund",
               "cancel_order", "update_shipping_address", "apply_store_credit", "create_return_authorization",
               "request_manager_approval", "approve_refund")
"""Every write tool: read-only tasks forbid them all."""


def no_writes(description: str, required: Sequence[tuple[str, dict[str, Any]]]) -> TraceAssertion:
    """A trace assertion requiring ``required`` calls and forbidding every write."""
    return calls(description, required, forbidden=[(t, {}) for t in WRITE_TOOLS])


def fault_spec(kind: str, tool: str) -> FaultSpec:
    """The fault of ``kind`` on the first call of ``tool``."""
    if kind == "timeout":
        return FaultSpec(id=f"timeout-{tool}", kind="timeout", tool=tool)
    if kind == "rate_limit":
        return FaultSpec(id=f"rate_limit-{tool}", kind="rate_limit", tool=tool, retry_after=2.0)
    if kind == "data_conflict":
        return FaultSpec(id=f"data_conflict-{tool}", kind="data_conflict", tool=tool)
    raise ValueError(f"unknown fault kind {kind!r} for tool {tool!r}")


def with_retry(steps: list[GoldStep], fault: FaultSpec) -> list[GoldStep]:
    """Insert the gold program's recovery after the first call of the fault's tool.

    A timeout or rate limit is followed by the same call again; a data conflict
    by a fresh ``get_`` of the record read last, then the same call again.

    Raises:
        ValueError: The steps never call the fault's tool, or a conflict has no get to repeat.
    """
    idx = next((i for i, s in enumerate(steps) if s.tool == fault.tool), None)
    if idx is None:
        raise ValueError(f"fault {fault.id!r}: the gold program never calls {fault.tool!r}")
    retry = [steps[idx]]
    if fault.kind == "data_conflict":
        gets = [s for s in steps[:idx] if s.tool.startswith("get_")]
        if not gets:
            raise ValueError(f"fault {fault.id!r}: no get_ step before {fault.tool!r} to refetch the record")
        retry = [gets[-1], steps[idx]]
    return [*steps[: idx + 1], *retry, *steps[idx + 1:]]


def conflict_target(steps: list[GoldStep]) -> str | None:
    """The first write step preceded by a get (where a data conflict makes sense), if any."""
    seen_get = False
    for s in steps:
        if s.tool.startswith("get_"):
            seen_get = True
        elif s.tool in WRITE_TOOLS and seen_get:
            return s.tool
    return None


def finish(name: str, index: int, template: Template, draft: Draft, split: Split) -> Task:
    """Turn a draft into a task."""
    tags = sorted(set(template.tags) | set(draft.tags))
    return Task(
        id=f"{name}-{index:02d}",
        prompt=draft.prompt,
        persona=draft.persona,
        split=split,
        category=template.category,
        tags=tags,
        intent=draft.intent,
        faults=sorted(f.id for f in draft.faults),
        gold=GoldProgram(steps=draft.steps, reply=draft.reply),
        assertions=draft.assertions,
    )


def assign_splits(keys: list[set[str]], fraction: float, rng: random.Random) -> list[Split]:
    """Choose the heldout tasks: about ``fraction`` of them, every key in both splits when it can be.

    Args:
        keys: Each task's category and tags.
        fraction: Target share of heldout tasks.
        rng: Randomness for the fill-up order.
    """
    n = len(keys)
    target = round(n * fraction)
    heldout: set[int] = set()

    def can_move(i: int) -> bool:
        for key in keys[i]:
            if sum(1 for j in range(n) if key in keys[j] and j not in heldout and j != i) == 0:
                return False
        return True

    for key in sorted(set().union(*keys)) if keys else []:
        if len(heldout) >= target:
            break
        if any(key in keys[j] for j in heldout):
            continue
        for i in range(n):
            if key in keys[i] and i not in heldout and can_move(i):
                heldout.add(i)
                break
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        if len(heldout) >= target:
            break
        if i not in heldout and can_move(i):
            heldout.add(i)
    return ["heldout" if i in heldout else "train" for i in range(n)]
