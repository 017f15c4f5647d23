"""Digests of every task of every built-in gym for seeds 0-4, to prove a port onto the kit changes no task.

Each task is digested field by field (prompt, persona, intent, gold program, assertions, split, category, tags,
the faults it references), so a difference names the field that moved; each seed's world is digested by its
logical hash (every table's rows in rowid order). Fault specs are digested by content without their ids (ids are
names, not behaviour). Regenerate the fixtures with ``python tests/gyms/golden_tasks.py`` and say in the commit
which change explains every digest that moved.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from arena.core.domain import FaultSpec
from arena.core.domains import BUILTIN_DOMAINS, get_domain
from arena.core.gym import logical_hash
from arena.core.task import Task

SEEDS = (0, 1, 2, 3, 4)
"""The seeds every built-in gym is digested at."""

FIXTURES = Path(__file__).resolve().parent / "golden"
"""One JSON file per gym: ``<domain>.json``."""


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _fault(spec: FaultSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude={"id"})


def task_digest(task: Task, faults: dict[str, FaultSpec]) -> dict[str, Any]:
    """The digest of one task, field by field."""
    return {
        "prompt": _digest(task.prompt),
        "persona": _digest(task.persona.model_dump(mode="json")),
        "intent": _digest(task.intent.model_dump(mode="json")),
        "gold": _digest(task.gold.model_dump(mode="json")),
        "assertions": _digest([a.model_dump(mode="json") for a in task.assertions]),
        "split": task.split,
        "category": task.category,
        "tags": sorted(task.tags),
        "faults": _digest(sorted((_fault(faults[f]) for f in task.faults), key=json.dumps)),
    }


def gym_digest(domain: str) -> dict[str, Any]:
    """Every seed's world hash and task digests of one gym, tasks keyed by id."""
    out: dict[str, Any] = {}
    for seed in SEEDS:
        world = get_domain(domain).generate(seed, {})
        conn = sqlite3.connect(":memory:")
        conn.deserialize(world.state_db)
        faults = {f.id: f for f in world.faults}
        out[str(seed)] = {
            "world": logical_hash(conn)[:16],
            "clock_start": world.clock_start,
            "tasks": {t.id: task_digest(t, faults) for t in sorted(world.tasks, key=lambda t: t.id)},
        }
        conn.close()
    return out


def main() -> None:
    """Write the fixtures of the gyms named on the command line (default: every built-in gym)."""
    FIXTURES.mkdir(exist_ok=True)
    for domain in sys.argv[1:] or BUILTIN_DOMAINS:
        path = FIXTURES / f"{domain}.json"
        path.write_text(json.dumps(gym_digest(domain), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
