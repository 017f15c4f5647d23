"""The CRM's tools for quotes: discounts, discount approvals and sending a quote to the customer."""

from __future__ import annotations

from typing import Any

from arena.authoring import (
    InvalidArgument,
    PolicyViolation,
    ToolContext,
    fetch,
    search,
    tool,
)

from .tools_common import account_of_opportunity, require_owner


def threshold(ctx: ToolContext) -> float:
    """The discount (percent) above which a quote needs an approved discount approval."""
    row = ctx.one("SELECT value FROM settings WHERE id = 'discount_threshold_pct'")
    return 15.0 if row is None else float(row["value"])


def _approval(ctx: ToolContext, quote: dict[str, Any]) -> dict[str, Any] | None:
    """The latest approval requested for the quote's current discount."""
    return ctx.one("SELECT id, status FROM discount_approvals WHERE quote_id = ? AND discount_pct = ? "
                   "ORDER BY requested_on DESC, id DESC", (quote["id"], quote["discount_pct"]))


def _own_quote(ctx: ToolContext, quote_id: str) -> dict[str, Any]:
    quote = fetch(ctx, "quotes", quote_id, "quote")
    opportunity = fetch(ctx, "opportunities", str(quote["opportunity_id"]), "opportunity")
    require_owner(ctx, account_of_opportunity(ctx, opportunity))
    return quote


def _draft(quote: dict[str, Any]) -> None:
    if quote["status"] != "draft":
        raise PolicyViolation(f"quote {quote['id']} is {quote['status']}, not a draft: it can no longer change")


@tool(mode="read", entity="quote", operation="search")
def search_quotes(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find quotes by their opportunity's or account's name (never by id); the cached status may be out of date.

    Args:
        query: Part of the opportunity's name, which starts with its account's name.
    """
    return search(ctx, "quote", query)


@tool(mode="read", entity="quote", operation="get")
def get_quote(ctx: ToolContext, quote_id: str) -> dict[str, Any]:
    """Fetch a quote with its lines and discount approvals.

    Args:
        quote_id: Quote id such as QTE-40017.
    """
    quote = fetch(ctx, "quotes", quote_id, "quote")
    quote["lines"] = ctx.all("SELECT l.id, p.name AS product, l.quantity, l.unit_price FROM quote_lines l "
                             "JOIN products p ON p.id = l.product_id WHERE l.quote_id = ? ORDER BY l.id", (quote_id,))
    quote["approvals"] = ctx.all("SELECT id, discount_pct, status FROM discount_approvals WHERE quote_id = ? "
                                 "ORDER BY id", (quote_id,))
    return quote


@tool(mode="read", entity="quote", operation="action")
def check_quote_discount(ctx: ToolContext, quote_id: str) -> dict[str, Any]:
    """Say whether a quote's discount needs a manager's approval before it is sent, and where that approval stands.

    Args:
        quote_id: Quote id.
    """
    quote = fetch(ctx, "quotes", quote_id, "quote")
    limit = threshold(ctx)
    needs = float(quote["discount_pct"]) > limit
    approval = _approval(ctx, quote) if needs else None
    status = "not needed" if not needs else ("not requested" if approval is None else str(approval["status"]))
    verdict = "within the threshold" if not needs else f"needs approval ({status})"
    return {"quote_id": quote_id, "discount_pct": quote["discount_pct"], "threshold_pct": limit,
            "needs_approval": needs, "approval_id": None if approval is None else approval["id"],
            "approval_status": status, "may_send": not needs or status == "approved", "verdict": verdict}


@tool(mode="read", entity="discount_approval", operation="get")
def get_discount_approval(ctx: ToolContext, approval_id: str) -> dict[str, Any]:
    """Fetch a discount approval: quote, discount, status, who asked and who decided.

    Args:
        approval_id: Approval id such as APR-50012.
    """
    return fetch(ctx, "discount_approvals", approval_id, "discount approval")


@tool(mode="write", permission="quotes", entity="quote", operation="update")
def set_quote_discount(ctx: ToolContext, quote_id: str, discount_pct: float) -> dict[str, Any]:
    """Change a draft quote's discount and recompute its net total (an approval covers only the discount it names).

    Args:
        quote_id: Quote id.
        discount_pct: The discount in percent, 0-50 (e.g. 12.5).
    """
    if not 0 <= discount_pct <= 50:
        raise InvalidArgument(f"discount_pct {discount_pct!r} is not between 0 and 50")
    quote = _own_quote(ctx, quote_id)
    _draft(quote)
    net = round(float(quote["list_total"]) * (1 - discount_pct / 100), 2)
    ctx.conn.execute("UPDATE quotes SET discount_pct = ?, net_total = ? WHERE id = ?",
                     (float(discount_pct), net, quote_id))
    return {"quote_id": quote_id, "discount_pct": float(discount_pct), "net_total": net,
            "needs_approval": discount_pct > threshold(ctx)}


@tool(mode="write", permission="quotes", entity="discount_approval", operation="create")
def request_discount_approval(ctx: ToolContext, quote_id: str, reason: str) -> dict[str, Any]:
    """Ask a manager to approve a draft quote's discount (needed above the discount threshold).

    Args:
        quote_id: Quote id.
        reason: Why the discount is justified, in a few words.
    """
    if not reason.strip():
        raise InvalidArgument("reason is empty")
    quote = _own_quote(ctx, quote_id)
    _draft(quote)
    limit = threshold(ctx)
    if float(quote["discount_pct"]) <= limit:
        raise PolicyViolation(f"quote {quote_id} has a {quote['discount_pct']:g}% discount, within the {limit:g}% "
                              "threshold: it needs no approval")
    approval = _approval(ctx, quote)
    if approval is not None and approval["status"] in ("pending", "approved"):
        raise PolicyViolation(f"quote {quote_id} already has discount approval {approval['id']} "
                              f"({approval['status']})")
    approval_id = ctx.new_id("APR")
    ctx.conn.execute("INSERT INTO discount_approvals VALUES (?, ?, ?, 'pending', ?, NULL, ?, ?)",
                     (approval_id, quote_id, quote["discount_pct"], ctx.persona.name, reason.strip(), ctx.today()))
    return {"approval_id": approval_id, "quote_id": quote_id, "discount_pct": quote["discount_pct"],
            "status": "pending"}


@tool(mode="write", permission="approvals", entity="discount_approval", operation="update")
def approve_discount(ctx: ToolContext, approval_id: str) -> dict[str, Any]:
    """Approve a pending discount approval (managers only).

    Args:
        approval_id: Approval id.
    """
    approval = fetch(ctx, "discount_approvals", approval_id, "discount approval")
    if approval["status"] != "pending":
        raise PolicyViolation(f"discount approval {approval_id} is {approval['status']}, not pending")
    ctx.conn.execute("UPDATE discount_approvals SET status = 'approved', decided_by = ? WHERE id = ?",
                     (ctx.persona.name, approval_id))
    return {"approval_id": approval_id, "quote_id": approval["quote_id"], "status": "approved"}


@tool(mode="write", permission="quotes", irreversible=True, entity="quote", operation="update")
def send_quote(ctx: ToolContext, quote_id: str) -> dict[str, Any]:
    """Send a draft quote to the customer (cannot be undone); a discount above the threshold needs an approval.

    Args:
        quote_id: Quote id.
    """
    quote = _own_quote(ctx, quote_id)
    _draft(quote)
    if str(quote["valid_until"]) < ctx.today():
        raise PolicyViolation(f"quote {quote_id} expired on {quote['valid_until']}: it can no longer be sent")
    limit = threshold(ctx)
    if float(quote["discount_pct"]) > limit:
        approval = _approval(ctx, quote)
        if approval is None or approval["status"] != "approved":
            where = "none was requested" if approval is None else f"approval {approval['id']} is {approval['status']}"
            raise PolicyViolation(f"quote {quote_id} has a {quote['discount_pct']:g}% discount, above the {limit:g}% "
                                  f"threshold: it cannot be sent without an approved discount approval ({where})")
    ctx.conn.execute("UPDATE quotes SET status = 'sent', sent_on = ? WHERE id = ?", (ctx.today(), quote_id))
    return {"quote_id": quote_id, "status": "sent", "sent_on": ctx.today(), "net_total": quote["net_total"]}
