"""Builders of weakness reports, task pools and histories for the curriculum tests."""

from __future__ import annotations

from curriculum import GroupResult, History, TaskRef
from diagnosis import ShareInterval, Weakness, WeaknessReport


def weakness(kind: str, rank: int, share: float, tags: list[str], domains: list[str] | None = None) -> Weakness:
    return Weakness(kind=kind, label=kind, description=kind, rank=rank, impact=share, share=share,
                    share_interval=ShareInterval(low=max(0.0, share - 0.1), high=min(1.0, share + 0.1)),
                    mean_reward_lost=0.5, learnability=0.5, count=10, focus_tags=tags, domains=domains or [])


def report(*weaknesses: Weakness) -> WeaknessReport:
    return WeaknessReport(weaknesses=list(weaknesses), episodes=100, failures=60)


def pool() -> list[TaskRef]:
    tasks = []
    for i in range(10):
        tasks.append(TaskRef(pack_id="P1", task_id=f"dup-{i}", domain="helpdesk", category="information_retrieval",
                             tags=("near_duplicate",)))
        tasks.append(TaskRef(pack_id="P1", task_id=f"pre-{i}", domain="helpdesk", category="policy_reasoning",
                             tags=("prerequisite",)))
        tasks.append(TaskRef(pack_id="P2", task_id=f"fmt-{i}", domain="tracker", category="multi_step_workflow",
                             tags=("legacy_format",)))
    tasks.append(TaskRef(pack_id="P1", task_id="held-0", domain="helpdesk", tags=("near_duplicate",),
                         split="heldout"))
    return tasks


def group(round_index: int, passed: list[bool], scores: list[float] | None = None) -> GroupResult:
    return GroupResult(round_index=round_index, passed=passed,
                       scores=scores if scores is not None else [1.0 if p else 0.5 for p in passed])


def history_with(groups: dict[tuple[str, str], list[GroupResult]]) -> History:
    history = History()
    for (pack_id, task_id), results in groups.items():
        for g in results:
            history.record_group(pack_id, task_id, g)
    return history
