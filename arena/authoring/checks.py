"""Short builders for what a draft declares: gold steps, entity references, goal calls and the four checks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from arena.core.task import (
    CallPattern,
    EntityRef,
    GoldStep,
    IntendedCall,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    TraceAssertion,
    WriteScope,
)


def step(tool: str, **arguments: Any) -> GoldStep:
    """A gold step: ``tool`` called with literal ``arguments``."""
    return GoldStep(tool=tool, arguments=arguments)


def ref(name: str, entity: str, mention: str, /, *, by_id: bool, **hint: str) -> EntityRef:
    """A record the prompt refers to: by its id (``by_id=True``) or by text, with the ``hint`` fields it states.

    ``mention`` may be ``"$other.field"`` (with ``by_id=True``): the id is read from an earlier ref's record.
    """
    return EntityRef(name=name, entity=entity, mention=mention, mention_kind="id" if by_id else "text", hint=hint)


def goal(tool: str, /, *, when: str | None = None, **arguments: Any) -> IntendedCall:
    """One call of the requester's goal, arguments symbolic (``"$order"``, ``"$order.total"``) or literal.

    ``when`` (``"$tool.field"``, ``"!$tool.field"``) makes the call only if that value is truthy (falsy).
    """
    return IntendedCall(tool=tool, arguments=arguments, when=when)


def state(description: str, sql: str, expected: list[list[Any]]) -> StateAssertion:
    """A state check: the read-only ``sql`` over the final world returns ``expected``."""
    return StateAssertion(description=description, sql=sql, expected=expected)


def calls(
    description: str,
    required: Sequence[tuple[str, dict[str, Any]]],
    *,
    order: Sequence[tuple[int, int]] = (),
    forbidden: Sequence[tuple[str, dict[str, Any]]] = (),
) -> TraceAssertion:
    """A trace check from ``(tool, arguments)`` patterns; ``order`` pairs index ``required``."""
    return TraceAssertion(
        description=description,
        required=[CallPattern(tool=t, arguments=a) for t, a in required],
        order=list(order),
        forbidden=[CallPattern(tool=t, arguments=a) for t, a in forbidden],
    )


def reads_only(description: str, required: Sequence[tuple[str, dict[str, Any]]],
               write_tools: Iterable[str]) -> TraceAssertion:
    """A trace check requiring ``required`` calls and forbidding every call of ``write_tools``."""
    return calls(description, required, forbidden=[(t, {}) for t in write_tools])


def scope(table: str, ids: list[str] | None = None, columns: list[str] | None = None, *, insert: bool = False,
          delete: bool = False) -> WriteScope:
    """Rows a task may change: ``ids`` of ``table`` (any when ``None``), only ``columns`` (any when ``None``)."""
    return WriteScope(table=table, ids=ids, columns=columns, insert=insert, delete=delete)


def writes(*scopes: WriteScope) -> SideEffectAssertion:
    """The side-effect check: every changed row lies in ``scopes``; no scope means nothing may change."""
    if not scopes:
        return SideEffectAssertion(description="read-only task: nothing in the world changes", allowed=[])
    return SideEffectAssertion(allowed=list(scopes))


def says(
    description: str,
    include: Sequence[Sequence[str]],
    *,
    exclude: Sequence[str] = (),
    forbidden: Sequence[str] = (),
) -> ResponseAssertion:
    """A response check: one alternative of each ``include`` entry appears, no ``exclude`` text does.

    The gym's internal-data patterns (``make_domain(internal_patterns=...)``) are added to ``forbidden`` by the
    kit; the reply rules (ids, length, success claims) are derived from the gold reply.
    """
    return ResponseAssertion(
        description=description,
        must_include=[list(alts) for alts in include],
        must_not_include=[e for e in exclude if e],
        forbidden_patterns=list(forbidden),
    )


def quote(value: str) -> str:
    """A SQL string literal, for the queries of state checks."""
    return "'" + value.replace("'", "''") + "'"
