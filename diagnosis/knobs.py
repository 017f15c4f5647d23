"""What each weakness kind means and which task tags and world knobs target it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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


KIND_TARGETS: dict[str, KindTarget] = {
    "wrong_id": KindTarget(
        label="Acts on the wrong entity",
        description="Passes a name where an id is required, uses an id that does not exist, or picks the wrong "
                    "near-duplicate record.",
        focus_tags=["near_duplicate"],
        knobs={"near_duplicate_rate": 0.3},
    ),
    "missed_policy_dependency": KindTarget(
        label="Skips required prerequisite steps",
        description="Runs a goal call before the prerequisite the policy and the dependency graph require.",
        focus_tags=["prerequisite"],
        knobs={"prerequisite_depth": 3},
    ),
    "brittle_parameters": KindTarget(
        label="Passes arguments in the wrong format",
        description="Sends dates, amounts or codes in a legacy or free format and does not correct them after a "
                    "validation error.",
        focus_tags=["legacy_format"],
        knobs={"legacy_format_rate": 0.4},
    ),
    "stale_state": KindTarget(
        label="Acts on stale data",
        description="Retries after a data conflict without re-reading the record, or trusts a stale search summary "
                    "over the record.",
        focus_tags=["fault_conflict", "stale_record"],
        knobs={"fault_rate": 0.3, "stale_rate": 0.3},
    ),
    "search_without_fetch": KindTarget(
        label="Searches but never fetches by id",
        description="Searches, finds nothing or only a summary, and never calls the get tool with the id.",
        focus_tags=["id_given_search_misses", "stale_record"],
        knobs={"stale_rate": 0.3, "tasks_per_template": 4},
    ),
    "gave_up_early": KindTarget(
        label="Gives up before the goal",
        description="Stops and replies before attempting the requested action, although nothing blocked it.",
        focus_tags=["prerequisite"],
        knobs={"prerequisite_depth": 2},
    ),
    "unintended_side_effect": KindTarget(
        label="Changes rows it should not",
        description="Writes outside the task's allowed write-set.",
        focus_tags=["side_effect_trap"],
        knobs={"tasks_per_template": 4},
    ),
    "claimed_unverified_success": KindTarget(
        label="Claims success it did not check",
        description="The reply says the work is done while the goal call failed or never ran, or without stating "
                    "any of the facts the request asked it to confirm.",
        focus_tags=["fault_timeout", "fault_rate_limit"],
        knobs={"fault_rate": 0.3},
    ),
    "leaked_internal_data": KindTarget(
        label="Leaks internal data",
        description="The reply repeats internal fields or identifiers the requester must not see.",
        focus_tags=["leak_trap"],
        knobs={"tasks_per_template": 4},
    ),
    "no_error_recovery": KindTarget(
        label="Does not recover from errors",
        description="Stops after an injected timeout, rate limit or data conflict instead of retrying.",
        focus_tags=["fault_timeout", "fault_rate_limit"],
        knobs={"fault_rate": 0.4},
    ),
}
"""Targets of every built-in detector kind.

Knob names are the built-in gyms' own (``Domain.knobs``; a test keeps them in step). Weaknesses with no world
knob of their own (leaks, side-effect traps) ask for more tasks of the templates their focus tags select.
"""

NOVEL_TARGET = KindTarget(
    label="Unexplained failure pattern",
    description="A group of failures with a shared trace pattern that no detector names.",
    knobs={"fault_rate": 0.2},
)
"""Target of weaknesses no detector explains; their focus tags come from the affected tasks."""


def target_for(kind: str) -> KindTarget:
    """Return the target of ``kind`` (the novel target for unknown kinds, e.g. a custom detector's)."""
    return KIND_TARGETS.get(kind, NOVEL_TARGET)
