# rentaldesk/tools.py
"""The rental desk's tools: typed functions whose signatures and docstrings are their schemas."""

from __future__ import annotations

import json
import re
from typing import Any

from arena.authoring import InvalidArgument, NotFound, PolicyViolation, ToolContext, tool

WAIVER_LIMIT = 20.0
"""Late fees above this need a manager to waive them."""


def _search(ctx: ToolContext, entity: str, query: str) -> list[dict[str, Any]]:
    rows = ctx.all("SELECT summary FROM search_index WHERE entity = ? AND text LIKE ? ORDER BY id LIMIT 10",
                   (entity, f"%{query}%"))
    return [json.loads(r["summary"]) for r in rows]


@tool(mode="read", entity="member", operation="search")
def search_members(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find members by name or email (never by id).

    Args:
        query: Part of a name or an email.
    """
    return _search(ctx, "member", query)


@tool(mode="read", entity="member", operation="get")
def get_member(ctx: ToolContext, member_id: str) -> dict[str, Any]:
    """Fetch a member with their rentals.

    Args:
        member_id: Member id such as MEM-1004.
    """
    member = ctx.one("SELECT * FROM members WHERE id = ?", (member_id,))
    if member is None:
        raise NotFound(f"member {member_id!r} not found")
    member["rentals"] = ctx.all("SELECT id, status FROM rentals WHERE member_id = ? ORDER BY id", (member_id,))
    return member


@tool(mode="read", entity="rental", operation="search")
def search_rentals(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find rentals by the member's name; the summaries' status may be out of date.

    Args:
        query: Part of the member's name.
    """
    return _search(ctx, "rental", query)


@tool(mode="read", entity="rental", operation="get")
def get_rental(ctx: ToolContext, rental_id: str) -> dict[str, Any]:
    """Fetch a rental: item, dates, status and late fee.

    Args:
        rental_id: Rental id such as RNT-20017.
    """
    rental = ctx.one("SELECT * FROM rentals WHERE id = ?", (rental_id,))
    if rental is None:
        raise NotFound(f"rental {rental_id!r} not found")
    return rental


@tool(mode="read", entity="rental", operation="action")
def check_late_fee(ctx: ToolContext, rental_id: str) -> dict[str, Any]:
    """Say what late fee a rental owes today and whether an agent may waive it.

    Args:
        rental_id: Rental id.
    """
    rental = get_rental.fn(ctx, rental_id)
    fee = float(rental["late_fee"])
    return {"rental_id": rental_id, "fee": fee, "agent_may_waive": fee <= WAIVER_LIMIT}


@tool(mode="write", permission="fees", entity="rental", operation="update")
def waive_fee(ctx: ToolContext, rental_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Waive a rental's late fee in full (fees above 20.00 need a manager).

    Args:
        rental_id: Rental id.
        amount: The fee being waived; must equal the rental's late fee.
        reason: Why, in a few words.
    """
    rental = get_rental.fn(ctx, rental_id)
    fee = float(rental["late_fee"])
    if fee == 0:
        raise PolicyViolation(f"rental {rental_id} owes no late fee")
    if abs(amount - fee) > 0.005:
        raise InvalidArgument(f"amount {amount} is not the late fee of rental {rental_id} ({fee:.2f})")
    if fee > WAIVER_LIMIT and ctx.persona.role != "manager":
        raise PolicyViolation(f"a late fee of {fee:.2f} is above the {WAIVER_LIMIT:.2f} waiver limit: a manager "
                              "must waive it")
    waiver_id = ctx.new_id("WVR")
    ctx.conn.execute("INSERT INTO waivers VALUES (?, ?, ?, ?, ?)", (waiver_id, rental_id, fee, reason,
                                                                    ctx.persona.name))
    ctx.conn.execute("UPDATE rentals SET late_fee = 0 WHERE id = ?", (rental_id,))
    return {"waiver_id": waiver_id, "rental_id": rental_id, "amount": fee}


@tool(mode="write", permission="rentals", irreversible=True, entity="rental", operation="update")
def close_rental(ctx: ToolContext, rental_id: str, returned_on: str) -> dict[str, Any]:
    """Close a rental whose item came back (cannot be undone).

    Args:
        rental_id: Rental id.
        returned_on: The return date, YYYY-MM-DD.
    """
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", returned_on):
        raise InvalidArgument(f"returned_on {returned_on!r} is not a YYYY-MM-DD date")
    rental = get_rental.fn(ctx, rental_id)
    if rental["status"] != "out":
        raise PolicyViolation(f"rental {rental_id} is already {rental['status']}")
    ctx.conn.execute("UPDATE rentals SET status = 'returned', returned = ? WHERE id = ?", (returned_on, rental_id))
    return {"rental_id": rental_id, "status": "returned", "returned": returned_on}

