"""Business rules shared by the procurement tools and task builders.

The tools enforce these rules at call time; the task builders use the same
functions to compute the values their assertions expect, so a gold program and
its assertions never disagree.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Any

from arena.authoring import InvalidArgument, fetch, read_date, select

TODAY = date(2025, 3, 14)
"""The world's current date; every episode's clock starts on it."""

CLOCK_START = "2025-03-14T09:00:00"
"""ISO datetime at which episodes start."""

CURRENCIES = ("USD", "EUR", "GBP")
"""Currencies the world trades in; budgets and approval caps are in USD."""

PRICE_TOLERANCE = 0.02
"""Largest relative difference between invoiced and ordered unit price that still matches."""

DOC_TYPES = ("W9", "W8BEN", "INSURANCE")
"""Compliance document types: the US tax form, the foreign tax form, the insurance certificate."""

HOLD_REASONS = ("PRICE_MISMATCH", "QUANTITY_MISMATCH", "NO_RECEIPT", "DUPLICATE", "OTHER")
"""Reason codes ``hold_invoice`` accepts."""

COMMITTED_STATUSES = ("pending_approval", "approved")
"""Purchase-order statuses that consume cost-center budget."""

ROLE_PERMISSIONS: dict[str, list[str]] = {
    "requester": ["create_requisitions"],
    "buyer": ["create_requisitions", "create_purchase_orders", "manage_vendors", "receive_goods"],
    "approver": ["approve_purchase_orders"],
    "ap_clerk": ["receive_goods", "match_invoices", "hold_invoices", "pay_invoices"],
    "controller": ["approve_purchase_orders", "manage_vendors", "suspend_vendors", "match_invoices", "hold_invoices"],
}
"""Permissions of each persona role."""


def require_code(value: str, name: str, allowed: tuple[str, ...]) -> str:
    """Check an upper-case code argument against its allowed values.

    Raises:
        InvalidArgument: The value is not one of ``allowed`` (codes are upper case).
    """
    if value not in allowed:
        raise InvalidArgument(f"{name}: {value!r} is not one of {', '.join(allowed)} (codes are upper case)")
    return value


def usd_rate(conn: sqlite3.Connection, currency: str, on: date) -> float:
    """Return the USD value of one unit of ``currency`` on ``on`` (latest rate on or before it).

    Raises:
        InvalidArgument: No rate is known for the currency on that date.
    """
    if currency == "USD":
        return 1.0
    row = conn.execute(
        "SELECT usd_rate FROM exchange_rates WHERE currency = ? AND as_of <= ? ORDER BY as_of DESC LIMIT 1",
        (currency, on.isoformat()),
    ).fetchone()
    if row is None:
        raise InvalidArgument(f"no exchange rate for {currency!r} on or before {on.isoformat()}")
    return float(row[0])


def convert(conn: sqlite3.Connection, amount: float, source: str, target: str, on: date = TODAY) -> float:
    """Convert ``amount`` from ``source`` to ``target`` currency at the rates of ``on``, rounded to cents."""
    if source == target:
        return round(amount, 2)
    return round(amount * usd_rate(conn, source, on) / usd_rate(conn, target, on), 2)


def tax_document_type(country: str) -> str:
    """The tax form a vendor in ``country`` must file: ``W9`` in the US, ``W8BEN`` elsewhere."""
    return "W9" if country == "US" else "W8BEN"


def missing_documents(conn: sqlite3.Connection, vendor_id: str, country: str, today: date) -> list[str]:
    """Return the compliance problems blocking activation, e.g. ``["INSURANCE expired"]``."""
    problems: list[str] = []
    for doc_type in (tax_document_type(country), "INSURANCE"):
        expiries = [
            r[0]
            for r in conn.execute(
                "SELECT expires_on FROM compliance_documents WHERE vendor_id = ? AND doc_type = ?",
                (vendor_id, doc_type),
            )
        ]
        if any(e is None or read_date(e) >= today for e in expiries):
            continue
        problems.append(f"{doc_type} {'expired' if expiries else 'missing'}")
    return problems


def committed_usd(conn: sqlite3.Connection, cost_center_id: str, today: date) -> float:
    """USD value of the cost center's purchase orders awaiting or holding approval."""
    total = 0.0
    rows = conn.execute(
        "SELECT currency, SUM(total) FROM purchase_orders WHERE cost_center_id = ? AND status IN (?, ?) "
        "GROUP BY currency ORDER BY currency",
        (cost_center_id, *COMMITTED_STATUSES),
    ).fetchall()
    for currency, amount in rows:
        total += convert(conn, float(amount), currency, "USD", today)
    return round(total, 2)


def budget_status(conn: sqlite3.Connection, cost_center_id: str, today: date) -> dict[str, Any]:
    """Return a cost center's record with its committed and remaining budget (USD)."""
    cc = fetch(conn, "cost_centers", cost_center_id, "cost center")
    committed = committed_usd(conn, cost_center_id, today)
    return {
        **cc,
        "currency": "USD",
        "committed": committed,
        "remaining": round(float(cc["budget_total"]) - committed, 2),
    }


def po_usd_total(conn: sqlite3.Connection, po: dict[str, Any], today: date) -> float:
    """A purchase order's total in USD at the rates of ``today``."""
    return convert(conn, float(po["total"]), str(po["currency"]), "USD", today)


def required_approvals(conn: sqlite3.Connection, po: dict[str, Any], today: date) -> int:
    """Approvals a purchase order needs: 2 when its USD total exceeds its cost center's cap, else 1."""
    cap = conn.execute("SELECT approval_cap FROM cost_centers WHERE id = ?", (po["cost_center_id"],)).fetchone()[0]
    return 2 if po_usd_total(conn, po, today) > float(cap) else 1


def three_way_match(conn: sqlite3.Connection, invoice_id: str) -> dict[str, Any]:
    """Compare an invoice with its purchase order and goods receipts.

    A line matches when its unit price is within ``PRICE_TOLERANCE`` of the
    ordered price and its quantity does not exceed the quantity received.

    Returns:
        ``{"result": "matched" | "mismatch", "matched": bool, "reasons": [...], "hold_reason": first reason
        or None, "lines": [...]}``.
    """
    invoice = fetch(conn, "invoices", invoice_id, "invoice")
    receipts = conn.execute("SELECT COUNT(*) FROM goods_receipts WHERE purchase_order_id = ?",
                            (invoice["purchase_order_id"],)).fetchone()[0]
    reasons: list[str] = []
    lines: list[dict[str, Any]] = []
    if receipts == 0:
        reasons.append("NO_RECEIPT")
    rows = select(
        conn,
        "SELECT il.id, il.po_line_id, il.quantity, il.unit_price, pl.quantity AS ordered, pl.unit_price AS po_price, "
        "(SELECT COALESCE(SUM(rl.quantity), 0) FROM receipt_lines rl WHERE rl.po_line_id = il.po_line_id) AS received "
        "FROM invoice_lines il JOIN po_lines pl ON pl.id = il.po_line_id WHERE il.invoice_id = ? ORDER BY il.id",
        (invoice_id,),
    )
    for row in rows:
        price_ok = abs(row["unit_price"] - row["po_price"]) <= PRICE_TOLERANCE * row["po_price"] + 1e-9
        qty_ok = row["quantity"] <= row["received"] + 1e-9
        if not price_ok and "PRICE_MISMATCH" not in reasons:
            reasons.append("PRICE_MISMATCH")
        if not qty_ok and receipts and "QUANTITY_MISMATCH" not in reasons:
            reasons.append("QUANTITY_MISMATCH")
        lines.append({
            "invoice_line_id": row["id"], "po_line_id": row["po_line_id"],
            "invoiced_quantity": row["quantity"], "received_quantity": row["received"],
            "ordered_quantity": row["ordered"], "invoiced_price": row["unit_price"], "ordered_price": row["po_price"],
            "price_ok": price_ok, "quantity_ok": qty_ok,
        })
    return {"invoice_id": invoice_id, "result": "mismatch" if reasons else "matched", "matched": not reasons,
            "reasons": reasons, "hold_reason": reasons[0] if reasons else None, "lines": lines}


def delegation_covers(delegation: dict[str, Any], today: date) -> bool:
    """Whether ``today`` lies within the delegation's start and end dates (inclusive)."""
    start = read_date(str(delegation["start_date"]))
    end = read_date(str(delegation["end_date"]))
    return start <= today <= end
