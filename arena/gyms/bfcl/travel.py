"""BFCL's travel booking system (``TravelAPI``): a login token, credit cards, flight bookings, a budget limit."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from arena.core.toolkit import ToolContext, tool
from arena.gyms.bfcl.classes import FunctionClass, Query
from arena.gyms.bfcl.store import Number, PythonError, as_bfcl, draw, dumps, loads, next_value, seeded_state

SCHEMA = """
CREATE TABLE tv_accounts (id TEXT PRIMARY KEY, task TEXT NOT NULL, access_token, token_type, token_expires_in,
                          token_scope, user_first_name, user_last_name, budget_limit, long_context INTEGER NOT NULL);
CREATE TABLE tv_cards (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, card_id TEXT NOT NULL,
                       card TEXT NOT NULL);
CREATE TABLE tv_bookings (id TEXT PRIMARY KEY, task TEXT NOT NULL, seq INTEGER NOT NULL, booking_id TEXT NOT NULL,
                          booking TEXT NOT NULL);
CREATE INDEX tv_cards_by_task ON tv_cards (task, card_id);
CREATE INDEX tv_bookings_by_task ON tv_bookings (task, booking_id);
"""

OWNER = "TravelAPI"
DEFAULT_SEED = 141053

ROUTES: dict[tuple[str, str], int] = {
    ("SFO", "LAX"): 200, ("SFO", "JFK"): 500, ("SFO", "ORD"): 400, ("SFO", "BOS"): 450, ("SFO", "RMS"): 300,
    ("SFO", "SBK"): 350, ("SFO", "MPC"): 370, ("SFO", "SVP"): 320, ("SFO", "SHD"): 330, ("SFO", "SSV"): 340,
    ("SFO", "OKD"): 360, ("SFO", "WLB"): 310, ("SFO", "CRH"): 380, ("SFO", "ATV"): 390, ("SFO", "PHV"): 420,
    ("SFO", "GFD"): 430, ("SFO", "CIA"): 700, ("LAX", "SFO"): 100, ("LAX", "JFK"): 600, ("LAX", "ORD"): 500,
    ("LAX", "BOS"): 550, ("LAX", "RMS"): 310, ("LAX", "SBK"): 320, ("LAX", "MPC"): 330, ("LAX", "SVP"): 340,
    ("LAX", "SHD"): 350, ("LAX", "SSV"): 360, ("LAX", "OKD"): 370, ("LAX", "WLB"): 380, ("LAX", "CRH"): 390,
    ("LAX", "ATV"): 400, ("LAX", "PHV"): 410, ("LAX", "GFD"): 420, ("LAX", "HND"): 430, ("JFK", "ORD"): 300,
    ("JFK", "BOS"): 250, ("JFK", "RMS"): 450, ("JFK", "SBK"): 460, ("JFK", "MPC"): 470, ("JFK", "SVP"): 480,
    ("JFK", "SHD"): 490, ("JFK", "SSV"): 500, ("JFK", "OKD"): 510, ("JFK", "WLB"): 520, ("JFK", "CRH"): 530,
    ("JFK", "ATV"): 540, ("JFK", "PHV"): 550, ("JFK", "GFD"): 560, ("JFK", "LAX"): 570, ("JFK", "HND"): 800,
    ("JFK", "PVG"): 950, ("JFK", "PEK"): 1000, ("ORD", "LAX"): 180, ("ORD", "BOS"): 200, ("ORD", "RMS"): 350,
    ("ORD", "SBK"): 360, ("ORD", "MPC"): 370, ("ORD", "SVP"): 380, ("ORD", "SHD"): 390, ("ORD", "SSV"): 400,
    ("ORD", "OKD"): 410, ("ORD", "WLB"): 420, ("ORD", "CRH"): 430, ("ORD", "ATV"): 440, ("ORD", "PHV"): 450,
    ("ORD", "GFD"): 460, ("BOS", "RMS"): 400, ("BOS", "SBK"): 410, ("BOS", "MPC"): 420, ("BOS", "SVP"): 430,
    ("BOS", "SHD"): 440, ("BOS", "SSV"): 450, ("BOS", "OKD"): 460, ("BOS", "WLB"): 470, ("BOS", "CRH"): 480,
    ("BOS", "ATV"): 490, ("BOS", "PHV"): 500, ("BOS", "GFD"): 510, ("RMS", "BOS"): 200, ("RMS", "JFK"): 210,
    ("RMS", "SBK"): 220, ("RMS", "MPC"): 230, ("RMS", "SVP"): 240, ("RMS", "SHD"): 250, ("RMS", "SSV"): 260,
    ("RMS", "OKD"): 270, ("RMS", "WLB"): 280, ("RMS", "CRH"): 290, ("RMS", "ATV"): 300, ("RMS", "PHV"): 310,
    ("RMS", "GFD"): 320, ("RMS", "LAX"): 330, ("SBK", "MPC"): 200, ("SBK", "SVP"): 210, ("SBK", "SHD"): 220,
    ("SBK", "SSV"): 230, ("SBK", "OKD"): 240, ("SBK", "WLB"): 250, ("SBK", "CRH"): 260, ("SBK", "ATV"): 270,
    ("SBK", "PHV"): 280, ("SBK", "GFD"): 290, ("MPC", "SVP"): 210, ("MPC", "SHD"): 220, ("MPC", "SSV"): 230,
    ("MPC", "OKD"): 240, ("MPC", "WLB"): 250, ("MPC", "CRH"): 260, ("MPC", "ATV"): 270, ("MPC", "PHV"): 280,
    ("MPC", "GFD"): 290, ("SVP", "SHD"): 230, ("SVP", "SSV"): 240, ("SVP", "OKD"): 250, ("SVP", "WLB"): 260,
    ("SVP", "CRH"): 270, ("SVP", "ATV"): 280, ("SVP", "PHV"): 290, ("SVP", "GFD"): 300, ("SHD", "SSV"): 220,
    ("SHD", "OKD"): 230, ("SHD", "WLB"): 240, ("SHD", "CRH"): 250, ("SHD", "ATV"): 260, ("SHD", "PHV"): 270,
    ("SHD", "GFD"): 280, ("SSV", "OKD"): 240, ("SSV", "WLB"): 250, ("SSV", "CRH"): 260, ("SSV", "ATV"): 270,
    ("SSV", "PHV"): 280, ("SSV", "GFD"): 290, ("OKD", "WLB"): 230, ("OKD", "CRH"): 240, ("OKD", "ATV"): 250,
    ("OKD", "PHV"): 260, ("OKD", "GFD"): 270, ("WLB", "CRH"): 250, ("WLB", "ATV"): 260, ("WLB", "PHV"): 270,
    ("WLB", "GFD"): 280, ("CRH", "ATV"): 240, ("CRH", "PHV"): 250, ("CRH", "GFD"): 260, ("CRH", "SFO"): 270,
    ("CRH", "RMS"): 280, ("CRH", "HKG"): 290, ("CRH", "JFK"): 300, ("ATV", "PHV"): 230, ("ATV", "GFD"): 240,
    ("PHV", "GFD"): 220, ("LHR", "CDG"): 100, ("OKD", "LAX"): 220,
}
"""Base economy fares in USD of every route the system flies."""

CLASS_FACTORS = {"economy": 1, "business": 2, "first": 5}
AIRPORTS = ["RMS", "SBK", "MPC", "SVP", "SHD", "CDG", "LHR", "SSV", "OKD", "WLB", "PEK", "HND", "HKG", "CIA", "CRH",
            "ATV", "PHV", "GFD", "SFO", "LAX", "JFK", "ORD", "BOS"]
NEAREST_AIRPORT = {"Rivermist": "RMS", "Stonebrook": "SBK", "Maplecrest": "MPC", "Silverpine": "SVP",
                   "Shadowridge": "SHD", "London": "LHR", "Paris": "CDG", "Sunset Valley": "SSV", "Oakendale": "OKD",
                   "Willowbend": "WLB", "Crescent Hollow": "CRH", "Autumnville": "ATV", "Pinehaven": "PHV",
                   "Greenfield": "GFD", "San Francisco": "SFO", "Los Angeles": "LAX", "New York": "JFK",
                   "Chicago": "ORD", "Boston": "BOS", "Beijing": "PEK", "Hong Kong": "HKG", "Rome": "CIA",
                   "Tokyo": "HND"}
EXCHANGE_RATES: dict[tuple[str, str], int | float] = {
    ("USD", "RMB"): 7, ("USD", "EUR"): 0.8, ("USD", "JPY"): 110, ("USD", "GBP"): 0.7, ("USD", "CAD"): 1.3,
    ("USD", "AUD"): 1.4, ("USD", "INR"): 70, ("USD", "RUB"): 60, ("USD", "BRL"): 3.8, ("USD", "MXN"): 20}
TRAVEL_CLASSES = "{'economy', 'business', 'first'}"
"""How the booking refusal names the travel classes."""

ACCOUNT_FIELDS = ("access_token", "token_type", "token_expires_in", "token_scope", "user_first_name",
                  "user_last_name", "budget_limit")


def _account(ctx: ToolContext) -> dict[str, Any]:
    found = ctx.one("SELECT * FROM tv_accounts WHERE id = ?", (ctx.task_id,))
    if found is None:
        raise PythonError("name 'TravelAPI' is not defined: this task has no travel account")
    return found


def _update(ctx: ToolContext, **fields: Any) -> None:
    sets = ", ".join(f"{k} = ?" for k in fields)
    ctx.conn.execute(f"UPDATE tv_accounts SET {sets} WHERE id = ?", (*fields.values(), ctx.task_id))


def _card(ctx: ToolContext, card_id: str) -> tuple[str, dict[str, Any]] | None:
    row = ctx.one("SELECT id, card FROM tv_cards WHERE task = ? AND card_id = ?", (ctx.task_id, card_id))
    return None if row is None else (row["id"], loads(row["card"]))


def _booking(ctx: ToolContext, booking_id: str | None) -> tuple[str, dict[str, Any]] | None:
    row = ctx.one("SELECT id, booking FROM tv_bookings WHERE task = ? AND booking_id = ?", (ctx.task_id, booking_id))
    return None if row is None else (row["id"], loads(row["booking"]))


def _save_card(ctx: ToolContext, row_id: str, card: dict[str, Any]) -> None:
    ctx.conn.execute("UPDATE tv_cards SET card = ? WHERE id = ?", (dumps(card), row_id))


def _bookings(ctx: ToolContext) -> dict[str, Any]:
    return {r["booking_id"]: loads(r["booking"]) for r in ctx.all(
        "SELECT booking_id, booking FROM tv_bookings WHERE task = ? ORDER BY seq", (ctx.task_id,))}


def _token_error(account: dict[str, Any], access_token: str) -> str | None:
    if account["token_expires_in"] == 0:
        return "Token expired"
    if access_token != account["access_token"]:
        return "Invalid access token"
    return None


@tool(mode="write", entity="account", operation="action")
@as_bfcl
def authenticate_travel(ctx: ToolContext, client_id: str, client_secret: str, refresh_token: str, grant_type: str,
                        user_first_name: str, user_last_name: str) -> dict[str, Any]:
    """Log in to the travel system and get an access token for the other calls.

    Args:
        client_id: The client id.
        client_secret: The client secret.
        refresh_token: The refresh token.
        grant_type: The access scope: read_write, read or write.
        user_first_name: The user's first name.
        user_last_name: The user's last name.
    """
    _account(ctx)
    token = str(draw(ctx, OWNER, lambda rng: rng.randint(100000, 999999)))
    _update(ctx, token_expires_in=2, access_token=token, token_type="Bearer", token_scope=grant_type,
            user_first_name=user_first_name, user_last_name=user_last_name)
    return {"expires_in": 2, "access_token": token, "token_type": "Bearer", "scope": grant_type}


@tool(mode="read", entity="account", operation="action")
@as_bfcl
def travel_get_login_status(ctx: ToolContext) -> dict[str, Any]:
    """Say whether the travel system is logged in."""
    expires = _account(ctx)["token_expires_in"]
    return {"status": not (expires is None or expires == 0)}


@tool(mode="read", entity="budget", operation="get")
@as_bfcl
def get_budget_fiscal_year(ctx: ToolContext, lastModifiedAfter: str | None = None,
                           includeRemoved: str | None = None) -> dict[str, Any]:
    """Get the budget's fiscal year.

    Args:
        lastModifiedAfter: Only budgets changed after this date (YYYY-MM-DD).
        includeRemoved: Whether to include removed budgets.
    """
    _account(ctx)
    return {"budget_fiscal_year": "2018"}


@tool(mode="write", entity="card", operation="create")
@as_bfcl
def register_credit_card(ctx: ToolContext, access_token: str, card_number: str, expiration_date: str,
                         cardholder_name: str, card_verification_number: int) -> dict[str, Any]:
    """Register a credit card for bookings.

    Args:
        access_token: The access token from authenticate_travel.
        card_number: The card's number.
        expiration_date: The card's expiry, MM/YYYY.
        cardholder_name: The name on the card.
        card_verification_number: The card's verification number.
    """
    account = _account(ctx)
    if account["token_expires_in"] is None:
        return {"error": "Token not initialized"}
    refusal = _token_error(account, access_token)
    if refusal:
        return {"error": refusal}
    if _card(ctx, card_number) is not None:
        return {"error": "Card already registered"}
    card_id, balance = draw(ctx, OWNER, lambda rng: (str(rng.randint(100000000000, 999999999999)),
                                                     rng.randint(10000, 99999)))
    card = {"card_number": card_number, "expiration_date": expiration_date, "cardholder_name": cardholder_name,
            "card_verification_number": card_verification_number, "balance": balance}
    _put(ctx, "tv_cards", card_id, card)
    return {"card_id": card_id}


def _put(ctx: ToolContext, table: str, key: str, value: dict[str, Any]) -> None:
    column = "card_id" if table == "tv_cards" else "booking_id"
    row = ctx.one(f"SELECT id FROM {table} WHERE task = ? AND {column} = ?", (ctx.task_id, key))
    if row is not None:
        ctx.conn.execute(f"UPDATE {table} SET {'card' if table == 'tv_cards' else 'booking'} = ? WHERE id = ?",
                         (dumps(value), row["id"]))
        return
    seq = next_value(ctx, table, "seq")
    ctx.conn.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)", (f"{ctx.task_id}/{table}/{seq}", ctx.task_id, seq,
                                                                      key, dumps(value)))


def _costs(travel_from: str, travel_to: str, travel_date: str, travel_class: str, every_route: bool) -> list[float]:
    if (travel_from, travel_to) not in ROUTES:
        raise PythonError("No available route for the given airports.")
    if travel_class not in CLASS_FACTORS:
        raise PythonError("Invalid travel class. Options are: economy, business, first.")
    digits = sum(int(c) for c in travel_date if c.isdigit())
    multiplier = 2 if digits % 2 == 0 else 1
    factor = CLASS_FACTORS[travel_class]
    routes = ROUTES.values() if every_route else [ROUTES[(travel_from, travel_to)]]
    return [float(base * factor * multiplier) for base in routes]


@tool(mode="read", entity="flight", operation="get")
@as_bfcl
def get_flight_cost(ctx: ToolContext, travel_from: str, travel_to: str, travel_date: str,
                    travel_class: str) -> dict[str, Any]:
    """Get a flight's cost in USD from the airports, the day and the class (long-context worlds list every route).

    Args:
        travel_from: The departure airport's IATA code.
        travel_to: The destination airport's IATA code.
        travel_date: The day of travel, YYYY-MM-DD.
        travel_class: economy, business or first.
    """
    account = _account(ctx)
    return {"travel_cost_list": _costs(travel_from, travel_to, travel_date, travel_class,
                                       bool(account["long_context"]))}


@tool(mode="read", entity="card", operation="get")
@as_bfcl
def get_credit_card_balance(ctx: ToolContext, access_token: str, card_id: str) -> dict[str, Any]:
    """Get a registered card's balance.

    Args:
        access_token: The access token from authenticate_travel.
        card_id: The card's id.
    """
    refusal = _token_error(_account(ctx), access_token)
    if refusal:
        return {"error": refusal}
    found = _card(ctx, card_id)
    if found is None:
        ids = [r["card_id"] for r in ctx.all("SELECT card_id FROM tv_cards WHERE task = ? ORDER BY seq",
                                             (ctx.task_id,))]
        return {"error": f"Card not registered. Here are a list of card_id's: {ids!r}"}
    return {"card_balance": found[1]["balance"]}


@tool(mode="write", entity="booking", operation="create")
@as_bfcl
def book_flight(ctx: ToolContext, access_token: str, card_id: str, travel_date: str, travel_from: str, travel_to: str,
                travel_class: str) -> dict[str, Any]:
    """Book a flight and pay it with a registered card (airports as IATA codes).

    Args:
        access_token: The access token from authenticate_travel.
        card_id: The id of the card to pay with.
        travel_date: The day of travel, YYYY-MM-DD.
        travel_from: The departure airport's IATA code.
        travel_to: The destination airport's IATA code.
        travel_class: economy, business or first.
    """
    account = _account(ctx)
    refusal = _token_error(account, access_token)
    if refusal:
        return {"booking_status": False, "error": refusal}
    found = _card(ctx, card_id)
    if found is None:
        return {"booking_status": False, "error": "Card not registered"}
    row_id, card = found
    if "balance" not in card:
        return {"booking_status": False, "error": "Balance not found"}
    if travel_from not in AIRPORTS:
        return {"booking_status": False, "error": f"Invalid departure airport code: {travel_from}"}
    if travel_to not in AIRPORTS:
        return {"booking_status": False, "error": f"Invalid destination airport code: {travel_to}"}
    try:
        datetime.strptime(travel_date, "%Y-%m-%d")
    except ValueError:
        return {"booking_status": False, "error": "Invalid date format. Use YYYY-MM-DD."}
    if travel_class not in CLASS_FACTORS:
        return {"booking_status": False, "error": f"Invalid travel class. Must be one of {TRAVEL_CLASSES}"}
    try:
        cost = _costs(travel_from, travel_to, travel_date, travel_class, False)[0]
    except PythonError as exc:
        return {"booking_status": False, "error": exc.message}
    if card["balance"] < cost:
        return {"booking_status": False, "error": "Insufficient funds"}
    budget = account["budget_limit"]
    if budget is not None and card["balance"] < budget:
        return {"booking_status": False, "error": "Balance is less than budget limit"}
    card["balance"] -= cost
    _save_card(ctx, row_id, card)
    booking_id, transaction_id = draw(ctx, OWNER, lambda rng: (str(rng.randint(1000000, 9999999)),
                                                               str(rng.randint(10000000, 99999999))))
    _put(ctx, "tv_bookings", booking_id, {"card_id": card_id, "travel_date": travel_date, "travel_from": travel_from,
                                          "travel_to": travel_to, "travel_class": travel_class, "travel_cost": cost,
                                          "transaction_id": transaction_id})
    history = _bookings(ctx) if account["long_context"] else {}
    return {"booking_id": booking_id, "transaction_id": transaction_id, "booking_status": True,
            "booking_history": history}


@tool(mode="read", entity="booking", operation="get")
@as_bfcl
def retrieve_invoice(ctx: ToolContext, access_token: str, booking_id: str | None = None,
                     insurance_id: str | None = None) -> dict[str, Any]:
    """Get a booking's invoice.

    Args:
        access_token: The access token from authenticate_travel.
        booking_id: The booking's id.
        insurance_id: The insurance's id.
    """
    refusal = _token_error(_account(ctx), access_token)
    if refusal:
        return {"error": refusal}
    found = _booking(ctx, booking_id)
    if found is None:
        return {"error": "Booking not found"}
    b = found[1]
    return {"invoice": {"booking_id": booking_id, "travel_date": b["travel_date"], "travel_from": b["travel_from"],
                        "travel_to": b["travel_to"], "travel_class": b["travel_class"],
                        "travel_cost": b["travel_cost"], "transaction_id": b["transaction_id"]}}


@tool(mode="read", entity="booking", operation="list")
@as_bfcl
def get_booking_history(ctx: ToolContext, access_token: str) -> dict[str, Any]:
    """List every booking.

    Args:
        access_token: The access token from authenticate_travel.
    """
    refusal = _token_error(_account(ctx), access_token)
    if refusal:
        return {"error": refusal}
    return {"booking_history": _bookings(ctx)}


@tool(mode="read", entity="airport", operation="list")
@as_bfcl
def list_all_airports(ctx: ToolContext) -> list[str]:
    """List every airport the system flies to, by IATA code."""
    _account(ctx)
    return list(AIRPORTS)


@tool(mode="write", entity="booking", operation="delete")
@as_bfcl
def cancel_booking(ctx: ToolContext, access_token: str, booking_id: str) -> dict[str, Any]:
    """Cancel a booking and refund its cost to the card that paid it.

    Args:
        access_token: The access token from authenticate_travel.
        booking_id: The booking's id.
    """
    refusal = _token_error(_account(ctx), access_token)
    if refusal:
        return {"cancel_status": False, "error": refusal}
    found = _booking(ctx, booking_id)
    if found is None:
        return {"cancel_status": False, "error": "Booking not found"}
    row_id, booking = found
    card = _card(ctx, booking["card_id"])
    if card is None:
        raise PythonError(repr(booking["card_id"]))
    card[1]["balance"] += booking["travel_cost"]
    _save_card(ctx, card[0], card[1])
    ctx.conn.execute("DELETE FROM tv_bookings WHERE id = ?", (row_id,))
    return {"cancel_status": True}


@tool(mode="read", entity="currency", operation="action")
@as_bfcl
def compute_exchange_rate(ctx: ToolContext, base_currency: str, target_currency: str, value: Number) -> dict[str, Any]:
    """Convert an amount between two currencies (one of them USD).

    Args:
        base_currency: The currency of the amount.
        target_currency: The currency to convert to.
        value: The amount.
    """
    _account(ctx)
    for (usd, other), rate in EXCHANGE_RATES.items():
        if base_currency == usd and target_currency == other:
            return {"exchanged_value": float(value * rate)}
        if base_currency == other and target_currency == usd:
            return {"exchanged_value": round(value / rate, 2)}
    raise PythonError("No available exchange rate for the given currencies.")


@tool(mode="read", entity="traveler", operation="action")
@as_bfcl
def verify_traveler_information(ctx: ToolContext, first_name: str, last_name: str, date_of_birth: str,
                                passport_number: str) -> dict[str, Any]:
    """Check that a traveler is the logged-in user, an adult, with a passport issued by the United States.

    Args:
        first_name: The traveler's first name.
        last_name: The traveler's last name.
        date_of_birth: The traveler's date of birth, YYYY-MM-DD.
        passport_number: The traveler's passport number.
    """
    account = _account(ctx)
    if account["user_first_name"] != first_name or account["user_last_name"] != last_name:
        return {"verification_status": False,
                "verification_failure": "Cannot book flight information for another user."
                                        f"Expected {account['user_first_name']} {account['user_last_name']}, "
                                        f"got {first_name} {last_name}"}
    try:
        born = datetime.strptime(date_of_birth, "%Y-%m-%d")
    except ValueError:
        return {"verification_status": False,
                "verification_failure": "Invalid date of birth format. Please use YYYY-MM-DD."}
    today = ctx.now
    age = today.year - born.year - ((today.month, today.day) < (born.month, born.day))
    if age < 18:
        return {"verification_status": False, "verification_failure": "Traveler must be at least 18 years old."}
    if not passport_number.startswith("US"):
        return {"verification_status": False, "verification_failure": "Passport must be issued by the United States."}
    return {"verification_status": True}


@tool(mode="write", entity="budget", operation="update")
@as_bfcl
def set_budget_limit(ctx: ToolContext, access_token: str, budget_limit: Number) -> dict[str, Any]:
    """Set the budget limit for bookings.

    Args:
        access_token: The access token from authenticate_travel.
        budget_limit: The budget limit in USD.
    """
    refusal = _token_error(_account(ctx), access_token)
    if refusal:
        return {"error": refusal}
    limit = float(budget_limit)
    _update(ctx, budget_limit=limit)
    return {"budget_limit": limit}


@tool(mode="read", entity="airport", operation="search")
@as_bfcl
def get_nearest_airport_by_city(ctx: ToolContext, location: str) -> dict[str, Any]:
    """Get the IATA code of the airport nearest a city.

    Args:
        location: The city's name.
    """
    _account(ctx)
    return {"nearest_airport": NEAREST_AIRPORT.get(location, "Unknown")}


@tool(mode="write", entity="booking", operation="action")
@as_bfcl
def purchase_insurance(ctx: ToolContext, access_token: str, insurance_type: str, booking_id: str,
                       insurance_cost: Number, card_id: str) -> dict[str, Any]:
    """Buy travel insurance for a booking, paid with a registered card.

    Args:
        access_token: The access token from authenticate_travel.
        insurance_type: The kind of insurance.
        booking_id: The booking's id.
        insurance_cost: What the insurance costs.
        card_id: The id of the card to pay with.
    """
    account = _account(ctx)
    refusal = _token_error(account, access_token)
    if refusal:
        return {"insurance_status": False, "error": refusal}
    if account["budget_limit"] is not None and account["budget_limit"] < insurance_cost:
        return {"insurance_status": False, "error": "Exceeded budget limit"}
    if _booking(ctx, booking_id) is None:
        return {"insurance_status": False, "error": "Booking not found"}
    found = _card(ctx, card_id)
    if found is None:
        return {"insurance_status": False, "error": "Credit card not registered"}
    found[1]["balance"] -= insurance_cost
    _save_card(ctx, found[0], found[1])
    insurance_id = str(draw(ctx, OWNER, lambda rng: rng.randint(100000000, 999999999)))
    return {"insurance_id": insurance_id, "insurance_status": True}


@tool(mode="read", entity="booking", operation="action")
@as_bfcl
def contact_customer_support(ctx: ToolContext, booking_id: str, message: str) -> dict[str, Any]:
    """Send customer support a message about a booking.

    Args:
        booking_id: The booking's id.
        message: The message.
    """
    _account(ctx)
    if _booking(ctx, booking_id) is None:
        return {"error": "Booking not found"}
    return {"customer_support_message": "Thank you for contacting customer support. Your message has been received "
                                        "and we will get back to you shortly."}


@tool(mode="read", entity="card", operation="list")
@as_bfcl
def get_all_credit_cards(ctx: ToolContext) -> dict[str, Any]:
    """List every registered credit card."""
    _account(ctx)
    cards = {r["card_id"]: loads(r["card"]) for r in ctx.all(
        "SELECT card_id, card FROM tv_cards WHERE task = ? ORDER BY seq", (ctx.task_id,))}
    return {"credit_card_list": cards}


TOOLS = (authenticate_travel, travel_get_login_status, get_budget_fiscal_year, register_credit_card,
         get_flight_cost, get_credit_card_balance, book_flight, retrieve_invoice, get_booking_history,
         list_all_airports, cancel_booking, compute_exchange_rate, verify_traveler_information, set_budget_limit,
         get_nearest_airport_by_city, purchase_insurance, contact_customer_support, get_all_credit_cards)


def load(conn: sqlite3.Connection, task: str, config: dict[str, Any], long_context: dict[str, Any] | None) -> None:
    """Load a task's travel account from BFCL's configuration (long context adds BFCL's extra cards, bookings)."""
    conn.execute("INSERT INTO tv_accounts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (task, task, *(config.get(f) for f in ACCOUNT_FIELDS), int(bool(long_context))))
    cards = dict(config.get("credit_card_list", {}))
    bookings = dict(config.get("booking_record", {}))
    if long_context:
        cards.update({k: v for k, v in long_context["CREDIT_CARD_EXTENSION"].items() if k not in cards})
        bookings.update({k: v for k, v in long_context["BOOKING_RECORD_EXTENSION"].items() if k not in bookings})
    for table, items in (("tv_cards", cards), ("tv_bookings", bookings)):
        for seq, (key, value) in enumerate(items.items()):
            conn.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)",
                         (f"{task}/{table}/{seq}", task, seq, key, dumps(value)))
    conn.execute("INSERT INTO rng_states VALUES (?, ?, ?, ?)",
                 (f"{task}/{OWNER}", task, OWNER, seeded_state(int(config.get("random_seed", DEFAULT_SEED)))))


def state(query: Query, task: str) -> dict[str, Any]:
    """The travel account's public attributes as BFCL's instance holds them."""
    row = query(f"SELECT {', '.join(ACCOUNT_FIELDS)}, long_context FROM tv_accounts WHERE id = ?", (task,))[0]
    cards = {k: loads(v) for k, v in query("SELECT card_id, card FROM tv_cards WHERE task = ? ORDER BY seq", (task,))}
    bookings = {k: loads(v) for k, v in query("SELECT booking_id, booking FROM tv_bookings WHERE task = ? ORDER BY seq",
                                              (task,))}
    values = dict(zip(ACCOUNT_FIELDS, row[:-1], strict=True))
    return {"credit_card_list": cards, "booking_record": bookings, **values, "long_context": bool(row[-1])}


TRAVEL = FunctionClass(name="TravelAPI", label="travel booking", schema=SCHEMA, load=load, state=state,
                       tools={t.name: t for t in TOOLS})
"""The travel booking class."""

