"""Procurement tasks: templates over a generated world, injected faults and the train/heldout split.

``build_tasks(conn, seed, settings)`` runs every selected template with its own
``Random`` (derived from the seed and the template's name), applies faults to
fault-capable tasks, and assigns splits so that every category and tag present
appears in both splits whenever it has at least two tasks.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter

from arena.core.domain import FaultSpec
from arena.core.task import GoldProgram, GoldStep, IntendedCall, Intent, Split, Task
from arena.gyms.procurement import _tpl_invoices, _tpl_orders, _tpl_vendors
from arena.gyms.procurement._knobs import Settings
from arena.gyms.procurement._task_kit import Draft, Template, WorldView

TEMPLATES: tuple[Template, ...] = (*_tpl_vendors.TEMPLATES, *_tpl_orders.TEMPLATES, *_tpl_invoices.TEMPLATES)
"""Every procurement task template, in generation order."""

FAULT_TAGS = {"timeout": "fault_timeout", "rate_limit": "fault_rate_limit", "data_conflict": "fault_conflict"}
"""Tag of each fault kind."""

RETRY_AFTER = 2.0
"""Seconds a rate-limit fault asks the agent to wait."""


def select_templates(settings: Settings) -> list[Template]:
    """Templates the knobs select: all, or those exercising a focused tag, none with a chain deeper than asked."""
    depth = settings.prerequisite_depth
    templates = [t for t in TEMPLATES if depth is None or t.depth <= depth]
    if not settings.focus_tags:
        return templates
    focus = set(settings.focus_tags)
    fault_focus = any(FAULT_TAGS[k] in focus for k in FAULT_TAGS)
    return [t for t in templates if focus & set(t.tags) or (fault_focus and t.fault_tools)]


def _fault_kinds(settings: Settings) -> list[str]:
    focused = [k for k in settings.fault_kinds if FAULT_TAGS[k] in settings.focus_tags]
    return focused or list(settings.fault_kinds)


def _inject(task_id: str, draft: Draft, kind: str, tool: str) -> FaultSpec:
    """Put a fault on the first gold call of ``tool`` and add the retry (and re-read) to the gold program."""
    at = next(i for i, s in enumerate(draft.steps) if s.tool == tool)
    failing = draft.steps[at].model_copy(deep=True)
    extra: list[GoldStep] = [failing]
    if kind == "data_conflict":
        extra.append(draft.refetch[tool].model_copy(deep=True))
    draft.steps[at:at] = extra
    draft.tags.append(FAULT_TAGS[kind])
    return FaultSpec(
        id=f"{task_id}.{kind}", kind=kind, tool=tool, on_call=1, times=1,
        retry_after=RETRY_AFTER if kind == "rate_limit" else None,
    )


def _assign_splits(groups: list[list[tuple[str, Draft, str]]], fraction: float, rng: random.Random) -> dict[str, Split]:
    """Split tasks so each category and tag with two or more tasks lands in both splits.

    ``groups`` holds, per template, ``(task id, draft, category)``. At most all
    but one task of a template go to heldout while other choices exist.
    """
    items = [(tid, {cat, *d.tags}) for group in groups for tid, d, cat in group]
    total = len(items)
    target = round(fraction * total)
    features: Counter[str] = Counter(f for _, fs in items for f in fs)
    heldout: set[str] = set()
    group_of = {tid: gi for gi, group in enumerate(groups) for tid, _, _ in group}
    group_held: Counter[int] = Counter()

    def train_left(feature: str) -> int:
        return sum(1 for tid, fs in items if feature in fs and tid not in heldout)

    def can_hold(tid: str, fs: set[str]) -> bool:
        gi = group_of[tid]
        if tid in heldout or group_held[gi] >= max(1, len(groups[gi]) - 1):
            return False
        return all(train_left(f) > 1 for f in fs)

    if 0 < target:
        for feature in sorted(features):
            if features[feature] < 2 or any(feature in fs and tid in heldout for tid, fs in items):
                continue
            options = [(tid, fs) for tid, fs in items if feature in fs and can_hold(tid, fs)]
            if options and len(heldout) < target:
                tid, _ = rng.choice(options)
                heldout.add(tid)
                group_held[group_of[tid]] += 1
        order = list(items)
        rng.shuffle(order)
        for tid, fs in order:
            if len(heldout) >= target:
                break
            if can_hold(tid, fs):
                heldout.add(tid)
                group_held[group_of[tid]] += 1
    return {tid: ("heldout" if tid in heldout else "train") for tid, _ in items}


def build_tasks(conn: sqlite3.Connection, seed: int, settings: Settings) -> tuple[list[Task], list[FaultSpec]]:
    """Build the tasks and faults of a generated world.

    Args:
        conn: The generated world (read only).
        seed: The generator seed.
        settings: Validated knobs.

    Returns:
        The tasks (ids ``<template>-<n>``) and the faults they reference.
    """
    world = WorldView(conn)
    groups: list[list[tuple[str, Draft, str]]] = []
    for template in select_templates(settings):
        rng = random.Random(f"procurement:{seed}:{template.name}")
        drafts = template.build(world, rng, settings.tasks_per_template)
        groups.append([(f"{template.name}-{i}", d, template.category) for i, d in enumerate(drafts)])
    faults = _apply_faults(groups, seed, settings)
    splits = _assign_splits(groups, settings.heldout_fraction, random.Random(f"procurement:{seed}:splits"))
    fault_of = {f.id.rsplit(".", 1)[0]: f.id for f in faults}
    tasks = [
        Task(
            id=tid, prompt=d.prompt, persona=d.persona, split=splits[tid], category=category,
            tags=sorted(set(d.tags)),
            intent=Intent(goal=d.goal, refs=d.refs, calls=[IntendedCall(tool=t, arguments=a, when=d.when.get(i))
                                                        for i, (t, a) in enumerate(d.calls)],
                          report=d.report),
            faults=[fault_of[tid]] if tid in fault_of else [],
            gold=GoldProgram(steps=d.steps, reply=d.reply),
            assertions=d.assertions,
        )
        for group in groups for tid, d, category in group
    ]
    return tasks, faults


def _apply_faults(groups: list[list[tuple[str, Draft, str]]], seed: int, settings: Settings) -> list[FaultSpec]:
    templates = {t.name: t for t in TEMPLATES}
    eligible = [(tid, d, templates[tid.rsplit("-", 1)[0]]) for group in groups for tid, d, _ in group
                if templates[tid.rsplit("-", 1)[0]].fault_tools]
    kinds = _fault_kinds(settings)
    if not kinds or not eligible:
        return []
    forced = any(FAULT_TAGS[k] in settings.focus_tags for k in kinds)
    count = len(eligible) if forced else round(settings.fault_rate * len(eligible))
    rng = random.Random(f"procurement:{seed}:faults")
    chosen = sorted(rng.sample(range(len(eligible)), count))
    faults = []
    for n, index in enumerate(chosen):
        tid, draft, template = eligible[index]
        kind = kinds[n % len(kinds)]
        tools = [t for t in template.fault_tools if kind != "data_conflict" or t in draft.refetch]
        if tools:
            faults.append(_inject(tid, draft, kind, tools[n % len(tools)]))
    return faults
