"""What the helpdesk templates share beyond the kit: personas, internal data, write tools, delivered orders.

The refund templates pick from the delivered orders with their refund state (:func:`delivered_orders`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from arena.authoring import Persona, Template, TraceAssertion, WorldView, finds_only, reads_only, search
from arena.gyms.helpdesk.rules import PRICE_PROTECTION_DAYS, TODAY, eligibility, line_price_drop
from arena.gyms.helpdesk.world import HelpdeskKnobs

View = WorldView[HelpdeskKnobs]
"""What a helpdesk template reads."""

HelpdeskTemplate = Template[HelpdeskKnobs]
"""A helpdesk task template."""

AGENT = Persona(name="Sam Rivera", role="agent", permissions=["credit", "orders", "refunds", "tickets"])
"""Front-line support agent: every write permission except approvals."""

MANAGER = Persona(name="Dana Okafor", role="manager",
                  permissions=["approvals", "credit", "orders", "refunds", "tickets"])
"""Support manager: may also approve refunds above the approval limit."""

TOKEN_PATTERN = r"tok_[0-9a-f]{16}"
"""Payment tokens: never shown to customers."""

WRITE_TOOLS = ("reply_to_ticket", "update_ticket_status", "escalate_ticket", "add_internal_note", "issue_refund",
               "cancel_order", "update_shipping_address", "apply_store_credit", "create_return_authorization",
               "request_manager_approval", "approve_refund")
"""Every write tool: read-only tasks forbid them all."""


def no_writes(description: str, required: Sequence[tuple[str, dict[str, Any]]]) -> TraceAssertion:
    """A trace check requiring ``required`` calls and forbidding every write."""
    return reads_only(description, required, WRITE_TOOLS)


def singled_out(w: View, entity: str, query: str, target: str, hint: dict[str, str]) -> bool:
    """Whether searching ``query`` finds ``target`` and ``hint`` tells it apart from every other hit.

    A hit matches the hint when each hinted field equals the hint's value (case-insensitive);
    without a hint, the target must be the only hit.
    """
    if not hint:
        return finds_only(w.conn, entity, query, target)
    hits = search(w.conn, entity, query)

    def matches(hit: dict[str, object]) -> bool:
        return all(str(hit.get(k, "")).casefold() == v.casefold() for k, v in hint.items())

    return [h.get("id") for h in hits if matches(h)] == [target]


PRICE_WINDOW = PRICE_PROTECTION_DAYS
"""Days after delivery during which price protection applies."""


@dataclass(frozen=True)
class Line:
    """An order line with its product."""

    id: str
    product_id: str
    product: str
    quantity: int
    unit_price: float
    line_total: float


@dataclass(frozen=True)
class Delivered:
    """A delivered order and what the refund rules say about it today."""

    id: str
    customer_id: str
    customer: str
    currency: str
    total: float
    tier: str
    delivered_on: str
    days_since: int
    eligible: bool
    window_days: int
    window_ends: str
    refundable: float
    lines: tuple[Line, ...]
    refunds: int


def delivered_orders(w: View) -> list[Delivered]:
    """Every order with status ``delivered`` delivered in the last 150 days, in id order."""
    return w.memo("delivered", lambda: _delivered(w))


def _delivered(w: View) -> list[Delivered]:
    rows = w.rows(
        "SELECT o.id, o.customer_id, c.name, o.currency, o.total, c.tier, substr(MAX(s.delivered_at), 1, 10) AS day "
        "FROM orders o JOIN customers c ON c.id = o.customer_id JOIN shipments s ON s.order_id = o.id "
        "WHERE o.status = 'delivered' AND s.delivered_at >= '2025-01-15' GROUP BY o.id ORDER BY o.id")
    lines: dict[str, list[Line]] = {}
    for r in w.rows("SELECT l.id, l.order_id, l.product_id, p.name, l.quantity, l.unit_price, l.line_total "
                    "FROM order_lines l JOIN products p ON p.id = l.product_id "
                    "JOIN shipments s ON s.order_id = l.order_id WHERE s.delivered_at >= '2025-01-15' ORDER BY l.id"):
        lines.setdefault(str(r["order_id"]), []).append(Line(
            str(r["id"]), str(r["product_id"]), str(r["name"]), int(str(r["quantity"])),
            float(str(r["unit_price"])), float(str(r["line_total"]))))
    out = []
    for r in rows:
        oid = str(r["id"])
        check = eligibility(w.conn, oid, TODAY)
        refunds = w.one("SELECT COUNT(*) AS n FROM refunds WHERE order_id = ?", (oid,))["n"]
        out.append(Delivered(
            id=oid, customer_id=str(r["customer_id"]), customer=str(r["name"]), currency=str(r["currency"]),
            total=float(str(r["total"])), tier=str(r["tier"]), delivered_on=str(r["day"]),
            days_since=(TODAY - date.fromisoformat(str(r["day"]))).days,
            eligible=bool(check["eligible"]), window_days=int(str(check["return_window_days"])),
            window_ends=str(check["window_ends"]), refundable=float(str(check["refundable_amount"])),
            lines=tuple(lines.get(oid, ())), refunds=int(refunds)))
    return out


def price_drop(w: View, order: Delivered, line: Line) -> float:
    """The price-protection amount of a line today: (paid − current price) × quantity, or 0."""
    return line_price_drop(w.conn, line.product_id, line.quantity, line.unit_price, order.currency, TODAY)
