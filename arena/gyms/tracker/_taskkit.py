"""Building blocks of the tracker's task templates: a read view of the world, drafts and fault injection."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arena.core.domain import FaultSpec
from arena.core.results import FaultKind
from arena.core.task import (
    Assertion,
    CallPattern,
    GoldProgram,
    GoldStep,
    Intent,
    Persona,
    ResponseAssertion,
    SideEffectAssertion,
    Split,
    Task,
    TraceAssertion,
    WriteScope,
)
from arena.gyms.tracker._rules import DONE, ROLES, WORKFLOWS

T = TypeVar("T")
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
PERSONA_NAMES = {"developer": "Robin Achterberg", "project_admin": "Mika Lindgren", "site_admin": "Ines Valdor"}
FAULT_TAGS: dict[str, str] = {"timeout": "fault_timeout", "rate_limit": "fault_rate_limit",
                              "data_conflict": "fault_conflict"}


def to_iso(value: str) -> str:
    """Return a world date (ISO, MM/DD/YYYY or DD-Mon-YYYY) as YYYY-MM-DD.

    Raises:
        ValueError: The value is in none of those formats, naming it.
    """
    if len(value) == 10 and value[4] == "-":
        return value
    if "/" in value:
        month, day, year = value.split("/")
        return f"{year}-{month}-{day}"
    parts = value.split("-")
    if len(parts) == 3 and parts[1] in MONTHS:
        return f"{parts[2]}-{MONTHS.index(parts[1]) + 1:02d}-{parts[0]}"
    raise ValueError(f"world date {value!r} is in no known format")


def is_legacy(value: str | None) -> bool:
    """Whether a world date is stored in a legacy (non-ISO) format."""
    return value is not None and not (len(value) == 10 and value[4] == "-")


class WorldView:
    """The generated world read into memory, for picking task entities.

    Args:
        conn: The generated world.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.issues = self._rows("issues")
        self.issue = {r["id"]: r for r in self.issues}
        self.users = self._rows("users")
        self.user = {r["id"]: r for r in self.users}
        self.groups = self._rows("groups")
        self.group = {r["id"]: r for r in self.groups}
        self.projects = self._rows("projects")
        self.project = {r["id"]: r for r in self.projects}
        self.versions = self._rows("versions")
        self.levels = self._rows("security_levels")
        self.level = {r["id"]: r for r in self.levels}
        self.schemes = self._rows("security_schemes")
        self.grants = self._rows("permission_grants")
        self.members = self._rows("group_members")
        self.links = self._rows("issue_links")
        self.subtasks: dict[str, list[dict[str, Any]]] = {}
        for row in self.issues:
            if row["parent_id"]:
                self.subtasks.setdefault(row["parent_id"], []).append(row)
        self.blockers: dict[str, list[str]] = {}
        for link in self.links:
            self.blockers.setdefault(link["blocked_issue_id"], []).append(link["issue_id"])
        self.user_groups: dict[str, list[str]] = {}
        for m in self.members:
            self.user_groups.setdefault(m["user_id"], []).append(m["group_id"])
        self.fix_issues: dict[str, list[dict[str, Any]]] = {}
        for row in self.issues:
            if row["fix_version_id"]:
                self.fix_issues.setdefault(row["fix_version_id"], []).append(row)
        self._live = {p["id"] for p in self.projects if not p["archived"]}
        self._memo: dict[str, Any] = {}
        names: dict[str, int] = {}
        for u in self.users:
            names[u["display_name"]] = names.get(u["display_name"], 0) + 1
        self.name_count = names

    def _rows(self, table: str) -> list[dict[str, Any]]:
        cur = self.conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """Return the value cached under ``key``, computing it with ``make`` the first time."""
        if key not in self._memo:
            self._memo[key] = make()
        value: T = self._memo[key]
        return value

    def active_issue(self, row: dict[str, Any]) -> bool:
        """An issue of a live project, not restricted."""
        return row["project_id"] in self._live and row["security_level_id"] is None

    def next_statuses(self, issue: dict[str, Any]) -> list[str]:
        """Statuses the issue's workflow allows next from its current status."""
        wf = self.project[issue["project_id"]]["workflow_id"]
        return [dst for src, dst in WORKFLOWS[wf][1] if src == issue["status"]]

    def open_subtasks(self, issue_id: str) -> list[dict[str, Any]]:
        """Sub-tasks of ``issue_id`` not Done, in rowid order."""
        return [s for s in self.subtasks.get(issue_id, []) if s["status"] != DONE]

    def twin(self, user: dict[str, Any]) -> dict[str, Any] | None:
        """Another user with the same display name, if any."""
        return next((u for u in self.users if u["display_name"] == user["display_name"] and u["id"] != user["id"]),
                    None)

    def pick_users(self, rng: random.Random, active_only: bool = True) -> list[dict[str, Any]]:
        """Users shuffled, those with near-duplicate names first."""
        pool = [u for u in self.users if u["active"] or not active_only]
        dup = [u for u in pool if self.name_count[u["display_name"]] > 1]
        rest = [u for u in pool if self.name_count[u["display_name"]] == 1]
        rng.shuffle(dup)
        rng.shuffle(rest)
        return dup + rest

    def group_named(self, name: str) -> dict[str, Any]:
        """The group called ``name``.

        Raises:
            KeyError: No group has that name.
        """
        for g in self.groups:
            if g["name"] == name:
                return g
        raise KeyError(f"no group named {name!r} in the tracker world")


@dataclass
class Draft:
    """A task before its id, split and faults are set."""

    prompt: str
    role: str
    intent: Intent
    steps: list[GoldStep]
    reply: str
    assertions: list[Assertion]
    tags: list[str] = field(default_factory=list)


def step(tool: str, **arguments: Any) -> GoldStep:
    """A gold step calling ``tool`` with literal ``arguments``."""
    return GoldStep(tool=tool, arguments=arguments)


def call(tool: str, **arguments: Any) -> CallPattern:
    """A trace pattern for a successful call of ``tool`` with at least ``arguments``."""
    return CallPattern(tool=tool, arguments=arguments)


def trace(description: str, required: list[CallPattern], order: list[tuple[int, int]] | None = None,
          forbidden: list[CallPattern] | None = None) -> TraceAssertion:
    """A trace assertion."""
    return TraceAssertion(description=description, required=required, order=order or [], forbidden=forbidden or [])


def writes(*scopes: WriteScope) -> SideEffectAssertion:
    """A side-effect assertion allowing exactly ``scopes`` (none: the world must stay untouched)."""
    return SideEffectAssertion(allowed=list(scopes))


def reply_check(description: str, reply: str, include: list[list[str]], exclude: list[str] | None = None,
                patterns: list[str] | None = None) -> ResponseAssertion:
    """A response assertion; exclusions that the gold reply itself contains are dropped.

    Raises:
        ValueError: The gold reply misses a required fact (a template bug), naming it.
    """
    text = reply.casefold()
    for alternatives in include:
        if not any(a.casefold() in text for a in alternatives):
            raise ValueError(f"gold reply {reply!r} does not state {alternatives!r}")
    kept = [e for e in (exclude or []) if e.casefold() not in text]
    return ResponseAssertion(description=description, must_include=include, must_not_include=kept,
                             forbidden_patterns=patterns or [])


def persona(role: str) -> Persona:
    """The persona of ``role`` with its runtime permissions."""
    return Persona(name=PERSONA_NAMES[role], role=role, permissions=list(ROLES[role]))


def inject_fault(steps: list[GoldStep], task_id: str, kind: FaultKind, tool: str) -> tuple[list[GoldStep], FaultSpec]:
    """Make the first gold call of ``tool`` fail with ``kind`` and add the gold's recovery.

    Timeouts and rate limits are retried; after a data conflict the gold fetches the
    record again (the last ``get_`` step before the failing call that fetched one of its
    arguments, else the last ``get_`` step), then retries.

    Raises:
        ValueError: The gold never calls ``tool``, or a data conflict has no ``get_`` step to repeat.
    """
    index = next((i for i, s in enumerate(steps) if s.tool == tool), None)
    if index is None:
        raise ValueError(f"task {task_id}: gold never calls {tool!r}, cannot inject {kind}")
    on_call = 1 + sum(1 for s in steps[:index] if s.tool == tool)
    recovery = [steps[index]]
    if kind == "data_conflict":
        gets = [s for s in reversed(steps[:index]) if s.tool.startswith("get_")]
        used = {str(v) for v in steps[index].arguments.values()}
        refetch = next((s for s in gets if used & {str(v) for v in s.arguments.values()}), gets[0] if gets else None)
        if refetch is None:
            raise ValueError(f"task {task_id}: no get_ step before {tool!r} to repeat after a data conflict")
        recovery = [refetch, steps[index]]
    fault = FaultSpec(
        id=f"{task_id}.{kind}",
        kind=kind,
        tool=tool,
        on_call=on_call,
        retry_after=2.0 if kind == "rate_limit" else None,
    )
    return [*steps[: index + 1], *recovery, *steps[index + 1:]], fault


@dataclass(frozen=True)
class Template:
    """A task template: picks entities with a Random and returns a draft.

    Attributes:
        name: Template name, part of every task id it produces.
        category: Task category.
        tags: Tags every task of the template carries (drafts may add more).
        build: ``build(view, rng, index, knobs) -> Draft | None``; ``None`` when the world has no fit.
        fault: Fault kind and tool every task of the template gets, if any.
        maybe: Tags some of its tasks carry, depending on the world (near-duplicates, stale
            or legacy rows exist); ``focus_tags`` selects on them too.
    """

    name: str
    category: str
    tags: tuple[str, ...]
    build: Callable[[WorldView, random.Random, int, dict[str, Any]], Draft | None]
    fault: tuple[FaultKind, str] | None = None
    maybe: tuple[str, ...] = ()


def finish(template: Template, index: int, split: Split, draft: Draft, fault: tuple[FaultKind, str] | None
           ) -> tuple[Task, list[FaultSpec]]:
    """Turn a draft into a task, injecting ``fault`` when given."""
    task_id = f"tracker.{template.name}.{index}"
    steps = list(draft.steps)
    faults: list[FaultSpec] = []
    tags = [*template.tags, *(t for t in draft.tags if t not in template.tags)]
    if fault is not None:
        steps, spec = inject_fault(steps, task_id, fault[0], fault[1])
        faults.append(spec)
        if FAULT_TAGS[fault[0]] not in tags:
            tags.append(FAULT_TAGS[fault[0]])
    task = Task(
        id=task_id,
        prompt=draft.prompt,
        persona=persona(draft.role),
        split=split,
        category=template.category,
        tags=tags,
        intent=draft.intent,
        faults=[f.id for f in faults],
        gold=GoldProgram(steps=steps, reply=draft.reply),
        assertions=draft.assertions,
    )
    return task, faults
