"""The procurement generator's knobs: defaults, descriptions and validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arena.core.domain import Knobs

FAULT_KINDS = ("timeout", "rate_limit", "data_conflict")
"""Injectable fault kinds."""

TAGS = (
    "id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
    "fault_timeout", "fault_rate_limit", "fault_conflict", "side_effect_trap", "leak_trap",
)
"""Task tags (see arena/gyms/README.md)."""

KNOB_DOCS: dict[str, str] = {
    "tasks_per_template": "Tasks built from each task template (int >= 1, default 2).",
    "focus_tags": "Only templates that exercise at least one of these tags (list of tags, default all); "
    "a fault tag also puts a fault of that kind on every fault-capable task.",
    "heldout_fraction": "Share of tasks in the heldout split (0..1, default 0.4).",
    "near_duplicate_rate": "Share of vendors that get a same-named twin in another city (0..1, default 0.1).",
    "stale_rate": "Share of search-index rows whose cached status differs from the record (0..1, default 0.15).",
    "legacy_format_rate": "Share of pre-2021 rows whose dates are stored in a legacy format (0..1, default 0.6).",
    "fault_rate": "Share of fault-capable tasks that get an injected fault (0..1, default 0.5).",
    "fault_kinds": "Fault kinds to inject, from timeout, rate_limit, data_conflict (list, default all three).",
    "multi_currency": "Vendors trade in USD, EUR and GBP when true, only USD when false (bool, default true).",
    "prerequisite_depth": "Deepest chain of policy-required steps a task walks before its goal (1-3, default: "
    "every chain): 1 keeps matching before payment and the budget check before submission, 2 adds the goods "
    "receipt before matching and payment.",
    "approval_cap": "Base USD amount above which a purchase order needs a second approver; cost centers use "
    "0.5x, 1x or 2x of it (number > 0, default 25000).",
}
"""Every knob the procurement generator understands, with its meaning and default."""


@dataclass(frozen=True)
class Settings:
    """Validated knob values."""

    tasks_per_template: int = 2
    focus_tags: tuple[str, ...] = ()
    heldout_fraction: float = 0.4
    near_duplicate_rate: float = 0.1
    stale_rate: float = 0.15
    legacy_format_rate: float = 0.6
    fault_rate: float = 0.5
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    multi_currency: bool = True
    approval_cap: float = 25000.0
    prerequisite_depth: int | None = None


def _fraction(knobs: Knobs, name: str, default: float) -> float:
    value = knobs.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"procurement knob {name}={value!r} must be a number between 0 and 1")
    return float(value)


def _names(knobs: Knobs, name: str, default: tuple[str, ...], allowed: tuple[str, ...] | None) -> tuple[str, ...]:
    value: Any = knobs.get(name, list(default))
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"procurement knob {name}={value!r} must be a list of names")
    if allowed is not None:
        for item in value:
            if item not in allowed:
                raise ValueError(f"procurement knob {name}: {item!r} is not one of {', '.join(allowed)}")
    return tuple(value)


def parse_knobs(knobs: Knobs) -> Settings:
    """Validate ``knobs`` and return the settings they describe.

    Args:
        knobs: Knob values by name; missing knobs take their defaults.

    Raises:
        ValueError: An unknown knob or a bad value, naming the knob and the value.
    """
    for name in knobs:
        if name not in KNOB_DOCS:
            raise ValueError(f"unknown procurement knob {name!r}; known knobs: {', '.join(KNOB_DOCS)}")
    per_template = knobs.get("tasks_per_template", 2)
    if isinstance(per_template, bool) or not isinstance(per_template, int) or not 1 <= per_template <= 20:
        raise ValueError(f"procurement knob tasks_per_template={per_template!r} must be an integer from 1 to 20")
    multi = knobs.get("multi_currency", True)
    if not isinstance(multi, bool):
        raise ValueError(f"procurement knob multi_currency={multi!r} must be true or false")
    cap = knobs.get("approval_cap", 25000.0)
    if isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < float(cap) < 1e9:
        raise ValueError(f"procurement knob approval_cap={cap!r} must be a positive number of US dollars")
    depth = knobs.get("prerequisite_depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 3):
        raise ValueError(f"procurement knob prerequisite_depth={depth!r} must be 1, 2 or 3")
    return Settings(
        tasks_per_template=per_template,
        focus_tags=_names(knobs, "focus_tags", (), TAGS),
        heldout_fraction=_fraction(knobs, "heldout_fraction", 0.4),
        near_duplicate_rate=_fraction(knobs, "near_duplicate_rate", 0.1),
        stale_rate=_fraction(knobs, "stale_rate", 0.15),
        legacy_format_rate=_fraction(knobs, "legacy_format_rate", 0.6),
        fault_rate=_fraction(knobs, "fault_rate", 0.5),
        fault_kinds=_names(knobs, "fault_kinds", FAULT_KINDS, FAULT_KINDS),
        multi_currency=multi,
        approval_cap=float(cap),
        prerequisite_depth=depth,
    )
