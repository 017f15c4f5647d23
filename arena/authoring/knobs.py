"""The knob vocabulary: the knobs every gym is turned with, and which knobs aim at which weakness kind.

A knob is a named setting of a gym's generator (``build_pack(domain, seed=..., knobs={...})``). The names below
mean the same in every gym; a gym lists the ones it honours in ``Domain.knobs`` and declares the ones it cannot
honour, with the reason, in ``Domain.cannot``. Diagnosis reads ``WEAKNESS_KNOBS`` to say which knobs and task tags
aim at each weakness kind; the factory refuses a request for a knob the gym cannot honour
(:func:`knob_refusal`); ``gymloop gyms check`` prints :func:`targetable_kinds`.

Task knobs (``tasks_per_template``, ``focus_tags``, ``heldout_fraction``, ``fault_rate``, ``fault_kinds``,
``prerequisite_depth``) are honoured by the kit itself for every gym built with :func:`make_domain`; world knobs
(the ``*_rate`` messiness layers) by the gym's world generator. :class:`GymKnobs` parses them one way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.core.weakness import WeaknessKind

if TYPE_CHECKING:
    from arena.core.domain import Domain

FaultKindName = Literal["timeout", "rate_limit", "data_conflict"]
"""The kinds of injected fault."""

FAULT_TAGS: dict[str, str] = {"timeout": "fault_timeout", "rate_limit": "fault_rate_limit",
                              "data_conflict": "fault_conflict"}
"""The task tag of each fault kind."""

TAGS: tuple[str, ...] = (
    "id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
    "fault_timeout", "fault_rate_limit", "fault_conflict", "side_effect_trap", "leak_trap",
)
"""Task tags naming what a task exercises (docs/gym-contract.md); ``focus_tags`` selects on them."""

VOCABULARY: dict[str, str] = {
    "tasks_per_template": "Tasks built from each task template (an integer >= 1).",
    "focus_tags": "Only templates whose tasks carry at least one of these task tags (a list; default all).",
    "heldout_fraction": "Share of tasks put in the heldout split (0-1).",
    "fault_rate": "Share of the tasks without a fault that get one more injected fault (0-1).",
    "fault_kinds": "Fault kinds injected faults are drawn from (a list of timeout, rate_limit, data_conflict).",
    "prerequisite_depth": "Deepest chain of policy-required steps a task walks before its goal (1-3; default: "
                          "every chain).",
    "near_duplicate_rate": "Share of records generated with a near-duplicate twin: the same name, other details "
                           "(0-1).",
    "stale_rate": "Share of search-index summaries whose cached fields differ from the record (0-1).",
    "legacy_format_rate": "Share of old rows stored in a legacy format, e.g. dates as MM/DD/YYYY (0-1).",
}
"""Every knob of the shared vocabulary, with what it means in any gym."""

TASK_KNOBS = ("tasks_per_template", "focus_tags", "heldout_fraction", "fault_rate", "fault_kinds",
              "prerequisite_depth")
"""Knobs the kit honours for every gym built with ``make_domain``."""


class WeaknessKnobs(BaseModel):
    """The knobs and task tags that aim a variant at one weakness kind.

    Attributes:
        focus_tags: Task tags whose tasks exercise the weakness.
        knobs: Vocabulary knobs and the values a targeted variant uses.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    focus_tags: tuple[str, ...] = ()
    knobs: dict[str, Any] = Field(default_factory=dict)


WEAKNESS_KNOBS: dict[WeaknessKind, WeaknessKnobs] = {
    WeaknessKind.WRONG_ID: WeaknessKnobs(focus_tags=("near_duplicate",), knobs={"near_duplicate_rate": 0.3}),
    WeaknessKind.MISSED_POLICY_DEPENDENCY: WeaknessKnobs(focus_tags=("prerequisite",),
                                                         knobs={"prerequisite_depth": 3}),
    WeaknessKind.BRITTLE_PARAMETERS: WeaknessKnobs(focus_tags=("legacy_format",), knobs={"legacy_format_rate": 0.4}),
    WeaknessKind.STALE_STATE: WeaknessKnobs(focus_tags=("fault_conflict", "stale_record"),
                                            knobs={"fault_rate": 0.3, "stale_rate": 0.3}),
    WeaknessKind.SEARCH_WITHOUT_FETCH: WeaknessKnobs(focus_tags=("id_given_search_misses", "stale_record"),
                                                     knobs={"stale_rate": 0.3, "tasks_per_template": 4}),
    WeaknessKind.GAVE_UP_EARLY: WeaknessKnobs(focus_tags=("prerequisite",), knobs={"prerequisite_depth": 2}),
    WeaknessKind.UNINTENDED_SIDE_EFFECT: WeaknessKnobs(focus_tags=("side_effect_trap",),
                                                       knobs={"tasks_per_template": 4}),
    WeaknessKind.CLAIMED_UNVERIFIED_SUCCESS: WeaknessKnobs(focus_tags=("fault_timeout", "fault_rate_limit"),
                                                           knobs={"fault_rate": 0.3}),
    WeaknessKind.LEAKED_INTERNAL_DATA: WeaknessKnobs(focus_tags=("leak_trap",), knobs={"tasks_per_template": 4}),
    WeaknessKind.NO_ERROR_RECOVERY: WeaknessKnobs(focus_tags=("fault_timeout", "fault_rate_limit"),
                                                  knobs={"fault_rate": 0.4}),
}
"""The knobs and tags of every weakness kind diagnosis names. Kinds with no world knob of their own (leaks,
side-effect traps) ask for more tasks of the templates their tags select."""

NOVEL_KNOBS = WeaknessKnobs(knobs={"fault_rate": 0.2})
"""The knobs of a failure pattern no detector names; its focus tags come from the affected tasks."""


def knob_refusal(domain: Domain, knob: str) -> str | None:
    """Why ``domain`` cannot honour ``knob``, or ``None`` when it honours it."""
    if knob in domain.knobs:
        return None
    if knob in domain.cannot:
        return f"gym {domain.name!r} cannot honour knob {knob!r}: {domain.cannot[knob]}"
    return f"gym {domain.name!r} does not know knob {knob!r} (it honours {', '.join(sorted(domain.knobs))})"


def kind_refusal(domain: Domain, kind: WeaknessKind, tags: Collection[str] | None = None) -> str | None:
    """Why variants of ``domain`` cannot aim at weakness ``kind``, or ``None`` when they can.

    Args:
        domain: The gym.
        kind: A weakness kind (``novel`` takes the novel pattern's knobs).
        tags: The tags of the gym's tasks, when known: a kind none of whose focus tags any task carries cannot be
            aimed at either.
    """
    aim = WEAKNESS_KNOBS.get(kind, NOVEL_KNOBS)
    for knob in sorted(aim.knobs):
        reason = knob_refusal(domain, knob)
        if reason is not None:
            return reason
    return tag_refusal(domain, aim.focus_tags, tags)


def tag_refusal(domain: Domain, focus_tags: Collection[str], tags: Collection[str] | None) -> str | None:
    """Why focusing on ``focus_tags`` selects no task of ``domain`` (whose tasks carry ``tags``), or ``None``."""
    if tags is not None and focus_tags and not set(focus_tags) & set(tags):
        return f"no {domain.name} task carries a tag of {', '.join(focus_tags)}"
    return None


def targetable_kinds(domain: Domain, tags: Collection[str] | None = None) -> dict[WeaknessKind, str | None]:
    """Every weakness kind, with ``None`` when variants of ``domain`` can aim at it and the reason otherwise."""
    return {kind: kind_refusal(domain, kind, tags) for kind in WEAKNESS_KNOBS}


class GymKnobs(BaseModel):
    """The task knobs every kit gym honours, validated; a gym subclasses it to add its world knobs.

    A subclass may redefine a field to change its default or range (a gym with more templates may want fewer
    tasks per template). Each field's ``description`` is the knob's documentation in ``Domain.knobs``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks_per_template: int = Field(default=2, ge=1, le=20, description="Tasks built from each task template "
                                    "(1-20, default 2).")
    focus_tags: tuple[str, ...] = Field(default=(), description="Only templates whose tasks carry at least one of "
                                        "these tags (list of task tags, default: every template).")
    heldout_fraction: float = Field(default=0.4, ge=0.0, le=1.0, description="Share of tasks put in the heldout "
                                    "split (0-1, default 0.4).")
    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0, description="Share of the tasks without a fault that "
                              "get one more injected fault (0-1, default 0).")
    fault_kinds: tuple[FaultKindName, ...] = Field(
        default=("timeout", "rate_limit", "data_conflict"),
        description="Fault kinds the extra faults draw from (list of timeout, rate_limit, data_conflict; "
                    "default all).")
    prerequisite_depth: int | None = Field(
        default=None, ge=1, le=3, description="Deepest chain of policy-required steps a task walks before its "
                                              "goal (1-3, default: every chain); tasks declaring a deeper chain "
                                              "are left out, and a template may read it to build its chains.")


K = TypeVar("K", bound=GymKnobs)


def knob_docs(model: type[GymKnobs]) -> dict[str, str]:
    """Each knob of ``model`` with its documentation (the field's description)."""
    return {name: field.description or VOCABULARY.get(name, name) for name, field in model.model_fields.items()}


def parse_knobs(model: type[K], knobs: Mapping[str, Any] | GymKnobs, gym: str) -> K:
    """Validate knobs against a gym's knob model: a mapping, or a knob model's instance (``RentalKnobs(...)``).

    Raises:
        ValueError: An unknown knob or a bad value, naming the gym, the knob and the value.
    """
    if isinstance(knobs, model):
        return knobs
    if isinstance(knobs, GymKnobs):
        knobs = knobs.model_dump(exclude_unset=True)
    unknown = sorted(set(knobs) - set(model.model_fields))
    if unknown:
        raise ValueError(f"unknown {gym} knob(s) {unknown}; known knobs: {', '.join(sorted(model.model_fields))}")
    bad_tags = sorted(set(knobs.get("focus_tags") or ()) - set(TAGS)) if isinstance(knobs.get("focus_tags"),
                                                                                        list | tuple) else []
    if bad_tags:
        raise ValueError(f"{gym} knob focus_tags={list(knobs['focus_tags'])!r}: unknown tag(s) {bad_tags}; "
                         f"tags: {', '.join(TAGS)}")
    try:
        return model.model_validate(dict(knobs))
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else "?"
        raise ValueError(f"{gym} knob {name}={knobs.get(name)!r}: {err['msg']}") from exc
