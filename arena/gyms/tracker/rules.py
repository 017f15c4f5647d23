"""Constants shared by the tracker's world, tools and tasks: statuses, workflows and roles."""

from __future__ import annotations

STATUSES = ["To Do", "In Progress", "In Review", "Done"]
"""Every issue status, in workflow order."""

DONE = "Done"
"""The only closed status; every other status is open."""

WORKFLOWS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "WF-1": ("Standard", [("To Do", "In Progress"), ("In Progress", "To Do"), ("In Progress", "In Review"),
                          ("In Review", "In Progress"), ("In Review", "Done"), ("Done", "To Do")]),
    "WF-2": ("Kanban", [("To Do", "In Progress"), ("In Progress", "To Do"), ("In Progress", "Done"),
                        ("Done", "In Progress")]),
    "WF-3": ("Strict review", [("To Do", "In Progress"), ("In Progress", "In Review"), ("In Review", "In Progress"),
                               ("In Review", "Done")]),
}
"""Workflow id to (name, allowed (from, to) transitions)."""

PERMISSIONS = ["browse", "edit", "transition", "assign", "administer", "set_issue_security"]
"""Permissions a permission scheme can grant to a group."""

DEVELOPER = ["browse", "transition", "assign", "comment", "link_issues"]
PROJECT_ADMIN = [*DEVELOPER, "bulk_change", "manage_versions", "administer", "set_issue_security"]
SITE_ADMIN = [*PROJECT_ADMIN, "manage_groups"]
ROLES: dict[str, list[str]] = {"developer": DEVELOPER, "project_admin": PROJECT_ADMIN, "site_admin": SITE_ADMIN}
"""Persona role to the runtime permissions it holds."""
