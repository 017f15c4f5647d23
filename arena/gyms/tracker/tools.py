"""The tracker's tools: issues, people, permission and security schemes, workflows and releases."""

from __future__ import annotations

import re
from typing import Any

from arena.authoring import Conflict, InvalidArgument, NotFound, PolicyViolation, ToolContext, fetch, search, tool
from arena.gyms.tracker.rules import DONE, PERMISSIONS, STATUSES

_ISSUE_KEY = re.compile(r"^[A-Z][A-Z0-9]*-\d+$")
_PROJECT_KEY = re.compile(r"^[A-Z][A-Z0-9]*$")
_ISO_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")


def _issue(ctx: ToolContext, issue_id: str) -> dict[str, Any]:
    if not _ISSUE_KEY.match(issue_id):
        raise InvalidArgument(f"issue_id {issue_id!r} is not an issue key like PAY-123 (upper-case project key)")
    return fetch(ctx, "issues", issue_id, "issue")


def _project(ctx: ToolContext, project_id: str) -> dict[str, Any]:
    if not _PROJECT_KEY.match(project_id):
        raise InvalidArgument(f"project_id {project_id!r} is not an upper-case project key like PAY")
    return fetch(ctx, "projects", project_id, "project")


def _user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    return fetch(ctx, "users", user_id, "user")


def _group(ctx: ToolContext, group_id: str) -> dict[str, Any]:
    return fetch(ctx, "groups", group_id, "group")


def _writable(ctx: ToolContext, issue: dict[str, Any]) -> dict[str, Any]:
    project = _project(ctx, issue["project_id"])
    if project["archived"]:
        raise PolicyViolation(f"project {project['id']} is archived; its issue {issue['id']} is read-only")
    return project


def _active_user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    user = _user(ctx, user_id)
    if not user["active"]:
        raise PolicyViolation(f"user {user_id} is deactivated and cannot be assigned work or groups")
    return user


@tool(mode="read", permission="browse", entity="issue", operation="search")
def search_issues(ctx: ToolContext, query: str, project_id: str | None = None) -> list[dict[str, Any]]:
    """Search issues by words of their summary (from the search index; statuses may be stale).

    Args:
        query: Words that must all appear in the summary.
        project_id: Optional project key to search within, e.g. PAY.
    """
    if project_id is not None:
        _project(ctx, project_id)
    return search(ctx, "issue", query, where=None if project_id is None else {"project_id": project_id})


@tool(mode="read", permission="browse", entity="issue", operation="get")
def get_issue(ctx: ToolContext, issue_id: str) -> dict[str, Any]:
    """Get an issue's full, current record with its sub-tasks, links and comments.

    Besides the row, the record holds ``subtask_ids``, ``open_subtask_ids`` and ``open_subtasks``
    (open sub-tasks as ``KEY (Status)``), ``blocks``, ``is_blocked_by``, ``blocker_statuses`` (every
    issue blocking this one as ``KEY (Status)``) and ``open_blockers`` (those not Done), the
    ``visibility`` (``restricted`` or ``public``) and, for a restricted issue, a ``security_note``
    naming the level and the group that may see it.

    Args:
        issue_id: The issue key, e.g. PAY-123.
    """
    if not _ISSUE_KEY.match(issue_id):
        raise InvalidArgument(f"issue_id {issue_id!r} is not an issue key like PAY-123 (upper-case project key)")
    record = fetch(ctx, "issues", issue_id, "issue")
    assignee = ctx.one("SELECT display_name FROM users WHERE id=?", (record["assignee_id"],))
    record["assignee_name"] = assignee["display_name"] if assignee else None
    subtasks = ctx.all("SELECT id, status FROM issues WHERE parent_id=? ORDER BY rowid", (issue_id,))
    open_subtasks = [r for r in subtasks if r["status"] != DONE]
    record["subtask_ids"] = [r["id"] for r in subtasks]
    record["open_subtask_ids"] = [r["id"] for r in open_subtasks]
    record["open_subtasks"] = _listing(open_subtasks)
    record["blocks"] = [r["blocked_issue_id"] for r in ctx.all(
        "SELECT blocked_issue_id FROM issue_links WHERE issue_id=? ORDER BY rowid", (issue_id,))]
    blockers = ctx.all("SELECT b.id, b.status FROM issue_links l JOIN issues b ON b.id=l.issue_id "
                       "WHERE l.blocked_issue_id=? ORDER BY l.rowid", (issue_id,))
    record["is_blocked_by"] = [r["id"] for r in blockers]
    record["blocker_statuses"] = _listing(blockers)
    record["open_blockers"] = _listing([r for r in blockers if r["status"] != DONE])
    record["comments"] = ctx.all("SELECT id, author_id, body, created FROM comments WHERE issue_id=? ORDER BY rowid",
                                 (issue_id,))
    record["visibility"] = "restricted" if record["security_level_id"] else "public"
    if record["security_level_id"]:
        level = ctx.one("SELECT l.name, g.name AS group_name FROM security_levels l LEFT JOIN groups g "
                        "ON g.id=l.group_id WHERE l.id=?", (record["security_level_id"],))
        if level is not None:
            record["security_note"] = (f"restricted at level {level['name']}: visible only to members of "
                                       f"{level['group_name']}")
    return record


def _listing(rows: list[dict[str, Any]]) -> str:
    """Issues as ``KEY (Status), KEY (Status)``; an empty string for none."""
    return ", ".join(f"{r['id']} ({r['status']})" for r in rows)


@tool(mode="read", permission="browse", entity="issue", operation="list")
def list_subtasks(ctx: ToolContext, issue_id: str) -> list[dict[str, Any]]:
    """List an issue's sub-tasks with their current status and assignee.

    Args:
        issue_id: The parent issue key, e.g. PAY-123.
    """
    _issue(ctx, issue_id)
    return ctx.all("SELECT id, summary, status, assignee_id FROM issues WHERE parent_id=? ORDER BY rowid",
                   (issue_id,))


@tool(mode="read", permission="browse", entity="user", operation="search")
def search_users(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search users by display name or email.

    Args:
        query: Words that must all appear in the display name or the email.
    """
    return search(ctx, "user", query)


@tool(mode="read", permission="browse", entity="user", operation="get")
def get_user(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Get a user's record with their current group memberships.

    Args:
        user_id: The user id, e.g. USR-1001.
    """
    user = _user(ctx, user_id)
    user["groups"] = ctx.all(
        "SELECT g.id AS group_id, g.name FROM group_members m JOIN groups g ON g.id=m.group_id "
        "WHERE m.user_id=? ORDER BY g.name", (user_id,))
    return user


@tool(mode="read", permission="browse", entity="group", operation="search")
def search_groups(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search groups by name.

    Args:
        query: Words that must all appear in the group name.
    """
    return search(ctx, "group", query)


@tool(mode="read", permission="browse", entity="group", operation="get")
def get_group(ctx: ToolContext, group_id: str) -> dict[str, Any]:
    """Get a group with its member ids.

    Args:
        group_id: The group id, e.g. GRP-101.
    """
    group = _group(ctx, group_id)
    group["member_ids"] = [r["user_id"] for r in ctx.all(
        "SELECT user_id FROM group_members WHERE group_id=? ORDER BY user_id", (group_id,))]
    return group


@tool(mode="read", permission="browse", entity="project", operation="get")
def get_project(ctx: ToolContext, project_id: str) -> dict[str, Any]:
    """Get a project with its schemes, workflow, components and versions.

    Args:
        project_id: The project key, e.g. PAY.
    """
    project = _project(ctx, project_id)
    project["components"] = ctx.all("SELECT id, name, lead_id FROM components WHERE project_id=? ORDER BY rowid",
                                    (project_id,))
    project["versions"] = ctx.all("SELECT id, name, status FROM versions WHERE project_id=? ORDER BY rowid",
                                  (project_id,))
    return project


@tool(mode="read", permission="browse", entity="workflow", operation="get")
def get_workflow(ctx: ToolContext, workflow_id: str) -> dict[str, Any]:
    """Get a workflow with its allowed status transitions.

    Args:
        workflow_id: The workflow id, e.g. WF-1.
    """
    wf = fetch(ctx, "workflows", workflow_id, "workflow")
    wf["transitions"] = ctx.all(
        "SELECT from_status, to_status FROM workflow_transitions WHERE workflow_id=? ORDER BY rowid", (workflow_id,))
    return wf


@tool(mode="read", permission="browse", entity="permission_scheme", operation="get")
def get_permission_scheme(ctx: ToolContext, permission_scheme_id: str) -> dict[str, Any]:
    """Get a permission scheme with its grants (permission to group).

    Args:
        permission_scheme_id: The scheme id, e.g. PS-11.
    """
    scheme = fetch(ctx, "permission_schemes", permission_scheme_id, "permission scheme")
    scheme["grants"] = ctx.all(
        "SELECT id, permission, group_id FROM permission_grants WHERE permission_scheme_id=? ORDER BY rowid",
        (permission_scheme_id,))
    return scheme


@tool(mode="read", permission="browse", entity="security_scheme", operation="search")
def search_security_schemes(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Search issue security schemes by name.

    Args:
        query: Words that must all appear in the scheme name.
    """
    return search(ctx, "security_scheme", query)


@tool(mode="read", permission="browse", entity="security_scheme", operation="get")
def get_security_scheme(ctx: ToolContext, security_scheme_id: str) -> dict[str, Any]:
    """Get an issue security scheme with its levels (also as ``level_ids``: level name to id) and its projects.

    Args:
        security_scheme_id: The scheme id, e.g. ISS-21.
    """
    scheme = fetch(ctx, "security_schemes", security_scheme_id, "security scheme")
    scheme["levels"] = ctx.all("SELECT id, name, group_id FROM security_levels WHERE security_scheme_id=? "
                               "ORDER BY rowid", (security_scheme_id,))
    scheme["level_ids"] = {lv["name"]: lv["id"] for lv in scheme["levels"]}
    scheme["project_ids"] = [r["id"] for r in ctx.all(
        "SELECT id FROM projects WHERE security_scheme_id=? ORDER BY id", (security_scheme_id,))]
    return scheme


@tool(mode="read", permission="browse", entity="version", operation="search")
def search_versions(ctx: ToolContext, query: str, project_id: str | None = None) -> list[dict[str, Any]]:
    """Search versions by name (from the search index; statuses may be stale).

    Args:
        query: Words that must all appear in the version name.
        project_id: Optional project key to search within.
    """
    return search(ctx, "version", query, where=None if project_id is None else {"project_id": project_id})


@tool(mode="read", permission="browse", entity="version", operation="get")
def get_version(ctx: ToolContext, version_id: str) -> dict[str, Any]:
    """Get a version's current record with the issues fixed in it.

    Args:
        version_id: The version id, e.g. VER-201.
    """
    version = fetch(ctx, "versions", version_id, "version")
    version["issues"] = ctx.all("SELECT id, status FROM issues WHERE fix_version_id=? ORDER BY rowid", (version_id,))
    return version


def _blockers(ctx: ToolContext, version_id: str) -> list[dict[str, Any]]:
    return ctx.all(
        "SELECT b.id AS issue_id, l.blocked_issue_id AS blocks, b.status FROM issues i "
        "JOIN issue_links l ON l.blocked_issue_id=i.id JOIN issues b ON b.id=l.issue_id "
        "WHERE i.fix_version_id=? AND b.status<>? ORDER BY l.rowid", (version_id, DONE))


@tool(mode="read", permission="browse", entity="version", operation="action")
def check_release_blockers(ctx: ToolContext, version_id: str) -> dict[str, Any]:
    """List open issues that block the version's issues; a version with any cannot be released.

    Args:
        version_id: The version id, e.g. VER-201.
    """
    fetch(ctx, "versions", version_id, "version")
    blockers = _blockers(ctx, version_id)
    return {"version_id": version_id, "blockers": blockers, "can_release": not blockers}


@tool(mode="write", permission="transition", entity="issue", operation="update")
def transition_issue(ctx: ToolContext, issue_id: str, to_status: str) -> dict[str, Any]:
    """Move an issue to another status along its project's workflow.

    Args:
        issue_id: The issue key, e.g. PAY-123.
        to_status: Target status: To Do, In Progress, In Review or Done.
    """
    if to_status not in STATUSES:
        raise InvalidArgument(f"to_status {to_status!r} is not a status; statuses: {', '.join(STATUSES)}")
    issue = _issue(ctx, issue_id)
    project = _writable(ctx, issue)
    allowed = ctx.one("SELECT id FROM workflow_transitions WHERE workflow_id=? AND from_status=? AND to_status=?",
                      (project["workflow_id"], issue["status"], to_status))
    if allowed is None:
        nxt = [r["to_status"] for r in ctx.all(
            "SELECT to_status FROM workflow_transitions WHERE workflow_id=? AND from_status=? ORDER BY rowid",
            (project["workflow_id"], issue["status"]))]
        options = f"it can move to: {', '.join(nxt)}" if nxt else "the workflow allows no transition"
        raise PolicyViolation(f"workflow {project['workflow_id']} has no transition from {issue['status']!r} "
                              f"to {to_status!r} for {issue_id}; from {issue['status']!r} {options}")
    if to_status == DONE:
        open_subs = [r["id"] for r in ctx.all("SELECT id FROM issues WHERE parent_id=? AND status<>? ORDER BY rowid",
                                              (issue_id, DONE))]
        if open_subs:
            raise PolicyViolation(f"{issue_id} has open sub-tasks ({', '.join(open_subs)}); close them first")
    ctx.conn.execute("UPDATE issues SET status=?, updated=? WHERE id=?", (to_status, ctx.today(), issue_id))
    return {"issue_id": issue_id, "from_status": issue["status"], "status": to_status}


@tool(mode="write", permission="assign", entity="issue", operation="update")
def assign_issue(ctx: ToolContext, issue_id: str, user_id: str) -> dict[str, Any]:
    """Assign an issue to a user.

    Args:
        issue_id: The issue key, e.g. PAY-123.
        user_id: The assignee's user id, e.g. USR-1001.
    """
    issue = _issue(ctx, issue_id)
    _writable(ctx, issue)
    _active_user(ctx, user_id)
    ctx.conn.execute("UPDATE issues SET assignee_id=?, updated=? WHERE id=?", (user_id, ctx.today(), issue_id))
    return {"issue_id": issue_id, "assignee_id": user_id}


@tool(mode="write", permission="bulk_change", entity="issue", operation="update")
def bulk_assign(ctx: ToolContext, issue_ids: list[str], user_id: str) -> dict[str, Any]:
    """Assign several issues to one user in a single change (all or nothing).

    Args:
        issue_ids: Issue keys to assign (1 to 50, no repeats).
        user_id: The assignee's user id.
    """
    if not 1 <= len(issue_ids) <= 50 or len(set(issue_ids)) != len(issue_ids):
        raise InvalidArgument(f"issue_ids must hold 1 to 50 distinct keys, got {len(issue_ids)}")
    _active_user(ctx, user_id)
    for issue_id in issue_ids:
        _writable(ctx, _issue(ctx, issue_id))
    for issue_id in issue_ids:
        ctx.conn.execute("UPDATE issues SET assignee_id=?, updated=? WHERE id=?", (user_id, ctx.today(), issue_id))
    return {"assigned": issue_ids, "assignee_id": user_id}


@tool(mode="write", permission="comment", entity="comment", operation="create")
def add_comment(ctx: ToolContext, issue_id: str, body: str) -> dict[str, Any]:
    """Add a comment to an issue.

    Args:
        issue_id: The issue key, e.g. PAY-123.
        body: The comment text (1 to 2000 characters).
    """
    if not body.strip() or len(body) > 2000:
        raise InvalidArgument(f"body must hold 1 to 2000 characters, got {len(body)}")
    _writable(ctx, _issue(ctx, issue_id))
    cid = ctx.new_id("CMT")
    ctx.conn.execute("INSERT INTO comments VALUES (?,?,?,?,?)", (cid, issue_id, None, body, ctx.today()))
    return {"comment_id": cid, "issue_id": issue_id}


@tool(mode="write", permission="link_issues", entity="issue_link", operation="create")
def link_issues(ctx: ToolContext, issue_id: str, blocked_issue_id: str) -> dict[str, Any]:
    """Record that one issue blocks another.

    Args:
        issue_id: The blocking issue key.
        blocked_issue_id: The key of the issue it blocks.
    """
    if issue_id == blocked_issue_id:
        raise InvalidArgument(f"an issue cannot block itself ({issue_id})")
    _writable(ctx, _issue(ctx, issue_id))
    _writable(ctx, _issue(ctx, blocked_issue_id))
    if ctx.one("SELECT id FROM issue_links WHERE issue_id=? AND blocked_issue_id=?", (issue_id, blocked_issue_id)):
        raise Conflict(f"{issue_id} already blocks {blocked_issue_id}")
    if ctx.one("SELECT id FROM issue_links WHERE issue_id=? AND blocked_issue_id=?", (blocked_issue_id, issue_id)):
        raise PolicyViolation(f"{blocked_issue_id} already blocks {issue_id}; a cycle is not allowed")
    lid = ctx.new_id("LNK")
    ctx.conn.execute("INSERT INTO issue_links VALUES (?,?,?,?,?)",
                     (lid, issue_id, blocked_issue_id, "blocks", ctx.today()))
    return {"link_id": lid, "issue_id": issue_id, "blocks": blocked_issue_id}


@tool(mode="write", permission="manage_groups", entity="group", operation="update")
def add_user_to_group(ctx: ToolContext, group_id: str, user_id: str) -> dict[str, Any]:
    """Add a user to a group.

    Args:
        group_id: The group id, e.g. GRP-101.
        user_id: The user id, e.g. USR-1001.
    """
    group = _group(ctx, group_id)
    user = _active_user(ctx, user_id)
    if ctx.one("SELECT id FROM group_members WHERE group_id=? AND user_id=?", (group_id, user_id)):
        raise PolicyViolation(f"{user['display_name']} ({user_id}) is already a member of the {group['name']} "
                              f"group ({group_id}); nothing was changed")
    mid = ctx.new_id("GM")
    ctx.conn.execute("INSERT INTO group_members VALUES (?,?,?,?)", (mid, group_id, user_id, ctx.today()))
    return {"membership_id": mid, "group_id": group_id, "user_id": user_id}


@tool(mode="write", permission="manage_groups", entity="group", operation="update")
def remove_user_from_group(ctx: ToolContext, group_id: str, user_id: str) -> dict[str, Any]:
    """Remove a user from a group.

    Args:
        group_id: The group id, e.g. GRP-101.
        user_id: The user id, e.g. USR-1001.
    """
    _group(ctx, group_id)
    _user(ctx, user_id)
    row = ctx.one("SELECT id FROM group_members WHERE group_id=? AND user_id=?", (group_id, user_id))
    if row is None:
        raise NotFound(f"user {user_id} is not a member of group {group_id}")
    ctx.conn.execute("DELETE FROM group_members WHERE id=?", (row["id"],))
    return {"group_id": group_id, "user_id": user_id, "removed": True}


@tool(mode="write", permission="administer", entity="permission_scheme", operation="update")
def grant_permission(ctx: ToolContext, permission_scheme_id: str, permission: str, group_id: str) -> dict[str, Any]:
    """Grant a permission to a group in a permission scheme.

    Args:
        permission_scheme_id: The scheme id, e.g. PS-11.
        permission: One of browse, edit, transition, assign, administer, set_issue_security.
        group_id: The group receiving the permission.
    """
    if permission not in PERMISSIONS:
        raise InvalidArgument(f"permission {permission!r} is unknown; permissions: {', '.join(PERMISSIONS)}")
    fetch(ctx, "permission_schemes", permission_scheme_id, "permission scheme")
    _group(ctx, group_id)
    if ctx.one("SELECT id FROM permission_grants WHERE permission_scheme_id=? AND permission=? AND group_id=?",
               (permission_scheme_id, permission, group_id)):
        raise Conflict(f"{permission_scheme_id} already grants {permission} to {group_id}")
    gid = ctx.new_id("PG")
    ctx.conn.execute("INSERT INTO permission_grants VALUES (?,?,?,?)",
                     (gid, permission_scheme_id, permission, group_id))
    return {"grant_id": gid, "permission_scheme_id": permission_scheme_id, "permission": permission,
            "group_id": group_id}


@tool(mode="write", permission="administer", entity="security_level", operation="create")
def create_security_level(ctx: ToolContext, security_scheme_id: str, name: str, group_id: str) -> dict[str, Any]:
    """Define a security level in an issue security scheme, visible to one group.

    Args:
        security_scheme_id: The scheme id, e.g. ISS-21.
        name: Level name, e.g. pay-devs only.
        group_id: The only group that may see issues at this level.
    """
    fetch(ctx, "security_schemes", security_scheme_id, "security scheme")
    _group(ctx, group_id)
    if not name.strip() or len(name) > 80:
        raise InvalidArgument(f"name must hold 1 to 80 characters, got {len(name)}")
    if ctx.one("SELECT id FROM security_levels WHERE security_scheme_id=? AND name=?", (security_scheme_id, name)):
        raise Conflict(f"scheme {security_scheme_id} already has a level named {name!r}")
    lid = ctx.new_id("SL")
    ctx.conn.execute("INSERT INTO security_levels VALUES (?,?,?,?)", (lid, security_scheme_id, name, group_id))
    return {"security_level_id": lid, "security_scheme_id": security_scheme_id, "name": name, "group_id": group_id}


@tool(mode="write", permission="administer", entity="project", operation="update")
def apply_security_scheme(ctx: ToolContext, project_id: str, security_scheme_id: str) -> dict[str, Any]:
    """Apply an issue security scheme to a project.

    Args:
        project_id: The project key, e.g. PAY.
        security_scheme_id: The scheme id, e.g. ISS-21.
    """
    project = _project(ctx, project_id)
    if project["archived"]:
        raise PolicyViolation(f"project {project_id} is archived")
    fetch(ctx, "security_schemes", security_scheme_id, "security scheme")
    if project["security_scheme_id"] is not None:
        raise Conflict(f"project {project_id} already has scheme {project['security_scheme_id']} applied")
    ctx.conn.execute("UPDATE projects SET security_scheme_id=? WHERE id=?", (security_scheme_id, project_id))
    return {"project_id": project_id, "security_scheme_id": security_scheme_id}


@tool(mode="write", permission="set_issue_security", entity="issue", operation="update")
def set_issue_security(ctx: ToolContext, issue_id: str, security_level_id: str) -> dict[str, Any]:
    """Restrict an issue to a security level of its project's applied issue security scheme.

    Args:
        issue_id: The issue key, e.g. PAY-123.
        security_level_id: The level id, e.g. SL-301.
    """
    issue = _issue(ctx, issue_id)
    project = _writable(ctx, issue)
    level = fetch(ctx, "security_levels", security_level_id, "security level")
    ps = project["permission_scheme_id"]
    if ctx.one("SELECT id FROM permission_grants WHERE permission_scheme_id=? AND permission='set_issue_security'",
               (ps,)) is None:
        raise PolicyViolation(f"permission scheme {ps} of project {project['id']} does not grant set_issue_security")
    if project["security_scheme_id"] is None:
        raise PolicyViolation(f"project {project['id']} has no issue security scheme applied")
    if level["security_scheme_id"] != project["security_scheme_id"]:
        raise PolicyViolation(f"security level {security_level_id} is not defined in scheme "
                              f"{project['security_scheme_id']} applied to project {project['id']}")
    ctx.conn.execute("UPDATE issues SET security_level_id=?, updated=? WHERE id=?",
                     (security_level_id, ctx.today(), issue_id))
    return {"issue_id": issue_id, "security_level_id": security_level_id}


@tool(mode="write", permission="manage_versions", irreversible=True, entity="version", operation="update")
def release_version(ctx: ToolContext, version_id: str, release_date: str) -> dict[str, Any]:
    """Release (ship) a version; refused while open issues block its issues.

    Args:
        version_id: The version id, e.g. VER-201.
        release_date: Release date as YYYY-MM-DD.
    """
    if not _ISO_DATE.match(release_date):
        raise InvalidArgument(f"release_date {release_date!r} is not a YYYY-MM-DD date")
    version = fetch(ctx, "versions", version_id, "version")
    if version["status"] != "unreleased":
        raise PolicyViolation(f"version {version_id} is {version['status']}, not unreleased")
    blockers = _blockers(ctx, version_id)
    if blockers:
        keys = ", ".join(sorted({b["issue_id"] for b in blockers}))
        raise PolicyViolation(f"version {version_id} cannot ship: open blockers {keys}")
    ctx.conn.execute("UPDATE versions SET status='released', release_date=? WHERE id=?", (release_date, version_id))
    return {"version_id": version_id, "status": "released", "release_date": release_date}
