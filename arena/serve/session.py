"""Episodes as sessions over the gym runtime, for every served surface (MCP, OpenEnv, Docker).

A :class:`GymService` holds one pack. Each episode is a session: the client picks the task and the
seed when it starts, gets back an opaque episode handle and the observation, calls tools through the
same :class:`~arena.core.gym.Gym` dispatch as an in-process rollout, and ends with its reply, which is when
the verdict (computed by the gym's own verifier) leaves the service. Every session plays on its own
gym, so one session's writes are never visible to another; a gym returns to the idle pool only after
its episode ended and starts its next episode from the template world.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from arena.core.domains import available_domains
from arena.core.gym import EnvironmentFailure, Gym, Observation
from arena.core.pack import Pack, PackError, build_pack, read_pack
from arena.core.results import ToolResult, TraceStep, Verdict

DEFAULT_MAX_SESSIONS = 64
"""Episodes a service runs at once unless told otherwise."""

DEFAULT_IDLE_TIMEOUT_S = 900.0
"""An episode untouched this long is dropped (its client went away)."""


class ServeError(RuntimeError):
    """A served gym cannot do what was asked; the message is one line naming the cause."""


class TaskSummary(BaseModel):
    """What a client may know of a task before it starts it.

    Attributes:
        task_id: The task's id.
        split: ``train`` or ``heldout``.
        category: Task family.
        prompt: The request the agent will receive.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    split: str
    category: str
    prompt: str


class EpisodeOutcome(BaseModel):
    """What the client gets when it ends an episode: the judged trace.

    Attributes:
        task_id: The episode's task.
        seed: The episode's seed.
        reply: The reply the client ended with.
        reward: 1.0 when every assertion held, else 0.0.
        verdict: The gym verifier's verdict (per-check results and side effects).
        trace: Every tool call of the episode, as the gym recorded it.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    seed: int
    reply: str
    reward: float
    verdict: Verdict
    trace: list[TraceStep]


def outcome_of(gym: Gym, seed: int, reply: str, verdict: Verdict) -> EpisodeOutcome:
    """Build the outcome of the episode ``gym`` just verified."""
    return EpisodeOutcome(
        task_id=gym.task.id, seed=seed, reply=reply, reward=1.0 if verdict.passed else 0.0,
        verdict=verdict, trace=list(gym.trace),
    )


def resolve_pack(target: str) -> Pack:
    """Load the pack a user named: a pack folder or a built-in domain.

    Raises:
        ServeError: Neither a readable, valid pack folder nor a built-in domain.
    """
    path = Path(target)
    if path.is_dir():
        try:
            return read_pack(path)
        except PackError as exc:
            raise ServeError(f"pack {target} refused: {exc}") from exc
    if target in available_domains():
        return build_pack(target, seed=0)
    raise ServeError(
        f"{target!r} is neither a pack folder nor a built-in domain ({', '.join(available_domains())})"
    )


@dataclass
class _Session:
    gym: Gym
    seed: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    touched: float = field(default_factory=time.monotonic)


class GymService:
    """Runs episodes of one pack as sessions.

    Args:
        pack: The pack to serve.
        max_sessions: Episodes running at once; one more is refused with a clear message.
        idle_timeout_s: An episode untouched this long is dropped.
    """

    def __init__(
        self, pack: Pack, *, max_sessions: int = DEFAULT_MAX_SESSIONS, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    ) -> None:
        self.pack = pack
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self._tasks = {t.id: t for t in pack.tasks}
        self._idle: list[Gym] = [Gym.from_pack(pack)]
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The served gym's name: its domain and the first characters of its pack id."""
        return f"gymloop-{self.pack.manifest.domain}-{self.pack.id[:12]}"

    def tasks(self) -> list[TaskSummary]:
        """The pack's tasks as a client may see them (never the gold program or the assertions)."""
        return [TaskSummary(task_id=t.id, split=t.split, category=t.category, prompt=t.prompt)
                for t in self.pack.tasks]

    def active(self) -> int:
        """Episodes running now."""
        with self._lock:
            return len(self._sessions)

    def start(self, task_id: str, seed: int = 0) -> tuple[str, Observation]:
        """Start an episode of ``task_id`` on a fresh world.

        Returns:
            The episode handle (the session's only key) and the observation.

        Raises:
            ServeError: Unknown task, or too many episodes running.
        """
        if task_id not in self._tasks:
            raise ServeError(f"task {task_id!r} is not in pack {self.pack.id[:12]} ({self.pack.manifest.domain})")
        with self._lock:
            self._drop_idle_sessions()
            self._check_capacity()
            gym = self._idle.pop() if self._idle else None
        gym = gym or Gym.from_pack(self.pack)
        observation = gym.reset(task_id, seed=seed)
        handle = secrets.token_hex(16)
        with self._lock:
            try:
                self._check_capacity()
            except ServeError:
                self._idle.append(gym)
                raise
            self._sessions[handle] = _Session(gym=gym, seed=seed)
        return handle, observation

    def call(self, handle: str, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        """Run one tool call of the episode ``handle`` through the gym's dispatch.

        Raises:
            ServeError: Unknown or ended episode, or the environment itself failed (the episode is dropped).
        """
        session = self._session(handle)
        with session.lock:
            session.touched = time.monotonic()
            try:
                return session.gym.call_tool(name, arguments)
            except EnvironmentFailure as exc:
                self._forget(handle, keep=False)
                raise ServeError(f"the environment failed and the episode was dropped: {exc}") from exc

    def finish(self, handle: str, reply: str) -> EpisodeOutcome:
        """End the episode ``handle`` with the client's reply and judge it.

        Raises:
            ServeError: Unknown or ended episode.
        """
        session = self._session(handle)
        with session.lock:
            if handle not in self._sessions:
                raise ServeError(f"episode {handle[:8]}... has already ended")
            verdict = session.gym.verify(reply)
            outcome = outcome_of(session.gym, session.seed, reply, verdict)
            self._forget(handle, keep=True)
        return outcome

    def abandon(self, handle: str) -> None:
        """Drop an episode without judging it (its client went away)."""
        with self._lock:
            session = self._sessions.get(handle)
        if session is not None:
            with session.lock:
                self._forget(handle, keep=True)

    def close(self) -> None:
        """Drop every episode and release every world."""
        with self._lock:
            gyms = [s.gym for s in self._sessions.values()] + self._idle
            self._sessions.clear()
            self._idle = []
        for gym in gyms:
            gym.close()

    def _check_capacity(self) -> None:
        if len(self._sessions) >= self.max_sessions:
            raise ServeError(f"{self.max_sessions} episodes are already running; end one before starting another")

    def _session(self, handle: str) -> _Session:
        with self._lock:
            session = self._sessions.get(handle) if isinstance(handle, str) else None
        if session is None:
            raise ServeError("no running episode has this handle: start one with start_episode, or it has ended")
        return session

    def _forget(self, handle: str, *, keep: bool) -> None:
        with self._lock:
            session = self._sessions.pop(handle, None)
            if session is None:
                return
            if keep:
                self._idle.append(session.gym)
        if not keep:
            session.gym.close()

    def _drop_idle_sessions(self) -> None:
        deadline = time.monotonic() - self.idle_timeout_s
        for handle in [h for h, s in self._sessions.items() if s.touched < deadline]:
            session = self._sessions.pop(handle)
            if session.lock.acquire(blocking=False):
                session.lock.release()
                self._idle.append(session.gym)

