"""The helpdesk world's tables (SQLite DDL)."""

from __future__ import annotations

SCHEMA = """
CREATE TABLE settings (id TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE loyalty_tiers (
    id TEXT PRIMARY KEY, return_window_days INTEGER NOT NULL, store_credit_limit REAL NOT NULL,
    free_shipping INTEGER NOT NULL
);
CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE carriers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, code TEXT NOT NULL, service_level TEXT NOT NULL,
    tracking_url TEXT NOT NULL
);
CREATE TABLE customers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, phone TEXT NOT NULL, city TEXT NOT NULL,
    country TEXT NOT NULL, currency TEXT NOT NULL, tier TEXT NOT NULL, store_credit REAL NOT NULL,
    risk_score INTEGER NOT NULL, created_at TEXT, legacy_created TEXT, marketing_opt_in INTEGER NOT NULL
);
CREATE TABLE products (
    id TEXT PRIMARY KEY, sku TEXT NOT NULL, name TEXT NOT NULL, brand TEXT NOT NULL, category TEXT NOT NULL,
    socket TEXT, form_factor TEXT, memory_type TEXT, wattage INTEGER, tdp INTEGER,
    base_price_usd REAL NOT NULL, stock INTEGER NOT NULL, discontinued INTEGER NOT NULL
);
CREATE TABLE seasonal_prices (
    id TEXT PRIMARY KEY, product_id TEXT NOT NULL, promotion TEXT NOT NULL, starts_on TEXT NOT NULL,
    ends_on TEXT NOT NULL, price_usd REAL NOT NULL
);
CREATE TABLE orders (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, status TEXT NOT NULL, currency TEXT NOT NULL,
    placed_at TEXT, legacy_created TEXT, subtotal REAL NOT NULL, shipping_fee REAL NOT NULL, total REAL NOT NULL,
    shipping_address TEXT NOT NULL, cancelled_at TEXT, cancel_reason TEXT, hold_reason TEXT
);
CREATE TABLE order_lines (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, product_id TEXT NOT NULL, quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL, line_total REAL NOT NULL
);
CREATE TABLE payments (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, method TEXT NOT NULL, card_last4 TEXT, payment_token TEXT NOT NULL,
    amount REAL NOT NULL, currency TEXT NOT NULL, status TEXT NOT NULL, captured_at TEXT
);
CREATE TABLE refunds (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, payment_id TEXT NOT NULL, amount REAL NOT NULL,
    currency TEXT NOT NULL, refund_type TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL,
    approval_id TEXT, created_at TEXT NOT NULL, created_by TEXT NOT NULL
);
CREATE TABLE shipments (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, carrier_id TEXT NOT NULL, tracking_number TEXT NOT NULL,
    status TEXT NOT NULL, shipped_at TEXT, delivered_at TEXT, address TEXT NOT NULL
);
CREATE TABLE return_authorizations (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, created_by TEXT NOT NULL
);
CREATE TABLE tickets (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, order_id TEXT, subject TEXT NOT NULL, status TEXT NOT NULL,
    priority TEXT NOT NULL, channel TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    assigned_to TEXT, escalated INTEGER NOT NULL, escalation_reason TEXT, escalation_due TEXT, follow_up_date TEXT
);
CREATE TABLE ticket_messages (
    id TEXT PRIMARY KEY, ticket_id TEXT NOT NULL, author TEXT NOT NULL, author_type TEXT NOT NULL,
    internal INTEGER NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL, kind TEXT NOT NULL, amount REAL NOT NULL, currency TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL, requested_by TEXT NOT NULL, decided_by TEXT,
    created_at TEXT NOT NULL, decided_at TEXT
);
CREATE TABLE internal_notes (
    id TEXT PRIMARY KEY, entity_type TEXT NOT NULL, entity_id TEXT NOT NULL, author_id TEXT NOT NULL,
    body TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE store_credit_ledger (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, amount REAL NOT NULL, currency TEXT NOT NULL,
    reason TEXT NOT NULL, expires_on TEXT, created_at TEXT NOT NULL, created_by TEXT NOT NULL
);
CREATE INDEX ix_lines_order ON order_lines(order_id);
CREATE INDEX ix_orders_customer ON orders(customer_id);
CREATE INDEX ix_payments_order ON payments(order_id);
CREATE INDEX ix_refunds_order ON refunds(order_id);
CREATE INDEX ix_shipments_order ON shipments(order_id);
CREATE INDEX ix_rma_order ON return_authorizations(order_id);
CREATE INDEX ix_tickets_customer ON tickets(customer_id);
CREATE INDEX ix_messages_ticket ON ticket_messages(ticket_id);
CREATE INDEX ix_approvals_order ON approvals(order_id);
CREATE INDEX ix_notes_entity ON internal_notes(entity_id);
CREATE INDEX ix_prices_product ON seasonal_prices(product_id);
CREATE INDEX ix_ledger_customer ON store_credit_ledger(customer_id);
"""
"""Every table has a single ``id TEXT PRIMARY KEY``; dates are ISO strings except ``legacy_created``."""

TABLES = (
    "settings", "loyalty_tiers", "staff", "carriers", "customers", "products", "seasonal_prices", "orders",
    "order_lines", "payments", "refunds", "shipments", "return_authorizations", "tickets", "ticket_messages",
    "approvals", "internal_notes", "store_credit_ledger", "search_index",
)
"""The world's tables, in creation order."""
