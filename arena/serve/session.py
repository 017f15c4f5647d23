"""Episodes as sessions over the gym runtime, for every served surface (MCP, OpenEnv, Docker).

A :class:`GymService` holds one pack. Each episode is a session: the client picks the task and the
seed when it starts, gets back an opaque episode handle and the observation, calls tools through the
same :class:`~arena.core.gym.Gym` dispatch as an in-process rollout, and ends with its reply, which is when
the verdict (computed by the gym's own verifier) leaves the service. Every session plays on its own
gym, so one session's writes are never visible to another; a gym returns to the idle pool only after
its episode ended and starts its next episode from the template world.

Agents are served the train split: only the tasks a training loop may practise on are listed, and a held-out
task starts only for an operator who presents the operator token (an evaluation run by the gym's owner). A client
without it neither sees held-out tasks nor can start one, so it cannot replay the held-out suite at seeds of its
choosing and learn its answers from the served score.

What leaves the service is what a human operator of the software would see: the observation holds the
prompt, persona, policy, tools and dependency graph (never the task's intent, gold program or assertions),
and the verdict an agent reads is an outcome -- score, passed, and per-check pass/fail by check kind. The
judged details (each assertion's result, the changed rows, the trace) go only to an operator who presents
the operator token. An episode belongs to the client that started it: another client's handle is refused as
if it did not exist. Open episodes are bounded per client and in total, and an episode left idle for
``idle_timeout_s`` is dropped, so clients that walk away cannot block others for longer than that.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from arena.core.domains import available_domains
from arena.core.gym import EnvironmentFailure, Gym
from arena.core.pack import Pack, PackError, build_pack, read_pack
from arena.core.results import ToolResult, TraceStep, Verdict
from arena.core.task import Persona
from arena.core.toolkit import ToolSpec

DEFAULT_MAX_SESSIONS = 64
"""Episodes a service runs at once, over all clients, unless told otherwise."""

DEFAULT_CLIENT_EPISODES = 8
"""Episodes one client may hold open at once unless told otherwise."""

DEFAULT_IDLE_TIMEOUT_S = 120.0
"""An episode untouched this long is dropped (its client went away)."""

LOCAL_CLIENT = "local"
"""The client of an in-process caller or of a stdio server (one client per process)."""

CHECK_KINDS = ("state", "trace", "side_effects", "response", "domain")
"""The check kinds a served verdict reports, in the order it lists them."""


class ServeError(RuntimeError):
    """A served gym cannot do what was asked; the message is one line naming the cause."""


class ServeLimits(BaseModel):
    """How much a served gym lets its clients hold.

    Attributes:
        max_episodes: Episodes open at once over all clients.
        client_episodes: Episodes one client may hold open at once.
        idle_timeout_s: Seconds after which an untouched episode is dropped.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_episodes: int = Field(default=DEFAULT_MAX_SESSIONS, ge=1, le=100_000)
    client_episodes: int = Field(default=DEFAULT_CLIENT_EPISODES, ge=1, le=100_000)
    idle_timeout_s: float = Field(default=DEFAULT_IDLE_TIMEOUT_S, gt=0)


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


class ServedObservation(BaseModel):
    """The start of a served episode: what a human operator of the software would see.

    Attributes:
        task_id: The task's id.
        prompt: The request, as the requester wrote it.
        persona: Who the agent acts as (name, role, permissions).
        policy: The business rules (Markdown).
        tools: The tools' specs (name, description, JSON-schema parameters, read/write, permission).
        graph: The weighted tool dependency graph (networkx node-link data): the software's workflows, the
            same for every task of the pack.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    prompt: str
    persona: Persona
    policy: str
    tools: list[ToolSpec]
    graph: dict[str, Any]


class CheckOutcome(BaseModel):
    """One check of a served verdict: its kind and whether it held, nothing else.

    Attributes:
        kind: ``state``, ``trace``, ``side_effects`` or ``response``.
        passed: Whether the check held.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    passed: bool


class ServedVerdict(BaseModel):
    """The verdict a served episode gives its client: the reward, never an answer key.

    Attributes:
        task_id: The episode's task.
        seed: The episode's seed.
        score: The reward: the fraction of the task's checks that held (what the TRL adapter's
            ``get_reward`` gives).
        passed: Whether every check held.
        checks: One entry per check of the task, ordered by kind (``state``, ``trace``, ``side_effects``,
            ``response``) and within a kind held checks first: which kinds failed, not which check or why.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    seed: int
    score: float
    passed: bool
    checks: list[CheckOutcome]


class EpisodeOutcome(BaseModel):
    """The judged episode in full, as the gym verified it: for operators only, never served to an agent.

    Attributes:
        task_id: The episode's task.
        seed: The episode's seed.
        reply: The reply the client ended with.
        score: Fraction of the checks that held.
        passed: Whether every check held.
        verdict: The gym verifier's verdict (each check's result and detail, the changed rows).
        trace: Every tool call of the episode, as the gym recorded it.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    seed: int
    reply: str
    score: float
    passed: bool
    verdict: Verdict
    trace: list[TraceStep]

    def served(self) -> ServedVerdict:
        """The outcome as any client may read it (see :class:`ServedVerdict`)."""
        order = {k: i for i, k in enumerate(CHECK_KINDS)}
        checks = sorted(self.verdict.results, key=lambda r: (order.get(r.kind, len(order)), not r.passed))
        return ServedVerdict(task_id=self.task_id, seed=self.seed, score=self.score, passed=self.passed,
                             checks=[CheckOutcome(kind=r.kind, passed=r.passed) for r in checks])


def outcome_of(gym: Gym, seed: int, reply: str, verdict: Verdict) -> EpisodeOutcome:
    """Build the outcome of the episode ``gym`` just verified."""
    return EpisodeOutcome(task_id=gym.task.id, seed=seed, reply=reply, score=verdict.score, passed=verdict.passed,
                          verdict=verdict, trace=list(gym.trace))


def served_observation(pack: Pack, task_id: str) -> ServedObservation:
    """The observation a served episode of ``task_id`` starts with.

    Raises:
        KeyError: Unknown task id.
    """
    task = pack.task(task_id)
    return ServedObservation(task_id=task.id, prompt=task.prompt, persona=task.persona, policy=pack.policy,
                             tools=list(pack.tools), graph=pack.graph)


def resolve_pack(target: str) -> Pack:
    """Load the pack a user named: a pack folder or an installed gym (built-in or external).

    Raises:
        ServeError: Neither a readable, valid pack folder nor an installed gym.
    """
    path = Path(target)
    gyms = available_domains()
    if path.is_dir() and ((path / "manifest.json").is_file() or target not in gyms):  # a gym's package is no pack
        try:
            return read_pack(path)
        except PackError as exc:
            raise ServeError(f"pack {target} refused: {exc}") from exc
    if target in gyms:
        return build_pack(target, seed=0)
    raise ServeError(
        f"{target!r} is neither a pack folder nor an installed gym ({', '.join(available_domains())})"
    )


_UNKNOWN_HANDLE = "no running episode has this handle: start one with start_episode, or it has ended"


@dataclass
class _Session:
    gym: Gym
    seed: int
    client: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    touched: float = field(default_factory=time.monotonic)


class GymService:
    """Runs episodes of one pack as sessions.

    Args:
        pack: The pack to serve.
        limits: Open-episode limits and the idle timeout.
        operator_token: The token an operator presents to read judged details; ``None``: nobody can.
    """

    def __init__(self, pack: Pack, *, limits: ServeLimits | None = None,
                 operator_token: SecretStr | None = None) -> None:
        self.pack = pack
        self.limits = limits or ServeLimits()
        if operator_token is not None and not operator_token.get_secret_value():
            raise ServeError("the operator token is empty; set a non-empty token or unset it")
        self._operator = operator_token.get_secret_value().encode() if operator_token is not None else None
        self._tasks = {t.id: t for t in pack.tasks}
        self._first = Gym.from_pack(pack)
        self._idle: list[Gym] = [self._first]
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    @property
    def max_sessions(self) -> int:
        """Episodes open at once over all clients."""
        return self.limits.max_episodes

    @property
    def name(self) -> str:
        """The served gym's name: its domain and the first characters of its pack id."""
        return f"gymloop-{self.pack.manifest.domain}-{self.pack.id[:12]}"

    def tasks(self, *, operator: bool = False) -> list[TaskSummary]:
        """The tasks a client may start, as it may see them (never the gold program or the assertions).

        Args:
            operator: Whether the caller presented the operator token: only then are held-out tasks listed.
        """
        return [TaskSummary(task_id=t.id, split=t.split, category=t.category, prompt=t.prompt)
                for t in self.pack.tasks if operator or t.split == "train"]

    def served_task_ids(self, *, operator: bool = False) -> list[str]:
        """The ids of the tasks :meth:`start` accepts from a client (the train split, or all for an operator)."""
        return [t.task_id for t in self.tasks(operator=operator)]

    def active(self) -> int:
        """Episodes running now."""
        with self._lock:
            return len(self._sessions)

    def is_operator(self, token: object) -> bool:
        """Whether ``token`` is this service's operator token (compared in constant time)."""
        if self._operator is None or not isinstance(token, str) or not token:
            return False
        return hmac.compare_digest(token.encode(), self._operator)

    def start(self, task_id: str, seed: int = 0, *, client: str = LOCAL_CLIENT,
              operator: bool = False) -> tuple[str, ServedObservation]:
        """Start an episode of ``task_id`` on a fresh world for ``client``.

        Args:
            task_id: The task.
            seed: The episode seed.
            client: Who starts it.
            operator: Whether the caller presented the operator token (a held-out task starts only then).

        Returns:
            The episode handle (the session's key, valid for ``client`` only) and the observation.

        Raises:
            ServeError: Unknown task, a held-out task without the operator token (refused with the same words
                as an unknown one, so a client learns nothing of the held-out suite), or the client's or the
                service's episode limit is reached.
        """
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or (task.split != "train" and not operator):
            raise ServeError(f"task {str(task_id)[:80]!r} is not served by pack {self.pack.id[:12]} "
                             f"({self.pack.manifest.domain}); list_tasks names the tasks this client may start")
        with self._lock:
            self._drop_idle_sessions()
            self._check_capacity(client)
            gym = self._idle.pop() if self._idle else None
        gym = gym or self._first.sibling()
        gym.reset(task_id, seed=seed)
        handle = secrets.token_hex(16)
        with self._lock:
            try:
                self._check_capacity(client)
            except ServeError:
                self._idle.append(gym)
                raise
            self._sessions[handle] = _Session(gym=gym, seed=seed, client=client)
        return handle, served_observation(self.pack, task_id)

    def call(self, handle: str, name: str, arguments: dict[str, Any] | str | None, *,
             client: str = LOCAL_CLIENT) -> ToolResult:
        """Run one tool call of the episode ``handle`` through the gym's dispatch.

        Raises:
            ServeError: Unknown or ended episode, one of another client, or the environment itself failed (the
                episode is dropped).
        """
        session = self._session(handle, client)
        with session.lock:
            session.touched = time.monotonic()
            try:
                return session.gym.call_tool(name, arguments)
            except EnvironmentFailure as exc:
                self._forget(handle, keep=False)
                raise ServeError(f"the environment failed and the episode was dropped: {exc}") from exc

    def finish(self, handle: str, reply: str, *, client: str = LOCAL_CLIENT) -> EpisodeOutcome:
        """End the episode ``handle`` with the client's reply and judge it.

        The outcome returned is the operator's full view; a surface serves its :meth:`EpisodeOutcome.served`
        form unless the caller presented the operator token.

        Raises:
            ServeError: Unknown or ended episode, or one of another client.
        """
        session = self._session(handle, client)
        with session.lock:
            if self._sessions.get(handle) is not session:
                raise ServeError(_UNKNOWN_HANDLE)
            verdict = session.gym.verify(reply)
            outcome = outcome_of(session.gym, session.seed, reply, verdict)
            self._forget(handle, keep=True)
        return outcome

    def abandon(self, handle: str, *, client: str = LOCAL_CLIENT) -> None:
        """Drop an episode of ``client`` without judging it (its client went away)."""
        with self._lock:
            session = self._sessions.get(handle)
        if session is not None and session.client == client:
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

    def _check_capacity(self, client: str) -> None:
        limits = self.limits
        held = sum(1 for s in self._sessions.values() if s.client == client)
        if held >= limits.client_episodes:
            raise ServeError(f"this client already holds {held} open episodes (the limit per client is "
                             f"{limits.client_episodes}); end one before starting another")
        if len(self._sessions) >= limits.max_episodes:
            oldest = min(s.touched for s in self._sessions.values())
            frees = max(0.0, oldest + limits.idle_timeout_s - time.monotonic())
            raise ServeError(f"{len(self._sessions)} episodes are open on this gym (its limit); one frees when an "
                             f"episode ends, at the latest in {frees:.0f} s (episodes idle for "
                             f"{limits.idle_timeout_s:g} s are dropped)")

    def _session(self, handle: str, client: str) -> _Session:
        with self._lock:
            session = self._sessions.get(handle) if isinstance(handle, str) else None
        if session is None or not hmac.compare_digest(session.client.encode(), client.encode()):
            raise ServeError(_UNKNOWN_HANDLE)
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
        deadline = time.monotonic() - self.limits.idle_timeout_s
        for handle in [h for h, s in self._sessions.items() if s.touched < deadline]:
            session = self._sessions[handle]
            if session.lock.acquire(blocking=False):  # a session inside a tool call is not idle
                try:
                    del self._sessions[handle]
                    self._idle.append(session.gym)
                finally:
                    session.lock.release()
