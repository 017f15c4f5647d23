"""The seeded generator of the helpdesk world: a PC-components retailer's support back office."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import Field

from arena.authoring import (
    GymKnobs,
    IndexRow,
    WorldRows,
    cents,
    day_between,
    index_row,
    insert_rows,
    legacy_date,
    parse_knobs,
    pick,
    write_index,
)
from arena.gyms.helpdesk.rules import CLOCK_START, TODAY, convert
from arena.gyms.helpdesk.world_catalog import (
    CARRIERS,
    COUNTRIES,
    COUNTRY_WEIGHTS,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LAST_NAMES,
    NEAR_DUPLICATES,
    STAFF,
    STREETS,
    catalog,
)
from arena.gyms.helpdesk.world_schema import SCHEMA


class HelpdeskKnobs(GymKnobs):
    """Validated knobs of the helpdesk generator; each field's description is its documentation."""

    tasks_per_template: int = Field(default=2, ge=1, le=8, description="Tasks built from each task template "
                                    "(int, 1-8, default 2; 2 gives the standard set).")
    near_duplicate_rate: float = Field(default=0.08, ge=0.0, le=0.5, description="Share of customers generated in "
                                       "near-duplicate name clusters (0-0.5, default 0.08).")
    stale_rate: float = Field(default=0.06, ge=0.0, le=0.5, description="Share of search-index summaries whose "
                              "cached status or tier is stale (0-0.5, default 0.06).")
    legacy_format_rate: float = Field(default=0.6, ge=0.0, le=1.0, description="Share of pre-2023 customers and "
                                      "orders stored with a legacy MM/DD/YYYY date (0-1, default 0.6).")
    approval_limit: float = Field(default=500.0, gt=0.0, le=100_000.0, description="Refunds above this amount "
                                  "(order currency) need an approved manager approval (number > 0, default 500).")
    world_scale: float = Field(default=1.0, ge=0.5, le=4.0, description="Multiplier on the number of customers, "
                               "orders and tickets (0.5-4, default 1).")


def helpdesk_knobs(knobs: Mapping[str, Any] | HelpdeskKnobs) -> HelpdeskKnobs:
    """Validated knobs (raw values are parsed by the kit).

    Raises:
        ValueError: An unknown knob or a bad value, naming the knob and the value.
    """
    return knobs if isinstance(knobs, HelpdeskKnobs) else parse_knobs(HelpdeskKnobs, knobs, "helpdesk")


NOW = datetime.fromisoformat(CLOCK_START)
LEGACY_BEFORE = date(2023, 1, 1)
PROMOTIONS = (
    ("Back to School 2024", "2024-08-15", "2024-09-05"),
    ("Black Friday 2024", "2024-11-25", "2024-12-02"),
    ("Spring Sale 2025", "2025-03-15", "2025-03-31"),
    ("Summer Sale 2025", "2025-06-05", "2025-06-30"),
)
STALE_ORDER = {"delivered": "shipped", "shipped": "processing", "cancelled": "processing", "processing": "on_hold",
               "on_hold": "processing"}
STALE_TICKET = {"solved": "open", "pending": "open", "closed": "solved", "open": "pending"}
HOLD_NOTE = "Manual review: risk score {r}, billing and shipping countries differ. Do not release before call-back."
ORDER_NOTES = (
    "Customer called twice about delivery; escalated to carrier.",
    "Fraud screen passed after phone verification (risk score {r}).",
    "Packaging damage reported by warehouse; item re-boxed before dispatch.",
    "Customer is a system builder; prefers email contact.",
)


def _iso(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat()


class _Builder(WorldRows):
    """Accumulates rows table by table, then writes them in one pass."""

    def __init__(self, seed: int, knobs: HelpdeskKnobs) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.knobs = knobs
        self.products: list[tuple[str, str, float]] = []
        self.promos: dict[str, list[tuple[str, str, float]]] = {}

    def moment(self, start: date, end: date) -> datetime:
        day = day_between(self.rng, start, end)
        return datetime(day.year, day.month, day.day, self.rng.randint(7, 21), self.rng.randint(0, 59),
                        self.rng.randint(0, 59))

    def token(self) -> str:
        return f"tok_{self.rng.getrandbits(64):016x}"


def _reference_rows(b: _Builder) -> None:
    b.add("settings", "approval_limit", f"{b.knobs.approval_limit:g}")
    b.add("settings", "price_protection_days", "14")
    for tier, days, limit, free in (("bronze", 30, 25.0, 0), ("silver", 30, 50.0, 0), ("gold", 45, 100.0, 1)):
        b.add("loyalty_tiers", tier, days, limit, free)
    for sid, name, role in STAFF:
        b.add("staff", sid, name, role, name.lower().replace(" ", ".") + "@helpdesk.test")
    for row in CARRIERS:
        b.add("carriers", *row)


def _products(b: _Builder) -> None:
    for spec in catalog(b.rng):
        pid = b.next_id("PRD", 1001, 4)
        sku = f"{spec.category[:3].upper()}-{b.rng.randint(100000, 999999)}"
        b.add("products", pid, sku, spec.name, spec.brand, spec.category, spec.socket, spec.form_factor,
              spec.memory_type, spec.wattage, spec.tdp, spec.price_usd, b.rng.randint(0, 60),
              int(b.rng.random() < 0.05))
        b.products.append((pid, spec.category, spec.price_usd))
        for promo, starts, ends in PROMOTIONS:
            if b.rng.random() < 0.28:
                price = cents(spec.price_usd * (1 - b.rng.choice((0.08, 0.1, 0.12, 0.15, 0.2))))
                b.add("seasonal_prices", b.next_id("SP", 1, 4), pid, promo, starts, ends, price)
                b.promos.setdefault(pid, []).append((starts, ends, price))


def _price_at(b: _Builder, pid: str, base: float, day: str) -> float:
    prices = [p for s, e, p in b.promos.get(pid, ()) if s <= day <= e]
    return min(prices) if prices else base


def _customers(b: _Builder) -> list[tuple[str, str, str, str, str, str]]:
    """Create customers; return (id, name, email, currency, tier, country) per customer."""
    rng = b.rng
    total = round(420 * b.knobs.world_scale)
    clusters = min(len(NEAR_DUPLICATES), round(total * b.knobs.near_duplicate_rate / 4))
    names: list[tuple[str, str]] = []
    for (first, first_var), (last, last_var) in NEAR_DUPLICATES[:clusters]:
        names += [(first, last), (first, last), (first_var, last), (first, last_var)]
    while len(names) < total:
        names.append((rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)))
    out: list[tuple[str, str, str, str, str, str]] = []
    for i, (first, last) in enumerate(names):
        cid = b.next_id("CUS", 10001, 5)
        country, currency, cities = rng.choices(COUNTRIES, weights=COUNTRY_WEIGHTS)[0]
        city = rng.choice(cities)
        if i < clusters * 4 and i % 4 == 1:
            prev_city = out[-1][5]
            city = rng.choice([c for c in cities if c != prev_city])
        tier = rng.choices(("bronze", "silver", "gold"), weights=(55, 30, 15))[0]
        email = f"{first}.{last}{rng.randint(1, 99)}".lower().replace(" ", "") + f".{i}@{rng.choice(EMAIL_DOMAINS)}"
        created = b.moment(date(2019, 1, 1), date(2025, 5, 1))
        created_at: str | None = _iso(created)
        legacy: str | None = None
        if created.date() < LEGACY_BEFORE and rng.random() < b.knobs.legacy_format_rate:
            created_at, legacy = None, legacy_date(created.date())
        credit = cents(rng.choice((0.0, 0.0, 0.0, rng.uniform(2, 90))))
        phone = f"+{rng.randint(10, 99)} {rng.randint(100, 999)} {rng.randint(1000000, 9999999)}"
        b.add("customers", cid, f"{first} {last}", email, phone, city, country, currency, tier, credit,
              rng.randint(1, 99), created_at, legacy, int(rng.random() < 0.4))
        if credit > 0:
            b.add("store_credit_ledger", b.next_id("SCL", 1, 5), cid, credit, currency, "goodwill credit", None,
                  _iso(created + timedelta(days=30)), "STF-0" + str(rng.randint(1, 6)))
        out.append((cid, f"{first} {last}", email, currency, tier, city))
    return out


def _order_date(b: _Builder) -> datetime:
    if b.rng.random() < 0.4:
        return b.moment(TODAY - timedelta(days=80), TODAY - timedelta(days=1)) if b.rng.random() < 0.9 else \
            b.moment(TODAY, TODAY).replace(hour=b.rng.randint(0, 8))
    return b.moment(date(2020, 6, 1), date(2025, 3, 25))


def _order(b: _Builder, cust: tuple[str, str, str, str, str, str], country: str) -> dict[str, Any]:
    rng = b.rng
    cid, _, _, currency, tier, city = cust
    oid = b.next_id("ORD", 10001, 5)
    placed = _order_date(b)
    age = (NOW - placed).days
    lines: list[tuple[str, str, int, float, float]] = []
    for pid, _, base in rng.sample(b.products, rng.choice((1, 1, 2, 2, 3))):
        qty = 2 if rng.random() < 0.12 else 1
        unit = convert(_price_at(b, pid, base, placed.date().isoformat()), currency)
        lines.append((b.next_id("OL", 100001, 6), pid, qty, unit, cents(unit * qty)))
    subtotal = cents(sum(line[4] for line in lines))
    fee = 0.0 if tier == "gold" else convert(9.99, currency)
    total = cents(subtotal + fee)
    address = f"{rng.randint(1, 240)} {rng.choice(STREETS)}, {city}, {country}"
    status, cancelled_at, hold = "delivered", None, None
    shipped_at: datetime | None = placed + timedelta(days=1, hours=rng.randint(1, 20))
    delivered_at: datetime | None = shipped_at + timedelta(days=rng.randint(2, 5)) if shipped_at else None
    roll = rng.random()
    if age <= 2:
        status, shipped_at, delivered_at = "processing", None, None
        if roll < 0.25:
            status, hold = "on_hold", "payment review"
    elif age <= 7:
        status, delivered_at = "shipped", None
    if roll > 0.95 and status != "on_hold":
        status, cancelled_at, shipped_at, delivered_at = "cancelled", _iso(placed + timedelta(hours=3)), None, None
    elif 0.93 < roll <= 0.95 and delivered_at is not None:
        status, cancelled_at = "cancelled", _iso(placed + timedelta(hours=5))
    placed_at: str | None = _iso(placed)
    legacy: str | None = None
    if placed.date() < LEGACY_BEFORE and rng.random() < b.knobs.legacy_format_rate:
        placed_at, legacy = None, legacy_date(placed.date())
    b.add("orders", oid, cid, status, currency, placed_at, legacy, subtotal, fee, total, address, cancelled_at,
          "customer request" if cancelled_at else None, hold)
    for lid, pid, qty, unit, line_total in lines:
        b.add("order_lines", lid, oid, pid, qty, unit, line_total)
    method = rng.choices(("card", "paypal", "bank_transfer"), weights=(70, 20, 10))[0]
    pay_id = b.next_id("PAY", 100001, 6)
    voided = status == "cancelled" and delivered_at is None
    b.add("payments", pay_id, oid, method, f"{rng.randint(0, 9999):04d}" if method == "card" else None, b.token(),
          total, currency, "voided" if voided else "captured", _iso(placed + timedelta(minutes=2)))
    if shipped_at is not None:
        carrier = rng.choice(CARRIERS)
        tracking = f"{carrier[2]}{rng.randint(10**9, 10**10 - 1)}"
        b.add("shipments", b.next_id("SHP", 100001, 6), oid, carrier[0], tracking,
              "delivered" if delivered_at else "in_transit", _iso(shipped_at),
              _iso(delivered_at) if delivered_at else None, address)
    return {"id": oid, "customer": cust, "status": status, "placed": placed, "delivered": delivered_at,
            "lines": lines, "total": total, "currency": currency, "payment": pay_id, "hold": hold}


def _order_extras(b: _Builder, order: dict[str, Any]) -> None:
    rng = b.rng
    oid, delivered = order["id"], order["delivered"]
    if order["hold"]:
        b.add("internal_notes", b.next_id("NOTE", 1, 5), "order", oid, "STF-07",
              HOLD_NOTE.format(r=rng.randint(70, 96)), _iso(order["placed"] + timedelta(hours=1)))
    elif rng.random() < 0.12:
        b.add("internal_notes", b.next_id("NOTE", 1, 5), "order", oid, f"STF-0{rng.randint(1, 6)}",
              rng.choice(ORDER_NOTES).format(r=rng.randint(5, 60)), _iso(order["placed"] + timedelta(days=1)))
    if delivered is not None and rng.random() < 0.07:
        line = rng.choice(order["lines"])
        created = delivered + timedelta(days=rng.randint(1, 10))
        if created < NOW:
            b.add("return_authorizations", b.next_id("RMA", 1001, 5), oid, "item returned unopened", "received",
                  _iso(created), "STF-0" + str(rng.randint(1, 6)))
            b.add("refunds", b.next_id("RF", 1001, 5), oid, order["payment"], line[4], order["currency"], "partial",
                  "returned item", "completed", None, _iso(created + timedelta(days=3)),
                  "STF-0" + str(rng.randint(1, 6)))
    if delivered is not None and order["total"] > b.knobs.approval_limit and rng.random() < 0.06:
        created = delivered + timedelta(days=2)
        if created < NOW:
            b.add("approvals", b.next_id("APR", 1001, 5), oid, "refund", order["total"], order["currency"],
                  rng.choice(("approved", "rejected")), "defective on arrival", "STF-0" + str(rng.randint(1, 6)),
                  "STF-07", _iso(created), _iso(created + timedelta(hours=5)))


TICKET_SUBJECTS = {
    "where": "Where is my {p}?",
    "damaged": "{p} arrived damaged",
    "refund": "Refund request for my {p}",
    "hold": "Why hasn't my {p} order shipped yet?",
    "payment": "Which card was charged for the {p}?",
    "compat": "Will the {p} fit my build?",
}
FIRST_MESSAGES = {
    "where": "Hi, my order with the {p} has not arrived yet. Can you tell me where it is?",
    "damaged": "The {p} box was crushed and the product is scratched. What can you do?",
    "refund": "I returned the {p}. Please refund me.",
    "hold": "I ordered the {p} days ago and it still says processing. Why is it not shipped?",
    "payment": "I have two cards on file. Which one did you charge for the {p} and how much?",
    "compat": "Before I order more parts: is the {p} compatible with my current build?",
}


def _tickets(b: _Builder, orders: list[dict[str, Any]], names: dict[str, str]) -> None:
    rng = b.rng
    recent = [o for o in orders if (NOW - o["placed"]).days < 90]
    picks = [o for o in recent if o["hold"]]
    picks += pick(rng, recent, round(300 * b.knobs.world_scale))
    seen: set[str] = set()
    for order in picks:
        if order["id"] in seen:
            continue
        seen.add(order["id"])
        status = order["status"]
        if order["hold"]:
            kind = "hold"
        elif status in ("processing", "shipped"):
            kind = rng.choice(("where", "where", "payment", "compat"))
        else:
            kind = rng.choice(("damaged", "refund", "payment", "compat", "where"))
        product = names[rng.choice(order["lines"])[1]]
        created = order["placed"] + timedelta(days=rng.randint(0, 4), hours=rng.randint(1, 9))
        if created >= NOW:
            created = NOW - timedelta(hours=rng.randint(1, 6))
        age = (NOW - created).days
        tstatus = "open" if age < 2 else rng.choice(("open", "pending", "solved", "closed") if age < 20
                                                      else ("solved", "closed", "closed"))
        tid = b.next_id("TCK", 50001, 5)
        assigned = rng.choice(STAFF[:6])[0] if tstatus != "open" or rng.random() < 0.5 else None
        b.add("tickets", tid, order["customer"][0], order["id"], TICKET_SUBJECTS[kind].format(p=product), tstatus,
              rng.choice(("low", "normal", "normal", "high")), rng.choice(("email", "chat", "web")), _iso(created),
              _iso(min(created + timedelta(hours=rng.randint(1, 30)), NOW)), assigned, 0, None, None, None)
        b.add("ticket_messages", b.next_id("MSG", 200001, 6), tid, order["customer"][1], "customer", 0,
              FIRST_MESSAGES[kind].format(p=product), _iso(created))
        if tstatus != "open":
            b.add("ticket_messages", b.next_id("MSG", 200001, 6), tid, "Support team", "agent", 0,
                  "Thanks for reaching out, we are looking into it.", _iso(created + timedelta(hours=2)))
        if rng.random() < 0.3 or kind == "hold":
            b.add("ticket_messages", b.next_id("MSG", 200001, 6), tid, "Support team", "agent", 1,
                  f"Internal: payment token on file {b.token()}; check the order notes before replying.",
                  _iso(created + timedelta(hours=1)))


def _search_index(conn: sqlite3.Connection, b: _Builder) -> None:
    rng = b.rng
    rows: list[IndexRow] = []

    def add(entity: str, text: str, summary: dict[str, Any]) -> None:
        rows.append(index_row(entity, dict(sorted(summary.items())), text))

    stale = b.knobs.stale_rate
    for cid, name, email, city, tier in conn.execute("SELECT id, name, email, city, tier FROM customers ORDER BY id"):
        cached = "silver" if tier == "gold" and rng.random() < stale * 3 else tier
        add("customer", f"{name} {email}", {"id": cid, "name": name, "email": email, "city": city,
                                                 "tier": cached})
    for pid, name, brand, category, price in conn.execute(
            "SELECT id, name, brand, category, base_price_usd FROM products ORDER BY id"):
        add("product", f"{name} {brand} {category}", {"id": pid, "name": name, "category": category,
                                                           "list_price_usd": price})
    orders = conn.execute(
        "SELECT o.id, c.name, c.email, o.status, o.placed_at, o.legacy_created, o.total, o.currency, "
        "(SELECT group_concat(p.name, ' ') FROM order_lines l JOIN products p ON p.id = l.product_id "
        " WHERE l.order_id = o.id) FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id")
    lag = _iso(NOW - timedelta(hours=12))
    for oid, name, email, status, placed_at, legacy, total, currency, products in orders:
        if placed_at is not None and placed_at > lag:
            continue
        cached = STALE_ORDER[status] if rng.random() < stale else status
        add("order", f"{name} {email} {products}", {
            "id": oid, "customer": name, "email": email, "placed_on": placed_at[:10] if placed_at else legacy,
            "status": cached, "total": total, "currency": currency})
    tickets = conn.execute("SELECT t.id, t.subject, t.status, t.created_at, c.name, c.email FROM tickets t "
                           "JOIN customers c ON c.id = t.customer_id ORDER BY t.id")
    for tid, subject, status, created, name, email in tickets:
        cached = STALE_TICKET[status] if rng.random() < stale else status
        add("ticket", f"{subject} {name} {email}", {"id": tid, "subject": subject, "customer": name,
                                                         "status": cached, "created_on": created[:10]})
    write_index(conn, rows)


def build_world(seed: int, knobs: Mapping[str, Any] | HelpdeskKnobs) -> sqlite3.Connection:
    """Generate the helpdesk world for ``seed`` and ``knobs`` into an in-memory database.

    Args:
        seed: Generator seed; the same seed and knobs give the same bytes.
        knobs: Knob values (see ``HelpdeskKnobs``), raw or validated.

    Returns:
        An open connection holding the world.
    """
    parsed = helpdesk_knobs(knobs)
    b = _Builder(seed, parsed)
    _reference_rows(b)
    _products(b)
    customers = _customers(b)
    countries = {}
    for row in b.rows["customers"]:
        countries[row[0]] = row[5]
    orders: list[dict[str, Any]] = []
    for cust in customers:
        for _ in range(b.rng.choices((0, 1, 2, 3, 4, 5), weights=(8, 25, 27, 20, 12, 8))[0]):
            orders.append(_order(b, cust, countries[cust[0]]))
    orders.sort(key=lambda o: str(o["id"]))
    for order in orders:
        _order_extras(b, order)
    names = {row[0]: str(row[2]) for row in b.rows["products"]}
    _tickets(b, orders, names)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    insert_rows(conn, b.rows)
    _search_index(conn, b)
    conn.commit()
    return conn
