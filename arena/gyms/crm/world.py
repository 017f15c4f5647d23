"""The CRM's world: territories, users, accounts, contacts, opportunities, quotes and approvals, seeded and messy.

Every kind of mess sits behind a knob of the shared vocabulary: near-duplicate accounts and contacts
(``near_duplicate_rate``), search summaries that lag the record (``stale_rate``) and rows from the legacy system
with their phone numbers, amounts and dates in the old formats (``legacy_format_rate``).
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date

from arena.authoring import write_index

from .knobs import CrmKnobs
from .world_generate import Generator

__all__ = ["CLOCK_START", "SCHEMA", "TODAY", "CrmKnobs", "build_world"]

CLOCK_START = "2025-09-01T09:00:00"
"""The episodes' "now"."""

TODAY = date(2025, 9, 1)
"""The episodes' date."""

SCHEMA = """
CREATE TABLE territories (id TEXT PRIMARY KEY, name TEXT, cities TEXT, currency TEXT, phone_code TEXT);
CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT, email TEXT, role TEXT, territory_id TEXT, manager_id TEXT);
CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT, city TEXT, territory_id TEXT, owner_id TEXT, industry TEXT,
                       phone TEXT, currency TEXT, annual_revenue, tier TEXT, status TEXT, risk_rating TEXT,
                       created TEXT);
CREATE TABLE contacts (id TEXT PRIMARY KEY, account_id TEXT, name TEXT, email TEXT, phone TEXT, title TEXT,
                       created TEXT);
CREATE TABLE opportunities (id TEXT PRIMARY KEY, account_id TEXT, owner_id TEXT, name TEXT, stage TEXT, amount,
                            currency TEXT, close_date TEXT, created TEXT, loss_reason TEXT);
CREATE TABLE products (id TEXT PRIMARY KEY, name TEXT, family TEXT, list_price REAL);
CREATE TABLE quotes (id TEXT PRIMARY KEY, opportunity_id TEXT, status TEXT, list_total REAL, discount_pct REAL,
                     net_total REAL, currency TEXT, valid_until TEXT, sent_on TEXT, internal_floor_price REAL);
CREATE TABLE quote_lines (id TEXT PRIMARY KEY, quote_id TEXT, product_id TEXT, quantity INTEGER, unit_price REAL);
CREATE TABLE discount_approvals (id TEXT PRIMARY KEY, quote_id TEXT, discount_pct REAL, status TEXT,
                                 requested_by TEXT, decided_by TEXT, reason TEXT, requested_on TEXT);
CREATE TABLE activities (id TEXT PRIMARY KEY, account_id TEXT, contact_id TEXT, kind TEXT, subject TEXT,
                         happened_on TEXT, logged_by TEXT);
CREATE TABLE account_history (id TEXT PRIMARY KEY, account_id TEXT, field TEXT, old_value TEXT, new_value TEXT,
                              changed_by TEXT, changed_on TEXT);
CREATE TABLE duplicate_flags (id TEXT PRIMARY KEY, account_id TEXT, duplicate_of TEXT, flagged_by TEXT,
                              status TEXT);
CREATE TABLE currency_rates (id TEXT PRIMARY KEY, per_usd REAL);
CREATE TABLE settings (id TEXT PRIMARY KEY, value TEXT);
"""


def build_world(seed: int, knobs: CrmKnobs) -> sqlite3.Connection:
    """Generate the world for ``seed`` and ``knobs``: the same arguments give the same bytes.

    Args:
        seed: The generator seed.
        knobs: The parsed knobs.

    Returns:
        An in-memory SQLite database holding the world.
    """
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    generator = Generator(random.Random(seed), knobs, TODAY)
    generator.fill(conn)
    write_index(conn, sorted(generator.index))  # searches return summaries in id order
    conn.commit()
    return conn
