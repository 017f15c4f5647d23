# rentaldesk/tools.py
"""The rental desk's tools: typed functions whose signatures and docstrings are their schemas."""

from __future__ import annotations

from typing import Any

from arena.authoring import InvalidArgument, PolicyViolation, ToolContext, fetch, iso_date, search, tool

WAIVER_LIMIT = 20.0
"""Late fees above this need a manager to waive them."""


@tool(mode="read", entity="member", operation="search")
def search_members(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find members by name or email (never by id).

    Args:
        query: Words of a name or an email.
    """
    return search(ctx, "member", query)


@tool(mode="read", entity="member", operation="get")
def get_member(ctx: ToolContext, member_id: str) -> dict[str, Any]:
    """Fetch a member with their rentals.

    Args:
        member_id: Member id such as MEM-1004.
    """
    member = fetch(ctx, "members", member_id, "member")
    member["rentals"] = ctx.all("SELECT id, status FROM rentals WHERE member_id = ? ORDER BY id", (member_id,))
    return member


@tool(mode="read", entity="member", operation="action")
def check_member_standing(ctx: ToolContext, member_id: str) -> dict[str, Any]:
    """Say whether a member is in good standing: fewer than two rentals with a late fee owing.

    Args:
        member_id: Member id.
    """
    fetch(ctx, "members", member_id, "member")
    owing = ctx.all("SELECT id FROM rentals WHERE member_id = ? AND late_fee > 0 ORDER BY id", (member_id,))
    return {"member_id": member_id, "rentals_owing": len(owing), "good_standing": len(owing) < 2}


@tool(mode="read", entity="rental", operation="search")
def search_rentals(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find rentals by the member's name; the summaries' status may be out of date.

    Args:
        query: Words of the member's name.
    """
    return search(ctx, "rental", query)


@tool(mode="read", entity="rental", operation="get")
def get_rental(ctx: ToolContext, rental_id: str) -> dict[str, Any]:
    """Fetch a rental: member, item, dates, status and late fee.

    Args:
        rental_id: Rental id such as RNT-20017.
    """
    return fetch(ctx, "rentals", rental_id, "rental")


@tool(mode="read", entity="rental", operation="action")
def check_late_fee(ctx: ToolContext, rental_id: str) -> dict[str, Any]:
    """Say what late fee a rental owes today and whether an agent may waive it.

    Args:
        rental_id: Rental id.
    """
    fee = float(fetch(ctx, "rentals", rental_id, "rental")["late_fee"])
    return {"rental_id": rental_id, "fee": fee, "agent_may_waive": fee <= WAIVER_LIMIT}


@tool(mode="write", permission="fees", entity="rental", operation="update")
def waive_fee(ctx: ToolContext, rental_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Waive a rental's late fee in full (fees above 20.00 need a manager).

    Args:
        rental_id: Rental id.
        amount: The fee being waived; must equal the rental's late fee.
        reason: Why, in a few words.
    """
    fee = float(fetch(ctx, "rentals", rental_id, "rental")["late_fee"])
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
    iso_date(returned_on, "returned_on")
    rental = fetch(ctx, "rentals", rental_id, "rental")
    if rental["status"] != "out":
        raise PolicyViolation(f"rental {rental_id} is already {rental['status']}")
    ctx.conn.execute("UPDATE rentals SET status = 'returned', returned = ? WHERE id = ?", (returned_on, rental_id))
    return {"rental_id": rental_id, "status": "returned", "returned": returned_on}

