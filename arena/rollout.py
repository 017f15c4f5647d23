"""The rollout engine: tasks x seeds x attempts for an agent, each episode in a fresh world.

One failing episode never stops a batch: a crash, a hang or a timeout is recorded
on that episode with its failure boundary (agent, model_api, environment,
verifier). With the ``process`` executor a hung or dying episode is ended by
killing its worker, which is replaced.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.base import Agent, AgentRun, ModelAPIError
from arena.episode import EpisodeFailure, EpisodeRecord, episode_id
from arena.gym import EnvironmentFailure, Gym
from arena.gyms import registered_modules
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
        executor: ``inline`` (this thread), ``thread`` or ``process`` workers.
        workers: Parallel workers for ``thread`` and ``process``.
        episode_timeout_s: Wall-clock limit per episode.
    """

    model_config = ConfigDict(extra="forbid")

    seeds: list[int] = Field(default_factory=lambda: [0])
    k: int = Field(default=1, ge=1)
    split: Split | None = None
    task_ids: list[str] | None = None
    executor: Literal["inline", "thread", "process"] = "inline"
    workers: int = Field(default=1, ge=1)
    episode_timeout_s: float = Field(default=120.0, gt=0)


@dataclass(frozen=True)
class EpisodeKey:
    """Identifies one episode of a batch."""

    pack_id: str
    task_id: str
    seed: int
    attempt: int


class EpisodeTimeout(Exception):
    """The episode ran past its wall-clock limit."""


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


def play_episode(gym: Gym, agent: Agent, key: EpisodeKey, *, timeout_s: float | None = None) -> EpisodeRecord:
    """Play one episode and return its record; never raises for a failing episode.

    Args:
        gym: A gym holding the episode's pack.
        agent: The agent.
        key: Which task, seed and attempt.
        timeout_s: Wall-clock limit, enforced at each tool call.
    """
    started = time.perf_counter()
    deadline = started + timeout_s if timeout_s else None
    observation = gym.reset(key.task_id, seed=key.seed)

    def call_tool(name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        if deadline is not None and time.perf_counter() > deadline:
            raise EpisodeTimeout(f"episode exceeded {timeout_s:g} s")
        return gym.call_tool(name, arguments)

    run: AgentRun | None = None
    try:
        run = agent.run_episode(observation, call_tool, seed=agent_seed(key))
    except ModelAPIError as exc:
        failure = EpisodeFailure(boundary="model_api", kind=exc.kind, message=exc.message)
        return _record(gym, agent, key, exc.usage, started, failure, exc.invalid, None)
    except EnvironmentFailure as exc:
        # A tool crashed on the agent's own arguments: a bug in that tool, and the agent's failed episode. It stays
        # valid, so an agent cannot hide a failing episode by crashing a tool.
        failure = EpisodeFailure(boundary="environment", kind="tool_crash", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    except EpisodeTimeout as exc:
        failure = EpisodeFailure(boundary="agent", kind="episode_timeout", message=str(exc))
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
    except Exception as exc:  # an agent bug is recorded on its episode, never raised into the batch
        failure = EpisodeFailure(boundary="agent", kind="crash", message=f"{type(exc).__name__}: {exc}")
        return _record(gym, agent, key, None, started, failure, False, _verify_quietly(gym, ""))
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


def _lost(key: EpisodeKey, packs: dict[str, Pack], agent: Agent, kind: str, message: str) -> EpisodeRecord:
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
) -> list[EpisodeRecord]:
    """Run every episode the config asks for and return the records in plan order.

    Args:
        agent: The agent (picklable for the ``process`` executor).
        packs: Packs whose tasks to run.
        config: Seeds, attempts, filters and executor.
        skip: Episodes already finished (e.g. recorded before a crash); not run again.
        on_episode: Called with each record as it finishes (progress, streaming writes).
    """
    config = config or RolloutConfig()
    done = set(skip)
    keys = [k for k in plan_episodes(packs, config) if k not in done]
    return run_episodes(agent, packs, keys, config, on_episode=on_episode)


def run_episodes(
    agent: Agent,
    packs: Sequence[Pack],
    keys: Sequence[EpisodeKey],
    config: RolloutConfig | None = None,
    *,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> list[EpisodeRecord]:
    """Run exactly the episodes ``keys`` (e.g. one batch of a larger plan), in order.

    Args:
        agent: The agent (picklable for the ``process`` executor).
        packs: Packs holding the keys' tasks.
        keys: Episodes to run.
        config: Executor, workers and per-episode time limit (its seeds and filters are ignored).
        on_episode: Called with each record as it finishes.

    Raises:
        KeyError: A key names a pack not in ``packs``.
    """
    config = config or RolloutConfig()
    keys = list(keys)
    by_id = {p.id: p for p in packs}
    missing = sorted({k.pack_id for k in keys} - set(by_id))
    if missing:
        raise KeyError(f"episodes name packs that were not given: {', '.join(m[:12] for m in missing)}")
    if not keys:
        return []
    if config.executor == "process" and config.workers >= 1:
        return _run_processes(agent, by_id, keys, config, on_episode)
    if config.executor == "thread" and config.workers > 1:
        return _run_threads(agent, by_id, keys, config, on_episode)
    gyms: dict[str, Gym] = {}
    out = []
    for key in keys:
        gym = gyms.get(key.pack_id) or gyms.setdefault(key.pack_id, Gym.from_pack(by_id[key.pack_id]))
        record = play_episode(gym, agent, key, timeout_s=config.episode_timeout_s)
        if record.failure is not None and record.failure.boundary == "environment":
            gyms.pop(key.pack_id).close()
        out.append(record)
        if on_episode:
            on_episode(record)
    for gym in gyms.values():
        gym.close()
    return out


def _run_threads(agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
                 on_episode: Callable[[EpisodeRecord], None] | None) -> list[EpisodeRecord]:
    local = threading.local()

    def one(key: EpisodeKey) -> EpisodeRecord:
        gyms: dict[str, Gym] = getattr(local, "gyms", None) or {}
        local.gyms = gyms
        gym = gyms.get(key.pack_id) or gyms.setdefault(key.pack_id, Gym.from_pack(packs[key.pack_id]))
        record = play_episode(gym, agent, key, timeout_s=config.episode_timeout_s)
        if record.failure is not None and record.failure.boundary == "environment":
            gyms.pop(key.pack_id).close()
        return record

    out: list[EpisodeRecord] = []
    pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="rollout")
    futures = [pool.submit(one, key) for key in keys]
    grace = config.episode_timeout_s * 2
    for key, future in zip(keys, futures, strict=True):
        try:
            record = future.result(timeout=grace)
        except TimeoutError:
            record = _lost(key, packs, agent, "episode_timeout", f"episode hung past {grace:g} s; abandoned")
        out.append(record)
        if on_episode:
            on_episode(record)
    pool.shutdown(wait=False, cancel_futures=True)
    return out


def _worker(agent: Agent, packs: dict[str, Pack], modules: dict[str, str], timeout_s: float, jobs: Any,
            results: Any) -> None:
    for module in modules.values():
        importlib.import_module(module)
    gyms: dict[str, Gym] = {}
    pid = os.getpid()
    results.put(("ready", -1, pid, None))
    while True:
        chunk = jobs.get()
        if chunk is None:
            return
        for index, key in chunk:
            gym = gyms.get(key.pack_id) or gyms.setdefault(key.pack_id, Gym.from_pack(packs[key.pack_id]))
            record = play_episode(gym, agent, key, timeout_s=timeout_s)
            if record.failure is not None and record.failure.boundary == "environment":
                gyms.pop(key.pack_id).close()
            # JSON crosses the process boundary faster than pickled pydantic models (parsed in Rust).
            results.put(("done", index, pid, record.model_dump_json()))


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
                   on_episode: Callable[[EpisodeRecord], None] | None) -> list[EpisodeRecord]:
    """Run episodes in worker processes, each given small chunks and reporting every episode.

    The episode a dead or hung worker was playing is therefore known (and recorded as lost), while the
    rest of its chunk goes back to the queue.
    """
    ctx = mp.get_context("spawn")
    modules = registered_modules()
    results = ctx.Queue()
    pending = list(range(len(keys)))
    pending.reverse()
    workers: dict[int, _Worker] = {}
    records: dict[int, EpisodeRecord] = {}
    limit = config.episode_timeout_s + 5.0
    start_failures = 0

    def spawn() -> None:
        jobs = ctx.Queue()
        args = (agent, packs, modules, config.episode_timeout_s, jobs, results)
        proc = ctx.Process(target=_worker, args=args, daemon=True)
        proc.start()
        workers[proc.pid or 0] = _Worker(process=proc, jobs=jobs, assigned=[])

    def assign(worker: _Worker) -> None:
        size = max(1, min(32, len(pending) // (2 * config.workers)))
        chunk = [pending.pop() for _ in range(min(size, len(pending)))]
        worker.assigned = chunk
        worker.since = time.monotonic()
        if chunk:
            worker.jobs.put([(i, keys[i]) for i in chunk])

    def finish(index: int, record: EpisodeRecord) -> None:
        records[index] = record
        if on_episode:
            on_episode(record)

    for _ in range(min(config.workers, len(keys))):
        spawn()
    while len(records) < len(keys):
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
            if worker is not None and not worker.assigned:
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
            if left:
                why = (f"episode hung past {limit:g} s; worker killed" if hung
                       else f"worker process died (exit code {worker.process.exitcode})")
                finish(left[0], _lost(keys[left[0]], packs, agent, "episode_timeout" if hung else "worker_died", why))
                pending.extend(reversed(left[1:]))
            if not worker.ready:
                start_failures += 1
            if pending and start_failures < _START_FAILURES:
                spawn()
        if not workers and pending:
            why = (f"{start_failures} rollout workers died before they were ready"
                   if start_failures >= _START_FAILURES else "no rollout worker left")
            while pending:
                index = pending.pop()
                finish(index, _lost(keys[index], packs, agent, "worker_died", why))
    for worker in workers.values():
        worker.jobs.put(None)
    for worker in workers.values():
        worker.process.join(timeout=5)
        if worker.process.is_alive():
            worker.process.kill()
    return [records[i] for i in range(len(keys))]
