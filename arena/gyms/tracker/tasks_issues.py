"""Issue templates of the tracker gym: status and dependency questions, workflow moves, comments and links."""

from __future__ import annotations

import random
from typing import Any

from arena.authoring import Draft, Intent, calls, goal, nth, scope, state, step, writes
from arena.gyms.tracker.rules import DONE
from arena.gyms.tracker.tasks_common import Index, blocker_refs, issue_ref, prefer, said, workflow_refs


def issue_status(x: Index, rng: random.Random, i: int) -> Draft | None:
    """The status and assignee of an issue given by key; its search summary may be stale."""
    pool = x.memo("top_level", lambda: [r for r in x.issues if x.active_issue(r) and r["parent_id"] is None])
    issue = nth(prefer(pool, [r for r in pool if r["index_status"] != r["status"]]), rng, i)
    if issue is None:
        return None
    key, status = issue["id"], issue["status"]
    assignee = x.user[issue["assignee_id"]]["display_name"]
    reply = f"{key} is currently {status} and assigned to {assignee}."
    return Draft(
        prompt=f"What is the current status of {key}, and who is it assigned to?",
        intent=Intent(goal="report_issue_status", refs=[issue_ref(key)],
                      report=["$issue.status", "$issue.assignee_name"]),
        reply=reply,
        assertions=[
            calls("the issue is fetched by key", [("get_issue", {"issue_id": key})]),
            writes(),
            said("states the current status and assignee", reply, [[status], [assignee]]),
        ],
        tags=["stale_record"] if issue["index_status"] != status else [],
    )


def open_subtasks(x: Index, rng: random.Random, i: int) -> Draft | None:
    """The open sub-tasks of an issue; some are missing from the search index or stale there."""
    pool = x.memo("parents_open", lambda: [r for r in x.issues if x.active_issue(r)
                                           and len(x.subtasks.get(r["id"], [])) >= 2 and x.open_subtasks(r["id"])])
    good = [r for r in pool if any(not s["indexed"] or s["index_status"] != s["status"] for s in x.subtasks[r["id"]])]
    parent = nth(prefer(pool, good), rng, i)
    if parent is None:
        return None
    key = parent["id"]
    subs = x.subtasks[key]
    open_subs = [s for s in subs if s["status"] != DONE]
    reply = f"Open sub-tasks of {key}: " + "; ".join(f"{s['id']} ({s['status']})" for s in open_subs) + "."
    return Draft(
        prompt=f"Which sub-tasks of {key} are still open? Give me their keys and current statuses.",
        intent=Intent(goal="list_open_subtasks", refs=[issue_ref(key, "parent")],
                      calls=[goal("list_subtasks", issue_id="$parent")], report=["$parent.open_subtasks"]),
        reply=reply,
        assertions=[
            calls("the sub-tasks are listed from the tracker", [("list_subtasks", {"issue_id": key})]),
            writes(),
            said("lists every open sub-task and no closed one", reply,
                 [[s["id"]] for s in open_subs] + [[s["status"]] for s in open_subs],
                 [s["id"] for s in subs if s["status"] == DONE]),
        ],
        tags=["id_given_search_misses", "stale_record"] if good else [],
    )


def _stale_blocker(x: Index, issue: dict[str, Any]) -> bool:
    return any(x.issue[b]["index_status"] != x.issue[b]["status"] for b in x.blockers[issue["id"]])


def dependency_check(x: Index, rng: random.Random, i: int) -> Draft | None:
    """The open blockers of an issue, each fetched (their search summaries may be stale)."""
    pool = x.memo("openly_blocked", lambda: [
        r for r in x.issues if x.active_issue(r) and r["status"] != DONE
        and any(x.issue[b]["status"] != DONE for b in x.blockers.get(r["id"], []))])
    good = [r for r in pool if _stale_blocker(x, r)]
    issue = nth(prefer(pool, good), rng, i)
    if issue is None:
        return None
    key = issue["id"]
    blockers = [x.issue[b] for b in x.blockers[key]]
    open_b = [b for b in blockers if b["status"] != DONE]
    reply = f"Yes. {key} is blocked by open issues: " + "; ".join(f"{b['id']} ({b['status']})" for b in open_b) + "."
    return Draft(
        prompt=f"Is {key} blocked by anything that is still open? List the open blockers with their status.",
        intent=Intent(goal="check_dependencies", refs=[issue_ref(key), *blocker_refs(blockers)],
                      report=["$issue.open_blockers"]),
        reply=reply,
        assertions=[
            calls("the issue and each blocker are fetched",
                  [("get_issue", {"issue_id": key}), *[("get_issue", {"issue_id": b["id"]}) for b in open_b]]),
            writes(),
            said("names every open blocker and no resolved one", reply, [[b["id"]] for b in open_b],
                 [b["id"] for b in blockers if b["status"] == DONE]),
        ],
        tags=["stale_record"] if good else [],
    )


def _transitions(x: Index) -> list[tuple[dict[str, Any], str]]:
    return [(r, target) for r in x.issues if x.active_issue(r) for target in x.next_statuses(r)
            if not (target == DONE and x.open_subtasks(r["id"]))]


def _workflow_steps(x: Index, issue: dict[str, Any]) -> list[Any]:
    """The gold reads before a move: the issue, its project, the project's workflow and the sub-tasks."""
    key, project = issue["id"], x.project[issue["project_id"]]
    return [step("get_issue", issue_id=key), step("get_project", project_id=project["id"]),
            step("get_workflow", workflow_id=project["workflow_id"]), step("list_subtasks", issue_id=key)]


def _move_intent(goal_name: str, key: str, target: str) -> Intent:
    return Intent(goal=goal_name, refs=workflow_refs(key),
                  calls=[goal("transition_issue", issue_id="$issue", to_status=target)],
                  report=["$transition_issue.status"])


def transition(x: Index, rng: random.Random, i: int) -> Draft | None:
    """One workflow step of an issue, read first."""
    pool = x.memo("transitions", lambda: _transitions(x))
    picked = nth(prefer(pool, [p for p in pool if p[0]["index_status"] != p[0]["status"]]), rng, i)
    if picked is None:
        return None
    issue, target = picked
    key = issue["id"]
    reply = f"{key} moved from {issue['status']} to {target}."
    return Draft(
        prompt=f"Please move {key} to {target}.",
        intent=_move_intent("transition_issue", key, target),
        reply=reply,
        assertions=[
            state("the issue has the requested status", f"SELECT status FROM issues WHERE id='{key}'", [[target]]),
            calls("the issue is read before it moves",
                  [("get_issue", {"issue_id": key}), ("transition_issue", {"issue_id": key, "to_status": target})],
                  order=[(0, 1)]),
            writes(scope("issues", [key], ["status", "updated"])),
            said("confirms the new status", reply, [[target]]),
        ],
        tags=["stale_record"] if issue["index_status"] != issue["status"] else [],
    )


def _refusable(x: Index) -> list[tuple[dict[str, Any], str]]:
    return [(r, t) for r in x.issues if x.active_issue(r) and r["parent_id"] is None
            for t in ("In Review", DONE) if t != r["status"] and t not in x.next_statuses(r)]


def transition_refused(x: Index, rng: random.Random, i: int) -> Draft | None:
    """A move the workflow does not allow in one step: explain the allowed ones, change nothing."""
    picked = nth(x.memo("refusable", lambda: _refusable(x)), rng, i)
    if picked is None:
        return None
    issue, target = picked
    key, status = issue["id"], issue["status"]
    wf = x.project[issue["project_id"]]["workflow_id"]
    nxt = x.next_statuses(issue)
    reply = (f"{key} is {status}; its workflow does not allow moving it straight to {target}. "
             f"From {status} it can move to: {', '.join(nxt)}. I left it unchanged.")
    return Draft(
        prompt=f"Move {key} straight to {target}, please.",
        intent=_move_intent("transition_issue", key, target),
        steps=_workflow_steps(x, issue),
        reply=reply,
        assertions=[
            state("the issue keeps its status", f"SELECT status FROM issues WHERE id='{key}'", [[status]]),
            calls("the workflow is checked and the issue is not moved", [("get_workflow", {"workflow_id": wf})],
                  forbidden=[("transition_issue", {"issue_id": key})]),
            writes(),
            said("explains the allowed next statuses", reply, [[status], *[[s] for s in nxt]]),
        ],
    )


def close_parent(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Closing an issue whose sub-tasks are open: name them, change nothing."""
    parent = nth(x.memo("closable_parents", lambda: [
        r for r in x.issues if x.active_issue(r) and DONE in x.next_statuses(r) and x.open_subtasks(r["id"])]), rng, i)
    if parent is None:
        return None
    key = parent["id"]
    open_subs = x.open_subtasks(key)
    ids = sorted([key, *(s["id"] for s in x.subtasks[key])])
    reply = (f"{key} cannot be closed yet: these sub-tasks are still open: "
             + ", ".join(f"{s['id']} ({s['status']})" for s in open_subs) + ". Nothing was changed.")
    in_list = ",".join(f"'{k}'" for k in ids)
    return Draft(
        prompt=f"{key} is finished, please close it (move it to Done).",
        intent=_move_intent("close_issue", key, DONE),
        steps=_workflow_steps(x, parent),
        reply=reply,
        assertions=[
            state("neither the issue nor its sub-tasks change status",
                  f"SELECT id, status FROM issues WHERE id IN ({in_list}) ORDER BY id",
                  [[k, x.issue[k]["status"]] for k in ids]),
            calls("the sub-tasks are checked and nothing is transitioned", [("list_subtasks", {"issue_id": key})],
                  forbidden=[("transition_issue", {})]),
            writes(),
            said("names the open sub-tasks", reply, [[s["id"]] for s in open_subs]),
        ],
    )


def blocker_comment(x: Index, rng: random.Random, i: int) -> Draft | None:
    """A comment listing an issue's blockers with their current statuses, each fetched first."""
    pool = x.memo("blocked_open", lambda: [
        r for r in x.issues if x.active_issue(r) and r["status"] != DONE and x.blockers.get(r["id"])])
    good = [r for r in pool if _stale_blocker(x, r)]
    issue = nth(prefer(pool, good), rng, i)
    if issue is None:
        return None
    key = issue["id"]
    blockers = [x.issue[b] for b in x.blockers[key]]
    body = "Update: this issue is blocked by " + "; ".join(f"{b['id']} ({b['status']})" for b in blockers) + "."
    conds = " AND ".join(f"body LIKE '%{b['id']} ({b['status']})%'" for b in blockers)
    reply = f"I added a comment on {key} listing its blockers and their current statuses."
    return Draft(
        prompt=f"The reporter of {key} wants an update. Add a comment on {key} listing each issue that blocks it "
               "with its current status, written as KEY (Status).",
        intent=Intent(goal="comment_blockers", refs=[issue_ref(key), *blocker_refs(blockers)],
                      calls=[goal("add_comment", issue_id="$issue", body="$issue.blocker_statuses")]),
        steps=[step("get_issue", issue_id=key), *[step("get_issue", issue_id=b["id"]) for b in blockers],
               step("add_comment", issue_id=key, body=body)],
        reply=reply,
        assertions=[
            state("one new comment lists every blocker with its current status",
                  f"SELECT COUNT(*) FROM comments WHERE issue_id='{key}' AND author_id IS NULL AND {conds}", [[1]]),
            calls("blockers are fetched before commenting",
                  [*[("get_issue", {"issue_id": b["id"]}) for b in blockers], ("add_comment", {"issue_id": key})],
                  order=[(k, len(blockers)) for k in range(len(blockers))]),
            writes(scope("comments", insert=True)),
            said("confirms the comment", reply, [[key]]),
        ],
        tags=["stale_record"] if good else [],
    )


def link(x: Index, rng: random.Random, i: int) -> Draft | None:
    """A blocking link between two issues of a project that are not linked yet."""
    pool = x.memo("open_top_level", lambda: [
        r for r in x.issues if x.active_issue(r) and r["parent_id"] is None and r["status"] != DONE])
    src = nth(pool, rng, i)
    if src is None:
        return None
    linked = set(x.blockers.get(src["id"], [])) | {k["blocked_issue_id"] for k in x.links if k["issue_id"] == src["id"]}
    dst = nth([r for r in pool if r["project_id"] == src["project_id"] and r["id"] != src["id"]
                and r["id"] not in linked], rng, i)
    if dst is None:
        return None
    a, b = src["id"], dst["id"]
    reply = f"Recorded that {a} blocks {b}."
    return Draft(
        prompt=f"Please record that {a} blocks {b}.",
        intent=Intent(goal="link_issues", refs=[issue_ref(a, "blocker"), issue_ref(b, "blocked")],
                      calls=[goal("link_issues", issue_id="$blocker", blocked_issue_id="$blocked")],
                      report=["$link_issues.issue_id", "$link_issues.blocks"]),
        reply=reply,
        assertions=[
            state("the blocking link exists once, in the requested direction",
                  f"SELECT issue_id, blocked_issue_id FROM issue_links WHERE (issue_id='{a}' AND "
                  f"blocked_issue_id='{b}') OR (issue_id='{b}' AND blocked_issue_id='{a}')", [[a, b]]),
            calls("the link is created", [("link_issues", {"issue_id": a, "blocked_issue_id": b})]),
            writes(scope("issue_links", insert=True)),
            said("confirms the link", reply, [[a], [b]]),
        ],
        tags=["id_given_search_misses"],
    )
