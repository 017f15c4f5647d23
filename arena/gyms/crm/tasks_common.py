"""What the CRM's task templates share beyond the kit: personas, the world view type, namesakes."""

from __future__ import annotations

from typing import Any

from arena.authoring import Persona, WorldView

from .world import CrmKnobs
from .world_names import LEGAL_SUFFIXES

View = WorldView[CrmKnobs]
"""What a CRM template reads."""

REP_PERMISSIONS = ["accounts", "opportunities", "quotes"]
"""What a sales rep may do."""

MANAGER_PERMISSIONS = [*REP_PERMISSIONS, "approvals", "territories"]
"""What a sales manager may do."""

DEFAULT_PERSONA = Persona(name="Morgan Reyes", role="rep", permissions=REP_PERMISSIONS)
"""The gym's default persona: the first rep of NA West, the same for every seed."""

def rep(w: View, user_id: str) -> Persona:
    """The persona of the rep ``user_id``."""
    return Persona(name=str(w.one("SELECT name FROM users WHERE id = ?", (user_id,))["name"]), role="rep",
                   permissions=list(REP_PERMISSIONS))


def manager(w: View, territory_id: str) -> Persona:
    """The persona of the manager of ``territory_id``."""
    row = w.one("SELECT name FROM users WHERE territory_id = ? AND role = 'manager'", (territory_id,))
    return Persona(name=str(row["name"]), role="manager", permissions=list(MANAGER_PERMISSIONS))


def base_name(name: str) -> str:
    """A company name without its legal suffix, lower case: what near-duplicate accounts share."""
    name = name.lower()
    for suffix in LEGAL_SUFFIXES:
        name = name.removesuffix(suffix.lower())
    return name


def namesakes(w: View) -> dict[str, int]:
    """How many accounts answer a search for each account's name (itself, and twins whose names contain it)."""
    def count() -> dict[str, int]:
        names = [str(r["name"]) for r in w.rows("SELECT name FROM accounts ORDER BY id")]
        return {n: sum(1 for other in names if n.lower() in other.lower()) for n in names}
    return w.memo("crm:namesakes", count)


Row = dict[str, Any]
"""A world row, as ``WorldView.rows`` gives it."""
