"""The CRM's tools for opportunities: finding, creating, updating and closing them."""

from __future__ import annotations

from typing import Any, Literal

from arena.authoring import (
    InvalidArgument,
    PolicyViolation,
    ToolContext,
    add_to_index,
    fetch,
    iso_date,
    positive_amount,
    search,
    tool,
)

from .tools_common import account_of_opportunity, require_open, require_owner, user_name


@tool(mode="read", entity="opportunity", operation="search")
def search_opportunities(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find opportunities by name or account name (never by id); the cached stage may be out of date.

    Args:
        query: Part of the opportunity's name, which starts with its account's name.
    """
    return search(ctx, "opportunity", query)


@tool(mode="read", entity="opportunity", operation="get")
def get_opportunity(ctx: ToolContext, opportunity_id: str) -> dict[str, Any]:
    """Fetch an opportunity with its account, owner and quotes.

    Args:
        opportunity_id: Opportunity id such as OPP-30125.
    """
    opportunity = fetch(ctx, "opportunities", opportunity_id, "opportunity")
    account = ctx.one("SELECT name FROM accounts WHERE id = ?", (opportunity["account_id"],))
    opportunity["account_name"] = None if account is None else account["name"]
    opportunity["owner_name"] = user_name(ctx, opportunity["owner_id"])
    opportunity["quotes"] = ctx.all("SELECT id, status, discount_pct, net_total FROM quotes WHERE opportunity_id = ? "
                                    "ORDER BY id", (opportunity_id,))
    return opportunity


def _open_opportunity(ctx: ToolContext, opportunity_id: str) -> dict[str, Any]:
    opportunity = fetch(ctx, "opportunities", opportunity_id, "opportunity")
    require_owner(ctx, account_of_opportunity(ctx, opportunity))
    require_open(opportunity)
    return opportunity


@tool(mode="write", permission="opportunities", entity="opportunity", operation="create")
def create_opportunity(ctx: ToolContext, account_id: str, name: str, amount: float,
                       close_date: str) -> dict[str, Any]:
    """Open a new opportunity on an account, at stage prospecting, owned by the account's owner.

    Args:
        account_id: Account id.
        name: The opportunity's name, e.g. "Northwind Traders - Expansion 2025".
        amount: Expected amount, a number in the account's currency.
        close_date: Expected close date, YYYY-MM-DD, not in the past.
    """
    amount = round(positive_amount(amount, "amount"), 2)
    iso_date(close_date, "close_date")
    if close_date < ctx.today():
        raise InvalidArgument(f"close_date {close_date} is in the past")
    if not name.strip():
        raise InvalidArgument("name is empty")
    account = fetch(ctx, "accounts", account_id, "account")
    require_owner(ctx, account)
    if account["status"] == "churned":
        raise PolicyViolation(f"account {account_id} ({account['name']}) is churned: reactivate it before opening "
                              "opportunities")
    opportunity_id = ctx.new_id("OPP")
    ctx.conn.execute("INSERT INTO opportunities VALUES (?, ?, ?, ?, 'prospecting', ?, ?, ?, ?, NULL)",
                     (opportunity_id, account_id, account["owner_id"], name.strip(), amount, account["currency"],
                      close_date, ctx.today()))
    add_to_index(ctx, "opportunity", {"id": opportunity_id, "name": name.strip(), "account": account["name"],
                                      "stage": "prospecting"}, name.strip())
    return {"opportunity_id": opportunity_id, "stage": "prospecting", "amount": amount,
            "currency": account["currency"], "close_date": close_date}


@tool(mode="write", permission="opportunities", entity="opportunity", operation="update")
def update_opportunity_close_date(ctx: ToolContext, opportunity_id: str, close_date: str) -> dict[str, Any]:
    """Move an open opportunity's expected close date.

    Args:
        opportunity_id: Opportunity id.
        close_date: The new expected close date, YYYY-MM-DD, not in the past.
    """
    iso_date(close_date, "close_date")
    if close_date < ctx.today():
        raise InvalidArgument(f"close_date {close_date} is in the past")
    opportunity = _open_opportunity(ctx, opportunity_id)
    ctx.conn.execute("UPDATE opportunities SET close_date = ? WHERE id = ?", (close_date, opportunity_id))
    return {"opportunity_id": opportunity_id, "close_date": close_date, "stage": opportunity["stage"]}


@tool(mode="write", permission="opportunities", entity="opportunity", operation="update")
def update_opportunity_amount(ctx: ToolContext, opportunity_id: str, amount: float) -> dict[str, Any]:
    """Set an open opportunity's expected amount.

    Args:
        opportunity_id: Opportunity id.
        amount: The new amount, a number in the opportunity's currency (no symbols or separators).
    """
    amount = round(positive_amount(amount, "amount"), 2)
    opportunity = _open_opportunity(ctx, opportunity_id)
    ctx.conn.execute("UPDATE opportunities SET amount = ? WHERE id = ?", (amount, opportunity_id))
    return {"opportunity_id": opportunity_id, "amount": amount, "currency": opportunity["currency"]}


@tool(mode="write", permission="opportunities", entity="opportunity", operation="update")
def update_opportunity_stage(ctx: ToolContext, opportunity_id: str,
                             stage: Literal["prospecting", "qualification", "proposal", "negotiation"]
                             ) -> dict[str, Any]:
    """Move an open opportunity to another open stage (closing it is close_opportunity).

    Args:
        opportunity_id: Opportunity id.
        stage: prospecting, qualification, proposal or negotiation.
    """
    opportunity = _open_opportunity(ctx, opportunity_id)
    if opportunity["stage"] == stage:
        raise PolicyViolation(f"opportunity {opportunity_id} is already at stage {stage}")
    ctx.conn.execute("UPDATE opportunities SET stage = ? WHERE id = ?", (stage, opportunity_id))
    return {"opportunity_id": opportunity_id, "stage": stage}


@tool(mode="write", permission="opportunities", irreversible=True, entity="opportunity", operation="update")
def close_opportunity(ctx: ToolContext, opportunity_id: str, outcome: Literal["won", "lost"],
                      reason: str) -> dict[str, Any]:
    """Close an open opportunity as won or lost (cannot be undone); won needs a quote sent to the customer.

    Args:
        opportunity_id: Opportunity id.
        outcome: won or lost.
        reason: Why, in a few words (for a loss: price, competitor, no budget, timing, ...).
    """
    if not reason.strip():
        raise InvalidArgument("reason is empty")
    _open_opportunity(ctx, opportunity_id)
    quotes = ctx.all("SELECT id, status FROM quotes WHERE opportunity_id = ? AND status IN ('sent', 'accepted') "
                     "ORDER BY id", (opportunity_id,))
    if outcome == "won" and not quotes:
        raise PolicyViolation(f"opportunity {opportunity_id} has no quote sent to the customer: it cannot be closed "
                              "as won until a quote is sent")
    stage = "closed_won" if outcome == "won" else "closed_lost"
    ctx.conn.execute("UPDATE opportunities SET stage = ?, close_date = ?, loss_reason = ? WHERE id = ?",
                     (stage, ctx.today(), None if outcome == "won" else reason.strip(), opportunity_id))
    if outcome == "won":
        ctx.conn.execute("UPDATE quotes SET status = 'accepted' WHERE id = ?", (quotes[-1]["id"],))
    return {"opportunity_id": opportunity_id, "stage": stage, "close_date": ctx.today()}

