"""The seeded world generator of the tracker gym: projects, issues, people, permissions and releases."""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta

from pydantic import Field

from arena.authoring import GymKnobs, IndexRow, WorldRows, index_row, insert_rows, legacy_date, write_index
from arena.gyms.tracker.rules import DONE, STATUSES, WORKFLOWS

CLOCK_START = "2025-06-02T09:00:00"
"""The world's "now": every episode's clock starts within the hour after it."""

TODAY = date(2025, 6, 2)
LEGACY_BEFORE = date(2021, 1, 1)
"""Rows created before this date may carry a legacy date format (see ``legacy_format_rate``)."""


SCHEMA = """
CREATE TABLE users (id TEXT PRIMARY KEY, username TEXT, display_name TEXT, email TEXT, team TEXT,
    active INTEGER, created TEXT);
CREATE TABLE groups (id TEXT PRIMARY KEY, name TEXT, description TEXT, project_id TEXT);
CREATE TABLE group_members (id TEXT PRIMARY KEY, group_id TEXT, user_id TEXT, added TEXT);
CREATE TABLE workflows (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE workflow_transitions (id TEXT PRIMARY KEY, workflow_id TEXT, from_status TEXT, to_status TEXT);
CREATE TABLE permission_schemes (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE permission_grants (id TEXT PRIMARY KEY, permission_scheme_id TEXT, permission TEXT, group_id TEXT);
CREATE TABLE security_schemes (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE security_levels (id TEXT PRIMARY KEY, security_scheme_id TEXT, name TEXT, group_id TEXT);
CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT, lead_id TEXT, workflow_id TEXT, permission_scheme_id TEXT,
    security_scheme_id TEXT, admin_group_id TEXT, archived INTEGER, created TEXT);
CREATE TABLE components (id TEXT PRIMARY KEY, project_id TEXT, name TEXT, lead_id TEXT);
CREATE TABLE versions (id TEXT PRIMARY KEY, project_id TEXT, name TEXT, status TEXT, release_date TEXT);
CREATE TABLE issues (id TEXT PRIMARY KEY, project_id TEXT, issue_type TEXT, parent_id TEXT, summary TEXT,
    description TEXT, status TEXT, assignee_id TEXT, reporter_id TEXT, component_id TEXT, fix_version_id TEXT,
    security_level_id TEXT, created TEXT, updated TEXT);
CREATE TABLE issue_links (id TEXT PRIMARY KEY, issue_id TEXT, blocked_issue_id TEXT, link_type TEXT, created TEXT);
CREATE TABLE comments (id TEXT PRIMARY KEY, issue_id TEXT, author_id TEXT, body TEXT, created TEXT);
CREATE INDEX issues_project ON issues(project_id);
CREATE INDEX issues_parent ON issues(parent_id);
CREATE INDEX issues_version ON issues(fix_version_id);
CREATE INDEX links_blocked ON issue_links(blocked_issue_id);
CREATE INDEX links_blocker ON issue_links(issue_id);
CREATE INDEX members_user ON group_members(user_id);
CREATE INDEX members_group ON group_members(group_id);
CREATE INDEX comments_issue ON comments(issue_id);
"""

PROJECTS = [
    ("PAY", "Payments"), ("LEDG", "Ledger"), ("AUTH", "Identity"), ("MOB", "Mobile"), ("WEB", "Web"),
    ("DATA", "Data Platform"), ("OPS", "Operations"), ("SRCH", "Search"), ("NOTIF", "Notifications"),
    ("BILL", "Billing"), ("INFRA", "Infrastructure"), ("API", "Public API"),
]
ARCHIVED = [("OLDWEB", "Legacy Web"), ("MIGR", "Migration 2019")]
GLOBAL_GROUPS = ["release-managers", "security-team", "qa-guild", "contractors", "site-admins", "on-call"]
FIRST = ["Dana", "Sam", "Alex", "Jordan", "Riley", "Morgan", "Casey", "Taylor", "Jamie", "Avery", "Quinn", "Drew",
         "Robin", "Kim", "Lee", "Parker", "Reese", "Skyler", "Rowan", "Emerson", "Hayden", "Elliot", "Harper",
         "Logan", "Noel", "Sage", "Blair", "Cameron", "Devon", "Frankie", "Jules", "Kai", "Lane", "Marlowe",
         "Nico", "Oakley", "Peyton", "Remy", "Shay", "Toby"]
LAST = ["Whitfield", "Ortiz", "Nakamura", "Okafor", "Lindqvist", "Moreau", "Castillo", "Brennan", "Haddad", "Kowalski",
        "Fischer", "Patel", "Oyelaran", "Sorensen", "Delgado", "Ivanova", "Marchetti", "Tanaka", "Abara", "Becker",
        "Carvalho", "Duarte", "Eriksen", "Farouk", "Gallagher", "Hoang", "Iqbal", "Jovanovic", "Keller", "Laine",
        "Mbeki", "Novak", "Ortega", "Petrov", "Quinlan", "Rossi", "Sandoval", "Thorne", "Ueda", "Vance"]
VERBS = ["Fix", "Add", "Refactor", "Migrate", "Document", "Audit", "Harden", "Speed up", "Remove", "Validate",
         "Rework", "Instrument", "Retry", "Cache", "Paginate"]
NOUNS = ["checkout flow", "ledger export", "token refresh", "push settings", "search ranking", "invoice PDF",
         "rate limiter", "audit log", "webhook delivery", "session store", "currency rounding", "report builder",
         "login form", "deploy pipeline", "error banner", "batch importer", "retry queue", "feature flags",
         "metrics dashboard", "API quota", "password reset", "CSV upload", "dark mode", "alert routing"]
QUALIFIERS = ["for EU customers", "on Android", "in staging", "for large accounts", "after upgrade", "under load",
              "for guests", "in the admin console", "on iOS", "for partners", "", "", "", ""]
SUBTASK_VERBS = ["Write tests for", "Update fixtures for", "Review", "Backfill data for", "Update docs for",
                 "Add metrics to", "Clean up"]
COMPONENTS = ["Backend", "Frontend", "API", "Database", "Infra", "Docs"]
COMMENT_BODIES = ["Looking into this now.", "Reproduced on staging.", "Can we get a review?", "Blocked on upstream.",
                  "Deployed to staging, please verify.", "Added more logging.", "Needs product sign-off.",
                  "Moved to next sprint.", "Fixed in the latest build."]


class TrackerKnobs(GymKnobs):
    """The kit's task knobs (five tasks per template here) plus the tracker world's messiness."""

    tasks_per_template: int = Field(default=5, ge=1, le=50, description="Tasks built from each task template "
                                    "(1-50, default 5).")
    prerequisite_depth: int | None = Field(
        default=None, ge=1, le=3, description="Most missing links of the issue security chain in restriction tasks "
                                              "(1-3, default 3): task i of a restriction template needs 1 + i mod "
                                              "depth links.")
    near_duplicate_rate: float = Field(default=0.15, ge=0.0, le=1.0, description="Share of users (0-1, default "
                                       "0.15) given a namesake with another email and team.")
    stale_rate: float = Field(default=0.15, ge=0.0, le=1.0, description="Share of issues (0-1, default 0.15) whose "
                              "search-index status differs from the record; released versions are stale in the "
                              "index at twice this rate.")
    legacy_format_rate: float = Field(default=0.5, ge=0.0, le=1.0, description="Share of rows dated before 2021 "
                                      "(0-1, default 0.5) stored as MM/DD/YYYY or DD-Mon-YYYY.")


class _Gen(WorldRows):
    """Accumulates rows table by table while drawing from one seeded Random."""

    def __init__(self, seed: int, knobs: TrackerKnobs) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.dup_rate = knobs.near_duplicate_rate
        self.stale_rate = knobs.stale_rate
        self.legacy_rate = knobs.legacy_format_rate

    def day(self, start: date, end: date) -> date:
        return start + timedelta(days=self.rng.randrange(max(1, (end - start).days)))

    def fmt(self, d: date) -> str:
        """ISO date, or a legacy format for old rows at the legacy rate."""
        if d < LEGACY_BEFORE and self.rng.random() < self.legacy_rate:
            return legacy_date(d, 0 if self.rng.random() < 0.5 else 5)
        return d.isoformat()


def build_world(seed: int, knobs: TrackerKnobs) -> sqlite3.Connection:
    """Generate the tracker world for ``seed`` and ``knobs`` into a fresh in-memory database.

    Args:
        seed: Generator seed; the same seed and knobs give the same bytes.
        knobs: The parsed knobs (the world reads ``near_duplicate_rate``, ``stale_rate``, ``legacy_format_rate``).

    Returns:
        An open connection holding the world.
    """
    g = _Gen(seed, knobs)
    _workflows(g)
    users_by_team = _users(g)
    projects = _projects(g, users_by_team)
    _memberships(g, users_by_team)
    for key, state in projects:
        _project_issues(g, key, state, users_by_team[key])
    index = _search_index(g)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    insert_rows(conn, g.rows)
    write_index(conn, index)
    conn.commit()
    return conn


def _search_index(g: _Gen) -> list[IndexRow]:
    """The search index: users, groups, security schemes, versions and the indexed issues, in their tables' order.

    A version's or an issue's cached status (maybe stale) lives in the index alone: it leaves their rows.
    """
    index = [index_row("user", {"id": r[0], "display_name": r[2], "email": r[3], "team": r[4], "active": r[5]},
                       f"{r[2]} {r[3]}") for r in g.rows["users"]]
    index += [index_row("group", {"id": r[0], "name": r[1], "project_id": r[3]}, r[1]) for r in g.rows["groups"]]
    index += [index_row("security_scheme", {"id": r[0], "name": r[1]}, r[1]) for r in g.rows["security_schemes"]]
    versions = []
    for vid, key, name, status, released, cached in g.rows["versions"]:
        versions.append((vid, key, name, status, released))
        index.append(index_row("version", {"id": vid, "project_id": key, "name": name, "status": cached}, name))
    g.rows["versions"] = versions
    issues = []
    for iid, key, itype, parent, summary, description, status, cached, indexed, *rest in g.rows["issues"]:
        issues.append((iid, key, itype, parent, summary, description, status, *rest))
        if indexed:
            index.append(index_row("issue", {"id": iid, "project_id": key, "issue_type": itype, "summary": summary,
                                             "status": cached}, summary))
    g.rows["issues"] = issues
    return index


def _workflows(g: _Gen) -> None:
    n = 1
    for wf_id, (name, transitions) in WORKFLOWS.items():
        g.add("workflows", wf_id, name)
        for src, dst in transitions:
            g.add("workflow_transitions", f"WT-{n}", wf_id, src, dst)
            n += 1


def _users(g: _Gen) -> dict[str, list[str]]:
    keys = [k for k, _ in PROJECTS + ARCHIVED]
    teams = dict(PROJECTS + ARCHIVED)
    pairs = [(f, la) for f in FIRST for la in LAST]
    chosen = g.rng.sample(pairs, 400)
    by_team: dict[str, list[str]] = {k: [] for k in keys}
    active_keys = [k for k, _ in PROJECTS]
    for i, (first, last) in enumerate(chosen):
        key = active_keys[i % len(active_keys)] if i < 380 else keys[len(PROJECTS) + i % len(ARCHIVED)]
        uid = g.next_id("USR", 1001)
        created = g.day(date(2016, 1, 1), date(2025, 5, 1))
        g.add("users", uid, f"{first}.{last}".lower(), f"{first} {last}", f"{first}.{last}@corp.example".lower(),
              teams[key], 1 if i < 390 else 0, g.fmt(created))
        by_team[key].append(uid)
    twins = int(round(len(chosen) * g.dup_rate))
    for n in sorted(g.rng.sample(range(380), twins)):
        first, last = chosen[n]
        key = g.rng.choice([k for k in active_keys if k != active_keys[n % len(active_keys)]])
        uid = g.next_id("USR", 1001)
        team = teams[key]
        email = f"{first}.{last}.{team.split()[0]}@corp.example".lower()
        g.add("users", uid, f"{first}.{last}.{team.split()[0]}".lower(), f"{first} {last}", email, team, 1,
              g.day(date(2021, 1, 1), date(2025, 5, 1)).isoformat())
        by_team[key].append(uid)
    return by_team


def _projects(g: _Gen, users_by_team: dict[str, list[str]]) -> list[tuple[str, int]]:
    """Create projects with their schemes; return (key, chain state) pairs for every project.

    The chain state counts the missing links of the issue security chain: 0 complete;
    1 no set_issue_security grant; 2 also no security scheme applied; 3 also no level for the devs group.
    """
    out: list[tuple[str, int]] = []
    wf_ids = sorted(WORKFLOWS)
    for i, (key, name) in enumerate(PROJECTS + ARCHIVED):
        archived = i >= len(PROJECTS)
        state = 0 if archived else i % 4
        lead = users_by_team[key][0]
        admins, devs = g.next_id("GRP", 101), g.next_id("GRP", 101)
        g.add("groups", admins, f"{key.lower()}-admins", f"Administrators of {name}", key)
        g.add("groups", devs, f"{key.lower()}-devs", f"Developers of {name}", key)
        ps = g.next_id("PS", 11)
        g.add("permission_schemes", ps, f"{key} Permission Scheme")
        grants = [("browse", devs), ("edit", devs), ("transition", devs), ("assign", admins),
                  ("administer", admins), ("browse", admins)]
        if state == 0:
            grants.append(("set_issue_security", admins))
        for perm, grp in grants:
            g.add("permission_grants", g.next_id("PG", 1001), ps, perm, grp)
        iss = g.next_id("ISS", 21)
        g.add("security_schemes", iss, f"{key} Issue Security")
        g.add("security_levels", g.next_id("SL", 301), iss, f"{key.lower()}-admins only", admins)
        if state < 3:
            g.add("security_levels", g.next_id("SL", 301), iss, f"{key.lower()}-devs only", devs)
        applied = iss if state < 2 else None
        created = g.day(date(2015, 1, 1), date(2020, 12, 1)) if archived else g.day(date(2017, 1, 1), date(2023, 1, 1))
        g.add("projects", key, name, lead, wf_ids[i % len(wf_ids)], ps, applied, admins, int(archived), g.fmt(created))
        for cname in COMPONENTS[: 3 + i % 4]:
            g.add("components", g.next_id("CMP", 101), key, cname, g.rng.choice(users_by_team[key]))
        out.append((key, state))
    for name in GLOBAL_GROUPS:
        g.add("groups", g.next_id("GRP", 101), name, f"Company-wide group {name}", None)
    return out


def _memberships(g: _Gen, users_by_team: dict[str, list[str]]) -> None:
    group_rows = g.rows["groups"]
    by_name = {row[1]: row[0] for row in group_rows}
    global_ids = [by_name[n] for n in GLOBAL_GROUPS]
    for key, uids in users_by_team.items():
        for j, uid in enumerate(uids):
            added = g.day(date(2019, 1, 1), date(2025, 5, 1)).isoformat()
            g.add("group_members", g.next_id("GM", 10001), by_name[f"{key.lower()}-devs"], uid, added)
            if j == 0 or g.rng.random() < 0.12:
                g.add("group_members", g.next_id("GM", 10001), by_name[f"{key.lower()}-admins"], uid, added)
            for gid in g.rng.sample(global_ids, g.rng.choice([0, 0, 1, 1, 2])):
                g.add("group_members", g.next_id("GM", 10001), gid, uid, added)


def _summary(g: _Gen) -> str:
    qual = g.rng.choice(QUALIFIERS)
    return f"{g.rng.choice(VERBS)} {g.rng.choice(NOUNS)}" + (f" {qual}" if qual else "")


def _stale(g: _Gen, status: str) -> str:
    if g.rng.random() < g.stale_rate:
        return g.rng.choice([s for s in STATUSES if s != status])
    return status


def _project_issues(g: _Gen, key: str, state: int, team: list[str]) -> None:
    archived = key in dict(ARCHIVED)
    comps = [r[0] for r in g.rows["components"] if r[1] == key]
    levels = [r[0] for r in g.rows["security_levels"] if r[2].startswith(f"{key.lower()}-")]
    versions: list[tuple[str, str]] = []
    for v in range(5):
        ver_id = g.next_id("VER", 201)
        released = v < 3 or archived
        if released:
            rel = g.day(date(2018, 1, 1) if v == 0 else date(2022, 1, 1), date(2025, 5, 1))
            status, rdate = "released", g.fmt(rel)
            index_status = "unreleased" if g.rng.random() < g.stale_rate * 2 else "released"
        else:
            status, rdate, index_status = "unreleased", None, "unreleased"
        g.add("versions", ver_id, key, f"{key} {2 + v // 3}.{v % 3}.0", status, rdate, index_status)
        versions.append((ver_id, status))
    unreleased = [vid for vid, st in versions if st == "unreleased"]
    blocked_version = unreleased[0] if unreleased else None
    clean_version = unreleased[1] if len(unreleased) > 1 else None
    number = 100 + g.rng.randrange(20)
    parents: list[tuple[str, str]] = []
    issue_status: dict[str, str] = {}
    issue_version: dict[str, str | None] = {}
    for _ in range(90 if not archived else 40):
        number += 1
        iid = f"{key}-{number}"
        created = g.day(date(2017, 1, 1) if archived else date(2019, 6, 1), date(2025, 5, 20))
        if archived:
            status = "Done"
        else:
            status = g.rng.choices(STATUSES, weights=[3, 3, 2, 4])[0]
        vid: str | None = None
        if not archived and g.rng.random() < 0.35:
            vid = g.rng.choice([v for v, _ in versions])
            if vid == clean_version:
                status = g.rng.choice(STATUSES)
            elif any(vid == v and st == "released" for v, st in versions):
                status = "Done"
        level = g.rng.choice(levels) if state < 2 and levels and g.rng.random() < 0.06 else None
        itype = g.rng.choice(["Story", "Bug", "Task"])
        upd = g.day(created, TODAY)
        g.add("issues", iid, key, itype, None, _summary(g), f"Details for {iid}: see the linked discussion.", status,
              _stale(g, status), 1, g.rng.choice(team), g.rng.choice(team), g.rng.choice(comps), vid, level,
              g.fmt(created), g.fmt(upd))
        parents.append((iid, status))
        issue_status[iid] = status
        issue_version[iid] = vid
        for _ in range(g.rng.choice([0, 0, 1, 2, 3, 4]) if g.rng.random() < 0.5 else 0):
            number += 1
            sid = f"{key}-{number}"
            sstatus = "Done" if status == "Done" else g.rng.choices(STATUSES, weights=[3, 2, 1, 3])[0]
            sub = f"{g.rng.choice(SUBTASK_VERBS)} {g.rng.choice(NOUNS)}"
            indexed = 0 if g.rng.random() < 0.2 else 1
            g.add("issues", sid, key, "Sub-task", iid, sub, f"Sub-task of {iid}.", sstatus, _stale(g, sstatus),
                  indexed, g.rng.choice(team), g.rng.choice(team), g.rng.choice(comps), None, level,
                  g.fmt(created), g.fmt(upd))
            issue_status[sid] = sstatus
        if g.rng.random() < 0.5:
            for _ in range(g.rng.randrange(1, 4)):
                when = g.day(created, TODAY)
                g.add("comments", g.next_id("CMT", 10001), iid, g.rng.choice(team), g.rng.choice(COMMENT_BODIES),
                      g.fmt(when))
    _links(g, parents, issue_status, issue_version, blocked_version, clean_version)


def _links(
    g: _Gen,
    parents: list[tuple[str, str]],
    status: dict[str, str],
    version: dict[str, str | None],
    blocked_version: str | None,
    clean_version: str | None,
) -> None:
    ids = [p for p, _ in parents]
    seen: set[tuple[str, str]] = set()
    for _ in range(len(ids) // 3):
        src, dst = g.rng.sample(ids, 2)
        if version.get(dst) == clean_version and clean_version and status[src] != DONE:
            continue
        if (src, dst) in seen or (dst, src) in seen:
            continue
        seen.add((src, dst))
        g.add("issue_links", g.next_id("LNK", 1001), src, dst, "blocks", g.day(date(2022, 1, 1), TODAY).isoformat())
    if blocked_version:
        targets = [i for i in ids if version.get(i) == blocked_version]
        blockers = [i for i in ids if status[i] != DONE and version.get(i) is None]
        if targets and blockers:
            src, dst = g.rng.choice(blockers), g.rng.choice(targets)
            if (src, dst) not in seen:
                g.add("issue_links", g.next_id("LNK", 1001), src, dst, "blocks", TODAY.isoformat())
