"""What the CRM's task templates share: personas, the world view type and record look-ups."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

from arena.authoring import Persona, WorldView

from .knobs import CrmKnobs
from .names import LEGAL_SUFFIXES

View = WorldView[CrmKnobs]
"""What a CRM template reads."""

REP_PERMISSIONS = ["accounts", "opportunities", "quotes"]
"""What a sales rep may do."""

MANAGER_PERMISSIONS = [*REP_PERMISSIONS, "approvals", "territories"]
"""What a sales manager may do."""

DEFAULT_PERSONA = Persona(name="Morgan Reyes", role="rep", permissions=REP_PERMISSIONS)
"""The gym's default persona: the first rep of NA West, the same for every seed."""

T = TypeVar("T")


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


def mix(rng: random.Random, preferred: Sequence[T], rest: Sequence[T], n: int, *, share: float = 0.5) -> list[T]:
    """Up to ``n`` records, about ``share`` of them from ``preferred`` (the messy ones), the rest from ``rest``."""
    first = rng.sample(list(preferred), min(len(preferred), max(1, round(n * share + 0.01))))
    others = [r for r in rest if r not in first]
    second = rng.sample(others, min(len(others), n - len(first)))
    picks = first + second
    if len(picks) < n:
        more = [r for r in preferred if r not in picks]
        picks += rng.sample(more, min(len(more), n - len(picks)))
    return picks


def pick(rng: random.Random, options: Sequence[str]) -> str:
    """One of a few phrasings."""
    return rng.choice(list(options))


Row = dict[str, Any]
"""A world row, as ``WorldView.rows`` gives it."""
