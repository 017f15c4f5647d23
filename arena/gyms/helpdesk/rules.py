"""Business rules shared by the helpdesk tools and the task builders (one source of truth)."""

from __future__ import annotations

import sqlite3
from datetime import date, datetime, timedelta

from arena.authoring import cents, read_date

CLOCK_START = "2025-06-15T09:00:00"
"""The world's "now": every episode's clock starts within the hour after it."""

TODAY = datetime.fromisoformat(CLOCK_START).date()
"""The world's current date."""

RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79}
"""Fixed conversion rates from US dollars to each order currency."""

REFUND_TYPES = ("partial", "prorated")
"""Refund types the refund tool accepts (policy.md defines them)."""

TICKET_STATUSES = ("open", "pending", "solved", "closed")
"""Ticket statuses the status tool accepts."""

PRICE_PROTECTION_DAYS = 14
"""Days after delivery during which a price drop is refunded as a ``prorated`` refund."""


def convert(usd: float, currency: str) -> float:
    """Convert a US-dollar price into ``currency``, rounded to cents."""
    return cents(usd * RATES[currency])


def placed_on(placed_at: str | None, legacy_created: str | None) -> str:
    """The ISO date an order was placed, whichever column holds it."""
    if placed_at:
        return placed_at[:10]
    if legacy_created:
        return read_date(legacy_created).isoformat()
    return ""


def approval_limit(conn: sqlite3.Connection) -> float:
    """Refund amount above which an approved manager approval is required."""
    row = conn.execute("SELECT value FROM settings WHERE id = 'approval_limit'").fetchone()
    return float(row[0])


def tier_rules(conn: sqlite3.Connection, tier: str) -> tuple[int, float]:
    """Return ``(return_window_days, store_credit_limit)`` for a loyalty tier."""
    row = conn.execute(
        "SELECT return_window_days, store_credit_limit FROM loyalty_tiers WHERE id = ?", (tier,)
    ).fetchone()
    return int(row[0]), float(row[1])


def refunded_total(conn: sqlite3.Connection, order_id: str) -> float:
    """Sum of completed refunds of an order."""
    row = conn.execute(
        "SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ? AND status = 'completed'", (order_id,)
    ).fetchone()
    return cents(float(row[0]))


def eligibility(conn: sqlite3.Connection, order_id: str, today: date) -> dict[str, object]:
    """Evaluate the refund and return eligibility of an existing order.

    Returns:
        ``eligible``, ``reason``, ``delivered_on``, ``return_window_days``,
        ``window_ends``, ``refundable_amount``, ``currency``, ``tier`` and
        ``approval_required_above``.
    """
    order = conn.execute(
        "SELECT o.total, o.currency, o.status, c.tier FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE o.id = ?",
        (order_id,),
    ).fetchone()
    total, currency, status, tier = float(order[0]), str(order[1]), str(order[2]), str(order[3])
    window_days, _ = tier_rules(conn, tier)
    delivered = conn.execute(
        "SELECT MAX(delivered_at) FROM shipments WHERE order_id = ? AND delivered_at IS NOT NULL", (order_id,)
    ).fetchone()[0]
    refundable = cents(total - refunded_total(conn, order_id))
    result: dict[str, object] = {
        "order_id": order_id,
        "eligible": False,
        "reason": "",
        "delivered_on": None,
        "return_window_days": window_days,
        "window_ends": None,
        "refundable_amount": refundable,
        "currency": currency,
        "tier": tier,
        "approval_required_above": approval_limit(conn),
    }
    if delivered is None:
        result["reason"] = f"order is {status} and has not been delivered; refunds and returns start after delivery"
        return result
    delivered_on = date.fromisoformat(str(delivered)[:10])
    ends = delivered_on + timedelta(days=window_days)
    result["delivered_on"] = delivered_on.isoformat()
    result["window_ends"] = ends.isoformat()
    if today > ends:
        result["reason"] = f"the {window_days}-day return window ({tier} tier) ended on {ends.isoformat()}"
        return result
    if refundable <= 0:
        result["reason"] = "the order has already been refunded in full"
        return result
    result["eligible"] = True
    result["reason"] = f"delivered on {delivered_on.isoformat()}; the return window is open until {ends.isoformat()}"
    return result


def current_price_usd(conn: sqlite3.Connection, product_id: str, today: date) -> tuple[float, str | None]:
    """Return a product's price today in US dollars and the active promotion's name, if any."""
    promo = conn.execute(
        "SELECT price_usd, promotion FROM seasonal_prices WHERE product_id = ? AND starts_on <= ? AND ends_on >= ? "
        "ORDER BY price_usd, id LIMIT 1",
        (product_id, today.isoformat(), today.isoformat()),
    ).fetchone()
    if promo is not None:
        return float(promo[0]), str(promo[1])
    base = conn.execute("SELECT base_price_usd FROM products WHERE id = ?", (product_id,)).fetchone()
    return float(base[0]), None


def price_protection_amount(conn: sqlite3.Connection, order_id: str, today: date) -> float:
    """The price-protection refund an order is due today.

    Within ``PRICE_PROTECTION_DAYS`` after delivery, each line whose product is cheaper today
    (an active promotion) is due (price paid − today's price) × quantity; otherwise nothing.
    """
    delivered = conn.execute(
        "SELECT MAX(delivered_at) FROM shipments WHERE order_id = ? AND delivered_at IS NOT NULL", (order_id,)
    ).fetchone()[0]
    if delivered is None or today > date.fromisoformat(str(delivered)[:10]) + timedelta(days=PRICE_PROTECTION_DAYS):
        return 0.0
    currency = str(conn.execute("SELECT currency FROM orders WHERE id = ?", (order_id,)).fetchone()[0])
    due = 0.0
    for product_id, quantity, unit_price in conn.execute(
            "SELECT product_id, quantity, unit_price FROM order_lines WHERE order_id = ? ORDER BY id", (order_id,)):
        due += line_price_drop(conn, str(product_id), int(quantity), float(unit_price), currency, today)
    return cents(due)


def line_price_drop(conn: sqlite3.Connection, product_id: str, quantity: int, unit_price: float, currency: str,
                    today: date) -> float:
    """(price paid − today's promotional price) × quantity of one order line, or 0 without a promotion."""
    usd, promo = current_price_usd(conn, product_id, today)
    if promo is None:
        return 0.0
    return cents(max(0.0, unit_price - convert(usd, currency)) * quantity)
