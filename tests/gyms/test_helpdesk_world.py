import hashlib
import re
import sqlite3

import pytest

from arena.core.domains import get_domain
from arena.core.pack import Pack, build_pack
from arena.gyms.helpdesk import DOMAIN, build_world
from arena.gyms.helpdesk.rules import CLOCK_START


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def db(pack: Pack) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(pack.state_db)
    return conn


def test_registered_by_name() -> None:
    assert get_domain("helpdesk") is DOMAIN


def test_world_has_enough_tables_and_entities(db: sqlite3.Connection) -> None:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert len(tables) >= 12
    counts = {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    assert sum(counts.values()) >= 2500
    assert counts["customers"] >= 400 and counts["orders"] >= 800 and counts["tickets"] >= 200
    for table in tables:
        pks = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")') if r[5]]
        assert pks == ["id"], table


def test_generation_is_deterministic(pack: Pack) -> None:
    again = build_pack(DOMAIN, seed=0)
    assert again.id == pack.id
    assert again.state_db == pack.state_db
    assert build_pack(DOMAIN, seed=1).id != pack.id
    first = hashlib.sha256(build_world(7, {}).serialize()).hexdigest()
    assert hashlib.sha256(build_world(7, {}).serialize()).hexdigest() == first


def test_clock_start_is_fixed(pack: Pack) -> None:
    assert pack.manifest.clock_start == CLOCK_START == "2025-06-15T09:00:00"


def test_world_is_messy(db: sqlite3.Connection) -> None:
    legacy = [r[0] for r in db.execute("SELECT legacy_created FROM orders WHERE legacy_created IS NOT NULL")]
    assert legacy and all(re.fullmatch(r"\d{2}/\d{2}/\d{4}", v) for v in legacy)
    assert db.execute("SELECT COUNT(*) FROM orders WHERE placed_at IS NULL").fetchone()[0] == len(legacy)
    twins = db.execute("SELECT COUNT(*) FROM customers a JOIN customers b ON a.name = b.name AND a.id < b.id "
                       "WHERE a.name = 'Jon Smith'").fetchone()[0]
    assert twins >= 1
    assert db.execute("SELECT COUNT(*) FROM customers WHERE name IN ('John Smith', 'Jon Smyth')").fetchone()[0] == 2
    both = db.execute("SELECT COUNT(*) FROM orders o JOIN shipments s ON s.order_id = o.id "
                      "WHERE o.status = 'cancelled' AND s.delivered_at IS NOT NULL").fetchone()[0]
    assert both >= 2
    stale = db.execute("SELECT COUNT(*) FROM search_index si JOIN orders o ON o.id = si.id "
                       "WHERE si.entity = 'order' AND json_extract(si.summary, '$.status') <> o.status").fetchone()[0]
    assert stale >= 5
    assert db.execute("SELECT COUNT(DISTINCT currency) FROM orders").fetchone()[0] == 3
    assert db.execute("SELECT COUNT(*) FROM seasonal_prices WHERE starts_on <= '2025-06-15' "
                      "AND ends_on >= '2025-06-15'").fetchone()[0] >= 10


def test_tools_and_permissions() -> None:
    specs = {name: tool.spec for name, tool in DOMAIN.tools.items()}
    assert len(specs) >= 18
    assert specs["approve_refund"].permission == "approvals"
    assert specs["issue_refund"].irreversible and specs["cancel_order"].irreversible
    assert specs["get_order"].operation == "get" and specs["get_order"].entity == "order"
    assert specs["search_orders"].operation == "search"
    assert "order_id" in specs["issue_refund"].parameters["required"]
    reads = [s for s in specs.values() if s.mode == "read"]
    assert all(s.permission is None for s in reads)
    edges = {(a, b): w for a, b, w in DOMAIN.dependencies}
    assert edges[("check_refund_eligibility", "issue_refund")] == 3
    assert edges[("check_refund_eligibility", "create_return_authorization")] == 3
    assert edges[("get_order", "cancel_order")] == 2
    assert set(DOMAIN.knobs) >= {"tasks_per_template", "focus_tags", "heldout_fraction", "near_duplicate_rate",
                                 "stale_rate", "legacy_format_rate", "fault_rate", "fault_kinds", "approval_limit"}
