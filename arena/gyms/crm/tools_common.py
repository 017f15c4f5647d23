"""What the CRM's tools share: searching the index, fetching records, the ownership rule and input formats."""

from __future__ import annotations

import json
from typing import Any

from arena.authoring import InvalidArgument, NotFound, PolicyViolation, ToolContext

from .formats import ISO_DATE

OPEN_STAGES = ("prospecting", "qualification", "proposal", "negotiation")
"""The stages of an open opportunity."""


def search(ctx: ToolContext, entity: str, query: str) -> list[dict[str, Any]]:
    """Up to ten summaries of ``entity`` whose indexed text (names, emails) holds ``query``.

    Raises:
        InvalidArgument: The query is blank.
    """
    if not query.strip():
        raise InvalidArgument("query is empty: give part of a name or an email")
    rows = ctx.all("SELECT summary FROM search_index WHERE entity = ? AND text LIKE ? ORDER BY id LIMIT 10",
                   (entity, f"%{query.strip()}%"))
    return [json.loads(r["summary"]) for r in rows]


def fetch(ctx: ToolContext, table: str, entity: str, record_id: str) -> dict[str, Any]:
    """The row of ``table`` with ``record_id``.

    Raises:
        NotFound: No such row, naming the entity and the id.
    """
    row = ctx.one(f"SELECT * FROM {table} WHERE id = ?", (record_id,))
    if row is None:
        raise NotFound(f"{entity} {record_id!r} not found")
    return row


def user_name(ctx: ToolContext, user_id: str | None) -> str | None:
    """The name of the user ``user_id`` (``None`` for none)."""
    row = ctx.one("SELECT name FROM users WHERE id = ?", (user_id,)) if user_id else None
    return None if row is None else str(row["name"])


def require_owner(ctx: ToolContext, account: dict[str, Any]) -> None:
    """Let only the account's owner or a manager change it.

    Raises:
        PolicyViolation: The persona is neither, naming the owner.
    """
    if ctx.persona.role == "manager":
        return
    owner = user_name(ctx, account["owner_id"])
    if owner != ctx.persona.name:
        raise PolicyViolation(f"account {account['id']} ({account['name']}) is owned by {owner}: only its owner or "
                              "a manager may change it or its opportunities and quotes")


def account_of_opportunity(ctx: ToolContext, opportunity: dict[str, Any]) -> dict[str, Any]:
    """The account an opportunity belongs to."""
    return fetch(ctx, "accounts", "account", str(opportunity["account_id"]))


def require_open(opportunity: dict[str, Any]) -> None:
    """Refuse a change to a closed opportunity.

    Raises:
        PolicyViolation: The opportunity is closed, naming its stage.
    """
    if opportunity["stage"] not in OPEN_STAGES:
        raise PolicyViolation(f"opportunity {opportunity['id']} is already {opportunity['stage']}: a closed "
                              "opportunity cannot change")


def iso_date(value: str, name: str) -> str:
    """``value`` when it is a ``YYYY-MM-DD`` date.

    Raises:
        InvalidArgument: Any other format, naming the argument and the value.
    """
    if not ISO_DATE.fullmatch(value):
        raise InvalidArgument(f"{name} {value!r} is not a YYYY-MM-DD date")
    return value


def positive_amount(value: float, name: str) -> float:
    """``value`` rounded to cents when it is above zero.

    Raises:
        InvalidArgument: Zero or less, naming the argument.
    """
    if value <= 0:
        raise InvalidArgument(f"{name} {value!r} must be above zero")
    return round(float(value), 2)


def index_summary(ctx: ToolContext, record_id: str, entity: str, text: str, shown: dict[str, Any]) -> None:
    """Add a new record's summary to the search index."""
    ctx.conn.execute("INSERT INTO search_index VALUES (?, ?, ?, ?)",
                     (record_id, entity, text, json.dumps({"id": record_id, **shown})))


def history(ctx: ToolContext, account_id: str, field: str, old: object, new: object) -> None:
    """Record a change of an account in its history."""
    ctx.conn.execute("INSERT INTO account_history VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (ctx.new_id("AUD"), account_id, field, None if old is None else str(old), str(new),
                      ctx.persona.name, ctx.today()))
