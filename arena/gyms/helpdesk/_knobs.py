"""The helpdesk gym's knobs: the kit's task knobs plus its world knobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from arena.authoring import GymKnobs, parse_knobs


class HelpdeskKnobs(GymKnobs):
    """Validated knobs of the helpdesk generator; each field's description is its documentation."""

    tasks_per_template: int = Field(default=2, ge=1, le=8, description="Tasks built from each task template "
                                    "(int, 1-8, default 2; 2 gives the standard set).")
    near_duplicate_rate: float = Field(default=0.08, ge=0.0, le=0.5, description="Share of customers generated in "
                                       "near-duplicate name clusters (0-0.5, default 0.08).")
    stale_rate: float = Field(default=0.06, ge=0.0, le=0.5, description="Share of search-index summaries whose "
                              "cached status or tier is stale (0-0.5, default 0.06).")
    legacy_format_rate: float = Field(default=0.6, ge=0.0, le=1.0, description="Share of pre-2023 customers and "
                                      "orders stored with a legacy MM/DD/YYYY date (0-1, default 0.6).")
    approval_limit: float = Field(default=500.0, gt=0.0, le=100_000.0, description="Refunds above this amount "
                                  "(order currency) need an approved manager approval (number > 0, default 500).")
    world_scale: float = Field(default=1.0, ge=0.5, le=4.0, description="Multiplier on the number of customers, "
                               "orders and tickets (0.5-4, default 1).")


def helpdesk_knobs(knobs: Mapping[str, Any] | HelpdeskKnobs) -> HelpdeskKnobs:
    """Validated knobs (raw values are parsed by the kit).

    Raises:
        ValueError: An unknown knob or a bad value, naming the knob and the value.
    """
    return knobs if isinstance(knobs, HelpdeskKnobs) else parse_knobs(HelpdeskKnobs, knobs, "helpdesk")
