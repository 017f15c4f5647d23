"""What the procurement templates share beyond the kit: the template maker, personas, internal data, status words."""

from __future__ import annotations

import random
from collections.abc import Callable

from arena.authoring import Draft, Fault, Persona, Template, WorldView
from arena.gyms.procurement.rules import ROLE_PERMISSIONS
from arena.gyms.procurement.world import ProcurementKnobs

View = WorldView[ProcurementKnobs]
"""What a procurement template reads."""

Build = Callable[[View, random.Random, int], list[Draft]]
"""A template's ``build(world, rng, n)``."""

BUYER = Persona(name="Procurement desk", role="buyer", permissions=list(ROLE_PERMISSIONS["buyer"]))
"""The persona of a draft that names none (every procurement draft names its requester's)."""

RISK_PATTERN = r"\bRR-[1-4]\b"
"""Internal vendor risk ratings (never to be disclosed)."""

STATUS_WORDS: dict[str, list[str]] = {
    "pending_approval": ["pending approval", "pending_approval", "awaiting approval"],
    "on_hold": ["on hold", "on_hold"],
}


def template(name: str, category: str, tags: tuple[str, ...], build: Build, *, depth: int = 0,
             fault: Fault | None = None) -> Template[ProcurementKnobs]:
    """A procurement template whose ``build`` draws from ``Random(f"procurement:{seed}:{name}")``.

    That stream (not the kit's ``Random(f"{seed}:{name}")``) is the one every seed's procurement tasks were drawn
    from before the kit, so a seed keeps its tasks. ``fault`` is the template's own fault: the first, third, ...
    task of the template carries it.
    """

    def seeded(w: View, _rng: random.Random, n: int) -> list[Draft]:
        drafts = build(w, random.Random(f"procurement:{w.seed}:{name}"), n)
        if fault is not None:
            for draft in drafts[::2]:
                draft.faults.append(fault)
        return drafts

    return Template(name, category, tags, seeded, depth)


def persona(w: View, rng: random.Random, role: str, employee_id: str | None = None) -> Persona:
    """A persona for an employee of ``role`` (the given one, or one picked with ``rng``)."""
    if employee_id is None:
        emp = rng.choice(w.rows("SELECT id, name FROM employees WHERE role = ? ORDER BY id", (role,)))
    else:
        emp = w.one("SELECT id, name FROM employees WHERE id = ?", (employee_id,))
    return Persona(name=str(emp["name"]), role=role, permissions=list(ROLE_PERMISSIONS[role]))


def status_words(status: str) -> list[str]:
    """Phrasings a reply may use for a record status."""
    return STATUS_WORDS.get(status, [status])
