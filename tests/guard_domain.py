"""A small domain with one tool of every kind, for guard, row-scope and gate tests.

Tools: reads with and without a permission, writes with and without a permission, an insert and a delete.
Tasks are built per test with ``scoped_task`` and swapped into the pack with ``with_tasks``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from arena.core.domain import STRONG, Domain, FaultSpec, World
from arena.core.pack import Pack, build_pack
from arena.core.task import (
    Assertion,
    EntityRef,
    GoldProgram,
    GoldStep,
    IntendedCall,
    Intent,
    Persona,
    ResponseAssertion,
    StateAssertion,
    Task,
)
from arena.core.toolkit import NotFound, ToolContext, collect_tools, tool


@tool(mode="read", entity="account", operation="get")
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Fetch one account.

    Args:
        account_id: Account id such as ACC-1.
    """
    row = ctx.one("SELECT * FROM accounts WHERE id = ?", (account_id,))
    if row is None:
        raise NotFound(f"account {account_id!r} not found")
    return row


@tool(mode="read", permission="audit", entity="account", operation="action")
def audit_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Read an account's audit notes (needs the audit permission).

    Args:
        account_id: Account id.
    """
    return {"account_id": account_id, "notes": get_account.fn(ctx, account_id)["note"]}


@tool(mode="write", entity="account", operation="update")
def set_note(ctx: ToolContext, account_id: str, note: str) -> dict[str, Any]:
    """Set an account's note.

    Args:
        account_id: Account id.
        note: Note text.
    """
    get_account.fn(ctx, account_id)
    ctx.conn.execute("UPDATE accounts SET note = ? WHERE id = ?", (note, account_id))
    return {"account_id": account_id, "status": "done"}


@tool(mode="write", permission="billing", irreversible=True, entity="account", operation="update")
def set_balance(ctx: ToolContext, account_id: str, balance: float) -> dict[str, Any]:
    """Set an account's balance (needs the billing permission).

    Args:
        account_id: Account id.
        balance: New balance.
    """
    get_account.fn(ctx, account_id)
    ctx.conn.execute("UPDATE accounts SET balance = ? WHERE id = ?", (balance, account_id))
    return {"account_id": account_id}


@tool(mode="write", entity="account", operation="create")
def open_account(ctx: ToolContext, owner: str) -> dict[str, Any]:
    """Open a new account.

    Args:
        owner: Owner name.
    """
    account_id = ctx.new_id("ACC")
    ctx.conn.execute("INSERT INTO accounts VALUES (?, ?, 0, '')", (account_id, owner))
    return {"account_id": account_id}


@tool(mode="write", permission="admin", entity="account", operation="delete")
def close_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Delete an account (needs the admin permission).

    Args:
        account_id: Account id.
    """
    get_account.fn(ctx, account_id)
    ctx.conn.execute("DELETE FROM accounts WHERE id = ?", (account_id,))
    return {"account_id": account_id}


@tool(mode="write", entity="account", operation="update")
def tag_account(ctx: ToolContext, account_id: str, tags: list[str],
                labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Write tags (and labels) into an account's note.

    Args:
        account_id: Account id.
        tags: Tags to write.
        labels: Labels to write after the tags.
    """
    get_account.fn(ctx, account_id)
    text = ",".join(tags + [f"{k}={v}" for k, v in sorted((labels or {}).items())])
    ctx.conn.execute("UPDATE accounts SET note = ? WHERE id = ?", (text, account_id))
    return {"account_id": account_id}


@tool(mode="write", entity="account", operation="create")
def log_event(ctx: ToolContext, account_id: str, text: str) -> dict[str, Any]:
    """Append an event to the account's log (a table without a primary key).

    Args:
        account_id: Account id.
        text: Event text.
    """
    ctx.conn.execute("INSERT INTO events VALUES (?, ?)", (account_id, text))
    return {"logged": True}


ALL_PERMISSIONS = ["audit", "billing", "admin"]
"""Every permission some tool of the domain needs."""


def _generate(seed: int, knobs: dict[str, Any]) -> World:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE accounts (id TEXT PRIMARY KEY, owner TEXT, balance REAL, note TEXT)")
    conn.execute("CREATE TABLE events (account_id TEXT, text TEXT)")
    conn.executemany("INSERT INTO accounts VALUES (?, ?, ?, '')",
                     [(f"ACC-{i}", f"Owner {i}", 100.0 * i) for i in range(1, 6)])
    conn.commit()
    faults = [FaultSpec(id="get-window", kind="timeout", tool="get_account", on_call=2, times=2),
              FaultSpec(id="note-rate", kind="rate_limit", tool="set_note", retry_after=2.5),
              FaultSpec(id="note-conflict", kind="data_conflict", tool="set_note")]
    return World(state_db=conn.serialize(), tasks=[scoped_task("base", [])], faults=faults,
                 clock_start="2025-06-15T09:00:00")


GUARDED = Domain(
    name="guarded",
    description="Accounts with one tool of every kind, for guard tests.",
    tools=collect_tools(__import__(__name__, fromlist=["_"])),
    policy="Audit an account before changing its balance.",
    dependencies=[("audit_account", "set_balance", STRONG)],
    generate=_generate,
)


def scoped_task(task_id: str, assertions: list[Assertion], *, gold: list[GoldStep] | None = None,
                permissions: list[str] | None = None, faults: list[str] | None = None) -> Task:
    """A task of the guarded domain with the given assertions (padded to the minimum of three)."""
    padded: list[Assertion] = list(assertions)
    while len(padded) < 3:
        padded.append(StateAssertion(description=f"world readable {len(padded)}",
                                     sql="SELECT COUNT(*) >= 0 FROM accounts", expected=[[1]]))
    return Task(
        id=task_id, prompt=f"Task {task_id} on account ACC-1.",
        persona=Persona(name="Ada", role="clerk", permissions=ALL_PERMISSIONS if permissions is None else permissions),
        split="train", category="test", tags=[],
        intent=Intent(goal="set_note",
                      refs=[EntityRef(name="account", entity="account", mention="ACC-1", mention_kind="id")],
                      calls=[IntendedCall(tool="set_note", arguments={"account_id": "$account", "note": "hello"})],
                      report=["$set_note.status"]),
        faults=faults or [],
        gold=GoldProgram(steps=gold or [], reply="done"),
        assertions=padded,
    )


def states_done() -> ResponseAssertion:
    """A response assertion the null agent (empty reply) and the adversaries' success claims fail."""
    return ResponseAssertion(description="says done", must_include=[["done"]], must_not_include=["successfully"])


def guarded_pack() -> Pack:
    """The guarded domain's pack (seed 0)."""
    return build_pack(GUARDED, seed=0)


def with_tasks(pack: Pack, *tasks: Task) -> Pack:
    """``pack`` holding exactly ``tasks``."""
    return replace(pack, tasks=list(tasks))
