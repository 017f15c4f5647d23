"""The tracker gym: an issue tracker with projects, workflows, permissions, issue security and releases."""

from __future__ import annotations

from pathlib import Path

from arena.authoring.reply_rules import guard_replies
from arena.core.domain import STRONG, WEAK, Domain, Knobs, World
from arena.core.toolkit import collect_tools
from arena.gyms.tracker import tools
from arena.gyms.tracker.tasks import TASK_DEFAULTS, build_tasks
from arena.gyms.tracker.world import CLOCK_START, WORLD_DEFAULTS, build_world

KNOBS: dict[str, str] = {
    "near_duplicate_rate": "Share of users (0-1, default 0.15) given a namesake with another email and team.",
    "stale_rate": "Share of issues (0-1, default 0.15) whose search-index status differs from the record; "
                  "released versions are stale in the index at twice this rate.",
    "legacy_format_rate": "Share of rows dated before 2021 (0-1, default 0.5) stored as MM/DD/YYYY or DD-Mon-YYYY.",
    "tasks_per_template": "Tasks each template produces (1-50, default 5).",
    "heldout_fraction": "Share of each template's tasks in the heldout split (0-1, default 0.4; with 2 or more "
                        "tasks per template both splits keep at least one).",
    "focus_tags": "Keep only templates carrying one of these tags (list, default [] = all templates).",
    "fault_rate": "Chance (0-1, default 0) that a task without a built-in fault gets one on its first write call.",
    "fault_kinds": "Fault kinds in use (list of timeout, rate_limit, data_conflict; default all); templates "
                   "whose built-in fault is not listed are dropped.",
    "prerequisite_depth": "Most missing links of the issue security chain in restriction tasks (1-3, default 3); "
                          "task i of a template needs 1 + i mod depth links.",
}
"""Every knob the tracker understands, with its range and default."""


def generate(seed: int, knobs: Knobs) -> World:
    """Generate the tracker world and its tasks for ``seed`` and ``knobs``.

    Raises:
        ValueError: An unknown knob or a knob with a bad value, naming it.
    """
    unknown = sorted(set(knobs) - set(KNOBS))
    if unknown:
        raise ValueError(f"unknown tracker knob(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOBS))}")
    conn = build_world(seed, knobs)
    try:
        tasks, faults = build_tasks(conn, seed, knobs)
        state = conn.serialize()
    finally:
        conn.close()
    return World(state_db=state, tasks=guard_replies(tasks, world=state, tools=collect_tools(tools)),
                 faults=faults, clock_start=CLOCK_START)


DEPENDENCIES: list[tuple[str, str, int]] = [
    ("grant_permission", "set_issue_security", STRONG),
    ("apply_security_scheme", "set_issue_security", STRONG),
    ("create_security_level", "set_issue_security", STRONG),
    ("check_release_blockers", "release_version", STRONG),
    ("get_user", "add_user_to_group", STRONG),
    ("get_user", "remove_user_from_group", STRONG),
    ("list_subtasks", "bulk_assign", STRONG),
    ("list_subtasks", "transition_issue", STRONG),
    ("get_workflow", "transition_issue", STRONG),
    ("get_permission_scheme", "grant_permission", STRONG),
    ("search_issues", "get_issue", WEAK),
    ("search_users", "get_user", WEAK),
    ("search_groups", "get_group", WEAK),
    ("search_versions", "get_version", WEAK),
    ("search_security_schemes", "get_security_scheme", WEAK),
    ("get_issue", "transition_issue", WEAK),
    ("get_issue", "assign_issue", WEAK),
    ("get_user", "assign_issue", WEAK),
    ("get_user", "bulk_assign", WEAK),
    ("get_issue", "add_comment", WEAK),
    ("get_issue", "link_issues", WEAK),
    ("get_issue", "set_issue_security", WEAK),
    ("get_project", "get_permission_scheme", WEAK),
    ("get_project", "apply_security_scheme", WEAK),
    ("get_security_scheme", "create_security_level", WEAK),
    ("get_group", "add_user_to_group", WEAK),
    ("get_version", "release_version", WEAK),
    ("get_issue", "list_subtasks", WEAK),
]
"""Tool dependency edges: STRONG where the policy requires the step first, WEAK where it usually comes first."""

DOMAIN = Domain(
    name="tracker",
    description="An issue tracker: projects, issues and sub-tasks, workflows, groups, permission and issue "
                "security schemes, versions and releases.",
    tools=collect_tools(tools),
    policy=(Path(__file__).parent / "policy.md").read_text(encoding="utf-8"),
    dependencies=DEPENDENCIES,
    generate=generate,
    knobs=KNOBS,
)
"""The tracker domain."""

__all__ = ["DEPENDENCIES", "DOMAIN", "KNOBS", "TASK_DEFAULTS", "WORLD_DEFAULTS", "generate"]
