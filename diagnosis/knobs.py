"""What each weakness kind means and which task tags and world knobs target it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.authoring.knobs import NOVEL_KNOBS, WEAKNESS_KNOBS


class KindTarget(BaseModel):
    """How the factory and the curriculum can aim at one weakness kind.

    Attributes:
        label: Short human label.
        description: What the model does wrong.
        focus_tags: Task tags (arena/gyms/README.md) that exercise the weakness.
        knobs: World knobs and the values a targeted variant should use.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    description: str
    focus_tags: list[str] = Field(default_factory=list)
    knobs: dict[str, Any] = Field(default_factory=dict)


def _aim(kind: str) -> dict[str, Any]:
    """The focus tags and knobs of ``kind`` in the shared knob vocabulary."""
    aim = WEAKNESS_KNOBS[kind]
    return {"focus_tags": list(aim.focus_tags), "knobs": dict(aim.knobs)}


KIND_TARGETS: dict[str, KindTarget] = {
    "wrong_id": KindTarget(
        label="Acts on the wrong entity",
        description="Passes a name where an id is required, uses an id that does not exist, or picks the wrong "
                    "near-duplicate record.",
        **_aim("wrong_id"),
    ),
    "missed_policy_dependency": KindTarget(
        label="Skips required prerequisite steps",
        description="Runs a goal call before the prerequisite the policy and the dependency graph require.",
        **_aim("missed_policy_dependency"),
    ),
    "brittle_parameters": KindTarget(
        label="Passes arguments in the wrong format",
        description="Sends dates, amounts or codes in a legacy or free format and does not correct them after a "
                    "validation error.",
        **_aim("brittle_parameters"),
    ),
    "stale_state": KindTarget(
        label="Acts on stale data",
        description="Retries after a data conflict without re-reading the record, or trusts a stale search summary "
                    "over the record.",
        **_aim("stale_state"),
    ),
    "search_without_fetch": KindTarget(
        label="Searches but never fetches by id",
        description="Searches, finds nothing or only a summary, and never calls the get tool with the id.",
        **_aim("search_without_fetch"),
    ),
    "gave_up_early": KindTarget(
        label="Gives up before the goal",
        description="Stops and replies before attempting the requested action, although nothing blocked it.",
        **_aim("gave_up_early"),
    ),
    "unintended_side_effect": KindTarget(
        label="Changes rows it should not",
        description="Writes outside the task's allowed write-set.",
        **_aim("unintended_side_effect"),
    ),
    "claimed_unverified_success": KindTarget(
        label="Claims success it did not check",
        description="The reply says the work is done while the goal call failed or never ran, or without stating "
                    "any of the facts the request asked it to confirm.",
        **_aim("claimed_unverified_success"),
    ),
    "leaked_internal_data": KindTarget(
        label="Leaks internal data",
        description="The reply repeats internal fields or identifiers the requester must not see.",
        **_aim("leaked_internal_data"),
    ),
    "no_error_recovery": KindTarget(
        label="Does not recover from errors",
        description="Stops after an injected timeout, rate limit or data conflict instead of retrying.",
        **_aim("no_error_recovery"),
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


def target_for(kind: str) -> KindTarget:
    """Return the target of ``kind`` (the novel target for unknown kinds, e.g. a custom detector's)."""
    return KIND_TARGETS.get(kind, NOVEL_TARGET)
