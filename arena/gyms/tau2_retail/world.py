"""The retail world: τ²-bench's retail ``db.json`` as three tables, and back.

``users``, ``orders`` and ``products`` hold their records field by field (names, addresses, payment methods, items,
fulfillments, payments and variants as canonical JSON). An order's fields that only an action adds (the reason of
a cancellation, the items of an exchange or a return) are ``NULL`` until it does.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arena.gyms.tau2_data import read_files
from arena.gyms.tau2_world import Column, Table

CLOCK_START = "2024-05-15T15:00:00"
"""When every episode starts (the retail policy names no time; the airline's is taken)."""

USERS = Table("users", "user_id", (
    Column("user_id"), Column("name", "json"), Column("address", "json"), Column("email"),
    Column("payment_methods", "json"), Column("orders", "json"),
))
ORDERS = Table("orders", "order_id", (
    Column("order_id"), Column("user_id"), Column("address", "json"), Column("items", "json"), Column("status"),
    Column("fulfillments", "json"), Column("payment_history", "json"), Column("cancel_reason", optional=True),
    Column("exchange_items", "json", optional=True), Column("exchange_new_items", "json", optional=True),
    Column("exchange_payment_method_id", optional=True), Column("exchange_price_difference", "real", optional=True),
    Column("return_items", "json", optional=True), Column("return_payment_method_id", optional=True),
))
PRODUCTS = Table("products", "product_id", (Column("name"), Column("product_id"), Column("variants", "json")))
TABLES = (USERS, ORDERS, PRODUCTS)
"""The world's tables."""


def from_db(db: dict[str, Any]) -> sqlite3.Connection:
    """The world holding a retail ``db.json``.

    Raises:
        ValueError: A record does not fit the retail tables (naming it).
    """
    conn = sqlite3.connect(":memory:")
    for table in TABLES:
        table.create(conn)
    USERS.insert(conn, db["users"].values())
    ORDERS.insert(conn, db["orders"].values())
    PRODUCTS.insert(conn, db["products"].values())
    conn.commit()
    return conn


def to_db(conn: sqlite3.Connection) -> dict[str, Any]:
    """The world read back as a retail ``db.json`` (collections in τ²-bench's order)."""
    return {"products": PRODUCTS.records(conn), "users": USERS.records(conn), "orders": ORDERS.records(conn)}


def build_world() -> sqlite3.Connection:
    """The retail world of the τ²-bench data this installation reads (see ``arena.gyms.tau2_data``).

    Raises:
        Tau2DataMissing: The data is not installed.
    """
    return from_db(read_files("retail").db)
