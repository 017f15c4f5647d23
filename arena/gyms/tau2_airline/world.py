"""The airline world: τ²-bench's airline ``db.json`` as four tables, and back.

``users`` and ``reservations`` hold their records field by field (names, addresses, payment methods, passengers,
flights and payments as canonical JSON); ``flights`` holds each flight's route and schedule and ``flight_dates``
each of its dates (``<flight number>/<date>``: status, seats and prices while it can be booked, departure and
arrival times once it cannot).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arena.gyms.tau2_data import read_files
from arena.gyms.tau2_world import Column, Table, rows

CLOCK_START = "2024-05-15T15:00:00"
"""The time the airline's policy says it is (every episode starts there)."""

USERS = Table("users", "user_id", (
    Column("user_id"), Column("name", "json"), Column("address", "json"), Column("email"), Column("dob"),
    Column("payment_methods", "json"), Column("saved_passengers", "json"), Column("membership"),
    Column("reservations", "json"),
))
RESERVATIONS = Table("reservations", "reservation_id", (
    Column("reservation_id"), Column("user_id"), Column("origin"), Column("destination"), Column("flight_type"),
    Column("cabin"), Column("flights", "json"), Column("passengers", "json"), Column("payment_history", "json"),
    Column("created_at"), Column("total_baggages", "int"), Column("nonfree_baggages", "int"), Column("insurance"),
    Column("status", optional=True),
))
FLIGHTS = Table("flights", "flight_number", (
    Column("flight_number"), Column("origin"), Column("destination"), Column("scheduled_departure_time_est"),
    Column("scheduled_arrival_time_est"),
))
FLIGHT_DATES = Table("flight_dates", "id", (
    Column("id"), Column("flight_number"), Column("date"), Column("status"),
    Column("available_seats", "json", optional=True), Column("prices", "json", optional=True),
    Column("actual_departure_time_est", optional=True), Column("actual_arrival_time_est", optional=True),
    Column("estimated_departure_time_est", optional=True), Column("estimated_arrival_time_est", optional=True),
))
TABLES = (USERS, RESERVATIONS, FLIGHTS, FLIGHT_DATES)
"""The world's tables."""

_DATE_FIELDS = ("id", "flight_number", "date")


def date_id(flight_number: str, date: str) -> str:
    """The id of one flight's date: ``HAT001/2024-05-01``."""
    return f"{flight_number}/{date}"


def from_db(db: dict[str, Any]) -> sqlite3.Connection:
    """The world holding an airline ``db.json``.

    Raises:
        ValueError: A record does not fit the airline's tables (naming it).
    """
    conn = sqlite3.connect(":memory:")
    for table in TABLES:
        table.create(conn)
    USERS.insert(conn, db["users"].values())
    RESERVATIONS.insert(conn, db["reservations"].values())
    FLIGHTS.insert(conn, ({k: v for k, v in f.items() if k != "dates"} for f in db["flights"].values()))
    FLIGHT_DATES.insert(conn, ({"id": date_id(f["flight_number"], d), "flight_number": f["flight_number"], "date": d,
                                **status} for f in db["flights"].values() for d, status in f["dates"].items()))
    conn.execute("CREATE INDEX flight_dates_by_date ON flight_dates (date, status)")
    conn.commit()
    return conn


def to_db(conn: sqlite3.Connection) -> dict[str, Any]:
    """The world read back as an airline ``db.json`` (collections in τ²-bench's order)."""
    flights = FLIGHTS.records(conn)
    for flight in flights.values():
        flight["dates"] = {}
    for row in rows(conn, "SELECT * FROM flight_dates ORDER BY rowid"):
        record = FLIGHT_DATES.record(row)
        flights[row["flight_number"]]["dates"][row["date"]] = {k: v for k, v in record.items()
                                                                if k not in _DATE_FIELDS}
    return {"flights": flights, "users": USERS.records(conn), "reservations": RESERVATIONS.records(conn)}


def build_world() -> sqlite3.Connection:
    """The airline world of the τ²-bench data this installation reads (see ``arena.gyms.tau2_data``).

    Raises:
        Tau2DataMissing: The data is not installed.
    """
    return from_db(read_files("airline").db)
