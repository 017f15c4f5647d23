import sqlite3
from pathlib import Path

import pytest

from arena.core.pack import build_pack
from arena.gyms import tracker
from arena.gyms.tracker import DOMAIN, TrackerKnobs
from arena.gyms.tracker.world import build_world


def _db(state: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(state)
    return conn


@pytest.fixture(scope="module")
def world() -> sqlite3.Connection:
    return _db(DOMAIN.generate(0, {}).state_db)


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def test_world_has_enough_tables_and_entities(world: sqlite3.Connection) -> None:
    tables = _tables(world)
    assert len(tables) >= 12
    total = sum(world.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)
    assert total >= 2500
    assert world.execute("SELECT COUNT(*) FROM issues").fetchone()[0] >= 1500


def test_every_table_has_a_single_text_id_primary_key(world: sqlite3.Connection) -> None:
    for table in _tables(world):
        info = world.execute(f"PRAGMA table_info({table})").fetchall()
        pks = [(r[1], r[2]) for r in info if r[5]]
        assert pks == [("id", "TEXT")], table


def test_same_seed_gives_same_bytes_and_pack_id() -> None:
    assert build_world(5, TrackerKnobs()).serialize() == build_world(5, TrackerKnobs()).serialize()
    assert build_pack(DOMAIN, seed=5).id == build_pack(DOMAIN, seed=5).id
    assert build_pack(DOMAIN, seed=5).id != build_pack(DOMAIN, seed=6).id


def test_world_is_messy_by_default(world: sqlite3.Connection) -> None:
    dup_names = world.execute(
        "SELECT COUNT(*) FROM (SELECT display_name FROM users GROUP BY display_name HAVING COUNT(*) > 1)").fetchone()[0]
    assert dup_names > 20
    twins = world.execute(
        "SELECT a.email, b.email, a.team, b.team FROM users a JOIN users b "
        "ON a.display_name = b.display_name AND a.id < b.id").fetchall()
    assert all(ea != eb and ta != tb for ea, eb, ta, tb in twins)
    assert world.execute("SELECT COUNT(*) FROM issues i JOIN search_index s ON s.id = "
                         "i.id WHERE json_extract(s.summary, '$.status') <> i.status").fetchone()[0] > 100
    assert world.execute("SELECT COUNT(*) FROM issues WHERE created LIKE '%/%' OR created LIKE '%-___-%'").fetchone()[0]
    assert world.execute("SELECT COUNT(*) FROM projects WHERE archived = 1").fetchone()[0] == 2
    hidden = world.execute("SELECT COUNT(*) FROM issues WHERE id NOT IN (SELECT id FROM search_index) "
                           "AND issue_type = 'Sub-task'").fetchone()[0]
    assert hidden > 10


def test_security_chain_states_cover_every_missing_link(world: sqlite3.Connection) -> None:
    rows = world.execute(
        "SELECT p.id, p.security_scheme_id, "
        "(SELECT COUNT(*) FROM permission_grants g WHERE g.permission_scheme_id = p.permission_scheme_id "
        " AND g.permission = 'set_issue_security') FROM projects p WHERE archived = 0").fetchall()
    assert any(grants for _, _, grants in rows)
    assert any(not grants and scheme for _, scheme, grants in rows)
    assert any(not grants and not scheme for _, scheme, grants in rows)


@pytest.mark.parametrize(
    ("knobs", "sql", "expected"),
    [
        ({"near_duplicate_rate": 0.0},
         "SELECT COUNT(*) FROM (SELECT display_name FROM users GROUP BY display_name HAVING COUNT(*) > 1)", 0),
        ({"stale_rate": 0.0}, "SELECT COUNT(*) FROM issues i JOIN search_index s ON s.id = i.id "
                              "WHERE json_extract(s.summary, '$.status') <> i.status", 0),
        ({"legacy_format_rate": 0.0}, "SELECT COUNT(*) FROM issues WHERE created NOT LIKE '____-__-__'", 0),
    ],
)
def test_world_knobs_remove_their_mess(knobs: dict[str, float], sql: str, expected: int) -> None:
    assert _db(DOMAIN.generate(0, knobs).state_db).execute(sql).fetchone()[0] == expected
    assert _db(DOMAIN.generate(0, {}).state_db).execute(sql).fetchone()[0] > expected


def test_higher_rates_give_more_mess() -> None:
    low = _db(DOMAIN.generate(0, {"near_duplicate_rate": 0.05}).state_db)
    high = _db(DOMAIN.generate(0, {"near_duplicate_rate": 0.3}).state_db)
    count = "SELECT COUNT(*) FROM users"
    assert high.execute(count).fetchone()[0] > low.execute(count).fetchone()[0]
    legacy = _db(DOMAIN.generate(0, {"legacy_format_rate": 1.0}).state_db)
    dates = [r[0] for r in legacy.execute("SELECT created FROM issues")]
    old_iso = [d for d in dates if len(d) == 10 and d[4] == "-" and d < "2021"]
    assert old_iso == []


@pytest.mark.parametrize(
    ("knobs", "needle"),
    [
        ({"stale_rat": 0.1}, "stale_rat"),
        ({"stale_rate": 1.5}, "stale_rate"),
        ({"tasks_per_template": 0}, "tasks_per_template"),
        ({"prerequisite_depth": 4}, "prerequisite_depth"),
        ({"focus_tags": ["nope"]}, "focus_tags"),
        ({"fault_kinds": ["explode"]}, "fault_kinds"),
    ],
)
def test_bad_knobs_are_refused_by_name(knobs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        DOMAIN.generate(0, knobs)


def test_every_knob_is_documented() -> None:
    assert set(DOMAIN.knobs) == set(TrackerKnobs.model_fields)
    assert all(DOMAIN.knobs.values())
    readme = (Path(tracker.__file__).parent / "README.md").read_text(encoding="utf-8")
    for name in DOMAIN.knobs:
        assert f"`{name}`" in readme

