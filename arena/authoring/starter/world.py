# rentaldesk/world.py
"""The rental desk's world: members, items, rentals, fee waivers and a search index, seeded and messy."""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta

from pydantic import Field

from arena.authoring import GymKnobs, index_row, legacy_date, write_index

CLOCK_START = "2025-06-15T09:00:00"
"""The episodes' "now"."""

TODAY = date(2025, 6, 15)
FIRST = ["Ada", "Ben", "Chloe", "Dev", "Eva", "Finn", "Gia", "Hugo", "Ines", "Jon", "Kai", "Lena", "Mo", "Nia"]
LAST = ["Berg", "Costa", "Diaz", "Evans", "Fox", "Gray", "Hale", "Ito", "Jones", "Kerr", "Lund", "Moss"]
CITIES = ["Leeds", "Porto", "Lyon", "Graz", "Turku"]
ITEMS = [("tent", 12.0), ("kayak", 30.0), ("bike", 18.0), ("drill", 8.0), ("projector", 25.0), ("ladder", 6.0)]

SCHEMA = """
CREATE TABLE members (id TEXT PRIMARY KEY, name TEXT, email TEXT, city TEXT, tier TEXT);
CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT, daily_rate REAL);
CREATE TABLE rentals (id TEXT PRIMARY KEY, member_id TEXT, item_id TEXT, started TEXT, due TEXT,
                      returned TEXT, status TEXT, late_fee REAL);
CREATE TABLE waivers (id TEXT PRIMARY KEY, rental_id TEXT, amount REAL, reason TEXT, by TEXT);
"""


class RentalKnobs(GymKnobs):
    """The kit's task knobs plus the world's messiness."""

    near_duplicate_rate: float = Field(default=0.15, ge=0.0, le=0.5, description="Share of members with a "
                                       "namesake in another city (0-0.5, default 0.15).")
    stale_rate: float = Field(default=0.1, ge=0.0, le=0.5, description="Share of rental summaries in the search "
                              "index whose cached status is out of date (0-0.5, default 0.1).")
    legacy_format_rate: float = Field(default=0.5, ge=0.0, le=1.0, description="Share of rentals started before "
                                      "2024 whose dates are stored as MM/DD/YYYY (0-1, default 0.5).")


def build_world(seed: int, knobs: RentalKnobs) -> sqlite3.Connection:
    """Generate the world for ``seed`` and ``knobs``: the same arguments give the same bytes."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    names = rng.sample([f"{f} {last}" for f in FIRST for last in LAST], 120)
    members = []
    for i, name in enumerate(names):
        city = rng.choice(CITIES)
        members.append((f"MEM-{1000 + i}", name, f"{name.lower().replace(' ', '.')}@example.com", city,
                        rng.choice(["basic", "basic", "plus"])))
        if rng.random() < knobs.near_duplicate_rate:  # a namesake: same name, other email and city
            other = rng.choice([c for c in CITIES if c != city])
            members.append((f"MEM-{5000 + i}", name, f"{name.lower().replace(' ', '')}@mail.test", other, "basic"))
    conn.executemany("INSERT INTO members VALUES (?, ?, ?, ?, ?)", members)
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)",
                     [(f"ITM-{10 + i}", n, rate) for i, (n, rate) in enumerate(ITEMS)])
    rentals, index = [], []
    for i in range(600):
        member = rng.choice(members)
        started = TODAY - timedelta(days=rng.randint(3, 900))
        due = started + timedelta(days=rng.choice([2, 7, 14]))
        out = due >= TODAY - timedelta(days=20) and rng.random() < 0.5
        status = "out" if out else "returned"
        late = max(0, (TODAY - due).days) if out else 0
        fee = round(min(late * 2.5, 60.0), 2)
        returned = None if out else (due + timedelta(days=rng.randint(-1, 3))).isoformat()
        shown = [started.isoformat(), due.isoformat()]
        if started.year < 2024 and rng.random() < knobs.legacy_format_rate:  # legacy rows: MM/DD/YYYY
            shown = [legacy_date(started), legacy_date(due)]
        rid = f"RNT-{20000 + i}"
        rentals.append((rid, member[0], f"ITM-{10 + rng.randrange(len(ITEMS))}", *shown, returned, status, fee))
        cached = ("returned" if status == "out" else "out") if rng.random() < knobs.stale_rate else status
        index.append(index_row("rental", {"id": rid, "member": member[1], "status": cached}, member[1]))
    for m in members:
        index.append(index_row("member", {"id": m[0], "name": m[1], "city": m[3]}, f"{m[1]} {m[2]}"))
    conn.executemany("INSERT INTO rentals VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rentals)
    write_index(conn, sorted(index))  # searches return summaries in id order
    conn.commit()
    return conn

