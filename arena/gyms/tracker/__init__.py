"""The tracker gym: an issue tracker with projects, workflows, permissions, issue security and releases.

``DOMAIN`` is what ``arena.core.domains.get_domain("tracker")`` returns, assembled by the authoring kit.
"""

from __future__ import annotations

from pathlib import Path

from arena.authoring import STRONG, WEAK, InternalData, InternalItem, make_domain
from arena.gyms.tracker import tools as _tools
from arena.gyms.tracker.tasks import CATEGORIES, TEMPLATES
from arena.gyms.tracker.tasks_common import DEVELOPER
from arena.gyms.tracker.world import CLOCK_START, TrackerKnobs, build_world

POLICY = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
"""The business rules the agent is given."""

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

DOMAIN = make_domain(
    name="tracker",
    description="An issue tracker: projects, issues and sub-tasks, workflows, groups, permission and issue "
                "security schemes, versions and releases.",
    tools=_tools,
    policy=POLICY,
    dependencies=DEPENDENCIES,
    world=build_world,
    templates=TEMPLATES,
    knobs=TrackerKnobs,
    clock_start=CLOCK_START,
    persona=DEVELOPER,
    internal=InternalData(items=(
        InternalItem(what="internal ids of security levels", fields=("security_level_id",), id_kinds=("SL",)),
        InternalItem(what="permission schemes", fields=("permission_scheme_id",), id_kinds=("PS",)),
        InternalItem(what="issue security schemes", fields=("security_scheme_id",), id_kinds=("ISS",)),
    )),
)
"""The tracker domain."""

__all__ = ["CATEGORIES", "DEPENDENCIES", "DOMAIN", "POLICY", "TEMPLATES", "TrackerKnobs", "build_world"]
