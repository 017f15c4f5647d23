"""Task templates of the tracker gym and the task-set builder that honours the knobs."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from arena.core.domain import FaultSpec, Knobs
from arena.core.results import FaultKind
from arena.core.task import EntityRef, FormattedValue, IntendedCall, Intent, StateAssertion, Task, WriteScope
from arena.gyms.tracker._rules import DONE
from arena.gyms.tracker._taskkit import (
    FAULT_TAGS,
    MONTHS,
    Draft,
    Template,
    WorldView,
    call,
    finish,
    inject_fault,
    is_legacy,
    reply_check,
    step,
    to_iso,
    trace,
    writes,
)
from arena.gyms.tracker.world import CLOCK_START, knob_float

TASK_DEFAULTS: dict[str, Any] = {
    "tasks_per_template": 5,
    "heldout_fraction": 0.4,
    "focus_tags": [],
    "fault_rate": 0.0,
    "fault_kinds": ["timeout", "rate_limit", "data_conflict"],
    "prerequisite_depth": 3,
}
ALL_TAGS = ("id_given_search_misses", "near_duplicate", "prerequisite", "legacy_format", "stale_record",
            "fault_timeout", "fault_rate_limit", "fault_conflict", "side_effect_trap", "leak_trap")
FAULT_KINDS: tuple[FaultKind, ...] = ("timeout", "rate_limit", "data_conflict")
ISSUE_COLS = ["assignee_id", "updated"]
TODAY = CLOCK_START[:10]
"""The episode clock's date, the release date a requester means by "today"."""


def _issue_ref(key: str, name: str = "issue") -> EntityRef:
    return EntityRef(name=name, entity="issue", mention=key, mention_kind="id")


def _derived_ref(name: str, entity: str, path: str) -> EntityRef:
    """A reference whose id is read from an earlier ref's fetched record (``path`` is ``"$ref.field"``)."""
    return EntityRef(name=name, entity=entity, mention=path, mention_kind="id")


def _workflow_refs(key: str) -> list[EntityRef]:
    """The issue ``key``, its project and the project's workflow, which every move is checked against."""
    return [_issue_ref(key), _derived_ref("project", "project", "$issue.project_id"),
            _derived_ref("workflow", "workflow", "$project.workflow_id")]


def _blocker_refs(blockers: list[dict[str, Any]]) -> list[EntityRef]:
    """One reference per issue blocking ``$issue``, read from its ``is_blocked_by`` list, so each is fetched."""
    return [_derived_ref(f"blocker_{k}", "issue", f"$issue.is_blocked_by.{k}") for k in range(len(blockers))]


def _user_ref(
    view: WorldView, user: dict[str, Any], index: int, name: str = "user"
) -> tuple[EntityRef, str, list[str]]:
    """A text reference to ``user`` with an email or team hint; returns (ref, prompt phrase, tags)."""
    dup = view.name_count[user["display_name"]] > 1
    if index % 2 == 0:
        hint, phrase = {"email": user["email"]}, f"{user['display_name']} ({user['email']})"
    else:
        hint, phrase = {"team": user["team"]}, f"{user['display_name']} from the {user['team']} team"
    ref = EntityRef(name=name, entity="user", mention=user["display_name"], mention_kind="text", hint=hint)
    return ref, phrase, ["near_duplicate"] if dup else []


def _pick(pool: list[Any], rng: random.Random, index: int) -> Any:
    """Return entry ``index`` of a shuffled ``pool``.

    Every task of a template starts from the same Random state, so the first picks of
    tasks 0, 1, 2 ... are distinct entries.
    """
    if not pool:
        return None
    order = list(pool)
    rng.shuffle(order)
    return order[index % len(order)]


def _prefer(pool: list[Any], good: list[Any]) -> list[Any]:
    return good if good else pool


# ----------------------------------------------------------------------------- information retrieval


def _issue_status(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("top_level", lambda: [r for r in view.issues if view.active_issue(r) and r["parent_id"] is None])
    issue = _pick(_prefer(pool, [r for r in pool if r["index_status"] != r["status"]]), rng, i)
    if issue is None:
        return None
    key, status = issue["id"], issue["status"]
    assignee = view.user[issue["assignee_id"]]["display_name"]
    reply = f"{key} is currently {status} and assigned to {assignee}."
    tags = ["stale_record"] if issue["index_status"] != status else []
    return Draft(
        prompt=f"What is the current status of {key}, and who is it assigned to?",
        role="developer",
        intent=Intent(goal="report_issue_status", refs=[_issue_ref(key)],
                      report=["$issue.status", "$issue.assignee_name"]),
        steps=[step("get_issue", issue_id=key)],
        reply=reply,
        assertions=[
            trace("the issue is fetched by key", [call("get_issue", issue_id=key)]),
            writes(),
            reply_check("states the current status and assignee", reply, [[status], [assignee]]),
        ],
        tags=tags,
    )


def _list_open_subtasks(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("parents_open", lambda: [
        r for r in view.issues if view.active_issue(r) and len(view.subtasks.get(r["id"], [])) >= 2
        and view.open_subtasks(r["id"])])
    good = [r for r in pool if any(not s["indexed"] or s["index_status"] != s["status"]
                                   for s in view.subtasks[r["id"]])]
    parent = _pick(_prefer(pool, good), rng, i)
    if parent is None:
        return None
    key = parent["id"]
    subs = view.subtasks[key]
    open_subs = [s for s in subs if s["status"] != DONE]
    done = [s["id"] for s in subs if s["status"] == DONE]
    listing = "; ".join(f"{s['id']} ({s['status']})" for s in open_subs)
    reply = f"Open sub-tasks of {key}: {listing}."
    return Draft(
        prompt=f"Which sub-tasks of {key} are still open? Give me their keys and current statuses.",
        role="developer",
        intent=Intent(goal="list_open_subtasks", refs=[_issue_ref(key, "parent")],
                      calls=[IntendedCall(tool="list_subtasks", arguments={"issue_id": "$parent"})],
                      report=["$parent.open_subtasks"]),
        steps=[step("get_issue", issue_id=key), step("list_subtasks", issue_id=key)],
        reply=reply,
        assertions=[
            trace("the sub-tasks are listed from the tracker", [call("list_subtasks", issue_id=key)]),
            writes(),
            reply_check("lists every open sub-task and no closed one", reply,
                        [[s["id"]] for s in open_subs] + [[s["status"]] for s in open_subs], done),
        ],
        tags=["id_given_search_misses", "stale_record"] if good else [],
    )


def _dependency_check(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("openly_blocked", lambda: [
        r for r in view.issues if view.active_issue(r) and r["status"] != DONE
        and any(view.issue[b]["status"] != DONE for b in view.blockers.get(r["id"], []))])
    good = [r for r in pool if any(view.issue[b]["index_status"] != view.issue[b]["status"]
                                   for b in view.blockers[r["id"]])]
    issue = _pick(_prefer(pool, good), rng, i)
    if issue is None:
        return None
    key = issue["id"]
    blockers = [view.issue[b] for b in view.blockers[key]]
    open_b = [b for b in blockers if b["status"] != DONE]
    closed = [b["id"] for b in blockers if b["status"] == DONE]
    reply = f"Yes. {key} is blocked by open issues: " + "; ".join(f"{b['id']} ({b['status']})" for b in open_b) + "."
    return Draft(
        prompt=f"Is {key} blocked by anything that is still open? List the open blockers with their status.",
        role="developer",
        intent=Intent(goal="check_dependencies", refs=[_issue_ref(key), *_blocker_refs(blockers)],
                      report=["$issue.open_blockers"]),
        steps=[step("get_issue", issue_id=key), *[step("get_issue", issue_id=b["id"]) for b in blockers]],
        reply=reply,
        assertions=[
            trace("the issue and each blocker are fetched",
                  [call("get_issue", issue_id=key), *[call("get_issue", issue_id=b["id"]) for b in open_b]]),
            writes(),
            reply_check("names every open blocker and no resolved one", reply, [[b["id"]] for b in open_b], closed),
        ],
        tags=["stale_record"] if good else [],
    )


# ----------------------------------------------------------------------------- workflow


def _transition_pool(view: WorldView) -> list[tuple[dict[str, Any], str]]:
    out = []
    for r in view.issues:
        if not view.active_issue(r):
            continue
        for target in view.next_statuses(r):
            if target == DONE and view.open_subtasks(r["id"]):
                continue
            out.append((r, target))
    return out


def _transition(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("transitions", lambda: _transition_pool(view))
    picked = _pick(_prefer(pool, [p for p in pool if p[0]["index_status"] != p[0]["status"]]), rng, i)
    if picked is None:
        return None
    issue, target = picked
    key, wf = issue["id"], view.project[issue["project_id"]]["workflow_id"]
    reply = f"{key} moved from {issue['status']} to {target}."
    return Draft(
        prompt=f"Please move {key} to {target}.",
        role="developer",
        intent=Intent(goal="transition_issue", refs=_workflow_refs(key),
                      calls=[IntendedCall(tool="transition_issue", arguments={"issue_id": "$issue",
                                                                              "to_status": target})],
                      report=["$transition_issue.status"]),
        steps=[step("get_issue", issue_id=key), step("get_project", project_id=issue["project_id"]),
               step("get_workflow", workflow_id=wf), step("list_subtasks", issue_id=key),
               step("transition_issue", issue_id=key, to_status=target)],
        reply=reply,
        assertions=[
            StateAssertion(description="the issue has the requested status",
                           sql=f"SELECT status FROM issues WHERE id='{key}'", expected=[[target]]),
            trace("the issue is read before it moves",
                  [call("get_issue", issue_id=key), call("transition_issue", issue_id=key, to_status=target)],
                  [(0, 1)]),
            writes(WriteScope(table="issues", ids=[key], columns=["status", "updated"])),
            reply_check("confirms the new status", reply, [[target]]),
        ],
        tags=["stale_record"] if issue["index_status"] != issue["status"] else [],
    )


def _refusable(view: WorldView) -> list[tuple[dict[str, Any], str]]:
    pool = []
    for r in view.issues:
        if view.active_issue(r) and r["parent_id"] is None:
            nxt = view.next_statuses(r)
            pool += [(r, t) for t in ("In Review", DONE) if t != r["status"] and t not in nxt]
    return pool


def _transition_refused(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("refusable", lambda: _refusable(view))
    picked = _pick(pool, rng, i)
    if picked is None:
        return None
    issue, target = picked
    key, status = issue["id"], issue["status"]
    wf = view.project[issue["project_id"]]["workflow_id"]
    nxt = view.next_statuses(issue)
    reply = (f"{key} is {status}; its workflow does not allow moving it straight to {target}. "
             f"From {status} it can move to: {', '.join(nxt)}. I left it unchanged.")
    return Draft(
        prompt=f"Move {key} straight to {target}, please.",
        role="developer",
        intent=Intent(goal="transition_issue", refs=_workflow_refs(key),
                      calls=[IntendedCall(tool="transition_issue", arguments={"issue_id": "$issue",
                                                                              "to_status": target})],
                      report=["$transition_issue.status"]),
        steps=[step("get_issue", issue_id=key), step("get_project", project_id=issue["project_id"]),
               step("get_workflow", workflow_id=wf), step("list_subtasks", issue_id=key)],
        reply=reply,
        assertions=[
            StateAssertion(description="the issue keeps its status",
                           sql=f"SELECT status FROM issues WHERE id='{key}'", expected=[[status]]),
            trace("the workflow is checked and the issue is not moved", [call("get_workflow", workflow_id=wf)],
                  forbidden=[call("transition_issue", issue_id=key)]),
            writes(),
            reply_check("explains the allowed next statuses", reply, [[status], *[[s] for s in nxt]]),
        ],
    )


def _close_parent(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("closable_parents", lambda: [
        r for r in view.issues if view.active_issue(r) and DONE in view.next_statuses(r)
        and view.open_subtasks(r["id"])])
    parent = _pick(pool, rng, i)
    if parent is None:
        return None
    key = parent["id"]
    subs = view.subtasks[key]
    open_subs = view.open_subtasks(key)
    ids = sorted([key, *(s["id"] for s in subs)])
    expected = [[x, view.issue[x]["status"]] for x in ids]
    reply = (f"{key} cannot be closed yet: these sub-tasks are still open: "
             + ", ".join(f"{s['id']} ({s['status']})" for s in open_subs) + ". Nothing was changed.")
    in_list = ",".join(f"'{x}'" for x in ids)
    return Draft(
        prompt=f"{key} is finished, please close it (move it to Done).",
        role="developer",
        intent=Intent(goal="close_issue", refs=_workflow_refs(key),
                      calls=[IntendedCall(tool="transition_issue", arguments={"issue_id": "$issue",
                                                                              "to_status": DONE})],
                      report=["$transition_issue.status"]),
        steps=[step("get_issue", issue_id=key), step("get_project", project_id=parent["project_id"]),
               step("get_workflow", workflow_id=view.project[parent["project_id"]]["workflow_id"]),
               step("list_subtasks", issue_id=key)],
        reply=reply,
        assertions=[
            StateAssertion(description="neither the issue nor its sub-tasks change status",
                           sql=f"SELECT id, status FROM issues WHERE id IN ({in_list}) ORDER BY id",
                           expected=expected),
            trace("the sub-tasks are checked and nothing is transitioned", [call("list_subtasks", issue_id=key)],
                  forbidden=[call("transition_issue")]),
            writes(),
            reply_check("names the open sub-tasks", reply, [[s["id"]] for s in open_subs]),
        ],
    )


# ----------------------------------------------------------------------------- assignment


def _assignable_users(view: WorldView, rng: random.Random) -> list[dict[str, Any]]:
    return view.pick_users(rng)


def _subtask_by_key(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("open_subtasks", lambda: [
        r for r in view.issues if view.active_issue(r) and r["parent_id"] and r["status"] != DONE])
    issue = _pick(_prefer(pool, [r for r in pool if not r["indexed"]]), rng, i)
    if issue is None:
        return None
    user = next(u for u in _assignable_users(view, rng) if u["id"] != issue["assignee_id"])
    key, uid, name = issue["id"], user["id"], user["display_name"]
    ref, phrase, tags = _user_ref(view, user, i, "assignee")
    reply = f"Assigned sub-task {key} to {name} ({user['email']})."
    return Draft(
        prompt=f"Please assign sub-task {key} (\"{issue['summary']}\") to {phrase}.",
        role="developer",
        intent=Intent(goal="assign_issue", refs=[_issue_ref(key), ref],
                      calls=[IntendedCall(tool="assign_issue", arguments={"issue_id": "$issue",
                                                                          "user_id": "$assignee"})],
                      report=["$assignee.display_name"]),
        steps=[step("get_issue", issue_id=key), step("search_users", query=name), step("get_user", user_id=uid),
               step("assign_issue", issue_id=key, user_id=uid)],
        reply=reply,
        assertions=[
            StateAssertion(description="the sub-task is assigned to the named user",
                           sql=f"SELECT assignee_id FROM issues WHERE id='{key}'", expected=[[uid]]),
            trace("the issue is fetched by key and the user confirmed before assigning",
                  [call("get_issue", issue_id=key), call("get_user", user_id=uid),
                   call("assign_issue", issue_id=key, user_id=uid)], [(0, 2), (1, 2)]),
            writes(WriteScope(table="issues", ids=[key], columns=ISSUE_COLS)),
            reply_check("confirms the assignment", reply, [[key], [name]]),
        ],
        tags=(["id_given_search_misses"] if not issue["indexed"] else []) + tags,
    )


def _bulk_assign(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("bulk_parents", lambda: [
        r for r in view.issues if view.active_issue(r) and len(view.open_subtasks(r["id"])) >= 2])
    good = [r for r in pool if len(view.open_subtasks(r["id"])) < len(view.subtasks[r["id"]])]
    parent = _pick(_prefer(pool, good), rng, i)
    if parent is None:
        return None
    user = _assignable_users(view, rng)[0]
    key, uid, name = parent["id"], user["id"], user["display_name"]
    ref, phrase, tags = _user_ref(view, user, i, "assignee")
    subs = view.subtasks[key]
    open_ids = [s["id"] for s in subs if s["status"] != DONE]
    expected = sorted([[s["id"], uid if s["status"] != DONE else s["assignee_id"]] for s in subs])
    reply = f"Assigned the open sub-tasks of {key} ({', '.join(open_ids)}) to {name}."
    return Draft(
        prompt=f"Assign all open sub-tasks of {key} to {phrase}.",
        role="project_admin",
        intent=Intent(goal="bulk_assign_subtasks", refs=[_issue_ref(key, "parent"), ref],
                      calls=[IntendedCall(tool="bulk_assign", arguments={"issue_ids": "$parent.open_subtask_ids",
                                                                         "user_id": "$assignee"})],
                      report=["$assignee.display_name", "$bulk_assign.assigned"]),
        steps=[step("get_issue", issue_id=key), step("list_subtasks", issue_id=key), step("search_users", query=name),
               step("get_user", user_id=uid), step("bulk_assign", issue_ids=open_ids, user_id=uid)],
        reply=reply,
        assertions=[
            StateAssertion(description="open sub-tasks go to the user; closed ones keep their assignee",
                           sql=f"SELECT id, assignee_id FROM issues WHERE parent_id='{key}' ORDER BY id",
                           expected=expected),
            trace("sub-tasks are listed and the user confirmed before the bulk change",
                  [call("list_subtasks", issue_id=key), call("get_user", user_id=uid),
                   call("bulk_assign", user_id=uid)], [(0, 2), (1, 2)]),
            writes(WriteScope(table="issues", ids=open_ids, columns=ISSUE_COLS)),
            reply_check("names the assignee and the sub-tasks", reply, [[name], *[[x] for x in open_ids]]),
        ],
        tags=tags + (["side_effect_trap"] if len(open_ids) < len(subs) else []),
    )


# ----------------------------------------------------------------------------- access management


def _global_groups(view: WorldView) -> list[dict[str, Any]]:
    return [g for g in view.groups if g["project_id"] is None]


def _add_to_group(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    user = view.pick_users(rng)[i % 10]
    groups = [g for g in _global_groups(view) if g["id"] not in view.user_groups.get(user["id"], [])]
    group = _pick(groups, rng, i)
    if group is None:
        return None
    uid, name, gid, gname = user["id"], user["display_name"], group["id"], group["name"]
    ref, phrase, tags = _user_ref(view, user, i)
    twin = view.twin(user)
    watched = sorted([uid] + ([twin["id"]] if twin else []))
    expected = [[u] for u in watched if u == uid or gid in view.user_groups.get(u, [])]
    reply = f"Added {name} ({user['email']}) to the {gname} group."
    return Draft(
        prompt=f"Please add {phrase} to the {gname} group.",
        role="site_admin",
        intent=Intent(goal="add_user_to_group", refs=[ref, EntityRef(name="group", entity="group", mention=gname,
                                                                     mention_kind="text")],
                      calls=[IntendedCall(tool="add_user_to_group", arguments={"group_id": "$group",
                                                                               "user_id": "$user"})],
                      report=["$user.display_name", "$group.name"]),
        steps=[step("search_users", query=name), step("get_user", user_id=uid), step("search_groups", query=gname),
               step("get_group", group_id=gid), step("add_user_to_group", group_id=gid, user_id=uid)],
        reply=reply,
        assertions=[
            StateAssertion(description="the named user (and not a namesake) is in the group",
                           sql=f"SELECT user_id FROM group_members WHERE group_id='{gid}' AND user_id IN "
                               f"({','.join(repr(u) for u in watched)}) ORDER BY user_id", expected=expected),
            trace("current memberships are verified before adding",
                  [call("get_user", user_id=uid), call("add_user_to_group", group_id=gid, user_id=uid)], [(0, 1)]),
            writes(WriteScope(table="group_members", insert=True)),
            reply_check("confirms the membership", reply, [[name], [gname]]),
        ],
        tags=tags,
    )


def _move_between_groups(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    globals_ = _global_groups(view)
    gids = {g["id"] for g in globals_}
    pool = [u for u in view.pick_users(rng) if len(view.user_groups.get(u["id"], [])) >= 2
            and any(g in gids for g in view.user_groups[u["id"]])]
    user = _pick(pool[:40], rng, i)
    if user is None:
        return None
    uid, name = user["id"], user["display_name"]
    current = view.user_groups[uid]
    src = view.group[next(g for g in current if g in gids)]
    dst = _pick([g for g in globals_ if g["id"] not in current], rng, i)
    membership = next(m["id"] for m in view.members if m["user_id"] == uid and m["group_id"] == src["id"])
    final = sorted([g for g in current if g != src["id"]] + [dst["id"]])
    ref, phrase, tags = _user_ref(view, user, i)
    reply = f"{name} was removed from {src['name']} and added to {dst['name']}; other groups are unchanged."
    return Draft(
        prompt=f"{phrase} is moving from {src['name']} to {dst['name']}. Please update their group memberships.",
        role="site_admin",
        intent=Intent(goal="move_user_between_groups",
                      refs=[ref, EntityRef(name="from_group", entity="group", mention=src["name"], mention_kind="text"),
                            EntityRef(name="to_group", entity="group", mention=dst["name"], mention_kind="text")],
                      calls=[IntendedCall(tool="remove_user_from_group", arguments={"group_id": "$from_group",
                                                                                    "user_id": "$user"}),
                             IntendedCall(tool="add_user_to_group", arguments={"group_id": "$to_group",
                                                                               "user_id": "$user"})],
                      report=["$user.display_name", "$from_group.name", "$to_group.name"]),
        steps=[step("search_users", query=name), step("get_user", user_id=uid),
               step("search_groups", query=src["name"]), step("search_groups", query=dst["name"]),
               step("remove_user_from_group", group_id=src["id"], user_id=uid),
               step("add_user_to_group", group_id=dst["id"], user_id=uid)],
        reply=reply,
        assertions=[
            StateAssertion(description="only the named membership moved",
                           sql=f"SELECT group_id FROM group_members WHERE user_id='{uid}' ORDER BY group_id",
                           expected=[[g] for g in final]),
            trace("memberships are verified before changing them",
                  [call("get_user", user_id=uid), call("remove_user_from_group", group_id=src["id"], user_id=uid),
                   call("add_user_to_group", group_id=dst["id"], user_id=uid)], [(0, 1), (0, 2)]),
            writes(WriteScope(table="group_members", insert=True),
                   WriteScope(table="group_members", ids=[membership], delete=True)),
            reply_check("confirms both changes", reply, [[src["name"]], [dst["name"]]]),
        ],
        tags=tags,
    )


def _already_member(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    gids = {g["id"] for g in _global_groups(view)}
    pool = [u for u in view.pick_users(rng) if any(g in gids for g in view.user_groups.get(u["id"], []))]
    user = _pick(pool[:40], rng, i)
    if user is None:
        return None
    uid, name = user["id"], user["display_name"]
    group = view.group[next(g for g in view.user_groups[uid] if g in gids)]
    ref, phrase, tags = _user_ref(view, user, i)
    reply = f"{name} is already a member of {group['name']}, so nothing was changed."
    return Draft(
        prompt=f"Can you add {phrase} to {group['name']}?",
        role="site_admin",
        intent=Intent(goal="add_user_to_group",
                      refs=[ref, EntityRef(name="group", entity="group", mention=group["name"], mention_kind="text")],
                      calls=[IntendedCall(tool="add_user_to_group", arguments={"group_id": "$group",
                                                                               "user_id": "$user"})],
                      report=["$user.display_name", "$group.name"]),
        steps=[step("search_users", query=name), step("get_user", user_id=uid)],
        reply=reply,
        assertions=[
            StateAssertion(description="the membership is unchanged",
                           sql=f"SELECT COUNT(*) FROM group_members WHERE user_id='{uid}'",
                           expected=[[len(view.user_groups[uid])]]),
            trace("current memberships are verified", [call("get_user", user_id=uid)]),
            writes(),
            reply_check("says the user is already a member", reply, [["already"], [group["name"]]]),
        ],
        tags=tags,
    )


# ----------------------------------------------------------------------------- releases


def _release_blockers(view: WorldView, vid: str) -> list[str]:
    out: list[str] = []
    for r in view.fix_issues.get(vid, []):
        out += [b for b in view.blockers.get(r["id"], []) if view.issue[b]["status"] != DONE and b not in out]
    return out


def _unreleased(view: WorldView, blocked: bool) -> list[dict[str, Any]]:
    return view.memo(f"unreleased:{blocked}", lambda: [
        v for v in view.versions if v["status"] == "unreleased" and not view.project[v["project_id"]]["archived"]
        and bool(_release_blockers(view, v["id"])) == blocked])


def _legacy_date(iso: str, i: int) -> str:
    year, month, day = iso.split("-")
    return [f"{MONTHS[int(month) - 1]} {int(day)}, {year}", f"{month}/{day}/{year}",
            f"{int(day)} {MONTHS[int(month) - 1]} {year}"][i % 3]


def _release(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    version = _pick(_unreleased(view, blocked=False), rng, i)
    if version is None:
        return None
    vid, vname = version["id"], version["name"]
    iso = f"2025-06-{2 + (7 * i + rng.randrange(20)) % 20:02d}"
    raw = _legacy_date(iso, i)
    reply = f"Released {vname} with release date {iso}; no open issues block it."
    return Draft(
        prompt=f"Please release version {vname} with the release date {raw}.",
        role="project_admin",
        intent=Intent(goal="release_version",
                      refs=[EntityRef(name="version", entity="version", mention=vname, mention_kind="text",
                                      hint={"project_id": version["project_id"]})],
                      calls=[IntendedCall(tool="release_version", arguments={
                          "version_id": "$version", "release_date": FormattedValue(format="date", raw=raw)})],
                      report=["$version.name", "$release_version.release_date"]),
        steps=[step("search_versions", query=vname), step("get_version", version_id=vid),
               step("check_release_blockers", version_id=vid),
               step("release_version", version_id=vid, release_date=iso)],
        reply=reply,
        assertions=[
            StateAssertion(description="the version is released on the requested date",
                           sql=f"SELECT status, release_date FROM versions WHERE id='{vid}'",
                           expected=[["released", iso]]),
            trace("blockers are checked before the release",
                  [call("check_release_blockers", version_id=vid),
                   call("release_version", version_id=vid, release_date=iso)], [(0, 1)]),
            writes(WriteScope(table="versions", ids=[vid], columns=["status", "release_date"])),
            reply_check("confirms the release", reply, [[vname], [iso, raw]]),
        ],
    )


def _release_blocked(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    version = _pick(_unreleased(view, blocked=True), rng, i)
    if version is None:
        return None
    vid, vname = version["id"], version["name"]
    blockers = _release_blockers(view, vid)
    reply = f"{vname} cannot ship yet: open blockers {', '.join(blockers)}. I did not release it."
    return Draft(
        prompt=f"Ship {vname} today, please.",
        role="project_admin",
        intent=Intent(goal="release_version",
                      refs=[EntityRef(name="version", entity="version", mention=vname, mention_kind="text",
                                      hint={"project_id": version["project_id"]})],
                      calls=[IntendedCall(tool="release_version", arguments={"version_id": "$version",
                                                                             "release_date": TODAY})],
                      report=["$version.name", "$release_version.release_date"]),
        steps=[step("search_versions", query=vname), step("get_version", version_id=vid),
               step("check_release_blockers", version_id=vid)],
        reply=reply,
        assertions=[
            StateAssertion(description="the version stays unreleased",
                           sql=f"SELECT status FROM versions WHERE id='{vid}'", expected=[["unreleased"]]),
            trace("blockers are checked and the version is not released",
                  [call("check_release_blockers", version_id=vid)], forbidden=[call("release_version")]),
            writes(),
            reply_check("names the blockers", reply, [[b] for b in blockers]),
        ],
    )


def _release_status(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = [v for v in view.versions if v["status"] == "released"]
    good = [v for v in pool if v["index_status"] != v["status"] or is_legacy(v["release_date"])]
    version = _pick(_prefer(pool, good), rng, i)
    if version is None:
        return None
    vid, vname, raw = version["id"], version["name"], version["release_date"]
    iso = to_iso(raw)
    reply = f"Yes, {vname} has shipped: it was released on {iso}."
    tags = ["stale_record"] if version["index_status"] != "released" else []
    return Draft(
        prompt=f"A customer asks whether {vname} has shipped yet, and on what date. What can I tell them?",
        role="developer",
        intent=Intent(goal="report_release_status",
                      refs=[EntityRef(name="version", entity="version", mention=vname, mention_kind="text")],
                      report=["$version.status", "$version.release_date"]),
        steps=[step("search_versions", query=vname), step("get_version", version_id=vid)],
        reply=reply,
        assertions=[
            trace("the version record is fetched", [call("get_version", version_id=vid)]),
            writes(),
            reply_check("states the release and its date", reply, [["released", "shipped"], [iso, raw]],
                        ["unreleased", "not yet", "not released"], [r"\bVER-\d+"]),
        ],
        tags=tags,
    )


# ----------------------------------------------------------------------------- security and communication


def _restrict(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    max_depth = int(knobs["prerequisite_depth"])
    depth = 1 + i % max_depth
    state = {p["id"]: _chain_state(view, p) for p in view.projects if not p["archived"]}
    projects = [p for p, s in state.items() if s == depth]
    key = _pick(projects, rng, i)
    if key is None:
        return None
    project = view.project[key]
    issue = _pick([r for r in view.issues if r["project_id"] == key and r["parent_id"] is None
                   and r["security_level_id"] is None and r["status"] != DONE], rng, i)
    scheme = next(s for s in view.schemes if s["name"] == f"{key} Issue Security")
    group = view.group_named(f"{key.lower()}-devs" if depth == 3 or i % 2 == 0 else f"{key.lower()}-admins")
    ps, iss, gid, gname = project["permission_scheme_id"], scheme["id"], group["id"], group["name"]
    iid = issue["id"]
    steps = [step("get_issue", issue_id=iid), step("get_project", project_id=key),
             step("get_permission_scheme", permission_scheme_id=ps)]
    required = [call("get_permission_scheme", permission_scheme_id=ps)]
    scopes = [WriteScope(table="issues", ids=[iid], columns=["security_level_id", "updated"])]
    level = next((lv for lv in view.levels if lv["security_scheme_id"] == iss and lv["group_id"] == gid), None)
    steps.append(step("grant_permission", permission_scheme_id=ps, permission="set_issue_security",
                      group_id=project["admin_group_id"]))
    required.append(call("grant_permission", permission_scheme_id=ps, permission="set_issue_security"))
    scopes.append(WriteScope(table="permission_grants", insert=True))
    if depth >= 2:
        steps += [step("search_security_schemes", query=f"{key} Issue Security"),
                  step("apply_security_scheme", project_id=key, security_scheme_id=iss)]
        required.append(call("apply_security_scheme", project_id=key, security_scheme_id=iss))
        scopes.append(WriteScope(table="projects", ids=[key], columns=["security_scheme_id"]))
    steps += [step("get_security_scheme", security_scheme_id=iss), step("search_groups", query=gname)]
    level_name = f"{gname} only"
    if level is None:
        steps.append(step("create_security_level", security_scheme_id=iss, name=level_name, group_id=gid))
        required.append(call("create_security_level", security_scheme_id=iss, group_id=gid))
        scopes.append(WriteScope(table="security_levels", insert=True))
        level_id = f"SL-N{sum(1 for s in steps if s.tool in ('grant_permission', 'create_security_level')):05d}"
    else:
        level_id = level["id"]
    steps.append(step("set_issue_security", issue_id=iid, security_level_id=level_id))
    required.append(call("set_issue_security", issue_id=iid))
    goal = len(required) - 1
    existing = f"$scheme.level_ids.{level_name}"
    created = "$create_security_level.security_level_id"
    reply = f"{iid} is now restricted to the {gname} group."
    return Draft(
        prompt=f"Restrict {iid} so that only the {gname} group can see it, using the {key} Issue Security scheme.",
        role="project_admin",
        intent=Intent(
            goal="restrict_issue",
            refs=[_issue_ref(iid), _derived_ref("project", "project", "$issue.project_id"),
                  EntityRef(name="scheme", entity="security_scheme", mention=f"{key} Issue Security",
                            mention_kind="text", hint={"name": f"{key} Issue Security"}),
                  EntityRef(name="group", entity="group", mention=gname, mention_kind="text", hint={"name": gname}),
                  _derived_ref("admins", "group", "$project.admin_group_id")],
            calls=[IntendedCall(tool="grant_permission", arguments={
                       "permission_scheme_id": "$project.permission_scheme_id", "permission": "set_issue_security",
                       "group_id": "$admins"}),
                   IntendedCall(tool="create_security_level", arguments={
                       "security_scheme_id": "$scheme", "name": level_name, "group_id": "$group"},
                       when=f"!{existing}"),
                   IntendedCall(tool="set_issue_security", arguments={"issue_id": "$issue",
                                                                      "security_level_id": existing}, when=existing),
                   IntendedCall(tool="set_issue_security", arguments={"issue_id": "$issue",
                                                                      "security_level_id": created}, when=created)],
            report=["$group.name"]),
        steps=steps,
        reply=reply,
        assertions=[
            StateAssertion(description="the issue is at a level of the group",
                           sql=f"SELECT l.name, l.group_id FROM issues i JOIN security_levels l "
                               f"ON l.id=i.security_level_id WHERE i.id='{iid}'",
                           expected=[[level_name, gid]]),
            StateAssertion(description="the project's own security scheme is applied",
                           sql=f"SELECT security_scheme_id FROM projects WHERE id='{key}'", expected=[[iss]]),
            trace("the permission scheme is checked before the grant, and every missing link of the chain comes "
                  "before set_issue_security", required, [(0, 1), *[(k, goal) for k in range(1, goal)]]),
            writes(*scopes),
            reply_check("confirms the restriction", reply, [[iid], [gname]]),
        ],
        tags=[],
    )


def _chain_state(view: WorldView, project: dict[str, Any]) -> int:
    key = project["id"]
    granted = any(g["permission_scheme_id"] == project["permission_scheme_id"]
                  and g["permission"] == "set_issue_security" for g in view.grants)
    if granted:
        return 0
    if project["security_scheme_id"] is not None:
        return 1
    devs = view.group_named(f"{key.lower()}-devs")["id"]
    return 2 if any(lv["group_id"] == devs for lv in view.levels) else 3


def _restricted_inquiry(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = [r for r in view.issues if r["security_level_id"] and not view.project[r["project_id"]]["archived"]]
    issue = _pick(pool, rng, i)
    if issue is None:
        return None
    level = view.level[issue["security_level_id"]]
    assignee = view.user[issue["assignee_id"]]["display_name"]
    requester = next(u for u in view.pick_users(rng) if level["group_id"] not in view.user_groups.get(u["id"], [])
                     and u["display_name"] != assignee)
    key, uid, name = issue["id"], requester["id"], requester["display_name"]
    ref, phrase, tags = _user_ref(view, requester, i, "requester")
    reply = (f"Hi {name.split()[0]}, {key} is a restricted issue and you are not in the group that can see it, "
             "so I can't share its details. Please ask the project's lead if you need access.")
    return Draft(
        prompt=f"Message from {phrase}: \"Can you tell me what {key} is about, who is working on it and which "
               "security level it is under?\"",
        role="developer",
        intent=Intent(goal="answer_requester", refs=[_issue_ref(key), ref], report=["$issue.visibility"]),
        steps=[step("get_issue", issue_id=key), step("search_users", query=name), step("get_user", user_id=uid)],
        reply=reply,
        assertions=[
            trace("the issue and the requester's memberships are checked",
                  [call("get_issue", issue_id=key), call("get_user", user_id=uid)]),
            writes(),
            reply_check("declines without revealing restricted contents", reply, [["restricted"]],
                        [issue["summary"], level["name"], assignee], [r"\bSL-\w+", r"\bISS-\d+"]),
        ],
        tags=tags,
    )


def _blocker_comment(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("blocked_open", lambda: [
        r for r in view.issues if view.active_issue(r) and r["status"] != DONE and view.blockers.get(r["id"])])
    good = [r for r in pool if any(view.issue[b]["index_status"] != view.issue[b]["status"]
                                   for b in view.blockers[r["id"]])]
    issue = _pick(_prefer(pool, good), rng, i)
    if issue is None:
        return None
    key = issue["id"]
    blockers = [view.issue[b] for b in view.blockers[key]]
    body = "Update: this issue is blocked by " + "; ".join(f"{b['id']} ({b['status']})" for b in blockers) + "."
    conds = " AND ".join(f"body LIKE '%{b['id']} ({b['status']})%'" for b in blockers)
    reply = f"I added a comment on {key} listing its blockers and their current statuses."
    return Draft(
        prompt=f"The reporter of {key} wants an update. Add a comment on {key} listing each issue that blocks it "
               "with its current status, written as KEY (Status).",
        role="developer",
        intent=Intent(goal="comment_blockers", refs=[_issue_ref(key), *_blocker_refs(blockers)],
                      calls=[IntendedCall(tool="add_comment", arguments={"issue_id": "$issue",
                                                                         "body": "$issue.blocker_statuses"})]),
        steps=[step("get_issue", issue_id=key), *[step("get_issue", issue_id=b["id"]) for b in blockers],
               step("add_comment", issue_id=key, body=body)],
        reply=reply,
        assertions=[
            StateAssertion(description="one new comment lists every blocker with its current status",
                           sql=f"SELECT COUNT(*) FROM comments WHERE issue_id='{key}' AND author_id IS NULL "
                               f"AND {conds}",
                           expected=[[1]]),
            trace("blockers are fetched before commenting",
                  [*[call("get_issue", issue_id=b["id"]) for b in blockers], call("add_comment", issue_id=key)],
                  [(k, len(blockers)) for k in range(len(blockers))]),
            writes(WriteScope(table="comments", insert=True)),
            reply_check("confirms the comment", reply, [[key]]),
        ],
        tags=["stale_record"] if good else [],
    )


def _link(view: WorldView, rng: random.Random, i: int, knobs: Knobs) -> Draft | None:
    pool = view.memo("open_top_level", lambda: [
        r for r in view.issues if view.active_issue(r) and r["parent_id"] is None and r["status"] != DONE])
    src = _pick(pool, rng, i)
    if src is None:
        return None
    linked = set(view.blockers.get(src["id"], [])) | {x["blocked_issue_id"] for x in view.links
                                                       if x["issue_id"] == src["id"]}
    dst = _pick([r for r in pool if r["project_id"] == src["project_id"] and r["id"] != src["id"]
                 and r["id"] not in linked], rng, i)
    if dst is None:
        return None
    a, b = src["id"], dst["id"]
    reply = f"Recorded that {a} blocks {b}."
    return Draft(
        prompt=f"Please record that {a} blocks {b}.",
        role="developer",
        intent=Intent(goal="link_issues", refs=[_issue_ref(a, "blocker"), _issue_ref(b, "blocked")],
                      calls=[IntendedCall(tool="link_issues", arguments={"issue_id": "$blocker",
                                                                         "blocked_issue_id": "$blocked"})],
                      report=["$link_issues.issue_id", "$link_issues.blocks"]),
        steps=[step("get_issue", issue_id=a), step("get_issue", issue_id=b),
               step("link_issues", issue_id=a, blocked_issue_id=b)],
        reply=reply,
        assertions=[
            StateAssertion(description="the blocking link exists once, in the requested direction",
                           sql=f"SELECT issue_id, blocked_issue_id FROM issue_links WHERE "
                               f"(issue_id='{a}' AND blocked_issue_id='{b}') "
                               f"OR (issue_id='{b}' AND blocked_issue_id='{a}')",
                           expected=[[a, b]]),
            trace("the link is created", [call("link_issues", issue_id=a, blocked_issue_id=b)]),
            writes(WriteScope(table="issue_links", insert=True)),
            reply_check("confirms the link", reply, [[a], [b]]),
        ],
        tags=["id_given_search_misses"],
    )


TEMPLATES: tuple[Template, ...] = (
    Template("issue_status", "information_retrieval", ("id_given_search_misses",), _issue_status,
             maybe=("stale_record",)),
    Template("open_subtasks", "information_retrieval", (), _list_open_subtasks,
             maybe=("id_given_search_misses", "stale_record")),
    Template("dependency_check", "information_retrieval", (), _dependency_check, maybe=("stale_record",)),
    Template("transition", "multi_step_workflow", (), _transition, maybe=("stale_record",)),
    Template("transition_conflict", "multi_step_workflow", ("fault_conflict",), _transition,
             ("data_conflict", "transition_issue"), maybe=("stale_record",)),
    Template("transition_refused", "policy_reasoning", ("side_effect_trap",), _transition_refused),
    Template("close_parent_open_subtasks", "policy_reasoning", ("side_effect_trap", "prerequisite"), _close_parent),
    Template("assign_subtask_by_key", "multi_step_workflow", (), _subtask_by_key,
             maybe=("id_given_search_misses", "near_duplicate")),
    Template("bulk_assign_subtasks", "multi_step_workflow", (), _bulk_assign,
             maybe=("near_duplicate", "side_effect_trap")),
    Template("bulk_assign_rate_limited", "multi_step_workflow", ("fault_rate_limit",), _bulk_assign,
             ("rate_limit", "bulk_assign"), maybe=("near_duplicate", "side_effect_trap")),
    Template("add_user_to_group", "multi_step_workflow", (), _add_to_group, maybe=("near_duplicate",)),
    Template("move_user_between_groups", "multi_step_workflow", ("side_effect_trap",), _move_between_groups,
             maybe=("near_duplicate",)),
    Template("already_member", "policy_reasoning", ("side_effect_trap",), _already_member,
             maybe=("near_duplicate",)),
    Template("release_version", "multi_step_workflow", ("prerequisite", "legacy_format"), _release),
    Template("release_blocked", "policy_reasoning", ("prerequisite", "side_effect_trap"), _release_blocked),
    Template("release_timeout", "multi_step_workflow", ("prerequisite", "legacy_format", "fault_timeout"), _release,
             ("timeout", "check_release_blockers")),
    Template("restrict_issue", "multi_step_workflow", ("prerequisite",), _restrict),
    Template("restrict_issue_conflict", "policy_reasoning", ("prerequisite", "fault_conflict"), _restrict,
             ("data_conflict", "set_issue_security")),
    Template("restricted_inquiry", "customer_communication", ("leak_trap",), _restricted_inquiry,
             maybe=("near_duplicate",)),
    Template("release_status_update", "customer_communication", (), _release_status, maybe=("stale_record",)),
    Template("blocker_comment", "customer_communication", (), _blocker_comment, maybe=("stale_record",)),
    Template("link_issues_timeout", "multi_step_workflow", ("fault_timeout",), _link, ("timeout", "link_issues")),
)
"""Every task template, in the order their tasks are listed."""


def task_knobs(knobs: Knobs) -> dict[str, Any]:
    """Validate the task knobs of ``knobs`` and fill in defaults.

    Raises:
        ValueError: A knob has a bad value, naming the knob and the value.
    """
    out = dict(TASK_DEFAULTS)
    out.update({k: v for k, v in knobs.items() if k in TASK_DEFAULTS})
    n = out["tasks_per_template"]
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 50:
        raise ValueError(f"tracker knob 'tasks_per_template' must be an integer from 1 to 50, got {n!r}")
    depth = out["prerequisite_depth"]
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 3:
        raise ValueError(f"tracker knob 'prerequisite_depth' must be 1, 2 or 3, got {depth!r}")
    out["heldout_fraction"] = knob_float(out, "heldout_fraction", 0.4)
    out["fault_rate"] = knob_float(out, "fault_rate", 0.0)
    tags, kinds = out["focus_tags"], out["fault_kinds"]
    if not isinstance(tags, list) or any(t not in ALL_TAGS for t in tags):
        raise ValueError(f"tracker knob 'focus_tags' must be a list of tags from {', '.join(ALL_TAGS)}; got {tags!r}")
    if not isinstance(kinds, list) or any(k not in FAULT_KINDS for k in kinds):
        raise ValueError(f"tracker knob 'fault_kinds' must be a list from {', '.join(FAULT_KINDS)}; got {kinds!r}")
    return out


def _heldout_count(n: int, fraction: float) -> int:
    count = round(n * fraction)
    if n >= 2 and 0.0 < fraction < 1.0:
        count = min(max(count, 1), n - 1)
    return count


def _fault_tag(template: Template) -> list[str]:
    return [FAULT_TAGS[template.fault[0]]] if template.fault else []


def build_tasks(conn: sqlite3.Connection, seed: int, knobs: Knobs) -> tuple[list[Task], list[FaultSpec]]:
    """Build the task set over a generated world.

    Args:
        conn: The generated world.
        seed: Generator seed (each template draws from its own Random derived from it).
        knobs: Task knobs (see ``TASK_DEFAULTS``); others are ignored here.

    Returns:
        The tasks and the faults they reference.
    """
    opts = task_knobs(knobs)
    view = WorldView(conn)
    focus = set(opts["focus_tags"])
    kinds: list[FaultKind] = [k for k in FAULT_KINDS if k in opts["fault_kinds"]]
    extra_rng = random.Random(f"{seed}:extra-faults")
    tasks: list[Task] = []
    faults: list[FaultSpec] = []
    n = opts["tasks_per_template"]
    heldout = _heldout_count(n, opts["heldout_fraction"])
    for template in TEMPLATES:
        if focus and not focus & {*template.tags, *template.maybe, *_fault_tag(template)}:
            continue
        if template.fault is not None and template.fault[0] not in kinds:
            continue
        for i in range(n):
            draft = template.build(view, random.Random(f"{seed}:{template.name}"), i, opts)
            if draft is None:
                continue
            fault = template.fault
            roll = extra_rng.random()
            if fault is None and kinds and roll < opts["fault_rate"]:
                write_step = next((s for s in draft.steps if s.tool in _WRITE_TOOLS), None)
                if write_step is not None:
                    fault = (kinds[extra_rng.randrange(len(kinds))], write_step.tool)
            task, specs = finish(template, i, "heldout" if i >= n - heldout else "train", draft, fault)
            if focus and not focus & set(task.tags):
                continue
            tasks.append(task)
            faults += specs
    return tasks, faults


_WRITE_TOOLS = {"transition_issue", "assign_issue", "bulk_assign", "add_comment", "link_issues", "add_user_to_group",
                "remove_user_from_group", "grant_permission", "create_security_level", "apply_security_scheme",
                "set_issue_security", "release_version"}

__all__ = ["FAULT_TAGS", "TASK_DEFAULTS", "TEMPLATES", "build_tasks", "inject_fault", "task_knobs"]
