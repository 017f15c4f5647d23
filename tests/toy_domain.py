"""A small gym built with the authoring kit, used to test the arena core independently of the built-in gyms."""

from __future__ import annotations

import random
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from pydantic import Field

from arena.authoring import (
    STRONG,
    WEAK,
    Draft,
    Fault,
    GymKnobs,
    Template,
    WorldView,
    calls,
    goal,
    make_domain,
    ref,
    says,
    scope,
    state,
    writes,
)
from arena.core.domain import Domain
from arena.core.domains import register_domain
from arena.core.task import Intent, Persona
from arena.core.toolkit import NotFound, PolicyViolation, ToolContext, tool


@tool(mode="read", entity="order", operation="get")
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Fetch one order by id.

    Args:
        order_id: Order id such as ORD-00005.
    """
    row = ctx.one("SELECT * FROM orders WHERE id = ?", (order_id,))
    if row is None:
        raise NotFound(f"order {order_id!r} not found")
    return row


@tool(mode="read", entity="order", operation="search")
def search_orders(ctx: ToolContext, query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Search orders by customer name.

    Args:
        query: Text to look for in customer names.
        limit: Most results to return.
    """
    return ctx.all("SELECT id, customer FROM orders WHERE customer LIKE ? ORDER BY id LIMIT ?", (f"%{query}%", limit))


@tool(mode="read", entity="order", operation="action")
def check_refund(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Say whether an order may be refunded.

    Args:
        order_id: Order id.
    """
    order = get_order.fn(ctx, order_id)
    return {"order_id": order_id, "eligible": order["refunded"] == 0}


@tool(mode="write", permission="refund", irreversible=True, entity="order", operation="update")
def refund_order(ctx: ToolContext, order_id: str, amount: float) -> dict[str, Any]:
    """Refund part of an order.

    Args:
        order_id: Order id.
        amount: Amount to refund, at most the order total.
    """
    order = get_order.fn(ctx, order_id)
    if amount > order["total"]:
        raise PolicyViolation(f"refund {amount} exceeds the order total {order['total']}")
    ctx.conn.execute("UPDATE orders SET refunded = ? WHERE id = ?", (amount, order_id))
    refund_id = ctx.new_id("RF")
    ctx.conn.execute("INSERT INTO refunds VALUES (?, ?, ?)", (refund_id, order_id, amount))
    return {"refund_id": refund_id}


@tool(mode="write", entity="order", operation="update")
def add_note(ctx: ToolContext, order_id: str, note: str) -> dict[str, Any]:
    """Attach a note to an order.

    Args:
        order_id: Order id.
        note: Note text.
    """
    get_order.fn(ctx, order_id)
    ctx.conn.execute("UPDATE orders SET note = ? WHERE id = ?", (note, order_id))
    return {"order_id": order_id}


@tool(mode="write", entity="order", operation="action")
def crash(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """A tool with a bug, to test environment failures.

    Args:
        order_id: Order id.
    """
    ctx.conn.execute("UPDATE orders SET note = 'half' WHERE id = ?", (order_id,))
    raise ZeroDivisionError("bug in tool")


class ToyKnobs(GymKnobs):
    """The kit's task knobs plus the toy world's size."""

    tasks_per_template: int = Field(default=1, ge=1, le=20, description="Tasks per template, each refunding the "
                                    "next order from ORD-00005 (default 1).")
    orders: int = Field(default=2500, ge=10, le=100_000, description="Orders in the world (default 2,500).")


def build_world(seed: int, knobs: ToyKnobs) -> sqlite3.Connection:
    """The toy world: ``orders`` orders and an empty refunds table."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, customer TEXT, total REAL, refunded REAL, note TEXT)")
    conn.execute("CREATE TABLE refunds (id TEXT PRIMARY KEY, order_id TEXT, amount REAL)")
    conn.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, 0, '')",
        [(f"ORD-{i:05d}", f"Customer {(i * 7 + seed) % 500}", 10.0 + i) for i in range(knobs.orders)],
    )
    conn.commit()
    return conn


def _refund(faults: list[Fault]) -> Callable[[WorldView[ToyKnobs], random.Random, int], list[Draft]]:
    """A template refunding 5.00 on ORD-00005, ORD-00006... (the gold program is the expert's), with ``faults``."""

    def build(world: WorldView[ToyKnobs], rng: random.Random, n: int) -> list[Draft]:
        return [_draft(f"ORD-{5 + i:05d}", faults) for i in range(min(n, world.knobs.orders - 5))]

    return build


def _draft(order: str, faults: list[Fault]) -> Draft:
    return Draft(
            prompt=f"Refund 5.00 on order {order} and tell me the refund id.",
            intent=Intent(goal="refund_order", refs=[ref("order", "order", order, by_id=True)],
                          calls=[goal("refund_order", order_id="$order", amount=5.0)],
                          report=["$refund_order.refund_id"]),
            reply="Refunded 5.00 as RF-N00001.",
            assertions=[
                state("order refunded", f"SELECT refunded FROM orders WHERE id = '{order}'", [[5.0]]),
                calls("eligibility checked first", [("check_refund", {"order_id": order}),
                                                    ("refund_order", {})], order=[(0, 1)]),
                writes(scope("orders", [order], ["refunded"]), scope("refunds", insert=True)),
                says("states the refund", [["RF-N00001"]]),
            ],
            faults=list(faults),
        )


TEMPLATES = [
    Template("refund_plain", "multi_step_workflow", ("prerequisite",), _refund([]), depth=1),
    Template("refund_timeout", "multi_step_workflow", ("prerequisite",), _refund([Fault("timeout", "refund_order")]),
             depth=1),
    Template("refund_conflict", "multi_step_workflow", ("prerequisite",),
             _refund([Fault("data_conflict", "refund_order")]), depth=1),
]
"""The toy's templates: a refund, a refund whose first attempt times out, one that meets a data conflict."""


TOY = make_domain(
    name="toy",
    description="A toy order desk for core tests.",
    tools=sys.modules[__name__],
    policy="Check refund eligibility before refunding.",
    dependencies=[("check_refund", "refund_order", STRONG), ("get_order", "add_note", WEAK)],
    world=build_world,
    templates=TEMPLATES,
    knobs=ToyKnobs,
    clock_start="2025-06-15T09:00:00",
    persona=Persona(name="Ada", role="agent", permissions=["refund"]),
    cannot={"near_duplicate_rate": "the toy world has one customer name per order",
            "stale_rate": "the toy world has no search index", "legacy_format_rate": "the toy world has no dates"},
    internal_patterns=[r"TOKEN-\d+"],
)
"""The toy gym, built with the authoring kit: by default three tasks refunding ORD-00005 (plain, timeout, data
conflict)."""


register_domain(TOY)


def lookup(name: str) -> Domain:
    """Domain lookup for pack parsing in tests: only ``toy``."""
    if name != "toy":
        raise KeyError(f"unknown domain {name!r}; test domains: toy")
    return TOY
