"""What the CRM's tools share beyond the kit: user names, the ownership rule, open stages, account history."""

from __future__ import annotations

from typing import Any

from arena.authoring import PolicyViolation, ToolContext, fetch

OPEN_STAGES = ("prospecting", "qualification", "proposal", "negotiation")
"""The stages of an open opportunity."""


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
    return fetch(ctx, "accounts", str(opportunity["account_id"]), "account")


def require_open(opportunity: dict[str, Any]) -> None:
    """Refuse a change to a closed opportunity.

    Raises:
        PolicyViolation: The opportunity is closed, naming its stage.
    """
    if opportunity["stage"] not in OPEN_STAGES:
        raise PolicyViolation(f"opportunity {opportunity['id']} is already {opportunity['stage']}: a closed "
                              "opportunity cannot change")


def history(ctx: ToolContext, account_id: str, field: str, old: object, new: object) -> None:
    """Record a change of an account in its history."""
    ctx.conn.execute("INSERT INTO account_history VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (ctx.new_id("AUD"), account_id, field, None if old is None else str(old), str(new),
                      ctx.persona.name, ctx.today()))
