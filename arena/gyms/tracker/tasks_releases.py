"""Release templates of the tracker gym: releasing a version (blockers checked first) and its release status."""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from arena.authoring import (
    Draft,
    EntityRef,
    FormattedValue,
    Intent,
    calls,
    goal,
    legacy_date,
    nth,
    read_date,
    ref,
    scope,
    state,
    step,
    writes,
)
from arena.gyms.tracker.rules import DONE
from arena.gyms.tracker.tasks_common import PROJECT_ADMIN, Index, prefer, said
from arena.gyms.tracker.world import CLOCK_START

TODAY = CLOCK_START[:10]
"""The episode clock's date, the release date a requester means by "today"."""


def _blockers(x: Index, vid: str) -> list[str]:
    out: list[str] = []
    for r in x.fix_issues.get(vid, []):
        out += [b for b in x.blockers.get(r["id"], []) if x.issue[b]["status"] != DONE and b not in out]
    return out


def _unreleased(x: Index, blocked: bool) -> list[dict[str, Any]]:
    return x.memo(f"unreleased:{blocked}", lambda: [
        v for v in x.versions if v["status"] == "unreleased" and not x.project[v["project_id"]]["archived"]
        and bool(_blockers(x, v["id"])) == blocked])


def _version_ref(version: dict[str, Any]) -> EntityRef:
    return ref("version", "version", version["name"], by_id=False, project_id=version["project_id"])


def release(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Release a version without blockers on a date the requester writes the old way; blockers checked first."""
    version = nth(_unreleased(x, blocked=False), rng, i)
    if version is None:
        return None
    vid, vname = version["id"], version["name"]
    iso = f"2025-06-{2 + (7 * i + rng.randrange(20)) % 20:02d}"
    raw = legacy_date(date.fromisoformat(iso), (3, 0, 4)[i % 3])
    reply = f"Released {vname} with release date {iso}; no open issues block it."
    return Draft(
        prompt=f"Please release version {vname} with the release date {raw}.",
        persona=PROJECT_ADMIN,
        intent=Intent(goal="release_version", refs=[_version_ref(version)],
                      calls=[goal("release_version", version_id="$version",
                                  release_date=FormattedValue(format="date", raw=raw))],
                      report=["$version.name", "$release_version.release_date"]),
        reply=reply,
        assertions=[
            state("the version is released on the requested date",
                  f"SELECT status, release_date FROM versions WHERE id='{vid}'", [["released", iso]]),
            calls("blockers are checked before the release",
                  [("check_release_blockers", {"version_id": vid}),
                   ("release_version", {"version_id": vid, "release_date": iso})], order=[(0, 1)]),
            writes(scope("versions", [vid], ["status", "release_date"])),
            said("confirms the release", reply, [[vname], [iso, raw]]),
        ],
    )


def release_blocked(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Ship a version whose issues are blocked by open ones: name the blockers, release nothing."""
    version = nth(_unreleased(x, blocked=True), rng, i)
    if version is None:
        return None
    vid, vname = version["id"], version["name"]
    blockers = _blockers(x, vid)
    reply = f"{vname} cannot ship yet: open blockers {', '.join(blockers)}. I did not release it."
    return Draft(
        prompt=f"Ship {vname} today, please.",
        persona=PROJECT_ADMIN,
        intent=Intent(goal="release_version", refs=[_version_ref(version)],
                      calls=[goal("release_version", version_id="$version", release_date=TODAY)],
                      report=["$version.name", "$release_version.release_date"]),
        steps=[step("search_versions", query=vname), step("get_version", version_id=vid),
               step("check_release_blockers", version_id=vid)],
        reply=reply,
        assertions=[
            state("the version stays unreleased", f"SELECT status FROM versions WHERE id='{vid}'", [["unreleased"]]),
            calls("blockers are checked and the version is not released",
                  [("check_release_blockers", {"version_id": vid})], forbidden=[("release_version", {})]),
            writes(),
            said("names the blockers", reply, [[b] for b in blockers]),
        ],
    )


def release_status(x: Index, rng: random.Random, i: int) -> Draft | None:
    """Whether and when a version shipped, for a customer; the index may say unreleased, the date may be legacy."""
    pool = [v for v in x.versions if v["status"] == "released"]
    good = [v for v in pool
            if v["index_status"] != v["status"] or read_date(v["release_date"]).isoformat() != v["release_date"]]
    version = nth(prefer(pool, good), rng, i)
    if version is None:
        return None
    vid, vname, raw = version["id"], version["name"], version["release_date"]
    iso = read_date(raw).isoformat()
    reply = f"Yes, {vname} has shipped: it was released on {iso}."
    return Draft(
        prompt=f"A customer asks whether {vname} has shipped yet, and on what date. What can I tell them?",
        intent=Intent(goal="report_release_status", refs=[ref("version", "version", vname, by_id=False)],
                      report=["$version.status", "$version.release_date"]),
        reply=reply,
        assertions=[
            calls("the version record is fetched", [("get_version", {"version_id": vid})]),
            writes(),
            said("states the release and its date", reply, [["released", "shipped"], [iso, raw]],
                 ["unreleased", "not yet", "not released"], [r"\bVER-\d+"]),
        ],
        tags=["stale_record"] if version["index_status"] != "released" else [],
    )
