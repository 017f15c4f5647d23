"""What each weakness kind means and which task tags and world knobs target it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.authoring.knobs import NOVEL_KNOBS, WEAKNESS_KNOBS
from arena.core.weakness import WeaknessKind


class KindTarget(BaseModel):
    """How the factory and the curriculum can aim at one weakness kind.

    Attributes:
        label: Short human label.
        description: What the model does wrong.
        focus_tags: Task tags (docs/gym-contract.md) that exercise the weakness.
        knobs: World knobs and the values a targeted variant should use.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    description: str
    focus_tags: list[str] = Field(default_factory=list)
    knobs: dict[str, Any] = Field(default_factory=dict)


def _aim(kind: WeaknessKind) -> dict[str, Any]:
    """The focus tags and knobs of ``kind`` in the shared knob vocabulary."""
    aim = WEAKNESS_KNOBS[kind]
    return {"focus_tags": list(aim.focus_tags), "knobs": dict(aim.knobs)}


KIND_TARGETS: dict[WeaknessKind, KindTarget] = {
    WeaknessKind.WRONG_ID: KindTarget(
        label="Acts on the wrong entity",
        description="Passes a name where an id is required, uses an id that does not exist, or picks the wrong "
                    "near-duplicate record.",
        **_aim(WeaknessKind.WRONG_ID),
    ),
    WeaknessKind.MISSED_POLICY_DEPENDENCY: KindTarget(
        label="Skips required prerequisite steps",
        description="Runs a goal call before the prerequisite the policy and the dependency graph require.",
        **_aim(WeaknessKind.MISSED_POLICY_DEPENDENCY),
    ),
    WeaknessKind.BRITTLE_PARAMETERS: KindTarget(
        label="Passes arguments in the wrong format",
        description="Sends dates, amounts or codes in a legacy or free format and does not correct them after a "
                    "validation error.",
        **_aim(WeaknessKind.BRITTLE_PARAMETERS),
    ),
    WeaknessKind.STALE_STATE: KindTarget(
        label="Acts on stale data",
        description="Retries after a data conflict without re-reading the record, or trusts a stale search summary "
                    "over the record.",
        **_aim(WeaknessKind.STALE_STATE),
    ),
    WeaknessKind.SEARCH_WITHOUT_FETCH: KindTarget(
        label="Searches but never fetches by id",
        description="Searches, finds nothing or only a summary, and never calls the get tool with the id.",
        **_aim(WeaknessKind.SEARCH_WITHOUT_FETCH),
    ),
    WeaknessKind.GAVE_UP_EARLY: KindTarget(
        label="Gives up before the goal",
        description="Stops and replies before attempting the requested action, although nothing blocked it.",
        **_aim(WeaknessKind.GAVE_UP_EARLY),
    ),
    WeaknessKind.UNINTENDED_SIDE_EFFECT: KindTarget(
        label="Changes rows it should not",
        description="Writes outside the task's allowed write-set.",
        **_aim(WeaknessKind.UNINTENDED_SIDE_EFFECT),
    ),
    WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: KindTarget(
        label="Claims success it did not check",
        description="The reply says the work is done while the goal call failed or never ran, or without stating "
                    "any of the facts the request asked it to confirm.",
        **_aim(WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS),
    ),
    WeaknessKind.LEAKED_INTERNAL_DATA: KindTarget(
        label="Leaks internal data",
        description="The reply repeats internal fields or identifiers the requester must not see.",
        **_aim(WeaknessKind.LEAKED_INTERNAL_DATA),
    ),
    WeaknessKind.NO_ERROR_RECOVERY: KindTarget(
        label="Does not recover from errors",
        description="Stops after an injected timeout, rate limit or data conflict instead of retrying.",
        **_aim(WeaknessKind.NO_ERROR_RECOVERY),
    ),
}
"""Targets of every built-in detector kind.

Knobs and focus tags come from the authoring kit's shared vocabulary (``arena.authoring.knobs.WEAKNESS_KNOBS``),
which every gym honours or refuses with a reason. Weaknesses with no world knob of their own (leaks, side-effect
traps) ask for more tasks of the templates their focus tags select.
"""

NOVEL_TARGET = KindTarget(
    label="Unexplained failure pattern",
    description="A group of failures with a shared trace pattern that no detector names.",
    knobs=dict(NOVEL_KNOBS.knobs),
)
"""Target of weaknesses no detector explains; their focus tags come from the affected tasks."""


def target_for(kind: WeaknessKind) -> KindTarget:
    """Return the target of ``kind`` (the novel target for ``novel``)."""
    return KIND_TARGETS.get(kind, NOVEL_TARGET)
