"""Running a blind agent on a gym's base pack and keeping the episodes its mistake applied to."""

from __future__ import annotations

import functools

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack, build_pack
from arena.rollout import RolloutConfig, agent_seed, record_key, run_rollouts
from bench.blind_agents._policy import BlindPolicy
from bench.blind_agents._spec import BlindAgent


@functools.lru_cache(maxsize=8)
def base_pack(domain: str, world_seed: int = 0) -> Pack:
    """The gym's base pack: its world and tasks from ``world_seed`` with the default knobs."""
    return build_pack(domain, seed=world_seed)


def play(spec: BlindAgent, domain: str, seeds: list[int], k: int = 1, *,
         world_seed: int = 0) -> list[tuple[EpisodeRecord, str]]:
    """Run ``spec`` on every task of ``domain``'s base pack and return the episodes its mistake applied to.

    Args:
        spec: The agent.
        domain: A built-in gym (``helpdesk``, ``tracker``, ``procurement``).
        seeds: Episode seeds.
        k: Attempts per task and seed.
        world_seed: Seed of the gym's world and tasks (a fresh seed gives records, ids and tasks never seen).

    Returns:
        ``(record, label)`` for every episode of a clean agent, and for an injecting agent every episode where
        its mistake changed what it did (episodes where it did not apply are left out). Failed clean episodes
        and passed injected ones are kept.
    """
    agent = spec.make()
    records = run_rollouts(agent, [base_pack(domain, world_seed)], RolloutConfig(seeds=list(seeds), k=k))
    if spec.injects == "clean":
        return [(record, spec.injects) for record in records]
    if not isinstance(agent, BlindPolicy):
        raise TypeError(f"{spec.name}: an injecting agent must be a BlindPolicy to report where its mistake applied")
    return [(record, spec.injects) for record in records if agent.injected(agent_seed(record_key(record)))]

