"""The weakness vocabulary: every kind of failure gymloop names, defined once.

A detector (``diagnosis``) tags an episode with a kind, the authoring kit says which knobs and task tags aim a
variant at it (``arena.authoring.knobs.WEAKNESS_KNOBS``), the reference policy fails in its way
(``arena.agents.reference.FAILURE_MODES``), the factory and the curriculum target it and the trainers blame
decisions by it. All of them read the kinds from here. A kind is a ``StrEnum``: it compares equal to its value
and is stored as that value, so reports and registry rows written as plain strings read back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class WeaknessKind(StrEnum):
    """A kind of weakness: what a detector names in a failed episode, or ``novel`` for what none names."""

    WRONG_ID = "wrong_id"
    """Acts on the wrong entity: a name passed as an id, an unknown id, another record."""
    MISSED_POLICY_DEPENDENCY = "missed_policy_dependency"
    """Runs a goal call before the prerequisite the policy requires."""
    BRITTLE_PARAMETERS = "brittle_parameters"
    """Sends dates, amounts or codes in a legacy or free format."""
    STALE_STATE = "stale_state"
    """Acts on stale data: retries a conflict without re-reading, trusts a stale summary."""
    SEARCH_WITHOUT_FETCH = "search_without_fetch"
    """Searches but never fetches the record by id."""
    GAVE_UP_EARLY = "gave_up_early"
    """Stops before the goal although nothing blocked it."""
    UNINTENDED_SIDE_EFFECT = "unintended_side_effect"
    """Writes outside the task's allowed write-set."""
    CLAIMED_UNVERIFIED_SUCCESS = "claimed_unverified_success"
    """Claims the work is done while the goal call failed or never ran."""
    LEAKED_INTERNAL_DATA = "leaked_internal_data"
    """Repeats internal fields or identifiers in the reply."""
    NO_ERROR_RECOVERY = "no_error_recovery"
    """Stops after an injected timeout, rate limit or conflict instead of retrying."""
    NOVEL = "novel"
    """A group of failures clustering finds and no detector names."""

    def __repr__(self) -> str:
        """The quoted value (``'wrong_id'``), so messages quoting a kind read as they do for any name."""
        return repr(self.value)


DETECTOR_KINDS: tuple[WeaknessKind, ...] = tuple(k for k in WeaknessKind if k is not WeaknessKind.NOVEL)
"""The kinds a built-in detector names (every kind but ``novel``), in declaration order."""


def parse_kind(value: str, *, source: str = "weakness kind") -> WeaknessKind:
    """Read a weakness kind from text.

    Args:
        value: The kind's name, e.g. ``wrong_id``.
        source: Where the value came from, for the error message.

    Raises:
        ValueError: Not a known kind, naming the value, its source and the known kinds.
    """
    try:
        return WeaknessKind(value)
    except ValueError:
        known = ", ".join(k.value for k in WeaknessKind)
        raise ValueError(f"{source}: unknown weakness kind {value!r}; known: {known}") from None
