"""What the tracker's templates share beyond the kit: personas, an index of the world, references."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from arena.authoring import Draft, EntityRef, Fault, Persona, ResponseAssertion, WorldView, ref, says, shuffled
from arena.gyms.tracker.rules import DONE, ROLES, WORKFLOWS
from arena.gyms.tracker.world import TrackerKnobs

View = WorldView[TrackerKnobs]
"""What a tracker template reads."""

T = TypeVar("T")

DEVELOPER = Persona(name="Robin Achterberg", role="developer", permissions=list(ROLES["developer"]))
"""A developer: browses, transitions, assigns, comments and links issues (the default persona)."""

PROJECT_ADMIN = Persona(name="Mika Lindgren", role="project_admin", permissions=list(ROLES["project_admin"]))
"""A project admin: also bulk changes, releases versions and administers schemes and issue security."""

SITE_ADMIN = Persona(name="Ines Valdor", role="site_admin", permissions=list(ROLES["site_admin"]))
"""A site admin: also manages group memberships."""


class Index:
    """The generated world read into memory once per build, for picking task entities.

    Args:
        w: The kit's view of the generated world.
    """

    def __init__(self, w: View) -> None:
        self.knobs = w.knobs
        self.memo = w.memo
        cached = {r["id"]: r["status"] for r in w.rows("SELECT id, json_extract(summary, '$.status') AS status "
                                                        "FROM search_index WHERE entity IN ('issue', 'version')")}
        self.issues = w.rows("SELECT * FROM issues ORDER BY rowid")
        for row in self.issues:  # what the search index shows of it: indexed or not, and the cached status
            row["indexed"] = int(row["id"] in cached)
            row["index_status"] = cached.get(row["id"], row["status"])
        self.issue = {r["id"]: r for r in self.issues}
        self.users = w.rows("SELECT * FROM users ORDER BY rowid")
        self.user = {r["id"]: r for r in self.users}
        self.groups = w.rows("SELECT * FROM groups ORDER BY rowid")
        self.group = {r["id"]: r for r in self.groups}
        self.projects = w.rows("SELECT * FROM projects ORDER BY rowid")
        self.project = {r["id"]: r for r in self.projects}
        self.versions = w.rows("SELECT * FROM versions ORDER BY rowid")
        for row in self.versions:
            row["index_status"] = cached[row["id"]]
        self.levels = w.rows("SELECT * FROM security_levels ORDER BY rowid")
        self.level = {r["id"]: r for r in self.levels}
        self.schemes = w.rows("SELECT * FROM security_schemes ORDER BY rowid")
        self.grants = w.rows("SELECT * FROM permission_grants ORDER BY rowid")
        self.members = w.rows("SELECT * FROM group_members ORDER BY rowid")
        self.links = w.rows("SELECT * FROM issue_links ORDER BY rowid")
        self.subtasks: dict[str, list[dict[str, Any]]] = {}
        self.fix_issues: dict[str, list[dict[str, Any]]] = {}
        for row in self.issues:
            if row["parent_id"]:
                self.subtasks.setdefault(row["parent_id"], []).append(row)
            if row["fix_version_id"]:
                self.fix_issues.setdefault(row["fix_version_id"], []).append(row)
        self.blockers: dict[str, list[str]] = {}
        for link in self.links:
            self.blockers.setdefault(link["blocked_issue_id"], []).append(link["issue_id"])
        self.user_groups: dict[str, list[str]] = {}
        for m in self.members:
            self.user_groups.setdefault(m["user_id"], []).append(m["group_id"])
        self.name_count: dict[str, int] = {}
        for u in self.users:
            self.name_count[u["display_name"]] = self.name_count.get(u["display_name"], 0) + 1
        self._live = {p["id"] for p in self.projects if not p["archived"]}

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
        return shuffled(rng, pool, prefer=lambda u: self.name_count[u["display_name"]] > 1)

    def group_named(self, name: str) -> dict[str, Any]:
        """The group called ``name``.

        Raises:
            KeyError: No group has that name.
        """
        for g in self.groups:
            if g["name"] == name:
                return g
        raise KeyError(f"no group named {name!r} in the tracker world")


OneTask = Callable[[Index, random.Random, int], Draft | None]
"""One task of a template: the ``i``-th pick from a fresh copy of the template's Random, or ``None``."""


def each(one: OneTask, *faults: Fault) -> Callable[[View, random.Random, int], list[Draft]]:
    """A template's ``build`` from a function that makes its ``i``-th task, with ``faults`` on every task.

    Every task starts from the same state of the template's Random, so the ``i``-th entry of a shuffled pool is
    task ``i``'s pick and the tasks of a template are distinct.
    """

    def build(w: View, rng: random.Random, n: int) -> list[Draft]:
        index = w.memo("index", lambda: Index(w))
        start = rng.getstate()
        drafts = []
        for i in range(n):
            rng.setstate(start)
            draft = one(index, rng, i)
            if draft is not None:
                draft.faults = list(faults)
                drafts.append(draft)
        return drafts

    return build


def prefer(pool: list[T], good: list[T]) -> list[T]:
    """``good`` when it has entries, else ``pool``."""
    return good if good else pool


def issue_ref(key: str, name: str = "issue") -> EntityRef:
    """An issue the prompt names by key."""
    return ref(name, "issue", key, by_id=True)


def workflow_refs(key: str) -> list[EntityRef]:
    """The issue ``key``, its project and the project's workflow, which every move is checked against."""
    return [issue_ref(key), ref("project", "project", "$issue.project_id", by_id=True),
            ref("workflow", "workflow", "$project.workflow_id", by_id=True)]


def blocker_refs(blockers: list[dict[str, Any]]) -> list[EntityRef]:
    """One reference per issue blocking ``$issue``, read from its ``is_blocked_by`` list, so each is fetched."""
    return [ref(f"blocker_{k}", "issue", f"$issue.is_blocked_by.{k}", by_id=True) for k in range(len(blockers))]


def user_ref(x: Index, user: dict[str, Any], i: int, name: str = "user") -> tuple[EntityRef, str, list[str]]:
    """A text reference to ``user`` with an email (even ``i``) or team hint: (ref, prompt phrase, tags)."""
    if i % 2 == 0:
        hint, phrase = {"email": user["email"]}, f"{user['display_name']} ({user['email']})"
    else:
        hint, phrase = {"team": user["team"]}, f"{user['display_name']} from the {user['team']} team"
    tags = ["near_duplicate"] if x.name_count[user["display_name"]] > 1 else []
    return ref(name, "user", user["display_name"], by_id=False, **hint), phrase, tags


def said(description: str, reply: str, include: list[list[str]], exclude: Sequence[str] = (),
         forbidden: Sequence[str] = ()) -> ResponseAssertion:
    """A response check whose exclusions leave out what the gold ``reply`` itself states (``PAY-12`` in ``PAY-123``)."""
    text = reply.casefold()
    return says(description, include, exclude=[e for e in exclude if e.casefold() not in text], forbidden=forbidden)
