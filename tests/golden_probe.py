"""Prints the golden digests of every built-in gym as JSON; the golden test runs it in fresh interpreters.

For each gym: the world bytes and pack id at two seeds, and for every task the gold program's trace, final world
and verdict, then one reference-policy episode's trace and verdict, and the diagnosis of those episodes.
Usage: ``python tests/golden_probe.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.checks.conformance import run_gold
from arena.core.domains import BUILTIN_DOMAINS
from arena.core.gym import Gym
from arena.core.pack import build_pack
from arena.rollout import EpisodeKey, play_episode
from diagnosis import DiagnosisContext, diagnose


def _digest(data: Any) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()


def probe(domain: str) -> dict[str, Any]:
    """The digests of one gym."""
    out: dict[str, Any] = {}
    for seed in (0, 1):
        pack = build_pack(domain, seed=seed)
        out[f"world@{seed}"] = _digest(pack.state_db)
        out[f"pack@{seed}"] = pack.id
    pack = build_pack(domain, seed=0)
    agent = ReferencePolicy(PolicyParams.initial())
    episodes = []
    with Gym(pack) as gym:
        for task in pack.tasks:
            verdict = run_gold(gym, task, seed=0)
            out[f"gold:{task.id}"] = {
                "passed": verdict.passed,
                "trace": _digest([s.model_dump(mode="json") for s in gym.trace]),
                "world": gym.state_hash(),
                "verdict": _digest(verdict.model_dump(mode="json")),
            }
            record = play_episode(gym, agent, EpisodeKey(pack.id, task.id, 0, 0))
            episodes.append(record)
            out[f"policy:{task.id}"] = {
                "trace": _digest([s.model_dump(mode="json") for s in record.trace]),
                "verdict": _digest(record.verdict.model_dump(mode="json") if record.verdict else None),
                "reply": _digest(record.reply),
            }
    ctx = DiagnosisContext.build(pack.tools, pack.graph, {(pack.id, t.id): t for t in pack.tasks})
    report = diagnose(episodes, ctx, seed=0)
    out["diagnosis"] = _digest([w.model_dump(mode="json", exclude={"examples"}) for w in report.weaknesses])
    return out


def main() -> None:
    """Print every gym's digests as one JSON object."""
    json.dump({domain: probe(domain) for domain in BUILTIN_DOMAINS}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
