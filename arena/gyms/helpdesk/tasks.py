"""Helpdesk tasks: templates over the generated world, extra faults, focus and splits.

Each template (see ``TEMPLATES``) picks suitable entities from the generated
world with its own ``Random`` and returns up to ``tasks_per_template`` tasks,
each with a gold program and 3-12 assertions whose expected values come from
the world itself.
"""

from __future__ import annotations

import random
import sqlite3

from arena.core.domain import FaultSpec
from arena.core.task import Task
from arena.gyms.helpdesk import _tpl_comms, _tpl_flow, _tpl_info, _tpl_policy
from arena.gyms.helpdesk._build import (
    Draft,
    Template,
    WorldView,
    assign_splits,
    conflict_target,
    fault_spec,
    finish,
    with_retry,
)
from arena.gyms.helpdesk._knobs import HelpdeskKnobs

TEMPLATES: tuple[Template, ...] = (
    *_tpl_info.TEMPLATES, *_tpl_policy.TEMPLATES, *_tpl_flow.TEMPLATES, *_tpl_comms.TEMPLATES,
)
"""Every task template, in a fixed order."""

CATEGORIES = ("information_retrieval", "policy_reasoning", "multi_step_workflow", "customer_communication")
"""The task categories."""

FAULT_TAGS = {"timeout": "fault_timeout", "rate_limit": "fault_rate_limit", "data_conflict": "fault_conflict"}


def _extra_fault(draft: Draft, rng: random.Random, knobs: HelpdeskKnobs) -> None:
    """Give a fault-free draft one more fault of a knob-chosen kind, with the gold's recovery."""
    kind = rng.choice(sorted(knobs.fault_kinds))
    if kind == "data_conflict":
        target = conflict_target(draft.steps)
    else:
        target = rng.choice(sorted({s.tool for s in draft.steps})) if draft.steps else None
    if target is None:
        return
    fault = fault_spec(kind, target)
    draft.steps = with_retry(draft.steps, fault)
    draft.faults.append(fault)
    draft.tags.append(FAULT_TAGS[kind])


def build_tasks(conn: sqlite3.Connection, seed: int, knobs: HelpdeskKnobs) -> tuple[list[Task], list[FaultSpec]]:
    """Build the tasks over a generated world.

    Args:
        conn: The generated world.
        seed: The generator seed (each template draws from its own seeded ``Random``).
        knobs: Validated knobs (``tasks_per_template``, ``focus_tags``, ``heldout_fraction``,
            ``fault_rate``, ``fault_kinds``, ``approval_limit``).

    Returns:
        The tasks (ids ``<template>-NN``) and every fault they reference.

    Raises:
        ValueError: ``focus_tags`` selects no task, naming the tags.
    """
    view = WorldView(conn=conn, approval_limit=knobs.approval_limit)
    built: list[tuple[Template, int, Draft]] = []
    fault_rng = random.Random(f"{seed}:faults")
    for template in TEMPLATES:
        drafts = template.build(view, random.Random(f"{seed}:{template.name}"), knobs.tasks_per_template)
        for index, draft in enumerate(drafts, start=1):
            if not draft.faults and knobs.fault_rate > 0 and fault_rng.random() < knobs.fault_rate:
                _extra_fault(draft, fault_rng, knobs)
            built.append((template, index, draft))
    if knobs.focus_tags:
        focus = set(knobs.focus_tags)
        built = [b for b in built if focus & (set(b[0].tags) | set(b[2].tags))]
        if not built:
            raise ValueError(f"focus_tags {sorted(focus)} select no helpdesk task; known tags: "
                             f"{sorted({t for tpl in TEMPLATES for t in tpl.tags} | set(FAULT_TAGS.values()))}")
    keys = [{t.category, *t.tags, *d.tags} for t, _, d in built]
    splits = assign_splits(keys, knobs.heldout_fraction, random.Random(f"{seed}:splits"))
    tasks = [finish(t.name, i, t, d, s) for (t, i, d), s in zip(built, splits, strict=True)]
    faults = {f.id: f for _, _, d in built for f in d.faults}
    return tasks, [faults[k] for k in sorted(faults)]
