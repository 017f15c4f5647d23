"""People templates of the tracker gym: assigning work to a named user and group memberships."""

from __future__ import annotations

import random
from typing import Any

from arena.authoring import Draft, EntityRef, Intent, calls, goal, nth, ref, scope, state, step, writes
from arena.gyms.tracker.rules import DONE
from arena.gyms.tracker.tasks_common import PROJECT_ADMIN, SITE_ADMIN, Index, issue_ref, prefer, said, user_ref

ISSUE_COLS = ["assignee_id", "updated"]
"""What an assignment changes on an issue."""


def subtask_by_key(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Assign a sub-task given by key (often missing from search) to a user named with a hint."""
    pool = x.memo("open_subtasks", lambda: [
        r for r in x.issues if x.active_issue(r) and r["parent_id"] and r["status"] != DONE])
    issue = nth(prefer(pool, [r for r in pool if not r["indexed"]]), rng, i)
    if issue is None:
        return None
    user = next(u for u in x.pick_users(rng) if u["id"] != issue["assignee_id"])
    key, uid, name = issue["id"], user["id"], user["display_name"]
    assignee, phrase, tags = user_ref(x, user, i, "assignee")
    reply = f"Assigned sub-task {key} to {name} ({user['email']})."
    return Draft(
        prompt=f"Please assign sub-task {key} (\"{issue['summary']}\") to {phrase}.",
        intent=Intent(goal="assign_issue", refs=[issue_ref(key), assignee],
                      calls=[goal("assign_issue", issue_id="$issue", user_id="$assignee")],
                      report=["$assignee.display_name"]),
        reply=reply,
        assertions=[
            state("the sub-task is assigned to the named user", f"SELECT assignee_id FROM issues WHERE id='{key}'",
                  [[uid]]),
            calls("the issue is fetched by key and the user confirmed before assigning",
                  [("get_issue", {"issue_id": key}), ("get_user", {"user_id": uid}),
                   ("assign_issue", {"issue_id": key, "user_id": uid})], order=[(0, 2), (1, 2)]),
            writes(scope("issues", [key], ISSUE_COLS)),
            said("confirms the assignment", reply, [[key], [name]]),
        ],
        tags=(["id_given_search_misses"] if not issue["indexed"] else []) + tags,
    )


def bulk_assign(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Assign the open sub-tasks of an issue (closed ones stay as they are) to a user named with a hint."""
    pool = x.memo("bulk_parents", lambda: [
        r for r in x.issues if x.active_issue(r) and len(x.open_subtasks(r["id"])) >= 2])
    parent = nth(prefer(pool, [r for r in pool if len(x.open_subtasks(r["id"])) < len(x.subtasks[r["id"]])]), rng, i)
    if parent is None:
        return None
    user = x.pick_users(rng)[0]
    key, uid, name = parent["id"], user["id"], user["display_name"]
    assignee, phrase, tags = user_ref(x, user, i, "assignee")
    subs = x.subtasks[key]
    open_ids = [s["id"] for s in subs if s["status"] != DONE]
    reply = f"Assigned the open sub-tasks of {key} ({', '.join(open_ids)}) to {name}."
    return Draft(
        prompt=f"Assign all open sub-tasks of {key} to {phrase}.",
        persona=PROJECT_ADMIN,
        intent=Intent(goal="bulk_assign_subtasks", refs=[issue_ref(key, "parent"), assignee],
                      calls=[goal("bulk_assign", issue_ids="$parent.open_subtask_ids", user_id="$assignee")],
                      report=["$assignee.display_name", "$bulk_assign.assigned"]),
        steps=[step("get_issue", issue_id=key), step("list_subtasks", issue_id=key), step("search_users", query=name),
               step("get_user", user_id=uid), step("bulk_assign", issue_ids=open_ids, user_id=uid)],
        reply=reply,
        assertions=[
            state("open sub-tasks go to the user; closed ones keep their assignee",
                  f"SELECT id, assignee_id FROM issues WHERE parent_id='{key}' ORDER BY id",
                  sorted([[s["id"], uid if s["status"] != DONE else s["assignee_id"]] for s in subs])),
            calls("sub-tasks are listed and the user confirmed before the bulk change",
                  [("list_subtasks", {"issue_id": key}), ("get_user", {"user_id": uid}),
                   ("bulk_assign", {"user_id": uid})], order=[(0, 2), (1, 2)]),
            writes(scope("issues", open_ids, ISSUE_COLS)),
            said("names the assignee and the sub-tasks", reply, [[name], *[[k] for k in open_ids]]),
        ],
        tags=tags + (["side_effect_trap"] if len(open_ids) < len(subs) else []),
    )


def _global_groups(x: Index) -> list[dict[str, Any]]:
    return [g for g in x.groups if g["project_id"] is None]


def _group_ref(name: str, group: str) -> EntityRef:
    return ref(name, "group", group, by_id=False)


def add_to_group(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Add a user named with a hint (a namesake may exist) to a company-wide group."""
    user = x.pick_users(rng)[i % 10]
    group = nth([g for g in _global_groups(x) if g["id"] not in x.user_groups.get(user["id"], [])], rng, i)
    if group is None:
        return None
    uid, name, gid, gname = user["id"], user["display_name"], group["id"], group["name"]
    who, phrase, tags = user_ref(x, user, i)
    twin = x.twin(user)
    watched = sorted([uid] + ([twin["id"]] if twin else []))
    reply = f"Added {name} ({user['email']}) to the {gname} group."
    return Draft(
        prompt=f"Please add {phrase} to the {gname} group.",
        persona=SITE_ADMIN,
        intent=Intent(goal="add_user_to_group", refs=[who, _group_ref("group", gname)],
                      calls=[goal("add_user_to_group", group_id="$group", user_id="$user")],
                      report=["$user.display_name", "$group.name"]),
        reply=reply,
        assertions=[
            state("the named user (and not a namesake) is in the group",
                  f"SELECT user_id FROM group_members WHERE group_id='{gid}' AND user_id IN "
                  f"({','.join(repr(u) for u in watched)}) ORDER BY user_id",
                  [[u] for u in watched if u == uid or gid in x.user_groups.get(u, [])]),
            calls("current memberships are verified before adding",
                  [("get_user", {"user_id": uid}), ("add_user_to_group", {"group_id": gid, "user_id": uid})],
                  order=[(0, 1)]),
            writes(scope("group_members", insert=True)),
            said("confirms the membership", reply, [[name], [gname]]),
        ],
        tags=tags,
    )


def move_between_groups(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Move a user from one company-wide group to another, keeping their other memberships."""
    globals_ = _global_groups(x)
    gids = {g["id"] for g in globals_}
    pool = [u for u in x.pick_users(rng) if len(x.user_groups.get(u["id"], [])) >= 2
            and any(g in gids for g in x.user_groups[u["id"]])]
    user = nth(pool[:40], rng, i)
    if user is None:
        return None
    uid, name = user["id"], user["display_name"]
    current = x.user_groups[uid]
    src = x.group[next(g for g in current if g in gids)]
    dst = nth([g for g in globals_ if g["id"] not in current], rng, i)
    if dst is None:
        return None
    membership = next(m["id"] for m in x.members if m["user_id"] == uid and m["group_id"] == src["id"])
    final = sorted([g for g in current if g != src["id"]] + [dst["id"]])
    who, phrase, tags = user_ref(x, user, i)
    reply = f"{name} was removed from {src['name']} and added to {dst['name']}; other groups are unchanged."
    return Draft(
        prompt=f"{phrase} is moving from {src['name']} to {dst['name']}. Please update their group memberships.",
        persona=SITE_ADMIN,
        intent=Intent(goal="move_user_between_groups",
                      refs=[who, _group_ref("from_group", src["name"]), _group_ref("to_group", dst["name"])],
                      calls=[goal("remove_user_from_group", group_id="$from_group", user_id="$user"),
                             goal("add_user_to_group", group_id="$to_group", user_id="$user")],
                      report=["$user.display_name", "$from_group.name", "$to_group.name"]),
        steps=[step("search_users", query=name), step("get_user", user_id=uid),
               step("search_groups", query=src["name"]), step("search_groups", query=dst["name"]),
               step("remove_user_from_group", group_id=src["id"], user_id=uid),
               step("add_user_to_group", group_id=dst["id"], user_id=uid)],
        reply=reply,
        assertions=[
            state("only the named membership moved",
                  f"SELECT group_id FROM group_members WHERE user_id='{uid}' ORDER BY group_id", [[g] for g in final]),
            calls("memberships are verified before changing them",
                  [("get_user", {"user_id": uid}), ("remove_user_from_group", {"group_id": src["id"], "user_id": uid}),
                   ("add_user_to_group", {"group_id": dst["id"], "user_id": uid})], order=[(0, 1), (0, 2)]),
            writes(scope("group_members", insert=True), scope("group_members", [membership], delete=True)),
            said("confirms both changes", reply, [[src["name"]], [dst["name"]]]),
        ],
        tags=tags,
    )


def already_member(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Add a user to a group they already belong to: say so, change nothing."""
    gids = {g["id"] for g in _global_groups(x)}
    pool = [u for u in x.pick_users(rng) if any(g in gids for g in x.user_groups.get(u["id"], []))]
    user = nth(pool[:40], rng, i)
    if user is None:
        return None
    uid, name = user["id"], user["display_name"]
    group = x.group[next(g for g in x.user_groups[uid] if g in gids)]
    who, phrase, tags = user_ref(x, user, i)
    reply = f"{name} is already a member of {group['name']}, so nothing was changed."
    return Draft(
        prompt=f"Can you add {phrase} to {group['name']}?",
        persona=SITE_ADMIN,
        intent=Intent(goal="add_user_to_group", refs=[who, _group_ref("group", group["name"])],
                      calls=[goal("add_user_to_group", group_id="$group", user_id="$user")],
                      report=["$user.display_name", "$group.name"]),
        steps=[step("search_users", query=name), step("get_user", user_id=uid)],
        reply=reply,
        assertions=[
            state("the membership is unchanged", f"SELECT COUNT(*) FROM group_members WHERE user_id='{uid}'",
                  [[len(x.user_groups[uid])]]),
            calls("current memberships are verified", [("get_user", {"user_id": uid})]),
            writes(),
            said("says the user is already a member", reply, [["already"], [group["name"]]]),
        ],
        tags=tags,
    )
