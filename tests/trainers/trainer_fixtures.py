"""Toy packs and real reference-policy rollouts for the trainer tests."""

from __future__ import annotations

from toy_domain import TOY

from arena.agents.reference import PolicyParams, ReferencePolicy
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.rollout import RolloutConfig, run_rollouts
from curriculum import Wave, WaveEntry


def toy_pack() -> Pack:
    return build_pack(TOY, seed=0, knobs={"orders": 60})


def rollouts(pack: Pack, params: PolicyParams, task_ids: list[str], k: int, seed: int = 0) -> list[EpisodeRecord]:
    return run_rollouts(ReferencePolicy(params), [pack], RolloutConfig(seeds=[seed], k=k, task_ids=task_ids))


def wave_for(pack: Pack, task_ids: list[str], k: int, round_index: int = 0) -> Wave:
    return Wave(round_index=round_index, strategy="targeted", k=k, budget=k * len(task_ids), entries=[
        WaveEntry(pack_id=pack.id, task_id=t, weight=1 / len(task_ids), reason="test", source="targeted",
                  weakness="missed_policy_dependency") for t in task_ids])
