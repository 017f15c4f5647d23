"""The airline's tools, as τ²-bench documents them (its tool docstrings and policy.md), written for this world.

Each tool does what τ²-bench's tool of the same name does to the database, with the same checks in the same order
and the same error messages; a refused call changes nothing. Some behaviour is τ²-bench's own and kept so its
verdict stays its verdict: booking takes seats, but cancelling or changing flights gives none back; a booked
reservation is created at the policy's time (2024-05-15T15:00:00) with the next free id of ``HATHAT``,
``HATHAU``, ``HATHAV``; certificates sent are ``certificate_3221322`` .. ``certificate_3221324``; a certificate used
for a booking is spent whole; ids are matched exactly.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from arena.core.toolkit import InvalidArgument, NotFound, PolicyViolation, ToolContext, tool
from arena.gyms.tau2_airline.world import CLOCK_START, FLIGHT_DATES, FLIGHTS, RESERVATIONS, USERS, date_id
from arena.gyms.tau2_world import dumps, rows

Cabin = Literal["basic_economy", "economy", "business"]
FlightType = Literal["one_way", "round_trip"]
Insurance = Literal["yes", "no"]

NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
"""The ids a booking takes, the first one free (τ²-bench assumes at most three bookings per task)."""

NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
"""The ids a sent certificate takes, the first one the user does not hold."""

AIRPORTS = (("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
            ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
            ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
            ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia"))
"""The airports ``list_all_airports`` gives."""


class FlightInfo(BaseModel):
    """One flight of a reservation: its number and date."""

    model_config = ConfigDict(extra="ignore")

    flight_number: str
    date: str


class Passenger(BaseModel):
    """A passenger: first name, last name and date of birth (YYYY-MM-DD)."""

    model_config = ConfigDict(extra="ignore")

    first_name: str
    last_name: str
    dob: str


class Payment(BaseModel):
    """A payment: the id of a payment method in the user's profile and the amount."""

    model_config = ConfigDict(extra="ignore")

    payment_id: str
    amount: int


def _user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise NotFound(f"User {user_id} not found")
    return USERS.record(row)


def _reservation(ctx: ToolContext, reservation_id: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM reservations WHERE reservation_id = ?", (reservation_id,))
    if row is None:
        raise NotFound(f"Reservation {reservation_id} not found")
    return RESERVATIONS.record(row)


def _flight(ctx: ToolContext, flight_number: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM flights WHERE flight_number = ?", (flight_number,))
    if row is None:
        raise NotFound(f"Flight {flight_number} not found")
    return FLIGHTS.record(row)


def _flight_date(ctx: ToolContext, flight_number: str, date: str) -> dict[str, Any]:
    _flight(ctx, flight_number)
    row = ctx.one("SELECT * FROM flight_dates WHERE id = ?", (date_id(flight_number, date),))
    if row is None:
        raise NotFound(f"Flight {flight_number} not found on date {date}")
    return FLIGHT_DATES.record(row)


def _reservation_view(reservation: dict[str, Any]) -> dict[str, Any]:
    return {**reservation, "status": reservation.get("status")}


def _save_user(ctx: ToolContext, user: dict[str, Any]) -> None:
    ctx.conn.execute("UPDATE users SET payment_methods = ?, reservations = ? WHERE user_id = ?",
                     (dumps(user["payment_methods"]), dumps(user["reservations"]), user["user_id"]))


def _save_reservation(ctx: ToolContext, reservation: dict[str, Any]) -> None:
    names = [c.name for c in RESERVATIONS.columns if c.name != "reservation_id"]
    values = RESERVATIONS.row(reservation)[1:]
    sets = ", ".join(f"{n} = ?" for n in names)
    ctx.conn.execute(f"UPDATE reservations SET {sets} WHERE reservation_id = ?",
                     (*values, reservation["reservation_id"]))


def _direct_flights(ctx: ToolContext, date: str, origin: str | None, destination: str | None,
                    leave_after: str | None = None) -> list[dict[str, Any]]:
    found = rows(ctx.conn, "SELECT f.*, d.available_seats, d.prices FROM flights f JOIN flight_dates d "
                           "ON d.flight_number = f.flight_number WHERE d.date = ? AND d.status = 'available' "
                           "ORDER BY f.rowid", (date,))
    out = []
    for f in found:
        if origin is not None and f["origin"] != origin:
            continue
        if destination is not None and f["destination"] != destination:
            continue
        if leave_after is not None and f["scheduled_departure_time_est"] < leave_after:
            continue
        out.append({"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
                    "status": "available", "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                    "scheduled_arrival_time_est": f["scheduled_arrival_time_est"], "date": None,
                    "available_seats": json.loads(f["available_seats"]), "prices": json.loads(f["prices"])})
    return out


def _payment_for_update(user: dict[str, Any], payment_id: str, total_price: int) -> dict[str, Any] | None:
    """Charge an update to a saved payment method (not a certificate); ``None`` when nothing is owed."""
    method = user["payment_methods"].get(payment_id)
    if method is None:
        raise NotFound("Payment method not found")
    if method["source"] == "certificate":
        raise PolicyViolation("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total_price:
        raise PolicyViolation("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] -= total_price
    if total_price == 0:
        return None
    return {"payment_id": payment_id, "amount": total_price}


@tool(mode="write", entity="reservation", operation="create", irreversible=True)
def book_reservation(ctx: ToolContext, user_id: str, origin: str, destination: str, flight_type: FlightType,
                     cabin: Cabin, flights: list[FlightInfo], passengers: list[Passenger],
                     payment_methods: list[Payment], total_baggages: int, nonfree_baggages: int,
                     insurance: Insurance) -> dict[str, Any]:
    """Book a reservation.

    Args:
        user_id: The ID of the user to book the reservation such as 'sara_doe_496'.
        origin: The IATA code for the origin city such as 'SFO'.
        destination: The IATA code for the destination city such as 'JFK'.
        flight_type: The type of flight such as 'one_way' or 'round_trip'.
        cabin: The cabin class such as 'basic_economy', 'economy', or 'business'.
        flights: An array of objects containing details about each piece of flight (flight_number, date).
        passengers: An array of objects containing details about each passenger (first_name, last_name, dob).
        payment_methods: An array of objects containing details about each payment method (payment_id, amount).
        total_baggages: The total number of baggage items to book the reservation.
        nonfree_baggages: The number of non-free baggage items to book the reservation.
        insurance: Whether the reservation has insurance.
    """
    user = _user(ctx, user_id)
    reservation_id = next((r for r in NEW_RESERVATION_IDS
                           if ctx.one("SELECT 1 AS x FROM reservations WHERE reservation_id = ?", (r,)) is None), None)
    if reservation_id is None:
        raise PolicyViolation("Too many reservations")
    booked: list[dict[str, Any]] = []
    seats: list[dict[str, Any]] = []
    total_price = 0
    for info in flights:
        flight = _flight(ctx, info.flight_number)
        day = _flight_date(ctx, info.flight_number, info.date)
        if day["status"] != "available":
            raise PolicyViolation(f"Flight {info.flight_number} not available on date {info.date}")
        if day["available_seats"][cabin] < len(passengers):
            raise PolicyViolation(f"Not enough seats on flight {info.flight_number}")
        price = day["prices"][cabin]
        booked.append({"flight_number": info.flight_number, "origin": flight["origin"],
                       "destination": flight["destination"], "date": info.date, "price": price})
        seats.append(day)
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages
    for payment in payment_methods:
        method = user["payment_methods"].get(payment.payment_id)
        if method is None:
            raise NotFound(f"Payment method {payment.payment_id} not found")
        if method["source"] in ("gift_card", "certificate") and method["amount"] < payment.amount:
            raise PolicyViolation(f"Not enough balance in payment method {payment.payment_id}")
    paid = sum(p.amount for p in payment_methods)
    if paid != total_price:
        raise PolicyViolation(f"Payment amount does not add up, total price is {total_price}, but paid {paid}")
    for payment in payment_methods:
        method = user["payment_methods"].get(payment.payment_id)
        if method is None:  # a certificate listed twice: its first payment spent it
            raise NotFound(f"Payment method {payment.payment_id} not found")
        if method["source"] == "gift_card":
            method["amount"] -= payment.amount
        elif method["source"] == "certificate":
            del user["payment_methods"][payment.payment_id]
    for day in seats:
        ctx.conn.execute("UPDATE flight_dates SET available_seats = json_set(available_seats, '$.' || ?, "
                         "json_extract(available_seats, '$.' || ?) - ?) WHERE id = ?",
                         (cabin, cabin, len(passengers), day["id"]))
    reservation = {
        "reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
        "flight_type": flight_type, "cabin": cabin, "flights": booked,
        "passengers": [p.model_dump() for p in passengers],
        "payment_history": [p.model_dump() for p in payment_methods], "created_at": CLOCK_START,
        "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
    }
    RESERVATIONS.insert(ctx.conn, [reservation])
    user["reservations"].append(reservation_id)
    _save_user(ctx, user)
    return _reservation_view(reservation)


@tool(mode="read")
def calculate(ctx: ToolContext, expression: str) -> str:
    """Calculate the result of a mathematical expression.

    Args:
        expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers,
            operators (+, -, *, /), parentheses, and spaces.
    """
    return evaluate(expression)


def evaluate(expression: str) -> str:
    """The value of an arithmetic expression, rounded to two decimals, as text (``calculate``'s answer).

    Raises:
        InvalidArgument: The expression holds anything but digits, ``+ - * / ( ) .`` and spaces, is not one
            arithmetic expression, or raises a power beyond ``MAX_EXPONENT``.
    """
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise InvalidArgument("Invalid characters in expression")
    try:
        value = _arithmetic(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError, RecursionError, OverflowError, ValueError) as exc:
        raise InvalidArgument(f"Invalid expression {expression!r}: {exc}") from None
    return str(round(float(value), 2))


MAX_EXPONENT = 64
"""Largest power ``calculate`` raises to (``**``), so no expression can run for long."""

_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
}


def _arithmetic(node: ast.expr) -> float:
    """The value of one node of an arithmetic expression (numbers, + - * / // ** and signs)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right:g} exceeds {MAX_EXPONENT}")
        return float(_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _arithmetic(node.operand)
        return value if isinstance(node.op, ast.UAdd) else -value
    raise ValueError("not an arithmetic expression")


@tool(mode="write", entity="reservation", operation="update", irreversible=True)
def cancel_reservation(ctx: ToolContext, reservation_id: str) -> dict[str, Any]:
    """Cancel the whole reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
    """
    reservation = _reservation(ctx, reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    _save_reservation(ctx, reservation)
    return _reservation_view(reservation)


@tool(mode="read", entity="reservation", operation="get")
def get_reservation_details(ctx: ToolContext, reservation_id: str) -> dict[str, Any]:
    """Get the details of a reservation.

    Args:
        reservation_id: The reservation ID, such as '8JX2WO'.
    """
    return _reservation_view(_reservation(ctx, reservation_id))


@tool(mode="read", entity="user", operation="get")
def get_user_details(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Get the details of a user, including their reservations.

    Args:
        user_id: The user ID, such as 'sara_doe_496'.
    """
    return _user(ctx, user_id)


@tool(mode="read")
def list_all_airports(ctx: ToolContext) -> list[dict[str, str]]:
    """Returns a list of all available airports (IATA code and city)."""
    return [{"iata": code, "city": city} for code, city in AIRPORTS]


@tool(mode="read", entity="flight", operation="list")
def search_direct_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """Search for direct flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
    """
    return _direct_flights(ctx, date, origin, destination)


@tool(mode="read", entity="flight", operation="list")
def search_onestop_flight(ctx: ToolContext, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
    """Search for one-stop flights between two cities on a specific date.

    Args:
        origin: The origin city airport in three letters, such as 'JFK'.
        destination: The destination city airport in three letters, such as 'LAX'.
        date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
    """
    results = []
    for first in _direct_flights(ctx, date, origin, None):
        first["date"] = date
        # As τ²-bench does: a first leg arriving the next day ("+1") connects on that day of May 2024.
        second_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
        for second in _direct_flights(ctx, second_date, first["destination"], destination,
                                      leave_after=first["scheduled_arrival_time_est"]):
            second["date"] = second_date
            results.append([first, second])
    return results


@tool(mode="write", entity="user", operation="update", irreversible=True)
def send_certificate(ctx: ToolContext, user_id: str, amount: int) -> str:
    """Send a certificate to a user. Be careful!

    Args:
        user_id: The ID of the user to send the certificate to, such as 'sara_doe_496'.
        amount: The amount of the certificate to send.
    """
    user = _user(ctx, user_id)
    for certificate_id in NEW_CERTIFICATE_IDS:
        if certificate_id not in user["payment_methods"]:
            user["payment_methods"][certificate_id] = {"id": certificate_id, "amount": float(amount),
                                                       "source": "certificate"}
            _save_user(ctx, user)
            return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
    raise PolicyViolation("Too many certificates")


@tool(mode="read")
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only transfer if the user explicitly asks for a human agent, or if, given the policy and the available tools,
    you cannot solve the user's issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


@tool(mode="write", entity="reservation", operation="update")
def update_reservation_baggages(ctx: ToolContext, reservation_id: str, total_baggages: int, nonfree_baggages: int,
                                payment_id: str) -> dict[str, Any]:
    """Update the baggage information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        total_baggages: The updated total number of baggage items included in the reservation.
        nonfree_baggages: The updated number of non-free baggage items included in the reservation.
        payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826',
            'certificate_7815826'.
    """
    reservation = _reservation(ctx, reservation_id)
    user = _user(ctx, reservation["user_id"])
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    _save_user(ctx, user)
    _save_reservation(ctx, reservation)
    return _reservation_view(reservation)


@tool(mode="write", entity="reservation", operation="update")
def update_reservation_flights(ctx: ToolContext, reservation_id: str, cabin: Cabin, flights: list[FlightInfo],
                               payment_id: str) -> dict[str, Any]:
    """Update the flight information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        cabin: The cabin class of the reservation.
        flights: An array of objects containing details about each piece of flight in the ENTIRE new reservation.
            Even if the a flight segment is not changed, it should still be included in the array.
        payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826',
            'certificate_7815826'.
    """
    reservation = _reservation(ctx, reservation_id)
    user = _user(ctx, reservation["user_id"])
    passengers = len(reservation["passengers"])
    total_price = 0
    new_flights: list[dict[str, Any]] = []
    for info in flights:
        kept = next((f for f in reservation["flights"] if f["flight_number"] == info.flight_number
                     and f["date"] == info.date and cabin == reservation["cabin"]), None)
        if kept is not None:
            total_price += kept["price"] * passengers
            new_flights.append(kept)
            continue
        flight = _flight(ctx, info.flight_number)
        day = _flight_date(ctx, info.flight_number, info.date)
        if day["status"] != "available":
            raise PolicyViolation(f"Flight {info.flight_number} not available on date {info.date}")
        if day["available_seats"][cabin] < passengers:
            raise PolicyViolation(f"Not enough seats on flight {info.flight_number}")
        price = day["prices"][cabin]
        new_flights.append({"flight_number": info.flight_number, "origin": flight["origin"],
                            "destination": flight["destination"], "date": info.date, "price": price})
        total_price += price * passengers
    total_price -= sum(f["price"] for f in reservation["flights"]) * passengers
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = new_flights
    reservation["cabin"] = cabin
    _save_user(ctx, user)
    _save_reservation(ctx, reservation)
    return _reservation_view(reservation)


@tool(mode="write", entity="reservation", operation="update")
def update_reservation_passengers(ctx: ToolContext, reservation_id: str,
                                  passengers: list[Passenger]) -> dict[str, Any]:
    """Update the passenger information of a reservation.

    Args:
        reservation_id: The reservation ID, such as 'ZFA04Y'.
        passengers: An array of objects containing details about each passenger (first_name, last_name, dob).
    """
    reservation = _reservation(ctx, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise PolicyViolation("Number of passengers does not match")
    reservation["passengers"] = [p.model_dump() for p in passengers]
    _save_reservation(ctx, reservation)
    return _reservation_view(reservation)


@tool(mode="read", entity="flight", operation="action")
def get_flight_status(ctx: ToolContext, flight_number: str, date: str) -> str:
    """Get the status of a flight.

    Args:
        flight_number: The flight number.
        date: The date of the flight.
    """
    return str(_flight_date(ctx, flight_number, date)["status"])
