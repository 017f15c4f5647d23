"""The procurement world: size, determinism, conventions and world knobs."""

from __future__ import annotations

import re
import sqlite3

import pytest

from arena.authoring import read_date
from arena.core.domains import get_domain
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.gyms.procurement import DOMAIN, build_world


@pytest.fixture(scope="module")
def pack() -> Pack:
    return build_pack(DOMAIN, seed=0)


@pytest.fixture(scope="module")
def world(pack: Pack) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(pack.state_db)
    return conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def test_registered_under_its_name() -> None:
    assert get_domain("procurement") is DOMAIN
    assert DOMAIN.name == "procurement"


def test_world_has_enough_tables_and_entities(world: sqlite3.Connection) -> None:
    tables = _tables(world)
    assert len(tables) >= 12
    total = sum(world.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    assert total >= 2500
    for table in tables:
        info = world.execute(f'PRAGMA table_info("{table}")').fetchall()
        assert [(r[1], r[2]) for r in info if r[5]] == [("id", "TEXT")], table


def test_same_seed_same_bytes_and_pack_id() -> None:
    first, second = DOMAIN.generate(3, {}), DOMAIN.generate(3, {})
    assert first.state_db == second.state_db
    assert [t.model_dump() for t in first.tasks] == [t.model_dump() for t in second.tasks]
    assert build_pack(DOMAIN, seed=3).id == build_pack(DOMAIN, seed=3).id
    assert DOMAIN.generate(4, {}).state_db != first.state_db


def test_world_holds_the_domain_quirks(world: sqlite3.Connection) -> None:
    stale = world.execute("SELECT COUNT(*) FROM search_index s JOIN vendors v ON v.id = s.id "
                          "WHERE json_extract(s.summary, '$.status') != v.status").fetchone()[0]
    assert stale > 0
    legacy = [d for (d,) in world.execute("SELECT created_on FROM vendors") if not re.match(r"^\d{4}-\d{2}-\d{2}$", d)]
    assert legacy and all(read_date(d).year < 2021 for d in legacy)
    twins = world.execute("SELECT COUNT(*) FROM (SELECT name FROM vendors WHERE duplicate_of IS NULL "
                          "GROUP BY name HAVING COUNT(*) > 1)").fetchone()[0]
    assert twins > 0
    assert world.execute("SELECT COUNT(*) FROM vendors WHERE duplicate_of IS NOT NULL").fetchone()[0] > 0
    assert {r[0] for r in world.execute("SELECT DISTINCT currency FROM purchase_orders")} == {"USD", "EUR", "GBP"}


def test_tools_follow_the_conventions() -> None:
    specs = {name: t.spec for name, t in DOMAIN.tools.items()}
    assert len(specs) >= 18
    for name, spec in specs.items():
        if spec.operation == "get":
            assert name == f"get_{spec.entity}" or name == "get_budget", name
            assert spec.parameters["required"] == [f"{spec.entity}_id"], name
        if spec.operation == "search":
            assert spec.parameters["required"] == ["query"], name
        if spec.mode == "write":
            assert spec.permission, name
    assert specs["pay_invoice"].irreversible
    for before, after, _ in DOMAIN.dependencies:
        assert before in specs and after in specs
    assert set(DOMAIN.knobs) >= {"tasks_per_template", "focus_tags", "heldout_fraction", "near_duplicate_rate",
                                 "stale_rate", "legacy_format_rate", "fault_rate", "fault_kinds", "multi_currency",
                                 "approval_cap"}


def test_search_never_matches_ids_and_get_is_authoritative(pack: Pack, world: sqlite3.Connection) -> None:
    vid, name, real, cached = world.execute(
        "SELECT v.id, v.name, v.status, json_extract(s.summary, '$.status') FROM vendors v "
        "JOIN search_index s ON s.id = v.id "
        "WHERE v.status != json_extract(s.summary, '$.status') ORDER BY v.id").fetchone()
    with Gym(pack, DOMAIN) as gym:
        gym.reset(pack.tasks[0].id)
        assert gym.call_tool("search_vendors", {"query": vid}).output == []
        hits = gym.call_tool("search_vendors", {"query": name}).output
        assert {"id": vid, "status": cached}.items() <= next(h for h in hits if h["id"] == vid).items()
        assert gym.call_tool("get_vendor", {"vendor_id": vid}).output["status"] == real
        bad = gym.call_tool("convert_currency", {"amount": 10.0, "from_currency": "eur", "to_currency": "USD"})
        assert bad.error is not None and bad.error.kind == "validation" and "'eur'" in bad.error.message
        assert gym.changed_rows() == 0


def test_world_knobs_change_the_world() -> None:
    plain = build_world(0, {"multi_currency": False, "near_duplicate_rate": 0.0, "stale_rate": 0.0,
                            "legacy_format_rate": 0.0, "approval_cap": 10000})
    assert {r[0] for r in plain.execute("SELECT DISTINCT currency FROM vendors")} == {"USD"}
    assert plain.execute("SELECT COUNT(*) FROM (SELECT name FROM vendors WHERE duplicate_of IS NULL "
                         "GROUP BY name HAVING COUNT(*) > 1)").fetchone()[0] == 0
    assert plain.execute("SELECT COUNT(*) FROM search_index s JOIN vendors v ON v.id = s.id "
                         "WHERE json_extract(s.summary, '$.status') != v.status").fetchone()[0] == 0
    assert all(re.match(r"^\d{4}-\d{2}-\d{2}$", d) for (d,) in plain.execute("SELECT created_on FROM vendors"))
    assert {r[0] for r in plain.execute("SELECT DISTINCT approval_cap FROM cost_centers")} == {5000.0, 10000.0, 20000.0}


@pytest.mark.parametrize("knobs", [{"colour": "red"}, {"stale_rate": 1.5}, {"fault_kinds": ["flood"]},
                                   {"tasks_per_template": 0}, {"multi_currency": "yes"}, {"focus_tags": "leak_trap"}])
def test_bad_knobs_are_refused_by_name(knobs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(knobs))):
        DOMAIN.generate(0, knobs)
