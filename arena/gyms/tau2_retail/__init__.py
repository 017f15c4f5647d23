"""The τ²-bench retail gym: τ²-bench's retail database, policy and tasks, its tools in our code, its verdict.

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

ID_ARGUMENTS = {"user_id": "user", "order_id": "order"}
"""The tool arguments that name a record by id, with the record's entity."""

AGENT = Persona(name="the store's customer service agent", role="customer service agent", permissions=[])
"""Who the agent acts as."""


def _tasks() -> list[ForeignTask]:
    files = read_files("retail")
    writes = {name for name, t in vars(tools).items() if getattr(getattr(t, "spec", None), "mode", "") == "write"}
    return foreign_tasks("retail", files.tasks, files.splits, ID_ARGUMENTS, writes)


DOMAIN = make_foreign_domain(
    name="tau2-retail",
    description="τ²-bench's retail store: orders cancelled, modified, returned and exchanged, with a user.",
    tools=tools,
    policy=read_files("retail").policy,
    dependencies=[
        ("get_order_details", "cancel_pending_order", STRONG),
        ("get_order_details", "modify_pending_order_items", STRONG),
        ("get_order_details", "modify_pending_order_address", STRONG),
        ("get_order_details", "modify_pending_order_payment", STRONG),
        ("get_order_details", "return_delivered_order_items", STRONG),
        ("get_order_details", "exchange_delivered_order_items", STRONG),
        ("get_user_details", "modify_user_address", STRONG),
        ("find_user_id_by_email", "get_user_details", WEAK),
        ("find_user_id_by_name_zip", "get_user_details", WEAK),
        ("get_product_details", "modify_pending_order_items", WEAK),
        ("get_product_details", "exchange_delivered_order_items", WEAK),
        ("get_user_details", "get_order_details", WEAK),
    ],
    world=build_world,
    tasks=_tasks,
    clock_start=CLOCK_START,
    persona=AGENT,
    not_applicable=not_applicable,
)
"""The τ²-bench retail gym, as gymloop runs it."""
