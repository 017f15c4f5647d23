"""A small domain used to test the arena core independently of the built-in gyms."""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

from arena.authoring.reply_rules import guard_replies
from arena.core.domain import STRONG, WEAK, Domain, FaultSpec, World
from arena.core.domains import register_domain
from arena.core.task import (
    CallPattern,
    EntityRef,
    GoldProgram,
    GoldStep,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    StateAssertion,
    Task,
    TraceAssertion,
    WriteScope,
)
from arena.core.toolkit import NotFound, PolicyViolation, ToolContext, collect_tools, tool


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


def _task(task_id: str, split: str, faults: list[str], gold: list[GoldStep]) -> Task:
    return Task(
        id=task_id,
        prompt="Refund 5.00 on order ORD-00005 and tell me the refund id.",
        persona=Persona(name="Ada", role="agent", permissions=["refund"]),
        split=split,  # type: ignore[arg-type]
        category="multi_step_workflow",
        tags=["prerequisite"],
        intent=Intent(
            goal="refund_order",
            refs=[EntityRef(name="order", entity="order", mention="ORD-00005", mention_kind="id")],
            calls=[IntendedCall(tool="refund_order", arguments={"order_id": "$order", "amount": 5.0})],
            report=["$refund.refund_id"],
        ),
        faults=faults,
        gold=GoldProgram(steps=gold, reply="Refunded 5.00 as RF-N00001."),
        assertions=[
            StateAssertion(description="order refunded", sql="SELECT refunded FROM orders WHERE id = 'ORD-00005'",
                           expected=[[5.0]]),
            TraceAssertion(description="eligibility checked first",
                           required=[CallPattern(tool="check_refund", arguments={"order_id": "ORD-00005"}),
                                     CallPattern(tool="refund_order")], order=[(0, 1)]),
            SideEffectAssertion(allowed=[WriteScope(table="orders", ids=["ORD-00005"], columns=["refunded"]),
                                         WriteScope(table="refunds", insert=True)]),
            ResponseAssertion(description="states the refund", must_include=[["RF-N00001"]],
                              forbidden_patterns=[r"TOKEN-\d+"]),
        ],
    )


def generate(seed: int, knobs: dict[str, Any]) -> World:
    """Build the toy world: 2,500 orders and an empty refunds table."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, customer TEXT, total REAL, refunded REAL, note TEXT)")
    conn.execute("CREATE TABLE refunds (id TEXT PRIMARY KEY, order_id TEXT, amount REAL)")
    size = int(knobs.get("orders", 2500))
    conn.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, 0, '')",
        [(f"ORD-{i:05d}", f"Customer {(i * 7 + seed) % 500}", 10.0 + i) for i in range(size)],
    )
    conn.commit()
    steps = [GoldStep(tool="check_refund", arguments={"order_id": "ORD-00005"}),
             GoldStep(tool="refund_order", arguments={"order_id": "ORD-00005", "amount": 5.0})]
    retry = [steps[0], steps[1], GoldStep(tool="get_order", arguments={"order_id": "ORD-00005"}), steps[1]]
    tasks = [
        _task("refund-plain", "train", [], steps),
        _task("refund-timeout", "heldout", ["refund-timeout"], [steps[0], steps[1], steps[1]]),
        _task("refund-conflict", "heldout", ["refund-conflict"], retry),
    ]
    faults = [
        FaultSpec(id="refund-timeout", kind="timeout", tool="refund_order"),
        FaultSpec(id="refund-conflict", kind="data_conflict", tool="refund_order"),
    ]
    state = conn.serialize()
    return World(state_db=state, tasks=guard_replies(tasks, world=state, tools=collect_tools(sys.modules[__name__])),
                 faults=faults, clock_start="2025-06-15T09:00:00")


TOY = Domain(
    name="toy",
    description="A toy order desk for core tests.",
    tools=collect_tools(__import__(__name__, fromlist=["_"])),
    policy="Check refund eligibility before refunding.",
    dependencies=[("check_refund", "refund_order", STRONG), ("get_order", "add_note", WEAK)],
    generate=generate,
)


register_domain(TOY)


def lookup(name: str) -> Domain:
    """Domain lookup for pack parsing in tests: only ``toy``."""
    if name != "toy":
        raise KeyError(f"unknown domain {name!r}; test domains: toy")
    return TOY
