"""Play a blind agent on a built-in gym's base pack and label the episodes its mistake applied to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from arena.core.episode import EpisodeRecord
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack
from arena.rollout import EpisodeKey, play_episode
from bench.blind_agents._spec import BlindAgent
from bench.blind_agents_v2._agent import SlipAgent
from bench.blind_agents_v2._hand import Hand
from bench.blind_agents_v2._voice import VOICE_NAMED


@cache
def base_pack(domain: str, world_seed: int = 0) -> Pack:
    """The base pack of a built-in gym at a world seed (built once per process)."""
    return build_pack(domain, seed=world_seed)


@dataclass(frozen=True)
class Played:
    """One episode of a blind agent.

    Attributes:
        record: The episode.
        slipped: Whether the agent's mistake applied in it.
        clean_passed: Whether the agent's clean twin (same voice, no mistake) passes the same episode (a clean
            agent is its own twin).
    """

    record: EpisodeRecord
    slipped: bool
    clean_passed: bool


@cache
def _clean_passes(voice_name: str, domain: str, world_seed: int, seeds: tuple[int, ...], k: int,
                  tasks: tuple[str, ...]) -> dict[tuple[str, int, int], bool]:
    """Which episodes the clean twin of a voice passes: ``(task, seed, attempt) -> passed``."""
    twin = SlipAgent(f"clean-twin-{voice_name}", Hand, VOICE_NAMED[voice_name], slips=False)
    pack = base_pack(domain, world_seed)
    with Gym(pack) as gym:
        return {(task, seed, attempt): play_episode(gym, twin, EpisodeKey(pack.id, task, seed, attempt)).passed
                for task in tasks for seed in seeds for attempt in range(k)}


def play_all(spec: BlindAgent, domain: str, seeds: Sequence[int], k: int, *, world_seed: int = 0,
             tasks: Sequence[str] | None = None) -> list[Played]:
    """Play an agent on every task of a gym's base pack (or on ``tasks``), ``k`` attempts per episode seed.

    Raises:
        TypeError: ``spec.make`` does not build a ``SlipAgent``.
        KeyError: A task of ``tasks`` is not in the pack, naming it.
    """
    agent = spec.make()
    if not isinstance(agent, SlipAgent):
        raise TypeError(f"blind agent {spec.name!r} builds a {type(agent).__name__}, not a SlipAgent")
    pack = base_pack(domain, world_seed)
    known = [t.id for t in pack.tasks]
    unknown = sorted(set(tasks or ()) - set(known))
    if unknown:
        raise KeyError(f"tasks {unknown} are not in the {domain} pack at world seed {world_seed}")
    chosen = tuple(t for t in known if tasks is None or t in tasks)
    clean = None if agent.hand is Hand else _clean_passes(agent.voice.name, domain, world_seed, tuple(seeds), k, chosen)
    out: list[Played] = []
    with Gym(pack) as gym:
        for task in chosen:
            for seed in seeds:
                for attempt in range(k):
                    record = play_episode(gym, agent, EpisodeKey(pack.id, task, seed, attempt))
                    passed = record.passed if clean is None else clean[(task, seed, attempt)]
                    out.append(Played(record, agent.last_slipped, passed))
    return out


def play(spec: BlindAgent, domain: str, seeds: Sequence[int], k: int, *, world_seed: int = 0,
         tasks: Sequence[str] | None = None) -> list[tuple[EpisodeRecord, str]]:
    """The labelled episodes of one agent on one gym: those its mistake applied to.

    An episode whose task the agent's clean twin fails is left out: its failure would not be the mistake's.

    Returns:
        ``(episode, label)`` pairs; the label is ``spec.injects``.
    """
    return [(p.record, spec.injects) for p in play_all(spec, domain, seeds, k, world_seed=world_seed, tasks=tasks)
            if p.clean_passed and (p.slipped or spec.injects == "clean")]
