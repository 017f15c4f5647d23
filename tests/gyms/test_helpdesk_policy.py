import sqlite3
from datetime import date, timedelta

import pytest

from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.gyms.helpdesk import DOMAIN


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def db(pack: Pack) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(pack.state_db)
    return conn


@pytest.fixture()
def gym(pack: Pack) -> Gym:
    g = Gym(pack, DOMAIN)
    agent_task = next(t for t in pack.tasks if t.persona.role == "agent" and not t.faults)
    g.reset(agent_task.id)
    return g


def delivered(db: sqlite3.Connection, *, days_min: int, days_max: int, tier: str = "bronze",
              min_total: float = 0.0) -> tuple[str, float]:
    today = date(2025, 6, 15)
    row = db.execute(
        "SELECT o.id, o.total FROM orders o JOIN customers c ON c.id = o.customer_id "
        "JOIN shipments s ON s.order_id = o.id WHERE o.status = 'delivered' AND c.tier = ? AND o.total > ? "
        "AND substr(s.delivered_at, 1, 10) BETWEEN ? AND ? "
        "AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id) ORDER BY o.id LIMIT 1",
        (tier, min_total, (today - timedelta(days=days_max)).isoformat(),
         (today - timedelta(days=days_min)).isoformat())).fetchone()
    assert row is not None
    return str(row[0]), float(row[1])


def test_refund_outside_window_is_refused(db: sqlite3.Connection, gym: Gym) -> None:
    oid, total = delivered(db, days_min=35, days_max=60)
    check = gym.call_tool("check_refund_eligibility", {"order_id": oid}).output
    assert check["eligible"] is False and check["return_window_days"] == 30
    result = gym.call_tool("issue_refund", {"order_id": oid, "amount": min(total, 10.0), "refund_type": "partial",
                                            "reason": "returned"})
    assert result.error is not None and result.error.kind == "policy"
    assert "window" in result.error.message
    assert gym.changed_rows() == 0


def test_gold_tier_has_a_longer_window(db: sqlite3.Connection, gym: Gym) -> None:
    oid, _ = delivered(db, days_min=32, days_max=44, tier="gold")
    check = gym.call_tool("check_refund_eligibility", {"order_id": oid}).output
    assert check["eligible"] is True and check["return_window_days"] == 45


def test_refund_above_limit_needs_approval(db: sqlite3.Connection, gym: Gym) -> None:
    oid, total = delivered(db, days_min=1, days_max=25, min_total=520.0)
    args = {"order_id": oid, "amount": total, "refund_type": "partial", "reason": "returned"}
    refused = gym.call_tool("issue_refund", args)
    assert refused.error is not None and refused.error.kind == "policy" and "approval" in refused.error.message
    assert gym.changed_rows() == 0
    approval = gym.call_tool("request_manager_approval", {"order_id": oid, "amount": total, "reason": "returned"})
    assert approval.ok and approval.output["status"] == "pending"
    still = gym.call_tool("issue_refund", {**args, "approval_id": approval.output["approval_id"]})
    assert still.error is not None and still.error.kind == "policy"
    denied = gym.call_tool("approve_refund", {"approval_id": approval.output["approval_id"]})
    assert denied.error is not None and denied.error.kind == "permission"


def test_cancel_after_shipment_is_refused(db: sqlite3.Connection, gym: Gym) -> None:
    oid = db.execute("SELECT id FROM orders WHERE status = 'shipped' ORDER BY id LIMIT 1").fetchone()[0]
    result = gym.call_tool("cancel_order", {"order_id": oid, "reason": "changed mind"})
    assert result.error is not None and result.error.kind == "policy"
    assert gym.changed_rows() == 0
    moved = gym.call_tool("update_shipping_address", {"order_id": oid, "address": "1 New Street, Leeds, GB"})
    assert moved.error is not None and moved.error.kind == "policy"
    assert gym.changed_rows() == 0


def test_store_credit_limit_by_tier(db: sqlite3.Connection, gym: Gym) -> None:
    cid = db.execute("SELECT id FROM customers WHERE tier = 'silver' ORDER BY id LIMIT 1").fetchone()[0]
    over = gym.call_tool("apply_store_credit", {"customer_id": cid, "amount": 60.0, "reason": "goodwill"})
    assert over.error is not None and over.error.kind == "policy" and "50.00" in over.error.message
    assert gym.changed_rows() == 0
    ok = gym.call_tool("apply_store_credit", {"customer_id": cid, "amount": 50.0, "reason": "goodwill"})
    assert ok.ok and gym.changed_rows() > 0


def test_bad_formats_are_refused(db: sqlite3.Connection, gym: Gym) -> None:
    tid = db.execute("SELECT id FROM tickets WHERE status = 'open' ORDER BY id LIMIT 1").fetchone()[0]
    legacy = gym.call_tool("update_ticket_status", {"ticket_id": tid, "status": "pending",
                                                    "follow_up_date": "07/01/2025"})
    assert legacy.error is not None and legacy.error.kind == "validation" and "07/01/2025" in legacy.error.message
    by_name = gym.call_tool("get_customer", {"customer_id": "Jon Smith"})
    assert by_name.error is not None and by_name.error.kind == "validation"
    missing = gym.call_tool("get_order", {"order_id": "ORD-99999"})
    assert missing.error is not None and missing.error.kind == "not_found"
    assert gym.changed_rows() == 0


def test_search_never_matches_ids_and_may_be_stale(db: sqlite3.Connection, gym: Gym) -> None:
    oid, name, real, cached = db.execute(
        "SELECT o.id, c.name, o.status, json_extract(si.summary, '$.status') FROM orders o "
        "JOIN customers c ON c.id = o.customer_id JOIN search_index si ON si.id = o.id "
        "WHERE json_extract(si.summary, '$.status') <> o.status ORDER BY o.id LIMIT 1").fetchone()
    assert gym.call_tool("search_orders", {"query": oid}).output == []
    hits = gym.call_tool("search_orders", {"query": name}).output
    assert next(h for h in hits if h["id"] == oid)["status"] == cached
    assert gym.call_tool("get_order", {"order_id": oid}).output["status"] == real != cached


def test_compatibility_checks_sockets(db: sqlite3.Connection, gym: Gym) -> None:
    cpu = db.execute("SELECT id, socket FROM products WHERE category = 'cpu' AND socket = 'AM5' LIMIT 1").fetchone()
    good = db.execute("SELECT id FROM products WHERE category = 'motherboard' AND socket = 'AM5' LIMIT 1").fetchone()
    bad = db.execute("SELECT id FROM products WHERE category = 'motherboard' AND socket = 'LGA1700' LIMIT 1").fetchone()
    assert gym.call_tool("check_compatibility", {"product_ids": [cpu[0], good[0]]}).output["compatible"] is True
    mismatch = gym.call_tool("check_compatibility", {"product_ids": [cpu[0], bad[0]]}).output
    assert mismatch["compatible"] is False and "socket" in mismatch["issues"][0]
