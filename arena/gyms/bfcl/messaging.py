"""BFCL's messaging workspace (``MessageAPI``): users by name, a shared inbox of sent messages, a login."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import PythonError, as_bfcl, draw, dumps, loads, next_value, seeded_state

SCHEMA = """
CREATE TABLE msg_workspaces (id TEXT PRIMARY KEY, task TEXT NOT NULL, user_count, message_count, current_user,
                             generated_ids TEXT NOT NULL);
CREATE TABLE msg_users (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, user_id);
CREATE TABLE msg_inbox (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL);
CREATE INDEX msg_users_by_task ON msg_users (task, seq);
CREATE INDEX msg_inbox_by_task ON msg_inbox (task, seq);
"""

OWNER = "MessageAPI"
DEFAULT_SEED = 200191
DEFAULT_USERS = {"Alice": "USR001", "Bob": "USR002", "Catherine": "USR003", "Daniel": "USR004"}
DEFAULT_INBOX = [{"USR002": "My name is Alice. I want to connect."}, {"USR003": "Could you upload the file?"},
                 {"USR004": "Could you upload the file?"}]


def _workspace(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM msg_workspaces WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'MessageAPI' is not defined: this task has no messaging workspace")
    return found


def _users(ctx: ToolContext) -> list[tuple[str, Any]]:
    return [(r["name"], r["user_id"]) for r in ctx.all("SELECT name, user_id FROM msg_users WHERE task = ? ORDER BY "
                                                        "seq", (ctx.task_id,))]


def _inbox(ctx: ToolContext) -> list[tuple[str, dict[str, Any]]]:
    return [(r["id"], loads(r["message"])) for r in ctx.all("SELECT id, message FROM msg_inbox WHERE task = ? ORDER "
                                                             "BY seq", (ctx.task_id,))]


def _first(message: dict[str, Any]) -> tuple[Any, Any]:
    if not message:
        raise PythonError("list index out of range")
    return next(iter(message.items()))


@tool(mode="read", entity="user", operation="list")
@as_bfcl
def list_users(ctx: ToolContext) -> dict[str, Any]:
    """List the names of every user of the workspace."""
    _workspace(ctx)
    return {"user_list": [name for name, _ in _users(ctx)]}


@tool(mode="read", entity="user", operation="get")
@as_bfcl
def get_user_id(ctx: ToolContext, user: str) -> dict[str, Any]:
    """Get a user's id from their name.

    Args:
        user: The user's name.
    """
    _workspace(ctx)
    for name, user_id in _users(ctx):
        if name == user:
            return {"user_id": user_id}
    return {"error": f"User '{user}' not found in the workspace."}


@tool(mode="write", entity="user", operation="action")
@as_bfcl
def message_login(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Log in to the messaging application as a user.

    Args:
        user_id: The id of the user to log in as.
    """
    _workspace(ctx)
    if user_id not in [uid for _, uid in _users(ctx)]:
        return {"login_status": False, "message": f"User ID '{user_id}' not found."}
    ctx.conn.execute("UPDATE msg_workspaces SET current_user = ? WHERE id = ?", (user_id, ctx.task_id))
    return {"login_status": True, "message": f"User '{user_id}' logged in successfully."}


@tool(mode="read", entity="user", operation="action")
@as_bfcl
def message_get_login_status(ctx: ToolContext) -> dict[str, Any]:
    """Say whether a user is logged in to the messaging application."""
    return {"login_status": bool(_workspace(ctx)["current_user"])}


def _new_id(ctx: ToolContext) -> dict[str, int]:
    used = set(loads(_workspace(ctx)["generated_ids"]))

    def pick(rng: random.Random) -> int:
        value = rng.randint(10000, 99999)
        while value in used:
            value = rng.randint(10000, 99999)
        return value

    new_id = draw(ctx, OWNER, pick)
    ctx.conn.execute("UPDATE msg_workspaces SET generated_ids = ? WHERE id = ?",
                     (dumps(sorted({*used, new_id})), ctx.task_id))
    return {"new_id": new_id}


@tool(mode="write", entity="message", operation="create")
@as_bfcl
def send_message(ctx: ToolContext, receiver_id: str, message: str) -> dict[str, Any]:
    """Send a message to a user, as the logged-in user.

    Args:
        receiver_id: The id of the user to send it to.
        message: The message.
    """
    workspace = _workspace(ctx)
    if not workspace["current_user"]:
        return {"error": "No user is currently logged in."}
    if receiver_id not in [uid for _, uid in _users(ctx)]:
        return {"error": f"Receiver ID '{receiver_id}' not found."}
    message_id = _new_id(ctx)
    seq = next_value(ctx, "msg_inbox", "seq")
    ctx.conn.execute("INSERT INTO msg_inbox VALUES (?, ?, ?, ?)",
                     (f"{ctx.task_id}/m{seq}", ctx.task_id, seq, dumps({receiver_id: message})))
    ctx.conn.execute("UPDATE msg_workspaces SET message_count = message_count + 1 WHERE id = ?", (ctx.task_id,))
    return {"sent_status": True, "message_id": message_id, "message": f"Message sent to '{receiver_id}' successfully."}


@tool(mode="write", entity="message", operation="delete")
@as_bfcl
def delete_message(ctx: ToolContext, receiver_id: str) -> dict[str, Any]:
    """Delete the latest message sent to a user.

    Args:
        receiver_id: The id of the user the message was sent to.
    """
    if not _workspace(ctx)["current_user"]:
        return {"error": "No user is currently logged in."}
    for _, message in reversed(_inbox(ctx)):
        receiver, _ = _first(message)
        if receiver == receiver_id:
            first_equal = next(rid for rid, m in _inbox(ctx) if m == message)
            ctx.conn.execute("DELETE FROM msg_inbox WHERE id = ?", (first_equal,))
            return {"deleted_status": True, "receiver_id": receiver,
                    "message": f"Receiver {receiver_id}'s latest message deleted successfully."}
    return {"error": f"Receiver ID {receiver_id} not found."}


@tool(mode="read", entity="message", operation="list")
@as_bfcl
def view_messages_sent(ctx: ToolContext) -> dict[str, Any]:
    """Show every message of the inbox, grouped by receiver (e.g. {"USR001": ["Hello"]})."""
    if not _workspace(ctx)["current_user"]:
        return {"error": "No user is currently logged in."}
    grouped: dict[str, list[Any]] = {}
    for _, message in _inbox(ctx):
        receiver, content = _first(message)
        grouped.setdefault(receiver, []).append(content)
    return {"messages": grouped}


@tool(mode="write", entity="user", operation="create")
@as_bfcl
def add_contact(ctx: ToolContext, user_name: str) -> dict[str, Any]:
    """Add a user to the workspace, with the next user id.

    Args:
        user_name: The new user's name.
    """
    workspace = _workspace(ctx)
    users = _users(ctx)
    if user_name in [name for name, _ in users]:
        return {"error": f"User name '{user_name}' already exists."}
    count = workspace["user_count"] + 1
    ctx.conn.execute("UPDATE msg_workspaces SET user_count = ? WHERE id = ?", (count, ctx.task_id))
    user_id = f"USR{str(count).zfill(3)}"
    if user_id in [uid for _, uid in users]:
        return {"error": f"User ID '{user_id}' already exists."}
    seq = next_value(ctx, "msg_users", "seq")
    ctx.conn.execute("INSERT INTO msg_users VALUES (?, ?, ?, ?, ?)",
                     (f"{ctx.task_id}/u{seq}", ctx.task_id, seq, user_name, user_id))
    return {"added_status": True, "user_id": user_id, "message": f"Contact '{user_name}' added successfully."}


@tool(mode="read", entity="message", operation="search")
@as_bfcl
def search_messages(ctx: ToolContext, keyword: str) -> dict[str, Any]:
    """Find the messages of the inbox that contain a keyword (ignoring case).

    Args:
        keyword: The keyword.
    """
    if not _workspace(ctx)["current_user"]:
        return {"error": "No user is currently logged in."}
    found = []
    for _, message in _inbox(ctx):
        receiver, content = _first(message)
        if keyword.lower() in content.lower():
            found.append({"receiver_id": receiver, "message": content})
    return {"results": found}


@tool(mode="read", entity="message", operation="action")
@as_bfcl
def get_message_stats(ctx: ToolContext) -> dict[str, Any]:
    """Count the inbox's messages and the distinct users they were sent to."""
    if not _workspace(ctx)["current_user"]:
        return {"error": "No user is currently logged in."}
    receivers = [_first(m)[0] for _, m in _inbox(ctx)]
    return {"stats": {"received_count": len(receivers), "total_contacts": len(set(receivers))}}


TOOLS = (list_users, get_user_id, message_login, message_get_login_status, send_message, delete_message,
         view_messages_sent, add_contact, search_messages, get_message_stats)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's workspace from BFCL's configuration (missing keys take BFCL's defaults)."""
    generated = config.get("generated_ids") or []
    conn.execute("INSERT INTO msg_workspaces VALUES (?, ?, ?, ?, ?, ?)",
                 (task, task, config.get("user_count", 4), config.get("message_count", 3),
                  config.get("current_user"), dumps(sorted(generated))))
    users = config.get("user_map", DEFAULT_USERS)
    for seq, (name, user_id) in enumerate(users.items()):
        conn.execute("INSERT INTO msg_users VALUES (?, ?, ?, ?, ?)", (f"{task}/u{seq}", task, seq, name, user_id))
    for seq, message in enumerate(config.get("inbox", DEFAULT_INBOX)):
        conn.execute("INSERT INTO msg_inbox VALUES (?, ?, ?, ?)", (f"{task}/m{seq}", task, seq, dumps(message)))
    conn.execute("INSERT INTO rng_states VALUES (?, ?, ?, ?)",
                 (f"{task}/{OWNER}", task, OWNER, seeded_state(int(config.get("random_seed", DEFAULT_SEED)))))


def state(query: Query, task: str) -> dict[str, Any]:
    """The workspace's public attributes as BFCL's instance holds them."""
    row = query("SELECT user_count, message_count, current_user, generated_ids FROM msg_workspaces WHERE id = ?",
                (task,))[0]
    users: dict[Any, Any] = dict(query("SELECT name, user_id FROM msg_users WHERE task = ? ORDER BY seq", (task,)))
    inbox = [loads(r[0]) for r in query("SELECT message FROM msg_inbox WHERE task = ? ORDER BY seq", (task,))]
    return {"generated_ids": set(loads(row[3])), "user_count": row[0], "user_map": users, "inbox": inbox,
            "message_count": row[1], "current_user": row[2]}


MESSAGING = FunctionClass(name="MessageAPI", label="messaging", schema=SCHEMA, load=load, state=state,
                          tools={t.name: t for t in TOOLS})
"""The messaging class."""
