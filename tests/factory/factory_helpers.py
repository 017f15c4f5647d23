from __future__ import annotations

from collections import Counter
from typing import Any

from arena.agents.base import AgentRun, CallTool
from arena.core.gym import Observation
from arena.core.pack import Pack
from factory_client import GateConfig, VariantRequest, WeaknessTarget

DOMAIN = "tracker"


class GoldReplayAgent:
    """A baseline that knows the gold programs: it solves a task on its first ``passes`` attempts, then idles."""

    name = "gold-replay"

    def __init__(self, passes: int, packs: list[Pack] | None = None) -> None:
        self.passes = passes
        self.attempts: Counter[tuple[str, str]] = Counter()
        self.gold: dict[tuple[str, str], Any] = {}
        for pack in packs or []:
            self.learn(pack)

    def learn(self, pack: Pack) -> None:
        for task in pack.tasks:
            self.gold[(task.id, task.prompt)] = task.gold

    @property
    def model_ref(self) -> str:
        return f"gold-replay:{self.passes}"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        key = (observation.task["task_id"], observation.task["prompt"])
        self.attempts[key] += 1
        gold = self.gold.get(key)
        if gold is None or self.attempts[key] > self.passes:
            return AgentRun(reply="")
        for step in gold.steps:
            call_tool(step.tool, step.arguments)
        return AgentRun(reply=gold.reply)


def small_request(**overrides: Any) -> VariantRequest:
    fields: dict[str, Any] = {
        "domain": DOMAIN,
        "targets": [
            WeaknessTarget(kind="missed_policy_dependency", weight=2.0, focus_tags=["prerequisite"],
                           knobs={"prerequisite_depth": 3}, tools=["set_issue_security"]),
            WeaknessTarget(kind="wrong_id", weight=1.0, focus_tags=["near_duplicate"],
                           knobs={"near_duplicate_rate": 0.3}),
        ],
        "variants": 2,
        "tasks_per_variant": 3,
        "seed": 11,
        "gate": GateConfig(k=2, band_min=0, band_max=2),
    }
    fields.update(overrides)
    return VariantRequest(**fields)


