"""The rollout engine: tasks x seeds x attempts for an agent, each episode in a fresh world.

One failing episode never stops a batch: a crash, a hang or a timeout is recorded
on that episode with its failure boundary (agent, model_api, environment,
verifier). With the ``process`` executor a hung or dying episode is ended by
killing its worker, which is replaced.

Episodes that wait on a model server run concurrently inside each worker:
``max_concurrency`` episodes in flight on as many episode threads, under an
adaptive limit that backs off when the server is overloaded (one interpreter
serves a few hundred episodes a second; ``process`` workers multiply that). A circuit breaker
stops the batch when the model fails in ``max_model_failures`` consecutive
episodes, and a stop event ends it at once (e.g. on SIGTERM).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.base import Agent, AgentRun, AsyncAgent, CallTool, ModelAPIError
from arena.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.gc_pauses import FrozenAsTheyFinish
from arena.gym import EnvironmentFailure, Gym, Observation
from arena.gyms import registered_modules
from arena.limits import AdaptiveLimit, reporting_to
from arena.pack import Pack
from arena.results import ToolResult
from arena.task import Split
from arena.text import clean_text


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


@dataclass(frozen=True)
class EpisodeKey:
    """Identifies one episode of a batch."""

    pack_id: str
    task_id: str
    seed: int
    attempt: int


class EpisodeTimeout(Exception):
    """The episode ran past its wall-clock limit."""


class EpisodeCancelled(Exception):
    """The batch was stopped while the episode ran."""


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


def _record(gym: Gym, agent: Agent, key: EpisodeKey, run: AgentRun | None, started: float,
            failure: EpisodeFailure | None, invalid: bool, verdict: Any) -> EpisodeRecord:
    task = gym.pack.task(key.task_id)
    usage = run or AgentRun()
    return EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=gym.pack.manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, trace=list(gym.trace), reply=usage.reply, verdict=verdict, failure=failure,
        invalid=invalid, tokens_in=usage.tokens_in, tokens_out=usage.tokens_out, cost=usage.cost,
        latency_s=usage.latency_s, wall_time_s=time.perf_counter() - started, turns=usage.turns,
        decisions=list(usage.decisions),
    )


def play_episode(gym: Gym, agent: Agent, key: EpisodeKey, *, timeout_s: float | None = None,
                 stop: threading.Event | None = None) -> EpisodeRecord:
    """Play one episode and return its record; never raises for a failing episode.

    Args:
        gym: A gym holding the episode's pack.
        agent: The agent.
        key: Which task, seed and attempt.
        timeout_s: Wall-clock limit, enforced at each tool call.
        stop: When set, the episode's next tool call ends it (the record is then discarded by the engine).
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    try:
        run = agent.run_episode(observation, call_tool, seed=agent_seed(key))
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc)
    return _judged(gym, agent, key, started, run)


async def play_episode_async(gym: Gym, agent: AsyncAgent, key: EpisodeKey, *, timeout_s: float | None = None,
                             stop: threading.Event | None = None) -> EpisodeRecord:
    """``play_episode`` on an event loop, for agents that await their model.

    The time limit also ends a model call that outlives it: the episode is recorded as timed out, as at a tool call.
    """
    started = time.perf_counter()
    observation, call_tool = _start(gym, key, started, timeout_s, stop)
    try:
        async with asyncio.timeout(timeout_s) as limit:
            run = await agent.arun_episode(observation, call_tool, seed=agent_seed(key))
    except TimeoutError as exc:
        if not limit.expired():
            return _failed(gym, agent, key, started, exc)
        return _failed(gym, agent, key, started, EpisodeTimeout(f"episode exceeded {timeout_s:g} s"))
    except Exception as exc:  # every failure of the episode is recorded on it, never raised into the batch
        return _failed(gym, agent, key, started, exc)
    return _judged(gym, agent, key, started, run)


def _start(gym: Gym, key: EpisodeKey, started: float, timeout_s: float | None,
           stop: threading.Event | None) -> tuple[Observation, CallTool]:
    """Reset the gym for the episode; return its observation and the agent's guarded ``call_tool``."""
    deadline = started + timeout_s if timeout_s else None
    observation = gym.reset(key.task_id, seed=key.seed)

    def call_tool(name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        if deadline is not None and time.perf_counter() > deadline:
            raise EpisodeTimeout(f"episode exceeded {timeout_s:g} s")
        if stop is not None and stop.is_set():
            raise EpisodeCancelled("the rollout was stopped")
        return gym.call_tool(name, arguments)

    return observation, call_tool


def _failed(gym: Gym, agent: Agent, key: EpisodeKey, started: float, exc: Exception) -> EpisodeRecord:
    """The record of an episode the agent did not finish, attributed to its boundary."""
    if isinstance(exc, ModelAPIError):
        failure = EpisodeFailure(boundary="model_api", kind=exc.kind, message=exc.message)
        return _record(gym, agent, key, exc.usage, started, failure, exc.invalid, None)
    if isinstance(exc, EnvironmentFailure):
        # A tool crashed on the agent's own arguments: a bug in that tool, and the agent's failed episode. It stays
        # valid, so an agent cannot hide a failing episode by crashing a tool.
        failure = EpisodeFailure(boundary="environment", kind="tool_crash", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    if isinstance(exc, EpisodeCancelled):
        failure = EpisodeFailure(boundary="agent", kind="cancelled", message=str(exc))
        return _record(gym, agent, key, None, started, failure, True, None)
    if isinstance(exc, EpisodeTimeout):
        failure = EpisodeFailure(boundary="agent", kind="episode_timeout", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    failure = EpisodeFailure(boundary="agent", kind="crash", message=f"{type(exc).__name__}: {exc}")
    return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))


def _judged(gym: Gym, agent: Agent, key: EpisodeKey, started: float, run: AgentRun) -> EpisodeRecord:
    """The record of an episode the agent finished, with its verdict."""
    run.reply = clean_text(run.reply) if isinstance(run.reply, str) else ""
    try:
        verdict = gym.verify(run.reply)
    except Exception as exc:  # a verifier bug must not count against the agent
        failure = EpisodeFailure(boundary="verifier", kind="crash", message=f"{type(exc).__name__}: {exc}")
        return _record(gym, agent, key, run, started, failure, True, None)
    return _record(gym, agent, key, run, started, None, False, verdict)


def _verify_quietly(gym: Gym, reply: str) -> Any:
    try:
        return gym.verify(reply)
    except Exception:  # the episode already failed; a second failure adds nothing
        return None


def lost_record(key: EpisodeKey, packs: dict[str, Pack], agent: Agent, kind: str, message: str) -> EpisodeRecord:
    """The record of an episode that ended outside ``play_episode`` (a crash, a hang, a dead worker)."""
    task = packs[key.pack_id].task(key.task_id)
    return EpisodeRecord(
        episode_id=episode_id(key.pack_id, key.task_id, key.seed, key.attempt, agent.name),
        pack_id=key.pack_id, domain=packs[key.pack_id].manifest.domain, task_id=key.task_id, split=task.split,
        category=task.category, tags=list(task.tags), seed=key.seed, attempt=key.attempt, agent=agent.name,
        model_ref=agent.model_ref, failure=EpisodeFailure(boundary="agent", kind=kind, message=message),
    )


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
            return _run_processes(agent, by_id, keys, config, counted, stop or threading.Event())
        slots = config.max_concurrency * (config.workers if config.executor == "thread" else 1)
        if slots > 1 and _prefers_event_loop(agent, config) and not _loop_running():
            from arena.rollout_async import AsyncBatch  # it builds on this module's batch

            return AsyncBatch(agent, by_id, keys, config, counted, stop).run(slots)
        return ThreadBatch(agent, by_id, keys, config, counted, stop).run(slots)


def _prefers_event_loop(agent: Agent, config: RolloutConfig) -> bool:
    """Whether the batch's concurrent episodes run on an event loop (the agent's ``arun_episode``)."""
    return config.async_episodes and isinstance(agent, AsyncAgent) and agent.prefers_event_loop


def _loop_running() -> bool:
    """Whether this thread runs an event loop already (a batch cannot start its own inside it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class RolloutStopped(Exception):
    """A batch stopped before its end; ``records`` holds the episodes that finished (in plan order).

    Args:
        reason: Why it stopped.
        records: Episodes finished before the stop.
    """

    def __init__(self, reason: str, records: list[EpisodeRecord]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records


class ModelUnavailable(RolloutStopped):
    """The circuit breaker opened: the model failed in ``max_model_failures`` consecutive episodes."""


class Breaker:
    """Holds back a streak of model-API failures; opens when the streak reaches ``threshold``."""

    def __init__(self, threshold: int | None) -> None:
        self.threshold = threshold
        self.streak: list[EpisodeRecord] = []
        self.cause = ""

    def feed(self, record: EpisodeRecord) -> list[EpisodeRecord]:
        """Return the records that may be released now (a failing streak is released once it is broken)."""
        if self.threshold is None:
            return [record]
        if record.failure is not None and record.failure.boundary == "model_api":
            self.streak.append(record)
            if len(self.streak) >= self.threshold:
                failure = record.failure
                self.cause = (f"the model failed in {len(self.streak)} consecutive episodes; last: {failure.kind}: "
                              f"{failure.message[:300]}")
            return []
        released, self.streak = [*self.streak, record], []
        return released

    @property
    def open(self) -> bool:
        """Whether the streak reached the threshold (``cause`` says why)."""
        return bool(self.cause)


class GymPool:
    """Idle gyms by pack, so concurrent episodes never share one (a gym plays one episode at a time)."""

    def __init__(self, packs: dict[str, Pack]) -> None:
        self._packs = packs
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
        record = play_episode(gym, agent, key, timeout_s=timeout_s, stop=stop)
        self.give(gym, broken=record.failure is not None and record.failure.boundary == "environment")
        return record

    async def play_async(self, agent: AsyncAgent, key: EpisodeKey, *, timeout_s: float,
                         stop: threading.Event | None = None) -> EpisodeRecord:
        """``play`` on an event loop (``play_episode_async``)."""
        gym = self.take(key.pack_id)
        record = await play_episode_async(gym, agent, key, timeout_s=timeout_s, stop=stop)
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


class ThreadBatch:
    """Runs a batch's episodes with up to ``slots`` in flight on as many daemon threads, each playing one at a time.

    The threads live as long as the batch (one per episode would cost a thread start per episode, which shows
    at a few hundred episodes a second); a thread whose episode hangs is abandoned and replaced.
    """

    def __init__(self, agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
                 on_episode: Callable[[EpisodeRecord], None] | None, stop: threading.Event | None) -> None:
        self.agent = agent
        self.packs = packs
        self.keys = keys
        self.index_of = {key: index for index, key in enumerate(keys)}
        self.config = config
        self.on_episode = on_episode
        self.stop = stop or threading.Event()
        self.gyms = GymPool(packs)
        self.breaker = Breaker(config.max_model_failures)
        self.finished: queue.Queue[tuple[int, EpisodeRecord]] = queue.Queue()
        self.records: dict[int, EpisodeRecord] = {}
        self.running: dict[int, float] = {}
        self.following = 0
        self.ended = threading.Event()
        self.lock = threading.Lock()

    def run(self, slots: int) -> list[EpisodeRecord]:
        """Play every episode (inline when ``slots`` is 1) and return the records in order.

        Raises:
            RolloutStopped: ``stop`` was set; the episodes finished until then are on the exception.
            ModelUnavailable: The circuit breaker opened.
        """
        try:
            self._play_all(slots)
        finally:
            self.ended.set()
            self.gyms.close()
        for record in self.breaker.streak:  # a failing streak too short to open the breaker is data
            self._emit(self.index_of[record_key(record)], record)
        return [self.records[i] for i in range(len(self.keys))]

    def _play_all(self, slots: int) -> None:
        """Play the batch's episodes, settling each as it finishes (``AsyncBatch`` plays them on an event loop)."""
        if slots == 1:
            self._inline()
        else:
            self._concurrent(AdaptiveLimit(slots))

    def _emit(self, index: int, record: EpisodeRecord) -> None:
        self.records[index] = record
        if self.on_episode:
            self.on_episode(record)

    def _settle(self, index: int, record: EpisodeRecord) -> None:
        for released in self.breaker.feed(record):
            self._emit(self.index_of[record_key(released)], released)
        if self.breaker.open:
            raise ModelUnavailable(self.breaker.cause, self._so_far())
        if self.stop.is_set():
            raise RolloutStopped("the rollout was stopped", self._so_far())

    def _so_far(self) -> list[EpisodeRecord]:
        return [self.records[i] for i in sorted(self.records)]

    def _play(self, key: EpisodeKey) -> EpisodeRecord:
        return self.gyms.play(self.agent, key, timeout_s=self.config.episode_timeout_s, stop=self.stop)

    def _inline(self) -> None:
        for index, key in enumerate(self.keys):
            if self.stop.is_set():
                raise RolloutStopped("the rollout was stopped", self._so_far())
            self._settle(index, self._play(key))

    def _episode_thread(self, limit: AdaptiveLimit) -> None:
        """Play the next episode whenever a slot is free, until the batch has none left or ends."""
        while not (self.ended.is_set() or self.stop.is_set()):
            if not limit.acquire(timeout_s=0.1):
                continue
            with self.lock:
                if self.following >= len(self.keys) or self.ended.is_set():
                    limit.release()
                    return
                index = self.following
                self.following += 1
                self.running[index] = time.monotonic()
            if not self._play_one(index, self.keys[index], limit):
                return  # abandoned as hung: a new thread has taken this one's place

    def _play_one(self, index: int, key: EpisodeKey, limit: AdaptiveLimit) -> bool:
        """Play one episode and hand its record over; return ``False`` when it had been abandoned as hung."""
        try:
            with reporting_to(limit):
                record = self._play(key)
        except BaseException as exc:  # a failure outside play_episode (e.g. building the gym) is this episode's
            record = lost_record(key, self.packs, self.agent, "crash", f"{type(exc).__name__}: {exc}")
        with self.lock:
            mine = self.running.pop(index, None) is not None
        if mine:
            limit.release()
            self.finished.put((index, record))
        return mine

    def _start_thread(self, limit: AdaptiveLimit, number: int) -> None:
        threading.Thread(target=self._episode_thread, args=(limit,), name=f"episodes-{number}", daemon=True).start()

    def _concurrent(self, limit: AdaptiveLimit) -> None:
        grace = self.config.episode_timeout_s * 2
        threads = min(limit.maximum, len(self.keys))
        for number in range(threads):
            self._start_thread(limit, number)
        while len(self.records) + len(self.breaker.streak) < len(self.keys):
            if self.stop.is_set():
                raise RolloutStopped("the rollout was stopped", self._so_far())
            try:
                index, record = self.finished.get(timeout=0.05)
            except queue.Empty:
                for _ in range(self._abandon_hung(grace, limit)):
                    self._start_thread(limit, threads)
                    threads += 1
                continue
            self._settle(index, record)

    def _abandon_hung(self, grace: float, limit: AdaptiveLimit) -> int:
        """Record episodes running past ``grace`` as lost and free their slots; return how many."""
        now = time.monotonic()
        with self.lock:
            hung = [i for i, since in self.running.items() if now - since > grace]
            for index in hung:
                del self.running[index]
        for index in hung:
            limit.release()
            message = f"episode hung past {grace:g} s; abandoned"
            lost = lost_record(self.keys[index], self.packs, self.agent, "episode_timeout", message)
            self.finished.put((index, lost))
        return len(hung)


def record_key(record: EpisodeRecord) -> EpisodeKey:
    """The key of the episode a record is of."""
    return EpisodeKey(record.pack_id, record.task_id, record.seed, record.attempt)


def _worker(agent: Agent, packs: dict[str, Pack], modules: dict[str, str], timeout_s: float, in_flight: int,
            on_a_loop: bool, jobs: Any, results: Any) -> None:
    for module in modules.values():
        importlib.import_module(module)
    gyms = GymPool(packs)
    pid = os.getpid()
    limit = AdaptiveLimit(in_flight)
    if on_a_loop:
        from arena.rollout_async import play_jobs_on_a_loop  # it builds on this module

        asyncio.run(play_jobs_on_a_loop(cast(AsyncAgent, agent), packs, gyms, timeout_s, limit, jobs, results))
        return
    waiting: queue.SimpleQueue[tuple[int, EpisodeKey] | None] = queue.SimpleQueue()

    def play() -> None:
        """Play the worker's episodes one after another, up to ``in_flight`` of these threads at once."""
        while (job := waiting.get()) is not None:
            index, key = job
            limit.acquire(timeout_s=None)
            try:
                with reporting_to(limit):
                    record = gyms.play(agent, key, timeout_s=timeout_s)
            except BaseException as exc:  # a failure outside play_episode (e.g. building the gym) is this episode's
                record = lost_record(key, packs, agent, "crash", f"{type(exc).__name__}: {exc}")
            finally:
                limit.release()
            # JSON crosses the process boundary faster than pickled pydantic models (parsed in Rust).
            results.put(("done", index, pid, record.model_dump_json()))
        waiting.put(None)

    for number in range(in_flight):
        threading.Thread(target=play, name=f"episodes-{number}", daemon=True).start()
    results.put(("ready", -1, pid, None))
    while (chunk := jobs.get()) is not None:
        for job in chunk:
            waiting.put(job)
    waiting.put(None)


@dataclass
class _Worker:
    process: Any
    jobs: Any
    assigned: list[int]
    since: float = 0.0
    ready: bool = False


_START_FAILURES = 3
"""Workers that may die before they are ready before a batch gives up on worker processes."""


def _run_processes(agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
                   on_episode: Callable[[EpisodeRecord], None] | None, stop: threading.Event) -> list[EpisodeRecord]:
    """Run episodes in worker processes, each given small chunks and reporting every episode.

    Each worker keeps up to ``max_concurrency`` episodes in flight and is topped up while it has no more than that
    many assigned. A dead or hung worker playing one episode loses that episode (the rest of its assignment goes
    back to the queue); one playing several has them replayed one at a time, so only the episode that brings a
    worker down is lost. The circuit breaker and ``stop`` end the run as in a thread batch: the workers are
    killed and the episodes finished so far are on the exception.
    """
    workers: dict[int, _Worker] = {}
    try:
        return _play_in_processes(agent, packs, keys, config, on_episode, stop, workers)
    finally:
        for worker in workers.values():
            if worker.process.is_alive():
                worker.process.kill()
            worker.process.join(timeout=5)


def _play_in_processes(agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
                       on_episode: Callable[[EpisodeRecord], None] | None, stop: threading.Event,
                       workers: dict[int, _Worker]) -> list[EpisodeRecord]:
    ctx = mp.get_context("spawn")
    modules = registered_modules()
    results = ctx.Queue()
    pending = list(range(len(keys)))
    pending.reverse()
    suspects: list[int] = []  # episodes a worker with several in flight was playing when it died, replayed alone
    records: dict[int, EpisodeRecord] = {}
    limit = config.episode_timeout_s + 5.0
    start_failures = 0
    on_a_loop = config.max_concurrency > 1 and _prefers_event_loop(agent, config)

    def spawn() -> None:
        jobs = ctx.Queue()
        args = (agent, packs, modules, config.episode_timeout_s, config.max_concurrency, on_a_loop, jobs, results)
        proc = ctx.Process(target=_worker, args=args, daemon=True)
        proc.start()
        workers[proc.pid or 0] = _Worker(process=proc, jobs=jobs, assigned=[])

    in_flight = config.max_concurrency
    top_up_at = 0 if in_flight == 1 else in_flight

    def assign(worker: _Worker) -> None:
        if suspects:
            if not worker.assigned:
                worker.since = time.monotonic()
                worker.assigned.append(suspects.pop())
                worker.jobs.put([(worker.assigned[0], keys[worker.assigned[0]])])
            return
        share = len(pending) // (config.workers if in_flight > 1 else 2 * config.workers)
        size = max(1, min(32 if in_flight == 1 else 2 * in_flight - len(worker.assigned), share))
        chunk = [pending.pop() for _ in range(min(size, len(pending)))]
        if not worker.assigned:
            worker.since = time.monotonic()
        worker.assigned.extend(chunk)
        if chunk:
            worker.jobs.put([(i, keys[i]) for i in chunk])

    breaker = Breaker(config.max_model_failures)
    index_of = {key: index for index, key in enumerate(keys)}
    emitted: list[int] = []

    def finish(index: int, record: EpisodeRecord) -> None:
        records[index] = record
        for released in breaker.feed(record):
            emitted.append(index_of[record_key(released)])
            if on_episode:
                on_episode(released)
        if breaker.open:
            raise ModelUnavailable(breaker.cause, [records[i] for i in sorted(emitted)])
        if stop.is_set():
            raise RolloutStopped("the rollout was stopped", [records[i] for i in sorted(emitted)])

    for _ in range(min(config.workers, len(keys))):
        spawn()
    while len(records) < len(keys):
        if stop.is_set():
            raise RolloutStopped("the rollout was stopped", [records[i] for i in sorted(emitted)])
        try:
            kind, index, pid, record = results.get(timeout=0.2)
        except queue.Empty:
            kind = ""
        if kind:
            worker = workers.get(pid)
            if worker is not None:
                worker.ready = True
            if kind == "done":
                finish(index, EpisodeRecord.model_validate_json(record))
                if worker is not None and index in worker.assigned:
                    worker.assigned.remove(index)
                    worker.since = time.monotonic()
            if worker is not None and len(worker.assigned) <= top_up_at:
                assign(worker)
            continue
        now = time.monotonic()
        for pid, worker in list(workers.items()):
            hung = bool(worker.assigned) and now - worker.since > limit
            died = not worker.process.is_alive()
            if not (hung or died):
                continue
            if hung:
                worker.process.kill()
            worker.process.join(timeout=5)
            del workers[pid]
            left = [i for i in worker.assigned if i not in records]
            if len(left) > 1 and in_flight > 1:
                suspects.extend(reversed(left))  # which of them brought the worker down is unknown: replay each alone
            elif left:
                why = (f"episode hung past {limit:g} s; worker killed" if hung
                       else f"worker process died (exit code {worker.process.exitcode})")
                kind = "episode_timeout" if hung else "worker_died"
                finish(left[0], lost_record(keys[left[0]], packs, agent, kind, why))
                pending.extend(reversed(left[1:]))
            if not worker.ready:
                start_failures += 1
            if (pending or suspects) and start_failures < _START_FAILURES:
                spawn()
        if not workers and (pending or suspects):
            why = (f"{start_failures} rollout workers died before they were ready"
                   if start_failures >= _START_FAILURES else "no rollout worker left")
            while pending or suspects:
                index = (pending or suspects).pop()
                finish(index, lost_record(keys[index], packs, agent, "worker_died", why))
    for worker in workers.values():
        worker.jobs.put(None)
    for worker in list(workers.values()):
        worker.process.join(timeout=5)
    for record in breaker.streak:  # a failing streak too short to open the breaker is data
        if on_episode:
            on_episode(record)
    return [records[i] for i in range(len(keys))]
