"""The helpdesk tools: lookups, ticket handling, refunds, cancellations, credits and returns."""

from __future__ import annotations

import re
from typing import Any

from arena.authoring import (
    Conflict,
    InvalidArgument,
    PolicyViolation,
    ToolContext,
    cents,
    fetch,
    iso_date,
    positive_amount,
    search,
    tool,
)
from arena.gyms.helpdesk.rules import (
    REFUND_TYPES,
    TICKET_STATUSES,
    approval_limit,
    convert,
    current_price_usd,
    eligibility,
    placed_on,
    price_protection_amount,
    refunded_total,
    tier_rules,
)
from arena.gyms.helpdesk.world_catalog import FORM_FACTOR_SIZE

_ID_FORMS = {
    "customer": "CUS", "order": "ORD", "product": "PRD", "shipment": "SHP", "ticket": "TCK", "approval": "APR",
}
_ID = re.compile(r"^([A-Z]{2,4})-(N?\d{4,6})$")


def _check_id(value: str, entity: str, param: str) -> str:
    prefix = _ID_FORMS[entity]
    match = _ID.match(value)
    if match is None or match.group(1) != prefix:
        raise InvalidArgument(f"{param}: {value!r} is not a {entity} id (expected the form {prefix}-12345)")
    return value


def _record(ctx: ToolContext, table: str, entity: str, value: str, param: str) -> dict[str, Any]:
    """The record an id names, its form checked first (a malformed id is the agent's mistake, not a missing record)."""
    return fetch(ctx, table, _check_id(value, entity, param), entity)


def _text(value: str, param: str, *, low: int = 1, high: int = 2000) -> str:
    cleaned = value.strip()
    if not low <= len(cleaned) <= high:
        raise InvalidArgument(f"{param}: must hold {low} to {high} characters, got {len(cleaned)}")
    return cleaned


def _order_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "status": row["status"], "placed_on": placed_on(row["placed_at"], row["legacy_created"]),
            "total": row["total"], "currency": row["currency"]}


@tool(mode="read", entity="customer", operation="search")
def search_customers(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search customers by name or email; returns short summaries from the search index (may be stale).

    Args:
        query: Words of the customer's name or email. Ids are not searchable.
    """
    return search(ctx, "customer", query)


@tool(mode="read", entity="customer", operation="get")
def get_customer(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """Fetch a customer's full, current record with orders, tickets, tier rules and internal notes.

    Args:
        customer_id: The customer id, e.g. CUS-10001.
    """
    row = _record(ctx, "customers", "customer", customer_id, "customer_id")
    window, limit = tier_rules(ctx.conn, row["tier"])
    row["tier_rules"] = {"return_window_days": window, "store_credit_limit": limit}
    row["orders"] = [_order_summary(o) for o in ctx.all(
        "SELECT * FROM orders WHERE customer_id = ? ORDER BY id", (customer_id,))]
    row["tickets"] = ctx.all("SELECT id, subject, status, order_id FROM tickets WHERE customer_id = ? ORDER BY id",
                             (customer_id,))
    row["internal_notes"] = ctx.all("SELECT id, author_id, body, created_at FROM internal_notes WHERE entity_id = ? "
                                    "ORDER BY id", (customer_id,))
    return row


@tool(mode="read", entity="order", operation="search")
def search_orders(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search orders by the customer's name or email or a product name; summaries may be stale.

    Args:
        query: Words of a customer name, email or product name. Ids are not searchable.
    """
    return search(ctx, "order", query)


@tool(mode="read", entity="order", operation="get")
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Fetch an order's full, current record: lines, payments, shipments, refunds, returns, approvals, notes.

    The record also states ``price_protection_amount``: the price-protection refund due today
    ((price paid − today's price) × quantity of each line whose price dropped, within 14 days
    after delivery; 0 otherwise).

    Args:
        order_id: The order id, e.g. ORD-10001.
    """
    row = _record(ctx, "orders", "order", order_id, "order_id")
    row["placed_on"] = placed_on(row["placed_at"], row["legacy_created"])
    row["customer"] = ctx.one("SELECT id, name, email, tier FROM customers WHERE id = ?", (row["customer_id"],))
    row["lines"] = ctx.all("SELECT l.id, l.product_id, p.name AS product_name, l.quantity, l.unit_price, l.line_total "
                           "FROM order_lines l JOIN products p ON p.id = l.product_id WHERE l.order_id = ? "
                           "ORDER BY l.id", (order_id,))
    row["payments"] = ctx.all("SELECT * FROM payments WHERE order_id = ? ORDER BY id", (order_id,))
    row["shipments"] = ctx.all("SELECT s.*, c.name AS carrier FROM shipments s JOIN carriers c ON c.id = s.carrier_id "
                               "WHERE s.order_id = ? ORDER BY s.id", (order_id,))
    row["refunds"] = ctx.all("SELECT * FROM refunds WHERE order_id = ? ORDER BY id", (order_id,))
    row["return_authorizations"] = ctx.all("SELECT * FROM return_authorizations WHERE order_id = ? ORDER BY id",
                                           (order_id,))
    row["approvals"] = ctx.all("SELECT * FROM approvals WHERE order_id = ? ORDER BY id", (order_id,))
    row["internal_notes"] = ctx.all("SELECT id, author_id, body, created_at FROM internal_notes WHERE entity_id = ? "
                                    "ORDER BY id", (order_id,))
    row["price_protection_amount"] = price_protection_amount(ctx.conn, order_id, ctx.now.date())
    return row


@tool(mode="read", entity="order", operation="list")
def list_customer_orders(
    ctx: ToolContext, customer_id: str, placed_on_date: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """List a customer's orders from the live order table, optionally filtered.

    Args:
        customer_id: The customer id, e.g. CUS-10001.
        placed_on_date: Only orders placed on this date (YYYY-MM-DD).
        status: Only orders with this status (processing, on_hold, shipped, delivered, cancelled).
    """
    _record(ctx, "customers", "customer", customer_id, "customer_id")
    day = iso_date(placed_on_date, "placed_on_date").isoformat() if placed_on_date is not None else None
    out = []
    for row in ctx.all("SELECT * FROM orders WHERE customer_id = ? ORDER BY id", (customer_id,)):
        summary = _order_summary(row)
        if (day is None or summary["placed_on"] == day) and (status is None or row["status"] == status):
            out.append(summary)
    return out


@tool(mode="read", entity="product", operation="search")
def search_products(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search the catalog by product name, brand or category.

    Args:
        query: Words of the product name, brand or category. Ids are not searchable.
    """
    return search(ctx, "product", query)


@tool(mode="read", entity="product", operation="get")
def get_product(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Fetch a product with its specs and today's price in each currency (seasonal promotions applied).

    Args:
        product_id: The product id, e.g. PRD-1001.
    """
    row = _record(ctx, "products", "product", product_id, "product_id")
    price, promotion = current_price_usd(ctx.conn, product_id, ctx.now.date())
    row["current_price"] = {cur: convert(price, cur) for cur in ("USD", "EUR", "GBP")}
    row["active_promotion"] = promotion
    return row


def _compat_issues(items: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_cat.setdefault(item["category"], []).append(item)
    issues: list[str] = []
    checks: list[str] = []
    for board in by_cat.get("motherboard", []):
        for cpu in by_cat.get("cpu", []):
            checks.append(f"{cpu['name']} ({cpu['socket']}) on {board['name']} ({board['socket']})")
            if cpu["socket"] != board["socket"]:
                issues.append(f"socket mismatch: {cpu['name']} is {cpu['socket']}, "
                              f"{board['name']} is {board['socket']}")
        for ram in by_cat.get("memory", []):
            checks.append(f"{ram['name']} on {board['name']} ({board['memory_type']})")
            if ram["memory_type"] != board["memory_type"]:
                issues.append(f"memory mismatch: {ram['name']} is {ram['memory_type']}, "
                              f"{board['name']} takes {board['memory_type']}")
        for case in by_cat.get("case", []):
            checks.append(f"{board['name']} ({board['form_factor']}) in {case['name']} ({case['form_factor']})")
            if FORM_FACTOR_SIZE[board["form_factor"]] > FORM_FACTOR_SIZE[case["form_factor"]]:
                issues.append(f"form factor: {board['name']} is {board['form_factor']}, "
                              f"{case['name']} fits up to {case['form_factor']}")
    for cooler in by_cat.get("cooler", []):
        for cpu in by_cat.get("cpu", []):
            checks.append(f"{cooler['name']} on {cpu['socket']}")
            if cpu["socket"] not in cooler["socket"].split(","):
                issues.append(f"cooler: {cooler['name']} does not support {cpu['socket']}")
    draw = sum(int(i["tdp"] or 0) for i in by_cat.get("cpu", []) + by_cat.get("gpu", []))
    for psu in by_cat.get("psu", []):
        need = round(draw * 1.5)
        checks.append(f"{psu['name']} ({psu['wattage']} W) for {draw} W of CPU and GPU power")
        if draw and psu["wattage"] < need:
            issues.append(f"power: {psu['name']} gives {psu['wattage']} W, the build needs at least {need} W")
    return issues, checks


@tool(mode="read", entity="product", operation="action")
def check_compatibility(ctx: ToolContext, product_ids: list[str]) -> dict[str, Any]:
    """Check whether catalog products work together (sockets, memory, form factor, power).

    The answer states ``verdict`` (``compatible`` or ``not compatible``) and each issue found.

    Args:
        product_ids: Two to six product ids, e.g. ["PRD-1001", "PRD-1042"].
    """
    if not 2 <= len(product_ids) <= 6:
        raise InvalidArgument(f"product_ids: give 2 to 6 product ids, got {len(product_ids)}")
    items = [_record(ctx, "products", "product", pid, "product_ids") for pid in product_ids]
    issues, checks = _compat_issues(items)
    return {"compatible": not issues, "verdict": "not compatible" if issues else "compatible", "issues": issues,
            "checked": checks,
            "products": [{"id": i["id"], "name": i["name"], "category": i["category"], "socket": i["socket"],
                          "form_factor": i["form_factor"], "memory_type": i["memory_type"]} for i in items]}


@tool(mode="read", entity="shipment", operation="get")
def get_shipment(ctx: ToolContext, shipment_id: str) -> dict[str, Any]:
    """Fetch a shipment with its carrier, tracking number, tracking link and delivery dates.

    Args:
        shipment_id: The shipment id, e.g. SHP-100001.
    """
    row = _record(ctx, "shipments", "shipment", shipment_id, "shipment_id")
    carrier = ctx.one("SELECT * FROM carriers WHERE id = ?", (row["carrier_id"],))
    if carrier is not None:
        row["carrier"] = carrier["name"]
        row["tracking_url"] = str(carrier["tracking_url"]).format(row["tracking_number"])
    return row


@tool(mode="read", entity="ticket", operation="search")
def search_tickets(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search support tickets by subject words or the customer's name or email; summaries may be stale.

    Args:
        query: Words of the subject, customer name or email. Ids are not searchable.
    """
    return search(ctx, "ticket", query)


@tool(mode="read", entity="ticket", operation="get")
def get_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    """Fetch a ticket's full, current record with its customer and every message (internal ones flagged).

    Args:
        ticket_id: The ticket id, e.g. TCK-50001.
    """
    row = _record(ctx, "tickets", "ticket", ticket_id, "ticket_id")
    row["customer"] = ctx.one("SELECT id, name, email, tier FROM customers WHERE id = ?", (row["customer_id"],))
    row["messages"] = ctx.all("SELECT * FROM ticket_messages WHERE ticket_id = ? ORDER BY id", (ticket_id,))
    staff = ctx.one("SELECT name FROM staff WHERE id = ?", (row["assigned_to"],)) if row["assigned_to"] else None
    row["assigned_to_name"] = staff["name"] if staff else None
    return row


@tool(mode="read", entity="approval", operation="get")
def get_approval(ctx: ToolContext, approval_id: str) -> dict[str, Any]:
    """Fetch a manager approval request and its decision.

    Args:
        approval_id: The approval id, e.g. APR-1001.
    """
    return _record(ctx, "approvals", "approval", approval_id, "approval_id")


def _open_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    row = _record(ctx, "tickets", "ticket", ticket_id, "ticket_id")
    if row["status"] == "closed":
        raise PolicyViolation(f"ticket {ticket_id} is closed; closed tickets cannot be changed")
    return row


@tool(mode="write", permission="tickets", entity="ticket", operation="create")
def reply_to_ticket(ctx: ToolContext, ticket_id: str, message: str) -> dict[str, Any]:
    """Send a reply to the customer on a ticket (the customer sees the message).

    Args:
        ticket_id: The ticket id, e.g. TCK-50001.
        message: The message text the customer receives.
    """
    _open_ticket(ctx, ticket_id)
    body = _text(message, "message", high=4000)
    mid = ctx.new_id("MSG")
    now = ctx.now.replace(microsecond=0).isoformat()
    ctx.conn.execute("INSERT INTO ticket_messages VALUES (?, ?, ?, 'agent', 0, ?, ?)",
                     (mid, ticket_id, ctx.persona.name, body, now))
    ctx.conn.execute("UPDATE tickets SET updated_at = ? WHERE id = ?", (now, ticket_id))
    return {"message_id": mid, "ticket_id": ticket_id}


@tool(mode="write", permission="tickets", entity="ticket", operation="update")
def update_ticket_status(
    ctx: ToolContext, ticket_id: str, status: str, follow_up_date: str | None = None
) -> dict[str, Any]:
    """Set a ticket's status, optionally with a follow-up date.

    Args:
        ticket_id: The ticket id, e.g. TCK-50001.
        status: One of open, pending, solved, closed.
        follow_up_date: Date to follow up (YYYY-MM-DD, today or later).
    """
    _open_ticket(ctx, ticket_id)
    if status not in TICKET_STATUSES:
        raise InvalidArgument(f"status: {status!r} is not one of {', '.join(TICKET_STATUSES)}")
    follow = None
    if follow_up_date is not None:
        follow = iso_date(follow_up_date, "follow_up_date")
        if follow < ctx.now.date():
            raise InvalidArgument(f"follow_up_date: {follow_up_date} is in the past")
    now = ctx.now.replace(microsecond=0).isoformat()
    ctx.conn.execute("UPDATE tickets SET status = ?, follow_up_date = COALESCE(?, follow_up_date), updated_at = ? "
                     "WHERE id = ?", (status, follow.isoformat() if follow else None, now, ticket_id))
    return {"ticket_id": ticket_id, "status": status, "follow_up_date": follow.isoformat() if follow else None}


@tool(mode="write", permission="tickets", entity="ticket", operation="update")
def escalate_ticket(ctx: ToolContext, ticket_id: str, reason: str, due_date: str | None = None) -> dict[str, Any]:
    """Escalate a ticket to the second-level team (priority becomes urgent).

    Args:
        ticket_id: The ticket id, e.g. TCK-50001.
        reason: Why the ticket needs escalation.
        due_date: Date by which it must be handled (YYYY-MM-DD, today or later).
    """
    row = _open_ticket(ctx, ticket_id)
    if row["escalated"]:
        raise Conflict(f"ticket {ticket_id} is already escalated")
    text = _text(reason, "reason", high=500)
    due = None
    if due_date is not None:
        due = iso_date(due_date, "due_date")
        if due < ctx.now.date():
            raise InvalidArgument(f"due_date: {due_date} is in the past")
    now = ctx.now.replace(microsecond=0).isoformat()
    ctx.conn.execute("UPDATE tickets SET escalated = 1, escalation_reason = ?, escalation_due = ?, "
                     "priority = 'urgent', updated_at = ? WHERE id = ?",
                     (text, due.isoformat() if due else None, now, ticket_id))
    return {"ticket_id": ticket_id, "escalated": True, "due_date": due.isoformat() if due else None}


@tool(mode="write", permission="tickets", entity="note", operation="create")
def add_internal_note(ctx: ToolContext, entity_id: str, body: str) -> dict[str, Any]:
    """Add an internal note (never shown to customers) to a customer, order or ticket.

    Args:
        entity_id: A customer, order or ticket id, e.g. ORD-10001.
        body: The note text.
    """
    tables = {"CUS": ("customers", "customer"), "ORD": ("orders", "order"), "TCK": ("tickets", "ticket")}
    prefix = entity_id.split("-", 1)[0]
    if prefix not in tables:
        raise InvalidArgument(f"entity_id: {entity_id!r} is not a customer, order or ticket id")
    table, entity = tables[prefix]
    _record(ctx, table, entity, entity_id, "entity_id")
    nid = ctx.new_id("NOTE")
    staff = ctx.one("SELECT id FROM staff WHERE name = ?", (ctx.persona.name,))
    ctx.conn.execute("INSERT INTO internal_notes VALUES (?, ?, ?, ?, ?, ?)",
                     (nid, entity, entity_id, staff["id"] if staff else ctx.persona.name, _text(body, "body"),
                      ctx.now.replace(microsecond=0).isoformat()))
    return {"note_id": nid, "entity_id": entity_id}


@tool(mode="read", entity="order", operation="action")
def check_refund_eligibility(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Check whether an order can be refunded or returned today (return window, balance, approval limit).

    Args:
        order_id: The order id, e.g. ORD-10001.
    """
    _record(ctx, "orders", "order", order_id, "order_id")
    return eligibility(ctx.conn, order_id, ctx.now.date())


@tool(mode="write", permission="refunds", entity="approval", operation="create")
def request_manager_approval(ctx: ToolContext, order_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Ask a manager to approve a refund above the approval limit; the request starts pending.

    Args:
        order_id: The order id, e.g. ORD-10001.
        amount: Refund amount to approve, in the order's currency.
        reason: Why the refund is needed.
    """
    order = _record(ctx, "orders", "order", order_id, "order_id")
    value = positive_amount(amount, "amount", most=1_000_000, whole_cents=True)
    refundable = cents(order["total"] - refunded_total(ctx.conn, order_id))
    if value > refundable + 1e-9:
        raise PolicyViolation(f"amount: {value:.2f} exceeds the refundable balance {refundable:.2f} "
                              f"{order['currency']}")
    aid = ctx.new_id("APR")
    ctx.conn.execute("INSERT INTO approvals VALUES (?, ?, 'refund', ?, ?, 'pending', ?, ?, NULL, ?, NULL)",
                     (aid, order_id, value, order["currency"], _text(reason, "reason", high=500), ctx.persona.name,
                      ctx.now.replace(microsecond=0).isoformat()))
    return {"approval_id": aid, "status": "pending", "amount": value, "currency": order["currency"]}


@tool(mode="write", permission="approvals", entity="approval", operation="update")
def approve_refund(ctx: ToolContext, approval_id: str) -> dict[str, Any]:
    """Approve a pending refund approval request (managers only).

    Args:
        approval_id: The approval id, e.g. APR-1001.
    """
    row = _record(ctx, "approvals", "approval", approval_id, "approval_id")
    if row["status"] != "pending":
        raise PolicyViolation(f"approval {approval_id} is {row['status']}, only pending requests can be approved")
    ctx.conn.execute("UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ? WHERE id = ?",
                     (ctx.persona.name, ctx.now.replace(microsecond=0).isoformat(), approval_id))
    return {"approval_id": approval_id, "status": "approved", "amount": row["amount"], "currency": row["currency"]}


@tool(mode="write", permission="refunds", irreversible=True, entity="order", operation="action")
def issue_refund(
    ctx: ToolContext, order_id: str, amount: float, refund_type: str, reason: str, approval_id: str | None = None
) -> dict[str, Any]:
    """Refund money to the order's payment method (irreversible).

    Args:
        order_id: The order id, e.g. ORD-10001.
        amount: Amount in the order's currency.
        refund_type: partial or prorated (see the policy).
        reason: Why the money is refunded.
        approval_id: The approved manager approval, required above the approval limit.
    """
    order = _record(ctx, "orders", "order", order_id, "order_id")
    value = positive_amount(amount, "amount", most=1_000_000, whole_cents=True)
    if refund_type not in REFUND_TYPES:
        raise InvalidArgument(f"refund_type: {refund_type!r} is not one of {', '.join(REFUND_TYPES)}")
    text = _text(reason, "reason", high=500)
    check = eligibility(ctx.conn, order_id, ctx.now.date())
    if not check["eligible"]:
        raise PolicyViolation(f"order {order_id} cannot be refunded: {check['reason']}")
    refundable = float(str(check["refundable_amount"]))
    if value > refundable + 1e-9:
        raise PolicyViolation(f"amount: {value:.2f} exceeds the refundable balance {refundable:.2f} "
                              f"{order['currency']}")
    limit = approval_limit(ctx.conn)
    if value > limit:
        if approval_id is None:
            raise PolicyViolation(f"refunds above {limit:.2f} {order['currency']} need an approved manager approval "
                                  "(request_manager_approval, then pass approval_id)")
        approval = _record(ctx, "approvals", "approval", approval_id, "approval_id")
        if approval["order_id"] != order_id or approval["status"] != "approved" or approval["amount"] < value - 1e-9:
            raise PolicyViolation(f"approval {approval_id} is {approval['status']} for {approval['amount']:.2f} on "
                                  f"{approval['order_id']}; it does not cover {value:.2f} on {order_id}")
        used = ctx.one("SELECT id FROM refunds WHERE approval_id = ?", (approval_id,))
        if used is not None:
            raise PolicyViolation(f"approval {approval_id} was already used by refund {used['id']}")
    payment = ctx.one("SELECT id FROM payments WHERE order_id = ? AND status = 'captured' ORDER BY id", (order_id,))
    if payment is None:
        raise PolicyViolation(f"order {order_id} has no captured payment to refund")
    rid = ctx.new_id("RF")
    ctx.conn.execute("INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?, ?)",
                     (rid, order_id, payment["id"], value, order["currency"], refund_type, text, approval_id,
                      ctx.now.replace(microsecond=0).isoformat(), ctx.persona.name))
    return {"refund_id": rid, "order_id": order_id, "amount": value, "currency": order["currency"],
            "refund_type": refund_type, "status": "completed"}


def _unshipped(ctx: ToolContext, order_id: str, action: str) -> dict[str, Any]:
    order = _record(ctx, "orders", "order", order_id, "order_id")
    shipped = ctx.one("SELECT id, status FROM shipments WHERE order_id = ? ORDER BY id", (order_id,))
    if shipped is not None:
        raise PolicyViolation(f"cannot {action} order {order_id}: it has already shipped (shipment {shipped['id']} is "
                              f"{shipped['status']}); only orders not yet shipped qualify. Shipped items can be "
                              "returned after delivery, within the return window")
    if order["status"] not in ("processing", "on_hold"):
        raise PolicyViolation(f"cannot {action} order {order_id}: it is {order['status']}; only orders not yet "
                              "shipped qualify")
    return order


@tool(mode="write", permission="orders", irreversible=True, entity="order", operation="update")
def cancel_order(ctx: ToolContext, order_id: str, reason: str) -> dict[str, Any]:
    """Cancel an order that has not shipped and void its payment (irreversible).

    Args:
        order_id: The order id, e.g. ORD-10001.
        reason: Why the order is cancelled.
    """
    _unshipped(ctx, order_id, "cancel")
    now = ctx.now.replace(microsecond=0).isoformat()
    ctx.conn.execute("UPDATE orders SET status = 'cancelled', cancelled_at = ?, cancel_reason = ? WHERE id = ?",
                     (now, _text(reason, "reason", high=500), order_id))
    ctx.conn.execute("UPDATE payments SET status = 'voided' WHERE order_id = ? AND status = 'captured'", (order_id,))
    return {"order_id": order_id, "status": "cancelled", "payment": "voided"}


@tool(mode="write", permission="orders", entity="order", operation="update")
def update_shipping_address(ctx: ToolContext, order_id: str, address: str) -> dict[str, Any]:
    """Change the shipping address of an order that has not shipped.

    Args:
        order_id: The order id, e.g. ORD-10001.
        address: The full new address on one line.
    """
    _unshipped(ctx, order_id, "change the address of")
    text = _text(address, "address", low=10, high=200)
    ctx.conn.execute("UPDATE orders SET shipping_address = ? WHERE id = ?", (text, order_id))
    return {"order_id": order_id, "shipping_address": text}


@tool(mode="write", permission="credit", entity="customer", operation="update")
def apply_store_credit(
    ctx: ToolContext, customer_id: str, amount: float, reason: str, expires_on: str | None = None
) -> dict[str, Any]:
    """Add store credit to a customer's balance, within the loyalty tier's per-grant limit.

    Args:
        customer_id: The customer id, e.g. CUS-10001.
        amount: Credit in the customer's currency.
        reason: Why the credit is granted.
        expires_on: Expiry date of the credit (YYYY-MM-DD, after today).
    """
    customer = _record(ctx, "customers", "customer", customer_id, "customer_id")
    value = positive_amount(amount, "amount", most=1_000_000, whole_cents=True)
    _, limit = tier_rules(ctx.conn, customer["tier"])
    if value > limit:
        raise PolicyViolation(f"amount: {value:.2f} exceeds the {customer['tier']} tier limit of {limit:.2f} "
                              f"{customer['currency']} per grant")
    expiry = None
    if expires_on is not None:
        expiry = iso_date(expires_on, "expires_on")
        if expiry <= ctx.now.date():
            raise InvalidArgument(f"expires_on: {expires_on} is not after today")
    text = _text(reason, "reason", high=500)
    balance = cents(customer["store_credit"] + value)
    ctx.conn.execute("UPDATE customers SET store_credit = ? WHERE id = ?", (balance, customer_id))
    lid = ctx.new_id("SCL")
    ctx.conn.execute("INSERT INTO store_credit_ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (lid, customer_id, value, customer["currency"], text, expiry.isoformat() if expiry else None,
                      ctx.now.replace(microsecond=0).isoformat(), ctx.persona.name))
    return {"ledger_id": lid, "customer_id": customer_id, "amount": value, "balance": balance,
            "currency": customer["currency"], "expires_on": expiry.isoformat() if expiry else None}


@tool(mode="write", permission="orders", entity="return_authorization", operation="create")
def create_return_authorization(ctx: ToolContext, order_id: str, reason: str) -> dict[str, Any]:
    """Authorize the customer to send items of a delivered order back (inside the return window).

    Args:
        order_id: The order id, e.g. ORD-10001.
        reason: Why the items come back.
    """
    _record(ctx, "orders", "order", order_id, "order_id")
    check = eligibility(ctx.conn, order_id, ctx.now.date())
    if not check["eligible"]:
        raise PolicyViolation(f"order {order_id} cannot be returned: {check['reason']}")
    rid = ctx.new_id("RMA")
    ctx.conn.execute("INSERT INTO return_authorizations VALUES (?, ?, ?, 'authorized', ?, ?)",
                     (rid, order_id, _text(reason, "reason", high=500), ctx.now.replace(microsecond=0).isoformat(),
                      ctx.persona.name))
    return {"return_authorization_id": rid, "order_id": order_id, "status": "authorized",
            "return_by": check["window_ends"]}
