"""Idle gyms by pack, so that episodes in flight never share one."""

from __future__ import annotations

import threading

from arena.agents.base import Agent, AsyncAgent
from arena.agents.user import ConversationConfig
from arena.core.episode import EpisodeRecord
from arena.core.gym import Gym
from arena.core.pack import Pack
from arena.rollout.config import EpisodeKey
from arena.rollout.episode import play_episode, play_episode_async


class GymPool:
    """Idle gyms by pack, so concurrent episodes never share one (a gym plays one episode at a time).

    Args:
        packs: The packs by id.
        conversation: How the users of conversational tasks are played (default: the scripted user).
    """

    def __init__(self, packs: dict[str, Pack], conversation: ConversationConfig | None = None) -> None:
        self._packs = packs
        self._conversation = conversation
        self._idle: dict[str, list[Gym]] = {}
        self._first: dict[str, Gym] = {}
        self._lock = threading.Lock()

    def take(self, pack_id: str) -> Gym:
        """An idle gym of the pack, or a new one (a sibling of the pack's first gym)."""
        with self._lock:
            idle = self._idle.get(pack_id)
            if idle:
                return idle.pop()
            first = self._first.get(pack_id)
        if first is not None:
            return first.sibling()
        gym = Gym.from_pack(self._packs[pack_id])
        with self._lock:
            self._first.setdefault(pack_id, gym)
        return gym

    def give(self, gym: Gym, *, broken: bool) -> None:
        """Put a gym back for the next episode, or close it when a tool of it crashed."""
        if broken:
            gym.close()
            return
        with self._lock:
            self._idle.setdefault(gym.pack.id, []).append(gym)

    def play(self, agent: Agent, key: EpisodeKey, *, timeout_s: float,
             stop: threading.Event | None = None) -> EpisodeRecord:
        """Play one episode on an idle gym of its pack (a gym whose tool crashed is closed, not reused)."""
        gym = self.take(key.pack_id)
        record = play_episode(gym, agent, key, timeout_s=timeout_s, stop=stop, conversation=self._conversation)
        self.give(gym, broken=record.failure is not None and record.failure.boundary == "environment")
        return record

    async def play_async(self, agent: AsyncAgent, key: EpisodeKey, *, timeout_s: float,
                         stop: threading.Event | None = None) -> EpisodeRecord:
        """``play`` on an event loop (``play_episode_async``)."""
        gym = self.take(key.pack_id)
        record = await play_episode_async(gym, agent, key, timeout_s=timeout_s, stop=stop,
                                          conversation=self._conversation)
        self.give(gym, broken=record.failure is not None and record.failure.boundary == "environment")
        return record

    def close(self) -> None:
        """Close every idle gym."""
        with self._lock:
            for gyms in self._idle.values():
                for gym in gyms:
                    gym.close()
            self._idle.clear()
            self._first.clear()
