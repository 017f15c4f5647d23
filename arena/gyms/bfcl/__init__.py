"""BFCL multi-turn (v4) as a gymloop gym.

BFCL's function classes are the world, its user turns the conversation, its per-turn state and response checks
the verdict.

The gym reads BFCL's entries, ground truth and long-context data from the installed ``bfcl_eval`` package (see
``arena/gyms/bfcl/README.md``); the classes' functions are gymloop's own implementation over a SQLite world. The
one knob, ``categories``, picks BFCL's categories (all four by default); the knobs of the shared vocabulary do not
apply to a fixed suite and are refused with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.authoring.foreign import FIXED_WORLD_REFUSALS
from arena.core.domain import Domain, Knobs, World
from arena.gyms.bfcl.data import CATEGORIES, Category, load_entries
from arena.gyms.bfcl.tasks import build_tasks
from arena.gyms.bfcl.verdict import CHECK, check_turn
from arena.gyms.bfcl.world import TOOLS, build_world

NAME = "bfcl-multi-turn"
"""The gym's name."""

CLOCK_START = "2024-09-01T10:30:00"
"""The episodes' "now" (the trading system's fixed time)."""


class BfclKnobs(BaseModel):
    """The BFCL gym's knob.

    Attributes:
        categories: BFCL's multi-turn categories whose entries become tasks.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    categories: tuple[Category, ...] = Field(default=CATEGORIES, min_length=1)


CANNOT: dict[str, str] = {
    **FIXED_WORLD_REFUSALS,
    "fault_rate": "BFCL's verdict replays its own functions, which have no injected faults",
    "fault_kinds": "BFCL's verdict replays its own functions, which have no injected faults",
}
"""Why the gym cannot honour each knob of the shared vocabulary: BFCL's suite, worlds and verdict are fixed."""


def _knobs(knobs: Knobs) -> BfclKnobs:
    unknown = sorted(set(knobs) - set(BfclKnobs.model_fields))
    if unknown:
        reasons = CANNOT
        why = "; ".join(f"{k}: {reasons[k]}" for k in unknown if k in reasons)
        raise ValueError(f"{NAME} knob(s) {unknown}: it honours only 'categories'" + (f" ({why})" if why else ""))
    try:
        return BfclKnobs.model_validate(knobs)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{NAME} knob categories={knobs.get('categories')!r}: {err['msg']} "
                         f"(categories: {', '.join(CATEGORIES)})") from None


def _generate(seed: int, knobs: Knobs) -> World:
    """BFCL's world and tasks for the chosen categories (BFCL's suite is fixed: every seed gives the same)."""
    parsed = _knobs(knobs)
    entries = [e for category in dict.fromkeys(parsed.categories) for e in load_entries(category)]
    conn = build_world((f"{e.category}-{e.index:03d}", e) for e in entries)
    try:
        state = conn.serialize()
    finally:
        conn.close()
    tasks = build_tasks(DOMAIN, state, CLOCK_START, entries)
    return World(state_db=state, tasks=tasks, faults=[], clock_start=CLOCK_START)


def _checks() -> dict[str, Any]:
    return {CHECK: check_turn}


DOMAIN = Domain(
    name=NAME,
    description="BFCL v4 multi-turn: file system, messaging, posting, ticketing, trading, travel, vehicle, math.",
    tools=TOOLS,
    policy=(Path(__file__).parent / "policy.md").read_text(encoding="utf-8"),
    dependencies=[],
    generate=_generate,
    knobs={"categories": f"BFCL's multi-turn categories to build tasks from (a list of {', '.join(CATEGORIES)}; "
                         "default all)."},
    cannot=CANNOT,
    checks=_checks(),
)
"""The gym."""
