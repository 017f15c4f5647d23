"""What a batch of episodes is: its config, its episodes' keys and the agent's seed for each."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.base import Agent, AsyncAgent
from arena.agents.user import ConversationConfig
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.core.task import Split


class RolloutConfig(BaseModel):
    """How to run a batch of episodes.

    Attributes:
        seeds: Episode seeds; each task runs once per seed and attempt.
        k: Attempts per task and seed (for pass@k and pass^k).
        split: Only tasks of this split (``None`` for all).
        task_ids: Only these task ids (``None`` for all).
        executor: ``inline`` (one worker, this process), ``thread`` or ``process`` workers.
        workers: Parallel workers for ``thread`` and ``process``.
        max_concurrency: Episodes in flight inside one worker (each process of the ``process`` executor keeps
            this many), for agents that wait on a model server; an adaptive limit lowers it while the server is
            overloaded.
        max_model_failures: Stop the batch (``ModelUnavailable``) when this many consecutive episodes fail
            at the model API; ``None`` never stops.
        episode_timeout_s: Wall-clock limit per episode.
        async_episodes: Keep the episodes in flight of an agent that can await its model (``AsyncAgent``) on one
            event loop rather than a thread each (a thread batch spends about half its CPU on threads taking
            turns at 64 in flight); ``False`` always uses threads.
        conversation: How the users of conversational tasks are played (the scripted user unless a user model is
            given) and the limits of a conversation.
    """

    model_config = ConfigDict(extra="forbid")

    seeds: list[int] = Field(default_factory=lambda: [0])
    k: int = Field(default=1, ge=1)
    split: Split | None = None
    task_ids: list[str] | None = None
    executor: Literal["inline", "thread", "process"] = "inline"
    workers: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1, ge=1, le=4096)
    max_model_failures: int | None = Field(default=None, ge=1)
    episode_timeout_s: float = Field(default=120.0, gt=0)
    async_episodes: bool = True
    conversation: ConversationConfig = Field(default_factory=ConversationConfig)


@dataclass(frozen=True)
class EpisodeKey:
    """Identifies one episode of a batch."""

    pack_id: str
    task_id: str
    seed: int
    attempt: int

def agent_seed(key: EpisodeKey) -> int:
    """Seed for the agent's own sampling, distinct per task, seed and attempt."""
    digest = hashlib.sha256(f"{key.pack_id}|{key.task_id}|{key.seed}|{key.attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def plan_episodes(packs: Sequence[Pack], config: RolloutConfig) -> list[EpisodeKey]:
    """List the episodes a config asks for, in a stable order."""
    keys: list[EpisodeKey] = []
    for pack in packs:
        for task in pack.tasks:
            if config.split is not None and task.split != config.split:
                continue
            if config.task_ids is not None and task.id not in config.task_ids:
                continue
            for seed in config.seeds:
                for attempt in range(config.k):
                    keys.append(EpisodeKey(pack.id, task.id, seed, attempt))
    return keys

def record_key(record: EpisodeRecord) -> EpisodeKey:
    """The key of the episode a record is of."""
    return EpisodeKey(record.pack_id, record.task_id, record.seed, record.attempt)


def prefers_event_loop(agent: Agent, config: RolloutConfig) -> bool:
    """Whether the batch's concurrent episodes run on an event loop (the agent's ``arun_episode``)."""
    return config.async_episodes and isinstance(agent, AsyncAgent) and agent.prefers_event_loop
