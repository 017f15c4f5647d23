"""Business rules shared by the helpdesk tools and the task builders (one source of truth)."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import date, datetime, timedelta

from arena.core.toolkit import InvalidArgument

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

SEARCH_LIMIT = 20
"""Most summaries a search returns."""

PRICE_PROTECTION_DAYS = 14
"""Days after delivery during which a price drop is refunded as a ``prorated`` refund."""

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LEGACY_DATE = re.compile(r"^(\d{2})/(\d{2})/(\d{4})$")


def money(value: float) -> float:
    """Round an amount to cents (half away from zero for positive amounts)."""
    return round(value + 1e-9, 2)


def convert(usd: float, currency: str) -> float:
    """Convert a US-dollar price into ``currency``, rounded to cents."""
    return money(usd * RATES[currency])


def parse_date(value: str, param: str) -> date:
    """Parse a ``YYYY-MM-DD`` argument.

    Raises:
        InvalidArgument: Any other format, naming the parameter and the value.
    """
    if not _ISO_DATE.match(value):
        raise InvalidArgument(f"{param}: {value!r} is not a date in YYYY-MM-DD format")
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidArgument(f"{param}: {value!r} is not a valid calendar date") from exc


def legacy_to_iso(value: str) -> str:
    """Turn a legacy ``MM/DD/YYYY`` date (as stored in old rows) into ``YYYY-MM-DD``.

    Raises:
        ValueError: ``value`` is not a legacy date.
    """
    match = _LEGACY_DATE.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a legacy MM/DD/YYYY date")
    month, day, year = match.groups()
    return f"{year}-{month}-{day}"


def iso_to_legacy(value: str) -> str:
    """Turn ``YYYY-MM-DD`` into the legacy ``MM/DD/YYYY`` form."""
    year, month, day = value.split("-")
    return f"{month}/{day}/{year}"


def placed_on(placed_at: str | None, legacy_created: str | None) -> str:
    """The ISO date an order was placed, whichever column holds it."""
    if placed_at:
        return placed_at[:10]
    if legacy_created:
        return legacy_to_iso(legacy_created)
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
    return money(float(row[0]))


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
    refundable = money(total - refunded_total(conn, order_id))
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
    return money(due)


def line_price_drop(conn: sqlite3.Connection, product_id: str, quantity: int, unit_price: float, currency: str,
                    today: date) -> float:
    """(price paid − today's promotional price) × quantity of one order line, or 0 without a promotion."""
    usd, promo = current_price_usd(conn, product_id, today)
    if promo is None:
        return 0.0
    return money(max(0.0, unit_price - convert(usd, currency)) * quantity)


def search_summaries(conn: sqlite3.Connection, entity: str, query: str) -> list[dict[str, object]]:
    """The search-index summaries of ``entity`` whose text holds every word of ``query`` (at most ``SEARCH_LIMIT``).

    Raises:
        InvalidArgument: The query is too short, naming it.
    """
    tokens = query.lower().split()
    if not tokens or len(query.strip()) < 2:
        raise InvalidArgument(f"query: {query!r} is too short; give a name, title or email")
    clauses = " AND ".join("instr(search_text, ?) > 0" for _ in tokens)
    rows = conn.execute(
        f"SELECT summary FROM search_index WHERE entity = ? AND {clauses} ORDER BY entity_id LIMIT ?",
        (entity, *tokens, SEARCH_LIMIT),
    ).fetchall()
    return [json.loads(r[0]) for r in rows]
