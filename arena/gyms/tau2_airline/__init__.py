"""The τ²-bench airline gym: τ²-bench's airline database, policy and tasks, its tools in our code, its verdict.

The data is read from the ``tau2`` extra's package or a τ²-bench checkout (``arena.gyms.tau2_data``); without it
the gym does not load and says which extra to install. Conversations are played with a simulated user (the
scripted user offline, or ``user_model``).
"""

from __future__ import annotations

from arena.authoring import STRONG, WEAK, Persona
from arena.authoring.foreign import ForeignTask, make_foreign_domain
from arena.gyms.tau2_data import read_files
from arena.gyms.tau2_tasks import foreign_tasks
from arena.gyms.tau2_verdict import not_applicable

from . import tools
from .world import CLOCK_START, build_world

ID_ARGUMENTS = {"user_id": "user", "reservation_id": "reservation"}
"""The tool arguments that name a record by id, with the record's entity."""

AGENT = Persona(name="the airline's customer service agent", role="customer service agent", permissions=[])
"""Who the agent acts as."""


def _tasks() -> list[ForeignTask]:
    files = read_files("airline")
    writes = {name for name, t in vars(tools).items() if getattr(getattr(t, "spec", None), "mode", "") == "write"}
    return foreign_tasks("airline", files.tasks, files.splits, ID_ARGUMENTS, writes)


DOMAIN = make_foreign_domain(
    name="tau2-airline",
    description="τ²-bench's airline: flight reservations, changes, cancellations and compensation, with a user.",
    tools=tools,
    policy=read_files("airline").policy,
    dependencies=[
        ("get_user_details", "book_reservation", STRONG),
        ("get_reservation_details", "cancel_reservation", STRONG),
        ("get_reservation_details", "update_reservation_flights", STRONG),
        ("get_reservation_details", "update_reservation_baggages", STRONG),
        ("get_reservation_details", "update_reservation_passengers", STRONG),
        ("get_user_details", "send_certificate", STRONG),
        ("search_direct_flight", "book_reservation", WEAK),
        ("search_onestop_flight", "book_reservation", WEAK),
        ("search_direct_flight", "update_reservation_flights", WEAK),
        ("get_user_details", "get_reservation_details", WEAK),
    ],
    world=build_world,
    tasks=_tasks,
    clock_start=CLOCK_START,
    persona=AGENT,
    not_applicable=not_applicable,
)
"""The τ²-bench airline gym, as gymloop runs it."""
