# rentaldesk/__init__.py
"""The rental desk gym: members, equipment rentals, late fees and their waivers."""

from __future__ import annotations

from pathlib import Path

from arena.authoring import STRONG, WEAK, make_domain

from . import tools
from .tasks import AGENT, TEMPLATES
from .world import CLOCK_START, RentalKnobs, build_world

DOMAIN = make_domain(
    name="rentaldesk",
    description="An equipment rental desk: members, rentals, late fees and waivers.",
    tools=tools,
    policy=(Path(__file__).parent / "policy.md").read_text(encoding="utf-8"),
    dependencies=[
        ("check_member_standing", "check_late_fee", STRONG),  # a chain: standing -> fee -> waive_fee
        ("check_late_fee", "waive_fee", STRONG),
        ("search_members", "get_member", WEAK),
        ("search_rentals", "get_rental", WEAK),
        ("get_rental", "close_rental", WEAK),
    ],
    world=build_world,
    templates=TEMPLATES,
    knobs=RentalKnobs,
    clock_start=CLOCK_START,
    persona=AGENT,
)


