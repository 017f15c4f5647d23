"""The helpdesk generator's knobs: names, defaults, validation."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.core.domain import Knobs

FaultKindName = Literal["timeout", "rate_limit", "data_conflict"]

KNOB_DOCS: dict[str, str] = {
    "tasks_per_template": "Tasks built from each task template (int, 1-8, default 2; 2 gives the standard set).",
    "focus_tags": "Only templates carrying at least one of these tags (list of tag names, default: all templates).",
    "heldout_fraction": "Share of tasks put in the heldout split (0-1, default 0.4).",
    "near_duplicate_rate": "Share of customers generated in near-duplicate name clusters (0-0.5, default 0.08).",
    "stale_rate": "Share of search-index summaries whose cached status or tier is stale (0-0.5, default 0.06).",
    "legacy_format_rate": "Share of pre-2023 customers and orders stored with a legacy MM/DD/YYYY date "
    "(0-1, default 0.6).",
    "fault_rate": "Share of the tasks without a fault that get an extra injected fault (0-1, default 0).",
    "fault_kinds": "Fault kinds the extra faults draw from (list of timeout, rate_limit, data_conflict; default all).",
    "approval_limit": "Refunds above this amount (order currency) need an approved manager approval "
    "(number > 0, default 500).",
    "world_scale": "Multiplier on the number of customers, orders and tickets (0.5-4, default 1).",
}
"""Every knob the helpdesk generator understands, with its meaning."""


class HelpdeskKnobs(BaseModel):
    """Validated knobs of the helpdesk generator (see ``KNOB_DOCS``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks_per_template: int = Field(default=2, ge=1, le=8)
    focus_tags: tuple[str, ...] = ()
    heldout_fraction: float = Field(default=0.4, ge=0.0, le=1.0)
    near_duplicate_rate: float = Field(default=0.08, ge=0.0, le=0.5)
    stale_rate: float = Field(default=0.06, ge=0.0, le=0.5)
    legacy_format_rate: float = Field(default=0.6, ge=0.0, le=1.0)
    fault_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    fault_kinds: tuple[FaultKindName, ...] = ("timeout", "rate_limit", "data_conflict")
    approval_limit: float = Field(default=500.0, gt=0.0, le=100_000.0)
    world_scale: float = Field(default=1.0, ge=0.5, le=4.0)


def parse_knobs(knobs: Knobs) -> HelpdeskKnobs:
    """Validate a knobs mapping.

    Raises:
        ValueError: An unknown knob or a bad value, naming the knob and the value.
    """
    unknown = sorted(set(knobs) - set(KNOB_DOCS))
    if unknown:
        raise ValueError(f"unknown helpdesk knob(s) {unknown}; known knobs: {', '.join(sorted(KNOB_DOCS))}")
    try:
        return HelpdeskKnobs.model_validate(knobs)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"helpdesk knob {name}={knobs.get(str(err['loc'][0]))!r}: {err['msg']}") from exc
