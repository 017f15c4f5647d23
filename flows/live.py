"""Episodes as they finish: small registry commits, a live meter, and the rollout settings for one batch.

A batch's episodes reach the registry a few at a time (``EpisodeSink``), so a crash or a stop loses at
most the episodes in flight and the few not yet committed; a resume skips every recorded one. The
``RolloutMeter`` counts episodes, tokens and errors for the progress bar of ``gymloop round``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from arena.agents.base import Agent
from arena.core.episode import EpisodeRecord
from arena.rollout import RolloutConfig, RolloutStopped
from flows.conversation import conversation_config
from flows.settings import GymloopSettings
from registry import Registry

COMMIT_EVERY = 16
"""Episodes per registry commit at most."""

COMMIT_SECONDS = 0.5
"""Longest time a finished episode waits for its commit."""


class EpisodeSink:
    """Records a stage's episodes in small commits as they finish (the rollout engine's ``on_episode``).

    Args:
        registry: Where the episodes go.
        round_id: The round.
        stage: The stage (``eval_before``, ``train``, ``eval_after``).
        model_id: The registered model playing the episodes.
        every: Episodes per commit at most.
        seconds: Longest wait of a finished episode before its commit.
        clock: Monotonic clock.
    """

    def __init__(self, registry: Registry, round_id: int, stage: str, model_id: int, *, every: int = COMMIT_EVERY,
                 seconds: float = COMMIT_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry
        self.round_id = round_id
        self.stage = stage
        self.model_id = model_id
        self.every = every
        self.seconds = seconds
        self.clock = clock
        self.pending: list[EpisodeRecord] = []
        self.commits = 0
        self.recorded = 0
        self._since = clock()

    def __call__(self, record: EpisodeRecord) -> None:
        """Take one finished episode; commit when enough are waiting or the oldest waited long enough."""
        self.pending.append(record)
        meter = current_meter()
        if meter is not None:
            meter.add(record)
        if len(self.pending) >= self.every or self.clock() - self._since >= self.seconds:
            self.flush()

    def flush(self) -> None:
        """Commit the waiting episodes (one transaction)."""
        if self.pending:
            self.recorded += self.registry.record_episodes(self.round_id, self.pending, stage=self.stage,
                                                          model_id=self.model_id)
            self.commits += 1
            self.pending = []
        self._since = self.clock()

    def __enter__(self) -> EpisodeSink:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.flush()


class RolloutMeter:
    """Thread-safe counts of finished episodes, their tokens, cost and errors, since it started."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.started = clock()
        self.episodes = 0
        self.errors = 0
        self.tokens = 0
        self.cost = 0.0

    def add(self, record: EpisodeRecord) -> None:
        """Count one finished episode."""
        with self._lock:
            self.episodes += 1
            self.errors += record.failure is not None
            self.tokens += record.tokens_in + record.tokens_out
            self.cost += record.cost

    def line(self) -> str:
        """``episodes, episodes/s, tokens/s, errors`` for a progress bar."""
        with self._lock:
            elapsed = max(1e-9, self._clock() - self.started)
            return (f"{self.episodes} episodes, {self.episodes / elapsed:.1f} ep/s, {self.tokens / elapsed:.0f} tok/s, "
                    f"{self.errors} errors" + (f", ${self.cost:.4f}" if self.cost else ""))


_METER: list[RolloutMeter] = []


def current_meter() -> RolloutMeter | None:
    """The meter of the command running in this process, if it shows one."""
    return _METER[-1] if _METER else None


@contextmanager
def metering() -> Iterator[RolloutMeter]:
    """Count the episodes this process records while inside (for ``gymloop round``'s progress bar)."""
    meter = RolloutMeter()
    _METER.append(meter)
    try:
        yield meter
    finally:
        _METER.remove(meter)


def rollout_config(settings: GymloopSettings, agent: Agent) -> RolloutConfig:
    """A batch's rollout settings: LLM episodes run ``max_concurrency`` at a time behind the circuit breaker."""
    llm = agent.name == "litellm"

    return RolloutConfig(executor="inline", max_concurrency=settings.runner.max_concurrency if llm else 1,
                         max_model_failures=settings.runner.max_model_failures if llm else None,
                         episode_timeout_s=max(30.0, settings.models.model_timeout_s * 4),
                         conversation=conversation_config(settings))


def retry_unless_stopped(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry a failed batch, but not one stopped on purpose or by the circuit breaker."""
    return not isinstance(getattr(state, "data", None), RolloutStopped)
