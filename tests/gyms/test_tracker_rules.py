import sqlite3
from typing import Any

import pytest

from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.core.results import ToolResult
from arena.gyms.tracker import DOMAIN

PACK = build_pack(DOMAIN, seed=0, knobs={"tasks_per_template": 2})
ADMIN_TASK = "add_user_to_group-01"


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(PACK.state_db)
    return conn


@pytest.fixture
def gym() -> Any:
    with Gym(PACK, DOMAIN) as g:
        assert g.pack.task(ADMIN_TASK).persona.role == "site_admin"
        assert not g.pack.task(ADMIN_TASK).faults
        g.reset(ADMIN_TASK)
        yield g


def _one(db: sqlite3.Connection, sql: str, *params: Any) -> Any:
    row = db.execute(sql, params).fetchone()
    assert row is not None, sql
    return row


def _err(result: ToolResult, kind: str, *needles: str) -> None:
    assert not result.ok
    assert result.error is not None and result.error.kind == kind, result
    for needle in needles:
        assert needle in result.error.message


def _chain_project(db: sqlite3.Connection, granted: bool, applied: bool) -> tuple[str, str, str, str]:
    """(project, permission scheme, own security scheme, an open unrestricted issue)."""
    for key, ps, applied_scheme in db.execute(
            "SELECT id, permission_scheme_id, security_scheme_id FROM projects WHERE archived = 0 ORDER BY id"):
        has_grant = db.execute("SELECT COUNT(*) FROM permission_grants WHERE permission_scheme_id = ? "
                               "AND permission = 'set_issue_security'", (ps,)).fetchone()[0] > 0
        if has_grant == granted and (applied_scheme is not None) == applied:
            scheme = _one(db, "SELECT id FROM security_schemes WHERE name = ?", f"{key} Issue Security")[0]
            issue = _one(db, "SELECT id FROM issues WHERE project_id = ? AND security_level_id IS NULL "
                             "AND status <> 'Done' AND parent_id IS NULL ORDER BY id", key)[0]
            return key, ps, scheme, issue
    raise LookupError(f"no project with granted={granted} applied={applied}")


def _admin_group(db: sqlite3.Connection, key: str) -> str:
    return str(_one(db, "SELECT admin_group_id FROM projects WHERE id = ?", key)[0])


def test_chain_refuses_without_grant_and_changes_nothing(gym: Gym, db: sqlite3.Connection) -> None:
    key, ps, scheme, issue = _chain_project(db, granted=False, applied=True)
    level = _one(db, "SELECT id FROM security_levels WHERE security_scheme_id = ?", scheme)[0]
    _err(gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}), "policy",
         ps, "does not grant set_issue_security")
    assert gym.changed_rows() == 0
    assert gym.call_tool("grant_permission", {"permission_scheme_id": ps, "permission": "set_issue_security",
                                              "group_id": _admin_group(db, key)}).ok
    assert gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}).ok
    assert gym.call_tool("get_issue", {"issue_id": issue}).output["security_level_id"] == level


def test_chain_refuses_without_applied_scheme(gym: Gym, db: sqlite3.Connection) -> None:
    key, ps, scheme, issue = _chain_project(db, granted=False, applied=False)
    level = _one(db, "SELECT id FROM security_levels WHERE security_scheme_id = ?", scheme)[0]
    _err(gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}), "policy",
         "does not grant")
    assert gym.changed_rows() == 0
    assert gym.call_tool("grant_permission", {"permission_scheme_id": ps, "permission": "set_issue_security",
                                              "group_id": _admin_group(db, key)}).ok
    before = gym.changed_rows()
    _err(gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}), "policy",
         f"project {key} has no issue security scheme applied")
    assert gym.changed_rows() == before
    assert gym.call_tool("apply_security_scheme", {"project_id": key, "security_scheme_id": scheme}).ok
    assert gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}).ok


def test_chain_refuses_level_outside_applied_scheme(gym: Gym, db: sqlite3.Connection) -> None:
    key, _, scheme, issue = _chain_project(db, granted=True, applied=True)
    foreign = _one(db, "SELECT id FROM security_levels WHERE security_scheme_id <> ? ORDER BY id", scheme)[0]
    _err(gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": foreign}), "policy",
         foreign, "is not defined in scheme", scheme)
    _err(gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": "SL-999999"}), "not_found")
    assert gym.changed_rows() == 0
    group = _one(db, "SELECT id FROM groups WHERE name = ?", "qa-guild")[0]
    created = gym.call_tool("create_security_level", {"security_scheme_id": scheme, "name": "qa-guild only",
                                                      "group_id": group})
    assert created.ok
    level = created.output["security_level_id"]
    assert gym.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": level}).ok


def test_chain_tool_needs_the_runtime_permission(db: sqlite3.Connection) -> None:
    task = next(t for t in PACK.tasks if t.persona.role == "developer" and not t.faults)
    with Gym(PACK, DOMAIN) as g:
        g.reset(task.id)
        _, _, _, issue = _chain_project(db, granted=True, applied=True)
        _err(g.call_tool("set_issue_security", {"issue_id": issue, "security_level_id": "SL-301"}), "permission",
             "set_issue_security")
        assert g.changed_rows() == 0


def _issue_in(db: sqlite3.Connection, workflow: str, status: str, extra: str = "") -> str:
    return str(_one(db, "SELECT i.id FROM issues i JOIN projects p ON p.id = i.project_id WHERE p.archived = 0 "
                        f"AND p.workflow_id = ? AND i.status = ? {extra} ORDER BY i.id", workflow, status)[0])


def test_transitions_follow_the_workflow(gym: Gym, db: sqlite3.Connection) -> None:
    issue = _issue_in(db, "WF-1", "To Do", "AND NOT EXISTS (SELECT 1 FROM issues s WHERE s.parent_id = i.id)")
    _err(gym.call_tool("transition_issue", {"issue_id": issue, "to_status": "Done"}), "policy",
         "WF-1", "'To Do'", "'Done'")
    _err(gym.call_tool("transition_issue", {"issue_id": issue, "to_status": "Closed"}), "validation", "Closed")
    assert gym.changed_rows() == 0
    for status in ("In Progress", "In Review", "Done"):
        assert gym.call_tool("transition_issue", {"issue_id": issue, "to_status": status}).ok
    assert gym.call_tool("get_issue", {"issue_id": issue}).output["status"] == "Done"


def test_parent_with_open_subtasks_cannot_close(gym: Gym, db: sqlite3.Connection) -> None:
    parent = _issue_in(db, "WF-1", "In Review",
                       "AND EXISTS (SELECT 1 FROM issues s WHERE s.parent_id = i.id AND s.status <> 'Done')")
    _err(gym.call_tool("transition_issue", {"issue_id": parent, "to_status": "Done"}), "policy", "open sub-tasks")
    assert gym.changed_rows() == 0


def test_archived_projects_are_read_only(gym: Gym, db: sqlite3.Connection) -> None:
    issue = _one(db, "SELECT i.id FROM issues i JOIN projects p ON p.id = i.project_id WHERE p.archived = 1")[0]
    assert gym.call_tool("get_issue", {"issue_id": issue}).ok
    _err(gym.call_tool("transition_issue", {"issue_id": issue, "to_status": "To Do"}), "policy", "archived")
    _err(gym.call_tool("add_comment", {"issue_id": issue, "body": "ping"}), "policy", "archived")
    assert gym.changed_rows() == 0


def _versions(db: sqlite3.Connection, blocked: bool) -> str:
    for (vid,) in db.execute("SELECT v.id FROM versions v JOIN projects p ON p.id = v.project_id "
                             "WHERE v.status = 'unreleased' AND p.archived = 0 ORDER BY v.id"):
        n = db.execute("SELECT COUNT(*) FROM issues i JOIN issue_links l ON l.blocked_issue_id = i.id "
                       "JOIN issues b ON b.id = l.issue_id WHERE i.fix_version_id = ? AND b.status <> 'Done'",
                       (vid,)).fetchone()[0]
        if bool(n) == blocked:
            return str(vid)
    raise LookupError("no such version")


def test_release_refused_while_blockers_are_open(gym: Gym, db: sqlite3.Connection) -> None:
    vid = _versions(db, blocked=True)
    check = gym.call_tool("check_release_blockers", {"version_id": vid})
    assert check.ok and check.output["can_release"] is False and check.output["blockers"]
    blocker = check.output["blockers"][0]["issue_id"]
    _err(gym.call_tool("release_version", {"version_id": vid, "release_date": "2025-06-10"}), "policy",
         vid, blocker)
    assert gym.changed_rows() == 0


def test_release_needs_iso_dates_and_ships_once(gym: Gym, db: sqlite3.Connection) -> None:
    vid = _versions(db, blocked=False)
    _err(gym.call_tool("release_version", {"version_id": vid, "release_date": "06/10/2025"}), "validation",
         "06/10/2025")
    assert gym.changed_rows() == 0
    assert gym.call_tool("check_release_blockers", {"version_id": vid}).output["can_release"] is True
    assert gym.call_tool("release_version", {"version_id": vid, "release_date": "2025-06-10"}).ok
    _err(gym.call_tool("release_version", {"version_id": vid, "release_date": "2025-06-11"}), "policy", "released")


def test_search_never_matches_keys_and_misses_unindexed_subtasks(gym: Gym, db: sqlite3.Connection) -> None:
    key, summary = _one(db, "SELECT id, summary FROM issues WHERE id NOT IN (SELECT id FROM search_index) ORDER BY id")
    assert gym.call_tool("search_issues", {"query": key}).output == []
    hits = gym.call_tool("search_issues", {"query": summary}).output
    assert key not in [h["id"] for h in hits]
    assert gym.call_tool("get_issue", {"issue_id": key}).output["summary"] == summary


def test_search_summaries_can_be_stale(gym: Gym, db: sqlite3.Connection) -> None:
    key, summary, status, cached = _one(
        db, "SELECT i.id, i.summary, i.status, json_extract(s.summary, '$.status') AS cached FROM issues i "
            "JOIN search_index s ON s.id = i.id WHERE cached <> i.status ORDER BY i.id")
    hit = next(h for h in gym.call_tool("search_issues", {"query": summary}).output if h["id"] == key)
    assert hit["status"] == cached != status
    assert gym.call_tool("get_issue", {"issue_id": key}).output["status"] == status


def test_group_membership_rules(gym: Gym, db: sqlite3.Connection) -> None:
    user, group = _one(db, "SELECT user_id, group_id FROM group_members ORDER BY id")
    name = _one(db, "SELECT name FROM groups WHERE id = ?", group)[0]
    _err(gym.call_tool("add_user_to_group", {"group_id": group, "user_id": user}), "policy", "already a member", name)
    inactive = _one(db, "SELECT id FROM users WHERE active = 0")[0]
    _err(gym.call_tool("add_user_to_group", {"group_id": group, "user_id": inactive}), "policy", "deactivated")
    assert gym.changed_rows() == 0
    assert gym.call_tool("remove_user_from_group", {"group_id": group, "user_id": user}).ok
    groups = [g["group_id"] for g in gym.call_tool("get_user", {"user_id": user}).output["groups"]]
    assert group not in groups


def _trace_of(task_id: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    with Gym(PACK, DOMAIN) as g:
        g.reset(task_id, seed=3)
        for name, args in calls:
            g.call_tool(name, args)
        return [s.model_dump() for s in g.trace]


def test_rate_limit_fires_deterministically() -> None:
    task = PACK.task("bulk_assign_rate_limited-01")
    bulk = next(s for s in task.gold.steps if s.tool == "bulk_assign")
    calls = [("bulk_assign", bulk.arguments)] * 2
    first = _trace_of(task.id, calls)
    assert first == _trace_of(task.id, calls)
    assert first[0]["error"]["fault"] == "rate_limit" and "retry after 2s" in first[0]["error"]["message"]
    assert first[1]["ok"]


def test_timeout_fires_on_the_named_call() -> None:
    task = PACK.task("release_timeout-01")
    check = next(s for s in task.gold.steps if s.tool == "check_release_blockers")
    trace = _trace_of(task.id, [("check_release_blockers", check.arguments)] * 2)
    assert trace[0]["error"]["fault"] == "timeout" and trace[0]["error"]["retryable"]
    assert trace[1]["ok"]


def test_data_conflict_holds_until_the_record_is_fetched_again() -> None:
    task = PACK.task("transition_conflict-01")
    move = next(s for s in task.gold.steps if s.tool == "transition_issue")
    issue = move.arguments["issue_id"]
    calls = [("transition_issue", move.arguments), ("transition_issue", move.arguments),
             ("get_issue", {"issue_id": issue}), ("transition_issue", move.arguments)]
    trace = _trace_of(task.id, calls)
    assert trace == _trace_of(task.id, calls)
    assert trace[0]["error"]["fault"] == "data_conflict"
    assert trace[1]["error"]["kind"] == "conflict"
    assert trace[2]["ok"] and trace[3]["ok"]


def test_keys_must_be_upper_case_codes(gym: Gym) -> None:
    _err(gym.call_tool("get_issue", {"issue_id": "pay-101"}), "validation", "pay-101")
    _err(gym.call_tool("get_project", {"project_id": "pay"}), "validation", "'pay'")
    _err(gym.call_tool("get_issue", {"issue_id": "PAY-1"}), "not_found", "PAY-1")
    assert gym.call_tool("get_project", {"project_id": "PAY"}).ok
