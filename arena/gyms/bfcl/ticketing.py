"""BFCL's support ticketing system (``TicketAPI``): a queue of tickets, a counter for new ids, a login.

A ticket is kept as BFCL's configuration writes it (its fields and their order vary between tasks), one row per
ticket in queue order.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import PythonError, RecordKey, as_bfcl, dumps, loads, next_value

SCHEMA = """
CREATE TABLE tk_systems (id TEXT PRIMARY KEY, task TEXT NOT NULL, ticket_counter, current_user);
CREATE TABLE tk_tickets (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, ticket TEXT NOT NULL);
CREATE INDEX tk_tickets_by_task ON tk_tickets (task, seq);
"""

EDITABLE = ("title", "description", "status", "priority")
"""The ticket fields ``edit_ticket`` may change."""


def _system(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM tk_systems WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'TicketAPI' is not defined: this task has no ticketing system")
    return found


def _queue(ctx: ToolContext) -> list[tuple[str, dict[str, Any]]]:
    return [(r["id"], loads(r["ticket"])) for r in ctx.all("SELECT id, ticket FROM tk_tickets WHERE task = ? ORDER BY "
                                                            "seq", (ctx.task_id,))]


def _find(ctx: ToolContext, ticket_id: RecordKey) -> tuple[str, dict[str, Any]] | None:
    for row_id, ticket in _queue(ctx):
        if "id" not in ticket:
            raise PythonError("'id'")
        if ticket["id"] == ticket_id:
            return row_id, ticket
    return None


def _save(ctx: ToolContext, row_id: str, ticket: dict[str, Any]) -> None:
    ctx.conn.execute("UPDATE tk_tickets SET ticket = ? WHERE id = ?", (dumps(ticket), row_id))


@tool(mode="write", entity="ticket", operation="create")
@as_bfcl
def create_ticket(ctx: ToolContext, title: str, description: str = "", priority: int = 1) -> dict[str, Any]:
    """Open a ticket as the logged-in user.

    Args:
        title: The ticket's title.
        description: What the issue is. Defaults to empty.
        priority: From 1 (lowest) to 5 (highest). Defaults to 1.
    """
    system = _system(ctx)
    if not system["current_user"]:
        return {"error": "User not authenticated. Please log in to create a ticket."}
    if priority < 1 or priority > 5:
        return {"error": "Invalid priority. Priority must be between 1 and 5."}
    ticket = {"id": system["ticket_counter"], "title": title, "description": description, "status": "Open",
              "priority": priority, "created_by": system["current_user"]}
    seq = next_value(ctx, "tk_tickets", "seq")
    ctx.conn.execute("INSERT INTO tk_tickets VALUES (?, ?, ?, ?)", (f"{ctx.task_id}/t{seq}", ctx.task_id, seq,
                                                                     dumps(ticket)))
    ctx.conn.execute("UPDATE tk_systems SET ticket_counter = ticket_counter + 1 WHERE id = ?", (ctx.task_id,))
    return ticket


@tool(mode="read", entity="ticket", operation="get")
@as_bfcl
def get_ticket(ctx: ToolContext, ticket_id: RecordKey) -> dict[str, Any]:
    """Get a ticket by its id.

    Args:
        ticket_id: The ticket's id.
    """
    _system(ctx)
    found = _find(ctx, ticket_id)
    return {"error": f"Ticket with ID {ticket_id} not found."} if found is None else found[1]


@tool(mode="write", entity="ticket", operation="update")
@as_bfcl
def close_ticket(ctx: ToolContext, ticket_id: RecordKey) -> dict[str, Any]:
    """Close a ticket.

    Args:
        ticket_id: The ticket's id.
    """
    _system(ctx)
    found = _find(ctx, ticket_id)
    if found is None:
        return {"error": f"Ticket with ID {ticket_id} not found."}
    row_id, ticket = found
    if ticket.get("status") == "Closed":
        return {"error": f"Ticket with ID {ticket_id} is already closed."}
    if "status" not in ticket:
        raise PythonError("'status'")
    ticket["status"] = "Closed"
    _save(ctx, row_id, ticket)
    return {"status": f"Ticket {ticket_id} has been closed successfully."}


@tool(mode="write", entity="ticket", operation="update")
@as_bfcl
def resolve_ticket(ctx: ToolContext, ticket_id: RecordKey, resolution: str) -> dict[str, Any]:
    """Resolve a ticket, recording how.

    Args:
        ticket_id: The ticket's id.
        resolution: How the issue was resolved.
    """
    _system(ctx)
    found = _find(ctx, ticket_id)
    if found is None:
        return {"error": f"Ticket with ID {ticket_id} not found."}
    row_id, ticket = found
    if "status" not in ticket:
        raise PythonError("'status'")
    if ticket["status"] == "Resolved":
        return {"error": f"Ticket with ID {ticket_id} is already resolved."}
    ticket["status"] = "Resolved"
    ticket["resolution"] = resolution
    _save(ctx, row_id, ticket)
    return {"status": f"Ticket {ticket_id} has been resolved successfully."}


@tool(mode="write", entity="ticket", operation="update")
@as_bfcl
def edit_ticket(ctx: ToolContext, ticket_id: RecordKey, updates: dict[str, str | int | None]) -> dict[str, Any]:
    """Change a ticket's title, description, status or priority (fields set to null are left as they are).

    Args:
        ticket_id: The ticket's id.
        updates: The fields to change and their new values (title, description, status, priority).
    """
    _system(ctx)
    found = _find(ctx, ticket_id)
    if found is None:
        return {"error": f"Ticket with ID {ticket_id} not found."}
    row_id, ticket = found
    invalid = [k for k in dict.fromkeys(updates) if k not in EDITABLE]
    if invalid:
        return {"error": f"Invalid fields for update: {', '.join(invalid)}"}
    for key, value in updates.items():
        if value is not None:
            ticket[key] = value
    _save(ctx, row_id, ticket)
    return {"status": f"Ticket {ticket_id} has been updated successfully."}


@tool(mode="write", entity="user", operation="action")
@as_bfcl
def ticket_login(ctx: ToolContext, username: str, password: str) -> dict[str, Any]:
    """Log in to the ticketing system (any non-empty username and password).

    Args:
        username: The username.
        password: The password.
    """
    _system(ctx)
    if username and password:
        ctx.conn.execute("UPDATE tk_systems SET current_user = ? WHERE id = ?", (username, ctx.task_id))
        return {"success": True}
    return {"success": False}


@tool(mode="read", entity="user", operation="action")
@as_bfcl
def ticket_get_login_status(ctx: ToolContext) -> dict[str, Any]:
    """Say whether a user is logged in to the ticketing system."""
    return {"login_status": bool(_system(ctx)["current_user"])}


@tool(mode="write", entity="user", operation="action")
@as_bfcl
def logout(ctx: ToolContext) -> dict[str, Any]:
    """Log the current user out of the ticketing system."""
    if _system(ctx)["current_user"]:
        ctx.conn.execute("UPDATE tk_systems SET current_user = NULL WHERE id = ?", (ctx.task_id,))
        return {"success": True}
    return {"success": False}


@tool(mode="read", entity="ticket", operation="list")
@as_bfcl
def get_user_tickets(ctx: ToolContext, status: str | None = None) -> list[dict[str, Any]]:
    """List the tickets the logged-in user created, optionally only those of one status (ignoring case).

    Args:
        status: Only tickets of this status (e.g. Open, Closed, Resolved).
    """
    system = _system(ctx)
    if not system["current_user"]:
        return [{"error": "User not authenticated. Please log in to view tickets."}]
    mine = []
    for _, ticket in _queue(ctx):
        if "created_by" not in ticket:
            raise PythonError("'created_by'")
        if ticket["created_by"] == system["current_user"]:
            mine.append(ticket)
    if status:
        if any("status" not in t for t in mine):
            raise PythonError("'status'")
        mine = [t for t in mine if str(t["status"]).lower() == status.lower()]
    return mine


TOOLS = (create_ticket, get_ticket, close_ticket, resolve_ticket, edit_ticket, ticket_login, ticket_get_login_status,
         logout, get_user_tickets)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's ticketing system from BFCL's configuration (missing keys take BFCL's defaults)."""
    conn.execute("INSERT INTO tk_systems VALUES (?, ?, ?, ?)",
                 (task, task, config.get("ticket_counter", 1), config.get("current_user")))
    for seq, ticket in enumerate(config.get("ticket_queue", [])):
        conn.execute("INSERT INTO tk_tickets VALUES (?, ?, ?, ?)", (f"{task}/t{seq}", task, seq, dumps(ticket)))


def state(query: Query, task: str) -> dict[str, Any]:
    """The ticketing system's public attributes as BFCL's instance holds them."""
    counter, user = query("SELECT ticket_counter, current_user FROM tk_systems WHERE id = ?", (task,))[0]
    queue = [loads(r[0]) for r in query("SELECT ticket FROM tk_tickets WHERE task = ? ORDER BY seq", (task,))]
    return {"ticket_queue": queue, "ticket_counter": counter, "current_user": user}


TICKETING = FunctionClass(name="TicketAPI", label="support ticketing", schema=SCHEMA, load=load, state=state,
                          tools={t.name: t for t in TOOLS})
"""The ticketing class."""
