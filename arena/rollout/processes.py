"""A batch's episodes in worker processes: a dead or hung worker loses one episode, never the batch."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from arena.agents.base import Agent, AsyncAgent
from arena.agents.limits import AdaptiveLimit, reporting_to
from arena.agents.user import ConversationConfig
from arena.core.domains import import_gyms, registered_modules
from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from arena.rollout.config import EpisodeKey, RolloutConfig, prefers_event_loop, record_key
from arena.rollout.episode import lost_record
from arena.rollout.loop import play_jobs_on_a_loop
from arena.rollout.pool import GymPool
from arena.rollout.threads import Breaker, ModelUnavailable, RolloutStopped


def _worker(agent: Agent, packs: dict[str, Pack], modules: dict[str, str], timeout_s: float, in_flight: int,
            on_a_loop: bool, jobs: Any, results: Any, conversation: ConversationConfig) -> None:
    import_gyms(modules)
    gyms = GymPool(packs, conversation)
    pid = os.getpid()
    limit = AdaptiveLimit(in_flight)
    if on_a_loop:
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


def run_processes(agent: Agent, packs: dict[str, Pack], keys: list[EpisodeKey], config: RolloutConfig,
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
    on_a_loop = config.max_concurrency > 1 and prefers_event_loop(agent, config)

    def spawn() -> None:
        jobs = ctx.Queue()
        args = (agent, packs, modules, config.episode_timeout_s, config.max_concurrency, on_a_loop, jobs, results,
                config.conversation)
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

    breaker = Breaker(config.max_model_failures, len(keys))
    index_of = {key: index for index, key in enumerate(keys)}
    emitted: list[int] = []

    def finish(index: int, record: EpisodeRecord) -> None:
        records[index] = record
        for released in breaker.feed(index, record):
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
    for record in breaker.remaining():  # a failing run too short to open the breaker is data
        if on_episode:
            on_episode(record)
    return [records[i] for i in range(len(keys))]
