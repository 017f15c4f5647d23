"""The CRM's world: deterministic, big enough, and each kind of mess behind its knob."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from arena.authoring import read_amount, read_date
from arena.authoring.formats import LEGACY_DATES
from arena.gyms.crm.world import CrmKnobs, build_world


def _world(**knobs: object) -> sqlite3.Connection:
    conn = build_world(0, CrmKnobs.model_validate(knobs))
    conn.row_factory = sqlite3.Row
    return conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def test_the_same_seed_and_knobs_give_the_same_bytes() -> None:
    assert build_world(3, CrmKnobs()).serialize() == build_world(3, CrmKnobs()).serialize()
    assert build_world(3, CrmKnobs()).serialize() != build_world(4, CrmKnobs()).serialize()


def test_the_world_meets_the_gym_contract() -> None:
    conn = _world()
    tables = _tables(conn)
    assert len(tables) >= 12
    rows = sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables if t != "search_index")
    assert rows >= 2500
    for table in tables:
        columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
        assert [c["name"] for c in columns if c["pk"]] == ["id"], table


def test_ids_have_one_format_per_table() -> None:
    conn = _world()
    for table, pattern in {"accounts": r"ACC-1[08]\d{3}", "contacts": r"CON-2\d{4}", "opportunities": r"OPP-3\d{4}",
                           "quotes": r"QTE-4\d{4}", "users": r"USR-1\d\d", "territories": r"TER-\d\d"}.items():
        assert all(re.fullmatch(pattern, r[0]) for r in conn.execute(f"SELECT id FROM {table}")), table


def test_the_default_personas_exist_in_every_world() -> None:
    for seed in range(3):
        conn = build_world(seed, CrmKnobs())
        roles = dict(conn.execute("SELECT name, role FROM users WHERE name IN ('Morgan Reyes', 'Dana Okafor')"))
        assert roles == {"Morgan Reyes": "rep", "Dana Okafor": "manager"}


@pytest.mark.parametrize("rate", [0.0, 0.5])
def test_near_duplicate_accounts_follow_their_knob(rate: float) -> None:
    twins = _world(near_duplicate_rate=rate).execute("SELECT COUNT(*) FROM accounts WHERE id LIKE 'ACC-18%'")
    count = twins.fetchone()[0]
    assert (count == 0) if rate == 0 else (count > 100)


def test_a_twin_shares_its_original_name_up_to_a_legal_suffix_in_another_territory() -> None:
    conn = _world(near_duplicate_rate=0.5)
    pairs = conn.execute("SELECT d.name, o.name, d.territory_id, o.territory_id FROM accounts d JOIN accounts o "
                         "ON o.id = 'ACC-' || (CAST(substr(d.id, 5) AS INTEGER) - 8000) WHERE d.id LIKE 'ACC-18%'")
    for twin, original, twin_territory, territory in pairs:
        assert twin.startswith(original) and twin_territory != territory


@pytest.mark.parametrize("rate", [0.0, 0.5])
def test_stale_summaries_follow_their_knob(rate: float) -> None:
    conn = _world(stale_rate=rate)
    stale = 0
    for r in conn.execute("SELECT o.stage, s.summary FROM opportunities o JOIN search_index s ON s.id = o.id"):
        stale += json.loads(r["summary"])["stage"] != r["stage"]
    assert (stale == 0) if rate == 0 else (stale > 100)


def test_legacy_formats_only_on_old_rows_and_only_with_their_knob() -> None:
    assert _legacy_rows(_world(legacy_format_rate=0.0)) == 0
    conn = _world(legacy_format_rate=1.0)
    assert _legacy_rows(conn) > 200
    for r in conn.execute("SELECT created, close_date, amount FROM opportunities"):
        if LEGACY_DATES[0][0].fullmatch(r["close_date"]) or isinstance(r["amount"], str):
            assert r["created"] < "2023-01-01"


def test_every_legacy_value_still_reads_as_a_date_or_an_amount() -> None:
    conn = _world(legacy_format_rate=1.0)
    for r in conn.execute("SELECT close_date, amount FROM opportunities"):
        assert read_date(r["close_date"]).year >= 2019
        assert read_amount(r["amount"]) >= 5000
    for r in conn.execute("SELECT annual_revenue FROM accounts"):
        assert read_amount(r["annual_revenue"]) >= 500_000


def _legacy_rows(conn: sqlite3.Connection) -> int:
    phones = conn.execute("SELECT COUNT(*) FROM contacts WHERE phone NOT LIKE '+%'").fetchone()[0]
    dates = conn.execute("SELECT COUNT(*) FROM opportunities WHERE close_date LIKE '%/%'").fetchone()[0]
    amounts = conn.execute("SELECT COUNT(*) FROM opportunities WHERE typeof(amount) = 'text'").fetchone()[0]
    return int(phones + dates + amounts)


def test_the_discount_threshold_knob_reaches_the_settings() -> None:
    value = _world(discount_threshold=22.5).execute("SELECT value FROM settings WHERE id = 'discount_threshold_pct'")
    assert value.fetchone()[0] == "22.5"
