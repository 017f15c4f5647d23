"""Running a batch: plan its episodes, pick the executor, keep GC pauses short while it runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Sequence

from arena.agents.base import Agent
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout.config import EpisodeKey, RolloutConfig, plan_episodes, prefers_event_loop
from arena.rollout.gc_pauses import FrozenAsTheyFinish
from arena.rollout.loop import AsyncBatch
from arena.rollout.processes import run_processes
from arena.rollout.threads import ThreadBatch


def run_rollouts(
    agent: Agent,
    packs: Sequence[Pack],
    config: RolloutConfig | None = None,
    *,
    skip: Iterable[EpisodeKey] = (),
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    stop: threading.Event | None = None,
) -> list[EpisodeRecord]:
    """Run every episode the config asks for and return the records in plan order.

    Args:
        agent: The agent (picklable for the ``process`` executor).
        packs: Packs whose tasks to run.
        config: Seeds, attempts, filters and executor.
        skip: Episodes already finished (e.g. recorded before a crash); not run again.
        on_episode: Called with each record as it finishes (progress, streaming writes).
        stop: Set it to stop the rollout (see ``run_episodes``).
    """
    config = config or RolloutConfig()
    done = set(skip)
    keys = [k for k in plan_episodes(packs, config) if k not in done]
    return run_episodes(agent, packs, keys, config, on_episode=on_episode, stop=stop)


def run_episodes(
    agent: Agent,
    packs: Sequence[Pack],
    keys: Sequence[EpisodeKey],
    config: RolloutConfig | None = None,
    *,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    stop: threading.Event | None = None,
) -> list[EpisodeRecord]:
    """Run exactly the episodes ``keys`` (e.g. one batch of a larger plan) and return them in order.

    Args:
        agent: The agent (picklable for the ``process`` executor; thread-safe when episodes run concurrently).
        packs: Packs holding the keys' tasks.
        keys: Episodes to run.
        config: Executor, concurrency, circuit breaker and per-episode time limit (its seeds and filters are
            ignored).
        on_episode: Called with each record as it finishes (in finishing order, from the calling thread).
        stop: Set it to stop the batch: no episode starts after it, episodes in flight are abandoned.

    Raises:
        KeyError: A key names a pack not in ``packs``.
        RolloutStopped: ``stop`` was set; the episodes finished until then are on the exception.
        ModelUnavailable: The circuit breaker opened; the episodes finished before the failing streak are on it.
    """
    config = config or RolloutConfig()
    keys = list(keys)
    by_id = {p.id: p for p in packs}
    missing = sorted({k.pack_id for k in keys} - set(by_id))
    if missing:
        raise KeyError(f"episodes name packs that were not given: {', '.join(m[:12] for m in missing)}")
    if not keys:
        return []
    with FrozenAsTheyFinish() as frozen:  # finished records live as long as the batch: keep GC pauses short
        counted = frozen.counting(on_episode)
        if config.executor == "process":
            return run_processes(agent, by_id, keys, config, counted, stop or threading.Event())
        slots = config.max_concurrency * (config.workers if config.executor == "thread" else 1)
        if slots > 1 and prefers_event_loop(agent, config) and not _loop_running():
            return AsyncBatch(agent, by_id, keys, config, counted, stop).run(slots)
        return ThreadBatch(agent, by_id, keys, config, counted, stop).run(slots)


def _loop_running() -> bool:
    """Whether this thread runs an event loop already (a batch cannot start its own inside it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
